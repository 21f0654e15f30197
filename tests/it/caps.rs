//! Spending caps (`max_task_cost_usd`, `max_run_cost_usd`,
//! `max_task_tokens`, `max_run_tokens`), counted from what a scripted
//! agent reports in its receipts: a JSON `result` line with its cost and
//! tokens, as Claude Code prints it.

use crate::support::{TestProject, wait_for, wait_for_file};

fn pending(id: &str) -> String {
    format!(r#"{{"id":"{id}","title":"task {id}","status":"pending","leaf":true}}"#)
}

/// Agent helpers: `report COST TOKENS` prints the receipt's line
/// (tokens: input, output is 0); `finish_task` does the task's work.
const REPORT: &str = r#"report() { echo "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"ok\",\"total_cost_usd\":$1,\"usage\":{\"input_tokens\":$2,\"output_tokens\":0}}"; }
finish_task() { work "$RALPH_TASK_ID-$RALPH_TASK_ITERATION.txt" x; ralph task complete "$RALPH_TASK_ID" > /dev/null; }
"#;

/// A project with tasks `ids`, `settings` as `config/ralph.yaml` (after
/// a notify.command that records each event's kind) and the agent `body`.
fn project(ids: &[&str], settings: &str, body: &str) -> TestProject {
    let mut project = TestProject::new();
    for id in ids {
        project = project.task(&pending(id));
    }
    let project = project.git_init().agent(&format!("{REPORT}{body}"));
    let notices = project.aux().join("rec/notices");
    let config = format!(
        "{settings}notify:\n  command: 'echo \"$RALPH_EVENT $RALPH_MESSAGE\" >> {}'\n",
        notices.display()
    );
    let project = project.file("config/ralph.yaml", config);
    project.git(&["commit", "-q", "-am", "caps"]);
    project
}

fn task<'a>(tasks: &'a [serde_json::Value], id: &str) -> &'a serde_json::Value {
    tasks.iter().find(|t| t["id"] == id).unwrap()
}

