//! What watching a branch for PRDs asks of git, once [`Repo::fetch`]
//! fetched it: the commits since the last one seen, the files each added
//! or changed, a file's bytes at a commit (within a limit), and
//! fast-forwarding the base to what was fetched.

use super::Repo;
use super::error::{Context, Result};

/// Where the base stands against the watched branch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FastForward {
    /// The base holds the watched branch already.
    UpToDate,
    /// The base is behind it: a fast-forward takes it there.
    Behind,
    /// Both have commits the other lacks: ralph forces nothing.
    Diverged {
        /// Commits only the base has.
        ahead: usize,
        /// Commits only the watched branch has.
        behind: usize,
    },
}

/// A file a commit added or changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Touched {
    /// Repository-relative, `/`-separated.
    pub path: String,
    /// Its blob id at that commit.
    pub blob: String,
}

impl Repo {
    /// The commit `reference` (a branch, a remote-tracking branch) names,
    /// if it exists.
    pub fn commit_of(&self, reference: &str) -> Option<String> {
        let object = self.git.revparse_single(reference).ok()?;
        let commit = object.peel_to_commit().ok()?;
        Some(commit.id().to_string())
    }

    /// The commits reachable from `head` and not from `since`, oldest
    /// first, parents before children; `None` when `since` no longer
    /// exists (history rewritten and collected): the caller starts afresh
    /// rather than walk the whole history.
    pub fn commits_since(&self, since: &str, head: &str) -> Result<Option<Vec<String>>> {
        let action = "walk the watched branch's new commits";
        let mut walk = self.git.revwalk().doing(action)?;
        walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::REVERSE)
            .doing(action)?;
        walk.push(git2::Oid::from_str(head).doing(action)?)
            .doing(action)?;
        let Some(since) = git2::Oid::from_str(since)
            .ok()
            .filter(|since| self.git.find_commit(*since).is_ok())
        else {
            return Ok(None);
        };
        walk.hide(since).doing(action)?;
        walk.map(|oid| oid.map(|oid| oid.to_string()).doing(action))
            .collect::<Result<Vec<_>>>()
            .map(Some)
    }

    /// The files `commit` added or changed against its first parent (all
    /// of them for a root commit), in byte order of their paths. Contents
    /// are never read.
    pub fn files_touched(&self, commit: &str) -> Result<Vec<Touched>> {
        let action = "list the files a watched commit changed";
        let commit = self.find_commit(commit, action)?;
        let tree = commit.tree().doing(action)?;
        let parent = match commit.parent(0) {
            Ok(parent) => Some(parent.tree().doing(action)?),
            Err(_) => None,
        };
        let diff = (self.git)
            .diff_tree_to_tree(parent.as_ref(), Some(&tree), None)
            .doing(action)?;
        let mut touched: Vec<Touched> = diff
            .deltas()
            .filter(|delta| {
                matches!(
                    delta.status(),
                    git2::Delta::Added | git2::Delta::Modified | git2::Delta::Renamed
                )
            })
            .filter_map(|delta| {
                let file = delta.new_file();
                let path = file.path()?.to_str()?.to_owned();
                Some(Touched {
                    path,
                    blob: file.id().to_string(),
                })
            })
            .collect();
        touched.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
        Ok(touched)
    }

    /// The bytes of blob `blob`, unless it is larger than `limit`: then
    /// `Err(size)`, read from its header only.
    pub fn blob_within(&self, blob: &str, limit: u64) -> Result<std::result::Result<Vec<u8>, u64>> {
        let action = "read a watched PRD";
        let oid = git2::Oid::from_str(blob).doing(action)?;
        let odb = self.git.odb().doing(action)?;
        let (size, _) = odb.read_header(oid).doing(action)?;
        if size as u64 > limit {
            return Ok(Err(size as u64));
        }
        let blob = self.git.find_blob(oid).doing(action)?;
        Ok(Ok(blob.content().to_vec()))
    }

    /// Where the base stands against `target`, the watched branch's head.
    pub fn base_against(&self, target: &str) -> Result<FastForward> {
        let action = "compare the base with the watched branch";
        let base = self.branch_tip(&self.base)?;
        let base = git2::Oid::from_str(base.as_str()).doing(action)?;
        let target = git2::Oid::from_str(target).doing(action)?;
        if self.is_ancestor(target, base)? {
            return Ok(FastForward::UpToDate);
        }
        if self.is_ancestor(base, target)? {
            return Ok(FastForward::Behind);
        }
        let (ahead, behind) = self.git.graph_ahead_behind(base, target).doing(action)?;
        Ok(FastForward::Diverged { ahead, behind })
    }
}
