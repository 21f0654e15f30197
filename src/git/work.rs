//! The work on a task branch: what it has against the base, leftover
//! commits after an iteration, and getting back to the branch when the
//! agent left it.

use git2::{Commit, Delta, DiffOptions, Oid, Sort};

use super::error::{Context, Error, Result};
use super::worktree::Uncommitted;
use super::{BranchCommit, Clean, CommitId, Head, Repo, WIP_SUBJECT_PREFIX};

/// What [`Repo::commit_leftovers`] found and did after an iteration.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Leftovers {
    /// The `ralph: wip <id> iteration <n>` commit, when there was anything
    /// uncommitted on the task branch.
    pub wip_commit: Option<CommitId>,
    /// Set when HEAD was not on the task branch.
    pub left_branch: Option<LeftBranch>,
    /// Set when ralph is back on the task branch with everything committed.
    pub clean: Option<Clean>,
}

/// HEAD was found off the task branch after an iteration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeftBranch {
    /// Where HEAD was.
    pub found: Head,
    /// Whether ralph checked the task branch out again. It does not when
    /// the tree there has uncommitted changes (`dirty`).
    pub returned: bool,
    /// Whether the task branch was moved forward to HEAD's commit, because
    /// the agent committed on top of the task branch somewhere else.
    pub fast_forwarded: bool,
    /// The uncommitted paths that kept ralph from returning.
    pub dirty: Vec<String>,
}

impl Repo {
    /// The commits on `branch` since it left the base (`git log
    /// base..branch`), oldest first.
    pub fn commits_since_base(&self, branch: &str) -> Result<Vec<BranchCommit>> {
        let tip = self.tip(branch)?.id();
        let base = self.tip(&self.base)?.id();
        self.commits_between(base, tip)
    }

    /// What each of `paths` is at `branch`'s tip: its object's id, or
    /// `deleted` when the tip has none there.
    pub fn ids_at(&self, branch: &str, paths: &[&str]) -> Result<Vec<(String, String)>> {
        let tree = self.tip(branch)?.tree().doing("read the branch's tree")?;
        Ok(paths
            .iter()
            .map(|path| {
                let id = tree
                    .get_path(std::path::Path::new(path))
                    .map_or_else(|_| "deleted".to_owned(), |entry| entry.id().to_string());
                ((*path).to_owned(), id)
            })
            .collect())
    }

    /// Whether the working tree's file at `path` holds what `id` (an
    /// [`Repo::ids_at`] answer) says: the same blob, or both gone.
    pub fn tree_file_is(&self, path: &str, id: &str) -> bool {
        let file = self.workdir().join(path);
        match std::fs::symlink_metadata(&file) {
            Ok(meta) if meta.is_file() => git2::Oid::hash_file(git2::ObjectType::Blob, &file)
                .is_ok_and(|hash| hash.to_string() == id),
            Ok(_) => false,
            Err(_) => id == "deleted",
        }
    }

    /// The paths `branch` changes against the point it left the base
    /// (`git diff --name-only base...branch`), without the queue files.
    pub fn files_changed(&self, branch: &str) -> Result<Vec<String>> {
        let tip = self.tip(branch)?;
        let base = self.tip(&self.base)?;
        let fork = self
            .git
            .merge_base(base.id(), tip.id())
            .doing(&format!("find where {branch} left {}", self.base))?;
        let fork_tree = self
            .git
            .find_commit(fork)
            .and_then(|commit| commit.tree())
            .doing("read the fork point's tree")?;
        let tip_tree = tip.tree().doing("read the branch's tree")?;
        let (diff, large) = self.diff_with_renames(
            &fork_tree,
            &tip_tree,
            DiffOptions::new(),
            "diff the branch against the base",
        )?;
        let mut paths: Vec<String> = diff
            .iter()
            .flat_map(|diff| diff.deltas())
            .map(|delta| delta_path(&delta))
            .collect();
        if !large.is_empty() {
            paths.extend(large);
            paths.sort();
        }
        paths.retain(|path| !self.is_queue_file(path));
        Ok(paths)
    }

    /// Tidies up after an iteration of task `id` on `branch`: returns to the
    /// branch if the agent left it (when safe), then commits anything
    /// uncommitted there, apart from ralph's own files and ignored paths, as
    /// `ralph: wip <id> iteration <n>`. Fails only when a merge, rebase or
    /// similar is in progress, or the branch is gone.
    pub fn commit_leftovers(&self, branch: &str, id: &str, iteration: u64) -> Result<Leftovers> {
        let _timed = super::timing::timed("commit_leftovers", branch);
        self.check_no_operation()?;
        let task_tip = self.tip(branch)?.id();
        let found = self.head()?;
        let left_branch = match found {
            Head::Branch(ref name) if name == branch => None,
            found => Some(self.return_to(branch, task_tip, found)?),
        };
        let on_branch = left_branch.as_ref().is_none_or(|left| left.returned);
        let (wip_commit, clean) = if on_branch {
            let (commit, clean) =
                self.commit_wip(&format!("{WIP_SUBJECT_PREFIX}{id} iteration {iteration}"))?;
            (commit, Some(clean))
        } else {
            (None, None)
        };
        Ok(Leftovers {
            wip_commit,
            left_branch,
            clean,
        })
    }

