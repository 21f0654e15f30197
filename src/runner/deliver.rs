//! Delivering the run's work: pushing the base to its remote (`git.push`),
//! retried when the failure may pass, stopped when someone else pushed.

use serde_json::{Map, json};

use crate::events::fields;

use super::worker::{Scope, Worker};
use crate::error::Error;
use crate::git::{DEADLINE, Lease, Push, Pushed, RefUpdate};
use crate::result::{PrAction, PullRequest};
use crate::retry;

/// How many times a push that failed is tried again, after
/// [`retry::NETWORK`]'s 2 s and 4 s.
const PUSH_RETRIES: usize = 2;

impl Worker<'_> {
    /// Pushes the base to its remote, trying again after a transient
    /// failure. Returns why the run must stop when the push failed for
    /// good (rejected, or failed on every attempt); nothing local is
    /// changed either way.
    pub(super) fn push_base(&mut self) -> Result<Option<String>, Error> {
        let repo = self.base();
        let base = repo.base().to_owned();
        let target = repo.push_target(&base, self.options.settings.git.remote.as_deref());
        let local = repo.branch_tip(&base)?;
        let mut waits = retry::NETWORK.waits(PUSH_RETRIES);
        let name = format!("refs/heads/{}", target.branch);
        let from = Some(format!("refs/heads/{base}"));
        let update = [RefUpdate::new(&name, from, Lease::None)];
        loop {
            let pushed = repo.push(&target.remote, &update, Push::Plain, DEADLINE)?;
            let said = match pushed {
                Pushed::Accepted { up_to_date } => {
                    let detail = format!(
                        "{base} at {} {} {target}",
                        local.short(),
                        if up_to_date {
                            "was already on"
                        } else {
                            "pushed to"
                        }
                    );
                    self.ui.log(&detail);
                    self.record(None, "push", "ok", &detail, Map::new())?;
                    return Ok(None);
                }
                // Not a fast-forward: someone else pushed.
                Pushed::Rejected { refs, .. }
                    if refs.iter().any(|(_, why)| why.contains("[rejected]")) =>
                {
                    let remote_tip = repo.remote_tip(&target.remote, &name);
                    let theirs = remote_tip
                        .as_deref()
                        .map_or("a commit", |tip| &tip[..tip.len().min(7)]);
                    let reason = format!(
                        "the push of {base} to {target} was rejected: {target} is at {theirs} (someone else pushed), which {base} at {} does not include; nothing local was lost or rewritten. Bring {base} up to date (`git pull --rebase {} {}`) and run again: ralph's next run starts from the new base",
                        local.short(),
                        target.remote,
                        target.branch,
                    );
                    self.ui.line(&format!("warning: {reason}"));
                    self.record(None, "push", "rejected", &reason, Map::new())?;
                    return Ok(Some(reason));
                }
                Pushed::Rejected { said, .. } | Pushed::Unreachable(said) => said,
            };
            let said = crate::redact::redact(&said).into_owned();
            let Some(wait) = waits.next() else {
                let reason = format!(
                    "the push of {base} to {target} failed {} times (last: {said}); the commits are safe locally: push {base} by hand, or run again",
                    PUSH_RETRIES + 1
                );
                self.ui.line(&format!("warning: {reason}"));
                self.record(None, "push", "failed", &reason, Map::new())?;
                return Ok(Some(reason));
            };
            let detail = format!(
                "the push of {base} to {target} failed ({said}); trying again in {}",
                crate::config::ShowDuration(wait)
            );
            self.ui.line(&detail);
            self.record(None, "push", "retry", &detail, Map::new())?;
            if self.wait(wait)?.is_some() {
                return Ok(Some(format!(
                    "the push of {base} to {target} was not finished: the run was asked to stop"
                )));
            }
        }
    }
}

