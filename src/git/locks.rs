//! Lock files left by a git process that died holding them.

use std::path::{Path, PathBuf};

use super::error::Result;

impl super::Repo {
    /// Removes the lock files a git process left when it died holding them
    /// (a ralph killed with -9 mid-commit or mid-ref-update): `index.lock`
    /// and `HEAD.lock` of this working tree, `packed-refs.lock` and any
    /// `*.lock` under `refs/` of the repository (the main one's, for a
    /// linked worktree). A live holder finishes within the second waited
    /// first; none is removed while a git process works in the repository
    /// (a person's `git commit` holds `index.lock` while its editor is
    /// open). Returns the removed files, relative to the working tree where
    /// they are inside it.
    pub fn clear_stale_locks(&self) -> Result<Vec<PathBuf>> {
        let (git_dir, common_dir) = (self.git.path(), self.git.commondir());
        let mut locks = Vec::new();
        for _ in 0..10 {
            locks = lock_files(git_dir, common_dir);
            if locks.is_empty() {
                return Ok(Vec::new());
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        if crate::platform::git_at_work_in(&[self.workdir(), git_dir, common_dir]) {
            return Ok(Vec::new());
        }
        let mut removed = Vec::new();
        for lock in locks {
            match std::fs::remove_file(&lock) {
                Ok(()) => {}
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
                Err(err) => return Err(super::error::io_error(&lock)(err)),
            }
            removed.push(match lock.strip_prefix(self.workdir()) {
                Ok(inside) => inside.to_owned(),
                Err(_) => lock,
            });
        }
        Ok(removed)
    }
}

/// The lock files git and libgit2 take to change the index or HEAD (in
/// the working tree's git folder `git_dir`) or a ref (in `common_dir`, the
/// repository's shared folder: the same one but in a linked worktree).
pub(super) fn lock_files(git_dir: &Path, common_dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = [
        git_dir.join("index.lock"),
        git_dir.join("HEAD.lock"),
        common_dir.join("packed-refs.lock"),
    ]
    .into_iter()
    .filter(|path| path.exists())
    .collect();
    let mut folders = vec![common_dir.join("refs")];
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
