//! The queue as ralph last knew it while an agent runs. Before the agent
//! starts, the store copies both task files to `.ralph/`; every queue write
//! during the iteration (`ralph task ...`, by the agent or a person) is
//! applied to the copies too. Afterwards the loop compares: a queue file
//! that git put back to an older version (an agent's `git reset --hard`,
//! `git stash -u`, `git checkout -- .`), a deleted one, and an archive whose
//! records changed or gained lines nobody wrote through the store, are
//! replaced by the copies. A person's hand edit of `tasks.jsonl`, which
//! matches no version git holds, is kept.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use super::error::{Result, io_error};
use super::patch::Patch;
use super::queue::Queue;
use super::store::Store;
use crate::files::{self, own};
use crate::paths::{DONE_FILE, TASKS_FILE};

/// Both queue files as ralph last knew them (see the module doc). A copy
/// that is gone (an agent's `git clean -x` empties `.ralph/`) is `None`:
/// nothing to compare with, so nothing is put back.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Known {
    /// `tasks.jsonl`; `None` when ralph never saw a valid one.
    pub tasks: Option<Vec<u8>>,
    /// `tasks-done.jsonl` (empty when there is none); `None` when the
    /// copy is gone.
    pub done: Option<Vec<u8>>,
    /// When a `ralph task` write during the iteration found `tasks.jsonl`
    /// other than ralph's copy: what it found (git may have reverted the
    /// file just before), and what the writes since left there.
    pub found: Option<(Vec<u8>, Vec<u8>)>,
}

/// What [`Store::put_back`] restored.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Restored {
    /// `tasks.jsonl` was put back.
    pub tasks: Option<TasksRestored>,
    /// `tasks-done.jsonl` was put back.
    pub archive: Option<ArchiveRestored>,
    /// Put back as the files were when the agent started: ralph's copies,
    /// which hold the changes made through `ralph task` since, were gone.
    pub from_start: bool,
}

impl Restored {
    /// Whether anything was put back.
    pub fn any(&self) -> bool {
        self.tasks.is_some() || self.archive.is_some()
    }
}

/// How `tasks.jsonl` had been lost.
#[derive(Clone, Debug, PartialEq)]
pub struct TasksRestored {
    /// The version git had put back (`None`: the file was deleted).
    pub reverted_to: Option<String>,
    /// Ids of the tasks ralph knew that the file had lost, in file order.
    pub missing: Vec<String>,
}

/// How `tasks-done.jsonl` had been changed.
#[derive(Clone, Debug, PartialEq)]
pub struct ArchiveRestored {
    /// The version git had put back, if the archive was one.
    pub reverted_to: Option<String>,
    /// Records ralph wrote that were changed or removed.
    pub changed: usize,
    /// Lines nobody wrote through the store, moved to the quarantine.
    pub foreign: usize,
    /// Where those lines went, relative to the project.
    pub quarantined: Option<PathBuf>,
}

impl Store {
    /// Starts watching the queue for an agent's iteration: under the queue
    /// lock, copies `tasks.jsonl` (when it parses; otherwise the last valid
    /// copy stays, the one the agent needs to repair it) and
    /// `tasks-done.jsonl`, and marks the watch so every write until
    /// [`Store::unwatch`] updates the copies too. Returns what it copied,
    /// for [`Store::put_back_deleted`] should the copies go.
    pub fn watch(&self) -> Result<Known> {
        let _lock = self.lock()?;
        let tasks = self.read(&self.paths.tasks())?;
        let done = self.read(&self.paths.done())?;
        let valid = Queue::parse(&tasks, &done).is_ok();
        if valid {
            self.keep(&self.paths.valid_queue(), &tasks)?;
        }
        self.keep(&self.paths.valid_archive(), &done)?;
        self.forget_found()?;
        self.keep(&self.paths.queue_watch(), b"")?;
        Ok(Known {
            tasks: valid.then_some(tasks),
            done: Some(done),
            found: None,
        })
    }

