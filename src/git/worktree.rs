//! The working tree: what is uncommitted, and checkouts that carry the queue
//! files' bytes over unchanged.

use std::fs::{self, File};
use std::io;
use std::path::Path;

use git2::build::CheckoutBuilder;
use git2::{ErrorCode, Index, IndexEntry, IndexTime, Status, StatusOptions};

use super::error::{Context, Error, Result, io_error};
use super::{Repo, git2_path};
use crate::task::LOCK_FILE;

impl Repo {
    /// The paths `git status` would list, apart from ralph's own files:
    /// modified, staged, deleted, conflicted and untracked (not ignored).
    pub fn uncommitted_changes(&self) -> Result<Vec<String>> {
        let statuses = self.scan()?;
        let mut paths: Vec<String> = statuses
            .iter()
            .filter(|entry| !entry.status().is_ignored())
            .filter_map(|entry| {
                let path = String::from_utf8_lossy(entry.path_bytes()).into_owned();
                // Runtime files are ralph's only while untracked: a tracked
                // one would be overwritten by a checkout.
                let own = self.is_queue_file(&path)
                    || (entry.status() == Status::WT_NEW && self.is_runtime_file(&path));
                (!own).then_some(path)
            })
            .collect();
        paths.dedup();
        Ok(paths)
    }

    /// `git status` with untracked files, without ignored ones, tried again
    /// when a file changes or vanishes while the tree is scanned (a
    /// person's temp file renamed over tasks.jsonl).
    fn scan(&self) -> Result<git2::Statuses<'_>> {
        let mut options = StatusOptions::new();
        options
            .include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(false)
            .renames_head_to_index(false)
            // Saves refreshed file stats in the index, so the next scan does
            // not hash every file again (a checkout copied elsewhere, or
            // touched, has stale stats for all of them).
            .update_index(true);
        let mut attempt = 0;
        loop {
            match self.git.statuses(Some(&mut options)) {
                Err(err) if attempt < 20 && super::error::is_transient(&err) => {
                    attempt += 1;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                other => return other.doing("read the working tree's status"),
            }
        }
    }

    /// The working tree's changes against the index that a commit of
    /// leftovers takes, as (path, deleted), ralph's own files left out.
    pub(super) fn uncommitted_paths(&self) -> Result<Vec<(String, bool)>> {
        let statuses = self.scan()?;
        let worktree = Status::WT_NEW
            | Status::WT_MODIFIED
            | Status::WT_DELETED
            | Status::WT_TYPECHANGE
            | Status::WT_RENAMED;
        Ok(statuses
            .iter()
            .filter(|entry| entry.status().intersects(worktree))
            .filter_map(|entry| {
                let path = String::from_utf8_lossy(entry.path_bytes()).into_owned();
                (!self.is_own(&path)).then(|| (path, entry.status().contains(Status::WT_DELETED)))
            })
            .collect())
    }

    /// Fails with [`Error::Dirty`] naming the uncommitted paths, if any.
    pub(super) fn ensure_clean(&self) -> Result<()> {
        let paths = self.uncommitted_changes()?;
        if paths.is_empty() {
            Ok(())
        } else {
            Err(Error::Dirty { paths })
        }
    }

    /// Checks out `branch` (the working tree must be clean apart from
    /// ralph's own files: callers check) without ever writing the queue
    /// files: they keep their bytes on disk, whatever the branches hold.
    pub(super) fn checkout_carrying_queue(&self, branch: &str) -> Result<()> {
        // Writers of the queue wait meanwhile, so no `ralph task` write
        // lands in the middle of a branch switch.
        let _lock = self.lock_queue()?;
        self.checkout_leaving_queue(branch)
    }

