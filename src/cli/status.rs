//! `ralph status`: is a run live, what is it doing, how is the queue.

use crate::state::Phase;
use std::fmt::Write;

use serde_json::json;

use super::{Context, Outcome, to_json};
use crate::error::Error;
use crate::task::Store;
use crate::text::safe;

/// How many recent events `ralph status` shows.
const RECENT: usize = 5;

/// Runs `ralph status`.
pub(super) fn run(context: &Context) -> Result<Outcome, Error> {
    let paths = &context.paths;
    let io = |path| crate::files::at::<Error>(paths.join(path));
    let mut run = crate::view::Run::new(paths.clone());
    run.read();
    // Judged as `ralph top` judges it: one view of a run.
    let holder = crate::view::live(paths, run.result.as_ref());
    // A hand edit that broke the queue is no reason to hide the live run.
    let (queue, queue_error) = match Store::open(paths).load() {
        Ok(queue) => (queue, None),
        Err(err) => (
            crate::task::Queue::empty(),
            Some(Error::from(err).one_line()),
        ),
    };
    let counts = queue.counts();
    // The log's end only: what a status shows, at a cost that does not
    // grow with the log (256 KiB hold a thousand events or so).
    let all = (run.recent_events(RECENT_BYTES))
        .map_err(io(crate::paths::EVENTS_FILE))?
        .events;
    let events = &all[all.len().saturating_sub(RECENT)..];
    // Work another machine's landing made moot, kept for the person.
    let orphans: Vec<String> = (all[all.len().saturating_sub(1000)..].iter())
        .filter(|event| event.phase == "orphaned")
        .map(|event| safe(&event.detail).into_owned())
        .collect();
    let (state, result, workers, shared) = (&run.state, &run.result, &run.workers, &run.shared);
    let title = |id: &str| (queue.get(id)).map_or(String::new(), |t| safe(&t.title).into_owned());
    // The watched PRDs, and what keeps the base from taking the branch.
    let watched = crate::runner::watch::Watched::load(paths).unwrap_or_default();
    let stuck = &watched.stuck;
    if context.json {
        return Ok(Outcome::print(to_json(&json!({
            "live": holder.is_some(),
            "run": holder.as_ref().map(|h| json!({"pid": h.pid, "since": h.since, "run_id": h.run_id})),
            "task": state.current_task,
            "iteration": state.iteration,
            "role": state.role,
            "phase": state.phase,
            "workers": workers.iter().map(|w| json!({
                "task": w.task, "iteration": w.progress().iterations, "role": w.state.role,
                "phase": w.state.phase, "since": w.progress().claimed,
            })).collect::<Vec<_>>(),
            "counts": queue_error.is_none().then(|| super::task::counts_json(&counts)),
            "queue_error": queue_error,
            "watch_stuck": stuck,
            "fallback": state.fallback,
            "prds": watched.prds,
            "shared": shared.as_ref().map(|shared| json!({
                "machine": shared.machine,
                "claims": shared.claims.iter().map(|c| json!({
                    "task": c.id, "machine": c.machine, "host": c.host, "worker": c.worker,
                    "beat": c.beat, "written": c.written,
                })).collect::<Vec<_>>(),
                "landings": shared.landings,
                "orphans": orphans,
            })),
            "last_result": result,
            "events": events,
        }))));
    }
    let mut out = String::new();
    let _ = match &holder {
        Some(h) => writeln!(
            out,
            "run: live (pid {}, since {}, run {})",
            h.pid, h.since, h.run_id
        ),
        None => writeln!(out, "run: none live"),
    };
    if let (Some(_), Phase::Idle, Some(polling)) = (&holder, state.phase, &state.polling) {
        let _ = writeln!(
            out,
            "idle, polling every {}, next look at {}",
            polling.every, polling.next_look
        );
    }
    if let Some(fallen) = &state.fallback {
        let _ = writeln!(
            out,
            "agent: {} runs in place of {} (its usage limit, agent.fallback) until {}",
            fallen.agent, fallen.instead_of, fallen.until
        );
    }
    if let Some(stuck) = stuck {
        let _ = writeln!(
            out,
            "watch: stuck since {}: {}; {}",
            stuck.since,
            safe(&stuck.problem),
            safe(&stuck.fix)
        );
    }
    // The PRDs last planned or refused first.
    let mut prds: Vec<_> = watched.prds.iter().collect();
    prds.sort_by(|a, b| b.1.last_run.cmp(&a.1.last_run));
    for (path, prd) in prds.iter().take(PRDS_SHOWN) {
        let _ = writeln!(out, "prd: {}", prd_line(path, prd));
    }
    if prds.len() > PRDS_SHOWN {
        let _ = writeln!(
            out,
            "  and {} more (`ralph status --json` lists them all)",
            prds.len() - PRDS_SHOWN
        );
    }
    if let Some(task) = &state.current_task {
        let _ = writeln!(
            out,
            "task: {task} {} (iteration {}, role {}, phase {})",
            title(task),
            state.iteration,
            state.role.as_deref().unwrap_or("none"),
            shown(state.phase)
        );
        // What the agent does now, when its backend reports it.
        if holder.is_some()
            && state.phase == Phase::Agent
            && let Some(doing) = doing_now(events, task, state.iteration)
        {
            let _ = writeln!(out, "  now: {doing}");
        }
    }
    for worker in workers {
        let _ = writeln!(
            out,
            "worker: {} {} (iteration {} of the task, role {}, phase {}, since {})",
            worker.task,
            title(&worker.task),
            worker.progress().iterations,
            worker.state.role.as_deref().unwrap_or("none"),
            shown(worker.state.phase),
            worker.progress().claimed.as_deref().unwrap_or("-"),
        );
    }
    let statuses = super::task::statuses(&counts);
    if let Some(error) = &queue_error {
        let _ = writeln!(out, "queue: cannot be read: {}", safe(error));
    } else {
        let _ = writeln!(
            out,
            "queue: {}{}; {} archived",
            crate::text::count(counts.active_total(), "task"),
            if statuses.is_empty() {
                String::new()
            } else {
                format!(" ({})", statuses.join(", "))
            },
            counts.archived
        );
    }
    if let Some(shared) = shared {
        let _ = writeln!(
            out,
            "shared queue: this machine {}; claims as last fetched: {}",
            shared.machine.get(..8).unwrap_or(&shared.machine),
            if shared.claims.is_empty() { "none" } else { "" }
        );
        for claim in &shared.claims {
            let ours = if claim.machine == shared.machine {
                ", this machine"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "  {}: {} ({}{ours}), worker {}, beat {} at {}",
                claim.id,
                claim.machine.get(..8).unwrap_or(&claim.machine),
                safe(&claim.host),
                claim.worker,
                claim.beat,
                claim.written
            );
        }
        for landing in &shared.landings {
            let kept = crate::git::remote::landing_ref(landing);
            let _ = writeln!(out, "  landing waiting for its push: {landing} ({kept})");
        }
        for orphan in &orphans {
            let _ = writeln!(
                out,
                "  orphaned: {orphan}: work another machine's landing made moot, kept for you"
            );
        }
    }
    if let Some(result) = result {
        let _ = writeln!(
            out,
            "last run: {} at {}: {}",
            result.status.as_str(),
            result.ended,
            safe(&result.reason)
        );
    }
    if context.paths.report().exists() {
        let _ = writeln!(
            out,
            "report: .ralph/report.html (`ralph report` writes it again)"
        );
    }
    if !events.is_empty() {
        let _ = writeln!(out, "recent events:");
        for event in events {
            let _ = writeln!(
                out,
                "  {} #{} {} {} {}: {}",
                event.timestamp,
                event.iteration,
                event.task_id.as_deref().unwrap_or("-"),
                event.phase,
                event.status,
                safe(&event.detail)
            );
        }
    }
    Ok(Outcome::print(out))
}

