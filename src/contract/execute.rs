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

use crate::agent::FailureClass;
use crate::exit::Reportable;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde_json::json;

use super::output::{
    NextAction, Reason, ResultFile, ResultStatus, StoryResult, StoryStatus, Verification,
};
use super::{CONTRACT_VERSION, PlanFile, RunInput, refuse};
use crate::config::{PRESETS, Settings};
use crate::error::Error;
use crate::exit::Exit;
use crate::paths::Paths;
use crate::runner::{self, RunOptions, RunResult, RunStatus};
use crate::task::{NewTask, Patch, Queue, Status, Store, TaskId};

/// How `ralph execute` was asked for.
pub(crate) struct Request<'a> {
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

/// `err` as `ralph execute` reports it, the error, then `hint:` and its
/// hint in the contract's terms: execute takes its agent from the input,
/// not from `--agent` flags it does not have.
pub(crate) fn report(err: &Error) -> String {
    let mut message = err.to_string();
    if let Some(hint) = err.hint() {
        let hint = hint.replace(
            "or pass --agent or --agent-cmd",
            "or name one in the run input's agent.model_hint",
        );
        message.push_str(&format!("\nhint: {hint}"));
    }
    message
}

/// How an execute ended: the result written and the exit code.
pub(crate) struct Finished {
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
pub(crate) fn execute(request: &Request<'_>, interrupted: &AtomicBool) -> Result<Finished, Error> {
    let out_dir =
        std::path::absolute(request.out_dir).map_err(crate::files::at::<Error>(request.out_dir))?;
    let input = super::read_input(request.input, &out_dir)?;
    super::check_out_dir(&out_dir, &input.run_id, false)?;
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
    let io = crate::files::at::<Error>;
    let under_way = ResultFile::new(
        Some(input.run_id.clone()),
        ResultStatus::Failed,
        None,
        Some("the run is under way, or ended without writing its result (killed?); run the same command to resume".to_owned()),
        Vec::new(),
        NextAction::Retry,
    );
    under_way
        .save(&out_dir)
        .map_err(io(out_dir.join(super::output::RESULT_FILE)))?;

    let mut settings = Settings::load_with_env(&paths)?;
    apply_input(&mut settings, &input);
    // Its agents are confined as `ralph run`'s are.
    let sandbox = crate::runner::confine::decide_here(&settings.sandbox)?;
    let options = RunOptions {
        settings,
        agent_cmd: None,
        once: false,
        stream: false,
        quiet: true,
        kill_grace: request.kill_grace,
        pr_branch: None,
        poll: None,
        sandbox,
    };
    let translator = super::progress::Translator::start(&paths, &input.run_id, &plan)
        .map_err(io(paths.events()))?;
    let ran = runner::run(&paths, &options, interrupted);
    translator
        .finish()
        .map_err(io(out_dir.join(super::output::PROGRESS_FILE)))?;

    let finished = match ran {
        Ok(run) => conclude(&input, Outcomes::read(&paths, &plan, &input)?, &run),
        Err(err) => {
            // The loop could not start or go on (a dirty checkout, a
            // missing agent, another run): nothing was lost, and the error
            // says what to fix.
            let (exit, next) = match err.exit() {
                Exit::InvalidInput => (Exit::InvalidInput, NextAction::HumanInput),
                Exit::NeedsPerson => (Exit::NeedsPerson, NextAction::HumanInput),
                _ => (Exit::Transient, NextAction::Retry),
            };
            let message = report(&err);
            let stories = Outcomes::read(&paths, &plan, &input)
                .map(|o| o.stories)
                .unwrap_or_default();
            let result = ResultFile::new(
                run_id,
                ResultStatus::Failed,
                None,
                Some(message),
                stories,
                next,
            );
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
        ssh_key: None,
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

/// Makes the out-dir the run's home: its configuration, the marker that
/// sends the agent's `ralph task` here, and the queue of stories, written
/// once: a resumed run keeps the queue it had.
fn prepare_home(paths: &Paths, input: &RunInput, plan: &PlanFile, now: &str) -> Result<(), String> {
    let failed = |path: &Path, err: std::io::Error| format!("{}: {err}", path.display());
    copy_configuration(paths).map_err(|(path, err)| failed(&path, err))?;
    let work_tree = std::fs::canonicalize(paths.root()).map_err(|err| failed(paths.root(), err))?;
    let marker = paths.project().join(crate::paths::WORK_TREE_FILE);
    write_file(paths, &marker, work_tree.to_string_lossy().as_bytes())
        .map_err(|err| failed(&marker, err))?;

    let run = json!({"run_id": input.run_id, "plan_sha256": super::sha256_hex(plan.to_text().as_bytes())});
    let run_file = paths.project().join(crate::paths::CONTRACT_RUN_FILE);
    if let Ok(text) = std::fs::read_to_string(&run_file) {
        let recorded: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        if recorded != run {
            return Err(format!(
                "{}: holds run {} of another plan; give this run a fresh --out-dir",
                paths.project().display(),
                recorded["run_id"]
            ));
        }
        return reopen_blocked(paths, now).map_err(|err| err.to_string());
    }
    // No run file: no run started here, so a queue a first attempt left
    // half-written is begun again.
    for path in [paths.tasks(), paths.done()] {
        write_file(paths, &path, b"").map_err(|err| failed(&path, err))?;
    }
    let store = Store::open(paths);
    for story in &plan.stories {
        let id = |text: &str| TaskId::parse(text).map_err(|err| format!("{}: {err}", story.id));
        let new = NewTask {
            title: story.title.clone(),
            parent: None,
            id: Some(id(&story.id)?),
            body: None,
            deps: story
                .deps
                .iter()
                .map(|dep| id(dep))
                .collect::<Result<_, _>>()?,
            acceptance: story.acceptance_criteria.clone(),
            files: story.file_focus.clone(),
            verify: story.verification_commands.clone(),
            source: Some(story.source.clone()),
            kind: None,
        };
        store
            .apply(&Patch::Add(new), now)
            .map_err(|err| err.to_string())?;
    }
    write_file(paths, &run_file, format!("{run}\n").as_bytes())
        .map_err(|err| failed(&run_file, err))
}

/// A resumed run is a retry: stories the last run blocked are worked
/// again. Attempts count across runs, so a story whose attempt budget is
/// spent is blocked again at once, for the same reason.
fn reopen_blocked(paths: &Paths, now: &str) -> Result<(), Error> {
    let store = Store::open(paths);
    let blocked: Vec<TaskId> = store
        .load()?
        .tasks
        .tasks()
        .filter(|(_, task)| task.status == Status::Blocked)
        .map(|(_, task)| task.id.clone())
        .collect();
    for id in blocked {
        let patch = Patch::SetStatus {
            id,
            status: Status::Pending,
        };
        store.apply(&patch, now)?;
    }
    Ok(())
}

/// The repository's own configuration files, or ralph's defaults where it
/// has none, copied into the out-dir (again at each start, so a changed
/// file applies to a resumed run).
fn copy_configuration(paths: &Paths) -> Result<(), (PathBuf, std::io::Error)> {
    let shipped = crate::init::SHIPPED
        .iter()
        .filter(|file| file.ownership == crate::init::Ownership::Default)
        .map(|file| (file.path, Some(file.text)));
    for (name, default) in shipped.chain([(crate::paths::CONTEXT_TEMPLATE, None)]) {
        let text = match (std::fs::read(paths.root().join(name)), default) {
            (Ok(bytes), _) => bytes,
            (Err(_), Some(text)) => text.as_bytes().to_vec(),
            (Err(_), None) => continue,
        };
        let to = paths.project().join(name);
        let now = crate::files::own::read_if_exists(paths.project(), &to);
        if now.ok().flatten().as_deref() != Some(&text[..]) {
            crate::files::own::replace(paths.project(), &to, &text).map_err(|err| (to, err))?;
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` in the out-dir at `paths` atomically, its
/// folder made as needed, never through a link.
fn write_file(paths: &Paths, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    crate::files::own::replace(paths.project(), path, bytes)
}

/// The input's limits and checks over the settings: the contract is the
/// last word, as flags are for `ralph run`.
fn apply_input(settings: &mut Settings, input: &RunInput) {
    let limits = &input.limits;
    settings.base_branch = Some(input.working_branch.clone());
    settings.workers = None;
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
    // The orchestrator owns branches and pull requests.
    settings.git.push = crate::config::Push::Never;
    settings.delivery = crate::config::Delivery::Local;
    settings.agent.mode = input.mode;
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
    /// Reads the out-dir's queue, the loop's state and the attempts
    /// `progress.ndjson` reported.
    fn read(paths: &Paths, plan: &PlanFile, input: &RunInput) -> Result<Outcomes, Error> {
        let queue = Store::open(paths).load()?;
        let state = crate::state::StateFile::open(paths).peek();
        let reported = attempts_reported(paths.project());
        let budget = input.limits.story_max_attempts;
        Ok(Outcomes::new(plan, &queue, &state, &reported, budget))
    }

    fn new(
        plan: &PlanFile,
        queue: &Queue,
        state: &crate::state::State,
        reported: &HashMap<String, u64>,
        budget: u64,
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
            let last_class = progress.and_then(|p| p.evidence.as_ref()).map(|e| e.class);
            let last_failed = progress.is_some_and(|p| p.last_failed);
            let task = queue.get(&story.id);
            let done = queue.done.contains(&story.id);
            let waits_on_failed = story.deps.iter().any(|dep| {
                stories.iter().any(|s| {
                    &s.id == dep && matches!(s.status, StoryStatus::Failed | StoryStatus::Blocked)
                })
            });
            let (status, verification) = if done {
                // A story the agent split was archived with its last part:
                // its own checks never ran, whatever its parts' did.
                let split = (queue.done.record(&story.id))
                    .and_then(|record| record.get("leaf")?.as_bool())
                    == Some(false);
                let checked = !story.verification_commands.is_empty() && !split;
                let verification = if checked {
                    Verification::Passed
                } else {
                    Verification::Pending
                };
                (StoryStatus::Done, verification)
            } else if task.is_some_and(|t| t.status == Status::Blocked) || attempts > 0 {
                let verification = if last_class == Some(FailureClass::VerifyFailed) {
                    Verification::Failed
                } else {
                    Verification::Pending
                };
                if first_failure.is_none() && task.is_some_and(|t| t.status == Status::Blocked) {
                    let why = queue
                        .object(&story.id)
                        .and_then(|line| line.get("blocked_reason")?.as_str().map(str::to_owned))
                        .unwrap_or_default();
                    // Retrying a story with no attempt left would do
                    // nothing: that needs a person, whatever failed last.
                    let reason = if attempts >= budget {
                        Reason::AttemptBudgetExhausted
                    } else {
                        story_reason(&why, last_class, last_failed)
                    };
                    first_failure = Some((reason, format!("{}: {why}", story.id)));
                }
                (StoryStatus::Failed, verification)
            } else if waits_on_failed {
                (StoryStatus::Blocked, Verification::Pending)
            } else {
                (StoryStatus::Skipped, Verification::Pending)
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
    let run_id = Some(input.run_id.clone());
    let all_done = stories.iter().all(|s| s.status == StoryStatus::Done);
    let failed_checks: Vec<&str> = run
        .verify_run
        .iter()
        .filter(|c| !c.passed)
        .map(|c| c.command.as_str())
        .collect();
    let (reason, error) = match run.status {
        RunStatus::Drained if all_done => {
            let result = ResultFile::new(
                run_id,
                ResultStatus::Success,
                None,
                None,
                stories,
                NextAction::OpenPr,
            );
            return Finished::new(result, Exit::Success);
        }
        RunStatus::Interrupted | RunStatus::Stopped => {
            let error = format!("{}; run the same command to resume", run.reason);
            let result = ResultFile::new(
                run_id,
                ResultStatus::Failed,
                None,
                Some(error),
                stories,
                NextAction::Retry,
            );
            return Finished::new(result, Exit::Transient);
        }
        RunStatus::Blocked if all_done && !failed_checks.is_empty() => (
            Reason::RunVerificationFailed,
            format!("run verification failed: {}", failed_checks.join(", ")),
        ),
        RunStatus::BudgetExhausted if run.reason.starts_with("max_run_minutes") => {
            (Reason::RunTimeout, run.reason.clone())
        }
        RunStatus::BudgetExhausted => (Reason::AttemptBudgetExhausted, run.reason.clone()),
        RunStatus::Failed => (Reason::AgentExitNonzero, run.reason.clone()),
        RunStatus::Drained | RunStatus::Blocked => {
            first_failure.unwrap_or((Reason::BlockedDependency, run.reason.clone()))
        }
    };
    Finished::new(
        ResultFile::for_reason(run_id, reason, error, stories),
        reason.exit(),
    )
}

impl Finished {
    fn new(result: ResultFile, exit: Exit) -> Finished {
        Finished {
            result,
            exit,
            error: None,
        }
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
fn story_reason(
    blocked_reason: &str,
    last_class: Option<FailureClass>,
    last_failed: bool,
) -> Reason {
    if last_failed && last_class == Some(FailureClass::Timeout) {
        return Reason::AgentTimeout;
    }
    if blocked_reason.starts_with("spent ") {
        return Reason::AttemptBudgetExhausted;
    }
    match last_class {
        Some(FailureClass::VerifyFailed) => Reason::StoryVerificationFailed,
        Some(FailureClass::Timeout) => Reason::AgentTimeout,
        Some(_) => Reason::AgentExitNonzero,
        // Blocked by the agent or a person (`ralph task block`).
        None => Reason::AttemptBudgetExhausted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> RunInput {
        super::super::input::parse(
            r#"{"contract_version": 1, "run_id": "r", "repo_path": "/r", "prd_path": "p.md",
                "base_branch": "main", "working_branch": "w",
                "limits": {"story_max_attempts": 1, "run_max_attempts": 1, "story_timeout_minutes": 1, "run_timeout_minutes": 1},
                "verification": {"story_commands": [], "run_commands": []},
                "agent": {"mode": "ralph_fresh"}}"#,
        )
        .unwrap()
    }

    const PLAN: &str = r#"{"contract_version": 1, "run_id": "r", "prd": {"path": "p.md", "sha256": "0"},
        "stories": [
          {"id": "S1", "title": "a", "deps": [], "acceptance_criteria": [], "file_focus": [], "verification_commands": [], "source": "p.md#R1"},
          {"id": "S2", "title": "b", "deps": ["S1"], "acceptance_criteria": [], "file_focus": [], "verification_commands": [], "source": "p.md#R2"}
        ]}"#;

    /// The message `read_plan` gives for the plan `PLAN` with `from`
    /// replaced by `to`.
    fn refused(from: &str, to: &str) -> String {
        assert!(PLAN.contains(from), "{from}");
        let dir = assert_fs::TempDir::new().unwrap();
        let path = dir.path().join("plan.json");
        std::fs::write(&path, PLAN.replacen(from, to, 1)).unwrap();
        let message = read_plan(&path, &input()).unwrap_err();
        message.replacen(&path.display().to_string(), "plan.json", 1)
    }

    #[test]
    fn each_problem_of_a_plan_names_its_json_path() {
        let dir = assert_fs::TempDir::new().unwrap();
        let path = dir.path().join("plan.json");
        std::fs::write(&path, PLAN).unwrap();
        assert_eq!(read_plan(&path, &input()).unwrap().stories.len(), 2);
        assert_eq!(
            refused(r#""contract_version": 1"#, r#""contract_version": 2"#),
            "plan.json: $.contract_version: must be 1, not 2"
        );
        assert_eq!(
            refused(r#""run_id": "r""#, r#""run_id": "x""#),
            "plan.json: $.run_id: \"x\" is not the input's run \"r\"; plan this input with `ralph plan --input`"
        );
        assert_eq!(
            refused(r#""id": "S2""#, r#""id": "S3""#),
            "plan.json: $.stories[1].id: must be \"S2\" (stories are numbered in order), not \"S3\""
        );
        assert_eq!(
            refused(r#""deps": ["S1"]"#, r#""deps": ["S2"]"#),
            "plan.json: $.stories[1].deps[0]: \"S2\" is not a story before S2"
        );
        assert_eq!(
            refused(r#""title": "a""#, r#""title": " ""#),
            "plan.json: $.stories[0].title: must not be empty"
        );
        assert_eq!(
            refused(r#""title": "a""#, r#""title": "a", "extra": 1"#),
            "plan.json: invalid plan at line 3 column 44: unknown field `extra`, expected one of `id`, `title`, `deps`, `acceptance_criteria`, `file_focus`, `verification_commands`, `source`; make it with `ralph plan --input`"
        );
        let start = PLAN.find(r#""stories": ["#).unwrap();
        let empty = format!("{}\"stories\": []}}", &PLAN[..start]);
        std::fs::write(&path, empty).unwrap();
        assert_eq!(
            read_plan(&path, &input()).unwrap_err(),
            format!("{}: $.stories: the plan has no story", path.display())
        );
        let missing = dir.path().join("none.json");
        assert!(
            read_plan(&missing, &input())
                .unwrap_err()
                .starts_with(&format!("{}: cannot read the plan: ", missing.display()))
        );
    }
}
