//! The worker contract's run (`ralph execute`): a real repository, a
//! scripted agent, and every file it writes checked against the schemas
//! in docs/contract/.

use std::process::Command;

use serde_json::Value;

use crate::contract::assert_valid;
use crate::support::{FINISH, Run, TestProject, by_iteration, finish, wait_for, wait_for_file};

/// The agent's body that finishes its story: its own file, committed,
/// and `ralph task complete`.
const DONE: &str =
    r#"work "$RALPH_TASK_ID.txt" done; ralph task complete "$RALPH_TASK_ID" > /dev/null"#;

const PRD: &str = "# Notes\n\n\
- FR-1: Store a note\n  Acceptance criteria:\n  - a note is saved in notes.txt\n  Verify: test -f S1.txt\n\
- FR-2: List notes\n  Depends on: FR-1\n";

/// A repository initialised with ralph, its agent the fake `agent.sh`
/// (a custom command in its own config/ralph.yaml), a PRD, its own queue
/// with one task of its own, and the working branch `feature/notes`.
fn repo(agent: &str) -> TestProject {
    let p = TestProject::new().git_init().agent(agent);
    // The agent's command, the first of the file's `command:` keys.
    let config = p.read("config/ralph.yaml").replacen(
        "  command: null",
        &format!("  command: {}", p.aux().join("agent.sh").display()),
        1,
    );
    let p = p
        .file("config/ralph.yaml", config)
        .file("prds/notes.md", PRD)
        .task(r#"{"id":"A","title":"the repository's own task","status":"pending","leaf":true}"#);
    p.git(&["add", "-A"]);
    p.git(&["commit", "-q", "-m", "notes PRD"]);
    p.git(&["branch", "feature/notes"]);
    p
}

/// The run input, with `change` applied, valid by its schema; written to
/// `<aux>/run-input.json`.
fn input(p: &TestProject, change: impl Fn(&mut Value)) {
    let value = input_value(p, change);
    assert_valid("run-input", &value);
    std::fs::write(p.aux().join("run-input.json"), value.to_string()).unwrap();
}

fn input_value(p: &TestProject, change: impl Fn(&mut Value)) -> Value {
    let mut value = serde_json::json!({
        "contract_version": 1,
        "run_id": "run_1",
        "repo_path": p.path().display().to_string(),
        "prd_path": "prds/notes.md",
        "base_branch": "main",
        "working_branch": "feature/notes",
        "limits": {"story_max_attempts": 3, "run_max_attempts": 10, "story_timeout_minutes": 5, "run_timeout_minutes": 30},
        "verification": {"story_commands": [], "run_commands": ["test -f S2.txt"]},
        "agent": {"mode": "ralph_fresh"}
    });
    change(&mut value);
    value
}

/// `ralph plan --input` into `<aux>/out`.
fn plan(p: &TestProject) {
    let (input, out) = (p.aux().join("run-input.json"), p.aux().join("out"));
    let run = p.ralph(&[
        "plan",
        "--input",
        input.to_str().unwrap(),
        "--out-dir",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{run:#?}");
}

/// `ralph execute` of `<aux>/run-input.json` and `<aux>/out/plan.json`,
/// not started yet.
fn execute_command(p: &TestProject) -> Command {
    let aux = p.aux().display().to_string();
    p.ralph_command(&[
        "execute",
        "--input",
        &format!("{aux}/run-input.json"),
        "--plan",
        &format!("{aux}/out/plan.json"),
        "--out-dir",
        &format!("{aux}/out"),
    ])
}

fn execute(p: &TestProject) -> Run {
    finish(execute_command(p), 60)
}

/// A file of the out-dir.
fn out(p: &TestProject, name: &str) -> String {
    std::fs::read_to_string(p.aux().join("out").join(name))
        .unwrap_or_else(|e| panic!("out/{name}: {e}"))
}

/// `result.json`, checked against its schema.
fn result(p: &TestProject) -> Value {
    let value = serde_json::from_str(&out(p, "result.json")).unwrap();
    assert_valid("result", &value);
    value
}

/// `progress.ndjson`, each line checked against its schema.
fn progress(p: &TestProject) -> Vec<Value> {
    out(p, "progress.ndjson")
        .lines()
        .map(|line| {
            let value = serde_json::from_str(line).unwrap();
            assert_valid("progress", &value);
            value
        })
        .collect()
}

/// `story phase attempt status` of each progress event.
fn steps(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            format!(
                "{} {} {} {}",
                e["story_id"].as_str().unwrap_or("-"),
                e["phase"].as_str().unwrap(),
                e["attempt"]
                    .as_u64()
                    .map_or("-".to_owned(), |n| n.to_string()),
                e["status"].as_str().unwrap()
            )
        })
        .collect()
}

/// `id status attempts verification` of each story of the result.
fn stories(result: &Value) -> Vec<String> {
    result["stories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            format!(
                "{} {} {} {}",
                s["id"].as_str().unwrap(),
                s["status"].as_str().unwrap(),
                s["attempts"],
                s["verification"].as_str().unwrap()
            )
        })
        .collect()
}

