//! Commands of the project's own (`verify.task`, `verify.run`, a task's
//! `verify`, `notify.command`), run with `sh -c` under the same
//! supervision as an agent: own process group, time limit, the whole
//! group stopped afterwards; the checks in the agent's confinement.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::Error;
use super::capture::{Capture, Echo};
use super::classify::Status;
use super::process::Confinement;
use super::supervisor::{Limits, supervise};

/// How a shell command ended.
#[derive(Clone, Debug, PartialEq)]
pub struct ShellRun {
    /// How its process ended.
    pub status: Status,
    /// Whether it ran past its time limit.
    pub timed_out: bool,
    /// Whether a signal to ralph stopped it.
    pub interrupted: bool,
    /// The end of its output.
    pub tail: String,
}

/// Runs `line` with `sh -c` in `dir`, stopped after `timeout` or when
/// `cancel` is set; inside `confinement` when given, with its
/// environment (a check is as trusted as the agent whose work it judges).
pub fn run_shell(
    line: &str,
    dir: &Path,
    timeout: Duration,
    cancel: &AtomicBool,
    confinement: Option<&Confinement>,
) -> Result<ShellRun, Error> {
    let command = match confinement {
        Some(confinement) => {
            let mut command = confinement.command(Path::new("sh"));
            command
                .env_clear()
                .envs(confinement.environment(std::env::vars_os().collect(), None));
            command
        }
        None => Command::new("sh"),
    };
    run(command, line, dir, timeout, cancel, None)
}

/// [`run_shell`], with `input` on its stdin (else none) and `env` added
/// to its environment.
pub fn run_shell_with(
    line: &str,
    dir: &Path,
    timeout: Duration,
    cancel: &AtomicBool,
    input: Option<Vec<u8>>,
    env: &[(&str, &str)],
) -> Result<ShellRun, Error> {
    let mut command = Command::new("sh");
    command.envs(env.iter().copied());
    run(command, line, dir, timeout, cancel, input)
}

/// `command` (a shell) given `-c line`, run in `dir` and supervised.
fn run(
    mut command: Command,
    line: &str,
    dir: &Path,
    timeout: Duration,
    cancel: &AtomicBool,
    input: Option<Vec<u8>>,
) -> Result<ShellRun, Error> {
    command.arg("-c").arg(line).current_dir(dir);
    let mut capture = Capture::new(None, Echo::Off);
    let limits = Limits {
        timeout,
        grace: Duration::from_secs(2),
        log_bytes: 0,
    };
    let ended = supervise(
        command,
        input,
        &mut capture,
        &limits,
        Some(cancel),
        None,
        None,
    )
    .map_err(Error::spawn(format!("command `{line}`"), "sh"))?;
    let captured = capture.finish(None)?;
    tracing::debug!(
        command = line,
        status = %ended.status,
        duration_ms = crate::trace::ms(ended.duration),
        timed_out = ended.timed_out,
        "shell command ended"
    );
    Ok(ShellRun {
        status: ended.status,
        timed_out: ended.timed_out,
        interrupted: ended.interrupted,
        tail: captured.tail,
    })
}
