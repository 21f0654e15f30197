//! Parallel workers (`ralph run --workers N`): each worker works one task
//! at a time in the task's own git worktree, with an engine of its own;
//! merges into the base, made in the project's checkout, take turns.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError, mpsc};
use std::time::{Duration, Instant};

use serde_json::Map;

use super::decide::{self, Before, Budgets, Ending, Step};
use super::engine::{Engine, RunOptions, first_complete, interrupted, now};
use super::iteration::Next;
use super::result::{RunStatus, TaskOutcome};
use super::ui::Ui;
use crate::agent::{Host, Spec};
use crate::error::Error;
use crate::events::EventLog;
use crate::git::{Identity, Repo, TaskTree};
use crate::paths::Paths;
use crate::state::StateFile;
use crate::task::{Patch, Status, Store, TaskId};

/// What the workers of one run share.
#[derive(Debug, Default)]
pub struct Hub {
    /// Held by the worker changing the base (a merge, a bookkeeping
    /// commit): one at a time, each against the base as the last left it.
    pub(super) merging: Mutex<()>,
    /// Iterations of every worker in this run.
    pub(super) iterations: AtomicU64,
    /// Set when the run hands out no more work: each worker finishes its
    /// current iteration, then stops.
    pub(super) stop: AtomicBool,
    /// Until when a usage limit one worker hit holds back every worker's
    /// next iteration (they all run the same agent).
    pub(super) paused_until: Mutex<Option<Instant>>,
    /// The run's review scope as the run last saw it, for a final review's
    /// prompt (a worker's own state has none).
    pub(super) scope: Mutex<Option<crate::state::RunScope>>,
}

impl Hub {
    /// Holds back every worker's next iteration for `wait`.
    pub(super) fn pause(&self, wait: Duration) {
        let until = Instant::now() + wait;
        let mut paused = self
            .paused_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if paused.is_none_or(|at| at < until) {
            *paused = Some(until);
        }
    }

    /// Reserves one of the run's iterations before a worker starts it
    /// (the run's budget counts every worker's); false when none is left.
    fn reserve(&self, budgets: &Budgets) -> bool {
        if self.iterations.fetch_add(1, Ordering::SeqCst) >= budgets.max_iterations {
            self.iterations.fetch_sub(1, Ordering::SeqCst);
            return false;
        }
        true
    }

    /// The run's review scope.
    pub(super) fn scope(&self) -> Option<crate::state::RunScope> {
        self.scope
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How long the next iteration must still wait, if at all.
    fn paused_for(&self) -> Option<Duration> {
        let paused = self
            .paused_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        paused
            .map(|until| until.saturating_duration_since(Instant::now()))
            .filter(|left| !left.is_zero())
    }
}

/// A worker's turn to change the base, released when dropped.
pub(crate) struct MergeTurn<'a> {
    _guard: Option<MutexGuard<'a, ()>>,
    held: Rc<Cell<bool>>,
    owner: bool,
}

impl<'a> MergeTurn<'a> {
    /// Takes the turn through `hub` unless `held` says this worker has it
    /// already; without a hub (a single run) there is nothing to take.
    pub(super) fn take(hub: Option<&'a Hub>, held: &Rc<Cell<bool>>) -> MergeTurn<'a> {
        let guard = match hub {
            Some(hub) if !held.get() => {
                Some(hub.merging.lock().unwrap_or_else(PoisonError::into_inner))
            }
            _ => None,
        };
        let owner = guard.is_some();
        if owner {
            held.set(true);
        }
        MergeTurn {
            _guard: guard,
            held: Rc::clone(held),
            owner,
        }
    }
}

impl Drop for MergeTurn<'_> {
    fn drop(&mut self) {
        if self.owner {
            self.held.set(false);
        }
    }
}

/// What a worker hands back when its task is done with.
struct Report {
    merged: usize,
    outcomes: Vec<TaskOutcome>,
    failures: BTreeMap<String, u64>,
    /// How the whole run should end, when the worker says so (a signal,
    /// an agent that cannot log in).
    end: Next,
}

/// What a worker's engine is made from: the run's shared, thread-safe parts.
struct Shared<'a> {
    paths: &'a Paths,
    options: &'a RunOptions,
    interrupted: &'a AtomicBool,
    hub: &'a Hub,
    base: String,
    identity: Identity,
    run_id: String,
    spec: Spec,
    host: Host,
    budgets: Budgets,
    /// When the run started, by the budgets' clock.
    run_started: chrono::DateTime<chrono::Utc>,
}

