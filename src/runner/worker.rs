//! The executor: performs the steps `decide` chooses, records each one
//! (state, events, `ralph.log`) and keeps the queue, the branch and the
//! base consistent whatever the agent did.

use crate::paths::Paths;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::events::fields;

use super::decide::Next;
use super::decide::{self, Budgets, Candidate, Ending};
use super::seat::Seat;
use super::ui::Ui;
use crate::agent::Backend;
use crate::config::Settings;
use crate::error::Error;
use crate::events::EventLog;
use crate::git::{self, Repo};
use crate::paths::STOP_FILE;
use crate::result::{RunStatus, TaskOutcome};
use crate::roles::Triggers;
use crate::state::{State, StateFile};
use crate::task::{Patch, Queue, Status, Store, Task, TaskId};
use crate::text::count;

/// How a run was asked for: the checked settings and the flags that are
/// not settings.
#[derive(Clone, Debug)]
pub(crate) struct RunOptions {
    /// Settings after file, environment and flags.
    pub settings: Settings,
    /// `--agent-cmd`, overriding the preset and `agent.command`.
    pub agent_cmd: Option<String>,
    /// `--once`: a single iteration.
    pub once: bool,
    /// `--stream`: echo the agent's output.
    pub stream: bool,
    /// `--quiet`: only the summary.
    pub quiet: bool,
    /// Between SIGTERM and SIGKILL when the agent is stopped.
    pub kill_grace: Duration,
    /// `--pr-branch`: the name of the pull request's branch (`ralph/<name>`).
    pub pr_branch: Option<String>,
    /// `--poll`: when nothing is workable, wait this long and look again
    /// instead of ending the run.
    pub poll: Option<Duration>,
    /// Whether the agents run confined, decided at the start.
    pub sandbox: super::confine::Sandbox,
}

/// One worker of a run: it owns its repository handle, its view of the
/// queue, its state and its events, and takes the loop's steps (`step`)
/// on the project's queue (alone) or on the task its pool handed it.
pub(crate) struct Worker<'a> {
    pub(super) paths: Paths,
    pub(super) options: &'a RunOptions,
    pub(super) store: Store,
    pub(super) repo: Repo,
    pub(super) triggers: Triggers,
    /// The agent, behind the backend that runs its iterations.
    pub(super) agent: Box<dyn Backend>,
    /// The agents that take over while it waits out a usage limit.
    pub(super) fallback: super::fallback::Fallback,
    /// Iterations of a polling run's earlier busy stretches (each
    /// stretch's budgets count from 0; the run's result counts them all).
    pub(super) earlier_iterations: u64,
    pub(super) state_file: StateFile,
    pub(super) state: State,
    pub(super) events: EventLog,
    pub(super) ui: Ui,
    pub(super) interrupted: &'a AtomicBool,
    pub(super) budgets: Budgets,
    pub(super) started: Instant,
    /// When the run started, by the budgets' clock (`clock::now_utc`).
    pub(super) run_started: chrono::DateTime<chrono::Utc>,
    /// The branch HEAD was on at the start when it was not the base (nor a
    /// task branch).
    pub(super) head_elsewhere: Option<String>,
    pub(super) outcomes: Vec<TaskOutcome>,
    pub(super) merged: usize,
    /// Usage-limit waits in a row.
    pub(super) limit_waits: u64,
    /// The last iteration's task and result, for the status line.
    pub(super) last_result: Option<String>,
    /// Alone in the project's checkout, or one of a pool.
    pub(super) seat: Seat<'a>,
    /// Set while the working tree is known to be clean (ralph's own scan,
    /// commits and checkouts since), so the next claim or squash need not
    /// scan it again; dropped before anything else runs in the tree.
    pub(super) clean: Option<git::Clean>,
    /// Why the run must stop: a push of the base failed for good.
    pub(super) push_failure: Option<String>,
    /// Tells people of the events worth their attention.
    pub(super) notifier: crate::notify::Notifier,
    /// The delivery unit the stretch works.
    pub(super) unit: Unit,
    /// What the run says once per change, and last said.
    pub(super) said: Said,
    /// The remote the queue is shared through, when it is.
    pub(super) remote: Option<std::sync::Arc<super::remote::Remote>>,
}

