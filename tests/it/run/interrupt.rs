//! A run stopped by a signal mid-iteration, resumed by the next run; and
//! the run lock while a run is live.

use std::process::{Child, Stdio};

use super::{alive, result};
use crate::support::{TestProject, wait_for, wait_for_file};

fn spawn(project: &TestProject) -> Child {
    project
        .run_command(&[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ralph run")
}

#[test]
fn sigint_mid_iteration_stops_the_agent_and_the_next_run_resumes() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"long","status":"pending","leaf":true}"#)
        .task(r#"{"id":"B","title":"later","status":"pending","leaf":true}"#)
        .git_init()
        .agent(
            r#"if [ "$RALPH_TASK_ID" = A ] && [ "$RALPH_TASK_ITERATION" = 1 ]; then
  work done-before.txt "finished work"
  echo "not committed yet" > leftover.txt
  echo $$ > "$REC/agent.pid"
  sleep 1000 &
  echo $! > "$REC/sleep.tmp"; mv "$REC/sleep.tmp" "$REC/sleep.pid"
  wait
  exit 0
fi
test -f done-before.txt || { echo "the finished work is gone"; exit 9; }
work "$RALPH_TASK_ID.txt" x
ralph task complete "$RALPH_TASK_ID" > /dev/null
"#,
        );
    let child = spawn(&project);
    let ralph_pid = child.id() as i32;
    wait_for_file(&project.aux().join("rec/sleep.pid"));

    // While it runs: status shows the live run and its task.
    let status = project.ralph(&["status"]);
    assert!(
        status
            .stdout
            .starts_with(&format!("run: live (pid {ralph_pid}, since ")),
        "{status:#?}"
    );
    assert!(
        status
            .stdout
            .contains("\ntask: A long (iteration 1, role none, phase agent)\n"),
        "{status:#?}"
    );
    let json = project.ralph(&["status", "--json"]).json();
    assert_eq!(json["live"], true);
    assert_eq!(json["run"]["pid"], ralph_pid);
    assert_eq!(json["task"], "A");
    assert_eq!(json["counts"]["active"], 1);

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(ralph_pid),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let run = wait_for(child, 30);
    assert_eq!(run.code, 130, "{run:#?}");
    for pid in ["agent.pid", "sleep.pid"] {
        let pid: i32 = project.rec(pid).trim().parse().unwrap();
        assert!(!alive(pid), "{pid} still runs");
    }
    assert_eq!(project.git(&["branch", "--show-current"]), "task/A-long");
    // The agent's leftovers are committed; only the live queue differs.
    assert_eq!(project.git(&["status", "--porcelain"]), " M tasks.jsonl");
    assert!(
        project
            .read("tasks.jsonl")
            .contains(r#""id":"A","title":"long","status":"active""#)
    );
    let state = project.json(".ralph/state.json");
    assert_eq!(state["current_task"], "A");
    assert_eq!(state["tasks"]["A"]["iterations"], 1);
    let result1 = result(&project);
    assert_eq!(result1["status"], "interrupted");
    assert_eq!(result1["reason"], "interrupted by a signal");
    // A signal is not the task's failure.
    assert_eq!(state["tasks"]["A"]["consecutive_failures"], 0);

    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.calls(), ["1 A 1 none", "1 A 2 none", "2 B 1 none"]);
    assert_eq!(
        project.git(&["log", "-1", "--format=%B", "main~1"]),
        "[A] long\n\n- A: done-before.txt\n- A: A.txt\n\nCompletes: A"
    );
    assert_eq!(
        project.git(&["show", "--format=", "--name-only", "main~1"]),
        "A.txt\ndone-before.txt\nleftover.txt\ntasks-done.jsonl\ntasks.jsonl"
    );
    let result2 = result(&project);
    assert_eq!(result2["status"], "drained");
    assert_ne!(result2["run_id"], result1["run_id"]);
    // One claim for A across both runs: the second run resumed the branch.
    let claims = super::phases(&project, "A")
        .into_iter()
        .filter(|p| p.starts_with("claim/"))
        .count();
    assert_eq!(claims, 1);
}

#[test]
fn a_second_run_is_refused_while_the_first_holds_the_lock() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"one","status":"pending","leaf":true}"#)
        .git_init()
        .agent(
            r#"touch "$REC/waiting"
while [ ! -e "$REC/go" ]; do sleep 0.02; done
work A.txt x
ralph task complete A > /dev/null
"#,
        );
    let child = spawn(&project);
    let pid = child.id();
    wait_for_file(&project.aux().join("rec/waiting"));
    let second = project.run(&[]);
    let since = project.json(".ralph/lock")["since"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(second.code, 20, "{second:#?}");
    assert_eq!(
        second.stderr,
        format!(
            "error: another ralph run (pid {pid}, since {since}) holds .ralph/lock\n\
             hint: wait for it to finish, or stop it with `ralph stop` (or Ctrl-C in its terminal)\n"
        )
    );
    // The refused run leaves the live run's files alone.
    assert!(!project.path().join(".ralph/result.json").exists());
    std::fs::write(project.aux().join("rec/go"), "").unwrap();
    let first = wait_for(child, 60);
    assert_eq!(first.code, 0, "{first:#?}");
    assert_eq!(result(&project)["status"], "drained");

    let again = project.run(&[]);
    assert_eq!(again.code, 0, "{again:#?}");
    assert_eq!(result(&project)["status"], "drained");
    assert_eq!(result(&project)["iterations"], 0);
}

