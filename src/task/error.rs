//! Errors of the task store and task operations.

use std::path::Path;

use crate::exit::Exit;

/// What can go wrong reading, validating or changing the task files.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A line of a task file is malformed or breaks a rule of the queue.
    #[error("{file}:{line}: {message}")]
    Malformed {
        /// The file's name relative to the project (`tasks.jsonl`).
        file: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong, and where useful how to fix it.
        message: String,
    },
    /// No task with this id in `tasks.jsonl` (nor, where it counts, the archive).
    #[error("no task {id:?} in {place}")]
    NotFound {
        /// The id asked for.
        id: String,
        /// Where it was looked for.
        place: &'static str,
    },
    /// The operation does not apply to the task as it stands.
    #[error("{message}")]
    Refused {
        /// What was refused and why.
        message: String,
        /// What to do instead, when there is something.
        hint: Option<String>,
    },
    /// `tasks.jsonl` changed under every attempt to write it.
    #[error("tasks.jsonl kept changing while ralph tried to write it ({attempts} times)")]
    KeepsChanging {
        /// How many times ralph read it and tried again.
        attempts: usize,
    },
    /// Reading or writing a file failed.
    #[error(transparent)]
    Io(#[from] crate::files::PathError),
}

impl Error {
    /// Builds a `Refused` error without a hint.
    pub fn refused(message: impl Into<String>) -> Error {
        Error::Refused {
            message: message.into(),
            hint: None,
        }
    }
}

impl crate::exit::Reportable for Error {
    /// The exit code for this error.
    fn exit(&self) -> Exit {
        match self {
            Error::Io(err) => err.exit(),
            Error::KeepsChanging { .. } => Exit::Transient,
            _ => Exit::InvalidInput,
        }
    }

    /// What the person can do about it.
    fn hint(&self) -> Option<String> {
        match self {
            Error::Malformed { .. } => Some(
                "fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written"
                    .to_owned(),
            ),
            Error::NotFound { .. } => Some("`ralph task list` shows the ids".to_owned()),
            Error::Refused { hint, .. } => hint.clone(),
            Error::KeepsChanging { .. } => {
                Some("something rewrites it in a loop; stop it, or try again".to_owned())
            }
            Error::Io(err) => err.hint(),
        }
    }
}

/// Shorthand for results of this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Makes an I/O failure on `path` an [`Error::Io`].
pub(super) fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    crate::files::at(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::Reportable;

    #[test]
    fn a_file_that_keeps_changing_is_a_transient_error_with_a_hint() {
        let err = Error::KeepsChanging { attempts: 20 };
        assert_eq!(
            err.to_string(),
            "tasks.jsonl kept changing while ralph tried to write it (20 times)"
        );
        assert_eq!(
            err.hint().as_deref(),
            Some("something rewrites it in a loop; stop it, or try again")
        );
        assert_eq!(err.exit(), Exit::Transient);
    }
}
