//! After an agent's iteration: put back the queue files when git reverted
//! them or the agent rewrote the archive, and say what happened. The store
//! keeps what ralph last knew (`task/watch.rs`); git says whether the bytes
//! found are a version it holds, and which command shape put them there.

use super::worker::Worker;
use crate::agent::FailureClass;
use crate::error::Error;
use crate::git::CommitId;
use crate::task::{Known, Restored};
use crate::text::count;

/// The queue files' state when the agent started.
pub(super) struct Before<'a> {
    /// The task branch and its tip.
    pub branch: String,
    pub tip: CommitId,
    /// How many entries the stash had.
    pub stashes: usize,
    /// The queue files as the watch copied them.
    pub queue: &'a Known,
}

impl Worker<'_> {
    /// Ends the store's watch and puts back what the iteration took from
    /// the queue files: the failure class and evidence, or `None` when
    /// both are as ralph knew them (or a person's hand edit changed
    /// `tasks.jsonl`, which is kept).
    pub(super) fn put_back_queue(
        &self,
        before: &Before<'_>,
    ) -> Result<Option<(FailureClass, String)>, Error> {
        let git_version =
            |name: &str, bytes: &[u8]| self.repo.queue_file_version(name, bytes, &before.tip);
        let restored = match self.seat.pooled() {
            // A worker's queue files are links to the project's: only the
            // archive can be rewritten, and the run watches it for all.
            Some(_) => self.store.put_back_archive(git_version)?,
            None => match self.store.unwatch()? {
                Some(known) => self.store.put_back(&known, git_version)?,
                // ralph's copies went (`git clean -x`): a queue file that
                // went with them comes back as it was when the agent
                // started.
                None => self.store.put_back_deleted(before.queue)?,
            },
        };
        tracing::debug!(?restored, "queue files checked after the iteration");
        if !restored.any() {
            return Ok(None);
        }
        let stashes = self.repo.stashes()?;
        let stashed = stashes.len() > before.stashes;
        let went_back = self
            .repo
            .branch_tip(&before.branch)
            .is_ok_and(|tip| self.repo.went_back(&before.tip, &tip));
        let how = if stashed {
            "`git stash`"
        } else if went_back {
            "`git reset --hard` to an earlier commit"
        } else {
            "`git checkout -- .`, `git restore .` or `git reset --hard`"
        };
        let mut sentences = describe(&restored, how);
        if stashed {
            let newest = &stashes[0];
            sentences.push(format!(
                "the iteration left its work in stash@{{0}} ({}): `git stash pop` takes it back",
                crate::text::safe(&newest.message)
            ));
        }
        sentences.push(
            "never let git revert or rewrite tasks.jsonl or tasks-done.jsonl: change tasks only with `ralph task ...`"
                .to_owned(),
        );
        let evidence = sentences.join("; ");
        self.ui.line(&format!("warning: {evidence}"));
        let reverted = restored.tasks.is_some()
            || restored
                .archive
                .as_ref()
                .is_some_and(|archive| archive.reverted_to.is_some());
        let class = if reverted {
            FailureClass::QueueReverted
        } else {
            FailureClass::ArchiveEdited
        };
        Ok(Some((class, evidence)))
    }
}

/// What was put back and why, a sentence per file; `how` names the git
/// command shapes that revert a file.
fn describe(restored: &Restored, how: &str) -> Vec<String> {
    let mut sentences = Vec::new();
    if let Some(tasks) = &restored.tasks {
        let what = match &tasks.reverted_to {
            None => "tasks.jsonl was deleted".to_owned(),
            Some(at) => format!("tasks.jsonl was reverted to its version in {at}, as {how} does"),
        };
        let lost = match tasks.missing.as_slice() {
            [] => String::new(),
            ids => format!(" ({} gone: {})", count(ids.len(), "task"), ids.join(", ")),
        };
        let how_back = if restored.from_start {
            "as it was when the iteration started: ralph's copies in .ralph/ were removed too (`git clean -x`), so changes made through `ralph task` during the iteration are not in it"
        } else {
            "as it last knew it, with the changes made through `ralph task` during the iteration"
        };
        sentences.push(format!("{what}{lost}; ralph put back the queue {how_back}"));
    }
    if let Some(archive) = &restored.archive {
        let mut what = Vec::new();
        if let Some(at) = &archive.reverted_to {
            what.push(format!(
                "was reverted to its version in {at}, as {how} does"
            ));
        }
        if archive.changed > 0 {
            what.push(format!(
                "had {} changed or removed",
                count(archive.changed, "archived record")
            ));
        }
        if let Some(moved) = &archive.quarantined {
            what.push(format!(
                "had {} that ralph did not write (moved to {})",
                count(archive.foreign, "line"),
                moved.display()
            ));
        }
        sentences.push(format!(
            "tasks-done.jsonl {}; ralph put back its records as it wrote them (the archive is append-only, and only ralph appends to it during a run)",
            what.join(" and ")
        ));
    }
    sentences
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::{ArchiveRestored, TasksRestored};

    #[test]
    fn each_loss_is_named_with_the_git_command_that_causes_it() {
        let restored = Restored {
            tasks: Some(TasksRestored {
                reverted_to: Some("commit 1a2b3c4".into()),
                missing: vec!["B".into(), "C".into()],
            }),
            archive: Some(ArchiveRestored {
                reverted_to: None,
                changed: 1,
                foreign: 1,
                quarantined: Some(".ralph/queue/quarantine/x.foreign".into()),
            }),
            from_start: false,
        };
        assert_eq!(
            describe(&restored, "`git stash`"),
            [
                "tasks.jsonl was reverted to its version in commit 1a2b3c4, as `git stash` does (2 tasks gone: B, C); ralph put back the queue as it last knew it, with the changes made through `ralph task` during the iteration",
                "tasks-done.jsonl had 1 archived record changed or removed and had 1 line that ralph did not write (moved to .ralph/queue/quarantine/x.foreign); ralph put back its records as it wrote them (the archive is append-only, and only ralph appends to it during a run)",
            ]
        );
    }
}
