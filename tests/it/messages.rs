//! What ralph says: each message names what happened and who did it, and
//! counts read as English.

use crate::support::{TestProject, finish, wait_until};

fn one_task() -> TestProject {
    TestProject::new()
        .task(r#"{"id":"A","title":"feature","status":"pending","leaf":true}"#)
        .git_init()
}

/// A person commits on the base from another worktree while the agent
/// works: that is neither the agent's doing nor a failure, and the task's
/// squash lands on top of it.
#[test]
fn a_persons_commit_on_the_base_is_not_blamed_on_the_agent() {
    let project = one_task().agent(
        r#"git worktree add -q "$REC/person" main
(cd "$REC/person" && echo fix > person.txt && git add person.txt && git commit -q -m "a person's fix")
git worktree remove --force "$REC/person"
work A.txt done
ralph task complete A > /dev/null
"#,
    );
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stderr.contains(
            "main moved during the iteration: 1 commit made outside this checkout, not by the agent (a person's fix); A's squash merges with them"
        ),
        "{run:#?}"
    );
    assert!(!run.stderr.contains("the agent committed"), "{run:#?}");
    assert_eq!(
        project.json(".ralph/result.json")["failures"],
        serde_json::json!({})
    );
    assert_eq!(
        project.git(&["log", "--format=%s", "main"]),
        "[A] feature\na person's fix\ninitial commit"
    );
}

/// A person breaks `tasks.jsonl` while the agent works; the agent's
/// `ralph task` then fails with exit 30. The iteration is the queue's
/// failure, naming the file and line, not "the agent failed"; and no
/// agent runs on the broken queue after it: a run that does not poll
/// ends at once with the queue's error (exit 30).
#[test]
fn a_queue_broken_during_the_iteration_is_named_not_the_agents_exit() {
    let project = one_task().agent(
        r#"printf '{"id":' >> tasks.jsonl
ralph task complete A > /dev/null 2>&1 || exit $?
"#,
    );
    let run = project.run(&[]);
    assert_eq!(run.code, 30, "{run:#?}");
    assert!(run.stderr.contains("#1 A [-] exit code 30"), "{run:#?}");
    assert!(
        run.stderr.contains(
            "A: invalid_queue: tasks.jsonl was left invalid during the iteration (by the agent or by hand): tasks.jsonl:2: "
        ),
        "{run:#?}"
    );
    assert!(
        run.stderr.ends_with("hint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n"),
        "{run:#?}"
    );
    assert_eq!(project.calls().len(), 1, "no agent on the broken queue");
    assert_eq!(
        project.json(".ralph/result.json")["failures"],
        serde_json::json!({"invalid_queue": 1})
    );
}

/// A line a person appends during a polling run that breaks the queue (a
/// dependency on a missing id): no agent iteration runs on it; the run
/// says the file, the line and the fix once, waits, and goes on when the
/// person fixes the file.
#[test]
fn a_polling_run_waits_for_a_broken_queue_to_be_fixed_and_runs_no_agent_on_it() {
    let project = one_task().agent(&crate::support::by_iteration(
        "RALPH_TASK_ITERATION",
        r#"1) echo '{"id":"B","title":"b","status":"pending","leaf":true,"deps":["Z"]}' >> tasks.jsonl ;;
*) work A.txt done; ralph task complete A > /dev/null ;;"#,
    ));
    let mut child = (project.run_command(&["--poll", "200ms"]))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let log = || project.read_or_empty("ralph.log");
    wait_until(&mut child, 60, "the queue's error said", || {
        log().contains("the queue does not load")
    });
    // A while later, still one agent call: none runs on the broken queue.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert_eq!(project.calls().len(), 1, "{}", log());
    assert_eq!(
        log().matches("the queue does not load").count(),
        1,
        "said once"
    );
    assert!(
        log().contains("the queue does not load: tasks.jsonl:2: "),
        "{}",
        log()
    );
    // The person drops the line: the run goes on, and the task is done.
    let fixed: String = (project.read("tasks.jsonl").lines())
        .filter(|line| !line.contains("\"B\""))
        .map(|line| format!("{line}\n"))
        .collect();
    std::fs::write(project.path().join("tasks.jsonl"), fixed).unwrap();
    wait_until(&mut child, 60, "A done", || {
        project.read_or_empty("tasks-done.jsonl").contains("\"A\"")
    });
    assert!(
        log().contains("the queue loads again: the run goes on"),
        "{}",
        log()
    );
    std::fs::write(project.path().join(".stop"), "").unwrap();
    let run = crate::support::wait_for(child, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.calls().len(), 2);
}

