//! `.ralph/result.json`: how a run ended, written on every exit path.

use crate::agent::FailureClass;
use crate::paths::Paths;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use strum::IntoStaticStr;

use crate::exit::Exit;
use crate::files::own;

/// How a run ended.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, IntoStaticStr, strum::EnumString,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub(crate) enum RunStatus {
    /// Nothing workable is left and nothing is blocked.
    Drained,
    /// Stopped by `.stop` or `--once`.
    Stopped,
    /// `max_iterations` spent with work left.
    BudgetExhausted,
    /// Nothing workable is left, but tasks are blocked (or `verify.run` failed).
    Blocked,
    /// The agent cannot work (auth) or ralph could not go on.
    Failed,
    /// A signal stopped the run.
    Interrupted,
}

impl RunStatus {
    /// The exit code of `ralph run` for this status.
    pub(crate) fn exit(self) -> Exit {
        match self {
            RunStatus::Drained | RunStatus::Stopped => Exit::Success,
            RunStatus::BudgetExhausted | RunStatus::Blocked => Exit::NeedsPerson,
            RunStatus::Failed => Exit::Transient,
            RunStatus::Interrupted => Exit::Interrupted,
        }
    }

    /// The name used in `result.json` and summaries.
    pub(crate) fn as_str(self) -> &'static str {
        self.into()
    }
}

/// What happened to one task in the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct TaskOutcome {
    /// The task.
    pub task: String,
    /// How its stay in this run ended.
    pub outcome: TaskEnd,
    /// The commit on the base, when one was made.
    pub commit: Option<String>,
    /// A sentence.
    pub detail: String,
    /// For a merged task: whether checks passed on its work before the
    /// merge (`false`: merged on the agent's word alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified: Option<bool>,
}

/// How a task's stay in a run ended (`outcome` in `result.json`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub(crate) enum TaskEnd {
    /// Squash-merged into the base and archived.
    Merged,
    /// Split into children; its work so far merged.
    Split,
    /// Blocked, by its agent or by the loop.
    Blocked,
    /// Gone from both task files; its branch kept.
    Vanished,
    /// Sharing the queue: another machine landed it first; this
    /// machine's work on it is kept under `refs/ralph/orphans/`.
    Orphaned,
}

impl TaskEnd {
    /// Its name in `result.json`.
    pub(crate) fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One verification command's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct CommandResult {
    /// The command line.
    pub command: String,
    /// Whether it passed.
    pub passed: bool,
    /// How it ended (`exit code 1`, `timed out`).
    pub status: String,
    /// The end of its output.
    pub output_tail: String,
    /// How long it ran, in milliseconds.
    #[serde(default)]
    pub duration_ms: u64,
}

/// The whole result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunResult {
    /// How the run ended.
    pub status: RunStatus,
    /// Why, in a sentence.
    pub reason: String,
    /// What failed, in a word, where a failed run has a class of its own
    /// (`pull_request_failed`: the work done and pushed, its pull
    /// request not opened or updated after the retries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// The run's id.
    pub run_id: String,
    /// When it started (RFC 3339).
    pub started: String,
    /// When it ended (RFC 3339).
    pub ended: String,
    /// Iterations run.
    pub iterations: u64,
    /// Tasks merged (and archived) in this run.
    pub merged: usize,
    /// Tasks blocked in `tasks.jsonl` at the end; `None` (null) when the
    /// file cannot be read then.
    pub blocked: Option<usize>,
    /// Tasks left in `tasks.jsonl` at the end (blocked ones included);
    /// `None` (null) when the file cannot be read then.
    pub remaining: Option<usize>,
    /// Failed iterations by class.
    pub failures: BTreeMap<FailureClass, u64>,
    /// Per-task outcomes, in order.
    pub outcomes: Vec<TaskOutcome>,
    /// The `verify.run` commands' results, when the queue drained.
    pub verify_run: Vec<CommandResult>,
    /// With `delivery: pr`: the pull request opened or updated, or why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<PullRequest>,
    /// Every pull request the run opened or updated (a polling run with
    /// a pull request per PRD makes several), in order; the last one is
    /// `pull_request`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pull_requests: Vec<PullRequest>,
}

impl RunResult {
    /// The result of a run that failed its checks before any iteration
    /// (invalid tasks or config, a dirty tree, a missing agent).
    pub(crate) fn not_started(
        paths: &Paths,
        run_id: String,
        started: String,
        reason: String,
    ) -> RunResult {
        RunResult::ended(paths, run_id, started, RunStatus::Failed, reason)
    }

    /// A run ended now with `status`, counting what `tasks.jsonl` at `paths`
    /// has left (unknown when it does not load); no iterations yet.
    pub(crate) fn ended(
        paths: &Paths,
        run_id: String,
        started: String,
        status: RunStatus,
        reason: String,
    ) -> RunResult {
        let counts = crate::task::Store::open(paths)
            .load()
            .map(|queue| queue.counts())
            .ok();
        RunResult {
            status,
            reason,
            class: None,
            run_id,
            started,
            ended: crate::clock::now(),
            iterations: 0,
            merged: 0,
            blocked: counts
                .as_ref()
                .map(|c| c.with(crate::task::Status::Blocked)),
            remaining: counts.as_ref().map(|c| c.active_total()),
            failures: BTreeMap::new(),
            outcomes: Vec::new(),
            verify_run: Vec::new(),
            pull_request: None,
            pull_requests: Vec::new(),
        }
    }

