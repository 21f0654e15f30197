//! Agents to fall back on (`agent.fallback`): when the running agent hits
//! its usage limit, the next one of the list takes the task on instead of
//! the run waiting, and the first comes back once its limit resets.

use std::time::{Duration, Instant};

use crate::agent::Backend;

/// The agents of the list that are not running, and which one is.
pub(crate) struct Fallback {
    /// Each agent not running now, by its place in the list (0: the
    /// first, `agent`'s own settings).
    idle: Vec<(usize, Box<dyn Backend>)>,
    /// The place of the one running.
    on: usize,
    /// When the first agent's usage limit resets, while another runs.
    back_at: Option<Instant>,
}

/// An agent swapped in: who now runs, and who stepped aside.
pub(crate) struct Switch {
    /// The label of the agent that runs now.
    pub to: String,
    /// The label of the one it replaced.
    pub from: String,
}

impl Fallback {
    /// The list after the first agent.
    pub(crate) fn new(agents: Vec<Box<dyn Backend>>) -> Fallback {
        Fallback {
            idle: agents
                .into_iter()
                .enumerate()
                .map(|(n, agent)| (n + 1, agent))
                .collect(),
            on: 0,
            back_at: None,
        }
    }

    /// The running `agent` hit its usage limit, which resets in
    /// `reset_in`: the next agent of the list is swapped in, if one is
    /// left after it.
    pub(crate) fn switch(
        &mut self,
        agent: &mut Box<dyn Backend>,
        reset_in: Duration,
    ) -> Option<Switch> {
        let next = (self.idle.iter().enumerate())
            .filter(|(_, (place, _))| *place > self.on)
            .min_by_key(|(_, (place, _))| *place)
            .map(|(index, _)| index)?;
        if self.on == 0 {
            self.back_at = Some(Instant::now() + reset_in);
        }
        Some(self.swap(agent, next))
    }

    /// The first agent back in `agent`'s place once its limit reset.
    pub(crate) fn back(&mut self, agent: &mut Box<dyn Backend>) -> Option<Switch> {
        if self.on == 0 || self.back_at.is_some_and(|at| at > Instant::now()) {
            return None;
        }
        let first = self.idle.iter().position(|(place, _)| *place == 0)?;
        self.back_at = None;
        Some(self.swap(agent, first))
    }

    fn swap(&mut self, agent: &mut Box<dyn Backend>, index: usize) -> Switch {
        let (place, mut next) = self.idle.remove(index);
        std::mem::swap(agent, &mut next);
        let from = next.label();
        self.idle.push((self.on, next));
        self.on = place;
        Switch {
            to: agent.label(),
            from,
        }
    }
}
