//! Agents whose git commands revert the queue files, and agents that edit
//! the archive: no task is ever lost, the archive stays as ralph wrote it,
//! and the next iteration hears what happened.

use crate::support::{FINISH, TestProject};

/// Behaves by `$RALPH_ITERATION` (see `support::by_iteration`).
fn by_iteration(steps: &str) -> String {
    crate::support::by_iteration("RALPH_ITERATION", steps)
}

/// The README's walk-through: `ralph init` committed, then three tasks
/// added with `ralph task add` and not committed.
fn walk_through(first_iteration: &str) -> TestProject {
    let project = TestProject::new()
        .git_init()
        .agent(&by_iteration(&format!("1) {first_iteration} ;;\n{FINISH}")));
    for title in ["one", "two", "three"] {
        project.ralph(&["task", "add", title]).success();
    }
    project
}

fn archived(project: &TestProject) -> Vec<String> {
    project
        .json_lines("tasks-done.jsonl")
        .iter()
        .map(|record| record["id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Runs the walk-through with an agent that starts over with `command` in
/// its first iteration; returns the second iteration's prompt.
fn starts_over(command: &str) -> (TestProject, String) {
    let project = walk_through(command);
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stderr.contains("ralph: drained"), "{run:#?}");
    assert_eq!(archived(&project), ["A", "B", "C"], "every task was worked");
    assert_eq!(project.read("tasks.jsonl"), "");
    assert_eq!(
        project.json(".ralph/result.json")["failures"],
        serde_json::json!({"queue_reverted": 1})
    );
    assert_eq!(project.git(&["branch", "--show-current"]), "main");
    let prompt = project.read(".ralph/prompts/2-A.md");
    (project, prompt)
}

const PUT_BACK: &str = "ralph put back the queue as it last knew it, with the changes made through `ralph task` during the iteration";

#[test]
fn git_reset_hard_does_not_lose_tasks_added_and_not_committed() {
    let (project, prompt) = starts_over("git reset -q --hard");
    let commit = project.git(&["rev-parse", "--short", "main~3"]);
    let expected = format!(
        "tasks.jsonl was reverted to its version in commit {commit}, as `git checkout -- .`, `git restore .` or `git reset --hard` does (3 tasks gone: A, B, C); {PUT_BACK}"
    );
    assert!(prompt.contains(&expected), "{expected}\n{prompt}");
    assert!(
        prompt.contains("never let git revert or rewrite tasks.jsonl or tasks-done.jsonl"),
        "{prompt}"
    );
}

#[test]
fn git_checkout_dot_does_not_lose_tasks_added_and_not_committed() {
    let (_, prompt) = starts_over("git checkout -q -- .");
    assert!(prompt.contains("(3 tasks gone: A, B, C)"), "{prompt}");
}

#[test]
fn git_stash_does_not_lose_tasks_and_the_stash_is_named() {
    let (project, prompt) = starts_over("echo wip > wip.txt; git stash -q -u");
    assert!(
        prompt.contains("as `git stash` does (3 tasks gone: A, B, C)"),
        "{prompt}"
    );
    assert!(
        prompt.contains("the iteration left its work in stash@{0} (WIP on task/A-one: "),
        "{prompt}"
    );
    assert!(prompt.contains("`git stash pop` takes it back"), "{prompt}");
    let stashed = project.git(&["stash", "show", "--include-untracked", "--name-only"]);
    assert!(stashed.lines().any(|f| f == "wip.txt"), "{stashed}");
}

/// A task added through `ralph task` and committed by the agent, then a
/// `git reset --hard HEAD~1` in the next iteration: the task comes back.
#[test]
fn git_reset_to_an_earlier_commit_does_not_lose_a_task_added_meanwhile() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"first","status":"pending","leaf":true}"#)
        .git_init()
        .agent(&by_iteration(&format!(
            r#"1) ralph task add "follow-up" > /dev/null; echo one > one.txt; git add -A; git commit -q -m "one" ;;
2) git reset -q --hard HEAD~1 ;;
{FINISH}"#
        )));
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(archived(&project), ["A", "B"]);
    let prompt = project.read(".ralph/prompts/3-A.md");
    assert!(
        prompt.contains(
            "as `git reset --hard` to an earlier commit does (1 task gone: B); ralph put back"
        ),
        "{prompt}"
    );
    assert_eq!(
        project.json(".ralph/result.json")["failures"],
        serde_json::json!({"queue_reverted": 1})
    );
}

/// A person's hand edit during an iteration is no version git holds: kept.
#[test]
fn a_hand_edit_that_removes_a_task_is_kept() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"first","status":"pending","leaf":true}"#)
        .task(r#"{"id":"B","title":"dropped","status":"pending","leaf":true}"#)
        .git_init()
        .agent(&by_iteration(&format!(
            "1) grep -v '\"id\":\"B\"' tasks.jsonl > tasks.jsonl.tmp && mv tasks.jsonl.tmp tasks.jsonl; work A.txt done; ralph task complete A > /dev/null ;;\n{FINISH}"
        )));
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(archived(&project), ["A"]);
    assert_eq!(project.read("tasks.jsonl"), "");
    assert_eq!(
        project.json(".ralph/result.json")["failures"],
        serde_json::json!({})
    );
}

