//! Debug tracing (`RALPH_LOG`, `-v`): structured lines on stderr about git,
//! locks, the agent and the loop's decisions; nothing without either, and
//! never the value of an environment variable.

use crate::support::{Run, TestProject, finish};

/// A secret in ralph's environment: its name may be traced, never its value.
const SECRET: (&str, &str) = ("MY_API_KEY", "supersecretvalue123");

/// Commits a file, marks the task complete, and notes what `RALPH_LOG` it got.
const COMPLETE: &str = r#"echo "${RALPH_LOG-unset}" > "$REC/ralph_log"
work "$RALPH_TASK_ID.txt" "$RALPH_TASK_TITLE"
ralph task complete "$RALPH_TASK_ID"
"#;

fn one_task() -> TestProject {
    TestProject::new()
        .task(r#"{"id":"A","title":"trace me","status":"pending","leaf":true}"#)
        .git_init()
}

/// `ralph [flags] run` with the fake agent, the secret and `env` set.
fn run(project: &TestProject, flags: &[&str], env: &[(&str, &str)]) -> Run {
    let agent = project.aux().join("agent.sh");
    let mut args = flags.to_vec();
    args.extend(["run", "--agent-cmd", agent.to_str().expect("utf-8 path")]);
    let mut command = project.ralph_command(&args);
    command.env(SECRET.0, SECRET.1).envs(env.iter().copied());
    finish(command, 60)
}

/// The stderr lines holding every one of `parts`.
fn lines_with<'a>(run: &'a Run, parts: &[&str]) -> Vec<&'a str> {
    run.stderr
        .lines()
        .filter(|line| parts.iter().all(|part| line.contains(part)))
        .collect()
}

/// Asserts a line holding every one of `parts` is on stderr.
#[track_caller]
fn has_line(run: &Run, parts: &[&str]) {
    assert!(
        !lines_with(run, parts).is_empty(),
        "no stderr line holds all of {parts:?}:\n{}",
        run.stderr
    );
}

/// What a traced run of [`COMPLETE`] says, whichever way tracing was asked for.
#[track_caller]
fn assert_traced(project: &TestProject, run: &Run) {
    assert_eq!(run.code, 0, "{run:#?}");
    // Each git command with its time, and the operations around them.
    has_line(
        run,
        &[
            " DEBUG ",
            "git command",
            "args=\"",
            "success=true",
            "duration_ms=",
        ],
    );
    has_line(
        run,
        &["git_op{op=\"claim\" subject=\"A\"}", "done duration_ms="],
    );
    has_line(run, &["git_op{op=\"squash\"", "done duration_ms="]);
    // Lock waits.
    has_line(run, &["took the run lock", "waited_ms="]);
    has_line(run, &["tasks.lock", "waited_ms="]);
    // The agent, inside its iteration.
    let agent = project.aux().join("agent.sh");
    has_line(
        run,
        &[
            "iteration{n=1 task=\"A\"}",
            "agent command",
            &format!("argv=[\"{}\"]", agent.display()),
        ],
    );
    let names = lines_with(run, &["agent environment (names only)"]);
    assert_eq!(names.len(), 1, "{run:#?}");
    for name in ["\"MY_API_KEY\"", "\"PATH\"", "\"RALPH_TASK_ID\""] {
        assert!(names[0].contains(name), "{name} missing: {}", names[0]);
    }
    assert!(
        !run.stderr.contains(SECRET.1),
        "a secret's value was traced:\n{}",
        run.stderr
    );
    has_line(run, &["started in its own process group", "pid="]);
    has_line(run, &["agent ended", "status=exit code 0", "duration_ms="]);
    // Classification and the loop's decisions.
    has_line(run, &["classified: no failure rule matched"]);
    has_line(
        run,
        &["decided before an iteration", "step=Iterate(TaskId(\"A\"))"],
    );
    has_line(run, &["decided after an iteration", "verdict=Finish"]);
    // The agent got no RALPH_LOG: its own `ralph task` stayed quiet.
    assert_eq!(project.rec("ralph_log"), "unset\n");
    let agent_log = project.read(".ralph/logs/1-A.log");
    assert_eq!(agent_log, "A: active -> complete\n");
    // ralph.log stays the human log.
    let log = project.read("ralph.log");
    assert!(
        !log.contains("DEBUG") && !log.contains("duration_ms"),
        "{log}"
    );
    assert!(log.contains("A done: squash-merged into main"), "{log}");
}

#[test]
fn ralph_log_debug_traces_git_locks_the_agent_and_the_decisions() {
    let project = one_task().agent(COMPLETE);
    let run = run(&project, &[], &[("RALPH_LOG", "debug")]);
    assert_traced(&project, &run);
}

