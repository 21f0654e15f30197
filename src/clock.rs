//! The time records are stamped with (RFC 3339, UTC, whole seconds), and
//! the clock the wall-clock budgets measure with.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use chrono::{DateTime, Utc};

/// A testing hook: names a file whose RFC 3339 content is the budgets'
/// current time, read again at each call, so a scripted agent moves time
/// on by rewriting the file (atomically: write a temp file, then `mv`).
pub(crate) const TEST_CLOCK_VAR: &str = "RALPH_TEST_CLOCK";

/// Now, as ralph writes it in task records, state, events and results.
pub(crate) fn now() -> String {
    stamp(chrono::Utc::now())
}

/// `time` as ralph writes times: RFC 3339, UTC, whole seconds.
pub(crate) fn stamp(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The current UTC time the wall-clock budgets (`max_task_minutes`,
/// `max_run_minutes`) measure with: the system clock, or the time in the
/// file `RALPH_TEST_CLOCK` names when it is set.
///
/// # Panics
///
/// When `RALPH_TEST_CLOCK` names a file that cannot be read or does not
/// hold an RFC 3339 time: a test's clock must never fall back silently.
pub(crate) fn now_utc() -> DateTime<Utc> {
    static FILE: OnceLock<Option<PathBuf>> = OnceLock::new();
    let file = FILE.get_or_init(|| {
        std::env::var_os(TEST_CLOCK_VAR)
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
    });
    match file {
        None => Utc::now(),
        Some(path) => read_clock(path).unwrap_or_else(|message| panic!("{message}")),
    }
}

/// The time a test clock file holds.
pub(crate) fn read_clock(path: &Path) -> Result<DateTime<Utc>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| format!("{TEST_CLOCK_VAR}: {}: {err}", path.display()))?;
    DateTime::parse_from_rfc3339(text.trim())
        .map(|time| time.with_timezone(&Utc))
        .map_err(|err| {
            format!(
                "{TEST_CLOCK_VAR}: {}: {:?} is not an RFC 3339 time ({err}); write one like 2026-01-01T00:00:00Z",
                path.display(),
                text.trim()
            )
        })
}

/// Whole seconds from `from` to `to`, zero when `to` is earlier (a clock
/// set back must not make time negative).
pub(crate) fn seconds_between(from: DateTime<Utc>, to: DateTime<Utc>) -> u64 {
    u64::try_from((to - from).num_seconds()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clock_file_is_read_at_each_call_and_wrong_content_is_named() {
        let dir = assert_fs::TempDir::new().unwrap();
        let file = dir.path().join("clock");
        std::fs::write(&file, "2026-01-01T00:00:00Z\n").unwrap();
        let first = read_clock(&file).unwrap();
        std::fs::write(&file, "2026-01-01T00:11:00+00:00").unwrap();
        let later = read_clock(&file).unwrap();
        assert_eq!(seconds_between(first, later), 660);
        assert_eq!(seconds_between(later, first), 0, "never negative");
        assert_eq!(stamp(later), "2026-01-01T00:11:00Z");
        std::fs::write(&file, "soon").unwrap();
        assert_eq!(
            read_clock(&file).unwrap_err(),
            format!(
                "RALPH_TEST_CLOCK: {}: \"soon\" is not an RFC 3339 time (premature end of input); write one like 2026-01-01T00:00:00Z",
                file.display()
            )
        );
    }
}
