//! `ralph stop`: ask a running loop to stop between iterations.

use super::{Context, Outcome};
use crate::error::Error;
use crate::paths::STOP_FILE;
use crate::run_lock as lock;

/// Creates `.stop`; the loop removes it and exits after the current iteration.
pub(super) fn run(context: &Context) -> Result<Outcome, Error> {
    let path = context.paths.stop();
    crate::files::own::replace(context.paths.project(), &path, b"")
        .map_err(crate::files::at::<Error>(path))?;
    let live = lock::live_holder(&context.paths)
        .map_err(crate::files::at::<Error>(context.paths.run_lock()))?;
    let message = match live {
        Some(holder) if holder.pid != 0 => format!(
            "created {STOP_FILE}: the run (pid {}) stops after its current iteration\n",
            holder.pid
        ),
        Some(_) => format!("created {STOP_FILE}: the run stops after its current iteration\n"),
        None => format!(
            "created {STOP_FILE}: no run is live; the next `ralph run` will stop at once (delete {STOP_FILE} to prevent that)\n"
        ),
    };
    Ok(Outcome::print(message))
}