#[test]
fn a_run_killed_outright_resumes_without_redoing_or_losing_work() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"long","status":"pending","leaf":true}"#)
        .git_init()
        .agent(
            r#"if [ "$RALPH_TASK_ITERATION" = 1 ]; then
  work done-before.txt "finished work"
  echo "not committed yet" > leftover.txt
  echo $$ > "$REC/agent.tmp"; mv "$REC/agent.tmp" "$REC/agent.pid"
  exec sleep 1000
fi
test -f done-before.txt && test -f leftover.txt || exit 9
work A.txt x
ralph task complete A > /dev/null
"#,
        );
    let child = spawn(&project);
    wait_for_file(&project.aux().join("rec/agent.pid"));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let killed = wait_for(child, 30);
    assert_eq!(killed.code, -1);
    // Nobody stopped the agent's process group: this test does.
    let agent: i32 = project.rec("agent.pid").trim().parse().unwrap();
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(agent),
        nix::sys::signal::Signal::SIGKILL,
    );

    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.calls(), ["1 A 1 none", "1 A 2 none"]);
    assert_eq!(
        project.git(&["log", "--format=%s", "refs/ralph/tasks/A"]),
        "A: A.txt\nralph: wip A iteration 1\nA: done-before.txt\ninitial commit"
    );
    assert_eq!(
        project.git(&["log", "-1", "--format=%B", "main"]),
        "[A] long\n\n- A: done-before.txt\n- A: A.txt\n\nCompletes: A"
    );
}

#[test]
fn sigint_during_verification_is_not_the_tasks_failure() {
    let project = TestProject::new()
        .file(
            "config/ralph.yaml",
            "verify:\n  task:\n    - \"test -e verify-passes || { touch \\\"$REC_DIR/verifying\\\"; sleep 1000; }\"\n",
        )
        .task(r#"{"id":"A","title":"one","status":"pending","leaf":true}"#)
        .git_init()
        .agent("work A.txt x\nralph task complete A > /dev/null\n");
    let rec = project.aux().join("rec");
    let child = project
        .run_command(&[])
        .env("REC_DIR", &rec)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(&rec.join("verifying"));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let run = wait_for(child, 30);
    assert_eq!(run.code, 130, "{run:#?}");
    assert_eq!(result(&project)["status"], "interrupted");
    assert_eq!(result(&project)["failures"], serde_json::json!({}));
    assert!(
        project
            .read("tasks.jsonl")
            .contains(r#""status":"complete""#)
    );
    let state = project.json(".ralph/state.json");
    assert_eq!(state["tasks"]["A"]["consecutive_failures"], 0);
    assert_eq!(state["tasks"]["A"]["last_failed"], false);

    // The next run verifies again and merges without another agent call.
    std::fs::write(project.path().join("verify-passes"), "").unwrap();
    project.git(&["add", "verify-passes"]);
    project.git(&["commit", "-q", "-m", "let verification pass"]);
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.calls(), ["1 A 1 none"]);
    assert_eq!(
        project
            .git(&["log", "-2", "--format=%s", "main"])
            .lines()
            .collect::<Vec<_>>(),
        ["[A] one", "initial commit"]
    );
}

/// A second Ctrl-C kills an agent that takes its time over the first
/// (here: ignores SIGTERM, with a minute's grace), and the run still
/// stops the way a signal stops it: state saved, result written, 130.
#[test]
fn a_second_sigint_kills_a_slow_agent_now_and_still_saves_the_run() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"long","status":"pending","leaf":true}"#)
        .git_init()
        .agent(
            r#"trap '' TERM
echo $$ > "$REC/agent.tmp"; mv "$REC/agent.tmp" "$REC/agent.pid"
while :; do sleep 0.05; done
"#,
        );
    let child = project
        .run_command(&[])
        .env("RALPH_KILL_GRACE", "45s")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ralph run");
    let ralph = nix::unistd::Pid::from_raw(child.id() as i32);
    wait_for_file(&project.aux().join("rec/agent.pid"));
    let sigint = || nix::sys::signal::kill(ralph, nix::sys::signal::Signal::SIGINT).unwrap();
    sigint();
    std::thread::sleep(std::time::Duration::from_millis(300));
    sigint();
    let run = wait_for(child, 30);
    assert_eq!(run.code, 130, "{run:#?}");
    assert!(
        run.stderr.contains(
            "\nralph: stopping: the agent gets 45s to finish, then state is saved; interrupt again to kill it now\nralph: killed the agent; saving state (interrupt again to quit at once)\n"
        ),
        "{run:#?}"
    );
    let agent: i32 = project.rec("agent.pid").trim().parse().unwrap();
    assert!(!alive(agent), "the agent still runs");
    assert_eq!(result(&project)["status"], "interrupted");
    assert!(!project.path().join(".ralph/agent.pgid").exists());
    assert_eq!(project.json(".ralph/state.json")["current_task"], "A");
}
