//! Telling people (`notify.command`, docs/NOTIFY.md): for each event worth
//! a person's attention, the command runs with `sh -c` in the project,
//! the event as one JSON object on its stdin, its kind in `RALPH_EVENT`
//! and its message in `RALPH_MESSAGE`. One thread of its own runs it for
//! each event in turn, in the order they happened, each under its time
//! limit, so the loop never waits for it; a failure is a line in
//! `ralph.log`, never the run's. The run waits for the events still to
//! tell when it ends, so the last one is told too.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::config::NotifySettings;
use crate::paths::Paths;

/// What happened, as `RALPH_EVENT` and the event's `event` field say it
/// (declared with the settings that name the kinds to tell).
pub(crate) use crate::config::NotifyKind as Kind;

/// One event for the command: `event`, `time`, `run_id`, `project`,
/// `task` (when it is a task's), `message`, then what the kind adds.
#[derive(Debug, Serialize)]
pub(crate) struct Notice {
    /// Its kind.
    pub event: Kind,
    /// When, RFC 3339.
    pub time: String,
    /// The run.
    pub run_id: String,
    /// The project's folder.
    pub project: String,
    /// The task it is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// One line for a person.
    pub message: String,
    /// What the kind adds (a pull request's `url`, a run's `status`).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Runs `notify.command`; cheap to clone (a run's workers share one).
#[derive(Clone, Default)]
pub(crate) struct Notifier(Option<Arc<Inner>>);

struct Inner {
    on: Vec<Kind>,
    /// To the thread that runs the command for each event in turn;
    /// `None` once the run settled.
    sender: Mutex<Option<mpsc::Sender<Job>>>,
    teller: Mutex<Option<JoinHandle<()>>>,
}

/// One event to tell: its kind, its JSON, its message.
type Job = (Kind, String, String);

/// What the telling thread needs.
struct Teller {
    command: String,
    timeout: Duration,
    project: PathBuf,
    log: PathBuf,
    /// Never set: a notification is stopped by its time limit, or with
    /// every other child of ralph's by a signal.
    never: AtomicBool,
}

impl Notifier {
    /// The project's notifier: nobody is told without `notify.command`.
    /// The command runs for one event at a time, in the order they
    /// happened, in a thread of its own.
    pub(crate) fn new(settings: &NotifySettings, paths: &Paths) -> Notifier {
        let Some(command) = settings.command.clone() else {
            return Notifier(None);
        };
        let teller = Teller {
            command,
            timeout: settings.timeout,
            project: paths.project().to_path_buf(),
            log: paths.log(),
            never: AtomicBool::new(false),
        };
        let (sender, jobs) = mpsc::channel::<Job>();
        let spawned = std::thread::Builder::new()
            .name("notify".into())
            .spawn(move || {
                for (kind, json, message) in jobs {
                    teller.tell(kind, json, message);
                }
            });
        let (sender, teller) = match spawned {
            Ok(handle) => (Some(sender), Some(handle)),
            Err(err) => {
                tracing::warn!("notify.command cannot run: no thread for it: {err}");
                (None, None)
            }
        };
        Notifier(Some(Arc::new(Inner {
            on: settings.on.clone(),
            sender: Mutex::new(sender),
            teller: Mutex::new(teller),
        })))
    }

    /// Whether events of `kind` are told.
    pub(crate) fn wants(&self, kind: Kind) -> bool {
        self.0
            .as_ref()
            .is_some_and(|inner| inner.on.is_empty() || inner.on.contains(&kind))
    }

    /// Tells `notice` (when its kind is wanted), without waiting.
    pub(crate) fn send(&self, notice: Notice) {
        let Some(inner) = self.0.as_ref().filter(|_| self.wants(notice.event)) else {
            return;
        };
        // The message on one line, for commands that need no JSON.
        let message = notice.message.replace(['\n', '\r'], " ");
        let Ok(mut json) = serde_json::to_string(&notice) else {
            return;
        };
        json.push('\n');
        if let Some(sender) = locked(&inner.sender).as_ref() {
            let _ = sender.send((notice.event, json, message));
        }
    }

