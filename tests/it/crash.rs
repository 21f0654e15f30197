//! Crash consistency: ralph aborted (as `kill -9` would) at every named
//! point of a task's life, then run again, loses nothing and never lies:
//! every task archived once, one squash commit per task, nothing stale.

use std::collections::BTreeMap;

use crate::support::{TestProject, Tool, skip_without};

/// Ten tasks, seven leaves, three levels.
const TASKS: [&str; 10] = [
    r#"{"id":"A","title":"auth","status":"pending","leaf":false}"#,
    r#"{"id":"A.1","title":"login form","status":"pending","leaf":true}"#,
    r#"{"id":"A.2","title":"sessions","status":"pending","leaf":false}"#,
    r#"{"id":"A.2.1","title":"session store","status":"pending","leaf":true}"#,
    r#"{"id":"A.2.2","title":"session expiry","status":"pending","leaf":true}"#,
    r#"{"id":"B","title":"readme","status":"pending","leaf":true}"#,
    r#"{"id":"C","title":"cli","status":"pending","leaf":false}"#,
    r#"{"id":"C.1","title":"flags","status":"pending","leaf":true}"#,
    r#"{"id":"C.2","title":"help text","status":"pending","leaf":true}"#,
    r#"{"id":"D","title":"release","status":"pending","leaf":true}"#,
];

/// The first task takes a moment, so `mid_agent` finds the agent running;
/// started with `SLOW_AGENT` set (only the run that crashes), it outlives
/// that run.
const AGENT: &str = r#"[ "$RALPH_TASK_ID" = A.1 ] && sleep 0.3
[ "$RALPH_TASK_ID" = A.1 ] && [ -n "${SLOW_AGENT:-}" ] && sleep 30
work "$RALPH_TASK_ID.txt" "$RALPH_TASK_TITLE"
ralph task complete "$RALPH_TASK_ID" > /dev/null
"#;

pub(crate) fn project() -> TestProject {
    project_with(AGENT)
}

fn project_with(agent: &str) -> TestProject {
    let mut project = TestProject::new();
    for task in TASKS {
        project = project.task(task);
    }
    project.git_init().agent(agent)
}

/// The checks every crash scenario ends with, after a final clean run.
pub(crate) fn assert_consistent(project: &TestProject) {
    let done: Vec<String> = project
        .json_lines("tasks-done.jsonl")
        .iter()
        .map(|record| record["id"].as_str().unwrap().to_owned())
        .collect();
    let mut sorted = done.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), done.len(), "a task archived twice: {done:?}");
    assert_eq!(
        sorted.len(),
        TASKS.len(),
        "not every task archived: {done:?}"
    );
    assert_eq!(
        project.read("tasks.jsonl").trim(),
        "",
        "tasks left in tasks.jsonl"
    );
    project.ralph(&["task", "validate"]).success();
    // One squash commit per task on the base: its `Completes:` trailer once.
    let log = project.git(&["log", "main", "--format=%B%x00"]);
    let mut completes: BTreeMap<String, usize> = BTreeMap::new();
    for line in log.lines() {
        if let Some(id) = line.trim().strip_prefix("Completes: ") {
            *completes.entry(id.to_owned()).or_default() += 1;
        }
    }
    for id in &done {
        assert_eq!(
            completes.get(id),
            Some(&1),
            "Completes: {id} on main: {completes:?}\n{log}"
        );
    }
    let fsck = project
        .command("git")
        .args(["fsck", "--no-progress"])
        .output()
        .unwrap();
    assert!(
        fsck.status.success(),
        "git fsck: {}",
        String::from_utf8_lossy(&fsck.stderr)
    );
    assert_eq!(
        project.git(&["branch", "--list", "task/*"]),
        "",
        "a task branch is left"
    );
    assert_eq!(project.git(&["symbolic-ref", "--short", "HEAD"]), "main");
    let status = project.ralph(&["status", "--json"]).success().json();
    assert_eq!(status["live"], false, "the run lock is stale");
    assert_eq!(project.json(".ralph/result.json")["status"], "drained");
    let leftovers: Vec<String> = std::fs::read_dir(project.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect();
    assert_eq!(
        leftovers,
        Vec::<String>::new(),
        "temp files left in the project"
    );
}

