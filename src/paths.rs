//! Where everything of a project lives. One type owns the paths, made once
//! from the project root; every module that reads or writes a project file
//! asks it rather than joining names onto a root of its own.

use std::path::{Path, PathBuf};

/// The active queue, relative to the project root.
pub const TASKS_FILE: &str = "tasks.jsonl";
/// The archive, relative to the project root.
pub const DONE_FILE: &str = "tasks-done.jsonl";
/// Folder for ralph's runtime files, relative to the project root.
pub const RUNTIME_DIR: &str = ".ralph";
/// The short lock every queue write holds.
pub const LOCK_FILE: &str = ".ralph/tasks.lock";
/// Where torn lines cut off the archive are kept.
pub const QUARANTINE_DIR: &str = ".ralph/quarantine";
/// The lock a running `ralph run` holds.
pub const RUN_LOCK: &str = ".ralph/lock";
/// The loop's state.
pub const STATE_FILE: &str = ".ralph/state.json";
/// The loop's event stream.
pub const EVENTS_FILE: &str = ".ralph/events.ndjson";
/// The result of the last run.
pub const RESULT_FILE: &str = ".ralph/result.json";
/// `tasks.jsonl` as ralph last knew it: its last valid bytes before an
/// iteration, plus what `ralph task` changed during it. Put back when an
/// agent deletes the file or git reverts it.
pub const VALID_QUEUE: &str = ".ralph/tasks.jsonl.valid";
/// `tasks-done.jsonl` as ralph last knew it, kept the same way: the
/// archive's records stay as ralph wrote them.
pub const VALID_ARCHIVE: &str = ".ralph/tasks-done.jsonl.valid";
/// Present while an agent runs: every queue write then also updates the
/// copies above (see `Store::watch`).
pub const QUEUE_WATCH: &str = ".ralph/queue.watch";
/// The process group of the agent at work.
pub const AGENT_GROUP_FILE: &str = ".ralph/agent.pgid";
/// Each iteration's prompt.
pub const PROMPTS_DIR: &str = ".ralph/prompts";
/// Each iteration's agent output.
pub const LOGS_DIR: &str = ".ralph/logs";
/// The human-readable iteration log.
pub const LOG_FILE: &str = "ralph.log";
/// The stop signal.
pub const STOP_FILE: &str = ".stop";
/// The loop settings.
pub const SETTINGS_FILE: &str = "config/ralph.yaml";
/// The role triggers.
pub const ROLES_FILE: &str = "config/roles.yaml";
/// The role overlays.
pub const ROLES_DIR: &str = "roles";
/// The base prompt.
pub const WORKING_FILE: &str = "working.md";
/// The template of a prompt's task context.
pub const CONTEXT_TEMPLATE: &str = "templates/context.md.j2";

/// The paths of one project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Paths {
    root: PathBuf,
}

impl Paths {
    /// The paths of the project rooted at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Paths {
        Paths { root: root.into() }
    }

    /// The project root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `rel` (one of this module's names) under the root.
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root.join(rel)
    }

    /// `tasks.jsonl`.
    pub fn tasks(&self) -> PathBuf {
        self.join(TASKS_FILE)
    }

    /// `tasks-done.jsonl`.
    pub fn done(&self) -> PathBuf {
        self.join(DONE_FILE)
    }

    /// `.ralph/tasks.lock`.
    pub fn queue_lock(&self) -> PathBuf {
        self.join(LOCK_FILE)
    }

    /// `.ralph/quarantine/`.
    pub fn quarantine_dir(&self) -> PathBuf {
        self.join(QUARANTINE_DIR)
    }

    /// `.ralph/lock`.
    pub fn run_lock(&self) -> PathBuf {
        self.join(RUN_LOCK)
    }

    /// `.ralph/state.json`.
    pub fn state(&self) -> PathBuf {
        self.join(STATE_FILE)
    }

    /// `.ralph/events.ndjson`.
    pub fn events(&self) -> PathBuf {
        self.join(EVENTS_FILE)
    }

    /// `.ralph/result.json`.
    pub fn result(&self) -> PathBuf {
        self.join(RESULT_FILE)
    }

    /// `.ralph/tasks.jsonl.valid`.
    pub fn valid_queue(&self) -> PathBuf {
        self.join(VALID_QUEUE)
    }

    /// `.ralph/tasks-done.jsonl.valid`.
    pub fn valid_archive(&self) -> PathBuf {
        self.join(VALID_ARCHIVE)
    }

    /// `.ralph/queue.watch`.
    pub fn queue_watch(&self) -> PathBuf {
        self.join(QUEUE_WATCH)
    }

    /// `.ralph/agent.pgid`.
    pub fn agent_group(&self) -> PathBuf {
        self.join(AGENT_GROUP_FILE)
    }

    /// `ralph.log`.
    pub fn log(&self) -> PathBuf {
        self.join(LOG_FILE)
    }

    /// `.stop`.
    pub fn stop(&self) -> PathBuf {
        self.join(STOP_FILE)
    }

    /// `config/ralph.yaml`.
    pub fn settings(&self) -> PathBuf {
        self.join(SETTINGS_FILE)
    }

    /// `config/roles.yaml`.
    pub fn roles_config(&self) -> PathBuf {
        self.join(ROLES_FILE)
    }

    /// `roles/<role>.md`.
    pub fn role(&self, role: &str) -> PathBuf {
        self.join(ROLES_DIR).join(format!("{role}.md"))
    }

    /// `working.md`.
    pub fn working(&self) -> PathBuf {
        self.join(WORKING_FILE)
    }

    /// `templates/context.md.j2`.
    pub fn context_template(&self) -> PathBuf {
        self.join(CONTEXT_TEMPLATE)
    }
}