/// One task and one iteration are counted in the singular.
#[test]
fn counts_are_pluralised() {
    let project = one_task().agent("work A.txt done\nralph task complete A > /dev/null\n");
    let run = project.run(&["--once"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stderr
            .contains("1 task (1 pending, 0 active), max 1 iteration\n"),
        "{run:#?}"
    );
    let status = project.ralph(&["status"]);
    assert!(
        status.stdout.contains("queue: 0 tasks; 1 archived"),
        "{status:#?}"
    );
    project.ralph(&["task", "add", "two"]).success();
    let valid = project.ralph(&["task", "validate"]);
    assert_eq!(
        valid.stdout,
        "ok: 1 task: 1 pending, 0 active, 0 ready, 0 complete, 0 blocked; 1 archived\n"
    );
}

/// The base is configured and HEAD is on another branch: the start line
/// says where HEAD was and where it ends.
#[test]
fn a_run_from_another_branch_says_where_head_was() {
    let project = one_task().agent("work A.txt done\nralph task complete A > /dev/null\n");
    let settings = project
        .read("config/ralph.yaml")
        .replace("\nbase_branch: null", "\nbase_branch: main");
    assert!(settings.contains("\nbase_branch: main"), "{settings}");
    std::fs::write(project.path().join("config/ralph.yaml"), settings).expect("write");
    project.git(&["commit", "-q", "-am", "base is main"]);
    project.git(&["checkout", "-q", "-b", "feature"]);
    let mut command = project.run_command(&[]);
    command.env_remove("RALPH_BASE_BRANCH");
    let run = finish(command, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stderr.contains(
            " on main (HEAD was on feature: tasks branch from main and merge into it, and HEAD ends on main), agent "
        ),
        "{run:#?}"
    );
    assert_eq!(project.git(&["branch", "--show-current"]), "main");
}

/// The summary's time is the whole run, start-up included: here a `git`
/// whose first `status` (the start-up scan) takes a second.
#[test]
fn the_summary_time_includes_start_up() {
    let project = one_task().agent("work A.txt done\nralph task complete A > /dev/null\n");
    let real = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .expect("find git")
            .stdout,
    )
    .expect("utf-8");
    let bin = project.aux().join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    let slept = project.aux().join("slept");
    let wrapper = format!(
        "#!/bin/sh\ncase \" $* \" in *\" status --porcelain\"*) [ -e '{0}' ] || {{ touch '{0}'; sleep 1; }} ;; esac\nexec {1} \"$@\"\n",
        slept.display(),
        real.trim()
    );
    std::fs::write(bin.join("git"), wrapper).expect("write the wrapper");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("git"), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    let mut command = project.run_command(&[]);
    command.env("PATH", project.path_with_aux_bin());
    let run = finish(command, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(slept.exists(), "the slow scan ran");
    let time: f64 = run
        .stderr
        .split(" · time: ")
        .nth(1)
        .and_then(|rest| rest.split('s').next())
        .and_then(|seconds| seconds.parse().ok())
        .unwrap_or_else(|| panic!("no time in the summary: {run:#?}"));
    assert!(time >= 1.0, "the second of start-up is counted: {time}s");
}

/// Outside a project (no `tasks.jsonl`, no repository), `ralph run` and
/// `ralph stop` say so and write nothing; `ralph task add` may start a
/// queue there, and says what it made and where. With a queue but no
/// repository, `ralph run` says that before it takes the lock or writes
/// `result.json`.
#[test]
fn nothing_is_written_outside_a_project_unsaid() {
    let nowhere = TestProject::new();
    let files = |project: &TestProject| -> Vec<String> {
        let mut found: Vec<String> = (walk(project.path()).into_iter())
            .map(|path| {
                path.strip_prefix(project.path())
                    .unwrap()
                    .display()
                    .to_string()
            })
            .collect();
        found.sort();
        found
    };
    for args in [&["run", "--agent-cmd", "true"][..], &["stop"]] {
        let run = nowhere.ralph(args);
        assert_eq!(run.code, 30, "{args:?}: {run:?}");
        let said = format!(
            "error: {}: no ralph project here (no tasks.jsonl in it or above, and no git repository); nothing was written\nhint: run it in your project's git repository (`git init` and a first commit make one), after `ralph init` there; or pass --dir PROJECT\n",
            nowhere.path().display()
        );
        assert_eq!(run.stderr, said, "{args:?}");
        assert_eq!(files(&nowhere), Vec::<String>::new(), "{args:?}");
    }
    let add = nowhere.ralph(&["task", "add", "hello"]);
    assert_eq!((add.code, add.stdout.as_str()), (0, "A\n"), "{add:?}");
    assert_eq!(
        add.stderr,
        format!(
            "note: made tasks.jsonl and .ralph in {}, which was no project (no tasks.jsonl in it or above, no git repository); if you meant your project, remove them and run the command there\n",
            nowhere.path().display()
        )
    );
    // Once it holds a queue, it is a project: nothing more is said.
    let again = nowhere.ralph(&["task", "add", "again"]);
    assert_eq!((again.code, again.stderr.as_str()), (0, ""), "{again:?}");
    // A queue, but no repository: the run refuses before its lock.
    let queue = TestProject::new().task(r#"{"id":"A","title":"x","status":"pending","leaf":true}"#);
    let run = queue.ralph(&["run", "--agent-cmd", "true"]);
    assert_eq!(run.code, 30, "{run:?}");
    assert!(
        run.stderr.contains("not inside a git repository"),
        "{}",
        run.stderr
    );
    assert_eq!(files(&queue), ["tasks.jsonl"]);
}

/// Every file and folder below `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(walk(&path));
        }
        found.push(path);
    }
    found
}

