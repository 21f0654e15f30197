//! Staging an agent's leftovers through the user's git: `git update-index`
//! of the paths a scan found, or, when the watch vouches that each is a
//! plain tracked file, git's clean filters by `git hash-object` and the
//! entries put in by libgit2, which then need not read the index again.

use std::fs::{self, Metadata};
use std::io;
use std::os::unix::fs::MetadataExt;

use git2::{IndexEntry, IndexTime};

use super::Repo;
use super::cli::nul_separated;
use super::error::{Context, Error, Result, io_error};
use super::worktree::bytes_path;

/// Settings under which git keeps something in the index that libgit2
/// drops when it writes it (an fsmonitor token, the untracked cache, a
/// split or sparse index): the user's git stages then.
const KEPT_BY_GIT: [&str; 5] = [
    "core.fsmonitor",
    "core.untrackedCache",
    "core.splitIndex",
    "index.sparse",
    "feature.manyFiles",
];

impl Repo {
    /// Stages `paths` (modified, deleted or new files) through the user's
    /// git, so its filters, LFS and `core.autocrlf`
    /// apply and a submodule is staged as its commit.
    pub(super) fn stage(&self, paths: &[Vec<u8>]) -> Result<()> {
        // `git status` names a repository inside the tree (a clone the
        // agent made) `dir/`, which `update-index` ignores; `dir` stages
        // its commit, as `git add` does.
        let list = nul_separated(
            paths
                .iter()
                .map(|path| path.strip_suffix(b"/").unwrap_or(path)),
        );
        // `git add --all` of a tracked file in an ignored folder stages it
        // but fails; `update-index` stages exactly the paths given.
        let args = ["update-index", "--add", "--remove", "-z", "--stdin"];
        self.git_ok(&args, &list, "stage the leftovers")?;
        Ok(())
    }

    /// Stages `paths`, each a plain tracked file the watch saw change (see
    /// [`Repo::plain_tracked`]), as [`Repo::stage`] does, without git
    /// rewriting the index: `git hash-object -w` makes each file's blob
    /// through the user's clean filters, LFS and `core.autocrlf` (what
    /// `git add` applies), and its entry, with the file's stat data taken
    /// before it was hashed, goes into libgit2's copy of the index, which
    /// libgit2 writes. libgit2 reads an index git wrote whole again (80 ms
    /// at 100,000 files, docs/BENCHMARKS.md); one it wrote itself, it
    /// keeps. A link, a path with a line break (`--stdin-paths` reads
    /// lines) or a setting of [`KEPT_BY_GIT`] leaves it all to `stage`.
    pub(super) fn stage_tracked(&self, paths: &[Vec<u8>]) -> Result<()> {
        let newline = paths.iter().any(|path| path.contains(&b'\n'));
        let Some(config) = self.config().filter(|c| !newline && !keeps_index_extras(c)) else {
            return self.stage(paths);
        };
        // Stat before hashing: a file written in between then differs
        // from its entry, and git looks at it again.
        let index = self.index()?;
        let mut found: Vec<(&[u8], Option<Metadata>)> = Vec::with_capacity(paths.len());
        for path in paths {
            let at = self.workdir().join(bytes_path(path));
            // A link, or a file that stands for one (`core.symlinks`
            // false), is git's to stage.
            let link = (index.get_path(bytes_path(path), 0)).is_some_and(|e| e.mode == 0o120000);
            match fs::symlink_metadata(&at) {
                Ok(meta) if meta.is_file() && !link => found.push((path, Some(meta))),
                Ok(_) => return self.stage(paths),
                Err(err) if err.kind() == io::ErrorKind::NotFound => found.push((path, None)),
                Err(err) => return Err(io_error(&at)(err)),
            }
        }
        let files: Vec<&[u8]> = (found.iter())
            .filter(|(_, meta)| meta.is_some())
            .map(|(path, _)| *path)
            .collect();
        let ids = self.hash_files(&files)?;
        let file_mode = config.get_bool("core.fileMode").unwrap_or(true);
        self.update_index(|index| {
            let mut ids = ids.iter();
            for (path, meta) in &found {
                let Some(meta) = meta else {
                    index
                        .remove_path(bytes_path(path))
                        .doing("unstage a deleted file")?;
                    continue;
                };
                let id = *ids.next().expect("one blob per file");
                let executable = if file_mode {
                    meta.mode() & 0o100 != 0
                } else {
                    // git keeps the mode it has when it may not trust the
                    // file's.
                    index
                        .get_path(bytes_path(path), 0)
                        .is_some_and(|entry| entry.mode == 0o100755)
                };
                index
                    .add(&stat_entry(path, meta, executable, id))
                    .doing("stage a file")?;
            }
            Ok(true)
        })
    }

    /// The blobs of `files` as `git add` makes them (the clean filters
    /// their attributes name applied), written to the object database.
    fn hash_files(&self, files: &[&[u8]]) -> Result<Vec<git2::Oid>> {
        if files.is_empty() {
            return Ok(Vec::new());
        }
        let mut list = Vec::new();
        for file in files {
            list.extend_from_slice(file);
            list.push(b'\n');
        }
        let args = ["hash-object", "-w", "--stdin-paths"];
        let out = self.git_ok(&args, &list, "stage the leftovers")?;
        let ids: Vec<git2::Oid> = String::from_utf8_lossy(&out)
            .lines()
            .filter_map(|line| git2::Oid::from_str(line.trim()).ok())
            .collect();
        if ids.len() != files.len() {
            return Err(Error::Command {
                action: "stage the leftovers".to_owned(),
                said: format!(
                    "git hash-object gave {} ids for {} files",
                    ids.len(),
                    files.len()
                ),
            });
        }
        Ok(ids)
    }
}

/// Whether `config` sets git to keep something in the index that libgit2
/// would drop (see [`KEPT_BY_GIT`]).
fn keeps_index_extras(config: &git2::Config) -> bool {
    KEPT_BY_GIT.iter().any(|key| match config.get_bool(key) {
        Ok(set) => set,
        // `core.fsmonitor` may name a hook; `core.untrackedCache` may say `keep`.
        Err(_) => config
            .get_string(key)
            .is_ok_and(|value| !value.is_empty() && value != "keep"),
    })
}

/// The index entry of a regular file at `path` with blob `id`, carrying
/// the stat data git compares to tell it unchanged.
fn stat_entry(path: &[u8], meta: &Metadata, executable: bool, id: git2::Oid) -> IndexEntry {
    // The index keeps 32 bits of each, as git does.
    let time = |seconds: i64, nanoseconds: i64| IndexTime::new(seconds as i32, nanoseconds as u32);
    IndexEntry {
        ctime: time(meta.ctime(), meta.ctime_nsec()),
        mtime: time(meta.mtime(), meta.mtime_nsec()),
        dev: meta.dev() as u32,
        ino: meta.ino() as u32,
        mode: if executable { 0o100755 } else { 0o100644 },
        uid: meta.uid(),
        gid: meta.gid(),
        file_size: meta.size() as u32,
        id,
        flags: 0,
        flags_extended: 0,
        path: path.to_vec(),
    }
}
