//! `ralph run --dry-run`: the next iteration worked out without running it.

use crate::paths::Paths;

use super::context::{self, Measures};
use super::worker::{RunOptions, first_complete, open_repo};
use crate::agent::{Backend, Host};
use crate::error::Error;
use crate::git;
use crate::prompt;
use crate::roles;
use crate::task::Store;

/// What the next iteration would do, for `ralph run --dry-run`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Plan {
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
    /// The agent as messages name it.
    pub agent: String,
    /// When agents run confined: the confining program and its arguments,
    /// put before the agent's command line.
    pub confinement: Option<Vec<String>>,
}

/// Works out the next iteration without running anything or writing a file.
pub(crate) fn plan(paths: &Paths, options: &RunOptions) -> Result<Plan, Error> {
    let triggers = roles::load(paths)?;
    let queue = Store::open(paths).load()?;
    let state = crate::state::StateFile::open(paths).peek();
    let Some(task) = first_complete(&queue).or_else(|| queue.next()) else {
        return Ok(Plan::default());
    };
    let repo = open_repo(paths, &options.settings, state.base.as_deref()).ok();
    let measures = match &repo {
        Some(repo) => {
            let recorded = state.progress(task.id.as_str()).branch;
            Measures::of(repo, task, recorded.as_deref())?
        }
        None => Measures::default(),
    };
    let branch = measures.branch.clone().unwrap_or_else(|| {
        git::branch_name(&options.settings.branch_prefix, &task.id, &task.title)
    });
    let decision = triggers.choose(&context::trigger_context(
        paths, &queue, task, &state, 0, &measures,
    ))?;
    let mut variables =
        context::prompt_context(paths, &queue, task, &decision, &state, 0, Some(&branch));
    if let Some(repo) = &repo {
        variables.review = context::review_view(repo, &queue, task, state.scope.as_ref())?;
    }
    let text = prompt::build(paths, &decision, &variables)?;
    let model = decision.fired.as_ref().and_then(|f| f.model.clone());
    let agent = backend(paths, options)?;
    let (prompt_file, _) = super::worker::iteration_files(state.total_iterations + 1, &task.id);
    let prompt_file = paths.join(prompt_file);
    let argv = agent.command_line(&prompt_file, &text, model.as_deref())?;
    let confinement = match (&options.sandbox, &repo) {
        (super::confine::Sandbox::On(jail), Some(repo)) => {
            let tmp = std::env::temp_dir().join(format!(
                "ralph-{}-0-{}",
                std::process::id(),
                state.total_iterations + 1
            ));
            let protected = crate::protected::Protected::new(
                &options.settings.sandbox,
                repo.project_inner(),
                repo.tracked_hooks().as_deref(),
            );
            let checkout = super::confine::Checkout {
                dir: repo.workdir(),
                git_dir: Some(repo.common_dir()),
                protected: &protected,
            };
            let policy =
                super::confine::policy(jail, &options.settings.sandbox, paths, checkout, &tmp);
            let (program, args) = crate::platform::sandbox::prefix(&jail.tool, &policy);
            Some(
                std::iter::once(program.into_os_string())
                    .chain(args)
                    .map(|arg| arg.to_string_lossy().into_owned())
                    .collect(),
            )
        }
        _ => None,
    };
    Ok(Plan {
        confinement,
        task: Some(task.id.to_string()),
        title: task.title.to_string(),
        branch: Some(branch),
        role: decision.fired.as_ref().map(|f| f.role.clone()),
        role_why: match &decision.fired {
            Some(f) => format!("{} (trigger {}: {})", f.role, f.number, f.condition),
            None => "none (no trigger is true)".to_owned(),
        },
        model,
        prompt_bytes: text.len(),
        argv,
        agent: agent.label(),
    })
}

/// The agent's backend as the settings choose it.
fn backend(paths: &Paths, options: &RunOptions) -> Result<Box<dyn Backend>, Error> {
    let host = Host::from_process(paths.project())?;
    let agent = &options.settings.agent;
    Ok(crate::agent::backend(
        agent,
        options.agent_cmd.as_deref(),
        host,
    )?)
}

/// What the run's preflight would refuse, each with its fix: the
/// repository as the settings name it, the working tree, and the agent
/// (installed, and logged in where that can be asked without the
/// network), with the role's `model`. Nothing is written.
pub(crate) fn refusals(paths: &Paths, options: &RunOptions, model: Option<&str>) -> Vec<String> {
    let state = crate::state::StateFile::open(paths).peek();
    let resumed = (state.current_task.as_ref())
        .and_then(|task| state.tasks.get(task))
        .and_then(|progress| progress.branch.as_deref());
    let mut problems: Vec<Error> = match open_repo(paths, &options.settings, state.base.as_deref())
    {
        Ok(repo) => (repo.preflight_problems(resumed).into_iter())
            .map(Error::from)
            .collect(),
        Err(err) => vec![err],
    };
    let agent = backend(paths, options).and_then(|agent| {
        agent.preflight()?;
        if let Some(model) = model {
            agent.check_model(model)?;
        }
        Ok(())
    });
    if let Err(err) = agent {
        problems.push(err);
    }
    problems.iter().map(Error::one_line).collect()
}