    /// Reads `result.json`; `None` when it is missing, unreadable or not
    /// a result (torn, or from another version).
    pub(crate) fn read(paths: &Paths) -> Option<RunResult> {
        let bytes = own::read(paths.project(), &paths.result()).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Writes `result.json` atomically.
    pub(crate) fn save(&self, paths: &Paths) -> std::io::Result<()> {
        let mut text = serde_json::to_string_pretty(self).expect("a result serializes");
        text.push('\n');
        own::replace(paths.project(), &paths.result(), text.as_bytes())
    }
}

/// The pull request a run ended with (`result.json`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct PullRequest {
    /// Its branch.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub branch: String,
    /// The watched PRD it delivers, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prd: Option<String>,
    /// Its address, when it is open.
    pub url: Option<String>,
    /// Whether it was opened as a draft (the run ended unfinished).
    pub draft: bool,
    /// What the run did with it.
    pub action: PrAction,
    /// When it failed: what `gh` said.
    pub error: Option<String>,
    /// When it failed: the command that opens it by hand.
    pub command: Option<String>,
}

/// What a run did with its pull request (`action` in `result.json`, and
/// the status of its `pull_request` event).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub(crate) enum PrAction {
    /// `gh pr create` opened it.
    Opened,
    /// `gh pr edit` updated the one open for the branch.
    Updated,
    /// `gh` failed; the branch is pushed and the command to open it by
    /// hand is kept.
    Failed,
}

impl PrAction {
    /// The name events and `result.json` use.
    pub(crate) fn as_str(self) -> &'static str {
        self.into()
    }
}

#[cfg(test)]
mod tests {
    use serde::Serialize;

    use super::*;
    use crate::config::{Mode, NotifyKind};
    use crate::contract::output::{NextAction, Reason, ResultStatus};
    use crate::doctor::Level;
    use crate::notes::Verdict;
    use crate::state::{Phase, WaitReason};

    /// The word serde writes for `value` in a file, as text.
    fn written<T: Serialize>(value: T) -> String {
        match serde_json::to_value(value).unwrap() {
            serde_json::Value::String(word) => word,
            other => panic!("not a word: {other}"),
        }
    }

    /// The words in messages and events (`as_str`, `Display`) are the ones
    /// the files have: strum and serde derive both from the variant's name,
    /// and this holds them together.
    #[test]
    fn each_vocabulary_says_in_messages_what_its_files_say() {
        let mut pairs: Vec<(String, String)> = Vec::new();
        let mut add = |file: String, said: &str| pairs.push((file, said.to_string()));
        for status in [
            RunStatus::Drained,
            RunStatus::Stopped,
            RunStatus::BudgetExhausted,
            RunStatus::Blocked,
            RunStatus::Failed,
            RunStatus::Interrupted,
        ] {
            add(written(status), status.as_str());
        }
        for end in [
            TaskEnd::Merged,
            TaskEnd::Split,
            TaskEnd::Blocked,
            TaskEnd::Vanished,
            TaskEnd::Orphaned,
        ] {
            add(written(end), end.as_str());
        }
        for action in [PrAction::Opened, PrAction::Updated, PrAction::Failed] {
            add(written(action), action.as_str());
        }
        for class in FailureClass::ALL.into_iter().chain(FailureClass::LOOP) {
            add(written(class), class.as_str());
            add(written(class), &class.to_string());
        }
        for phase in [Phase::Between, Phase::Agent, Phase::Squash, Phase::Idle] {
            add(written(phase), phase.as_str());
            assert_eq!(Phase::from(phase.as_str().to_string()), phase);
        }
        for why in [WaitReason::UsageLimit, WaitReason::Retry] {
            add(written(why), why.as_str());
        }
        for verdict in [Verdict::Passed, Verdict::Rejected] {
            add(written(verdict), verdict.as_str());
        }
        for level in [Level::Ok, Level::Warning, Level::Error] {
            add(written(level), level.as_str());
        }
        for kind in [
            NotifyKind::TaskMerged,
            NotifyKind::PrdRefused,
            NotifyKind::RunIdle,
        ] {
            add(written(kind), kind.as_str());
        }
        for mode in Mode::ALL {
            add(written(mode), mode.as_str());
            add(written(mode), &mode.to_string());
        }
        add(
            written(Reason::AgentExitNonzero),
            &Reason::AgentExitNonzero.to_string(),
        );
        add(
            written(NextAction::OpenDraftPr),
            &NextAction::OpenDraftPr.to_string(),
        );
        add(
            written(ResultStatus::Success),
            &ResultStatus::Success.to_string(),
        );
        let differing: Vec<_> = pairs.iter().filter(|(file, said)| file != said).collect();
        assert!(differing.is_empty(), "{differing:?}");
        assert!(
            pairs
                .iter()
                .any(|(file, _)| file == "cherry_pick_in_progress")
        );
        assert_eq!(Phase::Between.as_str(), "");
        assert_eq!(Phase::from("reviewing".to_string()), Phase::Between);
    }
}
