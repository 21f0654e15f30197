//! The task store: the only code that writes `tasks.jsonl` and
//! `tasks-done.jsonl`. Every change is applied under a short lock to the
//! files as they are at that moment.

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::error::{Error, Result};
use super::file::Torn;
use super::patch::{Change, Patch};
use super::queue::{DONE_FILE, Queue, TASKS_FILE};
use crate::files::{self, Stamp};

/// Folder for ralph's runtime files, relative to the project root.
pub const RUNTIME_DIR: &str = ".ralph";
/// Where torn lines cut off the archive are kept, relative to the project root.
pub const QUARANTINE_DIR: &str = ".ralph/quarantine";
/// The short lock every queue write holds, relative to the project root.
pub const LOCK_FILE: &str = ".ralph/tasks.lock";

/// Scratch space for the next version of `tasks.jsonl`, relative to the
/// project root: it holds an old version between writes (see
/// [`files::write_atomic_unless_changed`]).
pub const SPARE_FILE: &str = ".ralph/tasks.jsonl.spare";

/// The task files of one project.
#[derive(Clone, Debug)]
pub struct Store {
    root: PathBuf,
    /// The stamps of `tasks.jsonl` and `tasks-done.jsonl` the last time
    /// they loaded without an error (shared by clones: it is about the
    /// files on disk).
    valid: Arc<Mutex<Option<(Stamp, Stamp)>>>,
    /// Whether a big `tasks.jsonl` is mapped rather than read (see
    /// [`Store::mapping`]).
    map: bool,
}

impl Store {
    /// The store of the project rooted at `root`.
    pub fn open(root: impl Into<PathBuf>) -> Store {
        Store {
            root: root.into(),
            valid: Arc::default(),
            map: false,
        }
    }