#[test]
fn a_crash_at_every_named_point_loses_nothing() {
    if skip_without(Tool::Ps) {
        return;
    }
    let _alone = crate::support::heavy();
    for point in ralph::fault::POINTS {
        let project = project();
        let mut command = project.run_command(&[]);
        command.env("RALPH_FAULT", point);
        if point == "mid_leftover_stop" {
            // First a crash that leaves an agent running for it to stop.
            let mut first = project.run_command(&[]);
            first.env("RALPH_FAULT", "mid_agent").env("SLOW_AGENT", "1");
            assert_eq!(first.output().unwrap().status.code(), None, "{point}");
        }
        if point == "mid_agent" || point == "after_spawn" {
            command.env("SLOW_AGENT", "1");
        }
        let crashed = command.output().unwrap();
        assert_eq!(
            crashed.status.code(),
            None,
            "{point}: ralph should have aborted: {crashed:?}"
        );
        let again = project.run(&[]);
        assert_eq!(
            again.code, 0,
            "{point}: the run after the crash: {again:#?}"
        );
        if ["after_spawn", "mid_agent", "mid_leftover_stop"].contains(&point) {
            assert!(
                again
                    .stderr
                    .contains("stopped the agent a previous run left running"),
                "{point}: {again:#?}"
            );
        }
        let put_back = match point {
            "mid_squash_files" => Some("the task branch task/A.1-login-form"),
            "mid_squash_commit" => Some("the base"),
            _ => None,
        };
        if let Some(whose) = put_back {
            let said = format!(
                "a squash into main was cut short when ralph stopped; its files were put back as {whose} has them\n"
            );
            assert!(again.stderr.contains(&said), "{point}: {again:#?}");
        }
        assert_consistent(&project);
        // Each leaf's work made it to main exactly once.
        let files = project.git(&["ls-tree", "--name-only", "main"]);
        for leaf in ["A.1", "A.2.1", "A.2.2", "B", "C.1", "C.2", "D"] {
            assert!(
                files.lines().any(|f| f == format!("{leaf}.txt")),
                "{point}: {leaf}.txt missing on main"
            );
        }
    }
}

