//! Wall-clock budgets (`max_task_minutes`, `max_run_minutes`) measured
//! with the test clock: `RALPH_TEST_CLOCK` names a file outside the project
//! whose time the scripted agent moves on. Nothing sleeps.

use std::process::Command;

use crate::support::{FINISH, TestProject, by_iteration, finish};

/// When the clock starts.
const T0: &str = "2026-01-01T00:00:00Z";

/// Agent helpers: `set_clock TIME` moves the test clock (atomically), and
/// `step` commits a file so the iteration is progress, not a stall.
/// (`$CLOCK` is set before them: ralph passes no `RALPH_*` variable of its
/// own environment on to the agent.)
const CLOCK: &str = r#"set_clock() { printf '%s\n' "$1" > "$CLOCK.tmp" && mv "$CLOCK.tmp" "$CLOCK"; }
step() { work "$RALPH_TASK_ID-$RALPH_TASK_ITERATION.txt" x; }
"#;

fn pending(id: &str) -> String {
    format!(r#"{{"id":"{id}","title":"task {id}","status":"pending","leaf":true}}"#)
}

/// A project with tasks `ids`, `settings` as `config/ralph.yaml`, the test
/// clock at [`T0`] and the agent `body` (after the clock helpers).
fn project(ids: &[&str], settings: &str, body: &str) -> TestProject {
    let mut project = TestProject::new().file("config/ralph.yaml", settings);
    for id in ids {
        project = project.task(&pending(id));
    }
    let project = project.git_init();
    let clock = project.aux().join("clock");
    std::fs::write(&clock, format!("{T0}\n")).unwrap();
    project.agent(&format!("CLOCK='{}'\n{CLOCK}{body}", clock.display()))
}

/// `ralph run ARGS` with the test clock.
fn run_command(project: &TestProject, args: &[&str]) -> Command {
    let mut command = project.run_command(args);
    command.env("RALPH_TEST_CLOCK", project.aux().join("clock"));
    command
}

fn task<'a>(tasks: &'a [serde_json::Value], id: &str) -> &'a serde_json::Value {
    tasks.iter().find(|t| t["id"] == id).unwrap()
}

#[test]
fn a_task_past_max_task_minutes_is_blocked_and_the_run_goes_on() {
    let project = project(
        &["A", "B"],
        "max_task_minutes: 10\n",
        &by_iteration(
            "RALPH_TASK_ID",
            &format!("A) set_clock 2026-01-01T00:11:00Z; step ;;\n{FINISH}"),
        ),
    );
    let run = finish(run_command(&project, &[]), 60);
    assert_eq!(run.code, 10, "{run:#?}");
    assert_eq!(project.calls(), ["1 A 1 none", "2 B 1 none"]);
    let tasks = project.json_lines("tasks.jsonl");
    assert_eq!(task(&tasks, "A")["status"], "blocked");
    assert_eq!(
        task(&tasks, "A")["blocked_reason"],
        "spent max_task_minutes (10) without finishing (11 minutes over 1 iteration)"
    );
    let done = project.json_lines("tasks-done.jsonl");
    assert_eq!(done.len(), 1);
    assert_eq!(done[0]["id"], "B");
    let result = project.json(".ralph/result.json");
    assert_eq!(result["status"], "blocked");
    assert_eq!(
        project.json(".ralph/state.json")["tasks"]["A"]["seconds"],
        660
    );
}

#[test]
fn a_tasks_time_adds_up_across_runs() {
    let project = project(
        &["A", "B"],
        "max_task_minutes: 10\n",
        &by_iteration(
            "RALPH_TASK_ID",
            "A) case $RALPH_TASK_ITERATION in 1) set_clock 2026-01-01T00:06:00Z ;; *) set_clock 2026-01-01T00:12:00Z ;; esac; step ;;\n*) work B.txt x; ralph task complete B > /dev/null ;;",
        ),
    );
    let first = finish(run_command(&project, &["--max-iterations", "1"]), 60);
    assert_eq!(first.code, 10, "{first:#?}");
    assert_eq!(
        project.json(".ralph/result.json")["status"],
        "budget_exhausted"
    );
    assert_eq!(
        project.json(".ralph/state.json")["tasks"]["A"]["seconds"],
        360
    );
    assert_eq!(
        project.json_lines("tasks.jsonl")[0]["status"],
        "active",
        "6 of 10 minutes spent: A goes on"
    );
    // The second run starts at 00:06: A's second iteration takes 6 more
    // minutes, 12 in all, and A is blocked before a third.
    let second = finish(run_command(&project, &[]), 60);
    assert_eq!(second.code, 10, "{second:#?}");
    assert_eq!(project.calls(), ["1 A 1 none", "1 A 2 none", "2 B 1 none"]);
    let tasks = project.json_lines("tasks.jsonl");
    assert_eq!(
        task(&tasks, "A")["blocked_reason"],
        "spent max_task_minutes (10) without finishing (12 minutes over 2 iterations)"
    );
    assert_eq!(project.json_lines("tasks-done.jsonl")[0]["id"], "B");
}