    /// Ends the watch and returns the copies; `None` when the watch itself
    /// was removed meanwhile (an agent's `git clean -x` empties `.ralph/`),
    /// since writes no longer reached the copies.
    pub fn unwatch(&self) -> Result<Option<Known>> {
        let _lock = self.lock()?;
        let watch = self.paths.queue_watch();
        let watched = watch.exists();
        files::remove_if_exists(&watch).map_err(io_error(&watch))?;
        if !watched {
            return Ok(None);
        }
        let known = self.known()?;
        self.forget_found()?;
        Ok(Some(known))
    }

    fn forget_found(&self) -> Result<()> {
        for path in [self.paths.queue_found(), self.paths.queue_wrote()] {
            files::remove_if_exists(&path).map_err(io_error(&path))?;
        }
        Ok(())
    }

    /// Puts back, under the queue lock, a queue file that is gone, from
    /// `before`, what [`Store::watch`] copied: what is left to do when the
    /// watch went with ralph's copies (a `git clean -x` removes an ignored
    /// queue file and `.ralph/` alike). Changes made through `ralph task`
    /// in the iteration went with them; a file still there is kept.
    pub fn put_back_deleted(&self, before: &Known) -> Result<Restored> {
        let _lock = self.lock()?;
        let mut restored = Restored {
            from_start: true,
            ..Restored::default()
        };
        let done = before.done.as_deref().unwrap_or_default();
        let missing = |path: &Path| -> Result<Option<files::Stamp>> {
            own::check(self.root(), path, own::Need::File).map_err(io_error(path))?;
            let stamp = files::Stamp::of(path).map_err(io_error(path))?;
            Ok((!stamp.exists()).then_some(stamp))
        };
        let put = |path: &Path, bytes: &[u8], stamp| {
            let write = |file: &mut fs::File| std::io::Write::write_all(file, bytes);
            own::replace_unless_changed(self.root(), path, write, stamp).map_err(io_error(path))
        };
        let path = self.paths.tasks();
        if let Some(kept) = &before.tasks
            && let Some(stamp) = missing(&path)?
            && put(&path, kept, stamp)?
        {
            restored.tasks = Some(TasksRestored {
                reverted_to: None,
                missing: missing_ids(kept, b"", done),
            });
        }
        let path = self.paths.done();
        if !done.is_empty()
            && let Some(stamp) = missing(&path)?
            && put(&path, done, stamp)?
        {
            restored.archive = Some(ArchiveRestored {
                reverted_to: None,
                changed: lines(done).count(),
                foreign: 0,
                quarantined: None,
            });
        }
        Ok(restored)
    }

    /// The copies as they are now.
    fn known(&self) -> Result<Known> {
        let copy = |path: PathBuf| path.exists().then(|| self.read(&path)).transpose();
        let found = match copy(self.paths.queue_found())? {
            Some(found) => copy(self.paths.queue_wrote())?.map(|wrote| (found, wrote)),
            None => None,
        };
        Ok(Known {
            tasks: copy(self.paths.valid_queue())?,
            done: copy(self.paths.valid_archive())?,
            found,
        })
    }

    /// While watching, applies `patch` to ralph's copy of `tasks.jsonl`
    /// alone: the changes, or `None` when the copy cannot take it (or
    /// it would append to the archive, which is never written aside).
    /// Called under the queue lock.
    pub(super) fn apply_to_known(
        &self,
        patch: &Patch,
        now: &str,
    ) -> Result<Option<Vec<super::change::Change>>> {
        let known = self.known()?;
        let (Some(tasks), Some(done)) = (known.tasks, known.done) else {
            return Ok(None);
        };
        let Ok(mut queue) = Queue::parse(&tasks, &done) else {
            return Ok(None);
        };
        let Ok(changes) = queue.apply(patch, now) else {
            return Ok(None);
        };
        if queue.validate().is_err() || !queue.done.pending_text().is_empty() {
            return Ok(None);
        }
        self.keep(&self.paths.valid_queue(), queue.tasks.render().as_bytes())?;
        Ok(Some(changes))
    }

