//! The pool (`ralph run --workers N`): the run hands each free worker the
//! next workable task no other holds, in the task's own git worktree;
//! each takes the loop's steps on it (`step.rs`), its merges into the
//! base, made in the project's checkout, taking turns (`seat.rs`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::json;

use crate::events::fields;

use super::decide::{Budgets, Next};
use super::seat::{Counts, Hub, Pooled, Seat};
use super::shared::SharedQueue;
use super::source::{Idle, Local, Pick, Source};
use super::step::Stepped;
use super::ui::Ui;
use super::worker::{RunOptions, Worker, first_complete, now};
use crate::agent::Host;
use crate::error::Error;
use crate::git::{Identity, Repo, TaskTree};
use crate::paths::Paths;
use crate::result::{RunStatus, TaskEnd, TaskOutcome};
use crate::state::StateFile;
use crate::task::{Patch, Status, Task, TaskId};

/// What a worker hands back when its task is done with.
struct Report {
    merged: usize,
    outcomes: Vec<TaskOutcome>,
    failures: BTreeMap<crate::agent::FailureClass, u64>,
    /// How the whole run should end, when the worker says so (a signal,
    /// an agent that cannot log in).
    end: Next,
}

/// What a pooled worker is made from: the run's shared, thread-safe parts.
struct Common<'a> {
    paths: &'a Paths,
    options: &'a RunOptions,
    interrupted: &'a AtomicBool,
    hub: &'a Hub,
    base: String,
    identity: Identity,
    run_id: String,
    host: Host,
    budgets: Budgets,
    /// When the run started, by the budgets' clock.
    run_started: chrono::DateTime<chrono::Utc>,
    notifier: crate::notify::Notifier,
    remote: Option<std::sync::Arc<super::remote::Remote>>,
}

impl<'a> Worker<'a> {
    /// Pooled worker `number`, working task `id` in its worktree `tree`;
    /// made in the worker's own thread.
    fn pooled(
        common: &Common<'a>,
        number: u32,
        id: &TaskId,
        tree: &TaskTree,
    ) -> Result<Worker<'a>, Error> {
        let paths = common.paths.in_worktree(&tree.folder);
        let options = worktree_options(&common.base, common.paths, &common.options.settings);
        let mut repo = Repo::open(&paths, &options)?.with_identity(common.identity.clone());
        let mut base_repo =
            Repo::open(common.paths, &options)?.with_identity(common.identity.clone());
        let (sandbox, confined) = (&common.options.sandbox, &common.options.settings.sandbox);
        super::confine::guard_hooks(&mut repo, sandbox, confined, &paths)?;
        super::confine::guard_hooks(&mut base_repo, sandbox, confined, common.paths)?;
        let state_file = StateFile::open(&paths);
        let (mut state, _) = state_file
            .load()
            .map_err(crate::files::at::<Error>(paths.state()))?;
        // Iterations a crash cut short in this worktree count first.
        state.begin_run(
            common.run_id.clone(),
            &common.base,
            crate::clock::now_utc(),
            common.options.settings.agent.timeout,
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
        Ok(Worker::new(super::worker::Parts {
            options: common.options,
            repo,
            triggers: crate::roles::load(&paths)?,
            agent: crate::agent::backend(
                &common.options.settings.agent,
                common.options.agent_cmd.as_deref(),
                common.host.clone(),
            )?,
            fallback: crate::agent::fallbacks(&common.options.settings.agent, &common.host)?,
            state,
            ui: Ui::worker(&paths, common.options.quiet, number),
            interrupted: common.interrupted,
            budgets: common.budgets.clone(),
            run_started: common.run_started,
            seat: Seat::OneOf(Box::new(Pooled {
                number,
                task: id.clone(),
                base: base_repo,
                hub: common.hub,
                turn_held: Default::default(),
            })),
            notifier: common.notifier.clone(),
            prd_base: common.base.clone(),
            remote: common.remote.clone(),
            paths,
        }))
    }

    /// Takes steps on the task it was handed until that task is done
    /// with (merged, blocked, gone) or the run stops; how the run should
    /// end, when this worker says so.
    fn work(&mut self) -> Result<Next, Error> {
        // A run killed between this task's squash commit and its archive.
        self.recover_archived_task()?;
        loop {
            match self.step()? {
                Stepped::On => {}
                Stepped::Done => return Ok(None),
                Stepped::End(end) => return Ok(Some(end)),
            }
        }
    }

