//! What the triggers and the prompt see of a task: its fields, the loop's
//! state, and the work on its branch. Shared by the loop, `ralph prompt`,
//! `ralph roles which` and `ralph run --dry-run`, so they agree.

use crate::git::Repo;
use crate::paths::Paths;
use crate::prompt::{self, AncestorView, PromptContext, REVIEW_LIST_MAX, ReviewView};
use crate::roles::{Decision, TriggerContext};
use crate::state::{RunScope, State};
use crate::task::{Queue, Task};

/// The `kind` of the run's final review tasks.
pub(crate) const FINAL_REVIEW_KIND: &str = "final_review";

/// The work on a task's branch.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Measures {
    /// The branch, when it exists.
    pub branch: Option<String>,
    /// Commits on it since it left the base.
    pub commits: i64,
    /// Files changed on it against the base.
    pub files: i64,
}

impl Measures {
    /// Measures `branch` (or the task's existing branch) in `repo`.
    pub(crate) fn of(
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
pub(crate) fn observe(
    paths: &Paths,
    task: &Task,
) -> Result<(State, u64, Measures), crate::error::Error> {
    let state = crate::state::StateFile::open(paths).peek();
    let live = crate::run_lock::live_holder(paths).ok().flatten().is_some();
    let run_iterations = if live { state.iteration } else { 0 };
    let settings = crate::config::Settings::load(paths)?;
    let branch = state.progress(task.id.as_str()).branch;
    let measures = match super::worker::open_repo(paths, &settings, state.base.as_deref()) {
        Ok(repo) => Measures::of(&repo, task, branch.as_deref())?,
        // Not a repository (yet): no branch work to measure.
        Err(_) => Measures::default(),
    };
    Ok((state, run_iterations, measures))
}

/// The trigger variables for `task` (its line in `queue`) before the
/// run's iteration number `run_iterations + 1`.
pub(crate) fn trigger_context(
    paths: &Paths,
    queue: &Queue,
    task: &Task,
    state: &State,
    run_iterations: u64,
    measures: &Measures,
) -> TriggerContext {
    let progress = state.progress(task.id.as_str());
    let mut context = TriggerContext::for_task(task);
    context.task_kind = task_kind(queue, task).unwrap_or_default();
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
    with_reviews(context, paths, task.id.as_str())
}

/// The context with what the task's notes and reviews say
/// (`last_review`, `review_rejections`, `task_notes`).
fn with_reviews(mut context: TriggerContext, paths: &Paths, id: &str) -> TriggerContext {
    let reviews = crate::notes::reviews(paths.project(), &paths.reviews(id));
    context.last_review = reviews
        .last()
        .map(|review| review.verdict.as_str().to_owned())
        .unwrap_or_default();
    context.review_rejections = (reviews.iter())
        .filter(|review| review.verdict == crate::notes::Verdict::Rejected)
        .count() as i64;
    context.task_notes = crate::notes::count(paths.project(), &paths.notes(id)) as i64;
    let done = context.task_iteration.max(0) as u64;
    context.iterations_since_review = reviews
        .last()
        .map_or(done, |review| done.saturating_sub(review.task_iteration))
        as i64;
    context
}

/// The template variables of the prompt for that iteration: the last
/// failure's evidence from the state, and the task's earlier failed
/// attempts from its critique file (without the last, shown on its own).
pub(crate) fn prompt_context(
    paths: &Paths,
    queue: &Queue,
    task: &Task,
    decision: &Decision,
    state: &State,
    run_iterations: u64,
    branch: Option<&str>,
) -> PromptContext {
    let progress = state.progress(task.id.as_str());
    let mut variables = prompt::context_for(queue, task, decision);
    variables.iteration = run_iterations + 1;
    variables.task_iteration = progress.iterations + 1;
    variables.task.branch = branch.map(str::to_owned);
    // An unreadable critique file leaves the prompt without the earlier
    // attempts; the last failure's evidence is in it all the same.
    variables.critique = crate::critique::for_prompt(
        paths.project(),
        &paths.critique(task.id.as_str()),
        progress.evidence.is_some(),
    )
    .ok()
    .flatten();
    variables.evidence = progress.evidence;
    variables.rejection = crate::notes::reviews(paths.project(), &paths.reviews(task.id.as_str()))
        .pop()
        .filter(|review| review.verdict == crate::notes::Verdict::Rejected)
        .map(|review| prompt::bounded_tail(&review.notes, crate::notes::PROMPT_BYTES).to_owned());
    // The rejection's reasons are a note too: shown once, in their section.
    variables.notes = crate::notes::for_prompt(
        paths.project(),
        &paths.notes(task.id.as_str()),
        variables.rejection.is_some(),
    );
    variables
}

/// The `kind` field of `task`'s line in `queue`, if it has one.
pub(crate) fn task_kind(queue: &Queue, task: &Task) -> Option<String> {
    let object = queue.object(task.id.as_str())?;
    object.get("kind")?.as_str().map(str::to_owned)
}

/// What a final review looks at, for a task of kind `final_review`: the
/// tasks merged in `scope`, and the base's commits and changed files since
/// it began. `None` for any other task, or without a scope.
pub(crate) fn review_view(
    repo: &Repo,
    queue: &Queue,
    task: &Task,
    scope: Option<&RunScope>,
) -> Result<Option<ReviewView>, crate::git::Error> {
    let Some(scope) = scope else {
        return Ok(None);
    };
    if task_kind(queue, task).as_deref() != Some(FINAL_REVIEW_KIND) {
        return Ok(None);
    }
    let changes = repo.base_changes_since(&scope.start)?;
    let title = |id: &str| match queue.get(id) {
        Some(task) => task.title.to_string(),
        None => (queue.done.record(id))
            .and_then(|record| record.get("title")?.as_str().map(str::to_owned))
            .unwrap_or_default(),
    };
    let number = match scope.reviews.iter().position(|r| r == task.id.as_str()) {
        Some(at) => at + 1,
        None => scope.reviews.len() + 1,
    };
    let commits = changes.commits.len();
    let files = changes.files.len();
    Ok(Some(ReviewView {
        base: repo.base().to_owned(),
        since: scope.start.clone(),
        since_short: scope.start.chars().take(7).collect(),
        number,
        tasks: (scope.merged.iter())
            .map(|id| AncestorView {
                id: id.clone(),
                title: title(id),
            })
            .collect(),
        insertions: changes.files.iter().map(|f| f.insertions).sum(),
        deletions: changes.files.iter().map(|f| f.deletions).sum(),
        files_changed: files,
        more_commits: commits.saturating_sub(REVIEW_LIST_MAX),
        more_files: files.saturating_sub(REVIEW_LIST_MAX),
        commits: (changes.commits.into_iter().take(REVIEW_LIST_MAX))
            .map(|commit| prompt::ReviewCommit {
                short: commit.id.short().to_owned(),
                subject: commit.subject,
            })
            .collect(),
        files: (changes.files.into_iter().take(REVIEW_LIST_MAX))
            .map(|file| prompt::ReviewFile {
                path: file.path,
                insertions: file.insertions,
                deletions: file.deletions,
                binary: file.binary,
            })
            .collect(),
    }))
}

/// [`review_view`] read without changing anything, for `ralph prompt`
/// and `--dry-run`: the scope the state recorded; none when the
/// repository cannot be read.
pub(crate) fn peek_review(
    paths: &Paths,
    queue: &Queue,
    task: &Task,
    state: &State,
) -> Option<ReviewView> {
    let settings = crate::config::Settings::load(paths).ok()?;
    let repo = super::worker::open_repo(paths, &settings, state.base.as_deref()).ok()?;
    review_view(&repo, queue, task, state.scope.as_ref())
        .ok()
        .flatten()
}