#[test]
fn max_run_minutes_ends_the_run_after_the_iteration_that_reaches_it() {
    let project = project(
        &["A", "B"],
        "",
        &by_iteration(
            "RALPH_ITERATION",
            &format!(
                "1) set_clock 2026-01-01T00:04:00Z; step ;;\n2) set_clock 2026-01-01T00:10:00Z; work A.txt x; ralph task complete A > /dev/null ;;\n{FINISH}"
            ),
        ),
    );
    let run = finish(run_command(&project, &["--max-run-minutes", "10"]), 60);
    assert_eq!(run.code, 10, "{run:#?}");
    // The iteration that reached the budget finished its task: merged.
    assert_eq!(project.calls(), ["1 A 1 none", "2 A 2 none"]);
    assert_eq!(project.json_lines("tasks-done.jsonl")[0]["id"], "A");
    let result = project.json(".ralph/result.json");
    assert_eq!(result["status"], "budget_exhausted");
    assert_eq!(
        result["reason"],
        "max_run_minutes (10) spent with 1 task left"
    );
    assert!(
        run.stderr
            .contains("ralph: budget_exhausted — max_run_minutes (10) spent with 1 task left\n"),
        "{run:#?}"
    );
    assert_eq!(project.json_lines("tasks.jsonl")[0]["status"], "pending");
}

#[test]
fn a_budget_that_is_not_positive_minutes_is_refused_naming_where() {
    let project = project(&["A"], "max_iterations: 5\nmax_task_minutes: 0\n", "step\n");
    finish(run_command(&project, &[]), 60).fails(
        30,
        "error: config/ralph.yaml:2: max_task_minutes: 0 is not a positive whole number of minutes; write one like 30, or null for no limit\nhint: fix config/ralph.yaml; docs/CONFIG.md lists every key and its values\n",
    );
    std::fs::write(project.path().join("config/ralph.yaml"), "").unwrap();
    let mut command = run_command(&project, &[]);
    command.env("RALPH_MAX_RUN_MINUTES", "30m");
    finish(command, 60).fails(
        30,
        "error: RALPH_MAX_RUN_MINUTES: \"30m\" is not a positive whole number of minutes; write one like 30, or null for no limit\nhint: fix or unset RALPH_MAX_RUN_MINUTES\n",
    );
    assert!(project.calls().is_empty());
}

/// With `--workers 2`, every agent moves the clock past the run budget:
/// each worker stops after its iteration and no third task starts.
#[test]
fn with_workers_the_run_budget_stops_every_worker_after_its_iteration() {
    let project = project(
        &["A", "B", "C"],
        "max_run_minutes: 10\n",
        "set_clock 2026-01-01T00:11:00Z; step\n",
    );
    let run = finish(run_command(&project, &["--workers", "2"]), 120);
    assert_eq!(run.code, 10, "{run:#?}");
    let calls = project.calls();
    // The second worker may see the clock moved before its first iteration.
    assert!(
        (1..=2).contains(&calls.len()) && calls.iter().all(|c| !c.contains(" C ")),
        "{calls:?}"
    );
    let result = project.json(".ralph/result.json");
    assert_eq!(result["status"], "budget_exhausted");
    assert_eq!(
        result["reason"],
        "max_run_minutes (10) spent with 3 tasks left"
    );
}

/// With `--workers 2`, a task past `max_task_minutes` is blocked in its
/// worktree while the other worker's task merges.
#[test]
fn with_workers_a_task_past_its_minutes_is_blocked() {
    let project = project(
        &["A", "B"],
        "max_task_minutes: 10\n",
        &by_iteration(
            "RALPH_TASK_ID",
            &format!("A) set_clock 2026-01-01T00:11:00Z; step ;;\n{FINISH}"),
        ),
    );
    let run = finish(run_command(&project, &["--workers", "2"]), 120);
    assert_eq!(run.code, 10, "{run:#?}");
    let tasks = project.json_lines("tasks.jsonl");
    assert_eq!(
        task(&tasks, "A")["blocked_reason"],
        "spent max_task_minutes (10) without finishing (11 minutes over 1 iteration)"
    );
    assert_eq!(project.json_lines("tasks-done.jsonl")[0]["id"], "B");
    assert_eq!(
        project.calls().iter().filter(|c| c.contains(" A ")).count(),
        1
    );
}
