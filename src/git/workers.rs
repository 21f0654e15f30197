//! A git worktree per task, for parallel workers (`ralph run --workers N`):
//! `.ralph/worktrees/<task-id>` on the task's branch, forked from the
//! base's tip when the branch is new. The project's own working tree stays
//! on the base.
//!
//! The queue stays one file in the project: in a task's worktree
//! `tasks.jsonl` and `tasks-done.jsonl` are links to the project's, so an
//! agent reading them sees the live queue. git is told to leave them alone
//! (`skip-worktree`): `git add -A` never stages the links, and `git reset
//! --hard`, `git stash -u` and `git checkout -- .` never put the committed
//! copy back over them.

use std::path::{Path, PathBuf};

use super::Repo;
use super::error::{Context, Error, Result, io_error};
use super::slug::branch_name;
use crate::paths::WORKTREES_DIR;

/// The index entry flag git's `--skip-worktree` sets (an extended flag).
const SKIP_WORKTREE: u16 = 1 << 14;

/// How a task worktree's folder is renamed while it is removed (no task
/// id starts with a dot).
const REMOVED: &str = ".removed-";

/// Where [`Repo::remove_task_tree`] moves worktree `tree` before deleting it.
fn removed_name(tree: &Path) -> PathBuf {
    let name = tree.file_name().unwrap_or_default().to_string_lossy();
    tree.with_file_name(format!("{REMOVED}{name}"))
}

/// Deletes `folder` and everything in it, if it exists.
fn remove_folder(folder: &Path) -> Result<()> {
    match std::fs::remove_dir_all(folder) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => Err(io_error(folder)(err)),
        _ => Ok(()),
    }
}

/// Forgets git's record of `worktree`, whatever its state, leaving its
/// folder alone.
fn forget(worktree: &git2::Worktree) -> std::result::Result<(), git2::Error> {
    let mut options = git2::WorktreePruneOptions::new();
    worktree.prune(Some(options.valid(true).locked(false).working_tree(false)))
}

/// The index mode of a gitlink: a commit of another repository.
const GITLINK: u32 = 0o160000;

/// Whether `folder` is missing or empty.
fn empty_or_missing(folder: &Path) -> bool {
    match std::fs::read_dir(folder) {
        Ok(mut entries) => entries.next().is_none(),
        Err(err) => err.kind() == std::io::ErrorKind::NotFound,
    }
}

/// A git repository found inside a task's worktree as it was removed, and
/// where it was moved to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kept {
    /// Its path in the repository.
    pub path: String,
    /// Where it is now.
    pub to: PathBuf,
}

/// A task's worktree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskTree {
    /// Its folder.
    pub path: PathBuf,
    /// The project's folder inside it, where the agent works (the
    /// worktree's root unless the project is a subfolder of the repository).
    pub folder: PathBuf,
    /// The task branch checked out in it.
    pub branch: String,
    /// Whether the branch existed already (the task is resumed).
    pub resumed: bool,
}

impl Repo {
    /// The worktree of task `id` in the project at `project`, made if
    /// missing: on the task's branch (created from the base's tip when
    /// there is none), checked out by the user's git (filters, LFS and
    /// hooks apply), its queue files linked to the project's. The queue
    /// files must be committed on the base: the links stand in for them.
    pub fn task_tree(&self, project: &Path, id: &str, title: &str) -> Result<TaskTree> {
        let path = project.join(WORKTREES_DIR).join(id);
        let existing = self.find_task_branch(id, title)?;
        let resumed = existing.is_some();
        let branch = existing.unwrap_or_else(|| branch_name(&self.prefix, id, title));
        // The worktree goes into ralph's own folder, never through a link.
        let folder = project.join(WORKTREES_DIR);
        crate::files::own::create_dir(project, &folder).map_err(io_error(&folder))?;
        crate::files::own::check(project, &path, crate::files::own::Need::Folder)
            .map_err(io_error(&path))?;
        if !path.join(".git").exists() {
            self.check_queue_committed(&branch, resumed)?;
            let where_ = path.to_string_lossy().into_owned();
            let action = format!("add the worktree of task {id}");
            let base = self.tip(&self.base)?.id().to_string();
            // `git worktree add` of the existing branch, or of a new one.
            let add = |existing: bool| -> Vec<&str> {
                if existing {
                    vec!["worktree", "add", "--quiet", &where_, &branch]
                } else {
                    vec!["worktree", "add", "--quiet", "-b", &branch, &where_, &base]
                }
            };
            if !self.run_git(&add(resumed), b"", &action)?.success {
                // A worktree whose folder was deleted by hand is still
                // registered: forget it, then try again (the branch may
                // have been made by the failed attempt).
                self.git_ok(&["worktree", "prune"], b"", &action)?;
                let existing = resumed || self.branch_exists(&branch)?;
                self.git_ok(&add(existing), b"", &action)?;
            }
        }
        self.link_queue_files(project, &path)?;
        Ok(TaskTree {
            folder: self.project_folder_in(&path),
            path,
            branch,
            resumed,
        })
    }

