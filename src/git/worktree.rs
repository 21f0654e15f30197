//! The working tree: what is uncommitted, and checkouts that carry the queue
//! files' bytes over unchanged.

use std::cell::RefCell;
use std::fs::{self, File};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use git2::build::{CheckoutBuilder, TreeUpdateBuilder};
use git2::{
    AttrCheckFlags, CheckoutNotificationType, ErrorCode, FileMode, Index, IndexEntry, IndexTime,
    Oid,
};

use super::error::{Context, Error, Result, io_error};
use super::tree::Changed;
use super::{Repo, git2_path};
use crate::platform::Watch;

/// A queue file's content in a commit: its blob and mode.
type Version = (Oid, FileMode);

/// What a leftovers commit has to take (see [`Repo::uncommitted_paths`]).
pub(super) struct Uncommitted {
    /// Changed files of the working tree (modified, deleted, untracked),
    /// ralph's own files left out. Bytes, as git keeps them: a name need
    /// not be UTF-8.
    pub paths: Vec<Vec<u8>>,
    /// Whether the index holds staged changes, apart from ralph's own files.
    pub staged: bool,
    /// Ralph's own files that are staged (an agent's `git add -A` takes a
    /// queue temp file or `.ralph/` along): a commit unstages them.
    pub own_staged: Vec<String>,
    /// Paths with a conflict in the index: nothing can be committed.
    pub unmerged: Vec<String>,
    /// Every path of `paths` is a plain tracked file or link, as the watch
    /// found them without asking `git status` (see [`Repo::stage_tracked`]).
    pub tracked: bool,
}

/// The watch of the working tree, and HEAD's tree when it last settled: a
/// HEAD that moved since (`git reset HEAD~1` moves the index along and
/// writes no file) may differ from the files on disk in paths the watch
/// never saw written.
pub(super) struct Watching {
    changes: Watch,
    head_tree: Option<Oid>,
}

/// What a scan of the working tree that found nothing uncommitted (apart
/// from ralph's own files and ignored paths) hands on: the methods that
/// would otherwise scan the whole tree again take it instead. Only this
/// module makes one (after a scan, or after its own commits and
/// checkouts of a clean tree), and each use consumes it; a caller that ran
/// anything else in between (a verify command) drops it and lets the next
/// step scan (the scan is a large part of an iteration's own time on a
/// big tree; docs/BENCHMARKS.md).
#[derive(Debug, PartialEq, Eq)]
pub struct Clean(());

impl Clean {
    /// Only for this module's own scans, commits and checkouts.
    pub(super) fn new() -> Clean {
        Clean(())
    }
}

/// One line of `git status --porcelain -z`: a path and its two status
/// letters, the index's against HEAD and the working tree's against the
/// index (`?` both for an untracked file).
struct Entry {
    path: Vec<u8>,
    index: u8,
    tree: u8,
}

impl Entry {
    /// Not in HEAD: untracked, or staged as new.
    fn is_new(&self) -> bool {
        self.index == b'?' || self.index == b'A'
    }

    /// A conflict (`UU`, `AA`, `DU`, ...).
    fn is_unmerged(&self) -> bool {
        matches!(
            (self.index, self.tree),
            (b'U', _) | (_, b'U') | (b'A', b'A') | (b'D', b'D')
        )
    }

    fn is_staged(&self) -> bool {
        !matches!(self.index, b' ' | b'?')
    }

    fn is_changed_in_tree(&self) -> bool {
        self.tree != b' '
    }

    fn path(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.path)
    }
}

/// Paths beyond which a scan of what the watch saw is a full scan (one
/// command line holds them all).
const MAX_SCANNED_PATHS: usize = 2000;

/// A repository-relative path git gave as bytes.
pub(super) fn bytes_path(path: &[u8]) -> &Path {
    Path::new(std::ffi::OsStr::from_bytes(path))
}

impl Repo {
    /// The paths `git status` would list, apart from ralph's own files:
    /// modified, staged, deleted, conflicted and untracked (not ignored).
    pub fn uncommitted_changes(&self) -> Result<Vec<String>> {
        let mut paths: Vec<String> = self
            .scan(&[])?
            .iter()
            .filter(|entry| !self.is_own(&entry.path(), entry.is_new()))
            .map(|entry| entry.path().into_owned())
            .collect();
        paths.dedup();
        Ok(paths)
    }

