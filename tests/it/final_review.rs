//! The final review (`final_review: true`): when the queue drains, one task
//! of kind `final_review`, worked by the `final-reviewer` role over the
//! whole run's work, which passes it or adds follow-up tasks; a second
//! review at most.

use crate::support::{TestProject, finish, phases};

/// The agent: a final reviewer adds the follow-up tasks its review's line
/// in `$REC/follow-ups` names (`C fix-one fix-two`), then completes the
/// review; any other task gets a file of its own and is completed.
const AGENT: &str = r#"case "$RALPH_ROLE" in
final-reviewer)
  for title in $(grep "^$RALPH_TASK_ID " "$REC/follow-ups" 2>/dev/null | cut -d' ' -f2-); do
    ralph task add "$title" > /dev/null
  done
  ralph task complete "$RALPH_TASK_ID" > /dev/null ;;
*) work "$RALPH_TASK_ID.txt" done; ralph task complete "$RALPH_TASK_ID" > /dev/null ;;
esac
"#;

/// Two tasks, the final review on in `config/ralph.yaml` when `on`, and
/// the reviewers' follow-ups: `C fix-one fix-two` lines.
fn project(on: bool, follow_ups: &str) -> TestProject {
    let project = TestProject::new();
    let project = if on {
        project.file("config/ralph.yaml", "final_review: true\n")
    } else {
        project
    };
    let project = project
        .task(r#"{"id":"A","title":"parse the input","status":"pending","leaf":true}"#)
        .task(r#"{"id":"B","title":"print the report","status":"pending","leaf":true}"#)
        .git_init()
        .agent(AGENT);
    std::fs::write(project.aux().join("rec/follow-ups"), follow_ups).expect("write follow-ups");
    project
}

/// The ids of the archive's records, and those whose kind is final_review.
fn archived(project: &TestProject) -> (Vec<String>, Vec<String>) {
    let records = project.json_lines("tasks-done.jsonl");
    let id = |r: &serde_json::Value| r["id"].as_str().unwrap().to_owned();
    let reviews = records
        .iter()
        .filter(|r| r["kind"] == "final_review")
        .map(id)
        .collect();
    (records.iter().map(id).collect(), reviews)
}

/// The `ralph.log` lines that say a final review was added, without times.
fn review_lines(project: &TestProject) -> Vec<String> {
    project
        .read("ralph.log")
        .lines()
        .filter(|l| l.contains("final review"))
        .map(|l| l.split_once(' ').unwrap().1.to_owned())
        .collect()
}

#[test]
fn a_final_review_that_passes_is_archived_and_the_run_ends_drained() {
    let project = project(true, "");
    let start = project.git(&["rev-parse", "--short=7", "HEAD"]);
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        project.calls(),
        ["1 A 1 none", "2 B 1 none", "3 C 1 final-reviewer"]
    );
    assert_eq!(
        review_lines(&project),
        ["C added: final review 1 of at most 2 (the queue drained)"]
    );
    assert_eq!(phases(&project, "C")[0], "final_review/added");

    // Its prompt: the role, the tasks done, the commits and the files.
    let prompt = project.read(".ralph/prompts/3-C.md");
    for part in [
        "# Role: Final Reviewer",
        "- Task: C Final review of the run",
        "- Role: final-reviewer, because trigger 1 (`task_kind == 'final_review'`) is true",
        "## The run under review (final review 1 of at most 2)",
        &format!("since {start}, where the run began: `git diff {start}..main`"),
        "### Tasks done in this run\n\n- A parse the input\n- B print the report\n",
        " [A] parse the input\n",
        " [B] print the report\n",
        "```\nA.txt | +1 -0\nB.txt | +1 -0\n2 files changed, 2 insertions(+), 0 deletions(-)\n```",
    ] {
        assert!(prompt.contains(part), "{part:?} in:\n{prompt}");
    }

    // An ordinary task line, archived like the others; the review changed
    // nothing, so its commit holds only its archive record.
    let (ids, reviews) = archived(&project);
    assert_eq!(ids, ["A", "B", "C"]);
    assert_eq!(reviews, ["C"]);
    let record = &project.json_lines("tasks-done.jsonl")[2];
    assert_eq!(record["title"], "Final review of the run");
    assert_eq!(record["leaf"], true);
    assert_eq!(project.read("tasks.jsonl"), "");
    assert_eq!(
        project.git(&["log", "--format=%s", "main"]),
        "[C] Final review of the run\n[B] print the report\n[A] parse the input\ninitial commit"
    );
    assert!(
        project
            .git(&["log", "-1", "--format=%B", "main"])
            .ends_with("Completes: C"),
    );
    assert_eq!(
        project.git(&["diff", "--name-only", "main~1", "main"]),
        "tasks-done.jsonl"
    );
    let result = project.json(".ralph/result.json");
    assert_eq!(result["status"], "drained");
    assert_eq!(result["merged"], 3);
    // The next run's review covers its own work.
    assert_eq!(
        project.json(".ralph/state.json")["scope"],
        serde_json::Value::Null
    );
}

#[test]
fn follow_ups_of_the_first_review_are_worked_then_a_second_review_runs() {
    let project = project(true, "C fix-the-parser fix-the-report\n");
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        project.calls(),
        [
            "1 A 1 none",
            "2 B 1 none",
            "3 C 1 final-reviewer",
            "4 D 1 none",
            "5 E 1 none",
            "6 F 1 final-reviewer",
        ]
    );
    let (ids, reviews) = archived(&project);
    assert_eq!(ids, ["A", "B", "C", "D", "E", "F"]);
    assert_eq!(reviews, ["C", "F"]);
    let second = project.read(".ralph/prompts/6-F.md");
    for part in [
        "## The run under review (final review 2 of at most 2)",
        "- A parse the input\n- B print the report\n- C Final review of the run\n- D fix-the-parser\n- E fix-the-report\n",
        "A.txt | +1 -0\nB.txt | +1 -0\nD.txt | +1 -0\nE.txt | +1 -0\n4 files changed",
    ] {
        assert!(second.contains(part), "{part:?} in:\n{second}");
    }
    assert_eq!(
        review_lines(&project),
        [
            "C added: final review 1 of at most 2 (the queue drained)",
            "F added: final review 2 of at most 2 (the queue drained)"
        ]
    );
    assert_eq!(project.json(".ralph/result.json")["status"], "drained");
}

