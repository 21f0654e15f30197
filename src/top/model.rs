//! What `ralph top` shows, made from what it read: the run and its state,
//! one row per worker, the queue as a tree and the recent events. Pure:
//! the files come in as [`Sources`], the time as `now`.

use std::rc::Rc;

use chrono::{DateTime, Utc};

use super::digest::Digest;
use crate::result::RunResult;
use crate::state::{Phase, State, WaitReason};
use crate::task::{Queue, Status, TreeNode};
use crate::text::safe;

/// Everything read from the project's files for one frame.
pub(crate) struct Sources {
    /// The run holding the run lock, when its process is alive.
    pub live: Option<crate::run_lock::Holder>,
    /// `.ralph/state.json`.
    pub state: State,
    /// The parallel workers, each with its state.
    pub workers: Vec<WorkerSource>,
    /// For a single run: its task's agent log, last line.
    pub activity: Option<String>,
    /// The queue, or why it cannot be read.
    pub queue: Rc<Result<Queue, String>>,
    /// The queue's tree, flattened, made once per change of the queue.
    pub rows: Rc<Vec<QueueRow>>,
    /// The events so far, folded.
    pub digest: Rc<Digest>,
    /// Whether `.stop` is there.
    pub stop_asked: bool,
    /// `.ralph/result.json`.
    pub result: Option<RunResult>,
    /// Sharing the queue: the claims as the last fetch saw them, one
    /// line (`A: 5b0e9c2f build-3 beat 4, ...`).
    pub shared: Option<String>,
}

/// One parallel worker, as read.
pub(crate) struct WorkerSource {
    /// Its task.
    pub task: String,
    /// Its state.
    pub state: State,
    /// The last line of its agent's log.
    pub activity: Option<String>,
}

/// What the run is doing.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum RunState {
    /// No run ever in this project.
    NoRun,
    /// No process holds the run: it ended, or crashed.
    NotRunning {
        /// When it was last heard of.
        last_seen: String,
        /// How it ended, when it wrote its result.
        ended: Option<String>,
    },
    /// Iterations under way.
    Working,
    /// `.stop` is there: the run stops after the current iterations.
    Stopping,
    /// A polling run waits for work.
    Idle {
        /// How often it looks.
        every: String,
        /// When it looks next.
        next_look: String,
    },
    /// The agent's usage limit: no iteration until then.
    Waiting {
        /// When the wait ends.
        until: String,
    },
}

/// One worker's row.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct WorkerRow {
    /// The task id.
    pub task: String,
    /// Its title.
    pub title: String,
    /// The role of its iteration.
    pub role: String,
    /// What the loop does on it now.
    pub phase: String,
    /// Iterations on the task so far.
    pub iteration: u64,
    /// Seconds into the iteration under way.
    pub seconds: Option<i64>,
    /// The last line of activity.
    pub activity: String,
}

/// One row of the queue's tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct QueueRow {
    /// Depth in the tree (0: top level).
    pub depth: usize,
    /// The task id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its status; `None`: archived.
    pub status: Option<Status>,
    /// For a parent: descendants done of all.
    pub progress: Option<(usize, usize)>,
}

/// How an event reads: good news, bad news, or neither.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tone {
    /// A merge, a pull request, a pass.
    Good,
    /// A failure, a block, a refusal.
    Bad,
    /// Everything else.
    Plain,
}

/// One recent event's line.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct EventRow {
    /// `HH:MM:SS`, UTC.
    pub time: String,
    /// The task, if any.
    pub task: String,
    /// What happened.
    pub text: String,
    /// How it reads.
    pub tone: Tone,
}

/// One frame's content.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Snapshot {
    /// The run's id, if there was one.
    pub run_id: Option<String>,
    /// What it does.
    pub state: RunState,
    /// Base, agent, elapsed, iterations, tasks and spend, as label and value.
    pub facts: Vec<(&'static str, String)>,
    /// One row per worker busy on a task.
    pub workers: Vec<WorkerRow>,
    /// What the workers panel says when no task is under way: what the
    /// run does meanwhile, when it runs.
    pub no_task: String,
    /// The queue, flattened in tree order (shared with the sources: a
    /// frame whose queue did not change compares it by address).
    pub queue: Rc<Vec<QueueRow>>,
    /// Why the queue could not be read, if so.
    pub queue_error: Option<String>,
    /// The queue's size in words: tasks left, archived.
    pub queue_size: String,
    /// The recent events, newest first.
    pub events: Vec<EventRow>,
}

