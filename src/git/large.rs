//! Files too large to read whole, or too long to diff. libgit2 reads a
//! blob whole (a loose object twice over: its compressed bytes, then the
//! inflated ones) to write the file out, to weigh it as a rename, to merge
//! it or to count its lines, and an agent may leave a file of hundreds of
//! MB. A blob larger than [`LARGE_BLOB`] (its size read from the object's
//! header) is never read by ralph: the user's git writes it out, streaming
//! it; a diff counts it as binary, as git counts a file above
//! `core.bigFileThreshold`, and as a rename only when its content is
//! unchanged; a merge looks for no renames when that would weigh it. A
//! diff line by line costs memory by the line, so a file of more than
//! [`MAX_DIFF_LINES`] lines is binary in a diff too; both kinds are a
//! conflict when both sides of a merge changed them.

use std::collections::HashMap;
use std::io::Read;

use git2::{Diff, DiffOptions, Oid, Tree};

use super::Repo;
use super::error::{Context, Result};
use super::tree::{Changed, TreeFile};

/// The size in bytes above which ralph never reads a blob whole (4 MiB),
/// so its memory stays within a few times this whatever an agent leaves:
/// reading a loose object takes up to twice its size for a moment, and a
/// diff holds two.
pub const LARGE_BLOB: u64 = 4 << 20;

/// The most lines in one version of a file that ralph diffs or merges line
/// by line: libgit2's diff takes some 60 bytes a line, so a few MB of short
/// lines would cost hundreds of MB. A longer file is binary in a diff, and
/// a conflict when both sides of a merge changed it.
pub const MAX_DIFF_LINES: usize = 50_000;

/// What a merge would read of large files (see [`Repo::large_in_merge`]).
pub(super) struct LargeInMerge {
    /// Whether the merge may look for renames: no candidate is large.
    pub renames: bool,
    /// The files both sides changed, each its own way, too large or too
    /// long to merge line by line: a conflict, in path order, without the
    /// queue files (the disk wins for them).
    pub both_changed: Vec<String>,
}

impl Repo {
    /// The size of `file`'s blob, read from the object's header, when it
    /// is a regular file. An object that cannot be read has none: libgit2
    /// then skips it, as it did before it was weighed.
    fn blob_size(&self, file: Option<TreeFile>) -> Option<u64> {
        let file = file.filter(|file| matches!(file.mode, 0o100644 | 0o100755))?;
        let (size, _) = self.git.odb().ok()?.read_header(file.id).ok()?;
        Some(size as u64)
    }

    /// Whether `file` is a regular file larger than [`LARGE_BLOB`].
    pub(super) fn is_large(&self, file: Option<TreeFile>) -> bool {
        self.blob_size(file).is_some_and(|size| size > LARGE_BLOB)
    }

    /// Whether `file` is too large or too long to diff or merge line by
    /// line: larger than [`LARGE_BLOB`], or of more than
    /// [`MAX_DIFF_LINES`] lines (counted in a blob that may hold so many).
    pub(super) fn is_too_long(&self, file: Option<TreeFile>) -> bool {
        match self.blob_size(file) {
            Some(size) if size > LARGE_BLOB => true,
            Some(size) if size > MAX_DIFF_LINES as u64 => file
                .and_then(|file| self.newlines(file.id))
                .is_some_and(|lines| lines > MAX_DIFF_LINES),
            _ => false,
        }
    }

    /// How many newlines blob `id` holds, read a piece at a time when the
    /// object database can stream it (a loose object), else whole.
    fn newlines(&self, id: Oid) -> Option<usize> {
        let count = |bytes: &[u8]| bytes.iter().filter(|byte| **byte == b'\n').count();
        let odb = self.git.odb().ok()?;
        let Ok((mut stream, _, _)) = odb.reader(id) else {
            return self
                .git
                .find_blob(id)
                .ok()
                .map(|blob| count(blob.content()));
        };
        let mut piece = vec![0; 64 << 10];
        let mut lines = 0;
        loop {
            match stream.read(&mut piece).ok()? {
                0 => return Some(lines),
                read => lines += count(&piece[..read]),
            }
        }
    }