#[test]
fn tasks_the_second_review_adds_are_worked_but_no_third_review_runs() {
    let project = project(true, "C fix-one fix-two\nF fix-three fix-four\n");
    // From the command line this time.
    let run = project.run(&["--final-review"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        project.calls(),
        [
            "1 A 1 none",
            "2 B 1 none",
            "3 C 1 final-reviewer",
            "4 D 1 none",
            "5 E 1 none",
            "6 F 1 final-reviewer",
            "7 G 1 none",
            "8 H 1 none",
        ]
    );
    let (ids, reviews) = archived(&project);
    assert_eq!(ids, ["A", "B", "C", "D", "E", "F", "G", "H"]);
    assert_eq!(reviews, ["C", "F"]);
    assert_eq!(project.read("tasks.jsonl"), "");
    assert_eq!(review_lines(&project).len(), 2);
    assert_eq!(project.json(".ralph/result.json")["status"], "drained");
}

#[test]
fn without_the_setting_no_review_task_is_added() {
    let project = project(false, "");
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.calls(), ["1 A 1 none", "2 B 1 none"]);
    assert_eq!(archived(&project).1, Vec::<String>::new());
    assert!(!project.read("ralph.log").contains("final review"));
    // RALPH_FINAL_REVIEW=false turns a configured one off.
    let project = self::project(true, "");
    let mut command = project.run_command(&[]);
    command.env("RALPH_FINAL_REVIEW", "false");
    assert_eq!(finish(command, 60).code, 0);
    assert_eq!(project.calls(), ["1 A 1 none", "2 B 1 none"]);
    assert_eq!(archived(&project).1, Vec::<String>::new());
}

