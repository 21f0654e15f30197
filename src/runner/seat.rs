//! Where a worker sits: alone in the project's own checkout (holding the
//! run lock), or one of a pool, in its task's worktree, sharing the run's
//! counts and taking turns to change the base. The step a worker takes
//! is the same in both; what differs is asked of its seat.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::decide::Budgets;
use crate::git::Repo;
use crate::run_lock::RunLock;
use crate::state::{RunScope, Spent, State};
use crate::task::TaskId;

/// Where a worker sits.
pub(super) enum Seat<'a> {
    /// The run's own worker, in the project's checkout, holding the run
    /// lock until the run ends.
    Alone(RunLock),
    /// One worker of a pool.
    OneOf(Box<Pooled<'a>>),
}

/// A pooled worker's place: its number, the one task it was handed, the
/// project's checkout on the base (where its merges go) and what the
/// pool shares.
pub(super) struct Pooled<'a> {
    pub(super) number: u32,
    pub(super) task: TaskId,
    pub(super) base: Repo,
    pub(super) hub: &'a Hub,
    /// Whether this worker holds the merge turn.
    pub(super) turn_held: Rc<Cell<bool>>,
}

/// What the workers of a pool share.
#[derive(Debug, Default)]
pub(super) struct Hub {
    /// Held by the worker changing the base (a merge, a bookkeeping
    /// commit): one at a time, each against the base as the last left it.
    merging: Mutex<()>,
    /// The run's iteration counts and role history, which every worker's
    /// triggers and budgets read as one run's.
    counts: Mutex<Counts>,
    /// Set when the run hands out no more work: each worker finishes its
    /// current iteration, then stops.
    pub(super) stop: AtomicBool,
    /// Until when a usage limit one worker hit holds back every worker's
    /// next iteration (they all run the same agent).
    paused_until: Mutex<Option<Instant>>,
    /// The run's review scope as the run last saw it, for a final review's
    /// prompt (a worker's own state has none).
    scope: Mutex<Option<RunScope>>,
}

/// The run-wide part of the state that a pool's workers share.
#[derive(Clone, Debug, Default)]
pub(super) struct Counts {
    /// Iterations of this run, reserved ones included.
    pub(super) iteration: u64,
    /// Iterations over all runs: names prompt and log files.
    pub(super) total_iterations: u64,
    /// Each role's last iteration (of `total_iterations`).
    pub(super) roles: BTreeMap<String, u64>,
    /// What the run spent today.
    pub(super) spent: Spent,
}

impl Counts {
    /// The run-wide counts of `state`.
    pub(super) fn of(state: &State) -> Counts {
        Counts {
            iteration: state.iteration,
            total_iterations: state.total_iterations,
            roles: state.roles.clone(),
            spent: state.spent.clone(),
        }
    }

    /// Writes them into `state`.
    pub(super) fn into_state(self, state: &mut State) {
        state.iteration = self.iteration;
        state.total_iterations = self.total_iterations;
        state.roles = self.roles;
        state.spent = self.spent;
    }
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A worker that panicked poisons the lock; the others go on.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Hub {
    /// A hub for a run whose state holds `counts` and `scope` so far.
    pub(super) fn new(counts: Counts, scope: Option<RunScope>) -> Hub {
        Hub {
            counts: Mutex::new(counts),
            scope: Mutex::new(scope),
            ..Hub::default()
        }
    }

    /// Holds the merge turn for the pool itself (a read of the shared
    /// remote moves the base).
    pub(super) fn merge_turn(&self) -> MutexGuard<'_, ()> {
        locked(&self.merging)
    }

    /// The run's counts as the workers left them.
    pub(super) fn counts(&self) -> Counts {
        locked(&self.counts).clone()
    }

    /// Keeps the run's review scope for the workers' prompts.
    pub(super) fn set_scope(&self, scope: Option<RunScope>) {
        *locked(&self.scope) = scope;
    }
}

