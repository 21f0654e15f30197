//! One loop: the same scripted scenario run by the worker alone in the
//! project's checkout and by a pool of one (`--workers 1`, in a worktree)
//! records the same events and leaves the same history on `main`.

use crate::support::TestProject;

/// The scenario, by task and the task's iteration:
/// - A fails once (exit 3), then the debugger finishes it;
/// - B is split in two, each part finished;
/// - C is marked ready, and the reviewer completes it;
/// - D fails its own check once, then passes;
/// - E is blocked, and F's agent sets it going again (`ralph task start`),
///   so the queue drains clear;
/// - the final review passes.
const AGENT: &str = r#"case "$RALPH_TASK_ID-$RALPH_TASK_ITERATION" in
A-1) echo "compiler exploded"; exit 3 ;;
B-1) work B.txt split; ralph task split B "part one" "part two" > /dev/null ;;
C-1) work C.txt ready; ralph task ready C > /dev/null ;;
D-2) work D-fixed.txt fixed; ralph task complete D > /dev/null ;;
E-1) ralph task block E --reason "needs a person" > /dev/null ;;
F-1) work F.txt done; ralph task start E > /dev/null; ralph task complete F > /dev/null ;;
*) work "$RALPH_TASK_ID.txt" "$RALPH_ROLE"; ralph task complete "$RALPH_TASK_ID" > /dev/null ;;
esac
"#;

fn scenario() -> TestProject {
    TestProject::new()
        .file("config/ralph.yaml", "final_review: true\n")
        .task(r#"{"id":"A","title":"fails once","status":"pending","leaf":true}"#)
        .task(r#"{"id":"B","title":"is split","status":"pending","leaf":true}"#)
        .task(r#"{"id":"C","title":"is reviewed","status":"pending","leaf":true}"#)
        .task(r#"{"id":"D","title":"fails its check","status":"pending","leaf":true,"verify":["test -f D-fixed.txt"]}"#)
        .task(r#"{"id":"E","title":"is blocked","status":"pending","leaf":true}"#)
        .task(r#"{"id":"F","title":"unblocks E","status":"pending","leaf":true}"#)
        .git_init()
        .agent(AGENT)
}

/// Each event as `phase/status task class`, in order.
fn events(project: &TestProject) -> Vec<String> {
    project
        .json_lines(".ralph/events.ndjson")
        .iter()
        .map(|event| {
            format!(
                "{}/{} {} {}",
                event["phase"].as_str().unwrap_or_default(),
                event["status"].as_str().unwrap_or_default(),
                event["task_id"].as_str().unwrap_or("-"),
                event["class"].as_str().unwrap_or("-"),
            )
        })
        .collect()
}

/// Each event whole, times and ids aside: when (`timestamp`, `until`, a
/// duration, a time in `detail`), the run's id, the pool's worker
/// number, and the test's own folders.
fn every_field(project: &TestProject) -> Vec<serde_json::Value> {
    let (root, aux) = (
        project.path().to_string_lossy(),
        project.aux().to_string_lossy(),
    );
    let times = regex::Regex::new(r"\d+\.\ds|\d{4}-\d\d-\d\dT[\d:]+Z").expect("a regex");
    let mut events = project.json_lines(".ralph/events.ndjson");
    for event in &mut events {
        let fields = event.as_object_mut().expect("an event is an object");
        fields.retain(|name, _| {
            let when = matches!(name.as_str(), "timestamp" | "until") || name.ends_with("_ms");
            !when && !matches!(name.as_str(), "run_id" | "worker")
        });
        for value in fields.values_mut() {
            if let Some(text) = value.as_str() {
                let text = text
                    .replace(root.as_ref(), "<project>")
                    .replace(aux.as_ref(), "<aux>");
                *value = times.replace_all(&text, "<time>").into_owned().into();
            }
        }
    }
    events
}

/// `main`'s history: each commit's message and the files it changed.
fn history(project: &TestProject) -> String {
    project.git(&["log", "--format=%B", "--name-status", "main"])
}

/// Who worked what, in order: `task task_iteration role`.
fn calls(project: &TestProject) -> Vec<String> {
    project
        .calls()
        .iter()
        .map(|call| call.split_once(' ').map_or("", |(_, rest)| rest).to_owned())
        .collect()
}

#[test]
fn the_worker_alone_and_a_pool_of_one_do_the_same() {
    let alone = scenario();
    let run = alone.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    let pooled = scenario();
    let run = pooled.run(&["--workers", "1"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(pooled.git(&["worktree", "list"]).lines().count(), 1);

    assert_eq!(
        calls(&alone),
        [
            "A 1 none",
            "A 2 debugger",
            "B 1 none",
            "B.1 1 none",
            "B.2 1 none",
            "C 1 none",
            "C 2 reviewer",
            "D 1 none",
            "D 2 debugger",
            "E 1 none",
            "F 1 documenter",
            "E 2 none",
            "G 1 final-reviewer",
        ]
    );
    assert_eq!(calls(&pooled), calls(&alone));
    let events_alone = events(&alone);
    for expected in [
        "iteration/exit A exit",
        "split/ok B -",
        "finish/verify_failed D -",
        "final_review/added G -",
        "merge/ok G -",
        "run/drained - -",
    ] {
        assert!(
            events_alone.iter().any(|event| event == expected),
            "{expected} in {events_alone:#?}"
        );
    }
    assert_eq!(events(&pooled), events_alone);
    let (alone_events, pooled_events) = (every_field(&alone), every_field(&pooled));
    // A claim comes between two iterations: no role, even after a
    // debugger's turn on the task before.
    let claims = alone_events
        .iter()
        .filter(|event| event["phase"] == "claim");
    for claim in claims {
        assert_eq!(claim["role"], serde_json::Value::Null, "{claim}");
    }
    let differ: Vec<String> = (alone_events.iter().zip(&pooled_events).enumerate())
        .filter(|(_, (alone, pooled))| alone != pooled)
        .map(|(at, (alone, pooled))| format!("event {at}:\n  alone:  {alone}\n  pooled: {pooled}"))
        .collect();
    assert!(
        differ.is_empty(),
        "events that differ, field by field:\n{}",
        differ.join("\n")
    );
    assert_eq!(pooled_events.len(), alone_events.len());
    assert_eq!(history(&pooled), history(&alone));
    assert_eq!(
        pooled.json(".ralph/result.json")["failures"],
        alone.json(".ralph/result.json")["failures"]
    );
}
