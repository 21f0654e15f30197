//! What a run writes down: state, events, the kept queue, `verify.run` and
//! the result.

use std::path::Path;
use std::sync::atomic::Ordering;

use serde_json::{Map, Value, json};

use super::verify;
use super::worker::{Worker, now, seconds};
use crate::error::Error;
use crate::events::{Event, fields};
use crate::paths::Paths;
use crate::prompt::Evidence;
use crate::result::{CommandResult, RunResult, RunStatus};
use crate::state::Phase;
use crate::task::TaskId;

/// Most unverified tasks the run's summary names (result.json has all).
const SHOWN_UNVERIFIED: usize = 10;
/// Most uncommitted paths the warning at the end of a run names.
const SHOWN_LEFT: usize = 10;

impl Worker<'_> {
    pub(super) fn verify_run(&mut self) -> Result<Vec<CommandResult>, Error> {
        let mut results = Vec::new();
        if !self.options.settings.verify.run.is_empty() {
            // The commands may write files: the next step scans the tree.
            self.clean = None;
            // What a look from outside (`ralph top`) shows meanwhile.
            self.state.phase = crate::state::Phase::Verify;
            self.save_state()?;
        }
        for command in &self.options.settings.verify.run {
            let (result, _) = self.check(None, "verify_run", "failed", command)?;
            results.push(result);
        }
        Ok(results)
    }

    /// Runs the `verify` command `command` in the project and records how
    /// it went as event `phase`: `ok`, `interrupted` (a signal stopped it)
    /// or `failed`. Also says whether it was interrupted.
    pub(super) fn check(
        &mut self,
        task: Option<&TaskId>,
        phase: &str,
        failed: &str,
        command: &str,
    ) -> Result<(CommandResult, bool), Error> {
        let started = std::time::Instant::now();
        // Confined as the agent whose work it judges.
        let protected = self.protected();
        let confinement = super::confine::confinement(
            &self.options.sandbox,
            &self.options.settings.sandbox,
            &self.paths,
            self.checkout(&protected),
            &format!("{}-check", self.seat.number().unwrap_or(0)),
            None,
        )?;
        let result = verify::run(
            command,
            self.paths.root(),
            self.options.settings.agent.timeout,
            self.interrupted,
            confinement.as_ref(),
        );
        if let Some(confinement) = &confinement {
            let _ = std::fs::remove_dir_all(&confinement.tmp);
        }
        let result = result?;
        let interrupted = !result.passed && self.interrupted.load(Ordering::SeqCst);
        let status = match (result.passed, interrupted) {
            (true, _) => "ok",
            (false, true) => "interrupted",
            (false, false) => failed,
        };
        let detail = format!("{command}: {}", result.status);
        let duration_ms = started.elapsed().as_millis() as u64;
        let mut extra = fields(json!({"command": command, "duration_ms": duration_ms}));
        if let Some(tail) = failed_tail(&result) {
            // The end of what it printed, for a pull request's body.
            extra.insert("output_tail".into(), tail.into());
        }
        self.record(task, phase, status, &detail, extra)?;
        Ok((result, interrupted))
    }

    pub(super) fn finish(
        &mut self,
        status: RunStatus,
        reason: &str,
        verify_run: Vec<CommandResult>,
    ) -> Result<RunResult, Error> {
        self.state.phase = Phase::Ended;
        self.name_what_is_left_uncommitted();
        let pull_request_failed = (self.unit.pull_request.as_ref())
            .is_some_and(|pr| pr.action == crate::result::PrAction::Failed);
        let result = RunResult {
            iterations: self.earlier_iterations + self.state.iteration,
            class: (status == RunStatus::Failed && pull_request_failed)
                .then(|| "pull_request_failed".to_owned()),
            merged: self.merged,
            failures: self.state.failures.clone(),
            outcomes: std::mem::take(&mut self.outcomes),
            verify_run,
            pull_request: self.unit.pull_request.take(),
            pull_requests: std::mem::take(&mut self.unit.pull_requests),
            ..RunResult::ended(
                &self.paths,
                self.state.run_id.clone(),
                self.state.started.clone(),
                status,
                reason.to_owned(),
            )
        };
        // Each is written even when one before it cannot be (a link where
        // ralph keeps its file refuses the write): `result.json` and the
        // event say how the run ended, the more so when it ends on such a
        // link.
        let saved = self.save_state();
        let written = (result.save(&self.paths)).map_err(crate::files::at(self.paths.result()));
        let recorded = self.record_between(None, "run", status.as_str(), reason, Map::new());
        saved.and(written).and(recorded)?;
        self.notify(
            crate::notify::Kind::RunEnded,
            None,
            &format!("ralph run {}: {reason}", status.as_str()),
            run_facts(&result),
        );
        let unverified: Vec<&str> = (result.outcomes.iter())
            .filter(|outcome| outcome.verified == Some(false))
            .map(|outcome| outcome.task.as_str())
            .collect();
        let done = match unverified.len() {
            0 => format!("{} done", result.merged),
            n => format!(
                "{} done ({n} unverified: {})",
                result.merged,
                crate::text::named(&unverified, SHOWN_UNVERIFIED)
            ),
        };
        self.ui.summary(&format!(
            "ralph: {} — {}\n  tasks: {}, {} blocked, {} left · iterations: {} · time: {} · failures: {}",
            status.as_str(),
            reason,
            done,
            known(result.blocked),
            known(result.remaining),
            result.iterations,
            seconds(self.started.elapsed()),
            crate::text::tally(&result.failures),
        ));
        if self.options.settings.report == crate::config::ReportWhen::OnExit {
            let out = self.paths.report();
            match crate::report::write(&self.paths, Some(&result.run_id), &out) {
                Ok(Some(_)) => self.ui.summary(&format!("  report: {}", out.display())),
                Ok(None) => {}
                Err(err) => self
                    .ui
                    .summary(&format!("  warning: the report was not written: {err}")),
            }
        }
        self.notifier.settle();
        Ok(result)
    }

    /// Names whatever `git status` still lists at the end of the run
    /// (a submodule's own changes, files a `verify.run` command wrote):
    /// every change is committed or said. A scan that fails says nothing,
    /// the run's own ending matters more.
    fn name_what_is_left_uncommitted(&self) {
        let Ok(left) = self.repo.left_uncommitted() else {
            return;
        };
        if left.is_empty() {
            return;
        }
        self.ui.log(&format!(
            "warning: ralph leaves {} that no commit took: {}; `git status` shows {}",
            crate::text::count(left.len(), "uncommitted change"),
            crate::text::safe(&crate::text::named(&left, SHOWN_LEFT)),
            if left.len() == 1 { "it" } else { "them" },
        ));
    }

    /// Keeps the evidence of a failure on task `id`: appended to the
    /// task's critique file, then the last failure's evidence in the state
    /// (which the caller saves: a crash between the two leaves the entry
    /// shown as an earlier attempt, never lost).
    pub(super) fn keep_evidence(&mut self, id: &TaskId, evidence: Evidence) -> Result<(), Error> {
        let progress = self.state.tasks.entry(id.to_string()).or_default();
        let entry = crate::critique::entry(
            progress.iterations,
            &now(),
            self.state.role.as_deref(),
            &evidence,
        );
        progress.evidence = Some(evidence);
        let path = self.paths.critique(id.as_str());
        crate::critique::append(self.paths.project(), &path, &entry)
            .map_err(|source| Error::from(crate::files::PathError::new(path, source)))
    }

    pub(super) fn record(
        &self,
        task: Option<&TaskId>,
        phase: &str,
        status: &str,
        detail: &str,
        extra: Map<String, Value>,
    ) -> Result<(), Error> {
        self.record_at(task, phase, status, detail, extra, Between::No)
    }

    /// Records an event between two iterations (a claim, a final review
    /// added, the run's own): under no role, after the run's iterations
    /// so far (the pool's, pooled), as the worker alone and a pool both
    /// record it.
    pub(super) fn record_between(
        &self,
        task: Option<&TaskId>,
        phase: &str,
        status: &str,
        detail: &str,
        extra: Map<String, Value>,
    ) -> Result<(), Error> {
        self.record_at(task, phase, status, detail, extra, Between::After)
    }

    /// Records the claim of `task` (its branch made): under no role, with
    /// the number of the iteration it opens, so `ralph status` shows a
    /// claim and its first iteration as one step (`#8 C claim`, `#8 C
    /// iteration`), alone and pooled.
    pub(super) fn record_claim(
        &self,
        task: &TaskId,
        detail: &str,
        extra: Map<String, Value>,
    ) -> Result<(), Error> {
        self.record_at(Some(task), "claim", "ok", detail, extra, Between::Opening)
    }

    fn record_at(
        &self,
        task: Option<&TaskId>,
        phase: &str,
        status: &str,
        detail: &str,
        mut extra: Map<String, Value>,
        between: Between,
    ) -> Result<(), Error> {
        if let Some(worker) = self.seat.number() {
            extra.insert("worker".into(), worker.into());
        }
        let event = Event {
            timestamp: now(),
            run_id: self.state.run_id.clone(),
            task_id: task.map(|t| t.to_string()),
            iteration: match between {
                Between::No => self.state.iteration,
                Between::After => self.seat.run_iterations(&self.state),
                Between::Opening => self.seat.run_iterations(&self.state) + 1,
            },
            role: self.state.role.clone().filter(|_| between == Between::No),
            phase: phase.to_owned(),
            status: status.to_owned(),
            detail: detail.to_owned(),
            extra,
        };
        self.events
            .append(&event)
            .map_err(crate::files::at::<Error>(self.paths.events()))
    }

    /// Tells people of `kind` (with `notify.command`), without waiting.
    pub(super) fn notify(
        &self,
        kind: crate::notify::Kind,
        task: Option<&TaskId>,
        message: &str,
        extra: Map<String, Value>,
    ) {
        self.notifier.send(crate::notify::Notice {
            event: kind,
            time: now(),
            run_id: self.state.run_id.clone(),
            project: self.paths.project().display().to_string(),
            task: task.map(|t| t.to_string()),
            message: crate::redact::redact(message).into_owned(),
            extra,
        });
    }

    pub(super) fn save_state(&mut self) -> Result<(), Error> {
        // A worker whose task merged has no worktree left, and nothing in
        // it to resume: saving would make its folder again.
        if self.seat.pooled().is_some() && !self.paths.root().exists() {
            return Ok(());
        }
        self.state.updated = now();
        self.state_file
            .save(&self.state)
            .map_err(crate::files::at::<Error>(self.paths.state()))
    }
}

