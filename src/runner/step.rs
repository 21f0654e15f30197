//! The loop's one step, the same for a worker alone in the project's
//! checkout and for one of a pool: look at the queue, let `decide` choose
//! (finish a complete task, block a spent one, iterate, or end), and do
//! it. The worker alone takes steps on the whole queue until the run
//! ends (`run_alone`); a pooled worker on the task it was handed, until
//! that task is done with (`pool.rs`).

use std::sync::atomic::Ordering;

use serde_json::Map;

use super::decide::{self, Before, Ending, Step};
use super::worker::{Worker, first_complete_where, interrupted};
use crate::error::Error;
use crate::result::RunStatus;
use crate::task::{Queue, Status};

/// Where a step leaves the worker.
pub(super) enum Stepped {
    /// Take another step.
    On,
    /// A pooled worker's task is done with (merged, blocked, gone), or
    /// the run hands out no more work: the worker is free.
    Done,
    /// The run ends so.
    End((RunStatus, String)),
}

impl Worker<'_> {
    /// The worker alone: steps over the whole queue until the run ends.
    /// How it ended.
    pub(super) fn run_alone(&mut self) -> Result<(RunStatus, String), Error> {
        self.recover_archived_task()?;
        // Worktrees a pool left: their tasks go on here.
        self.tidy_worktrees(false)?;
        loop {
            self.hold_lock()?;
            match self.step()? {
                Stepped::On => {}
                Stepped::End(end) => return Ok(end),
                Stepped::Done => unreachable!("the worker alone is done only when the run ends"),
            }
        }
    }

    /// One step of the loop (see the module doc).
    pub(super) fn step(&mut self) -> Result<Stepped, Error> {
        if let Some(reason) = self.push_failure.take() {
            return Ok(Stepped::End((RunStatus::Failed, reason)));
        }
        let queue = match self.store.load() {
            Ok(queue) => queue,
            Err(err) => return self.step_on_a_broken_queue(err),
        };
        if self.seat.task().is_none()
            && (self.finish_archived_lines(&queue)? || self.finish_emptied_container(&queue)?)
        {
            return Ok(Stepped::On);
        }
        let (complete, next) = match self.seat.task() {
            None => (
                first_complete_where(&queue, |id| self.unit.scope.holds(id))
                    .map(|task| self.candidate(&queue, task)),
                (queue.next_except(|id| !self.unit.scope.holds(id)))
                    .map(|task| self.candidate(&queue, task)),
            ),
            Some(id) => {
                // The handed task, while it is a leaf to work on.
                let Some(task) = queue
                    .get(id.as_str())
                    .filter(|task| task.leaf && !queue.done.contains(id.as_str()))
                else {
                    return Ok(Stepped::Done);
                };
                let candidate = self.candidate(&queue, task);
                (
                    (task.status == Status::Complete).then(|| candidate.clone()),
                    (task.status != Status::Blocked).then_some(candidate),
                )
            }
        };
        let seen = Before {
            interrupted: self.interrupted.load(Ordering::SeqCst),
            stop_requested: self.seat.stop_requested(&self.paths),
            iterations: self.seat.run_iterations(&self.state),
            run_seconds: self.run_seconds(),
            run_spent: self.run_spent(),
            complete,
            next,
            ready_is_reviewed: self.triggers.read_variable("task_marked_ready_to_complete"),
        };
        let step = decide::before(&seen, &self.budgets);
        if let Step::End(ending) = step {
            return self.end_step(ending, &queue);
        }
        // Every step reloads what it needs: holding this copy while the
        // step loads its own would keep the queue in memory twice over.
        let task = match &step {
            Step::Iterate(id) | Step::Finish(id) => queue.get(id.as_str()).cloned(),
            _ => None,
        };
        drop(queue);
        let done = match &step {
            Step::End(_) => unreachable!("handled above"),
            Step::Finish(id) => self.finish_task(id, task.as_ref()).map(|()| None),
            Step::Block(id, reason) => self.block(id, reason).map(|()| None),
            Step::Iterate(id) => {
                if let Some(left) = self.seat.paused_for() {
                    let line = format!(
                        "{id}: waiting {} for the usage limit another worker hit",
                        super::worker::seconds(left)
                    );
                    return Ok(self
                        .wait_logged(crate::state::WaitReason::UsageLimit, id, &line, left)?
                        .map_or(Stepped::On, Stepped::End));
                }
                if !self.seat.reserve(&self.budgets) {
                    return Ok(Stepped::Done);
                }
                self.iterate(id, task.as_ref())
            }
        };
        match done {
            Ok(Some(end)) => Ok(Stepped::End(end)),
            Ok(None) => Ok(Stepped::On),
            // Someone rewrote tasks.jsonl without the task ralph was
            // changing (an editor saving an older copy): not the run's
            // failure. The loop looks at the queue again.
            Err(Error::Task(crate::task::Error::NotFound { id, .. })) => {
                self.ui.line(&format!(
                    "warning: task {id} disappeared from tasks.jsonl while ralph worked on it (a concurrent edit?); going on"
                ));
                self.record(
                    None,
                    "queue",
                    "changed",
                    &format!("task {id} disappeared"),
                    Map::new(),
                )?;
                if self.state.current_task.as_deref() == Some(id.as_str()) {
                    self.state.current_task = None;
                }
                if self.seat.task().is_none() {
                    self.repo.checkout_base()?;
                }
                self.save_state()?;
                Ok(Stepped::On)
            }
            Err(err) => Err(err),
        }
    }

    /// What `decide` ending the loop means for this worker: the worker
    /// alone ends the run (after a final review, when one is due); a
    /// pooled worker is free, the run's ending being its pool's to say,
    /// unless a signal arrived.
    fn end_step(&mut self, ending: Ending, queue: &Queue) -> Result<Stepped, Error> {
        if self.seat.task().is_some() {
            return Ok(match ending {
                Ending::Interrupted => Stepped::End(interrupted()),
                _ => Stepped::Done,
            });
        }
        // A pull request per PRD has no final review over the run.
        if ending == Ending::Drained && self.unit.scope.is_all() && self.add_final_review()? {
            return Ok(Stepped::On);
        }
        Ok(Stepped::End(self.ending(ending, queue)?))
    }

    /// A queue that does not load is a person's to fix, not the agent's:
    /// no iteration runs on it. Said once, with the file, the line and the
    /// fix; a polling run then waits for the queue to load again and goes
    /// on, any other ends with the error (exit 30).
    fn step_on_a_broken_queue(&mut self, err: crate::task::Error) -> Result<Stepped, Error> {
        if self.options.poll.is_none() {
            return Err(err.into());
        }
        self.ui.log(&format!(
            "the queue does not load: {err}; no agent runs on it: fix that line by hand or undo the last edit (`ralph task validate` checks it), and the run goes on once it loads"
        ));
        loop {
            if let Some(end) = self.wait(QUEUE_LOOK)? {
                return Ok(Stepped::End(end));
            }
            if self.seat.stop_handed_out() {
                return Ok(Stepped::Done);
            }
            if self.store.load().is_ok() {
                self.ui.log("the queue loads again: the run goes on");
                return Ok(Stepped::On);
            }
        }
    }
}

/// How often a run waiting for a broken queue to be fixed looks at it.
const QUEUE_LOOK: std::time::Duration = std::time::Duration::from_millis(500);
