//! Work that changes what agents may not change waits for a person: when
//! agents run confined, a task whose branch changes a protected path
//! (ralph's configuration, the repository's guard rails;
//! `crate::protected`) is blocked before its branch is checked out again
//! and before it is merged, until a person approves the change as it is
//! (`ralph task approve`). A change the checkout's own file holds, where
//! the base has that file, is a person's: a confined agent cannot write
//! it (the caps raised in `config/ralph.yaml` during a run, swept into the
//! task's leftovers).

use super::confine::Checkout;
use super::worker::Worker;
use crate::error::Error;
use crate::protected::Approval;
use crate::protected::Protected;
use crate::task::{Status, TaskId};

impl Worker<'_> {
    /// Blocks task `id` when its `branch` changes protected paths that a
    /// person has not let through as they are now, noting the change for
    /// `ralph task approve`, which puts the task back to `then`. Whether
    /// it did.
    pub(super) fn held_for_approval(
        &mut self,
        id: &TaskId,
        branch: &str,
        then: Status,
    ) -> Result<bool, Error> {
        if !matches!(self.options.sandbox, super::confine::Sandbox::On(_)) {
            return Ok(false);
        }
        let changed = self.repo.files_changed(branch)?;
        let touched = self.protected().touched(&changed);
        if touched.is_empty() {
            return Ok(false);
        }
        let on_base = self.repo.ids_at(self.repo.base(), &touched)?;
        let changes: Vec<(String, String)> = (self.repo.ids_at(branch, &touched)?)
            .into_iter()
            .zip(on_base)
            .filter(|((path, id), (_, base))| {
                base == "deleted" || !self.repo.tree_file_is(path, id)
            })
            .map(|(change, _)| change)
            .collect();
        if changes.is_empty() {
            return Ok(false);
        }
        let touched: Vec<String> = changes.iter().map(|(path, _)| path.clone()).collect();
        let approval = Approval::load(&self.paths, id.as_str());
        if approval.is_some_and(|approval| approval.lets_through(&changes)) {
            return Ok(false);
        }
        let waiting = Approval {
            branch: branch.to_owned(),
            changes: changes.into_iter().collect(),
            status: then.as_str().to_owned(),
            approved: None,
        };
        let file = self.paths.approval(id.as_str());
        (waiting.save(&self.paths, id.as_str())).map_err(crate::files::at::<Error>(file))?;
        let reason = format!(
            "its work changes {}, which agents may not change (docs/SECURITY.md); see the change with `git diff {}...{branch}` and let it through with `ralph task approve {id}`",
            crate::text::named(&touched, 5),
            self.repo.base()
        );
        self.block(id, &reason)?;
        Ok(true)
    }
}

impl Worker<'_> {
    /// What of this worker's checkout agents may not change.
    pub(super) fn protected(&self) -> Protected {
        Protected::new(
            &self.options.settings.sandbox,
            self.repo.project_inner(),
            self.repo.tracked_hooks().as_deref(),
        )
    }

    /// Where this worker's agent and checks work.
    pub(super) fn checkout<'p>(&'p self, protected: &'p Protected) -> Checkout<'p> {
        Checkout {
            dir: self.repo.workdir(),
            git_dir: Some(self.repo.common_dir()),
            protected,
        }
    }
}
