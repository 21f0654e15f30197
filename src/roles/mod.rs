//! Roles: triggers in `config/roles.yaml`, evaluated before each iteration
//! to pick the role file from `roles/` that shapes the prompt.

mod error;
mod normalize;
mod triggers;
mod vars;

use crate::files::read_text;
use crate::paths::Paths;

pub use error::Error;
pub use normalize::normalize;
pub use triggers::{Decision, Fired, Trigger, Triggers};
pub use vars::{FUNCTIONS, TriggerContext, VARIABLES, VarType};

use crate::paths::ROLES_DIR;

/// Loads the project's triggers; a missing `config/roles.yaml` means none.
pub fn load(paths: &Paths) -> Result<Triggers, Error> {
    let yaml = read_text(&paths.roles_config(), |line, message| Error::Yaml {
        line: Some(line),
        message,
    })?;
    Triggers::parse(&yaml.unwrap_or_default(), |role| paths.role(role).is_file())
}

/// Reads the text of `role`.
pub fn read_role(paths: &Paths, role: &str) -> Result<String, Error> {
    let file = || format!("{ROLES_DIR}/{role}.md");
    let text = read_text(&paths.role(role), |line, message| Error::File {
        file: file(),
        line,
        message,
    })?;
    text.ok_or_else(|| Error::Missing { file: file() })
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
