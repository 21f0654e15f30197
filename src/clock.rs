//! The time records are stamped with: RFC 3339, UTC, whole seconds.

/// Now, as ralph writes it in task records, state, events and results.
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
