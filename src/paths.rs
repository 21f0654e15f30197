//! Where everything of a project lives. One type owns the paths, made once
//! from the project root; every module that reads or writes a project file
//! asks it rather than joining names onto a root of its own.

use std::path::{Path, PathBuf};

use crate::files::own::Need;

/// The active queue, relative to the project root.
pub const TASKS_FILE: &str = "tasks.jsonl";
/// The archive, relative to the project root.
pub const DONE_FILE: &str = "tasks-done.jsonl";
/// Folder for ralph's runtime files, relative to the project root.
pub const RUNTIME_DIR: &str = ".ralph";
/// What `ralph task` keeps of the queue: its lock and the copies below,
/// the one folder of `.ralph/` besides notes, reviews and events that a
/// confined agent's `ralph task` may write (docs/SECURITY.md).
pub const QUEUE_DIR: &str = ".ralph/queue";
/// The short lock every queue write holds.
pub const LOCK_FILE: &str = ".ralph/queue/tasks.lock";
/// Where torn lines cut off the archive are kept.
pub const QUARANTINE_DIR: &str = ".ralph/queue/quarantine";
/// The lock a running `ralph run` holds.
pub const RUN_LOCK: &str = ".ralph/lock";
/// The loop's state.
pub const STATE_FILE: &str = ".ralph/state.json";
/// What watching a branch for PRDs has seen (docs/UNATTENDED.md).
pub const WATCH_FILE: &str = ".ralph/watch.json";
/// The loop's event stream.
pub const EVENTS_FILE: &str = ".ralph/events.ndjson";
/// The result of the last run.
pub const RESULT_FILE: &str = ".ralph/result.json";
/// `tasks.jsonl` as ralph last knew it: its last valid bytes before an
/// iteration, plus what `ralph task` changed during it. Put back when an
/// agent deletes the file or git reverts it.
pub const VALID_QUEUE: &str = ".ralph/queue/tasks.jsonl.valid";
/// `tasks-done.jsonl` as ralph last knew it, kept the same way: the
/// archive's records stay as ralph wrote them.
pub const VALID_ARCHIVE: &str = ".ralph/queue/tasks-done.jsonl.valid";
/// Present while an agent runs: every queue write then also updates the
/// copies above (see `Store::watch`).
pub const QUEUE_WATCH: &str = ".ralph/queue/queue.watch";
/// While an agent runs: what a `ralph task` write found in `tasks.jsonl`
/// when it was not ralph's copy (git may have reverted it), and what that
/// write left there; see `Store::follow`.
pub const QUEUE_FOUND: &str = ".ralph/queue/tasks.jsonl.found";
/// See [`QUEUE_FOUND`].
pub const QUEUE_WROTE: &str = ".ralph/queue/tasks.jsonl.wrote";
/// Parallel workers' task worktrees, one folder per task id.
pub const WORKTREES_DIR: &str = ".ralph/worktrees";
/// The process group of the agent at work.
pub const AGENT_GROUP_FILE: &str = ".ralph/agent.pgid";
/// Temporary files of ralph's agents that must live in the project (the
/// app-server's), writable to them.
pub const TMP_DIR: &str = ".ralph/tmp";
/// Each iteration's prompt.
pub const PROMPTS_DIR: &str = ".ralph/prompts";
/// Each iteration's agent output.
pub const LOGS_DIR: &str = ".ralph/logs";
/// Each task's failed attempts, one Markdown file per task id.
pub const CRITIQUE_DIR: &str = ".ralph/critique";
/// A task's notes, `ralph task note` (`.ralph/notes/<id>.md`).
pub const NOTES_DIR: &str = ".ralph/notes";
/// What a person let through of a task's change to protected paths,
/// `ralph task approve` (`.ralph/approvals/<id>.json`): read-only to
/// agents.
pub const APPROVALS_DIR: &str = ".ralph/approvals";
/// A task's review verdicts, `ralph task review` (`.ralph/reviews/<id>.jsonl`).
pub const REVIEWS_DIR: &str = ".ralph/reviews";
/// In the home of a run working elsewhere (`ralph execute`'s out-dir):
/// the checkout it works in, so the agent's `ralph task` there finds this
/// home (see `project::find_root`).
pub const WORK_TREE_FILE: &str = ".ralph/work-tree";
/// In `ralph execute`'s out-dir: the run and plan its queue was made
/// from, so a resumed run is the same run.
pub const CONTRACT_RUN_FILE: &str = ".ralph/contract-run.json";
/// With `delivery: pr`: the pull request's last body.
pub const PULL_REQUEST_BODY: &str = ".ralph/pull-request.md";
/// With `delivery: pr`: the body last sent cut shorter, after GitHub
/// refused the full one for its length.
pub const PULL_REQUEST_SHORT_BODY: &str = ".ralph/pull-request-short.md";
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

