//! `ralph execute --input INPUT --plan PLAN --out-dir DIR`: works the
//! plan's stories with the loop of `ralph run`, on the input's working
//! branch, with the queue, the configuration and every runtime file in the
//! out-dir, and tells the orchestrator how it went in the contract's files.
//!
//! This is an adapter, not a second loop: the stories become the out-dir's
//! `tasks.jsonl`, the input's limits become settings, and while the loop
//! runs its events are translated into `progress.ndjson` (see
//! [`super::progress`]). At the end, the queue and the loop's state become
//! `result.json`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde_json::json;

use super::output::{NextAction, Reason, ResultFile, StoryResult, Summary};
use super::{CONTRACT_VERSION, PlanFile, RunInput, refuse};
use crate::config::{PRESETS, Settings};
use crate::error::Error;
use crate::exit::Exit;
use crate::paths::Paths;
use crate::runner::{self, RunOptions, RunResult, RunStatus};
use crate::task::{Queue, Status, Store};

/// Inside the out-dir: which run and plan its queue was made from, so a
/// resumed run is the same run.
const RUN_FILE: &str = ".ralph/contract-run.json";

/// How `ralph execute` was asked for.
pub struct Request<'a> {
    /// `--input`.
    pub input: &'a Path,
    /// `--plan`.
    pub plan: &'a Path,
    /// `--out-dir`.
    pub out_dir: &'a Path,
    /// The time stamped on the queue's lines.
    pub now: &'a str,
    /// Between SIGTERM and SIGKILL when the agent is stopped.
    pub kill_grace: Duration,
}

/// How an execute ended: the result written and the exit code.
pub struct Finished {
    /// What `result.json` says.
    pub result: ResultFile,
    /// The command's exit code.
    pub exit: Exit,
    /// Why the loop could not start or go on, for the person reading.
    pub error: Option<Error>,
}

/// Runs `ralph execute`. Whatever happens after the input is read,
/// `result.json` says how it ended: refusals of the input or the plan are
/// errors (exit 30), every other ending is a [`Finished`].
pub fn execute(request: &Request<'_>, interrupted: &AtomicBool) -> Result<Finished, Error> {
    let out_dir = std::path::absolute(request.out_dir).map_err(|source| Error::Io {
        path: request.out_dir.to_owned(),
        source,
    })?;
    let input = super::read_input(request.input, &out_dir)?;
    let run_id = Some(input.run_id.clone());
    let plan = read_plan(request.plan, &input)
        .map_err(|message| refuse(&out_dir, run_id.clone(), message))?;
    let paths = Paths::elsewhere(&input.repo_path, &out_dir);
    open_working_branch(&paths, &input, request.input)
        .map_err(|message| refuse(&out_dir, run_id.clone(), message))?;
    prepare_home(&paths, &input, &plan, request.now)
        .map_err(|message| refuse(&out_dir, run_id.clone(), message))?;

    // Until the run writes its own, result.json says a run is under way, so
    // an execute killed outright (SIGKILL) still leaves one to read.
    let io = |path: PathBuf| move |source| Error::Io { path, source };
    let under_way = ResultFile::ended(
        &input.run_id,
        "failed",
        None,
        Some("the run is under way, or ended without writing its result (killed?); run the same command to resume".to_owned()),
        Vec::new(),
        NextAction::Retry,
    );
    under_way
        .save(&out_dir)
        .map_err(io(out_dir.join(super::output::RESULT_FILE)))?;

    let mut settings = Settings::load(&paths)?;
    settings.apply_env(|name| std::env::var(name).ok())?;
    apply_input(&mut settings, &input);
    let options = RunOptions {
        settings,
        agent_cmd: None,
        once: false,
        stream: false,
        quiet: true,
        kill_grace: request.kill_grace,
        pr_branch: None,
    };
    let translator = super::progress::Translator::start(&paths, &input.run_id, &plan)
        .map_err(io(paths.events()))?;
    let ran = runner::run(&paths, &options, interrupted);
    translator
        .finish()
        .map_err(io(out_dir.join(super::output::PROGRESS_FILE)))?;

    let finished = match ran {
        Ok(run) => {
            let queue = Store::open(&paths).load()?;
            let state = crate::state::StateFile::open(&paths).peek();
            let reported = attempts_reported(&out_dir);
            let outcomes = Outcomes::new(&plan, &queue, &state, &reported);
            conclude(&input, outcomes, &run)
        }
        Err(err) => {
            // The loop could not start or go on (a dirty checkout, a
            // missing agent, another run): nothing was lost, and the error
            // says what to fix.
            let (exit, next) = match err.exit() {
                Exit::InvalidInput => (Exit::InvalidInput, NextAction::HumanInput),
                Exit::NeedsPerson => (Exit::NeedsPerson, NextAction::HumanInput),
                _ => (Exit::Transient, NextAction::Retry),
            };
            let mut message = err.to_string();
            if let Some(hint) = err.hint() {
                message.push_str(&format!("\nhint: {hint}"));
            }
            let stories = Outcomes::read(&paths, &plan)
                .map(|o| o.stories)
                .unwrap_or_default();
            let result =
                ResultFile::ended(&input.run_id, "failed", None, Some(message), stories, next);
            Finished {
                result,
                exit,
                error: Some(err),
            }
        }
    };
    finished
        .result
        .save(&out_dir)
        .map_err(io(out_dir.join(super::output::RESULT_FILE)))?;
    Ok(finished)
}