#[test]
fn dash_v_traces_the_same() {
    let project = one_task().agent(COMPLETE);
    let run = run(&project, &["-v"], &[]);
    assert_traced(&project, &run);
}

#[test]
fn without_ralph_log_or_dash_v_nothing_is_traced() {
    for env in [&[][..], &[("RALPH_LOG", "")][..]] {
        let project = one_task().agent(COMPLETE);
        let run = run(&project, &[], env);
        assert_eq!(run.code, 0, "{run:#?}");
        assert_eq!(project.read("tasks.jsonl"), "", "the task was merged");
        for word in ["DEBUG", "TRACE", "duration_ms", "git_op", "iteration{"] {
            assert!(!run.stderr.contains(word), "{word} with {env:?}: {run:#?}");
        }
    }
}

#[test]
fn an_invalid_ralph_log_is_a_warning_and_the_run_goes_on_untraced() {
    let project = one_task().agent(COMPLETE);
    let run = run(&project, &[], &[("RALPH_LOG", "ralph=loud")]);
    assert_eq!(run.code, 0, "{run:#?}");
    let first = run.stderr.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        "warning: RALPH_LOG=\"ralph=loud\" is not a valid filter (error parsing level filter: \
         expected one of \"off\", \"error\", \"warn\", \"info\", \"debug\", \"trace\", or a number 0-5); \
         tracing stays off"
    );
    assert_eq!(
        lines_with(&run, &["warning: RALPH_LOG"]).len(),
        1,
        "{run:#?}"
    );
    assert!(!run.stderr.contains("DEBUG"), "{run:#?}");
    assert_eq!(project.read("tasks.jsonl"), "", "the task was merged");
}

#[test]
fn a_matched_classification_rule_is_traced_with_secrets_masked() {
    let project = one_task();
    // Named `claude`, so claude's wordings apply.
    let claude = project.script(
        "claude",
        &format!("echo 'Permission denied for {}'\nexit 1\n", SECRET.1),
    );
    let mut command = project.ralph_command(&["run", "--agent-cmd", claude.to_str().unwrap()]);
    command
        .env(SECRET.0, SECRET.1)
        .env("RALPH_LOG", "ralph::agent=debug,ralph::runner=debug")
        .env("RALPH_MAX_CONSECUTIVE_FAILURES", "1");
    let run = finish(command, 60);
    assert_eq!(run.code, 10, "{run:#?}");
    has_line(
        &run,
        &[
            "classification rule matched",
            "rule=\"pattern\"",
            "pattern=\"cannot be used with root/sudo|permission denied|",
            "class=\"permission\"",
            "reason=\"claude: Permission denied for [redacted]\"",
        ],
    );
    has_line(
        &run,
        &[
            "decided after an iteration",
            "verdict=Failed { class: Permission",
        ],
    );
    assert!(!run.stderr.contains(SECRET.1), "{run:#?}");
    // The filter chose the modules: no git lines.
    assert!(!run.stderr.contains("git command"), "{run:#?}");
}

#[test]
fn tracing_goes_to_stderr_and_leaves_stdout_alone() {
    let project = TestProject::new().git_init();
    let run = project
        .command(crate::support::RALPH)
        .args(["task", "add", "traced", "-v"])
        .output()
        .expect("run ralph");
    let run = Run::from(run);
    assert_eq!((run.code, run.stdout.as_str()), (0, "A\n"), "{run:#?}");
    has_line(&run, &[" DEBUG ralph::files: took the lock", "waited_ms="]);
}

#[test]
fn a_wait_for_a_git_lock_is_traced_with_its_time() {
    // Someone's `git status` holds the index lock as ralph is about to
    // commit the agent's leftovers: 3 s, well inside ralph's 10 s wait, so
    // a slow machine still reaches the commit while it is held.
    let project = one_task().agent(
        "echo work > w.txt\nralph task complete A > /dev/null\ntouch .git/index.lock\n\
         setsid sh -c 'touch .git/held; sleep 3; rm -f .git/index.lock' > /dev/null 2>&1 &\n\
         until [ -f .git/held ]; do sleep 0.01; done\n",
    );
    let run = run(&project, &[], &[("RALPH_LOG", "ralph::git=debug")]);
    assert_eq!(run.code, 0, "{run:#?}");
    has_line(&run, &["waiting for a git lock", "index.lock\""]);
    has_line(&run, &["git lock released", "index.lock\"", "waited_ms="]);
    assert_eq!(project.git(&["show", "main:w.txt"]), "work");
}
