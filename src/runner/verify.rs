//! Verification commands (`verify.task`, `verify.run`, a task's own
//! `verify`): the project's checks, run with `sh -c` in the task's
//! checkout, confined as its agent is.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::agent;
use crate::error::Error;
use crate::result::CommandResult;

/// Runs `command` in `dir` with a time limit, in `confinement` when
/// given; a signal stops it.
pub(crate) fn run(
    command: &str,
    dir: &Path,
    timeout: Duration,
    cancel: &AtomicBool,
    confinement: Option<&agent::Confinement>,
) -> Result<CommandResult, Error> {
    let started = std::time::Instant::now();
    let ran = agent::run_shell(command, dir, timeout, cancel, confinement)?;
    let status = if ran.timed_out {
        format!("timed out after {}", crate::config::ShowDuration(timeout))
    } else if ran.interrupted {
        "interrupted".to_owned()
    } else {
        ran.status.to_string()
    };
    Ok(CommandResult {
        command: command.to_owned(),
        passed: ran.status.success() && !ran.timed_out && !ran.interrupted,
        status,
        output_tail: ran.tail,
        duration_ms: started.elapsed().as_millis() as u64,
    })
}
