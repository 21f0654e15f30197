//! A run from its start to its end: the checks before any agent runs
//! (`prepare`), then busy stretches (alone or a pool), each ending with
//! `verify.run`, the push and the pull request, and between them, when
//! polling, the idle waits.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Map, json};

use super::decide::{self, Budgets, Next};
use super::seat::Seat;
use super::ui::Ui;
use super::worker::{Parts, RunOptions, Worker, first_complete, interrupted, open_repo};
use crate::agent::{self, Host};
use crate::config::Settings;
use crate::error::Error;
use crate::events::fields;
use crate::git::{self, Head};
use crate::paths::Paths;
use crate::result::{RunResult, RunStatus};
use crate::roles;
use crate::run_lock::RunLock;
use crate::state::{Loaded, Phase, StateFile};
use crate::task::{Status, Store, TaskId};
use crate::text::count;

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
        let fallback = agent::fallbacks(&settings.agent, &host)?;
        let agent = agent::backend(&settings.agent, options.agent_cmd.as_deref(), host)?;
        // Every agent of the list is checked as the first one is.
        for agent in std::iter::once(&agent).chain(&fallback) {
            agent.check_mode(settings.agent.mode)?;
            agent.preflight()?;
        }
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
            fallback,
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
        worker.said.settings = std::fs::read(paths.settings()).ok();
        Ok(worker)
    }

    /// Runs the loop to its end and writes `result.json`.
    pub(crate) fn run(mut self) -> Result<RunResult, Error> {
        // The run, and the base it merges into, are on disk before any
        // branch is checked out: a crash from here on resumes on this base.
        self.save_state()?;
        // Before this run's first event, so the log moved aside is older
        // runs' alone.
        self.prune_records();
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
            self.look_at_pull_requests()?;
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
            self.unit.pull_request = self.open_pull_request(status, &reason, &verify_run)?;
            if let Some(pull_request) = self.unit.pull_request.clone() {
                self.note_pull_request(&pull_request)?;
                self.unit.pull_requests.push(pull_request);
            }
        }
        // Work done but its pull request not opened (after the retries)
        // is no drained queue: a failure of its own class (exit 20), which
        // the next run tries again; or a person opens it.
        let failed = (self.unit.pull_request.as_ref())
            .filter(|pr| pr.action == crate::result::PrAction::Failed);
        let (status, reason) = match failed {
            Some(pr) if status == RunStatus::Drained => (
                RunStatus::Failed,
                format!(
                    "the work is done and pushed, but its pull request could not be opened or updated ({}); the next run tries again, or do it by hand: {}",
                    crate::redact::redact(pr.error.as_deref().unwrap_or("gh failed")),
                    pr.command.as_deref().unwrap_or("gh pr create")
                ),
            ),
            _ => (status, reason),
        };
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
            self.prune_records();
            self.look_for_prds()?;
            self.look_at_pull_requests()?;
            // A queue shared through the remote: what other clones pushed.
            self.catch_up()?;
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
                self.earlier_iterations += self.state.iteration;
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

    /// Deletes the records of iterations older than `retention_days` and
    /// moves old events aside, saying what it did. A failure is said and
    /// costs the run nothing: the records are only kept longer.
    fn prune_records(&mut self) {
        let days = self.options.settings.retention_days;
        match crate::retention::prune(&self.paths, days, std::time::SystemTime::now()) {
            Ok(pruned) => {
                if let Some(said) = pruned.said(days) {
                    self.ui.log(&said);
                }
            }
            Err(err) => self.ui.log(&format!(
                "warning: retention: the old records could not be pruned: {err}; they are kept"
            )),
        }
    }

    /// Says once per change that `config/ralph.yaml` changed while the
    /// run waits: the spending caps apply at the next look, the rest when
    /// the run starts again.
    fn note_settings_change(&mut self) {
        let now_text = std::fs::read(self.paths.settings()).ok();
        if now_text == self.said.settings {
            return;
        }
        self.said.settings = now_text;
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
