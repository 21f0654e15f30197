//! No silent trust in the agent's word: a run without checks says so, each
//! merge records whether checks passed on it, and the obvious non-checks
//! are refused.

use crate::support::{FINISH, TestProject, by_iteration};

const WARNING: &str = "warning: verify.task is empty and 1 open task has no verify of its own: the agent's word alone decides when it is done; add the project's test command to verify.task in config/ralph.yaml (`ralph init --detect` finds the ones it already has)\n";

/// Task A without checks of its own, task B with one; `config` as
/// `config/ralph.yaml` when given.
fn project(config: Option<&str>) -> TestProject {
    let project = TestProject::new();
    let project = match config {
        Some(text) => project.file("config/ralph.yaml", text),
        None => project,
    };
    project
        .task(r#"{"id":"A","title":"one","status":"pending","leaf":true}"#)
        .task(
            r#"{"id":"B","title":"two","status":"pending","leaf":true,"verify":["test -f B.txt"]}"#,
        )
        .git_init()
        .agent(&by_iteration("RALPH_ITERATION", FINISH))
}

/// Each merged task's `verified` in result.json.
fn verified(project: &TestProject) -> Vec<String> {
    let result = project.json(".ralph/result.json");
    result["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            format!(
                "{} {} {}",
                o["task"].as_str().unwrap(),
                o["outcome"].as_str().unwrap(),
                o["verified"]
            )
        })
        .collect()
}

#[test]
fn a_run_without_checks_says_so_once_and_marks_each_merge() {
    let project = project(None);
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        run.stderr.matches("verify.task is empty").count(),
        1,
        "{run:#?}"
    );
    assert!(run.stderr.contains(WARNING), "{run:#?}");
    assert_eq!(verified(&project), ["A merged false", "B merged true"]);
    assert!(
        run.stderr
            .contains("\n  tasks: 2 done (1 unverified: A), 0 blocked, 0 left · "),
        "{run:#?}"
    );
    // The merge events say it too.
    let merges: Vec<String> = project
        .json_lines(".ralph/events.ndjson")
        .iter()
        .filter(|e| e["phase"] == "merge")
        .map(|e| format!("{} {}", e["task_id"].as_str().unwrap(), e["verified"]))
        .collect();
    assert_eq!(merges, ["A false", "B true"]);
}

#[test]
fn a_run_with_checks_is_verified_throughout_and_says_nothing() {
    let project = project(Some("verify:\n  task:\n    - \"test -f tasks.jsonl\"\n"));
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(!run.stderr.contains("verify.task is empty"), "{run:#?}");
    assert!(!run.stderr.contains("unverified"), "{run:#?}");
    assert!(
        run.stderr.contains("\n  tasks: 2 done, 0 blocked"),
        "{run:#?}"
    );
    assert_eq!(verified(&project), ["A merged true", "B merged true"]);
}

#[test]
fn every_task_with_checks_of_its_own_needs_no_warning() {
    let project = TestProject::new()
        .task(
            r#"{"id":"B","title":"two","status":"pending","leaf":true,"verify":["test -f B.txt"]}"#,
        )
        .git_init()
        .agent(&by_iteration("RALPH_ITERATION", FINISH));
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(!run.stderr.contains("verify.task is empty"), "{run:#?}");
}

#[test]
fn the_obvious_non_checks_are_refused_naming_the_setting() {
    for (config, line, key, shown) in [
        ("verify:\n  task:\n    - \"true\"\n", 3, "task", "\"true\""),
        ("verify:\n  task: [\":\"]\n", 2, "task", "\":\""),
        (
            "verify:\n  task: []\n  run:\n    - cargo test\n    - exit 0\n",
            5,
            "run",
            "\"exit 0\"",
        ),
        ("verify:\n  run: [\"\"]\n", 2, "run", "\"\""),
    ] {
        let project = project(Some(config));
        let tasks = project.read("tasks.jsonl");
        for args in [&["run"][..], &["run", "--dry-run"]] {
            let run = project.ralph(args);
            assert_eq!(
                (run.code, run.stderr.as_str()),
                (
                    30,
                    format!(
                        "error: config/ralph.yaml:{line}: verify.{key}: {shown} always passes, so it checks nothing; remove it, or name a command that tests the project (for example `cargo test` or `npm test`)\nhint: fix config/ralph.yaml; docs/CONFIG.md lists every key and its values\n"
                    )
                    .as_str()
                ),
                "{config}"
            );
        }
        assert!(project.calls().is_empty());
        assert_eq!(project.read("tasks.jsonl"), tasks);
        assert!(!project.path().join(".ralph/state.json").exists());
    }
}
