//! The top-level error, and the exit code each kind of failure maps to.

use std::fmt;
use std::path::PathBuf;

pub use crate::exit::Exit;

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
    /// The loop could not go on.
    #[error(transparent)]
    Run(#[from] crate::runner::RunError),
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
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder involved.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
}

impl Error {
    /// The exit code this error ends the process with.
    pub fn exit(&self) -> Exit {
        match self {
            Error::Task(err) => err.exit(),
            Error::Roles(err) => err.exit(),
            Error::Plan(err) => err.exit(),
            Error::Contract(_) => Exit::InvalidInput,
            Error::Settings(err) => err.exit(),
            Error::Detect(err) => err.exit(),
            Error::Prompt(err) => err.exit(),
            Error::Git(err) => err.exit(),
            Error::Run(err) => err.exit(),
            Error::Agent(err) => err.exit(),
            Error::NoSuchDir(_) | Error::InTheWay { .. } | Error::InsideProject { .. } => {
                Exit::InvalidInput
            }
            Error::Io { .. } => Exit::Transient,
        }
    }

    /// A follow-up line telling the person what to do, when there is one.
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Task(err) => err.hint(),
            Error::Roles(err) => err.hint(),
            Error::Plan(err) => err.hint(),
            Error::Contract(_) => Some(
                "docs/contract/ holds the schema of every file of the worker contract".to_owned(),
            ),
            Error::Prompt(err) => err.hint(),
            Error::Settings(err) => err.hint(),
            Error::Detect(err) => err.hint(),
            Error::Git(err) => err.hint(),
            Error::Run(err) => err.hint(),
            Error::Agent(err) => err.hint(),
            Error::InTheWay { .. } => Some(
                "move or rename it, then run the command again; nothing was written".to_owned(),
            ),
            Error::InsideProject { project, .. } => Some(format!(
                "run ralph from anywhere in {} (every command finds it), or pass --dir . to make this folder a project of its own",
                project.display()
            )),
            Error::NoSuchDir(_) | Error::Io { .. } => None,
        }
    }

    /// The error and its hint on one line (`...; hint`), where a report
    /// lists several.
    pub fn one_line(&self) -> String {
        match self.hint() {
            Some(hint) => format!("{self}; {hint}"),
            None => self.to_string(),
        }
    }
}

/// Writes an error the way every command reports one: `error: ...` and an
/// optional `hint: ...` line.
pub struct Report<'a>(pub &'a Error);

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: {}", self.0)?;
        if let Some(hint) = self.0.hint() {
            write!(f, "\nhint: {hint}")?;
        }
        Ok(())
    }
}
