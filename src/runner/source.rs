//! Where a pool's tasks come from: `run_pool` asks its source before each
//! hand-out and when nothing is left, and does what it says. The
//! project's queue alone is [`Local`]; a queue shared with other machines
//! through the remote is `shared.rs`'s. A new source is one more
//! implementation of [`Source`].

use super::seat::Hub;
use super::worker::Worker;
use crate::error::Error;
use crate::result::RunStatus;
use crate::task::Task;

/// What the pool does with a task it offered to claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Pick {
    /// Hand it to the worker.
    Go,
    /// Someone else holds it: the next task.
    Taken,
    /// The source cannot be reached: no claim until it can.
    Offline,
}

/// What the pool does when nothing is left to hand out and no worker is
/// busy.
#[derive(Debug)]
pub(super) enum Idle {
    /// Nothing more will come: the stretch ends.
    Done,
    /// Look at the queue again now.
    LookAgain,
    /// The run must end (a wait woke for `.stop` or a signal).
    Ended((RunStatus, String)),
}

/// A pool's supply of tasks. Each call is made by the pool's own worker
/// (the one in the project's checkout), between hand-outs. What a source
/// does not say is the project's queue alone: nothing to bring up to
/// date, every task claimable, nothing more to come once it is worked.
pub(super) trait Source {
    /// Brings the queue up to date when a look is due: at each of the
    /// pool's rounds, or (`claiming`) before the next hand-out.
    fn refresh(
        &mut self,
        _pool: &mut Worker<'_>,
        _hub: &Hub,
        _claiming: bool,
    ) -> Result<(), Error> {
        Ok(())
    }

    /// Whether task `id` may be handed out here.
    fn claimable(&self, _id: &str) -> bool {
        true
    }

    /// Claims `task` for worker `number` before it is handed out.
    fn claim(&mut self, _pool: &mut Worker<'_>, _task: &Task, _number: u32) -> Result<Pick, Error> {
        Ok(Pick::Go)
    }

    /// Nothing left to claim with no worker busy: whether new work may
    /// have come of this source's own (tasks added here, published).
    fn nothing_left(&mut self, _pool: &mut Worker<'_>, _hub: &Hub) -> Result<bool, Error> {
        Ok(false)
    }

    /// No worker busy and nothing to hand out, the run free to go on:
    /// whether to wait for work others hold, look again, or end.
    fn idle(&mut self, _pool: &mut Worker<'_>, _hub: &Hub) -> Result<Idle, Error> {
        Ok(Idle::Done)
    }

    /// A worker is busy: what `idle` said before is over.
    fn busy(&mut self) {}
}

/// The project's queue, worked by this machine alone.
pub(super) struct Local;

impl Source for Local {}
