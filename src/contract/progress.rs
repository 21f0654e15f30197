//! While `ralph execute` runs the loop, the loop's events
//! (`.ralph/events.ndjson` in the out-dir) are translated into the
//! contract's files as they are written: `progress.ndjson`, one
//! `attempts/<story>-attempt-<n>.md` per attempt, and `critique.md`.
//!
//! | loop event | `phase` | `status` |
//! |---|---|---|
//! | `run` | `execute` | `started`, then how the run ended |
//! | `iteration` (one agent attempt) | `execute` | `ok`, or the failure class |
//! | `verify` (a story's check) | `verify` | `passed`, `failed` |
//! | `finish` (a failed attempt), or a failed `iteration` | `critique` | the failure class |
//! | `block` | `execute` | `blocked` |
//! | `merge` | `merge` | `ok` |
//! | `verify_run` | `run_verify` | `passed`, `failed` |

use std::collections::HashMap;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::PlanFile;
use super::output::Progress;
use crate::events::Event;
use crate::files::own;
use crate::paths::Paths;

/// `critique.md` in the out-dir.
pub(crate) const CRITIQUE_FILE: &str = "critique.md";
/// `attempts/` in the out-dir.
pub(crate) const ATTEMPTS_DIR: &str = "attempts";

/// How often the event stream is looked at while the loop runs.
const POLL: Duration = Duration::from_millis(200);

/// The thread translating the loop's events while it runs.
pub(crate) struct Translator {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<io::Result<()>>,
}

impl Translator {
    /// Starts translating the events appended to the out-dir's event
    /// stream from now on (a resumed run's earlier events were translated
    /// by the run that wrote them).
    pub(crate) fn start(paths: &Paths, run_id: &str, plan: &PlanFile) -> io::Result<Translator> {
        let events = paths.events();
        let offset = match std::fs::metadata(&events) {
            Ok(meta) => meta.len(),
            Err(err) if err.kind() == io::ErrorKind::NotFound => 0,
            Err(err) => return Err(err),
        };
        let mut tail = Tail {
            events,
            offset,
            partial: Vec::new(),
            paths: paths.clone(),
            run_id: run_id.to_owned(),
            stories: plan
                .stories
                .iter()
                .map(|s| (s.id.clone(), s.title.clone()))
                .collect(),
            attempt: HashMap::new(),
        };
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            loop {
                // Read the flag first: the pass after it is set sees every
                // event the loop wrote.
                let last = stopped.load(Ordering::SeqCst);
                tail.pass()?;
                if last {
                    return tail.write_critique();
                }
                std::thread::sleep(POLL);
            }
        });
        Ok(Translator { stop, thread })
    }

    /// Translates what is left and stops.
    pub(crate) fn finish(self) -> io::Result<()> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the progress translator panicked")))
    }
}

/// The translator's place in the event stream and what it knows so far.
struct Tail {
    events: PathBuf,
    offset: u64,
    /// The start of a line not yet ended.
    partial: Vec<u8>,
    /// The out-dir's paths.
    paths: Paths,
    run_id: String,
    /// Story id and title, in plan order.
    stories: Vec<(String, String)>,
    /// Each story's attempt under way (the last the loop reported).
    attempt: HashMap<String, u64>,
}

impl Tail {
    /// Translates the lines appended since the last pass.
    fn pass(&mut self) -> io::Result<()> {
        let mut file = match std::fs::File::open(&self.events) {
            Ok(file) => file,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(err) => return Err(err),
        };
        file.seek(SeekFrom::Start(self.offset))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        self.offset += bytes.len() as u64;
        self.partial.extend_from_slice(&bytes);
        let Some(end) = self.partial.iter().rposition(|&b| b == b'\n') else {
            return Ok(());
        };
        let complete: Vec<u8> = self.partial.drain(..=end).collect();
        for line in complete.split(|&b| b == b'\n') {
            // A torn line (a crash mid-write) is not an event.
            if let Ok(event) = serde_json::from_slice::<Event>(line) {
                self.translate(&event)?;
            }
        }
        Ok(())
    }