    /// The diff of `old` against `new` with `options`, over the files that
    /// differ, renames found (`git diff -M`), the large files left out:
    /// `None` when every changed file is large. Then the paths of those
    /// large files, as a diff names them (the new path, a deletion's old
    /// one), in path order; a file renamed unchanged is one path, the new.
    pub(super) fn diff_with_renames<'r>(
        &'r self,
        old: &Tree<'_>,
        new: &Tree<'_>,
        mut options: DiffOptions,
        action: &str,
    ) -> Result<(Option<Diff<'r>>, Vec<String>)> {
        let (large, small): (Vec<Changed>, Vec<Changed>) = self
            .changed_files(old, new)?
            .into_iter()
            .partition(|file| self.is_large(file.old) || self.is_large(file.new));
        if small.is_empty() {
            return Ok((None, large_paths(large)));
        }
        // Only the files that differ (read by the walk, which skips equal
        // subtrees), so that the renames are found among those alone.
        options.disable_pathspec_match(true);
        for file in &small {
            options.pathspec(file.path.as_slice());
        }
        let mut diff = self
            .git
            .diff_tree_to_tree(Some(old), Some(new), Some(&mut options))
            .doing(action)?;
        diff.find_similar(None).doing("find renames")?;
        Ok((Some(diff), large_paths(large)))
    }

    /// What a merge of the commits `ours` and `theirs` would read of large
    /// files: libgit2 weighs each file a side deleted against each file
    /// that side added when it looks for renames, and merges the contents
    /// of a file both sides changed line by line.
    pub(super) fn large_in_merge(&self, ours: Oid, theirs: Oid) -> Result<LargeInMerge> {
        let ancestor = (self.git)
            .merge_base(ours, theirs)
            .doing("find where the branches part")?;
        let tree = |id| {
            (self.git)
                .find_commit(id)
                .and_then(|commit| commit.tree())
                .doing("read a commit's tree")
        };
        let ancestor = tree(ancestor)?;
        let ours = self.changed_files(&ancestor, &tree(ours)?)?;
        let theirs = self.changed_files(&ancestor, &tree(theirs)?)?;
        let renames = [&ours, &theirs].iter().all(|side| {
            let deleted = || side.iter().filter(|file| file.new.is_none());
            let added = || side.iter().filter(|file| file.old.is_none());
            deleted().next().is_none()
                || added().next().is_none()
                || !(deleted().any(|file| self.is_large(file.old))
                    || added().any(|file| self.is_large(file.new)))
        });
        let theirs: HashMap<&[u8], &Changed> = theirs
            .iter()
            .map(|file| (file.path.as_slice(), file))
            .collect();
        let mut both_changed = Vec::new();
        for file in &ours {
            let Some(other) = theirs.get(file.path.as_slice()) else {
                continue;
            };
            let path = String::from_utf8_lossy(&file.path);
            let apart = file.new.is_some() && other.new.is_some() && file.new != other.new;
            if apart
                && !self.is_queue_file(&path)
                && [file.old, file.new, other.new]
                    .into_iter()
                    .any(|side| self.is_too_long(side))
            {
                both_changed.push(path.into_owned());
            }
        }
        Ok(LargeInMerge {
            renames,
            both_changed,
        })
    }
}

/// The paths of the large `files` as a diff with renames names them: a
/// file deleted whose blob a path added is a rename, named by that path.
fn large_paths(files: Vec<Changed>) -> Vec<String> {
    let mut added: Vec<Oid> = files
        .iter()
        .filter(|file| file.old.is_none())
        .filter_map(|file| file.new.map(|new| new.id))
        .collect();
    let mut paths = Vec::new();
    for file in files {
        if let (Some(old), None) = (file.old, file.new)
            && let Some(found) = added.iter().position(|id| *id == old.id)
        {
            added.swap_remove(found);
            continue;
        }
        paths.push(String::from_utf8_lossy(&file.path).into_owned());
    }
    paths.sort();
    paths
}
