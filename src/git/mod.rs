//! The git side of ralph: preflight, one branch per task, the work done on
//! it, leftover commits, and one squash commit per task on the base branch
//! (docs/DESIGN.md section 6; docs/GIT.md). Only this module imports git2.
//!
//! The queue files (`tasks.jsonl`, `tasks-done.jsonl`) are live state, not
//! branch content: every checkout made here carries their bytes on disk over
//! unchanged, and they reach the base branch only inside a squash commit or a
//! bookkeeping commit.

mod branch;
mod cli;
mod dropped;
mod error;
mod history;
mod hooks;
mod identity;
mod init;
mod inspect;
mod large;
mod locks;
pub mod remote;
mod revert;
mod slug;
mod squash;
mod ssh;
mod stage;
mod timing;
mod transport;
mod tree;
mod watch;
mod work;
mod workers;
mod worktree;

use std::fmt;
use std::path::{Path, PathBuf};

use git2::{BranchType, ErrorCode, RepositoryState};

pub use branch::Claimed;
pub use cli::ignored_queue_file;
pub use dropped::Dropped;
pub use error::{Error, Result, list_paths};
pub use history::{BaseChanges, FileChange};
pub use hooks::Guard;
pub use identity::{FALLBACK_EMAIL, FALLBACK_NAME, Identity, Time};
pub use init::init_with_commit;
pub use inspect::{COMMIT_HOOKS, Hooks, Signing};
pub use large::{LARGE_BLOB, MAX_DIFF_LINES};
pub use revert::Stash;
pub use slug::{MAX_SLUG_LEN, branch_name, slug};
pub use squash::{Merged, Squash, SquashPreview, squash_message, squash_subject};
pub use ssh::{check_key, key_path};
pub use transport::{DEADLINE, Fetched, Lease, Push, Pushed, RefUpdate, Target, reason};
pub use watch::{FastForward, Touched};
pub use work::{LeftBranch, Leftovers};
pub use workers::{Kept, TaskTree};
pub use worktree::Clean;

use crate::paths::{DONE_FILE, LOG_FILE, Paths, RUNTIME_DIR, STOP_FILE, TASKS_FILE};
use error::{Context, io_error};

/// The branch prefix when none is configured.
pub const DEFAULT_BRANCH_PREFIX: &str = "task/";
/// Where the tip of each squashed task branch is kept: `refs/ralph/tasks/<id>`.
pub const PRESERVED_REF_PREFIX: &str = "refs/ralph/tasks/";
/// How ralph's own leftover commits begin; squash messages leave them out.
pub const WIP_SUBJECT_PREFIX: &str = "ralph: wip ";
/// ralph's runtime files, relative to the project: never committed by ralph,
/// and while untracked never counted as uncommitted work, even when not in
/// `.gitignore`.
pub const RUNTIME_PATHS: [&str; 3] = [RUNTIME_DIR, LOG_FILE, STOP_FILE];

/// The git settings of `config/ralph.yaml`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The branch tasks merge into; `None` means the branch checked out now.
    pub base_branch: Option<String>,
    /// What every task branch name starts with (default `task/`).
    pub branch_prefix: String,
    /// The private key ralph's pushes use (`git.ssh_key`), when not the
    /// user's own ssh setup.
    pub ssh_key: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            base_branch: None,
            branch_prefix: DEFAULT_BRANCH_PREFIX.to_owned(),
            ssh_key: None,
        }
    }
}

/// A commit's full hexadecimal id.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CommitId(String);

impl CommitId {
    /// The full id.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `text` as a commit id, when it is one (40 hex digits).
    pub fn parse(text: &str) -> Option<CommitId> {
        git2::Oid::from_str(text)
            .ok()
            .filter(|oid| oid.to_string() == text)
            .map(CommitId::from)
    }

    /// The first seven hex digits, as `git log --oneline` shows them.
    pub fn short(&self) -> &str {
        &self.0[..self.0.len().min(7)]
    }
}

impl fmt::Display for CommitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<git2::Oid> for CommitId {
    fn from(oid: git2::Oid) -> CommitId {
        CommitId(oid.to_string())
    }
}

