//! `ralph roles check|which` and `ralph prompt` in initialised projects.

use crate::support::TestProject;

fn project() -> TestProject {
    let p = TestProject::new().file(".git/HEAD", "ref: refs/heads/main\n");
    p.ralph(&["init"]).success();
    p
}

const HINT: &str = "hint: fix config/roles.yaml (the syntax is described at the top of the default file, `ralph init` writes it), then run `ralph roles check`\n";

#[test]
fn roles_check_lists_the_seed_triggers() {
    project().ralph(&["roles", "check"]).ok(concat!(
        "trigger 1: task_kind == 'final_review' -> final-reviewer\n",
        "trigger 2: branch_commits >= 5 -> reviewer\n",
        "trigger 3: task_title contains 'refactor' -> architect\n",
        "trigger 4: last_iteration_failed -> debugger\n",
        "trigger 5: iterations_since_role('documenter') >= 10 -> documenter\n",
        "trigger 6: task_marked_ready_to_complete -> reviewer\n",
        "ok: 6 triggers\n",
    ));
    let json = project()
        .ralph(&["roles", "check", "--json"])
        .success()
        .json();
    assert_eq!(
        json["triggers"][2]["normalized"],
        "contains(task_title, \"refactor\")"
    );
    TestProject::new().ralph(&["roles", "check"]).ok(
        "ok: no config/roles.yaml, so no triggers: every iteration runs without a role (`ralph init` writes the defaults)\n",
    );
}

#[test]
fn roles_check_reports_each_broken_trigger_with_exit_30() {
    let cases = [
        (
            "triggers:\n  - condition: \"brnch_commits >= 5\"\n    role: reviewer\n",
            "config/roles.yaml: trigger 1 (condition \"brnch_commits >= 5\"): unknown variable `brnch_commits` (did you mean `branch_commits`?); known: task_id, task_title, task_status, task_kind, task_depth, iteration, task_iteration, branch_commits, files_changed, last_iteration_failed, consecutive_failures, task_marked_ready_to_complete, elapsed_minutes, last_review, review_rejections, task_notes, iterations_since_review",
        ),
        (
            "triggers:\n  - condition: \"true\"\n    role: reviewer\n  - condition: \"task_title > 3\"\n    role: reviewer\n",
            "config/roles.yaml: trigger 2 (condition \"task_title > 3\"): compares a string with a number; both sides must be the same type",
        ),
        (
            "triggers:\n  - condition: \"true\"\n    role: tester\n",
            "config/roles.yaml: trigger 1 (condition \"true\"): role \"tester\" has no file roles/tester.md; create it or fix the role name",
        ),
        (
            "triggers:\n  - condition: \"true\"\n    role: reviewer\n    modle: opus\n",
            "config/roles.yaml:4: triggers[0]: unknown field `modle`, expected one of `condition`, `role`, `model`, `description` (did you mean `model`?)",
        ),
        (
            "triggers:\n  - condition: \"(branch_commits > 1\"\n    role: reviewer\n",
            "config/roles.yaml: trigger 1 (condition \"(branch_commits > 1\"): syntax error: Found an unmatched opening parenthesis '('.",
        ),
        (
            "triggers: [\n",
            "config/roles.yaml:2: did not find expected node content",
        ),
    ];
    for (yaml, message) in cases {
        let p = project().file("config/roles.yaml", yaml);
        p.ralph(&["roles", "check"])
            .fails(30, &format!("error: {message}\n{HINT}"));
        // The same check guards every command that reads the triggers.
        p.ralph(&["roles", "which"])
            .fails(30, &format!("error: {message}\n{HINT}"));
    }
}

#[test]
fn roles_which_explains_the_choice_for_the_next_task() {
    let p = project();
    p.ralph(&["task", "add", "refactor the parser"]).success();
    p.ralph(&["roles", "which"]).ok(concat!(
        "task: A refactor the parser\n",
        "trigger 1: false  task_kind == 'final_review'\n",
        "trigger 2: false  branch_commits >= 5\n",
        "trigger 3: true   task_title contains 'refactor'\n",
        "role: architect (trigger 3: task_title contains 'refactor')\n",
        "values read:\n",
        "  task_kind = \"\"\n",
        "  branch_commits = 0\n",
        "  task_title = \"refactor the parser\"\n",
    ));
    p.ralph(&["roles", "which", "--var", "branch_commits=5"])
        .ok(concat!(
            "task: A refactor the parser\n",
            "trigger 1: false  task_kind == 'final_review'\n",
            "trigger 2: true   branch_commits >= 5\n",
            "role: reviewer (trigger 2: branch_commits >= 5)\n",
            "values read:\n",
            "  task_kind = \"\"\n",
            "  branch_commits = 5\n",
        ));
    let json = p
        .ralph(&[
            "roles",
            "which",
            "--var",
            "task_title=x",
            "--var",
            "iterations_since_role('documenter')=10",
            "--json",
        ])
        .success()
        .json();
    assert_eq!(json["role"], "documenter");
    assert_eq!(json["trigger"], 5);
    assert_eq!(json["values"]["iterations_since_role('documenter')"], 10);
    assert_eq!(json["values"]["last_iteration_failed"], false);
    let none = p
        .ralph(&["roles", "which", "--var", "task_title=plain"])
        .success();
    assert!(
        none.stdout.contains("role: none (no trigger is true)\n"),
        "{none:?}"
    );
    let bad = p.ralph(&["roles", "which", "--var", "branch_comits=1"]);
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr
            .starts_with("error: --var branch_comits: unknown variable; known: task_id,"),
        "{bad:?}"
    );
    assert!(
        bad.stderr.ends_with(
            "\nhint: variables are listed in ralph's docs/ROLES.md, section Roles and triggers\n"
        ),
        "{bad:?}"
    );
}

