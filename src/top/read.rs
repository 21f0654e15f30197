//! Reading a project's files for `ralph top`, read-only and without any
//! lock, each file again only when its `Stamp` changed: the run's own
//! files through `view::Run`, the queue and the agents' logs here.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::digest::Digest;
use super::model::{QueueRow, Sources, WorkerSource};
use crate::files::own;
use crate::paths::Paths;
use crate::task::{Queue, Store};
use crate::view::{Run, Shared};

/// Bytes read from the end of an agent's log for its last lines.
const TAIL_BYTES: u64 = 16 * 1024;

/// A project's files as last read.
pub(crate) struct Reader {
    /// The run's own files.
    run: Run,
    /// The events so far, folded.
    digest: Rc<Digest>,
    queue: Rc<Result<Queue, String>>,
    rows: Rc<Vec<QueueRow>>,
    /// Per logs folder: the newest log of each task in it.
    logs: HashMap<PathBuf, HashMap<String, PathBuf>>,
    /// Per log file: its last line.
    lines: HashMap<PathBuf, Option<String>>,
}

impl Reader {
    /// A reader of the project at `paths`; nothing is read yet.
    pub(crate) fn new(paths: Paths) -> Reader {
        Reader {
            run: Run::new(paths),
            digest: Rc::default(),
            queue: Rc::new(Ok(Queue::empty())),
            rows: Rc::default(),
            logs: HashMap::new(),
            lines: HashMap::new(),
        }
    }

    /// Reads what changed and returns everything for a frame, with
    /// whether anything changed since the last call.
    pub(crate) fn read(&mut self) -> (Sources, bool) {
        let mut changed = false;
        let paths = self.run.paths.clone();
        if self.run.changed(&paths.events()) {
            changed = true;
            let read = self.run.events();
            // From the start again when the file was replaced or cut, or
            // cannot be read.
            if read.as_ref().map_or(true, |read| read.restarted) {
                self.digest = Rc::default();
            }
            for event in read.into_iter().flat_map(|read| read.events) {
                Rc::make_mut(&mut self.digest).add(event);
            }
        }
        // Both files, each asked: `|` does not stop at the first.
        if self.run.changed(&paths.tasks()) | self.run.changed(&paths.done()) {
            changed = true;
            let queue = Store::open(&paths).load();
            let rows = queue.as_ref().map(super::model::rows).unwrap_or_default();
            self.rows = Rc::new(rows);
            self.queue = Rc::new(queue.map_err(|err| crate::Error::from(err).one_line()));
        }
        changed |= self.run.read();
        changed |= self.run.changed(&paths.stop()) | self.run.changed(&paths.run_lock());
        let mut workers: Vec<WorkerSource> = (self.run.workers.iter())
            .map(|worker| WorkerSource {
                task: worker.task.clone(),
                state: worker.state.clone(),
                activity: None,
            })
            .collect();
        for worker in &mut workers {
            // A worker's agent logs to the project's `.ralph/logs/`.
            let (activity, moved) = self.last_line(&paths, &worker.task);
            changed |= moved;
            worker.activity = activity;
        }
        let activity = match self.run.state.current_task.clone() {
            Some(task) if workers.is_empty() => {
                let (activity, moved) = self.last_line(&paths, &task);
                changed |= moved;
                activity
            }
            _ => None,
        };
        let sources = Sources {
            live: crate::view::live(&paths, self.run.result.as_ref()),
            state: self.run.state.clone(),
            workers,
            activity,
            queue: self.queue.clone(),
            rows: self.rows.clone(),
            digest: self.digest.clone(),
            stop_asked: paths.stop().exists(),
            shared: self.run.shared.as_ref().map(claims),
            result: self.run.result.clone(),
        };
        (sources, changed)
    }

    /// The last line of the newest agent log of `task` under `root`, with
    /// whether it changed.
    fn last_line(&mut self, root: &Paths, task: &str) -> (Option<String>, bool) {
        let dir = root.join(crate::paths::LOGS_DIR);
        if self.run.changed(&dir) {
            self.logs.insert(dir.clone(), newest_logs(&dir));
        }
        let Some(log) = self.logs.get(&dir).and_then(|logs| logs.get(task)).cloned() else {
            return (None, false);
        };
        let moved = self.run.changed(&log);
        if moved || !self.lines.contains_key(&log) {
            let line = tail(root.project(), &log, 1).pop();
            self.lines.insert(log.clone(), line);
        }
        (self.lines[&log].clone(), moved)
    }

    /// What Enter shows of `task`: the newest log's path and last lines,
    /// and the evidence of its last failure.
    pub(crate) fn details(&mut self, task: &str, lines: usize) -> Details {
        let log = newest_logs(&self.run.paths.join(crate::paths::LOGS_DIR)).remove(task);
        let state = (self.run.workers.iter())
            .find(|worker| worker.task == task)
            .map_or(&self.run.state, |worker| &worker.state);
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
            .or_else(|| self.digest.failed.get(task).cloned());
        Details {
            task: task.to_owned(),
            log: log.as_ref().map(|log| {
                let shown = log.strip_prefix(self.run.paths.project()).unwrap_or(log);
                shown.display().to_string()
            }),
            tail: (log.map(|log| tail(self.run.paths.project(), &log, lines))).unwrap_or_default(),
            // Each line made safe on its own: a line break stays one, not
            // a written `\n`.
            evidence: evidence.map(|e| {
                let e = crate::redact::redact(&e);
                (e.lines().map(|line| crate::text::safe(line).into_owned()))
                    .collect::<Vec<_>>()
                    .join("\n")
            }),
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
/// saw them, this machine's marked, on one line.
fn claims(shared: &Shared) -> String {
    if shared.claims.is_empty() {
        return "none".to_owned();
    }
    let shown: Vec<String> = (shared.claims.iter())
        .map(|claim| {
            let who = if claim.machine == shared.machine {
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
    shown.join(", ")
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
