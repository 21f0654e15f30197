//! What the triggers and the prompt see of a task: its fields, the loop's
//! state, and the work on its branch. Shared by the loop, `ralph prompt`,
//! `ralph roles which` and `ralph run --dry-run`, so they agree.

use crate::git::Repo;
use crate::paths::Paths;
use crate::prompt::{self, PromptContext};
use crate::roles::{Decision, TriggerContext};
use crate::state::State;
use crate::task::{Queue, Task};

/// The work on a task's branch.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Measures {
    /// The branch, when it exists.
    pub branch: Option<String>,
    /// Commits on it since it left the base.
    pub commits: i64,
    /// Files changed on it against the base.
    pub files: i64,
}

impl Measures {
    /// Measures `branch` (or the task's existing branch) in `repo`.
    pub fn of(
        repo: &Repo,
        task: &Task,
        branch: Option<&str>,
    ) -> Result<Measures, crate::git::Error> {
        let branch = match branch {
            Some(branch) if repo.branch_tip(branch).is_ok() => Some(branch.to_owned()),
            _ => repo.find_task_branch(&task.id, &task.title)?,
        };
        let Some(branch) = branch else {
            return Ok(Measures::default());
        };
        Ok(Measures {
            commits: repo.commits_since_base(&branch)?.len() as i64,
            files: repo.files_changed(&branch)?.len() as i64,
            branch: Some(branch),
        })
    }
}

/// What the next iteration on `task` would see, read without changing
/// anything: the state, the number of iterations the run has done (0 when
/// no run is live: the next iteration starts a run), and the branch's work.
pub fn observe(paths: &Paths, task: &Task) -> Result<(State, u64, Measures), crate::error::Error> {
    let state = crate::state::StateFile::open(paths).peek();
    let live = super::lock::live_holder(paths).ok().flatten().is_some();
    let run_iterations = if live { state.iteration } else { 0 };
    let settings = crate::config::Settings::load(paths)?;
    let branch = state
        .tasks
        .get(task.id.as_str())
        .and_then(|p| p.branch.clone());
    let measures = match super::engine::open_repo(paths, &settings, state.base.as_deref()) {
        Ok(repo) => Measures::of(&repo, task, branch.as_deref())?,
        // Not a repository (yet): no branch work to measure.
        Err(_) => Measures::default(),
    };
    Ok((state, run_iterations, measures))
}

/// The trigger variables for `task` before the run's iteration number
/// `run_iterations + 1`.
pub fn trigger_context(
    task: &Task,
    state: &State,
    run_iterations: u64,
    measures: &Measures,
) -> TriggerContext {
    let progress = state
        .tasks
        .get(task.id.as_str())
        .cloned()
        .unwrap_or_default();
    let mut context = TriggerContext::for_task(task);
    context.iteration = run_iterations as i64;
    context.task_iteration = progress.iterations as i64;
    context.branch_commits = measures.commits;
    context.files_changed = measures.files;
    context.last_iteration_failed = progress.last_failed;
    context.consecutive_failures = progress.consecutive_failures as i64;
    context.elapsed_minutes = progress
        .claimed
        .as_deref()
        .and_then(|claimed| chrono::DateTime::parse_from_rfc3339(claimed).ok())
        .map_or(0, |claimed| {
            (chrono::Utc::now() - claimed.with_timezone(&chrono::Utc))
                .num_minutes()
                .max(0)
        });
    let mut counts = state.clone();
    counts.iteration = run_iterations;
    context.iterations_since_role = counts.role_counts();
    context
}

/// The template variables of the prompt for that iteration: the last
/// failure's evidence from the state, and the task's earlier failed
/// attempts from its critique file (without the last, shown on its own).
pub fn prompt_context(
    paths: &Paths,
    queue: &Queue,
    task: &Task,
    decision: &Decision,
    state: &State,
    run_iterations: u64,
    branch: Option<&str>,
) -> PromptContext {
    let progress = state
        .tasks
        .get(task.id.as_str())
        .cloned()
        .unwrap_or_default();
    let mut variables = prompt::context_for(queue, task, decision);
    variables.iteration = run_iterations + 1;
    variables.task_iteration = progress.iterations + 1;
    variables.task.branch = branch.map(str::to_owned);
    // An unreadable critique file leaves the prompt without the earlier
    // attempts; the last failure's evidence is in it all the same.
    variables.critique = crate::critique::for_prompt(
        &paths.critique(task.id.as_str()),
        progress.evidence.is_some(),
    )
    .ok()
    .flatten();
    variables.evidence = progress.evidence;
    variables
}