    /// Checks out only the paths that differ between HEAD and `branch`,
    /// leaving out the queue files: a checkout killed halfway can then
    /// never leave a queue file truncated, and a hand edit is never undone.
    fn checkout_leaving_queue(&self, branch: &str) -> Result<()> {
        let target = self.tip(branch)?;
        let target_tree = target.tree().doing(&format!("read the tree of {branch}"))?;
        let current_tree = self
            .git
            .head()
            .and_then(|head| head.peel_to_tree())
            .doing("read HEAD's tree")?;
        let diff = self
            .git
            .diff_tree_to_tree(Some(&current_tree), Some(&target_tree), None)
            .doing(&format!("compare HEAD with {branch}"))?;
        let mut paths: Vec<String> = Vec::new();
        for delta in diff.deltas() {
            for file in [delta.old_file(), delta.new_file()] {
                if let Some(path) = file.path().and_then(|p| p.to_str())
                    && !self.is_queue_file(path)
                    && !paths.iter().any(|p| p == path)
                {
                    paths.push(path.to_owned());
                }
            }
        }
        if !paths.is_empty() {
            // Forced: everything else is clean, and untracked files stay.
            let mut checkout = CheckoutBuilder::new();
            checkout.force().disable_pathspec_match(true);
            for path in &paths {
                checkout.path(path);
            }
            self.git
                .checkout_tree(target.as_object(), Some(&mut checkout))
                .doing(&format!("check out {branch}"))?;
        }
        // The queue files' index entries follow the new HEAD, so `git status`
        // compares their bytes on disk with the branch's version.
        let mut index = self.git.index().doing("open the index")?;
        for file in &self.queue {
            self.unstage(&mut index, &target_tree, &file.rel)?;
        }
        index.write().doing("write the index")?;
        self.git
            .set_head(&format!("refs/heads/{branch}"))
            .doing(&format!("point HEAD at {branch}"))
    }

    /// Takes the task store's queue lock (`.ralph/tasks.lock`), waiting for
    /// a writer to finish; released when the returned file is dropped.
    fn lock_queue(&self) -> Result<File> {
        crate::task::lock_queue(&self.project).map_err(io_error(&self.project.join(LOCK_FILE)))
    }

    /// Sets the queue files' entries of `index` to their bytes on disk: a
    /// missing file is removed, and a file neither tracked in `base` nor
    /// committable (ignored) is left out. Clears any conflict on them.
    pub(super) fn put_queue_files(&self, index: &mut Index, base: &git2::Tree<'_>) -> Result<()> {
        for file in &self.queue {
            let path = git2_path(&file.rel);
            remove_entry(index, path)?;
            let Some(bytes) = read_if_exists(&file.abs)? else {
                continue;
            };
            let mode = match base.get_path(path) {
                Ok(entry) => u32::try_from(entry.filemode()).unwrap_or(0o100644),
                Err(_) if self.git.is_path_ignored(path).doing("read .gitignore")? => continue,
                Err(_) => 0o100644,
            };
            let blob = self
                .git
                .blob(&bytes)
                .doing(&format!("store {}", file.rel))?;
            index
                .add(&entry(&file.rel, mode, blob))
                .doing(&format!("stage {}", file.rel))?;
        }
        Ok(())
    }

    /// Sets `path`'s entry of `index` back to its version in `tree`, or
    /// removes it when `tree` has none: nothing of it is staged.
    pub(super) fn unstage(
        &self,
        index: &mut Index,
        tree: &git2::Tree<'_>,
        rel: &str,
    ) -> Result<()> {
        let path = git2_path(rel);
        match tree.get_path(path) {
            // Already as in `tree`: keep the entry and its cached file stats.
            Ok(item)
                if index
                    .get_path(path, 0)
                    .is_some_and(|staged| staged.id == item.id()) =>
            {
                Ok(())
            }
            Ok(item) => {
                let mode = u32::try_from(item.filemode()).unwrap_or(0o100644);
                index
                    .add(&entry(rel, mode, item.id()))
                    .doing(&format!("unstage {rel}"))
            }
            Err(err) if err.code() == ErrorCode::NotFound => remove_entry(index, path),
            Err(err) => Err(err).doing(&format!("look up {rel}")),
        }
    }
}

fn remove_entry(index: &mut Index, path: &Path) -> Result<()> {
    match index.remove_path(path) {
        Err(err) if err.code() != ErrorCode::NotFound => {
            Err(err).doing(&format!("unstage {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// An index entry without file-system metadata: git re-reads the file.
fn entry(rel: &str, mode: u32, id: git2::Oid) -> IndexEntry {
    IndexEntry {
        ctime: IndexTime::new(0, 0),
        mtime: IndexTime::new(0, 0),
        dev: 0,
        ino: 0,
        mode,
        uid: 0,
        gid: 0,
        file_size: 0,
        id,
        flags: 0,
        flags_extended: 0,
        path: rel.as_bytes().to_vec(),
    }
}

fn read_if_exists(path: &Path) -> Result<Option<Vec<u8>>> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(io_error(path)(err)),
    }
}
