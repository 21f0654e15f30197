//! What the contract writes to the out-dir besides `plan.json`:
//! `progress.ndjson` (append-only events) and `result.json` (the terminal
//! result, written on every path that ends a command).

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::CONTRACT_VERSION;
use crate::exit::Exit;

/// `plan.json` in the out-dir.
pub(crate) const PLAN_FILE: &str = "plan.json";
/// `progress.ndjson` in the out-dir.
pub(crate) const PROGRESS_FILE: &str = "progress.ndjson";
/// `result.json` in the out-dir.
pub(crate) const RESULT_FILE: &str = "result.json";

/// Why a run did not succeed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, strum::Display)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub(crate) enum Reason {
    /// The input or the PRD could not be planned.
    PlanGenerationFailed,
    /// The agent kept exiting with an error.
    AgentExitNonzero,
    /// The agent ran past its timeout on the last attempt.
    AgentTimeout,
    /// A story's verification kept failing.
    StoryVerificationFailed,
    /// The run's verification failed after every story was done.
    RunVerificationFailed,
    /// A story or the run spent its attempts.
    AttemptBudgetExhausted,
    /// The run spent its minutes.
    RunTimeout,
    /// Stories wait on a story that cannot be done.
    BlockedDependency,
}

impl Reason {
    /// The exit code of a command ending for this reason
    /// (docs/REFERENCE.md, "The worker contract").
    pub(crate) fn exit(self) -> Exit {
        match self {
            Reason::PlanGenerationFailed => Exit::InvalidInput,
            Reason::AgentExitNonzero | Reason::AgentTimeout => Exit::Transient,
            Reason::StoryVerificationFailed
            | Reason::RunVerificationFailed
            | Reason::AttemptBudgetExhausted
            | Reason::RunTimeout
            | Reason::BlockedDependency => Exit::NeedsPerson,
        }
    }

    /// What the orchestrator should do next.
    pub(crate) fn next_action(self) -> NextAction {
        match self {
            Reason::PlanGenerationFailed => NextAction::HumanInput,
            Reason::AgentExitNonzero | Reason::AgentTimeout => NextAction::Retry,
            _ => NextAction::OpenDraftPr,
        }
    }
}

/// `next_action` of `result.json`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, strum::Display)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub(crate) enum NextAction {
    /// Everything passed: open the pull request.
    OpenPr,
    /// Some work is done: open a draft for a person to finish.
    OpenDraftPr,
    /// A transient failure: run the same command again.
    Retry,
    /// The input or plan needs a person.
    HumanInput,
}

/// `result.json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct ResultFile {
    /// Always [`CONTRACT_VERSION`].
    pub contract_version: u64,
    /// The input's run id, when the input could be read that far.
    pub run_id: Option<String>,
    /// How the command ended.
    pub status: ResultStatus,
    /// Why it did not succeed; `None` on success, and when a signal,
    /// `.stop` or a refusing loop ended it (`error` says which).
    pub reason: Option<Reason>,
    /// The problem in words, when there is one.
    pub error: Option<String>,
    /// Each story's outcome.
    pub stories: Vec<StoryResult>,
    /// Counts of the stories.
    pub summary: Summary,
    /// What to do next.
    pub next_action: NextAction,
}

/// `status` of `result.json`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, strum::Display)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub(crate) enum ResultStatus {
    /// Every story done, every check passed.
    Success,
    /// Trying again may do (exit 20), or the input is wrong (exit 30).
    Failed,
    /// A person must act (exit 10).
    Blocked,
}

/// One story in `result.json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct StoryResult {
    /// `S1`, ...
    pub id: String,
    /// What became of it.
    pub status: StoryStatus,
    /// Attempts spent on it, across resumed runs.
    pub attempts: u64,
    /// Whether its checks passed.
    pub verification: Verification,
}

/// `status` of a story in `result.json`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StoryStatus {
    /// Squash-merged.
    Done,
    /// Attempted and not done.
    Failed,
    /// Not attempted: a story it depends on failed.
    Blocked,
    /// Not attempted.
    Skipped,
}

/// `verification` of a story in `result.json`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Verification {
    /// Its checks ran and passed.
    Passed,
    /// Its last failure was a check.
    Failed,
    /// No check has passed: none ran, or it has none.
    Pending,
}

/// `summary` of `result.json`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub(crate) struct Summary {
    /// Stories done.
    pub completed: u64,
    /// Stories failed or blocked.
    pub failed: u64,
    /// Stories not attempted.
    pub skipped: u64,
}

impl ResultFile {
    /// A result with `stories` summed up.
    pub(crate) fn new(
        run_id: Option<String>,
        status: ResultStatus,
        reason: Option<Reason>,
        error: Option<String>,
        stories: Vec<StoryResult>,
        next_action: NextAction,
    ) -> ResultFile {
        let count = |wanted: &[StoryStatus]| {
            stories
                .iter()
                .filter(|s| wanted.contains(&s.status))
                .count() as u64
        };
        let summary = Summary {
            completed: count(&[StoryStatus::Done]),
            failed: count(&[StoryStatus::Failed, StoryStatus::Blocked]),
            skipped: count(&[StoryStatus::Skipped]),
        };
        ResultFile {
            contract_version: CONTRACT_VERSION,
            run_id,
            status,
            reason,
            error,
            stories,
            summary,
            next_action,
        }
    }

    /// A result that did not succeed for `reason`: its status and next
    /// action follow from the reason.
    pub(crate) fn for_reason(
        run_id: Option<String>,
        reason: Reason,
        error: String,
        stories: Vec<StoryResult>,
    ) -> ResultFile {
        let status = match reason.exit() {
            Exit::NeedsPerson => ResultStatus::Blocked,
            _ => ResultStatus::Failed,
        };
        let next = reason.next_action();
        ResultFile::new(run_id, status, Some(reason), Some(error), stories, next)
    }

    /// The result of a command that could not plan: the input or the PRD
    /// is wrong.
    pub(crate) fn plan_failed(run_id: Option<String>, error: String) -> ResultFile {
        ResultFile::for_reason(run_id, Reason::PlanGenerationFailed, error, Vec::new())
    }

    /// Writes `result.json` to `dir` atomically, never through a link.
    pub(crate) fn save(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let mut text = serde_json::to_string_pretty(self).expect("a result serializes");
        text.push('\n');
        crate::files::own::replace(dir, &dir.join(RESULT_FILE), text.as_bytes())
    }
}

/// One line of `progress.ndjson`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Progress {
    /// RFC 3339, UTC.
    pub timestamp: String,
    /// The input's run id.
    pub run_id: String,
    /// The story, when the event is about one.
    pub story_id: Option<String>,
    /// `plan`, `execute`, `verify`, `critique`, `merge` or `run_verify`.
    pub phase: &'static str,
    /// The story's attempt number, when the event is about one.
    pub attempt: Option<u64>,
    /// `started`, `ok`, `failed`, ...
    pub status: String,
    /// Details, an object.
    pub context: Value,
}

impl Progress {
    /// Appends the event to `dir/progress.ndjson` (one line, fsynced),
    /// never through a link.
    pub(crate) fn append(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let mut line = serde_json::to_string(self).expect("an event serializes");
        line.push('\n');
        crate::files::own::append(dir, &dir.join(PROGRESS_FILE), line.as_bytes())
    }
}
