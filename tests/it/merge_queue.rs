//! `ralph merge-queue`, git's merge driver for the queue files, run by
//! a real `git merge` of two branches that both changed the queue.

use crate::support::{RALPH, TestProject};

fn task(id: &str, status: &str) -> String {
    format!("{{\"id\":\"{id}\",\"title\":\"task {id}\",\"status\":\"{status}\",\"leaf\":true}}\n")
}

/// A repository on main with tasks A and B.
fn two_tasks() -> TestProject {
    TestProject::new()
        .task(task("A", "pending").trim_end())
        .task(task("B", "pending").trim_end())
        .git_init()
}

/// [`two_tasks`], with a branch `other` made from it.
fn project(driver: bool) -> TestProject {
    let p = two_tasks();
    if driver {
        let p = p.file(
            ".gitattributes",
            "tasks.jsonl merge=ralph-queue\ntasks-done.jsonl merge=ralph-queue\n",
        );
        p.git(&[
            "config",
            "merge.ralph-queue.driver",
            &format!("{RALPH} merge-queue %O %A %B %P"),
        ]);
        p.git(&["add", ".gitattributes"]);
        p.git(&["commit", "-q", "-m", "the queue's merge driver"]);
        p.git(&["branch", "other"]);
        return p;
    }
    p.git(&["branch", "other"]);
    p
}

/// On `other`: B blocked and C added. On main: A archived and D added.
fn diverge(p: &TestProject, other_adds: &str) {
    p.git(&["checkout", "-q", "other"]);
    std::fs::write(
        p.path().join("tasks.jsonl"),
        [
            task("A", "pending"),
            task("B", "blocked"),
            other_adds.to_owned(),
        ]
        .concat(),
    )
    .unwrap();
    p.git(&["commit", "-q", "-am", "block B, add C"]);
    p.git(&["checkout", "-q", "main"]);
    std::fs::write(
        p.path().join("tasks.jsonl"),
        [task("B", "pending"), task("D", "pending")].concat(),
    )
    .unwrap();
    std::fs::write(p.path().join("tasks-done.jsonl"), task("A", "complete")).unwrap();
    p.git(&["add", "-A"]);
    p.git(&["commit", "-q", "-m", "archive A, add D"]);
}

#[test]
fn git_merges_both_sides_queue_edits_with_the_driver() {
    // Without the driver, both ends of the file changed: a conflict.
    let plain = project(false);
    diverge(&plain, &task("C", "pending"));
    assert!(
        plain
            .try_git(&["merge", "-q", "--no-edit", "other"])
            .is_none()
    );
    // With it, each side's change is kept and nothing conflicts.
    let p = project(true);
    diverge(&p, &task("C", "pending"));
    p.git(&["merge", "-q", "--no-edit", "other"]);
    assert_eq!(
        p.read("tasks.jsonl"),
        [
            task("B", "blocked"),
            task("D", "pending"),
            task("C", "pending")
        ]
        .concat()
    );
    assert_eq!(p.read("tasks-done.jsonl"), task("A", "complete"));
    p.ralph(&["task", "validate"]).success();
}

#[test]
fn an_id_both_sides_added_differently_is_a_conflict_with_both_lines_kept() {
    let p = project(true);
    // Both took the next free id, D, for different tasks.
    diverge(&p, &task("D", "pending").replace("task D", "another D"));
    let merge = p
        .command("git")
        .args(["merge", "-q", "--no-edit", "other"])
        .output()
        .unwrap();
    assert!(!merge.status.success());
    let said = String::from_utf8_lossy(&merge.stderr);
    assert!(
        said.contains("ralph merge-queue: tasks.jsonl: both sides added D as different tasks; both lines are kept: renumber one (`ralph task validate` names them)"),
        "{said}"
    );
    let tasks = p.read("tasks.jsonl");
    assert!(
        tasks.contains("\"title\":\"task D\"") && tasks.contains("\"title\":\"another D\""),
        "{tasks}"
    );
}

#[test]
fn a_file_that_is_not_the_queue_is_refused() {
    let p = TestProject::new().git_init();
    for name in ["o", "a", "b"] {
        std::fs::write(p.path().join(name), "x\n").unwrap();
    }
    p.ralph(&["merge-queue", "o", "a", "b", "README.md"]).fails(
        30,
        "error: README.md is not a queue file\nhint: merge-queue merges tasks.jsonl and tasks-done.jsonl; set it as their merge driver only (docs/SCALE.md)\n",
    );
    assert_eq!(p.read("a"), "x\n", "nothing written");
}

#[test]
fn ralph_init_remote_sets_the_driver_up_once_and_git_merges_with_it() {
    let p = two_tasks();
    let first = p.ralph(&["init", "--remote"]).success();
    assert!(
        first.stdout.starts_with(&format!(
            "wrote .gitattributes: tasks.jsonl and tasks-done.jsonl merge=ralph-queue (commit it)\ngit config merge.ralph-queue.driver \"{RALPH} merge-queue %O %A %B %P\" (this clone)\n"
        )),
        "{first:#?}"
    );
    let again = p.ralph(&["init", "--remote"]).success();
    assert!(
        again
            .stdout
            .starts_with(".gitattributes already gives the queue files to ralph-queue\n"),
        "{again:#?}"
    );
    assert_eq!(
        p.read(".gitattributes"),
        "tasks.jsonl merge=ralph-queue\ntasks-done.jsonl merge=ralph-queue\n"
    );
    p.git(&["add", ".gitattributes"]);
    p.git(&["commit", "-q", "-m", "the queue's merge driver"]);
    p.git(&["branch", "other"]);
    diverge(&p, &task("C", "pending"));
    p.git(&["merge", "-q", "--no-edit", "other"]);
    assert_eq!(
        p.read("tasks.jsonl"),
        [
            task("B", "blocked"),
            task("D", "pending"),
            task("C", "pending")
        ]
        .concat()
    );
}

#[test]
fn ralph_init_remote_outside_a_repository_is_refused() {
    let p = TestProject::new();
    p.ralph(&["init", "--remote"]).fails(
        30,
        "error: --remote needs a git repository: the merge driver is git's\nhint: git init && git add -A && git commit -m start, then ralph init --remote\n",
    );
    assert_eq!(
        std::fs::read_dir(p.path()).unwrap().count(),
        0,
        "nothing written"
    );
}