/// After a run, `ralph task show` names both commits of an archived task
/// (the branch's tip and the squash commit on the base), and `ralph
/// status` numbers a claim as the iteration it opens, alone and pooled.
#[test]
fn show_names_both_commits_and_status_numbers_a_claim_with_its_iteration() {
    for workers in [None, Some("1")] {
        let project = TestProject::new()
            .task(r#"{"id":"A","title":"first","status":"pending","leaf":true}"#)
            .task(r#"{"id":"B","title":"second","status":"pending","leaf":true}"#)
            .git_init()
            .agent(r#"work "$RALPH_TASK_ID.txt" done; ralph task complete "$RALPH_TASK_ID" > /dev/null"#);
        let run = match workers {
            Some(n) => project.run(&["--workers", n]),
            None => project.run(&[]),
        };
        assert_eq!(run.code, 0, "{run:#?}");
        let tip = project.git(&["rev-parse", "refs/ralph/tasks/A"]);
        let squash = project.git(&["log", "--format=%H", "--grep=^Completes: A$", "main"]);
        assert_ne!(tip, squash);
        let shown = project.ralph(&["task", "show", "A"]).success();
        assert!(
            shown
                .stdout
                .contains(&format!("branch tip: {tip} (refs/ralph/tasks/A)\n"))
                && shown
                    .stdout
                    .contains(&format!("squash commit: {squash} on main ([A] first)\n"))
                && !shown.stdout.contains("\ncommit: "),
            "{workers:?}: {}",
            shown.stdout
        );
        let status = project.ralph(&["status"]).success();
        let number = |what: &str| -> String {
            let line = (status.stdout.lines())
                .find(|line| line.contains(what))
                .unwrap_or_else(|| panic!("{workers:?}: no {what} in {}", status.stdout));
            line.split_whitespace().nth(1).unwrap().to_owned()
        };
        assert_eq!(
            number(" B claim ok"),
            number(" B iteration "),
            "{workers:?}: {}",
            status.stdout
        );
        assert_eq!(
            number(" B claim ok"),
            "#2",
            "{workers:?}: {}",
            status.stdout
        );
    }
}
