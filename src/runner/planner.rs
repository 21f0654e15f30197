//! `ralph plan --agent PRD`: one agent iteration with the `planner` role,
//! which writes a free-form document's tasks with `ralph task add`. No
//! branch, no merge: the tasks it adds are checked like any queue edit.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use crate::agent::{self, Echo, Host, Limits};
use crate::config::Settings;
use crate::error::Error;
use crate::paths::Paths;
use crate::task::{Queue, Store};

use super::RunError;

/// The role's name, as `RALPH_ROLE` tells the agent.
pub(crate) const PLANNER: &str = "planner";

/// What the planner's iteration asks for.
pub(crate) struct PlannerRequest<'a> {
    /// The document's name in messages and the prompt (`prds/auth.md`).
    pub document: &'a str,
    /// Its text.
    pub text: &'a str,
    /// The loop settings (the agent and its timeout).
    pub settings: &'a Settings,
    /// A custom agent command, overriding the settings' agent.
    pub agent_cmd: Option<&'a str>,
    /// Echo the agent's output to the terminal.
    pub stream: bool,
    /// Between SIGTERM and SIGKILL when the agent is stopped.
    pub kill_grace: std::time::Duration,
    /// Rounds of a plan reviewer's notes and the planner's revision
    /// after the first plan (`--review-rounds`).
    pub review_rounds: usize,
    /// Whether the planning agent runs confined.
    pub sandbox: &'a super::confine::Sandbox,
}

/// What the planner produced.
#[derive(Debug)]
pub(crate) struct Planned {
    /// The queue after the iteration.
    pub queue: Queue,
    /// The ids it added, in file order.
    pub added: Vec<String>,
    /// The prompt and log of the iteration, relative to the project.
    pub prompt_file: PathBuf,
    /// The agent's output.
    pub log_file: PathBuf,
}

/// The plan reviewer's instructions (`--review-rounds`): notes on the
/// planned tasks, no verdict.
const PLAN_REVIEWER_ROLE: &str = "# Role: Plan reviewer

A planner has turned the document below into tasks. Review the plan, not
code: nothing is built yet.

- For each task that is wrong, too big for one iteration, vague, missing
  acceptance criteria or verification, or in the wrong order, say so on
  the task: `ralph task note ID \"what to change and why\"`.
- A requirement of the document no task covers: a note on the task
  closest to it, naming the requirement.
- Do not add, change, split or complete tasks yourself, and give no
  verdict: the planner revises the plan from your notes.
- End with a summary of your notes.
";

