//! The task store: the only code that writes `tasks.jsonl` and
//! `tasks-done.jsonl`. Every change is applied under a short lock to the
//! files as they are at that moment.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use super::change::Change;
use super::done::Torn;
use super::error::{Error, Result, io_error};
use super::patch::Patch;
use super::queue::Queue;
use crate::files::{self, Stamp, own};
use crate::paths::Paths;

use crate::paths::DONE_FILE;

/// The task files of one project.
#[derive(Clone, Debug)]
pub struct Store {
    pub(super) paths: Paths,
}

impl Store {
    /// The store of the project at `paths`.
    pub fn open(paths: &Paths) -> Store {
        Store {
            paths: paths.clone(),
        }
    }

    /// The project root, from which ralph's files are reached without a
    /// link (see [`files::own`]).
    pub(super) fn root(&self) -> &Path {
        self.paths.project()
    }

    /// The versions of the queue files somebody else wrote that ralph had
    /// to move aside (the file was replaced twice while ralph replaced
    /// it), each as what was found and the fix. Nothing of theirs is lost
    /// there, but nothing in them is in the queue either.
    pub fn displaced(&self) -> Vec<(String, String)> {
        [self.paths.tasks(), self.paths.done()]
            .iter()
            .flat_map(|file| {
                let name = file.file_name().unwrap_or_default().to_string_lossy().into_owned();
                files::displaced_copies(file).into_iter().map(move |copy| {
                    let copy = copy.file_name().unwrap_or_default().to_string_lossy().into_owned();
                    (
                        format!("{copy} holds a version of {name} that ralph moved aside: {name} was replaced twice while ralph was replacing it"),
                        format!("compare it with {name}, copy back any task lines it alone has, then delete it"),
                    )
                })
            })
            .collect()
    }

    /// Reads and validates both files without locking: ralph's writers
    /// replace `tasks.jsonl` atomically, and a file still being rewritten in
    /// place (an editor) is read once it has settled.
    pub fn load(&self) -> Result<Queue> {
        Ok(self.load_stamped()?.0)
    }

    fn load_stamped(&self) -> Result<(Queue, Stamp)> {
        let (queue, stamp, _) = self.load_keeping(false)?;
        Ok((queue, stamp))
    }

    /// [`Store::load_stamped`], with the bytes of `tasks.jsonl` read when
    /// `keep_bytes` asks for them.
    fn load_keeping(&self, keep_bytes: bool) -> Result<(Queue, Stamp, Option<Vec<u8>>)> {
        let path = self.paths.tasks();
        let done = self.read(&self.paths.done())?;
        let mut bytes = None;
        let (queue, stamp) = own::read_settled(self.root(), &path, |tasks| {
            if keep_bytes {
                bytes = Some(tasks.clone());
            }
            Queue::parse_owned(tasks, &done)
        })
        .map_err(io_error(&path))?;
        Ok((queue?, stamp, bytes))
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
        let mut appended = String::new();
        // While an agent runs, what the write finds is compared with
        // ralph's copy (`follow`).
        let watching = self.paths.queue_watch().exists();
        for _ in 0..ATTEMPTS {
            let (mut queue, stamp, found) = self.load_keeping(watching)?;
            let changes = match queue.apply(patch, now) {
                Ok(changes) => changes,
                // While an agent runs, a task the file lacks but ralph's
                // copy has: git reverted the file (`git reset --hard`
                // before the queue was ever committed), or a hand edit
                // removed the task. The change is made to the copy, which
                // the run puts back after the iteration when git had
                // reverted the file (a hand edit stays).
                Err(Error::NotFound { id, place }) if watching => {
                    return match self.apply_to_known(patch, now)? {
                        Some(mut changes) => {
                            changes.push(Change::OnKnownQueue(id));
                            Ok(changes)
                        }
                        None => Err(Error::NotFound { id, place }),
                    };
                }
                Err(err) => return Err(err),
            };
            if patch.keeps_valid() {
                // Checked in debug builds, so every test checks the claim.
                debug_assert!(queue.validate().is_ok(), "{patch:?} left the queue invalid");
            } else {
                queue.validate()?;
            }
            let written = self.write(&queue, stamp)?;
            if !written.appended.is_empty() {
                on_disk.extend(
                    changes
                        .iter()
                        .filter(|change| matches!(change, Change::Archived(_)))
                        .cloned(),
                );
            }
            on_disk.extend(written.torn);
            appended.push_str(&written.appended);
            if written.replaced {
                let found = found.map(|found| (found, queue.tasks.render().into_bytes()));
                self.follow(patch, now, &appended, found)?;
                return Ok(with_earlier(changes, on_disk));
            }
        }
        Err(Error::KeepsChanging { attempts: ATTEMPTS })
    }

