//! Concurrent edits of the queue while a run works on it, by every route
//! people use, and racing `ralph task` writers: no edit is lost and no task
//! is duplicated.

use std::process::Stdio;

use crate::support::TestProject;

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
