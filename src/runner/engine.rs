//! The executor: performs the steps `decide` chooses, records each one
//! (state, events, `ralph.log`) and keeps the queue, the branch and the
//! base consistent whatever the agent did.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::context::{self, Measures};
use super::decide::{
    self, After, AgentEnd, Before, Budgets, Candidate, Ending, Step, TaskAfter, Verdict,
};
use super::result::{CommandResult, RunResult, RunStatus, TaskOutcome};
use super::ui::Ui;
use super::verify;
use super::{RunError, STOP_FILE};
use crate::agent::{self, Echo, FailureClass, Host, Limits, Spec};
use crate::config::{Settings, ShowDuration};
use crate::error::Error;
use crate::events::{Event, EventLog};
use crate::git::{self, Head, Repo, Squash, SquashPreview};
use crate::prompt::{self, Evidence};
use crate::roles::{self, Triggers};
use crate::state::{Loaded, State, StateFile, TaskProgress};
use crate::task::{Patch, Queue, Status, Store, Task, TaskId};

/// How a run was asked for: the checked settings and the flags that are
/// not settings.
#[derive(Clone, Debug)]
pub struct RunOptions {
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
}

/// The loop over one project.
pub struct Engine<'a> {
    root: PathBuf,
    options: &'a RunOptions,
    store: Store,
    repo: Repo,
    triggers: Triggers,
    spec: Spec,
    host: Host,
    state_file: StateFile,
    state: State,
    events: EventLog,
    ui: Ui,
    interrupted: &'a AtomicBool,
    budgets: Budgets,
    started: Instant,
    outcomes: Vec<TaskOutcome>,
    merged: usize,
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

