//! Making a new repository with its first commit (`ralph demo`).

use std::path::Path;

use git2::{IndexAddOption, Repository, RepositoryInitOptions};

use super::error::{Context, Result};
use super::identity::Identity;
use super::{BranchCommit, CommitId};

/// Creates a repository in `dir` whose first branch is `branch`, and commits
/// every file there that is not ignored as its first commit.
pub fn init_with_commit(dir: &Path, branch: &str, message: &str) -> Result<CommitId> {
    let mut options = RepositoryInitOptions::new();
    options.initial_head(branch);
    let git = Repository::init_opts(dir, &options).doing("create the repository")?;
    let mut index = git.index().doing("open the index")?;
    index
        .add_all(["*"], IndexAddOption::DEFAULT, None)
        .doing("stage the files")?;
    index.write().doing("write the index")?;
    let tree_id = index.write_tree().doing("write the tree")?;
    let tree = git.find_tree(tree_id).doing("read the tree")?;
    let signature = Identity::from_config(&git).signature()?;
    let commit = git
        .commit(Some("HEAD"), &signature, &signature, message, &tree, &[])
        .doing("make the first commit")?;
    Ok(commit.into())
}

impl super::Repo {
    /// Removes `index.lock` left by a git process that died holding it (a
    /// ralph killed with -9 mid-commit): a live holder finishes within the
    /// second waited first. Returns whether a stale lock was removed.
    pub fn clear_stale_index_lock(&self) -> Result<bool> {
        let lock = self.git.path().join("index.lock");
        for _ in 0..10 {
            if !lock.exists() {
                return Ok(false);
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        match std::fs::remove_file(&lock) {
            Ok(()) => Ok(true),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(err) => Err(super::error::io_error(&lock)(err)),
        }
    }

    /// Whether one of the base's last `limit` commits (first parents) has
    /// the trailer line `trailer` (`Completes: A.1`): a squash that already
    /// landed is never made twice.
    pub fn base_has_trailer(&self, trailer: &str, limit: usize) -> Result<bool> {
        let mut walk = self.git.revwalk().doing("walk the history")?;
        walk.push_ref(&format!("refs/heads/{}", self.base))
            .doing("start at the base")?;
        walk.simplify_first_parent().doing("follow first parents")?;
        for oid in walk.take(limit) {
            let oid = oid.doing("walk the history")?;
            let commit = self.git.find_commit(oid).doing("read a commit")?;
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
        let mut walk = self.git.revwalk().doing("walk the history")?;
        walk.push_ref(&format!("refs/heads/{}", self.base))
            .doing("start at the base")?;
        walk.simplify_first_parent().doing("follow first parents")?;
        let mut commits = Vec::new();
        for oid in walk.take(limit) {
            let oid = oid.doing("walk the history")?;
            let commit = self.git.find_commit(oid).doing("read a commit")?;
            commits.push(BranchCommit {
                id: oid.into(),
                subject: commit
                    .summary_bytes()
                    .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
                    .unwrap_or_default(),
            });
        }
        Ok(commits)
    }
}
