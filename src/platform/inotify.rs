//! Linux: which paths of the working tree changed since the last scan,
//! from inotify watches on its folders, so the scan after an iteration
//! looks at those paths instead of every file (docs/BENCHMARKS.md: on a
//! 10,000-file repository it halves ralph's own time per iteration).
//!
//! The watches cover every folder of the working tree except `.git` and
//! ignored folders. Whatever the paths cannot describe makes the next scan
//! a full one, after which the watches are set up again: the kernel's
//! queue overflowing, a folder deleted or moved, a watch that could not be
//! added, `.gitignore` or `.gitattributes` changing (other files may then
//! change status without being touched). Without inotify (no instance or
//! watch left) every scan is a full one, as before.

// Built only where inotify exists (see `mod.rs`).
#![cfg(target_os = "linux")]

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::errno::Errno;
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};

/// The events that change what `git status` says about a path.
fn mask() -> AddWatchFlags {
    AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_MODIFY
        | AddWatchFlags::IN_ATTRIB
        | AddWatchFlags::IN_CLOSE_WRITE
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_DELETE_SELF
        | AddWatchFlags::IN_MOVE_SELF
        | AddWatchFlags::IN_ONLYDIR
        | AddWatchFlags::IN_DONT_FOLLOW
}

/// Files whose change can change the status of paths nobody touched.
const RULE_FILES: [&[u8]; 2] = [b".gitignore", b".gitattributes"];

/// The watches on one working tree, and the paths changed since the last
/// scan that settled them.
pub(crate) struct Watch {
    inotify: Inotify,
    /// Each watched folder, repository-relative ("" for the root).
    dirs: HashMap<WatchDescriptor, Vec<u8>>,
    /// Paths changed since the last settled scan.
    changed: BTreeSet<Vec<u8>>,
    /// Something the paths cannot describe happened: the next scan must
    /// be a full one.
    lost: bool,
}

impl Watch {
    /// Watches every folder of the working tree at `workdir`; `ignored`
    /// says whether a repository-relative folder is ignored. `None` when
    /// inotify cannot watch it all, or the process uses the portable
    /// calls (which never watch).
    pub(crate) fn start(workdir: &Path, ignored: &dyn Fn(&[u8]) -> bool) -> Option<Watch> {
        if super::portable() {
            return None;
        }
        let inotify = Inotify::init(InitFlags::IN_CLOEXEC | InitFlags::IN_NONBLOCK).ok()?;
        let mut watch = Watch {
            inotify,
            dirs: HashMap::new(),
            changed: BTreeSet::new(),
            lost: false,
        };
        watch
            .add_tree(workdir, Vec::new(), ignored)
            .then_some(watch)
    }

    /// Watches the folder `rel` and every folder below it (not `.git`, not
    /// ignored ones, not through links). False when a watch failed.
    fn add_tree(&mut self, workdir: &Path, rel: Vec<u8>, ignored: &dyn Fn(&[u8]) -> bool) -> bool {
        let mut pending = vec![rel];
        while let Some(rel) = pending.pop() {
            let path = workdir.join(OsStr::from_bytes(&rel));
            match self.inotify.add_watch(&path, mask()) {
                Ok(wd) => {
                    self.dirs.insert(wd, rel.clone());
                }
                // Gone meanwhile: its parent's event says so.
                Err(Errno::ENOENT | Errno::ENOTDIR) => continue,
                Err(_) => return false,
            }
            let Ok(entries) = std::fs::read_dir(&path) else {
                return false;
            };
            for entry in entries.flatten() {
                let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
                let name = entry.file_name();
                if !is_dir || name.as_bytes() == b".git" {
                    continue;
                }
                let mut child = rel.clone();
                if !child.is_empty() {
                    child.push(b'/');
                }
                child.extend_from_slice(name.as_bytes());
                if !ignored(&child) {
                    pending.push(child);
                }
            }
        }
        true
    }

    /// Reads the events queued so far into the changed paths. The paths
    /// changed since the last settled scan, or `None` when only a full
    /// scan will do (the watches are set up again first, so nothing that
    /// happens after it is missed).
    pub(crate) fn pending(
        &mut self,
        workdir: &Path,
        ignored: &dyn Fn(&[u8]) -> bool,
    ) -> Option<Vec<Vec<u8>>> {
        self.read_events(workdir, ignored);
        if self.lost {
            // Watches set up again before the full scan the caller makes,
            // so nothing after the scan is missed. Still "lost" until
            // `settled`: a scan that fails is made in full again.
            if let Some(fresh) = Watch::start(workdir, ignored) {
                *self = Watch {
                    lost: true,
                    ..fresh
                };
            }
            return None;
        }
        Some(self.changed.iter().cloned().collect())
    }

