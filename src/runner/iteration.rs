//! One iteration: claim the task, pick the role, compose the prompt, run
//! the agent, see what it left behind, judge it and act on the verdict.

use crate::paths::Paths;
use std::path::PathBuf;

use serde_json::{Map, json};

use crate::events::fields;

use super::RunError;
use super::context::{self, Measures};
use super::decide::{self, After, AgentEnd, Consequence, Next, TaskAfter};
use super::worker::{Worker, iteration_files, now, seconds};
use crate::agent::{self, Echo, FailureClass, Limits, Outcome};
use crate::config::ShowDuration;
use crate::error::Error;
use crate::git::CommitId;
use crate::prompt::{self, Evidence};
use crate::result::{RunStatus, TaskEnd};
use crate::roles::Fired;
use crate::state::Phase;
use crate::state::WaitReason;
use crate::task::{Known, Patch, Queue, Status, Task, TaskId};

/// An iteration as prepared before the agent runs.
struct Turn {
    id: TaskId,
    /// The task as the agent sees it (claimed: active).
    task: Task,
    branch: String,
    /// The branch tip before the agent ran.
    tip_before: CommitId,
    /// The base's tip before the agent ran.
    base_before: CommitId,
    /// The stash's size before the agent ran.
    stashes_before: usize,
    /// The queue files as the watch copied them before the agent ran.
    queue_before: Known,
    /// Verdicts given on the task before the agent ran.
    reviews_before: usize,
    iteration: u64,
    task_iteration: u64,
    fired: Option<Fired>,
    prompt: String,
    prompt_file: PathBuf,
    log_file: PathBuf,
}

impl Turn {
    fn role(&self) -> Option<String> {
        self.fired.as_ref().map(|f| f.role.clone())
    }

    /// The model the role asks for, if any.
    fn model(&self) -> Option<&str> {
        self.fired.as_ref().and_then(|f| f.model.as_deref())
    }
}

