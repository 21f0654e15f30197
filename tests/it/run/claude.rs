//! Failures read from a preset's output: a fake `claude` on PATH printing
//! what Claude Code prints when it is logged out or out of usage.

use super::result;
use crate::support::{TestProject, finish};

/// Runs `ralph run --agent claude` with `<aux>/bin` first on PATH.
fn run_claude(project: &TestProject) -> crate::support::Run {
    let mut command = project.ralph_command(&["run", "--agent", "claude"]);
    let path = format!(
        "{}:{}",
        project.aux().join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    command.env("PATH", path);
    finish(command, 60)
}

#[test]
fn a_logged_out_agent_stops_the_run_at_once() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"one","status":"pending","leaf":true}"#)
        .git_init();
    project.script(
        "bin/claude",
        r#"echo '{"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login"}'
exit 1
"#,
    );
    let run = run_claude(&project);
    assert_eq!(run.code, 20, "{run:#?}");
    assert_eq!(project.calls(), ["1 A 1 none"]);
    let result = result(&project);
    assert_eq!(result["status"], "failed");
    let reason = result["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("the agent is not authenticated: "),
        "{reason}"
    );
    assert!(run.stderr.contains(reason), "{run:#?}");
    assert_eq!(result["failures"], serde_json::json!({"auth": 1}));
    // Not the task's failure.
    let state = project.json(".ralph/state.json");
    assert_eq!(state["tasks"]["A"]["consecutive_failures"], 0);
    assert!(project.read("tasks.jsonl").contains(r#""status":"active""#));
}

#[test]
fn a_usage_limit_waits_and_retries_without_counting_against_the_task() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"one","status":"pending","leaf":true}"#)
        .git_init();
    project.script(
        "bin/claude",
        r#"if [ ! -e "$REC/limited" ]; then
  touch "$REC/limited"
  echo '{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|1767323045"}'
  exit 0
fi
work A.txt x
ralph task complete A > /dev/null
echo '{"type":"result","subtype":"success","is_error":false,"result":"done"}'
"#,
    );
    let run = run_claude(&project);
    assert_eq!(run.code, 0, "{run:#?}");
    let waited = run
        .stderr
        .lines()
        .find(|line| line.starts_with("usage limit: waiting "));
    assert!(
        waited.is_some_and(|line| line.ends_with(" before retrying")),
        "{run:#?}"
    );
    // The retry is no debugger iteration: the limit was not the task's
    // failure, and it cost no budget (the iteration is run again).
    assert_eq!(project.calls(), ["1 A 1 none", "1 A 1 none"]);
    let result = result(&project);
    assert_eq!(result["status"], "drained");
    assert_eq!(result["failures"], serde_json::json!({"usage_limit": 1}));
    let statuses: Vec<String> = super::phases(&project, "A");
    assert_eq!(
        statuses,
        [
            "claim/ok",
            "iteration/usage_limit",
            "iteration/ok",
            "merge/ok"
        ]
    );
}
