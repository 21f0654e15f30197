//! `.ralph/state.json`: what the loop knows between iterations and across
//! runs, written atomically after every transition.

use crate::agent::FailureClass;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use strum::{EnumString, IntoStaticStr};

use crate::files::own;
use crate::prompt::Evidence;

/// The loop's state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct State {
    /// Id of the run that wrote this state last.
    pub run_id: String,
    /// When that run started (RFC 3339).
    pub started: String,
    /// When the state was written (RFC 3339).
    pub updated: String,
    /// Iterations of that run.
    pub iteration: u64,
    /// Iterations across all runs; role history counts in these.
    pub total_iterations: u64,
    /// The task being worked on, if any.
    pub current_task: Option<String>,
    /// The role of the current or last iteration.
    pub role: Option<String>,
    /// The base branch of that run, so a run resumed on a task branch
    /// knows where to merge.
    pub base: Option<String>,
    /// With `delivery: pr`: the pull request's branch (`ralph/<name>`,
    /// the run's base) and the branch it targets, kept so later runs
    /// resume the same pull request.
    pub pull_request: Option<PullRequestPlan>,
    /// What the loop was doing.
    pub phase: Phase,
    /// For each role, `total_iterations` when it last ran.
    pub roles: BTreeMap<String, u64>,
    /// Progress per task id, kept across runs until the task is archived.
    pub tasks: BTreeMap<String, TaskProgress>,
    /// Failed iterations of that run by class.
    pub failures: BTreeMap<FailureClass, u64>,
    /// What the final review looks at: the work since the queue last
    /// drained. Kept across runs that end otherwise (or are killed).
    pub scope: Option<RunScope>,
    /// While a polling run is idle: how often it looks, and when next.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub polling: Option<Polling>,
    /// While the loop waits before its next iteration: why and until when.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting: Option<Waiting>,
    /// While an agent of `agent.fallback` runs instead of the first one:
    /// which, and until when.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<FallenBack>,
    /// What that run spent, as its agent reported it, on its last day.
    #[serde(skip_serializing_if = "Spent::is_nothing")]
    pub spent: Spent,
}

/// What a run spent in one UTC day, as its agent reported it, for
/// `max_run_cost_usd` and `max_run_tokens`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Spent {
    /// The day counted (`YYYY-MM-DD`, UTC).
    pub day: String,
    /// US dollars.
    pub cost_usd: f64,
    /// Tokens, input and output.
    pub tokens: u64,
}

impl Spent {
    /// Whether nothing was spent.
    pub(crate) fn is_nothing(&self) -> bool {
        self.cost_usd == 0.0 && self.tokens == 0
    }

    /// What was spent on `day`: nothing when the count is another day's.
    pub(crate) fn on(&self, day: &str) -> Spent {
        match self.day == day {
            true => self.clone(),
            false => Spent {
                day: day.to_owned(),
                ..Spent::default()
            },
        }
    }

    /// Adds an iteration's `cost_usd` and `tokens`, spent on `day`.
    pub(crate) fn add(&mut self, day: &str, cost_usd: f64, tokens: u64) {
        *self = self.on(day);
        self.cost_usd += cost_usd;
        self.tokens += tokens;
    }
}

/// The UTC day of `now`, as [`Spent`] counts it.
pub(crate) fn day_of(now: DateTime<Utc>) -> String {
    now.format("%Y-%m-%d").to_string()
}

/// An agent running in another's place while that one's usage limit lasts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct FallenBack {
    /// The agent running.
    pub agent: String,
    /// The first agent, waiting out its limit.
    pub instead_of: String,
    /// When the first one comes back (RFC 3339).
    pub until: String,
}

/// A wait between two iterations (`waiting` in `state.json`), so a
/// look from outside (`ralph top`) can say what the loop waits for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Waiting {
    /// What it waits for.
    pub why: WaitReason,
    /// The task it waits to go on with.
    pub task: String,
    /// When the wait ends (RFC 3339).
    pub until: String,
}

