//! The task store: the only code that writes `tasks.jsonl` and
//! `tasks-done.jsonl`. Every change is applied under a short lock to the
//! files as they are at that moment.

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};

use super::error::{Error, Result};
use super::patch::{Change, Patch};
use super::queue::{DONE_FILE, Queue, TASKS_FILE};
use crate::files;

/// Folder for ralph's runtime files, relative to the project root.
pub const RUNTIME_DIR: &str = ".ralph";
/// The short lock every queue write holds, relative to the project root.
pub const LOCK_FILE: &str = ".ralph/tasks.lock";

/// The task files of one project.
#[derive(Clone, Debug)]
pub struct Store {
    root: PathBuf,
}

impl Store {
    /// The store of the project rooted at `root`.
    pub fn open(root: impl Into<PathBuf>) -> Store {
        Store { root: root.into() }
    }

    /// The project root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Path of `tasks.jsonl`.
    pub fn tasks_path(&self) -> PathBuf {
        self.root.join(TASKS_FILE)
    }

    /// Path of `tasks-done.jsonl`.
    pub fn done_path(&self) -> PathBuf {
        self.root.join(DONE_FILE)
    }

    /// Reads and validates both files without locking: writers replace the
    /// files atomically, so a reader always sees a whole version.
    pub fn load(&self) -> Result<Queue> {
        let tasks = self.read(&self.tasks_path())?;
        let done = self.read(&self.done_path())?;
        Queue::parse_owned(tasks, &done)
    }

    /// Applies `patch` to the files as they are now: takes the lock, re-reads,
    /// applies, validates, appends archive records (fsynced) and then
    /// replaces `tasks.jsonl` atomically. Nothing is written on error.
    pub fn apply(&self, patch: &Patch, now: &str) -> Result<Vec<Change>> {
        let _lock = self.lock()?;
        let mut queue = self.load()?;
        let changes = queue.apply(patch, now)?;
        queue.validate()?;
        self.write(&queue)?;
        Ok(changes)
    }

    /// Writes what `queue` changed: archive records first, so a crash in
    /// between leaves a record in both files, which reads as archived and is
    /// cleaned up by repeating the archive.
    fn write(&self, queue: &Queue) -> Result<()> {
        let appended = queue.done.pending_text();
        if !appended.is_empty() {
            let path = self.done_path();
            files::append_durable(&path, appended.as_bytes())
                .map_err(|source| Error::Io { path, source })?;
        }
        if queue.tasks.is_changed() {
            let path = self.tasks_path();
            files::write_atomic_with(&path, |out| queue.tasks.write_to(out))
                .map_err(|source| Error::Io { path, source })?;
        }
        Ok(())
    }

    fn read(&self, path: &Path) -> Result<Vec<u8>> {
        files::read_or_empty(path).map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })
    }

    /// Takes the exclusive queue lock, waiting for another writer to finish.
    fn lock(&self) -> Result<File> {
        lock_queue(&self.root).map_err(|source| Error::Io {
            path: self.root.join(LOCK_FILE),
            source,
        })
    }
}

/// Takes the queue lock `.ralph/tasks.lock` of the project at `root`,
/// waiting for the holder; released when the returned file is dropped, and
/// by the OS if the process dies. Every writer of the queue files holds it.
pub fn lock_queue(root: &Path) -> std::io::Result<File> {
    fs::create_dir_all(root.join(RUNTIME_DIR))?;
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(root.join(LOCK_FILE))?;
    file.lock()?;
    Ok(file)
}