    /// The run with a pool of `workers`: hands each free worker the next
    /// workable task no other holds, in its own worktree, until none is
    /// left or the run must end. How it ended, as `run_alone` says it.
    pub(super) fn run_pool(&mut self, workers: u32) -> Result<(RunStatus, String), Error> {
        let mut source = self.source()?;
        self.recover_archived_task()?;
        self.tidy_worktrees(true)?;
        // One watch of the queue for every worker's iterations: each store
        // write follows into ralph's copies, and after each iteration the
        // worker puts back an archive an agent rewrote.
        self.store.watch()?;
        let hub = Hub::new(Counts::of(&self.state), self.state.scope.clone());
        let paths = self.paths.clone();
        let common = Common {
            paths: &paths,
            options: self.options,
            interrupted: self.interrupted,
            hub: &hub,
            base: self.repo.base().to_owned(),
            identity: self.repo.identity().clone(),
            run_id: self.state.run_id.clone(),
            host: Host::from_process(self.paths.project())?,
            budgets: self.budgets.clone(),
            run_started: self.run_started,
            notifier: self.notifier.clone(),
            remote: self.remote.clone(),
        };
        let (sender, receiver) = mpsc::channel::<(TaskId, u32, Result<Report, Error>)>();
        let mut held: Vec<(TaskId, u32)> = Vec::new();
        let mut free: Vec<u32> = (1..=workers).rev().collect();
        let mut ending: Option<(RunStatus, String)> = None;
        let mut failed: Option<Error> = None;
        let handed_out = std::thread::scope(|scope| -> Result<(), Error> {
            loop {
                self.hold_lock()?;
                if let Some(reason) = self.push_failure.take() {
                    ending.get_or_insert((RunStatus::Failed, reason));
                    hub.stop.store(true, Ordering::SeqCst);
                }
                if ending.is_none() {
                    // `.stop` stays until every worker has stopped.
                    ending = self.requested_end();
                    if ending.is_some() {
                        hub.stop.store(true, Ordering::SeqCst);
                    }
                }
                let counts = hub.counts();
                // What this thread records counts the pool's iterations.
                self.state.iteration = counts.iteration;
                let today = crate::state::day_of(crate::clock::now_utc());
                let spent = counts.spent.on(&today);
                let budget_spent = (super::decide::run_budget_spent(
                    counts.iteration,
                    self.run_seconds(),
                    &spent,
                    &self.budgets,
                ))
                .is_some();
                let going_on = ending.is_none() && failed.is_none() && !budget_spent;
                source.refresh(self, &hub, false)?;
                while going_on && !free.is_empty() {
                    source.refresh(self, &hub, true)?;
                    let queue = self.store.load()?;
                    if held.is_empty()
                        && (self.finish_archived_lines(&queue)?
                            || self.finish_emptied_container(&queue)?)
                    {
                        continue;
                    }
                    let is_held = |id: &str| {
                        held.iter().any(|(h, _)| h.as_str() == id) || !source.claimable(id)
                    };
                    let pick = first_complete(&queue)
                        .filter(|task| !is_held(task.id.as_str()))
                        .or_else(|| queue.next_except(is_held))
                        .cloned();
                    drop(queue);
                    let Some(task) = pick else {
                        if held.is_empty() && source.nothing_left(self, &hub)? {
                            continue;
                        }
                        break;
                    };
                    let number = *free.last().expect("a free worker");
                    match source.claim(self, &task, number)? {
                        Pick::Go => {}
                        Pick::Taken => continue,
                        Pick::Offline => break,
                    }
                    self.hand_out(scope, &common, &task, number, &sender)?;
                    free.pop();
                    held.push((task.id.clone(), number));
                }
                if held.is_empty() {
                    if going_on {
                        match source.idle(self, &hub)? {
                            Idle::LookAgain => continue,
                            Idle::Ended(end) => {
                                ending.get_or_insert(end);
                                continue;
                            }
                            Idle::Done => {}
                        }
                    }
                    // Drained with nothing left: the final review, when due,
                    // is one more task to hand out.
                    if ending.is_none() && failed.is_none() && self.add_final_review()? {
                        continue;
                    }
                    return Ok(());
                }
                source.busy();
                let (id, number, report) = match receiver.recv_timeout(Duration::from_millis(100)) {
                    Ok(done) => done,
                    Err(mpsc::RecvTimeoutError::Timeout) => continue,
                    Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
                };
                held.retain(|(held_id, _)| *held_id != id);
                free.push(number);
                match report {
                    Ok(report) => {
                        if let Some(end) = self.take_report(report)?
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
        hub.counts().into_state(&mut self.state);
        handed_out?;
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
        let spent = self.run_spent();
        let end = (queue.next())
            .and_then(|_| {
                let (iterations, seconds) = (self.state.iteration, self.run_seconds());
                super::decide::run_budget_spent(iterations, seconds, &spent, &self.budgets)
            })
            .unwrap_or(super::decide::Ending::Drained);
        self.ending(end, &queue)
    }

    /// The pool's source of tasks: the queue shared through the remote
    /// when `remote.enabled` (read first, so what follows sees the shared
    /// queue and lands on its tip), else the project's.
    fn source(&mut self) -> Result<Box<dyn Source>, Error> {
        if !self.options.settings.remote.enabled {
            return Ok(Box::new(Local));
        }
        let remote = match &self.remote {
            Some(remote) => remote.clone(),
            None => {
                let remote = super::remote::Remote::open(
                    &self.paths,
                    &self.repo,
                    &self.options.settings,
                    &self.state.run_id,
                )?;
                self.remote = Some(std::sync::Arc::new(remote));
                self.join_remote()?;
                self.remote.clone().expect("the remote just opened")
            }
        };
        Ok(Box::new(SharedQueue::new(remote)))
    }

    /// Hands `task` to free worker `number`, in the task's worktree, on a
    /// thread of `scope` that reports to `sender` when the task is done
    /// with.
    fn hand_out<'s, 'c>(
        &mut self,
        scope: &'s std::thread::Scope<'s, '_>,
        common: &'s Common<'c>,
        task: &Task,
        number: u32,
        sender: &mpsc::Sender<(TaskId, u32, Result<Report, Error>)>,
    ) -> Result<(), Error> {
        if task.status == Status::Pending {
            let active = Patch::SetStatus {
                id: task.id.clone(),
                status: Status::Active,
            };
            self.store.apply(&active, &now())?;
        }
        let tree = self
            .repo
            .task_tree(self.paths.root(), task.id.as_str(), &task.title)?;
        if !tree.resumed {
            // The claim, as the worker alone records it.
            let extra = fields(json!({"worker": number}));
            let detail = format!("created branch {}", tree.branch);
            self.record_claim(&task.id, &detail, extra)?;
        }
        common.hub.set_scope(self.state.scope.clone());
        self.ui.line(&format!(
            "w{number} {} {}: working in {}",
            task.id,
            crate::text::safe(&task.title),
            tree.path
                .strip_prefix(self.paths.root())
                .unwrap_or(&tree.path)
                .display()
        ));
        let (sender, id) = (sender.clone(), task.id.clone());
        scope.spawn(move || {
            // A report always comes back: a thread that ended on a panic
            // without one would keep the pool waiting for it forever.
            let work = || {
                Worker::pooled(common, number, &id, &tree).and_then(|mut worker| {
                    let end = worker.work()?;
                    Ok(Report {
                        merged: worker.merged,
                        outcomes: std::mem::take(&mut worker.outcomes),
                        failures: worker.state.failures.clone(),
                        end,
                    })
                })
            };
            let report = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
                .unwrap_or_else(|panic| {
                    let said = (panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_default();
                    Err(super::RunError::WorkerPanicked {
                        worker: number,
                        task: id.to_string(),
                        said,
                    }
                    .into())
                });
            let _ = sender.send((id, number, report));
        });
        Ok(())
    }

    /// Takes in what a worker reported of its task; how the whole run
    /// should end, when the worker says so.
    fn take_report(&mut self, report: Report) -> Result<Next, Error> {
        self.merged += report.merged;
        for outcome in &report.outcomes {
            if outcome.outcome == TaskEnd::Merged {
                self.note_merged(&outcome.task);
            }
        }
        self.save_state()?;
        self.outcomes.extend(report.outcomes);
        for (class, count) in report.failures {
            *self.state.failures.entry(class).or_default() += count;
        }
        Ok(report.end)
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
                let options =
                    worktree_options(self.repo.base(), &self.paths, &self.options.settings);
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
fn worktree_options(
    base: &str,
    paths: &crate::paths::Paths,
    settings: &crate::config::Settings,
) -> crate::git::Options {
    crate::git::Options {
        base_branch: Some(base.to_owned()),
        branch_prefix: settings.branch_prefix.clone(),
        ssh_key: settings.git.ssh_key_file(paths.project()),
    }
}