    /// Refuses queue files that the task's branch (or, for a new branch,
    /// the base) does not have committed: the links stand in for them.
    fn check_queue_committed(&self, branch: &str, resumed: bool) -> Result<()> {
        let tip = self.tip(if resumed { branch } else { &self.base })?;
        let tree = tip.tree().doing("read the base's tree")?;
        match self
            .queue
            .iter()
            .find(|file| tree.get_path(super::git2_path(&file.rel)).is_err())
        {
            Some(file) => Err(Error::QueueNotCommitted {
                file: file.rel.clone(),
                base: self.base.clone(),
            }),
            None => Ok(()),
        }
    }

    /// [`Repo::task_tree`]'s requirement, checked before a parallel run
    /// claims anything: the queue files committed on the base.
    pub fn check_queue_on_base(&self) -> Result<()> {
        self.check_queue_committed(&self.base, false)
    }

    /// Replaces the queue files in worktree `tree` by links to the
    /// project's and marks them `skip-worktree`, with one `git` for both.
    fn link_queue_files(&self, project: &Path, tree: &Path) -> Result<()> {
        let mut linked = Vec::new();
        for file in &self.queue {
            let name = file.rel.rsplit('/').next().unwrap_or(&file.rel);
            let target = project.join(name);
            let link = tree.join(&file.rel);
            if std::fs::read_link(&link).is_ok_and(|at| at == target) {
                continue;
            }
            crate::files::remove_if_exists(&link).map_err(io_error(&link))?;
            std::os::unix::fs::symlink(&target, &link).map_err(io_error(&link))?;
            linked.push(file.rel.as_str());
        }
        if linked.is_empty() {
            return Ok(());
        }
        // Marked in the worktree's index in process: `git update-index
        // --skip-worktree` would be one more process per task.
        let failed = |source| Error::Git {
            action: format!("hide the linked queue files from git in {}", tree.display()),
            source,
        };
        let repo = git2::Repository::open(tree).map_err(failed)?;
        let mut index = repo.index().map_err(failed)?;
        for rel in linked {
            if let Some(mut entry) = index.get_path(super::git2_path(rel), 0) {
                entry.flags_extended |= SKIP_WORKTREE;
                index.add(&entry).map_err(failed)?;
            }
        }
        index.write().map_err(failed)?;
        Ok(())
    }

    /// Removes task worktree `tree` (its branch stays). Whatever is
    /// uncommitted there is lost: callers commit leftovers first.
    pub fn remove_task_tree(&self, tree: &Path) -> Result<Vec<Kept>> {
        let kept = self.keep_repositories_in(tree)?;
        let failed = |source| Error::Git {
            action: format!("remove the worktree {}", tree.display()),
            source,
        };
        // In process: git's own `worktree remove` would be one more process
        // per task. The folder is moved aside in one step, then git's
        // record of it goes, then the folder: a kill at any point leaves
        // either the whole worktree or none (a folder emptied halfway,
        // which no run would see or could reuse, never stays), and what
        // is left the next run's `remove_removed_task_trees` clears.
        let same =
            |path: &Path| path.canonicalize().ok() == tree.canonicalize().ok() || path == tree;
        let worktrees = self.worktrees().map_err(failed)?;
        let found = worktrees.into_iter().find(|worktree| same(worktree.path()));
        let aside = removed_name(tree);
        remove_folder(&aside)?;
        match std::fs::rename(tree, &aside) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                return Err(io_error(tree)(err));
            }
            _ => {}
        }
        if let Some(worktree) = found {
            forget(&worktree).map_err(failed)?;
        }
        remove_folder(&aside)?;
        Ok(kept)
    }

    /// Moves the git repositories inside worktree `tree` that its commit
    /// holds as gitlinks (a clone the agent made and committed, as `git
    /// add` does) out of it before it goes: their files and history are
    /// nowhere else. Each goes where the project's checkout has its empty
    /// gitlink folder, else to `.ralph/kept/<task>/`.
    fn keep_repositories_in(&self, tree: &Path) -> Result<Vec<Kept>> {
        let Ok(index) = git2::Repository::open(tree).and_then(|repo| repo.index()) else {
            return Ok(Vec::new());
        };
        let kept_folder = tree.parent().and_then(Path::parent).map(|ralph| {
            ralph
                .join("kept")
                .join(tree.file_name().unwrap_or_default())
        });
        let mut kept = Vec::new();
        for entry in index.iter().filter(|entry| entry.mode == GITLINK) {
            let path = String::from_utf8_lossy(&entry.path).into_owned();
            let from = tree.join(&path);
            if !from.join(".git").is_dir() {
                continue;
            }
            let home = self.workdir().join(&path);
            let to = match (empty_or_missing(&home), &kept_folder) {
                (true, _) | (false, None) => {
                    let _ = std::fs::remove_dir(&home);
                    home
                }
                (false, Some(folder)) => folder.join(&path),
            };
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(io_error(parent))?;
            }
            std::fs::rename(&from, &to).map_err(io_error(&from))?;
            kept.push(Kept { path, to });
        }
        Ok(kept)
    }

    /// Finishes the removals of task worktrees a killed run cut short: the
    /// folders moved aside go, and so do git's records of task worktrees
    /// whose folder is gone (worktrees elsewhere are the user's).
    pub fn remove_removed_task_trees(&self, project: &Path) -> Result<()> {
        let folder = project.join(WORKTREES_DIR);
        if let Ok(entries) = std::fs::read_dir(&folder) {
            for entry in entries.filter_map(|entry| entry.ok()) {
                if entry.file_name().to_string_lossy().starts_with(REMOVED) {
                    remove_folder(&entry.path())?;
                }
            }
        }
        let failed = |source| Error::Git {
            action: format!("forget the removed worktrees in {}", folder.display()),
            source,
        };
        let ours = folder.canonicalize().ok();
        for worktree in self.worktrees().map_err(failed)? {
            let path = worktree.path();
            let under = path.parent().is_some_and(|parent| {
                parent == folder || (ours.is_some() && parent.canonicalize().ok() == ours)
            });
            if under && !path.exists() {
                // Best effort: a record git keeps locked stays, harmless.
                let _ = forget(&worktree);
            }
        }
        Ok(())
    }

    /// The linked worktrees git has a record of.
    fn worktrees(&self) -> std::result::Result<Vec<git2::Worktree>, git2::Error> {
        let names = self.git.worktrees()?;
        let names = names.iter().filter_map(|name| name.ok().flatten());
        Ok(names
            .filter_map(|name| self.git.find_worktree(name).ok())
            .collect())
    }

    /// The project's folder inside worktree `tree`: its root, unless the
    /// project is a subfolder of the repository.
    fn project_folder_in(&self, tree: &Path) -> PathBuf {
        match self
            .queue
            .first()
            .and_then(|file| file.rel.rsplit_once('/'))
        {
            Some((inner, _)) => tree.join(inner),
            None => tree.to_owned(),
        }
    }

    /// The task worktrees that exist in the project at `project`: the
    /// task id (the folder's name), the worktree and the project's folder
    /// inside it.
    pub fn task_trees(&self, project: &Path) -> Result<Vec<(String, PathBuf, PathBuf)>> {
        let Ok(entries) = std::fs::read_dir(project.join(WORKTREES_DIR)) else {
            return Ok(Vec::new());
        };
        let mut trees: Vec<(String, PathBuf, PathBuf)> = entries
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.path())
            .filter(|path| path.join(".git").exists())
            .filter_map(|path| {
                let id = path.file_name()?.to_str()?.to_owned();
                if id.starts_with(REMOVED) {
                    return None;
                }
                let folder = self.project_folder_in(&path);
                Some((id, path, folder))
            })
            .collect();
        trees.sort();
        Ok(trees)
    }
}

