//! The base branch's history: its first parents, who made what it gained
//! during an iteration, and what it gained over a whole run.

use git2::DiffOptions;

use super::error::{Context, Result};
use super::tree::TreeFile;
use super::{BranchCommit, CommitId};

/// What the base gained since a commit: `git log --first-parent` and
/// `git diff --stat` between the two.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BaseChanges {
    /// The base's commits since, oldest first (first parents only).
    pub commits: Vec<BranchCommit>,
    /// The files changed, in path order, without the queue files.
    pub files: Vec<FileChange>,
}

/// One file of a diff, as `git diff --stat` counts it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileChange {
    /// Its path (the new one when renamed).
    pub path: String,
    /// Lines added.
    pub insertions: usize,
    /// Lines removed.
    pub deletions: usize,
    /// Whether git sees it as binary (no line counts).
    pub binary: bool,
}

impl super::Repo {
    /// The base's commits, newest first, first parents only (like
    /// `git log --first-parent`), up to `limit`.
    fn base_commits(
        &self,
        limit: usize,
    ) -> Result<impl Iterator<Item = Result<git2::Commit<'_>>> + '_> {
        let mut walk = self.git.revwalk().doing("walk the history")?;
        walk.push_ref(&format!("refs/heads/{}", self.base))
            .doing("start at the base")?;
        walk.simplify_first_parent().doing("follow first parents")?;
        Ok(walk.take(limit).map(|oid| {
            let oid = oid.doing("walk the history")?;
            self.git.find_commit(oid).doing("read a commit")
        }))
    }

    /// Whether one of the base's last `limit` commits (first parents) has
    /// the trailer line `trailer` (`Completes: A.1`): a squash that already
    /// landed is never made twice.
    pub fn base_has_trailer(&self, trailer: &str, limit: usize) -> Result<bool> {
        let wanted = [trailer.to_owned()];
        Ok(self.base_lacks_trailers(&wanted, limit)?.is_empty())
    }

    /// The newest of the base's last `limit` commits (first parents)
    /// with the trailer line `trailer`: the squash commit that completed
    /// a task (`Completes: A.1`), when the base has it.
    pub fn base_commit_with_trailer(
        &self,
        trailer: &str,
        limit: usize,
    ) -> Result<Option<BranchCommit>> {
        for commit in self.base_commits(limit)? {
            let commit = commit?;
            let message = String::from_utf8_lossy(commit.message_bytes());
            if message.lines().any(|line| line.trim_end() == trailer) {
                return Ok(Some(BranchCommit::from(&commit)));
            }
        }
        Ok(None)
    }

    /// Those of `trailers` that none of the base's last `limit` commits
    /// (first parents) has, in their order: one walk for all of them.
    pub fn base_lacks_trailers(&self, trailers: &[String], limit: usize) -> Result<Vec<String>> {
        let mut missing: Vec<String> = trailers.to_vec();
        for commit in self.base_commits(limit)? {
            if missing.is_empty() {
                break;
            }
            let commit = commit?;
            let message = String::from_utf8_lossy(commit.message_bytes());
            missing.retain(|trailer| !message.lines().any(|line| line.trim_end() == trailer));
        }
        Ok(missing)
    }

    /// The last `limit` commits of the base branch, newest first (first
    /// parents only, like `git log --oneline --first-parent`).
    pub fn base_log(&self, limit: usize) -> Result<Vec<BranchCommit>> {
        self.base_commits(limit)?
            .map(|commit| Ok(BranchCommit::from(&commit?)))
            .collect()
    }

    /// Whether the base's tip is `commit` or descends from it (a base reset
    /// or rewritten since no longer does).
    pub fn base_descends_from(&self, commit: &str) -> bool {
        let Ok(from) = git2::Oid::from_str(commit) else {
            return false;
        };
        let Ok(tip) = self.tip(&self.base) else {
            return false;
        };
        self.is_ancestor(from, tip.id()).unwrap_or(false)
    }

