//! Task branches: finding, claiming, leaving and retiring them.

use git2::BranchType;

use super::error::{Context, Error, Result};
use super::slug::{self, branch_name};
use super::{Clean, CommitId, PRESERVED_REF_PREFIX, Repo};

/// The task branch a claim checked out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claimed {
    /// The branch name, without `refs/heads/`.
    pub branch: String,
    /// Whether the branch existed already (the task is resumed).
    pub resumed: bool,
}

impl Repo {
    /// The task branch that exists for `id`, if any: the one named after
    /// `title` when it exists, else the first (by name) of the others.
    pub fn find_task_branch(&self, id: &str, title: &str) -> Result<Option<String>> {
        let wanted = branch_name(&self.prefix, id, title);
        if self.branch_exists(&wanted)? {
            return Ok(Some(wanted));
        }
        let mut found: Vec<String> = (self.task_branches()?.into_iter())
            .filter(|name| slug::is_branch_of(name, &self.prefix, id))
            .collect();
        found.sort();
        Ok(found.into_iter().next())
    }

    /// The local branches named with the task prefix.
    pub(super) fn task_branches(&self) -> Result<Vec<String>> {
        let mut found = Vec::new();
        let branches = self
            .git
            .branches(Some(BranchType::Local))
            .doing("list branches")?;
        for branch in branches {
            let (branch, _) = branch.doing("list branches")?;
            if let Some(name) = branch.name().doing("read a branch name")?
                && name.starts_with(&self.prefix)
            {
                found.push(name.to_owned());
            }
        }
        Ok(found)
    }

    /// Claims task `id`: reuses its existing branch (a resume) or creates
    /// `<prefix><id>-<slug>` from the base tip, then checks it out, carrying
    /// the queue files over. Refuses a dirty working tree.
    pub fn claim(&self, id: &str, title: &str) -> Result<Claimed> {
        self.claim_from(id, title, None)
    }

    /// [`Repo::claim`] from a tree known to be clean: no scan.
    pub fn claim_clean(&self, id: &str, title: &str, clean: Clean) -> Result<Claimed> {
        self.claim_from(id, title, Some(clean))
    }

    fn claim_from(&self, id: &str, title: &str, clean: Option<Clean>) -> Result<Claimed> {
        let _timed = super::timing::timed("claim", id);
        let existing = self.find_task_branch(id, title)?;
        // On the branch already, even with a merge or rebase of it left
        // unfinished by the agent: the next iteration is told to finish it.
        if let Some(branch) = &existing
            && (self.is_on(branch)? || self.rebasing(branch))
        {
            return Ok(Claimed {
                branch: branch.clone(),
                resumed: true,
            });
        }
        self.check_no_operation()?;
        if clean.is_none() {
            self.check_clean()?;
        }
        let claim = match existing {
            Some(branch) => Claimed {
                branch,
                resumed: true,
            },
            None => {
                let branch = branch_name(&self.prefix, id, title);
                if !git2::Reference::is_valid_name(&format!("refs/heads/{branch}")) {
                    return Err(Error::InvalidPrefix {
                        prefix: self.prefix.clone(),
                    });
                }
                let base = self.tip(&self.base)?;
                self.wait_for_ref_locks(&[&format!("refs/heads/{branch}")])?;
                self.git
                    .branch(&branch, &base, false)
                    .doing(&format!("create branch {branch}"))?;
                Claimed {
                    branch,
                    resumed: false,
                }
            }
        };
        self.checkout_carrying_queue(&claim.branch)?;
        Ok(claim)
    }

    /// Whether a rebase of `branch` is under way (HEAD detached meanwhile).
    fn rebasing(&self, branch: &str) -> bool {
        ["rebase-merge", "rebase-apply"].iter().any(|dir| {
            std::fs::read_to_string(self.git.path().join(dir).join("head-name"))
                .is_ok_and(|name| name.trim() == format!("refs/heads/{branch}"))
        })
    }

    /// Checks out the base branch, carrying the queue files over and leaving
    /// the task branch as it is (for a blocked task). Refuses a dirty tree.
    pub fn checkout_base(&self) -> Result<()> {
        self.check_no_operation()?;
        if self.is_on(&self.base)? {
            return Ok(());
        }
        self.check_clean()?;
        self.checkout_carrying_queue(&self.base)
    }