#[test]
fn a_crash_after_archiving_a_task_completed_by_hand_still_lands_its_work() {
    // A is finished outside any iteration: its branch holds the work and
    // a person marks it complete.
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"do x","status":"pending","leaf":true}"#)
        .git_init()
        .agent("exit 0");
    project.git(&["checkout", "-q", "-b", "task/A-do-x"]);
    std::fs::write(project.path().join("x.txt"), "x\n").unwrap();
    project.git(&["add", "x.txt"]);
    project.git(&["commit", "-q", "-m", "x by hand"]);
    project.git(&["checkout", "-q", "main"]);
    project.ralph(&["task", "complete", "A"]).success();
    let crashed = project
        .run_command(&[])
        .env("RALPH_FAULT", "after_archive")
        .output()
        .unwrap();
    assert_eq!(crashed.status.code(), None, "ralph should have aborted");
    assert!(project.read("tasks-done.jsonl").contains(r#""id":"A""#));
    let again = project.run(&[]);
    assert_eq!(again.code, 0, "{again:#?}");
    assert!(
        again
            .stderr
            .contains("A: archived before ralph stopped; finishing its merge"),
        "{again:#?}"
    );
    let files = project.git(&["ls-tree", "--name-only", "main"]);
    assert!(
        files.lines().any(|f| f == "x.txt"),
        "x.txt missing on main: {files}"
    );
    let log = project.git(&["log", "main", "--format=%B"]);
    assert_eq!(log.matches("Completes: A").count(), 1, "{log}");
    assert_eq!(project.git(&["branch", "--list", "task/*"]), "");
}

/// A crash after the squash commit, before the task was archived (the
/// squash is committed first, so a hook may refuse it): the next run sees
/// the `Completes:` trailer on the base, says so, archives the task and
/// removes the branch (no second squash).
#[test]
fn a_crash_after_the_squash_commit_archives_without_a_second_squash() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"do x","status":"pending","leaf":true}"#)
        .git_init()
        .agent("work x.txt x\nralph task complete \"$RALPH_TASK_ID\" > /dev/null\n");
    let crashed = project
        .run_command(&[])
        .env("RALPH_FAULT", "after_squash_commit")
        .output()
        .unwrap();
    assert_eq!(crashed.status.code(), None, "ralph should have aborted");
    assert!(!project.read("tasks-done.jsonl").contains(r#""id":"A""#));
    let again = project.run(&[]);
    assert_eq!(again.code, 0, "{again:#?}");
    assert!(
        again
            .stderr
            .contains("A: its squash commit landed before ralph stopped; archiving it\n")
            && again
                .stderr
                .contains("A done: its squash had landed; archived"),
        "{again:#?}"
    );
    assert_eq!(project.calls().len(), 1, "the agent ran again");
    let log = project.git(&["log", "main", "--format=%B"]);
    assert_eq!(log.matches("Completes: A").count(), 1, "{log}");
    assert_eq!(project.git(&["branch", "--list", "task/*"]), "");
    // The archive record reached the base, naming the branch's tip.
    let done = project.git(&["show", "main:tasks-done.jsonl"]);
    let tip = project.git(&["rev-parse", "refs/ralph/tasks/A"]);
    assert!(done.contains(&format!(r#""commit":"{tip}""#)), "{done}");
    assert_eq!(project.git(&["status", "--porcelain"]), "");
}

/// A parallel run killed after archiving a leaf with its parent, before
/// the squash commit took the parent's trailer; the next run killed in its
/// recovery, after the task's worktree went and before the trailer was
/// committed (here: the worktree removed by hand). The run after that
/// still commits the parent's trailer, once, and removes the branch.
#[test]
fn a_kill_during_the_recovery_of_an_archived_task_still_commits_its_parents_trailer() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"auth","status":"pending","leaf":false}"#)
        .task(r#"{"id":"A.1","title":"login form","status":"pending","leaf":true}"#)
        .git_init()
        .agent(
            "work \"$RALPH_TASK_ID.txt\" x\nralph task complete \"$RALPH_TASK_ID\" > /dev/null\n",
        );
    let crashed = project
        .run_command(&["--workers", "2"])
        .env("RALPH_FAULT", "after_archive")
        .output()
        .unwrap();
    assert_eq!(crashed.status.code(), None, "ralph should have aborted");
    let log = project.git(&["log", "main", "--format=%B"]);
    assert!(!log.contains("Completes: A\n"), "{log}");
    project.git(&["worktree", "remove", "--force", ".ralph/worktrees/A.1"]);
    let again = project.run(&["--workers", "2"]);
    assert_eq!(again.code, 0, "{again:#?}");
    let log = project.git(&["log", "main", "--format=%B"]);
    assert_eq!(log.matches("Completes: A.1\n").count(), 1, "{log}");
    assert_eq!(log.matches("Completes: A\n").count(), 1, "{log}");
    assert_eq!(project.git(&["branch", "--list", "task/*"]), "");
    assert_eq!(project.git(&["status", "--porcelain"]), "");
}

/// A run killed while it removed a task's worktree, once the folder was
/// moved aside and before git forgot it: the next run removes the folder
/// and git's record, and lands the task.
#[test]
fn a_kill_while_a_worktree_is_removed_leaves_no_worktree_behind() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"do x","status":"pending","leaf":true}"#)
        .git_init()
        .agent(
            "work \"$RALPH_TASK_ID.txt\" x\nralph task complete \"$RALPH_TASK_ID\" > /dev/null\n",
        );
    let crashed = project
        .run_command(&["--workers", "2"])
        .env("RALPH_FAULT", "after_archive")
        .output()
        .unwrap();
    assert_eq!(crashed.status.code(), None, "ralph should have aborted");
    let worktrees = project.path().join(".ralph/worktrees");
    std::fs::rename(worktrees.join("A"), worktrees.join(".removed-A")).unwrap();
    let again = project.run(&["--workers", "2"]);
    assert_eq!(again.code, 0, "{again:#?}");
    assert_eq!(project.git(&["worktree", "list"]).lines().count(), 1);
    assert_eq!(std::fs::read_dir(&worktrees).unwrap().count(), 0);
    let log = project.git(&["log", "main", "--format=%B"]);
    assert_eq!(log.matches("Completes: A\n").count(), 1, "{log}");
    assert_eq!(project.git(&["branch", "--list", "task/*"]), "");
}

/// A squash on the checked-out base killed while its files were written,
/// before the index was: a file it added is untracked there. The next run
/// puts the base back as it was, that file removed, and goes on.
#[test]
fn a_squash_killed_before_its_index_was_written_leaves_no_file_behind() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"do x","status":"pending","leaf":true}"#)
        .git_init()
        .agent(
            "work \"$RALPH_TASK_ID.txt\" x\nralph task complete \"$RALPH_TASK_ID\" > /dev/null\n",
        );
    // The merged tree the squash was writing: the base's, plus x.txt.
    let blob = project.git(&["hash-object", "-w", "--stdin"]);
    let mut listing = project.git(&["ls-tree", "main"]);
    listing.push_str(&format!("\n100644 blob {blob}\tx.txt\n"));
    let mut mktree = project
        .command("git")
        .arg("mktree")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(mktree.stdin.as_mut().unwrap(), listing.as_bytes()).unwrap();
    let merged = String::from_utf8(mktree.wait_with_output().unwrap().stdout).unwrap();
    let base = project.git(&["rev-parse", "main"]);
    std::fs::write(
        project.path().join(".git/ralph-squash-in-progress"),
        format!("{base} {}\n", merged.trim()),
    )
    .unwrap();
    std::fs::write(project.path().join("x.txt"), "").unwrap();
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stderr.contains("a squash into main was cut short"),
        "{run:#?}"
    );
    assert!(!project.path().join("x.txt").exists(), "x.txt left behind");
    assert_eq!(project.git(&["status", "--porcelain"]), "");
}

