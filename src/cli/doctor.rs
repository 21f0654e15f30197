//! `ralph doctor`: what `ralph run` would do here, and what is missing.

use std::fmt::Write;
use std::sync::atomic::AtomicBool;

use clap::Args;

use super::{Context, Outcome, to_json};
use crate::config::{PRESETS, env_vars};
use crate::doctor::{self, Finding, Request};
use crate::error::Error;
use crate::exit::Exit;

const DOCTOR_HELP: &str = "\
One line per finding: `ok: CHECK: what was found`, or `warning: ...` /
`error: ...` followed by `; ` and the fix. CHECK is one of run, settings,
git, hooks, signing, queue, triggers, agent, next, checks, delivery, push.
Every check runs even when an earlier one fails. Nothing is written, and a
live run is left undisturbed. --json prints an array of
{check, level, message, fix}.
Exit codes: 0 nothing is an error (warnings allowed), 10 at least one error:
a person must fix something before `ralph run` can work.";

/// Arguments of `ralph doctor`.
#[derive(Debug, Args)]
#[command(after_help = DOCTOR_HELP)]
pub struct DoctorArgs {
    /// Run the verify.task and verify.run commands now and report pass or fail with their time
    #[arg(long)]
    pub run_checks: bool,
    /// Check this agent preset instead of the configured one [default: agent.preset, claude]
    #[arg(long, value_name = "PRESET", value_parser = clap::builder::PossibleValuesParser::new(PRESETS), conflicts_with = "agent_cmd")]
    pub agent: Option<String>,
    /// Check this custom agent command instead of the configured one
    #[arg(long, value_name = "CMD")]
    pub agent_cmd: Option<String>,
}

/// Runs `ralph doctor`.
pub(super) fn run(args: &DoctorArgs, context: &Context) -> Result<Outcome, Error> {
    let request = Request {
        run_checks: args.run_checks,
        agent: args.agent.clone(),
        agent_cmd: args.agent_cmd.clone(),
        env: env_vars()
            .filter_map(|name| Some((name.to_owned(), std::env::var(name).ok()?)))
            .collect(),
    };
    // Only a check command has anything for Ctrl-C to stop gracefully.
    let calm = AtomicBool::new(false);
    let interrupted = if args.run_checks {
        super::run::interrupt_flag()
    } else {
        &calm
    };
    let findings = doctor::examine(&context.paths, &request, interrupted);
    let stdout = if context.json {
        to_json(&findings)
    } else {
        lines(&findings)
    };
    let exit = doctor::has_error(&findings).then_some(Exit::NeedsPerson);
    Ok(Outcome::print(stdout).with_exit(exit))
}

/// The findings as text, one line each.
fn lines(findings: &[Finding]) -> String {
    let mut out = String::new();
    for finding in findings {
        let fix = finding
            .fix
            .as_deref()
            .map(|fix| format!("; {fix}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{}: {}: {}",
            finding.level.as_str(),
            finding.check,
            crate::text::safe(&format!("{}{fix}", finding.message))
        );
    }
    out
}
