//! `ralph plan`: a PRD compiled into tasks, as a user runs it.

use serde_json::{Value, json};

use crate::support::TestProject;

const EXAMPLE: &str = include_str!("../../examples/plan/prds/auth.md");
const EXAMPLE_TASKS: &str = include_str!("../../examples/plan/tasks.jsonl");
const HINT: &str = "hint: docs/PLANNING.md describes what `ralph plan` reads\n";

/// The file with every `created` time replaced by the examples' own.
fn without_times(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(r#""created":""#) {
        let start = at + r#""created":""#.len();
        out.push_str(&rest[..start]);
        out.push_str("2026-01-01T00:00:00Z");
        let end = start + rest[start..].find('"').expect("a closing quote");
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

fn planned(prd: &str) -> TestProject {
    let p = TestProject::new().file("prds/auth.md", prd);
    p.ralph(&["plan", "prds/auth.md"]).success();
    p
}

fn lines(p: &TestProject) -> Vec<Value> {
    p.json_lines("tasks.jsonl")
}

#[test]
fn the_worked_example_is_planned_byte_for_byte() {
    let p = TestProject::new()
        .file("tasks.jsonl", "")
        .file("prds/auth.md", EXAMPLE);
    p.ralph(&["plan", "prds/auth.md"])
        .ok("prds/auth.md: added 10 tasks
+ A  Sign-in for the notes app
+   A.1  Accounts
+     A.1.1  FR-1: Sign up with email and password
+     A.1.2  FR-2: Sign in
+     A.1.3  FR-10: Sign out everywhere
+   A.2  Password reset
+     A.2.1  FR-3: Request a reset link
+     A.2.2  FR-4: Choose a new password
+   A.3  Housekeeping
+     A.3.1  Document the auth endpoints in docs/api.md
skipped Pick a password hashing library: ticked (`- [x]`) on line 60
");
    assert_eq!(without_times(&p.read("tasks.jsonl")), EXAMPLE_TASKS);
    // The tasks are a valid queue the loop can work, in dependency order.
    p.ralph(&["task", "validate"]).success();
    assert!(p.ralph(&["task", "next"]).stdout.starts_with("A.1.1"));
}

#[test]
fn the_same_document_gives_the_same_tasks() {
    let first = planned(EXAMPLE);
    let second = planned(EXAMPLE);
    let (a, b) = (first.read("tasks.jsonl"), second.read("tasks.jsonl"));
    // Only `created` may differ between runs: the rest is byte for byte.
    assert_eq!(without_times(&a), without_times(&b));
}

#[test]
fn ids_order_numerically_and_dependencies_come_first() {
    let p = planned(
        "# Order\n\n## Work\n\n- FR-10: tenth\n- FR-2: second\n- FR-1: first\n  Depends on: FR-10\n- [ ] unnumbered\n- FR-3: third\n",
    );
    let titles: Vec<String> = lines(&p)
        .iter()
        .skip(2)
        .map(|task| task["title"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        titles,
        [
            "FR-2: second",
            "FR-3: third",
            "FR-10: tenth",
            "FR-1: first",
            "unnumbered"
        ]
    );
    assert_eq!(lines(&p)[5]["deps"], json!(["A.1.3"]));
}

#[test]
fn planning_again_adds_only_what_is_new_and_lists_what_changed() {
    let p = planned(EXAMPLE);
    p.ralph(&["task", "start", "A.1.1"]).success();
    let edited = EXAMPLE
        .replace(
            "works once, within one hour",
            "works once, within 30 minutes",
        )
        .replace(
            "A visitor creates an account",
            "A visitor (or an invited user) creates an account",
        )
        .replace(
            "## Non-goals",
            "- FR-11: Remember the last email used\n\n## Non-goals",
        );
    std::fs::write(p.path().join("prds/auth.md"), &edited).unwrap();
    let before = p.read("tasks.jsonl");
    p.ralph(&["plan", "prds/auth.md"])
        .ok("prds/auth.md: added 1 task (10 planned before)
  A  Sign-in for the notes app
    A.1  Accounts
~     A.1.1  FR-1: Sign up with email and password
      A.1.2  FR-2: Sign in
      A.1.3  FR-10: Sign out everywhere
    A.2  Password reset
~     A.2.1  FR-3: Request a reset link
      A.2.2  FR-4: Choose a new password
    A.3  Housekeeping
+     A.3.2  FR-11: Remember the last email used
      A.3.1  Document the auth endpoints in docs/api.md
changed in the document since they were planned:
  A.1.1  prds/auth.md#FR-1 (active, left as it is)
  A.2.1  prds/auth.md#FR-3 (pending)
hint: `ralph plan prds/auth.md --update` rewrites the pending ones
skipped Pick a password hashing library: ticked (`- [x]`) on line 60
");
    // The one new line is added; every other line is as it was.
    let after = p.read("tasks.jsonl");
    let old: Vec<&str> = before.lines().collect();
    let new: Vec<&str> = after.lines().collect();
    assert_eq!(new.len(), 11);
    assert_eq!(new.iter().filter(|line| !old.contains(line)).count(), 1);
    assert!(new[10].contains(r#""source":"prds/auth.md#FR-11""#));
    // Again: nothing is added twice.
    let again = p.ralph(&["plan", "prds/auth.md"]).success();
    assert!(
        again
            .stdout
            .starts_with("prds/auth.md: added 0 tasks (11 planned before)\n")
    );
    assert_eq!(p.read("tasks.jsonl"), after);
    // --update rewrites the pending task only.
    p.ralph(&["plan", "prds/auth.md", "--update"]).success();
    let tasks = lines(&p);
    assert_eq!(
        tasks[6]["body"],
        "The link is sent by email and works once, within 30 minutes."
    );
    assert_eq!(
        tasks[2]["body"],
        "A visitor creates an account from the sign-up page."
    );
    assert_eq!(tasks[2]["status"], "active");
    let settled = p.ralph(&["plan", "prds/auth.md"]).success();
    assert!(
        settled
            .stdout
            .contains("A.1.1  prds/auth.md#FR-1 (active, left as it is)")
    );
    assert!(!settled.stdout.contains("FR-3 ("), "{}", settled.stdout);
}

#[test]
fn an_archived_requirement_is_not_planned_again() {
    let p = planned("# Small\n\n- FR-1: one\n- FR-2: two\n");
    p.ralph(&["task", "complete", "A.1"]).success();
    p.ralph(&["task", "archive", "A.1"]).success();
    p.ralph(&["plan", "prds/auth.md"])
        .ok("prds/auth.md: added 0 tasks (3 planned before)
  A  Small
=   A.1  FR-1: one
    A.2  FR-2: two
");
    // Once everything is archived, a new requirement gets a new container.
    p.ralph(&["task", "complete", "A.2"]).success();
    p.ralph(&["task", "archive", "A.2"]).success();
    std::fs::write(
        p.path().join("prds/auth.md"),
        "# Small\n\n- FR-1: one\n- FR-2: two\n- FR-3: three\n",
    )
    .unwrap();
    p.ralph(&["plan", "prds/auth.md"])
        .ok("prds/auth.md: added 2 tasks (2 planned before)
+ B  Small
=   A.1  FR-1: one
=   A.2  FR-2: two
+   B.1  FR-3: three
");
    p.ralph(&["task", "validate"]).success();
}

#[test]
fn a_container_made_a_leaf_by_hand_holds_new_requirements_again() {
    let p = planned("# Small\n\n- FR-1: one\n");
    // By hand: its one task deleted, the container made a leaf.
    let container = p
        .read("tasks.jsonl")
        .lines()
        .next()
        .unwrap()
        .replace("\"leaf\":false", "\"leaf\":true");
    std::fs::write(p.path().join("tasks.jsonl"), format!("{container}\n")).unwrap();
    p.ralph(&["task", "validate"]).success();
    p.ralph(&["plan", "prds/auth.md"])
        .ok("prds/auth.md: added 1 task (1 planned before)
  A  Small
+   A.1  FR-1: one
note: A is now a container (\"leaf\": false)
");
    assert_eq!(lines(&p)[0]["leaf"], false);
    p.ralph(&["task", "validate"]).success();
}

/// snarktank/ralph's published `prd.json` shape, written by hand, with
/// ralph-tui's `dependsOn`.
const PRD_JSON: &str = r#"{
  "project": "TaskApp",
  "branchName": "ralph/task-priority",
  "description": "Task Priority System - Add priority levels to tasks",
  "userStories": [
    {
      "id": "US-003",
      "title": "Add priority selector to task edit",
      "description": "As a user, I want to change a task's priority when editing it.",
      "acceptanceCriteria": ["Priority dropdown in task edit modal", "Typecheck passes"],
      "priority": 3,
      "passes": false,
      "notes": "",
      "dependsOn": ["US-001"]
    },
    {
      "id": "US-001",
      "title": "Add priority field to database",
      "description": "As a developer, I need to store task priority so it persists across sessions.",
      "acceptanceCriteria": ["Add priority column to tasks table: 'high' | 'medium' | 'low' (default 'medium')", "Generate and run migration successfully", "Typecheck passes"],
      "priority": 1,
      "passes": true,
      "notes": ""
    },
    {
      "id": "US-002",
      "title": "Display priority indicator on task cards",
      "description": "As a user, I want to see task priority at a glance.",
      "acceptanceCriteria": ["Each task card shows a colored priority badge", "Typecheck passes"],
      "priority": 2,
      "passes": false,
      "notes": "Use the existing Badge component"
    }
  ]
}
"#;

#[test]
fn a_snarktank_prd_json_is_imported_in_priority_order() {
    let p = TestProject::new()
        .file("tasks.jsonl", "")
        .file("prd.json", PRD_JSON);
    p.ralph(&["plan", "prd.json"]).ok("prd.json: added 3 tasks
+ A  TaskApp
+   A.1  US-002: Display priority indicator on task cards
+   A.2  US-003: Add priority selector to task edit
skipped US-001: Add priority field to database: \"passes\": true
");
    let tasks = lines(&p);
    assert_eq!(
        tasks[0]["body"],
        "Task Priority System - Add priority levels to tasks"
    );
    assert_eq!(
        tasks[1]["body"],
        "As a user, I want to see task priority at a glance.\n\nNotes: Use the existing Badge component"
    );
    assert_eq!(
        tasks[1]["acceptance"],
        json!([
            "Each task card shows a colored priority badge",
            "Typecheck passes"
        ])
    );
    assert_eq!(tasks[1]["source"], "prd.json#US-002");
    // A dependency on a story that passes is met already.
    assert_eq!(tasks[2].get("deps"), None);
    p.ralph(&["plan", "prd.json"]).success();
    assert_eq!(lines(&p).len(), 3);
}

#[test]
fn a_document_with_nothing_to_plan_writes_nothing() {
    let p = TestProject::new().file("notes.md", "# Notes\n\nSome thoughts.\n\n- a plain list\n");
    p.ralph(&["plan", "notes.md"]).fails(
        30,
        &format!("error: notes.md: no requirements found: no requirement ids (FR-1, REQ-12, US-003, R1) as headings or list items, no `- [ ]` checklist items, no `userStories`; to have an agent plan a free-form document, run `ralph plan --agent notes.md`\n{HINT}"),
    );
    assert!(!p.path().join("tasks.jsonl").exists());
}

#[test]
fn each_mistake_in_a_document_names_its_line() {
    let p = TestProject::new().task(r#"{"id":"A","title":"kept","status":"pending","leaf":true}"#);
    let before = p.read("tasks.jsonl");
    for (prd, message) in [
        (
            "# X\n\n## FR-1: a\n\nDepends on: FR-9\n",
            "x.md:5: FR-1 depends on FR-9, which this document does not define; define FR-9 or remove it from \"Depends on\"",
        ),
        (
            "# X\n\n- FR-1: a\n  Depends on: FR-2\n- FR-2: b\n  Depends on: FR-1\n",
            "x.md:3: requirements depend on each other in a circle (FR-1 -> FR-2 -> FR-1); remove one of these \"Depends on\" entries",
        ),
        (
            "# X\n\n- FR-1: a\n  Depends on: FR-1\n",
            "x.md:4: FR-1 depends on itself; remove it from \"Depends on\"",
        ),
        (
            "# X\n\n- FR-1: a\n- FR-1: b\n",
            "x.md:4: FR-1 is defined twice (first on line 3); give each requirement its own id",
        ),
        (
            "# X\n\n- FR-1: a\n  Depends on: the login work\n",
            "x.md:4: \"Depends on: the login work\" names no requirement id; write the ids it needs, like `Depends on: FR-1, FR-3`",
        ),
        (
            "# X\n\n- [ ]\n",
            "x.md:3: a requirement needs a title after its checkbox or id",
        ),
        (
            "{\"userStories\": [{\"id\": \"US-1\"}]}",
            "x.md: userStories[0]: story US-1 needs a \"title\"",
        ),
    ] {
        std::fs::write(p.path().join("x.md"), prd).unwrap();
        p.ralph(&["plan", "x.md"])
            .fails(30, &format!("error: {message}\n{HINT}"));
        assert_eq!(p.read("tasks.jsonl"), before);
    }
}

#[test]
fn dry_run_prints_and_json_lists_the_tasks_without_writing() {
    let p = TestProject::new().file("prds/auth.md", EXAMPLE);
    let dry = p.ralph(&["plan", "prds/auth.md", "--dry-run"]).success();
    assert!(
        dry.stdout
            .starts_with("prds/auth.md: would add 10 tasks\n+ A  Sign-in")
    );
    assert!(!p.path().join("tasks.jsonl").exists());
    let json = p
        .ralph(&["plan", "prds/auth.md", "--dry-run", "--json"])
        .json();
    assert_eq!(json["dry_run"], true);
    let tasks = json["tasks"].as_array().unwrap();
    let written: String = tasks.iter().map(|task| format!("{task}\n")).collect();
    assert_eq!(without_times(&written), EXAMPLE_TASKS);
    assert_eq!(json["skipped"][0]["reason"], "ticked (`- [x]`) on line 60");
    assert!(!p.path().join("tasks.jsonl").exists());
    let real = p.ralph(&["plan", "prds/auth.md", "--json"]).json();
    assert_eq!(real["tasks"].as_array().unwrap().len(), 10);
    assert_eq!(lines(&p).len(), 10);
}

#[test]
fn parent_plans_under_an_existing_task() {
    let p = TestProject::new()
        .task(r#"{"id":"A","title":"Q3 work","status":"pending","leaf":true}"#)
        .file("prd.md", "# Export\n\n- FR-1: CSV\n- FR-2: JSON\n");
    p.ralph(&["plan", "prd.md", "--parent", "A"])
        .ok("prd.md: added 3 tasks
+ A.1  Export
+   A.1.1  FR-1: CSV
+   A.1.2  FR-2: JSON
note: A is now a container (\"leaf\": false)
");
    assert_eq!(lines(&p)[0]["leaf"], false);
    p.ralph(&["plan", "prd.md", "--parent", "Z"]).fails(
        30,
        "error: no task \"Z\" in tasks.jsonl\nhint: `ralph task list` shows the ids\n",
    );
}

#[test]
fn the_planning_guide_shows_the_shipped_example_as_it_is() {
    let guide = include_str!("../../docs/PLANNING.md");
    assert!(guide.contains(EXAMPLE), "docs/PLANNING.md: the example PRD");
    assert!(guide.contains(EXAMPLE_TASKS), "docs/PLANNING.md: its tasks");
}

#[test]
fn a_missing_document_is_named() {
    let p = TestProject::new();
    p.ralph(&["plan", "prds/none.md"]).fails(
        30,
        &format!("error: prds/none.md: cannot read the document: No such file or directory (os error 2)\n{HINT}"),
    );
}

#[test]
fn a_document_that_is_not_utf8_names_its_line() {
    let p = TestProject::new().file("x.md", b"# X\n\n- FR-1: caf\xe9\n");
    p.ralph(&["plan", "x.md"]).fails(
        30,
        &format!("error: x.md:3: not UTF-8 text; save the document as UTF-8\n{HINT}"),
    );
}

const FREE_FORM: &str = "# Export\n\nPeople want their notes out of the app, as CSV for spreadsheets and as JSON for scripts.\n";

/// `ralph plan --agent prd.md` with the fake agent.
fn plan_with_agent(p: &TestProject) -> crate::support::Run {
    let agent = p.aux().join("agent.sh");
    crate::support::finish(
        p.ralph_command(&[
            "plan",
            "--agent",
            "prd.md",
            "--agent-cmd",
            agent.to_str().unwrap(),
        ]),
        60,
    )
}

#[test]
fn the_planner_agent_writes_the_tasks_of_a_free_form_document() {
    let p = TestProject::new()
        .git_init()
        .file("prd.md", FREE_FORM)
        .agent(
            r#"[ "$RALPH_ROLE" = planner ] || exit 9
ralph task add "Notes export" > /dev/null
ralph task add "Export as CSV" --parent A --acceptance "a header row names the columns" --files src/export.rs > /dev/null
ralph task add "Export as JSON" --parent A --dep A.1 --acceptance "the output parses as JSON" > /dev/null
"#,
        );
    let head = p.git(&["rev-parse", "HEAD"]);
    let run = plan_with_agent(&p).success();
    let mut lines = run.stdout.lines();
    assert_eq!(lines.next(), Some("prd.md: the planner added 3 tasks"));
    assert_eq!(lines.next(), Some("+ A  Notes export"));
    assert_eq!(lines.next(), Some("+   A.1  Export as CSV"));
    assert_eq!(lines.next(), Some("+   A.2  Export as JSON"));
    let files = lines.next().unwrap();
    assert!(
        files.starts_with("its prompt: .ralph/prompts/plan-"),
        "{files}"
    );
    assert_eq!(p.calls(), ["1  1 planner"]);
    let tasks = p.json_lines("tasks.jsonl");
    assert_eq!(
        tasks[1]["acceptance"],
        json!(["a header row names the columns"])
    );
    assert_eq!(tasks[2]["deps"], json!(["A.1"]));
    // The prompt holds the role and the document; no branch, no commit.
    let prompt_file = files
        .strip_prefix("its prompt: ")
        .and_then(|rest| rest.split(';').next())
        .unwrap();
    let prompt = p.read(prompt_file);
    assert!(prompt.starts_with("# Role: Planner\n"), "{prompt}");
    assert!(prompt.contains(FREE_FORM.trim_end()), "{prompt}");
    assert!(prompt.contains("tasks.jsonl is empty"), "{prompt}");
    assert_eq!(p.git(&["rev-parse", "HEAD"]), head);
    assert_eq!(p.git(&["branch", "--format=%(refname:short)"]), "main");
}

#[test]
fn a_planner_stopped_by_a_signal_exits_130_and_keeps_what_it_added() {
    let p = TestProject::new()
        .git_init()
        .file("prd.md", FREE_FORM)
        .agent("ralph task add 'half a plan' > /dev/null\ntouch \"$REC/planning\"\nsleep 30\n");
    let agent = p.aux().join("agent.sh");
    let child = p
        .ralph_command(&[
            "plan",
            "--agent",
            "prd.md",
            "--agent-cmd",
            agent.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    crate::support::wait_for_file(&p.aux().join("rec/planning"));
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let run = crate::support::wait_for(child, 60);
    assert_eq!(run.code, 130, "{run:#?}");
    assert_eq!(
        run.stderr,
        "ralph: stopping: the agent gets 200ms to finish, then state is saved; interrupt again to kill it now\nerror: interrupted: the planner agent was stopped\n"
    );
    let titles: Vec<String> = p
        .json_lines("tasks.jsonl")
        .iter()
        .map(|task| task["title"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(titles, ["half a plan"]);
}

#[test]
fn a_planner_that_breaks_the_queue_or_adds_nothing_says_so() {
    let p = TestProject::new()
        .file("prd.md", FREE_FORM)
        .agent("echo '{\"id\":\"A\",\"title\":\"x\"}' >> tasks.jsonl\n");
    let run = plan_with_agent(&p);
    assert_eq!(run.code, 30, "{run:#?}");
    assert!(
        run.stderr.starts_with(
            "error: the planner left the queue invalid: tasks.jsonl:1: missing field `status`\nhint: fix that line by hand"
        ),
        "{run:#?}"
    );
    let p = TestProject::new()
        .file("prd.md", FREE_FORM)
        .agent("echo thinking\n");
    let run = plan_with_agent(&p);
    assert_eq!(run.code, 10, "{run:#?}");
    assert!(
        run.stderr.starts_with(
            "error: the planner agent added no task\nhint: its output is in .ralph/logs/plan-"
        ),
        "{run:#?}"
    );
    let p = TestProject::new()
        .file("prd.md", FREE_FORM)
        .agent("ralph task add 'half a plan' > /dev/null\necho 'something broke' >&2\nexit 3\n");
    let run = plan_with_agent(&p);
    assert_eq!(run.code, 20, "{run:#?}");
    assert!(
        run.stderr
            .starts_with("error: the planner agent failed (exit): "),
        "{run:#?}"
    );
    assert!(
        run.stderr
            .contains("tasks it added before failing are kept"),
        "{run:#?}"
    );
    assert_eq!(lines(&p).len(), 1);
}