    /// While watching, applies `patch`, which was just written with the
    /// archive text `appended`, to the copies. Called under the queue lock.
    /// A patch the copy cannot take (it names a task only a hand edit
    /// added) leaves the copy of `tasks.jsonl` as it is. `found` holds the
    /// bytes of `tasks.jsonl` the write found and those it wrote: found
    /// other than the copy, they are noted, so that a file git reverted
    /// and `ralph task` changed since is still known for what it is
    /// ([`Store::put_back`]).
    pub(super) fn follow(
        &self,
        patch: &Patch,
        now: &str,
        appended: &str,
        found: Option<(Vec<u8>, Vec<u8>)>,
    ) -> Result<()> {
        if !self.paths.queue_watch().exists() {
            return Ok(());
        }
        let known = self.known()?;
        if let Some((found, wrote)) = found {
            let first = match known.found {
                // The file as the last such write left it: the first
                // finding stands.
                Some((first, last)) if last == found => Some(first),
                // In step with the copy: nothing to note.
                _ if known.tasks.as_ref() == Some(&found) => None,
                _ => Some(found),
            };
            match first {
                Some(first) => {
                    self.keep(&self.paths.queue_found(), &first)?;
                    self.keep(&self.paths.queue_wrote(), &wrote)?;
                }
                None => self.forget_found()?,
            }
        }
        // A copy gone meanwhile is not made again: from here on it would
        // lack what happened before.
        let Some(mut done) = known.done else {
            return Ok(());
        };
        if let Some(tasks) = &known.tasks
            && let Ok(mut queue) = Queue::parse(tasks, &done)
            && queue.apply(patch, now).is_ok()
            && queue.validate().is_ok()
            && queue.tasks.is_changed()
        {
            self.keep(&self.paths.valid_queue(), queue.tasks.render().as_bytes())?;
        }
        if !appended.is_empty() {
            // The store moved a torn last line aside before appending.
            if !done.is_empty() && !done.ends_with(b"\n") {
                let end = done.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
                done.truncate(end);
            }
            done.extend_from_slice(appended.as_bytes());
            self.keep(&self.paths.valid_archive(), &done)?;
        }
        Ok(())
    }

    /// Puts back what the iteration lost, under the queue lock: a deleted
    /// `tasks.jsonl`, or one that `git_version` recognises as a version git
    /// holds (it returns where, e.g. `commit 1a2b3c4`) and that differs from
    /// `known`; and an archive that is not byte for byte `known`, moving the
    /// lines nobody wrote through the store to `.ralph/queue/quarantine/`.
    pub fn put_back(
        &self,
        known: &Known,
        git_version: impl Fn(&str, &[u8]) -> Option<String>,
    ) -> Result<Restored> {
        let _lock = self.lock()?;
        let mut restored = Restored::default();
        let path = self.paths.tasks();
        if let Some(kept) = &known.tasks {
            // Read once settled: an editor rewriting the file in place
            // shows it empty or half written for a moment, which may look
            // like a version git holds. Written back only while unchanged:
            // a hand edit landing meanwhile is looked at again.
            for _ in 0..5 {
                let (now, stamp) = own::read_settled(self.root(), &path, |bytes| bytes)
                    .map_err(io_error(&path))?;
                // Reverted by git, or reverted and then changed through
                // `ralph task` (its write found the version git holds).
                let reverted = |now: &[u8]| {
                    git_version(TASKS_FILE, now).or_else(|| match &known.found {
                        Some((found, wrote)) if wrote == now => git_version(TASKS_FILE, found),
                        _ => None,
                    })
                };
                let lost = if !stamp.exists() {
                    Some(None)
                } else if now != *kept {
                    reverted(&now).map(|at| Some((at, now)))
                } else {
                    None
                };
                let Some(lost) = lost else { break };
                let write = |file: &mut fs::File| std::io::Write::write_all(file, kept);
                if !own::replace_unless_changed(self.root(), &path, write, stamp)
                    .map_err(io_error(&path))?
                {
                    continue;
                }
                let (reverted_to, now) =
                    lost.map_or((None, Vec::new()), |(at, now)| (Some(at), now));
                restored.tasks = Some(TasksRestored {
                    reverted_to,
                    missing: missing_ids(kept, &now, known.done.as_deref().unwrap_or_default()),
                });
                break;
            }
        }
        self.restore_archive(known, &git_version, &mut restored)?;
        Ok(restored)
    }