/// With `delivery: pr`, before the run: `gh` is checked, and the pull
/// request's branch `ralph/<name>` is made from the base (or resumed) and
/// becomes the run's base. Returns the options to run with.
pub(super) fn prepare(
    paths: &crate::paths::Paths,
    options: &super::RunOptions,
) -> Result<super::RunOptions, Error> {
    let mut options = options.clone();
    if options.settings.delivery != crate::config::Delivery::Pr {
        return Ok(options);
    }
    // Settings that do not go together are said before `gh` is asked or
    // a branch made: a service manager must not restart such a run.
    let conflict = |what: &str| Err(super::RunError::DeliveryConflict(what.to_owned()).into());
    if options.settings.remote.enabled {
        return conflict(
            "a queue shared through the remote (--remote, remote.enabled) lands each task on the base: a pull request does not go with it; run without --remote, or set delivery: local",
        );
    }
    if !options.settings.watch.prds.is_empty() && options.settings.workers.is_some() {
        return conflict(
            "a pull request per watched PRD takes one worker: drop --workers (and workers: in config/ralph.yaml)",
        );
    }
    preflight_retrying(paths)?;
    let state_file = crate::state::StateFile::open(paths);
    let (mut state, _) = state_file
        .load()
        .map_err(crate::files::at::<Error>(paths.state()))?;
    let repo = super::worker::open_repo(paths, &options.settings, state.base.as_deref())?;
    if !options.settings.watch.prds.is_empty() {
        // A pull request per PRD: each unit's branch is made when its
        // first task is claimed (unit.rs); a stopped one resumes.
        let base = match &state.pull_request {
            Some(plan) => plan.target.clone(),
            None => repo.base().to_owned(),
        };
        repo.check_push_remote(&base, options.settings.git.remote.as_deref(), true)?;
        check_ssh_key(paths, &options.settings)?;
        if let Some(plan) = &state.pull_request {
            options.settings.base_branch = Some(plan.branch.clone());
        }
        return Ok(options);
    }
    let plan = pull_request_plan(paths, &options, state.pull_request.clone(), &repo)?;
    repo.check_push_remote(&plan.branch, options.settings.git.remote.as_deref(), true)?;
    check_ssh_key(paths, &options.settings)?;
    repo.make_branch(&plan.branch, &plan.target)?;
    options.settings.base_branch = Some(plan.branch.clone());
    state.pull_request = Some(plan);
    state_file
        .save(&state)
        .map_err(crate::files::at::<Error>(paths.state()))?;
    Ok(options)
}

/// Checks `gh` before the run, trying again after a server or network
/// error as the pull request's calls do (2 s, 4 s, 8 s): a polling run
/// started while the network blinks goes on.
fn preflight_retrying(paths: &crate::paths::Paths) -> Result<(), Error> {
    use crate::delivery::gh;
    let checker = gh::Gh::new(paths.root());
    let checked = gh::retrying(
        retry::NETWORK.waits(gh::RETRIES),
        || checker.preflight_once(),
        |failure, retry, wait| {
            super::ui::say(&format!(
                "{}; trying again in {} (retry {retry} of {})",
                crate::redact::redact(&failure.said),
                crate::config::ShowDuration(wait),
                gh::RETRIES
            ));
            std::thread::sleep(wait);
            Ok::<bool, Error>(true)
        },
    )?;
    checked.map_err(|failure| super::RunError::Delivery(failure.said).into())
}

/// Fails when `git.ssh_key` names a key the run's pushes cannot use: a
/// push would fail only once the work is done.
pub(super) fn check_ssh_key(
    paths: &crate::paths::Paths,
    settings: &crate::config::Settings,
) -> Result<(), Error> {
    match settings.git.ssh_key_file(paths.project()) {
        Some(key) => Ok(crate::git::check_key(&key)?),
        None => Ok(()),
    }
}

