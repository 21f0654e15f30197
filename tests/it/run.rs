//! `ralph run` end to end: the real binary in a real git repository with a
//! scripted fake agent (`<aux>/agent.sh`, see `support.rs`), checking the
//! base's history, the queue files, `.ralph/` and the exit code.

mod claude;
mod interrupt;

use serde_json::Value;

use crate::support::{TestProject, phases, wait_for_file};

/// The agent most tests use: commit a file named after the task, then mark
/// the task complete.
const COMPLETE: &str = r#"work "$RALPH_TASK_ID.txt" "$RALPH_TASK_TITLE"
ralph task complete "$RALPH_TASK_ID" > /dev/null
"#;

/// `git log` of `main`, one line per commit.
fn log(project: &TestProject, format: &str) -> Vec<String> {
    project
        .git(&["log", "main", &format!("--format={format}")])
        .lines()
        .map(str::to_owned)
        .collect()
}

fn ids(values: &[Value]) -> Vec<&str> {
    values.iter().map(|v| v["id"].as_str().unwrap()).collect()
}

fn result(project: &TestProject) -> Value {
    project.json(".ralph/result.json")
}

fn events(project: &TestProject) -> Vec<Value> {
    project.json_lines(".ralph/events.ndjson")
}

#[test]
fn a_nested_queue_drains_into_one_squash_commit_per_task() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"auth","status":"pending","leaf":false}"#)
        .task(r#"{"id":"A.1","title":"login form","status":"pending","leaf":true}"#)
        .task(r#"{"id":"A.2","title":"session store","status":"pending","leaf":true,"deps":["A.1"],"owner":"kim"}"#)
        .task(r#"{"id":"B","title":"readme","status":"pending","leaf":true}"#)
        .git_init()
        .agent(COMPLETE);
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.stdout, "");

    assert_eq!(
        log(&project, "%s|%P"),
        [
            format!("[B] readme|{}", project.git(&["rev-parse", "main~1"])),
            format!(
                "[A.2] session store|{}",
                project.git(&["rev-parse", "main~2"])
            ),
            format!("[A.1] login form|{}", project.git(&["rev-parse", "main~3"])),
            "initial commit|".to_owned(),
        ]
    );
    assert_eq!(
        project.git(&["log", "-1", "--format=%B", "main~1"]),
        "[A.2] session store\n\n- A.2: A.2.txt\n\nCompletes: A.2\nCompletes: A"
    );
    assert_eq!(
        project.git(&["log", "-1", "--format=%B", "main"]),
        "[B] readme\n\n- B: B.txt\n\nCompletes: B"
    );
    // Each squash holds the task's work and its archive move.
    assert_eq!(
        project.git(&["show", "--format=", "--name-only", "main"]),
        "B.txt\ntasks-done.jsonl\ntasks.jsonl"
    );
    assert_eq!(project.read("tasks.jsonl"), "");
    let done = project.json_lines("tasks-done.jsonl");
    assert_eq!(ids(&done), ["A.1", "A.2", "A", "B"]);
    assert_eq!(
        done[1]["owner"], "kim",
        "unknown fields travel to the archive"
    );
    assert_eq!(
        done[0]["commit"].as_str().unwrap(),
        project.git(&["rev-parse", "refs/ralph/tasks/A.1"]),
        "the archive names the preserved branch tip"
    );
    assert_eq!(
        project.git(&["branch", "--format=%(refname:short)"]),
        "main"
    );
    assert_eq!(
        project.git(&["for-each-ref", "--format=%(refname)", "refs/ralph/tasks"]),
        "refs/ralph/tasks/A.1\nrefs/ralph/tasks/A.2\nrefs/ralph/tasks/B"
    );
    assert_eq!(project.git(&["status", "--porcelain"]), "");

    let result = result(&project);
    assert_eq!(result["status"], "drained");
    assert_eq!(result["reason"], "the queue is drained");
    assert_eq!(result["iterations"], 3);
    assert_eq!(result["merged"], 3);
    assert_eq!(result["remaining"], 0);
    let outcomes: Vec<String> = result["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            format!(
                "{} {}",
                o["task"].as_str().unwrap(),
                o["outcome"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(outcomes, ["A.1 merged", "A.2 merged", "B merged"]);
    assert_eq!(
        project.calls(),
        ["1 A.1 1 none", "2 A.2 1 none", "3 B 1 none"]
    );

    // The state forgets finished tasks.
    let state = project.json(".ralph/state.json");
    assert_eq!(state["current_task"], Value::Null);
    assert_eq!(state["tasks"], serde_json::json!({}));
    assert_eq!(state["phase"], "ended");

    // Events: the receipt of each iteration.
    assert_eq!(
        phases(&project, "A.1"),
        ["claim/ok", "iteration/ok", "merge/ok"]
    );
    let iteration = events(&project)
        .into_iter()
        .find(|e| e["phase"] == "iteration" && e["task_id"] == "B")
        .unwrap();
    for key in [
        "timestamp",
        "run_id",
        "task_id",
        "iteration",
        "role",
        "phase",
        "status",
        "detail",
    ] {
        assert!(iteration.get(key).is_some(), "{key} missing in {iteration}");
    }
    assert_eq!(iteration["iteration"], 3);
    assert_eq!(iteration["run_id"], result["run_id"]);
    let agent = project.aux().join("agent.sh");
    assert_eq!(iteration["agent"], format!("command `{}`", agent.display()));
    assert_eq!(iteration["exit"], "exit code 0");
    assert_eq!(iteration["log"], ".ralph/logs/3-B.log");
    assert_eq!(iteration["branch_commits"], 1);
    assert_eq!(iteration["files_changed"], 1);
    assert_eq!(iteration["class"], Value::Null);
    assert!(iteration["prompt_bytes"].as_u64().unwrap() > 100);
    assert!(iteration["duration_ms"].is_u64());
    let last = events(&project).pop().unwrap();
    assert_eq!(
        (&last["phase"], &last["status"]),
        (&"run".into(), &"drained".into())
    );
    // The start says what the run set out to do.
    let first = events(&project).swap_remove(0);
    assert_eq!(
        (&first["phase"], &first["status"], &first["detail"]),
        (
            &"run".into(),
            &"started".into(),
            &format!(
                "on main, agent command `{}`, 4 tasks, max 50 iterations",
                agent.display()
            )
            .into()
        )
    );

    // ralph.log: a line per iteration and per merge.
    let log_lines: Vec<String> = project
        .read("ralph.log")
        .lines()
        .map(|l| l.split_once(' ').unwrap().1.to_owned())
        .collect();
    assert_eq!(log_lines.len(), 6, "{log_lines:?}");
    assert!(
        log_lines[0].starts_with("#1 A.1 [-] exit code 0 "),
        "{log_lines:?}"
    );
    assert!(log_lines[0].ends_with(" -> complete"), "{log_lines:?}");
    assert!(
        log_lines[1].starts_with("A.1 done: squash-merged into main ("),
        "{log_lines:?}"
    );
    assert!(project.path().join(".ralph/prompts/2-A.2.md").exists());

    // After the run: status says so.
    let status = project.ralph(&["status"]);
    assert_eq!(status.code, 0);
    assert!(
        status
            .stdout
            .starts_with("run: none live\nqueue: 0 tasks; 4 archived\nlast run: drained at "),
        "{status:#?}"
    );
    let json = project.ralph(&["status", "--json"]).json();
    assert_eq!(json["live"], false);
    assert_eq!(json["counts"]["archived"], 4);
    assert_eq!(json["last_result"]["status"], "drained");
}

#[test]
fn a_run_without_a_git_identity_says_who_it_commits_as() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"one","status":"pending","leaf":true}"#)
        .git_init()
        .agent(COMPLETE);
    project.git(&["config", "--unset", "user.name"]);
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    // Tracked queue files: no word about ignore rules.
    assert!(!run.stderr.contains("ignored by git"), "{}", run.stderr);
    assert!(
        run.stderr.lines().any(|line| line
            == "warning: git user.name or user.email is not configured; ralph commits as ralph <author@example.com> (set them with `git config user.name ...` and `git config user.email ...`)"),
        "{}",
        run.stderr
    );
    assert_eq!(
        project.git(&["log", "-1", "--format=%an <%ae>", "main"]),
        "ralph <author@example.com>"
    );
}

/// Queue files matched by `.gitignore` work, but their changes never
/// reach the base: the run says so at its start, naming the rule.
#[test]
fn ignored_queue_files_are_named_with_their_gitignore_rule() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"one","status":"pending","leaf":true}"#)
        .git_init()
        .agent(COMPLETE);
    let ignore = project.read(".gitignore");
    std::fs::write(
        project.path().join(".gitignore"),
        format!("{ignore}*.jsonl\n"),
    )
    .unwrap();
    project.git(&["rm", "-q", "--cached", "tasks.jsonl", "tasks-done.jsonl"]);
    project.git(&["commit", "-q", "-am", "ignore the queue"]);
    let line = ignore.lines().count() + 1;
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    for file in ["tasks.jsonl", "tasks-done.jsonl"] {
        let warning = format!(
            "warning: {file} is ignored by git (.gitignore:{line}: *.jsonl), so ralph's commits leave it out and its changes never reach the base's history; add `!{file}` to .gitignore to keep them"
        );
        assert!(run.stderr.lines().any(|l| l == warning), "{}", run.stderr);
    }
    // As the warning says: the task is merged, its archive record is not.
    assert_eq!(project.json_lines("tasks-done.jsonl").len(), 1);
    let files = project.git(&["ls-tree", "--name-only", "main"]);
    assert!(files.lines().any(|f| f == "A.txt"), "{files}");
    assert!(!files.lines().any(|f| f.ends_with(".jsonl")), "{files}");
}

