//! The checks a project's developers already run, found from its files for
//! `ralph init`: `cargo test` for a `Cargo.toml`, the package manager's
//! `test`, `lint` and `typecheck` scripts for a `package.json`, and so on
//! (docs/CONFIG.md, "Checks found at init"). Detection only reads files; it
//! never runs a command.

mod edit;
mod parse;

use std::path::{Path, PathBuf};

pub(crate) use edit::{WriteError, quote, with_checks};

/// Which lists of `config/ralph.yaml` a check goes into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    /// A test command: `verify.task` (before each merge) and `verify.run`.
    Task,
    /// A slower or stricter check (lint, typecheck): `verify.run` only.
    Run,
}

/// One command found, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Check {
    /// The command line, as `sh -c` runs it.
    pub command: String,
    /// The file it was found in, relative to the folder (`../` for one
    /// above it), with what else decided it: `Cargo.toml; ../.github/workflows/ci.yml runs clippy`.
    pub source: String,
    /// Which lists it goes into.
    pub scope: Scope,
}

impl Check {
    fn new(command: impl Into<String>, source: impl Into<String>, scope: Scope) -> Check {
        Check {
            command: command.into(),
            source: source.into(),
            scope,
        }
    }

    /// The settings lists it goes into: `["task", "run"]` or `["run"]`.
    pub(crate) fn lists(&self) -> &'static [&'static str] {
        match self.scope {
            Scope::Task => &["task", "run"],
            Scope::Run => &["run"],
        }
    }
}

/// The `verify.task` list of `checks`: the test commands, in order.
pub(crate) fn task_list(checks: &[Check]) -> Vec<String> {
    checks
        .iter()
        .filter(|check| check.scope == Scope::Task)
        .map(|check| check.command.clone())
        .collect()
}

/// The `verify.run` list of `checks`: every command, in order.
pub(crate) fn run_list(checks: &[Check]) -> Vec<String> {
    checks.iter().map(|check| check.command.clone()).collect()
}

/// The checks of the project in `folder`, in a fixed order: Rust, Node,
/// Python, Go, make, just; within each, tests first. Empty when none of
/// the files it knows is there.
pub(crate) fn detect(folder: &Path) -> Vec<Check> {
    let folder = Folder::new(folder);
    let mut checks = Vec::new();
    rust(&folder, &mut checks);
    node(&folder, &mut checks);
    python(&folder, &mut checks);
    go(&folder, &mut checks);
    make(&folder, &mut checks);
    just(&folder, &mut checks);
    checks
}

/// The folder detection looks at, and the folders above it up to the git
/// repository's root (for CI files and a workspace's lock file).
struct Folder {
    /// The folder itself, then each one above it, nearest first: up to and
    /// including the one holding `.git`; only the folder outside a repository.
    up: Vec<PathBuf>,
}

impl Folder {
    fn new(folder: &Path) -> Folder {
        // `--dir ../x` must climb from the real folder, not the text.
        let folder = std::fs::canonicalize(folder).unwrap_or_else(|_| folder.to_owned());
        let mut up = Vec::new();
        for dir in folder.ancestors() {
            up.push(dir.to_owned());
            if dir.join(".git").exists() {
                return Folder { up };
            }
        }
        Folder { up: vec![folder] }
    }

    /// The text of `name` in the folder; `None` when it is missing or
    /// unreadable.
    fn read(&self, name: &str) -> Option<String> {
        read(&self.up[0].join(name))
    }

    fn has(&self, name: &str) -> bool {
        self.up[0].join(name).is_file()
    }

    /// The first of `names` in the folder.
    fn first<'n>(&self, names: &[&'n str]) -> Option<&'n str> {
        names.iter().copied().find(|name| self.has(name))
    }

    /// Each file named by `names` in the folder and the ones above it,
    /// nearest folder first, as (path relative to the folder, path). A
    /// name ending in `/*.yml` stands for that folder's `.yml` and `.yaml`
    /// files, sorted.
    fn up_files(&self, names: &[&str]) -> Vec<(String, PathBuf)> {
        let mut found = Vec::new();
        for (depth, dir) in self.up.iter().enumerate() {
            let prefix = "../".repeat(depth);
            for name in names {
                if let Some(folder) = name.strip_suffix("/*.yml") {
                    let mut files: Vec<String> = std::fs::read_dir(dir.join(folder))
                        .into_iter()
                        .flatten()
                        .flatten()
                        .filter_map(|entry| entry.file_name().into_string().ok())
                        .filter(|file| file.ends_with(".yml") || file.ends_with(".yaml"))
                        .collect();
                    files.sort();
                    for file in files {
                        let rel = format!("{folder}/{file}");
                        let path = dir.join(&rel);
                        if path.is_file() {
                            found.push((format!("{prefix}{rel}"), path));
                        }
                    }
                } else if dir.join(name).is_file() {
                    found.push((format!("{prefix}{name}"), dir.join(name)));
                }
            }
        }
        found
    }
}