/// One commit of a task branch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BranchCommit {
    /// The commit.
    pub id: CommitId,
    /// Its subject line.
    pub subject: String,
}

impl From<&git2::Commit<'_>> for BranchCommit {
    fn from(commit: &git2::Commit<'_>) -> BranchCommit {
        let subject = commit.summary_bytes().unwrap_or_default();
        BranchCommit {
            id: commit.id().into(),
            subject: String::from_utf8_lossy(subject).into_owned(),
        }
    }
}

/// Where HEAD points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Head {
    /// On a branch (name without `refs/heads/`).
    Branch(String),
    /// Detached at a commit.
    Detached(CommitId),
}

impl fmt::Display for Head {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Head::Branch(name) => write!(f, "branch {name}"),
            Head::Detached(id) => write!(f, "detached HEAD at {}", id.short()),
        }
    }
}

/// One of the queue files, by its repository-relative path and the
/// absolute path of the project's own file.
#[derive(Debug)]
struct QueueFile {
    rel: String,
    abs: PathBuf,
}

/// A repository checkout that ralph runs tasks in, with its base branch
/// resolved. Every method works on the working tree this was opened on.
pub struct Repo {
    git: git2::Repository,
    base: String,
    prefix: String,
    identity: Identity,
    queue: Vec<QueueFile>,
    /// The queue lock, held across checkouts so no queue write lands in
    /// the middle of one.
    queue_lock: PathBuf,
    /// The project root, from which ralph's own files are reached without
    /// a link (`files::own`).
    project: PathBuf,
    /// ralph's runtime paths, repository-relative; directories end in `/`.
    runtime: Vec<String>,
    /// What changed in the working tree since the last leftovers scan,
    /// once [`Repo::watch_changes`] started watching.
    watch: std::cell::RefCell<Option<worktree::Watching>>,
    /// The private key pushes use, if not the user's own ssh setup.
    ssh_key: Option<PathBuf>,
    /// The project's folder inside the working tree (`""`, or `sub/`).
    inner: String,
    /// When set, the hooks ralph's git runs run confined.
    guard: Option<hooks::Guard>,
    /// The queue files stay out of every commit ralph makes (see
    /// [`Repo::keep_queue_uncommitted`]).
    queue_uncommitted: bool,
}

impl Repo {
    /// Opens the repository holding the project at `paths` (which may be
    /// a subfolder of the checkout or a linked worktree) and resolves the
    /// base branch: the configured one, which must exist, or the branch
    /// checked out now, which must not be a task branch. The identity comes
    /// from git's config, falling back to `ralph <ralph@localhost>`.
    pub fn open(paths: &Paths, options: &Options) -> Result<Repo> {
        let mut repo = Repo::open_without_base(paths, options)?;
        repo.base = repo.resolve_base(options.base_branch.as_deref())?;
        Ok(repo)
    }

    /// [`Repo::open`] without a base branch, which a detached HEAD or a
    /// missing branch may make impossible: for what reads the repository
    /// alone (its identity, hooks and signing), never for a run.
    pub fn open_without_base(paths: &Paths, options: &Options) -> Result<Repo> {
        let dir = paths.root();
        let git = git2::Repository::discover(dir).map_err(|source| {
            if source.code() == ErrorCode::NotFound {
                Error::NotARepository {
                    dir: dir.to_owned(),
                }
            } else {
                Error::Git {
                    action: format!("open the repository at {}", dir.display()),
                    source,
                }
            }
        })?;
        let Some(workdir) = git.workdir().map(Path::to_owned) else {
            return Err(Error::Bare {
                dir: git.path().to_owned(),
            });
        };
        let prefix = options.branch_prefix.clone();
        if !git2::Reference::is_valid_name(&format!("refs/heads/{prefix}A")) {
            return Err(Error::InvalidPrefix { prefix });
        }
        let inner = project_prefix(&workdir, dir)?;
        let queue = [TASKS_FILE, DONE_FILE]
            .into_iter()
            .filter(|_| paths.queue_in_checkout())
            .map(|name| QueueFile {
                rel: format!("{inner}{name}"),
                // The project's own file: in a parallel worker's worktree
                // the checkout's is a link ralph made to it, which ralph
                // never reads or commits through.
                abs: paths.project().join(name),
            })
            .collect();
        let runtime = RUNTIME_PATHS
            .into_iter()
            .map(|name| match name {
                RUNTIME_DIR => format!("{inner}{name}/"),
                _ => format!("{inner}{name}"),
            })
            .collect();
        let identity = Identity::from_config(&git);
        Ok(Repo {
            git,
            base: String::new(),
            prefix,
            identity,
            queue,
            queue_lock: paths.queue_lock(),
            project: paths.project().to_owned(),
            runtime,
            watch: std::cell::RefCell::new(None),
            ssh_key: options.ssh_key.clone(),
            inner,
            guard: None,
            queue_uncommitted: false,
        })
    }

