//! The loop (`ralph run`): a pure decision over what it observes
//! (`decide`), and an executor that performs each step and records it
//! (`engine`).

pub(crate) mod confine;
pub(crate) mod context;
pub(crate) mod decide;
pub(crate) mod deliver;
mod drive;
pub(crate) mod dry_run;
mod fallback;
mod feedback;
mod finish;
mod guard;
mod iteration;

pub(crate) mod planner;
mod pool;
mod record;
pub(crate) mod remote;
mod revert;
pub(crate) mod review;
mod seat;
mod shared;
mod source;
mod step;
pub(crate) mod ui;
mod unit;
pub(crate) mod verify;
pub(crate) mod watch;
pub(crate) mod worker;

use crate::paths::Paths;
use std::sync::atomic::AtomicBool;

use crate::error::Error;
use crate::exit::Exit;
use crate::run_lock as lock;

pub(crate) use crate::result::{RunResult, RunStatus};
pub(crate) use worker::{RunOptions, Worker};

/// Failures of the loop itself.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Another run holds `.ralph/lock`.
    #[error("another ralph run ({}) holds .ralph/lock", holder_text(.0))]
    Locked(Option<lock::Holder>),
    /// The agent left the repository where ralph cannot safely continue.
    #[error("the repository is left on {head} with uncommitted changes ({}); ralph cannot return to the task branch safely", .paths.join(", "))]
    Stranded {
        /// Where HEAD is.
        head: String,
        /// The uncommitted paths.
        paths: Vec<String>,
    },
    /// A hook refused the squash commit of a task already archived (by
    /// its agent, or before a crash): there is no task left to fail.
    #[error("a git hook refused the squash commit of {task} (archived already): {said}")]
    HookRejected {
        /// The task.
        task: String,
        /// Its branch, which keeps the work.
        branch: String,
        /// What the hook printed.
        said: String,
    },
    /// A hook of the repository wrote files into the tree while git made
    /// the squash commit of a task (merged all the same): the next task
    /// would start from a tree that is not clean.
    #[error("a git hook wrote {} while git committed the squash of {task}; the next task needs a clean tree", crate::git::list_paths(.paths))]
    HookWroteFiles {
        /// The task just merged.
        task: String,
        /// What the hook left, repository-relative.
        paths: Vec<String>,
    },
    /// `ralph plan --agent`: the planner agent failed.
    #[error("the planner agent failed ({class}): {reason}")]
    PlannerFailed {
        /// The failure class.
        class: crate::agent::FailureClass,
        /// What happened.
        reason: String,
        /// Its output, relative to the project.
        log: String,
    },
    /// `ralph plan --agent`: the planner left `tasks.jsonl` invalid.
    #[error("the planner left the queue invalid: {0}")]
    PlannerBrokeQueue(String),
    /// `ralph plan --agent`: the planner ran but added no task.
    #[error("the planner agent added no task")]
    PlannerAddedNothing {
        /// Its output, relative to the project.
        log: String,
    },
    /// `delivery: pr` cannot deliver: `gh` missing or not logged in, or no
    /// branch name.
    #[error("delivery: pr: {0}")]
    Delivery(String),
    /// `delivery: pr` with settings or flags it does not go with (caught
    /// before anything is written): running again cannot help.
    #[error("delivery: pr: {0}")]
    DeliveryConflict(String),
    /// `ralph plan --agent` was interrupted by a signal.
    #[error("interrupted: the planner agent was stopped")]
    PlannerInterrupted,
    /// `.ralph/watch.json` does not parse.
    #[error("{0}")]
    Watch(String),
    /// A pooled worker's thread ended on a bug in ralph (a panic) before
    /// it said how its task went.
    #[error("worker {worker} stopped on task {task}: a bug in ralph: {said}")]
    WorkerPanicked {
        /// The worker's number.
        worker: u32,
        /// The task it had.
        task: String,
        /// The panic's message.
        said: String,
    },
    /// Sharing the queue through the remote cannot go on.
    #[error(transparent)]
    Remote(remote::RemoteError),
}

fn holder_text(holder: &Option<lock::Holder>) -> String {
    match holder {
        Some(holder) if holder.pid != 0 => format!("pid {}, since {}", holder.pid, holder.since),
        _ => "starting up".to_owned(),
    }
}

impl From<RunError> for Error {
    fn from(err: RunError) -> Error {
        Error::Run(Box::new(err))
    }
}

impl From<lock::LockError> for crate::error::Error {
    fn from(err: lock::LockError) -> Self {
        match err {
            lock::LockError::Held(holder) => RunError::Locked(holder).into(),
            lock::LockError::Io(path, source) => crate::files::PathError::new(path, source).into(),
        }
    }
}

impl crate::exit::Reportable for RunError {
    /// The exit code for this error.
    fn exit(&self) -> Exit {
        match self {
            RunError::PlannerFailed {
                class: crate::agent::FailureClass::MissingBinary,
                ..
            } => Exit::InvalidInput,
            RunError::PlannerBrokeQueue(_)
            | RunError::HookWroteFiles { .. }
            | RunError::DeliveryConflict(_)
            | RunError::Watch(_) => Exit::InvalidInput,
            // Running again cannot help: a person sorts the tree out.
            RunError::PlannerAddedNothing { .. }
            | RunError::Stranded { .. }
            | RunError::WorkerPanicked { .. } => Exit::NeedsPerson,
            RunError::PlannerInterrupted => Exit::Interrupted,
            RunError::Remote(err) => err.exit(),
            _ => Exit::Transient,
        }
    }

