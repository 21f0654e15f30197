//! The final review (`final_review: true`): when the queue drains with
//! nothing left, one more task of kind `final_review`, worked like any
//! other task, whose prompt holds the whole run's work. The review scope
//! in the state (the base's commit when the run began, the tasks merged
//! since, the reviews added) says what it covers.

use serde_json::Map;

use super::context::FINAL_REVIEW_KIND;
use super::decide::{self, MAX_FINAL_REVIEWS};
use super::worker::{Worker, now};
use crate::error::Error;
use crate::git::Repo;
use crate::paths::ROLES_FILE;
use crate::roles::Triggers;
use crate::state::{RunScope, State};
use crate::task::{Change, NewTask, Patch};

/// The title of a final review task.
pub(crate) const FINAL_REVIEW_TITLE: &str = "Final review of the run";

/// The body of a final review task: what passing and failing look like.
const FINAL_REVIEW_BODY: &str = "Review everything this run merged, as a whole (the prompt lists its tasks, commits and changed files). If it holds up, mark this task complete. Otherwise add one follow-up task per problem with `ralph task add`, then mark this task complete: the follow-ups are worked next, and then one more final review runs (never a third).";

/// Keeps the review scope of a run killed or ended before its queue
/// drained (on the same base, which still holds its start), or begins one
/// at the base's tip.
pub(super) fn open_scope(state: &mut State, repo: &Repo) -> Result<(), Error> {
    let kept = state
        .scope
        .as_ref()
        .is_some_and(|scope| scope.base == repo.base() && repo.base_descends_from(&scope.start));
    if !kept {
        state.scope = Some(RunScope {
            base: repo.base().to_owned(),
            start: repo.branch_tip(repo.base())?.to_string(),
            merged: Vec::new(),
            reviews: Vec::new(),
        });
    }
    Ok(())
}

/// What is wrong, and the fix, when `final_review` is on but no trigger
/// looks at a task's kind: the reviews would run without their role
/// (`ralph run` warns at its start, `ralph doctor` says it too).
pub(crate) fn missing_role(enabled: bool, triggers: &Triggers) -> Option<(String, &'static str)> {
    (enabled && !triggers.read_variable("task_kind")).then(|| {
        (
            format!("final_review is on, but no trigger in {ROLES_FILE} reads task_kind, so the final review gets no final-reviewer role"),
            "add `- condition: \"task_kind == 'final_review'\"` with `role: \"final-reviewer\"` as the first trigger (`ralph init` writes roles/final-reviewer.md)",
        )
    })
}

impl Worker<'_> {
    /// Adds the final review task when the queue drained with nothing left
    /// and one is due (`decide::final_review_due`); returns whether it did.
    pub(super) fn add_final_review(&mut self) -> Result<bool, Error> {
        let queue = self.store.load()?;
        let clear = queue.next().is_none() && queue.counts().active_total() == 0;
        drop(queue);
        let Some(scope) = &self.state.scope else {
            return Ok(false);
        };
        let enabled = self.options.settings.final_review;
        if !decide::final_review_due(enabled, clear, &scope.merged, &scope.reviews) {
            return Ok(false);
        }
        let review = NewTask {
            title: FINAL_REVIEW_TITLE.to_owned(),
            body: Some(FINAL_REVIEW_BODY.to_owned()),
            kind: Some(FINAL_REVIEW_KIND.to_owned()),
            ..NewTask::default()
        };
        let changes = self.store.apply(&Patch::Add(review), &now())?;
        let Some(id) = changes.into_iter().find_map(|change| match change {
            Change::Added(id) => Some(id),
            _ => None,
        }) else {
            return Ok(false);
        };
        let scope = self.state.scope.as_mut().expect("checked above");
        scope.reviews.push(id.to_string());
        let detail = format!(
            "final review {} of at most {MAX_FINAL_REVIEWS} (the queue drained)",
            scope.reviews.len()
        );
        self.save_state()?;
        self.ui.log(&format!("{id} added: {detail}"));
        self.record_between(Some(&id), "final_review", "added", &detail, Map::new())?;
        Ok(true)
    }

    /// Notes task `id` merged in the review scope (a parallel worker's
    /// merges are noted by the run that started it).
    pub(super) fn note_merged(&mut self, id: &str) {
        if self.seat.pooled().is_none()
            && let Some(scope) = &mut self.state.scope
        {
            scope.merged.push(id.to_owned());
        }
    }
}
