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

/// Runs the planner once under the run lock and reads back what it added.
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
    let prompt = compose(&role, request.document, request.text, &before);
    let prompt_file = PathBuf::from(format!("{}/{run_id}.md", crate::paths::PROMPTS_DIR));
    let log_file = PathBuf::from(format!("{}/{run_id}.log", crate::paths::LOGS_DIR));
    super::record::save_project_file(paths, &prompt_file, prompt.as_bytes())?;
    let context = agent::Context {
        task_id: String::new(),
        task_title: request.document.to_owned(),
        role: Some(PLANNER.to_owned()),
        iteration: 1,
        task_iteration: 1,
        branch: String::new(),
        run_id,
        worker: None,
    };
    let group_file = paths.agent_group();
    let outcome = backend.iterate(&agent::Request {
        context: &context,
        prompt: &prompt,
        prompt_file: &prompt_file,
        log_file: &paths.project().join(&log_file),
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
    })?;
    if outcome.interrupted {
        return Err(RunError::PlannerInterrupted.into());
    }
    let queue = store
        .load()
        .map_err(|err| RunError::PlannerBrokeQueue(err.to_string()))?;
    if let Some(failure) = outcome.failure {
        return Err(RunError::PlannerFailed {
            class: failure.class,
            reason: failure.reason,
            log: log_file.display().to_string(),
        }
        .into());
    }
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

/// The planner's prompt: its role, then the document and the queue as it is.
fn compose(role: &str, document: &str, text: &str, queue: &Queue) -> String {
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
    prompt
}