/// Runs the planner, and with `review_rounds` that many rounds of a plan
/// reviewer's notes and the planner's revision, under the run lock; reads
/// back what was added.
pub(crate) fn plan_with_agent(
    paths: &Paths,
    request: &PlannerRequest<'_>,
    interrupted: &AtomicBool,
) -> Result<Planned, Error> {
    let (_lock, holder) = super::take_run_lock(paths, "plan-")?;
    let run_id = holder.run_id;
    let store = Store::open(paths);
    let before = store.load()?;
    let known: HashSet<String> = before.all_ids().map(str::to_owned).collect();
    let host = Host::from_process(paths.root())?;
    let mut backend = agent::backend(&request.settings.agent, request.agent_cmd, host)?;
    backend.preflight()?;

    let role = match crate::roles::read_role(paths, PLANNER) {
        Ok(text) => text,
        Err(crate::roles::Error::Missing { .. }) => crate::init::PLANNER_ROLE.to_owned(),
        Err(err) => return Err(err.into()),
    };
    let turns = 1 + 2 * request.review_rounds;
    let mut files = (PathBuf::new(), PathBuf::new());
    for turn in 1..=turns {
        let queue = store
            .load()
            .map_err(|err| RunError::PlannerBrokeQueue(err.to_string()))?;
        let reviewing = turn % 2 == 0;
        let (name, instructions, notes) = if reviewing {
            (PLAN_REVIEWER, PLAN_REVIEWER_ROLE, None)
        } else {
            let notes = (turn > 1).then(|| notes_on(paths, &queue, &known));
            (PLANNER, role.as_str(), notes)
        };
        let prompt = compose(
            instructions,
            request.document,
            request.text,
            &queue,
            notes.as_deref(),
        );
        let suffix = if turns == 1 {
            String::new()
        } else {
            format!("-{turn}")
        };
        files = (
            PathBuf::from(format!("{}/{run_id}{suffix}.md", crate::paths::PROMPTS_DIR)),
            PathBuf::from(format!("{}/{run_id}{suffix}.log", crate::paths::LOGS_DIR)),
        );
        super::record::save_project_file(paths, &files.0, prompt.as_bytes())?;
        let context = agent::Context {
            task_id: String::new(),
            task_title: request.document.to_owned(),
            role: Some(name.to_owned()),
            iteration: turn as u64,
            task_iteration: turn as u64,
            branch: String::new(),
            run_id: run_id.clone(),
            worker: None,
        };
        let group_file = paths.agent_group();
        // Confined as a run's agent in the project folder is (it does not
        // commit: no git folder).
        let tag = format!("plan-{turn}");
        let protected = crate::protected::Protected::new(&request.settings.sandbox, "", None);
        let checkout = super::confine::Checkout {
            dir: paths.project(),
            git_dir: None,
            protected: &protected,
        };
        let confinement = super::confine::confinement(
            request.sandbox,
            &request.settings.sandbox,
            paths,
            checkout,
            &tag,
            super::confine::preset_of(request.settings, request.agent_cmd),
        )?;
        let outcome = backend.iterate(&agent::Request {
            context: &context,
            prompt: &prompt,
            prompt_file: &files.0,
            log_file: &paths.project().join(&files.1),
            limits: Limits {
                timeout: request.settings.agent.timeout,
                grace: request.kill_grace,
                log_bytes: Limits::DEFAULT_LOG_BYTES,
            },
            cancel: Some(interrupted),
            echo: if request.stream {
                Echo::Stderr
            } else {
                Echo::Off
            },
            group_file: Some(&group_file),
            work_dir: None,
            model: None,
            activity: None,
            confinement: confinement.as_ref(),
        });
        if let Some(confinement) = &confinement {
            let _ = std::fs::remove_dir_all(&confinement.tmp);
        }
        let outcome = outcome?;
        // Before ralph reads the queue the agent may have turned into a link.
        super::check_own_files(paths)?;
        if outcome.interrupted {
            return Err(RunError::PlannerInterrupted.into());
        }
        if let Some(failure) = outcome.failure {
            return Err(RunError::PlannerFailed {
                class: failure.class,
                reason: failure.reason,
                log: files.1.display().to_string(),
            }
            .into());
        }
    }
    let (prompt_file, log_file) = files;
    let queue = store
        .load()
        .map_err(|err| RunError::PlannerBrokeQueue(err.to_string()))?;
    let added: Vec<String> = queue
        .tasks
        .tasks()
        .map(|(_, task)| task.id.to_string())
        .filter(|id| !known.contains(id))
        .collect();
    if added.is_empty() {
        return Err(RunError::PlannerAddedNothing {
            log: log_file.display().to_string(),
        }
        .into());
    }
    Ok(Planned {
        queue,
        added,
        prompt_file,
        log_file,
    })
}

/// The role of a review round's turn, as `RALPH_ROLE` tells the agent.
pub(crate) const PLAN_REVIEWER: &str = "plan-reviewer";

/// The notes on the tasks planned in this run (`known`: those there
/// before), for the planner's next turn.
fn notes_on(paths: &Paths, queue: &Queue, known: &HashSet<String>) -> String {
    let mut out = String::new();
    for (_, task) in queue.tasks.tasks() {
        if known.contains(task.id.as_str()) {
            continue;
        }
        if let Some(notes) =
            crate::notes::for_prompt(paths.project(), &paths.notes(task.id.as_str()), false)
        {
            out.push_str(&format!("## {} {}\n\n{notes}\n\n", task.id, task.title));
        }
    }
    if out.is_empty() {
        out.push_str("The review left no notes: keep the plan as it is.\n");
    }
    out
}

/// A turn's prompt: its role, then the document and the queue as it is,
/// and for a revising planner the review's notes.
fn compose(role: &str, document: &str, text: &str, queue: &Queue, notes: Option<&str>) -> String {
    let mut prompt = role.trim_end().to_owned();
    prompt.push_str(crate::prompt::SEPARATOR);
    prompt.push_str(&format!(
        "# The document to plan: {document}\n\n````markdown\n{}\n````\n",
        text.trim_end()
    ));
    let ids: Vec<String> = queue
        .tasks
        .tasks()
        .map(|(_, task)| format!("- {} {} ({})", task.id, task.title, task.status))
        .collect();
    prompt.push_str("\n# The queue now\n\n");
    if ids.is_empty() {
        prompt.push_str("tasks.jsonl is empty: your tasks are the first.\n");
    } else {
        prompt.push_str("Add your tasks next to these; do not change or repeat them.\n\n");
        prompt.push_str(&ids.join("\n"));
        prompt.push('\n');
    }
    if let Some(notes) = notes {
        prompt.push_str("\n# The review's notes on the plan\n\nRevise the plan from them with `ralph task` (add, split, or rewrite what you added); then end.\n\n");
        prompt.push_str(notes);
    }
    prompt
}