/// The pull request's branch, target and title: the one `recorded` in
/// the state unless `--pr-branch` names another, else `ralph/<name>`
/// (the name given, or the slug of the next task's top-level title) from
/// the base. Nothing is written.
fn pull_request_plan(
    paths: &crate::paths::Paths,
    options: &super::RunOptions,
    recorded: Option<crate::state::PullRequestPlan>,
    repo: &crate::git::Repo,
) -> Result<crate::state::PullRequestPlan, Error> {
    if let (None, Some(recorded)) = (&options.pr_branch, &recorded) {
        return Ok(recorded.clone());
    }
    let queue = crate::task::Store::open(paths).load()?;
    let top = queue.next().map(|task| {
        let root = task.id.as_str().split('.').next().unwrap_or_default();
        queue
            .get(root)
            .map_or(task.title.clone(), |t| t.title.clone())
    });
    // What the title says goes to the remote, in a branch name and the
    // `gh` command line: masked, and the title one bounded line.
    let name = options.pr_branch.clone().or_else(|| {
        top.as_deref()
            .map(|title| crate::git::slug(&crate::redact::redact(title)))
    });
    let Some(name) = name.filter(|n| !n.is_empty()) else {
        return Err(super::RunError::DeliveryConflict(
            "the pull request needs a branch name: give one with --pr-branch NAME, or add a task"
                .to_owned(),
        )
        .into());
    };
    let branch = format!("ralph/{}", name.trim_start_matches("ralph/"));
    let target = match recorded {
        Some(recorded) if recorded.branch == branch => recorded.target,
        _ => repo.base().to_owned(),
    };
    let title = top.map_or_else(
        || branch.clone(),
        |title| crate::text::one_line(&title, crate::text::TITLE_CHARS),
    );
    Ok(crate::state::PullRequestPlan {
        branch,
        target,
        title,
    })
}

/// What `ralph run --dry-run` says of delivery.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Preview {
    /// Which branch is pushed where, and when.
    pub push: Option<String>,
    /// The `gh` command the run's end runs (`gh pr edit` instead when a
    /// pull request from the branch is open; `--draft` added when the
    /// run ends unfinished).
    pub pull_request: Option<String>,
}

/// Where and when the run would push, and the `gh` command its end would
/// run. Nothing is run (`gh` included) and nothing is written.
pub(crate) fn preview(
    paths: &crate::paths::Paths,
    options: &super::RunOptions,
) -> Result<Preview, Error> {
    use crate::config::{Delivery, Push};
    let settings = &options.settings;
    let pr = settings.delivery == Delivery::Pr;
    if settings.git.push == Push::Never && !pr {
        return Ok(Preview::default());
    }
    let state = crate::state::StateFile::open(paths).peek();
    let repo = super::worker::open_repo(paths, settings, state.base.as_deref())?;
    let plan = if pr {
        Some(pull_request_plan(
            paths,
            options,
            state.pull_request.clone(),
            &repo,
        )?)
    } else {
        None
    };
    let pushed = plan
        .as_ref()
        .map_or_else(|| repo.base().to_owned(), |plan| plan.branch.clone());
    let target = repo.push_target(&pushed, settings.git.remote.as_deref());
    let when = match settings.git.push {
        Push::OnMerge => "after each squash commit",
        Push::OnExit | Push::Never => "once, when the run ends",
    };
    let body_file = paths.project().join(crate::paths::PULL_REQUEST_BODY);
    let body_file = body_file.strip_prefix(paths.root()).unwrap_or(&body_file);
    Ok(Preview {
        push: Some(format!("{pushed} to {target} {when}")),
        pull_request: plan.map(|plan| {
            crate::delivery::gh::by_hand(
                &crate::delivery::gh::Request {
                    base: &plan.target,
                    head: &plan.branch,
                    title: &plan.title,
                    body: "",
                    draft: false,
                    labels: &settings.delivery_labels,
                },
                &body_file.display().to_string(),
                None,
            )
        }),
    })
}

