//! `ralph top`: the live view of the run in this project.

use std::io::IsTerminal;

use clap::Args;

use super::{Context, Outcome};
use crate::error::Error;

/// Arguments of `ralph top`.
#[derive(Debug, Args)]
pub struct TopArgs {
    /// Print one frame as text and exit (its size: COLUMNS and LINES, else 80x24)
    #[arg(long)]
    pub once: bool,
}

/// Runs the view; one frame with `--once`; `ralph status` when standard
/// output is not a terminal, and with `--json` (the run's view as data).
pub(super) fn run(args: &TopArgs, context: &Context) -> Result<Outcome, Error> {
    if context.json {
        return super::status::run(context);
    }
    if args.once {
        let size = |name: &str, default: u16| {
            (std::env::var(name).ok())
                .and_then(|value| value.trim().parse::<u16>().ok())
                .filter(|size| *size > 0)
                .unwrap_or(default)
        };
        let frame = crate::top::once(&context.paths, size("COLUMNS", 80), size("LINES", 24));
        return Ok(Outcome::print(frame));
    }
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return super::status::run(context);
    }
    crate::top::run(&context.paths).map_err(crate::files::at::<Error>("the terminal"))?;
    Ok(Outcome::print(String::new()))
}