    /// A scan covered the paths returned by [`Watch::pending`] and left
    /// them clean: forget them.
    pub(crate) fn settled(&mut self) {
        self.changed.clear();
        self.lost = false;
    }

    fn read_events(&mut self, workdir: &Path, ignored: &dyn Fn(&[u8]) -> bool) {
        loop {
            let events = match self.inotify.read_events() {
                Ok(events) if !events.is_empty() => events,
                Ok(_) | Err(Errno::EAGAIN) => return,
                Err(Errno::EINTR) => continue,
                Err(_) => {
                    self.lost = true;
                    return;
                }
            };
            for event in events {
                if event.mask.contains(AddWatchFlags::IN_Q_OVERFLOW) {
                    self.lost = true;
                    continue;
                }
                let (Some(dir), Some(name)) = (self.dirs.get(&event.wd), &event.name) else {
                    // An event on a watched folder itself: deleted, moved,
                    // unmounted, or its watch removed.
                    self.lost = true;
                    continue;
                };
                let name = name.as_bytes();
                let mut path = dir.clone();
                if !path.is_empty() {
                    path.push(b'/');
                }
                path.extend_from_slice(name);
                if RULE_FILES.contains(&name) {
                    self.lost = true;
                }
                if event.mask.contains(AddWatchFlags::IN_ISDIR) {
                    let appeared = AddWatchFlags::IN_CREATE | AddWatchFlags::IN_MOVED_TO;
                    if event.mask.intersects(appeared) {
                        let watched = name == b".git"
                            || ignored(&path)
                            || self.add_tree(workdir, path.clone(), ignored);
                        if !watched {
                            self.lost = true;
                        }
                    } else {
                        // A folder deleted or moved away: its watches (and
                        // the names they carry) no longer describe the tree.
                        self.lost = true;
                    }
                }
                self.changed.insert(path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(paths: Option<Vec<Vec<u8>>>) -> Option<Vec<String>> {
        paths.map(|paths| {
            paths
                .into_iter()
                .map(|path| String::from_utf8(path).unwrap())
                .collect()
        })
    }

    #[test]
    fn reports_the_paths_changed_since_the_last_settled_scan() {
        let dir = assert_fs::TempDir::new().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/a")).unwrap();
        std::fs::create_dir_all(root.join("target/debug")).unwrap();
        std::fs::create_dir_all(root.join(".git/objects")).unwrap();
        std::fs::write(root.join("src/a/one.txt"), "one\n").unwrap();
        let ignored = |rel: &[u8]| rel == b"target";
        let mut watch = Watch::start(root, &ignored).expect("inotify works here");
        assert_eq!(names(watch.pending(root, &ignored)), Some(vec![]));

        std::fs::write(root.join("src/a/one.txt"), "changed\n").unwrap();
        std::fs::write(root.join("target/debug/out"), "ignored\n").unwrap();
        std::fs::write(root.join(".git/objects/x"), "git's own\n").unwrap();
        std::fs::create_dir_all(root.join("new/deep")).unwrap();
        std::fs::write(root.join("new/deep/two.txt"), "two\n").unwrap();
        // A new folder stands for all it holds (a scan of "new" covers
        // "new/deep/two.txt"); from now on it is watched too.
        let expected = ["new", "src/a/one.txt"];
        assert_eq!(
            names(watch.pending(root, &ignored)),
            Some(expected.map(str::to_owned).to_vec())
        );
        // Not settled: the same paths again, plus new ones.
        std::fs::remove_file(root.join("new/deep/two.txt")).unwrap();
        let expected = ["new", "new/deep/two.txt", "src/a/one.txt"];
        assert_eq!(
            names(watch.pending(root, &ignored)),
            Some(expected.map(str::to_owned).to_vec())
        );
        watch.settled();
        assert_eq!(names(watch.pending(root, &ignored)), Some(vec![]));
    }

    #[test]
    fn what_paths_cannot_describe_asks_for_a_full_scan_once() {
        let dir = assert_fs::TempDir::new().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/a")).unwrap();
        let ignored = |_: &[u8]| false;
        let mut watch = Watch::start(root, &ignored).unwrap();
        for change in [
            |root: &Path| std::fs::rename(root.join("src/a"), root.join("src/b")).unwrap(),
            |root: &Path| std::fs::remove_dir(root.join("src/b")).unwrap(),
            |root: &Path| std::fs::write(root.join(".gitignore"), "x\n").unwrap(),
        ] {
            change(root);
            assert_eq!(names(watch.pending(root, &ignored)), None);
            // Until a scan settles it, the answer stays "scan everything".
            assert_eq!(names(watch.pending(root, &ignored)), None);
            watch.settled();
            assert_eq!(names(watch.pending(root, &ignored)), Some(vec![]));
        }
    }
}