#[test]
fn no_review_when_nothing_was_merged_or_the_run_ends_blocked() {
    // Nothing to do: nothing to review.
    let empty = TestProject::new()
        .file("config/ralph.yaml", "final_review: true\n")
        .git_init()
        .agent(AGENT);
    let run = empty.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(empty.calls(), Vec::<String>::new());
    assert_eq!(empty.read("tasks.jsonl"), "");

    // B fails until it is blocked: the run ends blocked, unreviewed.
    let blocked = project(true, "").agent(
        r#"case "$RALPH_TASK_ID" in
B) exit 1 ;;
*) work "$RALPH_TASK_ID.txt" done; ralph task complete "$RALPH_TASK_ID" > /dev/null ;;
esac
"#,
    );
    let run = blocked.run(&[]);
    assert_eq!(run.code, 10, "{run:#?}");
    assert_eq!(
        blocked.calls(),
        [
            "1 A 1 none",
            "2 B 1 none",
            "3 B 2 debugger",
            "4 B 3 debugger"
        ]
    );
    let (ids, reviews) = archived(&blocked);
    assert_eq!((ids, reviews.len()), (vec!["A".to_owned()], 0));
    assert!(!blocked.read("tasks.jsonl").contains("final_review"));
}

#[test]
fn a_run_that_stops_before_the_queue_drains_hands_its_work_to_the_next_review() {
    let project = project(true, "");
    let start = project.git(&["rev-parse", "--short=7", "HEAD"]);
    let run = project.run(&["--max-iterations", "1"]);
    assert_eq!(run.code, 10, "{run:#?}");
    assert_eq!(project.calls(), ["1 A 1 none"]);
    // The next run: B, then a review of A and B since the first run began.
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        project.calls(),
        ["1 A 1 none", "1 B 1 none", "2 C 1 final-reviewer"]
    );
    let prompt = project.read(".ralph/prompts/3-C.md");
    for part in [
        format!("since {start}, where the run began"),
        "- A parse the input\n- B print the report\n".to_owned(),
        "A.txt | +1 -0\nB.txt | +1 -0\n2 files changed".to_owned(),
    ] {
        assert!(prompt.contains(&part), "{part:?} in:\n{prompt}");
    }
}

#[test]
fn parallel_workers_run_the_final_review_last() {
    let project = project(true, "");
    let run = finish(project.run_command(&["--workers", "2"]), 120);
    assert_eq!(run.code, 0, "{run:#?}");
    let calls = project.calls();
    assert_eq!(calls.len(), 3, "{calls:?}");
    // A worker's iterations count in its own state.
    assert_eq!(calls[2].split_once(' ').unwrap().1, "C 1 final-reviewer");
    let name = std::fs::read_dir(project.path().join(".ralph/prompts"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .find(|name| name.ends_with("-C.md"))
        .expect("the review's prompt");
    let prompt = project.read(&format!(".ralph/prompts/{name}"));
    assert!(
        prompt.contains("A.txt | +1 -0\nB.txt | +1 -0\n2 files changed"),
        "{prompt}"
    );
    assert_eq!(archived(&project).1, ["C"]);
}

#[test]
fn triggers_that_never_read_the_kind_are_named_at_the_start() {
    let project = TestProject::new()
        .file("config/ralph.yaml", "final_review: true\n")
        .file(
            "config/roles.yaml",
            "triggers:\n  - condition: \"last_iteration_failed\"\n    role: \"debugger\"\n",
        )
        .task(r#"{"id":"A","title":"parse the input","status":"pending","leaf":true}"#)
        .git_init()
        .agent(AGENT);
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stderr.contains("warning: final_review is on, but no trigger in config/roles.yaml reads task_kind, so the final review gets no final-reviewer role; add `- condition: \"task_kind == 'final_review'\"` with `role: \"final-reviewer\"` as the first trigger (`ralph init` writes roles/final-reviewer.md)\n"),
        "{}",
        run.stderr
    );
    // The review still runs, as an ordinary task without the role.
    assert_eq!(project.calls(), ["1 A 1 none", "2 B 1 none"]);
    assert_eq!(archived(&project).1, ["B"]);
}