/// Reads `plan.json` and checks it belongs to this input and makes sense:
/// stories `S1`..`Sn` in order, each depending only on stories before it.
fn read_plan(path: &Path, input: &RunInput) -> Result<PlanFile, String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|err| format!("{shown}: cannot read the plan: {err}"))?;
    let plan: PlanFile = serde_json::from_str(&text).map_err(|err| {
        format!(
            "{shown}: invalid plan at line {} column {}: {}; make it with `ralph plan --input`",
            err.line(),
            err.column(),
            crate::text::without_position(&err.to_string())
        )
    })?;
    if plan.contract_version != CONTRACT_VERSION {
        return Err(format!(
            "{shown}: $.contract_version: must be {CONTRACT_VERSION}, not {}",
            plan.contract_version
        ));
    }
    if plan.run_id != input.run_id {
        return Err(format!(
            "{shown}: $.run_id: {:?} is not the input's run {:?}; plan this input with `ralph plan --input`",
            plan.run_id, input.run_id
        ));
    }
    if plan.stories.is_empty() {
        return Err(format!("{shown}: $.stories: the plan has no story"));
    }
    for (at, story) in plan.stories.iter().enumerate() {
        let expected = format!("S{}", at + 1);
        if story.id != expected {
            return Err(format!(
                "{shown}: $.stories[{at}].id: must be {expected:?} (stories are numbered in order), not {:?}",
                story.id
            ));
        }
        for (n, dep) in story.deps.iter().enumerate() {
            let earlier = plan.stories[..at].iter().any(|s| &s.id == dep);
            if !earlier {
                return Err(format!(
                    "{shown}: $.stories[{at}].deps[{n}]: {dep:?} is not a story before {expected}"
                ));
            }
        }
        if story.title.trim().is_empty() {
            return Err(format!("{shown}: $.stories[{at}].title: must not be empty"));
        }
    }
    Ok(plan)
}

/// Checks the repository and its working branch.
fn open_working_branch(paths: &Paths, input: &RunInput, input_path: &Path) -> Result<(), String> {
    let shown = input_path.display();
    let options = crate::git::Options {
        base_branch: Some(input.working_branch.clone()),
        branch_prefix: Settings::default().branch_prefix,
    };
    match crate::git::Repo::open(paths, &options) {
        Ok(_) => Ok(()),
        Err(crate::git::Error::NoSuchBase { name }) => Err(format!(
            "{shown}: $.working_branch: there is no branch {name} in {}; create it from the base first (`git branch {name} {}`)",
            input.repo_path.display(),
            input.base_branch
        )),
        Err(err) => Err(format!("{shown}: $.repo_path: {err}")),
    }
}

