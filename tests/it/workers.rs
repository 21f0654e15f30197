//! Parallel workers (`ralph run --workers N`): each task in its own git
//! worktree, merges one at a time into the base, nothing lost or doubled.

use crate::support::{TestProject, finish};

/// A task line: `id`, pending, a leaf, with `deps`.
fn task(id: &str, deps: &[&str]) -> String {
    let deps: Vec<String> = deps.iter().map(|d| format!("\"{d}\"")).collect();
    format!(
        r#"{{"id":"{id}","title":"task {id}","status":"pending","leaf":true,"deps":[{}]}}"#,
        deps.join(",")
    )
}

/// The agent: records its start and end per task (seconds with
/// nanoseconds), works a moment, commits a file of its own and marks the
/// task complete.
const AGENT: &str = r#"echo "start $RALPH_TASK_ID $RALPH_WORKER $(date +%s.%N) $(pwd)" >> "$REC/spans"
sleep 0.3
work "$RALPH_TASK_ID.txt" "$RALPH_TASK_ID"
ralph task complete "$RALPH_TASK_ID" > /dev/null
echo "end $RALPH_TASK_ID $RALPH_WORKER $(date +%s.%N)" >> "$REC/spans"
"#;

fn spans(project: &TestProject) -> Vec<(String, f64, f64)> {
    let text = project.rec("spans");
    let mut spans = Vec::new();
    for line in text.lines().filter(|l| l.starts_with("start ")) {
        let parts: Vec<&str> = line.split(' ').collect();
        let id = parts[1].to_owned();
        let start: f64 = parts[3].parse().unwrap();
        let end = text
            .lines()
            .filter(|l| l.starts_with(&format!("end {id} ")))
            .map(|l| l.split(' ').nth(3).unwrap().parse::<f64>().unwrap())
            .find(|end| *end >= start)
            .unwrap_or(f64::MAX);
        spans.push((id, start, end));
    }
    spans
}

#[test]
fn four_workers_merge_every_task_once_in_parallel_respecting_deps() {
    let mut project = TestProject::new();
    let ids = ["A", "B", "C", "D", "E", "F", "G", "H"];
    for id in ids {
        let deps: &[&str] = match id {
            "E" => &["A"],
            "H" => &["E", "F"],
            _ => &[],
        };
        project = project.task(&task(id, deps));
    }
    let project = project.git_init().agent(AGENT);
    let run = finish(
        {
            let mut command = project.run_command(&["--workers", "4"]);
            command.env("RALPH_MAX_ITERATIONS", "30");
            command
        },
        120,
    );
    assert_eq!(run.code, 0, "{run:#?}");
    // Every task merged exactly once, each its own commit on a linear base.
    let log = project.git(&["log", "--format=%s", "main"]);
    for id in ids {
        assert_eq!(
            log.lines()
                .filter(|l| *l == format!("[{id}] task {id}"))
                .count(),
            1,
            "{id}: {log}"
        );
    }
    assert_eq!(project.git(&["rev-list", "--merges", "main"]), "");
    let done: Vec<String> = project
        .json_lines("tasks-done.jsonl")
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(done.len(), ids.len(), "{done:?}");
    assert_eq!(project.read("tasks.jsonl"), "");
    // The project's tree is on the base and shows the merged work.
    assert_eq!(project.git(&["branch", "--show-current"]), "main");
    for id in ids {
        assert_eq!(project.read(&format!("{id}.txt")), format!("{id}\n"));
    }
    assert_eq!(project.git(&["status", "--porcelain"]), "");
    // No worktree or task branch left.
    assert_eq!(project.git(&["worktree", "list"]).lines().count(), 1);
    assert_eq!(project.git(&["branch", "--list", "task/*"]), "");
    // Worked side by side, each task by one worker at a time, in its worktree,
    // never before its deps were done.
    let spans = spans(&project);
    assert_eq!(spans.len(), ids.len(), "{spans:?}");
    let overlap = spans
        .iter()
        .any(|(a, s1, e1)| spans.iter().any(|(b, s2, e2)| a != b && s1 < e2 && s2 < e1));
    assert!(overlap, "some tasks ran at once: {spans:?}");
    let end_of = |id: &str| spans.iter().find(|(t, _, _)| t == id).unwrap().2;
    let start_of = |id: &str| spans.iter().find(|(t, _, _)| t == id).unwrap().1;
    assert!(start_of("E") > end_of("A"));
    assert!(start_of("H") > end_of("E") && start_of("H") > end_of("F"));
    for line in project
        .rec("spans")
        .lines()
        .filter(|l| l.starts_with("start "))
    {
        assert!(line.contains("/.ralph/worktrees/"), "{line}");
    }
}