    /// Commits everything uncommitted on the current branch with `message`,
    /// except ralph's own files and ignored paths: what an agent's
    /// `git add -A && git commit` does (the demo agent uses it). `None` when
    /// there is nothing to commit.
    pub fn commit_work(&self, message: &str) -> Result<Option<CommitId>> {
        self.check_no_operation()?;
        Ok(self.commit_wip(message)?.0)
    }

    fn return_to(&self, branch: &str, task_tip: Oid, found: Head) -> Result<LeftBranch> {
        let dirty = self.uncommitted_changes()?;
        if !dirty.is_empty() {
            return Ok(LeftBranch {
                found,
                returned: false,
                fast_forwarded: false,
                dirty,
            });
        }
        let head = self.head_commit("read HEAD's commit")?.id();
        // Work committed on top of the task branch elsewhere (detached, or a
        // branch of the agent's own) belongs to the task; the base's history
        // is never taken over.
        let on_base = found == Head::Branch(self.base.clone());
        let fast_forwarded = !on_base
            && head != task_tip
            && self
                .git
                .graph_descendant_of(head, task_tip)
                .doing("compare HEAD with the task branch")?;
        if fast_forwarded {
            self.wait_for_ref_locks(&[&format!("refs/heads/{branch}")])?;
            self.git
                .reference(
                    &format!("refs/heads/{branch}"),
                    head,
                    true,
                    "ralph: take the agent's commits made off the branch",
                )
                .doing(&format!("move {branch} forward"))?;
        }
        self.checkout_carrying_queue(branch)?;
        Ok(LeftBranch {
            found,
            returned: true,
            fast_forwarded,
            dirty: Vec::new(),
        })
    }

    /// Commits everything uncommitted on the checked-out branch except
    /// ralph's own files and ignored paths; `None` when there was nothing.
    /// The tree is clean afterwards.
    fn commit_wip(&self, message: &str) -> Result<(Option<CommitId>, Clean)> {
        // A file deleted between the scan and its staging (a person's temp
        // file renamed over tasks.jsonl): scan again.
        let mut attempt = 0;
        loop {
            match self.commit_wip_once(message) {
                Err(Error::Command { said, .. })
                    if attempt < 20 && said.contains("did not match any file") =>
                {
                    attempt += 1;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                other => {
                    if other.is_ok() {
                        // Everything the watch reported is committed now.
                        self.settle_watch();
                    }
                    return other;
                }
            }
        }
    }

    /// One scan, the staging of what it found through the user's git, and
    /// a `git commit --no-verify`: an agent's work is never lost to a hook
    /// (the squash commit on the base runs them).
    fn commit_wip_once(&self, message: &str) -> Result<(Option<CommitId>, Clean)> {
        let head_tree = self.head_tree()?;
        // One scan of the tree finds what to stage and what to drop; ralph's
        // own files and ignored paths stay out.
        let Uncommitted {
            paths,
            staged,
            own_staged,
            unmerged,
            tracked,
        } = self.uncommitted_paths()?;
        if !unmerged.is_empty() {
            return Err(Error::Unmerged { paths: unmerged });
        }
        // The agent may have staged a queue file itself: those never enter
        // a branch commit made by ralph.
        self.update_index(|index| {
            let mut changed = false;
            let queue = self.queue.iter().map(|file| file.rel.as_str());
            for path in queue.chain(own_staged.iter().map(String::as_str)) {
                changed |= self.unstage(index, &head_tree, path)?;
            }
            Ok(changed)
        })?;
        if paths.is_empty() && !staged {
            // The agent committed everything.
            return Ok((None, Clean::new()));
        }
        match (paths.is_empty(), tracked) {
            (true, _) => {}
            (false, true) => self.stage_tracked(&paths)?,
            (false, false) => self.stage(&paths)?,
        }
        // Nothing staged differs from HEAD (an edit undone): no commit.
        let staged_tree = self.index()?.write_tree().doing("write the index's tree")?;
        if staged_tree == head_tree.id() {
            return Ok((None, Clean::new()));
        }
        match self.commit_index(message, false)? {
            Ok(commit) => Ok((Some(commit), Clean::new())),
            Err(said) => Err(Error::Command {
                action: "commit the leftovers".to_owned(),
                said,
            }),
        }
    }

    /// Commits reachable from `to` but not from `from`, oldest first.
    pub(super) fn commits_between(&self, from: Oid, to: Oid) -> Result<Vec<BranchCommit>> {
        let commits = self.walk(to, &[from], Sort::TOPOLOGICAL | Sort::REVERSE)?;
        Ok(commits.iter().map(BranchCommit::from).collect())
    }

    /// The commits reachable from `from` and from none of `hidden`, in
    /// `order`.
    pub(super) fn walk(&self, from: Oid, hidden: &[Oid], order: Sort) -> Result<Vec<Commit<'_>>> {
        let mut walk = self.git.revwalk().doing("walk the history")?;
        walk.set_sorting(order).doing("walk the history")?;
        walk.push(from).doing("walk the history")?;
        for oid in hidden {
            walk.hide(*oid).doing("walk the history")?;
        }
        walk.map(|oid| {
            let oid = oid.doing("walk the history")?;
            self.git.find_commit(oid).doing("read a commit")
        })
        .collect()
    }
}

/// The path a diff entry is about: the old one for a deletion, else the
/// new one (a rename's destination).
pub(super) fn delta_path(delta: &git2::DiffDelta<'_>) -> String {
    let file = match delta.status() {
        Delta::Deleted => delta.old_file(),
        _ => delta.new_file(),
    };
    file.path_bytes()
        .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
        .unwrap_or_default()
}