    fn translate(&mut self, event: &Event) -> io::Result<()> {
        let task = event.task_id.clone();
        let story = task.as_deref().and_then(story_of);
        let mut context = Map::new();
        context.insert("detail".into(), json!(event.detail));
        // A task the agent split a story into (`S1.1`) or added (`A`):
        // its events are its story's, or no story's, naming the task.
        if let Some(task) = task.as_ref().filter(|task| story.as_ref() != Some(*task)) {
            context.insert("task".into(), json!(task));
        }
        if let Some(role) = &event.role {
            context.insert("role".into(), json!(role));
        }
        let (phase, status) = match (event.phase.as_str(), event.status.as_str()) {
            ("run", status) => {
                context.insert("ralph_run_id".into(), json!(event.run_id));
                ("execute", status.to_owned())
            }
            ("iteration", status) => {
                context.extend(event.extra.clone());
                if let (Some(id), Some(n)) = (&task, event.extra.get("task_iteration")) {
                    self.attempt.insert(id.clone(), n.as_u64().unwrap_or(0));
                }
                ("execute", status.to_owned())
            }
            ("verify", "ok") => ("verify", "passed".to_owned()),
            ("verify", "verify_failed") => ("verify", "failed".to_owned()),
            ("verify", status) => ("verify", status.to_owned()),
            ("finish", class) => ("critique", class.to_owned()),
            ("block", _) => ("execute", "blocked".to_owned()),
            ("merge", status) => ("merge", status.to_owned()),
            ("split", status) => ("execute", format!("split_{status}")),
            ("verify_run", "ok") => ("run_verify", "passed".to_owned()),
            ("verify_run", status) => ("run_verify", status.to_owned()),
            _ => return Ok(()),
        };
        let attempt = task
            .as_ref()
            .and_then(|id| self.attempt.get(id).copied())
            .filter(|&n| n > 0);
        let progress = Progress {
            timestamp: event.timestamp.clone(),
            run_id: self.run_id.clone(),
            story_id: story.clone(),
            phase,
            attempt,
            status: status.clone(),
            context: Value::Object(context),
        };
        progress.append(self.paths.project())?;
        if let (Some(id), Some(n)) = (&task, attempt) {
            let begins = event.phase == "iteration";
            self.note_attempt(id, n, event, (phase, &status), begins)?;
        }
        // An attempt that failed in the agent (not in a check) is
        // critiqued in the same breath.
        let failed_class = event.text("class");
        if let (true, Some(class)) = (event.phase == "iteration", failed_class) {
            let critique = Progress {
                phase: "critique",
                status: class.to_owned(),
                context: json!({"detail": event.detail}),
                ..progress
            };
            critique.append(self.paths.project())?;
            if let (Some(id), Some(n)) = (&task, attempt) {
                self.note_step(id, n, "critique", class, &event.detail)?;
            }
        }
        if phase == "critique" || failed_class.is_some() {
            self.write_critique()?;
        }
        Ok(())
    }

    /// `attempts/<id>-attempt-<n>.md`: begun when the agent's attempt
    /// ends (the prompt's task section and the agent's outcome), then one
    /// line per later step of the same attempt.
    fn note_attempt(
        &self,
        id: &str,
        n: u64,
        event: &Event,
        (phase, status): (&str, &str),
        begins: bool,
    ) -> io::Result<()> {
        if begins {
            let title = self
                .stories
                .iter()
                .find(|(story, _)| story == id)
                .map_or("", |(_, title)| title.as_str());
            let log = event.text("log").unwrap_or("");
            let task = self.task_section(log);
            let field = |key: &str| {
                event
                    .extra
                    .get(key)
                    .filter(|v| !v.is_null())
                    .map_or("-".to_owned(), |v| {
                        v.as_str().map_or(v.to_string(), str::to_owned)
                    })
            };
            let text = format!(
                "# {id} attempt {n}: {title}\n\n## Task\n\n{}\n\n## Outcome\n\n- agent: {} (model {}), {} in {} ms\n- result: {status}\n- output: {log}\n",
                task.trim_end(),
                field("agent"),
                field("model"),
                field("exit"),
                field("duration_ms"),
            );
            let path = self.attempt_file(id, n);
            return own::replace(self.paths.project(), &path, text.as_bytes());
        }
        self.note_step(id, n, phase, status, &event.detail)
    }

