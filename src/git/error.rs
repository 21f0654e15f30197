//! Errors of the git workflow, each with the exit code and hint it maps to.

use std::path::PathBuf;

use crate::exit::Exit;

/// How many dirty paths an error message names before it says "and N more".
const DIRTY_NAMED: usize = 10;

/// What can go wrong preparing or changing the repository.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The project folder is not inside a git repository.
    #[error("{}: not inside a git repository", dir.display())]
    NotARepository {
        /// The folder that was searched from.
        dir: PathBuf,
    },
    /// The repository is bare: there is no working tree to run tasks in.
    #[error("{}: a bare repository has no working tree", dir.display())]
    Bare {
        /// The repository's folder.
        dir: PathBuf,
    },
    /// The repository has no commits yet, so there is nothing to branch from.
    #[error("the repository has no commits yet; task branches start from the base branch's tip")]
    NoCommits,
    /// HEAD points at a commit, not at a branch.
    #[error("HEAD is detached at {short}; ralph needs a base branch to merge tasks into")]
    DetachedHead {
        /// The abbreviated id of the commit HEAD points at.
        short: String,
    },
    /// A merge, rebase, cherry-pick, revert or bisect is under way.
    #[error("a {operation} is in progress")]
    InProgress {
        /// The operation's name (`merge`, `rebase`, ...).
        operation: &'static str,
        /// The command that abandons it.
        abort: &'static str,
    },
    /// The working tree has changes outside ralph's own files.
    #[error("uncommitted changes in the working tree: {}", list_paths(paths))]
    Dirty {
        /// Repository-relative paths, as `git status` names them.
        paths: Vec<String>,
    },
    /// The base branch is checked out in another worktree.
    #[error("the base branch {base} is checked out in another worktree, {}; ralph commits each task onto it, which would leave that worktree's files behind", worktree.display())]
    BaseInOtherWorktree {
        /// The base branch.
        base: String,
        /// The other worktree's folder.
        worktree: PathBuf,
    },
    /// The configured base branch does not exist.
    #[error("base branch {name:?} does not exist")]
    NoSuchBase {
        /// The branch name asked for.
        name: String,
    },
    /// No base branch is configured and the current branch is a task branch.
    #[error("the current branch {branch} is a task branch, not a base branch")]
    OnTaskBranch {
        /// The task branch checked out.
        branch: String,
    },
    /// A task branch ralph works on has disappeared.
    #[error("task branch {name:?} does not exist")]
    NoSuchBranch {
        /// The branch name.
        name: String,
    },
    /// The configured branch prefix cannot start a valid branch name.
    #[error("branch_prefix {prefix:?} does not make valid branch names")]
    InvalidPrefix {
        /// The prefix as configured.
        prefix: String,
    },
    /// Parallel workers need the queue files committed on the base: each
    /// task's worktree links them in place of the committed copies.
    #[error(
        "{file} is not committed on the base branch {base}; parallel workers link it into each task's worktree"
    )]
    QueueNotCommitted {
        /// The queue file, repository-relative.
        file: String,
        /// The base branch.
        base: String,
    },
    /// The run pushes (`git.push`, or a pull request's branch) to a remote
    /// the repository lacks.
    #[error("the repository has no remote {remote}, so the push would fail after the work is done")]
    NoRemote {
        /// The remote the push would go to.
        remote: String,
        /// Whether the run delivers by pull request.
        pull_request: bool,
    },
    /// `git.ssh_key` names a key the run's pushes cannot use.
    #[error("git.ssh_key: {}: {problem}, so the push would fail after the work is done", path.display())]
    SshKey {
        /// The key file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// The index has unmerged paths (a conflict left unresolved).
    #[error("the index has unmerged paths: {}", list_paths(paths))]
    Unmerged {
        /// The conflicted paths.
        paths: Vec<String>,
    },
    /// Another git process holds a lock file longer than ralph waits.
    #[error("{} is held by another git process{}", lock.display(), age.map(|age| format!(" (for {}s)", age.as_secs())).unwrap_or_default())]
    Locked {
        /// The lock file.
        lock: PathBuf,
        /// How old it is.
        age: Option<std::time::Duration>,
    },
    /// `commit.gpgsign` (or `gpg.format`) asks for signed commits and git
    /// cannot sign one.
    #[error("commit.gpgsign is set but git cannot sign a commit: {said}")]
    Signing {
        /// What git said.
        said: String,
    },
    /// A hook rejected one of ralph's bookkeeping commits.
    #[error("a git hook rejected the commit {subject:?}: {said}")]
    HookRejected {
        /// The commit's subject.
        subject: String,
        /// What the hook printed.
        said: String,
    },
    /// The index is split (`core.splitIndex`), which libgit2 cannot read.
    #[error(
        "the repository's index is split (core.splitIndex), which the git library ralph reads it with does not support"
    )]
    SplitIndex,
    /// A `git` command failed.
    #[error("git: {action}: {said}")]
    Command {
        /// What ralph was doing.
        action: String,
        /// What git printed.
        said: String,
    },
    /// A libgit2 operation failed.
    #[error("git: {action}: {}", source.message())]
    Git {
        /// What ralph was doing.
        action: String,
        /// What libgit2 said.
        source: git2::Error,
    },
    /// Reading or writing a file failed.
    #[error(transparent)]
    Io(#[from] crate::files::PathError),
}