    /// The same repository, committing as `identity` from now on.
    pub fn with_identity(self, identity: Identity) -> Repo {
        Repo { identity, ..self }
    }

    /// Who ralph's commits are by; check [`Identity::warning`] once.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// Makes `base` the branch tasks branch from and merge into (a pull
    /// request's branch, for one PRD's tasks).
    pub fn set_base(&mut self, base: &str) {
        base.clone_into(&mut self.base);
    }

    /// Keeps the queue files out of every commit ralph makes from now on:
    /// a commit takes them as its parent has them, and they stay ralph's
    /// records on disk. A pull request per PRD keeps them so off the
    /// branches people merge, which then never conflict on them, and off
    /// the base a person's merge fast-forwards (docs/UNATTENDED.md).
    pub fn keep_queue_uncommitted(&mut self) {
        self.queue_uncommitted = true;
    }

    /// The base branch tasks merge into.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The prefix of task branch names.
    pub fn branch_prefix(&self) -> &str {
        &self.prefix
    }

    /// The repository's common git folder (`.git` of the main checkout,
    /// shared by its worktrees).
    pub fn common_dir(&self) -> &Path {
        self.git.commondir()
    }

    /// The project's folder inside the working tree: `""`, or `sub/` for
    /// a project in a subfolder.
    pub fn project_inner(&self) -> &str {
        &self.inner
    }

    /// The root of the working tree.
    pub fn workdir(&self) -> &Path {
        self.git
            .workdir()
            .expect("Repo::open refuses bare repositories")
    }

    /// Checks the repository is ready for a run: no merge, rebase or other
    /// operation in progress, HEAD on a branch, the base branch checked out
    /// in no other worktree, signing working when the repository asks for
    /// it, and no uncommitted changes apart from the
    /// queue files, ralph's runtime files and ignored paths.
    pub fn preflight(&self) -> Result<Clean> {
        let _timed = timing::timed("preflight", &self.base);
        self.check_no_operation()?;
        if let Head::Detached(id) = self.head()? {
            return Err(Error::DetachedHead {
                short: id.short().to_owned(),
            });
        }
        self.check_base_free()?;
        self.check_signing()?;
        // An index libgit2 cannot read stops the run here, not mid-task.
        self.index()?;
        self.check_clean()
    }

    /// With HEAD detached at the base's tip or a commit before it (a CI
    /// checkout; `open` refuses a detached HEAD unless the base is
    /// configured), checks the base out, as a person would before a run.
    /// Returns the commit HEAD was detached at; `None` when HEAD is on a
    /// branch, or detached elsewhere (the preflight then refuses: that
    /// commit would be left behind).
    pub fn leave_detached_head(&self) -> Result<Option<CommitId>> {
        let Head::Detached(at) = self.head()? else {
            return Ok(None);
        };
        self.check_no_operation()?;
        if !self.is_behind_base(at.as_str())? {
            return Ok(None);
        }
        self.check_clean()?;
        self.checkout_carrying_queue(&self.base)?;
        Ok(Some(at))
    }

    /// Where HEAD points now.
    pub fn head(&self) -> Result<Head> {
        let head = self.git.head().map_err(|source| match source.code() {
            ErrorCode::UnbornBranch => Error::NoCommits,
            _ => Error::Git {
                action: "read HEAD".to_owned(),
                source,
            },
        })?;
        if head.is_branch() {
            Ok(Head::Branch(
                String::from_utf8_lossy(head.shorthand_bytes()).into_owned(),
            ))
        } else {
            let oid = head.peel_to_commit().doing("read HEAD's commit")?.id();
            Ok(Head::Detached(oid.into()))
        }
    }

