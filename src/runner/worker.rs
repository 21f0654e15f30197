//! The executor: performs the steps `decide` chooses, records each one
//! (state, events, `ralph.log`) and keeps the queue, the branch and the
//! base consistent whatever the agent did.

use crate::paths::Paths;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Map, json};

use crate::events::fields;

use super::decide::{self, Budgets, Candidate, Ending};
use super::iteration::Next;
use super::lock::RunLock;
use super::seat::Seat;
use super::ui::Ui;
use crate::agent::{self, Backend, Host};
use crate::config::Settings;
use crate::error::Error;
use crate::events::EventLog;
use crate::git::{self, Head, Repo};
use crate::paths::STOP_FILE;
use crate::result::{RunResult, RunStatus, TaskOutcome};
use crate::roles::{self, Triggers};
use crate::state::{Loaded, Phase, State, StateFile};
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
    /// With `delivery: pr`: the pull request the run ends with.
    pub(super) pull_request: Option<crate::result::PullRequest>,
    /// Tells people of the events worth their attention.
    pub(super) notifier: crate::notify::Notifier,
    /// The last problem watching for PRDs said, so it is said once.
    pub(super) watch_problem: Option<String>,
    /// Which tasks the stretch works (a pull request per PRD).
    pub(super) scope: super::unit::Scope,
    /// The PRD the stretch's tasks come from, and the commit it was
    /// planned at.
    pub(super) source: Option<(String, String)>,
    /// The branch pull requests per PRD are made from and target.
    pub(super) prd_base: String,
    /// `config/ralph.yaml` as the run last saw it, to say once that a
    /// change waits for a new run.
    pub(super) settings_text: Option<Vec<u8>>,
    /// The remote the queue is shared through, when it is.
    pub(super) remote: Option<std::sync::Arc<super::remote::Remote>>,
}

pub(super) use crate::clock::now;