impl Worker<'_> {
    /// Opens or updates the pull request from the run's branch, its body
    /// written from the run's records; a draft when the run ended
    /// unfinished. A failure is reported with the command that finishes
    /// the job by hand, and does not fail the run: its work is pushed.
    pub(super) fn open_pull_request(
        &mut self,
        status: super::RunStatus,
        reason: &str,
        verify_run: &[crate::result::CommandResult],
    ) -> Result<Option<PullRequest>, Error> {
        use crate::delivery::body::{self, Ending};
        use crate::delivery::gh::{self, Gh};
        let Some(plan) = self.state.pull_request.clone() else {
            return Ok(None);
        };
        // Nothing to review (its tasks blocked before any work landed):
        // no pull request, which GitHub would refuse anyway.
        let target = self.repo.branch_tip(&plan.target)?.to_string();
        let tip = self.repo.branch_tip(&plan.branch)?.to_string();
        if self
            .repo
            .commits_since(&target, &tip)?
            .is_some_and(|new| new.is_empty())
        {
            self.ui.log(&format!(
                "no pull request from {}: it has no commit {} lacks ({reason})",
                plan.branch, plan.target
            ));
            return Ok(None);
        }
        let done = status == super::RunStatus::Drained && verify_run.iter().all(|c| c.passed);
        let report = self.pull_request_report(
            &plan,
            if done {
                Ending::Done
            } else {
                Ending::Failed {
                    reason: reason.to_owned(),
                    next_step: next_step(status),
                }
            },
            (!done).then(|| status.as_str()),
            verify_run,
        )?;
        let text = body::body(&report);
        let body_file = self.paths.project().join(crate::paths::PULL_REQUEST_BODY);
        crate::files::own::replace(self.paths.project(), &body_file, text.as_bytes())
            .map_err(crate::files::at::<Error>(body_file.clone()))?;
        let short_file = (self.paths.project()).join(crate::paths::PULL_REQUEST_SHORT_BODY);
        // A shorter body from an earlier run would say it was sent.
        let _ = std::fs::remove_file(&short_file);
        let shown = |file: &std::path::Path| {
            let file = file.strip_prefix(self.paths.root()).unwrap_or(file);
            file.display().to_string()
        };
        let mut sent_file = shown(&body_file);
        let request = gh::Request {
            base: &plan.target,
            head: &plan.branch,
            title: &plan.title,
            body: &text,
            draft: !done,
            labels: &self.options.settings.delivery_labels,
        };
        let gh = Gh::new(self.paths.root());
        let mut open = None;
        // A new pull request is a draft unless done; an open one stays as
        // it is, unless done: then it is marked ready.
        let mut draft = !done;
        let outcome = match self.gh_retrying(|| gh.find(&plan.branch))? {
            Err(failure) => Err(failure),
            Ok(found) => {
                open = found.as_ref().map(|found| found.number);
                let send = |request: &gh::Request<'_>| {
                    self.gh_retrying(|| match &found {
                        Some(found) => (gh.edit(found.number, request))
                            .map(|()| (PrAction::Updated, found.url.clone())),
                        None => gh.create(request).map(|url| (PrAction::Opened, url)),
                    })
                };
                let mut sent = send(&request)?;
                let shorter;
                if let Err(failure) = &sent
                    && failure.kind == gh::Kind::BodyTooLong
                {
                    shorter = body::shorter(&report, &sent_file);
                    if shorter != text {
                        let root = self.paths.project();
                        crate::files::own::replace(root, &short_file, shorter.as_bytes())
                            .map_err(crate::files::at::<Error>(short_file.clone()))?;
                        let detail = format!(
                            "GitHub refused the pull request's body for its length ({} characters, {} bytes); sending it once more cut to {} bytes (the full body stays in {sent_file})",
                            text.chars().count(),
                            text.len(),
                            shorter.len(),
                        );
                        self.ui.line(&detail);
                        self.record(None, "pull_request", "retry", &detail, Map::new())?;
                        sent_file = shown(&short_file);
                        sent = send(&gh::Request {
                            body: &shorter,
                            ..request.clone()
                        })?;
                    }
                }
                // A draft whose work is now all done and checked is ready
                // for review: an edit alone leaves it a draft.
                if let (Ok(_), Some(found)) = (&sent, &found) {
                    draft = found.draft && !(done && self.mark_ready(&gh, found.number)?);
                }
                sent
            }
        };
        let pull_request = match outcome {
            Ok((action, url)) => {
                let detail = format!("{} {url}", action.as_str());
                self.ui.line(&format!("pull request {detail}"));
                let told = format!("pull request {detail}");
                self.say_pull_request(action, &detail, &told, !done, ("url", &url))?;
                PullRequest {
                    branch: plan.branch.clone(),
                    prd: self.unit.prd.as_ref().map(|(path, _)| path.clone()),
                    url: Some(url),
                    draft,
                    action,
                    error: None,
                    command: None,
                }
            }
            Err(failure) => {
                let command = gh::by_hand(&request, &sent_file, open);
                let said = crate::redact::redact(&failure.said).into_owned();
                let what = open.map_or_else(
                    || "open the pull request".to_owned(),
                    |number| format!("update pull request #{number}"),
                );
                let detail = format!("{said}; {} is pushed: {what} with `{command}`", plan.branch);
                self.ui.line(&format!("warning: {detail}"));
                let told = format!("the pull request could not be opened: {detail}");
                let field = ("command", command.as_str());
                self.say_pull_request(PrAction::Failed, &detail, &told, !done, field)?;
                PullRequest {
                    branch: plan.branch.clone(),
                    prd: self.unit.prd.as_ref().map(|(path, _)| path.clone()),
                    url: None,
                    draft,
                    action: PrAction::Failed,
                    error: Some(said),
                    command: Some(command),
                }
            }
        };
        Ok(Some(pull_request))
    }

    /// Marks pull request `number` ready for review; a failure is said
    /// with the command that does it by hand, the body sent already.
    /// Whether it is marked.
    fn mark_ready(&self, gh: &crate::delivery::gh::Gh, number: u64) -> Result<bool, Error> {
        match self.gh_retrying(|| gh.ready(number))? {
            Ok(()) => {
                let detail = format!("pull request #{number} marked ready for review");
                self.ui.log(&detail);
                self.record(None, "pull_request", "ready", &detail, Map::new())?;
                Ok(true)
            }
            Err(failure) => {
                let said = crate::redact::redact(&failure.said);
                let detail = format!(
                    "{said}; pull request #{number} stays a draft: mark it ready with `gh pr ready {number}`"
                );
                self.ui.line(&format!("warning: {detail}"));
                self.record(None, "pull_request", "failed", &detail, Map::new())?;
                Ok(false)
            }
        }
    }

    /// Records what became of the pull request (`action`) as an event and
    /// tells people (`told`), with its address or the command by hand.
    fn say_pull_request(
        &self,
        action: PrAction,
        detail: &str,
        told: &str,
        draft: bool,
        (key, value): (&str, &str),
    ) -> Result<(), Error> {
        let status = action.as_str();
        self.record(None, "pull_request", status, detail, Map::new())?;
        let extra = json!({"action": status, key: value, "draft": draft});
        self.notify(crate::notify::Kind::PullRequest, None, told, fields(extra));
        Ok(())
    }

    /// Runs the `gh` call `call`, and again after a transient failure
    /// (a server or network error) up to [`gh::RETRIES`] times, waiting
    /// [`retry::NETWORK`] between; each retry is said and recorded. A
    /// stop asked for while waiting ends the retries: the failure stands.
    ///
    /// [`gh::RETRIES`]: crate::delivery::gh::RETRIES
    pub(super) fn gh_retrying<T>(
        &self,
        call: impl FnMut() -> Result<T, crate::delivery::gh::Failure>,
    ) -> Result<Result<T, crate::delivery::gh::Failure>, Error> {
        use crate::delivery::gh;
        let waits = retry::NETWORK.waits(gh::RETRIES);
        gh::retrying(waits, call, |failure, retry, wait| {
            let detail = format!(
                "{}; trying again in {} (retry {retry} of {})",
                crate::redact::redact(&failure.said),
                crate::config::ShowDuration(wait),
                gh::RETRIES,
            );
            self.ui.line(&detail);
            self.record(None, "pull_request", "retry", &detail, Map::new())?;
            Ok(self.wait(wait)?.is_none())
        })
    }

    /// The pull request's body, from the run's records: the branch's
    /// commits (a squash commit per task), the queue's unfinished tasks,
    /// this run's checks and totals.
    fn pull_request_report(
        &self,
        plan: &crate::state::PullRequestPlan,
        ended: crate::delivery::body::Ending,
        code: Option<&str>,
        verify_run: &[crate::result::CommandResult],
    ) -> Result<crate::delivery::body::Report, Error> {
        use crate::delivery::body::{Check, Report, TaskLine, TaskState, Totals};
        let (events, _) = self
            .events
            .tail(usize::MAX)
            .map_err(crate::files::at::<Error>(self.paths.events()))?;
        // What the records say of each task, over every run: its
        // attempts, whether a check passed on it, its last transcript.
        let mut attempts: std::collections::HashMap<&str, u64> = Default::default();
        let mut verified: std::collections::HashMap<&str, bool> = Default::default();
        let mut last_log: std::collections::HashMap<&str, &str> = Default::default();
        for event in &events {
            let Some(task) = event.task_id.as_deref() else {
                continue;
            };
            match (event.phase.as_str(), event.status.as_str()) {
                ("iteration", "usage_limit" | "interrupted") => {}
                ("iteration", _) => {
                    *attempts.entry(task).or_default() += 1;
                    if let Some(log) = event.text("log") {
                        last_log.insert(task, log);
                    }
                }
                ("merge", "ok") => {
                    verified.insert(task, event.flag("verified").unwrap_or(false));
                }
                _ => {}
            }
        }
        let note = |id: &str, done: bool| {
            let tries = attempts.get(id).copied().unwrap_or(0);
            let tries = crate::text::count(tries as usize, "attempt");
            match (done, verified.get(id)) {
                (true, Some(true)) => Some(format!("verified, {tries}")),
                (true, _) => Some(format!("not verified (no check ran), {tries}")),
                (false, _) => Some(tries),
            }
        };
        let commits = self.base().branch_commits(&plan.target, &plan.branch)?;
        let mut tasks: Vec<TaskLine> = Vec::new();
        for commit in &commits {
            let Some((id, title)) = crate::git::squash_subject(&commit.subject) else {
                continue;
            };
            tasks.push(TaskLine {
                id: id.to_owned(),
                title: title.to_owned(),
                state: TaskState::Done {
                    commit: Some(commit.id.short().to_owned()),
                },
                note: note(id, true),
            });
        }
        let queue = self.store.load()?;
        let mut tails = Vec::new();
        for (_, task) in
            (queue.live_tasks()).filter(|(_, t)| t.leaf && self.unit.scope.holds(t.id.as_str()))
        {
            let id = task.id.as_str();
            let state = if task.status == crate::task::Status::Blocked {
                let reason = queue
                    .object(id)
                    .and_then(|line| line.get("blocked_reason")?.as_str().map(str::to_owned))
                    .unwrap_or_default();
                TaskState::Blocked { reason }
            } else {
                TaskState::Open
            };
            if let Some(log) = last_log.get(id)
                && let Some(tail) = self.transcript_tail(log)
            {
                tails.push((format!("{id}'s agent ({log})"), tail));
            }
            tasks.push(TaskLine {
                id: id.to_owned(),
                title: task.title.clone(),
                state,
                note: note(id, false),
            });
        }
        let mut checks = Vec::new();
        let mut totals = Totals {
            iterations: 0,
            input_tokens: None,
            output_tokens: None,
            cost_usd: None,
        };
        let add = |sum: &mut Option<u64>, value: Option<u64>| {
            if let Some(value) = value {
                *sum = Some(sum.unwrap_or(0) + value);
            }
        };
        // What this pull request covers: a PRD's tasks over every run (a
        // run stopped and started again goes on with them); otherwise the
        // run's own tasks. The checks of no task are this stretch's.
        let covered = |event: &crate::events::Event| match event.task_id.as_deref() {
            Some(task) if matches!(self.unit.scope, Scope::Within(_)) => {
                self.unit.scope.holds(task)
            }
            Some(task) => event.run_id == self.state.run_id && self.unit.scope.holds(task),
            None => false,
        };
        for event in events.iter().filter(|event| covered(event)) {
            match event.phase.as_str() {
                "verify" if event.status != "interrupted" => checks.push(Check {
                    task: event.task_id.clone(),
                    command: event.text("command").unwrap_or(&event.detail).to_owned(),
                    passed: event.status == "ok",
                    duration_ms: event.number("duration_ms").unwrap_or(0),
                    tail: event.text("output_tail").map(str::to_owned),
                }),
                "iteration" if event.task_id.is_some() => {
                    if !matches!(event.status.as_str(), "usage_limit" | "interrupted") {
                        totals.iterations += 1;
                    }
                    add(&mut totals.input_tokens, event.number("input_tokens"));
                    add(&mut totals.output_tokens, event.number("output_tokens"));
                    if let Some(cost) = event.float("cost_usd") {
                        totals.cost_usd = Some(totals.cost_usd.unwrap_or(0.0) + cost);
                    }
                }
                _ => {}
            }
        }
        checks.extend(verify_run.iter().map(|check| Check {
            task: None,
            command: check.command.clone(),
            passed: check.passed,
            duration_ms: check.duration_ms,
            tail: super::record::failed_tail(check),
        }));
        Ok(Report {
            title: plan.title.clone(),
            base: plan.target.clone(),
            branch: plan.branch.clone(),
            ended,
            tasks,
            checks,
            commits: commits
                .iter()
                .map(|c| (c.id.short().to_owned(), c.subject.clone()))
                .collect(),
            totals,
            source: self.unit.prd.clone(),
            run_id: Some(self.state.run_id.clone()),
            code: code.map(str::to_owned),
            tails,
        })
    }

    /// The last lines of the transcript at `log` (relative to the
    /// project), secrets masked; at most the end of a large one is read.
    fn transcript_tail(&self, log: &str) -> Option<String> {
        use std::io::{Read, Seek, SeekFrom};
        let root = self.paths.project();
        let mut file = crate::files::own::open_read(root, &root.join(log)).ok()?;
        let size = file.metadata().ok()?.len();
        file.seek(SeekFrom::Start(size.saturating_sub(4096))).ok()?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).ok()?;
        let text = String::from_utf8_lossy(&bytes);
        let text = text.trim_end();
        (!text.is_empty()).then(|| crate::redact::redact(text).into_owned())
    }
}

/// What a person does next with an unfinished run's pull request.
fn next_step(status: super::RunStatus) -> String {
    match status {
        super::RunStatus::BudgetExhausted => "run ralph again (or raise max_iterations / max_run_minutes) to finish the open tasks".to_owned(),
        _ => "unblock the blocked tasks (`ralph task show ID` says why one is blocked; `ralph task start ID` sets it going again) or fix the failing checks, then run ralph again".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_push_is_tried_again_after_two_then_four_seconds() {
        let waits = retry::NETWORK.waits(PUSH_RETRIES);
        let said: Vec<String> = waits
            .map(|wait| crate::config::ShowDuration(wait).to_string())
            .collect();
        assert_eq!(said, ["2s", "4s"]);
    }
}