fn stdout_line(p: &TestProject, rest: &str) -> String {
    format!("{}/out/result.json: {rest}\n", p.aux().display())
}

#[test]
fn stories_are_worked_on_the_working_branch_and_reported_per_attempt() {
    let p = repo(DONE);
    input(&p, |_| {});
    plan(&p);
    let own_queue = p.read("tasks.jsonl");
    let main_before = p.git(&["rev-parse", "main"]);
    let run = execute(&p);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (
            0,
            stdout_line(
                &p,
                "success: 2 of 2 stories done, 0 failed, 0 skipped; next: open_pr"
            )
            .as_str()
        ),
        "{run:#?}"
    );
    let result = result(&p);
    assert_eq!(result["status"], "success");
    assert_eq!(result["reason"], Value::Null);
    assert_eq!(result["next_action"], "open_pr");
    assert_eq!(stories(&result), ["S1 done 1 passed", "S2 done 1 pending"]);
    assert_eq!(
        result["summary"],
        serde_json::json!({"completed": 2, "failed": 0, "skipped": 0})
    );
    assert_eq!(
        steps(&progress(&p)),
        [
            "- plan - ok",
            "- execute - started",
            "S1 execute 1 ok",
            "S1 verify 1 passed",
            "S1 merge 1 ok",
            "S2 execute 1 ok",
            "S2 merge 1 ok",
            "- run_verify - passed",
            "- execute - drained",
        ]
    );
    // The agent worked in the repository, and its `ralph task complete`
    // reached the out-dir's queue, not the repository's own.
    assert_eq!(p.read("tasks.jsonl"), own_queue);
    assert_eq!(p.git(&["rev-parse", "main"]), main_before);
    assert_eq!(
        p.git(&["log", "--format=%s", "main..feature/notes"]),
        "[S2] FR-2: List notes\n[S1] FR-1: Store a note"
    );
    let archived = out(&p, "tasks-done.jsonl");
    assert_eq!(archived.lines().count(), 2, "{archived}");
    // One attempt file per attempt: the prompt's task section and how the
    // attempt went, step by step.
    let attempt = out(&p, "attempts/S1-attempt-1.md");
    assert!(
        attempt.starts_with("# S1 attempt 1: FR-1: Store a note\n\n## Task\n\n# Current task\n\n- Task: S1 FR-1: Store a note\n"),
        "{attempt}"
    );
    assert!(
        attempt.contains("- [ ] a note is saved in notes.txt\n"),
        "{attempt}"
    );
    assert!(
        attempt.ends_with(
            "- result: ok\n- output: .ralph/logs/1-S1.log\n- verify: passed (test -f S1.txt: exit code 0)\n- merge: ok (squash-merged into feature/notes)\n"
        ),
        "{attempt}"
    );
    assert!(!p.aux().join("out/attempts/S1-attempt-2.md").exists());
    assert_eq!(
        out(&p, "critique.md"),
        "# Critique\n\nEvery failed attempt, oldest first.\n\n"
    );
}

