//! Bounded records (`retention_days`): a run deletes the transcripts and
//! prompts older than that and moves an old event log aside, and `ralph
//! status` reads only the end of a long log.

use crate::support::{FINISH, TestProject, by_iteration, finish};

/// An event of a run long gone, as its log's first line.
const OLD_EVENT: &str = r#"{"timestamp":"2026-01-01T00:00:00Z","run_id":"old","task_id":null,"iteration":0,"role":null,"phase":"run","status":"started","detail":"long ago"}"#;

/// A project with one task to do and the records of a run two months
/// ago: a transcript, a prompt, and an event log; the first two's paths.
fn with_old_records() -> (TestProject, [std::path::PathBuf; 2]) {
    let p = TestProject::new()
        .task(r#"{"id":"A","title":"a","status":"pending","leaf":true}"#)
        .git_init()
        .agent(&by_iteration("RALPH_ITERATION", FINISH));
    let old = [
        p.path().join(".ralph/logs/1-Z.log"),
        p.path().join(".ralph/prompts/1-Z.md"),
    ];
    let two_months = std::time::Duration::from_secs(60 * 86_400);
    for file in &old {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, "long ago").unwrap();
        std::fs::File::options()
            .write(true)
            .open(file)
            .unwrap()
            .set_modified(std::time::SystemTime::now() - two_months)
            .unwrap();
    }
    std::fs::write(
        p.path().join(".ralph/events.ndjson"),
        format!("{OLD_EVENT}\n"),
    )
    .unwrap();
    (p, old)
}

#[test]
fn a_run_prunes_records_older_than_the_retention_and_keeps_the_rest() {
    let (p, old) = with_old_records();
    let run = p.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(old.iter().all(|file| !file.exists()));
    // This run's own records stay; the old events are kept aside.
    assert!(p.path().join(".ralph/logs/1-A.log").exists());
    assert_eq!(p.read(".ralph/events.old.ndjson"), format!("{OLD_EVENT}\n"));
    let events = p.read(".ralph/events.ndjson");
    assert!(
        !events.contains("long ago") && events.contains("\"run_id\""),
        "{events}"
    );
    assert!(
        p.read("ralph.log").contains("retention: removed 2 files of .ralph/logs and .ralph/prompts older than 30 days; moved the events before the last 30 days to .ralph/events.old.ndjson"),
        "{}",
        p.read("ralph.log")
    );
}

#[test]
fn retention_days_0_keeps_everything() {
    let (p, old) = with_old_records();
    let mut command = p.run_command(&[]);
    command.env("RALPH_RETENTION_DAYS", "0");
    let run = finish(command, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(old.iter().all(|file| file.exists()));
    assert!(p.read(".ralph/events.ndjson").starts_with(OLD_EVENT));
    assert!(!p.read("ralph.log").contains("retention:"));
}

/// Status reads only the end of the log (its cost is measured by
/// `ONLY=history scripts/bench.sh`): the newest events are still the
/// ones it shows, whole, where the cut falls mid-line.
#[test]
fn status_shows_the_newest_events_of_a_long_log() {
    let p = TestProject::new().git_init();
    // 20,000 events (about 4 MB), the last one the newest.
    let mut log = String::new();
    for n in 0..20_000 {
        log.push_str(&format!(
            r#"{{"timestamp":"2026-12-01T00:00:00Z","run_id":"r","task_id":null,"iteration":{n},"role":null,"phase":"run","status":"looked","detail":"look {n} {pad}"}}"#,
            pad = "x".repeat(100)
        ));
        log.push('\n');
    }
    std::fs::create_dir_all(p.path().join(".ralph")).unwrap();
    std::fs::write(p.path().join(".ralph/events.ndjson"), log).unwrap();
    let status = p.ralph(&["status"]);
    assert_eq!(status.code, 0, "{status:#?}");
    assert!(status.stdout.contains(": look 19999 "), "{}", status.stdout);
    assert!(!status.stdout.contains(": look 0 "), "{}", status.stdout);
}
