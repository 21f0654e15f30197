//! Agents that misbehave, and hostile task text: each is handled as the
//! loop describes, with nothing lost.

use crate::support::{FINISH, TestProject, Tool, finish, skip_without};

fn one_task(title_json: &str) -> TestProject {
    TestProject::new()
        .task(&format!(
            r#"{{"id":"A","title":{title_json},"status":"pending","leaf":true}}"#
        ))
        .git_init()
}

/// Behaves by `$RALPH_TASK_ITERATION` (see `support::by_iteration`).
fn by_iteration(steps: &str) -> String {
    crate::support::by_iteration("RALPH_TASK_ITERATION", steps)
}

#[test]
fn an_agent_that_does_nothing_is_a_no_progress_failure_then_blocked() {
    let project = one_task(r#""idle""#).agent("exit 0\n");
    let run = finish(
        {
            let mut command = project.run_command(&[]);
            command
                .env("RALPH_NO_PROGRESS_ITERATIONS", "2")
                .env("RALPH_MAX_CONSECUTIVE_FAILURES", "1");
            command
        },
        60,
    );
    assert_eq!(run.code, 10, "{run:#?}");
    let task = &project.json_lines("tasks.jsonl")[0];
    assert_eq!(task["status"], "blocked");
    assert_eq!(
        task["blocked_reason"],
        "failed 1 iteration in a row (last: no_progress: 2 iterations in a row made no commit and changed no file)"
    );
}

/// With the default settings (stuck after 3 iterations without progress,
/// blocked after 3 failures in a row), an agent that exits 0 and changes
/// nothing is blocked after 5 iterations, not after the 20 of
/// `max_iterations_per_task`: once stuck, every further idle iteration is
/// another failure.
#[test]
fn a_do_nothing_agent_is_blocked_after_five_iterations_with_the_defaults() {
    let project = one_task(r#""idle""#).agent("exit 0\n");
    let run = project.run(&[]);
    assert_eq!(run.code, 10, "{run:#?}");
    assert_eq!(project.calls().len(), 5, "{:?}", project.calls());
    let task = &project.json_lines("tasks.jsonl")[0];
    assert_eq!(task["status"], "blocked");
    assert_eq!(
        task["blocked_reason"],
        "failed 3 iterations in a row (last: no_progress: 5 iterations in a row made no commit and changed no file)"
    );
}

#[test]
fn an_agent_that_deletes_tasks_jsonl_gets_it_back_with_evidence() {
    let project = one_task(r#""keep the queue""#)
        .agent(&by_iteration(&format!("1) rm tasks.jsonl ;;\n{FINISH}")));
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.json_lines("tasks-done.jsonl")[0]["id"], "A");
    let prompt = project.read(".ralph/prompts/2-A.md");
    assert!(
        prompt.contains("tasks.jsonl was deleted (1 task gone: A); ralph put back the queue as it last knew it, with the changes made through `ralph task` during the iteration"),
        "{prompt}"
    );
    assert_eq!(
        project.json(".ralph/result.json")["failures"]["queue_reverted"],
        1
    );
}

#[test]
fn an_agent_that_deletes_its_branch_loses_only_that_iterations_commits() {
    let project = one_task(r#""survive""#).agent(&by_iteration(&format!(
        "1) work first.txt one ;;\n2) work second.txt two; git checkout -q main; git branch -D -q \"$RALPH_BRANCH\" ;;\n{FINISH}"
    )));
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    let files = project.git(&["ls-tree", "--name-only", "main"]);
    assert!(
        files.lines().any(|f| f == "first.txt"),
        "the first iteration's work survives: {files}"
    );
    assert!(
        !files.lines().any(|f| f == "second.txt"),
        "the deleting iteration's commit is gone: {files}"
    );
    let prompt = project.read(".ralph/prompts/3-A.md");
    assert!(
        prompt.contains("the agent deleted the task branch task/A-survive; ralph recreated it"),
        "{prompt}"
    );
}

#[test]
fn an_agent_that_removes_dot_ralph_does_not_open_the_door_to_a_second_run() {
    let project = one_task(r#""clean up""#).agent(&by_iteration(&format!(
        "1) rm -rf .ralph; work a.txt a ;;\n{FINISH}"
    )));
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stderr
            .contains("warning: .ralph/lock was deleted during the run; ralph took it again"),
        "{run:#?}"
    );
    assert_eq!(project.json(".ralph/result.json")["status"], "drained");
    assert_eq!(project.json_lines("tasks-done.jsonl").len(), 1);
}

