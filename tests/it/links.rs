//! ralph never writes through a link (docs/RELIABILITY.md, "Hostile
//! input"): an agent that swaps one of ralph's own files or folders for a
//! link to the home folder (`~/.profile`, `~/.bashrc.d/`), so that the
//! title or block reason ralph appends there runs at the next login, gets
//! the run stopped with the path, what was found and the fix, and nothing
//! written where the link points, in that run or the next; the link never
//! reaches the base.

use std::path::PathBuf;

use crate::support::{TestProject, by_iteration};

/// What the home folder's file holds before and after.
const PROFILE: &str = "export PATH=/usr/bin:/bin\n";

/// The hint of a file or folder other than a queue file.
const REMOVE_IT: &str = "ralph never reads or writes through a link, nor into what it did not make: remove it (ralph makes its own again), then run again";

/// A one-task project whose agent, in its first turn, replaces `what`
/// with a link to the home folder's file or folder `home` makes, then
/// works and completes its task (its `ralph task` output goes to
/// `$REC/task`, outside the project); any later turn just finishes.
/// Returns the project and where the link points.
fn attacked(what: &str, home: fn(&TestProject) -> PathBuf) -> (TestProject, PathBuf) {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"do the work","status":"pending","leaf":true}"#)
        .git_init();
    let target = home(&project);
    let attack = format!(
        "1) rm -rf '{what}' && ln -s '{target}' '{what}' || exit 9\n   work \"$RALPH_TASK_ID.txt\" done\n   ralph task complete \"$RALPH_TASK_ID\" >> \"$REC/task\" 2>&1 ;;\n{finish}",
        target = target.display(),
        finish = crate::support::FINISH,
    );
    let project = project.agent(&by_iteration("RALPH_TASK_ITERATION", &attack));
    (project, target)
}

/// The home folder's file the link points to, made with [`PROFILE`].
fn profile(project: &TestProject) -> PathBuf {
    let path = project.aux().join("home/.profile");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, PROFILE).unwrap();
    path
}

/// The home folder's folder the link points to, made empty.
fn bashrc_d(project: &TestProject) -> PathBuf {
    let path = project.aux().join("home/.bashrc.d");
    std::fs::create_dir_all(&path).unwrap();
    path
}

/// Runs the attack on `what` twice and checks both runs: stopped with
/// exit 30 and the error line `refusal` (then `hint`), the agent run once,
/// nothing reaching `target` (checked by `untouched`), no link committed
/// on `main`.
fn refused_twice(
    project: &TestProject,
    refusal: &str,
    hint: &str,
    untouched: impl Fn() -> bool,
) -> crate::support::Run {
    let error = format!("error: {refusal}\nhint: {hint}\n");
    let first = project.run(&[]);
    assert_eq!(first.code, 30, "{first:#?}");
    assert!(first.stderr.ends_with(&error), "{first:#?}");
    assert!(untouched(), "the first run wrote through the link");
    // The next run refuses before it takes the run lock or runs anything.
    project.run(&[]).fails(30, &error);
    assert!(untouched(), "the second run wrote through the link");
    assert_eq!(project.calls().len(), 1, "{:?}", project.calls());
    no_link_on_main(project);
    first
}

/// No commit of `main` holds a link.
fn no_link_on_main(project: &TestProject) {
    let history = project.git(&["log", "-p", "--format=%H %s", "main"]);
    assert!(!history.contains("120000"), "{history}");
    let tree = project.git(&["ls-tree", "-r", "main"]);
    assert!(
        tree.lines().all(|entry| !entry.starts_with("120000")),
        "{tree}"
    );
}

