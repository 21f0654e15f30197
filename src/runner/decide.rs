//! The loop's decisions as pure functions of what it observed: what to do
//! before an iteration, and what an iteration's outcome means.

use std::time::Duration;

use crate::agent::FailureClass;
use crate::retry::Backoff;
use crate::task::{Status, TaskId};
use crate::text::count;

/// How the loop should go on after a step: `None` carries on, `Some` ends
/// the run with this status and reason.
pub(crate) type Next = Option<(crate::result::RunStatus, String)>;

/// The budgets that bound the loop.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Budgets {
    /// Iterations per run.
    pub max_iterations: u64,
    /// Wall-clock minutes per run, if limited.
    pub max_run_minutes: Option<u64>,
    /// Iterations one task may take.
    pub max_iterations_per_task: u64,
    /// Wall-clock minutes one task's iterations may take, if limited.
    pub max_task_minutes: Option<u64>,
    /// Failed iterations in a row before the task is blocked.
    pub max_consecutive_failures: u64,
    /// Iterations without progress that count as a failure.
    pub no_progress_iterations: u64,
    /// First wait after a failure.
    pub retry_backoff: Duration,
    /// Longest wait for a usage limit with no stated reset.
    pub usage_limit_max_wait: Duration,
    /// Spending caps.
    pub caps: Caps,
}

/// Spending caps, from what the agent reports: a task's across runs, a
/// run's in one UTC day. `None` is no cap.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Caps {
    /// `max_task_cost_usd`.
    pub task_usd: Option<f64>,
    /// `max_run_cost_usd`.
    pub run_usd: Option<f64>,
    /// `max_task_tokens`.
    pub task_tokens: Option<u64>,
    /// `max_run_tokens`.
    pub run_tokens: Option<u64>,
}

impl Caps {
    /// The caps `settings` set.
    pub(crate) fn of(settings: &crate::config::Settings) -> Caps {
        Caps {
            task_usd: settings.max_task_cost_usd,
            run_usd: settings.max_run_cost_usd,
            task_tokens: settings.max_task_tokens,
            run_tokens: settings.max_run_tokens,
        }
    }

    /// Why a run that spent `spent` takes no more work, if a run cap is
    /// reached: the cap's name, its text and what was spent.
    pub(crate) fn run_reached(&self, spent: &Spent) -> Option<CapReached> {
        if let Some(cap) = self.run_usd.filter(|cap| spent.cost_usd >= *cap) {
            return Some(CapReached {
                cap: "max_run_cost_usd",
                limit: format!("${cap:.2}"),
                spent: format!("${:.2}", spent.cost_usd),
            });
        }
        let cap = self.run_tokens.filter(|cap| spent.tokens >= *cap)?;
        Some(CapReached {
            cap: "max_run_tokens",
            limit: cap.to_string(),
            spent: count(spent.tokens as usize, "token"),
        })
    }
}

/// A spending cap reached.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CapReached {
    /// The setting.
    pub cap: &'static str,
    /// Its value, as said (`$5.00`, `200000`).
    pub limit: String,
    /// What was spent, as said.
    pub spent: String,
}

impl std::fmt::Display for CapReached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "reached {} ({}): {} spent",
            self.cap, self.limit, self.spent
        )
    }
}

pub(crate) use crate::state::Spent;

/// A task the loop could act on, with what the state knows of it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Candidate {
    /// The task.
    pub id: TaskId,
    /// Its status in `tasks.jsonl`.
    pub status: Status,
    /// Iterations spent on it so far.
    pub iterations: u64,
    /// Wall-clock seconds its iterations took so far.
    pub seconds: u64,
    /// US dollars its iterations cost so far, as the agent reported them.
    pub cost_usd: f64,
    /// Tokens its iterations took so far.
    pub tokens: u64,
    /// Why no agent may be given the task as it stands (its title or body
    /// is over its bound), if so.
    pub unworkable: Option<String>,
}

/// What the loop sees before an iteration.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Before {
    /// A signal arrived.
    pub interrupted: bool,
    /// `.stop` exists.
    pub stop_requested: bool,
    /// Iterations done in this run.
    pub iterations: u64,
    /// Wall-clock seconds since the run started.
    pub run_seconds: u64,
    /// What the run spent today.
    pub run_spent: Spent,
    /// The first leaf marked `complete` and not merged yet.
    pub complete: Option<Candidate>,
    /// The task `Queue::next` picks.
    pub next: Option<Candidate>,
    /// Whether a trigger reviews `ready` tasks (`task_marked_ready_to_complete`).
    pub ready_is_reviewed: bool,
}