#[test]
fn a_failed_check_is_retried_with_its_critique_recorded() {
    // The first attempt at S1 claims it is done without the file its
    // check looks for.
    let p = repo(&by_iteration(
        "RALPH_TASK_ITERATION",
        &format!(
            "1) if [ \"$RALPH_TASK_ID\" = S1 ]; then work wip.txt wip; ralph task complete S1 > /dev/null; else work \"$RALPH_TASK_ID.txt\" done; ralph task complete \"$RALPH_TASK_ID\" > /dev/null; fi ;;\n{FINISH}"
        ),
    ));
    input(&p, |_| {});
    plan(&p);
    execute(&p).success();
    let result = result(&p);
    assert_eq!(stories(&result), ["S1 done 2 passed", "S2 done 1 pending"]);
    assert_eq!(
        steps(&progress(&p))[2..7],
        [
            "S1 execute 1 ok",
            "S1 verify 1 failed",
            "S1 critique 1 verify_failed",
            "S1 execute 2 ok",
            "S1 verify 2 passed",
        ]
    );
    let critique = out(&p, "critique.md");
    assert!(
        critique.starts_with(
            "# Critique\n\nEvery failed attempt, oldest first.\n\n## S1: FR-1: Store a note\n\n### Iteration 1 · "
        ),
        "{critique}"
    );
    assert!(
        critique
            .contains("the task's own verification command `test -f S1.txt` failed (exit code 1)"),
        "{critique}"
    );
    assert!(
        out(&p, "attempts/S1-attempt-1.md").ends_with(
            "- verify: failed (test -f S1.txt: exit code 1)\n- critique: verify_failed (the task's own verification command `test -f S1.txt` failed (exit code 1))\n"
        )
    );
    // The second attempt's prompt carried the first one's failure.
    let second = std::fs::read_to_string(p.aux().join("out/.ralph/prompts/2-S1.md")).unwrap();
    assert!(
        second.contains("`test -f S1.txt` failed (exit code 1)"),
        "{second}"
    );
}

#[test]
fn a_spent_attempt_budget_blocks_the_run_with_a_draft_pr_next() {
    // The agent works but never finishes.
    let p = repo(r#"work "wip-$RALPH_TASK_ITERATION.txt" wip"#);
    input(&p, |v| v["limits"]["story_max_attempts"] = 2.into());
    plan(&p);
    let run = execute(&p);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (
            10,
            stdout_line(
                &p,
                "blocked (attempt_budget_exhausted): 0 of 2 stories done, 2 failed, 0 skipped; next: open_draft_pr"
            )
            .as_str()
        ),
        "{run:#?}"
    );
    assert!(
        run.stderr
            .ends_with("S1: spent max_iterations_per_task (2) without finishing\n"),
        "{run:#?}"
    );
    let result = result(&p);
    assert_eq!(result["status"], "blocked");
    assert_eq!(result["reason"], "attempt_budget_exhausted");
    assert_eq!(result["next_action"], "open_draft_pr");
    assert_eq!(
        stories(&result),
        ["S1 failed 2 pending", "S2 blocked 0 pending"]
    );
    assert_eq!(p.calls().len(), 2);
    // Run again, the spent story is blocked again at once: no attempt.
    let again = execute(&p);
    assert_eq!(again.code, 10, "{again:#?}");
    assert_eq!(p_result(&p)["reason"], "attempt_budget_exhausted");
    assert_eq!(p.calls().len(), 2);
}

#[test]
fn a_failing_run_check_is_run_verification_failed() {
    let p = repo(DONE);
    input(&p, |v| {
        v["verification"]["run_commands"] =
            serde_json::json!(["test -f S1.txt", "test -f nowhere.txt"])
    });
    plan(&p);
    let run = execute(&p);
    assert_eq!(run.code, 10, "{run:#?}");
    let result = result(&p);
    assert_eq!(result["status"], "blocked");
    assert_eq!(result["reason"], "run_verification_failed");
    assert_eq!(
        result["error"],
        "run verification failed: test -f nowhere.txt"
    );
    assert_eq!(stories(&result), ["S1 done 1 passed", "S2 done 1 pending"]);
    let events = steps(&progress(&p));
    assert_eq!(
        events[events.len() - 3..],
        [
            "- run_verify - passed",
            "- run_verify - failed",
            "- execute - blocked"
        ]
    );
}