    /// This store, mapping a big `tasks.jsonl` into memory when it loads
    /// (see [`files::map_leased`]) instead of reading it: no copy of its
    /// bytes, but until the queue loaded is dropped (and its tasks'
    /// strings with it), anybody opening the file for writing waits. For
    /// a command that is over in moments, never for the loop.
    pub fn mapping(self) -> Store {
        Store { map: true, ..self }
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

    /// Reads and validates both files without locking: ralph's writers
    /// replace `tasks.jsonl` atomically, and a file still being rewritten in
    /// place (an editor) is read once it has settled.
    pub fn load(&self) -> Result<Queue> {
        Ok(self.load_stamped()?.0)
    }

    fn load_stamped(&self) -> Result<(Queue, Stamp)> {
        let path = self.tasks_path();
        let done_path = self.done_path();
        let done_stamp = Stamp::of(&done_path).map_err(|source| Error::Io {
            path: done_path.clone(),
            source,
        })?;
        let done = self.read(&done_path)?;
        let io = |source| Error::Io {
            path: path.clone(),
            source,
        };
        // Under the lease, nobody is writing it: it has settled.
        let mapped = match self.map {
            true => files::map_leased(&path).map_err(io)?,
            false => None,
        };
        let (queue, stamp) = match mapped {
            Some((tasks, stamp)) => (Queue::parse_mapped(tasks, &done), stamp),
            None => {
                files::read_settled(&path, |tasks| Queue::parse_owned(tasks, &done)).map_err(io)?
            }
        };
        let valid = queue.is_ok() && Stamp::of(&done_path).ok() == Some(done_stamp);
        *self.valid.lock().expect("no panic while holding it") =
            valid.then_some((stamp, done_stamp));
        Ok((queue?, stamp))
    }

    /// Applies `patch` to the files as they are now: takes the lock, re-reads,
    /// applies, validates, appends archive records (fsynced) and then
    /// replaces `tasks.jsonl` atomically. When someone changed `tasks.jsonl`
    /// meanwhile without the lock (`jq ... && mv`, `>>`, an editor), the
    /// patch is applied again to the new content, so their edit is kept.
    /// Nothing is written on error.
    pub fn apply(&self, patch: &Patch, now: &str) -> Result<Vec<Change>> {
        const ATTEMPTS: usize = 20;
        let _lock = self.lock()?;
        // What earlier attempts wrote before losing the race for
        // `tasks.jsonl`: their archive records and a moved torn line stay
        // on disk, and are reported as this command's doing.
        let mut on_disk: Vec<Change> = Vec::new();
        for _ in 0..ATTEMPTS {
            let (mut queue, stamp) = self.load_stamped()?;
            let changes = queue.apply(patch, now)?;
            if patch.keeps_valid() {
                // Checked in debug builds, so every test that archives
                // checks the claim.
                debug_assert!(queue.validate().is_ok(), "{patch:?} left the queue invalid");
            } else {
                queue.validate()?;
            }
            let written = self.write(queue, stamp)?;
            if written.appended {
                on_disk.extend(
                    changes
                        .iter()
                        .filter(|change| matches!(change, Change::Archived(_)))
                        .cloned(),
                );
            }
            on_disk.extend(written.torn);
            if written.replaced {
                return Ok(with_earlier(changes, on_disk));
            }
            // Again: the queue just written is gone before the next loads
            // (never two in memory).
            if let Some(freeing) = written.freeing {
                let _ = freeing.join();
            }
        }
        Err(Error::KeepsChanging { attempts: ATTEMPTS })
    }

    /// Writes what `queue` changed: archive records first, so a crash in
    /// between leaves a record in both files, which reads as archived and is
    /// cleaned up by repeating the archive. `tasks.jsonl` is replaced only
    /// when it still has `stamp` (otherwise `replaced` is false: apply the
    /// patch again to what is there now).
    ///
    /// The records are appended and fsynced on a helper thread while the
    /// new `tasks.jsonl` is written; it replaces the old one only after
    /// they are on disk. Takes the queue: once its lines are written, a big
    /// one is freed on a helper thread while the disk catches up (`fsync`),
    /// not after.
    fn write(&self, queue: Queue, stamp: Stamp) -> Result<Written> {
        let appended = queue.done.pending_text();
        let torn = queue.done.torn().cloned();
        let mut written = Written {
            appended: !appended.is_empty(),
            torn: None,
            replaced: true,
            freeing: None,
        };
        if !queue.tasks.is_changed() {
            written.torn = self.append(&appended, torn.as_ref())?;
            return Ok(written);
        }
        let path = self.tasks_path();
        let spare = self.root.join(SPARE_FILE);
        std::thread::scope(|scope| {
            let records = scope.spawn(|| self.append(&appended, torn.as_ref()));
            let mut records = Some(records);
            let mut appending = None;
            let mut freeing = None;
            let write = |out: &mut dyn std::io::Write| {
                queue.tasks.write_to(out)?;
                // Done with a mapped file's bytes: whoever waits to write
                // it goes on now, before the swap, so the check after the
                // swap sees their write.
                // SAFETY: the queue is only dropped after this.
                unsafe { queue.tasks.let_go() };
                freeing = free_in_background(queue);
                let result = records
                    .take()
                    .expect("written once")
                    .join()
                    .expect("appending does not panic");
                let failed = result.is_err();
                appending = Some(result);
                if failed {
                    // Not this file's error: reported below.
                    return Err(std::io::Error::other("appending the archive failed"));
                }
                // The records are on disk, the new file is not in place.
                crate::fault::crash_at("mid_queue_write");
                Ok(())
            };
            let replaced = files::write_atomic_unless_changed(&path, write, stamp, &spare);
            // A write that failed before it joined the helper: wait for it
            // (nothing is replaced, but its records may be on disk).
            if let Some(records) = records {
                appending = Some(records.join().expect("appending does not panic"));
            }
            written.freeing = freeing;
            written.torn = appending.expect("joined")?;
            written.replaced = replaced.map_err(|source| Error::Io { path, source })?;
            Ok(written)
        })
    }

    /// Appends archive records `text` (fsynced), after moving the
    /// archive's torn last line aside, if any.
    fn append(&self, text: &str, torn: Option<&Torn>) -> Result<Option<Change>> {
        if text.is_empty() {
            return Ok(None);
        }
        let moved = match torn {
            Some(torn) => Some(self.quarantine(torn)?),
            None => None,
        };
        let path = self.done_path();
        files::append_durable(&path, text.as_bytes())
            .map_err(|source| Error::Io { path, source })?;
        Ok(moved)
    }

    /// Copies `tasks.jsonl` to `copy` when it is valid (a copy to put back
    /// if something deletes or breaks it). Returns whether it did.
    pub fn keep_copy(&self, copy: &Path) -> Result<bool> {
        let path = self.tasks_path();
        if let Some(dir) = copy.parent() {
            fs::create_dir_all(dir).map_err(|source| Error::Io {
                path: dir.to_owned(),
                source,
            })?;
        }
        let io = |source| Error::Io {
            path: copy.to_owned(),
            source,
        };
        // Both files as they were at the last load that found them valid:
        // copy the bytes without loading the queue again (a second queue in
        // memory, while the loop holds one, doubled a run's peak).
        let known = *self.valid.lock().expect("no panic while holding it");
        if let Some((tasks_stamp, done_stamp)) = known
            && Stamp::of(&self.done_path()).ok() == Some(done_stamp)
            && let Ok(mut file) = File::open(&path)
            && Stamp::of_file(&file).ok() == Some(tasks_stamp)
        {
            let write = |out: &mut dyn std::io::Write| {
                std::io::copy(&mut file, out)?;
                if Stamp::of_file(&file)? != tasks_stamp {
                    return Err(std::io::Error::other("changed while copied"));
                }
                Ok(())
            };
            // Kept every iteration: into the spare of the last copy.
            let copied = files::write_atomic_reusing(copy, write);
            if copied.is_ok() {
                return Ok(true);
            }
        }
        let bytes = self.read(&path)?;
        let done = self.read(&self.done_path())?;
        // The parsed file writes back its bytes as read (one copy in memory).
        let Ok(queue) = Queue::parse_owned(bytes, &done) else {
            return Ok(false);
        };
        let write = |out: &mut dyn std::io::Write| queue.tasks.write_to(out);
        files::write_atomic_reusing(copy, write).map_err(io)?;
        Ok(true)
    }

    /// Puts `tasks.jsonl` back from `copy` (see [`Store::keep_copy`]) when
    /// the file is gone: deleting the whole queue is never a task's work.
    /// Returns whether it did.
    pub fn restore_if_deleted(&self, copy: &Path) -> Result<bool> {
        let _lock = self.lock()?;
        let path = self.tasks_path();
        if path.exists() || !copy.exists() {
            return Ok(false);
        }
        let bytes = self.read(copy)?;
        files::write_atomic(&path, &bytes).map_err(|source| Error::Io { path, source })?;
        Ok(true)
    }

    /// Moves a torn last line of the archive to `.ralph/quarantine/` and
    /// cuts it off the file, so the next record starts on a line of its own.
    /// Complete records are never touched.
    fn quarantine(&self, torn: &Torn) -> Result<Change> {
        let io = |path: PathBuf| move |source| Error::Io { path, source };
        let dir = self.root.join(QUARANTINE_DIR);
        fs::create_dir_all(&dir).map_err(io(dir.clone()))?;
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
        let kept = dir.join(format!("{DONE_FILE}.line{}.{stamp}.torn", torn.line));
        files::write_atomic(&kept, &torn.bytes).map_err(io(kept.clone()))?;
        let path = self.done_path();
        let file = OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(io(path.clone()))?;
        file.set_len(torn.offset).map_err(io(path.clone()))?;
        file.sync_all().map_err(io(path))?;
        Ok(Change::TornLineMoved {
            line: torn.line,
            to: kept.strip_prefix(&self.root).unwrap_or(&kept).to_owned(),
        })
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

/// Frees a big queue on a thread of its own (a 100k-task queue takes a few
/// milliseconds to free), returned for whoever must wait for the memory;
/// a small one right here. A process that exits meanwhile needs no freeing.
fn free_in_background(queue: Queue) -> Option<std::thread::JoinHandle<()>> {
    const BIG: usize = 10_000;
    if queue.tasks.lines().len() < BIG {
        return None;
    }
    std::thread::Builder::new()
        .name("free".into())
        .spawn(move || drop(queue))
        .ok()
}

/// What `Store::write` did.
struct Written {
    /// Archive records were appended.
    appended: bool,
    /// The archive's torn last line was moved aside first.
    torn: Option<Change>,
    /// `tasks.jsonl` was replaced (or needed no change).
    replaced: bool,
    /// The thread freeing the queue written, if a big one.
    freeing: Option<std::thread::JoinHandle<()>>,
}

/// The changes of the attempt that succeeded, with what earlier attempts
/// left on disk: a task archived by an earlier attempt reads as archived
/// already to the last one, but this command archived it.
fn with_earlier(changes: Vec<Change>, earlier: Vec<Change>) -> Vec<Change> {
    let mut changes: Vec<Change> = changes
        .into_iter()
        .map(|change| match change {
            Change::AlreadyArchived(id) if earlier.contains(&Change::Archived(id.clone())) => {
                Change::Archived(id)
            }
            other => other,
        })
        .collect();
    changes.extend(
        earlier
            .into_iter()
            .filter(|change| matches!(change, Change::TornLineMoved { .. })),
    );
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `>>` that waits for a `ralph task` command's lease on a big file
    /// is tied to that version of the file: a write that swaps a new
    /// version in meanwhile waits for the append, sees it and applies its
    /// change again on top, so the appended line is kept.
    #[test]
    fn an_append_waiting_for_a_lease_is_kept_across_another_write() {
        use crate::task::{Patch, Status, TaskId};
        let dir = assert_fs::TempDir::new().unwrap();
        let line = |n: usize| {
            format!(
                "{{\"id\":\"T{n}\",\"title\":\"{}\",\"status\":\"pending\",\"leaf\":true}}\n",
                "t".repeat(200)
            )
        };
        let text: String = (0..25_000).map(line).collect();
        fs::write(dir.path().join(TASKS_FILE), &text).unwrap();
        let reader = Store::open(dir.path()).mapping();
        let held = reader.load().unwrap();
        assert!(matches!(
            crate::lease::writing(&reader.tasks_path()),
            Some(false)
        ));
        let mut append = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "printf '%s' '{}' >> \"$0\"",
                line(25_000).trim_end().to_owned() + "\n"
            ))
            .arg(reader.tasks_path())
            .spawn()
            .unwrap();
        // The append waits for the lease; the reader lets go a little later.
        while crate::lease::writing(&reader.tasks_path()) != Some(true) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let let_go = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            drop(held);
        });
        let writer = Store::open(dir.path());
        let start = Patch::SetStatus {
            id: TaskId::parse("T7").unwrap(),
            status: Status::Active,
        };
        writer.apply(&start, "2026-01-01T00:00:00Z").unwrap();
        let_go.join().unwrap();
        assert!(append.wait().unwrap().success());
        let queue = writer.load().unwrap();
        assert!(queue.get("T25000").is_some(), "the append was lost");
        assert_eq!(queue.get("T7").unwrap().status, Status::Active);
    }

    #[test]
    fn a_retry_reports_what_earlier_attempts_archived_and_moved() {
        let id = |text: &str| crate::task::TaskId::parse(text).unwrap();
        let torn = Change::TornLineMoved {
            line: 3,
            to: "x.torn".into(),
        };
        let last = vec![
            Change::AlreadyArchived(id("A.1")),
            Change::AlreadyArchived(id("B")),
        ];
        let earlier = vec![Change::Archived(id("A.1")), torn.clone()];
        assert_eq!(
            with_earlier(last, earlier),
            vec![
                Change::Archived(id("A.1")),
                Change::AlreadyArchived(id("B")),
                torn
            ]
        );
    }
}
