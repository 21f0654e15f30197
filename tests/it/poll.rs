//! `ralph run --poll`: a run that waits for work instead of ending.

use crate::support::{FINISH, TestProject, wait_for, wait_for_file};

/// Waits until `ralph status` prints a line starting with `prefix`; the
/// line.
fn status_line(p: &TestProject, prefix: &str) -> String {
    for _ in 0..600 {
        let status = p.ralph(&["status"]);
        if let Some(line) = status.stdout.lines().find(|line| line.starts_with(prefix)) {
            return line.to_owned();
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("ralph status never said {prefix:?}");
}

fn polling(p: &TestProject, every: &str) -> std::process::Child {
    p.run_command(&["--poll", every])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the run")
}

#[test]
fn an_idle_run_picks_up_a_task_added_later_and_stops_on_request() {
    let p = TestProject::new()
        .git_init()
        .agent(&crate::support::by_iteration(
            "RALPH_TASK_ITERATION",
            FINISH,
        ));
    let child = polling(&p, "1s");
    let idle = status_line(&p, "idle, polling every 1s, next look at ");
    assert!(idle.ends_with('Z'), "{idle}");
    assert!(p.calls().is_empty(), "no agent runs while idle");
    p.ralph(&["task", "add", "late work"]).success();
    wait_for_file(&p.path().join("A.txt"));
    // Idle again once it merged; and once more after more work.
    status_line(&p, "idle, polling every 1s");
    p.ralph(&["task", "add", "more work"]).success();
    wait_for_file(&p.path().join("B.txt"));
    status_line(&p, "idle, polling every 1s");
    p.ralph(&["stop"]).success();
    let run = wait_for(child, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stderr.contains("ralph: stopped"), "{run:#?}");
    // The run's iterations, over both busy stretches (each stretch's
    // budget counts from 0).
    assert!(run.stderr.contains(" · iterations: 2 · "), "{run:#?}");
    assert_eq!(p.json(".ralph/result.json")["iterations"], 2);
    assert_eq!(p.git(&["show", "main:A.txt"]), "done");
    let log = p.read("ralph.log");
    assert!(
        log.contains("idle: the queue is drained; looking again every 1s"),
        "{log}"
    );
    assert!(log.contains("work found: the run goes on"), "{log}");
}

#[test]
fn a_blocked_task_waits_for_a_person_and_is_picked_up_when_set_going() {
    // The agent blocks A until a person leaves `$REC/go`.
    let p = TestProject::new().git_init().agent(&format!(
        "if [ ! -e \"$REC/go\" ]; then ralph task block A --reason 'needs a key' > /dev/null; exit 0; fi\ncase x in\n{FINISH}\nesac\n"
    ));
    p.ralph(&["task", "add", "needs a person"]).success();
    let child = polling(&p, "1s");
    status_line(&p, "idle, polling every 1s");
    assert!(p.read("tasks.jsonl").contains(r#""status":"blocked""#));
    std::fs::write(p.aux().join("rec/go"), "").unwrap();
    p.ralph(&["task", "start", "A"]).success();
    wait_for_file(&p.path().join("A.txt"));
    status_line(&p, "idle, polling every 1s");
    std::fs::write(p.path().join(".stop"), "").unwrap();
    let run = wait_for(child, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(p.git(&["show", "main:A.txt"]), "done");
}
