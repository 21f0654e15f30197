//! `ralph init` finding the project's checks: what it writes into
//! `config/ralph.yaml`, `--detect` reporting, `--detect --write` editing.

use crate::support::TestProject;

/// The shipped settings.
const SHIPPED: &str = include_str!("../../config/ralph.yaml");

/// The shipped lists, with the comment between them.
const SHIPPED_LISTS: &str = "  task: []
  # Commands run once, in the project dir, when the queue drains.
  run: []
";

/// The shipped settings with these items (YAML text: the quoted command
/// and its comment) in `verify.task` and `verify.run`.
fn settings(task: &[&str], run: &[&str]) -> String {
    let list = |key: &str, items: &[&str]| {
        if items.is_empty() {
            return format!("  {key}: []\n");
        }
        let mut text = format!("  {key}:\n");
        for item in items {
            text.push_str(&format!("    - {item}\n"));
        }
        text
    };
    let lists = format!(
        "{}  # Commands run once, in the project dir, when the queue drains.\n{}",
        list("task", task),
        list("run", run)
    );
    assert!(SHIPPED.contains(SHIPPED_LISTS));
    SHIPPED.replacen(SHIPPED_LISTS, &lists, 1)
}

/// A project in a git repository (its own root), with `files`.
fn project(files: &[(&str, &str)]) -> TestProject {
    files.iter().fold(
        TestProject::new().file(".git/HEAD", "ref: refs/heads/main\n"),
        |project, (path, text)| project.file(path, text),
    )
}

/// What `ralph init` prints in an empty project, before the checks.
const CREATED: &str = "created working.md
created learnings.md
created tasks.jsonl
created tasks-done.jsonl
created roles/reviewer.md
created roles/architect.md
created roles/debugger.md
created roles/documenter.md
created roles/refactorer.md
created roles/planner.md
created roles/final-reviewer.md
created config/roles.yaml
created config/ralph.yaml
added to .gitignore: .ralph/, ralph.log, .stop
";

const CARGO_TOML: &str = r#"[package]
name = "greet"
version = "0.1.0"
edition = "2021"

[dependencies]
clap = { version = "4", features = ["derive"] }

[dev-dependencies]
assert_cmd = "2"
"#;

const CI_WITH_CLIPPY: &str = "name: CI
on: [push, pull_request]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: cargo test --locked
      - run: cargo clippy --all-targets -- -D warnings
";

/// Runs `ralph init` in `folder` of `p` and checks its whole output: the
/// created files, then `found`.
fn init_in(p: &TestProject, folder: &str, found: &str) {
    p.ralph_in(folder, &["init"])
        .ok(&format!("{CREATED}{found}"));
}

