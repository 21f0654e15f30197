//! `ralph execute`: the worker contract's run.

use std::path::PathBuf;

use clap::Args;

use super::{Context, Outcome, to_json};
use crate::contract::execute::{self, Request};
use crate::error::Error;

/// Arguments of `ralph execute`.
#[derive(Debug, Args)]
pub struct ExecuteArgs {
    /// The run's run-input.json (docs/contract/run-input.schema.json)
    #[arg(long, value_name = "FILE")]
    pub input: PathBuf,
    /// The plan.json `ralph plan --input` wrote
    #[arg(long, value_name = "FILE")]
    pub plan: PathBuf,
    /// Where the queue, the run's state, progress.ndjson, result.json, critique.md and attempts/ live
    #[arg(long, value_name = "DIR")]
    pub out_dir: PathBuf,
}

/// Runs `ralph execute`.
pub(super) fn run(args: &ExecuteArgs, context: &Context) -> Result<Outcome, Error> {
    let request = Request {
        input: &args.input,
        plan: &args.plan,
        out_dir: &args.out_dir,
        now: &context.now,
        kill_grace: super::run::kill_grace(),
    };
    let finished = execute::execute(&request, super::run::interrupt_flag())?;
    let result = &finished.result;
    let mut outcome = Outcome::default();
    if context.json {
        outcome.stdout = to_json(result);
    } else {
        let summary = &result.summary;
        let reason = result
            .reason
            .map(|reason| format!(" ({reason})"))
            .unwrap_or_default();
        outcome.stdout = format!(
            "{}: {}{reason}: {} of {} stories done, {} failed, {} skipped; next: {}\n",
            args.out_dir
                .join(crate::contract::output::RESULT_FILE)
                .display(),
            result.status,
            summary.completed,
            result.stories.len(),
            summary.failed,
            summary.skipped,
            result.next_action,
        );
    }
    // Why it did not succeed, as ralph words its errors.
    outcome.stderr = match (&finished.error, &result.error) {
        (Some(err), _) => format!("error: {}\n", crate::contract::execute::report(err)),
        (None, Some(error)) => format!("{}\n", crate::text::safe(error)),
        (None, None) => String::new(),
    };
    outcome.exit = Some(finished.exit);
    Ok(outcome)
}
