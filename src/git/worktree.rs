//! The working tree: what is uncommitted, and checkouts that carry the queue
//! files' bytes over unchanged.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use git2::build::CheckoutBuilder;
use git2::{ErrorCode, Index, IndexEntry, IndexTime, Status, StatusOptions};

use super::error::{Context, Error, Result, io_error};
use super::{Repo, git2_path};
use crate::files;
use crate::task::LOCK_FILE;

/// The bytes of each queue file before a checkout (`None`: no such file).
struct SavedQueue(Vec<(PathBuf, Option<Vec<u8>>)>);

impl Repo {
    /// The paths `git status` would list, apart from ralph's own files:
    /// modified, staged, deleted, conflicted and untracked (not ignored).
    pub fn uncommitted_changes(&self) -> Result<Vec<String>> {
        let mut options = StatusOptions::new();
        options
            .include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(false)
            .renames_head_to_index(false);
        let statuses = self
            .git
            .statuses(Some(&mut options))
            .doing("read the working tree's status")?;
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
    /// ralph's own files: callers check) and puts the queue files' bytes
    /// back as they were, whatever happened.
    pub(super) fn checkout_carrying_queue(&self, branch: &str) -> Result<()> {
        // The store's writers wait meanwhile, so none of their writes is
        // overwritten by the saved bytes.
        let _lock = self.lock_queue()?;
        let saved = self.save_queue()?;
        let switched = self.force_checkout(branch);
        let restored = self.restore_queue(&saved);
        switched.and(restored)
    }

    fn force_checkout(&self, branch: &str) -> Result<()> {
        let commit = self.tip(branch)?;
        // Forced, so that queue files differing between the trees do not
        // stop it; everything else is clean, and untracked files stay.
        let mut checkout = CheckoutBuilder::new();
        checkout.force();
        self.git
            .checkout_tree(commit.as_object(), Some(&mut checkout))
            .doing(&format!("check out {branch}"))?;
        self.git
            .set_head(&format!("refs/heads/{branch}"))
            .doing(&format!("point HEAD at {branch}"))
    }

    /// Takes the task store's queue lock (`.ralph/tasks.lock`), waiting for
    /// a writer to finish; released when the returned file is dropped.
    fn lock_queue(&self) -> Result<File> {
        crate::task::lock_queue(&self.project).map_err(io_error(&self.project.join(LOCK_FILE)))
    }

    fn save_queue(&self) -> Result<SavedQueue> {
        let mut saved = Vec::new();
        for file in &self.queue {
            saved.push((file.abs.clone(), read_if_exists(&file.abs)?));
        }
        Ok(SavedQueue(saved))
    }

    fn restore_queue(&self, saved: &SavedQueue) -> Result<()> {
        for (path, bytes) in &saved.0 {
            if read_if_exists(path)? == *bytes {
                continue;
            }
            match bytes {
                Some(bytes) => files::write_atomic(path, bytes).map_err(io_error(path))?,
                None => fs::remove_file(path).map_err(io_error(path))?,
            }
        }
        Ok(())
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
