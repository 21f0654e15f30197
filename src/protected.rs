//! What agents may not change: ralph's own configuration and the
//! repository's guard rails. A confined agent finds them read-only, and a
//! task whose work changes one anyway (through git's plumbing, or
//! unconfined) is not merged until a person approves that work
//! (docs/SECURITY.md).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::SandboxSettings;
use crate::paths::Paths;

/// The project's paths agents may not change, beside `sandbox.protected`:
/// the settings, the roles and the prompt's template and base, and the
/// runtime folder.
pub(crate) const PROJECT: [&str; 5] = ["config", "roles", "templates", "working.md", ".ralph"];

/// The file whose every copy, in any folder, is protected: it says which
/// of git's filters and drivers run on which files.
pub(crate) const ATTRIBUTES: &str = ".gitattributes";

/// The protected paths of one repository, relative to its working tree.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Protected {
    /// `/`-separated, relative to the working tree, without a trailing
    /// `/`: a folder protects all it holds.
    paths: Vec<String>,
    /// Project paths `sandbox.writable` opens, which nothing protects.
    lifted: Vec<String>,
}

impl Protected {
    /// The protected paths of a project at `inner` inside its repository
    /// (`""`, or `sub/` for a project in a subfolder) whose tracked hooks
    /// folder, if any, is `hooks` (relative to the working tree), as the
    /// settings extend and lift them.
    pub(crate) fn new(settings: &SandboxSettings, inner: &str, hooks: Option<&str>) -> Protected {
        let project = |rel: &str| format!("{inner}{}", rel.trim_matches('/'));
        let mut paths: Vec<String> = (PROJECT.iter().copied())
            .chain(settings.protected.iter().map(String::as_str))
            .map(project)
            .collect();
        paths.push(ATTRIBUTES.to_owned());
        if let Some(hooks) = hooks {
            // husky's git hooks (`.husky/_`) only call the ones a person
            // writes beside them.
            let hooks = hooks.trim_matches('/');
            let hooks = hooks.strip_suffix("/_").unwrap_or(hooks);
            paths.push(hooks.to_owned());
        }
        let lifted: Vec<String> = (settings.writable.iter())
            .filter(|path| !path.starts_with("~/") && !Path::new(path).is_absolute())
            .map(|path| project(path))
            .collect();
        paths.retain(|path| !lifted.iter().any(|open| within(path, open)));
        paths.sort();
        paths.dedup();
        Protected { paths, lifted }
    }

    /// The protected paths, relative to the working tree.
    pub(crate) fn paths(&self) -> &[String] {
        &self.paths
    }

    /// Whether changing `path` (relative to the working tree) changes a
    /// protected path: it is one, is inside one, or is a `.gitattributes`
    /// in any folder.
    pub(crate) fn covers(&self, path: &str) -> bool {
        let attributes = path.rsplit('/').next() == Some(ATTRIBUTES);
        (attributes || self.paths.iter().any(|protected| within(path, protected)))
            && !self.lifted.iter().any(|open| within(path, open))
    }

    /// Those of `changed` that are protected, in their order.
    pub(crate) fn touched<'a>(&self, changed: &'a [String]) -> Vec<&'a str> {
        (changed.iter())
            .filter(|path| self.covers(path))
            .map(String::as_str)
            .collect()
    }
}

/// A task's change to protected paths, waiting for a person or let
/// through by one (`ralph task approve`): `.ralph/approvals/<id>.json`,
/// which a confined agent cannot write.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Serialize)]
pub(crate) struct Approval {
    /// The task's branch.
    pub branch: String,
    /// Each protected path the work changes, and its object at the
    /// branch's tip then (`deleted` when gone): what a person approves.
    pub changes: BTreeMap<String, String>,
    /// The status the task goes back to once approved: `complete` when it
    /// was blocked on its way to the base, `active` when it was blocked
    /// before an iteration.
    pub status: String,
    /// When a person approved it; none while it waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved: Option<String>,
}

impl Approval {
    /// Task `id`'s, if any (one that does not parse is none: the task waits
    /// for a person again).
    pub(crate) fn load(paths: &Paths, id: &str) -> Option<Approval> {
        let bytes = crate::files::own::read(paths.project(), &paths.approval(id)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Writes it as task `id`'s.
    pub(crate) fn save(&self, paths: &Paths, id: &str) -> std::io::Result<()> {
        let path = paths.approval(id);
        crate::files::own::create_parent(paths.project(), &path)?;
        let mut text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        text.push('\n');
        crate::files::own::replace(paths.project(), &path, text.as_bytes())
    }

    /// Whether a person let `changes` through: approved, and each of them
    /// is what was approved.
    pub(crate) fn lets_through(&self, changes: &[(String, String)]) -> bool {
        self.approved.is_some()
            && (changes.iter()).all(|(path, id)| self.changes.get(path) == Some(id))
    }
}

/// Whether `path` is `folder` or inside it.
fn within(path: &str, folder: &str) -> bool {
    path.strip_prefix(folder)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ralphs_configuration_and_the_guard_rails_are_protected_and_writable_lifts_them() {
        let settings = SandboxSettings {
            protected: vec!["Makefile".into(), "ci/".into()],
            writable: vec!["roles".into(), "~/.cache".into()],
            ..SandboxSettings::default()
        };
        let protected = Protected::new(&settings, "app/", Some(".husky/_"));
        assert_eq!(
            protected.paths(),
            [
                ".gitattributes",
                ".husky",
                "app/.ralph",
                "app/Makefile",
                "app/ci",
                "app/config",
                "app/templates",
                "app/working.md",
            ]
        );
        for path in [
            "app/config/ralph.yaml",
            "app/working.md",
            ".husky/pre-commit",
            "src/deep/.gitattributes",
            "app/ci/build.sh",
        ] {
            assert!(protected.covers(path), "{path}");
        }
        for path in [
            "app/roles/reviewer.md",
            "app/configure.sh",
            "config/ralph.yaml",
            "app/tasks.jsonl",
            "src/main.rs",
            ".gitattributes.bak",
        ] {
            assert!(!protected.covers(path), "{path}");
        }
        let changed = ["src/a.rs".to_owned(), "app/config/roles.yaml".to_owned()];
        assert_eq!(protected.touched(&changed), ["app/config/roles.yaml"]);
    }
}
