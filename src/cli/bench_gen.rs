//! `ralph bench-gen` (hidden): write deterministic task files for
//! `scripts/bench.sh`.

use clap::Args;

use super::{Context, Outcome};
use crate::bench_data::{PendingAt, Spec, tasks_jsonl};
use crate::error::Error;
use crate::paths::{DONE_FILE, TASKS_FILE};

/// Arguments of `ralph bench-gen`.
#[derive(Debug, Args)]
pub struct BenchGenArgs {
    /// Lines of tasks.jsonl
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub tasks: usize,
    /// Seed of the generator
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u64,
    /// Where the pending leaves go: last, middle or all
    #[arg(long, value_name = "WHERE", default_value = "last")]
    pub pending_at: PendingAt,
}

/// Writes tasks.jsonl (and an empty tasks-done.jsonl) into the folder named
/// by `--dir`, or the current one, replacing what is there.
pub(super) fn run(args: &BenchGenArgs, context: &Context) -> Result<Outcome, Error> {
    let spec = Spec {
        tasks: args.tasks,
        seed: args.seed,
        pending_at: args.pending_at,
    };
    for (name, bytes) in [(TASKS_FILE, tasks_jsonl(&spec)), (DONE_FILE, String::new())] {
        let path = context.paths.join(name);
        std::fs::write(&path, bytes).map_err(crate::files::at::<Error>(path))?;
    }
    Ok(Outcome::default())
}
