//! Review verdicts (`ralph task review`) and notes (`ralph task note`):
//! what a reviewer decides, and what a fresh iteration must know, reach
//! the next prompt for the task.

use crate::support::{TestProject, by_iteration};

fn pending(id: &str) -> String {
    format!(r#"{{"id":"{id}","title":"task {id}","status":"pending","leaf":true}}"#)
}

#[test]
fn a_verdict_is_for_a_ready_task_and_its_reasons_reach_the_next_prompt() {
    let p = TestProject::new().task(&pending("A")).git_init();
    p.ralph(&["task", "review", "A", "--pass"]).fails(
        30,
        "error: task A is pending, not ready: a verdict is for work marked ready for review\nhint: the agent marks it with `ralph task ready A`; `ralph task note A TEXT` keeps a note without a verdict\n",
    );
    p.ralph(&["task", "ready", "A"]).success();
    p.ralph(&["task", "review", "A", "--reject", "--notes", " "]).fails(
        30,
        "error: a rejection needs its reasons: the notes are empty; say what is missing with --notes TEXT\n",
    );
    p.ralph(&[
        "task",
        "review",
        "A",
        "--reject",
        "--notes",
        "missing tests for the empty name",
    ])
    .ok("A: review rejected: ready -> active; the reasons are in its next prompt\n");
    p.ralph(&["task", "note", "A", "the parser rejects \"\" already"])
        .ok("A: note added (2 notes)\n");
    let prompt = p.ralph(&["prompt"]).success().stdout;
    let rejected = prompt
        .find("## The last review rejected this task\n\nFix what it names before you mark the task ready again:\n\nmissing tests for the empty name\n")
        .expect(&prompt);
    let notes = prompt
        .find("## Notes on this task (newest first)\n\n### ")
        .expect(&prompt);
    assert!(rejected < notes, "{prompt}");
    let newest = prompt
        .find("· note\n\nthe parser rejects \"\" already")
        .expect(&prompt);
    let older = prompt
        .find("· review rejected\n\nmissing tests for the empty name")
        .expect(&prompt);
    assert!(newest < older, "{prompt}");
    // The triggers see it.
    let roles = p.read("config/roles.yaml").replacen(
        "triggers:\n",
        "triggers:\n  - condition: \"last_review == 'rejected' and review_rejections == 1 and task_notes == 2\"\n    role: planner\n",
        1,
    );
    let p = p.file("config/roles.yaml", roles);
    let which = p.ralph(&["roles", "which", "--json"]).success().json();
    assert_eq!(which["role"], "planner", "{which}");
    assert_eq!(which["values"]["last_review"], "rejected", "{which}");

    // Ready again; passed with notes from standard input.
    p.ralph(&["task", "ready", "A"]).success();
    let mut command = p.ralph_command(&["task", "review", "A", "--pass", "--notes-file", "-"]);
    command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"tests cover the empty name now\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "A: review passed: ready -> complete\n"
    );
    assert!(p.read("tasks.jsonl").contains(r#""status":"complete""#));
    let reviews: Vec<String> = p
        .json_lines(".ralph/events.ndjson")
        .iter()
        .filter(|e| e["phase"] == "review")
        .map(|e| {
            format!(
                "{} {}",
                e["status"].as_str().unwrap(),
                e["detail"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        reviews,
        [
            "rejected missing tests for the empty name",
            "passed tests cover the empty name now"
        ]
    );
    // No rejection to show once it passed; the notes stay.
    let prompt = p.ralph(&["prompt", "--task", "A"]).success();
    assert!(!prompt.stdout.contains("rejected this task"), "{prompt:#?}");
    assert!(
        prompt
            .stdout
            .contains("· review passed\n\ntests cover the empty name now"),
        "{prompt:#?}"
    );
}

#[test]
fn a_rejection_reaches_the_next_build_and_the_squash_names_the_passing_review() {
    // Build marks it ready; the reviewer rejects once, then passes.
    let p = TestProject::new().task(&pending("A")).git_init().agent(&by_iteration(
        "RALPH_TASK_ITERATION",
        r#"1) work A1.txt one; ralph task ready A > /dev/null ;;
2) ralph task review A --reject --notes 'missing tests for the empty name' > /dev/null ;;
3) cp "$(ls -t .ralph/prompts/*.md | head -1)" "$REC/third-prompt"; work A3.txt tests; ralph task ready A > /dev/null ;;
*) ralph task review A --pass --notes 'covered' > /dev/null ;;"#,
    ));
    let run = p.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        p.calls(),
        [
            "1 A 1 none",
            "2 A 2 reviewer",
            "3 A 3 none",
            "4 A 4 reviewer"
        ]
    );
    let third = p.rec("third-prompt");
    assert!(
        third.contains("## The last review rejected this task"),
        "{third}"
    );
    assert!(
        third.contains("missing tests for the empty name"),
        "{third}"
    );
    let body = p.git(&["log", "-1", "--format=%B", "main"]);
    assert!(body.starts_with("[A] task A\n"), "{body}");
    assert!(
        body.contains("\nCompletes: A\nReviewed: passed 20"),
        "{body}"
    );
    // The notes are in the history, quoted; the trailers still parse.
    assert!(
        body.contains("Notes on the task, newest first:\n>\n> ### ")
            && body.contains("> covered\n"),
        "{body}"
    );
    assert_eq!(
        p.git(&[
            "log",
            "-1",
            "--format=%(trailers:key=Completes,valueonly)",
            "main"
        ]),
        "A"
    );
    assert_eq!(p.git(&["log", "--format=%s", "main"]).lines().count(), 2);
}

#[test]
fn review_every_gives_the_reviewer_every_nth_iteration_on_a_task() {
    // Build work each time; the reviewer leaves a note; done on the 5th.
    let p = TestProject::new().task(&pending("A")).git_init().agent(
        r#"case "${RALPH_ROLE:-none}:$RALPH_TASK_ITERATION" in
reviewer:*) ralph task note A "review at $RALPH_TASK_ITERATION: keep going" > /dev/null ;;
*:5) work A5.txt x; ralph task complete A > /dev/null ;;
*) work "A$RALPH_TASK_ITERATION.txt" x ;;
esac
"#,
    );
    let config = p
        .read("config/ralph.yaml")
        .replace("review_every: null", "review_every: 2");
    let p = p.file("config/ralph.yaml", config);
    p.git(&["commit", "-q", "-am", "review every 2"]);
    let run = p.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        p.calls(),
        [
            "1 A 1 none",
            "2 A 2 reviewer",
            "3 A 3 none",
            "4 A 4 reviewer",
            "5 A 5 none"
        ]
    );
    let iterations: Vec<String> = p
        .json_lines(".ralph/events.ndjson")
        .iter()
        .filter(|e| e["phase"] == "iteration")
        .map(|e| format!("{} {}", e["role"].as_str().unwrap_or("-"), e["trigger"]))
        .collect();
    assert_eq!(iterations[1], "reviewer 0", "{iterations:?}");
    assert_eq!(p.read(".ralph/notes/A.md").matches("· note").count(), 2);
}

