//! The shared queue as the run's part (docs/SCALE.md): before a commit
//! on the base the run catches up with the remote, after one it lands it
//! there (again on a new tip when another machine landed first); a pool
//! claims each task on the remote before handing it out.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, json};

use super::remote::{Claimed, Remote, RemoteError, claim_ref, seen_ref, seen_wip_ref, wip_ref};
use super::seat::Hub;
use super::source::{Idle, Pick, Source};
use super::worker::Worker;
use crate::error::Error;
use crate::events::fields;
use crate::git::remote::landing_ref;
use crate::git::{Push, Pushed, Squash, reason};
use crate::paths::Paths;
use crate::retry::Backoff;
use crate::task::{Task, merge};

/// Longest a landing waits for a remote that cannot be reached before
/// the run stops (the landing kept, pushed by the next run).
const OFFLINE_WAIT: Duration = Duration::from_secs(3600);

/// Back-off before landing again after a refusal (another machine landed
/// first: landing again is due, so it starts short): 100ms up to 30s.
const REFUSED: Backoff = Backoff::doubling(Duration::from_millis(100))
    .at_most(Duration::from_secs(30))
    .jittered();

/// Back-off before trying a remote that did not answer again: 1s up to 30s.
const UNREACHABLE: Backoff = Backoff::doubling(Duration::from_secs(1))
    .at_most(Duration::from_secs(30))
    .jittered();

/// Waits between looks at the remote while other machines hold the work
/// left: 1s, doubling (up to the heartbeat) while nothing moves.
const WAITING: Backoff = Backoff::doubling(Duration::from_secs(1));