/// A CI-style checkout (HEAD detached at the base's tip) with the base
/// configured: ralph checks the base out and runs. HEAD detached at a
/// commit the base lacks is still refused: switching would leave it.
#[test]
fn a_detached_head_at_the_configured_base_is_checked_out_and_run() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"one","status":"pending","leaf":true}"#)
        .git_init()
        .agent(COMPLETE);
    let run_on_main = || {
        let mut command = project.run_command(&[]);
        command.env("RALPH_BASE_BRANCH", "main");
        crate::support::finish(command, 60)
    };
    project.git(&["switch", "-q", "--detach"]);
    std::fs::write(project.path().join("notes.txt"), "a commit off the base\n").unwrap();
    project.git(&["add", "notes.txt"]);
    project.git(&["commit", "-q", "-m", "off the base"]);
    let short = project.git(&["rev-parse", "--short=7", "HEAD"]);
    let refused = run_on_main();
    assert_eq!(refused.code, 30, "{refused:#?}");
    assert!(
        refused
            .stderr
            .starts_with(&format!("error: HEAD is detached at {short}; ")),
        "{refused:#?}"
    );
    project.git(&["switch", "-q", "--detach", "main"]);
    let tip = project.git(&["rev-parse", "--short=7", "main"]);
    let run = run_on_main();
    assert_eq!(run.code, 0, "{run:#?}");
    let said = format!("HEAD was detached at {tip}; checked out the base branch main");
    assert!(
        run.stderr.lines().any(|line| line == said),
        "{}",
        run.stderr
    );
    assert_eq!(project.git(&["symbolic-ref", "--short", "HEAD"]), "main");
    let files = project.git(&["ls-tree", "--name-only", "main"]);
    assert!(files.lines().any(|f| f == "A.txt"), "{files}");
}

#[test]
fn a_stop_file_ends_the_run_before_an_iteration_and_is_removed() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"one","status":"pending","leaf":true}"#)
        .task(r#"{"id":"B","title":"two","status":"pending","leaf":true}"#)
        .git_init()
        .agent(
            r#"work "$RALPH_TASK_ID.txt" x
ralph stop > "$REC/stop"
"#,
        );
    // Present at the start: nothing runs.
    project.ralph(&["stop"]).ok(
        "created .stop: no run is live; the next `ralph run` will stop at once (delete .stop to prevent that)\n",
    );
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(!project.path().join(".stop").exists());
    assert_eq!(project.calls(), Vec::<String>::new());
    assert_eq!(result(&project)["status"], "stopped");
    assert_eq!(result(&project)["reason"], ".stop asked the run to stop");

    // Created during an iteration: the run ends after it.
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.calls(), ["1 A 1 none"]);
    let pid = project.json(".ralph/result.json")["run_id"]
        .as_str()
        .unwrap()
        .rsplit('-')
        .next()
        .unwrap()
        .to_owned();
    assert_eq!(
        project.rec("stop"),
        format!("created .stop: the run (pid {pid}) stops after its current iteration\n")
    );
    assert!(!project.path().join(".stop").exists());
    assert_eq!(result(&project)["status"], "stopped");
    assert_eq!(result(&project)["iterations"], 1);
    assert_eq!(project.git(&["branch", "--show-current"]), "task/A-one");
    assert!(
        project
            .read("tasks.jsonl")
            .contains(r#""id":"A","title":"one","status":"active""#)
    );
}

#[test]
fn a_stop_file_interrupts_the_backoff() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"one","status":"pending","leaf":true}"#)
        .git_init()
        .agent("ralph stop > /dev/null\nexit 3\n");
    // An hour of backoff: only the stop file can end this run in time.
    let run = crate::support::finish(
        {
            let mut command = project.run_command(&[]);
            command.env("RALPH_RETRY_BACKOFF", "1h");
            command
        },
        30,
    );
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.calls(), ["1 A 1 none"]);
    assert!(!project.path().join(".stop").exists());
    let result = result(&project);
    assert_eq!(result["status"], "stopped");
    assert_eq!(result["failures"], serde_json::json!({"exit": 1}));
}

