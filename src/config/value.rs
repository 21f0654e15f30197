//! The values settings hold beyond YAML's own: durations (`500ms`, `10s`,
//! `20m`, `1h`), time limits and wall-clock budgets in minutes.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

/// Reads a duration written as `500ms`, `10s`, `20m` or `1h`.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let amount: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration; write it like 500ms, 10s, 20m or 1h"))?;
    let millis = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "" => return Err(format!("duration {text:?} needs a unit: ms, s, m or h")),
        _ => {
            return Err(format!(
                "{text:?} is not a duration; write it like 500ms, 10s, 20m or 1h"
            ));
        }
    };
    amount
        .checked_mul(millis)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("{text:?} is too long a duration; write at most a few hours"))
}

/// [`parse_duration`] for a time limit, where zero would stop everything
/// at once.
pub(crate) fn parse_time_limit(text: &str) -> Result<Duration, String> {
    match parse_duration(text)? {
        Duration::ZERO => Err(format!(
            "{:?} is no time at all: the agent would be stopped at once; write a limit like 20m",
            text.trim()
        )),
        limit => Ok(limit),
    }
}

/// Reads a wall-clock budget: a positive whole number of minutes.
pub(crate) fn parse_minutes(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(minutes) if minutes > 0 => Ok(minutes),
        _ => Err(not_minutes(&format!("{:?}", text.trim()))),
    }
}

/// Why a budget in minutes was refused; `shown` is the value as written.
pub(super) fn not_minutes(shown: &str) -> String {
    format!(
        "{shown} is not a positive whole number of minutes; write one like 30, or null for no limit"
    )
}

/// Shows a duration the way the settings file writes it.
pub(crate) struct ShowDuration(pub Duration);

impl fmt::Display for ShowDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.as_millis();
        match ms {
            ms if ms % 3_600_000 == 0 && ms > 0 => write!(f, "{}h", ms / 3_600_000),
            ms if ms % 60_000 == 0 && ms > 0 => write!(f, "{}m", ms / 60_000),
            ms if ms % 1_000 == 0 => write!(f, "{}s", ms / 1_000),
            ms => write!(f, "{ms}ms"),
        }
    }
}

pub(super) fn duration<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(deserializer)?;
    parse_duration(&text).map_err(serde::de::Error::custom)
}

pub(super) fn time_limit<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(deserializer)?;
    parse_time_limit(&text).map_err(serde::de::Error::custom)
}

/// A budget in minutes: a positive whole number, or null for none. Any
/// other value is refused (`30m` is a common slip); read by a visitor, so
/// the error names the key and the value's own line.
pub(super) fn minutes<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    deserializer.deserialize_any(Minutes)
}

/// Reads one budget in minutes.
struct Minutes;

impl Minutes {
    fn refuse<E: serde::de::Error>(&self, shown: &str) -> E {
        E::custom(not_minutes(shown))
    }
}

impl<'de> serde::de::Visitor<'de> for Minutes {
    type Value = Option<u64>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a positive whole number of minutes, or null")
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Option<u64>, E> {
        Ok(None)
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Option<u64>, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<u64>, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<Option<u64>, E> {
        match value {
            0 => Err(self.refuse("0")),
            minutes => Ok(Some(minutes)),
        }
    }

    fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<Option<u64>, E> {
        match u64::try_from(value) {
            Ok(minutes) => self.visit_u64(minutes),
            Err(_) => Err(self.refuse(&value.to_string())),
        }
    }

    fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<Option<u64>, E> {
        Err(self.refuse(&value.to_string()))
    }

    fn visit_bool<E: serde::de::Error>(self, value: bool) -> Result<Option<u64>, E> {
        Err(self.refuse(&value.to_string()))
    }

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Option<u64>, E> {
        Err(self.refuse(&format!("{value:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Settings;

    #[test]
    fn durations_parse_and_show() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("20m").unwrap(), Duration::from_secs(1200));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(
            parse_duration("10").unwrap_err(),
            "duration \"10\" needs a unit: ms, s, m or h"
        );
        assert_eq!(
            parse_duration("soon").unwrap_err(),
            "\"soon\" is not a duration; write it like 500ms, 10s, 20m or 1h"
        );
        assert_eq!(ShowDuration(Duration::from_secs(1200)).to_string(), "20m");
        assert_eq!(
            ShowDuration(Duration::from_millis(1500)).to_string(),
            "1500ms"
        );
    }

    #[test]
    fn a_time_limit_of_nothing_and_durations_past_any_clock_are_refused() {
        assert_eq!(
            Settings::parse("agent:\n  timeout: 0s\n")
                .unwrap_err()
                .to_string(),
            "config/ralph.yaml:2: agent.timeout: \"0s\" is no time at all: the agent would be stopped at once; write a limit like 20m"
        );
        assert!(parse_time_limit("0ms").is_err());
        assert_eq!(parse_time_limit("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(
            parse_duration("99999999999999999h"),
            Err("\"99999999999999999h\" is too long a duration; write at most a few hours".into())
        );
        // Zero stays a fine pause or backoff.
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
    }
}