impl Worker<'_> {
    /// Before a commit on the base: reads the remote and moves the base
    /// to its tip, so the commit builds on it. Nothing without a remote.
    pub(super) fn catch_up(&mut self) -> Result<(), Error> {
        let Some(remote) = self.remote.clone() else {
            return Ok(());
        };
        let _ = self.tick_remote(&remote)?;
        // The checkout moved: its cleanliness is looked at again.
        self.clean = None;
        Ok(())
    }

    /// After a commit on the base (a landing, a block): pushes the base's
    /// tip to the remote with a lease on the tip it was built on. When
    /// another machine landed first, reads the remote again and makes the
    /// commit again on its new tip, as long as the remote moves between
    /// two refusals (someone landed): `remote.land_attempts` refusals on
    /// the same tip stop it.
    /// `task` is the task and its branch tip (kept under
    /// `refs/ralph/tasks/<id>`); `release` deletes its claim with it.
    pub(super) fn publish(
        &mut self,
        task: Option<(&crate::task::TaskId, Option<String>)>,
        release: bool,
    ) -> Result<Option<String>, Error> {
        if self.remote.is_none() {
            return Ok(None);
        }
        let mut refused = 0u64;
        // Refusals in a row on one tip of the remote, and that tip: a
        // refusal because another machine landed first moves the tip and
        // starts the count again; a hook or a protected branch does not.
        let (mut stuck, mut refused_on) = (0u32, String::new());
        // Since when the remote could not be reached, and how many waits.
        let mut offline: Option<std::time::Instant> = None;
        let mut waits = 0u64;
        loop {
            let remote = self.remote.clone().expect("a shared remote");
            let base = self.base().base().to_owned();
            let landing = self.base().branch_tip(&base)?.to_string();
            let Some(on) = remote.synced(self.base()) else {
                return Ok(None);
            };
            let label = remote.label();
            let attempts = remote.settings.land_attempts.max(1) as u32;
            let task_ref = task.as_ref().map(|(id, tip)| (id.as_str(), tip.as_deref()));
            if landing == on {
                // Nothing new on the base: only the claim goes.
                if release
                    && let Some((id, _)) = task_ref
                    && remote.holds(id)
                {
                    let updates = remote.release(id);
                    let pushed = remote.push(self.base(), &updates, Push::AtomicUnverified)?;
                    if matches!(pushed, Pushed::Accepted { .. }) {
                        remote.forget(id);
                        self.base().delete_ref(&seen_ref(id))?;
                        self.base().delete_ref(&seen_wip_ref(id))?;
                    }
                }
                return Ok(None);
            }
            let what = task_ref.map_or_else(|| base.clone(), |(id, _)| id.to_owned());
            if let Some((id, tip)) = task_ref
                && remote.archived_at(self.base(), &on, id)?
            {
                return self
                    .orphan(&remote, id, tip.unwrap_or(&landing), &on)
                    .map(Some);
            }
            let pushed = remote.push_landing(self.base(), &landing, &on, task_ref, release)?;
            let said = match pushed {
                Pushed::Accepted { .. } => {
                    // The remote's tip now, whose queue files the disk's
                    // were when it was made: the next merge's common base.
                    self.base().set_ref(&remote.sync_ref(), &landing)?;
                    // Kept while it waited: landed now.
                    self.base().delete_ref(&landing_ref(&what))?;
                    let detail = format!(
                        "{what} landed on {label} at {}",
                        &landing[..landing.len().min(10)]
                    );
                    self.ui.log(&detail);
                    let extra = fields(json!({"commit": landing, "refused": refused}));
                    let id = task.as_ref().map(|(id, _)| (*id).clone());
                    self.record(id.as_ref(), "push", "ok", &detail, extra)?;
                    return Ok(None);
                }
                Pushed::Rejected { refs, .. } => {
                    refused += 1;
                    stuck = if refused_on == on { stuck + 1 } else { 1 };
                    refused_on.clone_from(&on);
                    // The claim was taken over while this machine was cut
                    // off: a finished task still lands, without it.
                    if let Some((id, _)) = task_ref
                        && refs
                            .iter()
                            .any(|(name, _)| *name == claim_ref(id) || *name == wip_ref(id))
                    {
                        remote.forget(id);
                    }
                    refs.iter()
                        .map(|(name, why)| format!("{name} {why}"))
                        .collect::<Vec<_>>()
                        .join("; ")
                }
                Pushed::Unreachable(said) => {
                    // Cut off: the landing waits (work goes on in the
                    // other workers); nothing moved, nothing to make again.
                    let said = crate::redact::redact(reason(&said)).into_owned();
                    let first = *offline.get_or_insert_with(std::time::Instant::now);
                    let kept = landing_ref(&what);
                    self.base().set_ref(&kept, &landing)?;
                    waits += 1;
                    let wait = UNREACHABLE.wait(waits);
                    let waited_enough = first.elapsed() >= OFFLINE_WAIT;
                    if !waited_enough {
                        let detail = format!(
                            "{what} waits for {label} ({said}); trying again in {}ms",
                            wait.as_millis()
                        );
                        self.ui.log(&detail);
                        self.record(None, "push", "unreachable", &detail, Map::new())?;
                    }
                    if waited_enough
                        || self.wait(wait)?.is_some()
                        || self.interrupted.load(std::sync::atomic::Ordering::SeqCst)
                    {
                        return Err(RemoteError::Waiting {
                            task: what,
                            remote: label,
                            said,
                            kept,
                        }
                        .into());
                    }
                    continue;
                }
            };
            offline = None;
            waits = 0;
            if stuck >= attempts {
                let why = format!(
                    "refused {stuck} times in a row with nothing landed in between (last: {})",
                    crate::redact::redact(&said)
                );
                return Err(self.stop_landing(what, label, &landing, why));
            }
            let wait = REFUSED.wait(refused);
            let detail = format!(
                "the push of {what} to {label} was refused ({}); landing again on its new tip in {}ms",
                crate::redact::redact(&said),
                wait.as_millis()
            );
            self.ui.log(&detail);
            self.record(None, "push", "retry", &detail, Map::new())?;
            std::thread::sleep(wait);
            self.catch_up()?;
            if let Some((id, tip)) = task_ref
                && let Some(tip_now) = remote.synced(self.base())
                && remote.archived_at(self.base(), &tip_now, id)?
            {
                if self.base().descends_from(&tip_now, &landing)? {
                    return Ok(None);
                }
                return self
                    .orphan(&remote, id, tip.unwrap_or(&landing), &tip_now)
                    .map(Some);
            }
            match self.base().replay_landing(&landing)? {
                Squash::Merged(_) => {}
                // Nothing outside the queue files to merge (a block, a
                // split, a `ralph: queue` commit): those are the disk's,
                // merged already, committed again with the same message.
                Squash::Empty => {
                    let message = self.base().message_of(&landing)?;
                    self.base().commit_queue_files(&message)?;
                }
                Squash::Conflict(paths) => {
                    let why = format!(
                        "it conflicts with what landed meanwhile ({})",
                        crate::git::list_paths(&paths)
                    );
                    return Err(self.stop_landing(what, label, &landing, why));
                }
                Squash::Rejected(said) => {
                    let why = format!("a git hook refused it on the new tip: {said}");
                    return Err(self.stop_landing(what, label, &landing, why));
                }
            }
        }
    }
}