#[test]
fn failing_iterations_back_off_then_block_the_task_and_the_loop_goes_on() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"broken","status":"pending","leaf":true}"#)
        .task(r#"{"id":"B","title":"fine","status":"pending","leaf":true}"#)
        .git_init()
        .agent(&format!(
            r#"if [ "$RALPH_TASK_ID" = A ]; then echo "compiler exploded on try $RALPH_TASK_ITERATION"; exit 3; fi
{COMPLETE}"#
        ));
    let run = project.run(&[]);
    assert_eq!(run.code, 10, "{run:#?}");
    assert!(
        run.stderr
            .contains("A: exit: the agent failed with exit code 3; retrying in "),
        "{run:#?}"
    );
    // Each wait is in ralph.log too: what, how long, until when.
    let waits: Vec<String> = project
        .read("ralph.log")
        .lines()
        .filter(|line| line.contains("; retrying in "))
        .map(|line| line.split_once(' ').map_or("", |(_, text)| text).to_owned())
        .collect();
    assert_eq!(waits.len(), 2, "{waits:?}");
    assert!(
        waits[0]
            .starts_with("A: exit: the agent failed with exit code 3; retrying in 10ms (until 20"),
        "{waits:?}"
    );
    assert_eq!(
        project.calls(),
        [
            "1 A 1 none",
            "2 A 2 debugger",
            "3 A 3 debugger",
            "4 B 1 none"
        ]
    );
    let tasks = project.json_lines("tasks.jsonl");
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0]["status"], "blocked");
    assert_eq!(
        tasks[0]["blocked_reason"],
        "failed 3 iterations in a row (last: exit: the agent failed with exit code 3)"
    );
    assert_eq!(ids(&project.json_lines("tasks-done.jsonl")), ["B"]);
    assert_eq!(
        log(&project, "%s"),
        ["[B] fine", "ralph: A blocked", "initial commit"]
    );
    // The evidence of a failure reaches the next prompt.
    let prompt = project.read(".ralph/prompts/2-A.md");
    assert!(prompt.contains("compiler exploded on try 1"), "{prompt}");
    let result = result(&project);
    assert_eq!(result["status"], "blocked");
    assert_eq!(result["blocked"], 1);
    assert_eq!(result["failures"], serde_json::json!({"exit": 3}));
    assert_eq!(
        phases(&project, "A"),
        [
            "claim/ok",
            "iteration/exit",
            "wait/retry",
            "iteration/exit",
            "wait/retry",
            "iteration/exit",
            "block/blocked"
        ]
    );
    assert_eq!(project.git(&["branch", "--show-current"]), "main");
}

#[test]
fn a_timeout_kills_the_agent_and_everything_it_started() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"slow","status":"pending","leaf":true}"#)
        .git_init()
        .agent(
            r#"echo $$ > "$REC/agent.pid"
sh -c 'sleep 1000 & echo $! > "$1/grandchild.pid"; wait' child "$REC" &
echo $! > "$REC/child.pid"
wait
"#,
        );
    // Long enough for the agent to start both and note their pids on a
    // busy machine; nothing here measures time.
    let mut command = project.run_command(&["--timeout", "2s"]);
    command.env("RALPH_MAX_CONSECUTIVE_FAILURES", "1");
    let run = crate::support::finish(command, 30);
    assert_eq!(run.code, 10, "{run:#?}");
    for pid in ["agent.pid", "child.pid", "grandchild.pid"] {
        let pid: i32 = project.rec(pid).trim().parse().unwrap();
        assert!(!alive(pid), "{pid} still runs");
    }
    let tasks = project.json_lines("tasks.jsonl");
    assert_eq!(
        tasks[0]["blocked_reason"],
        "failed 1 iteration in a row (last: timeout: timed out after 2s)"
    );
    assert_eq!(
        result(&project)["failures"],
        serde_json::json!({"timeout": 1})
    );
}

/// Whether process `pid` exists (and is not a zombie waiting for us).
pub(crate) fn alive(pid: i32) -> bool {
    let exists = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok();
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false);
    exists && !zombie
}

#[test]
fn a_failed_verification_is_evidence_for_the_debugger() {
    let project = TestProject::new()
        .file(
            "config/ralph.yaml",
            "verify:\n  task:\n    - \"test -f verified.txt || { echo 'verify: verified.txt is missing'; exit 1; }\"\n",
        )
        .task(r#"{"id":"A","title":"feature","status":"pending","leaf":true}"#)
        .git_init()
        .agent(&format!(
            r#"if [ "$RALPH_TASK_ITERATION" = 2 ]; then work verified.txt ok; fi
{COMPLETE}"#
        ));
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.calls(), ["1 A 1 none", "2 A 2 debugger"]);
    let prompt = project.read(".ralph/prompts/2-A.md");
    assert!(
        prompt.contains("verify: verified.txt is missing"),
        "{prompt}"
    );
    assert!(prompt.contains("verify_failed"), "{prompt}");
    assert_eq!(
        phases(&project, "A"),
        [
            "claim/ok",
            "iteration/ok",
            "verify/verify_failed",
            "finish/verify_failed",
            "iteration/ok",
            "verify/ok",
            "merge/ok"
        ]
    );
    assert_eq!(
        project.git(&["log", "-1", "--format=%B", "main"]),
        "[A] feature\n\n- A: A.txt\n- A: verified.txt\n\nCompletes: A"
    );
    assert_eq!(
        result(&project)["failures"],
        serde_json::json!({"verify_failed": 1})
    );
}