/// The paths of one project, or of one parallel worker in it.
///
/// A worker works in its task's worktree (`root`), where its own runtime
/// files live (state, the agent's process group), while the files every
/// worker shares are the project's: the queue and its lock and copies,
/// prompts and logs, the configuration, the event stream, `ralph.log` and
/// `.stop`.
///
/// `ralph execute` works in a repository whose project files all live
/// elsewhere (the worker contract's out-dir): see [`Paths::elsewhere`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Paths {
    root: PathBuf,
    project: PathBuf,
    /// Where this engine's own state and agent group file live.
    own: PathBuf,
}

impl Paths {
    /// The paths of the project rooted at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Paths {
        let root = root.into();
        Paths {
            project: root.clone(),
            own: root.clone(),
            root,
        }
    }

    /// The paths of a run whose work happens in the checkout `work` while
    /// the queue, the configuration and every runtime file live in `home`.
    pub fn elsewhere(work: impl Into<PathBuf>, home: impl Into<PathBuf>) -> Paths {
        let home = home.into();
        Paths {
            root: work.into(),
            own: home.clone(),
            project: home,
        }
    }

    /// The paths of a worker of this project working in `folder` (its
    /// task's worktree).
    pub fn in_worktree(&self, folder: impl Into<PathBuf>) -> Paths {
        let folder = folder.into();
        Paths {
            own: folder.clone(),
            root: folder,
            project: self.project.clone(),
        }
    }

    /// Where the work happens: the project root, or a worker's worktree.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The project root, whose queue and settings every worker shares
    /// (the out-dir of `ralph execute`).
    pub fn project(&self) -> &Path {
        &self.project
    }

    /// Whether the queue files are in the checkout at the root, committed
    /// with the work (a worker's are links to the project's); not so for
    /// [`Paths::elsewhere`].
    pub fn queue_in_checkout(&self) -> bool {
        self.own == self.root
    }

    /// `rel` (one of this module's names) under the root.
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root.join(rel)
    }

    /// `rel` under the project root.
    fn shared(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.project.join(rel)
    }

    /// `tasks.jsonl`.
    pub fn tasks(&self) -> PathBuf {
        self.shared(TASKS_FILE)
    }

    /// `tasks-done.jsonl`.
    pub fn done(&self) -> PathBuf {
        self.shared(DONE_FILE)
    }

    /// `.ralph/tasks.lock`.
    pub fn queue_lock(&self) -> PathBuf {
        self.shared(LOCK_FILE)
    }

    /// `.ralph/quarantine/`.
    pub fn quarantine_dir(&self) -> PathBuf {
        self.shared(QUARANTINE_DIR)
    }

    /// `.ralph/lock`.
    pub fn run_lock(&self) -> PathBuf {
        self.shared(RUN_LOCK)
    }

    /// `.ralph/machine`: this clone's id among the machines sharing its
    /// queue through the remote.
    pub fn machine(&self) -> PathBuf {
        self.shared(".ralph/machine")
    }

    /// `.ralph/state.json`.
    pub fn state(&self) -> PathBuf {
        self.own.join(STATE_FILE)
    }

    /// `.ralph/report.html`, `ralph report`'s page.
    pub fn report(&self) -> PathBuf {
        self.shared(".ralph/report.html")
    }

    /// `.ralph/watch.json`.
    pub fn watch(&self) -> PathBuf {
        self.shared(WATCH_FILE)
    }

    /// `.ralph/events.ndjson`.
    pub fn events(&self) -> PathBuf {
        self.shared(EVENTS_FILE)
    }

    /// `.ralph/result.json`.
    pub fn result(&self) -> PathBuf {
        self.shared(RESULT_FILE)
    }

    /// `.ralph/queue/tasks.jsonl.valid`.
    pub fn valid_queue(&self) -> PathBuf {
        self.shared(VALID_QUEUE)
    }

    /// `.ralph/queue/tasks-done.jsonl.valid`.
    pub fn valid_archive(&self) -> PathBuf {
        self.shared(VALID_ARCHIVE)
    }

    /// `.ralph/queue.watch`.
    pub fn queue_watch(&self) -> PathBuf {
        self.shared(QUEUE_WATCH)
    }

    /// `.ralph/tasks.jsonl.found`.
    pub fn queue_found(&self) -> PathBuf {
        self.shared(QUEUE_FOUND)
    }

    /// `.ralph/tasks.jsonl.wrote`.
    pub fn queue_wrote(&self) -> PathBuf {
        self.shared(QUEUE_WROTE)
    }

    /// `.ralph/worktrees/`, the project's.
    pub fn worktrees(&self) -> PathBuf {
        self.shared(WORKTREES_DIR)
    }

    /// `.ralph/agent.pgid`.
    pub fn agent_group(&self) -> PathBuf {
        self.own.join(AGENT_GROUP_FILE)
    }

    /// `.ralph/critique/<id>.md`, the project's (a worker's too: it
    /// outlives the worktree).
    pub fn critique(&self, id: &str) -> PathBuf {
        self.shared(CRITIQUE_DIR).join(format!("{id}.md"))
    }

    /// `.ralph/notes/<id>.md`, the project's.
    pub fn notes(&self, id: &str) -> PathBuf {
        self.shared(NOTES_DIR).join(format!("{id}.md"))
    }

    /// `.ralph/approvals/<id>.json`, the project's.
    pub fn approval(&self, id: &str) -> PathBuf {
        self.shared(APPROVALS_DIR).join(format!("{id}.json"))
    }

    /// `.ralph/reviews/<id>.jsonl`, the project's.
    pub fn reviews(&self, id: &str) -> PathBuf {
        self.shared(REVIEWS_DIR).join(format!("{id}.jsonl"))
    }

    /// `ralph.log`.
    pub fn log(&self) -> PathBuf {
        self.shared(LOG_FILE)
    }

    /// `.stop`.
    pub fn stop(&self) -> PathBuf {
        self.shared(STOP_FILE)
    }

    /// `config/ralph.yaml`.
    pub fn settings(&self) -> PathBuf {
        self.shared(SETTINGS_FILE)
    }

    /// `config/roles.yaml`.
    pub fn roles_config(&self) -> PathBuf {
        self.shared(ROLES_FILE)
    }

    /// `roles/<role>.md`.
    pub fn role(&self, role: &str) -> PathBuf {
        self.shared(ROLES_DIR).join(format!("{role}.md"))
    }

    /// `working.md`.
    pub fn working(&self) -> PathBuf {
        self.shared(WORKING_FILE)
    }

    /// `templates/context.md.j2`.
    pub fn context_template(&self) -> PathBuf {
        self.shared(CONTEXT_TEMPLATE)
    }

    /// ralph's own files and folders of this project (and of this worker),
    /// each with what it must be: the queue files, `ralph.log`, `.stop`
    /// and the known ones of `.ralph/`, which a run looks at before it
    /// starts and after each agent's turn ([`crate::files::own::check_all`]).
    /// Each is under [`Paths::project`]. The files ralph names per task
    /// or iteration (`.ralph/logs/<n>-<id>.log`, ...) are refused one by
    /// one, when ralph opens them.
    pub fn own_entries(&self) -> Vec<(PathBuf, Need)> {
        let folders = [
            RUNTIME_DIR,
            LOGS_DIR,
            PROMPTS_DIR,
            CRITIQUE_DIR,
            NOTES_DIR,
            REVIEWS_DIR,
            QUEUE_DIR,
            QUARANTINE_DIR,
            APPROVALS_DIR,
            WORKTREES_DIR,
            TMP_DIR,
        ];
        let files = [
            TASKS_FILE,
            DONE_FILE,
            LOG_FILE,
            STOP_FILE,
            RUN_LOCK,
            LOCK_FILE,
            EVENTS_FILE,
            RESULT_FILE,
            VALID_QUEUE,
            VALID_ARCHIVE,
            QUEUE_WATCH,
            QUEUE_FOUND,
            QUEUE_WROTE,
            WATCH_FILE,
            PULL_REQUEST_BODY,
            PULL_REQUEST_SHORT_BODY,
            ".ralph/machine",
            ".ralph/report.html",
        ];
        let mut entries: Vec<(PathBuf, Need)> = (folders.iter())
            .map(|rel| (self.shared(rel), Need::Folder))
            .chain(files.iter().map(|rel| (self.shared(rel), Need::File)))
            .collect();
        // A worker's own, in its worktree (the project's when it is none).
        entries.push((self.own.join(RUNTIME_DIR), Need::Folder));
        entries.push((self.state(), Need::File));
        entries.push((self.agent_group(), Need::File));
        entries
    }
}