fn read(path: &Path) -> Option<String> {
    std::fs::read(path)
        .ok()
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

/// The CI files looked at for clippy, in each folder up to the repository
/// root.
const CI_FILES: [&str; 11] = [
    ".github/workflows/*.yml",
    ".gitlab-ci.yml",
    ".circleci/config.yml",
    ".travis.yml",
    "azure-pipelines.yml",
    "bitbucket-pipelines.yml",
    ".buildkite/pipeline.yml",
    ".drone.yml",
    ".woodpecker.yml",
    ".woodpecker/*.yml",
    "Jenkinsfile",
];

/// `Cargo.toml`: `cargo test`, and clippy when a CI file runs it.
fn rust(folder: &Folder, checks: &mut Vec<Check>) {
    if !folder.has("Cargo.toml") {
        return;
    }
    checks.push(Check::new("cargo test", "Cargo.toml", Scope::Task));
    let ci = folder
        .up_files(&CI_FILES)
        .into_iter()
        .find(|(_, path)| read(path).is_some_and(|text| parse::runs_clippy(&text)));
    if let Some((ci, _)) = ci {
        checks.push(Check::new(
            "cargo clippy --all-targets -- -D warnings",
            format!("Cargo.toml; {ci} runs clippy"),
            Scope::Run,
        ));
    }
}

/// The lock files that name a package manager, in the order they are
/// looked for.
const LOCK_FILES: [(&str, &str); 5] = [
    ("package-lock.json", "npm"),
    ("pnpm-lock.yaml", "pnpm"),
    ("yarn.lock", "yarn"),
    ("bun.lockb", "bun"),
    ("bun.lock", "bun"),
];

/// `package.json`: its `test`, `lint` and `typecheck` scripts, run by the
/// package manager its `packageManager` field or lock file names (npm
/// when none does).
fn node(folder: &Folder, checks: &mut Vec<Check>) {
    let Some(text) = folder.read("package.json") else {
        return;
    };
    let package = parse::Package::parse(&text);
    let (manager, lock) = match package.manager {
        Some(manager) => (manager, None),
        None => {
            // A workspace keeps one lock file, at its root.
            let names: Vec<&str> = LOCK_FILES.iter().map(|(name, _)| *name).collect();
            match folder.up_files(&names).into_iter().next() {
                Some((rel, path)) => {
                    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
                    let manager = LOCK_FILES
                        .iter()
                        .find(|(lock, _)| *lock == name)
                        .map_or("npm", |(_, manager)| manager);
                    (manager, Some(rel))
                }
                None => ("npm", None),
            }
        }
    };
    let source = match lock {
        Some(lock) => format!("package.json; {lock}"),
        None => "package.json".to_owned(),
    };
    for (script, scope) in [
        ("test", Scope::Task),
        ("lint", Scope::Run),
        ("typecheck", Scope::Run),
        ("type-check", Scope::Run),
    ] {
        if script == "type-check" && package.has_script("typecheck") {
            continue;
        }
        if package.has_script(script) {
            checks.push(Check::new(
                script_command(manager, script),
                source.as_str(),
                scope,
            ));
        }
    }
}

/// How `manager` runs the script `script`: `npm test`, `pnpm run lint`.
/// bun's test script is `bun run test`, since `bun test` is bun's own
/// test runner.
fn script_command(manager: &str, script: &str) -> String {
    if script == "test" && manager != "bun" {
        format!("{manager} test")
    } else {
        format!("{manager} run {script}")
    }
}

/// The files that make a folder a Python project.
const PYTHON_FILES: [&str; 5] = [
    "pyproject.toml",
    "setup.cfg",
    "setup.py",
    "pytest.ini",
    "tox.ini",
];

/// A Python project: pytest, and ruff and mypy when configured.
fn python(folder: &Folder, checks: &mut Vec<Check>) {
    let Some(first) = folder.first(&PYTHON_FILES) else {
        return;
    };
    let text = |name: &str| folder.read(name).unwrap_or_default();
    let (pyproject, setup_cfg, tox) = (text("pyproject.toml"), text("setup.cfg"), text("tox.ini"));
    // Where pytest takes its settings from, in pytest's own order.
    let pytest_config = if let Some(ini) = folder.first(&["pytest.ini", ".pytest.ini"]) {
        Some(ini)
    } else if parse::has_table(&pyproject, "tool.pytest") {
        Some("pyproject.toml")
    } else if parse::has_table(&tox, "pytest") {
        Some("tox.ini")
    } else if parse::has_table(&setup_cfg, "tool:pytest") {
        Some("setup.cfg")
    } else {
        None
    };
    // A project that can be installed is, and its tests import it from
    // there; one that cannot needs its own folder on the import path,
    // which `python -m` adds.
    let installable = parse::has_table(&pyproject, "project")
        || parse::has_table(&pyproject, "tool.poetry")
        || parse::has_table(&setup_cfg, "metadata")
        || folder.has("setup.py");
    let pytest = if installable {
        "pytest"
    } else {
        "python -m pytest"
    };
    checks.push(Check::new(
        pytest,
        pytest_config.unwrap_or(first),
        Scope::Task,
    ));
    let ruff = if parse::has_table(&pyproject, "tool.ruff") {
        Some("pyproject.toml")
    } else {
        folder.first(&["ruff.toml", ".ruff.toml"])
    };
    if let Some(ruff) = ruff {
        checks.push(Check::new("ruff check", ruff, Scope::Run));
    }
    // mypy's own order of configuration files.
    let mypy = [
        ("mypy.ini", "mypy", text("mypy.ini")),
        (".mypy.ini", "mypy", text(".mypy.ini")),
        ("pyproject.toml", "tool.mypy", pyproject.clone()),
        ("setup.cfg", "mypy", setup_cfg.clone()),
    ]
    .into_iter()
    .find(|(_, table, text)| parse::has_table(text, table));
    if let Some((file, table, text)) = mypy {
        // Without `files` in its settings, mypy needs to be told what to check.
        let command = if parse::table_keys(&text, table).contains(&"files") {
            "mypy"
        } else {
            "mypy ."
        };
        checks.push(Check::new(command, file, Scope::Run));
    }
}

/// `go.mod`: `go test ./...` and `go vet ./...`.
fn go(folder: &Folder, checks: &mut Vec<Check>) {
    if folder.has("go.mod") {
        checks.push(Check::new("go test ./...", "go.mod", Scope::Task));
        checks.push(Check::new("go vet ./...", "go.mod", Scope::Run));
    }
}

/// A makefile's `test` and `check` targets; `make check` runs per task
/// only when there is no `make test`.
fn make(folder: &Folder, checks: &mut Vec<Check>) {
    let Some(name) = folder.first(&["GNUmakefile", "makefile", "Makefile"]) else {
        return;
    };
    let text = folder.read(name).unwrap_or_default();
    let targets = parse::make_targets(&text);
    let test = targets.contains(&"test");
    if test {
        checks.push(Check::new("make test", name, Scope::Task));
    }
    if targets.contains(&"check") {
        let scope = if test { Scope::Run } else { Scope::Task };
        checks.push(Check::new("make check", name, scope));
    }
}

/// A justfile's `test` recipe.
fn just(folder: &Folder, checks: &mut Vec<Check>) {
    let Some(name) = folder.first(&["justfile", "Justfile", ".justfile"]) else {
        return;
    };
    let text = folder.read(name).unwrap_or_default();
    if parse::just_recipes(&text).contains(&"test") {
        checks.push(Check::new("just test", name, Scope::Task));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(files: &[(&str, &str)]) -> assert_fs::TempDir {
        let temp = assert_fs::TempDir::new().unwrap();
        for (path, text) in files {
            let path = temp.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        temp
    }

    fn found(files: &[(&str, &str)]) -> Vec<(String, String, Scope)> {
        let temp = project(files);
        detect(temp.path())
            .into_iter()
            .map(|check| (check.command, check.source, check.scope))
            .collect()
    }

    fn check(command: &str, source: &str, scope: Scope) -> (String, String, Scope) {
        (command.to_owned(), source.to_owned(), scope)
    }

    #[test]
    fn an_empty_folder_has_no_checks() {
        assert_eq!(found(&[(".git/HEAD", "ref: refs/heads/main\n")]), []);
    }

    #[test]
    fn the_manager_of_a_package_is_its_field_then_its_lock_file_then_npm() {
        let scripts = r#"{"scripts": {"test": "vitest", "lint": "eslint .", "type-check": "tsc"}}"#;
        assert_eq!(
            found(&[("package.json", scripts)]),
            [
                check("npm test", "package.json", Scope::Task),
                check("npm run lint", "package.json", Scope::Run),
                check("npm run type-check", "package.json", Scope::Run),
            ]
        );
        let pinned = r#"{"packageManager": "pnpm@9.1.0", "scripts": {"test": "x"}}"#;
        assert_eq!(
            found(&[("package.json", pinned), ("yarn.lock", "")]),
            [check("pnpm test", "package.json", Scope::Task)]
        );
        assert_eq!(
            found(&[("package.json", scripts), ("bun.lock", "{}")])[0],
            check("bun run test", "package.json; bun.lock", Scope::Task)
        );
    }

    #[test]
    fn a_workspace_member_finds_the_lock_file_at_the_repository_root() {
        let temp = project(&[
            (".git/HEAD", "ref: refs/heads/main\n"),
            ("pnpm-lock.yaml", ""),
            (
                "packages/web/package.json",
                r#"{"scripts": {"lint": "eslint"}}"#,
            ),
        ]);
        assert_eq!(
            detect(&temp.path().join("packages/web")),
            [Check::new(
                "pnpm run lint",
                "package.json; ../../pnpm-lock.yaml",
                Scope::Run
            )]
        );
    }

    #[test]
    fn outside_a_repository_only_the_folder_itself_is_looked_at() {
        let temp = project(&[
            ("yarn.lock", ""),
            (".github/workflows/ci.yml", "run: cargo clippy\n"),
            ("app/Cargo.toml", "[package]\n"),
            ("app/package.json", r#"{"scripts": {"test": "jest"}}"#),
        ]);
        assert_eq!(
            detect(&temp.path().join("app")),
            [
                Check::new("cargo test", "Cargo.toml", Scope::Task),
                Check::new("npm test", "package.json", Scope::Task),
            ]
        );
    }

    #[test]
    fn python_runs_pytest_and_the_configured_linters() {
        assert_eq!(
            found(&[
                (
                    "pyproject.toml",
                    "[project]\nname = \"x\"\n\n[tool.ruff.lint]\nselect = [\"E\"]\n\n[tool.mypy]\nfiles = [\"src\"]\n"
                ),
                ("pytest.ini", "[pytest]\n"),
            ]),
            [
                check("pytest", "pytest.ini", Scope::Task),
                check("ruff check", "pyproject.toml", Scope::Run),
                check("mypy", "pyproject.toml", Scope::Run),
            ]
        );
        assert_eq!(
            found(&[
                ("tox.ini", "[tox]\nenvlist = py3\n"),
                ("setup.cfg", "[mypy]\nstrict = True\n"),
                (".ruff.toml", "line-length = 100\n"),
            ]),
            [
                check("python -m pytest", "setup.cfg", Scope::Task),
                check("ruff check", ".ruff.toml", Scope::Run),
                check("mypy .", "setup.cfg", Scope::Run),
            ]
        );
    }

    #[test]
    fn make_check_runs_per_task_only_without_make_test() {
        assert_eq!(
            found(&[("Makefile", "check:\n\tcargo test\n")]),
            [check("make check", "Makefile", Scope::Task)]
        );
        assert_eq!(
            found(&[("Makefile", "test check: build\n\ttrue\n")]),
            [
                check("make test", "Makefile", Scope::Task),
                check("make check", "Makefile", Scope::Run),
            ]
        );
        assert_eq!(found(&[("Makefile", "build:\n\tcc x.c\n")]), []);
    }

    #[test]
    fn the_lists_follow_the_scopes() {
        let checks = vec![
            Check::new("go test ./...", "go.mod", Scope::Task),
            Check::new("go vet ./...", "go.mod", Scope::Run),
        ];
        assert_eq!(task_list(&checks), ["go test ./..."]);
        assert_eq!(run_list(&checks), ["go test ./...", "go vet ./..."]);
        assert_eq!(checks[1].lists(), ["run"]);
    }
}