#[test]
fn review_every_without_a_reviewer_role_is_refused_before_any_agent_runs() {
    let p = TestProject::new()
        .task(&pending("A"))
        .git_init()
        .agent("exit 0");
    let config = p
        .read("config/ralph.yaml")
        .replace("review_every: null", "review_every: 3");
    let p = p.file("config/ralph.yaml", config);
    std::fs::remove_file(p.path().join("roles/reviewer.md")).unwrap();
    // This project's triggers never name the reviewer.
    let p = p.file(
        "config/roles.yaml",
        "triggers:\n  - condition: \"task_iteration > 100\"\n    role: debugger\n",
    );
    p.git(&["add", "-A"]);
    p.git(&["commit", "-q", "-m", "no reviewer"]);
    let run = p.run(&[]);
    assert_eq!(run.code, 30, "{run:#?}");
    assert!(
        run.stderr.starts_with("error: config/ralph.yaml: review_every is set, but roles/reviewer.md, the role it runs, is missing;"),
        "{run:#?}"
    );
    assert!(p.calls().is_empty());
}

#[test]
fn a_reviewer_that_leaves_a_ready_task_without_a_verdict_fails_with_evidence() {
    // The reviewer looks, says nothing the first time, then passes it.
    let p = TestProject::new().task(&pending("A")).git_init().agent(&by_iteration(
        "RALPH_TASK_ITERATION",
        r#"1) work A1.txt one; ralph task ready A > /dev/null ;;
2) echo 'looks fine to me' ;;
*) cp "$(ls -t .ralph/prompts/*.md | head -1)" "$REC/third-prompt"; ralph task review A --pass > /dev/null ;;"#,
    ));
    let run = p.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    // A failure: the debugger takes the next turn, with the evidence.
    assert_eq!(
        p.calls(),
        ["1 A 1 none", "2 A 2 reviewer", "3 A 3 debugger"]
    );
    let second: Vec<serde_json::Value> = p
        .json_lines(".ralph/events.ndjson")
        .into_iter()
        .filter(|e| e["phase"] == "iteration")
        .collect();
    assert_eq!(second[1]["status"], "no_verdict", "{second:?}");
    let third = p.rec("third-prompt");
    assert!(
        third.contains(
            "the reviewer left A ready without a verdict; give one: `ralph task review A --pass`"
        ),
        "{third}"
    );
    assert_eq!(
        p.json(".ralph/result.json")["failures"],
        serde_json::json!({"no_verdict": 1})
    );
}

