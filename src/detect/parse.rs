//! Reading just enough of a project's files to find its checks: the
//! scripts of a `package.json`, the table headers of TOML and INI files,
//! the targets of a makefile, the recipes of a justfile, and whether a CI
//! file runs clippy.

/// What detection needs of a `package.json`.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Package {
    /// The scripts that do something, by name.
    scripts: Vec<String>,
    /// The package manager its `packageManager` field names, when ralph
    /// knows it (`pnpm@9.1.0` is pnpm).
    pub manager: Option<&'static str>,
}

/// The test script `npm init` writes, which only fails.
const NPM_DEFAULT_TEST: &str = "no test specified";

impl Package {
    /// Reads the parts of `package.json` text detection uses; text that
    /// is not a JSON object has none.
    pub(super) fn parse(text: &str) -> Package {
        let Ok(serde_json::Value::Object(package)) = serde_json::from_str(text) else {
            return Package::default();
        };
        let scripts = package
            .get("scripts")
            .and_then(|scripts| scripts.as_object())
            .into_iter()
            .flatten()
            .filter(|(_, script)| {
                script.as_str().is_some_and(|script| {
                    !script.trim().is_empty() && !script.contains(NPM_DEFAULT_TEST)
                })
            })
            .map(|(name, _)| name.clone())
            .collect();
        let manager = package
            .get("packageManager")
            .and_then(|field| field.as_str())
            .and_then(|field| {
                let name = field.split('@').next().unwrap_or("");
                ["npm", "pnpm", "yarn", "bun"]
                    .into_iter()
                    .find(|known| *known == name)
            });
        Package { scripts, manager }
    }

    /// Whether it has a script `name` that does something.
    pub(super) fn has_script(&self, name: &str) -> bool {
        self.scripts.iter().any(|script| script == name)
    }
}

/// The name of a table header line (`[tool.ruff]`, `[[bin]]`, `[mypy]`),
/// without quotes around its parts.
fn header(line: &str) -> Option<String> {
    let line = line.trim();
    let inner = line
        .strip_prefix("[[")
        .and_then(|rest| rest.split_once("]]"))
        .or_else(|| line.strip_prefix('[').and_then(|rest| rest.split_once(']')))
        .map(|(inner, _)| inner)?;
    Some(
        inner
            .split('.')
            .map(|part| part.trim().trim_matches('"').trim_matches('\''))
            .collect::<Vec<_>>()
            .join("."),
    )
}

/// Whether TOML or INI `text` has the table `name` or one inside it
/// (`tool.ruff` for `[tool.ruff.lint]`). Only headers count: a table
/// written inline or as dotted keys is not seen.
pub(super) fn has_table(text: &str, name: &str) -> bool {
    text.lines().filter_map(header).any(|found| {
        found == name
            || found
                .strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('.'))
    })
}

/// The keys set in the table `name` of TOML or INI `text`.
pub(super) fn table_keys<'t>(text: &'t str, name: &str) -> Vec<&'t str> {
    let mut keys = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if let Some(found) = header(line) {
            inside = found == name;
        } else if inside
            && !line.starts_with([' ', '\t', '#', ';'])
            && let Some((key, _)) = line.split_once(['=', ':'])
        {
            keys.push(key.trim());
        }
    }
    keys
}

/// The targets of a makefile's rules: the names before the `:` of each
/// rule line (at column 0, not a variable assignment such as `X := y`).
pub(super) fn make_targets(text: &str) -> Vec<&str> {
    let mut targets = Vec::new();
    let mut continued = false;
    for line in text.lines() {
        let continuation = continued;
        continued = line.ends_with('\\');
        if continuation || line.starts_with([' ', '\t', '#']) {
            continue;
        }
        let Some((names, rest)) = line.split_once(':') else {
            continue;
        };
        let assignment = rest.starts_with('=')
            || rest.starts_with(":=")
            || rest.starts_with("::=")
            || names.contains(['=', '$', '%']);
        if !assignment {
            targets.extend(names.split_whitespace());
        }
    }
    targets
}