#[test]
fn a_task_at_its_cost_cap_is_blocked_with_the_reason_and_the_run_goes_on() {
    // A never finishes and costs $0.60 an iteration; B finishes at once.
    let p = project(
        &["A", "B"],
        "max_task_cost_usd: 1.00\n",
        "case \"$RALPH_TASK_ID\" in\nA) work \"A-$RALPH_TASK_ITERATION.txt\" x; report 0.6 1000 ;;\n*) finish_task; report 0.6 1000 ;;\nesac\n",
    );
    let run = p.run(&[]);
    assert_eq!(run.code, 10, "{run:#?}");
    assert_eq!(p.calls(), ["1 A 1 none", "2 A 2 none", "3 B 1 none"]);
    let tasks = p.json_lines("tasks.jsonl");
    let a = task(&tasks, "A");
    assert_eq!(a["status"], "blocked");
    assert_eq!(
        a["blocked_reason"],
        "reached max_task_cost_usd ($1.00): $1.20 spent over 2 iterations"
    );
    assert!(p.read("tasks-done.jsonl").contains(r#""id":"B""#));
    let notices = p.rec("notices");
    assert!(
        notices.contains(
            "task_blocked A blocked: reached max_task_cost_usd ($1.00): $1.20 spent over 2 iterations\n"
        ),
        "{notices}"
    );
    // What it spent is kept with the task, across runs.
    let state = p.json(".ralph/state.json");
    assert_eq!(state["tasks"]["A"]["cost_usd"], 1.2);
    assert_eq!(state["tasks"]["A"]["tokens"], 2000);
}

#[test]
fn a_run_at_its_cost_cap_takes_no_more_work_and_says_so() {
    let p = project(
        &["A", "B", "C"],
        "max_run_cost_usd: 1\n",
        "finish_task; report 0.6 1000\n",
    );
    let run = p.run(&[]);
    assert_eq!(run.code, 10, "{run:#?}");
    assert_eq!(p.calls(), ["1 A 1 none", "2 B 1 none"]);
    let result = p.json(".ralph/result.json");
    assert_eq!(result["status"], "budget_exhausted");
    assert_eq!(
        result["reason"],
        "reached max_run_cost_usd ($1.00): $1.20 spent with 1 task left"
    );
    let notices = p.rec("notices");
    assert!(
        notices.contains(
            "cap_reached reached max_run_cost_usd ($1.00): $1.20 spent with 1 task left\n"
        ),
        "{notices}"
    );
    assert!(notices.ends_with("run_ended ralph run budget_exhausted: reached max_run_cost_usd ($1.00): $1.20 spent with 1 task left\n"), "{notices}");
    // A new run has a new count.
    let run = p.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(p.calls().len(), 3);
}

#[test]
fn token_caps_count_input_and_output_tokens() {
    // Tokens and no cost, as a subscription reports them.
    let p = project(
        &["A", "B", "C"],
        "max_task_tokens: 5000\nmax_run_tokens: 9000\n",
        "case \"$RALPH_TASK_ID\" in\nA) work \"A-$RALPH_TASK_ITERATION.txt\" x; echo '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"ok\",\"usage\":{\"input_tokens\":2000,\"output_tokens\":500}}' ;;\n*) finish_task; echo '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"ok\",\"usage\":{\"input_tokens\":4000,\"output_tokens\":1000}}' ;;\nesac\n",
    );
    let run = p.run(&[]);
    assert_eq!(run.code, 10, "{run:#?}");
    // A: 2,500 a time, blocked at 5,000; B: 5,000 more, and the run at
    // 10,000 takes no more: C waits.
    assert_eq!(p.calls(), ["1 A 1 none", "2 A 2 none", "3 B 1 none"]);
    let tasks = p.json_lines("tasks.jsonl");
    assert_eq!(
        task(&tasks, "A")["blocked_reason"],
        "reached max_task_tokens (5000): 5000 tokens spent over 2 iterations"
    );
    let result = p.json(".ralph/result.json");
    assert_eq!(
        result["reason"],
        "reached max_run_tokens (9000): 10000 tokens spent with 2 tasks left"
    );
}

#[test]
fn an_agent_that_reports_no_spending_is_not_capped() {
    let p = project(
        &["A", "B"],
        "max_task_cost_usd: 0.01\nmax_run_tokens: 1\n",
        "finish_task\n",
    );
    let run = p.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(p.calls().len(), 2);
}

#[test]
fn a_polling_run_at_its_cap_waits_until_a_person_raises_it() {
    let p = project(
        &["A", "B"],
        "max_run_cost_usd: 0.5\n",
        "finish_task; report 0.6 1000\n",
    );
    let child = p
        .run_command(&["--poll", "1s"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A is done, and the cap stops B.
    let idle = "idle: reached max_run_cost_usd ($0.50): $0.60 spent with 1 task left; looking again every 1s";
    for _ in 0..600 {
        if p.read_or_empty("ralph.log").contains(idle) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        p.read("ralph.log").contains(idle),
        "{}",
        p.read("ralph.log")
    );
    assert_eq!(p.calls(), ["1 A 1 none"]);
    // A person raises the cap: B is worked at the next look.
    let config = p
        .read("config/ralph.yaml")
        .replace("max_run_cost_usd: 0.5", "max_run_cost_usd: 5");
    std::fs::write(p.path().join("config/ralph.yaml"), config).unwrap();
    wait_for_file(&p.path().join("B-1.txt"));
    std::fs::write(p.path().join(".stop"), "").unwrap();
    let run = wait_for(child, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(p.calls(), ["1 A 1 none", "1 B 1 none"]);
    // The change is said once, with what it does and does not do.
    assert_eq!(
        p.read("ralph.log")
            .matches(" config/ralph.yaml changed: its spending caps apply from this look on; the other settings when the run starts again (`ralph stop`, then `ralph run --poll`)\n")
            .count(),
        1
    );
    let notices = p.rec("notices");
    assert!(notices.starts_with("task_merged A done"), "{notices}");
    assert!(notices.contains("\ncap_reached reached max_run_cost_usd ($0.50): $0.60 spent with 1 task left\nrun_idle ralph is idle: reached max_run_cost_usd"), "{notices}");
    assert!(notices.contains("\ntask_merged B done"), "{notices}");
}

#[test]
fn a_polling_run_at_its_cap_goes_on_the_next_utc_day() {
    let p = project(
        &["A", "B"],
        "max_run_cost_usd: 0.5\n",
        "finish_task; report 0.6 1000\n",
    );
    let clock = p.aux().join("clock");
    std::fs::write(&clock, "2026-11-27T23:59:00Z\n").unwrap();
    let child = p
        .run_command(&["--poll", "1s"])
        .env("RALPH_TEST_CLOCK", &clock)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    for _ in 0..600 {
        if p.read_or_empty("ralph.log")
            .contains("idle: reached max_run_cost_usd")
        {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(p.calls(), ["1 A 1 none"]);
    std::fs::write(&clock, "2026-11-28T00:00:01Z\n").unwrap();
    wait_for_file(&p.path().join("B-1.txt"));
    std::fs::write(p.path().join(".stop"), "").unwrap();
    let run = wait_for(child, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(p.calls(), ["1 A 1 none", "1 B 1 none"]);
}

#[test]
fn a_cap_that_is_not_a_positive_amount_is_refused_with_its_line() {
    let p = TestProject::new().git_init();
    let config = p
        .read("config/ralph.yaml")
        .replace("max_run_cost_usd: null", "max_run_cost_usd: -2");
    let line = config
        .lines()
        .position(|l| l == "max_run_cost_usd: -2")
        .unwrap()
        + 1;
    let p = p.file("config/ralph.yaml", config);
    let run = p.ralph(&["run", "--dry-run"]);
    assert_eq!(run.code, 30, "{run:#?}");
    assert!(
        run.stderr.starts_with(&format!(
            "error: config/ralph.yaml:{line}: max_run_cost_usd: -2 is not a cap; write an amount above 0, or null for none\n"
        )),
        "{run:#?}"
    );
}

#[test]
fn a_pool_counts_its_workers_spending_as_one_run() {
    // A and B end together (each waits until both started, at most 10
    // s): the spending of both is counted before either worker is free.
    let p = project(
        &["A", "B", "C", "D"],
        "max_run_cost_usd: 1\n",
        "touch \"$REC/../started-$RALPH_TASK_ID\"\n\
         n=0; while [ \"$(ls \"$REC/..\" | grep -c '^started-')\" -lt 2 ] && [ $n -lt 1000 ]; do sleep 0.01; n=$((n+1)); done\n\
         finish_task; report 0.6 1000\n",
    );
    let run = p.run(&["--workers", "2"]);
    assert_eq!(run.code, 10, "{run:#?}");
    // Two at once spend $1.20; no worker is handed another task.
    assert_eq!(p.calls().len(), 2, "{:?}", p.calls());
    let result = p.json(".ralph/result.json");
    assert_eq!(
        result["reason"],
        "reached max_run_cost_usd ($1.00): $1.20 spent with 2 tasks left"
    );
}