/// What a wait between iterations is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub(crate) enum WaitReason {
    /// A usage limit of the agent's account, this worker's or another's.
    UsageLimit,
    /// The back-off after a failed iteration.
    Retry,
}

impl WaitReason {
    /// The name `state.json` and the `wait` event use.
    pub(crate) fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A polling run's wait for work.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Polling {
    /// The wait between two looks at the queue, as settings write it.
    pub every: String,
    /// When it looks next (RFC 3339).
    pub next_look: String,
}

/// What the loop was doing when the state was written (`phase` in
/// `state.json`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, IntoStaticStr, EnumString,
)]
#[serde(from = "String", into = "&'static str")]
#[strum(serialize_all = "snake_case")]
pub enum Phase {
    /// Between iterations, or before the first (written as `""`); a
    /// phase this ralph does not know reads as this too.
    #[default]
    #[strum(serialize = "")]
    Between,
    /// The agent is at work.
    Agent,
    /// The iteration is being judged: leftovers, the queue, the verdict.
    Judge,
    /// The task's checks run.
    Verify,
    /// The task's merge turn is taken and its squash previewed.
    Merge,
    /// The squash commit is being made, then the task archived.
    Squash,
    /// The run ended.
    Ended,
    /// A polling run waits for work (`ralph run --poll`).
    Idle,
}

impl From<String> for Phase {
    fn from(name: String) -> Phase {
        name.parse().unwrap_or_default()
    }
}

impl Phase {
    /// The name `state.json` and `ralph status` use (empty between
    /// iterations).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The work a final review covers: from the base's commit when the first
/// run after a drained queue started, to now.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct RunScope {
    /// The base branch the scope is on.
    pub base: String,
    /// The base's commit when the scope began (full id).
    pub start: String,
    /// The tasks merged since, in order (final reviews included).
    pub merged: Vec<String>,
    /// The final review tasks added since, in order.
    pub reviews: Vec<String>,
}

/// `delivery: pr`: the pull request's branch and what it targets.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PullRequestPlan {
    /// `ralph/<name>`: the run's base.
    pub branch: String,
    /// The branch the pull request merges into.
    pub target: String,
    /// The pull request's title.
    pub title: String,
}

/// What the loop remembers of one task.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct TaskProgress {
    /// Iterations spent on the task, across runs.
    pub iterations: u64,
    /// Failed iterations in a row.
    pub consecutive_failures: u64,
    /// Iterations in a row without a new commit or file change.
    pub no_progress: u64,
    /// Whether the last iteration failed.
    pub last_failed: bool,
    /// Evidence of the last failure, for the next prompt.
    pub evidence: Option<Evidence>,
    /// When the task was claimed (RFC 3339).
    pub claimed: Option<String>,
    /// The task's branch.
    pub branch: Option<String>,
    /// The task's title when it was claimed (for messages when
    /// `tasks.jsonl` cannot be read).
    pub title: Option<String>,
    /// Wall-clock seconds its iterations took, across runs, for
    /// `max_task_minutes`.
    pub seconds: u64,
    /// When the iteration under way on it started (RFC 3339, by
    /// `clock::now_utc`); cleared once the iteration's time is counted, so
    /// found set at a run's start it was cut short by a crash.
    pub iteration_started: Option<String>,
    /// Checks (`verify.task` and the task's own) that passed on its work
    /// before its merge; 0: it is merged on the agent's word alone.
    pub checked: u64,
    /// The task branch's tip after its last iteration: a tip that no
    /// longer holds it dropped commits, which ralph keeps.
    pub tip: Option<String>,
    /// US dollars its iterations cost, across runs, as the agent reported
    /// them, for `max_task_cost_usd`.
    #[serde(skip_serializing_if = "is_zero")]
    pub cost_usd: f64,
    /// Tokens (input and output) its iterations took, across runs, for
    /// `max_task_tokens`.
    #[serde(skip_serializing_if = "is_zero")]
    pub tokens: u64,
    /// Review verdicts given on it (`.ralph/reviews/<id>.jsonl` has them),
    /// as of its last iteration.
    #[serde(skip_serializing_if = "is_zero")]
    pub reviews: u64,
    /// Of those, the rejections.
    #[serde(skip_serializing_if = "is_zero")]
    pub rejections: u64,
}

