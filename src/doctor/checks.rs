//! The project's checks: `verify.task` and `verify.run`.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use super::Findings;
use crate::config::Settings;
use crate::paths::Paths;
use crate::runner;
use crate::text::safe;

/// `verify.task` and `verify.run`: listed, or with `run` run now as the
/// loop runs them (in the project, `agent.timeout` each).
pub(super) fn checks(
    found: &mut Findings,
    paths: &Paths,
    settings: &Settings,
    run: bool,
    interrupted: &AtomicBool,
) {
    let lists = [
        (
            "verify.task",
            &settings.verify.task,
            "runs before each merge",
            "a task is merged only when every verify.task command passes",
        ),
        (
            "verify.run",
            &settings.verify.run,
            "runs once when the queue drains",
            "a failing verify.run ends the run with exit 10",
        ),
    ];
    // Run as a run runs them: confined as its agents are.
    let confinement = match run {
        true => match runner::confine::for_checks(settings, paths) {
            Ok(confinement) => confinement,
            Err(err) => return found.failed("checks", err),
        },
        false => None,
    };
    for (key, commands, when, stakes) in lists {
        if commands.is_empty() && key == "verify.task" {
            found.warning(
                "checks",
                "verify.task is empty: the agent's word alone decides when a task is done",
                "add a check (the project's tests or build) to verify.task in config/ralph.yaml, or run `ralph init --detect`",
            );
        } else if commands.is_empty() {
            found.ok(
                "checks",
                "verify.run is empty: nothing runs when the queue drains",
            );
        }
        for command in commands {
            let shown = safe(command);
            if !run {
                found.ok(
                    "checks",
                    &format!("{key} `{shown}` {when}; `ralph doctor --run-checks` runs it now"),
                );
                continue;
            }
            let started = Instant::now();
            match runner::verify::run(
                command,
                paths.root(),
                settings.agent.timeout,
                interrupted,
                confinement.as_ref(),
            ) {
                Ok(result) if result.passed => found.ok(
                    "checks",
                    &format!("{key} `{shown}` passed in {}", took(started.elapsed())),
                ),
                Ok(result) => {
                    let last = result
                        .output_tail
                        .lines()
                        .rev()
                        .map(str::trim)
                        .find(|line| !line.is_empty())
                        .map(|line| format!(": {line}"))
                        .unwrap_or_default();
                    found.error(
                        "checks",
                        &format!(
                            "{key} `{shown}` failed ({}) after {}{last}",
                            result.status,
                            took(started.elapsed())
                        ),
                        &format!("make it pass, or fix the command in config/ralph.yaml: {stakes}"),
                    );
                }
                Err(err) => found.failed("checks", err),
            }
        }
    }
    if let Some(confinement) = confinement {
        let _ = std::fs::remove_dir_all(&confinement.tmp);
    }
}

/// A duration for people: `0.4s`, `12.0s`, `3m05s`.
pub(super) fn took(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs < 60.0 {
        format!("{secs:.1}s")
    } else {
        let whole = duration.as_secs();
        format!("{}m{:02}s", whole / 60, whole % 60)
    }
}