    /// What the person can do about it.
    fn hint(&self) -> Option<String> {
        match self {
            RunError::Locked(_) => Some("wait for it to finish, or stop it with `ralph stop` (or Ctrl-C in its terminal)".to_owned()),
            RunError::Stranded { .. } => Some("commit or stash those changes on the right branch, check out the task branch, then run again".to_owned()),
            RunError::HookRejected { branch, .. } => Some(format!("make the work on {branch} pass the hook, then squash it by hand (`git merge --squash {branch}` on the base, commit) and delete the branch")),
            RunError::HookWroteFiles { task, .. } => Some(format!("{task} is merged and archived; commit those files, or keep them out of commits (`git rm --cached` them if a commit took them, and list them in .gitignore), then run again")),
            RunError::PlannerFailed { log, .. } => Some(format!("its output is in {log}; tasks it added before failing are kept (`ralph task tree`)")),
            RunError::PlannerBrokeQueue(_) => Some("fix that line by hand (`ralph task validate` checks the file), or put the file back with git".to_owned()),
            RunError::PlannerAddedNothing { log } => Some(format!("its output is in {log}; or plan a structured document without --agent (docs/PLANNING.md)")),
            RunError::PlannerInterrupted => None,
            RunError::Delivery(_) => Some("or set delivery: local in config/ralph.yaml to keep the work on the base".to_owned()),
            RunError::DeliveryConflict(_) => Some("nothing was written; change the flags or config/ralph.yaml as it says (docs/UNATTENDED.md), or set delivery: local".to_owned()),
            RunError::Remote(err) => err.hint(),
            RunError::WorkerPanicked { task, .. } => Some(format!("its work is on its branch and the next run goes on with it; please report this with .ralph/events.ndjson and ralph.log ({task})")),
            RunError::Watch(_) => Some("remove .ralph/watch.json: ralph then watches afresh from the branch's head (PRDs pushed meanwhile are planned by hand with `ralph plan`)".to_owned()),
        }
    }
}

/// Takes `.ralph/lock` for a new run whose id starts with `prefix`
/// (`<time>-<pid>`, or `plan-<time>-<pid>` for the planner), once ralph's
/// own files are found to be its own (see [`check_own_files`]).
pub(crate) fn take_run_lock(
    paths: &Paths,
    prefix: &str,
) -> Result<(lock::RunLock, lock::Holder), Error> {
    check_own_files(paths)?;
    let holder = lock::Holder {
        pid: std::process::id(),
        since: crate::clock::now(),
        run_id: format!(
            "{prefix}{}-{}",
            chrono::Utc::now().format("%Y%m%dT%H%M%SZ"),
            std::process::id()
        ),
    };
    Ok((lock::RunLock::acquire(paths, &holder)?, holder))
}

/// Refuses to go on when a link (or anything but what ralph made) stands
/// where ralph keeps a file or folder of its own (`Paths::own_entries`):
/// an agent may have put it there to have ralph write where it points
/// (`~/.profile`), and ralph writes nothing until a person removes it.
/// Looked at before a run starts and after each agent's turn, before
/// ralph writes anything; each write refuses a link on its own too.
pub(crate) fn check_own_files(paths: &Paths) -> Result<(), Error> {
    Ok(crate::files::own::check_all(
        paths.project(),
        &paths.own_entries(),
    )?)
}

/// Runs the loop in the project at `paths` under the run lock.
pub(crate) fn run(
    paths: &Paths,
    options: &RunOptions,
    interrupted: &AtomicBool,
) -> Result<RunResult, Error> {
    // Outside a git repository the run stops before it writes anything,
    // the lock and result.json included.
    crate::git::Repo::open_without_base(paths, &crate::git::Options::default())?;
    let (lock, holder) = take_run_lock(paths, "")?;
    // A run that cannot start still says why in result.json; the error
    // itself is what the person sees, so a failure to write the result
    // must not hide it.
    let not_started = |err: Error| {
        let reason = err.to_string();
        let result =
            RunResult::not_started(paths, holder.run_id.clone(), holder.since.clone(), reason);
        let _ = result.save(paths);
        err
    };
    let options = &deliver::prepare(paths, options).map_err(not_started)?;
    let worker = Worker::prepare(paths, options, interrupted, holder.run_id.clone(), lock);
    worker.map_err(not_started)?.run()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::Reportable;

    #[test]
    fn loop_errors_say_what_holds_or_blocks_the_run() {
        let held = RunError::Locked(Some(lock::Holder {
            pid: 42,
            since: "2026-01-01T00:00:00Z".into(),
            run_id: "r".into(),
        }));
        assert_eq!(
            held.to_string(),
            "another ralph run (pid 42, since 2026-01-01T00:00:00Z) holds .ralph/lock"
        );
        assert_eq!(
            RunError::Locked(None).to_string(),
            "another ralph run (starting up) holds .ralph/lock"
        );
        let stranded = RunError::Stranded {
            head: "main".into(),
            paths: vec!["a.txt".into(), "b.txt".into()],
        };
        assert_eq!(
            stranded.to_string(),
            "the repository is left on main with uncommitted changes (a.txt, b.txt); ralph cannot return to the task branch safely"
        );
        assert_eq!(stranded.exit(), Exit::NeedsPerson);
        assert_eq!(
            stranded.hint().as_deref(),
            Some(
                "commit or stash those changes on the right branch, check out the task branch, then run again"
            )
        );
        let refused = RunError::HookRejected {
            task: "A".into(),
            branch: "task/A-x".into(),
            said: "lint: no".into(),
        };
        assert_eq!(
            refused.to_string(),
            "a git hook refused the squash commit of A (archived already): lint: no"
        );
        assert_eq!(
            refused.hint().as_deref(),
            Some(
                "make the work on task/A-x pass the hook, then squash it by hand (`git merge --squash task/A-x` on the base, commit) and delete the branch"
            )
        );
    }
}