/// Whether `value` is zero, for the fields left out then.
fn is_zero<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

impl TaskProgress {
    /// Notes that an iteration starts at `now`.
    pub(crate) fn start_iteration(&mut self, now: DateTime<Utc>) {
        self.iteration_started = Some(crate::clock::stamp(now));
    }

    /// Counts the time of the iteration under way, which ends at `now`, at
    /// most `cap` of it; none when no iteration is under way.
    pub(crate) fn end_iteration(&mut self, now: DateTime<Utc>, cap: Option<Duration>) {
        let Some(started) = self.iteration_started.take() else {
            return;
        };
        let Ok(started) = DateTime::parse_from_rfc3339(&started) else {
            return;
        };
        let spent = crate::clock::seconds_between(started.with_timezone(&Utc), now);
        let spent = cap.map_or(spent, |cap| spent.min(cap.as_secs()));
        self.seconds = self.seconds.saturating_add(spent);
    }
}

impl State {
    /// What is known of task `id`'s progress (nothing yet: the defaults).
    pub(crate) fn progress(&self, id: &str) -> TaskProgress {
        self.tasks.get(id).cloned().unwrap_or_default()
    }

    /// Iterations since `role` last ran; this run's iterations if it never did.
    pub(crate) fn iterations_since_role(&self, role: &str) -> u64 {
        match self.roles.get(role) {
            Some(at) => self.total_iterations.saturating_sub(*at),
            None => self.iteration,
        }
    }

    /// Counts the iterations a crash cut short (their start recorded, their
    /// end never): each from its start to `now`, at most `cap`, the longest
    /// an iteration may run (the agent's timeout), so the time ralph was
    /// down is not charged beyond what the agent could have used.
    pub(crate) fn settle_cut_short(&mut self, now: DateTime<Utc>, cap: Duration) {
        for progress in self.tasks.values_mut() {
            progress.end_iteration(now, Some(cap));
        }
    }

    /// Starts run `run_id` on `base` at `now` from this saved state: the
    /// iterations a crash cut short are counted first (each at most
    /// `cap`, see [`Self::settle_cut_short`]), then the run's own counters
    /// and role start over, while each task's progress carries on.
    pub(crate) fn begin_run(
        &mut self,
        run_id: String,
        base: &str,
        now: DateTime<Utc>,
        cap: Duration,
    ) {
        self.settle_cut_short(now, cap);
        self.run_id = run_id;
        self.started = crate::clock::stamp(now);
        self.iteration = 0;
        self.role = None;
        self.failures.clear();
        self.spent = Spent::default();
        self.base = Some(base.to_owned());
    }

    /// Every role's count, for the trigger context.
    pub(crate) fn role_counts(&self) -> BTreeMap<String, i64> {
        self.roles
            .keys()
            .map(|role| (role.clone(), self.iterations_since_role(role) as i64))
            .collect()
    }
}

/// Reads and writes the state file of one project.
#[derive(Clone, Debug)]
pub(crate) struct StateFile {
    path: PathBuf,
    /// The project root, from which the file is reached without a link.
    root: PathBuf,
}

/// What loading found.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Loaded {
    /// No state yet.
    Fresh,
    /// The state as written.
    Found,
    /// The file did not parse; it was moved aside to the named file.
    Quarantined(PathBuf),
}

impl StateFile {
    /// The state file of the project (or worker) at `paths`.
    pub(crate) fn open(paths: &crate::paths::Paths) -> StateFile {
        StateFile {
            path: paths.state(),
            root: paths.project().to_owned(),
        }
    }