    /// What the base gained since `start`: its commits (first parents,
    /// oldest first) and the files changed between the two trees, with
    /// their line counts, the queue files left out.
    pub fn base_changes_since(&self, start: &str) -> Result<BaseChanges> {
        let old = self.find_commit(start, "read the run's start")?;
        let tip = self.tip(&self.base)?;
        let mut walk = self.git.revwalk().doing("walk the history")?;
        walk.push(tip.id()).doing("walk the history")?;
        walk.hide(old.id()).doing("walk the history")?;
        walk.simplify_first_parent().doing("follow first parents")?;
        let mut commits = Vec::new();
        for oid in walk {
            let commit = (self.git)
                .find_commit(oid.doing("walk the history")?)
                .doing("read a commit")?;
            commits.push(BranchCommit::from(&commit));
        }
        commits.reverse();
        let old_tree = old.tree().doing("read the run's start tree")?;
        let new_tree = tip.tree().doing("read the base's tree")?;
        let mut options = DiffOptions::new();
        options.context_lines(0);
        let (diff, large) =
            self.diff_with_renames(&old_tree, &new_tree, options, "diff the run's work")?;
        let mut files = Vec::new();
        if let Some(diff) = &diff {
            for (index, delta) in diff.deltas().enumerate() {
                let path = super::work::delta_path(&delta);
                if self.is_queue_file(&path) {
                    continue;
                }
                // Too long to count its lines (see large.rs): binary.
                let file = |side: git2::DiffFile<'_>| {
                    (!side.id().is_zero()).then(|| TreeFile {
                        id: side.id(),
                        mode: side.mode().into(),
                    })
                };
                if self.is_too_long(file(delta.old_file()))
                    || self.is_too_long(file(delta.new_file()))
                {
                    files.push(FileChange {
                        path,
                        binary: true,
                        ..FileChange::default()
                    });
                    continue;
                }
                let patch = git2::Patch::from_diff(diff, index).doing("count a file's lines")?;
                let (insertions, deletions) = match &patch {
                    Some(patch) => {
                        let (_, added, removed) =
                            patch.line_stats().doing("count a file's lines")?;
                        (added, removed)
                    }
                    None => (0, 0),
                };
                files.push(FileChange {
                    path,
                    insertions,
                    deletions,
                    binary: delta.flags().is_binary()
                        || patch.is_some_and(|p| p.delta().flags().is_binary()),
                });
            }
        }
        // A large file is binary, as git counts one past its
        // `core.bigFileThreshold`: its lines are not counted.
        if !large.is_empty() {
            files.extend(
                (large.into_iter())
                    .filter(|path| !self.is_queue_file(path))
                    .map(|path| FileChange {
                        path,
                        binary: true,
                        ..FileChange::default()
                    }),
            );
            files.sort_by(|a, b| a.path.cmp(&b.path));
        }
        Ok(BaseChanges { commits, files })
    }

    /// The commits the base gained since it was at `before`, oldest first,
    /// split by who made them: `(here, elsewhere)`. A commit is made here
    /// when HEAD's reflog in this checkout has it (an agent that checked
    /// out the base and committed, or moved the base to its own commit);
    /// any other was made elsewhere (a person in another worktree or
    /// clone, a pull).
    pub fn base_commits_since(
        &self,
        before: &CommitId,
    ) -> Result<(Vec<BranchCommit>, Vec<BranchCommit>)> {
        let from = git2::Oid::from_str(before.as_str()).doing("read the base's old tip")?;
        let to = self.tip(&self.base)?.id();
        let gained = self.commits_between(from, to)?;
        let seen: std::collections::HashSet<git2::Oid> = match self.git.reflog("HEAD") {
            Ok(reflog) => reflog
                .iter()
                .take(REFLOG_LIMIT)
                .map(|entry| entry.id_new())
                .collect(),
            Err(_) => Default::default(),
        };
        Ok(gained.into_iter().partition(|commit| {
            git2::Oid::from_str(commit.id.as_str()).is_ok_and(|oid| seen.contains(&oid))
        }))
    }
}

impl super::Repo {
    /// The commits on `branch` that `from` lacks, oldest first (a pull
    /// request's commits).
    pub fn branch_commits(&self, from: &str, branch: &str) -> Result<Vec<BranchCommit>> {
        let from = self.tip(from)?.id();
        let to = self.tip(branch)?.id();
        let base = self
            .git
            .merge_base(from, to)
            .doing("find where the branches part")?;
        self.commits_between(base, to)
    }

    /// Makes branch `name` at `from`'s tip through the user's git, unless
    /// it exists. Returns whether it made it.
    pub fn make_branch(&self, name: &str, from: &str) -> Result<bool> {
        if self.branch_exists(name)? {
            return Ok(false);
        }
        self.git_ok(
            &["branch", "--", name, from],
            b"",
            &format!("create the branch {name}"),
        )?;
        Ok(true)
    }
}

/// How many of HEAD's latest reflog entries say which commits were made in
/// this checkout (an iteration makes a handful).
const REFLOG_LIMIT: usize = 1000;