#[test]
fn a_task_that_fails_verification_at_the_limit_is_blocked_with_the_reason() {
    let project = TestProject::new()
        .file("config/ralph.yaml", "verify:\n  task:\n    - \"exit 3\"\n")
        .task(r#"{"id":"A","title":"feature","status":"pending","leaf":true}"#)
        .git_init()
        .agent(COMPLETE);
    let mut command = project.run_command(&[]);
    command.env("RALPH_MAX_CONSECUTIVE_FAILURES", "1");
    let run = crate::support::finish(command, 60);
    assert_eq!(run.code, 10, "{run:#?}");
    let tasks = project.json_lines("tasks.jsonl");
    assert_eq!(tasks[0]["status"], "blocked", "{run:#?}");
    assert_eq!(
        tasks[0]["blocked_reason"],
        "failed 1 iteration in a row (last: verify_failed: the verification command `exit 3` failed (exit code 3))"
    );
    assert!(
        run.stderr.contains("A: verify failed: exit 3: exit code 3"),
        "{run:#?}"
    );
}

/// Each iteration that claims the task done but fails verification is a
/// failure in a row: the agent's own clean exit does not start the count
/// again, so the task is blocked at the budget, not at the iteration cap.
#[test]
fn failed_verifications_in_a_row_reach_the_failure_budget() {
    let project = TestProject::new()
        .file("config/ralph.yaml", "verify:\n  task:\n    - \"exit 3\"\n")
        .task(r#"{"id":"A","title":"feature","status":"pending","leaf":true}"#)
        .git_init()
        .agent(COMPLETE);
    let mut command = project.run_command(&[]);
    command
        .env("RALPH_MAX_CONSECUTIVE_FAILURES", "2")
        .env("RALPH_MAX_ITERATIONS_PER_TASK", "6");
    let run = crate::support::finish(command, 60);
    assert_eq!(run.code, 10, "{run:#?}");
    let tasks = project.json_lines("tasks.jsonl");
    assert_eq!(tasks[0]["status"], "blocked", "{run:#?}");
    assert_eq!(
        tasks[0]["blocked_reason"],
        "failed 2 iterations in a row (last: verify_failed: the verification command `exit 3` failed (exit code 3))"
    );
    assert_eq!(project.calls().len(), 2, "{run:#?}");
    // Set going again by hand, it gets the whole budget again.
    project.ralph(&["task", "start", "A"]).success();
    let mut command = project.run_command(&[]);
    command
        .env("RALPH_MAX_CONSECUTIVE_FAILURES", "2")
        .env("RALPH_MAX_ITERATIONS_PER_TASK", "6");
    let run = crate::support::finish(command, 60);
    assert_eq!(run.code, 10, "{run:#?}");
    assert_eq!(project.calls().len(), 4, "{run:#?}");
}

/// Somebody else's commit on `main` adding `shared.txt` ("base"), made
/// without touching the working tree (which may be on a task branch).
fn move_base(project: &TestProject) {
    let moved = project
        .command("sh")
        .arg("-c")
        .arg(
            r#"index=$(mktemp)
GIT_INDEX_FILE=$index git read-tree main
blob=$(printf 'base\n' | git hash-object -w --stdin)
GIT_INDEX_FILE=$index git update-index --add --cacheinfo "100644,$blob,shared.txt"
tree=$(GIT_INDEX_FILE=$index git write-tree)
git update-ref refs/heads/main "$(git commit-tree "$tree" -p main -m 'someone else')""#,
        )
        .status()
        .unwrap();
    assert!(moved.success());
}

/// Somebody moved the base between two runs with a change to a file the
/// task changed too: the squash would conflict, so the base is left as it
/// is and the task gets the conflicting paths and the way out.
#[test]
fn a_task_whose_branch_conflicts_with_a_moved_base_is_told_how_to_merge() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"feature","status":"pending","leaf":true}"#)
        .git_init()
        .agent(
            r#"if [ "$RALPH_TASK_ITERATION" = 1 ]; then work shared.txt branch
else ralph task complete "$RALPH_TASK_ID" > /dev/null; fi
"#,
        );
    crate::support::finish(project.run_command(&["--once"]), 60);
    move_base(&project);
    let mut command = project.run_command(&[]);
    command.env("RALPH_MAX_CONSECUTIVE_FAILURES", "1");
    let run = crate::support::finish(command, 60);
    assert_eq!(run.code, 10, "{run:#?}");
    let tasks = project.json_lines("tasks.jsonl");
    assert_eq!(tasks[0]["status"], "blocked", "{run:#?}");
    assert_eq!(
        tasks[0]["blocked_reason"],
        "failed 1 iteration in a row (last: merge_conflict: the branch conflicts with the base in shared.txt; merge the base into the branch (`git merge main`), resolve the conflicts, commit the merge, then mark the task complete again)"
    );
    // The base has the other change only.
    assert_eq!(project.git(&["show", "main:shared.txt"]), "base");
    // Said where people look: the terminal and ralph.log.
    let said = "A: the squash into main conflicts in shared.txt\n";
    assert!(run.stderr.contains(said), "{run:#?}");
    assert!(project.read("ralph.log").contains(&format!(" {said}")));
}

/// The agent follows the conflict's evidence, which `working.md` agrees
/// with: it merges the base into the branch, resolves and commits, and the
/// next squash lands with both changes.
#[test]
fn a_conflict_resolved_by_merging_the_base_lands() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"feature","status":"pending","leaf":true}"#)
        .git_init()
        .agent(
            r#"case "$RALPH_TASK_ITERATION" in
1) work shared.txt branch ;;
2) ralph task complete A > /dev/null ;;
*) git merge -q main > /dev/null 2>&1
   printf 'base
branch
' > shared.txt
   git add shared.txt && git commit -q --no-edit
   ralph task complete A > /dev/null ;;
esac
"#,
        );
    crate::support::finish(project.run_command(&["--once"]), 60);
    move_base(&project);
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    let prompt = project.read(".ralph/prompts/3-A.md");
    assert!(
        prompt.contains("merge the base into the branch (`git merge main`), resolve the conflicts, commit the merge, then mark the task complete again"),
        "{prompt}"
    );
    assert!(
        prompt.contains("merge nothing into the branch\n  but the base, and that only when the evidence reports a merge conflict"),
        "working.md agrees: {prompt}"
    );
    assert_eq!(project.git(&["show", "main:shared.txt"]), "base\nbranch");
    assert_eq!(
        log(&project, "%s"),
        ["[A] feature", "someone else", "initial commit"]
    );
    assert_eq!(ids(&project.json_lines("tasks-done.jsonl")), ["A"]);
}

/// The task's line is deleted during its iteration: the iteration ends as
/// `vanished`, and the run goes on with the rest of the queue.
#[test]
fn a_task_deleted_during_its_iteration_vanishes_and_the_run_goes_on() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"gone","status":"pending","leaf":true}"#)
        .task(r#"{"id":"B","title":"kept","status":"pending","leaf":true}"#)
        .git_init()
        .agent(
            r#"if [ "$RALPH_TASK_ID" = A ]; then
  grep -v '"id":"A"' tasks.jsonl > tasks.jsonl.tmp && mv tasks.jsonl.tmp tasks.jsonl
else
  work B.txt kept
  ralph task complete B > /dev/null
fi
"#,
        );
    let run = crate::support::finish(project.run_command(&[]), 60);
    assert_eq!(run.code, 0, "{run:#?}");
    let first = run
        .stderr
        .lines()
        .find(|line| line.starts_with("#1 "))
        .unwrap();
    assert!(
        first.starts_with("#1 A [-] exit code 0 ") && first.ends_with(" -> vanished"),
        "{run:#?}"
    );
    assert_eq!(ids(&project.json_lines("tasks-done.jsonl")), ["B"]);
    assert_eq!(project.git(&["rev-parse", "--abbrev-ref", "HEAD"]), "main");
    assert_eq!(project.read("tasks.jsonl"), "");
}

