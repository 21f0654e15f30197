//! Debug tracing: structured lines on stderr saying what ralph does inside
//! an iteration (git operations and their time, lock waits, the agent's
//! argv and the names of its environment variables, classification and
//! loop decisions). Off unless `RALPH_LOG` or `-v` asks for it; `ralph.log`
//! stays the human log.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::time::Duration;

use tracing_subscriber::EnvFilter;

/// The variable holding the filter, in `EnvFilter` syntax (`debug`,
/// `ralph::git=trace`).
pub(crate) const LOG_VAR: &str = "RALPH_LOG";

/// The filter `-v` stands for.
const VERBOSE_FILTER: &str = "debug";

/// Starts tracing to stderr when asked: `verbose` (`-v`, which means
/// `RALPH_LOG=debug` and wins over the variable), else the filter in
/// `var`, the value of [`LOG_VAR`]. Returns a warning line for a filter
/// that does not parse; tracing then stays off.
pub(crate) fn init(verbose: bool, var: Option<OsString>) -> Option<String> {
    let filter = match filter(verbose, var) {
        Ok(Some(filter)) => filter,
        Ok(None) => return None,
        Err(warning) => return Some(warning),
    };
    // Fails only when a subscriber is set already (never, in the binary).
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
    None
}

/// The filter asked for, `None` when tracing stays off, or the warning
/// for a `RALPH_LOG` that does not parse.
fn filter(verbose: bool, var: Option<OsString>) -> Result<Option<EnvFilter>, String> {
    let spec = if verbose {
        VERBOSE_FILTER.to_owned()
    } else {
        match var {
            None => return Ok(None),
            Some(value) => value.into_string().map_err(|value| {
                format!(
                    "warning: {LOG_VAR}={} is not UTF-8; tracing stays off\n",
                    value.to_string_lossy()
                )
            })?,
        }
    };
    if spec.trim().is_empty() {
        return Ok(None);
    }
    EnvFilter::builder().parse(&spec).map(Some).map_err(|err| {
        format!("warning: {LOG_VAR}={spec:?} is not a valid filter ({err}); tracing stays off\n")
    })
}

/// `duration` in milliseconds, to the microsecond: the `duration_ms` field
/// of every timed line.
pub(crate) fn ms(duration: Duration) -> f64 {
    duration.as_micros() as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(verbose: bool, var: Option<&str>) -> Result<Option<String>, String> {
        filter(verbose, var.map(OsString::from)).map(|f| f.map(|f| f.to_string()))
    }

    #[test]
    fn tracing_is_off_unless_asked_for() {
        assert_eq!(spec(false, None), Ok(None));
        assert_eq!(spec(false, Some("")), Ok(None));
        assert_eq!(spec(false, Some("debug")), Ok(Some("debug".to_owned())));
        assert_eq!(
            spec(false, Some("ralph::git=trace")),
            Ok(Some("ralph::git=trace".to_owned()))
        );
    }

    #[test]
    fn verbose_means_debug_whatever_the_variable_says() {
        assert_eq!(spec(true, None), Ok(Some("debug".to_owned())));
        assert_eq!(spec(true, Some("ralph=loud")), Ok(Some("debug".to_owned())));
    }

    #[test]
    fn a_filter_that_does_not_parse_is_a_warning() {
        let warning = spec(false, Some("ralph=loud")).unwrap_err();
        assert!(
            warning.starts_with("warning: RALPH_LOG=\"ralph=loud\" is not a valid filter ("),
            "{warning}"
        );
        assert!(warning.ends_with("; tracing stays off\n"), "{warning}");
    }

    #[test]
    fn durations_are_milliseconds_to_the_microsecond() {
        assert_eq!(ms(Duration::from_micros(1_234_567)), 1234.567);
        assert_eq!(ms(Duration::from_nanos(999)), 0.0);
    }
}