/// Why the run ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ending {
    /// Nothing workable is left.
    Drained,
    /// `.stop` asked for it.
    Stopped,
    /// `max_iterations` is spent.
    BudgetSpent,
    /// `max_run_minutes` is spent.
    RunTimeSpent,
    /// `max_run_cost_usd` or `max_run_tokens` is reached.
    CapReached,
    /// A signal arrived.
    Interrupted,
}

/// What to do next.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Step {
    /// End the run.
    End(Ending),
    /// Verify, merge and archive the task.
    Finish(TaskId),
    /// Mark the task blocked with this reason and go on.
    Block(TaskId, String),
    /// Run an iteration on the task.
    Iterate(TaskId),
}

/// The step before an iteration. Finishing a task that is already complete
/// costs no iteration, so it comes before the budget check.
pub(crate) fn before(seen: &Before, budgets: &Budgets) -> Step {
    let step = step_before(seen, budgets);
    tracing::debug!(?seen, ?step, "decided before an iteration");
    step
}

fn step_before(seen: &Before, budgets: &Budgets) -> Step {
    if seen.interrupted {
        return Step::End(Ending::Interrupted);
    }
    if seen.stop_requested {
        return Step::End(Ending::Stopped);
    }
    // A task whose text is over a bound is blocked before anything runs
    // for it: an agent, or its own checks.
    let unworkable = |task: &Candidate| {
        (task.unworkable.clone()).map(|reason| Step::Block(task.id.clone(), reason))
    };
    if let Some(task) = &seen.complete {
        return unworkable(task).unwrap_or_else(|| Step::Finish(task.id.clone()));
    }
    let Some(task) = &seen.next else {
        return Step::End(Ending::Drained);
    };
    if let Some(block) = unworkable(task) {
        return block;
    }
    if task.status == Status::Ready && !seen.ready_is_reviewed {
        return Step::Finish(task.id.clone());
    }
    if let Some(reason) = task_budget_spent(task, budgets) {
        return Step::Block(task.id.clone(), reason);
    }
    match run_budget_spent(seen.iterations, seen.run_seconds, &seen.run_spent, budgets) {
        Some(ending) => Step::End(ending),
        None => Step::Iterate(task.id.clone()),
    }
}

/// The run's budget that is spent, if one is, after `iterations` in
/// `run_seconds` that spent `spent` today: `max_iterations`, then
/// `max_run_minutes`, then a spending cap.
pub(crate) fn run_budget_spent(
    iterations: u64,
    run_seconds: u64,
    spent: &Spent,
    budgets: &Budgets,
) -> Option<Ending> {
    if iterations >= budgets.max_iterations {
        Some(Ending::BudgetSpent)
    } else if run_time_spent(run_seconds, budgets) {
        Some(Ending::RunTimeSpent)
    } else {
        (budgets.caps.run_reached(spent)).map(|_| Ending::CapReached)
    }
}

/// Why `task` is blocked before another iteration, when one of its budgets
/// (`max_iterations_per_task`, `max_task_minutes`) is spent.
pub(crate) fn task_budget_spent(task: &Candidate, budgets: &Budgets) -> Option<String> {
    if task.iterations >= budgets.max_iterations_per_task {
        return Some(format!(
            "spent max_iterations_per_task ({}) without finishing",
            budgets.max_iterations_per_task
        ));
    }
    let caps = &budgets.caps;
    if let Some(cap) = caps.task_usd.filter(|cap| task.cost_usd >= *cap) {
        return Some(format!(
            "reached max_task_cost_usd (${cap:.2}): ${:.2} spent over {}",
            task.cost_usd,
            count(task.iterations as usize, "iteration")
        ));
    }
    if let Some(cap) = caps.task_tokens.filter(|cap| task.tokens >= *cap) {
        return Some(format!(
            "reached max_task_tokens ({cap}): {} spent over {}",
            count(task.tokens as usize, "token"),
            count(task.iterations as usize, "iteration")
        ));
    }
    let minutes = budgets.max_task_minutes?;
    (task.seconds >= minutes.saturating_mul(60)).then(|| {
        format!(
            "spent max_task_minutes ({minutes}) without finishing ({} over {})",
            count((task.seconds / 60) as usize, "minute"),
            count(task.iterations as usize, "iteration")
        )
    })
}