/// How the run ended, as `result.json` says.
fn result_reason(project: &TestProject) -> (String, String) {
    let result = project.json(".ralph/result.json");
    (
        result["status"].as_str().unwrap().to_owned(),
        result["reason"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn an_archive_swapped_for_a_link_to_the_profile_stops_the_run_and_writes_nothing_there() {
    let (project, target) = attacked("tasks-done.jsonl", profile);
    let refusal = format!(
        "tasks-done.jsonl: a link to {}, where ralph keeps a file of its own",
        target.display()
    );
    refused_twice(
        &project,
        &refusal,
        "ralph never reads or writes through a link, nor into what it did not make: put the file itself back in its place (ralph's last copy of it is .ralph/queue/tasks-done.jsonl.valid), then run again",
        || std::fs::read_to_string(&target).unwrap() == PROFILE,
    );
    // The agent's own `ralph task complete` was refused too.
    assert!(
        project.rec("task").contains(&format!("error: {refusal}")),
        "{}",
        project.rec("task")
    );
    assert_eq!(
        result_reason(&project),
        ("failed".to_owned(), refusal.clone())
    );
    let last = project.json_lines(".ralph/events.ndjson").pop().unwrap();
    assert_eq!(
        (last["phase"].as_str(), last["detail"].as_str()),
        (Some("run"), Some(refusal.as_str()))
    );
    // The link is left for a person to look at; the fix it names works.
    let link = project.path().join("tasks-done.jsonl");
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    std::fs::remove_file(&link).unwrap();
    std::fs::rename(
        project.path().join(".ralph/queue/tasks-done.jsonl.valid"),
        &link,
    )
    .unwrap();
    project.run(&[]).success();
    assert_eq!(project.json_lines("tasks-done.jsonl")[0]["id"], "A");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), PROFILE);
    no_link_on_main(&project);
}

#[test]
fn a_log_swapped_for_a_link_to_the_profile_stops_the_run_and_writes_nothing_there() {
    let (project, target) = attacked("ralph.log", profile);
    let refusal = format!(
        "ralph.log: a link to {}, where ralph keeps a file of its own",
        target.display()
    );
    refused_twice(&project, &refusal, REMOVE_IT, || {
        std::fs::read_to_string(&target).unwrap() == PROFILE
    });
    assert_eq!(
        result_reason(&project),
        ("failed".to_owned(), refusal.clone())
    );
    let last = project.json_lines(".ralph/events.ndjson").pop().unwrap();
    assert_eq!(last["detail"], refusal.as_str());
}

#[test]
fn an_event_stream_swapped_for_a_link_to_the_profile_stops_the_run_and_writes_nothing_there() {
    let (project, target) = attacked(".ralph/events.ndjson", profile);
    let refusal = format!(
        ".ralph/events.ndjson: a link to {}, where ralph keeps a file of its own",
        target.display()
    );
    refused_twice(&project, &refusal, REMOVE_IT, || {
        std::fs::read_to_string(&target).unwrap() == PROFILE
    });
    // The event could not be written: the result says it.
    assert_eq!(result_reason(&project), ("failed".to_owned(), refusal));
}

#[test]
fn a_log_folder_swapped_for_a_link_to_a_login_folder_stops_the_run_and_writes_nothing_there() {
    let (project, target) = attacked(".ralph/logs", bashrc_d);
    let refusal = format!(
        ".ralph/logs: a link to {}, where ralph keeps a folder of its own",
        target.display()
    );
    let empty = || std::fs::read_dir(&target).unwrap().count() == 0;
    let run = refused_twice(&project, &refusal, REMOVE_IT, empty);
    assert!(
        run.stderr.contains(&format!("ralph: failed — {refusal}")),
        "{run:#?}"
    );
    assert_eq!(result_reason(&project), ("failed".to_owned(), refusal));
}

/// A parallel worker's agent works in its task's worktree, whose queue
/// files are links ralph made to the project's: those stay and work, while
/// a link the agent makes where the worker keeps its state is refused.
#[test]
fn a_workers_state_folder_swapped_for_a_link_stops_the_run_and_writes_nothing_there() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"first","status":"pending","leaf":true}"#)
        .task(r#"{"id":"B","title":"second","status":"pending","leaf":true}"#)
        .git_init();
    let target = bashrc_d(&project);
    let attack = format!(
        "if [ \"$RALPH_TASK_ID\" = A ] && [ \"$RALPH_TASK_ITERATION\" = 1 ]; then rm -rf .ralph && ln -s '{}' .ralph || exit 9; fi\nwork \"$RALPH_TASK_ID.txt\" done\nralph task complete \"$RALPH_TASK_ID\" > /dev/null\n",
        target.display()
    );
    let project = project.agent(&attack);
    let worktree = ".ralph/worktrees/A/.ralph";
    let refusal = format!(
        "{worktree}: a link to {}, where ralph keeps a folder of its own",
        target.display()
    );
    let error = format!("error: {refusal}\nhint: {REMOVE_IT}\n");
    for _ in 0..2 {
        let run = crate::support::finish(project.run_command(&["--workers", "2"]), 120);
        assert_eq!(run.code, 30, "{run:#?}");
        assert!(run.stderr.ends_with(&error), "{run:#?}");
        assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
    }
    assert_eq!(
        project
            .calls()
            .iter()
            .filter(|call| call.contains(" A "))
            .count(),
        1,
        "{:?}",
        project.calls()
    );
    no_link_on_main(&project);
}