impl Repo {
    /// Merges the base into the task branch checked out in worktree
    /// `tree`, through the user's git, for the agent to finish: the queue
    /// files are taken as the base has them (they are not the task's work)
    /// and linked again; other conflicts are left for the agent to resolve
    /// and commit. Returns the paths still in conflict (none: the merge is
    /// committed). An agent cannot run this merge itself: git refuses to
    /// merge over the links.
    pub fn merge_base_in(&self, project: &Path, tree: &Path) -> Result<Vec<String>> {
        let tree_arg = tree.to_string_lossy().into_owned();
        let git = |args: &[&str], action: &str| {
            let mut full = vec!["-C", tree_arg.as_str()];
            full.extend_from_slice(args);
            self.run_git(&full, b"", action)
        };
        let action = format!("merge {} into the task's worktree", self.base);
        for file in &self.queue {
            git(
                &["update-index", "--no-skip-worktree", "--", &file.rel],
                &action,
            )?;
            let link = tree.join(&file.rel);
            let _ = std::fs::remove_file(&link);
            git(&["checkout", "--", &file.rel], &action)?;
        }
        let merged = git(&["merge", "--no-edit", "--no-ff", &self.base], &action)?;
        let mut conflicts = Vec::new();
        if !merged.success {
            let unmerged = git(&["diff", "--name-only", "--diff-filter=U"], &action)?;
            for path in String::from_utf8_lossy(&unmerged.stdout).lines() {
                if self.queue.iter().any(|file| file.rel == path) {
                    git(&["checkout", "--theirs", "--", path], &action)?;
                    git(&["add", "--", path], &action)?;
                } else {
                    conflicts.push(path.to_owned());
                }
            }
            if conflicts.is_empty() {
                self.git_ok(&["-C", &tree_arg, "commit", "--no-edit"], b"", &action)?;
            }
        }
        self.link_queue_files(project, tree)?;
        Ok(conflicts)
    }
}

impl Repo {
    /// The task branches left for tasks `ids` (archived ones, say), as
    /// `(branch, id)`.
    pub fn branches_of(&self, ids: &[&str]) -> Result<Vec<(String, String)>> {
        Ok((self.task_branches()?.into_iter())
            .filter_map(|name| {
                let id = ids
                    .iter()
                    .find(|id| super::slug::is_branch_of(&name, &self.prefix, id))?;
                Some((name, (*id).to_owned()))
            })
            .collect())
    }
}