pub(super) use crate::clock::now;

/// Which tasks a stretch works.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Scope {
    /// All of them.
    #[default]
    All,
    /// Those under this top-level task (a PRD's container).
    Within(String),
    /// Those under none of these top-level tasks (the watched PRDs').
    Outside(Vec<String>),
}

/// The delivery unit a stretch works (`unit.rs`): every task, or with
/// a pull request per PRD one PRD's tasks (or those of no PRD) on their
/// own branch.
#[derive(Clone, Debug, Default)]
pub(crate) struct Unit {
    /// Which tasks.
    pub scope: Scope,
    /// The PRD they come from, and the commit it was planned at.
    pub prd: Option<(String, String)>,
    /// The branch pull requests per PRD are made from and target.
    pub base: String,
    /// With `delivery: pr`: the pull request the run ends with.
    pub pull_request: Option<crate::result::PullRequest>,
    /// Every pull request the run opened or updated, in order.
    pub pull_requests: Vec<crate::result::PullRequest>,
}

/// What a run says once per change, as it last said it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Said {
    /// The last problem watching for PRDs said.
    pub watch_problem: Option<String>,
    /// `config/ralph.yaml` as the run last saw it: a change waits for a
    /// new run.
    pub settings: Option<Vec<u8>>,
}

impl Scope {
    /// Whether task `id` is in the scope.
    pub(crate) fn holds(&self, id: &str) -> bool {
        let root = id.split('.').next().unwrap_or(id);
        match self {
            Scope::All => true,
            Scope::Within(top) => root == top,
            Scope::Outside(tops) => !tops.iter().any(|top| top == root),
        }
    }

    /// Whether it is every task.
    pub(crate) fn is_all(&self) -> bool {
        *self == Scope::All
    }
}

/// What a worker is made of, alone or pooled; the rest of it starts
/// empty ([`Worker::new`]).
pub(super) struct Parts<'a> {
    pub paths: Paths,
    pub options: &'a RunOptions,
    pub repo: Repo,
    pub triggers: Triggers,
    pub agent: Box<dyn Backend>,
    pub fallback: Vec<Box<dyn Backend>>,
    pub state: State,
    pub ui: Ui,
    pub interrupted: &'a AtomicBool,
    pub budgets: Budgets,
    pub run_started: chrono::DateTime<chrono::Utc>,
    pub seat: Seat<'a>,
    pub notifier: crate::notify::Notifier,
    pub prd_base: String,
    pub remote: Option<std::sync::Arc<super::remote::Remote>>,
}

