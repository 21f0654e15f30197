//! When a usage limit resets, read from what the tool printed.

use std::time::Duration;

use chrono::{DateTime, NaiveDateTime, TimeZone, Utc};
use regex::Regex;

/// When a usage limit resets, from the forms tools print: claude's
/// `usage limit reached|<epoch>`, an RFC 3339 time after "reset", or a
/// relative "try again in 2 hours 5 minutes" / "retry in 23.5s". Clock
/// times without a date or zone ("resets 3pm (Europe/Paris)") give `None`.
pub fn reset_time(evidence: &[String], now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let epoch = Regex::new(r"(?i)limit reached\|(\d{9,11})").expect("valid regex");
    let stamp = Regex::new(
        r"(?i)reset(?:s|ting)?(?: at| on)?:?\s+(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)",
    )
    .expect("valid regex");
    let relative = Regex::new(
        r"(?i)(?:try again|retry|resets?|reset) (?:in|after) ((?:\d+(?:\.\d+)?\s*(?:days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b[\s,]*(?:and\s+)?)+)",
    )
    .expect("valid regex");
    let delay = Regex::new(
        r#"(?i)"retryDelay"\s*:\s*"(\d+(?:\.\d+)?)s"|retry-after"?\s*[:=]\s*"?(\d+(?:\.\d+)?)\b"#,
    )
    .expect("valid regex");
    for line in evidence {
        if let Some(caps) = epoch.captures(line)
            && let Ok(seconds) = caps[1].parse::<i64>()
        {
            return Utc.timestamp_opt(seconds, 0).single();
        }
        if let Some(caps) = stamp.captures(line)
            && let Some(at) = parse_stamp(&caps[1])
        {
            return Some(at);
        }
        if let Some(caps) = relative.captures(line)
            && let Some(wait) = parse_relative(&caps[1])
        {
            return chrono::Duration::from_std(wait).ok().map(|wait| now + wait);
        }
        if let Some(caps) = delay.captures(line)
            && let Some(seconds) = caps.get(1).or(caps.get(2))
            && let Ok(seconds) = seconds.as_str().parse::<f64>()
        {
            return chrono::Duration::from_std(Duration::from_secs_f64(seconds))
                .ok()
                .map(|wait| now + wait);
        }
    }
    None
}

fn parse_stamp(text: &str) -> Option<DateTime<Utc>> {
    let text = text.replace(' ', "T");
    if let Ok(at) = DateTime::parse_from_rfc3339(&text) {
        return Some(at.with_timezone(&Utc));
    }
    for format in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M"] {
        if let Ok(naive) = NaiveDateTime::parse_from_str(&text, format) {
            return Some(naive.and_utc());
        }
    }
    None
}

fn parse_relative(text: &str) -> Option<Duration> {
    let part = Regex::new(r"(?i)(\d+(?:\.\d+)?)\s*([a-z]+)").expect("valid regex");
    let mut seconds = 0.0;
    for caps in part.captures_iter(text) {
        let amount: f64 = caps[1].parse().ok()?;
        let unit = match caps[2].to_ascii_lowercase().chars().next()? {
            'd' => 86_400.0,
            'h' => 3_600.0,
            'm' => 60.0,
            's' => 1.0,
            _ => continue,
        };
        seconds += amount * unit;
    }
    (seconds > 0.0).then(|| Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::super::classify::{Status, classify};
    use super::super::preset::Preset;
    use super::*;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap()
    }

    #[test]
    fn reset_times_are_read_when_stated() {
        let reset = |dialect, text: &str| {
            classify(Some(dialect), Status::Exited(1), text, now())
                .unwrap()
                .resets_at
        };
        assert_eq!(
            reset(
                Preset::Claude,
                r#"{"type":"result","is_error":true,"result":"Claude AI usage limit reached|1767323045"}"#
            ),
            Utc.timestamp_opt(1_767_323_045, 0).single()
        );
        assert_eq!(
            reset(
                Preset::Claude,
                "Usage limit reached, resets at 2026-01-02T08:00:00Z"
            ),
            Some(Utc.with_ymd_and_hms(2026, 1, 2, 8, 0, 0).unwrap())
        );
        assert_eq!(
            reset(
                Preset::Codex,
                r#"{"type":"turn.failed","error":{"message":"You've hit your usage limit. Try again in 2 hours 5 minutes."}}"#
            ),
            Some(now() + chrono::Duration::minutes(125))
        );
        assert_eq!(
            reset(Preset::Gemini, "Quota exceeded. Please retry in 23.5s."),
            Some(now() + chrono::Duration::milliseconds(23_500))
        );
        assert_eq!(
            reset(
                Preset::Gemini,
                r#"429 RESOURCE_EXHAUSTED {"retryDelay": "40s"}"#
            ),
            Some(now() + chrono::Duration::seconds(40))
        );
        assert_eq!(
            reset(
                Preset::Claude,
                "5-hour limit reached ∙ resets 3pm (Europe/Paris)"
            ),
            None
        );
    }
}