/// Adds what ralph was doing to a libgit2 error.
pub(crate) trait Context<T> {
    /// Maps the error into [`Error::Git`] naming `action`.
    fn doing(self, action: &str) -> Result<T>;
}

impl<T> Context<T> for std::result::Result<T, git2::Error> {
    fn doing(self, action: &str) -> Result<T> {
        self.map_err(|source| Error::Git {
            action: action.to_owned(),
            source,
        })
    }
}

impl crate::exit::Reportable for Error {
    /// The exit code for this error: a repository that is not ready is
    /// invalid input a person fixes; I/O and libgit2 failures are transient.
    fn exit(&self) -> Exit {
        match self {
            Error::Io(err) => err.exit(),
            Error::Git { .. }
            | Error::Command { .. }
            | Error::Locked { .. }
            | Error::Signing { .. }
            | Error::HookRejected { .. } => Exit::Transient,
            _ => Exit::InvalidInput,
        }
    }

    /// What the person can do about it.
    fn hint(&self) -> Option<String> {
        let hint = match self {
            Error::NotARepository { .. } => {
                "ralph keeps each task on its own git branch: run `git init`, then make an initial commit".to_owned()
            }
            Error::Bare { .. } => {
                "run ralph in a checkout of it (`git clone` or `git worktree add`)".to_owned()
            }
            Error::NoCommits => {
                "make an initial commit: `git add -A && git commit -m \"initial commit\"`".to_owned()
            }
            Error::DetachedHead { .. } | Error::OnTaskBranch { .. } => {
                "check out the branch tasks should merge into (`git switch main`), or set base_branch in config/ralph.yaml".to_owned()
            }
            Error::SplitIndex => {
                "join it again: `git config core.splitIndex false && git update-index --no-split-index`".to_owned()
            }
            Error::InProgress { abort, .. } => format!("finish it, or abandon it with `{abort}`"),
            Error::Dirty { .. } => {
                "commit or stash them (`git stash -u`), or list them in .gitignore; only tasks.jsonl and tasks-done.jsonl may stay modified".to_owned()
            }
            Error::BaseInOtherWorktree { worktree, .. } => format!(
                "run ralph in that worktree, or switch it to another branch (`git -C {} switch --detach`), or set base_branch in config/ralph.yaml to a branch no other worktree has checked out",
                worktree.display()
            ),
            Error::NoSuchBase { .. } => {
                "create that branch, or set base_branch in config/ralph.yaml to an existing one".to_owned()
            }
            Error::NoRemote {
                remote,
                pull_request,
            } => format!(
                "add it (`git remote add {remote} URL`), name another in git.remote, or set git.push: never{}",
                if *pull_request {
                    " and delivery: local"
                } else {
                    ""
                }
            ),
            Error::SshKey { path, .. } => format!(
                "point git.ssh_key at the private key file, readable by you alone (`chmod 600 {}`), or set it to null to push with your own ssh setup",
                crate::text::shell_quoted(&path.to_string_lossy())
            ),
            Error::InvalidPrefix { .. } => {
                "use letters, digits, `-` and `/` (the default is `task/`)".to_owned()
            }
            Error::QueueNotCommitted { file, .. } => format!(
                "commit it (`git add {file} && git commit -m \"track the queue\"`), or run without --workers"
            ),
            Error::Unmerged { .. } => {
                "resolve the conflicts and `git add` the files, then `git commit`; or give up the merge (`git merge --abort`, `git reset --merge`)".to_owned()
            }
            Error::Locked { .. } => {
                "wait for that git command to finish and run ralph again; if no git process is running, remove the lock file".to_owned()
            }
            Error::Signing { .. } => {
                "make signing work (`git config user.signingkey ...`, a key your gpg or ssh agent has), or unset commit.gpgsign for this repository".to_owned()
            }
            Error::HookRejected { .. } => {
                "ralph's bookkeeping commits carry only tasks.jsonl and tasks-done.jsonl: let the hook pass them, or commit the two files by hand".to_owned()
            }
            Error::Io(err) => return err.hint(),
            Error::NoSuchBranch { .. } | Error::Git { .. } | Error::Command { .. } => {
                return None;
            }
        };
        Some(hint)
    }
}