/// The base moved under a task that then split: its work so far cannot
/// be merged, so the task is blocked with the way out, and its children
/// wait for it.
#[test]
fn a_split_task_whose_branch_conflicts_with_a_moved_base_is_blocked() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"feature","status":"pending","leaf":true}"#)
        .git_init()
        .agent(
            r#"if [ "$RALPH_TASK_ITERATION" = 1 ]; then work shared.txt branch
else ralph task split "$RALPH_TASK_ID" "one" "two" > /dev/null; fi
"#,
        );
    crate::support::finish(project.run_command(&["--once"]), 60);
    move_base(&project);
    let run = crate::support::finish(project.run_command(&[]), 60);
    assert_eq!(run.code, 10, "{run:#?}");
    let tasks = project.json_lines("tasks.jsonl");
    assert_eq!(tasks[0]["id"], "A");
    assert_eq!(tasks[0]["status"], "blocked", "{run:#?}");
    assert_eq!(
        tasks[0]["blocked_reason"],
        "its branch task/A-feature conflicts with the base in shared.txt; merge it into main by hand (resolving the conflict) and delete it, then set the task pending again: its children wait for it"
    );
    assert_eq!(
        phases(&project, "A").last().map(String::as_str),
        Some("block/blocked")
    );
    assert!(phases(&project, "A").contains(&"split/merge_conflict".to_owned()));
    // The children wait (no iteration works on them); the base has the
    // other change only.
    assert_eq!(tasks[1]["id"], "A.1");
    assert_eq!(project.calls().len(), 2, "{run:#?}");
    assert_eq!(project.git(&["show", "main:shared.txt"]), "base");
}

#[test]
fn a_failed_verify_run_after_the_queue_drained_fails_the_run() {
    let project = TestProject::new()
        .file("config/ralph.yaml", "verify:\n  run:\n    - \"exit 4\"\n")
        .task(r#"{"id":"A","title":"feature","status":"pending","leaf":true}"#)
        .git_init()
        .agent(COMPLETE);
    let run = project.run(&[]);
    assert_eq!(run.code, 10, "{run:#?}");
    let result = result(&project);
    assert_eq!(result["status"], "blocked");
    assert_eq!(
        result["reason"],
        "the queue drained but a verify.run command failed"
    );
    assert_eq!(result["verify_run"][0]["passed"], false, "{result}");
    assert_eq!(project.read("tasks.jsonl"), "", "A was merged first");
}

#[test]
fn a_split_task_is_merged_and_the_loop_goes_on_with_its_children() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"big job","status":"pending","leaf":true}"#)
        .git_init()
        .agent(&format!(
            r#"if [ "$RALPH_TASK_ID" = A ]; then
  work plan.txt "two parts"
  ralph task split A "part one" "part two" > /dev/null
  exit 0
fi
{COMPLETE}"#
        ));
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        project.calls(),
        ["1 A 1 none", "2 A.1 1 none", "3 A.2 1 none"]
    );
    assert_eq!(
        log(&project, "%s"),
        [
            "[A.2] part two",
            "[A.1] part one",
            "[A] big job",
            "initial commit"
        ]
    );
    assert_eq!(
        project.git(&["log", "-1", "--format=%B", "main~2"]),
        "[A] big job\n\n- A: plan.txt\n\nSplit-into: A.1, A.2"
    );
    assert_eq!(
        project.git(&["log", "-1", "--format=%B", "main"]),
        "[A.2] part two\n\n- A.2: A.2.txt\n\nCompletes: A.2\nCompletes: A"
    );
    assert_eq!(
        ids(&project.json_lines("tasks-done.jsonl")),
        ["A.1", "A.2", "A"]
    );
    assert_eq!(project.read("tasks.jsonl"), "");
    assert_eq!(
        project.git(&["branch", "--format=%(refname:short)"]),
        "main"
    );
    assert_eq!(result(&project)["status"], "drained");
}

/// An agent that leaves `tasks.jsonl` broken: the iteration is an
/// `invalid_queue` failure naming the file and line, and no agent runs on
/// the broken queue (a person's to fix): the run ends with exit 30, the
/// work kept on the branch and the last valid queue kept aside. Fixed by
/// hand, the next run goes on with the task.
#[test]
fn a_tasks_file_broken_by_the_agent_stops_the_run_until_a_person_fixes_it() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"careless","status":"pending","leaf":true}"#)
        .git_init()
        .agent(
            r#"if [ "$RALPH_TASK_ITERATION" = 1 ]; then
  work A.txt first
  echo '{"id":"B","title":' >> tasks.jsonl
  exit 0
fi
ralph task complete A > /dev/null
"#,
        );
    let run = project.run(&[]);
    assert_eq!(run.code, 30, "{run:#?}");
    assert_eq!(project.calls(), ["1 A 1 none"]);
    assert!(
        run.stderr.contains("A: invalid_queue: tasks.jsonl was left invalid during the iteration (by the agent or by hand): tasks.jsonl:2:"),
        "{run:#?}"
    );
    assert!(run.stderr.contains("error: tasks.jsonl:2: "), "{run:#?}");
    // The copy holds the last valid queue, not the broken one.
    let valid = project.read(".ralph/queue/tasks.jsonl.valid");
    assert_eq!(
        valid,
        "{\"id\":\"A\",\"title\":\"careless\",\"status\":\"active\",\"leaf\":true}\n"
    );
    // The person puts the valid queue back; the task goes on where it was.
    std::fs::write(project.path().join("tasks.jsonl"), valid).unwrap();
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.calls(), ["1 A 1 none", "1 A 2 debugger"]);
    assert_eq!(ids(&project.json_lines("tasks-done.jsonl")), ["A"]);
    assert_eq!(log(&project, "%s"), ["[A] careless", "initial commit"]);
    assert_eq!(result(&project)["status"], "drained");
}

#[test]
fn an_agent_that_checks_out_the_base_is_brought_back_with_evidence() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"wanderer","status":"pending","leaf":true}"#)
        .git_init()
        .agent(&format!(
            r#"if [ "$RALPH_TASK_ITERATION" = 1 ]; then
  work A.txt first
  git checkout -q main
  exit 0
fi
{COMPLETE}"#
        ));
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.calls(), ["1 A 1 none", "2 A 2 debugger"]);
    let prompt = project.read(".ralph/prompts/2-A.md");
    assert!(
        prompt.contains("the agent left the task branch (HEAD was on branch main); ralph checked task/A-wanderer out again"),
        "{prompt}"
    );
    assert_eq!(log(&project, "%s"), ["[A] wanderer", "initial commit"]);
    assert_eq!(
        project.git(&["show", "--format=", "--name-only", "main"]),
        "A.txt\ntasks-done.jsonl\ntasks.jsonl"
    );
}