/// Where a task's landing ended up.
pub(super) enum Landed {
    /// On the base (and the remote, sharing the queue): its commit there,
    /// made again on the remote's new tip when another machine landed
    /// first.
    Here(Option<String>),
    /// Another machine landed the task first: this machine's work is kept
    /// under this ref.
    Orphaned(String),
}

impl Worker<'_> {
    /// After task `id` landed on the base (its squash commit `commit`, if
    /// any; `tip` its branch's tip): the shared queue's part, the landing
    /// published on the remote with the task's claim released. Alone,
    /// nothing to do.
    pub(super) fn after_landing(
        &mut self,
        id: &crate::task::TaskId,
        tip: Option<String>,
        commit: Option<String>,
    ) -> Result<Landed, Error> {
        if self.remote.is_none() {
            return Ok(Landed::Here(commit));
        }
        if let Some(kept) = self.publish(Some((id, tip)), true)? {
            return Ok(Landed::Orphaned(kept));
        }
        Ok(Landed::Here(match commit {
            Some(_) => Some(self.base().branch_tip(self.base().base())?.to_string()),
            None => None,
        }))
    }

    /// Another machine landed task `id` first (it took the claim over
    /// while this one was cut off): this machine's work, `commit`, is
    /// kept for a person under `refs/ralph/orphans/`, never landed a
    /// second time; the base goes back to the remote's tip `tip`.
    fn orphan(
        &mut self,
        remote: &Remote,
        id: &str,
        commit: &str,
        tip: &str,
    ) -> Result<String, Error> {
        let kept = remote.orphan(self.base(), id, commit)?;
        self.base().move_base_to(tip)?;
        self.clean = None;
        let detail = format!(
            "{id} was landed on {} by another machine first; this machine's work on it is kept under {kept} (`git fetch {} {kept}` to look at it)",
            remote.label(),
            remote.name
        );
        self.ui.log(&format!("warning: {detail}"));
        let task = crate::task::TaskId::parse(id).ok();
        let extra = fields(json!({"ref": kept}));
        self.record(task.as_ref(), "orphaned", "kept", &detail, extra)?;
        Ok(kept)
    }

    /// Claims `task` on the remote for pooled worker `number` before it
    /// is handed out: a stale claim of another machine is taken over, the
    /// task branch made at that machine's pushed work.
    pub(super) fn claim_shared(
        &mut self,
        remote: &Remote,
        task: &crate::task::Task,
        number: u32,
    ) -> Result<Pick, Error> {
        let id = task.id.as_str();
        let branch = crate::git::branch_name(self.repo.branch_prefix(), id, &task.title);
        Ok(match remote.claim(&self.repo, id, number, &branch)? {
            Claimed::Held => Pick::Go,
            Claimed::TookOver(from) => {
                let work = remote.taken_over_work(id);
                let from_work = match &work {
                    Some(work) if self.repo.find_task_branch(&task.id, &task.title)?.is_none() => {
                        self.repo.set_ref(&format!("refs/heads/{branch}"), work)?;
                        format!(", going on from its work ({})", &work[..work.len().min(10)])
                    }
                    _ => String::new(),
                };
                self.ui.line(&format!(
                    "{id}: {from}'s claim went unrenewed past remote.stale_after; taken over{from_work}"
                ));
                Pick::Go
            }
            Claimed::Taken(by) => {
                self.ui
                    .line(&format!("{id} is {by}'s: looking for another task"));
                Pick::Taken
            }
            Claimed::Offline(said) => {
                // Said once, at the read or the claim that failed first.
                if !said.is_empty() {
                    self.ui.line(&format!(
                        "warning: {} cannot be reached ({}): no task is claimed until it can",
                        remote.label(),
                        crate::redact::redact(reason(&said))
                    ));
                }
                Pick::Offline
            }
        })
    }

    /// A landing that cannot go on: kept under `refs/ralph/landing/<what>`,
    /// the run stopped with `why`.
    fn stop_landing(&self, what: String, remote: String, landing: &str, why: String) -> Error {
        let kept = landing_ref(&what);
        if let Err(err) = self.base().set_ref(&kept, landing) {
            return err.into();
        }
        RemoteError::Landing {
            task: what,
            remote,
            why,
            kept,
        }
        .into()
    }

    /// At the start of a run sharing its queue: the remote answers, the
    /// base has nothing it lacks (but a landing of this machine's a kill
    /// cut short, pushed now), and the first read of it.
    pub(super) fn join_remote(&mut self) -> Result<(), Error> {
        let remote = self.remote.clone().expect("a shared remote");
        let unreachable = |said: String| RemoteError::Unreachable {
            remote: remote.label(),
            said: crate::redact::redact(&said).into_owned(),
        };
        if let Some(said) = remote.fetch(&self.repo)? {
            return Err(unreachable(said).into());
        }
        let tracking = format!("refs/remotes/{}/{}", remote.name, remote.branch);
        let base = self.repo.base().to_owned();
        let local = self.repo.branch_tip(&base)?.to_string();
        if let (Some(tip), Some(sync)) = (self.repo.commit_of(&tracking), remote.synced(&self.repo))
            && !self.repo.descends_from(&tip, &sync)?
        {
            return Err(RemoteError::Rewritten {
                remote: remote.label(),
                sync: sync[..sync.len().min(7)].to_owned(),
            }
            .into());
        }
        if let Some(tip) = self.repo.commit_of(&tracking)
            && !self.repo.descends_from(&tip, &local)?
        {
            // One commit on the remote tip last merged: a landing a kill
            // (or a remote that stopped answering) kept from its push.
            let synced = remote.synced(&self.repo);
            let ours = synced.is_some() && self.repo.parent_of(&local) == synced;
            if !ours {
                return Err(RemoteError::NotReady {
                    problem: format!("the base {base} has commits {} lacks", remote.label()),
                    fix: format!("push them (`git push`), or move them to a branch and reset {base} to {}; ralph shares only what the remote has", remote.label()),
                }
                .into());
            }
            self.ui.line(&format!(
                "{base} has a landing the last run did not push: pushing it to {}",
                remote.label()
            ));
            let _ = self.publish(None, false)?;
        }
        if let Err(said) = self.tick_remote(&remote)? {
            return Err(unreachable(said).into());
        }
        self.ui.line(&format!(
            "sharing the queue through {} as machine {} ({})",
            remote.label(),
            &remote.machine.id[..8],
            remote.machine.host
        ));
        Ok(())
    }

    /// Reads the remote (merging its queue, moving the base) and renews
    /// this machine's claims. Call it holding the merge turn.
    pub(super) fn tick_remote(&mut self, remote: &Remote) -> Result<Result<(), String>, Error> {
        let was_offline = remote.seen().offline.is_some();
        let label = remote.label();
        match remote.tick(self.base(), &self.store)? {
            Ok(warnings) => {
                if was_offline {
                    self.ui.line(&format!("{label} answers again"));
                }
                for warning in warnings {
                    self.ui.line(&format!("warning: {label}: {warning}"));
                }
            }
            Err(said) => {
                if !was_offline {
                    self.ui.line(&format!(
                        "warning: {label} cannot be reached ({}): work goes on, nothing new is claimed",
                        crate::redact::redact(&said)
                    ));
                }
                return Ok(Err(said));
            }
        }
        for id in remote.beat(self.base())? {
            self.ui.line(&format!(
                "warning: the claim of {id} was taken over by another machine"
            ));
        }
        Ok(Ok(()))
    }

    /// Tasks added on this machine (`ralph task add`, a split with
    /// nothing to merge) reach the others in a `ralph: queue` commit when
    /// no landing is due; whether one was pushed. Call it holding the
    /// merge turn.
    pub(super) fn publish_queue(&mut self) -> Result<bool, Error> {
        let Some(remote) = self.remote.clone() else {
            return Ok(false);
        };
        let unpublished = |remote: &Remote, paths: &Paths| -> Vec<String> {
            let tasks =
                crate::files::own::read(paths.project(), &paths.tasks()).unwrap_or_default();
            let published = &remote.seen().published;
            let mut ids: Vec<String> = merge::ids(&tasks)
                .into_iter()
                .filter(|id| !published.contains(id))
                .collect();
            ids.sort();
            ids
        };
        if unpublished(&remote, &self.paths).is_empty() {
            return Ok(false);
        }
        self.catch_up()?;
        let ids = unpublished(&remote, &self.paths);
        if ids.is_empty() {
            return Ok(false);
        }
        let message = format!(
            "ralph: queue\n\nTasks from {}: {}\n",
            remote.machine.named(),
            ids.join(", ")
        );
        if self.base().commit_queue_files(&message)?.is_none() {
            return Ok(false);
        }
        let _ = self.publish(None, false)?;
        Ok(true)
    }
}