    /// Whether HEAD is on `branch`.
    fn is_on(&self, branch: &str) -> Result<bool> {
        Ok(matches!(self.head()?, Head::Branch(name) if name == branch))
    }

    fn resolve_base(&self, configured: Option<&str>) -> Result<String> {
        let head = self.head()?;
        match configured {
            Some(name) => {
                if !self.branch_exists(name)? {
                    return Err(Error::NoSuchBase {
                        name: name.to_owned(),
                    });
                }
                Ok(name.to_owned())
            }
            None => match head {
                Head::Detached(id) => {
                    // A rebase detaches HEAD: name the rebase, not the symptom.
                    self.check_no_operation()?;
                    Err(Error::DetachedHead {
                        short: id.short().to_owned(),
                    })
                }
                Head::Branch(branch)
                    if !self.prefix.is_empty() && branch.starts_with(&self.prefix) =>
                {
                    Err(Error::OnTaskBranch { branch })
                }
                Head::Branch(branch) => Ok(branch),
            },
        }
    }

    fn check_no_operation(&self) -> Result<()> {
        let (operation, abort) = match self.git.state() {
            RepositoryState::Clean => return Ok(()),
            RepositoryState::Merge => ("merge", "git merge --abort"),
            RepositoryState::Revert | RepositoryState::RevertSequence => {
                ("revert", "git revert --abort")
            }
            RepositoryState::CherryPick | RepositoryState::CherryPickSequence => {
                ("cherry-pick", "git cherry-pick --abort")
            }
            RepositoryState::Bisect => ("bisect", "git bisect reset"),
            RepositoryState::Rebase
            | RepositoryState::RebaseInteractive
            | RepositoryState::RebaseMerge => ("rebase", "git rebase --abort"),
            RepositoryState::ApplyMailbox | RepositoryState::ApplyMailboxOrRebase => {
                ("git am", "git am --abort")
            }
        };
        Err(Error::InProgress { operation, abort })
    }

    fn branch_exists(&self, name: &str) -> Result<bool> {
        match self.git.find_branch(name, BranchType::Local) {
            Ok(_) => Ok(true),
            Err(err) if err.code() == ErrorCode::NotFound => Ok(false),
            Err(err) => Err(err).doing(&format!("look up branch {name}")),
        }
    }

    /// HEAD's commit; `action` says what the read was for in an error.
    fn head_commit(&self, action: &str) -> Result<git2::Commit<'_>> {
        (self.git.head().and_then(|head| head.peel_to_commit())).doing(action)
    }

    /// The commit of hexadecimal id `id`; `action` says what the read was
    /// for in an error.
    fn find_commit(&self, id: &str, action: &str) -> Result<git2::Commit<'_>> {
        let oid = git2::Oid::from_str(id).doing(action)?;
        self.git.find_commit(oid).doing(action)
    }

    /// HEAD's tree.
    fn head_tree(&self) -> Result<git2::Tree<'_>> {
        (self.git.head().and_then(|head| head.peel_to_tree())).doing("read HEAD's tree")
    }

    fn tip(&self, branch: &str) -> Result<git2::Commit<'_>> {
        let found = self.git.find_branch(branch, BranchType::Local);
        let branch_ref = match found {
            Err(err) if err.code() == ErrorCode::NotFound => {
                return Err(if branch == self.base {
                    Error::NoSuchBase {
                        name: branch.to_owned(),
                    }
                } else {
                    Error::NoSuchBranch {
                        name: branch.to_owned(),
                    }
                });
            }
            other => other.doing(&format!("look up branch {branch}"))?,
        };
        branch_ref
            .get()
            .peel_to_commit()
            .doing(&format!("read the tip of {branch}"))
    }

    /// Whether ralph owns `path`: a queue file always; a runtime file or a
    /// queue temp only while it is `not_in_head` (untracked, or staged as
    /// new by an agent's `git add -A`): a tracked one is the project's, and
    /// a checkout would overwrite it.
    fn is_own(&self, path: &str, not_in_head: bool) -> bool {
        self.is_queue_file(path)
            || (not_in_head && (self.is_queue_companion(path) || self.is_runtime_file(path)))
    }

    fn is_runtime_file(&self, path: &str) -> bool {
        self.runtime.iter().any(|own| match own.strip_suffix('/') {
            Some(dir) => path == dir || path.starts_with(own.as_str()),
            None => path == own,
        })
    }

    /// `tasks.jsonl` or `tasks-done.jsonl` (in the project's folder): never
    /// the agent's work, never written by a checkout.
    fn is_queue_file(&self, path: &str) -> bool {
        self.queue.iter().any(|file| file.rel == path)
    }

    /// A file that comes and goes beside a queue file while someone edits
    /// it (see [`is_companion`]).
    fn is_queue_companion(&self, path: &str) -> bool {
        let (path_dir, path_name) = path.rsplit_once('/').unwrap_or(("", path));
        self.queue.iter().any(|file| {
            let (dir, name) = file.rel.rsplit_once('/').unwrap_or(("", file.rel.as_str()));
            dir == path_dir && is_companion(path_name, name)
        })
    }
}

