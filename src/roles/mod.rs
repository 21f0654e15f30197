//! Roles: triggers in `config/roles.yaml`, evaluated before each iteration
//! to pick the role file from `roles/` that shapes the prompt.

mod error;
mod normalize;
mod triggers;
mod vars;

use crate::paths::Paths;

use crate::files::TextError;

pub use error::Error;
pub use normalize::normalize;
pub use triggers::{Decision, Fired, Trigger, Triggers};
pub use vars::{FUNCTIONS, TriggerContext, VARIABLES, VarType};

use crate::paths::ROLES_DIR;

/// Loads the project's triggers; a missing `config/roles.yaml` means none.
pub fn load(paths: &Paths) -> Result<Triggers, Error> {
    let path = paths.roles_config();
    let yaml = match crate::files::read_text(&path) {
        Ok(text) => text,
        Err(TextError::Missing) => String::new(),
        Err(TextError::NotUtf8 { line, message }) => {
            return Err(Error::Yaml {
                line: Some(line),
                message,
            });
        }
        Err(TextError::Io(source)) => {
            return Err(Error::from(crate::files::PathError::new(path, source)));
        }
    };
    Triggers::parse(&yaml, |role| paths.role(role).is_file())
}

/// Reads the text of `role`.
pub fn read_role(paths: &Paths, role: &str) -> Result<String, Error> {
    let path = paths.role(role);
    match crate::files::read_text(&path) {
        Ok(text) => Ok(text),
        Err(TextError::NotUtf8 { line, message }) => Err(Error::File {
            file: format!("{ROLES_DIR}/{role}.md"),
            line,
            message,
        }),
        Err(TextError::Missing) => Err(Error::Missing {
            file: format!("{ROLES_DIR}/{role}.md"),
        }),
        Err(TextError::Io(source)) => Err(Error::from(crate::files::PathError::new(path, source))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::Reportable;

    #[test]
    fn a_role_file_gone_since_the_check_is_named_without_a_line() {
        let dir = assert_fs::TempDir::new().unwrap();
        let err = read_role(&Paths::new(dir.path()), "reviewer").unwrap_err();
        assert_eq!(err.to_string(), "roles/reviewer.md: the role file is gone");
        assert_eq!(
            err.hint().unwrap(),
            "restore it (`git checkout -- roles/`), or change the trigger in config/roles.yaml"
        );
    }
}
