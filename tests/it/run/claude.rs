//! Failures read from a preset's output: a fake `claude` on PATH printing
//! what Claude Code prints when it is logged out or out of usage.

use super::result;
use crate::support::{TestProject, finish};

/// Runs `ralph run --agent claude` with `<aux>/bin` first on PATH.
fn run_claude(project: &TestProject) -> crate::support::Run {
    let mut command = project.ralph_command(&["run", "--agent", "claude"]);
    let path = project.path_with_aux_bin();
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
        waited.is_some_and(|line| line.contains(" before retrying (until 20")),
        "{run:#?}"
    );
    // The retry is no debugger iteration: the limit was not the task's
    // failure, and it cost no budget (the iteration is run again).
    assert_eq!(project.calls(), ["1 A 1 none", "1 A 1 none"]);
    let result = result(&project);
    assert_eq!(result["status"], "drained");
    assert_eq!(result["failures"], serde_json::json!({"usage_limit": 1}));
    // The wait is in ralph.log, with when it ends.
    let log = project.read("ralph.log");
    assert!(
        log.lines()
            .any(|line| line.contains(" usage limit: waiting ")
                && line.contains(" before retrying (until 20")),
        "{log}"
    );
    let statuses: Vec<String> = super::phases(&project, "A");
    assert_eq!(
        statuses,
        [
            "claim/ok",
            "iteration/usage_limit",
            "wait/usage_limit",
            "iteration/ok",
            "merge/ok"
        ]
    );
}

/// Claude's rate limit as claude-code 2.1 reports it (`api_error_status`
/// 429, `"error":"rate_limit"`): with `--once` the run ends after its one
/// iteration, exit 20 with the class, and waits for nothing; without it,
/// a limit that persists waits longer each time.
#[test]
fn a_persistent_rate_limit_ends_a_once_run_and_backs_off_otherwise() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"one","status":"pending","leaf":true}"#)
        .git_init();
    project.script(
        "bin/claude",
        r#"echo '{"type":"assistant","message":{"content":[{"type":"text","text":"API Error: Request rejected (429)"}]},"error":"rate_limit"}'
echo '{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"API Error: Request rejected (429) · This request would exceed your account'"'"'s rate limit. Please try again later."}'
exit 1
"#,
    );
    let mut command = project.ralph_command(&["run", "--agent", "claude", "--once"]);
    let path = project.path_with_aux_bin();
    command.env("PATH", &path).env("RALPH_RETRY_BACKOFF", "1h");
    // The wait would be an hour, capped by usage_limit_max_wait (30m).
    let run = finish(command, 60);
    assert_eq!(run.code, 20, "{run:#?}");
    let result = result(&project);
    assert_eq!(result["failures"], serde_json::json!({"usage_limit": 1}));
    assert_eq!(
        result["reason"],
        "usage_limit: claude: API Error: Request rejected (429) · This request would exceed your account's rate limit. Please try again later.; run again in 30m00s or later"
    );
    assert!(!run.stderr.contains("waiting"), "{run:#?}");
    // Without --once: 10 ms, 20 ms, then 40 ms each time, until stopped.
    let mut command = project.ralph_command(&["run", "--agent", "claude"]);
    command
        .env("PATH", &path)
        .env("RALPH_RETRY_BACKOFF", "10ms")
        .env("RALPH_USAGE_LIMIT_MAX_WAIT", "40ms");
    let child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start");
    // Stop it once it has waited a few times.
    let waits = project.path().join(".ralph/events.ndjson");
    let started = std::time::Instant::now();
    while std::fs::read_to_string(&waits)
        .unwrap_or_default()
        .matches(r#""phase":"iteration","status":"usage_limit""#)
        .count()
        < 4
    {
        assert!(started.elapsed() < std::time::Duration::from_secs(50));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::fs::write(project.path().join(".stop"), "").expect("stop");
    let run = crate::support::wait_for(child, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    // However long the limit lasts, it is never the task's failure.
    let waited = run
        .stderr
        .lines()
        .filter(|line| line.starts_with("usage limit: waiting "))
        .count();
    assert!(waited >= 3, "{run:#?}");
    assert!(project.read("tasks.jsonl").contains(r#""status":"active""#));
}