    /// The commit at the tip of `branch`.
    pub fn branch_tip(&self, branch: &str) -> Result<CommitId> {
        Ok(self.tip(branch)?.id().into())
    }

    /// The ref that keeps task `id`'s branch tip after its squash:
    /// `refs/ralph/tasks/<id>` (`-task` appended to an id ending in `.lock`,
    /// which no ref may end in).
    pub fn preserved_ref(id: &str) -> String {
        task_ref(PRESERVED_REF_PREFIX, id)
    }

    /// Keeps `branch`'s tip under [`Repo::preserved_ref`] and deletes the
    /// branch, checking out the base first when it is checked out: how a
    /// task whose branch has nothing to merge is closed. Returns the tip.
    pub fn preserve_and_delete_branch(&self, branch: &str, id: &str) -> Result<CommitId> {
        let _timed = super::timing::timed("preserve_branch", branch);
        let tip = self.tip(branch)?.id();
        let preserved = Repo::preserved_ref(id);
        self.write_ref(&preserved, tip, "ralph: preserve the task branch")?;
        if self.is_on(branch)? {
            self.checkout_base()?;
        }
        self.drop_task_branch(branch, id)?;
        Ok(tip.into())
    }

    /// The ref that holds task `id`'s branch tip as it was before the
    /// current iteration: `refs/ralph/resume/<id>`.
    pub fn resume_ref(id: &str) -> String {
        task_ref(RESUME_REF_PREFIX, id)
    }

    /// Deletes task `id`'s `branch` for good (merged and preserved), and
    /// its resume point first: no iteration resumes it any more. The
    /// resume ref goes best effort: one left behind (a lock held by a
    /// `git gc`) is harmless.
    pub(super) fn drop_task_branch(&self, branch: &str, id: &str) -> Result<()> {
        if let Ok(mut reference) = self.git.find_reference(&Repo::resume_ref(id)) {
            let _ = reference.delete();
        }
        self.delete_branch(branch)
    }

    /// Notes `branch`'s tip under [`Repo::resume_ref`] before an iteration,
    /// so a branch the agent deletes can be put back.
    pub fn keep_resume_point(&self, branch: &str, id: &str) -> Result<()> {
        let tip = self.tip(branch)?.id();
        let why = "ralph: the task branch before an iteration";
        self.write_ref(&Repo::resume_ref(id), tip, why)
    }

    /// Recreates `branch` at its resume point when it no longer exists (the
    /// agent deleted it). Returns whether it did; HEAD is left alone.
    pub fn restore_deleted_branch(&self, branch: &str, id: &str) -> Result<bool> {
        if self.branch_exists(branch)? {
            return Ok(false);
        }
        let name = Repo::resume_ref(id);
        let point = self
            .git
            .find_reference(&name)
            .and_then(|reference| reference.peel_to_commit())
            .doing(&format!("read {name}"))?;
        self.wait_for_ref_locks(&[&format!("refs/heads/{branch}")])?;
        self.git
            .branch(branch, &point, false)
            .doing(&format!("recreate branch {branch}"))?;
        Ok(true)
    }

    /// Points ref `name` at `target`, replacing it, with `why` in its
    /// reflog, once no other git holds its lock.
    pub(super) fn write_ref(&self, name: &str, target: git2::Oid, why: &str) -> Result<()> {
        self.wait_for_ref_locks(&[name])?;
        self.git
            .reference(name, target, true, why)
            .doing(&format!("create {name}"))?;
        Ok(())
    }

    fn delete_branch(&self, branch: &str) -> Result<()> {
        self.wait_for_ref_locks(&[&format!("refs/heads/{branch}")])?;
        self.git
            .find_branch(branch, BranchType::Local)
            .and_then(|mut found| found.delete())
            .doing(&format!("delete branch {branch}"))
    }
}

/// Where the resume points of task branches are kept (see
/// [`Repo::resume_ref`]).
const RESUME_REF_PREFIX: &str = "refs/ralph/resume/";

/// `prefix` + `id`, with `-task` appended to an id ending in `.lock`, which
/// no ref may end in.
pub(super) fn task_ref(prefix: &str, id: &str) -> String {
    let name = format!("{prefix}{id}");
    if name.ends_with(".lock") {
        name + "-task"
    } else {
        name
    }
}
