//! `ralph report`: one self-contained HTML page of what a run did.

use clap::Args;

use super::{Context, Outcome};
use crate::error::Error;

/// Arguments of `ralph report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The run's id (`ralph status` and .ralph/result.json name it) [default: the last run]
    #[arg(long, value_name = "ID")]
    pub run: Option<String>,
    /// Where to write the page [default: .ralph/report.html]
    #[arg(long, value_name = "FILE")]
    pub out: Option<std::path::PathBuf>,
}

/// Writes the page and says where.
pub(super) fn run(args: &ReportArgs, context: &Context) -> Result<Outcome, Error> {
    let out = match &args.out {
        Some(path) => context.cwd.join(path),
        None => context.paths.report(),
    };
    match crate::report::write(&context.paths, args.run.as_deref(), &out)? {
        Some(run) => Ok(Outcome::print(format!(
            "wrote {} (run {run})\n",
            out.display()
        ))),
        None => Err(crate::task::Error::Refused {
            message: match &args.run {
                Some(run) => format!("no run {run} in .ralph/events.ndjson"),
                None => "no run yet: .ralph/events.ndjson has no events".to_owned(),
            },
            hint: Some("`ralph run` first; `ralph status` names the last run".to_owned()),
        }
        .into()),
    }
}