impl Snapshot {
    /// The frame for `sources` at `now`.
    pub(crate) fn of(sources: &Sources, now: DateTime<Utc>) -> Snapshot {
        let digest = &sources.digest;
        let run_id = [&digest.run_id, &sources.state.run_id]
            .into_iter()
            .find(|id| !id.is_empty())
            .cloned();
        let state = run_state(sources, run_id.is_some());
        let (queue, queue_error, queue_size) = match sources.queue.as_ref() {
            Ok(queue) => {
                let counts = queue.counts();
                let size = format!(
                    "{}, {} archived",
                    crate::text::count(counts.active_total(), "task"),
                    counts.archived
                );
                (Rc::clone(&sources.rows), None, size)
            }
            Err(error) => (Rc::default(), Some(error.clone()), "unreadable".to_owned()),
        };
        Snapshot {
            facts: facts(sources, &state, now),
            workers: workers(sources, now),
            no_task: no_task(sources),
            events: digest.recent.iter().rev().map(event_row).collect(),
            run_id,
            state,
            queue,
            queue_error,
            queue_size,
        }
    }
}

/// What the run does, from the lock's holder, `.stop` and the states.
fn run_state(sources: &Sources, any_run: bool) -> RunState {
    let state = &sources.state;
    if sources.live.is_none() {
        if !any_run {
            return RunState::NoRun;
        }
        let last_seen = [sources.digest.last_seen.as_deref(), Some(&state.updated)]
            .into_iter()
            .flatten()
            .max()
            .unwrap_or_default()
            .to_owned();
        let ended = (sources.result.as_ref())
            .filter(|result| result.run_id == sources.digest.run_id)
            .map(|result| format!("{}: {}", result.status.as_str(), safe(&result.reason)));
        return RunState::NotRunning { last_seen, ended };
    }
    if sources.stop_asked {
        return RunState::Stopping;
    }
    if let (Phase::Idle, Some(polling)) = (state.phase, &state.polling) {
        return RunState::Idle {
            every: polling.every.clone(),
            next_look: polling.next_look.clone(),
        };
    }
    let limit = std::iter::once(state)
        .chain(sources.workers.iter().map(|worker| &worker.state))
        .filter_map(|state| state.waiting.as_ref())
        .filter(|waiting| waiting.why == WaitReason::UsageLimit)
        .map(|waiting| waiting.until.clone())
        .max();
    match limit {
        Some(until) => RunState::Waiting { until },
        None => RunState::Working,
    }
}

/// The run's facts: base, agent, elapsed, iterations, tasks, spend.
fn facts(sources: &Sources, state: &RunState, now: DateTime<Utc>) -> Vec<(&'static str, String)> {
    let digest = &sources.digest;
    let mut facts = Vec::new();
    let base = digest.base.clone().or_else(|| sources.state.base.clone());
    if let Some(base) = base {
        facts.push(("base", base));
    }
    if let Some(agent) = &digest.agent {
        facts.push(("agent", safe(agent).into_owned()));
    }
    let started = digest
        .started
        .as_deref()
        .or(sources.live.as_ref().map(|h| h.since.as_str()));
    let end = match state {
        RunState::NotRunning { last_seen, .. } => parse(last_seen),
        _ => Some(now),
    };
    if let (Some(started), Some(end)) = (started.and_then(parse), end) {
        facts.push(("elapsed", span((end - started).num_seconds())));
    }
    if !digest.run_id.is_empty() {
        facts.push((
            "iterations",
            match digest.max_iterations {
                Some(max) => format!("{} of {max}", digest.iterations),
                None => digest.iterations.to_string(),
            },
        ));
    }
    if let Ok(queue) = sources.queue.as_ref() {
        let counts = queue.counts();
        let left = counts.active_total() - counts.with(Status::Blocked);
        facts.push((
            "tasks",
            format!(
                "{} done, {left} left, {} blocked",
                digest.merged,
                counts.with(Status::Blocked)
            ),
        ));
    }
    if let Some(shared) = &sources.shared {
        facts.push(("claims", shared.clone()));
    }
    if digest.tokens > 0 || digest.cost_usd > 0.0 {
        facts.push((
            "spent",
            format!("{} tokens, ${:.2}", tokens(digest.tokens), digest.cost_usd),
        ));
    }
    facts
}

/// What a live run does with no task under way (its checks, a merge,
/// the wait between tasks or for work), for the workers panel.
fn no_task(sources: &Sources) -> String {
    if sources.live.is_none() {
        return "no task under way".to_owned();
    }
    let doing = match sources.state.phase {
        Phase::Verify => "the run's checks (verify.run) are running",
        Phase::Merge | Phase::Squash => "a task is being merged into the base",
        Phase::Idle => "the run is idle, looking for work",
        Phase::Ended => "the run is ending",
        Phase::Agent | Phase::Judge | Phase::Between => {
            "between tasks: the next one is being picked"
        }
    };
    format!("no task under way: {doing}")
}

