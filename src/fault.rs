//! Fault injection for crash-consistency tests: `RALPH_FAULT=<point>` makes
//! ralph abort itself at that point, as `kill -9` would (no cleanup, no
//! destructors, no buffered output). Read once; unset, it costs a load.

use std::sync::OnceLock;

/// The named points of a task's life where ralph can be made to crash.
/// `after_spawn` is the agent started, its group not yet noted by ralph;
/// `mid_leftover_stop` is met only by a run that finds an agent a crashed
/// run left running.
pub const POINTS: [&str; 13] = [
    "after_claim",
    "after_branch",
    "after_spawn",
    "mid_agent",
    "mid_leftover_stop",
    "after_leftovers",
    "mid_queue_write",
    "mid_squash_files",
    "mid_squash_commit",
    "after_squash_commit",
    "after_archive",
    "mid_state_write",
    "mid_event_append",
];

/// Points of watching a branch for PRDs (`tests/it/watch.rs`): the
/// candidates found and saved, none planned yet; a PRD's tasks written to
/// the queue, its planning not yet noted in `.ralph/watch.json`.
pub const WATCH_POINTS: [&str; 2] = ["after_prd_found", "after_prd_planned"];

fn configured() -> Option<&'static str> {
    static POINT: OnceLock<Option<String>> = OnceLock::new();
    POINT
        .get_or_init(|| std::env::var("RALPH_FAULT").ok().filter(|p| !p.is_empty()))
        .as_deref()
}

/// Whether the fault at `point` is armed.
pub fn armed(point: &str) -> bool {
    configured() == Some(point)
}

/// Aborts the process when the fault at `point` is armed.
pub fn crash_at(point: &str) {
    if armed(point) {
        std::process::abort();
    }
}