/// A merge the agent leaves in progress is its next iteration's to finish
/// (tests/it/usergit.rs); one never finished blocks the task, and the run
/// stops before its bookkeeping commit, leaving the merge to a person.
#[test]
fn an_agent_that_leaves_a_merge_in_progress_stops_the_run_without_losing_it() {
    let project = one_task(r#""merge""#);
    project.git(&["checkout", "-q", "-b", "side"]);
    std::fs::write(project.path().join("side.txt"), "side\n").unwrap();
    project.git(&["add", "side.txt"]);
    project.git(&["commit", "-q", "-m", "side work"]);
    project.git(&["checkout", "-q", "main"]);
    let project = project.agent(
        "if [ \"$RALPH_TASK_ITERATION\" = 1 ]; then work mine.txt mine; git merge -q --no-ff --no-commit side; fi\n",
    );
    let run = project.run(&[]);
    assert_eq!(run.code, 30, "{run:#?}");
    assert!(
        run.stderr.contains("error: a merge is in progress"),
        "{run:#?}"
    );
    assert!(project.calls().len() > 1, "{:?}", project.calls());
    let prompt = project.read(".ralph/prompts/2-A.md");
    assert!(prompt.contains("merge_in_progress"), "{prompt}");
    assert!(
        project.path().join(".git/MERGE_HEAD").exists(),
        "the merge is left for a person"
    );
    assert_eq!(project.json(".ralph/result.json")["status"], "failed");
    assert!(
        project
            .git(&["log", "--format=%s", "task/A-merge"])
            .contains("A: mine.txt")
    );
}

#[test]
fn hostile_titles_never_reach_a_shell_a_ref_or_the_terminal_raw() {
    let title = "$(touch pwned) `touch pwned2` ; rm -rf / --flag \u{1b}[2J\nsecond line ../..@{x}";
    let project = one_task(&serde_json::Value::from(title).to_string())
        .agent(r#"work A.txt "$RALPH_TASK_TITLE"; ralph task complete A > /dev/null"#);
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(!project.path().join("pwned").exists() && !project.path().join("pwned2").exists());
    assert!(
        !run.stderr.contains('\u{1b}'),
        "raw escape on the terminal: {run:#?}"
    );
    assert!(!project.read("ralph.log").contains('\u{1b}'));
    let subject = project.git(&["log", "-1", "--format=%s", "main"]);
    assert_eq!(
        subject,
        r"[A] $(touch pwned) `touch pwned2` ; rm -rf / --flag \u{1b}[2J second line ../..@{x}"
    );
    // The agent got the title exactly, through the environment.
    assert_eq!(project.git(&["show", "main:A.txt"]), title);
    let refs = project.git(&["for-each-ref", "--format=%(refname)", "refs/ralph/tasks"]);
    assert_eq!(refs, "refs/ralph/tasks/A");
    // The resume point went with the merged branch.
    let refs = project.git(&["for-each-ref", "--format=%(refname)", "refs/ralph/resume"]);
    assert_eq!(refs, "");
}

/// A title at its bound (4 KiB; a longer one blocks the task, see
/// agent_text.rs) is cut in the commit's subject.
#[test]
fn a_four_kilobyte_title_is_bounded_in_the_branch_and_the_commit() {
    let title = "word ".repeat(819);
    let project = one_task(&serde_json::Value::from(title.trim()).to_string())
        .agent(r#"work A.txt x; ralph task complete A > /dev/null"#);
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    let subject = project.git(&["log", "-1", "--format=%s", "main"]);
    assert!(subject.len() < 300, "{} bytes", subject.len());
    assert!(subject.ends_with("..."));
}

#[test]
fn secrets_are_masked_in_the_log_the_events_the_terminal_and_the_agents_log() {
    let project = one_task(r#""leak""#);
    let claude = project.script(
        "claude",
        "echo 'Permission denied for hunter2-\"very\"-secret with sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAA'\nexit 1\n",
    );
    let mut command = project.ralph_command(&["run", "--agent-cmd", claude.to_str().unwrap()]);
    command
        // Quotes in a secret: escaped in JSON, it must still be masked.
        .env("MY_API_KEY", r#"hunter2-"very"-secret"#)
        .env("RALPH_MAX_CONSECUTIVE_FAILURES", "1");
    let run = finish(command, 60);
    assert_eq!(run.code, 10, "{run:#?}");
    let leaks = |text: &str| {
        text.contains("hunter2") || text.contains("-secret") || text.contains("sk-ant-api03")
    };
    let log = project.read("ralph.log");
    let events = project.read(".ralph/events.ndjson");
    assert!(log.contains("[redacted]") && !leaks(&log), "{log}");
    assert!(events.contains("[redacted]") && !leaks(&events), "{events}");
    assert!(!leaks(&run.stderr), "{run:#?}");
    assert!(
        !leaks(&project.read("tasks.jsonl")),
        "the block reason is masked too"
    );
    assert!(
        !leaks(&project.git(&["log", "--format=%B", "main"])),
        "and so is the commit message"
    );
    // The agent's log is masked as it is written: the masked log is the
    // only copy.
    let agents = project.read(".ralph/logs/1-A.log");
    assert!(agents.contains("[redacted]") && !leaks(&agents), "{agents}");
}

#[test]
fn a_corrupt_state_file_and_stale_git_locks_are_set_right_with_a_warning() {
    if skip_without(Tool::Lsof) {
        return;
    }
    // A ralph killed with -9 in the middle of a commit or a ref update
    // leaves git's lock files behind (the random-kill test found a
    // `refs/ralph/resume/<id>.lock`); no live git process holds them.
    let project = one_task(r#""recover""#)
        .agent("work A.txt a\nralph task complete A > /dev/null\n")
        .file(".ralph/state.json", "{ torn")
        .file(".git/index.lock", "")
        .file(".git/refs/ralph/resume/A.lock", "")
        .file(".git/refs/heads/main.lock", "");
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stderr.contains(&format!(
            "warning: .ralph/state.json did not parse; moved it to {} and started fresh\n",
            project.path().join(".ralph/state.json.corrupt").display()
        )),
        "{run:#?}"
    );
    for lock in [
        "index.lock",
        "refs/heads/main.lock",
        "refs/ralph/resume/A.lock",
    ] {
        assert!(
            run.stderr.contains(&format!(
                "removed a stale .git/{lock} (a git process died holding it)\n"
            )),
            "{run:#?}"
        );
    }
    assert_eq!(project.read(".ralph/state.json.corrupt"), "{ torn");
    assert_eq!(
        project.git(&["log", "-1", "--format=%s", "main"]),
        "[A] recover"
    );
}

/// A secret an agent writes into the queue through `ralph task` (a block
/// reason, a new task's title and body, split titles) is masked before it
/// is written, so it never reaches the base's history; a person's own
/// `ralph task` outside a run writes what it is given.
#[test]
fn secrets_an_agent_writes_through_ralph_task_are_masked() {
    const SECRET: &str = "hunter2-very-secret-value";
    let project = one_task(r#""talk to the API""#).agent(
        r#"ralph task add "rotate $MY_API_KEY" --body "the key $MY_API_KEY leaked" > /dev/null
ralph task block A --reason "the API refused key $MY_API_KEY" > /dev/null
"#,
    );
    let run = finish(
        {
            let mut command = project.run_command(&["--once"]);
            command.env("MY_API_KEY", SECRET);
            command
        },
        60,
    );
    assert_eq!(run.code, 0, "{run:#?}");
    let tasks = project.json_lines("tasks.jsonl");
    assert_eq!(tasks[0]["blocked_reason"], "the API refused key [redacted]");
    assert_eq!(tasks[1]["title"], "rotate [redacted]");
    assert_eq!(tasks[1]["body"], "the key [redacted] leaked");
    let history = project.git(&["log", "-p", "--all"]);
    assert!(!history.contains(SECRET), "{history}");
    assert!(
        history.contains("the API refused key [redacted]"),
        "{history}"
    );
    // Outside a run, the person's own words are kept.
    let mut command = project.ralph_command(&["task", "add", &format!("keep {SECRET}")]);
    command.env("MY_API_KEY", SECRET);
    assert_eq!(finish(command, 30).stdout, "C\n");
    assert_eq!(
        project.json_lines("tasks.jsonl")[2]["title"],
        format!("keep {SECRET}")
    );
}

/// `--once` runs one iteration: after a failed one no retry follows, so
/// there is no backoff to wait (an hour here).
#[test]
fn once_waits_no_backoff_after_a_failed_iteration() {
    let project = one_task(r#""fails""#).agent("exit 1\n");
    let mut command = project.run_command(&["--once"]);
    command.env("RALPH_RETRY_BACKOFF", "1h");
    let run = finish(command, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stderr
            .contains("A: exit: the agent failed with exit code 1\n"),
        "{run:#?}"
    );
    assert!(!run.stderr.contains("retrying in"), "{run:#?}");
}