impl Worker<'_> {
    /// One iteration on task `id`; `task` is `None` when `tasks.jsonl` does
    /// not parse (the agent broke it last time).
    pub(super) fn iterate(&mut self, id: &TaskId, task: Option<&Task>) -> Result<Next, Error> {
        let n = self.state.iteration + 1;
        let _span = tracing::debug_span!("iteration", n, task = id.as_str()).entered();
        // A branch that changes what agents may not change is not checked
        // out again (the run's next start would read it) until a person
        // lets the change through.
        if let Some(task) = task
            && let Some(branch) = self.repo.find_task_branch(id, &task.title)?
            && self.held_for_approval(id, &branch, Status::Active)?
        {
            return Ok(None);
        }
        if let Some(switch) = self.fallback.back(&mut self.agent) {
            self.came_back(&switch)?;
        }
        let turn = self.begin(id, task)?;
        let judged = match self.run_agent(&turn) {
            Ok(outcome) => {
                self.state.phase = Phase::Judge;
                self.observe(&turn, &outcome).map(|seen| (outcome, seen))
            }
            Err(err) => Err(err),
        };
        // The iteration's time counts for `max_task_minutes`, also when
        // ralph cannot go on (saved with the state below, whatever the
        // verdict).
        let ended = crate::clock::now_utc();
        if let Some(progress) = self.state.tasks.get_mut(id.as_str()) {
            progress.end_iteration(ended, None);
        }
        let (outcome, seen) = match judged {
            Ok(judged) => judged,
            Err(err) => {
                // The error is what the person needs to see.
                let _ = self.save_state();
                return Err(err);
            }
        };
        let verdict = decide::after(&seen, &self.budgets);
        self.receipt(&turn, &outcome, &verdict, &seen.task)?;
        self.act(&turn, &outcome, verdict, seen.progressed)
    }

    /// Claims the task, picks the role, composes and saves the prompt, and
    /// counts the iteration (before the agent runs, so a crash cannot redo
    /// it for free).
    fn begin(&mut self, id: &TaskId, task: Option<&Task>) -> Result<Turn, Error> {
        let title = task.map_or_else(
            || self.state.progress(id.as_str()).title.unwrap_or_default(),
            |t| t.title.to_string(),
        );
        let task = match task {
            Some(task) => {
                let mut task = task.clone();
                if task.status == Status::Pending {
                    let active = Patch::SetStatus {
                        id: id.clone(),
                        status: Status::Active,
                    };
                    self.store.apply(&active, &now())?;
                    crate::fault::crash_at("after_claim");
                    task.status = Status::Active;
                }
                task
            }
            // tasks.jsonl is broken: the task as the state remembers it.
            None => Task {
                id: id.clone(),
                title: title.as_str().into(),
                status: Status::Active,
                leaf: true,
                deps: Vec::new(),
            },
        };
        let claim = match self.clean.take() {
            Some(clean) => self.repo.claim_clean(id, &title, clean)?,
            None => self.repo.claim(id, &title)?,
        };
        crate::fault::crash_at("after_branch");
        self.repo.keep_resume_point(&claim.branch, id)?;
        let progress = self.state.tasks.entry(id.to_string()).or_default();
        progress.branch = Some(claim.branch.clone());
        progress.title = Some(title.clone());
        if progress.claimed.is_none() {
            progress.claimed = Some(now());
        }
        self.state.current_task = Some(id.to_string());
        if !claim.resumed {
            let detail = format!("created branch {}", claim.branch);
            self.record_claim(id, &detail, Map::new())?;
        }

        // The run's counts and role history, as the triggers read them.
        self.seat.load_counts(&mut self.state);
        let measures = Measures::of(&self.repo, &task, Some(&claim.branch))?;
        let queue = self.store.load().unwrap_or_else(|_| Queue::empty());
        let trigger_context = context::trigger_context(
            &self.paths,
            &queue,
            &task,
            &self.state,
            self.state.iteration,
            &measures,
        );
        let mut decision = self.triggers.choose(&trigger_context)?;
        self.review_every(&mut decision, &queue, &task);
        let mut variables = context::prompt_context(
            &self.paths,
            &queue,
            &task,
            &decision,
            &self.state,
            self.state.iteration,
            Some(&claim.branch),
        );
        // What the prompt shows of the run, when the task is a final review.
        let scope = self.seat.scope(&self.state);
        variables.review = context::review_view(&self.repo, &queue, &task, scope.as_ref())?;
        let text = prompt::build(&self.paths, &decision, &variables)?;
        let fired = decision.fired;

        let role = fired.as_ref().map(|f| f.role.as_str());
        self.seat.count(&mut self.state, role);
        self.state.role = fired.as_ref().map(|f| f.role.clone());
        self.state.phase = Phase::Agent;
        let entry = self.state.tasks.entry(id.to_string()).or_default();
        entry.iterations += 1;
        entry.start_iteration(crate::clock::now_utc());
        let task_iteration = entry.iterations;
        let (prompt_file, log_file) = iteration_files(self.state.total_iterations, id);
        // Prompts and logs are the project's, a worker's too: they outlive
        // its worktree.
        let log_file = self.paths.project().join(log_file);
        super::record::save_project_file(&self.paths, &prompt_file, text.as_bytes())?;
        self.save_state()?;
        // From here until `observe`, queue writes also update ralph's copies.
        // A pooled worker's queue files are links git cannot revert: no
        // watch of its own (its pool watches the archive for all).
        let queue_before = match self.seat.pooled() {
            None => self.store.watch()?,
            Some(_) => Known::default(),
        };
        Ok(Turn {
            id: id.clone(),
            task,
            stashes_before: self.repo.stashes()?.len(),
            queue_before,
            reviews_before: crate::notes::reviews(
                self.paths.project(),
                &self.paths.reviews(id.as_str()),
            )
            .len(),
            tip_before: self.repo.branch_tip(&claim.branch)?,
            base_before: self.repo.branch_tip(self.repo.base())?,
            branch: claim.branch,
            iteration: self.state.iteration,
            task_iteration,
            fired,
            prompt: text,
            prompt_file,
            log_file,
        })
    }

    fn run_agent(&mut self, turn: &Turn) -> Result<Outcome, Error> {
        let why = match &turn.fired {
            Some(f) => format!("role {} (trigger {}: {})", f.role, f.number, f.condition),
            None => "no role".to_owned(),
        };
        self.ui.status(&format!(
            "[{}/{}] {} {} · {why} · last: {}",
            turn.iteration,
            self.budgets.max_iterations,
            turn.id,
            crate::text::safe(&turn.task.title),
            self.last_result.as_deref().unwrap_or("-"),
        ));
        let context = agent::Context {
            task_id: turn.id.to_string(),
            task_title: turn.task.title.to_string(),
            role: turn.role(),
            iteration: turn.iteration,
            task_iteration: turn.task_iteration,
            branch: turn.branch.clone(),
            run_id: self.state.run_id.clone(),
            worker: self.seat.number(),
        };
        let group_file = self.paths.agent_group();
        // What a structured backend reports while the turn runs becomes
        // events at once (`ralph status` shows the last one).
        let events = &self.events;
        let event = crate::events::Event {
            run_id: self.state.run_id.clone(),
            task_id: Some(turn.id.to_string()),
            iteration: turn.iteration,
            role: turn.role(),
            phase: "agent".to_owned(),
            extra: self
                .seat
                .number()
                .map(|worker| [("worker".to_owned(), json!(worker))].into_iter().collect())
                .unwrap_or_default(),
            ..crate::events::Event::default()
        };
        let activity = move |kind: &str, text: &str| {
            let event = crate::events::Event {
                timestamp: now(),
                status: kind.to_owned(),
                detail: text.to_owned(),
                ..event.clone()
            };
            let _ = events.append(&event);
        };
        let confinement = self.confinement(turn.iteration)?;
        let request = agent::Request {
            context: &context,
            prompt: &turn.prompt,
            prompt_file: &turn.prompt_file,
            log_file: &turn.log_file,
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
            group_file: Some(&group_file),
            work_dir: (self.paths.root() != self.paths.project()).then(|| self.paths.root()),
            model: turn.model(),
            activity: Some(&activity),
            confinement: confinement.as_ref(),
        };
        let outcome = self.agent.iterate(&request);
        if let Some(confinement) = &confinement {
            let _ = std::fs::remove_dir_all(&confinement.tmp);
        }
        Ok(outcome?)
    }

    /// The confinement of this iteration's agent, its private temporary
    /// folder made; `None` when the run's agents are not confined.
    fn confinement(&self, iteration: u64) -> Result<Option<agent::Confinement>, Error> {
        let tag = format!("{}-{iteration}", self.seat.number().unwrap_or(0));
        let protected = self.protected();
        super::confine::confinement(
            &self.options.sandbox,
            &self.options.settings.sandbox,
            &self.paths,
            self.checkout(&protected),
            &tag,
            super::confine::preset_of(&self.options.settings, self.options.agent_cmd.as_deref()),
        )
    }

    /// What the iteration left behind: leftovers committed, the branch
    /// checked out again, the queue re-read.
    fn observe(&mut self, turn: &Turn, outcome: &Outcome) -> Result<After, Error> {
        // Before ralph writes or commits anything the agent may have
        // turned into a link.
        super::check_own_files(&self.paths)?;
        let id = &turn.id;
        let mut evidence = Vec::new();
        if self.repo.restore_deleted_branch(&turn.branch, id)? {
            evidence.push(format!(
                "the agent deleted the task branch {}; ralph recreated it as it was before this iteration (commits made in it are lost)",
                turn.branch
            ));
        }
        let queue_put_back = self.put_back_queue(&super::revert::Before {
            branch: turn.branch.clone(),
            tip: turn.tip_before.clone(),
            stashes: turn.stashes_before,
            queue: &turn.queue_before,
        })?;
        // An unmerged index or an operation in progress is the agent's to
        // finish: the next iteration is told how, nothing is committed.
        let mut unfinished_git = None;
        let mut leftovers = match self.repo.commit_leftovers(&turn.branch, id, turn.iteration) {
            Err(err) => match unfinished(&err) {
                Some(failure) => {
                    unfinished_git = Some(failure);
                    Default::default()
                }
                None => return Err(err.into()),
            },
            Ok(leftovers) => leftovers,
        };
        self.clean = leftovers.clean.take();
        crate::fault::crash_at("after_leftovers");
        match &leftovers.left_branch {
            Some(left) if !left.returned => {
                return Err(RunError::Stranded {
                    head: left.found.to_string(),
                    paths: left.dirty.clone(),
                }
                .into());
            }
            Some(left) => evidence.push(format!(
                "the agent left the task branch (HEAD was on {}); ralph checked {} out again{}",
                left.found,
                turn.branch,
                if left.fast_forwarded {
                    " and took the commits made there"
                } else {
                    ""
                }
            )),
            None => {}
        }
        // Commits the base gained during the iteration: the agent's when
        // made in this checkout, anyone else's otherwise (not a failure).
        if self.repo.branch_tip(self.repo.base())? != turn.base_before {
            let (agents, others) = self.repo.base_commits_since(&turn.base_before)?;
            let subjects = |commits: &[crate::git::BranchCommit]| {
                let subjects: Vec<&str> = commits.iter().map(|c| c.subject.as_str()).collect();
                subjects.join("; ")
            };
            if !agents.is_empty() {
                evidence.push(format!(
                    "the agent committed on the base branch {} ({}); ralph does not rewrite the base, so undo it by hand if it was wrong",
                    self.repo.base(),
                    subjects(&agents)
                ));
            }
            // Other workers merge into the base all the time: not news.
            if !others.is_empty() && self.seat.pooled().is_none() {
                self.ui.line(&format!(
                    "{} moved during the iteration: {} made outside this checkout, not by the agent ({}); {id}'s squash merges with them",
                    self.repo.base(),
                    crate::text::count(others.len(), "commit"),
                    subjects(&others)
                ));
            }
        }
        let tip_after = self.repo.branch_tip(&turn.branch)?;
        self.keep_dropped_commits(turn, &tip_after)?;
        let task = match self.store.load() {
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
        let status_changed = match &task {
            TaskAfter::Present { status, leaf } => {
                *status != turn.task.status || *leaf != turn.task.leaf
            }
            _ => true,
        };
        let progress = self.state.progress(id.as_str());
        // A reviewer's turn on a ready task ends in a verdict.
        let no_verdict = (turn.role().as_deref() == Some("reviewer")
            && turn.task.status == Status::Ready
            && matches!(&task, TaskAfter::Present { status: Status::Ready, .. })
            && crate::notes::reviews(self.paths.project(), &self.paths.reviews(id.as_str())).len() == turn.reviews_before)
            .then(|| {
                format!(
                    "the reviewer left {id} ready without a verdict; give one: `ralph task review {id} --pass`, or `ralph task review {id} --reject --notes \"what must change\"`"
                )
            });
        Ok(After {
            agent: agent_end(outcome),
            task,
            queue_put_back,
            left_branch: (!evidence.is_empty()).then(|| evidence.join("; ")),
            unfinished_git,
            task_changed: status_changed,
            progressed: tip_after != turn.tip_before || status_changed,
            no_progress_before: progress.no_progress,
            failures_before: progress.consecutive_failures,
            limit_waits_before: self.limit_waits,
            ready_is_reviewed: self.triggers.read_variable("task_marked_ready_to_complete"),
            no_verdict,
        })
    }

    /// Keeps the commits the task branch held after its last iteration (or
    /// before this one) and `tip` no longer reaches, saying so; notes `tip`
    /// as the one the next iteration is compared with.
    fn keep_dropped_commits(&mut self, turn: &Turn, tip: &CommitId) -> Result<(), Error> {
        let id = &turn.id;
        let noted = (self.state.progress(id.as_str()).tip)
            .and_then(|noted| CommitId::parse(&noted))
            .unwrap_or_else(|| turn.tip_before.clone());
        let dropped = self
            .repo
            .keep_dropped(&noted, tip, id.as_str(), turn.task_iteration)?;
        if let Some(dropped) = dropped {
            let commits = crate::text::count(dropped.commits, "commit");
            let detail = format!(
                "the task branch {} no longer holds {commits} it had at {} (dropped during iteration {} by `git reset`, an amend, a rebase or a move of the branch); ralph keeps {them} under {kept}: `git log {}..{kept}` shows the branch as it was",
                turn.branch,
                noted.short(),
                turn.task_iteration,
                self.repo.base(),
                them = if dropped.commits == 1 { "it" } else { "them" },
                kept = dropped.kept_under,
            );
            self.ui.log(&format!("warning: {id}: {detail}"));
            let extra = json!({"commits": dropped.commits, "kept_under": dropped.kept_under});
            self.record(
                Some(id),
                "branch",
                "dropped_commits",
                &detail,
                fields(extra),
            )?;
        }
        if let Some(progress) = self.state.tasks.get_mut(id.as_str()) {
            progress.tip = Some(tip.to_string());
        }
        Ok(())
    }

    /// `review_every: N`: the reviewer takes the task's every Nth
    /// iteration, whatever the triggers picked (a final review aside).
    fn review_every(&self, decision: &mut crate::roles::Decision, queue: &Queue, task: &Task) {
        let Some(every) = self
            .options
            .settings
            .review_every
            .filter(|every| *every > 0)
        else {
            return;
        };
        let next = self.state.progress(task.id.as_str()).iterations + 1;
        let final_review =
            context::task_kind(queue, task).as_deref() == Some(context::FINAL_REVIEW_KIND);
        if !next.is_multiple_of(every) || final_review {
            return;
        }
        decision.fired = Some(crate::roles::Fired {
            number: 0,
            role: "reviewer".to_owned(),
            model: None,
            condition: format!("review_every: {every}"),
            description: Some(format!(
                "the reviewer takes one iteration in {every} on a task"
            )),
        });
    }

    /// Counts what an iteration of task `id` spent, as its agent reported
    /// it, toward the task's caps and the run's.
    fn spend(&mut self, id: &TaskId, usage: &agent::Usage) {
        let cost = usage.cost_usd.unwrap_or(0.0);
        let tokens = usage.input_tokens + usage.output_tokens;
        let progress = self.state.tasks.entry(id.to_string()).or_default();
        progress.cost_usd += cost;
        progress.tokens += tokens;
        let day = crate::state::day_of(crate::clock::now_utc());
        self.seat.spend(&mut self.state, &day, cost, tokens);
    }

    /// The iteration's receipt: an event, a `ralph.log` line, the failure count.
    fn receipt(
        &mut self,
        turn: &Turn,
        outcome: &Outcome,
        verdict: &Consequence,
        task: &TaskAfter,
    ) -> Result<(), Error> {
        let (class, result) = match verdict {
            Consequence::Failed { class, .. } => (Some(*class), class.to_string()),
            Consequence::AuthFailed(_) => (Some(FailureClass::Auth), "auth".to_owned()),
            Consequence::Wait(_) => (Some(FailureClass::UsageLimit), "usage_limit".to_owned()),
            Consequence::Interrupted => (None, "interrupted".to_owned()),
            _ => (None, after_word(task)),
        };
        let commits = self
            .repo
            .commits_since_base(&turn.branch)
            .map_or(0, |c| c.len());
        let files = self.repo.files_changed(&turn.branch).map_or(0, |f| f.len());
        let mut receipt = fields(json!({
            "trigger": turn.fired.as_ref().map(|f| f.number),
            "task_iteration": turn.task_iteration,
            "agent": self.agent.label(),
            "model": turn.model().or(self.agent.model()),
            "prompt_bytes": turn.prompt.len(),
            "duration_ms": outcome.duration.as_millis() as u64,
            "exit": outcome.status.to_string(),
            "output_bytes": outcome.output_bytes,
            "log": transcript_name(outcome, &self.paths),
            "branch_commits": commits,
            "files_changed": files,
        }));
        if let Some(usage) = &outcome.usage {
            self.spend(&turn.id, usage);
            receipt.extend(fields(json!({
                "input_tokens": usage.input_tokens,
                "cached_input_tokens": usage.cached_input_tokens,
                "output_tokens": usage.output_tokens,
                "cost_usd": usage.cost_usd,
            })));
        }
        receipt.extend(outcome.receipt.clone());
        if let Some(refused) = refused_writes(outcome) {
            self.ui.line(&format!("{}: {refused}", turn.id));
        }
        receipt.insert("class".into(), json!(class));
        let detail = format!("{} in {}", outcome.status, seconds(outcome.duration));
        // A signal's stop is no failure of the task's, and no success.
        let status = match verdict {
            Consequence::Interrupted => "interrupted",
            _ => class.map_or("ok", FailureClass::as_str),
        };
        self.record(Some(&turn.id), "iteration", status, &detail, receipt)?;
        // The verdicts given so far, counted in the task's state.
        let reviews =
            crate::notes::reviews(self.paths.project(), &self.paths.reviews(turn.id.as_str()));
        let progress = self.state.tasks.entry(turn.id.to_string()).or_default();
        progress.reviews = reviews.len() as u64;
        progress.rejections = (reviews.iter())
            .filter(|review| review.verdict == crate::notes::Verdict::Rejected)
            .count() as u64;
        self.ui.log(&format!(
            "#{} {} [{}] {} {} -> {result}",
            turn.iteration,
            turn.id,
            turn.role().as_deref().unwrap_or("-"),
            outcome.status,
            seconds(outcome.duration),
        ));
        self.last_result = Some(format!("{} {result}", turn.id));
        if let Some(class) = class {
            *self.state.failures.entry(class).or_default() += 1;
        }
        Ok(())
    }

    /// Acts on the verdict: end the run, wait, record a failure, or move
    /// the task on (merge, split, blocked...).
    fn act(
        &mut self,
        turn: &Turn,
        outcome: &Outcome,
        verdict: Consequence,
        progressed: bool,
    ) -> Result<Next, Error> {
        let id = &turn.id;
        if !matches!(verdict, Consequence::Wait(_)) {
            self.limit_waits = 0;
        }
        let entry = self.state.tasks.entry(id.to_string()).or_default();
        match verdict {
            Consequence::Interrupted => {
                self.save_state()?;
                return Ok(Some(super::worker::interrupted()));
            }
            Consequence::AuthFailed(reason) => {
                self.save_state()?;
                let login = self.agent.login_hint();
                return Ok(Some((
                    RunStatus::Failed,
                    format!("the agent is not authenticated: {reason}; {login} and run again"),
                )));
            }
            Consequence::Wait(duration) => {
                // A usage limit is no work done: it costs neither budget.
                entry.iterations = entry.iterations.saturating_sub(1);
                self.seat.give_back(&mut self.state);
                self.save_state()?;
                let reason = outcome
                    .failure
                    .as_ref()
                    .map_or("the agent hit a usage limit", |f| f.reason.as_str());
                if self.options.once {
                    // One iteration was asked for: waiting helps nobody.
                    return Ok(Some((
                        RunStatus::Failed,
                        format!(
                            "usage_limit: {reason}; run again in {} or later",
                            seconds(duration)
                        ),
                    )));
                }
                if let Some(switch) = self.fallback.switch(&mut self.agent, duration) {
                    return self.fell_back(id, &switch, reason, duration);
                }
                // Counted in the summary's failures as `usage_limit`.
                self.limit_waits += 1;
                // The other workers run the same agent: they wait too.
                self.seat.pause_all(duration);
                let line = format!("usage limit: waiting {} before retrying", seconds(duration));
                let extra = json!({
                    "wait_seconds": duration.as_secs(),
                    "reason": crate::redact::redact(reason),
                });
                self.notify(
                    crate::notify::Kind::UsageLimit,
                    Some(id),
                    &line,
                    fields(extra),
                );
                return self.wait_logged(WaitReason::UsageLimit, id, &line, duration);
            }
            Consequence::Failed {
                class,
                summary,
                backoff,
                block,
            } => {
                entry.consecutive_failures += 1;
                entry.last_failed = true;
                // A stall goes on counting past the limit: once stuck,
                // every iteration without progress is another failure,
                // and a do-nothing agent is blocked a few iterations on.
                entry.no_progress = if progressed { 0 } else { entry.no_progress + 1 };
                let refused = refused_writes(outcome)
                    .map(|refused| format!("; {refused}"))
                    .unwrap_or_default();
                let evidence = Evidence {
                    class,
                    summary: format!(
                        "{summary} (exit: {}, log: {}){refused}",
                        outcome.status,
                        transcript_name(outcome, &self.paths)
                    ),
                    output_tail: Some(outcome.tail.clone()).filter(|t| !t.is_empty()),
                };
                self.keep_evidence(id, evidence)?;
                self.save_state()?;
                if let Some(reason) = block {
                    // A task cannot be marked blocked in a file that does not
                    // parse: then the run ends with the file's error.
                    self.store.load()?;
                    self.block(id, &reason)?;
                    return Ok(None);
                }
                if self.budget_spent() {
                    // No iteration follows: no retry to wait for.
                    self.ui.line(&format!("{id}: {class}: {summary}"));
                    return Ok(None);
                }
                let line = format!(
                    "{id}: {class}: {summary}; retrying in {}",
                    ShowDuration(backoff)
                );
                return self.wait_logged(WaitReason::Retry, id, &line, backoff);
            }
            _ => {
                // A task the agent says is done fails or not by its
                // verification (`finish_task`, `merge_split`): a failed
                // check adds to the failures in a row, so only other
                // iterations start the count again.
                if !matches!(verdict, Consequence::Finish | Consequence::MergeSplit) {
                    entry.consecutive_failures = 0;
                }
                entry.last_failed = false;
                entry.evidence = None;
                entry.no_progress = if progressed { 0 } else { entry.no_progress + 1 };
            }
        }
        self.save_state()?;
        match verdict {
            Consequence::Finish => {
                let task = self.store.load()?.get(id.as_str()).cloned();
                self.finish_task(id, task.as_ref())?;
            }
            Consequence::MergeSplit => self.merge_split(id)?,
            Consequence::Blocked => {
                self.commit_queue(id, &format!("ralph: {id} blocked"))?;
                self.task_ended(
                    id,
                    TaskEnd::Blocked,
                    None,
                    "the agent marked the task blocked",
                )?;
            }
            Consequence::ArchivedByAgent => self.merge_archived(id, &turn.task.title)?,
            Consequence::Vanished => {
                if self.seat.pooled().is_none() {
                    self.repo.checkout_base()?;
                }
                self.state.tasks.remove(id.as_str());
                self.task_ended(
                    id,
                    TaskEnd::Vanished,
                    None,
                    "the task is in neither tasks.jsonl nor tasks-done.jsonl; its branch is kept",
                )?;
            }
            _ => {}
        }
        let pause = self.options.settings.pause_between_iterations;
        if pause.is_zero() || self.budget_spent() {
            return Ok(None);
        }
        self.wait(pause)
    }

    /// Whether `max_iterations` (one with `--once`) or `max_run_minutes`
    /// is spent.
    /// Says that `switch.to` took over from `switch.from`, which hit its
    /// usage limit (`reason`) and is back in `reset_in`: ralph.log, the
    /// state `ralph status` reads, an event and a notification.
    fn fell_back(
        &mut self,
        id: &TaskId,
        switch: &super::fallback::Switch,
        reason: &str,
        reset_in: std::time::Duration,
    ) -> Result<Next, Error> {
        let until = chrono::Duration::from_std(reset_in)
            .ok()
            .and_then(|wait| chrono::Utc::now().checked_add_signed(wait))
            .map(crate::clock::stamp)
            .unwrap_or_default();
        if self.state.fallback.is_none() {
            self.state.fallback = Some(crate::state::FallenBack {
                agent: switch.to.clone(),
                instead_of: switch.from.clone(),
                until: until.clone(),
            });
        } else if let Some(fallen) = &mut self.state.fallback {
            fallen.agent.clone_from(&switch.to);
        }
        self.save_state()?;
        let line = format!(
            "usage limit of {}: {} takes over (agent.fallback); the first agent is back at {until}",
            switch.from, switch.to
        );
        self.ui.log(&line);
        let extra = fields(json!({
            "from": switch.from,
            "to": switch.to,
            "until": until,
            "reason": crate::redact::redact(reason),
        }));
        self.record(Some(id), "agent", "fallback", &line, extra.clone())?;
        self.notify(crate::notify::Kind::UsageLimit, Some(id), &line, extra);
        Ok(None)
    }

    /// Says that the first agent is back, its usage limit reset.
    fn came_back(&mut self, switch: &super::fallback::Switch) -> Result<(), Error> {
        self.state.fallback = None;
        self.save_state()?;
        let line = format!(
            "{} is back (its usage limit reset); {} steps aside",
            switch.to, switch.from
        );
        self.ui.log(&line);
        let extra = fields(json!({"from": switch.from, "to": switch.to}));
        self.record(None, "agent", "back", &line, extra)
    }

    pub(super) fn budget_spent(&self) -> bool {
        self.seat.run_iterations(&self.state) >= self.budgets.max_iterations
            || self.run_time_spent()
    }
}

