//! Reading a project's files for `ralph top`, read-only and without any
//! lock, each file again only when its size, time or inode changed, and
//! `.ralph/events.ndjson` only from where the last read ended.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::digest::Digest;
use super::model::{QueueRow, Sources, WorkerSource};
use crate::events::{EventLog, Offset};
use crate::files::{Stamp, own};
use crate::paths::Paths;
use crate::result::RunResult;
use crate::runner::lock::Holder;
use crate::state::{State, StateFile};
use crate::task::{Queue, Store};

/// Bytes read from the end of an agent's log for its last lines.
const TAIL_BYTES: u64 = 16 * 1024;

/// The event log, read as it grows.
#[derive(Default)]
struct EventTail {
    /// Where the next read starts.
    offset: Offset,
    digest: Rc<Digest>,
}

/// A project's files as last read.
pub(crate) struct Reader {
    paths: Paths,
    seen: HashMap<PathBuf, Option<Stamp>>,
    events: EventTail,
    queue: Rc<Result<Queue, String>>,
    rows: Rc<Vec<QueueRow>>,
    state: State,
    result: Option<RunResult>,
    /// The shared queue's claims as last shown.
    shared: Option<String>,
    workers: HashMap<String, State>,
    /// Per logs folder: the newest log of each task in it.
    logs: HashMap<PathBuf, HashMap<String, PathBuf>>,
    /// Per log file: its last line.
    lines: HashMap<PathBuf, Option<String>>,
}

impl Reader {
    /// A reader of the project at `paths`; nothing is read yet.
    pub(crate) fn new(paths: Paths) -> Reader {
        Reader {
            paths,
            seen: HashMap::new(),
            events: EventTail::default(),
            queue: Rc::new(Ok(Queue::empty())),
            rows: Rc::default(),
            state: State::default(),
            result: None,
            shared: None,
            workers: HashMap::new(),
            logs: HashMap::new(),
            lines: HashMap::new(),
        }
    }

    /// Whether `path` changed since this asked last (or is asked first).
    fn changed(&mut self, path: &Path) -> bool {
        let now = Stamp::of(path).ok();
        self.seen.insert(path.to_owned(), now) != Some(now)
    }

    /// Reads what changed and returns everything for a frame, with
    /// whether anything changed since the last call.
    pub(crate) fn read(&mut self) -> (Sources, bool) {
        let mut changed = false;
        let paths = self.paths.clone();
        if self.changed(&paths.events()) {
            changed = true;
            self.read_events();
        }
        // Both files, each asked: `|` does not stop at the first.
        if self.changed(&paths.tasks()) | self.changed(&paths.done()) {
            changed = true;
            let queue = Store::open(&paths).load();
            let rows = queue.as_ref().map(super::model::rows).unwrap_or_default();
            self.rows = Rc::new(rows);
            self.queue = Rc::new(queue.map_err(|err| crate::Error::from(err).one_line()));
        }
        if self.changed(&paths.state()) {
            changed = true;
            self.state = StateFile::open(&paths).peek();
        }
        if self.changed(&paths.result()) {
            changed = true;
            self.result = RunResult::read(&paths);
        }
        changed |= self.changed(&paths.stop()) | self.changed(&paths.run_lock());
        let mut workers = Vec::new();
        let roots = crate::state::worker_roots(&paths);
        if roots.len() != self.workers.len() {
            changed = true;
            self.workers
                .retain(|task, _| roots.iter().any(|(root, _)| root == task));
        }
        for (task, root) in roots {
            if self.changed(&root.state()) || !self.workers.contains_key(&task) {
                changed = true;
                self.workers
                    .insert(task.clone(), StateFile::open(&root).peek());
            }
            // A worker's agent logs to the project's `.ralph/logs/`.
            let (activity, moved) = self.last_line(&paths, &task);
            changed |= moved;
            let state = self.workers[&task].clone();
            workers.push(WorkerSource {
                task,
                state,
                activity,
            });
        }
        let activity = match self.state.current_task.clone() {
            Some(task) if workers.is_empty() => {
                let (activity, moved) = self.last_line(&paths, &task);
                changed |= moved;
                activity
            }
            _ => None,
        };
        let live = live(&paths, self.result.as_ref());
        let shared = shared_claims(&paths);
        changed |= shared != self.shared;
        self.shared.clone_from(&shared);
        let sources = Sources {
            live,
            state: self.state.clone(),
            workers,
            activity,
            queue: self.queue.clone(),
            rows: self.rows.clone(),
            digest: self.events.digest.clone(),
            stop_asked: paths.stop().exists(),
            shared,
            result: self.result.clone(),
        };
        (sources, changed)
    }