/// Makes the out-dir the run's home: the configuration (the repository's
/// own where it has one, ralph's defaults otherwise), the marker that sends
/// the agent's `ralph task` here, and the queue of stories, written once:
/// a resumed run keeps the queue it had.
fn prepare_home(paths: &Paths, input: &RunInput, plan: &PlanFile, now: &str) -> Result<(), String> {
    let home = paths.project();
    let failed = |path: &Path, err: std::io::Error| format!("{}: {err}", path.display());
    let mut files: Vec<(&str, Option<&str>)> = crate::init::SHIPPED
        .iter()
        .filter(|file| file.ownership == crate::init::Ownership::Default)
        .map(|file| (file.path, Some(file.text)))
        .collect();
    files.push((crate::paths::CONTEXT_TEMPLATE, None));
    for (name, default) in files {
        let from = paths.root().join(name);
        let text = match std::fs::read(&from) {
            Ok(bytes) => bytes,
            Err(_) => match default {
                Some(text) => text.as_bytes().to_vec(),
                None => continue,
            },
        };
        let to = home.join(name);
        if std::fs::read(&to).ok().as_deref() != Some(&text[..]) {
            std::fs::create_dir_all(to.parent().expect("a file has a folder"))
                .and_then(|()| crate::files::write_atomic(&to, &text))
                .map_err(|err| failed(&to, err))?;
        }
    }
    let work_tree = std::fs::canonicalize(paths.root()).map_err(|err| failed(paths.root(), err))?;
    let marker = home.join(crate::paths::WORK_TREE_FILE);
    std::fs::create_dir_all(marker.parent().expect("in .ralph"))
        .and_then(|()| crate::files::write_atomic(&marker, work_tree.to_string_lossy().as_bytes()))
        .map_err(|err| failed(&marker, err))?;

    let run = json!({"run_id": input.run_id, "plan_sha256": super::sha256_hex(plan.to_text().as_bytes())});
    let run_file = home.join(RUN_FILE);
    match std::fs::read_to_string(&run_file) {
        Ok(text) => {
            let recorded: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
            if recorded != run {
                return Err(format!(
                    "{}: holds run {} of another plan; give this run a fresh --out-dir",
                    home.display(),
                    recorded["run_id"]
                ));
            }
            Ok(())
        }
        Err(_) => {
            let mut queue = String::new();
            for story in &plan.stories {
                let line = json!({
                    "id": story.id,
                    "title": story.title,
                    "status": "pending",
                    "leaf": true,
                    "deps": story.deps,
                    "acceptance": story.acceptance_criteria,
                    "files": story.file_focus,
                    "verify": story.verification_commands,
                    "source": story.source,
                    "created": now,
                });
                queue.push_str(&line.to_string());
                queue.push('\n');
            }
            for (path, text) in [
                (paths.tasks(), queue.as_str()),
                (paths.done(), ""),
                (run_file.clone(), &format!("{run}\n")),
            ] {
                crate::files::write_atomic(&path, text.as_bytes())
                    .map_err(|err| failed(&path, err))?;
            }
            Ok(())
        }
    }
}

/// The input's limits and checks over the settings: the contract is the
/// last word, as flags are for `ralph run`.
fn apply_input(settings: &mut Settings, input: &RunInput) {
    let limits = &input.limits;
    settings.base_branch = Some(input.working_branch.clone());
    settings.workers = 1;
    settings.max_iterations_per_task = limits.story_max_attempts;
    settings.max_iterations = limits.run_max_attempts;
    settings.max_task_minutes = Some(limits.story_timeout_minutes);
    settings.max_run_minutes = Some(limits.run_timeout_minutes);
    // No single attempt may outlast the story's whole budget.
    let story = Duration::from_secs(limits.story_timeout_minutes * 60);
    settings.agent.timeout = settings.agent.timeout.min(story);
    // Each story carries the story commands in its own checks.
    settings.verify.task.clear();
    settings.verify.run = input.run_commands.clone();
    match input.model_hint.as_deref() {
        Some(preset) if PRESETS.contains(&preset) => {
            settings.agent.preset = Some(preset.to_owned());
            settings.agent.command = None;
            settings.agent.model = None;
        }
        Some(model) => settings.agent.model = Some(model.to_owned()),
        None => {}
    }
}

