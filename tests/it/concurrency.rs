//! Concurrent edits of the queue while a run works on it, by every route
//! people use, and racing `ralph task` writers: no edit is lost and no task
//! is duplicated.

use std::collections::BTreeMap;
use std::process::Stdio;

use crate::support::{TestProject, Tool, skip_without};

const AGENT: &str = r#"work "$RALPH_TASK_ID.txt" "$RALPH_TASK_TITLE"
ralph task complete "$RALPH_TASK_ID" > /dev/null
"#;

/// One edit by a route people use; each adds a task titled `title`.
fn edit(project: &TestProject, route: usize, n: usize) {
    let line = format!(r#"{{"id":"E{n}","title":"edit {n}","status":"pending","leaf":true}}"#);
    let script = match route {
        // `ralph task add` takes the queue lock and allocates the id.
        0 => format!("ralph task add 'edit {n}' > /dev/null"),
        // What `jq ... tasks.jsonl > tmp && mv tmp tasks.jsonl` does.
        1 => format!(
            "{{ cat tasks.jsonl; echo '{line}'; }} > tasks.jsonl.tmp{n} && mv tasks.jsonl.tmp{n} tasks.jsonl"
        ),
        // An editor rewriting the file in place.
        2 => format!(
            "content=$(cat tasks.jsonl); printf '%s\\n%s\\n' \"$content\" '{line}' > tasks.jsonl"
        ),
        // Appending with >>.
        _ => format!("echo '{line}' >> tasks.jsonl"),
    };
    let ralph_dir = std::path::Path::new(crate::support::RALPH)
        .parent()
        .unwrap();
    let path = format!(
        "{}:{}",
        ralph_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let status = project
        .command("sh")
        .args(["-c", &script])
        .env("PATH", path)
        .status()
        .unwrap();
    assert!(status.success(), "edit {n} by route {route}");
}

#[test]
fn two_hundred_edits_by_every_route_during_a_run_are_all_kept() {
    let _alone = crate::support::heavy();
    // Task A waits for the first edits, so they reach the live run however
    // slowly the machine starts the editing processes.
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"first","status":"pending","leaf":true}"#)
        .git_init()
        .agent(&format!(
            "[ \"$RALPH_TASK_ID\" = A ] && while [ ! -e \"$REC/../go\" ]; do sleep 0.01; done\n{AGENT}"
        ));
    let mut run = project
        .run_command(&["--quiet", "--max-iterations", "1000"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    for n in 0..200 {
        edit(&project, n % 4, n);
        if n == 20 {
            std::fs::write(project.aux().join("go"), "").unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(15));
    }
    // The run may have drained before the last edits: run again to finish.
    let first = crate::support::wait_for(run_child(&mut run), 120);
    assert_eq!(first.code, 0, "the run during the edits: {first:#?}");
    // The edits met a live run: it archived some of them.
    let archived_live = project
        .json_lines("tasks-done.jsonl")
        .iter()
        .filter(|record| record["title"].as_str().unwrap().starts_with("edit "))
        .count();
    assert!(archived_live > 0, "no edit reached the live run");
    let last = project.run(&["--max-iterations", "1000"]);
    assert_eq!(last.code, 0, "{last:#?}");
    let mut titles: BTreeMap<String, usize> = BTreeMap::new();
    for record in project.json_lines("tasks-done.jsonl") {
        *titles
            .entry(record["title"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    for n in 0..200 {
        assert_eq!(
            titles.get(&format!("edit {n}")),
            Some(&1),
            "edit {n} lost or duplicated: {titles:?}"
        );
    }
    assert_eq!(project.read("tasks.jsonl").trim(), "");
}

fn run_child(child: &mut std::process::Child) -> std::process::Child {
    // Hand the child over to `wait_for`, which owns it from here.
    std::mem::replace(child, std::process::Command::new("true").spawn().unwrap())
}

#[test]
fn two_writers_racing_with_a_hundred_adds_each_keep_all_two_hundred() {
    let project = TestProject::new();
    std::thread::scope(|scope| {
        for writer in 0..2 {
            let project = &project;
            scope.spawn(move || {
                for n in 0..100 {
                    project
                        .ralph(&["task", "add", &format!("writer {writer} task {n}")])
                        .success();
                }
            });
        }
    });
    let lines = project.json_lines("tasks.jsonl");
    let ids: std::collections::BTreeSet<&str> =
        lines.iter().map(|l| l["id"].as_str().unwrap()).collect();
    assert_eq!(lines.len(), 200);
    assert_eq!(ids.len(), 200, "ids are unique");
}

#[test]
fn a_second_run_is_refused_while_one_runs_and_works_once_it_is_killed() {
    if skip_without(Tool::Ps) {
        return;
    }
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"slow","status":"pending","leaf":true}"#)
        .git_init()
        .agent("sleep 30\n");
    let mut first = project
        .run_command(&[])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    crate::support::wait_for_file(&project.path().join(".ralph/agent.pgid"));
    let second = project.run(&[]);
    assert_eq!(second.code, 20, "{second:#?}");
    assert!(second.stderr.contains("holds .ralph/lock"), "{second:#?}");
    first.kill().unwrap();
    first.wait().unwrap();
    // The killed run's agent is still sleeping; the next run stops it and goes on.
    let project = project.agent("work A.txt a\nralph task complete A > /dev/null\n");
    let third = project.run(&[]);
    assert_eq!(third.code, 0, "{third:#?}");
    assert!(
        third
            .stderr
            .contains("stopped the agent a previous run left running"),
        "{third:#?}"
    );
}

/// A version of `tasks.jsonl` a swap had to move aside (the file replaced
/// twice while ralph replaced it) is named at the run's start and by the
/// doctor, until a person merges it and deletes it.
#[test]
fn a_version_moved_aside_is_named_until_it_is_dealt_with() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"first","status":"pending","leaf":true}"#)
        .git_init()
        .agent(AGENT)
        .file(
            "tasks.jsonl.displaced-4242",
            "{\"id\":\"B\",\"title\":\"theirs\",\"status\":\"pending\",\"leaf\":true}\n",
        );
    let said = "tasks.jsonl.displaced-4242 holds a version of tasks.jsonl that ralph moved aside: tasks.jsonl was replaced twice while ralph was replacing it; compare it with tasks.jsonl, copy back any task lines it alone has, then delete it";
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stderr.contains(&format!("\nwarning: {said}\n")),
        "{run:#?}"
    );
    let doctor = project.ralph(&["doctor"]);
    assert!(
        doctor
            .stdout
            .contains(&format!("\nwarning: queue: {said}\n")),
        "{doctor:#?}"
    );
    std::fs::remove_file(project.path().join("tasks.jsonl.displaced-4242")).unwrap();
    let doctor = project.ralph(&["doctor"]);
    assert!(!doctor.stdout.contains("displaced"), "{doctor:#?}");
}

#[test]
fn a_run_beside_a_git_status_loop_never_trips_on_its_index_lock() {
    run_beside_git_status(&[]);
    // Parallel workers check the base out after each merge.
    run_beside_git_status(&["--workers", "2"]);
}

/// Runs thirty tasks with `args` while `git status` runs in a loop: editors
/// and shell prompts run it all the time, and it takes `.git/index.lock`
/// to refresh the index.
fn run_beside_git_status(args: &[&str]) {
    let _alone = crate::support::heavy();
    let mut project = TestProject::new();
    for n in 0..30 {
        project = project.task(&format!(
            r#"{{"id":"T{n}","title":"task {n}","status":"pending","leaf":true}}"#
        ));
    }
    let project = project.git_init().agent(AGENT);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let run = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = project.command("git").arg("status").output();
            }
        });
        let run = project.run(&[&["--max-iterations", "100"], args].concat());
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        run
    });
    assert_eq!(run.code, 0, "{args:?}: {run:#?}");
    assert_eq!(project.json_lines("tasks-done.jsonl").len(), 30);
    assert_eq!(project.git(&["status", "--porcelain"]), "");
}