#[test]
fn an_agent_that_keeps_failing_is_agent_exit_nonzero_and_retryable() {
    let p = repo("exit 3");
    // Three failures in a row block a story; one attempt is left.
    input(&p, |v| v["limits"]["story_max_attempts"] = 4.into());
    plan(&p);
    let run = execute(&p);
    assert_eq!(run.code, 20, "{run:#?}");
    let result = result(&p);
    assert_eq!(result["status"], "failed");
    assert_eq!(result["reason"], "agent_exit_nonzero");
    assert_eq!(result["next_action"], "retry");
    assert_eq!(
        stories(&result),
        ["S1 failed 3 pending", "S2 blocked 0 pending"]
    );
    let events = steps(&progress(&p));
    assert_eq!(
        events[2..8],
        [
            "S1 execute 1 exit",
            "S1 critique 1 exit",
            "S1 execute 2 exit",
            "S1 critique 2 exit",
            "S1 execute 3 exit",
            "S1 critique 3 exit",
        ]
    );
    let critique = out(&p, "critique.md");
    assert_eq!(
        critique.matches("## S1: FR-1: Store a note\n").count(),
        3,
        "{critique}"
    );
    assert!(
        out(&p, "attempts/S1-attempt-3.md").contains("- result: exit\n"),
        "{}",
        out(&p, "attempts/S1-attempt-3.md")
    );
    // `retry` means it: the same command, once the agent works, goes on.
    let p = p.agent(DONE);
    let run = execute(&p);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        stories(&p_result(&p)),
        ["S1 done 4 passed", "S2 done 1 pending"]
    );
}

#[test]
fn a_timeout_on_the_last_attempt_is_agent_timeout_and_retryable() {
    let p = repo("sleep 30");
    input(&p, |_| {});
    plan(&p);
    // One failure blocks the story, with attempts left for a retry.
    let mut command = execute_command(&p);
    command
        .env("RALPH_AGENT_TIMEOUT", "1s")
        .env("RALPH_MAX_CONSECUTIVE_FAILURES", "1");
    let run = finish(command, 60);
    assert_eq!(run.code, 20, "{run:#?}");
    let result = result(&p);
    assert_eq!(result["reason"], "agent_timeout");
    assert_eq!(result["next_action"], "retry");
    assert_eq!(
        stories(&result),
        ["S1 failed 1 pending", "S2 blocked 0 pending"]
    );
}