    /// Reads the state. A file that does not parse (a hand edit, a disk
    /// fault) is moved aside rather than trusted or silently dropped.
    pub(crate) fn load(&self) -> std::io::Result<(State, Loaded)> {
        let bytes = own::read(&self.root, &self.path)?;
        if bytes.is_empty() {
            return Ok((State::default(), Loaded::Fresh));
        }
        match serde_json::from_slice(&bytes) {
            Ok(state) => Ok((state, Loaded::Found)),
            Err(_) => {
                let aside = self.path.with_extension("json.corrupt");
                std::fs::rename(&self.path, &aside)?;
                Ok((State::default(), Loaded::Quarantined(aside)))
            }
        }
    }

    /// Reads the state without changing anything: a missing or corrupt file
    /// reads as a fresh state (for `ralph status`, `prompt`, `--dry-run`).
    pub(crate) fn peek(&self) -> State {
        let bytes = own::read(&self.root, &self.path).unwrap_or_default();
        serde_json::from_slice(&bytes).unwrap_or_default()
    }

    /// Writes the state atomically.
    pub(crate) fn save(&self, state: &State) -> std::io::Result<()> {
        let mut text = serde_json::to_string_pretty(state).expect("the state serializes");
        text.push('\n');
        let write = |file: &mut std::fs::File| {
            std::io::Write::write_all(file, text.as_bytes())?;
            crate::fault::crash_at("mid_state_write");
            Ok(())
        };
        own::replace_with(&self.root, &self.path, write)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_history_counts_across_runs() {
        let mut state = State {
            iteration: 2,
            total_iterations: 30,
            ..State::default()
        };
        assert_eq!(
            state.iterations_since_role("documenter"),
            2,
            "never ran: since the run started"
        );
        state.roles.insert("documenter".into(), 25);
        assert_eq!(state.iterations_since_role("documenter"), 5);
        assert_eq!(state.role_counts()["documenter"], 5);
    }

    #[test]
    fn task_time_adds_up_and_a_cut_short_iteration_is_capped() {
        let at = |minute: u32| {
            chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 1, 1, 0, minute, 0).unwrap()
        };
        let mut progress = TaskProgress::default();
        progress.end_iteration(at(5), None);
        assert_eq!(progress.seconds, 0, "no iteration under way");
        progress.start_iteration(at(0));
        progress.end_iteration(at(6), None);
        progress.start_iteration(at(10));
        progress.end_iteration(at(13), None);
        assert_eq!(progress.seconds, 9 * 60);
        assert_eq!(progress.iteration_started, None);
        // Killed mid-iteration: the next run counts at most the timeout.
        let mut state = State::default();
        state.tasks.insert("A".into(), progress);
        state.tasks.get_mut("A").unwrap().start_iteration(at(20));
        state.tasks.insert("B".into(), TaskProgress::default());
        state.tasks.get_mut("B").unwrap().start_iteration(at(50));
        state.settle_cut_short(at(59), Duration::from_secs(20 * 60));
        assert_eq!(state.tasks["A"].seconds, (9 + 20) * 60, "capped");
        assert_eq!(state.tasks["B"].seconds, 9 * 60);
        assert_eq!(state.tasks["A"].iteration_started, None);
    }

    #[test]
    fn saves_loads_and_quarantines() {
        let dir = assert_fs::TempDir::new().unwrap();
        let file = StateFile::open(&crate::paths::Paths::new(dir.path()));
        assert_eq!(file.load().unwrap().1, Loaded::Fresh);
        let mut state = State {
            run_id: "r1".into(),
            ..State::default()
        };
        state.tasks.entry("A".into()).or_default().iterations = 3;
        file.save(&state).unwrap();
        assert_eq!(file.load().unwrap().0, state);
        std::fs::write(dir.path().join(crate::paths::STATE_FILE), "{ torn").unwrap();
        let (fresh, loaded) = file.load().unwrap();
        assert_eq!(fresh, State::default());
        assert_eq!(
            loaded,
            Loaded::Quarantined(dir.path().join(".ralph/state.json.corrupt"))
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join(".ralph/state.json.corrupt")).unwrap(),
            "{ torn"
        );
    }
}
