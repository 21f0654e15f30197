//! Delivering the run's work: pushing the base to its remote (`git.push`),
//! retried when the failure may pass, stopped when someone else pushed.

use std::time::Duration;

use serde_json::Map;

use super::engine::Engine;
use crate::error::Error;
use crate::git::{PUSH_TIMEOUT, Pushed};

/// The waits before the second and third push attempts.
const PUSH_RETRIES: [Duration; 2] = [Duration::from_secs(2), Duration::from_secs(4)];

impl Engine<'_> {
    /// Pushes the base to its remote, trying again after a transient
    /// failure. Returns why the run must stop when the push failed for
    /// good (rejected, or failed on every attempt); nothing local is
    /// changed either way.
    pub(super) fn push_base(&mut self) -> Result<Option<String>, Error> {
        let base = self.base().base().to_owned();
        let target = self
            .base()
            .push_target(&base, self.options.settings.git.remote.as_deref());
        let local = self.base().branch_tip(&base)?;
        let mut waits = PUSH_RETRIES.iter();
        loop {
            let pushed = self.base().push_once(&base, &target, PUSH_TIMEOUT)?;
            let said = match pushed {
                Pushed::Done { up_to_date } => {
                    let detail = format!(
                        "{base} at {} {} {target}",
                        local.short(),
                        if up_to_date {
                            "was already on"
                        } else {
                            "pushed to"
                        }
                    );
                    self.ui.log(&super::engine::now(), &detail);
                    self.record(None, "push", "ok", &detail, Map::new())?;
                    return Ok(None);
                }
                Pushed::Rejected { remote_tip } => {
                    let theirs = remote_tip
                        .as_deref()
                        .map_or("a commit", |tip| &tip[..tip.len().min(7)]);
                    let reason = format!(
                        "the push of {base} to {target} was rejected: {target} is at {theirs} (someone else pushed), which {base} at {} does not include; nothing local was lost or rewritten. Bring {base} up to date (`git pull --rebase {} {}`) and run again: ralph's next run starts from the new base",
                        local.short(),
                        target.remote,
                        target.branch,
                    );
                    self.ui.line(&format!("warning: {reason}"));
                    self.record(None, "push", "rejected", &reason, Map::new())?;
                    return Ok(Some(reason));
                }
                Pushed::Failed { said } => said,
            };
            let said = crate::redact::redact(&said).into_owned();
            let Some(wait) = waits.next() else {
                let reason = format!(
                    "the push of {base} to {target} failed {} times (last: {said}); the commits are safe locally: push {base} by hand, or run again",
                    PUSH_RETRIES.len() + 1
                );
                self.ui.line(&format!("warning: {reason}"));
                self.record(None, "push", "failed", &reason, Map::new())?;
                return Ok(Some(reason));
            };
            let detail = format!(
                "the push of {base} to {target} failed ({said}); trying again in {}s",
                wait.as_secs()
            );
            self.ui.line(&detail);
            self.record(None, "push", "retry", &detail, Map::new())?;
            if self.wait(*wait)?.is_some() {
                return Ok(Some(format!(
                    "the push of {base} to {target} was not finished: the run was asked to stop"
                )));
            }
        }
    }
}
