//! What `ralph top` keeps of `.ralph/events.ndjson`: the last run's
//! totals, the recent events and what each task's agent did last, folded
//! in one event at a time as the file grows.

use std::collections::{HashMap, VecDeque};

use crate::events::Event;

/// How many recent events are kept for the view.
const RECENT: usize = 200;

/// The events read so far, folded.
#[derive(Clone, Debug, Default)]
pub(crate) struct Digest {
    /// The last run's id.
    pub run_id: String,
    /// When it started (its `run started` event).
    pub started: Option<String>,
    /// Its base branch, agent and iteration budget, as it said at the start.
    pub base: Option<String>,
    /// The agent's label.
    pub agent: Option<String>,
    /// `max_iterations` of the run.
    pub max_iterations: Option<u64>,
    /// Iterations of the run that count against its budget.
    pub iterations: u64,
    /// Tokens (input and output) the agent reported in the run.
    pub tokens: u64,
    /// US dollars the agent reported in the run.
    pub cost_usd: f64,
    /// Tasks merged in the run.
    pub merged: u64,
    /// The time of the last event.
    pub last_seen: Option<String>,
    /// The recent events, oldest first, without the agents' own.
    pub recent: VecDeque<Event>,
    /// Per task: the iteration and text of its agent's last structured
    /// event (a command run, a file changed).
    pub doing: HashMap<String, (u64, String)>,
    /// Per task: its last failed iteration's class and detail.
    pub failed: HashMap<String, String>,
}

impl Digest {
    /// Folds in `event`, the next one of the file.
    pub(crate) fn add(&mut self, event: Event) {
        if event.run_id != self.run_id || (event.phase == "run" && event.status == "started") {
            self.start(&event);
        }
        self.last_seen = Some(event.timestamp.clone());
        let task = event.task_id.clone().unwrap_or_default();
        match (event.phase.as_str(), event.status.as_str()) {
            ("agent", _) => {
                self.doing.insert(task, (event.iteration, event.detail));
                return;
            }
            ("iteration", status) => {
                // A usage limit is no work done and costs no budget.
                if status != "usage_limit" {
                    self.iterations += 1;
                }
                self.tokens += event.number("input_tokens").unwrap_or(0);
                self.tokens += event.number("output_tokens").unwrap_or(0);
                self.cost_usd += event.float("cost_usd").unwrap_or(0.0);
                if status != "ok" {
                    self.failed
                        .insert(task, format!("{status}: {}", event.detail));
                }
            }
            ("merge", "ok") => self.merged += 1,
            _ => {}
        }
        // What went as it should is seen in the workers' rows: the recent
        // events are the merges, failures, blocks, waits and deliveries.
        if matches!(
            (event.phase.as_str(), event.status.as_str()),
            ("claim" | "iteration" | "verify", "ok")
        ) {
            return;
        }
        if self.recent.len() == RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back(event);
    }

    /// Starts the totals of the run `event` belongs to.
    fn start(&mut self, event: &Event) {
        let text = |key: &str| event.text(key).map(str::to_owned);
        let started = event.phase == "run" && event.status == "started";
        *self = Digest {
            run_id: event.run_id.clone(),
            started: started.then(|| event.timestamp.clone()),
            base: text("base"),
            agent: text("agent"),
            max_iterations: event.number("max_iterations"),
            recent: std::mem::take(&mut self.recent),
            ..Digest::default()
        };
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn event(run: &str, task: Option<&str>, phase: &str, status: &str, extra: Value) -> Event {
        Event {
            timestamp: "2026-11-27T10:00:00Z".into(),
            run_id: run.into(),
            task_id: task.map(str::to_owned),
            iteration: 1,
            phase: phase.into(),
            status: status.into(),
            detail: format!("{phase} {status}"),
            extra: extra.as_object().cloned().unwrap_or_default(),
            ..Event::default()
        }
    }

    #[test]
    fn a_run_adds_up_its_iterations_spend_and_merges_and_a_new_run_starts_again() {
        let mut digest = Digest::default();
        let started = serde_json::json!({"base": "main", "agent": "claude", "max_iterations": 50});
        digest.add(event("r1", None, "run", "started", started));
        let spend = serde_json::json!({"input_tokens": 100, "output_tokens": 20, "cost_usd": 0.5});
        digest.add(event("r1", Some("A"), "iteration", "ok", spend.clone()));
        digest.add(event("r1", Some("A"), "iteration", "usage_limit", spend));
        digest.add(event("r1", Some("B"), "iteration", "exit", Value::Null));
        digest.add(event("r1", Some("A"), "merge", "ok", Value::Null));
        digest.add(event("r1", Some("B"), "agent", "command", Value::Null));
        assert_eq!(digest.base.as_deref(), Some("main"));
        assert_eq!(digest.max_iterations, Some(50));
        assert_eq!(
            (digest.iterations, digest.tokens, digest.merged),
            (2, 240, 1)
        );
        assert!((digest.cost_usd - 1.0).abs() < 1e-9);
        assert_eq!(digest.failed["B"], "exit: iteration exit");
        assert_eq!(digest.doing["B"], (1, "agent command".to_owned()));
        // Neither the agent's own events nor what went well are among the
        // recent ones.
        assert_eq!(digest.recent.len(), 4);
        digest.add(event("r2", None, "run", "started", Value::Null));
        assert_eq!(
            (digest.run_id.as_str(), digest.iterations, digest.merged),
            ("r2", 0, 0)
        );
        assert_eq!(digest.recent.len(), 5, "the recent events stay across runs");
    }
}