    /// While a parallel run watches the queue for all its workers: puts
    /// the archive back as [`Store::put_back`] does when it is not byte for
    /// byte ralph's copy, leaving the watch on (other workers' agents are
    /// still at work). `tasks.jsonl` is left alone: a worker's is a link to
    /// the project's, which git cannot revert.
    pub fn put_back_archive(
        &self,
        git_version: impl Fn(&str, &[u8]) -> Option<String>,
    ) -> Result<Restored> {
        let _lock = self.lock()?;
        let mut restored = Restored::default();
        if self.paths.queue_watch().exists() {
            self.restore_archive(&self.known()?, &git_version, &mut restored)?;
        }
        Ok(restored)
    }

    /// The archive half of [`Store::put_back`], under the queue lock.
    fn restore_archive(
        &self,
        known: &Known,
        git_version: &impl Fn(&str, &[u8]) -> Option<String>,
        restored: &mut Restored,
    ) -> Result<()> {
        let Some(known_done) = &known.done else {
            return Ok(());
        };
        let path = self.paths.done();
        let (now, stamp) =
            own::read_settled(self.root(), &path, |bytes| bytes).map_err(io_error(&path))?;
        if now != *known_done {
            let kept: HashSet<&[u8]> = lines(known_done).collect();
            let present: HashSet<&[u8]> = lines(&now).collect();
            let foreign: Vec<&[u8]> = lines(&now).filter(|line| !kept.contains(line)).collect();
            let quarantined = match foreign.is_empty() {
                true => None,
                false => Some(self.quarantine_lines(&foreign)?),
            };
            restored.archive = Some(ArchiveRestored {
                reverted_to: git_version(DONE_FILE, &now),
                changed: kept.iter().filter(|line| !present.contains(*line)).count(),
                foreign: foreign.len(),
                quarantined,
            });
            let write = |file: &mut fs::File| std::io::Write::write_all(file, known_done);
            // An append landing meanwhile is taken up by the next check.
            own::replace_unless_changed(self.root(), &path, write, stamp)
                .map_err(io_error(&path))?;
        }
        Ok(())
    }

    /// Keeps archive lines nobody wrote through the store in a file of
    /// their own under `.ralph/queue/quarantine/`; returns its project path.
    fn quarantine_lines(&self, foreign: &[&[u8]]) -> Result<PathBuf> {
        let mut bytes = Vec::new();
        for line in foreign {
            bytes.extend_from_slice(line);
            bytes.push(b'\n');
        }
        self.keep_aside("", "foreign", &bytes)
    }

    /// Replaces `copy` with `bytes` unless it holds them already.
    pub(super) fn keep(&self, copy: &Path, bytes: &[u8]) -> Result<()> {
        if copy.exists() && self.read(copy)? == bytes {
            return Ok(());
        }
        own::replace(self.root(), copy, bytes).map_err(io_error(copy))
    }
}

/// The non-empty lines of `bytes`, without their line ends.
fn lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes
        .split(|b| *b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
}