impl<'a> Engine<'a> {
    /// The engine of parallel worker `number`, working task `tree` in its
    /// worktree; made in the worker's own thread.
    fn worker(
        shared: &Shared<'a>,
        number: u32,
        id: &TaskId,
        tree: &TaskTree,
    ) -> Result<Engine<'a>, Error> {
        let paths = shared.paths.in_worktree(&tree.folder);
        let options = worktree_options(&shared.base, &shared.options.settings);
        let repo = Repo::open(&paths, &options)?.with_identity(shared.identity.clone());
        let base_repo = Repo::open(shared.paths, &options)?.with_identity(shared.identity.clone());
        let state_file = StateFile::open(&paths);
        let (mut state, _) = state_file.load().map_err(|source| Error::Io {
            path: paths.state(),
            source,
        })?;
        // Iterations a crash cut short in this worktree count first.
        state.begin_run(
            shared.run_id.clone(),
            &shared.base,
            crate::clock::now_utc(),
            shared.options.settings.agent.timeout,
        );
        // What an agent left uncommitted when ralph was killed: kept on the
        // branch before anything runs (an unfinished merge stays the
        // agent's to finish).
        if tree.resumed {
            let _ = repo.commit_leftovers(&tree.branch, id.as_str(), state.iteration);
        }
        // The worktree is clean now (new, or its leftovers committed): the
        // scans after each iteration need only look at what changed.
        repo.watch_changes()?;
        Ok(Engine {
            options: shared.options,
            store: Store::open(&paths),
            repo,
            triggers: crate::roles::load(&paths)?,
            spec: shared.spec.clone(),
            host: shared.host.clone(),
            state_file,
            state,
            events: EventLog::open(&paths),
            ui: Ui::worker(&paths, shared.options.quiet, number),
            interrupted: shared.interrupted,
            budgets: shared.budgets.clone(),
            started: Instant::now(),
            run_started: shared.run_started,
            head_elsewhere: None,
            outcomes: Vec::new(),
            merged: 0,
            limit_waits: 0,
            worker: Some(number),
            last_result: None,
            lock: None,
            base_repo: Some(base_repo),
            hub: Some(shared.hub),
            turn_held: Default::default(),
            clean: None,
            push_failure: None,
            pull_request: None,
            paths,
        })
    }

    /// Works task `id` until it is merged, blocked or gone, or the run
    /// stops: the single loop's steps, for one task.
    fn work(&mut self, id: &TaskId) -> Result<Next, Error> {
        let hub = self.hub.expect("a worker has a hub");
        // A run killed between this task's squash commit and its archive.
        self.recover_archived_task()?;
        loop {
            let queue = match self.store.load() {
                Ok(queue) => queue,
                Err(_) => {
                    // Broken mid-run: the agent repairs it, the error as
                    // evidence, unless the run must end.
                    if self.interrupted.load(Ordering::SeqCst) {
                        return Ok(Some(interrupted()));
                    }
                    if hub.stop.load(Ordering::SeqCst)
                        || self.run_time_spent()
                        || !hub.reserve(&self.budgets)
                    {
                        return Ok(None);
                    }
                    if let Some(end) = self.iterate(id, None)? {
                        return Ok(Some(end));
                    }
                    continue;
                }
            };
            let Some(task) = queue.get(id.as_str()).cloned() else {
                return Ok(None);
            };
            if queue.done.contains(id.as_str()) || !task.leaf {
                return Ok(None);
            }
            // The loop's own decision, over this worker's one task and the
            // run's shared counts.
            let candidate = self.candidate(&task);
            let seen = Before {
                interrupted: self.interrupted.load(Ordering::SeqCst),
                stop_requested: hub.stop.load(Ordering::SeqCst),
                iterations: hub.iterations.load(Ordering::SeqCst),
                run_seconds: self.run_seconds(),
                complete: (task.status == Status::Complete).then(|| candidate.clone()),
                next: (task.status != Status::Blocked).then_some(candidate),
                ready_is_reviewed: self.triggers.read_variable("task_marked_ready_to_complete"),
            };
            match decide::before(&seen, &self.budgets) {
                Step::End(Ending::Interrupted) => return Ok(Some(interrupted())),
                // The run's ending is the run's to say (`parallel_loop`).
                Step::End(_) => return Ok(None),
                Step::Finish(_) => self.finish_task(id, Some(&task))?,
                Step::Block(_, reason) => {
                    self.block(id, &reason)?;
                    return Ok(None);
                }
                Step::Iterate(_) => {
                    if let Some(left) = hub.paused_for() {
                        let line = format!(
                            "{id}: waiting {} for the usage limit another worker hit",
                            super::engine::seconds(left)
                        );
                        if let Some(end) = self.wait_logged(&line, left)? {
                            return Ok(Some(end));
                        }
                        continue;
                    }
                    if !hub.reserve(&self.budgets) {
                        return Ok(None);
                    }
                    if let Some(end) = self.iterate(id, Some(&task))? {
                        return Ok(Some(end));
                    }
                }
            }
        }
    }

    /// The run with `workers` parallel workers: hands each free worker the
    /// next workable task no other holds, in its own worktree, until none
    /// is left or the run must end. How it ends, as `main_loop` says it.
    pub(super) fn parallel_loop(&mut self, workers: u32) -> Result<(RunStatus, String), Error> {
        self.recover_archived_task()?;
        self.tidy_worktrees(true)?;
        // One watch of the queue for every worker's iterations: each store
        // write follows into ralph's copies, and after each iteration the
        // worker puts back an archive an agent rewrote.
        self.store.watch()?;
        let hub = Hub::default();
        let paths = self.paths.clone();
        let shared = Shared {
            paths: &paths,
            options: self.options,
            interrupted: self.interrupted,
            hub: &hub,
            base: self.repo.base().to_owned(),
            identity: self.repo.identity().clone(),
            run_id: self.state.run_id.clone(),
            spec: self.spec.clone(),
            host: self.host.clone(),
            budgets: self.budgets.clone(),
            run_started: self.run_started,
        };
        let (sender, receiver) = mpsc::channel::<(TaskId, u32, Result<Report, Error>)>();
        let mut held: Vec<(TaskId, u32)> = Vec::new();
        let mut free: Vec<u32> = (1..=workers).rev().collect();
        let mut ending: Option<(RunStatus, String)> = None;
        let mut failed: Option<Error> = None;
        let handed_out = std::thread::scope(|scope| -> Result<(), Error> {
            loop {
                if ending.is_none() {
                    // `.stop` stays until every worker has stopped.
                    ending = self.requested_end();
                    if ending.is_some() {
                        hub.stop.store(true, Ordering::SeqCst);
                    }
                }
                let budget_spent = hub.iterations.load(Ordering::SeqCst)
                    >= self.budgets.max_iterations
                    || self.run_time_spent();
                while ending.is_none() && failed.is_none() && !budget_spent && !free.is_empty() {
                    let queue = self.store.load()?;
                    if held.is_empty()
                        && (self.finish_archived_lines(&queue)?
                            || self.finish_emptied_container(&queue)?)
                    {
                        continue;
                    }
                    let is_held = |id: &str| held.iter().any(|(h, _)| h.as_str() == id);
                    let pick = first_complete(&queue)
                        .filter(|task| !is_held(task.id.as_str()))
                        .or_else(|| queue.next_except(is_held))
                        .cloned();
                    drop(queue);
                    let Some(task) = pick else { break };
                    if task.status == Status::Pending {
                        let active = Patch::SetStatus {
                            id: task.id.clone(),
                            status: Status::Active,
                        };
                        self.store.apply(&active, &now())?;
                    }
                    let tree =
                        self.repo
                            .task_tree(self.paths.root(), task.id.as_str(), &task.title)?;
                    let number = free.pop().expect("a free worker");
                    held.push((task.id.clone(), number));
                    *hub.scope.lock().unwrap_or_else(PoisonError::into_inner) =
                        self.state.scope.clone();
                    self.ui.line(&format!(
                        "w{number} {} {}: working in {}",
                        task.id,
                        crate::text::safe(&task.title),
                        tree.path
                            .strip_prefix(self.paths.root())
                            .unwrap_or(&tree.path)
                            .display()
                    ));
                    let (shared, sender, id) = (&shared, sender.clone(), task.id.clone());
                    scope.spawn(move || {
                        let report =
                            Engine::worker(shared, number, &id, &tree).and_then(|mut engine| {
                                let end = engine.work(&id)?;
                                Ok(Report {
                                    merged: engine.merged,
                                    outcomes: std::mem::take(&mut engine.outcomes),
                                    failures: engine.state.failures.clone(),
                                    end,
                                })
                            });
                        let _ = sender.send((id, number, report));
                    });
                }
                if held.is_empty() {
                    // Drained with nothing left: the final review, when due,
                    // is one more task to hand out.
                    if ending.is_none() && failed.is_none() && self.add_final_review()? {
                        continue;
                    }
                    return Ok(());
                }
                let (id, number, report) = match receiver.recv_timeout(Duration::from_millis(100)) {
                    Ok(done) => done,
                    Err(mpsc::RecvTimeoutError::Timeout) => continue,
                    Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
                };
                held.retain(|(held_id, _)| *held_id != id);
                free.push(number);
                match report {
                    Ok(report) => {
                        self.merged += report.merged;
                        for outcome in &report.outcomes {
                            if outcome.outcome == "merged" {
                                self.note_merged(&outcome.task);
                            }
                        }
                        self.save_state()?;
                        self.outcomes.extend(report.outcomes);
                        for (class, count) in report.failures {
                            *self.state.failures.entry(class).or_default() += count;
                        }
                        if let Some(end) = report.end
                            && ending.is_none()
                        {
                            ending = Some(end);
                            hub.stop.store(true, Ordering::SeqCst);
                        }
                    }
                    Err(err) => {
                        self.ui.line(&format!("w{number} {id}: stopped: {err}"));
                        hub.stop.store(true, Ordering::SeqCst);
                        failed.get_or_insert(err);
                    }
                }
            }
        });
        self.store.unwatch()?;
        handed_out?;
        self.state.iteration = hub.iterations.load(Ordering::SeqCst);
        if let Some(err) = failed {
            return Err(err);
        }
        if let Some(ending) = ending {
            if ending.0 == RunStatus::Stopped {
                self.remove_stop_file();
            }
            return Ok(ending);
        }
        let queue = self.store.load()?;
        self.record(
            None,
            "run",
            "workers_done",
            "every worker is done",
            Map::new(),
        )?;
        let end = if queue.next().is_none() {
            super::decide::Ending::Drained
        } else if self.state.iteration >= self.budgets.max_iterations {
            super::decide::Ending::BudgetSpent
        } else if self.run_time_spent() {
            super::decide::Ending::RunTimeSpent
        } else {
            super::decide::Ending::Drained
        };
        self.ending(end, &queue)
    }

    /// Before handing out work: stops agents a ralph killed with -9 left
    /// running in task worktrees, and removes the worktrees of tasks that
    /// are archived or gone (their branches stay). Worktrees of active and
    /// blocked tasks stay: the former resume there.
    pub(super) fn tidy_worktrees(&mut self, workers: bool) -> Result<(), Error> {
        let queue = self.store.load()?;
        // Removals a kill cut short are finished first.
        self.repo.remove_removed_task_trees(self.paths.root())?;
        for (id, tree, folder) in self.repo.task_trees(self.paths.root())? {
            let folder = self.paths.in_worktree(folder);
            if crate::agent::stop_leftover_group(
                &folder.agent_group(),
                self.paths.root(),
                self.options.kill_grace,
            ) {
                self.ui.line(&format!(
                    "stopped the agent a previous run left running in task {id}'s worktree"
                ));
            }
            let live = queue.get(&id).is_some_and(|task| task.leaf) && !queue.done.contains(&id);
            if live {
                // Locks a git process left in the worktree when it died
                // with the run (the main repository's went at start).
                let options = worktree_options(self.repo.base(), &self.options.settings);
                let tree_repo = Repo::open(&folder, &options)?;
                for lock in tree_repo.clear_stale_locks()? {
                    self.ui.line(&format!(
                        "removed a stale {} in task {id}'s worktree (a git process died holding it)",
                        lock.display()
                    ));
                }
                if workers {
                    continue;
                }
                // A single run works in the project's checkout: the task's
                // work there is kept on its branch, which it checks out.
                // Its uncommitted work is committed before the folder goes:
                // a failure stops here, with the worktree kept.
                if let Some(branch) = tree_repo.find_task_branch(&id, "")? {
                    tree_repo.commit_leftovers(&branch, &id, self.state.iteration)?;
                }
                drop(tree_repo);
                self.remove_task_tree(&tree)?;
                self.ui.line(&format!(
                    "task {id} goes on in the project's checkout; its worktree from a parallel run is removed (its work is on its branch)"
                ));
                continue;
            }
            self.remove_task_tree(&tree)?;
            let archived = queue.done.contains(&id);
            self.ui.line(&format!(
                "removed the worktree of task {id}, which is {}",
                if archived {
                    "archived"
                } else {
                    "no longer in tasks.jsonl"
                }
            ));
            // Archived by a run killed before its merge was tidied up (or
            // landed): finish that, never squashing a task twice.
            if let (true, Ok(task_id)) = (archived, TaskId::parse(&id)) {
                self.land_archived(&task_id, &queue)?;
            }
        }
        // A run killed after an archived task's worktree went but before
        // its branch did: the branch is finished the same way, landed if
        // its squash had not, the trailers the base lacks committed, then
        // deleted (its tip kept).
        let archived: Vec<&str> = queue.done.ids().collect();
        let ids: std::collections::BTreeSet<String> = (self.repo.branches_of(&archived)?)
            .into_iter()
            .map(|(_, id)| id)
            .collect();
        for id in ids {
            if let Ok(task_id) = TaskId::parse(&id) {
                self.land_archived(&task_id, &queue)?;
            }
        }
        Ok(())
    }
}

/// How a worker opens the repository: in its worktree, on the run's base.
fn worktree_options(base: &str, settings: &crate::config::Settings) -> crate::git::Options {
    crate::git::Options {
        base_branch: Some(base.to_owned()),
        branch_prefix: settings.branch_prefix.clone(),
    }
}