/// The queue shared with other machines through the remote, as a pool's
/// source: read at each heartbeat (and shortly before a claim), each task
/// claimed on the remote before it is handed out; with nothing to claim
/// while other machines hold tasks, the pool waits for what they land.
pub(super) struct SharedQueue {
    remote: Arc<Remote>,
    /// Tasks another machine won since the last read of the remote.
    taken: Vec<String>,
    /// Whether the pool said it waits for other machines.
    waiting: bool,
    /// Whether the pool looked at the remote again before deciding.
    looked_again: bool,
    /// The remote's tip and claims at the last look while waiting, and
    /// how many looks in a row found them so.
    quiet: (String, u64),
}

impl SharedQueue {
    pub(super) fn new(remote: Arc<Remote>) -> SharedQueue {
        SharedQueue {
            remote,
            taken: Vec::new(),
            waiting: false,
            looked_again: false,
            quiet: (String::new(), 0),
        }
    }

    /// Reads the remote, holding the merge turn (the read moves the base).
    fn tick(&mut self, pool: &mut Worker<'_>, hub: &Hub) -> Result<(), Error> {
        let _turn = hub.merge_turn();
        let _ = pool.tick_remote(&self.remote)?;
        self.taken.clear();
        Ok(())
    }
}

impl Source for SharedQueue {
    fn refresh(&mut self, pool: &mut Worker<'_>, hub: &Hub, claiming: bool) -> Result<(), Error> {
        let due = match claiming {
            true => Duration::from_millis(500),
            false => self.remote.settings.heartbeat,
        };
        if self.remote.older_than(due) {
            self.tick(pool, hub)?;
        }
        Ok(())
    }

