//! Errors of the roles configuration.

use crate::exit::Exit;

use crate::paths::ROLES_FILE;

/// What can go wrong loading triggers or role files.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The YAML does not have the expected shape.
    #[error("{ROLES_FILE}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    Yaml {
        /// 1-based line, when known.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// A trigger's condition or role is wrong.
    #[error("{ROLES_FILE}: trigger {number} (condition {condition:?}): {message}")]
    Trigger {
        /// 1-based position in the file.
        number: usize,
        /// The condition as written.
        condition: String,
        /// What is wrong.
        message: String,
    },
    /// A role file cannot be read as text.
    #[error("{file}:{line}: {message}")]
    File {
        /// The role file, relative to the project.
        file: String,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A role that a trigger names has no file.
    #[error("{file}: the role file is gone")]
    Missing {
        /// The role file, relative to the project.
        file: String,
    },
    /// A `--var` override is malformed.
    #[error("{0}")]
    Override(String),
    /// Reading or writing a file failed.
    #[error(transparent)]
    Io(#[from] crate::files::PathError),
}

impl crate::exit::Reportable for Error {
    /// The exit code for this error.
    fn exit(&self) -> Exit {
        match self {
            Error::Io(err) => err.exit(),
            Error::Override(_) => Exit::Usage,
            _ => Exit::InvalidInput,
        }
    }

    /// What the person can do about it.
    fn hint(&self) -> Option<String> {
        match self {
            Error::Yaml { .. } | Error::Trigger { .. } => Some(format!(
                "fix {ROLES_FILE} (the syntax is described at the top of the default file, `ralph init` writes it), then run `ralph roles check`"
            )),
            Error::Override(_) => Some(
                "variables are listed in ralph's docs/ROLES.md, section Roles and triggers"
                    .to_owned(),
            ),
            Error::File { file, .. } => Some(format!("fix {file}, then run `ralph roles check`")),
            Error::Missing { .. } => Some(format!(
                "restore it (`git checkout -- roles/`), or change the trigger in {ROLES_FILE}"
            )),
            Error::Io(err) => err.hint(),
        }
    }
}