/// The rows of the tasks under way: each worker's, or the single run's.
fn workers(sources: &Sources, now: DateTime<Utc>) -> Vec<WorkerRow> {
    if sources.live.is_none() {
        return Vec::new();
    }
    let title = |id: &str, state: &State| -> String {
        let from_queue = (sources.queue.as_ref().as_ref().ok()).and_then(|queue| queue.get(id));
        let title = match from_queue {
            Some(task) => Some(task.title.as_str()),
            None => state.tasks.get(id).and_then(|p| p.title.as_deref()),
        };
        safe(title.unwrap_or_default()).into_owned()
    };
    let row = |task: &str, state: &State, activity: Option<&String>| {
        let progress = state.tasks.get(task).cloned().unwrap_or_default();
        let doing = sources.digest.doing.get(task);
        let activity = match (state.phase, doing) {
            // What a structured backend says the agent does, while it does.
            (Phase::Agent, Some((iteration, doing))) if *iteration == state.iteration => {
                Some(doing)
            }
            _ => activity,
        };
        let waiting = state.waiting.as_ref().filter(|w| w.task == task);
        WorkerRow {
            title: title(task, state),
            role: state.role.clone().unwrap_or_else(|| "-".to_owned()),
            phase: match (waiting, state.phase) {
                (Some(waiting), _) => match waiting.why {
                    WaitReason::UsageLimit => "limit".to_owned(),
                    WaitReason::Retry => "retry".to_owned(),
                },
                (None, Phase::Between) => "-".to_owned(),
                (None, phase) => phase.as_str().to_owned(),
            },
            iteration: progress.iterations,
            seconds: (progress.iteration_started.as_deref())
                .and_then(parse)
                .map(|started| (now - started).num_seconds().max(0)),
            activity: activity.map(|a| safe(a).into_owned()).unwrap_or_default(),
            task: task.to_owned(),
        }
    };
    if !sources.workers.is_empty() {
        return (sources.workers.iter())
            .map(|worker| row(&worker.task, &worker.state, worker.activity.as_ref()))
            .collect();
    }
    match &sources.state.current_task {
        Some(task) => vec![row(task, &sources.state, sources.activity.as_ref())],
        None => Vec::new(),
    }
}

/// The queue's tree, flattened depth first.
pub(crate) fn rows(queue: &Queue) -> Vec<QueueRow> {
    fn walk(node: &TreeNode, depth: usize, out: &mut Vec<QueueRow>) {
        out.push(QueueRow {
            depth,
            id: node.id.clone(),
            title: safe(&node.title).into_owned(),
            status: node.status,
            progress: (!node.leaf && node.total > 0).then_some((node.done, node.total)),
        });
        for child in &node.children {
            walk(child, depth + 1, out);
        }
    }
    let mut out = Vec::new();
    for node in queue.tree() {
        walk(&node, 0, &mut out);
    }
    out
}

/// The line of one event.
fn event_row(event: &crate::events::Event) -> EventRow {
    let tone = match (event.phase.as_str(), event.status.as_str()) {
        ("merge" | "push" | "pull_request", "ok" | "opened" | "updated" | "created") => Tone::Good,
        ("verify", "ok") | ("iteration", "ok") => Tone::Good,
        ("block", _) | ("verify", _) | ("iteration", _) => Tone::Bad,
        (_, "failed" | "rejected" | "refused") => Tone::Bad,
        _ => Tone::Plain,
    };
    let time = (parse(&event.timestamp))
        .map(|at| at.format("%H:%M:%S").to_string())
        .unwrap_or_default();
    let what = match (event.phase.as_str(), event.status.as_str()) {
        ("merge", "ok") => "merged".to_owned(),
        ("iteration", "ok") => "iteration ok".to_owned(),
        ("iteration", class) => format!("failed ({class})"),
        (phase, status) => format!("{phase} {status}"),
    };
    EventRow {
        time,
        task: event.task_id.clone().unwrap_or_default(),
        text: safe(&format!("{what}: {}", event.detail)).into_owned(),
        tone,
    }
}

/// A timestamp of ralph's files.
fn parse(stamp: &str) -> Option<DateTime<Utc>> {
    let at = DateTime::parse_from_rfc3339(stamp).ok()?;
    Some(at.with_timezone(&Utc))
}

/// `seconds` as `1h02m`, `3m05s` or `12s`.
pub(crate) fn span(seconds: i64) -> String {
    let seconds = seconds.max(0);
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m{:02}s", seconds / 60, seconds % 60),
        _ => format!("{}h{:02}m", seconds / 3600, seconds % 3600 / 60),
    }
}

/// A token count as `950`, `12.3k` or `1.2M`.
fn tokens(count: u64) -> String {
    match count {
        0..1000 => count.to_string(),
        1000..1_000_000 => format!("{:.1}k", count as f64 / 1e3),
        _ => format!("{:.1}M", count as f64 / 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_and_token_counts_read_short() {
        assert_eq!(span(12), "12s");
        assert_eq!(span(185), "3m05s");
        assert_eq!(span(3720), "1h02m");
        assert_eq!(span(-4), "0s");
        assert_eq!(tokens(950), "950");
        assert_eq!(tokens(12_345), "12.3k");
        assert_eq!(tokens(1_250_000), "1.2M");
    }
}
