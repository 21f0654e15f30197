//! The time records are stamped with: RFC 3339, UTC, whole seconds.

/// Now, as ralph writes it in task records, state, events and results.
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// TEMPORARY: timing laps.
pub fn lap(name: &str) {
    use std::sync::Mutex;
    static LAST: Mutex<Option<std::time::Instant>> = Mutex::new(None);
    if std::env::var_os("RALPH_TIMING").is_none() {
        return;
    }
    let now = std::time::Instant::now();
    let mut last = LAST.lock().unwrap();
    if let Some(then) = *last {
        eprintln!("LAP {name} {:?}", now - then);
    }
    *last = Some(now);
}