#[test]
fn an_agent_that_commits_on_the_base_is_told_so() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"stray","status":"pending","leaf":true}"#)
        .git_init()
        .agent(&format!(
            r#"if [ "$RALPH_TASK_ITERATION" = 1 ]; then
  work A-1.txt first
  git checkout -q main
  work stray.txt oops
  exit 0
fi
{COMPLETE}"#
        ));
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.calls(), ["1 A 1 none", "2 A 2 debugger"]);
    let prompt = project.read(".ralph/prompts/2-A.md");
    assert!(
        prompt.contains(
            "the agent left the task branch (HEAD was on branch main); ralph checked task/A-stray out again; \
             the agent committed on the base branch main (A: stray.txt); ralph does not rewrite the base, so undo it by hand if it was wrong"
        ),
        "{prompt}"
    );
    // The stray commit is on the base; the task's own work is squashed on top.
    assert_eq!(
        log(&project, "%s"),
        ["[A] stray", "A: stray.txt", "initial commit"]
    );
    assert_eq!(
        project.git(&["log", "-1", "--format=%B", "main"]),
        "[A] stray\n\n- A: A-1.txt\n- A: A.txt\n\nCompletes: A"
    );
    // Reported once, when it happened: not again in every later iteration.
    assert_eq!(
        result(&project)["failures"],
        serde_json::json!({"left_branch": 1})
    );
    assert_eq!(project.git(&["status", "--porcelain"]), "");
}

#[test]
fn a_task_added_by_another_process_during_a_run_is_kept_and_worked_on() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"first","status":"pending","leaf":true}"#)
        .git_init()
        .agent(&format!(
            r#"if [ "$RALPH_TASK_ID" = A ]; then
  touch "$REC/waiting"
  while [ ! -e "$REC/go" ]; do sleep 0.02; done
fi
{COMPLETE}"#
        ));
    let child = project
        .run_command(&[])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(&project.aux().join("rec/waiting"));
    project.ralph(&["task", "add", "added meanwhile"]).success();
    std::fs::write(project.aux().join("rec/go"), "").unwrap();
    let run = crate::support::wait_for(child, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.calls(), ["1 A 1 none", "2 B 1 none"]);
    assert_eq!(ids(&project.json_lines("tasks-done.jsonl")), ["A", "B"]);
    assert_eq!(
        log(&project, "%s"),
        ["[B] added meanwhile", "[A] first", "initial commit"]
    );
}

#[test]
fn run_once_runs_one_iteration_and_dry_run_writes_nothing() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"one","status":"pending","leaf":true}"#)
        .task(r#"{"id":"B","title":"two","status":"pending","leaf":true}"#)
        .git_init()
        .agent("work \"$RALPH_TASK_ID.txt\" x\n");

    let before = listing(&project);
    let agent = project.aux().join("agent.sh");
    let dry = project
        .ralph_command(&["run", "--dry-run", "--agent-cmd", agent.to_str().unwrap()])
        .output()
        .unwrap();
    let dry = crate::support::Run::from(dry);
    assert_eq!(dry.code, 0, "{dry:#?}");
    let lines: Vec<&str> = dry.stdout.lines().collect();
    assert_eq!(lines[0], "task:   A one");
    assert_eq!(lines[1], "branch: task/A-one");
    assert_eq!(lines[2], "role:   none (no trigger is true)");
    assert!(
        lines[3].starts_with("prompt: ") && lines[3].ends_with(" bytes"),
        "{lines:?}"
    );
    assert_eq!(
        lines[4],
        format!("agent:  {0} (command `{0}`)", agent.display())
    );
    // The tests run agents unconfined (tests/it/sandbox.rs confines them).
    assert_eq!(lines[5], "sandbox: off");
    assert_eq!(lines.len(), 6);
    assert_eq!(listing(&project), before, "--dry-run wrote something");
    assert_eq!(
        project.git(&["branch", "--format=%(refname:short)"]),
        "main"
    );

    let run = project.run(&["--once"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.calls(), ["1 A 1 none"]);
    let result = result(&project);
    assert_eq!(result["status"], "stopped");
    assert_eq!(result["reason"], "--once: one iteration done");
    assert_eq!(result["iterations"], 1);
    // A second --once resumes the same task.
    let run = project.run(&["--once"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.calls(), ["1 A 1 none", "1 A 2 none"]);

    let status = project.ralph(&["status"]);
    assert_eq!(status.code, 0);
    assert!(
        status.stdout.starts_with(
            "run: none live\ntask: A one (iteration 1, role none, phase ended)\nqueue: 2 tasks (1 pending, 1 active); 0 archived\nlast run: stopped at "
        ),
        "{status:#?}"
    );

    // After two iterations, --dry-run names the prompt file the next one
    // writes.
    let with_file = format!("{} {{prompt_file}}", agent.display());
    let dry = crate::support::Run::from(
        project
            .ralph_command(&["run", "--dry-run", "--agent-cmd", &with_file])
            .output()
            .unwrap(),
    );
    assert_eq!(dry.code, 0, "{dry:#?}");
    let prompt = project.path().join(".ralph/prompts/3-A.md");
    assert!(
        dry.stdout
            .contains(&format!("agent:  {} {}", agent.display(), prompt.display())),
        "{}",
        dry.stdout
    );
}

/// Every path in the project (outside `.git/`) with its contents.
fn listing(project: &TestProject) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &std::path::Path, dir: &std::path::Path, out: &mut Vec<(String, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            if rel == ".git" {
                continue;
            }
            if path.is_dir() {
                out.push((rel, Vec::new()));
                walk(root, &path, out);
            } else {
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(project.path(), project.path(), &mut out);
    out.sort();
    out
}

#[test]
fn a_run_that_cannot_start_still_writes_its_result() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"one","status":"pending","leaf":true}"#)
        .git_init()
        .agent(COMPLETE)
        .file("dirty.txt", "uncommitted\n");
    let run = project.run(&[]);
    assert_eq!(run.code, 30, "{run:#?}");
    assert_eq!(project.calls(), Vec::<String>::new());
    let result = result(&project);
    assert_eq!(result["status"], "failed");
    assert!(
        result["reason"].as_str().unwrap().contains("dirty.txt"),
        "{result}"
    );
}

#[test]
fn a_ready_task_gets_a_review_before_it_is_merged() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"one","status":"pending","leaf":true}"#)
        .git_init()
        .agent(
            r#"if [ "$RALPH_ROLE" = reviewer ]; then
  ralph task complete A > /dev/null
else
  work A.txt x
  ralph task ready A > /dev/null
fi
"#,
        );
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.calls(), ["1 A 1 none", "2 A 2 reviewer"]);
    assert_eq!(log(&project, "%s"), ["[A] one", "initial commit"]);
}

#[test]
fn a_spent_run_budget_leaves_the_work_for_the_next_run() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"one","status":"pending","leaf":true}"#)
        .git_init()
        .agent("work \"A-$RALPH_TASK_ITERATION.txt\" x\n");
    let run = project.run(&["--max-iterations", "2"]);
    assert_eq!(run.code, 10, "{run:#?}");
    assert_eq!(project.calls(), ["1 A 1 none", "2 A 2 none"]);
    let result = result(&project);
    assert_eq!(result["status"], "budget_exhausted");
    assert_eq!(
        result["reason"],
        "max_iterations (2) spent with 1 task left"
    );
    assert_eq!(result["remaining"], 1);
    assert!(
        run.stderr
            .contains("ralph: budget_exhausted — max_iterations (2) spent with 1 task left\n"),
        "{run:#?}"
    );
    assert_eq!(log(&project, "%s"), ["initial commit"]);
    assert_eq!(
        project.git(&["log", "--format=%s", "main..task/A-one"]),
        "A: A-2.txt\nA: A-1.txt"
    );
}