/// Ids of the live tasks in `kept` that `now` has neither live nor archived.
fn missing_ids(kept: &[u8], now: &[u8], done: &[u8]) -> Vec<String> {
    let Ok(kept) = Queue::parse(kept, done) else {
        return Vec::new();
    };
    let now = Queue::parse(now, done).ok();
    kept.tasks
        .tasks()
        .map(|(_, task)| task.id.as_str())
        .filter(|id| {
            now.as_ref()
                .is_none_or(|now| !now.all_ids().any(|other| other == *id))
        })
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::Paths;
    use crate::task::{NewTask, Status, TaskId};

    const NOW: &str = "2026-01-01T00:00:00Z";

    fn project() -> (assert_fs::TempDir, Store) {
        let dir = assert_fs::TempDir::new().unwrap();
        let store = Store::open(&Paths::new(dir.path()));
        (dir, store)
    }

    fn add(store: &Store, title: &str) {
        store
            .apply(
                &Patch::Add(NewTask {
                    title: title.to_owned(),
                    ..NewTask::default()
                }),
                NOW,
            )
            .unwrap();
    }

    fn never(_: &str, _: &[u8]) -> Option<String> {
        None
    }

    #[test]
    fn writes_while_watching_update_the_copies_and_only_then() {
        let (dir, store) = project();
        add(&store, "one");
        store.watch().unwrap();
        add(&store, "two");
        let id = TaskId::parse("A").unwrap();
        store
            .apply(
                &Patch::SetStatus {
                    id,
                    status: Status::Complete,
                },
                NOW,
            )
            .unwrap();
        let known = store.unwatch().unwrap().unwrap();
        assert_eq!(
            known.tasks.as_deref(),
            Some(&fs::read(dir.path().join(TASKS_FILE)).unwrap()[..])
        );
        add(&store, "three");
        assert_eq!(store.known().unwrap(), known, "no watch, no update");
        // A second end of the same watch knows nothing: the copies may lack
        // what happened since.
        assert_eq!(store.unwatch().unwrap(), None);
    }

    #[test]
    fn copies_an_agent_removed_put_nothing_back() {
        // `git clean -fdx` empties `.ralph/` in the middle of an iteration.
        let (dir, store) = project();
        add(&store, "one");
        let id = TaskId::parse("A").unwrap();
        store
            .apply(
                &Patch::SetStatus {
                    id: id.clone(),
                    status: Status::Complete,
                },
                NOW,
            )
            .unwrap();
        store
            .apply(&Patch::Archive { id, commit: None }, NOW)
            .unwrap();
        let archive = fs::read(dir.path().join(DONE_FILE)).unwrap();
        add(&store, "two");
        let before = store.watch().unwrap();
        fs::remove_dir_all(dir.path().join(".ralph")).unwrap();
        // The agent's own `ralph task complete` after that.
        store
            .apply(
                &Patch::SetStatus {
                    id: TaskId::parse("B").unwrap(),
                    status: Status::Complete,
                },
                NOW,
            )
            .unwrap();
        assert_eq!(store.unwatch().unwrap(), None);
        // Both files are there: both are kept as they are.
        let tasks = fs::read(dir.path().join(TASKS_FILE)).unwrap();
        let restored = store.put_back_deleted(&before).unwrap();
        assert!(!restored.any(), "{restored:?}");
        assert_eq!(fs::read(dir.path().join(DONE_FILE)).unwrap(), archive);
        assert_eq!(fs::read(dir.path().join(TASKS_FILE)).unwrap(), tasks);
        assert!(!dir.path().join(".ralph/queue/quarantine").exists());
        assert!(restored.from_start);
        // Ignored queue files go with `.ralph/`: they come back as the
        // watch copied them.
        let before = store.watch().unwrap();
        fs::remove_dir_all(dir.path().join(".ralph")).unwrap();
        fs::remove_file(dir.path().join(TASKS_FILE)).unwrap();
        fs::remove_file(dir.path().join(DONE_FILE)).unwrap();
        assert_eq!(store.unwatch().unwrap(), None);
        let restored = store.put_back_deleted(&before).unwrap();
        assert_eq!(
            restored.tasks,
            Some(TasksRestored {
                reverted_to: None,
                missing: vec!["B".to_owned()],
            })
        );
        assert_eq!(restored.archive.as_ref().map(|a| a.changed), Some(1));
        assert_eq!(fs::read(dir.path().join(TASKS_FILE)).unwrap(), tasks);
        assert_eq!(fs::read(dir.path().join(DONE_FILE)).unwrap(), archive);
    }

    #[test]
    fn a_reverted_queue_is_put_back_and_a_hand_edit_kept() {
        let (dir, store) = project();
        add(&store, "one");
        let committed = fs::read(dir.path().join(TASKS_FILE)).unwrap();
        store.watch().unwrap();
        add(&store, "two");
        let known = store.unwatch().unwrap().unwrap();
        // A hand edit: no version git holds.
        fs::write(dir.path().join(TASKS_FILE), &committed).unwrap();
        assert_eq!(store.put_back(&known, never).unwrap(), Restored::default());
        assert_eq!(fs::read(dir.path().join(TASKS_FILE)).unwrap(), committed);
        // The same bytes, recognised as a commit's.
        let restored = store
            .put_back(&known, |name, bytes| {
                (name == TASKS_FILE && bytes == committed).then(|| "commit 1a2b3c4".to_owned())
            })
            .unwrap();
        let tasks = restored.tasks.unwrap();
        assert_eq!(tasks.reverted_to.as_deref(), Some("commit 1a2b3c4"));
        assert_eq!(tasks.missing, ["B"]);
        assert_eq!(
            Some(fs::read(dir.path().join(TASKS_FILE)).unwrap()),
            known.tasks
        );
    }

    #[test]
    fn a_reverted_queue_changed_through_the_store_since_is_still_put_back() {
        let (dir, store) = project();
        add(&store, "one");
        let committed = fs::read(dir.path().join(TASKS_FILE)).unwrap();
        store.watch().unwrap();
        add(&store, "two");
        // git puts back the committed version, then the agent's own
        // `ralph task complete A` (twice: the first finding stands).
        fs::write(dir.path().join(TASKS_FILE), &committed).unwrap();
        for _ in 0..2 {
            store
                .apply(
                    &Patch::SetStatus {
                        id: TaskId::parse("A").unwrap(),
                        status: Status::Complete,
                    },
                    NOW,
                )
                .unwrap();
        }
        let known = store.unwatch().unwrap().unwrap();
        assert_eq!(known.found.as_ref().map(|f| &f.0), Some(&committed));
        let restored = store
            .put_back(&known, |name, bytes| {
                (name == TASKS_FILE && bytes == committed).then(|| "commit 1a2b3c4".to_owned())
            })
            .unwrap();
        assert_eq!(restored.tasks.unwrap().missing, ["B"]);
        let queue = store.load().unwrap();
        assert_eq!(queue.get("A").unwrap().status, Status::Complete);
        assert!(queue.get("B").is_some());
        // A write that finds ralph's copy notes nothing.
        store.watch().unwrap();
        add(&store, "three");
        assert_eq!(store.unwatch().unwrap().unwrap().found, None);
    }

    #[test]
    fn a_deleted_queue_is_put_back() {
        let (dir, store) = project();
        add(&store, "one");
        store.watch().unwrap();
        let known = store.unwatch().unwrap().unwrap();
        fs::remove_file(dir.path().join(TASKS_FILE)).unwrap();
        let restored = store.put_back(&known, never).unwrap();
        let tasks = restored.tasks.unwrap();
        assert_eq!(tasks.reverted_to, None);
        assert_eq!(tasks.missing, ["A"]);
        assert_eq!(
            Some(fs::read(dir.path().join(TASKS_FILE)).unwrap()),
            known.tasks
        );
    }

    #[test]
    fn archive_records_stay_and_foreign_lines_go_to_the_quarantine() {
        let (dir, store) = project();
        add(&store, "one");
        add(&store, "two");
        store.watch().unwrap();
        let archive = |id: &str| Patch::Archive {
            id: TaskId::parse(id).unwrap(),
            commit: None,
        };
        store.apply(&archive("A"), NOW).unwrap();
        let known = store.unwatch().unwrap().unwrap();
        let done = dir.path().join(DONE_FILE);
        let written = fs::read(&done).unwrap();
        assert_eq!(
            known.done,
            Some(written.clone()),
            "the store's own record is known"
        );
        let forged = b"{\"id\":\"C\",\"title\":\"forged\",\"status\":\"complete\"}\n";
        fs::write(&done, forged).unwrap();
        let restored = store.put_back(&known, never).unwrap();
        let archive = restored.archive.unwrap();
        assert_eq!((archive.changed, archive.foreign), (1, 1));
        assert_eq!(fs::read(&done).unwrap(), written);
        let moved = dir.path().join(archive.quarantined.unwrap());
        assert_eq!(fs::read(moved).unwrap(), forged);
    }
}