    /// Waits for the events still to tell (each command ends by its time
    /// limit): the run's last events are told before ralph exits. Later
    /// events are not told.
    pub(crate) fn settle(&self) {
        let Some(inner) = &self.0 else { return };
        drop(locked(&inner.sender).take());
        if let Some(handle) = locked(&inner.teller).take() {
            let _ = handle.join();
        }
    }
}

fn locked<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Teller {
    fn tell(&self, kind: Kind, json: String, message: String) {
        let env = [("RALPH_EVENT", kind.as_str()), ("RALPH_MESSAGE", &message)];
        let ran = crate::agent::run_shell_with(
            &self.command,
            &self.project,
            self.timeout,
            &self.never,
            Some(json.into_bytes()),
            &env,
        );
        match ran {
            Ok(run) if run.timed_out => self.failed(
                kind,
                &format!(
                    "stopped at its time limit ({})",
                    crate::config::ShowDuration(self.timeout)
                ),
            ),
            Ok(run) if !run.status.success() => {
                let said = run.tail.trim();
                let said = said.lines().last().unwrap_or_default();
                self.failed(kind, &format!("{}{}", run.status, said_text(said)));
            }
            Ok(_) => tracing::debug!(event = kind.as_str(), "notified"),
            Err(err) => self.failed(kind, &err.to_string()),
        }
    }

    /// A line in `ralph.log`: the run goes on regardless.
    fn failed(&self, kind: Kind, why: &str) {
        let line = format!(
            "{} warning: notify.command for {} failed: {why}\n",
            crate::clock::now(),
            kind.as_str()
        );
        tracing::warn!("{}", line.trim_end());
        let line = crate::redact::redact(&line);
        let _ = crate::files::own::append(&self.project, &self.log, line.as_bytes());
    }
}

fn said_text(said: &str) -> String {
    match said.is_empty() {
        true => String::new(),
        false => format!(": {said}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notice(kind: Kind) -> Notice {
        let mut extra = Map::new();
        extra.insert("url".into(), "https://example.test/pr/1".into());
        Notice {
            event: kind,
            time: "2026-11-27T00:00:00Z".into(),
            run_id: "r1".into(),
            project: "/p".into(),
            task: Some("A.1".into()),
            message: "done".into(),
            extra,
        }
    }

    #[test]
    fn a_notice_is_one_json_object_with_its_kind_first() {
        let json = serde_json::to_string(&notice(Kind::PullRequest)).unwrap();
        assert_eq!(
            json,
            r#"{"event":"pull_request","time":"2026-11-27T00:00:00Z","run_id":"r1","project":"/p","task":"A.1","message":"done","url":"https://example.test/pr/1"}"#
        );
    }

    #[test]
    fn kinds_are_named_as_serde_names_them() {
        for kind in [
            Kind::TaskMerged,
            Kind::TaskBlocked,
            Kind::PrdPlanned,
            Kind::PrdRefused,
            Kind::PullRequest,
            Kind::UsageLimit,
            Kind::CapReached,
            Kind::RunEnded,
            Kind::RunIdle,
            Kind::WatchStuck,
            Kind::PrFeedback,
            Kind::PrMerged,
        ] {
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                Value::from(kind.as_str())
            );
        }
    }

    #[test]
    fn only_the_kinds_asked_for_are_told() {
        let dir = tempfile_dir();
        let paths = Paths::new(&dir);
        let settings = |on: Vec<Kind>| NotifySettings {
            command: Some("true".into()),
            on,
            timeout: Duration::from_secs(1),
        };
        let all = Notifier::new(&settings(Vec::new()), &paths);
        assert!(all.wants(Kind::RunIdle) && all.wants(Kind::TaskMerged));
        let some = Notifier::new(&settings(vec![Kind::TaskBlocked]), &paths);
        assert!(some.wants(Kind::TaskBlocked) && !some.wants(Kind::TaskMerged));
        let none = Notifier::new(&NotifySettings::default(), &paths);
        assert!(!none.wants(Kind::RunEnded));
    }

    fn tempfile_dir() -> PathBuf {
        std::env::temp_dir().join("ralph-notify-unit")
    }
}