/// An agent that rewrites the archive, erasing a record and forging one
/// for a task it never worked: the record comes back byte for byte, the
/// forged line goes to the quarantine, the task is worked.
#[test]
fn an_agent_that_rewrites_the_archive_gets_it_put_back() {
    let record = r#"{"id":"A","title":"old","status":"complete","leaf":true,"completed":"2026-01-01T00:00:00Z"}"#;
    let project = TestProject::new()
        .file("tasks-done.jsonl", format!("{record}\n"))
        .task(r#"{"id":"B","title":"real","status":"pending","leaf":true}"#)
        .task(r#"{"id":"C","title":"skipped?","status":"pending","leaf":true}"#)
        .git_init()
        .agent(&by_iteration(&format!(
            r#"1) printf '%s\n' '{{"id":"C","title":"skipped?","status":"complete","leaf":true}}' > tasks-done.jsonl ;;
{FINISH}"#
        )));
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    let done = project.read("tasks-done.jsonl");
    assert!(
        done.starts_with(&format!("{record}\n")),
        "the record is byte for byte: {done}"
    );
    assert_eq!(archived(&project), ["A", "B", "C"]);
    assert!(
        project.calls().iter().any(|call| call.contains(" C ")),
        "C was worked: {:?}",
        project.calls()
    );
    let prompt = project.read(".ralph/prompts/2-B.md");
    assert!(
        prompt.contains(
            "tasks-done.jsonl had 1 archived record changed or removed and had 1 line that ralph did not write (moved to .ralph/queue/quarantine/tasks-done.jsonl."
        ),
        "{prompt}"
    );
    assert!(
        run.stderr
            .contains("warning: tasks-done.jsonl had 1 archived record changed or removed"),
        "{run:#?}"
    );
    let quarantine: Vec<_> = std::fs::read_dir(project.path().join(".ralph/queue/quarantine"))
        .expect("the quarantine")
        .map(|entry| entry.expect("entry").path())
        .collect();
    assert_eq!(quarantine.len(), 1, "{quarantine:?}");
    assert!(
        std::fs::read_to_string(&quarantine[0])
            .expect("read")
            .contains(r#""id":"C""#)
    );
    assert_eq!(
        project.json(".ralph/result.json")["failures"],
        serde_json::json!({"archive_edited": 1})
    );
}

/// Records a person appends by hand between runs (the seed's jq recipe)
/// count: they are the archive ralph knows when the run starts.
#[test]
fn records_appended_between_runs_count() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"by hand","status":"pending","leaf":true}"#)
        .task(r#"{"id":"B","title":"by agent","status":"pending","leaf":true}"#)
        .git_init()
        .agent(&by_iteration(FINISH));
    std::fs::write(
        project.path().join("tasks-done.jsonl"),
        "{\"id\":\"A\",\"title\":\"by hand\",\"status\":\"complete\",\"leaf\":true}\n",
    )
    .expect("append");
    std::fs::write(
        project.path().join("tasks.jsonl"),
        "{\"id\":\"B\",\"title\":\"by agent\",\"status\":\"pending\",\"leaf\":true}\n",
    )
    .expect("remove");
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(archived(&project), ["A", "B"]);
    assert_eq!(project.calls(), ["1 B 1 none"]);
}

#[test]
fn git_clean_x_emptying_ralphs_folder_loses_no_archive_record() {
    // Every iteration ends with `git clean -fdx`, which removes ralph's
    // copies of the queue in `.ralph/` along with everything ignored.
    let project = TestProject::new().git_init().agent(&by_iteration(&format!(
        "*) git clean -fdxq; {}",
        FINISH.trim_start_matches("*) ")
    )));
    for title in ["one", "two", "three"] {
        project.ralph(&["task", "add", title]).success();
    }
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(archived(&project), ["A", "B", "C"]);
    assert_eq!(
        project.json(".ralph/result.json")["failures"],
        serde_json::json!({})
    );
    assert!(!project.path().join(".ralph/queue/quarantine").exists());
}

#[test]
fn git_clean_x_removing_ignored_queue_files_loses_no_task() {
    // The queue files are ignored, so `git clean -fdx` removes them along
    // with ralph's copies in `.ralph/`.
    let project = TestProject::new()
        .file(".gitignore", "tasks.jsonl\ntasks-done.jsonl\n")
        .git_init()
        .agent(&by_iteration(&format!(
            "1) git clean -fdxq; {} ;;\n{FINISH}",
            FINISH.trim_start_matches("*) ").trim_end_matches(" ;;")
        )));
    for title in ["one", "two", "three"] {
        project.ralph(&["task", "add", title]).success();
    }
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stderr.contains(
            "warning: tasks.jsonl was deleted (3 tasks gone: A, B, C); ralph put back the queue as it was when the iteration started: ralph's copies in .ralph/ were removed too (`git clean -x`), so changes made through `ralph task` during the iteration are not in it"
        ),
        "{run:#?}"
    );
    assert_eq!(archived(&project), ["A", "B", "C"]);
    assert_eq!(project.read("tasks.jsonl"), "");
}

/// The README's walk-through, and an agent that runs `git reset --hard`
/// (the queue was never committed: the file goes back to having no task)
/// and then marks its task complete in the same iteration: the
/// completion stands, on the queue as ralph knew it, which the run puts
/// back; the task is merged, not blocked with its work done.
#[test]
fn a_completion_after_git_reset_hard_in_the_same_iteration_stands() {
    let project = TestProject::new().git_init().agent(&by_iteration(&format!(
        r#"1) work A.txt done; git reset -q --hard; ralph task complete A > "$REC/said" 2>&1 ;;
{FINISH}"#
    )));
    project.ralph(&["task", "add", "one"]).success();
    let run = project.run(&["--max-iterations", "1"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let said = project.rec("said");
    assert!(said.starts_with("A: active -> complete\n"), "{said}");
    assert!(
        said.contains(
            "warning: tasks.jsonl lacks A (git reverted the file, or a hand edit removed the task)"
        ),
        "{said}"
    );
    // Put back after the iteration: A complete, then merged by the run.
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(archived(&project), ["A"]);
    assert_eq!(project.calls().len(), 1, "no second iteration on A");
}