/// What a worker is made of, alone or pooled; the rest of it starts
/// empty ([`Worker::new`]).
pub(super) struct Parts<'a> {
    pub paths: Paths,
    pub options: &'a RunOptions,
    pub repo: Repo,
    pub triggers: Triggers,
    pub agent: Box<dyn Backend>,
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
    /// Checks everything a run needs before any agent runs: the triggers,
    /// the queue, the repository, the agent. `state` is the loaded state.
    pub(crate) fn prepare(
        paths: &Paths,
        options: &'a RunOptions,
        interrupted: &'a AtomicBool,
        run_id: String,
        lock: RunLock,
    ) -> Result<Worker<'a>, Error> {
        // The run's time includes these checks (a scan of a large tree).
        let started = Instant::now();
        let run_started = crate::clock::now_utc();
        let settings = &options.settings;
        let triggers = roles::load(paths)?;
        if settings.review_every.is_some_and(|every| every > 0) && !paths.role("reviewer").exists()
        {
            return Err(crate::config::Error::Invalid {
                line: None,
                message: "review_every is set, but roles/reviewer.md, the role it runs, is missing; `ralph init` writes it, or set review_every: null".to_owned(),
            }
            .into());
        }
        let store = Store::open(paths);
        let torn = store.load()?.done.torn().map(|t| t.line);
        let state_file = StateFile::open(paths);
        let (mut state, loaded) = state_file
            .load()
            .map_err(crate::files::at::<Error>(paths.state()))?;
        let ui = Ui::new(paths, options.quiet);
        if let Some(line) = torn {
            ui.line(&crate::task::Torn::ignored_warning(line));
        }
        if let Loaded::Quarantined(aside) = &loaded {
            ui.line(&format!(
                "warning: .ralph/state.json did not parse; moved it to {} and started fresh",
                aside.display()
            ));
        }
        // An agent that outlived a ralph killed with -9 must not keep
        // changing the tree under this run.
        if agent::stop_leftover_group(&paths.agent_group(), paths.project(), options.kill_grace) {
            ui.line("stopped the agent a previous run left running");
        }
        // A write cut short by a crash leaves its temp file beside the file
        // (looked for once the leftover agent, which may have been writing
        // one with `ralph task`, is stopped).
        for file in [
            paths.tasks(),
            paths.state(),
            paths.valid_queue(),
            paths.valid_archive(),
            paths.result(),
        ] {
            let _ = crate::files::remove_stale_temps(&file);
        }
        let mut repo = open_repo(paths, settings, state.base.as_deref())?;
        super::confine::guard_hooks(&mut repo, &options.sandbox, &settings.sandbox, paths)?;
        // A configured base other than the branch checked out: the run's
        // checkouts move HEAD off that branch, and the start line says so.
        let head_elsewhere = match repo.head()? {
            Head::Branch(branch)
                if branch != repo.base() && !branch.starts_with(repo.branch_prefix()) =>
            {
                Some(branch)
            }
            _ => None,
        };
        if let Some(warning) = repo.identity().warning() {
            ui.line(&format!("warning: {warning}"));
        }
        if paths.queue_in_checkout() {
            repo.exclude_runtime_files()?;
        }
        for (file, rule) in repo.ignored_queue_files() {
            let (message, fix) = git::ignored_queue_file(&file, &rule);
            ui.line(&format!("warning: {message}; {fix}"));
        }
        if let Some((message, fix)) = super::review::missing_role(settings.final_review, &triggers)
        {
            ui.line(&format!("warning: {message}; {fix}"));
        }
        for lock in repo.clear_stale_locks()? {
            ui.line(&format!(
                "removed a stale {} (a git process died holding it)",
                lock.display()
            ));
        }
        if let Some(branch) = repo.undo_interrupted_squash()? {
            let whose = if branch == repo.base() {
                "the base".to_owned()
            } else {
                format!("the task branch {branch}")
            };
            ui.line(&format!(
                "a squash into {} was cut short when ralph stopped; its files were put back as {whose} has them",
                repo.base()
            ));
        }
        if let Some(at) = repo.leave_detached_head()? {
            ui.line(&format!(
                "HEAD was detached at {}; checked out the base branch {}",
                at.short(),
                repo.base()
            ));
        }
        // A run killed mid-iteration leaves the agent's work uncommitted on
        // its branch: keep it before checking the tree is clean.
        if let (Some(task), Head::Branch(branch)) = (state.current_task.clone(), repo.head()?)
            && state.tasks.get(&task).and_then(|p| p.branch.as_deref()) == Some(branch.as_str())
            && let Ok(id) = TaskId::parse(&task)
        {
            repo.commit_leftovers(&branch, &id, state.iteration)?;
        }
        // Watched from before the preflight's full scan, so the scan after
        // each iteration need only look at what changed since.
        repo.watch_changes()?;
        let clean = repo.preflight()?;
        if settings.workers.is_some() || settings.remote.enabled {
            repo.check_queue_on_base()?;
        }
        // A push to nowhere would fail only once the work is done (a pull
        // request's remote is checked before its branch is made).
        if settings.git.push != crate::config::Push::Never
            && settings.delivery != crate::config::Delivery::Pr
        {
            repo.check_push_remote(repo.base(), settings.git.remote.as_deref(), false)?;
            super::deliver::check_ssh_key(paths, settings)?;
        }
        let host = Host::from_process(paths.project())?;
        let agent = agent::backend(&settings.agent, options.agent_cmd.as_deref(), host)?;
        agent.check_mode(settings.agent.mode)?;
        agent.preflight()?;
        // A model a role asks for that the agent cannot take, and a prompt
        // its templates cannot make, would stop the run only once a task
        // is claimed (or that role first picked): found here instead.
        for trigger in &triggers.list {
            if let Some(model) = &trigger.model {
                agent.check_model(model)?;
            }
        }
        super::dry_run::plan(paths, options)?;
        // Iterations a crash cut short are counted before any budget is.
        state.begin_run(run_id, repo.base(), run_started, settings.agent.timeout);
        super::review::open_scope(&mut state, &repo)?;
        // A run stopped inside a PRD's pull request resumes on its branch.
        let prd_base = match &state.pull_request {
            Some(plan) if !settings.watch.prds.is_empty() => plan.target.clone(),
            _ => repo.base().to_owned(),
        };
        let budgets = Budgets {
            max_iterations: if options.once {
                1
            } else {
                settings.max_iterations
            },
            max_run_minutes: settings.max_run_minutes,
            max_iterations_per_task: settings.max_iterations_per_task,
            max_task_minutes: settings.max_task_minutes,
            max_consecutive_failures: settings.max_consecutive_failures.max(1),
            no_progress_iterations: settings.no_progress_iterations.max(1),
            retry_backoff: settings.retry_backoff,
            usage_limit_max_wait: settings.usage_limit_max_wait,
            caps: decide::Caps::of(settings),
        };
        let mut worker = Worker::new(Parts {
            paths: paths.to_owned(),
            options,
            repo,
            triggers,
            agent,
            state,
            ui,
            interrupted,
            budgets,
            run_started,
            seat: Seat::Alone(lock),
            notifier: crate::notify::Notifier::new(&settings.notify, paths),
            prd_base,
            remote: None,
        });
        worker.started = started;
        worker.head_elsewhere = head_elsewhere;
        worker.clean = Some(clean);
        worker.settings_text = std::fs::read(paths.settings()).ok();
        Ok(worker)
    }

    /// A worker of `parts`, with nothing done yet.
    pub(super) fn new(parts: Parts<'a>) -> Worker<'a> {
        let paths = parts.paths;
        Worker {
            options: parts.options,
            store: Store::open(&paths),
            repo: parts.repo,
            triggers: parts.triggers,
            agent: parts.agent,
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
            pull_request: None,
            notifier: parts.notifier,
            watch_problem: None,
            scope: super::unit::Scope::All,
            source: None,
            prd_base: parts.prd_base,
            settings_text: None,
            remote: parts.remote,
            paths,
        }
    }

    /// Runs the loop to its end and writes `result.json`.
    pub(crate) fn run(mut self) -> Result<RunResult, Error> {
        // The run, and the base it merges into, are on disk before any
        // branch is checked out: a crash from here on resumes on this base.
        self.save_state()?;
        let counts = self.store.load()?.counts();
        self.ui.line(&format!(
            "ralph: run {} on {}{}, agent {}, {} ({} pending, {} active), max {}",
            self.state.run_id,
            self.repo.base(),
            self.head_elsewhere.as_ref().map_or(String::new(), |branch| format!(
                " (HEAD was on {branch}: tasks branch from {base} and merge into it, and HEAD ends on {base})",
                base = self.repo.base()
            )),
            self.agent.label(),
            count(counts.active_total(), "task"),
            counts.with(Status::Pending),
            counts.with(Status::Active) + counts.with(Status::Ready),
            count(self.budgets.max_iterations as usize, "iteration"),
        ));
        match &self.options.sandbox {
            super::confine::Sandbox::On(jail) => self.ui.line(&jail.said()),
            super::confine::Sandbox::Unavailable(why) => self.ui.line(&format!(
                "warning: agents run unconfined: {why}; sandbox.mode: off in config/ralph.yaml says you mean it (docs/AGENT.md)"
            )),
            super::confine::Sandbox::Off => {}
        }
        if let Some(warning) = unverified_warning(&self.options.settings.verify.task, &self.store) {
            self.ui.line(&warning);
        }
        for (message, fix) in self.store.displaced() {
            self.ui.line(&format!("warning: {message}; {fix}"));
        }
        let started = format!(
            "on {}, agent {}, {}, max {}",
            self.repo.base(),
            self.agent.label(),
            count(counts.active_total(), "task"),
            count(self.budgets.max_iterations as usize, "iteration"),
        );
        // What a look from outside (`ralph top`) shows of the run.
        let extra = json!({
            "base": self.repo.base(),
            "agent": self.agent.label(),
            "max_iterations": self.budgets.max_iterations,
        });
        self.record_between(None, "run", "started", &started, fields(extra))?;
        // A task a stopped run left under way is resumed before new PRDs.
        if self.state.current_task.is_none() {
            self.look_for_prds()?;
        }
        loop {
            self.enter_unit()?;
            let (status, reason, verify_run) = match self.stretch()? {
                Ok(ended) => ended,
                Err(result) => return Ok(result),
            };
            // A pull request per PRD: the next unit's tasks, if any.
            if self.leave_unit()? && matches!(status, RunStatus::Drained | RunStatus::Blocked) {
                continue;
            }
            let capped = self.cap_reached(status, &reason);
            // A polling run waits for work where another would end: a
            // blocked task, a failed verify.run, a drained queue, a
            // spending cap reached (until it is raised, or the next day).
            if let Some(every) = self.options.poll
                && (capped || matches!(status, RunStatus::Drained | RunStatus::Blocked))
            {
                match self.idle(every, &reason)? {
                    Some((status, reason)) => return self.finish(status, &reason, verify_run),
                    None => continue,
                }
            }
            return self.finish(status, &reason, verify_run);
        }
    }

    /// One busy stretch of the run: the loop until nothing is workable or
    /// the run must end, then `verify.run`, the push and the pull request.
    /// How it ended, or (`Err`) the result of a run that ends now.
    #[allow(clippy::type_complexity)]
    fn stretch(
        &mut self,
    ) -> Result<Result<(RunStatus, String, Vec<crate::result::CommandResult>), RunResult>, Error>
    {
        let ending = match self.options.settings.workers {
            Some(workers) => self.run_pool(workers as u32),
            // A shared queue is worked in worktrees: the project's
            // checkout stays on the base, which each read of the remote
            // moves to its tip.
            None if self.options.settings.remote.enabled => self.run_pool(1),
            None => self.run_alone(),
        };
        let (status, reason) = match ending {
            Ok(end) => end,
            Err(err) => {
                // The result says how it ended even when ralph could not go on.
                let reason = err.to_string();
                let _ = self.finish(RunStatus::Failed, &reason, Vec::new());
                return Err(err);
            }
        };
        let verify_run = if status == RunStatus::Drained {
            // Reviewed or not, the work is done with: the next run's
            // review covers its own.
            self.state.scope = None;
            self.verify_run()?
        } else {
            Vec::new()
        };
        if self.interrupted.load(Ordering::SeqCst) {
            let (status, reason) = interrupted();
            return Ok(Err(self.finish(status, &reason, verify_run)?));
        }
        // Once at the end; a push that failed already is not tried again.
        // A pull request needs its branch pushed.
        // A pull request per PRD between units has no branch of its own.
        let pr = self.options.settings.delivery == crate::config::Delivery::Pr
            && self.state.pull_request.is_some();
        let pushed = match (&self.push_failure, self.options.settings.git.push) {
            (None, crate::config::Push::OnExit) => self.push_base()?,
            (None, crate::config::Push::Never) if pr => self.push_base()?,
            _ => None,
        };
        if let Some(reason) = pushed.or_else(|| self.push_failure.take()) {
            return Ok(Err(self.finish(RunStatus::Failed, &reason, verify_run)?));
        }
        let (status, reason) = if verify_run.iter().any(|c| !c.passed) {
            (
                RunStatus::Blocked,
                "the queue drained but a verify.run command failed".to_owned(),
            )
        } else {
            (status, reason)
        };
        if pr
            && matches!(
                status,
                RunStatus::Drained | RunStatus::Blocked | RunStatus::BudgetExhausted
            )
        {
            self.pull_request = self.open_pull_request(status, &reason, &verify_run)?;
        }
        Ok(Ok((status, reason, verify_run)))
    }

    /// A polling run with nothing workable (`why`): waits `every`, waking
    /// for `.stop` and signals, and looks at the queue again, until there
    /// is work (`None`: a new busy stretch, with its own budgets) or the
    /// run must end (how).
    fn idle(&mut self, every: Duration, why: &str) -> Result<Next, Error> {
        let every_text = crate::config::ShowDuration(every).to_string();
        self.record_between(None, "run", "idle", why, Map::new())?;
        let told = format!("ralph is idle: {why}; looking again every {every_text}");
        let extra = fields(json!({"poll_interval": every_text}));
        self.notify(crate::notify::Kind::RunIdle, None, &told, extra);
        self.ui
            .log(&format!("idle: {why}; looking again every {every_text}"));
        loop {
            let next = chrono::Duration::from_std(every)
                .ok()
                .and_then(|every| chrono::Utc::now().checked_add_signed(every))
                .map(crate::clock::stamp)
                .unwrap_or_default();
            self.state.phase = Phase::Idle;
            self.state.polling = Some(crate::state::Polling {
                every: every_text.clone(),
                next_look: next,
            });
            self.save_state()?;
            if let Some(end) = self.wait(every)? {
                self.state.polling = None;
                return Ok(Some(end));
            }
            self.note_settings_change();
            self.look_for_prds()?;
            // A queue that does not parse waits for its fix; a run at its
            // spending cap, for the cap raised or the next day.
            let workable = self
                .store
                .load()
                .is_ok_and(|queue| queue.next().is_some() || first_complete(&queue).is_some())
                && !self.still_capped();
            if workable {
                self.state.polling = None;
                self.state.phase = Phase::Between;
                // Budgets count busy stretches, not the time between.
                self.state.iteration = 0;
                self.run_started = crate::clock::now_utc();
                self.limit_waits = 0;
                self.save_state()?;
                self.ui.log("work found: the run goes on");
                self.record_between(None, "run", "resumed", "work found", Map::new())?;
                return Ok(None);
            }
        }
    }

    /// Says once per change that `config/ralph.yaml` changed while the
    /// run waits: the spending caps apply at the next look, the rest when
    /// the run starts again.
    fn note_settings_change(&mut self) {
        let now_text = std::fs::read(self.paths.settings()).ok();
        if now_text == self.settings_text {
            return;
        }
        self.settings_text = now_text;
        self.ui.log(&format!(
                "{} changed: its spending caps apply from this look on; the other settings when the run starts again (`ralph stop`, then `ralph run --poll`)",
                crate::paths::SETTINGS_FILE
            ),
        );
    }

    /// Whether the stretch ended at a run's spending cap; if so, says it
    /// (`cap_reached`).
    fn cap_reached(&self, status: RunStatus, reason: &str) -> bool {
        if status != RunStatus::BudgetExhausted {
            return false;
        }
        let Some(reached) = self.budgets.caps.run_reached(&self.run_spent()) else {
            return false;
        };
        let extra = json!({"cap": reached.cap, "limit": reached.limit, "spent": reached.spent});
        self.notify(crate::notify::Kind::CapReached, None, reason, fields(extra));
        true
    }

    /// Whether the run is still at a spending cap, with the caps read
    /// again from the settings (a person may have raised them); a
    /// settings file that does not load keeps the caps as they were.
    fn still_capped(&mut self) -> bool {
        if let Ok(settings) = Settings::load_with_env(&self.paths) {
            self.budgets.caps = decide::Caps::of(&settings);
        }
        self.budgets.caps.run_reached(&self.run_spent()).is_some()
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
            Ending::Drained if !self.scope.is_all() => {
                let left = (queue.live_tasks())
                    .filter(|(_, task)| task.leaf && self.scope.holds(task.id.as_str()))
                    .count();
                let of = match &self.source {
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
/// run resumed on a task branch uses the base it recorded.
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
    match Repo::open(paths, &options) {
        Err(git::Error::OnTaskBranch { .. })
            if settings.base_branch.is_none() && recorded_base.is_some() =>
        {
            let options = git::Options {
                base_branch: recorded_base.map(str::to_owned),
                ..options
            };
            Ok(Repo::open(paths, &options)?)
        }
        other => Ok(other?),
    }
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

/// The warning for a run whose open tasks would be merged on the agent's
/// word alone: `verify.task` is empty and some have no `verify` of their
/// own. Said once, at the start; none when the queue cannot be read (the
/// loop says why soon enough).
fn unverified_warning(configured: &[String], store: &Store) -> Option<String> {
    if !configured.is_empty() {
        return None;
    }
    let queue = store.load().ok()?;
    let unchecked = (queue.live_tasks())
        .filter(|(_, task)| task.leaf && task.status != Status::Complete)
        .filter(|(_, task)| queue.string_list(task.id.as_str(), "verify").is_empty())
        .count();
    (unchecked > 0).then(|| {
        format!(
            "warning: verify.task is empty and {} {own}: the agent's word alone decides when {they} done; add the project's test command to verify.task in config/ralph.yaml (`ralph init --detect` finds the ones it already has)",
            count(unchecked, "open task"),
            own = if unchecked == 1 { "has no verify of its own" } else { "have no verify of their own" },
            they = if unchecked == 1 { "it is" } else { "they are" },
        )
    })
}
