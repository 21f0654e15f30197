//! Bounded records (`retention_days`): a run deletes the transcripts and
//! prompts older than that and moves an old event log aside, and `ralph
//! status` reads only the end of a long log.

use crate::support::{FINISH, TestProject, by_iteration, finish};

#[test]
fn a_run_prunes_records_older_than_the_retention_and_keeps_the_rest() {
    let p = TestProject::new()
        .task(r#"{"id":"A","title":"a","status":"pending","leaf":true}"#)
        .git_init()
        .agent(&by_iteration("RALPH_ITERATION", FINISH));
    // Records of a run two months ago.
    let old_log = p.path().join(".ralph/logs/1-Z.log");
    let old_prompt = p.path().join(".ralph/prompts/1-Z.md");
    for file in [&old_log, &old_prompt] {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, "long ago").unwrap();
        let two_months = std::time::Duration::from_secs(60 * 86_400);
        std::fs::File::options()
            .write(true)
            .open(file)
            .unwrap()
            .set_modified(std::time::SystemTime::now() - two_months)
            .unwrap();
    }
    let old_event = r#"{"timestamp":"2026-01-01T00:00:00Z","run_id":"old","task_id":null,"iteration":0,"role":null,"phase":"run","status":"started","detail":"long ago"}"#;
    std::fs::write(
        p.path().join(".ralph/events.ndjson"),
        format!("{old_event}\n"),
    )
    .unwrap();
    let run = p.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(!old_log.exists() && !old_prompt.exists());
    // This run's own records stay; the old events are kept aside.
    assert!(p.path().join(".ralph/logs/1-A.log").exists());
    assert_eq!(p.read(".ralph/events.old.ndjson"), format!("{old_event}\n"));
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
    let p = TestProject::new()
        .task(r#"{"id":"A","title":"a","status":"pending","leaf":true}"#)
        .git_init()
        .agent(&by_iteration("RALPH_ITERATION", FINISH));
    let old_event = r#"{"timestamp":"2026-01-01T00:00:00Z","run_id":"old","task_id":null,"iteration":0,"role":null,"phase":"run","status":"started","detail":"long ago"}"#;
    std::fs::create_dir_all(p.path().join(".ralph")).unwrap();
    std::fs::write(
        p.path().join(".ralph/events.ndjson"),
        format!("{old_event}\n"),
    )
    .unwrap();
    let mut command = p.run_command(&[]);
    command.env("RALPH_RETENTION_DAYS", "0");
    let run = finish(command, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(p.read(".ralph/events.ndjson").starts_with(old_event));
}

#[test]
fn status_reads_the_end_of_a_long_event_log() {
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