/// Whether a run `run_seconds` old has spent `max_run_minutes`.
pub(crate) fn run_time_spent(run_seconds: u64, budgets: &Budgets) -> bool {
    budgets
        .max_run_minutes
        .is_some_and(|minutes| run_seconds >= minutes.saturating_mul(60))
}

/// Most final reviews between two drained queues: the first, and one more
/// over the follow-up tasks it added; never a third.
pub(crate) const MAX_FINAL_REVIEWS: usize = 2;

/// Whether a queue that drained with nothing left (`clear`: no task
/// blocked or waiting) gets a final review task: `final_review` is on,
/// fewer than [`MAX_FINAL_REVIEWS`] were added, and the last task merged
/// is no review (something was merged, and not only reviewed, since).
pub(crate) fn final_review_due(
    enabled: bool,
    clear: bool,
    merged: &[String],
    reviews: &[String],
) -> bool {
    enabled
        && clear
        && reviews.len() < MAX_FINAL_REVIEWS
        && merged.last().is_some_and(|last| !reviews.contains(last))
}

/// How the agent process ended, as the agent module classified it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum AgentEnd {
    /// It exited cleanly.
    Ok,
    /// It failed; the class name and a sentence for the evidence.
    Failed {
        /// The failure class (`exit`, `timeout`, `permission`, ...).
        class: FailureClass,
        /// What happened.
        summary: String,
    },
    /// It hit a usage or rate limit; `until` when the tool said.
    UsageLimit {
        /// When the limit resets, seconds from now, if known.
        reset_in: Option<Duration>,
    },
    /// It is not authenticated: retrying cannot help.
    AuthFailed(String),
    /// A signal stopped the run while the agent ran.
    Interrupted,
}

/// The task as found after the iteration.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum TaskAfter {
    /// `tasks.jsonl` does not parse or validate; the message.
    InvalidQueue(String),
    /// The task is gone from `tasks.jsonl`; whether it is in the archive.
    Gone {
        /// It was archived (by the agent).
        archived: bool,
    },
    /// The task is still there.
    Present {
        /// Its status.
        status: Status,
        /// Whether it is still a leaf (false: it was split).
        leaf: bool,
    },
}

/// What an iteration left behind.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct After {
    /// How the agent ended.
    pub agent: AgentEnd,
    /// The task afterwards.
    pub task: TaskAfter,
    /// A queue file was deleted, reverted by git or rewritten, and put
    /// back: the failure class (`queue_reverted`, `archive_edited`) and the
    /// evidence sentence.
    pub queue_put_back: Option<(FailureClass, String)>,
    /// The agent left the task branch; the evidence sentence.
    pub left_branch: Option<String>,
    /// The agent left git in a state nothing can be committed in (an
    /// unmerged index, a merge or rebase in progress): the failure class
    /// naming it, and the evidence sentence.
    pub unfinished_git: Option<(FailureClass, String)>,
    /// The task's status or kind changed during the iteration (or it left
    /// `tasks.jsonl`): what the agent recorded through `ralph task`.
    pub task_changed: bool,
    /// New commits or changed files on the branch in this iteration, or a
    /// status change.
    pub progressed: bool,
    /// Iterations in a row without progress before this one.
    pub no_progress_before: u64,
    /// Failed iterations in a row before this one.
    pub failures_before: u64,
    /// Usage-limit waits in a row before this one.
    pub limit_waits_before: u64,
    /// Whether a trigger reviews `ready` tasks.
    pub ready_is_reviewed: bool,
    /// The reviewer left the `ready` task without a verdict: the
    /// evidence sentence.
    pub no_verdict: Option<String>,
}

