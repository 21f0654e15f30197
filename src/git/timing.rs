//! Debug tracing of git's work: each `git` command with its exit code and
//! time, and each operation that matters (claim, checkout, squash, commit)
//! as a span whose end says how long it took (see `crate::trace`).

use std::ffi::OsStr;
use std::time::Instant;

use tracing::span::EnteredSpan;

use crate::trace::ms;

/// The most arguments a command's line shows (a scan may name 2,000 paths).
const SHOWN_ARGS: usize = 16;

/// A git operation under way: its lines are inside the `git_op{op,
/// subject}` span, and when dropped it logs how long it took.
#[must_use = "the operation is timed until this is dropped"]
pub(super) struct Timed {
    started: Instant,
    _span: EnteredSpan,
}

/// Starts timing operation `op` on `subject` (a branch, a task id).
pub(super) fn timed(op: &'static str, subject: &str) -> Timed {
    Timed {
        started: Instant::now(),
        _span: tracing::debug_span!("git_op", op, subject).entered(),
    }
}

impl Drop for Timed {
    fn drop(&mut self) {
        tracing::debug!(duration_ms = ms(self.started.elapsed()), "done");
    }
}

/// Logs a `git` command that ran: its arguments, whether it succeeded,
/// its exit code when known, and how long it took since `started`.
pub(super) fn log_command<S: AsRef<OsStr>>(
    args: &[S],
    success: bool,
    code: Option<i32>,
    started: Instant,
) {
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    tracing::debug!(
        args = ?shown(args),
        success,
        code,
        duration_ms = ms(started.elapsed()),
        "git command"
    );
}

/// `args` joined by spaces, at most [`SHOWN_ARGS`] of them.
fn shown<S: AsRef<OsStr>>(args: &[S]) -> String {
    let mut line: Vec<String> = args
        .iter()
        .take(SHOWN_ARGS)
        .map(|arg| arg.as_ref().to_string_lossy().into_owned())
        .collect();
    if args.len() > SHOWN_ARGS {
        line.push(format!("... ({} more)", args.len() - SHOWN_ARGS));
    }
    line.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_command_line_is_cut() {
        assert_eq!(shown(&["status", "-z"]), "status -z");
        let paths: Vec<String> = (0..20).map(|n| format!("f{n}")).collect();
        let line = shown(&paths);
        assert!(line.starts_with("f0 f1 "), "{line}");
        assert!(line.ends_with(" f15 ... (4 more)"), "{line}");
    }
}
