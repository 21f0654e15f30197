//! The critique file, `.ralph/critique/<task-id>.md`: every failed attempt
//! on a task is appended, and later prompts show the earlier ones.

use crate::support::{FINISH, TestProject, by_iteration, finish};

/// Fails twice with distinct output, then finishes the task without the
/// file verification wants, then with it.
const AGENT: &str = r#"1) echo 'first failure: the compiler exploded'; exit 1 ;;
2) echo 'second failure: the tests are red'; exit 2 ;;
3) work "$RALPH_TASK_ID.txt" x; ralph task complete "$RALPH_TASK_ID" > /dev/null ;;
*) work ok.txt x; ralph task complete "$RALPH_TASK_ID" > /dev/null ;;"#;

const VERIFY: &str = "verify:\n  task:\n    - \"test -f ok.txt || { echo 'third failure: ok.txt is missing'; exit 1; }\"\n";

fn project() -> TestProject {
    TestProject::new()
        .file(
            "config/ralph.yaml",
            format!("max_consecutive_failures: 5\n{VERIFY}"),
        )
        .task(r#"{"id":"A","title":"feature","status":"pending","leaf":true}"#)
        .git_init()
        .agent(&by_iteration("RALPH_TASK_ITERATION", AGENT))
}

/// The headings of the critique file's entries, without their times.
fn headings(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with("### Iteration "))
        .map(|l| {
            let parts: Vec<&str> = l.split(" · ").collect();
            assert_eq!(parts.len(), 4, "{l}");
            assert!(
                chrono::DateTime::parse_from_rfc3339(parts[1]).is_ok(),
                "a time: {l}"
            );
            format!("{} · {} · {}", parts[0], parts[2], parts[3])
        })
        .collect()
}

/// Where `needle` is in `text`, which must hold it exactly once.
fn once(text: &str, needle: &str) -> usize {
    assert_eq!(
        text.matches(needle).count(),
        1,
        "{needle:?} once in:\n{text}"
    );
    text.find(needle).unwrap()
}

#[test]
fn critique_accumulates_over_failures_and_later_prompts_show_it() {
    let project = project();
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        project.calls(),
        [
            "1 A 1 none",
            "2 A 2 debugger",
            "3 A 3 debugger",
            "4 A 4 debugger"
        ]
    );
    // Kept when the task is archived.
    let critique = project.read(".ralph/critique/A.md");
    assert_eq!(
        headings(&critique),
        [
            "### Iteration 1 · role none · exit",
            "### Iteration 2 · role debugger · exit",
            "### Iteration 3 · role debugger · verify_failed",
        ]
    );
    for output in [
        "first failure: the compiler exploded",
        "second failure: the tests are red",
        "third failure: ok.txt is missing",
    ] {
        once(&critique, &format!("```\n{output}\n```"));
    }

    // The second prompt: the one failure is the last one, not repeated.
    let second = project.read(".ralph/prompts/2-A.md");
    assert!(!second.contains("## Earlier failed attempts"), "{second}");
    once(&second, "first failure");
    // The fourth: the two earlier attempts, newest last, then the last
    // failure in its own section, each once.
    let fourth = project.read(".ralph/prompts/4-A.md");
    let earlier = once(&fourth, "## Earlier failed attempts (newest last)");
    let first = once(&fourth, "first failure: the compiler exploded");
    let second = once(&fourth, "second failure: the tests are red");
    let last = once(&fourth, "## The last iteration failed (verify_failed)");
    // Its output, not the command in the summary that prints it.
    let third = once(&fourth, "\nthird failure: ok.txt is missing");
    assert!(
        earlier < first && first < second && second < last && last < third,
        "{fourth}"
    );
    once(&fourth, "### Iteration 1 · ");
    once(&fourth, "### Iteration 2 · ");
    assert!(!fourth.contains("### Iteration 3 · "), "{fourth}");
    assert_eq!(project.json_lines("tasks-done.jsonl")[0]["id"], "A");
}

#[test]
fn with_workers_the_critique_is_the_projects() {
    let project = project();
    let run = finish(project.run_command(&["--workers", "2"]), 120);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.calls().len(), 4, "{:?}", project.calls());
    // In the project's .ralph/, not in the worktree, which went with the
    // merge.
    let critique = project.read(".ralph/critique/A.md");
    assert_eq!(headings(&critique).len(), 3, "{critique}");
    let fourth = project.read(".ralph/prompts/4-A.md");
    let first = once(&fourth, "first failure: the compiler exploded");
    let last = once(&fourth, "## The last iteration failed (verify_failed)");
    assert!(first < last, "{fourth}");
}

#[test]
fn ralph_prompt_shows_every_attempt_once_the_last_iteration_went_fine() {
    // Two failures, then an iteration that fails nothing but does not
    // finish: the evidence is cleared, every entry is an earlier attempt.
    let project = TestProject::new()
        .file("config/ralph.yaml", "max_consecutive_failures: 5\n")
        .task(r#"{"id":"A","title":"feature","status":"pending","leaf":true}"#)
        .git_init()
        .agent(&by_iteration(
            "RALPH_TASK_ITERATION",
            &format!(
                "1) echo 'attempt one broke'; exit 1 ;;\n2) echo 'attempt two broke'; exit 1 ;;\n3) work A.txt x ;;\n{FINISH}"
            ),
        ));
    let run = project.run(&["--max-iterations", "3"]);
    assert_eq!(run.code, 10, "{run:#?}");
    let prompt = project.ralph(&["prompt"]);
    assert_eq!(prompt.code, 0, "{prompt:#?}");
    let earlier = once(&prompt.stdout, "## Earlier failed attempts (newest last)");
    let one = once(&prompt.stdout, "attempt one broke");
    let two = once(&prompt.stdout, "attempt two broke");
    assert!(earlier < one && one < two, "{}", prompt.stdout);
    assert!(!prompt.stdout.contains("## The last iteration failed"));
}