/// How much of the event log's end `ralph status` reads.
const RECENT_BYTES: u64 = 256 << 10;

/// How many watched PRDs the text lists, the latest first.
const PRDS_SHOWN: usize = 10;

/// A watched PRD in a line: what became of it and its pull request.
fn prd_line(path: &str, prd: &crate::runner::watch::Prd) -> String {
    let what = match (prd.status.as_str(), &prd.container) {
        ("planned", Some(container)) => format!("planned under {container}"),
        ("refused", _) => format!(
            "refused ({}): {}",
            prd.reason.as_deref().unwrap_or("-"),
            safe(prd.detail.as_deref().unwrap_or_default())
        ),
        (status, _) => status.to_owned(),
    };
    let pull_request = match &prd.pull_request {
        Some(pr) => format!(
            "; pull request {} {} ({}, {})",
            pr.branch,
            pr.url.as_deref().unwrap_or("not opened"),
            pr.state,
            pr.updated
        ),
        None if prd.status == "planned" => "; no pull request yet".to_owned(),
        None => String::new(),
    };
    format!("{} {what}{pull_request}", safe(path))
}

/// The last thing the agent of `task`'s iteration `iteration` was seen
/// doing (a structured backend's `agent` event), with how long ago.
fn doing_now(events: &[crate::events::Event], task: &str, iteration: u64) -> Option<String> {
    let event = events.iter().rev().find(|event| {
        event.phase == "agent"
            && event.task_id.as_deref() == Some(task)
            && event.iteration == iteration
    })?;
    let at = chrono::DateTime::parse_from_rfc3339(&event.timestamp).ok()?;
    let ago = crate::clock::seconds_between(at.with_timezone(&chrono::Utc), chrono::Utc::now());
    Some(format!("{} ({ago} s ago)", safe(&event.detail)))
}

/// A phase as `ralph status` shows it: `-` between iterations.
fn shown(phase: Phase) -> &'static str {
    match phase {
        Phase::Between => "-",
        phase => phase.as_str(),
    }
}