impl<'a> Worker<'a> {
    /// A worker of `parts`, with nothing done yet.
    pub(super) fn new(parts: Parts<'a>) -> Worker<'a> {
        let paths = parts.paths;
        Worker {
            options: parts.options,
            store: Store::open(&paths),
            repo: parts.repo,
            triggers: parts.triggers,
            agent: parts.agent,
            fallback: super::fallback::Fallback::new(parts.fallback),
            earlier_iterations: 0,
            state_file: StateFile::open(&paths),
            state: parts.state,
            events: EventLog::open(&paths),
            ui: parts.ui,
            interrupted: parts.interrupted,
            budgets: parts.budgets,
            started: Instant::now(),
            run_started: parts.run_started,
            head_elsewhere: None,
            outcomes: Vec::new(),
            merged: 0,
            limit_waits: 0,
            last_result: None,
            seat: parts.seat,
            clean: None,
            push_failure: None,
            notifier: parts.notifier,
            unit: Unit {
                base: parts.prd_base,
                ..Unit::default()
            },
            said: Said::default(),
            remote: parts.remote,
            paths,
        }
    }

    /// A line for a task already archived (a crash between the two
    /// writes, or an editor saving an older copy) is only a leftover:
    /// finishes the archive, which removes it. Returns whether it did.
    pub(super) fn finish_archived_lines(&mut self, queue: &Queue) -> Result<bool, Error> {
        let leftovers: Vec<TaskId> = queue
            .tasks
            .tasks()
            .filter(|(_, task)| queue.done.contains(task.id.as_str()))
            .map(|(_, task)| task.id.clone())
            .collect();
        let mut cleaned = false;
        for id in leftovers {
            match self
                .store
                .apply(&Patch::Archive { id, commit: None }, &now())
            {
                Ok(_) => cleaned = true,
                // A container with open children stays until they are done.
                Err(crate::task::Error::Refused { .. } | crate::task::Error::NotFound { .. }) => {}
                Err(err) => return Err(err.into()),
            }
        }
        Ok(cleaned)
    }

    /// Keeps the run lock held even when `.ralph/` was deleted under it.
    pub(super) fn hold_lock(&mut self) -> Result<(), Error> {
        let Seat::Alone(lock) = &mut self.seat else {
            return Ok(());
        };
        if lock.reassert(&self.paths)? {
            self.ui
                .line("warning: .ralph/lock was deleted during the run; ralph took it again");
        }
        Ok(())
    }

    /// The checkout on the base where merges and bookkeeping commits are
    /// made: the project's own (a pooled worker's `repo` is its task's
    /// worktree).
    pub(super) fn base(&self) -> &Repo {
        self.seat.base(&self.repo)
    }

    /// Removes the task worktree `tree`, saying where each repository of
    /// its own found inside went.
    pub(super) fn remove_task_tree(&self, tree: &std::path::Path) -> Result<(), Error> {
        let base = self.base();
        let shown = |path: &std::path::Path| {
            let path = path.strip_prefix(base.workdir()).unwrap_or(path);
            path.display().to_string()
        };
        for kept in base.remove_task_tree(tree)? {
            self.ui.line(&format!(
                "warning: {} in the worktree {} is a git repository of its own, committed as a gitlink (as `git add` does); ralph moved it to {} before removing the worktree",
                kept.path,
                shown(tree),
                shown(&kept.to)
            ));
        }
        Ok(())
    }

    pub(super) fn candidate(&self, queue: &Queue, task: &Task) -> Candidate {
        let progress = self.state.progress(task.id.as_str());
        let unworkable = queue.oversized(task.id.as_str());
        Candidate {
            unworkable: unworkable.map(|over| over.block_reason(task.id.as_str())),
            id: task.id.clone(),
            status: task.status,
            iterations: progress.iterations,
            seconds: progress.seconds,
            cost_usd: progress.cost_usd,
            tokens: progress.tokens,
        }
    }

    /// What the run spent today, by the budgets' clock.
    pub(super) fn run_spent(&self) -> crate::state::Spent {
        let day = crate::state::day_of(crate::clock::now_utc());
        self.seat.run_spent(&self.state, &day)
    }

    /// Seconds since the run started, by the budgets' clock.
    pub(super) fn run_seconds(&self) -> u64 {
        crate::clock::seconds_between(self.run_started, crate::clock::now_utc())
    }

    /// Whether `max_run_minutes` is spent.
    pub(super) fn run_time_spent(&self) -> bool {
        decide::run_time_spent(self.run_seconds(), &self.budgets)
    }

    pub(super) fn ending(
        &mut self,
        ending: Ending,
        queue: &Queue,
    ) -> Result<(RunStatus, String), Error> {
        let counts = queue.counts();
        Ok(match ending {
            Ending::Interrupted => interrupted(),
            Ending::Stopped => self.stopped(),
            Ending::BudgetSpent if self.options.once => {
                (RunStatus::Stopped, "--once: one iteration done".to_owned())
            }
            Ending::BudgetSpent => (
                RunStatus::BudgetExhausted,
                format!(
                    "max_iterations ({}) spent with {} left",
                    self.budgets.max_iterations,
                    count(counts.active_total(), "task")
                ),
            ),
            Ending::RunTimeSpent => (
                RunStatus::BudgetExhausted,
                format!(
                    "max_run_minutes ({}) spent with {} left",
                    self.budgets.max_run_minutes.unwrap_or_default(),
                    count(counts.active_total(), "task")
                ),
            ),
            Ending::CapReached => {
                let spent = self.run_spent();
                let reached = (self.budgets.caps.run_reached(&spent)).map_or_else(
                    || "a spending cap".to_owned(),
                    |reached| reached.to_string(),
                );
                (
                    RunStatus::BudgetExhausted,
                    format!(
                        "{reached} with {} left",
                        count(counts.active_total(), "task")
                    ),
                )
            }
            Ending::Drained if !self.unit.scope.is_all() => {
                let left = (queue.live_tasks())
                    .filter(|(_, task)| task.leaf && self.unit.scope.holds(task.id.as_str()))
                    .count();
                let of = match &self.unit.prd {
                    Some((path, _)) => path.clone(),
                    None => "the tasks of no PRD".to_owned(),
                };
                match left {
                    0 => (RunStatus::Drained, format!("{of}: every task done")),
                    _ => (
                        RunStatus::Blocked,
                        format!(
                            "{of}: no workable task left, {} blocked or waiting on a blocked one",
                            count(left, "task")
                        ),
                    ),
                }
            }
            Ending::Drained if counts.with(Status::Blocked) > 0 || counts.active_total() > 0 => (
                RunStatus::Blocked,
                format!("no workable task left: {}", left_waiting(queue)),
            ),
            Ending::Drained => (RunStatus::Drained, "the queue is drained".to_owned()),
        })
    }

    /// `.stop` or a signal, checked between the steps of a long wait.
    pub(super) fn stop_or_interrupt(&self) -> Result<Next, Error> {
        let end = self.requested_end();
        if let Some((RunStatus::Stopped, _)) = end {
            self.remove_stop_file();
        }
        Ok(end)
    }

    /// How the run must end now, if something asked it to: a signal, or
    /// `.stop` (left in place: see [`Self::remove_stop_file`]).
    pub(super) fn requested_end(&self) -> Next {
        if self.interrupted.load(Ordering::SeqCst) {
            return Some(interrupted());
        }
        self.paths.stop().exists().then(stop_requested)
    }

    /// `.stop` is done with once the run it stopped ends.
    pub(super) fn remove_stop_file(&self) {
        let _ = std::fs::remove_file(self.paths.stop());
    }

    /// The run's end when `.stop` asked for it (which is removed).
    fn stopped(&self) -> (RunStatus, String) {
        self.remove_stop_file();
        stop_requested()
    }

    /// Says `line` (what the wait is for and how long) with the time it
    /// ends, on the terminal, in `ralph.log` and as a `wait` event, keeps
    /// the wait in `state.json` while it lasts, then waits `duration`,
    /// waking for `.stop` and signals: someone reading the log afterwards
    /// sees each wait, not a gap, and someone looking now sees it too.
    pub(super) fn wait_logged(
        &mut self,
        why: crate::state::WaitReason,
        task: &TaskId,
        line: &str,
        duration: Duration,
    ) -> Result<Next, Error> {
        let until = chrono::Duration::from_std(duration)
            .ok()
            .and_then(|wait| chrono::Utc::now().checked_add_signed(wait))
            .map(crate::clock::stamp);
        let line = match &until {
            Some(until) => format!("{line} (until {until})"),
            None => line.to_owned(),
        };
        if duration.is_zero() {
            // No wait to see: only the line.
            self.ui.log(&line);
            return self.wait(duration);
        }
        let millis = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        let mut extra = fields(json!({"wait_seconds": duration.as_secs(), "wait_ms": millis}));
        if let Some(until) = &until {
            extra.insert("until".into(), until.clone().into());
        }
        self.record(Some(task), "wait", why.as_str(), &line, extra)?;
        self.ui.log(&line);
        self.state.waiting = until.map(|until| crate::state::Waiting {
            why,
            task: task.to_string(),
            until,
        });
        self.save_state()?;
        let next = self.wait(duration);
        self.state.waiting = None;
        self.save_state()?;
        next
    }

    /// Waits `duration`, waking for `.stop` and signals, and a parallel
    /// worker also when the run hands out no more work (another worker or
    /// the run took `.stop` away first): its loop then ends.
    pub(super) fn wait(&self, duration: Duration) -> Result<Next, Error> {
        let until = Instant::now() + duration;
        loop {
            if let Some(end) = self.stop_or_interrupt()? {
                return Ok(Some(end));
            }
            if self.seat.stop_handed_out() {
                return Ok(None);
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            std::thread::sleep(left.min(Duration::from_millis(100)));
        }
    }
}

/// The prompt and log files of the iteration numbered `iteration` over all
/// runs (so a later run never overwrites them), on task `id`.
pub(super) fn iteration_files(iteration: u64, id: &TaskId) -> (PathBuf, PathBuf) {
    let name = format!("{iteration}-{id}");
    (
        PathBuf::from(format!("{}/{name}.md", crate::paths::PROMPTS_DIR)),
        PathBuf::from(format!("{}/{name}.log", crate::paths::LOGS_DIR)),
    )
}

/// Opens the project's repository with the settings' base and prefix; a
/// run resumed on a task branch uses the base it recorded. With a pull
/// request per PRD, the queue files stay out of ralph's commits.
pub(crate) fn open_repo(
    paths: &Paths,
    settings: &Settings,
    recorded_base: Option<&str>,
) -> Result<Repo, Error> {
    let options = git::Options {
        base_branch: settings.base_branch.clone(),
        branch_prefix: settings.branch_prefix.clone(),
        ssh_key: settings.git.ssh_key_file(paths.project()),
    };
    let mut repo = match Repo::open(paths, &options) {
        Err(git::Error::OnTaskBranch { .. })
            if settings.base_branch.is_none() && recorded_base.is_some() =>
        {
            let options = git::Options {
                base_branch: recorded_base.map(str::to_owned),
                ..options
            };
            Repo::open(paths, &options)?
        }
        other => other?,
    };
    if settings.delivery == crate::config::Delivery::Pr && !settings.watch.prds.is_empty() {
        repo.keep_queue_uncommitted();
    }
    Ok(repo)
}

/// The first leaf marked complete and not archived, outside blocked subtrees.
pub(super) fn first_complete(queue: &Queue) -> Option<&Task> {
    first_complete_where(queue, |_| true)
}

/// [`first_complete`] among the tasks `wanted` holds.
pub(super) fn first_complete_where(queue: &Queue, wanted: impl Fn(&str) -> bool) -> Option<&Task> {
    queue.tasks.tasks().map(|(_, task)| task).find(|task| {
        wanted(task.id.as_str())
            && task.leaf
            && task.status == Status::Complete
            && !queue.done.contains(task.id.as_str())
            && std::iter::successors(task.id.parent(), TaskId::parent).all(|a| {
                queue
                    .get(a.as_str())
                    .is_none_or(|t| t.status != Status::Blocked)
            })
    })
}

/// What waits for a person when nothing is workable: the blocked tasks
/// and those waiting on them, and containers with no task under them
/// (which nothing waits on, and no run finishes), with the fix.
fn left_waiting(queue: &Queue) -> String {
    let counts = queue.counts();
    let childless = queue.childless_containers();
    let blocked = counts.with(Status::Blocked);
    let waiting = counts.active_total() - blocked - childless.len();
    let mut parts = Vec::new();
    if blocked + waiting > 0 || childless.is_empty() {
        parts.push(format!("{blocked} blocked, {waiting} waiting on them"));
    }
    if !childless.is_empty() {
        let (what, fix) = crate::task::childless_message(&childless);
        parts.push(format!("{what}: {fix}"));
    }
    parts.join("; ")
}

/// A duration for people: `0.4s`, `12.0s`, `3m05s`.
pub(super) fn seconds(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs < 60.0 {
        format!("{secs:.1}s")
    } else {
        format!(
            "{}m{:02}s",
            duration.as_secs() / 60,
            duration.as_secs() % 60
        )
    }
}

/// The run's end when a signal asked for it.
pub(super) fn interrupted() -> (RunStatus, String) {
    (RunStatus::Interrupted, "interrupted by a signal".to_owned())
}

/// The run's end when `.stop` asked for it.
fn stop_requested() -> (RunStatus, String) {
    (
        RunStatus::Stopped,
        format!("{STOP_FILE} asked the run to stop"),
    )
}
