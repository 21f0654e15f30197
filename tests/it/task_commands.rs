//! `ralph task ...` as a user runs it: output, exit codes and files written.

use crate::support::TestProject;

const HINT_LIST: &str = "hint: `ralph task list` shows the ids\n";

fn seed() -> TestProject {
    TestProject::new()
        .task(r#"{"id":"A","title":"implement auth","status":"pending","leaf":false}"#)
        .task(r#"{"id":"A.1","title":"setup session store","status":"pending","leaf":false}"#)
        .task(r#"{"id":"A.1.1","title":"choose session library","status":"active","leaf":true}"#)
        .task(r#"{"id":"A.1.2","title":"implement middleware","status":"pending","leaf":true}"#)
        .task(r#"{"id":"A.2","title":"add login endpoint","status":"pending","leaf":true}"#)
        .task(r#"{"id":"B","title":"write tests","status":"pending","leaf":true}"#)
}

#[test]
fn add_allocates_ids_and_prints_them() {
    let p = TestProject::new().file("tasks.jsonl", "");
    p.ralph(&["task", "add", "first"]).ok("A\n");
    p.ralph(&[
        "task", "add", "second", "--body", "details", "--dep", "A", "--dep", "A",
    ])
    .ok("B\n");
    p.ralph(&["task", "add", "child", "--parent", "B"])
        .ok_noting("B.1\n", "note: B is now a container (\"leaf\": false)\n");
    let lines: Vec<serde_json::Value> = p
        .read("tasks.jsonl")
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["id"], "A");
    assert_eq!(lines[1]["body"], "details");
    assert_eq!(lines[1]["deps"], serde_json::json!(["A"]));
    assert_eq!(lines[1]["leaf"], false);
    assert_eq!(lines[2]["id"], "B.1");
    assert_eq!(lines[2]["status"], "pending");
    assert!(chrono::DateTime::parse_from_rfc3339(lines[2]["created"].as_str().unwrap()).is_ok());
}

#[test]
fn add_puts_a_child_at_the_end_of_its_parents_subtree() {
    let p = seed();
    p.ralph(&["task", "add", "logout endpoint", "--parent", "A"])
        .ok("A.3\n");
    assert_eq!(
        crate::support::ids(&p.read("tasks.jsonl")),
        ["A", "A.1", "A.1.1", "A.1.2", "A.2", "A.3", "B"]
    );
}

#[test]
fn add_refuses_bad_requests_and_writes_nothing() {
    let p = seed().file("tasks-done.jsonl", "{\"id\":\"C\",\"title\":\"old\"}\n");
    let before = p.bytes("tasks.jsonl");
    p.ralph(&["task", "add", "x", "--id", "A.1"]).fails(
        30,
        "error: id A.1 is taken (tasks.jsonl line 2); omit --id to get a free one\n",
    );
    p.ralph(&["task", "add", "x", "--id", "C"]).fails(
        30,
        "error: id C was used by an archived task (tasks-done.jsonl line 1); archived ids are never reused\n",
    );
    p.ralph(&["task", "add", "x", "--parent", "Q"]).fails(
        30,
        &format!("error: no task \"Q\" in tasks.jsonl\n{HINT_LIST}"),
    );
    p.ralph(&["task", "add", "x", "--dep", "Q"]).fails(
        30,
        &format!("error: no task \"Q\" in tasks.jsonl or tasks-done.jsonl (given with --dep)\n{HINT_LIST}"),
    );
    p.ralph(&["task", "add", "x", "--id", "B.4", "--parent", "A"])
        .fails(
            30,
            "error: id B.4 is not a child of A; drop --parent or pick an id like A.N\n",
        );
    p.ralph(&["task", "add", "  "])
        .fails(30, "error: a task needs a title; pass a non-empty TITLE\n");
    let usage = p.ralph(&["task", "add", "x", "--id", "A..1"]);
    assert_eq!(usage.code, 2);
    assert!(usage.stderr.contains("has an empty segment"), "{usage:?}");
    assert_eq!(p.bytes("tasks.jsonl"), before);
    // The new top-level id skips the archived C.
    p.ralph(&["task", "add", "x"]).ok("D\n");
}

#[test]
fn add_json_prints_the_written_task() {
    let p = TestProject::new();
    let run = p.ralph(&["task", "add", "first", "--json"]).success();
    let task = run.json();
    assert_eq!(task["id"], "A");
    assert_eq!(task["title"], "first");
    assert_eq!(task["status"], "pending");
    assert_eq!(task["leaf"], true);
}

#[test]
fn list_shows_tasks_in_file_order_with_filters() {
    let p = seed();
    p.ralph(&["task", "list"]).ok(concat!(
        "A      pending   implement auth  (container)\n",
        "A.1    pending   setup session store  (container)\n",
        "A.1.1  active    choose session library\n",
        "A.1.2  pending   implement middleware\n",
        "A.2    pending   add login endpoint\n",
        "B      pending   write tests\n",
    ));
    p.ralph(&["task", "list", "--status", "pending", "--leaf"])
        .ok(concat!(
            "A.1.2  pending   implement middleware\n",
            "A.2    pending   add login endpoint\n",
            "B      pending   write tests\n",
        ));
    p.ralph(&["task", "list", "--status", "in_progress"])
        .ok("A.1.1  active    choose session library\n");
    let json = p
        .ralph(&["task", "list", "--json", "--leaf"])
        .success()
        .json();
    assert_eq!(json.as_array().unwrap().len(), 4);
    assert_eq!(json[0]["id"], "A.1.1");
    let bad = p.ralph(&["task", "list", "--status", "doing"]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("unknown status \"doing\""), "{bad:?}");
}

#[test]
fn tree_draws_the_hierarchy_with_marks_and_counts() {
    let p = seed().file(
        "tasks-done.jsonl",
        "{\"id\":\"A.0\",\"title\":\"research\",\"status\":\"complete\",\"leaf\":true}\n",
    );
    p.ralph(&["task", "block", "B", "--reason", "needs a CI account"])
        .success();
    p.ralph(&["task", "tree"]).ok(concat!(
        "[ ] A implement auth  (1/5 done)\n",
        "├── [✓] A.0 research\n",
        "├── [ ] A.1 setup session store  (0/2 done)\n",
        "│   ├── [>] A.1.1 choose session library\n",
        "│   └── [ ] A.1.2 implement middleware\n",
        "└── [ ] A.2 add login endpoint\n",
        "[!] B write tests\n",
        "\n",
        "6 tasks: 4 pending, 1 active, 0 ready, 0 complete, 1 blocked; 1 archived\n",
    ));
    let json = p.ralph(&["task", "tree", "--json"]).success().json();
    assert_eq!(json["counts"]["blocked"], 1);
    assert_eq!(json["tasks"][0]["children"][0]["status"], "archived");
    assert_eq!(
        json["tasks"][0]["children"][1]["children"][0]["id"],
        "A.1.1"
    );
}

#[test]
fn next_resumes_then_picks_pending_and_exits_1_when_nothing_is_workable() {
    let p = seed();
    p.ralph(&["task", "next"])
        .ok("A.1.1 choose session library\n");
    p.ralph(&["task", "complete", "A.1.1"])
        .ok("A.1.1: active -> complete\n");
    p.ralph(&["task", "next"])
        .ok("A.1.2 implement middleware\n");
    let json = p.ralph(&["task", "next", "--json"]).success().json();
    assert_eq!(json["id"], "A.1.2");
    for id in ["A.1.2", "A.2", "B"] {
        p.ralph(&["task", "block", id, "--reason", "later"])
            .success();
    }
    p.ralph(&["task", "next"]).fails(
        1,
        "no workable task (2 pending, 1 complete, 3 blocked; pending ones wait on deps or a blocked parent)\n",
    );
    TestProject::new()
        .ralph(&["task", "next"])
        .fails(1, "no workable task (tasks.jsonl has no tasks)\n");
}

#[test]
fn status_commands_change_one_field_and_report_it() {
    let p = seed();
    p.ralph(&["task", "start", "A.2"])
        .ok("A.2: pending -> active\n");
    p.ralph(&["task", "start", "A.2"])
        .ok("A.2 is already active\n");
    p.ralph(&["task", "ready", "A.2"])
        .ok("A.2: active -> ready\n");
    p.ralph(&["task", "block", "A.2", "--reason", "waits on a key"])
        .ok("A.2: ready -> blocked\n");
    assert!(p.read("tasks.jsonl").contains(
        r#"{"id":"A.2","title":"add login endpoint","status":"blocked","leaf":true,"blocked_reason":"waits on a key"}"#
    ));
    let json = p
        .ralph(&["task", "start", "A.2", "--json"])
        .success()
        .json();
    assert_eq!(
        json,
        serde_json::json!({"id": "A.2", "from": "blocked", "to": "active"})
    );
    assert!(!p.read("tasks.jsonl").contains("blocked_reason"));
    p.ralph(&["task", "complete", "A"]).fails(
        30,
        "error: task A is a container (\"leaf\": false); only leaf tasks are worked on\nhint: `ralph task tree` shows the leaves under A\n",
    );
    p.ralph(&["task", "start", "Z"]).fails(
        30,
        &format!("error: no task \"Z\" in tasks.jsonl\n{HINT_LIST}"),
    );
    p.ralph(&["task", "block", "B", "--reason", " "]).fails(
        30,
        "error: a blocked task needs a reason; pass --reason TEXT\n",
    );
}

#[test]
fn split_turns_a_leaf_into_a_container() {
    let p = seed();
    p.ralph(&["task", "split", "A.1.1", "compare crates", "write a spike"])
        .ok("A.1.1.1\nA.1.1.2\n");
    p.ralph(&["task", "next"]).ok("A.1.1.1 compare crates\n");
    p.ralph(&["task", "show", "A.1.1"]).ok(concat!(
        "A.1.1  choose session library\n",
        "parents:  A implement auth > A.1 setup session store\n",
        "status: active\n",
        "leaf: false\n",
        "children: A.1.1.1 (active), A.1.1.2 (pending)\n",
    ));
    p.ralph(&["task", "split", "A.1", "x"]).fails(
        30,
        "error: task A.1 is already a container\nhint: add children with `ralph task add TITLE --parent A.1`\n",
    );
    let json = p
        .ralph(&["task", "split", "B", "one", "--json"])
        .success()
        .json();
    assert_eq!(json, serde_json::json!({"id": "B", "children": ["B.1"]}));
}

#[test]
fn archive_moves_tasks_and_empty_parents_to_the_archive() {
    let p = seed();
    p.ralph(&["task", "archive", "A.1.1", "--commit", "abc123"])
        .ok("archived A.1.1\n");
    p.ralph(&["task", "archive", "A.1.2"])
        .ok("archived A.1.2\narchived A.1\n");
    p.ralph(&["task", "archive", "A.1.2"])
        .ok("A.1.2 was archived already\n");
    let done: Vec<serde_json::Value> = p
        .read("tasks-done.jsonl")
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let ids: Vec<&str> = done.iter().map(|d| d["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["A.1.1", "A.1.2", "A.1"]);
    assert_eq!(done[0]["commit"], "abc123");
    assert_eq!(done[0]["status"], "complete");
    assert!(chrono::DateTime::parse_from_rfc3339(done[0]["completed"].as_str().unwrap()).is_ok());
    assert!(done[1].get("commit").is_none());
    p.ralph(&["task", "archive", "A"]).fails(
        30,
        "error: task A still has children in tasks.jsonl (A.2); archive them first\n",
    );
    let shown = p.ralph(&["task", "show", "A.1.1"]).success();
    assert!(
        shown
            .stdout
            .starts_with("A.1.1  choose session library  (archived, tasks-done.jsonl line 1)\n"),
        "{shown:?}"
    );
    p.ralph(&["task", "archive", "A.2", "--json"])
        .ok("{\"archived\":[\"A.2\",\"A\"],\"already_archived\":[]}\n");
    // Archived ids are never reused.
    p.ralph(&["task", "add", "again"]).ok("C\n");
    p.ralph(&["task", "start", "A.2"]).fails(
        30,
        "error: task A.2 is archived (tasks-done.jsonl line 4); archived tasks do not change\n",
    );
}

#[test]
fn show_prints_every_field_and_json() {
    let p = TestProject::new()
        .task(r#"{"id":"A","title":"t","status":"done","leaf":true,"body":"line one\nline two","deps":[],"owner":{"name":"kim"}}"#);
    p.ralph(&["task", "show", "A"]).ok(concat!(
        "A  t\n",
        "status: complete\n",
        "leaf: true\n",
        "body:\n",
        "  line one\n",
        "  line two\n",
        "deps: []\n",
        "owner: {\"name\":\"kim\"}\n",
    ));
    let json = p.ralph(&["task", "show", "A", "--json"]).success().json();
    assert_eq!(json["status"], "complete");
    assert_eq!(json["owner"]["name"], "kim");
    p.ralph(&["task", "show", "Q"]).fails(
        30,
        &format!("error: no task \"Q\" in tasks.jsonl or tasks-done.jsonl\n{HINT_LIST}"),
    );
}

#[test]
fn validate_reports_counts() {
    let p = seed();
    p.ralph(&["task", "validate"])
        .ok("ok: 6 tasks: 5 pending, 1 active, 0 ready, 0 complete, 0 blocked; 0 archived\n");
    let json = p.ralph(&["task", "validate", "--json"]).success().json();
    assert_eq!(json["valid"], true);
    assert_eq!(json["counts"]["pending"], 5);
}

#[test]
fn commands_find_the_project_from_a_subfolder_or_dir() {
    let p = seed().file("src/deep/keep", "");
    p.ralph_in("src/deep", &["task", "next"])
        .ok("A.1.1 choose session library\n");
    p.ralph_in("src/deep", &["task", "add", "from below"])
        .ok("C\n");
    assert!(p.read("tasks.jsonl").contains("from below"));
    assert!(!p.path().join("src/deep/tasks.jsonl").exists());
    let elsewhere = TestProject::new();
    let dir = p.path().to_str().unwrap();
    elsewhere
        .ralph(&["--dir", dir, "task", "next"])
        .ok("A.1.1 choose session library\n");
    elsewhere
        .ralph(&["task", "next", "--dir", dir])
        .ok("A.1.1 choose session library\n");
    elsewhere
        .ralph(&["task", "next", "--dir", "missing"])
        .fails(
            30,
            &format!(
                "error: --dir {}: no such folder\n",
                elsewhere.path().join("missing").display()
            ),
        );
}

#[test]
fn missing_files_are_an_empty_queue() {
    let p = TestProject::new();
    p.ralph(&["task", "list"]).ok("");
    p.ralph(&["task", "tree"])
        .ok("0 tasks: 0 pending, 0 active, 0 ready, 0 complete, 0 blocked; 0 archived\n");
    p.ralph(&["task", "validate"])
        .ok("ok: 0 tasks: 0 pending, 0 active, 0 ready, 0 complete, 0 blocked; 0 archived\n");
    assert!(
        !p.path().join("tasks.jsonl").exists(),
        "reading creates nothing"
    );
}

#[test]
fn control_characters_in_titles_are_escaped_on_the_terminal() {
    let p = TestProject::new().file("tasks.jsonl", "");
    p.ralph(&["task", "add", "evil\u{1b}[2Jtitle\nsecond line"])
        .ok("A\n");
    p.ralph(&["task", "next"])
        .ok("A evil\\u{1b}[2Jtitle\\nsecond line\n");
    let json = p.ralph(&["task", "next", "--json"]).success().json();
    assert_eq!(json["title"], "evil\u{1b}[2Jtitle\nsecond line");
}

#[test]
fn help_and_usage_errors_exit_0_and_2() {
    let p = TestProject::new();
    let help = p.ralph(&["task", "--help"]).success();
    assert!(
        help.stdout
            .contains("Add a pending leaf task and print its id")
    );
    // A command's own options come first; the ones every command takes
    // follow under their own heading.
    let help = p.ralph(&["task", "add", "--help"]).success();
    let (own, global) = help.stdout.split_once("\nGlobal options:\n").unwrap();
    assert!(
        own.contains("--parent <ID>") && !own.contains("--dir"),
        "{own}"
    );
    assert!(
        global.contains("--dir <DIR>") && global.contains("--json") && global.contains("--verbose"),
        "{global}"
    );
    let usage = p.ralph(&["task", "frobnicate"]);
    assert_eq!(usage.code, 2);
    assert!(
        usage
            .stderr
            .starts_with("error: unrecognized subcommand 'frobnicate'"),
        "{usage:?}"
    );
}