#[test]
fn invalid_input_stops_the_run_before_any_agent_with_exit_30() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"one","status":"pending","leaf":true}"#)
        .git_init()
        .agent(COMPLETE);
    let missing = project.path().join("no-such-agent");
    let run = crate::support::finish(
        project.ralph_command(&["run", "--agent-cmd", missing.to_str().unwrap()]),
        30,
    );
    assert_eq!(run.code, 30, "{run:#?}");
    assert!(run.stderr.starts_with("error: agent "), "{run:#?}");
    assert_eq!(result(&project)["status"], "failed");

    std::fs::write(project.path().join("tasks.jsonl"), "{\"id\":\"A\"}\n").unwrap();
    let run = project.run(&[]);
    assert_eq!(run.code, 30, "{run:#?}");
    assert_eq!(
        run.stderr.lines().next().unwrap(),
        "error: tasks.jsonl:1: missing field `title`"
    );
    let result = result(&project);
    assert_eq!(result["status"], "failed");
    assert_eq!(result["reason"], "tasks.jsonl:1: missing field `title`");
    assert_eq!(project.calls(), Vec::<String>::new());
}

#[test]
fn work_left_uncommitted_in_any_shape_reaches_the_squash() {
    // The scan after each iteration looks only at what changed (inotify);
    // whatever the agent leaves uncommitted, in new folders, moved folders
    // or deletions, is still committed and merged.
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"reshape","status":"pending","leaf":true}"#)
        .file("lib/old/one.txt", "one\n")
        .file("lib/keep/two.txt", "two\n")
        .git_init()
        .agent(
            r#"case "$RALPH_TASK_ITERATION" in
1) mkdir -p new/deep && echo three > new/deep/three.txt && echo edited > lib/keep/two.txt ;;
2) echo again >> new/deep/three.txt && mv lib/old lib/moved && rm lib/keep/two.txt
   ralph task complete A > /dev/null ;;
esac
"#,
        );
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.calls().len(), 2);
    assert_eq!(
        project.git(&[
            "show",
            "--format=%s",
            "--name-status",
            "--no-renames",
            "main"
        ]),
        "[A] reshape\n\nD\tlib/keep/two.txt\nA\tlib/moved/one.txt\nD\tlib/old/one.txt\nA\tnew/deep/three.txt\nM\ttasks-done.jsonl\nM\ttasks.jsonl"
    );
    assert_eq!(project.read("new/deep/three.txt"), "three\nagain\n");
    assert_eq!(project.git(&["status", "--porcelain"]), "");
}

/// An agent that moves to a branch of its own and leaves uncommitted work
/// there: ralph cannot take the work back safely, so the run stops for a
/// person (exit 10, not the "try again" of 20), naming where and what.
#[test]
fn an_agent_stranded_on_another_branch_with_uncommitted_work_needs_a_person() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"one","status":"pending","leaf":true}"#)
        .git_init()
        .agent(
            r#"echo real > real.txt
git switch -q -c side
work side.txt s
ralph task complete A > /dev/null
"#,
        );
    let run = project.run(&[]);
    assert_eq!(run.code, 10, "{run:#?}");
    assert!(
        run.stderr.ends_with(
            "error: the repository is left on branch side with uncommitted changes (real.txt); ralph cannot return to the task branch safely\nhint: commit or stash those changes on the right branch, check out the task branch, then run again\n"
        ),
        "{run:#?}"
    );
    assert_eq!(project.read("real.txt"), "real\n");
}

/// docs/TASKS.md's hand-archive recipe (`jq ... >> tasks-done.jsonl`, `grep
/// -v ... > tmp && mv tmp tasks.jsonl`) can archive a container's last
/// child without it: the run archives the container as it would have with
/// the child, and the queue drains.
#[test]
fn a_container_whose_last_child_was_archived_by_hand_is_archived_by_the_run() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"a","status":"pending","leaf":false}"#)
        .task(r#"{"id":"B","title":"b","status":"pending","leaf":true}"#)
        .file(
            "tasks-done.jsonl",
            "{\"id\":\"A.1\",\"title\":\"a1\",\"status\":\"complete\",\"leaf\":true,\"completed\":\"2026-01-01T00:00:00Z\",\"commit\":\"abc\"}\n",
        )
        .git_init()
        .agent(COMPLETE);
    project.ralph(&["task", "next"]).ok("B b\n");
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.calls(), ["1 B 1 none"]);
    assert_eq!(project.read("tasks.jsonl"), "");
    let done = project.json_lines("tasks-done.jsonl");
    assert_eq!(ids(&done), ["A.1", "A", "B"]);
    assert_eq!(done[1]["status"], "complete");
    assert_eq!(log(&project, "%s"), ["[B] b", "[A] a", "initial commit"]);
    assert_eq!(
        project.git(&["log", "-1", "--format=%B", "main~1"]),
        "[A] a\n\nCompletes: A"
    );
    assert_eq!(project.git(&["status", "--porcelain"]), "");
    let result = result(&project);
    assert_eq!(result["status"], "drained");
    assert_eq!(result["remaining"], 0);
    assert!(
        project
            .read("ralph.log")
            .contains(" A: all its tasks are archived; archiving it too\n"),
        "{}",
        project.read("ralph.log")
    );
}

/// A container with nothing under it, archived or not (a `jq` edit
/// deleted its children), is neither worked on nor archived unasked: the
/// run, `task next` and `doctor` say what it is and what to do.
#[test]
fn a_container_with_no_tasks_under_it_is_named_with_the_fix() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"a","status":"pending","leaf":false}"#)
        .git_init()
        .agent(COMPLETE);
    let fix = "A is a container with no tasks under it: add tasks under A with `ralph task add TITLE --parent A`, or archive it with `ralph task archive A`";
    project
        .ralph(&["task", "next"])
        .fails(1, &format!("no workable task (1 pending; {fix})\n"));
    let doctor = project.ralph(&["doctor"]);
    assert!(
        doctor.stdout.contains(&format!(
            "warning: queue: {}\n",
            fix.replacen(": ", "; ", 1)
        )),
        "{doctor:#?}"
    );
    assert!(!doctor.stdout.contains("wait on deps"), "{doctor:#?}");
    let run = project.run(&[]);
    assert_eq!(run.code, 10, "{run:#?}");
    assert!(
        run.stderr
            .contains(&format!("ralph: blocked — no workable task left: {fix}\n")),
        "{run:#?}"
    );
    assert_eq!(
        result(&project)["reason"],
        format!("no workable task left: {fix}")
    );
    assert!(project.calls().is_empty());
    assert_eq!(
        project.read("tasks.jsonl"),
        "{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":false}\n"
    );
    assert_eq!(project.read_or_empty("tasks-done.jsonl"), "");
}

