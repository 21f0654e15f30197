//! Richer tasks: `acceptance`, `files`, `verify`, `source` and `kind` on a
//! task's line, from `ralph task add` through the prompt to the checks that
//! run before the task's merge.

use serde_json::{Value, json};

use crate::support::{TestProject, by_iteration, finish, phases};

/// A task's own check that says what is wrong when it fails, and writes
/// the folder it ran in to `$REC/verify-pwd` (the path is the test's).
fn own_check(project: &TestProject) -> String {
    format!(
        "pwd >> '{}'; test -f done.txt || {{ echo 'check: done.txt is missing'; exit 1; }}",
        project.aux().join("rec/verify-pwd").display()
    )
}

/// Task `id`, pending, with `verify` as its own checks.
fn task_with_checks(id: &str, verify: &[String]) -> String {
    json!({"id": id, "title": format!("task {id}"), "status": "pending", "leaf": true, "verify": verify})
        .to_string()
}

/// The agent: the first iteration on a task commits its work without
/// done.txt and marks the task complete; the next adds done.txt too.
fn agent_that_forgets_done_txt_once() -> String {
    by_iteration(
        "RALPH_TASK_ITERATION",
        r#"1) work "$RALPH_TASK_ID.txt" work; ralph task complete "$RALPH_TASK_ID" > /dev/null ;;
*) work done.txt done; ralph task complete "$RALPH_TASK_ID" > /dev/null ;;"#,
    )
}

/// The text of every prompt saved in `.ralph/prompts/`, in name order.
fn prompts(project: &TestProject) -> Vec<(String, String)> {
    let mut names: Vec<String> = std::fs::read_dir(project.path().join(".ralph/prompts"))
        .expect("prompts were saved")
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let text = project.read(&format!(".ralph/prompts/{name}"));
            (name, text)
        })
        .collect()
}

