//! What a patch did to the queue, for the command to report.

use super::id::TaskId;
use super::model::Status;

/// What a patch did, for the command to report.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// A task was added.
    Added(TaskId),
    /// A leaf became a container because a child was added under it.
    BecameContainer(TaskId),
    /// A task's status was set (`from` equals `to` when nothing changed).
    Status {
        /// The task.
        id: TaskId,
        /// Status before.
        from: Status,
        /// Status after.
        to: Status,
    },
    /// A leaf was split into these children.
    Split {
        /// The task that became a container.
        id: TaskId,
        /// Its new children.
        children: Vec<TaskId>,
    },
    /// What became of planned task `index` (`Patch::Plan`).
    Planned {
        /// Its index in the plan.
        index: usize,
        /// Its task.
        id: TaskId,
        /// Added, unchanged, changed or archived.
        outcome: Planned,
    },
    /// A task was archived.
    Archived(TaskId),
    /// The task was archived already; nothing was appended.
    AlreadyArchived(TaskId),
    /// Task `0` was not in `tasks.jsonl` during an agent's iteration but in
    /// the queue as ralph last knew it: the change was made there, and the
    /// run puts that queue back after the iteration when git had reverted
    /// the file.
    OnKnownQueue(String),
    /// A torn last line of the archive (a crash during an append) was moved
    /// to the quarantine folder before new records were appended.
    TornLineMoved {
        /// Its line number in `tasks-done.jsonl`.
        line: usize,
        /// Where it is kept now, relative to the project.
        to: std::path::PathBuf,
    },
}

/// What planning did with one planned task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Planned {
    /// Added as a new task.
    Added,
    /// Its task exists with the same text.
    Unchanged,
    /// Its task exists with other text; `rewritten` when `--update` wrote
    /// the new text (only a pending task is rewritten).
    Changed {
        /// The task's status.
        status: Status,
        /// Whether the new text was written.
        rewritten: bool,
    },
    /// Its task is archived; `changed` when the document says otherwise now.
    Archived {
        /// Whether the text differs from the archived record.
        changed: bool,
    },
}
