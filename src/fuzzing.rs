//! Properties the fuzz targets (`fuzz/`) check, kept in the library so the
//! saved corpora also run as ordinary tests (`tests/it/fuzz_corpus.rs`).

use crate::roles::Triggers;
use crate::task::{Patch, Queue, Status, Task, TaskFile};

/// Parsing any bytes as `tasks.jsonl` never panics; a file that parses
/// renders back to the same bytes, validates or fails cleanly, and a status
/// change on its first task rewrites that line only.
pub fn task_file(data: &[u8]) {
    // The typed reading of a line agrees with the one that words errors.
    if let Ok(text) = std::str::from_utf8(data) {
        for line in text.lines() {
            assert_eq!(Task::from_json(line), Task::from_raw(line), "line {line:?}");
        }
    }
    let Ok(file) = TaskFile::parse("tasks.jsonl", data) else {
        return;
    };
    assert_eq!(
        file.render().as_bytes(),
        data,
        "an untouched file renders byte for byte"
    );
    let Ok(mut queue) = Queue::parse(data, b"") else {
        return;
    };
    let Some((index, task)) = queue.tasks.tasks().next().map(|(i, t)| (i, t.clone())) else {
        return;
    };
    if !task.leaf {
        return;
    }
    let patch = Patch::SetStatus {
        id: task.id.clone(),
        status: Status::Blocked,
    };
    if queue.apply(&patch, "2026-01-01T00:00:00Z").is_err() {
        return;
    }
    let before = String::from_utf8_lossy(data).into_owned();
    let after = queue.tasks.render();
    let old: Vec<&str> = before.split_inclusive('\n').collect();
    let new: Vec<&str> = after.split_inclusive('\n').collect();
    assert_eq!(old.len(), new.len(), "a status change keeps the line count");
    for (i, (o, n)) in old.iter().zip(&new).enumerate() {
        if i != index {
            assert_eq!(o, n, "line {} changed", i + 1);
        }
    }
    Queue::parse(after.as_bytes(), b"").expect("the changed file still parses");
}

/// Normalising and compiling any text as a trigger condition never panics,
/// and a condition that compiles evaluates without error.
pub fn trigger(data: &[u8]) {
    let Ok(condition) = std::str::from_utf8(data) else {
        return;
    };
    let yaml = format!(
        "triggers:\n  - condition: {}\n    role: r\n",
        serde_json::Value::from(condition)
    );
    if let Ok(triggers) = Triggers::parse(&yaml, |_| true) {
        triggers
            .choose(&crate::roles::TriggerContext::default())
            .expect("a checked condition evaluates");
    }
}
