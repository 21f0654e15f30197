//! Comparing two trees by walking only the subtrees that differ: a task
//! touches a few files of a large repository, and two trees that share a
//! subtree's id share everything under it (libgit2's tree diff reads every
//! subtree of both sides).

use std::collections::BTreeMap;

use git2::{ObjectType, Oid, Tree};

use super::Repo;
use super::error::{Context, Result};

/// One side of a tree entry: its id, mode and whether it is a subtree.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Side {
    id: Oid,
    mode: i32,
    is_tree: bool,
}

/// A file (blob, link, submodule) as one tree has it: its id and mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct TreeFile {
    pub id: Oid,
    pub mode: i32,
}

/// A path whose file differs between two trees, and the file on each side
/// (`None`: no file there, or a subtree).
#[derive(Clone, Debug)]
pub(super) struct Changed {
    pub path: Vec<u8>,
    pub old: Option<TreeFile>,
    pub new: Option<TreeFile>,
}

impl Repo {
    /// The paths of the files (blobs, links, submodules) that differ
    /// between `old` and `new`, `/`-separated, in no particular order: what
    /// `git diff --name-only old new` lists, without rename detection.
    pub(super) fn changed_paths(&self, old: &Tree<'_>, new: &Tree<'_>) -> Result<Vec<Vec<u8>>> {
        let files = self.changed_files(old, new)?;
        Ok(files.into_iter().map(|file| file.path).collect())
    }

    /// [`Repo::changed_paths`] with the file each tree has there.
    pub(super) fn changed_files(&self, old: &Tree<'_>, new: &Tree<'_>) -> Result<Vec<Changed>> {
        let mut files = Vec::new();
        self.walk_changes(Some(old.id()), Some(new.id()), &mut Vec::new(), &mut files)?;
        Ok(files)
    }

    /// Adds to `out` the files under `prefix` that differ between the
    /// subtrees `old` and `new` (`None`: no such subtree on that side).
    fn walk_changes(
        &self,
        old: Option<Oid>,
        new: Option<Oid>,
        prefix: &mut Vec<u8>,
        out: &mut Vec<Changed>,
    ) -> Result<()> {
        if old == new {
            return Ok(());
        }
        let mut pairs: BTreeMap<Vec<u8>, (Option<Side>, Option<Side>)> = BTreeMap::new();
        for (tree, is_new) in [(old, false), (new, true)] {
            let Some(id) = tree else { continue };
            let tree = self.git.find_tree(id).doing("read a tree")?;
            for entry in tree.iter() {
                let side = Side {
                    id: entry.id(),
                    mode: entry.filemode(),
                    is_tree: entry.kind() == Some(ObjectType::Tree),
                };
                let pair = pairs.entry(entry.name_bytes().to_vec()).or_default();
                if is_new {
                    pair.1 = Some(side);
                } else {
                    pair.0 = Some(side);
                }
            }
        }
        for (name, (old, new)) in pairs {
            if old == new {
                continue;
            }
            let depth = prefix.len();
            if !prefix.is_empty() {
                prefix.push(b'/');
            }
            prefix.extend_from_slice(&name);
            let old_tree = old.filter(|side| side.is_tree).map(|side| side.id);
            let new_tree = new.filter(|side| side.is_tree).map(|side| side.id);
            if old_tree.is_some() || new_tree.is_some() {
                self.walk_changes(old_tree, new_tree, prefix, out)?;
            }
            // A file on either side (the other side missing, a subtree, or
            // another file) is a changed path.
            let file = |side: Option<Side>| {
                side.filter(|side| !side.is_tree).map(|side| TreeFile {
                    id: side.id,
                    mode: side.mode,
                })
            };
            if file(old).is_some() || file(new).is_some() {
                out.push(Changed {
                    path: prefix.clone(),
                    old: file(old),
                    new: file(new),
                });
            }
            prefix.truncate(depth);
        }
        Ok(())
    }
}