/// Whether file `file` is a companion of queue file `name` in the same
/// folder: a temp file renamed over it (ralph's `.tasks.jsonl.<pid>.tmp`,
/// a person's `tasks.jsonl.<anything>` as in `jq ... > tasks.jsonl.tmp &&
/// mv ...`), or what an editor keeps beside a file it has open: vim's and
/// nano's swap files (`.tasks.jsonl.swp`), emacs's backup, auto-save file
/// and lock (`tasks.jsonl~`, `#tasks.jsonl#`, `.#tasks.jsonl`), and the
/// files of a JetBrains editor's safe write (`tasks.jsonl___jb_tmp___`).
fn is_companion(file: &str, name: &str) -> bool {
    let suffix =
        |rest: &str| rest.starts_with('.') || ["~", "___jb_tmp___", "___jb_old___"].contains(&rest);
    file.strip_prefix(name).is_some_and(suffix)
        || (file.strip_prefix('.'))
            .and_then(|rest| rest.strip_prefix(name))
            .is_some_and(|rest| rest.starts_with('.'))
        || file == format!("#{name}#")
        || file == format!(".#{name}")
}

/// The project folder's path inside the working tree, `/`-separated and
/// ending in `/`, or "" when the project is the working tree's root.
fn project_prefix(workdir: &Path, dir: &Path) -> Result<String> {
    let workdir = workdir.canonicalize().map_err(io_error(workdir))?;
    let dir = dir.canonicalize().map_err(io_error(dir))?;
    let Ok(inner) = dir.strip_prefix(&workdir) else {
        return Ok(String::new());
    };
    let mut prefix = String::new();
    for part in inner.components() {
        prefix.push_str(&part.as_os_str().to_string_lossy());
        prefix.push('/');
    }
    Ok(prefix)
}

/// A repository-relative, `/`-separated path as libgit2 takes it.
fn git2_path(rel: &str) -> &Path {
    Path::new(rel)
}

#[cfg(test)]
mod tests {
    use super::is_companion;

    #[test]
    fn editors_and_temp_files_beside_a_queue_file_are_its_companions() {
        for file in [
            ".tasks.jsonl.4242.tmp",
            "tasks.jsonl.tmp",
            "tasks.jsonl.tmp7",
            ".tasks.jsonl.swp",
            ".tasks.jsonl.swo",
            "tasks.jsonl~",
            "#tasks.jsonl#",
            ".#tasks.jsonl",
            "tasks.jsonl___jb_tmp___",
            "tasks.jsonl___jb_old___",
        ] {
            assert!(is_companion(file, "tasks.jsonl"), "{file}");
        }
        for file in [
            "tasks.jsonl",
            "tasks-done.jsonl",
            "tasks.jsonlx",
            "my-tasks.jsonl~",
            ".tasks.jsonl",
            "#tasks.jsonl",
            "notes.txt.swp",
        ] {
            assert!(!is_companion(file, "tasks.jsonl"), "{file}");
        }
    }
}