impl<'a> Seat<'a> {
    /// The pooled worker's place, if it is one.
    pub(super) fn pooled(&self) -> Option<&Pooled<'a>> {
        match self {
            Seat::Alone(_) => None,
            Seat::OneOf(pooled) => Some(pooled),
        }
    }

    /// The worker's number in its pool (`None` alone).
    pub(super) fn number(&self) -> Option<u32> {
        self.pooled().map(|pooled| pooled.number)
    }

    /// The task a pooled worker was handed (alone, the queue decides).
    pub(super) fn task(&self) -> Option<&TaskId> {
        self.pooled().map(|pooled| &pooled.task)
    }

    /// The checkout on the base where merges and bookkeeping commits are
    /// made: the project's own, which is `own` for the worker alone.
    pub(super) fn base<'r>(&'r self, own: &'r Repo) -> &'r Repo {
        self.pooled().map_or(own, |pooled| &pooled.base)
    }

    /// Holds the merge turn while the worker changes the base: one worker
    /// at a time. Alone there is nothing to take; a worker that holds the
    /// turn already (a failed merge that blocks the task) keeps it.
    pub(super) fn merge_turn(&self) -> MergeTurn<'a> {
        let Some(pooled) = self.pooled().filter(|pooled| !pooled.turn_held.get()) else {
            return MergeTurn {
                _guard: None,
                held: None,
            };
        };
        let hub: &'a Hub = pooled.hub;
        let guard = locked(&hub.merging);
        pooled.turn_held.set(true);
        MergeTurn {
            _guard: Some(guard),
            held: Some(Rc::clone(&pooled.turn_held)),
        }
    }

    /// Iterations of the run so far: the worker's own count alone, the
    /// pool's otherwise.
    pub(super) fn run_iterations(&self, state: &State) -> u64 {
        match self.pooled() {
            None => state.iteration,
            Some(pooled) => locked(&pooled.hub.counts).iteration,
        }
    }

    /// What the run spent on `day`: the worker's own count alone, the
    /// pool's otherwise.
    pub(super) fn run_spent(&self, state: &State, day: &str) -> Spent {
        match self.pooled() {
            None => state.spent.on(day),
            Some(pooled) => locked(&pooled.hub.counts).spent.on(day),
        }
    }

    /// Counts what an iteration spent on `day` as the run's.
    pub(super) fn spend(&self, state: &mut State, day: &str, cost_usd: f64, tokens: u64) {
        match self.pooled() {
            None => state.spent.add(day, cost_usd, tokens),
            Some(pooled) => {
                let mut counts = locked(&pooled.hub.counts);
                counts.spent.add(day, cost_usd, tokens);
                state.spent = counts.spent.clone();
            }
        }
    }

    /// Whether the worker is asked to stop: by `.stop` alone; in a pool,
    /// by the pool, which watches `.stop` for all its workers (a worker
    /// handed a task takes at least one step on it).
    pub(super) fn stop_requested(&self, paths: &crate::paths::Paths) -> bool {
        match self.pooled() {
            None => paths.stop().exists(),
            Some(pooled) => pooled.hub.stop.load(Ordering::SeqCst),
        }
    }

    /// Whether the run hands out no more work (a pool's stop).
    pub(super) fn stop_handed_out(&self) -> bool {
        self.pooled()
            .is_some_and(|pooled| pooled.hub.stop.load(Ordering::SeqCst))
    }

    /// Takes one of the run's iterations before it starts: false when the
    /// budget has none left. A pool's workers take them from one count;
    /// alone, the iteration is counted as it begins ([`Seat::count`]).
    pub(super) fn reserve(&self, budgets: &Budgets) -> bool {
        let Some(pooled) = self.pooled() else {
            return true;
        };
        let mut counts = locked(&pooled.hub.counts);
        if counts.iteration >= budgets.max_iterations {
            return false;
        }
        counts.iteration += 1;
        true
    }

    /// Loads the run's counts into `state` before the worker's triggers
    /// read them: a pooled worker's are the pool's.
    pub(super) fn load_counts(&self, state: &mut State) {
        if let Some(pooled) = self.pooled() {
            let counts = locked(&pooled.hub.counts).clone();
            // The reserved iteration is not begun yet.
            state.iteration = counts.iteration.saturating_sub(1);
            state.total_iterations = counts.total_iterations;
            state.roles = counts.roles;
        }
    }

    /// Counts the iteration that begins, and the role it runs, in `state`
    /// (and the pool's counts).
    pub(super) fn count(&self, state: &mut State, role: Option<&str>) {
        let Some(pooled) = self.pooled() else {
            state.iteration += 1;
            state.total_iterations += 1;
            if let Some(role) = role {
                state.roles.insert(role.to_owned(), state.total_iterations);
            }
            return;
        };
        let mut counts = locked(&pooled.hub.counts);
        counts.total_iterations += 1;
        if let Some(role) = role {
            let at = counts.total_iterations;
            counts.roles.insert(role.to_owned(), at);
        }
        state.iteration = counts.iteration;
        state.total_iterations = counts.total_iterations;
        state.roles = counts.roles.clone();
    }

    /// Gives back the iteration a usage limit took (it is no work done).
    pub(super) fn give_back(&self, state: &mut State) {
        state.iteration = state.iteration.saturating_sub(1);
        if let Some(pooled) = self.pooled() {
            let mut counts = locked(&pooled.hub.counts);
            counts.iteration = counts.iteration.saturating_sub(1);
        }
    }

    /// Holds back the other workers' next iterations for `wait`: they run
    /// the same agent, which hit its usage limit.
    pub(super) fn pause_all(&self, wait: Duration) {
        if let Some(pooled) = self.pooled() {
            let until = Instant::now() + wait;
            let mut paused = locked(&pooled.hub.paused_until);
            if paused.is_none_or(|at| at < until) {
                *paused = Some(until);
            }
        }
    }

    /// How long the next iteration must still wait for a usage limit
    /// another worker hit, if at all.
    pub(super) fn paused_for(&self) -> Option<Duration> {
        let pooled = self.pooled()?;
        let paused = locked(&pooled.hub.paused_until);
        paused
            .map(|until| until.saturating_duration_since(Instant::now()))
            .filter(|left| !left.is_zero())
    }

    /// The run's review scope: the worker's own state holds it alone, the
    /// pool's hub otherwise.
    pub(super) fn scope(&self, state: &State) -> Option<RunScope> {
        match self.pooled() {
            None => state.scope.clone(),
            Some(pooled) => locked(&pooled.hub.scope).clone(),
        }
    }
}

/// A worker's turn to change the base, released when dropped.
pub(crate) struct MergeTurn<'a> {
    _guard: Option<MutexGuard<'a, ()>>,
    /// The worker's mark that it holds the turn, cleared on release.
    held: Option<Rc<Cell<bool>>>,
}

impl Drop for MergeTurn<'_> {
    fn drop(&mut self) {
        if let Some(held) = &self.held {
            held.set(false);
        }
    }
}