    /// Folds in the events written since the last read; from the start
    /// again when the file was replaced or cut, or cannot be read.
    fn read_events(&mut self) {
        let Ok(read) = EventLog::open(&self.paths).read_from(self.events.offset) else {
            self.events = EventTail::default();
            return;
        };
        if read.restarted {
            self.events.digest = Rc::default();
        }
        self.events.offset = read.next;
        for event in read.events {
            Rc::make_mut(&mut self.events.digest).add(event);
        }
    }

    /// The last line of the newest agent log of `task` under `root`, with
    /// whether it changed.
    fn last_line(&mut self, root: &Paths, task: &str) -> (Option<String>, bool) {
        let dir = root.join(crate::paths::LOGS_DIR);
        if self.changed(&dir) {
            self.logs.insert(dir.clone(), newest_logs(&dir));
        }
        let Some(log) = self.logs.get(&dir).and_then(|logs| logs.get(task)).cloned() else {
            return (None, false);
        };
        let moved = self.changed(&log);
        if moved || !self.lines.contains_key(&log) {
            let line = tail(root.project(), &log, 1).pop();
            self.lines.insert(log.clone(), line);
        }
        (self.lines[&log].clone(), moved)
    }

    /// What Enter shows of `task`: the newest log's path and last lines,
    /// and the evidence of its last failure.
    pub(crate) fn details(&mut self, task: &str, lines: usize) -> Details {
        let log = newest_logs(&self.paths.join(crate::paths::LOGS_DIR)).remove(task);
        let state = self.workers.get(task).unwrap_or(&self.state);
        let evidence = (state.tasks.get(task))
            .and_then(|progress| progress.evidence.as_ref())
            .map(|evidence| {
                let mut text = format!("{}: {}", evidence.class, evidence.summary);
                if let Some(tail) = &evidence.output_tail {
                    text.push('\n');
                    text.push_str(tail);
                }
                text
            })
            .or_else(|| self.events.digest.failed.get(task).cloned());
        Details {
            task: task.to_owned(),
            log: log.as_ref().map(|log| {
                let shown = log.strip_prefix(self.paths.project()).unwrap_or(log);
                shown.display().to_string()
            }),
            tail: (log.map(|log| tail(self.paths.project(), &log, lines))).unwrap_or_default(),
            evidence: evidence.map(|e| crate::text::safe(&crate::redact::redact(&e)).into_owned()),
        }
    }
}

/// What Enter shows of one task.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Details {
    /// The task.
    pub task: String,
    /// Its newest agent log, relative to the project.
    pub log: Option<String>,
    /// That log's last lines.
    pub tail: Vec<String>,
    /// Its last failure's evidence.
    pub evidence: Option<String>,
}

/// The run holding the project's run lock, read from the lock file
/// without taking the lock, when its process is alive and has not
/// written its result.
fn live(paths: &Paths, result: Option<&RunResult>) -> Option<Holder> {
    let bytes = own::read(paths.project(), &paths.run_lock()).ok()?;
    let holder: Holder = serde_json::from_slice(&bytes).ok()?;
    let ended = result.is_some_and(|result| result.run_id == holder.run_id);
    (!ended && crate::platform::alive(holder.pid)).then_some(holder)
}

/// The newest log (highest iteration number) of each task in `dir`,
/// named `<iteration>-<task>.log`.
fn newest_logs(dir: &Path) -> HashMap<String, PathBuf> {
    let mut newest: HashMap<String, (u64, PathBuf)> = HashMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return HashMap::new();
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some((number, task)) = (name.to_str())
            .and_then(|name| name.strip_suffix(".log"))
            .and_then(|stem| stem.split_once('-'))
            .and_then(|(number, task)| Some((number.parse::<u64>().ok()?, task.to_owned())))
        else {
            continue;
        };
        let slot = newest.entry(task).or_insert((0, PathBuf::new()));
        if number >= slot.0 {
            *slot = (number, entry.path());
        }
    }
    newest
        .into_iter()
        .map(|(task, (_, path))| (task, path))
        .collect()
}