#[test]
fn roles_which_without_a_task_says_so() {
    project()
        .ralph(&["roles", "which", "--var", "last_iteration_failed=true"])
        .ok_noting(
            "trigger 1: false  task_kind == 'final_review'\ntrigger 2: false  branch_commits >= 5\ntrigger 3: false  task_title contains 'refactor'\ntrigger 4: true   last_iteration_failed\nrole: debugger (trigger 4: last_iteration_failed)\nvalues read:\n  task_kind = \"\"\n  branch_commits = 0\n  task_title = \"\"\n  last_iteration_failed = true\n",
            "note: no current task; task variables are empty unless set with --var\n",
        );
}

#[test]
fn prompt_is_working_md_then_role_then_task_context() {
    let p = project()
        .file("working.md", "WORK\n")
        .file("roles/architect.md", "ARCHITECT\n");
    p.ralph(&["task", "add", "implement auth"]).success();
    p.ralph(&[
        "task",
        "add",
        "refactor the store",
        "--parent",
        "A",
        "--body",
        "Keep the API.",
    ])
    .success();
    let run = p.ralph(&["prompt"]).success();
    assert_eq!(
        run.stdout,
        "WORK\n\n\n---\n\nARCHITECT\n\n\n---\n\n# Current task\n\n\
         - Task: A.1 refactor the store\n\
         - Status: pending\n\
         - Part of: A implement auth\n\
         - Iteration: 1 of this run, 1 on this task\n\
         - Role: architect, because trigger 3 (`task_title contains 'refactor'`) is true: Design before code on refactoring tasks\n\
         \n## Details\n\nKeep the API.\n"
    );
    assert_eq!(
        run.stderr,
        format!(
            "task: A.1 refactor the store\nrole: architect (trigger 3: task_title contains 'refactor')\nprompt: {} bytes\n",
            run.stdout.len()
        )
    );
}

#[test]
fn prompt_without_a_role_and_with_a_project_template() {
    let p = project().file("working.md", "WORK").file(
        "templates/context.md.j2",
        "TASK {{ task.id }}: {{ task.title }} ({{ role or 'no role' }})",
    );
    p.ralph(&["task", "add", "plain work"]).success();
    p.ralph(&["task", "add", "other"]).success();
    p.ralph(&["prompt", "--task", "B"]).ok_noting(
        "WORK\n\n---\n\nTASK B: other (no role)",
        "task: B other\nrole: none (no trigger is true)\nprompt: 34 bytes\n",
    );
    let json = p.ralph(&["prompt", "--json"]).success().json();
    assert_eq!(json["task"], "A");
    assert_eq!(json["bytes"], 39);
    assert_eq!(json["role"], serde_json::Value::Null);
}

#[test]
fn prompt_errors_name_what_to_fix() {
    let p = project().file("templates/context.md.j2", "{{ task.nope }}");
    p.ralph(&["task", "add", "x"]).success();
    p.ralph(&["prompt"]).fails(
        30,
        "error: templates/context.md.j2:1: undefined value: `task.nope` is undefined\nhint: fix templates/context.md.j2 (variables: task, ancestors, iteration, task_iteration, role, trigger, evidence, critique, review, notes, rejection) or delete it to use the default\n",
    );
    std::fs::remove_file(p.path().join("working.md")).unwrap();
    std::fs::remove_file(p.path().join("templates/context.md.j2")).unwrap();
    p.ralph(&["prompt"]).fails(
        30,
        &format!(
            "error: working.md is missing in {}\nhint: run `ralph init` to create the default working.md\n",
            p.path().display()
        ),
    );
    TestProject::new().ralph(&["prompt"]).fails(
        1,
        "no workable task to build a prompt for; pass --task ID\n",
    );
    p.ralph(&["prompt", "--task", "Q"]).fails(
        30,
        "error: no task \"Q\" in tasks.jsonl\nhint: `ralph task list` shows the ids\n",
    );
}