/// Each story's outcome from the queue and the loop's state, and the
/// first story that failed (in plan order), with its reason and why.
struct Outcomes {
    stories: Vec<StoryResult>,
    first_failure: Option<(Reason, String)>,
}

impl Outcomes {
    /// Reads the out-dir's queue and state; `None` when the queue does not
    /// load.
    fn read(paths: &Paths, plan: &PlanFile) -> Option<Outcomes> {
        let queue = Store::open(paths).load().ok()?;
        let state = crate::state::StateFile::open(paths).peek();
        let reported = attempts_reported(paths.project());
        Some(Outcomes::new(plan, &queue, &state, &reported))
    }

    fn new(
        plan: &PlanFile,
        queue: &Queue,
        state: &crate::state::State,
        reported: &HashMap<String, u64>,
    ) -> Outcomes {
        let mut stories: Vec<StoryResult> = Vec::new();
        let mut first_failure: Option<(Reason, String)> = None;
        for story in &plan.stories {
            let progress = state.tasks.get(&story.id);
            // A merged task's progress is dropped from the state: its
            // attempts are the ones progress.ndjson reported.
            let attempts = progress
                .map_or(0, |p| p.iterations)
                .max(reported.get(&story.id).copied().unwrap_or(0));
            let last_class = progress
                .and_then(|p| p.evidence.as_ref())
                .map(|e| e.class.as_str());
            let last_failed = progress.is_some_and(|p| p.last_failed);
            let task = queue.get(&story.id);
            let done = queue.done.contains(&story.id);
            let waits_on_failed = story.deps.iter().any(|dep| {
                stories
                    .iter()
                    .any(|s| &s.id == dep && matches!(s.status, "failed" | "blocked"))
            });
            let (status, verification) = if done {
                let checked = !story.verification_commands.is_empty();
                ("done", if checked { "passed" } else { "pending" })
            } else if task.is_some_and(|t| t.status == Status::Blocked) || attempts > 0 {
                let verification = if last_class == Some("verify_failed") {
                    "failed"
                } else {
                    "pending"
                };
                if first_failure.is_none() && task.is_some_and(|t| t.status == Status::Blocked) {
                    let why = queue
                        .object(&story.id)
                        .and_then(|line| line.get("blocked_reason")?.as_str().map(str::to_owned))
                        .unwrap_or_default();
                    first_failure = Some((
                        story_reason(&why, last_class, last_failed),
                        format!("{}: {why}", story.id),
                    ));
                }
                ("failed", verification)
            } else if waits_on_failed {
                ("blocked", "pending")
            } else {
                ("skipped", "pending")
            };
            stories.push(StoryResult {
                id: story.id.clone(),
                status,
                attempts,
                verification,
            });
        }
        Outcomes {
            stories,
            first_failure,
        }
    }
}

