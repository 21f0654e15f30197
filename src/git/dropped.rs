//! Commits a task branch no longer reaches: an agent's `git reset`, an
//! amend or a rebase that left work behind, or a branch moved by hand.
//! They are kept under a ref of their own, so nothing an agent committed
//! becomes unreachable without a word.

use std::collections::HashSet;

use git2::{Oid, Sort};

use super::error::{Context, Result};
use super::{CommitId, Repo};

/// Where the dropped commits of a task branch are kept (see
/// [`Repo::dropped_ref`]).
const DROPPED_REF_PREFIX: &str = "refs/ralph/dropped/";

/// Commits a task branch held and no longer does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dropped {
    /// How many of the commits it no longer reaches have no equivalent
    /// (the same change) on it.
    pub commits: usize,
    /// The ref that keeps them: the branch's former tip.
    pub kept_under: String,
}

impl Repo {
    /// The ref that keeps the commits task `id`'s branch dropped in its
    /// iteration `n`: `refs/ralph/dropped/<id>/<n>`.
    pub fn dropped_ref(id: &str, n: u64) -> String {
        format!("{}/{n}", super::branch::task_ref(DROPPED_REF_PREFIX, id))
    }

    /// Keeps the commits of `before` (the task branch's tip ralph noted)
    /// that `after` (its tip now) no longer reaches, under
    /// [`Repo::dropped_ref`] for task `id`, iteration `n`. Commits the base
    /// holds do not count, nor those `after` holds the same change of (a
    /// rebase or a reworded amend moves commits without losing any work).
    /// `None` when nothing was dropped.
    pub fn keep_dropped(
        &self,
        before: &CommitId,
        after: &CommitId,
        id: &str,
        n: u64,
    ) -> Result<Option<Dropped>> {
        let (Ok(old), Ok(new)) = (
            Oid::from_str(before.as_str()),
            Oid::from_str(after.as_str()),
        ) else {
            return Ok(None);
        };
        // A commit that is gone (a gc after a reset) cannot be kept.
        if old == new || self.git.find_commit(old).is_err() {
            return Ok(None);
        }
        let contained = self
            .git
            .graph_descendant_of(new, old)
            .doing("compare the task branch with its last tip")?;
        if contained {
            return Ok(None);
        }
        let base = self.tip(&self.base)?.id();
        let gone = self.commits_only_in(old, &[new, base])?;
        let still_there = self.patch_ids(&self.commits_only_in(new, &[old, base])?)?;
        let lost = gone
            .iter()
            .filter(|commit| {
                self.patch_id(**commit)
                    .is_none_or(|patch| !still_there.contains(&patch))
            })
            .count();
        if lost == 0 {
            return Ok(None);
        }
        let name = Repo::dropped_ref(id, n);
        self.write_ref(&name, old, "ralph: commits the task branch dropped")?;
        Ok(Some(Dropped {
            commits: lost,
            kept_under: name,
        }))
    }

    /// The commits reachable from `from` and from none of `hidden`,
    /// merges left out (they carry no change of their own).
    fn commits_only_in(&self, from: Oid, hidden: &[Oid]) -> Result<Vec<Oid>> {
        let commits = self.walk(from, hidden, Sort::TOPOLOGICAL)?;
        let single = commits.iter().filter(|commit| commit.parent_count() <= 1);
        Ok(single.map(|commit| commit.id()).collect())
    }

    fn patch_ids(&self, commits: &[Oid]) -> Result<HashSet<Oid>> {
        Ok(commits.iter().filter_map(|c| self.patch_id(*c)).collect())
    }

    /// The change `commit` makes against its parent, as `git patch-id`
    /// names it; `None` when it cannot be read, or touches a file too large
    /// or too long to diff (such a commit is kept, never read whole).
    fn patch_id(&self, commit: Oid) -> Option<Oid> {
        let commit = self.git.find_commit(commit).ok()?;
        let tree = commit.tree().ok()?;
        let parent = match commit.parent(0) {
            Ok(parent) => parent.tree().ok()?,
            Err(_) => {
                let empty = self.git.treebuilder(None).ok()?.write().ok()?;
                self.git.find_tree(empty).ok()?
            }
        };
        let changed = self.changed_files(&parent, &tree).ok()?;
        if changed
            .iter()
            .any(|file| self.is_too_long(file.old) || self.is_too_long(file.new))
        {
            return None;
        }
        let diff = (self.git)
            .diff_tree_to_tree(Some(&parent), Some(&tree), None)
            .ok()?;
        diff.patchid(None).ok()
    }
}