    /// Writes what `queue` changed: archive records first, so a crash in
    /// between leaves a record in both files, which reads as archived and is
    /// cleaned up by repeating the archive. `tasks.jsonl` is replaced only
    /// when it still has `stamp` (otherwise `replaced` is false: apply the
    /// patch again to what is there now).
    fn write(&self, queue: &Queue, stamp: Stamp) -> Result<Written> {
        let appended = queue.done.pending_text();
        let torn = self.append(&appended, queue.done.torn())?;
        let mut written = Written {
            appended,
            torn,
            replaced: true,
        };
        if queue.tasks.is_changed() {
            let path = self.paths.tasks();
            let write = |file: &mut File| {
                let mut out = std::io::BufWriter::with_capacity(1 << 16, file);
                queue.tasks.write_to(&mut out)?;
                std::io::Write::flush(&mut out)?;
                // The records are on disk, the new file is written but not
                // in place.
                crate::fault::crash_at("mid_queue_write");
                Ok(())
            };
            written.replaced = own::replace_unless_changed(self.root(), &path, write, stamp)
                .map_err(io_error(&path))?;
        }
        Ok(written)
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
        let path = self.paths.done();
        own::append(self.root(), &path, text.as_bytes()).map_err(io_error(&path))?;
        Ok(moved)
    }

    /// Moves a torn last line of the archive to `.ralph/queue/quarantine/` and
    /// cuts it off the file, so the next record starts on a line of its own.
    /// Complete records are never touched.
    fn quarantine(&self, torn: &Torn) -> Result<Change> {
        let kept = self.keep_aside(&format!(".line{}", torn.line), "torn", &torn.bytes)?;
        let path = self.paths.done();
        let file = own::open(self.root(), &path, OpenOptions::new().write(true))
            .map_err(io_error(&path))?;
        file.set_len(torn.offset).map_err(io_error(&path))?;
        file.sync_all().map_err(io_error(&path))?;
        Ok(Change::TornLineMoved {
            line: torn.line,
            to: kept,
        })
    }

    /// Keeps archive `bytes` in `.ralph/queue/quarantine/`, in a file named
    /// `tasks-done.jsonl<tag>.<time>.<kind>`; returns its project path.
    pub(super) fn keep_aside(&self, tag: &str, kind: &str, bytes: &[u8]) -> Result<PathBuf> {
        let dir = self.paths.quarantine_dir();
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
        let kept = dir.join(format!("{DONE_FILE}{tag}.{stamp}.{kind}"));
        own::replace(self.root(), &kept, bytes).map_err(io_error(&kept))?;
        Ok(kept
            .strip_prefix(self.paths.project())
            .unwrap_or(&kept)
            .to_owned())
    }

    /// Reads ralph's file `path` (missing: empty), never through a link.
    pub(super) fn read(&self, path: &Path) -> Result<Vec<u8>> {
        own::read(self.root(), path).map_err(io_error(path))
    }

    /// Takes the exclusive queue lock, waiting for another writer to finish.
    pub(super) fn lock(&self) -> Result<File> {
        let path = self.paths.queue_lock();
        own::lock(self.root(), &path).map_err(io_error(&path))
    }
}

/// What `Store::write` did.
struct Written {
    /// The archive records appended.
    appended: String,
    /// The archive's torn last line was moved aside first.
    torn: Option<Change>,
    /// `tasks.jsonl` was replaced (or needed no change).
    replaced: bool,
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