/// The last `count` non-empty lines of `path` (a log of the project at
/// `root`, never read through a link), redacted and made safe to print.
fn tail(root: &Path, path: &Path, count: usize) -> Vec<String> {
    let Ok(mut file) = own::open_read(root, path) else {
        return Vec::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let from = len.saturating_sub(TAIL_BYTES);
    let mut bytes = Vec::new();
    if file.seek(SeekFrom::Start(from)).is_err() || file.read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let text = crate::redact::redact(&text);
    let mut lines: Vec<String> = text
        .lines()
        // The first line may be cut in the middle, unless it is the start.
        .skip(usize::from(from > 0))
        .map(|line| crate::text::safe(line.trim_end()).into_owned())
        .filter(|line| !line.trim().is_empty())
        .collect();
    let keep = lines.len().saturating_sub(count);
    lines.drain(..keep);
    lines
}

/// Sharing the queue: every machine's claims as this clone's last fetch
/// saw them, this machine's marked, on one line; `None` for a clone that
/// never shared its queue.
fn shared_claims(paths: &Paths) -> Option<String> {
    let machine = crate::runner::remote::Machine::known(paths)?;
    let repo = crate::git::Repo::open_without_base(paths, &Default::default()).ok()?;
    let claims = repo.seen_claims().ok()?;
    if claims.is_empty() {
        return Some("none".to_owned());
    }
    let shown: Vec<String> = claims
        .iter()
        .map(|claim| {
            let who = if claim.machine == machine.id {
                "here".to_owned()
            } else {
                format!(
                    "{} {}",
                    claim.machine.get(..8).unwrap_or(&claim.machine),
                    crate::text::safe(&claim.host)
                )
            };
            format!("{} {who} beat {}", claim.id, claim.beat)
        })
        .collect();
    Some(shown.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_event_log_is_read_from_where_it_ended_and_again_when_replaced() {
        let dir = assert_fs::TempDir::new().unwrap();
        let paths = Paths::new(dir.path());
        std::fs::create_dir_all(dir.path().join(".ralph")).unwrap();
        let line = |run: &str, phase: &str| {
            format!(
                "{{\"timestamp\":\"2026-11-27T10:00:00Z\",\"run_id\":\"{run}\",\"task_id\":\"A\",\"iteration\":1,\"role\":null,\"phase\":\"{phase}\",\"status\":\"ok\",\"detail\":\"\"}}\n"
            )
        };
        let events = paths.events();
        std::fs::write(&events, line("r1", "claim") + &line("r1", "merge")).unwrap();
        let mut reader = Reader::new(paths.clone());
        let (sources, changed) = reader.read();
        assert!(changed);
        assert_eq!(sources.digest.merged, 1);
        let (_, changed) = reader.read();
        assert!(!changed, "nothing changed, nothing read");
        // Half a line is left for later; the whole one is read.
        let half = line("r1", "merge");
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&events)
            .unwrap();
        std::io::Write::write_all(&mut file, (line("r1", "merge") + &half[..20]).as_bytes())
            .unwrap();
        assert_eq!(reader.read().0.digest.merged, 2);
        std::io::Write::write_all(&mut file, &half.as_bytes()[20..]).unwrap();
        assert_eq!(reader.read().0.digest.merged, 3);
        // Replaced by a shorter file: read from its start.
        let new = dir.path().join(".ralph/new");
        std::fs::write(&new, line("r2", "merge")).unwrap();
        std::fs::rename(&new, &events).unwrap();
        let (sources, _) = reader.read();
        assert_eq!(
            (sources.digest.run_id.as_str(), sources.digest.merged),
            ("r2", 1)
        );
    }

    #[test]
    fn the_newest_log_of_each_task_gives_the_last_line() {
        let dir = assert_fs::TempDir::new().unwrap();
        let logs = dir.path().join("logs");
        std::fs::create_dir_all(&logs).unwrap();
        std::fs::write(logs.join("2-A.1.log"), "old\n").unwrap();
        std::fs::write(logs.join("10-A.1.log"), "first\n\nlast one  \n\n").unwrap();
        std::fs::write(logs.join("3-B.log"), "b\n").unwrap();
        std::fs::write(logs.join("notes.txt"), "x\n").unwrap();
        let newest = newest_logs(&logs);
        assert_eq!(newest.len(), 2);
        assert_eq!(newest["A.1"], logs.join("10-A.1.log"));
        assert_eq!(
            tail(dir.path(), &newest["A.1"], 1),
            vec!["last one".to_owned()]
        );
        assert_eq!(
            tail(dir.path(), &newest["A.1"], 5),
            vec!["first", "last one"]
        );
    }
}