fn finish_run(project: &TestProject, args: &[&str]) -> crate::support::Run {
    let mut command = project.run_command(args);
    command.env("RALPH_MAX_ITERATIONS_PER_TASK", "1000");
    crate::support::finish(command, 60)
}

/// A small seeded generator: the same kill moments on every run.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Starts `ralph run ARGS` and kills it (SIGKILL) at a moment drawn from
/// `seed`, up to `most` times, until a run ends on its own (the queue
/// drained, which must be a success). Returns the kills that landed.
fn kill_at_random_moments(project: &TestProject, args: &[&str], seed: u64, most: usize) -> usize {
    let mut random = XorShift(seed);
    let mut kills = 0;
    while kills < most {
        // Killed iterations count against a task: give them room.
        let mut child = project
            .run_command(args)
            .env("RALPH_MAX_ITERATIONS_PER_TASK", "1000")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let moment = std::time::Duration::from_millis(20 + random.next() % 430);
        std::thread::sleep(moment);
        if let Some(status) = child.try_wait().unwrap() {
            // It finished before the kill: the queue drained.
            let mut said = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut said).unwrap();
            assert!(
                status.success(),
                "a run ended on its own after {kills} kills: {status}: {said}"
            );
            break;
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        kills += 1;
    }
    kills
}

#[test]
fn fifty_kill_9s_at_random_moments_lose_nothing() {
    // `|`, not `||`: each program missing is named in the summary.
    if skip_without(Tool::Ps) | skip_without(Tool::Lsof) {
        return;
    }
    let _alone = crate::support::heavy();
    // Every task takes a moment, so kills land in every phase of its life.
    let project = project_with(&format!("sleep 0.2\n{AGENT}"));
    let kills = kill_at_random_moments(&project, &["--quiet"], 0x5eed_1234_abcd_0042, 50);
    let last = finish_run(&project, &[]);
    assert_eq!(last.code, 0, "after {kills} kills: {last:#?}");
    assert_consistent(&project);
    // The agents alone sleep 1.7 s in all and a run lives at most 450 ms,
    // so at least four kills land whatever the machine's speed.
    assert!(
        kills >= 4,
        "only {kills} kills landed before the queue drained"
    );
}

/// The same with four workers: `kill -9` of ralph at random moments of a
/// parallel run (agents mid-iteration in their worktrees, merges taking
/// turns), restarted until the queue drains: nothing lost or doubled, no
/// stray worktree or branch, `git fsck` clean.
#[test]
fn kill_9s_of_a_four_worker_run_lose_nothing() {
    let _alone = crate::support::heavy();
    let project = project_with(&format!("sleep 0.2\n{AGENT}"));
    let args = ["--quiet", "--workers", "4"];
    let kills = kill_at_random_moments(&project, &args, 0x5eed_4444_abcd_1111, 20);
    let last = finish_run(&project, &["--workers", "4"]);
    assert_eq!(last.code, 0, "after {kills} kills: {last:#?}");
    assert_consistent(&project);
    assert_eq!(
        project.git(&["worktree", "list"]).lines().count(),
        1,
        "a worktree is left"
    );
    assert!(
        kills >= 2,
        "only {kills} kills landed before the queue drained"
    );
}