/// What an iteration's outcome means for the loop.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Consequence {
    /// Stop the run: the agent cannot authenticate.
    AuthFailed(String),
    /// Stop the run: a signal arrived.
    Interrupted,
    /// Wait out a usage limit, then retry; not the task's failure.
    Wait(Duration),
    /// The iteration failed: record the evidence, then back off for
    /// `backoff`, or block the task when `block` says why.
    Failed {
        /// The failure class.
        class: FailureClass,
        /// The evidence sentence.
        summary: String,
        /// How long to wait before the retry.
        backoff: Duration,
        /// The reason to block the task instead of retrying.
        block: Option<String>,
    },
    /// Verify, merge and archive the task.
    Finish,
    /// The task became a container: merge the branch, go on with its children.
    MergeSplit,
    /// The agent marked the task blocked: leave it and go on.
    Blocked,
    /// The task went to the archive without ralph: merge what the branch has.
    ArchivedByAgent,
    /// The task vanished from both files; leave its branch and go on.
    Vanished,
    /// The iteration went fine; carry on with the task.
    Continue,
}

/// Judges an iteration: failures first (they block or back off), then what
/// the agent did to the task.
pub(crate) fn after(seen: &After, budgets: &Budgets) -> Consequence {
    let verdict = verdict_after(seen, budgets);
    if tracing::enabled!(tracing::Level::DEBUG) {
        // The evidence sentences quote the agent: masked as in ralph.log.
        let redact =
            |value: &dyn std::fmt::Debug| crate::redact::redact(&format!("{value:?}")).into_owned();
        tracing::debug!(
            seen = %redact(seen),
            verdict = %redact(&verdict),
            "decided after an iteration"
        );
    }
    verdict
}

fn verdict_after(seen: &After, budgets: &Budgets) -> Consequence {
    let failure = match &seen.agent {
        AgentEnd::Interrupted => return Consequence::Interrupted,
        AgentEnd::AuthFailed(message) => return Consequence::AuthFailed(message.clone()),
        AgentEnd::UsageLimit { reset_in } => {
            return Consequence::Wait(
                reset_in.unwrap_or_else(|| limit_wait(budgets, seen.limit_waits_before + 1)),
            );
        }
        AgentEnd::Failed { class, summary } => Some((*class, summary.clone())),
        AgentEnd::Ok => None,
    };
    // A queue put back or broken is the first thing the next iteration
    // must hear: an agent's failing exit is often its consequence (its
    // `ralph task` refused the broken file with exit 30).
    let queue = match &seen.task {
        TaskAfter::InvalidQueue(message) => Some((
            FailureClass::InvalidQueue,
            format!(
                "tasks.jsonl was left invalid during the iteration (by the agent or by hand): {message}"
            ),
        )),
        _ => None,
    };
    // The agent's verdict on its task, recorded through `ralph task`,
    // survives its git command reverting the queue (ralph put it back):
    // the work is judged on it, and the revert is only said.
    let put_back = seen
        .queue_put_back
        .clone()
        .filter(|(class, _)| *class != FailureClass::QueueReverted || !gives_verdict(seen));
    let failure = put_back
        .or(queue)
        .or(failure)
        .or_else(|| seen.unfinished_git.clone())
        .or_else(|| {
            seen.left_branch
                .clone()
                .map(|sentence| (FailureClass::LeftBranch, sentence))
        })
        .or_else(|| {
            seen.no_verdict
                .clone()
                .map(|sentence| (FailureClass::NoVerdict, sentence))
        })
        .or_else(|| {
            let stalled =
                !seen.progressed && seen.no_progress_before + 1 >= budgets.no_progress_iterations;
            stalled.then(|| {
                (
                    FailureClass::NoProgress,
                    format!(
                        "{} in a row made no commit and changed no file",
                        count(seen.no_progress_before as usize + 1, "iteration")
                    ),
                )
            })
        });
    if let Some((class, summary)) = failure {
        let failures = seen.failures_before + 1;
        let block = block_reason(failures, class, &summary, budgets);
        return Consequence::Failed {
            class,
            summary,
            backoff: backoff(budgets.retry_backoff, failures),
            block,
        };
    }
    match seen.task {
        TaskAfter::InvalidQueue(_) => unreachable!("an invalid queue is a failure above"),
        TaskAfter::Gone { archived: true } => Consequence::ArchivedByAgent,
        TaskAfter::Gone { archived: false } => Consequence::Vanished,
        TaskAfter::Present { leaf: false, .. } => Consequence::MergeSplit,
        TaskAfter::Present { status, .. } => match status {
            Status::Complete => Consequence::Finish,
            Status::Ready if !seen.ready_is_reviewed => Consequence::Finish,
            Status::Blocked => Consequence::Blocked,
            _ => Consequence::Continue,
        },
    }
}