/// `result.json` at the end of a run.
fn conclude(input: &RunInput, outcomes: Outcomes, run: &RunResult) -> Finished {
    let Outcomes {
        stories,
        first_failure,
    } = outcomes;
    let all_done = stories.iter().all(|s| s.status == "done");
    let (status, reason, error, next) = match run.status {
        RunStatus::Drained if all_done => ("success", None, None, NextAction::OpenPr),
        RunStatus::Blocked if all_done && run.verify_run.iter().any(|c| !c.passed) => {
            let failed: Vec<&str> = run
                .verify_run
                .iter()
                .filter(|c| !c.passed)
                .map(|c| c.command.as_str())
                .collect();
            let reason = Reason::RunVerificationFailed;
            let error = format!("run verification failed: {}", failed.join(", "));
            ("blocked", Some(reason), Some(error), reason.next_action())
        }
        RunStatus::BudgetExhausted => {
            let reason = if run.reason.starts_with("max_run_minutes") {
                Reason::RunTimeout
            } else {
                Reason::AttemptBudgetExhausted
            };
            (
                status_of(reason),
                Some(reason),
                Some(run.reason.clone()),
                reason.next_action(),
            )
        }
        RunStatus::Failed => {
            let reason = Reason::AgentExitNonzero;
            (
                "failed",
                Some(reason),
                Some(run.reason.clone()),
                reason.next_action(),
            )
        }
        RunStatus::Interrupted | RunStatus::Stopped => (
            "failed",
            None,
            Some(format!("{}; run the same command to resume", run.reason)),
            NextAction::Retry,
        ),
        RunStatus::Drained | RunStatus::Blocked => {
            let (reason, error) =
                first_failure.unwrap_or((Reason::BlockedDependency, run.reason.clone()));
            (
                status_of(reason),
                Some(reason),
                Some(error),
                reason.next_action(),
            )
        }
    };
    let exit = match reason {
        Some(reason) => reason.exit(),
        None if status == "success" => Exit::Success,
        None => Exit::Transient,
    };
    let result = ResultFile::ended(&input.run_id, status, reason, error, stories, next);
    Finished {
        result,
        exit,
        error: None,
    }
}

/// The highest attempt `progress.ndjson` reported for each story, over
/// every run in this out-dir.
fn attempts_reported(out_dir: &Path) -> HashMap<String, u64> {
    let bytes = crate::files::read_or_empty(&out_dir.join(super::output::PROGRESS_FILE))
        .unwrap_or_default();
    let mut attempts: HashMap<String, u64> = HashMap::new();
    for line in bytes.split(|&b| b == b'\n') {
        let Ok(event) = serde_json::from_slice::<serde_json::Value>(line) else {
            continue;
        };
        if let (Some(story), Some(n)) = (event["story_id"].as_str(), event["attempt"].as_u64()) {
            let seen = attempts.entry(story.to_owned()).or_default();
            *seen = (*seen).max(n);
        }
    }
    attempts
}

/// The reason a blocked story gives: a timeout of its last attempt (worth
/// a retry), its spent budget, or the class of the failures that blocked
/// it.
fn story_reason(blocked_reason: &str, last_class: Option<&str>, last_failed: bool) -> Reason {
    if last_failed && last_class == Some("timeout") {
        return Reason::AgentTimeout;
    }
    if blocked_reason.starts_with("spent ") {
        return Reason::AttemptBudgetExhausted;
    }
    match last_class {
        Some("verify_failed") => Reason::StoryVerificationFailed,
        Some("timeout") => Reason::AgentTimeout,
        Some(_) => Reason::AgentExitNonzero,
        // Blocked by the agent or a person (`ralph task block`).
        None => Reason::AttemptBudgetExhausted,
    }
}

/// `blocked` when a person must act, `failed` when trying again may do.
fn status_of(reason: Reason) -> &'static str {
    match reason.exit() {
        Exit::NeedsPerson => "blocked",
        _ => "failed",
    }
}

impl ResultFile {
    /// The result of an execute that ended.
    pub fn ended(
        run_id: &str,
        status: &'static str,
        reason: Option<Reason>,
        error: Option<String>,
        stories: Vec<StoryResult>,
        next_action: NextAction,
    ) -> ResultFile {
        let count = |wanted: &[&str]| {
            stories
                .iter()
                .filter(|s| wanted.contains(&s.status))
                .count() as u64
        };
        let summary = Summary {
            completed: count(&["done"]),
            failed: count(&["failed", "blocked"]),
            skipped: count(&["skipped"]),
        };
        ResultFile {
            contract_version: CONTRACT_VERSION,
            run_id: Some(run_id.to_owned()),
            status,
            reason,
            error,
            stories,
            summary,
            next_action,
        }
    }
}