#[test]
fn sigterm_leaves_a_result_and_the_same_command_resumes_without_redoing_done_stories() {
    // S2's first attempt hangs until the test stops the run.
    let p = repo(&format!(
        "if [ \"$RALPH_TASK_ID\" = S2 ] && [ ! -f \"$REC/resumed\" ]; then touch \"$REC/hanging\"; sleep 30; fi\n{DONE}"
    ));
    input(&p, |_| {});
    plan(&p);
    let child = execute_command(&p)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(&p.aux().join("rec/hanging"));
    // While it runs, result.json already says a run is under way.
    let under_way = result(&p);
    assert_eq!(under_way["status"], "failed");
    assert_eq!(
        under_way["error"],
        "the run is under way, or ended without writing its result (killed?); run the same command to resume"
    );
    assert_eq!(under_way["next_action"], "retry");
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let run = wait_for(child, 60);
    assert_eq!(run.code, 20, "{run:#?}");
    let stopped = result(&p);
    assert_eq!(stopped["status"], "failed");
    assert_eq!(stopped["reason"], Value::Null);
    assert_eq!(
        stopped["error"],
        "interrupted by a signal; run the same command to resume"
    );
    assert_eq!(stopped["next_action"], "retry");
    assert_eq!(
        stories(&stopped),
        ["S1 done 1 passed", "S2 failed 1 pending"]
    );
    let before = out(&p, "progress.ndjson");
    // The attempt the signal stopped is said so, not "ok".
    assert!(
        steps(&progress(&p)).contains(&"S2 execute 1 interrupted".to_owned()),
        "{before}"
    );
    assert!(out(&p, "attempts/S2-attempt-1.md").contains("\n- result: interrupted\n"));

    std::fs::write(p.aux().join("rec/resumed"), "").unwrap();
    execute(&p).success();
    let resumed = result(&p);
    assert_eq!(resumed["status"], "success");
    assert_eq!(stories(&resumed), ["S1 done 1 passed", "S2 done 2 pending"]);
    // S1 was not started again; progress was appended to.
    let calls: Vec<String> = p.calls().iter().map(|c| c[2..].to_owned()).collect();
    assert_eq!(calls, ["S1 1 none", "S2 1 none", "S2 2 none"]);
    let after = out(&p, "progress.ndjson");
    assert!(after.starts_with(&before), "{after}");
    assert!(after.len() > before.len());
    progress(&p);
}