/// The sentence naming the writes the sandbox refused the agent, if any.
fn refused_writes(outcome: &Outcome) -> Option<String> {
    let refused = outcome.receipt.get("refused_writes")?.as_array()?;
    let paths: Vec<&str> = refused.iter().filter_map(|p| p.as_str()).collect();
    (!paths.is_empty()).then(|| {
        format!(
            "the sandbox refused the agent's writes to {}; ralph's configuration, the git folder's settings and hooks are a person's to change (docs/SECURITY.md); for another path it needs, add it to sandbox.writable in config/ralph.yaml",
            paths.join(", ")
        )
    })
}

/// The iteration's transcript, relative to the project.
fn transcript_name(outcome: &Outcome, paths: &Paths) -> String {
    let transcript = &outcome.transcript;
    let name = transcript
        .strip_prefix(paths.project())
        .unwrap_or(transcript);
    name.display().to_string()
}

/// How the agent ended, in the decision's terms.
fn agent_end(outcome: &Outcome) -> AgentEnd {
    if outcome.interrupted {
        return AgentEnd::Interrupted;
    }
    let Some(failure) = &outcome.failure else {
        return AgentEnd::Ok;
    };
    match failure.class {
        FailureClass::Auth => AgentEnd::AuthFailed(failure.reason.clone()),
        FailureClass::UsageLimit => AgentEnd::UsageLimit {
            reset_in: failure
                .resets_at
                .and_then(|at| (at - chrono::Utc::now()).to_std().ok()),
        },
        class => AgentEnd::Failed {
            class,
            summary: failure.reason.clone(),
        },
    }
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

/// The failure class and evidence for a git state the agent left that
/// nothing can be committed in, or `None` for any other error.
fn unfinished(err: &crate::git::Error) -> Option<(FailureClass, String)> {
    use crate::git::Error;
    match err {
        Error::Unmerged { paths } => Some((
            FailureClass::UnmergedIndex,
            format!(
                "the agent left conflicts in the index ({}); resolve them and `git add` the files, then commit, or give them up with `git reset --merge`",
                paths.join(", ")
            ),
        )),
        Error::InProgress { operation, abort } => Some((
            FailureClass::in_progress(operation),
            format!(
                "the agent left a {operation} in progress; finish it (resolve, `git add`, then `git {}`), or abandon it with `{abort}`",
                match *operation {
                    "rebase" => "rebase --continue",
                    "cherry-pick" => "cherry-pick --continue",
                    "revert" => "revert --continue",
                    "git am" => "am --continue",
                    _ => "commit",
                }
            ),
        )),
        _ => None,
    }
}