#[test]
fn a_cargo_project_gets_cargo_test() {
    let p = project(&[
        ("Cargo.toml", CARGO_TOML),
        (
            ".github/workflows/ci.yml",
            "jobs:\n  t:\n    steps:\n      - run: cargo test\n      # - run: cargo clippy\n",
        ),
    ]);
    init_in(
        &p,
        ".",
        "found `cargo test` (Cargo.toml): verify.task, verify.run\n",
    );
    assert_eq!(
        p.read("config/ralph.yaml"),
        settings(
            &[r#""cargo test"  # Cargo.toml"#],
            &[r#""cargo test"  # Cargo.toml"#]
        )
    );
}

#[test]
fn a_cargo_project_whose_ci_runs_clippy_gets_clippy_at_the_end() {
    let p = project(&[
        ("Cargo.toml", CARGO_TOML),
        (".github/workflows/ci.yml", CI_WITH_CLIPPY),
    ]);
    init_in(
        &p,
        ".",
        "found `cargo test` (Cargo.toml): verify.task, verify.run
found `cargo clippy --all-targets -- -D warnings` (Cargo.toml; .github/workflows/ci.yml runs clippy): verify.run
",
    );
    assert_eq!(
        p.read("config/ralph.yaml"),
        settings(
            &[r#""cargo test"  # Cargo.toml"#],
            &[
                r#""cargo test"  # Cargo.toml"#,
                r#""cargo clippy --all-targets -- -D warnings"  # Cargo.toml; .github/workflows/ci.yml runs clippy"#
            ]
        )
    );
}

#[test]
fn a_crate_in_a_subfolder_finds_the_ci_file_at_the_repository_root() {
    let p = project(&[
        (".gitlab-ci.yml", "lint:\n  script:\n    - cargo clippy\n"),
        ("crates/app/Cargo.toml", CARGO_TOML),
    ]);
    init_in(
        &p,
        "crates/app",
        "found `cargo test` (Cargo.toml): verify.task, verify.run
found `cargo clippy --all-targets -- -D warnings` (Cargo.toml; ../../.gitlab-ci.yml runs clippy): verify.run
",
    );
    assert!(
        p.read("crates/app/config/ralph.yaml")
            .contains("    - \"cargo clippy --all-targets -- -D warnings\"  # Cargo.toml; ../../.gitlab-ci.yml runs clippy\n")
    );
}

#[test]
fn a_package_without_a_real_test_script_gets_no_checks() {
    for package in [
        r#"{"name": "site", "scripts": {"build": "vite build", "dev": "vite"}}"#,
        r#"{"name": "site", "version": "1.0.0", "scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}"#,
        r#"{"name": "site"}"#,
    ] {
        let p = project(&[("package.json", package), ("package-lock.json", "{}")]);
        init_in(&p, ".", "no checks found for verify.task and verify.run\n");
        assert_eq!(p.read("config/ralph.yaml"), SHIPPED, "{package}");
    }
}

#[test]
fn a_package_gets_its_scripts_run_by_the_manager_of_its_lock_file() {
    let package = r#"{
  "name": "site",
  "scripts": {
    "dev": "vite",
    "typecheck": "tsc --noEmit",
    "lint": "eslint .",
    "test": "vitest run"
  }
}
"#;
    for (lock, test, run) in [
        (None, "npm test", "npm run"),
        (Some("package-lock.json"), "npm test", "npm run"),
        (Some("pnpm-lock.yaml"), "pnpm test", "pnpm run"),
        (Some("yarn.lock"), "yarn test", "yarn run"),
        (Some("bun.lockb"), "bun run test", "bun run"),
        (Some("bun.lock"), "bun run test", "bun run"),
    ] {
        let mut files = vec![("package.json", package)];
        files.extend(lock.map(|lock| (lock, "")));
        let p = project(&files);
        let source = match lock {
            Some(lock) => format!("package.json; {lock}"),
            None => "package.json".to_owned(),
        };
        init_in(
            &p,
            ".",
            &format!(
                "found `{test}` ({source}): verify.task, verify.run
found `{run} lint` ({source}): verify.run
found `{run} typecheck` ({source}): verify.run
"
            ),
        );
        let item = |command: &str| format!("\"{command}\"  # {source}");
        assert_eq!(
            p.read("config/ralph.yaml"),
            settings(
                &[&item(test)],
                &[
                    &item(test),
                    &item(&format!("{run} lint")),
                    &item(&format!("{run} typecheck"))
                ]
            ),
            "{lock:?}"
        );
    }
}

#[test]
fn a_python_project_gets_pytest_and_its_configured_linters() {
    let p = project(&[(
        "pyproject.toml",
        r#"[project]
name = "greet"
version = "0.1.0"

[tool.pytest.ini_options]
addopts = "-q"
testpaths = ["tests"]

[tool.ruff]
line-length = 100

[tool.ruff.lint]
select = ["E", "F"]
"#,
    )]);
    init_in(
        &p,
        ".",
        "found `pytest` (pyproject.toml): verify.task, verify.run
found `ruff check` (pyproject.toml): verify.run
",
    );
    assert_eq!(
        p.read("config/ralph.yaml"),
        settings(
            &[r#""pytest"  # pyproject.toml"#],
            &[
                r#""pytest"  # pyproject.toml"#,
                r#""ruff check"  # pyproject.toml"#
            ]
        )
    );
}

#[test]
fn python_tests_outside_an_installable_project_run_through_python_m() {
    let p = project(&[
        ("pytest.ini", "[pytest]\naddopts = -q\n"),
        ("mypy.ini", "[mypy]\nstrict = True\n"),
    ]);
    init_in(
        &p,
        ".",
        "found `python -m pytest` (pytest.ini): verify.task, verify.run
found `mypy .` (mypy.ini): verify.run
",
    );
    assert_eq!(
        p.read("config/ralph.yaml"),
        settings(
            &[r#""python -m pytest"  # pytest.ini"#],
            &[
                r#""python -m pytest"  # pytest.ini"#,
                r#""mypy ."  # mypy.ini"#
            ]
        )
    );
}

#[test]
fn a_go_module_gets_go_test_and_go_vet() {
    let p = project(&[("go.mod", "module example.com/greet\n\ngo 1.22\n")]);
    init_in(
        &p,
        ".",
        "found `go test ./...` (go.mod): verify.task, verify.run
found `go vet ./...` (go.mod): verify.run
",
    );
    assert_eq!(
        p.read("config/ralph.yaml"),
        settings(
            &[r#""go test ./..."  # go.mod"#],
            &[
                r#""go test ./..."  # go.mod"#,
                r#""go vet ./..."  # go.mod"#
            ]
        )
    );
}

#[test]
fn a_makefile_gets_its_test_and_check_targets() {
    let p = project(&[(
        "Makefile",
        "CC := cc\n.PHONY: all test check\n\nall: greet\n\ntest: greet\n\t./run-tests.sh\n\ncheck: test\n\tshellcheck *.sh\n",
    )]);
    init_in(
        &p,
        ".",
        "found `make test` (Makefile): verify.task, verify.run
found `make check` (Makefile): verify.run
",
    );
    assert_eq!(
        p.read("config/ralph.yaml"),
        settings(
            &[r#""make test"  # Makefile"#],
            &[r#""make test"  # Makefile"#, r#""make check"  # Makefile"#]
        )
    );
}

#[test]
fn a_justfile_gets_its_test_recipe() {
    let p = project(&[(
        "justfile",
        "set shell := [\"bash\", \"-c\"]\n\nbuild:\n    cargo build\n\n# run the tests\ntest *args: build\n    cargo test {{args}}\n",
    )]);
    init_in(
        &p,
        ".",
        "found `just test` (justfile): verify.task, verify.run\n",
    );
    assert_eq!(
        p.read("config/ralph.yaml"),
        settings(
            &[r#""just test"  # justfile"#],
            &[r#""just test"  # justfile"#]
        )
    );
}

#[test]
fn an_empty_folder_keeps_the_shipped_settings() {
    let p = project(&[]);
    init_in(&p, ".", "no checks found for verify.task and verify.run\n");
    assert_eq!(p.read("config/ralph.yaml"), SHIPPED);
}

#[test]
fn a_monorepo_subfolder_gets_its_own_package_and_the_root_lock_file() {
    let p = project(&[
        ("Cargo.toml", CARGO_TOML),
        ("pnpm-lock.yaml", "lockfileVersion: '9.0'\n"),
        ("package.json", r#"{"scripts": {"test": "turbo test"}}"#),
        (
            "apps/web/package.json",
            r#"{"scripts": {"test": "vitest", "lint": "next lint"}}"#,
        ),
    ]);
    init_in(
        &p,
        "apps/web",
        "found `pnpm test` (package.json; ../../pnpm-lock.yaml): verify.task, verify.run
found `pnpm run lint` (package.json; ../../pnpm-lock.yaml): verify.run
",
    );
    assert_eq!(
        p.read("apps/web/config/ralph.yaml"),
        settings(
            &[r#""pnpm test"  # package.json; ../../pnpm-lock.yaml"#],
            &[
                r#""pnpm test"  # package.json; ../../pnpm-lock.yaml"#,
                r#""pnpm run lint"  # package.json; ../../pnpm-lock.yaml"#
            ]
        )
    );
    assert!(!p.path().join("config").exists());
}

#[test]
fn no_detect_writes_the_empty_lists_and_says_nothing_of_checks() {
    let p = project(&[("Cargo.toml", CARGO_TOML), ("go.mod", "module x\n")]);
    p.ralph(&["init", "--no-detect"]).ok(CREATED);
    assert_eq!(p.read("config/ralph.yaml"), SHIPPED);
    let json = p.ralph(&["init", "--no-detect", "--json"]).success().json();
    assert_eq!(json["detected"], serde_json::json!([]));
    assert_eq!(json["checks_written"], false);
}

#[test]
fn init_reports_the_checks_in_json() {
    let p = project(&[("go.mod", "module x\n")]);
    let json = p.ralph(&["init", "--json"]).success().json();
    assert_eq!(
        json["detected"],
        serde_json::json!([
            {"command": "go test ./...", "source": "go.mod", "lists": ["task", "run"]},
            {"command": "go vet ./...", "source": "go.mod", "lists": ["run"]},
        ])
    );
    assert_eq!(json["checks_written"], true);
    assert!(
        p.read("config/ralph.yaml")
            .contains("    - \"go vet ./...\"  # go.mod\n")
    );
}

#[test]
fn init_keeps_existing_settings_and_says_how_to_write_the_checks() {
    let mine = "max_iterations: 3\nverify:\n  task: [\"make lint\"]\n";
    let p = project(&[("go.mod", "module x\n"), ("config/ralph.yaml", mine)]);
    let run = p.ralph(&["init"]).success();
    assert!(
        run.stdout.ends_with(
            "kept config/ralph.yaml (it exists; --force replaces it)
added to .gitignore: .ralph/, ralph.log, .stop
found `go test ./...` (go.mod): verify.task, verify.run
found `go vet ./...` (go.mod): verify.run
"
        ),
        "{run:?}"
    );
    assert_eq!(
        run.stderr,
        "note: config/ralph.yaml exists, so the checks found were not written; `ralph init --detect --write` writes them\n"
    );
    assert_eq!(p.read("config/ralph.yaml"), mine);
    // Settings that already have the checks get no note.
    p.ralph(&["init", "--detect", "--write"]).success();
    let again = p.ralph(&["init"]).success();
    assert_eq!(again.stderr, "");
    // --force replaces the settings, with the checks.
    p.ralph(&["init", "--force"]).success();
    assert_eq!(
        p.read("config/ralph.yaml"),
        settings(
            &[r#""go test ./..."  # go.mod"#],
            &[
                r#""go test ./..."  # go.mod"#,
                r#""go vet ./..."  # go.mod"#
            ]
        )
    );
}

#[test]
fn detect_reports_and_writes_nothing() {
    let p = project(&[("Cargo.toml", CARGO_TOML)]);
    // Before init: nothing is created.
    p.ralph(&["init", "--detect"])
        .ok("found `cargo test` (Cargo.toml): verify.task, verify.run
config/ralph.yaml does not exist yet; `ralph init` writes it with the checks found
");
    assert!(!p.path().join("config").exists());
    assert!(!p.path().join("working.md").exists());
    assert!(!p.path().join(".gitignore").exists());

    p.ralph(&["init", "--no-detect"]).success();
    p.ralph(&["init", "--detect"])
        .ok("found `cargo test` (Cargo.toml): verify.task, verify.run
config/ralph.yaml has verify.task: []
config/ralph.yaml has verify.run: []
`ralph init --detect --write` writes these checks into config/ralph.yaml
");
    assert_eq!(p.read("config/ralph.yaml"), SHIPPED);
    let json = p.ralph(&["init", "--detect", "--json"]).success().json();
    assert_eq!(
        json,
        serde_json::json!({
            "detected": [{"command": "cargo test", "source": "Cargo.toml", "lists": ["task", "run"]}],
            "configured": {"task": [], "run": []},
            "up_to_date": false,
            "written": false,
        })
    );

    p.ralph(&["init", "--detect", "--write"]).ok(
        "found `cargo test` (Cargo.toml): verify.task, verify.run
config/ralph.yaml has verify.task: []
config/ralph.yaml has verify.run: []
wrote these checks into verify.task and verify.run of config/ralph.yaml
",
    );
    let written = settings(
        &[r#""cargo test"  # Cargo.toml"#],
        &[r#""cargo test"  # Cargo.toml"#],
    );
    assert_eq!(p.read("config/ralph.yaml"), written);
    p.ralph(&["init", "--detect", "--write"]).ok(
        "found `cargo test` (Cargo.toml): verify.task, verify.run
config/ralph.yaml has verify.task: [\"cargo test\"]
config/ralph.yaml has verify.run: [\"cargo test\"]
config/ralph.yaml has these checks already
",
    );
    assert_eq!(p.read("config/ralph.yaml"), written);
}

#[test]
fn detect_write_keeps_every_other_byte_of_edited_settings() {
    let mine = "# My settings: keep this.
agent:
  preset: codex   # we use codex

max_iterations: 7
verify:
    # per task
    task:
    - \"npm run old\"   # retired
    - make lint
    # run: once at the end
    run: [\"echo 'a: b' # c\"]  # a trailing note
git:
  push: on_exit
";
    let p = project(&[
        (
            "package.json",
            r#"{"scripts": {"test": "node --test", "lint": "eslint \"src/**\" # all"}}"#,
        ),
        ("config/ralph.yaml", mine),
    ]);
    p.ralph(&["init", "--detect", "--write"]).success();
    assert_eq!(
        p.read("config/ralph.yaml"),
        "# My settings: keep this.
agent:
  preset: codex   # we use codex

max_iterations: 7
verify:
    # per task
    task:
      - \"npm test\"  # package.json
    # run: once at the end
    run:  # a trailing note
      - \"npm test\"  # package.json
      - \"npm run lint\"  # package.json
git:
  push: on_exit
"
    );
}

#[test]
fn detect_write_keeps_crlf_line_endings_and_a_byte_order_mark() {
    let mine =
        "\u{feff}max_iterations: 9\r\nverify:\r\n  task: []\r\n  run: []\r\ndelivery: local\r\n";
    let p = project(&[("go.mod", "module x\n"), ("config/ralph.yaml", mine)]);
    p.ralph(&["init", "--detect", "--write"]).success();
    assert_eq!(
        p.read("config/ralph.yaml"),
        "\u{feff}max_iterations: 9\r\nverify:\r\n  task:\r\n    - \"go test ./...\"  # go.mod\r\n  run:\r\n    - \"go test ./...\"  # go.mod\r\n    - \"go vet ./...\"  # go.mod\r\ndelivery: local\r\n"
    );
}

#[test]
fn detect_write_adds_a_verify_section_when_there_is_none() {
    let p = project(&[
        ("justfile", "test:\n    ./t\n"),
        ("config/ralph.yaml", "max_iterations: 9\n"),
    ]);
    p.ralph(&["init", "--detect", "--write"]).success();
    assert_eq!(
        p.read("config/ralph.yaml"),
        "max_iterations: 9\n\nverify:\n  task:\n    - \"just test\"  # justfile\n  run:\n    - \"just test\"  # justfile\n"
    );
}

#[test]
fn detect_write_refuses_an_unusual_layout_and_writes_nothing() {
    let mine = "verify: {task: [\"make lint\"], run: []}\n";
    let p = project(&[("go.mod", "module x\n"), ("config/ralph.yaml", mine)]);
    p.ralph(&["init", "--detect", "--write"]).fails(
        30,
        "error: config/ralph.yaml: its verify section is laid out in a way ralph cannot edit safely, so nothing was written; set verify.task and verify.run there by hand\n",
    );
    assert_eq!(p.read("config/ralph.yaml"), mine);
}

#[test]
fn detect_write_without_settings_or_checks_writes_nothing() {
    let p = project(&[("go.mod", "module x\n")]);
    p.ralph(&["init", "--detect", "--write"]).fails(
        30,
        "error: config/ralph.yaml does not exist; `ralph init` writes it with the checks found\n",
    );
    assert!(!p.path().join("config").exists());

    let mine = "verify:\n  task: [\"./test.sh\"]\n";
    let p = project(&[("config/ralph.yaml", mine)]);
    p.ralph(&["init", "--detect", "--write"])
        .ok("no checks found for verify.task and verify.run
config/ralph.yaml has verify.task: [\"./test.sh\"]
config/ralph.yaml has verify.run: []
nothing written: no checks found
");
    assert_eq!(p.read("config/ralph.yaml"), mine);
}

#[test]
fn detect_refuses_settings_that_do_not_parse() {
    let p = project(&[
        ("go.mod", "module x\n"),
        ("config/ralph.yaml", "verify:\n  tasks: []\n"),
    ]);
    let run = p.ralph(&["init", "--detect"]);
    assert_eq!((run.code, run.stdout.as_str()), (30, ""), "{run:?}");
    assert!(
        run.stderr.starts_with("error: config/ralph.yaml:") && run.stderr.contains("`tasks`"),
        "{run:?}"
    );
}

#[test]
fn detect_flags_that_do_not_go_together_are_refused() {
    let p = project(&[("go.mod", "module x\n")]);
    for (args, message) in [
        (
            &["init", "--write"][..],
            "error: the following required arguments were not provided:\n  --detect\n",
        ),
        (
            &["init", "--detect", "--force"][..],
            "error: the argument '--detect' cannot be used with '--force'\n",
        ),
        (
            &["init", "--detect", "--agent", "codex"][..],
            "error: the argument '--detect' cannot be used with '--agent <PRESET>'\n",
        ),
        (
            &["init", "--no-detect", "--detect"][..],
            "error: the argument '--no-detect' cannot be used with '--detect'\n",
        ),
    ] {
        let run = p.ralph(args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert!(run.stderr.starts_with(message), "{args:?}: {run:?}");
    }
    assert!(!p.path().join("config").exists());
}

#[test]
fn init_help_names_the_files_looked_at_and_where_the_rules_are() {
    let help = TestProject::new().ralph(&["init", "--help"]).success();
    assert!(
        help.stdout.ends_with(
            "Checks: init looks at the project's files (Cargo.toml, package.json, pyproject.toml, go.mod, a Makefile, a justfile, CI files) for the commands its developers run, and writes them into a new config/ralph.yaml: tests into verify.task (before each merge), every check into verify.run (once, when the queue drains). ralph's docs/CONFIG.md, \"Checks found at init\", has the rules.\n"
        ),
        "{help:#?}"
    );
}