#[test]
fn the_enhanced_workflow_builds_reviews_replans_and_builds_again() {
    let p = TestProject::new().task(&pending("A")).git_init();
    // Over a classic init, nothing is replaced without --force.
    let kept = p.ralph(&["init", "--workflow", "enhanced"]).success();
    assert!(
        kept.stderr.contains("note: config/roles.yaml and config/ralph.yaml already exist, so the enhanced workflow did not replace them; `ralph init --workflow enhanced --force` does\n"),
        "{kept:#?}"
    );
    // The new role file is written; the triggers stay the classic ones.
    assert!(p.path().join("roles/replanner.md").exists());
    assert!(p.read("config/roles.yaml").contains("branch_commits >= 5"));
    p.ralph(&["init", "--workflow", "enhanced", "--force"])
        .success();
    assert!(p.read("config/roles.yaml").contains("role: \"replanner\""));
    assert!(
        p.read("config/ralph.yaml")
            .contains("\nfinal_review: true\n")
    );
    p.ralph(&["roles", "check"]).success();
    p.git(&["add", "-A"]);
    p.git(&["commit", "-q", "-m", "the enhanced workflow"]);
    let p = p.agent(
        r#"case "${RALPH_ROLE:-none}:$RALPH_TASK_ID" in
none:A) [ "$RALPH_TASK_ITERATION" = 4 ] && cp "$(ls -t .ralph/prompts/*.md | head -1)" "$REC/rebuild-prompt"
   work "A$RALPH_TASK_ITERATION.txt" x; ralph task ready A > /dev/null ;;
reviewer:A) if [ -e "$REC/rejected" ]; then ralph task review A --pass --notes 'tests cover it' > /dev/null
   else touch "$REC/rejected"; ralph task review A --reject --notes 'missing tests for the empty name' > /dev/null; fi ;;
replanner:A) ralph task note A 'next: add a test for the empty name' > /dev/null
   ralph task add 'Document the empty-name rule' --dep A > /dev/null ;;
none:*) work "$RALPH_TASK_ID.txt" x; ralph task ready "$RALPH_TASK_ID" > /dev/null ;;
reviewer:*) ralph task review "$RALPH_TASK_ID" --pass > /dev/null ;;
final-reviewer:*) ralph task complete "$RALPH_TASK_ID" > /dev/null ;;
esac
"#,
    );
    let run = p.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    let calls = p.calls();
    assert_eq!(
        calls[..7],
        [
            "1 A 1 none",
            "2 A 2 reviewer",
            "3 A 3 replanner",
            "4 A 4 none",
            "5 A 5 reviewer",
            "6 B 1 none",
            "7 B 2 reviewer",
        ],
        "{calls:?}"
    );
    assert!(calls[7].ends_with(" final-reviewer"), "{calls:?}");
    let rebuild = p.rec("rebuild-prompt");
    assert!(
        rebuild.contains("missing tests for the empty name"),
        "{rebuild}"
    );
    assert!(
        rebuild.contains("next: add a test for the empty name"),
        "{rebuild}"
    );
    let a = p.git(&["log", "--format=%B", "--grep=^\\[A\\]", "main"]);
    assert_eq!(a.matches("Completes: A\n").count(), 1, "{a}");
    assert!(a.contains("Reviewed: passed 20"), "{a}");
}

#[test]
fn review_rounds_alternate_planner_and_reviewer_with_the_notes_in_each_revision() {
    let p = TestProject::new()
        .git_init()
        .file("prd.md", "# Export\n\nPeople want their notes out, as CSV and as JSON.\n")
        .agent(
            r#"echo "$RALPH_ROLE" >> "$REC/turns"
case "$RALPH_ROLE:$RALPH_ITERATION" in
planner:1) ralph task add "Export everything" > /dev/null ;;
plan-reviewer:2) ralph task note A "too big: split CSV from JSON" > /dev/null ;;
planner:3) cp "$(ls -t .ralph/prompts/*.md | head -1)" "$REC/revision-1"
   ralph task add "Export as CSV" --parent A > /dev/null; ralph task add "Export as JSON" --parent A > /dev/null ;;