/// The recipe names of a justfile: `test:`, `@test:`, `test *args:`,
/// `test: build` (not `test := "x"` or `set shell := [...]`, assignments).
pub(super) fn just_recipes(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|line| !line.starts_with([' ', '\t', '#', '[']))
        .filter_map(|line| {
            let line = line.strip_prefix('@').unwrap_or(line);
            let end = line
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .unwrap_or(line.len());
            let (name, rest) = line.split_at(end);
            let rest = rest.trim_start();
            let recipe = !name.is_empty()
                && rest.contains(':')
                && !rest.contains(":=")
                && (rest.starts_with(':') || line[end..].starts_with([' ', '\t']));
            recipe.then_some(name)
        })
        .collect()
}

/// Whether a CI file runs clippy: a line that is not a comment names it.
pub(super) fn runs_clippy(text: &str) -> bool {
    text.lines().any(|line| {
        let line = line.trim_start();
        !line.starts_with('#') && !line.starts_with("//") && line.contains("clippy")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_package_keeps_the_scripts_that_do_something() {
        let package = Package::parse(
            r#"{"name": "x", "scripts": {
                "test": "echo \"Error: no test specified\" && exit 1",
                "lint": "eslint .", "typecheck": "  ", "build": 7}}"#,
        );
        assert!(!package.has_script("test"));
        assert!(package.has_script("lint"));
        assert!(!package.has_script("typecheck"));
        assert!(!package.has_script("build"));
        assert_eq!(package.manager, None);
        assert_eq!(Package::parse("{\"scripts\": ["), Package::default());
        assert_eq!(Package::parse("[1]"), Package::default());
    }

    #[test]
    fn the_package_manager_field_names_a_known_manager() {
        let manager =
            |field: &str| Package::parse(&format!(r#"{{"packageManager": "{field}"}}"#)).manager;
        assert_eq!(manager("yarn@4.1.0+sha256.abc"), Some("yarn"));
        assert_eq!(manager("bun@1.1"), Some("bun"));
        assert_eq!(manager("deno@2"), None);
    }

    #[test]
    fn tables_are_found_by_their_headers() {
        let toml = "[project]\nname = \"x\"\n[ tool . \"ruff\" . lint ]\nselect = []\n[[tool.mypy.overrides]]\nmodule = \"a\"\n";
        assert!(has_table(toml, "project"));
        assert!(has_table(toml, "tool.ruff"));
        assert!(has_table(toml, "tool.mypy"));
        assert!(!has_table(toml, "tool.black"));
        assert!(!has_table("[tool.ruffle]\n", "tool.ruff"));
        assert!(!has_table(
            "# [tool.ruff]\nx = \"[tool.ruff]\"\n",
            "tool.ruff"
        ));
        assert!(has_table("[tool:pytest]\naddopts = -q\n", "tool:pytest"));
    }

    #[test]
    fn the_keys_of_a_table_are_those_until_the_next_header() {
        let ini = "[mypy]\nstrict = True\nfiles: src, tests\n  continued\n# files = x\n[mypy-foo.*]\nignore = True\n";
        assert_eq!(table_keys(ini, "mypy"), ["strict", "files"]);
        assert_eq!(table_keys(ini, "flake8"), Vec::<&str>::new());
    }

    #[test]
    fn make_targets_are_the_rule_lines_at_column_0() {
        let makefile = "\
.PHONY: test lint
CC := gcc
FLAGS = a:b
X ::= y
Y:=z
test lint: build
\tcargo test
check::
%.o: %.c
OBJS = a.o \\
  check:
\tnot: a target
";
        assert_eq!(make_targets(makefile), [".PHONY", "test", "lint", "check"]);
    }

    #[test]
    fn just_recipes_take_parameters_and_dependencies() {
        let justfile = "\
set shell := [\"bash\", \"-c\"]
test := \"not a recipe\"
[private]
@test *args: build
    cargo test {{args}}
check arg=\"a:b\":
lint:build
fmt
# docs:
";
        assert_eq!(just_recipes(justfile), ["test", "check", "lint"]);
        assert_eq!(just_recipes("testing:\n"), ["testing"]);
    }

    #[test]
    fn clippy_counts_outside_comments() {
        assert!(runs_clippy("    - run: cargo clippy --all-targets\n"));
        assert!(runs_clippy(
            "steps:\n  - uses: actions-rs/clippy-check@v1\n"
        ));
        assert!(!runs_clippy("# TODO: run clippy\n  - run: cargo test\n"));
    }
}