/// A queue left broken to the end of a run cannot be counted: the summary
/// and result.json say so (`?`, null) instead of "0 left".
#[test]
fn a_queue_broken_at_the_end_is_not_counted_as_drained() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"careless","status":"pending","leaf":true}"#)
        .task(r#"{"id":"B","title":"next","status":"pending","leaf":true}"#)
        .git_init()
        .agent("echo '{\"id\":\"C\",\"title\":' >> tasks.jsonl\n");
    let mut command = project.run_command(&[]);
    command.env("RALPH_MAX_CONSECUTIVE_FAILURES", "1");
    let run = crate::support::finish(command, 60);
    assert_eq!(run.code, 30, "{run:#?}");
    assert!(run.stderr.contains(", ? blocked, ? left · "), "{run:#?}");
    let result = result(&project);
    assert_eq!(result["remaining"], serde_json::Value::Null, "{result}");
    assert_eq!(result["blocked"], serde_json::Value::Null, "{result}");
}

/// A dry run in a tree the run would refuse says so, with the fix, and
/// exits as that run would (30), still writing nothing.
#[test]
fn a_dry_run_names_what_the_run_would_refuse() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"one","status":"pending","leaf":true}"#)
        .git_init()
        .agent("work A.txt x\n")
        .file("stray.txt", "not committed\n");
    let before = listing(&project);
    let dry = project
        .ralph_command(&["run", "--dry-run"])
        .output()
        .unwrap();
    let dry = crate::support::Run::from(dry);
    assert_eq!(dry.code, 30, "{dry:#?}");
    let dirty = "uncommitted changes in the working tree: stray.txt; commit or stash them (`git stash -u`), or list them in .gitignore; only tasks.jsonl and tasks-done.jsonl may stay modified";
    // No `claude` on the tests' PATH: the default agent is missing too.
    let missing = "agent `claude` not found: no `claude` on PATH; install Claude Code (npm i -g @anthropic-ai/claude-code), or choose another agent: set agent.preset or agent.command in config/ralph.yaml, or pass --agent or --agent-cmd";
    assert!(dry.stdout.starts_with("task:   A one\n"), "{dry:#?}");
    assert!(
        dry.stdout
            .ends_with(&format!("\nrefused: {dirty}\nrefused: {missing}\n")),
        "{dry:#?}"
    );
    let json = project
        .ralph_command(&["run", "--dry-run", "--json"])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json["refused"], serde_json::json!([dirty, missing]));
    assert_eq!(listing(&project), before, "--dry-run wrote something");
    // A setting the run would refuse, with the agent found.
    let config = project
        .read("config/ralph.yaml")
        .replace("branch_prefix: task/", "branch_prefix: \"bad..name/\"");
    let project = project.file("config/ralph.yaml", config);
    let before = listing(&project);
    let agent = project.aux().join("agent.sh");
    let dry = project
        .ralph_command(&[
            "run",
            "--dry-run",
            "--json",
            "--agent-cmd",
            agent.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(dry.status.code(), Some(30));
    let json: serde_json::Value = serde_json::from_slice(&dry.stdout).unwrap();
    let refused = json["refused"].to_string();
    assert!(
        refused.contains("branch_prefix \\\"bad..name/\\\" does not make valid branch names"),
        "{refused}"
    );
    assert_eq!(listing(&project), before, "--dry-run wrote something");
}

/// A template the prompt cannot be made from, and a model a role asks for
/// that the agent cannot take, stop the run before it claims anything:
/// no branch, the queue as it was, HEAD on the base.
#[test]
fn a_broken_template_or_role_model_stops_the_run_before_any_claim() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"one","status":"pending","leaf":true}"#)
        .git_init()
        .agent("work A.txt x\nralph task complete A > /dev/null\n")
        .file("templates/context.md.j2", "{{ task.nope }}");
    project.git(&["add", "-A"]);
    project.git(&["commit", "-q", "-m", "a template"]);
    let queue = project.read("tasks.jsonl");
    let run = project.run(&[]);
    assert_eq!(run.code, 30, "{run:#?}");
    assert!(
        run.stderr.contains(
            "error: templates/context.md.j2:1: undefined value: `task.nope` is undefined\n"
        ),
        "{run:#?}"
    );
    let untouched = |project: &TestProject| {
        assert_eq!(project.read("tasks.jsonl"), queue);
        assert_eq!(project.git(&["branch", "--list", "task/*"]), "");
        assert_eq!(project.git(&["branch", "--show-current"]), "main");
        assert!(project.calls().is_empty());
    };
    untouched(&project);
    project.git(&["rm", "-q", "-r", "templates"]);
    let roles = "triggers:\n  - condition: \"last_iteration_failed\"\n    role: debugger\n    model: opus\n";
    let project = project.file("config/roles.yaml", roles);
    project.git(&["commit", "-q", "-am", "a role with a model"]);
    // A stand-in `amp` on PATH: the preset, which takes no model.
    let amp = project.aux().join("bin/amp");
    std::fs::write(&amp, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&amp, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut command = project.ralph_command(&["run", "--agent", "amp"]);
    command.env("PATH", project.path_with_aux_bin());
    let run = crate::support::finish(command, 60);
    assert_eq!(run.code, 30, "{run:#?}");
    assert!(
        run.stderr
            .contains("agent `amp` cannot choose a model, but model `opus` was asked for"),
        "{run:#?}"
    );
    untouched(&project);
}

#[test]
fn a_dry_run_beside_a_live_run_says_the_run_decides() {
    // The agent says it started, then waits to be let go.
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"waits","status":"pending","leaf":true}"#)
        .git_init()
        .agent(
            r#"touch "$REC/../started"; while [ ! -e "$REC/../go" ]; do sleep 0.01; done
ralph task complete "$RALPH_TASK_ID" > /dev/null"#,
        );
    let mut run = project
        .run_command(&["--quiet"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for_file(&project.aux().join("started"));
    let dry = project.run(&["--dry-run"]);
    let json = project.run(&["--dry-run", "--json"]);
    std::fs::write(project.aux().join("go"), "").unwrap();
    assert!(run.wait().unwrap().success());
    assert_eq!(dry.code, 0, "{dry:#?}");
    let said = format!("a run is under way (pid {}, since ", run.id());
    assert!(dry.stdout.starts_with(&said), "{dry:#?}");
    assert_eq!(json.json()["live_run"]["pid"], run.id(), "{json:#?}");
    // Without a run, not a word of one.
    let after = project.run(&["--dry-run", "--json"]).json();
    assert_eq!(after["live_run"], Value::Null);
}