#[test]
fn model_hint_swaps_the_agent_and_nothing_else() {
    // The repository's config names the fake agent; the hint names the
    // opencode preset, whose stand-in on PATH does the same work.
    let p = repo("echo 'the configured agent ran' >> \"$REC/wrong\"; exit 1");
    p.script(
        "bin/opencode",
        &format!("echo \"$*\" > \"$REC/opencode-argv\"\n{DONE}"),
    );
    input(&p, |v| v["agent"]["model_hint"] = "opencode".into());
    plan(&p);
    let mut command = execute_command(&p);
    command.env("PATH", p.path_with_aux_bin());
    let run = finish(command, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(result(&p)["status"], "success");
    assert_eq!(p.rec("wrong"), "");
    assert!(
        p.rec("opencode-argv")
            .starts_with("run --format json --auto"),
        "{}",
        p.rec("opencode-argv")
    );
    let first = &progress(&p)[2];
    assert_eq!(first["context"]["agent"], "`opencode`");
}

#[test]
fn an_invalid_plan_or_branch_exits_30_with_a_result() {
    let p = repo(DONE);
    input(&p, |_| {});
    plan(&p);
    let plan_path = p.aux().join("out/plan.json");
    let good = std::fs::read_to_string(&plan_path).unwrap();

    std::fs::write(&plan_path, good.replace("\"run_1\"", "\"run_2\"")).unwrap();
    let run = execute(&p);
    assert_eq!(run.code, 30, "{run:#?}");
    assert!(
        run.stderr.starts_with(&format!(
            "error: {}: $.run_id: \"run_2\" is not the input's run \"run_1\"; plan this input with `ralph plan --input`\n",
            plan_path.display()
        )),
        "{run:#?}"
    );
    let refused = result(&p);
    assert_eq!(refused["reason"], "plan_generation_failed");
    assert_eq!(refused["next_action"], "human_input");

    std::fs::write(
        &plan_path,
        good.replace("\"deps\": []", "\"deps\": [\"S2\"]"),
    )
    .unwrap();
    let run = execute(&p);
    assert_eq!(run.code, 30, "{run:#?}");
    assert!(
        run.stderr
            .contains(": $.stories[0].deps[0]: \"S2\" is not a story before S1\n"),
        "{run:#?}"
    );

    std::fs::write(&plan_path, &good).unwrap();
    input(&p, |v| v["working_branch"] = "feature/none".into());
    let run = execute(&p);
    assert_eq!(run.code, 30, "{run:#?}");
    assert!(
        run.stderr
            .contains(": $.working_branch: there is no branch feature/none in "),
        "{run:#?}"
    );
    assert_eq!(result(&p)["reason"], "plan_generation_failed");

    let refused = input_value(&p, |v| v["agent"]["mode"] = "session".into());
    std::fs::write(p.aux().join("run-input.json"), refused.to_string()).unwrap();
    let run = execute(&p);
    assert_eq!(run.code, 30, "{run:#?}");
    assert!(
        run.stderr.contains(
            ": $.agent.mode: \"session\" is not a mode; the modes are ralph_fresh, session_loop, single_pass\n"
        ),
        "{run:#?}"
    );
    // Nothing ran, and the out-dir holds no queue.
    assert!(p.calls().is_empty());
    assert!(!p.aux().join("out/tasks.jsonl").exists());
}

/// A mode of the contract that the agent's backend does not offer is
/// refused before any agent runs, naming the modes it does offer.
#[test]
fn a_mode_the_agent_does_not_offer_is_refused() {
    let p = repo(DONE);
    input(&p, |v| v["agent"]["mode"] = "session_loop".into());
    plan(&p);
    let run = execute(&p);
    assert_eq!(run.code, 30, "{run:#?}");
    let agent = p.aux().join("agent.sh");
    assert!(
        run.stderr.starts_with(&format!(
            "error: agent.mode session_loop is not offered by command `{}`, which offers ralph_fresh\nhint: set agent.mode to one it offers in the run input, or choose an agent that offers this mode (docs/AGENT.md lists each backend's modes)\n",
            agent.display()
        )),
        "{run:#?}"
    );
    assert!(p.calls().is_empty());
    let result = result(&p);
    assert_eq!(result["status"], "failed", "{result}");
}

#[test]
fn a_spent_run_timeout_is_run_timeout_with_the_rest_skipped() {
    // The test clock (`<aux>/clock`): S1's attempt takes 31 of the run's
    // 30 minutes.
    let p = repo(&format!(
        "printf '2026-01-01T00:31:00Z\\n' > \"$REC/../clock.tmp\" && mv \"$REC/../clock.tmp\" \"$REC/../clock\"\n{DONE}"
    ));
    let clock = p.aux().join("clock");
    std::fs::write(&clock, "2026-01-01T00:00:00Z\n").unwrap();
    input(&p, |_| {});
    plan(&p);
    let mut command = execute_command(&p);
    command.env("RALPH_TEST_CLOCK", &clock);
    let run = finish(command, 60);
    assert_eq!(run.code, 10, "{run:#?}");
    let result = result(&p);
    assert_eq!(result["status"], "blocked");
    assert_eq!(result["reason"], "run_timeout");
    assert_eq!(result["next_action"], "open_draft_pr");
    assert_eq!(
        stories(&result),
        ["S1 done 1 passed", "S2 skipped 0 pending"]
    );
    assert_eq!(
        result["summary"],
        serde_json::json!({"completed": 1, "failed": 0, "skipped": 1})
    );
}

#[test]
fn a_checkout_ralph_cannot_work_in_leaves_a_result_saying_why() {
    let p = repo(DONE).file("stray.txt", "uncommitted\n");
    p.git(&["add", "stray.txt"]);
    input(&p, |_| {});
    plan(&p);
    let run = execute(&p);
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (
            30,
            stdout_line(
                &p,
                "failed: 0 of 2 stories done, 0 failed, 2 skipped; next: human_input"
            )
            .as_str(),
            "error: uncommitted changes in the working tree: stray.txt\nhint: commit or stash them (`git stash -u`), or list them in .gitignore; only tasks.jsonl and tasks-done.jsonl may stay modified\n"
        ),
    );
    let result = result(&p);
    assert_eq!(result["status"], "failed");
    assert_eq!(result["next_action"], "human_input");
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .starts_with("uncommitted changes in the working tree: stray.txt\nhint: "),
        "{result:#}"
    );
    assert_eq!(
        stories(&result),
        ["S1 skipped 0 pending", "S2 skipped 0 pending"]
    );
    assert!(p.calls().is_empty());
}