/// Saves `bytes` at `relative` in the project, folders made as needed.
pub(super) fn save_project_file(paths: &Paths, relative: &Path, bytes: &[u8]) -> Result<(), Error> {
    let path = paths.project().join(relative);
    crate::files::own::replace(paths.project(), &path, bytes).map_err(crate::files::at(&path))
}

/// What a `run_ended` notice adds: how it ended and what it did.
fn run_facts(result: &RunResult) -> Map<String, Value> {
    let mut facts = Map::new();
    facts.insert("status".into(), result.status.as_str().into());
    facts.insert("merged".into(), result.merged.into());
    facts.insert("blocked".into(), result.blocked.into());
    facts.insert("remaining".into(), result.remaining.into());
    facts.insert("iterations".into(), result.iterations.into());
    if let Some(url) = result.pull_request.as_ref().and_then(|pr| pr.url.clone()) {
        facts.insert("pull_request".into(), url.into());
    }
    facts
}

/// A count, or `?` when `tasks.jsonl` could not be read to count it.
fn known(count: Option<usize>) -> String {
    count.map_or_else(|| "?".to_owned(), |count| count.to_string())
}

/// Where an event stands among the run's iterations.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Between {
    /// In the current iteration (its number and role).
    No,
    /// After the run's iterations so far (their count, no role).
    After,
    /// Opening the run's next iteration (its number, no role).
    Opening,
}

/// The last 20 lines a failed check printed, secrets masked; none for a
/// check that passed or printed nothing.
pub(super) fn failed_tail(result: &CommandResult) -> Option<String> {
    let tail = result.output_tail.trim_end();
    if result.passed || tail.trim().is_empty() {
        return None;
    }
    let lines: Vec<&str> = tail.lines().collect();
    let tail = lines[lines.len().saturating_sub(20)..].join("\n");
    Some(crate::redact::redact(&tail).into_owned())
}
