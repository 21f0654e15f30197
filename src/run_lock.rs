//! `.ralph/lock`: one `ralph run` per project, held as an OS lock so a
//! crash never leaves it stale.

use crate::files::own;
use crate::paths::Paths;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How many times, 10 ms apart, a lock found held is tried again before
/// it counts as another run's.
const PROBE_TRIES: u32 = 20;

/// Who holds the run lock.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Holder {
    /// Process id of the run.
    pub pid: u32,
    /// When it started (RFC 3339).
    pub since: String,
    /// Its run id.
    pub run_id: String,
}

/// The held run lock; released when dropped or when the process dies.
#[derive(Debug)]
pub(crate) struct RunLock {
    file: File,
    holder: Holder,
}

/// Why the lock could not be taken.
#[derive(Debug)]
pub(crate) enum LockError {
    /// Another run holds it (holder unknown if it has not written itself yet).
    Held(Option<Holder>),
    /// The lock file could not be opened or written.
    Io(PathBuf, std::io::Error),
}

impl RunLock {
    /// Takes the lock for this run, or reports who holds it.
    pub(crate) fn acquire(paths: &Paths, holder: &Holder) -> Result<RunLock, LockError> {
        let path = paths.run_lock();
        let io = |err| LockError::Io(path.clone(), err);
        let root = paths.project();
        own::create_parent(root, &path).map_err(io)?;
        let mut options = OpenOptions::new();
        options.create(true).truncate(false).read(true).write(true);
        let mut file = own::open(root, &path, &options).map_err(io)?;
        // `live_holder` (a `ralph task` asking whether a run is live) takes
        // the lock for an instant to find out: only a lock still held a
        // moment later is a run's.
        let started = std::time::Instant::now();
        let mut tries = 0;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(TryLockError::WouldBlock) if tries < PROBE_TRIES => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(TryLockError::WouldBlock) => {
                    let holder = read_holder(&mut file);
                    let waited_ms = crate::trace::ms(started.elapsed());
                    let pid = holder.as_ref().map(|holder| holder.pid);
                    tracing::debug!(lock = ?path, waited_ms, holder = pid, "the run lock is held");
                    return Err(LockError::Held(holder));
                }
                Err(TryLockError::Error(err)) => return Err(io(err)),
            }
        }
        let waited_ms = crate::trace::ms(started.elapsed());
        tracing::debug!(lock = ?path, waited_ms, tries, "took the run lock");
        let text = serde_json::to_string(holder).expect("a holder serializes");
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        file.write_all(text.as_bytes()).map_err(io)?;
        file.sync_all().map_err(io)?;
        Ok(RunLock {
            file,
            holder: holder.clone(),
        })
    }

    /// Takes the lock again when `.ralph/lock` was deleted under it (an
    /// agent removed `.ralph/`): a lock on a deleted file keeps no second
    /// run out. Returns whether it had to.
    pub(crate) fn reassert(&mut self, paths: &Paths) -> Result<bool, LockError> {
        use std::os::unix::fs::MetadataExt;
        let path = paths.run_lock();
        let held = self
            .file
            .metadata()
            .map_err(|err| LockError::Io(path.clone(), err))?;
        let same = std::fs::symlink_metadata(&path)
            .is_ok_and(|now| now.ino() == held.ino() && now.dev() == held.dev());
        if same {
            return Ok(false);
        }
        *self = RunLock::acquire(paths, &self.holder)?;
        Ok(true)
    }
}

/// The live run holding the lock of the project at `paths`, if any.
pub(crate) fn live_holder(paths: &Paths) -> std::io::Result<Option<Holder>> {
    let path = paths.run_lock();
    let mut options = OpenOptions::new();
    options.read(true).write(true);
    let mut file = match own::open(paths.project(), &path, &options) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err),
    };
    match file.try_lock() {
        // We got it, so nobody holds it; dropping the file releases it.
        Ok(()) => Ok(None),
        Err(TryLockError::WouldBlock) => Ok(Some(read_holder(&mut file).unwrap_or_default())),
        Err(TryLockError::Error(err)) => Err(err),
    }
}

fn read_holder(file: &mut File) -> Option<Holder> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.read_to_string(&mut text).ok()?;
    serde_json::from_str(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_sees_the_first_holder_until_it_is_dropped() {
        let dir = assert_fs::TempDir::new().unwrap();
        let paths = Paths::new(dir.path());
        let holder = Holder {
            pid: 42,
            since: "2026-01-01T00:00:00Z".into(),
            run_id: "r1".into(),
        };
        let lock = RunLock::acquire(&paths, &holder).unwrap();
        match RunLock::acquire(&paths, &Holder::default()) {
            Err(LockError::Held(Some(found))) => assert_eq!(found, holder),
            other => panic!("expected the lock to be held, got {other:?}"),
        }
        assert_eq!(live_holder(&paths).unwrap(), Some(holder));
        drop(lock);
        assert_eq!(live_holder(&paths).unwrap(), None);
        RunLock::acquire(&paths, &Holder::default()).unwrap();
    }
}