/// Once a run's execute has begun, planning it again from a document
/// changed since is refused: the run works to the plan it started with,
/// which stays as it was.
#[test]
fn a_run_under_way_is_not_planned_again_from_a_changed_document() {
    let p = repo(DONE);
    input(&p, |_| {});
    plan(&p);
    execute(&p).success();
    let planned = out(&p, "plan.json");
    let p = p.file("prds/notes.md", format!("{PRD}- FR-3: Delete a note\n"));
    let (input, out_dir) = (p.aux().join("run-input.json"), p.aux().join("out"));
    p.ralph(&[
        "plan",
        "--input",
        input.to_str().unwrap(),
        "--out-dir",
        out_dir.to_str().unwrap(),
    ])
    .fails(
        30,
        &format!(
            "error: {}: run \"run_1\" is executing a plan made from other bytes of prds/notes.md; keep that plan, or give a new run a fresh --out-dir\nhint: docs/contract/ holds the schema of every file of the worker contract\n",
            out_dir.display()
        ),
    );
    assert_eq!(out(&p, "plan.json"), planned);
}

/// A missing agent is said in the contract's own terms: the input names
/// the agent, execute has no `--agent` flags to point at.
#[test]
fn a_missing_agent_is_fixed_through_the_input_not_flags() {
    let p = repo(DONE);
    let config = p.read("config/ralph.yaml").replace(
        &format!("  command: {}", p.aux().join("agent.sh").display()),
        "  command: null",
    );
    let p = p.file("config/ralph.yaml", config);
    p.git(&["commit", "-q", "-am", "no agent command"]);
    input(&p, |_| {});
    plan(&p);
    let run = execute(&p);
    assert_eq!(run.code, 30, "{run:#?}");
    assert!(
        run.stderr
            .ends_with(", or name one in the run input's agent.model_hint\n"),
        "{run:#?}"
    );
    let error = result(&p)["error"].as_str().unwrap().to_owned();
    assert!(!error.contains("--agent"), "{error}");
}

#[test]
fn an_out_dir_of_another_plan_is_refused_and_json_prints_the_result() {
    let p = repo(DONE);
    input(&p, |_| {});
    plan(&p);
    let mut command = execute_command(&p);
    command.arg("--json");
    let run = finish(command, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    let printed: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(printed, result(&p));
    let queue = out(&p, "tasks-done.jsonl");

    let plan_path = p.aux().join("out/plan.json");
    let changed = out(&p, "plan.json").replace("List notes", "List the notes");
    std::fs::write(&plan_path, changed).unwrap();
    let run = execute(&p);
    assert_eq!(run.code, 30, "{run:#?}");
    assert!(
        run.stderr.ends_with(
            "/out: holds run \"run_1\" of another plan; give this run a fresh --out-dir\nhint: docs/contract/ holds the schema of every file of the worker contract\n"
        ),
        "{run:#?}"
    );
    assert_eq!(result(&p)["reason"], "plan_generation_failed");
    // The finished run's records are kept.
    assert_eq!(out(&p, "tasks-done.jsonl"), queue);
}

#[test]
fn execute_never_pushes_nor_opens_a_pull_request_whatever_the_config_says() {
    // With these settings `ralph run` would push (to no remote) and need gh.
    let p = repo(DONE);
    let config = p
        .read("config/ralph.yaml")
        .replace("  push: never", "  push: on_merge")
        .replace("delivery: local", "delivery: pr");
    let p = p.file("config/ralph.yaml", config);
    p.git(&["commit", "-q", "-am", "push and pull requests"]);
    p.git(&["branch", "-f", "feature/notes", "main"]);
    input(&p, |_| {});
    plan(&p);
    let run = execute(&p);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(result(&p)["status"], "success");
    let events = std::fs::read_to_string(p.aux().join("out/.ralph/events.ndjson")).unwrap();
    assert!(!events.contains("\"phase\":\"push\""), "{events}");
}

/// [`result`], for tests whose `result` names a value already.
fn p_result(p: &TestProject) -> Value {
    result(p)
}

/// A story the agent splits is done when its parts are, but its own
/// checks never ran: its verification is `pending`, not `passed`. The
/// parts' events, and those of a task the agent adds beside the stories,
/// keep progress.ndjson within its schema: a part's are its story's, an
/// added task's no story's, each naming the task in its context.
#[test]
fn a_split_story_is_not_reported_verified_and_its_parts_fit_the_schema() {
    let p = repo(&format!(
        r#"case "$RALPH_TASK_ID" in
S1) ralph task split S1 "part one" "part two" > /dev/null ;;
S2) ralph task add "follow-up" > /dev/null; {DONE} ;;
*) {DONE} ;;
esac
"#
    ));
    input(&p, |_| {});
    plan(&p);
    let run = execute(&p);
    assert_eq!(run.code, 0, "{run:#?}");
    let result = result(&p);
    assert_eq!(result["status"], "success");
    let stories = stories(&result);
    assert_eq!(stories[0], "S1 done 1 pending", "{stories:?}");
    let events = progress(&p);
    let tasks: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| {
            let task = e["context"]["task"].as_str()?;
            Some((
                task.to_owned(),
                e["story_id"].as_str().unwrap_or("-").to_owned(),
            ))
        })
        .collect();
    for part in ["S1.1", "S1.2"] {
        assert!(
            tasks.contains(&(part.to_owned(), "S1".to_owned())),
            "{tasks:?}"
        );
    }
    assert!(
        tasks
            .iter()
            .any(|(task, story)| !task.starts_with('S') && story == "-"),
        "{tasks:?}"
    );
}