/// Whether the task as the iteration left it is a verdict of the agent's:
/// complete, ready, blocked, split or archived since the iteration began.
fn gives_verdict(seen: &After) -> bool {
    seen.task_changed
        && match seen.task {
            TaskAfter::Present { leaf: false, .. } => true,
            TaskAfter::Present { status, .. } => {
                matches!(status, Status::Complete | Status::Ready | Status::Blocked)
            }
            TaskAfter::Gone { archived } => archived,
            TaskAfter::InvalidQueue(_) => false,
        }
}

/// The wait number `waits` in a row for a usage limit whose reset is not
/// stated: `retry_backoff`, doubling each time, up to `usage_limit_max_wait`.
pub(crate) fn limit_wait(budgets: &Budgets, waits: u64) -> Duration {
    let backoff = Backoff::doubling(budgets.retry_backoff);
    backoff.at_most(budgets.usage_limit_max_wait).wait(waits)
}

/// The wait before retry number `failures`: `base`, doubling after each
/// failure, capped at ten times `base`.
pub(crate) fn backoff(base: Duration, failures: u64) -> Duration {
    let backoff = Backoff::doubling(base);
    backoff.at_most(base.saturating_mul(10)).wait(failures)
}

/// Why a task that failed `failures` times in a row is blocked, once that
/// reaches the budget: after its agent's iterations or after a failure
/// finishing it (verification, a merge conflict), which counts the same.
pub(super) fn block_reason(
    failures: u64,
    class: FailureClass,
    summary: &str,
    budgets: &Budgets,
) -> Option<String> {
    (failures >= budgets.max_consecutive_failures).then(|| {
        format!(
            "failed {} in a row (last: {class}: {summary})",
            count(failures as usize, "iteration")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budgets() -> Budgets {
        Budgets {
            max_iterations: 10,
            max_run_minutes: None,
            max_iterations_per_task: 5,
            max_task_minutes: None,
            max_consecutive_failures: 3,
            no_progress_iterations: 3,
            retry_backoff: Duration::from_secs(10),
            usage_limit_max_wait: Duration::from_secs(30 * 60),
            caps: Caps::default(),
        }
    }

    fn id(text: &str) -> TaskId {
        TaskId::parse(text).unwrap()
    }

    fn candidate(text: &str, status: Status, iterations: u64) -> Candidate {
        Candidate {
            id: id(text),
            status,
            iterations,
            seconds: 0,
            cost_usd: 0.0,
            tokens: 0,
            unworkable: None,
        }
    }

    #[test]
    fn a_final_review_follows_merged_work_at_most_twice() {
        let list = |ids: &[&str]| ids.iter().map(|i| (*i).to_owned()).collect::<Vec<_>>();
        let due = |merged: &[&str], reviews: &[&str]| {
            final_review_due(true, true, &list(merged), &list(reviews))
        };
        assert!(!due(&[], &[]), "nothing merged: nothing to review");
        assert!(due(&["A", "B"], &[]));
        assert!(
            !final_review_due(false, true, &list(&["A"]), &[]),
            "the setting is off"
        );
        assert!(
            !final_review_due(true, false, &list(&["A"]), &[]),
            "a task is blocked: the run does not end drained"
        );
        assert!(!due(&["A", "B", "C"], &["C"]), "the review passed");
        assert!(
            due(&["A", "B", "C", "D", "E"], &["C"]),
            "its follow-ups merged"
        );
        assert!(
            !due(&["A", "C", "D", "F", "G"], &["C", "F"]),
            "never a third review"
        );
    }

    fn seen() -> Before {
        Before {
            interrupted: false,
            stop_requested: false,
            iterations: 0,
            run_seconds: 0,
            run_spent: Spent::default(),
            complete: None,
            next: Some(candidate("A", Status::Pending, 0)),
            ready_is_reviewed: true,
        }
    }

    #[test]
    fn a_task_at_its_spending_cap_is_blocked_and_a_run_at_its_cap_ends() {
        let mut budgets = budgets();
        budgets.caps = Caps {
            task_usd: Some(1.0),
            run_usd: Some(3.0),
            task_tokens: Some(1000),
            run_tokens: None,
        };
        let mut s = seen();
        let task = s.next.as_mut().unwrap();
        task.iterations = 2;
        task.cost_usd = 0.99;
        task.tokens = 999;
        assert_eq!(before(&s, &budgets), Step::Iterate(id("A")));
        s.next.as_mut().unwrap().cost_usd = 1.0;
        assert_eq!(
            before(&s, &budgets),
            Step::Block(
                id("A"),
                "reached max_task_cost_usd ($1.00): $1.00 spent over 2 iterations".into()
            )
        );
        s.next.as_mut().unwrap().cost_usd = 0.0;
        s.next.as_mut().unwrap().tokens = 1000;
        assert_eq!(
            before(&s, &budgets),
            Step::Block(
                id("A"),
                "reached max_task_tokens (1000): 1000 tokens spent over 2 iterations".into()
            )
        );
        s.next.as_mut().unwrap().tokens = 0;
        s.run_spent.cost_usd = 2.5;
        assert_eq!(before(&s, &budgets), Step::Iterate(id("A")));
        s.run_spent.cost_usd = 3.25;
        assert_eq!(before(&s, &budgets), Step::End(Ending::CapReached));
        assert_eq!(
            budgets.caps.run_reached(&s.run_spent).unwrap().to_string(),
            "reached max_run_cost_usd ($3.00): $3.25 spent"
        );
        // A task already complete is merged whatever was spent.
        s.complete = Some(candidate("B", Status::Complete, 1));
        assert_eq!(before(&s, &budgets), Step::Finish(id("B")));
        // No caps, no limit.
        assert_eq!(
            super::Caps::default().run_reached(&Spent {
                day: String::new(),
                cost_usd: 1e9,
                tokens: u64::MAX
            }),
            None
        );
    }

    #[test]
    fn a_run_counts_its_spending_per_utc_day() {
        let mut spent = Spent::default();
        spent.add("2026-11-27", 1.5, 100);
        spent.add("2026-11-27", 0.5, 50);
        assert_eq!((spent.cost_usd, spent.tokens), (2.0, 150));
        assert_eq!(spent.on("2026-11-28").cost_usd, 0.0);
        spent.add("2026-11-28", 0.25, 10);
        assert_eq!(
            (spent.day.as_str(), spent.cost_usd, spent.tokens),
            ("2026-11-28", 0.25, 10)
        );
    }

    #[test]
    fn signals_and_the_stop_file_come_first() {
        let mut s = seen();
        s.stop_requested = true;
        s.interrupted = true;
        assert_eq!(before(&s, &budgets()), Step::End(Ending::Interrupted));
        s.interrupted = false;
        assert_eq!(before(&s, &budgets()), Step::End(Ending::Stopped));
    }

    #[test]
    fn complete_tasks_finish_even_when_the_budget_is_spent() {
        let mut s = seen();
        s.iterations = 10;
        s.complete = Some(candidate("B", Status::Complete, 2));
        assert_eq!(before(&s, &budgets()), Step::Finish(id("B")));
        s.complete = None;
        assert_eq!(before(&s, &budgets()), Step::End(Ending::BudgetSpent));
    }

    #[test]
    fn ready_tasks_finish_unless_a_trigger_reviews_them() {
        let mut s = seen();
        s.next = Some(candidate("A", Status::Ready, 1));
        assert_eq!(before(&s, &budgets()), Step::Iterate(id("A")));
        s.ready_is_reviewed = false;
        assert_eq!(before(&s, &budgets()), Step::Finish(id("A")));
    }

    #[test]
    fn a_spent_task_is_blocked_and_an_empty_queue_drains() {
        let mut s = seen();
        s.next = Some(candidate("A", Status::Active, 5));
        assert_eq!(
            before(&s, &budgets()),
            Step::Block(
                id("A"),
                "spent max_iterations_per_task (5) without finishing".into()
            )
        );
        s.next = None;
        assert_eq!(before(&s, &budgets()), Step::End(Ending::Drained));
    }

    #[test]
    fn a_task_no_agent_may_be_given_is_blocked_before_any_iteration() {
        let mut s = seen();
        let mut task = candidate("A", Status::Pending, 0);
        task.unworkable = Some("the title is too long".into());
        s.next = Some(task);
        s.iterations = budgets().max_iterations;
        assert_eq!(
            before(&s, &budgets()),
            Step::Block(id("A"), "the title is too long".into()),
            "blocking it costs no iteration"
        );
        let mut done = candidate("B", Status::Complete, 1);
        done.unworkable = Some("a verify command is too long".into());
        s.complete = Some(done);
        assert_eq!(
            before(&s, &budgets()),
            Step::Block(id("B"), "a verify command is too long".into()),
            "nor are its checks run"
        );
    }

    #[test]
    fn wall_clock_budgets_block_the_task_or_end_the_run() {
        let mut limited = budgets();
        limited.max_task_minutes = Some(10);
        limited.max_run_minutes = Some(60);
        let mut s = seen();
        let mut task = candidate("A", Status::Active, 2);
        task.seconds = 10 * 60 - 1;
        s.next = Some(task.clone());
        s.run_seconds = 60 * 60 - 1;
        assert_eq!(before(&s, &limited), Step::Iterate(id("A")));
        assert_eq!(
            before(&s, &budgets()),
            Step::Iterate(id("A")),
            "off by default"
        );
        task.seconds = 11 * 60 + 59;
        s.next = Some(task);
        assert_eq!(
            before(&s, &limited),
            Step::Block(
                id("A"),
                "spent max_task_minutes (10) without finishing (11 minutes over 2 iterations)"
                    .into()
            )
        );
        s.next = Some(candidate("B", Status::Pending, 0));
        s.run_seconds = 60 * 60;
        assert_eq!(before(&s, &limited), Step::End(Ending::RunTimeSpent));
        assert!(!run_time_spent(u64::MAX, &budgets()));
        // A complete task still merges: that costs no iteration.
        s.complete = Some(candidate("C", Status::Complete, 1));
        assert_eq!(before(&s, &limited), Step::Finish(id("C")));
    }

    fn done() -> After {
        After {
            agent: AgentEnd::Ok,
            task: TaskAfter::Present {
                status: Status::Active,
                leaf: true,
            },
            queue_put_back: None,
            left_branch: None,
            unfinished_git: None,
            task_changed: true,
            progressed: true,
            no_progress_before: 0,
            failures_before: 0,
            limit_waits_before: 0,
            ready_is_reviewed: true,
            no_verdict: None,
        }
    }

    #[test]
    fn the_tasks_status_decides_after_a_good_iteration() {
        let with = |status, leaf| {
            let mut a = done();
            a.task = TaskAfter::Present { status, leaf };
            after(&a, &budgets())
        };
        assert_eq!(with(Status::Active, true), Consequence::Continue);
        assert_eq!(with(Status::Complete, true), Consequence::Finish);
        assert_eq!(with(Status::Ready, true), Consequence::Continue);
        assert_eq!(with(Status::Blocked, true), Consequence::Blocked);
        assert_eq!(with(Status::Active, false), Consequence::MergeSplit);
        let mut a = done();
        a.ready_is_reviewed = false;
        a.task = TaskAfter::Present {
            status: Status::Ready,
            leaf: true,
        };
        assert_eq!(after(&a, &budgets()), Consequence::Finish);
        a.task = TaskAfter::Gone { archived: true };
        assert_eq!(after(&a, &budgets()), Consequence::ArchivedByAgent);
        a.task = TaskAfter::Gone { archived: false };
        assert_eq!(after(&a, &budgets()), Consequence::Vanished);
    }

    #[test]
    fn failures_back_off_doubling_and_block_at_the_limit() {
        let mut a = done();
        a.agent = AgentEnd::Failed {
            class: FailureClass::Exit,
            summary: "exited with 2".into(),
        };
        assert_eq!(
            after(&a, &budgets()),
            Consequence::Failed {
                class: FailureClass::Exit,
                summary: "exited with 2".into(),
                backoff: Duration::from_secs(10),
                block: None,
            }
        );
        a.failures_before = 2;
        assert_eq!(
            after(&a, &budgets()),
            Consequence::Failed {
                class: FailureClass::Exit,
                summary: "exited with 2".into(),
                backoff: Duration::from_secs(40),
                block: Some("failed 3 iterations in a row (last: exit: exited with 2)".into()),
            }
        );
        assert_eq!(
            backoff(Duration::from_secs(10), 5),
            Duration::from_secs(100),
            "capped at 10x"
        );
    }

    #[test]
    fn a_broken_queue_leaving_the_branch_and_stalling_are_failures() {
        let class = |a: &After| match after(a, &budgets()) {
            Consequence::Failed { class, .. } => class,
            other => panic!("expected a failure, got {other:?}"),
        };
        let mut a = done();
        a.task = TaskAfter::InvalidQueue("tasks.jsonl:3: missing field `title`".into());
        assert_eq!(class(&a), FailureClass::InvalidQueue);
        let mut a = done();
        a.left_branch = Some("the agent checked out main".into());
        assert_eq!(class(&a), FailureClass::LeftBranch);
        let mut a = done();
        a.progressed = false;
        a.no_progress_before = 1;
        assert_eq!(
            after(&a, &budgets()),
            Consequence::Continue,
            "two stalls are still fine"
        );
        a.no_progress_before = 2;
        assert_eq!(class(&a), FailureClass::NoProgress);
        // A queue put back is what the next iteration hears first, even
        // when the agent failed too.
        a.queue_put_back = Some((
            FailureClass::QueueReverted,
            "tasks.jsonl was deleted".into(),
        ));
        a.agent = AgentEnd::Failed {
            class: FailureClass::Exit,
            summary: "exit code 1".into(),
        };
        assert_eq!(class(&a), FailureClass::QueueReverted);
    }

    #[test]
    fn a_verdict_recorded_through_ralph_task_stands_after_a_revert() {
        let mut a = done();
        a.queue_put_back = Some((
            FailureClass::QueueReverted,
            "tasks.jsonl was reverted".into(),
        ));
        let with = |a: &After, status, leaf, changed| {
            let mut a = a.clone();
            a.task = TaskAfter::Present { status, leaf };
            a.task_changed = changed;
            after(&a, &budgets())
        };
        assert_eq!(with(&a, Status::Complete, true, true), Consequence::Finish);
        assert_eq!(with(&a, Status::Blocked, true, true), Consequence::Blocked);
        assert_eq!(
            with(&a, Status::Active, false, true),
            Consequence::MergeSplit
        );
        assert_eq!(with(&a, Status::Ready, true, true), Consequence::Continue);
        // No verdict of the iteration's own: the revert is its failure.
        for (status, changed) in [(Status::Active, true), (Status::Ready, false)] {
            assert!(
                matches!(
                    with(&a, status, true, changed),
                    Consequence::Failed {
                        class: FailureClass::QueueReverted,
                        ..
                    }
                ),
                "{status:?} {changed}"
            );
        }
        // An archive rewritten stays a failure whatever the task says.
        a.queue_put_back = Some((
            FailureClass::ArchiveEdited,
            "tasks-done.jsonl had...".into(),
        ));
        assert!(matches!(
            with(&a, Status::Complete, true, true),
            Consequence::Failed { .. }
        ));
    }

    #[test]
    fn limits_and_auth_are_not_the_tasks_failures() {
        let mut a = done();
        a.agent = AgentEnd::UsageLimit {
            reset_in: Some(Duration::from_secs(300)),
        };
        assert_eq!(
            after(&a, &budgets()),
            Consequence::Wait(Duration::from_secs(300))
        );
        a.agent = AgentEnd::UsageLimit { reset_in: None };
        assert_eq!(
            after(&a, &budgets()),
            Consequence::Wait(Duration::from_secs(10))
        );
        // A limit that persists waits longer each time, up to the cap.
        let waits: Vec<u64> = [1, 2, 3, 7, 8, 40]
            .into_iter()
            .map(|before| {
                a.limit_waits_before = before;
                match after(&a, &budgets()) {
                    Consequence::Wait(wait) => wait.as_secs(),
                    other => panic!("{other:?}"),
                }
            })
            .collect();
        assert_eq!(waits, [20, 40, 80, 1280, 1800, 1800]);
        a.limit_waits_before = 0;
        a.agent = AgentEnd::AuthFailed("Not logged in".into());
        assert_eq!(
            after(&a, &budgets()),
            Consequence::AuthFailed("Not logged in".into())
        );
        a.agent = AgentEnd::Interrupted;
        assert_eq!(after(&a, &budgets()), Consequence::Interrupted);
    }
}
