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
    /// Removes the lock files a git process left when it died holding them
    /// (a ralph killed with -9 mid-commit or mid-ref-update): `index.lock`,
    /// `HEAD.lock`, `packed-refs.lock` and any `*.lock` under `refs/`. A
    /// live holder finishes within the second waited first. Returns the
    /// removed files, relative to the git folder.
    pub fn clear_stale_locks(&self) -> Result<Vec<String>> {
        let git_dir = self.git.path();
        let mut locks = Vec::new();
        for _ in 0..10 {
            locks = lock_files(git_dir);
            if locks.is_empty() {
                return Ok(Vec::new());
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let mut removed = Vec::new();
        for lock in locks {
            match std::fs::remove_file(&lock) {
                Ok(()) => {}
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
                Err(err) => return Err(super::error::io_error(&lock)(err)),
            }
            let name = lock.strip_prefix(git_dir).unwrap_or(&lock);
            removed.push(name.to_string_lossy().into_owned());
        }
        Ok(removed)
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

/// The lock files in the git folder `git_dir` that git and libgit2 take to
/// change the index or a ref.
fn lock_files(git_dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found: Vec<std::path::PathBuf> = ["index.lock", "HEAD.lock", "packed-refs.lock"]
        .iter()
        .map(|name| git_dir.join(name))
        .filter(|path| path.exists())
        .collect();
    let mut folders = vec![git_dir.join("refs")];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                folders.push(path);
            } else if path.extension().is_some_and(|ext| ext == "lock") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}