/// `session_loop` is accepted where the agent's backend offers it: the
/// Codex app-server (here its scripted stand-in) works each story.
#[test]
fn session_loop_is_accepted_with_the_app_server() {
    if crate::support::skip_without(crate::support::Tool::Python3) {
        return;
    }
    let p = repo(DONE);
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/appserver");
    let config = p.read("config/ralph.yaml").replace(
        &format!("  command: {}", p.aux().join("agent.sh").display()),
        &format!("  command: python3 {fixtures}/fake_server.py {fixtures}/scripted/normal.jsonl"),
    );
    let config = config.replace("  preset: claude", "  preset: codex-app-server");
    let p = p.file("config/ralph.yaml", config);
    p.git(&["commit", "-q", "-am", "the app-server"]);
    input(&p, |v| {
        v["agent"]["mode"] = "session_loop".into();
        v["verification"]["run_commands"] = serde_json::json!([]);
    });
    plan(&p);
    let run = execute(&p);
    // Not refused: the stories were worked (the PRD's own checks fail
    // them, which is not what this test is about).
    assert_ne!(run.code, 30, "{run:#?}");
    // The story's second attempt resumed its first attempt's thread,
    // where the stand-in, scripted for a fresh thread, expected one.
    let stderr = std::fs::read_to_string(p.aux().join("out/.ralph/logs/2-S1.stderr"))
        .expect("the second attempt's server stderr");
    assert!(
        stderr.contains("ralph sent {\"id\": 1, \"method\": \"thread/resume\""),
        "{stderr}"
    );
}

#[test]
fn the_contracts_agents_are_confined_as_a_runs_are() {
    if crate::support::skip_without(crate::support::Tool::Bwrap) {
        return;
    }
    let p = repo(&format!(
        "if ( echo x > \"$HOME/escaped\" ) 2> /dev/null; then echo written >> \"$RALPH_PROJECT_DIR/.ralph/tmp/probe.txt\"; else echo refused >> \"$RALPH_PROJECT_DIR/.ralph/tmp/probe.txt\"; fi\n{DONE}"
    ));
    input(&p, |_| {});
    plan(&p);
    let home = p.aux().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut command = execute_command(&p);
    command.env("RALPH_SANDBOX_MODE", "on").env("HOME", &home);
    let run = finish(command, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(result(&p)["status"], "success");
    // Two stories, each agent refused outside, its work done.
    assert_eq!(out(&p, ".ralph/tmp/probe.txt"), "refused\nrefused\n");
    assert!(!home.join("escaped").exists());
}