    /// One line for a later step of attempt `n` at story `id`.
    fn note_step(
        &self,
        id: &str,
        n: u64,
        phase: &str,
        status: &str,
        detail: &str,
    ) -> io::Result<()> {
        let line = format!("- {phase}: {status} ({})\n", detail.replace('\n', " "));
        own::append(
            self.paths.project(),
            &self.attempt_file(id, n),
            line.as_bytes(),
        )
    }

    fn attempt_file(&self, id: &str, n: u64) -> PathBuf {
        self.paths
            .project()
            .join(ATTEMPTS_DIR)
            .join(format!("{id}-attempt-{n}.md"))
    }

    /// The task section of the prompt of the iteration whose output is
    /// `log` (`.ralph/logs/7-S1.log` → `.ralph/prompts/7-S1.md`): from
    /// `# Current task` to the next top-level heading, or the whole prompt
    /// when a custom template has no such heading.
    fn task_section(&self, log: &str) -> String {
        let Some(name) = Path::new(log).file_stem() else {
            return String::new();
        };
        let prompt = self
            .paths
            .project()
            .join(crate::paths::PROMPTS_DIR)
            .join(name)
            .with_extension("md");
        let text = std::fs::read_to_string(prompt).unwrap_or_default();
        let Some(start) = text.find("# Current task\n") else {
            return text;
        };
        let rest = &text[start..];
        let end = rest
            .match_indices("\n# ")
            .next()
            .map_or(rest.len(), |(at, _)| at);
        rest[..end].to_owned()
    }

    /// `critique.md`: every failed attempt's critique, oldest first, each
    /// under its story's heading. Made again from the loop's critique
    /// files, so it never disagrees with them.
    fn write_critique(&self) -> io::Result<()> {
        let mut entries: Vec<(String, usize, String)> = Vec::new();
        for (at, (id, title)) in self.stories.iter().enumerate() {
            let bytes = own::read(self.paths.project(), &self.paths.critique(id))?;
            let text = String::from_utf8_lossy(&bytes);
            for entry in crate::critique::entries(&text) {
                // `### Iteration 3 · 2026-01-01T00:10:00Z · role x · class`
                let time = entry.split(" · ").nth(1).unwrap_or("").to_owned();
                entries.push((time, at, format!("## {id}: {title}\n\n{entry}")));
            }
        }
        entries.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        let mut text = String::from("# Critique\n\nEvery failed attempt, oldest first.\n\n");
        for (_, _, entry) in entries {
            text.push_str(&entry);
        }
        let root = self.paths.project();
        own::replace(root, &root.join(CRITIQUE_FILE), text.as_bytes())
    }
}

/// The story a task belongs to: the story itself (`S1`), or the one the
/// agent split into it (`S1.2`, `S1.2.1`); `None` for a task the agent
/// added beside the stories.
fn story_of(task: &str) -> Option<String> {
    let story = task.split('.').next()?;
    crate::task::id::child_number(story.strip_prefix('S')?).map(|_| story.to_owned())
}

#[cfg(test)]
mod tests {
    use super::story_of;

    #[test]
    fn a_task_belongs_to_the_story_its_id_starts_with() {
        assert_eq!(story_of("S12").as_deref(), Some("S12"));
        assert_eq!(story_of("S1.2.1").as_deref(), Some("S1"));
        for beside in ["A", "A.1", "S0", "S01", "S", "Sx"] {
            assert_eq!(story_of(beside), None, "{beside}");
        }
    }
}
