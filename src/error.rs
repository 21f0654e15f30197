//! The top-level error: every area's own error, each saying its exit code
//! and hint through [`Reportable`]. `cli` writes the report.

use std::path::PathBuf;

pub(crate) use crate::exit::{Exit, Reportable};

/// Every error a command can end with; its kind decides the exit code.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A task file or task operation failed.
    #[error(transparent)]
    Task(#[from] crate::task::Error),
    /// The roles configuration is wrong.
    #[error(transparent)]
    Roles(#[from] crate::roles::Error),
    /// The prompt could not be composed.
    #[error(transparent)]
    Prompt(#[from] crate::prompt::Error),
    /// The agent could not be chosen, checked or started.
    #[error(transparent)]
    Agent(#[from] crate::agent::Error),
    /// A document `ralph plan` cannot plan from.
    #[error(transparent)]
    Plan(#[from] crate::plan::Error),
    /// The worker contract's input or plan is wrong (its result.json says so too).
    #[error("{0}")]
    Contract(String),
    /// The loop settings are wrong.
    #[error(transparent)]
    Settings(#[from] crate::config::Error),
    /// The checks found could not be written into the settings.
    #[error(transparent)]
    Detect(#[from] crate::detect::WriteError),
    /// The repository is not ready, or a git operation failed.
    #[error(transparent)]
    Git(#[from] crate::git::Error),
    /// The loop could not go on (`runner::RunError`, which the runner
    /// converts itself: it sits above this module, which knows only the
    /// areas below it).
    #[error("{0}")]
    Run(Box<dyn Above>),
    /// `--dir` names a folder that does not exist.
    #[error("--dir {}: no such folder", .0.display())]
    NoSuchDir(PathBuf),
    /// `ralph init` (or the demo) needs a folder where a file is, or the
    /// reverse.
    #[error("{}: {what}, where ralph needs {need}", path.display())]
    InTheWay {
        /// What is in the way.
        path: PathBuf,
        /// What it is.
        what: &'static str,
        /// What init needs there.
        need: &'static str,
    },
    /// `ralph init` in a folder of a ralph project, without `--dir`.
    #[error("{} is inside the ralph project {}", dir.display(), project.display())]
    InsideProject {
        /// The folder init was run in.
        dir: PathBuf,
        /// The project holding it.
        project: PathBuf,
    },
    /// `ralph run` or `ralph stop` where there is no project: nothing
    /// was written.
    #[error("{}: no ralph project here (no tasks.jsonl in it or above, and no git repository); nothing was written", dir.display())]
    NoProject {
        /// The folder the command was run in.
        dir: PathBuf,
    },
    /// Reading or writing a file failed.
    #[error(transparent)]
    Io(#[from] crate::files::PathError),
}

impl Error {
    /// The error and its hint on one line (`...; hint`), where a report
    /// lists several.
    pub fn one_line(&self) -> String {
        match self.hint() {
            Some(hint) => format!("{self}; {hint}"),
            None => self.to_string(),
        }
    }
}

/// The error of an area above this module (the loop), carried boxed.
pub trait Above: Reportable + std::error::Error + Send + Sync {}

impl<E: Reportable + std::error::Error + Send + Sync> Above for E {}

impl Error {
    /// The area's own error, which says its exit code and hint.
    fn area(&self) -> Option<&dyn Reportable> {
        Some(match self {
            Error::Task(err) => err,
            Error::Roles(err) => err,
            Error::Plan(err) => err,
            Error::Settings(err) => err,
            Error::Detect(err) => err,
            Error::Prompt(err) => err,
            Error::Git(err) => err,
            Error::Run(err) => err.as_ref(),
            Error::Agent(err) => err,
            _ => return None,
        })
    }
}

impl Reportable for Error {
    fn exit(&self) -> Exit {
        if let Some(area) = self.area() {
            return area.exit();
        }
        match self {
            Error::Io(err) => err.exit(),
            _ => Exit::InvalidInput,
        }
    }

    fn hint(&self) -> Option<String> {
        if let Some(area) = self.area() {
            return area.hint();
        }
        match self {
            Error::Contract(_) => Some(
                "docs/contract/ holds the schema of every file of the worker contract".to_owned(),
            ),
            Error::InTheWay { .. } => Some(
                "move or rename it, then run the command again; nothing was written".to_owned(),
            ),
            Error::Io(err) => err.hint(),
            Error::NoProject { .. } => Some(
                "run it in your project's git repository (`git init` and a first commit make one), after `ralph init` there; or pass --dir PROJECT".to_owned(),
            ),
            Error::InsideProject { project, .. } => Some(format!(
                "run ralph from anywhere in {} (every command finds it), or pass --dir . to make this folder a project of its own",
                project.display()
            )),
            _ => None,
        }
    }
}