    /// What `git status` lists at the end of a run, apart from ralph's own
    /// files, as `XY path`: submodules with uncommitted files of their own
    /// included (no leftovers commit takes those). Empty when ralph left
    /// nothing behind.
    pub fn left_uncommitted(&self) -> Result<Vec<String>> {
        let entries = self.status(&[], "--ignore-submodules=none")?;
        Ok(entries
            .iter()
            .filter(|entry| !self.is_own(&entry.path(), entry.is_new()))
            .map(|entry| {
                let letters = String::from_utf8_lossy(&[entry.index, entry.tree]).into_owned();
                format!("{letters} {}", entry.path())
            })
            .collect())
    }

    /// `git status` of the working tree (or of `paths` and what lies below
    /// them), with untracked files, without ignored ones and without a
    /// submodule's own uncommitted files (they are that repository's; a
    /// submodule checked out at another commit is listed): the user's git
    /// applies its filters, LFS, sparse checkout and `core.autocrlf`, and
    /// refreshes the index's file stats as it goes.
    fn scan(&self, paths: &[Vec<u8>]) -> Result<Vec<Entry>> {
        self.status(paths, "--ignore-submodules=dirty")
    }

    /// `git status` as [`Repo::scan`] runs it, with `submodules` saying
    /// what of a submodule counts.
    fn status(&self, paths: &[Vec<u8>], submodules: &str) -> Result<Vec<Entry>> {
        let fixed = [
            "--literal-pathspecs",
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            submodules,
            "--no-renames",
            "--",
        ];
        let mut args: Vec<&std::ffi::OsStr> = fixed.iter().map(std::ffi::OsStr::new).collect();
        args.extend(paths.iter().map(|path| std::ffi::OsStr::from_bytes(path)));
        let action = "read the working tree's status";
        let started = std::time::Instant::now();
        let output = self
            .git_command()?
            .args(&args)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|source| Error::Command {
                action: action.to_owned(),
                said: format!("cannot run git: {source}"),
            })?;
        let status = output.status;
        super::timing::log_command(&args, status.success(), status.code(), started);
        if !output.status.success() {
            return Err(Error::Command {
                action: action.to_owned(),
                said: String::from_utf8_lossy(&output.stderr)
                    .trim_end()
                    .to_owned(),
            });
        }
        Ok(parse_status(&output.stdout))
    }

    /// Watches the working tree from now on, so that the scan after each
    /// iteration ([`Repo::commit_leftovers`]) looks only at the paths that
    /// changed since the one before (`platform::Watch`: Linux only;
    /// elsewhere every scan is a full one). The first such scan
    /// after this covers everything changed since this call: a full scan
    /// (the run's preflight) should follow it.
    pub fn watch_changes(&self) -> Result<()> {
        let index = self.index()?;
        let watch = Watch::start(self.workdir(), &|rel| self.unwatched(&index, rel));
        *self.watch.borrow_mut() = watch.map(|changes| Watching {
            changes,
            head_tree: self.head_tree_id(),
        });
        Ok(())
    }

    /// HEAD's tree, if it has one (an unborn branch has none).
    fn head_tree_id(&self) -> Option<Oid> {
        let tree = self.git.head().and_then(|head| head.peel_to_tree());
        tree.ok().map(|tree| tree.id())
    }

    /// Whether the folder `rel` need not be watched: ignored, and holding
    /// no tracked file.
    fn unwatched(&self, index: &Index, rel: &[u8]) -> bool {
        let path = bytes_path(rel);
        let mut prefix = rel.to_vec();
        prefix.push(b'/');
        self.git.is_path_ignored(path).unwrap_or(false)
            && index.find_prefix(bytes_path(&prefix)).is_err()
    }

    /// The paths changed since the last settled leftovers scan, when the
    /// watch can vouch for them: no watch, a lost one, or an index that
    /// differs from HEAD (`git rm --cached`, `git reset --soft` touch no
    /// file of the tree) mean a full scan. When HEAD moved, the paths its
    /// tree changed are looked at too.
    fn watched_changes(&self) -> Result<Option<Vec<Vec<u8>>>> {
        let mut watch = self.watch.borrow_mut();
        let Some(watching) = watch.as_mut() else {
            return Ok(None);
        };
        let mut index = self.index()?;
        let pending =
            (watching.changes).pending(self.workdir(), &|rel| self.unwatched(&index, rel));
        let Some(mut paths) = pending else {
            return Ok(None);
        };
        if index.has_conflicts() {
            return Ok(None);
        }
        let head_tree = self.head_tree()?;
        let index_tree = index.write_tree().doing("compare the index with HEAD")?;
        if index_tree != head_tree.id() {
            return Ok(None);
        }
        match watching.head_tree {
            Some(settled) if settled == head_tree.id() => {}
            Some(settled) => {
                let settled = self.git.find_tree(settled).doing("read the settled tree")?;
                paths.extend(self.changed_paths(&settled, &head_tree)?);
                paths.sort();
                paths.dedup();
            }
            None => return Ok(None),
        }
        // A file written inside a submodule changes nothing here unless
        // the submodule moved to another commit: git looks at the gitlink.
        let gitlinks: Vec<Vec<u8>> = index
            .iter()
            .filter(|entry| entry.mode == 0o160000)
            .map(|entry| entry.path)
            .collect();
        if !gitlinks.is_empty() {
            for path in &mut paths {
                let inside = gitlinks
                    .iter()
                    .find(|link| path.starts_with(link) && path.get(link.len()) == Some(&b'/'));
                if let Some(link) = inside {
                    *path = link.clone();
                }
            }
            paths.sort();
            paths.dedup();
        }
        Ok(Some(paths))
    }

    /// The paths of `paths` (written since the last settled scan, with the
    /// index matching HEAD) that git might see changed: not ralph's own
    /// files, and not a tracked file whose size, modification time, inode
    /// kind and executable bit still match its index entry, which is how git itself tells
    /// an unchanged file without reading it (a file modified in the same
    /// moment the index was written is looked at, as git does). Saves
    /// starting `git status` after an iteration whose agent committed
    /// everything.
    fn maybe_changed(&self, paths: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>> {
        use std::os::unix::fs::MetadataExt;
        let index = self.index()?;
        let index_written = fs::metadata(self.git.path().join("index"))
            .map(|meta| (meta.mtime(), meta.mtime_nsec()))
            .unwrap_or((i64::MAX, 0));
        let mut left = Vec::new();
        for path in paths {
            let file = bytes_path(&path);
            let entry = index.get_path(file, 0);
            if self.is_own(&String::from_utf8_lossy(&path), entry.is_none()) {
                continue;
            }
            let meta = fs::symlink_metadata(self.workdir().join(file));
            let unchanged = match (&entry, &meta) {
                (Some(entry), Ok(meta)) => {
                    let kind = entry.mode & 0o170000;
                    let same_kind = (kind == 0o100000 && meta.is_file())
                        || (kind == 0o120000 && meta.file_type().is_symlink());
                    // `chmod +x` changes neither size nor mtime: git
                    // compares the owner's executable bit too (whether it
                    // counts, `core.fileMode`, is the scan's to say).
                    let same_mode =
                        kind != 0o100000 || (entry.mode & 0o100 == 0) == (meta.mode() & 0o100 == 0);
                    let racy = (meta.mtime(), meta.mtime_nsec()) >= index_written;
                    same_kind
                        && same_mode
                        && !racy
                        && entry.file_size == meta.size() as u32
                        && entry.mtime.seconds() == meta.mtime() as i32
                        && entry.mtime.nanoseconds() == meta.mtime_nsec() as u32
                        && entry.ino == meta.ino() as u32
                }
                // Neither in the index nor on disk: made and removed.
                (None, Err(err)) => err.kind() == io::ErrorKind::NotFound,
                _ => false,
            };
            if !unchanged {
                left.push(path);
            }
        }
        Ok(left)
    }

    /// `paths` (the watch's, each maybe changed, with the index matching
    /// HEAD) as changed in the working tree, without asking `git status`,
    /// when every one is a plain tracked file or link (no submodule, no
    /// sparse or assumed-unchanged entry) whose path is not a folder now:
    /// staging them through git's `update-index` then does what `git add`
    /// would, a file whose content git finds unchanged included (it stages
    /// nothing). `None` when any is otherwise: `git status` decides.
    fn plain_tracked(&self, paths: &[Vec<u8>]) -> Result<Option<Vec<Entry>>> {
        // The index's extended flags: sparse checkout, intent to add.
        const SKIP_WORKTREE: u16 = 0x4000;
        const INTENT_TO_ADD: u16 = 0x2000;
        // The index entry's "assume unchanged" flag.
        const ASSUME_VALID: u16 = 0x8000;
        let index = self.index()?;
        let mut entries = Vec::with_capacity(paths.len());
        for path in paths {
            let file = bytes_path(path);
            let Some(entry) = index.get_path(file, 0) else {
                return Ok(None);
            };
            let plain = matches!(entry.mode, 0o100644 | 0o100755 | 0o120000)
                && entry.flags & ASSUME_VALID == 0
                && entry.flags_extended & (SKIP_WORKTREE | INTENT_TO_ADD) == 0;
            let folder = fs::symlink_metadata(self.workdir().join(file)).is_ok_and(|m| m.is_dir());
            if !plain || folder {
                return Ok(None);
            }
            entries.push(Entry {
                path: path.clone(),
                index: b' ',
                tree: b'M',
            });
        }
        Ok(Some(entries))
    }

    /// A leftovers scan left the tree clean: the watch starts afresh.
    pub(super) fn settle_watch(&self) {
        if let Some(watching) = self.watch.borrow_mut().as_mut() {
            watching.changes.settled();
            watching.head_tree = self.head_tree_id();
        }
    }

    /// What a commit of leftovers takes: the working tree's changes
    /// against the index, and whether anything is staged. Only the paths the
    /// watch saw change are looked at, when it can vouch for the rest.
    pub(super) fn uncommitted_paths(&self) -> Result<Uncommitted> {
        let (entries, tracked) = match self.watched_changes()? {
            Some(paths) => match self.maybe_changed(paths)? {
                paths if paths.is_empty() => (Vec::new(), true),
                paths if paths.len() <= MAX_SCANNED_PATHS => match self.plain_tracked(&paths)? {
                    Some(entries) => (entries, true),
                    None => (self.scan(&paths)?, false),
                },
                _ => (self.scan(&[])?, false),
            },
            None => (self.scan(&[])?, false),
        };
        let mut uncommitted = Uncommitted {
            paths: Vec::new(),
            staged: false,
            own_staged: Vec::new(),
            unmerged: Vec::new(),
            tracked,
        };
        for entry in entries {
            let path = entry.path();
            let own = self.is_own(&path, entry.is_new());
            if entry.is_unmerged() {
                uncommitted.unmerged.push(path.into_owned());
                continue;
            }
            if entry.is_staged() {
                if own {
                    uncommitted.own_staged.push(path.into_owned());
                } else {
                    uncommitted.staged = true;
                }
            }
            if entry.is_changed_in_tree() && !own {
                uncommitted.paths.push(entry.path);
            }
        }
        Ok(uncommitted)
    }

    /// Fails with [`Error::Dirty`] naming the uncommitted paths, if any.
    pub fn check_clean(&self) -> Result<Clean> {
        let paths = self.uncommitted_changes()?;
        if paths.is_empty() {
            Ok(Clean::new())
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
    /// The checkout is git's safe one: a file changed on disk since HEAD's
    /// commit is never overwritten ([`Error::Dirty`] names it instead).
    fn checkout_leaving_queue(&self, branch: &str) -> Result<()> {
        let _timed = super::timing::timed("checkout", branch);
        let target = self.tip(branch)?;
        let target_tree = target.tree().doing(&format!("read the tree of {branch}"))?;
        let current_tree = self.head_tree()?;
        self.switch_tree(&current_tree, &target_tree, false)?;
        self.point_head_at(branch)
    }

    /// Points HEAD at `branch`, touching no file.
    pub(super) fn point_head_at(&self, branch: &str) -> Result<()> {
        self.wait_for_ref_locks(&["HEAD"])?;
        self.git
            .set_head(&format!("refs/heads/{branch}"))
            .doing(&format!("point HEAD at {branch}"))
    }

    /// Turns the index and working tree from tree `from` (as checked out)
    /// into tree `to`, writing only the paths that differ, the queue files
    /// apart (their index entries follow `to`, so `git status` compares
    /// their bytes on disk with it). Without `force`, a file changed on disk
    /// since `from` is never overwritten ([`Error::Dirty`] names it); with
    /// it, those paths end as `to` has them, untracked files `to` lacks
    /// removed. HEAD is left alone.
    pub(super) fn switch_tree(
        &self,
        from: &git2::Tree<'_>,
        to: &git2::Tree<'_>,
        force: bool,
    ) -> Result<()> {
        self.wait_for_index_lock()?;
        // libgit2's checkout works on the index it read last.
        self.index()?;
        let files: Vec<_> = (self.changed_files(from, to)?.into_iter())
            .filter(|file| !self.is_queue_file(&String::from_utf8_lossy(&file.path)))
            .collect();
        if !files.is_empty() {
            // libgit2 reads a blob whole to write it: the large ones are
            // the user's git's to write (see large.rs), once git's status
            // shows nothing there that writing them would lose (libgit2
            // checks only the files it writes itself).
            let (large, small): (Vec<Changed>, Vec<Changed>) =
                files.into_iter().partition(|file| self.is_large(file.new));
            let [large, small]: [Vec<Vec<u8>>; 2] =
                [large, small].map(|files| files.into_iter().map(|file| file.path).collect());
            if !large.is_empty() && !force {
                let mut paths: Vec<String> = (self.scan(&large)?.iter())
                    .map(|entry| entry.path().into_owned())
                    .collect();
                if !paths.is_empty() {
                    paths.sort();
                    paths.dedup();
                    return Err(Error::Dirty { paths });
                }
                // git's status may have written the index (refreshed file
                // stats), which libgit2's checkout would write over.
                self.index()?;
            }
            if !small.is_empty() {
                self.checkout_paths(to, &small, force)?;
            }
            let mut through_git = self.smudge_filtered(&small, to);
            through_git.extend(large);
            self.write_through_git(&through_git, to)?;
        }
        self.queue_entries_follow(to)
    }

    /// libgit2's checkout of `paths` as tree `to` has them (see
    /// [`Repo::switch_tree`] for `force`).
    fn checkout_paths(&self, to: &git2::Tree<'_>, paths: &[Vec<u8>], force: bool) -> Result<()> {
        let conflicts = RefCell::new(Vec::new());
        let mut checkout = CheckoutBuilder::new();
        if force {
            // A checkout a kill cut short writes files before the
            // index: a file it added is untracked then, and goes too.
            checkout.force().remove_untracked(true);
        } else {
            checkout.safe();
        }
        checkout
            .disable_pathspec_match(true)
            .notify_on(CheckoutNotificationType::CONFLICT)
            .notify(|_, path, _, _, _| {
                if let Some(path) = path {
                    conflicts
                        .borrow_mut()
                        .push(path.to_string_lossy().into_owned());
                }
                true
            });
        for path in paths {
            checkout.path(path.as_slice());
        }
        let result = self.git.checkout_tree(to.as_object(), Some(&mut checkout));
        drop(checkout);
        match result {
            Err(err) if err.code() == ErrorCode::Conflict => {
                let mut paths = conflicts.into_inner();
                paths.sort();
                paths.dedup();
                Err(Error::Dirty { paths })
            }
            // Every file is written, and libgit2's copy of the index
            // has them; only writing it out met another git's lock.
            Err(err) if err.code() == ErrorCode::Locked => {
                let mut index = self.git.index().doing("open the index")?;
                super::cli::wait_out_lock(|| self.try_write_index(&mut index))
            }
            other => other.doing("check out the files"),
        }
    }

    /// Those of `paths` (checked out as tree `to` has them) whose filter
    /// turns the committed form into other bytes on disk: libgit2 runs no
    /// smudge filter, so an LFS file would be left as its pointer.
    fn smudge_filtered(&self, paths: &[Vec<u8>], to: &git2::Tree<'_>) -> Vec<Vec<u8>> {
        let Some(config) = self.config() else {
            return Vec::new();
        };
        let smudges = |filter: &str| {
            ["smudge", "process"]
                .iter()
                .any(|key| config.get_string(&format!("filter.{filter}.{key}")).is_ok())
        };
        paths
            .iter()
            .filter(|path| {
                let path = bytes_path(path);
                let filter = (self.git).get_attr(path, "filter", AttrCheckFlags::INDEX_THEN_FILE);
                to.get_path(path).is_ok() && matches!(filter, Ok(Some(filter)) if smudges(filter))
            })
            .cloned()
            .collect()
    }

    /// Writes `paths` as tree `to` has them through the user's git (`git
    /// checkout-index`), which runs their smudge filters and streams a blob
    /// to its file, where libgit2 runs no filter and reads it whole. Their
    /// index entries are set to `to`'s first, without file stats.
    fn write_through_git(&self, paths: &[Vec<u8>], to: &git2::Tree<'_>) -> Result<()> {
        let files: Vec<(&[u8], git2::TreeEntry<'_>)> = (paths.iter())
            .filter_map(|path| Some((path.as_slice(), to.get_path(bytes_path(path)).ok()?)))
            .collect();
        if files.is_empty() {
            return Ok(());
        }
        // git writes no file whose index entry matches it on disk: a size
        // of zero tells it to look again.
        self.update_index(|index| {
            for (path, item) in &files {
                let mode = u32::try_from(item.filemode()).unwrap_or(0o100644);
                let mut entry = entry(path, mode, item.id());
                if let Some(staged) = index.get_path(bytes_path(path), 0) {
                    // Keeps a sparse checkout's skip-worktree mark.
                    (entry.flags, entry.flags_extended) = (staged.flags, staged.flags_extended);
                }
                index.add(&entry).doing("mark a file for git to write")?;
            }
            Ok(true)
        })?;
        let list = super::cli::nul_separated(files.iter().map(|(path, _)| *path));
        // `-u`: git records the files' stats, so that the next scan need
        // not read them again.
        let args = ["checkout-index", "--force", "-u", "-z", "--stdin"];
        self.git_ok(&args, &list, "write the filtered and large files")?;
        Ok(())
    }

    /// Sets the queue files' index entries to their versions in `tree`
    /// (the one checked out, or HEAD's just committed), so `git status`
    /// compares their bytes on disk with it.
    pub(super) fn queue_entries_follow(&self, tree: &git2::Tree<'_>) -> Result<()> {
        self.update_index(|index| {
            let mut changed = false;
            for file in &self.queue {
                changed |= self.unstage(index, tree, &file.rel)?;
            }
            Ok(changed)
        })
    }

    /// The queue files a commit on top of `tree` can take: tracked in it,
    /// or on disk and not ignored.
    pub(super) fn committable_queue_files(&self, tree: &git2::Tree<'_>) -> Result<Vec<String>> {
        let mut files = Vec::new();
        if self.queue_uncommitted {
            return Ok(files);
        }
        for file in &self.queue {
            check_queue_file(&file.abs)?;
            let path = git2_path(&file.rel);
            let tracked = tree.get_path(path).is_ok();
            if tracked
                || (file.abs.exists()
                    && !self.git.is_path_ignored(path).doing("read .gitignore")?)
            {
                files.push(file.rel.clone());
            }
        }
        Ok(files)
    }

    /// The index as it is on disk now: the user's git changes it too, and
    /// libgit2 keeps the copy it read last (checkouts use that one).
    pub(super) fn index(&self) -> Result<Index> {
        let split = |err: &git2::Error| err.message().contains("extension: 'link'");
        let read = self.git.index().and_then(|mut index| {
            index.read(false)?;
            Ok(index)
        });
        match read {
            Err(err) if split(&err) => Err(Error::SplitIndex),
            read => read.doing("read the index"),
        }
    }

    /// Reads the index, lets `change` edit it, and writes it back when
    /// `change` says it changed something. While another git process
    /// holds `index.lock` (a `git status` that an editor or a shell prompt
    /// runs refreshes the index under it), waits that out and starts again
    /// from the index as that process left it.
    pub(super) fn update_index(
        &self,
        mut change: impl FnMut(&mut Index) -> Result<bool>,
    ) -> Result<()> {
        let mut retry = false;
        super::cli::wait_out_lock(|| {
            let mut index = self.index()?;
            if std::mem::replace(&mut retry, true) {
                // libgit2's copy holds the change that was not written.
                index.read(true).doing("read the index")?;
            }
            if !change(&mut index)? {
                return Ok(Ok(()));
            }
            self.try_write_index(&mut index)
        })
    }

    /// Writes `index` out, or names the lock file another git holds.
    fn try_write_index(&self, index: &mut Index) -> Result<std::result::Result<(), PathBuf>> {
        match index.write() {
            Err(err) if err.code() == ErrorCode::Locked => {
                Ok(Err(self.git.path().join("index.lock")))
            }
            written => written.doing("write the index").map(Ok),
        }
    }

    /// Takes the task store's queue lock (`.ralph/queue/tasks.lock`), waiting for
    /// a writer to finish; released when the returned file is dropped.
    pub(super) fn lock_queue(&self) -> Result<File> {
        crate::files::own::lock(&self.project, &self.queue_lock).map_err(io_error(&self.queue_lock))
    }

    /// What each queue file's entry in a commit on the base must be: its
    /// bytes on disk as a blob with `base`'s mode (a plain file's where
    /// `base` holds a link), or `None` when the file is missing, or neither
    /// tracked in `base` nor committable (ignored). A queue file that is
    /// not a file (a link an agent put there) is refused, never committed.
    /// With the queue kept uncommitted, `base`'s own entries.
    fn queue_versions(&self, base: &git2::Tree<'_>) -> Result<Vec<(&str, Option<Version>)>> {
        let mut versions = Vec::new();
        for file in &self.queue {
            let path = git2_path(&file.rel);
            let in_base = base.get_path(path).ok().map(|entry| {
                let mode = match entry.filemode() {
                    0o100755 => FileMode::BlobExecutable,
                    0o120000 => FileMode::Link,
                    _ => FileMode::Blob,
                };
                (entry.id(), mode)
            });
            if self.queue_uncommitted {
                versions.push((file.rel.as_str(), in_base));
                continue;
            }
            // The base's mode for the file, a plain file's for a new one.
            let mode = match in_base {
                Some((_, mode)) => Some(mode),
                None if self.git.is_path_ignored(path).doing("read .gitignore")? => None,
                None => Some(FileMode::Blob),
            };
            // An ignored file is not even read (it may be hundreds of MB).
            let read = match mode {
                Some(_) => queue_file_bytes(&file.abs)?,
                None => None,
            };
            let version = match (read, mode) {
                (Some(bytes), Some(mode)) => Some((
                    self.git
                        .blob(&bytes)
                        .doing(&format!("store {}", file.rel))?,
                    match mode {
                        FileMode::Link => FileMode::Blob,
                        mode => mode,
                    },
                )),
                _ => None,
            };
            versions.push((file.rel.as_str(), version));
        }
        Ok(versions)
    }

    /// Sets the queue files' entries of `index` to their bytes on disk (see
    /// [`Repo::queue_versions`]), clearing any conflict on them.
    pub(super) fn put_queue_files(&self, index: &mut Index, base: &git2::Tree<'_>) -> Result<()> {
        for (rel, version) in self.queue_versions(base)? {
            remove_entry(index, git2_path(rel))?;
            if let Some((blob, mode)) = version {
                index
                    .add(&entry(rel, mode.into(), blob))
                    .doing(&format!("stage {rel}"))?;
            }
        }
        Ok(())
    }

    /// `tree` with the queue files' entries set to their bytes on disk (see
    /// [`Repo::queue_versions`]); written without an index, so only the
    /// trees on the queue files' paths are new.
    pub(super) fn tree_with_queue_files(
        &self,
        tree: &git2::Tree<'_>,
        base: &git2::Tree<'_>,
    ) -> Result<Oid> {
        let mut update = TreeUpdateBuilder::new();
        for (rel, version) in self.queue_versions(base)? {
            let path = git2_path(rel);
            match version {
                Some((blob, mode)) => {
                    update.upsert(path, blob, mode);
                }
                None if tree.get_path(path).is_ok() => {
                    update.remove(path);
                }
                None => {}
            }
        }
        update
            .create_updated(&self.git, tree)
            .doing("write the merged tree")
    }

    /// Sets `path`'s entry of `index` back to its version in `tree`, or
    /// removes it when `tree` has none: nothing of it is staged. Returns
    /// whether the index changed.
    pub(super) fn unstage(
        &self,
        index: &mut Index,
        tree: &git2::Tree<'_>,
        rel: &str,
    ) -> Result<bool> {
        let path = git2_path(rel);
        match tree.get_path(path) {
            // Already as in `tree`: keep the entry and its cached file stats.
            Ok(item)
                if index
                    .get_path(path, 0)
                    .is_some_and(|staged| staged.id == item.id()) =>
            {
                Ok(false)
            }
            Ok(item) => {
                let mode = u32::try_from(item.filemode()).unwrap_or(0o100644);
                index
                    .add(&entry(rel, mode, item.id()))
                    .doing(&format!("unstage {rel}"))?;
                Ok(true)
            }
            Err(err) if err.code() == ErrorCode::NotFound => remove_entry(index, path),
            Err(err) => Err(err).doing(&format!("look up {rel}")),
        }
    }
}

/// Removes `path`'s entries (a conflict's too) from `index`; whether there
/// were any.
fn remove_entry(index: &mut Index, path: &Path) -> Result<bool> {
    if (0..=3).all(|stage| index.get_path(path, stage).is_none()) {
        return Ok(false);
    }
    match index.remove_path(path) {
        Err(err) if err.code() != ErrorCode::NotFound => {
            Err(err).doing(&format!("unstage {}", path.display()))
        }
        _ => Ok(true),
    }
}

/// An index entry without file-system metadata: git re-reads the file.
fn entry(rel: impl AsRef<[u8]>, mode: u32, id: git2::Oid) -> IndexEntry {
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
        path: rel.as_ref().to_vec(),
    }
}

/// The entries of `git status --porcelain=v1 -z --no-renames` output:
/// `XY path` records ended by NUL.
fn parse_status(out: &[u8]) -> Vec<Entry> {
    out.split(|&byte| byte == 0)
        .filter(|record| record.len() > 3)
        .map(|record| Entry {
            index: record[0],
            tree: record[1],
            path: record[3..].to_vec(),
        })
        .collect()
}

/// The bytes of queue file `path` (in the project's folder), `None` when
/// there is none; a link or anything but a file there is refused: ralph
/// never commits a queue file that is not one.
fn queue_file_bytes(path: &Path) -> Result<Option<Vec<u8>>> {
    let dir = crate::files::parent_dir(path);
    crate::files::own::read_if_exists(dir, path).map_err(io_error(path))
}

/// Refuses queue file `path` when it is there and is not a file (a link
/// an agent put in its place): ralph never commits one.
fn check_queue_file(path: &Path) -> Result<()> {
    let dir = crate::files::parent_dir(path);
    crate::files::own::check(dir, path, crate::files::own::Need::File).map_err(io_error(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_records_read_as_git_means_them() {
        let out = b" M a.txt\0?? new dir/x\0UU c.txt\0AA d.txt\0M  e.txt\0D  f.txt\0";
        let entries = parse_status(out);
        let seen: Vec<(String, bool, bool, bool, bool)> = entries
            .iter()
            .map(|e| {
                let path = e.path().into_owned();
                (
                    path,
                    e.is_new(),
                    e.is_unmerged(),
                    e.is_staged(),
                    e.is_changed_in_tree(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("a.txt".to_owned(), false, false, false, true),
                ("new dir/x".to_owned(), true, false, false, true),
                ("c.txt".to_owned(), false, true, true, true),
                ("d.txt".to_owned(), true, true, true, true),
                ("e.txt".to_owned(), false, false, true, false),
                ("f.txt".to_owned(), false, false, true, false),
            ]
        );
    }
}