/// The details of the `verify` events about task `id`, in order.
fn verify_details(project: &TestProject, id: &str) -> Vec<String> {
    project
        .json_lines(".ralph/events.ndjson")
        .iter()
        .filter(|e| e["task_id"] == id && e["phase"] == "verify")
        .map(|e| e["detail"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn add_writes_the_richer_fields_and_show_prints_them() {
    let p = TestProject::new().file("tasks.jsonl", "");
    p.ralph(&["task", "add", "first"]).ok("A\n");
    p.ralph(&[
        "task",
        "add",
        "login endpoint",
        "--body",
        "POST /login",
        "--acceptance",
        "returns 401 without a session",
        "--acceptance",
        "sets a cookie",
        "--files",
        "src/login.rs",
        "--verify",
        "cargo test login",
        "--verify",
        "test -f done.txt",
        "--dep",
        "A",
    ])
    .ok("B\n");
    let line = p.read("tasks.jsonl").lines().nth(1).unwrap().to_owned();
    let created = line.rsplit_once(r#","created":"#).unwrap().0;
    assert_eq!(
        created,
        concat!(
            r#"{"id":"B","title":"login endpoint","status":"pending","leaf":true,"body":"POST /login","#,
            r#""acceptance":["returns 401 without a session","sets a cookie"],"files":["src/login.rs"],"#,
            r#""verify":["cargo test login","test -f done.txt"],"deps":["A"]"#
        )
    );
    // A hand-written source and kind, and a field of the user's own.
    let p = p.task(
        r#"{"id":"C","title":"planned","status":"pending","leaf":true,"acceptance":["it\nworks"],"source":"prd.md#R3","kind":"feature","priority":2}"#,
    );
    let created: Value = serde_json::from_str(&line).unwrap();
    let created = created["created"].as_str().unwrap();
    p.ralph(&["task", "show", "B"]).ok(&format!(
        "{}created: {created}\n",
        concat!(
            "B  login endpoint\n",
            "status: pending\n",
            "leaf: true\n",
            "body: POST /login\n",
            "acceptance:\n",
            "  - returns 401 without a session\n",
            "  - sets a cookie\n",
            "files:\n",
            "  - src/login.rs\n",
            "verify:\n",
            "  - cargo test login\n",
            "  - test -f done.txt\n",
            "deps: [\"A\"]\n",
        )
    ));
    p.ralph(&["task", "show", "C"]).ok(concat!(
        "C  planned\n",
        "status: pending\n",
        "leaf: true\n",
        "acceptance:\n",
        "  - it\\nworks\n",
        "source: prd.md#R3\n",
        "kind: feature\n",
        "priority: 2\n",
    ));
    let shown = p.ralph(&["task", "show", "C", "--json"]).success().json();
    assert_eq!(shown["acceptance"], json!(["it\nworks"]));
    assert_eq!(shown["source"], "prd.md#R3");
    assert_eq!(shown["kind"], "feature");
    assert_eq!(shown["priority"], 2);
    let added = p
        .ralph(&[
            "task", "add", "d", "--files", "a.rs", "--files", "b.rs", "--json",
        ])
        .success()
        .json();
    assert_eq!(added["files"], json!(["a.rs", "b.rs"]));
    assert!(added.get("acceptance").is_none(), "{added}");
    assert!(added.get("verify").is_none(), "{added}");
}

#[test]
fn add_refuses_empty_richer_values_and_writes_nothing() {
    let p = TestProject::new().file("tasks.jsonl", "");
    p.ralph(&["task", "add", "first"]).ok("A\n");
    let before = p.bytes("tasks.jsonl");
    p.ralph(&[
        "task",
        "add",
        "x",
        "--acceptance",
        "ok",
        "--acceptance",
        " ",
    ])
    .fails(
        30,
        "error: --acceptance cannot be empty; pass a non-empty TEXT or leave the flag out\n",
    );
    p.ralph(&["task", "add", "x", "--files", ""]).fails(
        30,
        "error: --files cannot be empty; pass a non-empty PATH or leave the flag out\n",
    );
    p.ralph(&["task", "add", "x", "--verify", ""]).fails(
        30,
        "error: --verify cannot be empty; pass a non-empty CMD or leave the flag out\n",
    );
    assert_eq!(p.bytes("tasks.jsonl"), before);
}

/// Inside a run (`RALPH_RUN_ID` set), what `ralph task add` writes is
/// masked like a title or a body: it reaches the base's history.
#[test]
fn add_inside_a_run_masks_secrets_in_the_richer_fields() {
    const SECRET: &str = "hunter2-very-secret-value";
    let p = TestProject::new();
    let mut command = p.ralph_command(&[
        "task",
        "add",
        "rotate the key",
        "--acceptance",
        &format!("{SECRET} no longer works"),
        "--files",
        &format!("keys/{SECRET}.txt"),
        "--verify",
        &format!("! grep -r {SECRET} ."),
    ]);
    command
        .env("RALPH_RUN_ID", "run-1")
        .env("MY_API_KEY", SECRET);
    assert_eq!(finish(command, 30).stdout, "A\n");
    let task = &p.json_lines("tasks.jsonl")[0];
    assert_eq!(task["acceptance"], json!(["[redacted] no longer works"]));
    assert_eq!(task["files"], json!(["keys/[redacted].txt"]));
    assert_eq!(task["verify"], json!(["! grep -r [redacted] ."]));
}

#[test]
fn a_mistyped_richer_field_makes_the_file_invalid() {
    let hint = "hint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n";
    for (field, value, message) in [
        (
            "acceptance",
            r#""x""#,
            r#"field `acceptance` must be an array of strings, not "x""#,
        ),
        (
            "files",
            r#"["a",1]"#,
            r#"field `files` must be an array of strings, not ["a",1]"#,
        ),
        (
            "verify",
            r#"[null]"#,
            r#"field `verify` must be an array of strings, not [null]"#,
        ),
        ("source", "5", "field `source` must be a string, not 5"),
        ("kind", "[]", "field `kind` must be a string, not []"),
    ] {
        let p = TestProject::new()
            .task(r#"{"id":"A","title":"a","status":"pending","leaf":true}"#)
            .task(&format!(
                r#"{{"id":"B","title":"b","status":"pending","leaf":true,"{field}":{value}}}"#
            ));
        let before = p.bytes("tasks.jsonl");
        p.ralph(&["task", "validate"])
            .fails(30, &format!("error: tasks.jsonl:2: {message}\n{hint}"));
        p.ralph(&["task", "start", "A"])
            .fails(30, &format!("error: tasks.jsonl:2: {message}\n{hint}"));
        assert_eq!(p.bytes("tasks.jsonl"), before, "{field}");
    }
    // Well typed, they are valid, and other fields stay untouched.
    let line = r#"{"id":"A","title":"a","status":"pending","leaf":true,"acceptance":[],"files":null,"kind":"bug","x":{"y":1}}"#;
    let p = TestProject::new().task(line);
    p.ralph(&["task", "validate"]).success();
    p.ralph(&["task", "start", "A"])
        .ok("A: pending -> active\n");
    assert_eq!(
        p.read("tasks.jsonl"),
        format!("{}\n", line.replace("pending", "active"))
    );
}

#[test]
fn prompt_shows_acceptance_criteria_files_and_checks() {
    let p = TestProject::new().file("working.md", "WORK").task(
        r#"{"id":"A","title":"login","status":"pending","leaf":true,"acceptance":["returns 401 without a session","sets a cookie"],"files":["src/login.rs"],"verify":["cargo test login"]}"#,
    );
    let run = p.ralph(&["prompt"]).success();
    assert_eq!(
        run.stdout,
        "WORK\n\n---\n\n# Current task\n\n\
         - Task: A login\n\
         - Status: pending\n\
         - Iteration: 1 of this run, 1 on this task\n\
         - Role: none (no trigger is true)\n\
         \n## Acceptance criteria\n\n\
         The task is done when all of these hold:\n\n\
         - [ ] returns 401 without a session\n\
         - [ ] sets a cookie\n\
         \n## Files to focus on\n\n- src/login.rs\n\
         \n## Checks\n\n\
         These checks must pass before the task is merged; ralph runs them in order after you mark the task complete:\n\n\
         ```sh\ncargo test login\n```\n"
    );
    // A project template reads the user's own fields under `task.extra`.
    let p = p
        .task(r#"{"id":"B","title":"b","status":"pending","leaf":true,"priority":2,"kind":"bug"}"#)
        .file(
            "templates/context.md.j2",
            "{{ task.id }} {{ task.kind }} p{{ task.extra.priority }} {{ task.extra | length }}",
        );
    p.ralph(&["prompt", "--task", "B"]).ok_noting(
        "WORK\n\n---\n\nB bug p2 1",
        "task: B b\nrole: none (no trigger is true)\nprompt: 21 bytes\n",
    );
}

/// A task's own check fails like `verify.task` does (`verify_failed`, its
/// output as the next prompt's evidence), runs after `verify.task`, in the
/// project, and lets the task merge once it passes.
#[test]
fn a_tasks_own_failing_check_is_evidence_and_it_merges_once_it_passes() {
    let project = TestProject::new();
    let check = own_check(&project);
    let project = project
        .file(
            "config/ralph.yaml",
            "verify:\n  task:\n    - \"test -f tasks.jsonl\"\n",
        )
        .task(&task_with_checks("A", std::slice::from_ref(&check)))
        .git_init()
        .agent(&agent_that_forgets_done_txt_once());
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.calls(), ["1 A 1 none", "2 A 2 debugger"]);
    let first = project.read(".ralph/prompts/1-A.md");
    assert!(first.contains("## Checks"), "{first}");
    assert!(first.contains(&check), "{first}");
    let second = project.read(".ralph/prompts/2-A.md");
    assert!(
        second.contains("## The last iteration failed (verify_failed)"),
        "{second}"
    );
    assert!(
        second.contains(&format!(
            "the task's own verification command `{check}` failed (exit code 1)"
        )),
        "{second}"
    );
    assert!(second.contains("check: done.txt is missing"), "{second}");
    assert_eq!(
        phases(&project, "A"),
        [
            "claim/ok",
            "iteration/ok",
            "verify/ok",
            "verify/verify_failed",
            "finish/verify_failed",
            "iteration/ok",
            "verify/ok",
            "verify/ok",
            "merge/ok"
        ]
    );
    // verify.task first, then the task's own.
    let details = verify_details(&project, "A");
    assert!(
        details[0].starts_with("test -f tasks.jsonl: "),
        "{details:?}"
    );
    assert!(details[1].starts_with(&format!("{check}: ")), "{details:?}");
    // It ran in the project, on the task's branch.
    let root = project.path().canonicalize().unwrap();
    for dir in project.rec("verify-pwd").lines() {
        assert_eq!(std::path::Path::new(dir).canonicalize().unwrap(), root);
    }
    assert_eq!(project.rec("verify-pwd").lines().count(), 2);
    assert_eq!(
        project.git(&["log", "-1", "--format=%B", "main"]),
        "[A] task A\n\n- A: A.txt\n- A: done.txt\n\nCompletes: A"
    );
    assert_eq!(
        project.json(".ralph/result.json")["failures"],
        json!({"verify_failed": 1})
    );
}

/// With parallel workers, a task's own checks run in its worktree, where
/// its work is.
#[test]
fn a_workers_task_runs_its_own_checks_in_its_worktree() {
    let project = TestProject::new();
    let check = own_check(&project);
    let project = project
        .task(&task_with_checks("A", std::slice::from_ref(&check)))
        .task(&task_with_checks("B", &[]))
        .git_init()
        .agent(&agent_that_forgets_done_txt_once());
    let run = finish(project.run_command(&["--workers", "2"]), 120);
    assert_eq!(run.code, 0, "{run:#?}");
    let done: Vec<Value> = project.json_lines("tasks-done.jsonl");
    let ids: Vec<&str> = done.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids.contains(&"A") && ids.contains(&"B"), "{ids:?}");
    assert_eq!(
        phases(&project, "A")
            .into_iter()
            .filter(|p| p.starts_with("verify/") || p.starts_with("finish/"))
            .collect::<Vec<_>>(),
        ["verify/verify_failed", "finish/verify_failed", "verify/ok"]
    );
    let evidence = prompts(&project)
        .into_iter()
        .filter(|(name, _)| name.ends_with("-A.md"))
        .map(|(_, text)| text)
        .find(|text| text.contains("(verify_failed)"))
        .expect("a prompt for A carries the failure");
    assert!(
        evidence.contains("check: done.txt is missing"),
        "{evidence}"
    );
    let dirs: Vec<String> = project
        .rec("verify-pwd")
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(dirs.len(), 2, "{dirs:?}");
    for dir in &dirs {
        assert!(dir.ends_with(".ralph/worktrees/A"), "{dirs:?}");
    }
    // B had no checks of its own: its first completion merged.
    assert!(
        !phases(&project, "B")
            .iter()
            .any(|p| p.starts_with("verify/")),
        "{:?}",
        phases(&project, "B")
    );
}

/// The checks are read from the queue when the task is finished: an agent
/// that changes its task's `verify` changes what runs.
#[test]
fn the_checks_are_read_when_the_task_is_finished() {
    let project = TestProject::new()
        .task(&task_with_checks("A", &["exit 7".to_owned()]))
        .git_init()
        .agent(
            r#"sed 's/exit 7/echo changed/' tasks.jsonl > "$REC/tasks" && cat "$REC/tasks" > tasks.jsonl
work A.txt work
ralph task complete A > /dev/null
"#,
        );
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.calls(), ["1 A 1 none"]);
    let details = verify_details(&project, "A");
    assert_eq!(details.len(), 1, "{details:?}");
    assert!(details[0].starts_with("echo changed: "), "{details:?}");
    assert_eq!(
        project.json_lines("tasks-done.jsonl")[0]["verify"],
        json!(["echo changed"])
    );
}

/// Values that start with a dash are values, as the README's walk-through
/// writes them (`--acceptance "--verbose prints one line per file"`).
#[test]
fn text_values_may_start_with_a_dash() {
    let p = TestProject::new().file("tasks.jsonl", "");
    p.ralph(&[
        "task",
        "add",
        "add a --verbose flag",
        "--body",
        "-v too",
        "--acceptance",
        "--verbose prints one line per file",
        "--verify",
        "-x",
    ])
    .ok("A\n");
    let task = &p.json_lines("tasks.jsonl")[0];
    assert_eq!(task["body"], "-v too");
    assert_eq!(
        task["acceptance"],
        json!(["--verbose prints one line per file"])
    );
    assert_eq!(task["verify"], json!(["-x"]));
    p.ralph(&["task", "block", "A", "--reason", "--help is wrong"])
        .ok("A: pending -> blocked\n");
    assert_eq!(
        p.json_lines("tasks.jsonl")[0]["blocked_reason"],
        "--help is wrong"
    );
}