impl<'a> Engine<'a> {
    /// Checks everything a run needs before any agent runs: the triggers,
    /// the queue, the repository, the agent. `state` is the loaded state.
    pub fn prepare(
        root: &Path,
        options: &'a RunOptions,
        interrupted: &'a AtomicBool,
        run_id: String,
    ) -> Result<Engine<'a>, Error> {
        let settings = &options.settings;
        let triggers = roles::load(root)?;
        let store = Store::open(root);
        store.load()?;
        let state_file = StateFile::open(root);
        let (mut state, loaded) = state_file.load().map_err(|source| Error::Io {
            path: root.join(crate::state::STATE_FILE),
            source,
        })?;
        let ui = Ui::new(root, options.quiet);
        if let Loaded::Quarantined(aside) = &loaded {
            ui.line(&format!(
                "warning: .ralph/state.json did not parse; moved it to {} and started fresh",
                aside.display()
            ));
        }
        let repo = open_repo(root, settings, state.base.as_deref())?;
        // A run killed mid-iteration leaves the agent's work uncommitted on
        // its branch: keep it before checking the tree is clean.
        if let (Some(task), Head::Branch(branch)) = (state.current_task.clone(), repo.head()?)
            && state.tasks.get(&task).and_then(|p| p.branch.as_deref()) == Some(branch.as_str())
            && let Ok(id) = TaskId::parse(&task)
        {
            repo.commit_leftovers(&branch, &id, state.iteration)?;
        }
        repo.preflight()?;
        let spec = Spec::new(&settings.agent, options.agent_cmd.as_deref(), None)?;
        let host = Host::from_process(root)?;
        agent::preflight(&spec, &host)?;
        state.run_id = run_id;
        state.started = now();
        state.iteration = 0;
        state.failures.clear();
        state.base = Some(repo.base().to_owned());
        let budgets = Budgets {
            max_iterations: if options.once {
                1
            } else {
                settings.max_iterations
            },
            max_iterations_per_task: settings.max_iterations_per_task,
            max_consecutive_failures: settings.max_consecutive_failures.max(1),
            no_progress_iterations: settings.no_progress_iterations.max(1),
            retry_backoff: settings.retry_backoff,
        };
        Ok(Engine {
            root: root.to_owned(),
            options,
            store,
            repo,
            triggers,
            spec,
            host,
            state_file,
            state,
            events: EventLog::open(root),
            ui,
            interrupted,
            budgets,
            started: Instant::now(),
            outcomes: Vec::new(),
            merged: 0,
        })
    }

    /// Runs the loop to its end and writes `result.json`.
    pub fn run(mut self) -> Result<RunResult, Error> {
        let queue = self.store.load()?;
        let counts = queue.counts();
        self.ui.line(&format!(
            "ralph: run {} on {}, agent {}, {} tasks ({} pending, {} active), max {} iterations",
            self.state.run_id,
            self.repo.base(),
            self.spec.label(),
            counts.active_total(),
            counts.with(Status::Pending),
            counts.with(Status::Active) + counts.with(Status::Ready),
            self.budgets.max_iterations,
        ));
        self.record(None, "run", "started", "run started", Map::new())?;
        let ending = self.main_loop();
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
            self.verify_run()?
        } else {
            Vec::new()
        };
        if self.interrupted.load(Ordering::SeqCst) {
            return self.finish(
                RunStatus::Interrupted,
                "interrupted by a signal",
                verify_run,
            );
        }
        let status = if verify_run.iter().any(|c| !c.passed) {
            RunStatus::Blocked
        } else {
            status
        };
        let reason = if verify_run.iter().any(|c| !c.passed) {
            "the queue drained but a verify.run command failed".to_owned()
        } else {
            reason
        };
        self.finish(status, &reason, verify_run)
    }

    fn main_loop(&mut self) -> Result<(RunStatus, String), Error> {
        self.recover_archived_task()?;
        loop {
            let queue = match self.store.load() {
                Ok(queue) => queue,
                Err(err) => {
                    // The agent broke the file: its task carries on, the error as evidence.
                    let Some(id) = self
                        .state
                        .current_task
                        .as_deref()
                        .and_then(|t| TaskId::parse(t).ok())
                    else {
                        return Err(err.into());
                    };
                    if let Some(end) = self.stop_or_interrupt()? {
                        return Ok(end);
                    }
                    if self.state.iteration >= self.budgets.max_iterations {
                        return Err(err.into());
                    }
                    if let Some(end) = self.iterate(&id, None)? {
                        return Ok(end);
                    }
                    continue;
                }
            };
            let seen = Before {
                interrupted: self.interrupted.load(Ordering::SeqCst),
                stop_requested: self.root.join(STOP_FILE).exists(),
                iterations: self.state.iteration,
                complete: first_complete(&queue).map(|task| self.candidate(task)),
                next: queue.next().map(|task| self.candidate(task)),
                ready_is_reviewed: self.triggers.read_variable("task_marked_ready_to_complete"),
            };
            match decide::before(&seen, &self.budgets) {
                Step::End(ending) => return self.ending(ending, &queue),
                Step::Finish(id) => self.finish_task(&id, &queue)?,
                Step::Block(id, reason) => self.block(&id, &reason)?,
                Step::Iterate(id) => {
                    let task = queue.get(id.as_str()).cloned();
                    if let Some(ending) = self.iterate(&id, task.as_ref())? {
                        return Ok(ending);
                    }
                }
            }
        }
    }

    fn candidate(&self, task: &Task) -> Candidate {
        Candidate {
            id: task.id.clone(),
            status: task.status,
            iterations: self.progress(task.id.as_str()).iterations,
        }
    }

    fn progress(&self, id: &str) -> TaskProgress {
        self.state.tasks.get(id).cloned().unwrap_or_default()
    }

    fn ending(&mut self, ending: Ending, queue: &Queue) -> Result<(RunStatus, String), Error> {
        let counts = queue.counts();
        Ok(match ending {
            Ending::Interrupted => (RunStatus::Interrupted, "interrupted by a signal".to_owned()),
            Ending::Stopped => {
                let _ = std::fs::remove_file(self.root.join(STOP_FILE));
                (
                    RunStatus::Stopped,
                    format!("{STOP_FILE} asked the run to stop"),
                )
            }
            Ending::BudgetSpent if self.options.once => {
                (RunStatus::Stopped, "--once: one iteration done".to_owned())
            }
            Ending::BudgetSpent => (
                RunStatus::BudgetExhausted,
                format!(
                    "max_iterations ({}) spent with {} tasks left",
                    self.budgets.max_iterations,
                    counts.active_total()
                ),
            ),
            Ending::Drained if counts.with(Status::Blocked) > 0 || counts.active_total() > 0 => (
                RunStatus::Blocked,
                format!(
                    "no workable task left: {} blocked, {} waiting on them",
                    counts.with(Status::Blocked),
                    counts.active_total() - counts.with(Status::Blocked)
                ),
            ),
            Ending::Drained => (RunStatus::Drained, "the queue is drained".to_owned()),
        })
    }

    /// `.stop` or a signal, checked between the steps of a long wait.
    fn stop_or_interrupt(&self) -> Result<Option<(RunStatus, String)>, Error> {
        if self.interrupted.load(Ordering::SeqCst) {
            return Ok(Some((
                RunStatus::Interrupted,
                "interrupted by a signal".to_owned(),
            )));
        }
        if self.root.join(STOP_FILE).exists() {
            let _ = std::fs::remove_file(self.root.join(STOP_FILE));
            return Ok(Some((
                RunStatus::Stopped,
                format!("{STOP_FILE} asked the run to stop"),
            )));
        }
        Ok(None)
    }

    /// Waits `duration`, waking for `.stop` and signals.
    fn wait(&self, duration: Duration) -> Result<Option<(RunStatus, String)>, Error> {
        let until = Instant::now() + duration;
        loop {
            if let Some(end) = self.stop_or_interrupt()? {
                return Ok(Some(end));
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            std::thread::sleep(left.min(Duration::from_millis(100)));
        }
    }

    /// One iteration on task `id`; `task` is `None` when `tasks.jsonl` does
    /// not parse (the agent broke it last time).
    fn iterate(
        &mut self,
        id: &TaskId,
        task: Option<&Task>,
    ) -> Result<Option<(RunStatus, String)>, Error> {
        // A claim makes a pending task active; the iteration sees it so.
        let claimed_task = task.map(|t| Task {
            status: if t.status == Status::Pending {
                Status::Active
            } else {
                t.status
            },
            ..t.clone()
        });
        let title = task.map_or_else(
            || self.progress(id.as_str()).title.unwrap_or_default(),
            |t| t.title.clone(),
        );
        if task.is_some_and(|t| t.status == Status::Pending) {
            self.store.apply(
                &Patch::SetStatus {
                    id: id.clone(),
                    status: Status::Active,
                },
                &now(),
            )?;
        }
        let task = claimed_task.as_ref();
        let claim = self.repo.claim(id, &title)?;
        let before_tip = self.repo.branch_tip(&claim.branch)?;
        let progress = self.state.tasks.entry(id.to_string()).or_default();
        progress.branch = Some(claim.branch.clone());
        progress.title = Some(title.clone());
        if progress.claimed.is_none() {
            progress.claimed = Some(now());
        }
        self.state.current_task = Some(id.to_string());
        if !claim.resumed {
            self.record(
                Some(id),
                "claim",
                "ok",
                &format!("created branch {}", claim.branch),
                Map::new(),
            )?;
        }

        // Choose the role and build the prompt.
        let fallback;
        let task: &Task = match task {
            Some(task) => task,
            None => {
                // tasks.jsonl is broken: the task as the state remembers it.
                fallback = Task {
                    id: id.clone(),
                    title: title.clone(),
                    status: Status::Active,
                    leaf: true,
                    deps: Vec::new(),
                    body: None,
                    blocked_reason: None,
                };
                &fallback
            }
        };
        let measures = Measures::of(&self.repo, task, Some(&claim.branch))?;
        let trigger_context =
            context::trigger_context(task, &self.state, self.state.iteration, &measures);
        let decision = self.triggers.choose(&trigger_context)?;
        let fired = decision.fired.clone();
        let queue = self.store.load().unwrap_or_else(|_| Queue::empty());
        let variables = context::prompt_context(
            &queue,
            task,
            &decision,
            &self.state,
            self.state.iteration,
            Some(&claim.branch),
        );
        let text = prompt::build(&self.root, &decision, &variables)?;

        // Count the iteration before the agent runs, so a crash cannot redo it for free.
        self.state.iteration += 1;
        self.state.total_iterations += 1;
        let iteration = self.state.iteration;
        let role = fired.as_ref().map(|f| f.role.clone());
        if let Some(role) = &role {
            self.state
                .roles
                .insert(role.clone(), self.state.total_iterations);
        }
        self.state.role = role.clone();
        self.state.phase = "agent".to_owned();
        let entry = self.state.tasks.entry(id.to_string()).or_default();
        entry.iterations += 1;
        let task_iteration = entry.iterations;
        let name = format!("{iteration}-{}", id);
        let prompt_file = PathBuf::from(format!(".ralph/prompts/{name}.md"));
        let log_file = self.root.join(format!(".ralph/logs/{name}.log"));
        self.save_file(&prompt_file, text.as_bytes())?;
        self.keep_valid_queue()?;
        self.save_state()?;
        let spec = Spec::new(
            &self.options.settings.agent,
            self.options.agent_cmd.as_deref(),
            fired.as_ref().and_then(|f| f.model.as_deref()),
        )?;
        let why = match &fired {
            Some(f) => format!("role {} (trigger {}: {})", f.role, f.number, f.condition),
            None => "no role".to_owned(),
        };
        self.ui.status(&format!(
            "[{iteration}/{}] {id} {} · {why}",
            self.budgets.max_iterations,
            crate::text::safe(&title)
        ));
        let context = agent::Context {
            task_id: id.to_string(),
            task_title: title.clone(),
            role: role.clone(),
            iteration,
            task_iteration,
            branch: claim.branch.clone(),
            run_id: self.state.run_id.clone(),
        };
        let request = agent::Request {
            context: &context,
            prompt: &text,
            prompt_file: &prompt_file,
            log_file: &log_file,
            limits: Limits {
                timeout: self.options.settings.agent.timeout,
                grace: self.options.kill_grace,
                log_bytes: Limits::DEFAULT_LOG_BYTES,
            },
            cancel: Some(self.interrupted),
            echo: if self.options.stream {
                Echo::Stderr
            } else {
                Echo::Off
            },
        };
        let base_before = self.repo.branch_tip(self.repo.base())?;
        let outcome = agent::run(&spec, &self.host, &request)?;

        // What the iteration left behind.
        self.state.phase = "judge".to_owned();
        let leftovers = self.repo.commit_leftovers(&claim.branch, id, iteration)?;
        let mut left_branch = Vec::new();
        match &leftovers.left_branch {
            Some(left) if !left.returned => {
                return Err(RunError::Stranded {
                    head: left.found.to_string(),
                    paths: left.dirty.clone(),
                }
                .into());
            }
            Some(left) => left_branch.push(format!(
                "the agent left the task branch (HEAD was on {}); ralph checked {} out again{}",
                left.found,
                claim.branch,
                if left.fast_forwarded {
                    " and took the commits made there"
                } else {
                    ""
                }
            )),
            None => {}
        }
        // Commits on the base are this iteration's doing only when the base
        // moved during it; older ones were reported when they appeared.
        let base_moved = self.repo.branch_tip(self.repo.base())? != base_before;
        if base_moved && !leftovers.base_commits.is_empty() {
            left_branch.push(format!(
                "the agent committed on the base branch {} ({}); ralph does not rewrite the base, so undo it by hand if it was wrong",
                self.repo.base(),
                leftovers
                    .base_commits
                    .iter()
                    .map(|c| c.subject.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
        let left_branch = (!left_branch.is_empty()).then(|| left_branch.join("; "));
        let after_tip = self.repo.branch_tip(&claim.branch)?;
        let task_after = match self.store.load() {
            Err(err) => TaskAfter::InvalidQueue(err.to_string()),
            Ok(queue) => match queue.get(id.as_str()) {
                Some(now_task) if !queue.done.contains(id.as_str()) => TaskAfter::Present {
                    status: now_task.status,
                    leaf: now_task.leaf,
                },
                _ => TaskAfter::Gone {
                    archived: queue.done.contains(id.as_str()),
                },
            },
        };
        let status_changed = match &task_after {
            TaskAfter::Present { status, leaf } => *status != task.status || *leaf != task.leaf,
            _ => true,
        };
        let progressed = after_tip != before_tip || status_changed;
        let agent_end = match (&outcome.failure, outcome.interrupted) {
            (_, true) => AgentEnd::Interrupted,
            (None, false) => AgentEnd::Ok,
            (Some(failure), false) => match failure.class {
                FailureClass::Auth => AgentEnd::AuthFailed(failure.reason.clone()),
                FailureClass::UsageLimit => AgentEnd::UsageLimit {
                    reset_in: failure
                        .resets_at
                        .and_then(|at| (at - chrono::Utc::now()).to_std().ok()),
                },
                class => AgentEnd::Failed {
                    class: class.as_str().to_owned(),
                    summary: failure.reason.clone(),
                },
            },
        };
        let progress = self.progress(id.as_str());
        let seen = After {
            agent: agent_end,
            task: task_after.clone(),
            left_branch,
            progressed,
            no_progress_before: progress.no_progress,
            failures_before: progress.consecutive_failures,
            ready_is_reviewed: self.triggers.read_variable("task_marked_ready_to_complete"),
        };
        let verdict = decide::after(&seen, &self.budgets);

        // The receipt.
        let mut receipt = Map::new();
        receipt.insert("trigger".into(), json!(fired.as_ref().map(|f| f.number)));
        receipt.insert("agent".into(), json!(spec.label()));
        receipt.insert("model".into(), json!(spec.model()));
        receipt.insert("prompt_bytes".into(), json!(text.len()));
        receipt.insert(
            "duration_ms".into(),
            json!(outcome.duration.as_millis() as u64),
        );
        receipt.insert("exit".into(), json!(outcome.status.to_string()));
        receipt.insert("output_bytes".into(), json!(outcome.output_bytes));
        receipt.insert(
            "log".into(),
            json!(log_file.strip_prefix(&self.root).unwrap_or(&log_file)),
        );
        receipt.insert(
            "branch_commits".into(),
            json!(
                self.repo
                    .commits_since_base(&claim.branch)
                    .map(|c| c.len())
                    .unwrap_or(0)
            ),
        );
        receipt.insert(
            "files_changed".into(),
            json!(
                self.repo
                    .files_changed(&claim.branch)
                    .map(|f| f.len())
                    .unwrap_or(0)
            ),
        );
        if let Some(usage) = &outcome.usage {
            receipt.insert("input_tokens".into(), json!(usage.input_tokens));
            receipt.insert("output_tokens".into(), json!(usage.output_tokens));
            receipt.insert("cost_usd".into(), json!(usage.cost_usd));
        }
        let (class, result_word) = match &verdict {
            Verdict::Failed { class, .. } => (Some(class.clone()), class.clone()),
            Verdict::AuthFailed(_) => (Some("auth".to_owned()), "auth".to_owned()),
            Verdict::Wait(_) => (Some("usage_limit".to_owned()), "usage_limit".to_owned()),
            Verdict::Interrupted => (None, "interrupted".to_owned()),
            _ => (None, after_word(&task_after)),
        };
        receipt.insert("class".into(), json!(class));
        self.record(
            Some(id),
            "iteration",
            class.as_deref().unwrap_or("ok"),
            &format!("{} in {}", outcome.status, seconds(outcome.duration)),
            receipt,
        )?;
        self.ui.log(
            &now(),
            &format!(
                "#{iteration} {id} [{}] {} {} -> {result_word}",
                role.as_deref().unwrap_or("-"),
                outcome.status,
                seconds(outcome.duration),
            ),
        );
        if let Some(class) = &class {
            *self.state.failures.entry(class.clone()).or_default() += 1;
        }

        // Act on the verdict.
        let entry = self.state.tasks.entry(id.to_string()).or_default();
        match verdict {
            Verdict::Interrupted => {
                self.save_state()?;
                return Ok(Some((
                    RunStatus::Interrupted,
                    "interrupted by a signal".to_owned(),
                )));
            }
            Verdict::AuthFailed(reason) => {
                self.save_state()?;
                return Ok(Some((
                    RunStatus::Failed,
                    format!(
                        "the agent is not authenticated: {reason}; {} and run again",
                        self.spec
                            .dialect()
                            .map_or("log the agent in", |preset| preset.login_hint())
                    ),
                )));
            }
            Verdict::Wait(duration) => {
                self.save_state()?;
                self.ui.line(&format!(
                    "usage limit: waiting {} before retrying",
                    seconds(duration)
                ));
                return self.wait(duration);
            }
            Verdict::Failed {
                class,
                summary,
                backoff,
                block,
            } => {
                entry.consecutive_failures += 1;
                entry.last_failed = true;
                // A stall counted as a failure starts the count again.
                entry.no_progress = if class == "no_progress" || progressed {
                    0
                } else {
                    entry.no_progress + 1
                };
                entry.evidence = Some(Evidence {
                    class: class.clone(),
                    summary: format!(
                        "{summary} (exit: {}, log: {})",
                        outcome.status,
                        log_file
                            .strip_prefix(&self.root)
                            .unwrap_or(&log_file)
                            .display()
                    ),
                    output_tail: Some(outcome.tail.clone()).filter(|t| !t.is_empty()),
                });
                self.save_state()?;
                if let Some(reason) = block {
                    // A task cannot be marked blocked in a file that does not
                    // parse: then the run ends with the file's error.
                    self.store.load()?;
                    self.block(id, &reason)?;
                    return Ok(None);
                }
                self.ui.line(&format!(
                    "{id}: {class}: {summary}; retrying in {}",
                    ShowDuration(backoff)
                ));
                return self.wait(backoff);
            }
            _ => {
                entry.consecutive_failures = 0;
                entry.last_failed = false;
                entry.evidence = None;
                entry.no_progress = if progressed { 0 } else { entry.no_progress + 1 };
            }
        }
        self.save_state()?;
        match verdict {
            Verdict::Finish => {
                let queue = self.store.load()?;
                self.finish_task(id, &queue)?;
            }
            Verdict::MergeSplit => self.merge_split(id)?,
            Verdict::Blocked => {
                self.repo
                    .commit_queue_files(&format!("ralph: {id} blocked"))?;
                self.outcome(id, "blocked", None, "the agent marked the task blocked");
                self.state.current_task = None;
                self.save_state()?;
            }
            Verdict::ArchivedByAgent => self.merge_archived(id, &title)?,
            Verdict::Vanished => {
                self.repo.checkout_base()?;
                self.outcome(
                    id,
                    "vanished",
                    None,
                    "the task is in neither tasks.jsonl nor tasks-done.jsonl; its branch is kept",
                );
                self.state.tasks.remove(id.as_str());
                self.state.current_task = None;
                self.save_state()?;
            }
            _ => {}
        }
        let pause = self.options.settings.pause_between_iterations;
        if !pause.is_zero() {
            return self.wait(pause);
        }
        Ok(None)
    }

    /// Verify, then squash-merge and archive task `id`.
    fn finish_task(&mut self, id: &TaskId, queue: &Queue) -> Result<(), Error> {
        let Some(task) = queue.get(id.as_str()).cloned() else {
            return Ok(());
        };
        let branch = match self.progress(id.as_str()).branch {
            Some(branch) if self.repo.branch_tip(&branch).is_ok() => Some(branch),
            _ => self.repo.find_task_branch(id, &task.title)?,
        };
        let Some(branch) = branch else {
            // Completed without a branch (marked by hand): archive and record it.
            let changes = self.store.apply(
                &Patch::Archive {
                    id: id.clone(),
                    commit: None,
                },
                &now(),
            )?;
            let message = git::squash_message_with(id, &task.title, &[], &completes(&changes));
            let commit = self.repo.commit_queue_files(&message)?;
            self.merged_task(
                id,
                commit.map(|c| c.to_string()),
                "archived; it had no branch",
            );
            return Ok(());
        };
        self.state.phase = "verify".to_owned();
        self.repo.claim(id, &task.title)?;
        for command in &self.options.settings.verify.task {
            let result = verify::run(
                command,
                &self.root,
                self.options.settings.agent.timeout,
                self.interrupted,
            )?;
            // A signal that stops the check is not the task's failure: the
            // task stays complete and the next run verifies it again.
            let interrupted = !result.passed && self.interrupted.load(Ordering::SeqCst);
            self.record(
                Some(id),
                "verify",
                match (result.passed, interrupted) {
                    (true, _) => "ok",
                    (false, true) => "interrupted",
                    (false, false) => "verify_failed",
                },
                &format!("{command}: {}", result.status),
                Map::new(),
            )?;
            if interrupted {
                return self.save_state();
            }
            if !result.passed {
                self.ui.log(
                    &now(),
                    &format!("{id}: verify failed: {command}: {}", result.status),
                );
                return self.task_failed(
                    id,
                    "verify_failed",
                    &format!("the verification command `{command}` failed ({}); the task is active again", result.status),
                    &result.output_tail,
                );
            }
        }
        self.state.phase = "merge".to_owned();
        match self.repo.preview_squash(&branch)? {
            SquashPreview::Conflict(paths) => self.task_failed(
                id,
                "merge_conflict",
                &format!(
                    "the branch conflicts with the base in {}; merge the base into the branch (`git merge {}`), resolve, commit, then mark the task complete again",
                    paths.join(", "),
                    self.repo.base()
                ),
                "",
            ),
            SquashPreview::Empty => {
                let tip = self.repo.preserve_and_delete_branch(&branch, id)?;
                let changes = self.store.apply(&Patch::Archive { id: id.clone(), commit: Some(tip.to_string()) }, &now())?;
                let message = git::squash_message_with(id, &task.title, &[], &completes(&changes));
                let commit = self.repo.commit_queue_files(&message)?;
                self.merged_task(id, commit.map(|c| c.to_string()), "nothing to merge; archived");
                Ok(())
            }
            SquashPreview::Clean => {
                let tip = self.repo.branch_tip(&branch)?;
                let changes = self.store.apply(&Patch::Archive { id: id.clone(), commit: Some(tip.to_string()) }, &now())?;
                self.state.phase = "squash".to_owned();
                self.save_state()?;
                match self.repo.squash_into_base_with(&branch, id, &task.title, &completes(&changes))? {
                    Squash::Merged(merged) => {
                        self.merged_task(id, Some(merged.commit.to_string()), &format!("squash-merged into {}", self.repo.base()));
                        Ok(())
                    }
                    Squash::Empty => {
                        self.repo.preserve_and_delete_branch(&branch, id)?;
                        let message = git::squash_message_with(id, &task.title, &[], &completes(&changes));
                        let commit = self.repo.commit_queue_files(&message)?;
                        self.merged_task(id, commit.map(|c| c.to_string()), "nothing to merge; archived");
                        Ok(())
                    }
                    Squash::Conflict(paths) => Err(RunError::Stranded { head: branch, paths }.into()),
                }
            }
        }
    }

    /// The agent archived the task itself: merge what its branch holds.
    fn merge_archived(&mut self, id: &TaskId, title: &str) -> Result<(), Error> {
        let Some(branch) = self.progress(id.as_str()).branch else {
            return Ok(());
        };
        let trailers = vec![format!("Completes: {id}")];
        let commit = match self
            .repo
            .squash_into_base_with(&branch, id, title, &trailers)?
        {
            Squash::Merged(merged) => Some(merged.commit.to_string()),
            Squash::Empty => {
                self.repo.preserve_and_delete_branch(&branch, id)?;
                self.repo
                    .commit_queue_files(&git::squash_message_with(id, title, &[], &trailers))?
                    .map(|c| c.to_string())
            }
            Squash::Conflict(paths) => {
                return Err(RunError::Stranded {
                    head: branch,
                    paths,
                }
                .into());
            }
        };
        self.merged_task(id, commit, "archived by the agent; its branch merged");
        Ok(())
    }

    /// A crash between archiving a task and squashing its branch leaves an
    /// archived task with a live branch: finish the squash.
    fn recover_archived_task(&mut self) -> Result<(), Error> {
        let Some(task) = self.state.current_task.clone() else {
            return Ok(());
        };
        let queue = self.store.load()?;
        if !queue.done.contains(&task) || queue.get(&task).is_some() {
            return Ok(());
        }
        let Ok(id) = TaskId::parse(&task) else {
            return Ok(());
        };
        let Some(branch) = self.progress(&task).branch else {
            return Ok(());
        };
        if self.repo.branch_tip(&branch).is_err() {
            // The squash landed; only the bookkeeping was lost.
            self.state.tasks.remove(&task);
            self.state.current_task = None;
            return self.save_state();
        }
        let title = queue
            .done
            .record(&task)
            .and_then(|r| r.get("title").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_default();
        self.ui.line(&format!(
            "{task}: archived but not merged (a crash?): merging its branch now"
        ));
        self.merge_archived(&id, &title)
    }

    /// The task became a container: merge its branch so far, go on with the children.
    fn merge_split(&mut self, id: &TaskId) -> Result<(), Error> {
        let queue = self.store.load()?;
        let Some(task) = queue.get(id.as_str()).cloned() else {
            return Ok(());
        };
        let children: Vec<String> = queue
            .children(id.as_str())
            .into_iter()
            .filter_map(|i| {
                queue.tasks.lines()[i]
                    .task
                    .as_ref()
                    .map(|t| t.id.to_string())
            })
            .collect();
        let Some(branch) = self.progress(id.as_str()).branch else {
            return Ok(());
        };
        let trailers = vec![format!("Split-into: {}", children.join(", "))];
        let commit = match self
            .repo
            .squash_into_base_with(&branch, id, &task.title, &trailers)?
        {
            Squash::Merged(merged) => Some(merged.commit.to_string()),
            Squash::Empty => {
                self.repo.preserve_and_delete_branch(&branch, id)?;
                None
            }
            Squash::Conflict(paths) => {
                return self.task_failed(
                    id,
                    "merge_conflict",
                    &format!(
                        "the split task's branch conflicts with the base in {}",
                        paths.join(", ")
                    ),
                    "",
                );
            }
        };
        let detail = format!(
            "split into {}; {}",
            children.join(", "),
            if commit.is_some() {
                "its work so far is merged"
            } else {
                "nothing to merge yet"
            }
        );
        self.ui.log(&now(), &format!("{id} {detail}"));
        self.record(Some(id), "split", "ok", &detail, Map::new())?;
        self.outcome(id, "split", commit, &detail);
        self.state.tasks.remove(id.as_str());
        self.state.current_task = None;
        self.save_state()
    }

    /// A failure outside the agent (verification, conflict): evidence for
    /// the next iteration, the task active again, blocked at the limit.
    fn task_failed(
        &mut self,
        id: &TaskId,
        class: &str,
        summary: &str,
        tail: &str,
    ) -> Result<(), Error> {
        *self.state.failures.entry(class.to_owned()).or_default() += 1;
        let entry = self.state.tasks.entry(id.to_string()).or_default();
        entry.consecutive_failures += 1;
        entry.last_failed = true;
        entry.evidence = Some(Evidence {
            class: class.to_owned(),
            summary: summary.to_owned(),
            output_tail: Some(tail.to_owned()).filter(|t| !t.is_empty()),
        });
        let failures = entry.consecutive_failures;
        self.save_state()?;
        self.record(Some(id), "finish", class, summary, Map::new())?;
        if failures >= self.budgets.max_consecutive_failures {
            return self.block(
                id,
                &format!("failed {failures} times in a row (last: {class}: {summary})"),
            );
        }
        self.store.apply(
            &Patch::SetStatus {
                id: id.clone(),
                status: Status::Active,
            },
            &now(),
        )?;
        Ok(())
    }

    fn block(&mut self, id: &TaskId, reason: &str) -> Result<(), Error> {
        self.store.apply(
            &Patch::Block {
                id: id.clone(),
                reason: reason.to_owned(),
            },
            &now(),
        )?;
        self.repo
            .commit_queue_files(&format!("ralph: {id} blocked\n\n{reason}\n"))?;
        self.ui.log(&now(), &format!("{id} blocked: {reason}"));
        self.record(Some(id), "block", "blocked", reason, Map::new())?;
        self.outcome(id, "blocked", None, reason);
        self.state.current_task = None;
        self.save_state()
    }

    fn merged_task(&mut self, id: &TaskId, commit: Option<String>, detail: &str) {
        self.merged += 1;
        self.ui.log(
            &now(),
            &format!(
                "{id} done: {detail}{}",
                commit
                    .as_deref()
                    .map(|c| format!(" ({})", &c[..c.len().min(10)]))
                    .unwrap_or_default()
            ),
        );
        let _ = self.record(Some(id), "merge", "ok", detail, Map::new());
        self.outcome(id, "merged", commit, detail);
        self.state.tasks.remove(id.as_str());
        self.state.current_task = None;
        let _ = self.save_state();
    }

    fn outcome(&mut self, id: &TaskId, outcome: &str, commit: Option<String>, detail: &str) {
        self.outcomes.push(TaskOutcome {
            task: id.to_string(),
            outcome: outcome.to_owned(),
            commit,
            detail: detail.to_owned(),
        });
    }

    fn verify_run(&mut self) -> Result<Vec<CommandResult>, Error> {
        let mut results = Vec::new();
        for command in &self.options.settings.verify.run {
            let result = verify::run(
                command,
                &self.root,
                self.options.settings.agent.timeout,
                self.interrupted,
            )?;
            self.record(
                None,
                "verify_run",
                if result.passed { "ok" } else { "failed" },
                &format!("{command}: {}", result.status),
                Map::new(),
            )?;
            results.push(result);
        }
        Ok(results)
    }

    fn finish(
        &mut self,
        status: RunStatus,
        reason: &str,
        verify_run: Vec<CommandResult>,
    ) -> Result<RunResult, Error> {
        self.state.phase = "ended".to_owned();
        let counts = self.store.load().map(|q| q.counts()).unwrap_or_default();
        let result = RunResult {
            status,
            reason: reason.to_owned(),
            run_id: self.state.run_id.clone(),
            started: self.state.started.clone(),
            ended: now(),
            iterations: self.state.iteration,
            merged: self.merged,
            blocked: counts.with(Status::Blocked),
            remaining: counts.active_total(),
            failures: self.state.failures.clone(),
            outcomes: std::mem::take(&mut self.outcomes),
            verify_run,
        };
        self.save_state()?;
        result.save(&self.root).map_err(|source| Error::Io {
            path: self.root.join(super::result::RESULT_FILE),
            source,
        })?;
        self.record(None, "run", status.as_str(), reason, Map::new())?;
        let failures: Vec<String> = result
            .failures
            .iter()
            .map(|(class, n)| format!("{class} {n}"))
            .collect();
        self.ui.summary(&format!(
            "ralph: {} — {}\n  tasks: {} done, {} blocked, {} left · iterations: {} · time: {} · failures: {}",
            status.as_str(),
            reason,
            result.merged,
            result.blocked,
            result.remaining,
            result.iterations,
            seconds(self.started.elapsed()),
            if failures.is_empty() { "none".to_owned() } else { failures.join(", ") },
        ));
        Ok(result)
    }

    fn record(
        &self,
        task: Option<&TaskId>,
        phase: &str,
        status: &str,
        detail: &str,
        extra: Map<String, Value>,
    ) -> Result<(), Error> {
        let event = Event {
            timestamp: now(),
            run_id: self.state.run_id.clone(),
            task_id: task.map(|t| t.to_string()),
            iteration: self.state.iteration,
            role: self.state.role.clone(),
            phase: phase.to_owned(),
            status: status.to_owned(),
            detail: detail.to_owned(),
            extra,
        };
        self.events.append(&event).map_err(|source| Error::Io {
            path: self.root.join(crate::events::EVENTS_FILE),
            source,
        })
    }

    fn save_state(&mut self) -> Result<(), Error> {
        self.state.updated = now();
        self.state_file
            .save(&self.state)
            .map_err(|source| Error::Io {
                path: self.root.join(crate::state::STATE_FILE),
                source,
            })
    }

    fn save_file(&self, relative: &Path, bytes: &[u8]) -> Result<(), Error> {
        let path = self.root.join(relative);
        let io = |source| Error::Io {
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        crate::files::write_atomic(&path, bytes).map_err(io)
    }

    /// Keeps the queue's last valid bytes in `.ralph/`, so an agent that
    /// breaks `tasks.jsonl` cannot lose them. A file that does not parse
    /// (the agent broke it last time) leaves the copy alone: it is the
    /// copy the agent needs to repair it.
    fn keep_valid_queue(&self) -> Result<(), Error> {
        if self.store.load().is_err() {
            return Ok(());
        }
        let bytes =
            crate::files::read_or_empty(&self.store.tasks_path()).map_err(|source| Error::Io {
                path: self.store.tasks_path(),
                source,
            })?;
        self.save_file(Path::new(VALID_QUEUE), &bytes)
    }
}

/// The last valid `tasks.jsonl`, kept before each iteration.
pub const VALID_QUEUE: &str = ".ralph/tasks.jsonl.valid";

/// Opens the project's repository with the settings' base and prefix; a
/// run resumed on a task branch uses the base it recorded.
pub fn open_repo(
    root: &Path,
    settings: &Settings,
    recorded_base: Option<&str>,
) -> Result<Repo, Error> {
    let options = git::Options {
        base_branch: settings.base_branch.clone(),
        branch_prefix: settings.branch_prefix.clone(),
    };
    match Repo::open(root, &options) {
        Err(git::Error::OnTaskBranch { .. })
            if settings.base_branch.is_none() && recorded_base.is_some() =>
        {
            let options = git::Options {
                base_branch: recorded_base.map(str::to_owned),
                ..options
            };
            Ok(Repo::open(root, &options)?)
        }
        other => Ok(other?),
    }
}

/// The first leaf marked complete and not archived, outside blocked subtrees.
fn first_complete(queue: &Queue) -> Option<&Task> {
    queue.tasks.tasks().map(|(_, task)| task).find(|task| {
        task.leaf
            && task.status == Status::Complete
            && !queue.done.contains(task.id.as_str())
            && std::iter::successors(task.id.parent(), TaskId::parent).all(|a| {
                queue
                    .get(a.as_str())
                    .is_none_or(|t| t.status != Status::Blocked)
            })
    })
}

/// `Completes:` trailers for every task an archive moved.
fn completes(changes: &[crate::task::Change]) -> Vec<String> {
    changes
        .iter()
        .filter_map(|change| match change {
            crate::task::Change::Archived(id) | crate::task::Change::AlreadyArchived(id) => {
                Some(format!("Completes: {id}"))
            }
            _ => None,
        })
        .collect()
}

fn after_word(task: &TaskAfter) -> String {
    match task {
        TaskAfter::Present { leaf: false, .. } => "split".to_owned(),
        TaskAfter::Present { status, .. } => status.to_string(),
        TaskAfter::Gone { archived: true } => "archived".to_owned(),
        TaskAfter::Gone { archived: false } => "vanished".to_owned(),
        TaskAfter::InvalidQueue(_) => "invalid_queue".to_owned(),
    }
}

/// A duration for people: `0.4s`, `12.0s`, `3m05s`.
fn seconds(duration: Duration) -> String {
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

/// What the next iteration would do, for `ralph run --dry-run`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// The task, if there is one to work on.
    pub task: Option<String>,
    /// Its title.
    pub title: String,
    /// Its branch (existing, or the name it would get).
    pub branch: Option<String>,
    /// The role the triggers pick.
    pub role: Option<String>,
    /// The role and the trigger that picked it, in words.
    pub role_why: String,
    /// The role's model override.
    pub model: Option<String>,
    /// The prompt's size.
    pub prompt_bytes: usize,
    /// The agent's command line.
    pub argv: Vec<String>,
}

/// Works out the next iteration without running anything or writing a file.
pub fn plan(root: &Path, options: &RunOptions) -> Result<Plan, Error> {
    let triggers = roles::load(root)?;
    let queue = Store::open(root).load()?;
    let state = read_state(root);
    let Some(task) = first_complete(&queue).or_else(|| queue.next()) else {
        return Ok(Plan::default());
    };
    let repo = open_repo(root, &options.settings, state.base.as_deref()).ok();
    let measures = match &repo {
        Some(repo) => Measures::of(repo, task, None)?,
        None => Measures::default(),
    };
    let branch = measures.branch.clone().unwrap_or_else(|| {
        git::branch_name(&options.settings.branch_prefix, &task.id, &task.title)
    });
    let decision = triggers.choose(&context::trigger_context(task, &state, 0, &measures))?;
    let variables = context::prompt_context(&queue, task, &decision, &state, 0, Some(&branch));
    let text = prompt::build(root, &decision, &variables)?;
    let model = decision.fired.as_ref().and_then(|f| f.model.clone());
    let spec = Spec::new(
        &options.settings.agent,
        options.agent_cmd.as_deref(),
        model.as_deref(),
    )?;
    let prompt_file = root.join(format!(".ralph/prompts/1-{}.md", task.id));
    let invocation = spec.invocation(&prompt_file, &text)?;
    let mut argv = vec![invocation.program.clone()];
    argv.extend(
        invocation
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned()),
    );
    Ok(Plan {
        task: Some(task.id.to_string()),
        title: task.title.clone(),
        branch: Some(branch),
        role: decision.fired.as_ref().map(|f| f.role.clone()),
        role_why: match &decision.fired {
            Some(f) => format!("{} (trigger {}: {})", f.role, f.number, f.condition),
            None => "none (no trigger is true)".to_owned(),
        },
        model,
        prompt_bytes: text.len(),
        argv,
    })
}

/// The state as saved, without moving a corrupt file aside (read-only callers).
pub fn read_state(root: &Path) -> State {
    let bytes =
        crate::files::read_or_empty(&root.join(crate::state::STATE_FILE)).unwrap_or_default();
    serde_json::from_slice(&bytes).unwrap_or_default()
}
