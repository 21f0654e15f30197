//! The classes of failed iterations: the agent's own, and those the loop
//! gives what it finds after an iteration.

use serde::{Deserialize, Serialize};
use strum::{Display, IntoStaticStr};

/// The kind of a failed iteration; events, `state.json`, `result.json`
/// and summaries use [`as_str`](Self::as_str). The agent's own classes
/// (the design's ten, [`FailureClass::ALL`]) come from its exit and
/// output; the loop adds what it finds after the iteration
/// ([`FailureClass::LOOP`]).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, IntoStaticStr, Display,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum FailureClass {
    /// The agent failed without a more specific reason.
    Exit,
    /// The agent ran past its time limit and was stopped.
    Timeout,
    /// The agent is not logged in or its credentials were refused.
    Auth,
    /// A usage, rate or quota limit was hit.
    UsageLimit,
    /// The agent was denied a permission it needed.
    Permission,
    /// The agent's program is not installed.
    MissingBinary,
    /// The agent left `tasks.jsonl` malformed.
    InvalidQueue,
    /// The agent left the task branch and ralph could not return.
    LeftBranch,
    /// A verification command failed.
    VerifyFailed,
    /// Too many iterations without a commit or file change.
    NoProgress,
    /// git reverted or deleted `tasks.jsonl`; ralph put it back.
    QueueReverted,
    /// Archive records were changed, removed or added by hand; ralph put
    /// them back.
    ArchiveEdited,
    /// The task's squash conflicts with the base.
    MergeConflict,
    /// A git hook refused the squash commit.
    HookRejected,
    /// The agent left conflicts in the index.
    UnmergedIndex,
    /// The agent left a merge in progress.
    MergeInProgress,
    /// The agent left a revert in progress.
    RevertInProgress,
    /// The agent left a cherry-pick in progress.
    CherryPickInProgress,
    /// The agent left a bisect in progress.
    BisectInProgress,
    /// The agent left a rebase in progress.
    RebaseInProgress,
    /// The agent left a `git am` in progress.
    GitAmInProgress,
    /// The reviewer left a `ready` task without a verdict.
    NoVerdict,
}

impl FailureClass {
    /// Every class, in the order of the design document.
    pub const ALL: [FailureClass; 10] = [
        FailureClass::Exit,
        FailureClass::Timeout,
        FailureClass::Auth,
        FailureClass::UsageLimit,
        FailureClass::Permission,
        FailureClass::MissingBinary,
        FailureClass::InvalidQueue,
        FailureClass::LeftBranch,
        FailureClass::VerifyFailed,
        FailureClass::NoProgress,
    ];

    /// The classes the loop gives what it finds after an iteration.
    pub const LOOP: [FailureClass; 12] = [
        FailureClass::QueueReverted,
        FailureClass::ArchiveEdited,
        FailureClass::MergeConflict,
        FailureClass::HookRejected,
        FailureClass::UnmergedIndex,
        FailureClass::MergeInProgress,
        FailureClass::RevertInProgress,
        FailureClass::CherryPickInProgress,
        FailureClass::BisectInProgress,
        FailureClass::RebaseInProgress,
        FailureClass::GitAmInProgress,
        FailureClass::NoVerdict,
    ];

    /// The class of a git `operation` the agent left in progress, as the
    /// git module names it (`rebase`, `cherry-pick`, `git am`, ...).
    pub fn in_progress(operation: &str) -> FailureClass {
        match operation {
            "revert" => FailureClass::RevertInProgress,
            "cherry-pick" => FailureClass::CherryPickInProgress,
            "bisect" => FailureClass::BisectInProgress,
            "rebase" => FailureClass::RebaseInProgress,
            "git am" => FailureClass::GitAmInProgress,
            _ => FailureClass::MergeInProgress,
        }
    }

    /// The name used in events, state and summaries.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

// Ordered by name, so maps keyed by class (`failures` in `result.json`)
// keep the order they had as strings.
impl Ord for FailureClass {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for FailureClass {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Default for FailureClass {
    /// `exit`: a failure with no more specific reason.
    fn default() -> FailureClass {
        FailureClass::Exit
    }
}
