//! The base branch's history, first parents only.

use super::BranchCommit;
use super::error::{Context, Result};

impl super::Repo {
    /// The base's commits, newest first, first parents only (like
    /// `git log --first-parent`), up to `limit`.
    fn base_commits(
        &self,
        limit: usize,
    ) -> Result<impl Iterator<Item = Result<git2::Commit<'_>>> + '_> {
        let mut walk = self.git.revwalk().doing("walk the history")?;
        walk.push_ref(&format!("refs/heads/{}", self.base))
            .doing("start at the base")?;
        walk.simplify_first_parent().doing("follow first parents")?;
        Ok(walk.take(limit).map(|oid| {
            let oid = oid.doing("walk the history")?;
            self.git.find_commit(oid).doing("read a commit")
        }))
    }

    /// Whether one of the base's last `limit` commits (first parents) has
    /// the trailer line `trailer` (`Completes: A.1`): a squash that already
    /// landed is never made twice.
    pub fn base_has_trailer(&self, trailer: &str, limit: usize) -> Result<bool> {
        for commit in self.base_commits(limit)? {
            let commit = commit?;
            let message = String::from_utf8_lossy(commit.message_bytes());
            if message.lines().any(|line| line.trim_end() == trailer) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The last `limit` commits of the base branch, newest first (first
    /// parents only, like `git log --oneline --first-parent`).
    pub fn base_log(&self, limit: usize) -> Result<Vec<BranchCommit>> {
        self.base_commits(limit)?
            .map(|commit| {
                let commit = commit?;
                Ok(BranchCommit {
                    id: commit.id().into(),
                    subject: commit
                        .summary_bytes()
                        .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
                        .unwrap_or_default(),
                })
            })
            .collect()
    }
}