    /// Only what the remote has and no other machine holds.
    fn claimable(&self, id: &str) -> bool {
        self.remote.claimable(id) && !self.taken.iter().any(|taken| taken == id)
    }

    fn claim(&mut self, pool: &mut Worker<'_>, task: &Task, number: u32) -> Result<Pick, Error> {
        let pick = pool.claim_shared(&self.remote, task, number)?;
        if pick == Pick::Taken {
            self.taken.push(task.id.to_string());
        }
        Ok(pick)
    }

    fn nothing_left(&mut self, pool: &mut Worker<'_>, hub: &Hub) -> Result<bool, Error> {
        let _turn = hub.merge_turn();
        pool.publish_queue()
    }

    /// While other machines hold tasks, what they land may make more work
    /// here: one fresh look first, then looks a second apart, doubling up
    /// to the heartbeat while the remote stays as it was (a landing or a
    /// claim starts them short again): the run ends soon after the last
    /// landing, and a long task costs a look per heartbeat.
    fn idle(&mut self, pool: &mut Worker<'_>, hub: &Hub) -> Result<Idle, Error> {
        if !self.looked_again {
            self.looked_again = true;
            self.tick(pool, hub)?;
            return Ok(Idle::LookAgain);
        }
        if !self.remote.others_working() && self.taken.is_empty() {
            return Ok(Idle::Done);
        }
        self.looked_again = false;
        let heartbeat = self.remote.settings.heartbeat;
        let moves = self.remote.moves(pool.base());
        self.quiet = match std::mem::take(&mut self.quiet) {
            (seen, looks) if seen == moves => (seen, looks + 1),
            _ => (moves, 1),
        };
        let wait = WAITING.wait(self.quiet.1).min(heartbeat);
        if !self.waiting {
            self.waiting = true;
            pool.ui.line(&format!(
                "nothing to claim here now: other machines hold tasks; looking at {} again within {}",
                self.remote.label(),
                crate::config::ShowDuration(heartbeat)
            ));
        }
        Ok(match pool.wait(wait)? {
            Some(end) => Idle::Ended(end),
            None => Idle::LookAgain,
        })
    }

    fn busy(&mut self) {
        self.waiting = false;
        self.looked_again = false;
    }
}