/// Builds the error for a failed read or write of `path`.
pub(crate) fn io_error(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    crate::files::at(path)
}

/// `paths` for a message: the first ten, then how many more.
pub fn list_paths(paths: &[String]) -> String {
    crate::text::named(paths, DIRTY_NAMED)
}

/// Shorthand for results of this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::Reportable;

    #[test]
    fn a_long_dirty_list_names_ten_paths_and_counts_the_rest() {
        let paths: Vec<String> = (1..=12).map(|n| format!("f{n:02}")).collect();
        assert_eq!(
            Error::Dirty { paths }.to_string(),
            "uncommitted changes in the working tree: f01, f02, f03, f04, f05, f06, f07, f08, f09, f10 and 2 more"
        );
    }

    #[test]
    fn libgit2_and_io_failures_are_transient_and_say_what_ralph_was_doing() {
        let err: Result<()> = Err(git2::Error::from_str("boom")).doing("read HEAD");
        let err = err.unwrap_err();
        assert_eq!(err.to_string(), "git: read HEAD: boom");
        assert_eq!((err.exit(), err.hint()), (Exit::Transient, None));
        let err = io_error(std::path::Path::new("tasks.jsonl"))(std::io::Error::other("disk full"));
        assert_eq!(err.to_string(), "tasks.jsonl: disk full");
        assert_eq!(err.exit(), Exit::Transient);
    }

    #[test]
    fn git_states_and_refusals_name_the_paths_and_the_way_out() {
        let unmerged = Error::Unmerged {
            paths: vec!["a.txt".into(), "b/c.txt".into()],
        };
        assert_eq!(
            unmerged.to_string(),
            "the index has unmerged paths: a.txt, b/c.txt"
        );
        assert_eq!(unmerged.exit(), Exit::InvalidInput);
        assert_eq!(
            unmerged.hint().as_deref(),
            Some(
                "resolve the conflicts and `git add` the files, then `git commit`; or give up the merge (`git merge --abort`, `git reset --merge`)"
            )
        );
        let refused = Error::HookRejected {
            subject: "ralph: A blocked".into(),
            said: "lint: no".into(),
        };
        assert_eq!(
            refused.to_string(),
            "a git hook rejected the commit \"ralph: A blocked\": lint: no"
        );
        assert_eq!(refused.exit(), Exit::Transient);
        assert!(refused.hint().unwrap().starts_with(
            "ralph's bookkeeping commits carry only tasks.jsonl and tasks-done.jsonl"
        ));
        let failed = Error::Command {
            action: "stage the leftovers".into(),
            said: "error: external filter 'rot13' failed".into(),
        };
        assert_eq!(
            failed.to_string(),
            "git: stage the leftovers: error: external filter 'rot13' failed"
        );
        assert_eq!((failed.exit(), failed.hint()), (Exit::Transient, None));
        let locked = Error::Locked {
            lock: PathBuf::from("/r/.git/index.lock"),
            age: Some(std::time::Duration::from_millis(12_400)),
        };
        assert_eq!(
            locked.to_string(),
            "/r/.git/index.lock is held by another git process (for 12s)"
        );
        assert_eq!(locked.exit(), Exit::Transient);
    }
}