plan-reviewer:4) ralph task note A.2 "say which JSON shape" > /dev/null ;;
planner:5) cp "$(ls -t .ralph/prompts/*.md | head -1)" "$REC/revision-2" ;;
*) exit 9 ;;
esac
"#,
        );
    let agent = p.aux().join("agent.sh");
    let run = crate::support::finish(
        p.ralph_command(&[
            "plan",
            "--agent",
            "prd.md",
            "--review-rounds",
            "2",
            "--agent-cmd",
            agent.to_str().unwrap(),
        ]),
        60,
    );
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        p.rec("turns"),
        "planner\nplan-reviewer\nplanner\nplan-reviewer\nplanner\n"
    );
    let first = p.rec("revision-1");
    assert!(
        first.contains("# The review's notes on the plan"),
        "{first}"
    );
    assert!(first.contains("## A Export everything\n\n### "), "{first}");
    assert!(first.contains("too big: split CSV from JSON"), "{first}");
    let second = p.rec("revision-2");
    assert!(second.contains("## A.2 Export as JSON"), "{second}");
    assert!(second.contains("say which JSON shape"), "{second}");
    assert_eq!(
        crate::support::ids(&p.read("tasks.jsonl")),
        ["A", "A.1", "A.2"]
    );
    assert!(
        run.stdout.starts_with("prd.md: the planner added 3 tasks"),
        "{run:#?}"
    );
}

#[test]
fn notes_survive_a_kill_between_iterations() {
    // The first iteration notes and is rejected... by hand, before the
    // run; ralph is killed after the next iteration's agent ran.
    let p = TestProject::new().task(&pending("A")).git_init().agent(&by_iteration(
        "RALPH_TASK_ITERATION",
        r#"1) ralph task note A "the schema needs a version field" > /dev/null; work A1.txt x ;;
*) cp "$(ls -t .ralph/prompts/*.md | head -1)" "$REC/after-kill"; work A2.txt y; ralph task complete A > /dev/null ;;"#,
    ));
    let mut command = p.run_command(&[]);
    command.env("RALPH_FAULT", "after_leftovers");
    let killed = crate::support::finish(command, 60);
    assert_eq!(killed.code, -1, "{killed:#?}");
    assert!(
        p.read(".ralph/notes/A.md")
            .contains("the schema needs a version field")
    );
    let run = p.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    let prompt = p.rec("after-kill");
    assert!(
        prompt.contains("## Notes on this task (newest first)"),
        "{prompt}"
    );
    assert!(
        prompt.contains("the schema needs a version field"),
        "{prompt}"
    );
}

#[test]
fn a_tasks_verdicts_are_counted_in_its_state() {
    let p = TestProject::new()
        .task(&pending("A"))
        .git_init()
        .agent(&by_iteration(
            "RALPH_TASK_ITERATION",
            r#"1) work A1.txt x; ralph task ready A > /dev/null ;;
2) ralph task review A --reject --notes "no tests" > /dev/null ;;
*) work A3.txt y ;;"#,
        ));
    let run = p.run(&["--max-iterations", "3"]);
    assert_eq!(run.code, 10, "{run:#?}");
    let state = p.json(".ralph/state.json");
    assert_eq!(state["tasks"]["A"]["reviews"], 1, "{state}");
    assert_eq!(state["tasks"]["A"]["rejections"], 1, "{state}");
}

#[test]
fn a_note_is_refused_empty_and_kept_whole_whatever_its_lines() {
    let p = TestProject::new().task(&pending("A")).git_init();
    p.ralph(&["task", "note", "A", "  "]).fails(
        30,
        "error: the note is empty; write what was learned, what is left or what failed\n",
    );
    p.ralph(&["task", "ready", "A"]).success();
    p.ralph(&[
        "task",
        "review",
        "A",
        "--reject",
        "--notes-file",
        "missing.md",
    ])
    .fails(
        30,
        "error: cannot read the notes from missing.md: No such file or directory (os error 2)\n",
    );
    // A Markdown heading inside a note stays in its note.
    p.ralph(&["task", "note", "A", "### Plan\nfirst the parser"])
        .ok("A: note added (1 note)\n");
    p.ralph(&[
        "task",
        "review",
        "A",
        "--reject",
        "--notes",
        "### Must fix\nthe empty name",
    ])
    .success();
    assert_eq!(crate::support::ids(&p.read("tasks.jsonl")), ["A"]);
    let prompt = p.ralph(&["prompt", "--task", "A"]).success().stdout;
    // The reasons once, in their section; the earlier note in the notes.
    assert_eq!(prompt.matches("the empty name").count(), 1, "{prompt}");
    assert!(prompt.contains(" ### Plan\nfirst the parser"), "{prompt}");
    p.ralph(&["task", "note", "A", "third"])
        .ok("A: note added (3 notes)\n");
}
