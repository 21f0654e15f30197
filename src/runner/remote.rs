//! Several machines sharing one queue through the base's remote
//! (docs/SCALE.md). The tick reads the remote (the base and every
//! machine's claims), merges its queue files into the disk's and moves
//! the project's checkout to its tip; a task is worked only under a claim
//! this machine created on the remote; every commit on the base reaches
//! the remote by a push with a lease on the tip it was built on, made
//! again on the new tip when another machine landed first.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::config::RemoteSettings;
use crate::error::Error;
use crate::exit::Exit;
use crate::git::Repo;
use crate::git::remote::{Claim, SEEN_CLAIMS, SEEN_WIP};
use crate::git::{DEADLINE, Fetched, Lease, Push, Pushed, RefUpdate, reason};
pub(crate) use crate::machine::Machine;
use crate::paths::Paths;
use crate::task::Store;
use crate::task::merge::{self, Sides};

/// Why a run sharing its queue cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// Something the shared queue needs is missing: one line saying what.
    #[error("remote.enabled: {problem}")]
    NotReady {
        /// What is missing.
        problem: String,
        /// What to do.
        fix: String,
    },
    /// The remote cannot be reached.
    #[error("remote.enabled: {remote} cannot be reached: {said}")]
    Unreachable {
        /// The remote and branch.
        remote: String,
        /// What git said.
        said: String,
    },
    /// A landing waited for a remote that cannot be reached, until the
    /// run was asked to stop or an hour went by.
    #[error("the landing of {task} waits for {remote}, which cannot be reached: {said}")]
    Waiting {
        /// The task (or the base, for a bookkeeping commit).
        task: String,
        /// The remote and branch.
        remote: String,
        /// What git said.
        said: String,
        /// The ref that keeps the landing.
        kept: String,
    },
    /// The base on the remote was rewritten (force-pushed).
    #[error(
        "{remote} was rewritten: {sync}, the last tip this machine merged, is no longer in its history"
    )]
    Rewritten {
        /// The remote and branch.
        remote: String,
        /// The last tip merged, short.
        sync: String,
    },
    /// An id was added here and on the remote as different tasks.
    #[error("tasks.jsonl: {} added here and on {remote} as different tasks", ids.join(", "))]
    Collision {
        /// The remote and branch.
        remote: String,
        /// The ids.
        ids: Vec<String>,
    },
    /// The remote's archive holds tasks no landing completed: records
    /// pushed by hand, which ralph does not take for done.
    #[error(
        "{remote}'s tasks-done.jsonl archives {} with no landing: no commit since the last read says `Completes:` for {}",
        ids.join(", "),
        if ids.len() == 1 { "it" } else { "them" }
    )]
    Unlanded {
        /// The remote and branch.
        remote: String,
        /// The ids.
        ids: Vec<String>,
    },
    /// A landing the remote refused could not be made again on its new
    /// tip, or was refused too often.
    #[error("the landing of {task} did not reach {remote}: {why}")]
    Landing {
        /// The task.
        task: String,
        /// The remote and branch.
        remote: String,
        /// What happened.
        why: String,
        /// The ref that keeps the landing.
        kept: String,
    },
}

impl crate::exit::Reportable for RemoteError {
    fn exit(&self) -> Exit {
        match self {
            RemoteError::NotReady { .. }
            | RemoteError::Collision { .. }
            | RemoteError::Unlanded { .. } => Exit::InvalidInput,
            RemoteError::Landing { .. } => Exit::NeedsPerson,
            RemoteError::Unreachable { .. }
            | RemoteError::Rewritten { .. }
            | RemoteError::Waiting { .. } => Exit::Transient,
        }
    }

    fn hint(&self) -> Option<String> {
        Some(match self {
            RemoteError::NotReady { fix, .. } => fix.clone(),
            RemoteError::Unreachable { .. } => {
                "check the remote (`git fetch`) and run again; nothing local was changed".to_owned()
            }
            RemoteError::Rewritten { remote, .. } => {
                let base = remote
                    .split_once('/')
                    .map_or(remote.as_str(), |(_, branch)| branch);
                format!(
                    "if that was intended, take the new {remote} as this clone's base and queue (`git reset --keep {remote}`, then `git checkout {remote} -- tasks.jsonl tasks-done.jsonl`), forget the old one (`git update-ref -d refs/ralph/sync/{base}`) and run again; nothing local was changed"
                )
            }
            RemoteError::Collision { ids, .. } => format!(
                "give your task{} another id (`ralph task validate` checks the file), then run again",
                if ids.len() == 1 { "" } else { "s" }
            ),
            RemoteError::Unlanded { remote, .. } => format!(
                "a task is done when its work lands, which ralph writes with `Completes: ID` in the landing; remove those records from tasks-done.jsonl on {remote} (a commit pushed there), or put the tasks back as pending, then run again; nothing local was changed"
            ),
            RemoteError::Waiting { kept, .. } => format!(
                "nothing is lost: the landing is kept under {kept}, and the next `ralph run` pushes it once the remote answers"
            ),
            RemoteError::Landing { kept, .. } => format!(
                "the squash is kept under {kept} and the work on its task branch; merge the base into the branch, then run again"
            ),
        })
    }
}

impl From<RemoteError> for Error {
    fn from(err: RemoteError) -> Error {
        super::RunError::Remote(err).into()
    }
}

/// A claim this machine holds.
#[derive(Clone, Debug)]
struct Held {
    /// The claim's commit on the remote (the last beat).
    commit: String,
    beat: u64,
    worker: u32,
    branch: String,
    renewed: Instant,
    /// The machine whose stale claim this one took over.
    taken_from: Option<String>,
    /// The task branch's tip last pushed to `refs/ralph/wip/<id>`.
    wip: Option<String>,
}

/// What the last tick saw, and the claims this machine holds.
#[derive(Debug, Default)]
pub(super) struct Known {
    held: BTreeMap<String, Held>,
    claims: Vec<Claim>,
    /// Ids in the fetched tip's `tasks.jsonl`: only these are claimed.
    pub(super) published: HashSet<String>,
    last_tick: Option<Instant>,
    /// Why the remote could not be read, while it cannot.
    pub(super) offline: Option<String>,
    /// Other machines' claims as this one saw them: unchanged over
    /// `remote.stale_after` of its own ticks, a claim is stale.
    observed: BTreeMap<String, Observed>,
}

/// One claim of another machine, as successive ticks saw it.
#[derive(Clone, Debug)]
struct Observed {
    commit: String,
    since: Instant,
    ticks: u32,
    /// The holder's heartbeat, from its claim.
    interval: Duration,
}

/// How a claim went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Claimed {
    /// Created now, or this machine's already (a run killed and started
    /// again).
    Held,
    /// Another machine holds it, or won the race for it.
    Taken(String),
    /// Another machine's stale claim, taken over.
    TookOver(String),
    /// The remote cannot be reached: nothing is claimed meanwhile.
    Offline(String),
}

/// The shared remote as this run sees it.
#[derive(Debug)]
pub(crate) struct Remote {
    /// The remote's name (`origin`).
    pub(super) name: String,
    /// The base's branch on the remote.
    pub(super) branch: String,
    /// The local base.
    base: String,
    pub(super) machine: Machine,
    run_id: String,
    pub(super) settings: RemoteSettings,
    seen: Mutex<Known>,
}

/// The tasks `b_done` archives and `o_done` did not, whose landing no
/// commit from `common` to `tip` names (`Completes: ID`, which a landing
/// writes for each task it archives, containers too): archive records
/// written by hand, not by ralph's landings. In id order.
fn unlanded(
    repo: &Repo,
    common: &str,
    tip: &str,
    o_done: &[u8],
    b_done: &[u8],
) -> Result<Vec<String>, Error> {
    let before = merge::ids(o_done);
    let mut new: Vec<String> = (merge::ids(b_done).into_iter())
        .filter(|id| !before.contains(id))
        .collect();
    new.sort();
    if new.is_empty() {
        return Ok(new);
    }
    let mut completed = HashSet::new();
    for commit in repo.commits_since(common, tip)?.unwrap_or_default() {
        let message = repo.message_of(&commit)?;
        completed.extend((message.lines()).filter_map(|line| {
            line.strip_prefix("Completes: ")
                .map(str::trim)
                .map(str::to_owned)
        }));
    }
    Ok(new
        .into_iter()
        .filter(|id| !completed.contains(id))
        .collect())
}

/// The remote ref of a claim.
pub(super) fn claim_ref(id: &str) -> String {
    format!("refs/ralph/claims/{id}")
}

/// Where the last fetch keeps a claim locally.
pub(super) fn seen_ref(id: &str) -> String {
    format!("{}{id}", SEEN_CLAIMS)
}

/// The remote ref of a task's work in progress.
pub(super) fn wip_ref(id: &str) -> String {
    format!("refs/ralph/wip/{id}")
}

/// Where the last fetch keeps a task's work in progress locally.
pub(super) fn seen_wip_ref(id: &str) -> String {
    format!("{}{id}", SEEN_WIP)
}

impl Remote {
    /// The shared remote of a run on `repo`'s base: checks what sharing
    /// needs (an upstream, local delivery, the queue in the checkout).
    pub(super) fn open(
        paths: &Paths,
        repo: &Repo,
        settings: &crate::config::Settings,
        run_id: &str,
    ) -> Result<Remote, Error> {
        let not_ready = |problem: String, fix: String| RemoteError::NotReady { problem, fix };
        let base = repo.base().to_owned();
        let Some(upstream) = repo.upstream(repo.base()) else {
            return Err(not_ready(
                format!("the base {base} has no upstream to share the queue through"),
                format!("set one (`git push -u origin {base}`, or `git branch --set-upstream-to=origin/{base} {base}`), then run again"),
            )
            .into());
        };
        if settings.delivery == crate::config::Delivery::Pr {
            return Err(not_ready(
                "delivery: pr cannot be shared between machines".to_owned(),
                "set delivery: local in config/ralph.yaml, or remote.enabled: false".to_owned(),
            )
            .into());
        }
        if !paths.queue_in_checkout() {
            return Err(not_ready(
                "the queue files are outside the repository's checkout".to_owned(),
                "keep tasks.jsonl and tasks-done.jsonl in the project's checkout, committed on the base".to_owned(),
            )
            .into());
        }
        Ok(Remote {
            name: upstream.remote,
            branch: upstream.branch,
            base,
            machine: Machine::of(paths)?,
            run_id: run_id.to_owned(),
            settings: settings.remote.clone(),
            seen: Mutex::new(Known::default()),
        })
    }

    pub(super) fn seen(&self) -> MutexGuard<'_, Known> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `origin/main`, as people name it.
    pub(super) fn label(&self) -> String {
        format!("{}/{}", self.name, self.branch)
    }

    /// The local ref holding the remote tip last merged into the disk's
    /// queue files.
    pub(super) fn sync_ref(&self) -> String {
        format!("refs/ralph/sync/{}", self.base)
    }

    /// Fetches the base and every machine's claims and work in progress;
    /// the first line git said when the remote cannot be reached.
    pub(super) fn fetch(&self, repo: &Repo) -> Result<Option<String>, Error> {
        let claims = format!("+refs/ralph/claims/*:{SEEN_CLAIMS}*");
        let also = [claims, format!("+refs/ralph/wip/*:{SEEN_WIP}*")];
        let fetched = repo.fetch(&self.name, &self.branch, &also, DEADLINE)?;
        Ok(match fetched {
            Fetched::Ok => None,
            Fetched::Failed { said, .. } => Some(reason(&said).to_owned()),
        })
    }

    /// Pushes `updates` to the remote as `how` asks.
    pub(super) fn push(
        &self,
        repo: &Repo,
        updates: &[RefUpdate],
        how: Push,
    ) -> Result<Pushed, Error> {
        Ok(repo.push(&self.name, updates, how, DEADLINE)?)
    }

    /// The remote tip the base was last moved to.
    pub(super) fn synced(&self, repo: &Repo) -> Option<String> {
        repo.commit_of(&self.sync_ref())
    }

    /// Whether the last tick is older than `age`.
    pub(super) fn older_than(&self, age: Duration) -> bool {
        self.seen().last_tick.is_none_or(|at| at.elapsed() >= age)
    }

    /// Reads the remote: fetches the base and the claims, stops if the
    /// base was rewritten, merges its queue files into the disk's, moves
    /// the checkout (on the base) to its tip. `Ok(Err(said))`: the remote
    /// cannot be reached now. Call it holding the merge turn.
    pub(super) fn tick(
        &self,
        repo: &Repo,
        store: &Store,
    ) -> Result<Result<Vec<String>, String>, Error> {
        if let Some(said) = self.fetch(repo)? {
            let mut seen = self.seen();
            seen.last_tick = Some(Instant::now());
            seen.offline = Some(said.clone());
            return Ok(Err(said));
        }
        let tracking = format!("refs/remotes/{}/{}", self.name, self.branch);
        let Some(tip) = repo.commit_of(&tracking) else {
            return Err(RemoteError::NotReady {
                problem: format!("{} has no branch {}", self.name, self.branch),
                fix: format!(
                    "push the base there first (`git push -u {} {}`)",
                    self.name, self.base
                ),
            }
            .into());
        };
        let common = match self.synced(repo) {
            Some(sync) => {
                if !repo.descends_from(&tip, &sync)? {
                    return Err(RemoteError::Rewritten {
                        remote: self.label(),
                        sync: sync[..sync.len().min(7)].to_owned(),
                    }
                    .into());
                }
                sync
            }
            None => repo.branch_tip(&self.base)?.to_string(),
        };
        let (o_tasks, o_done) = repo.queue_files_at(&common)?;
        let (b_tasks, b_done) = repo.queue_files_at(&tip)?;
        let unlanded = unlanded(repo, &common, &tip, &o_done, &b_done)?;
        if !unlanded.is_empty() {
            return Err(RemoteError::Unlanded {
                remote: self.label(),
                ids: unlanded,
            }
            .into());
        }
        let merged = store.merge_in(
            Sides {
                tasks: &o_tasks,
                done: &o_done,
            },
            Sides {
                tasks: &b_tasks,
                done: &b_done,
            },
        )?;
        if !merged.collisions.is_empty() {
            return Err(RemoteError::Collision {
                remote: self.label(),
                ids: merged.collisions,
            }
            .into());
        }
        repo.move_base_to(&tip)?;
        repo.set_ref(&self.sync_ref(), &tip)?;
        let mut claims = repo.seen_claims()?;
        // A claim of a task the remote archived is a crash's leftover:
        // gone, with a lease on its value (any machine may).
        let archived = merge::ids(&b_done);
        for claim in claims.iter().filter(|claim| archived.contains(&claim.id)) {
            let update =
                RefUpdate::new(claim_ref(&claim.id), None, Lease::At(claim.commit.clone()));
            let _ = self.push(repo, &[update], Push::AtomicUnverified)?;
        }
        claims.retain(|claim| !archived.contains(&claim.id));
        for (id, commit) in repo.refs_under(SEEN_WIP)? {
            if archived.contains(&id) && !self.seen().held.contains_key(&id) {
                let update = RefUpdate::new(wip_ref(&id), None, Lease::At(commit));
                let _ = self.push(repo, &[update], Push::AtomicUnverified)?;
            }
        }
        let published = merge::ids(&b_tasks);
        let mut seen = self.seen();
        let now = Instant::now();
        let mut observed = BTreeMap::new();
        for claim in claims
            .iter()
            .filter(|claim| claim.machine != self.machine.id)
        {
            let interval = crate::config::parse_duration(&claim.interval).unwrap_or_default();
            let entry = match seen.observed.remove(&claim.id) {
                Some(old) if old.commit == claim.commit => Observed {
                    ticks: old.ticks + 1,
                    ..old
                },
                _ => Observed {
                    commit: claim.commit.clone(),
                    since: now,
                    ticks: 1,
                    interval,
                },
            };
            observed.insert(claim.id.clone(), entry);
        }
        seen.observed = observed;
        seen.claims = claims;
        seen.published = published;
        seen.last_tick = Some(Instant::now());
        seen.offline = None;
        Ok(Ok(merged.warnings))
    }

    /// Whether task `id` may be claimed here: it is in the remote's queue
    /// and no other machine holds it.
    pub(super) fn claimable(&self, id: &str) -> bool {
        let seen = self.seen();
        let free = seen
            .claims
            .iter()
            .all(|claim| claim.id != id || claim.machine == self.machine.id);
        // Cut off, nothing is claimed: the claim could not be made.
        let published = seen.published.contains(id) && seen.offline.is_none();
        drop(seen);
        published && (free || self.stale(id))
    }

    /// Whether this machine holds task `id`'s claim.
    pub(super) fn holds(&self, id: &str) -> bool {
        self.seen().held.contains_key(id)
    }

    /// Claims task `id` for `worker`, whose branch is `branch`: a claim
    /// commit pushed where no claim may exist yet. A claim of this
    /// machine's already there (a run killed and started again) is
    /// taken up.
    pub(super) fn claim(
        &self,
        repo: &Repo,
        id: &str,
        worker: u32,
        branch: &str,
    ) -> Result<Claimed, Error> {
        let found = self
            .seen()
            .claims
            .iter()
            .find(|claim| claim.id == id)
            .cloned();
        let held = Held {
            commit: String::new(),
            beat: 0,
            worker,
            branch: branch.to_owned(),
            renewed: Instant::now(),
            taken_from: None,
            wip: None,
        };
        if let Some(claim) = found {
            if claim.machine != self.machine.id {
                if !self.stale(id) {
                    return Ok(Claimed::Taken(claim.host));
                }
                return self.take_over(repo, &claim, worker, branch);
            }
            let taken_up = Held {
                commit: claim.commit,
                beat: claim.beat,
                wip: repo.commit_of(&seen_wip_ref(id)),
                ..held
            };
            self.seen().held.insert(id.to_owned(), taken_up);
            return Ok(Claimed::Held);
        }
        let commit = repo.claim_commit(&self.claim_message(id, &held), None)?;
        let update = RefUpdate::new(claim_ref(id), Some(commit.clone()), Lease::Absent);
        Ok(match self.push(repo, &[update], Push::AtomicUnverified)? {
            Pushed::Accepted { .. } => {
                repo.set_ref(&seen_ref(id), &commit)?;
                self.seen()
                    .held
                    .insert(id.to_owned(), Held { commit, ..held });
                Claimed::Held
            }
            Pushed::Rejected { .. } => Claimed::Taken("another machine".to_owned()),
            Pushed::Unreachable(said) => Claimed::Offline(said),
        })
    }

    /// Takes over `claim`, another machine's that stayed unchanged past
    /// `remote.stale_after`: a beat that is a child of its last, pushed
    /// with a lease on that one (the holder's renewal, or another
    /// machine's take-over, wins the race).
    fn take_over(
        &self,
        repo: &Repo,
        claim: &Claim,
        worker: u32,
        branch: &str,
    ) -> Result<Claimed, Error> {
        let held = Held {
            commit: String::new(),
            beat: claim.beat + 1,
            worker,
            branch: branch.to_owned(),
            renewed: Instant::now(),
            taken_from: Some(format!("{} ({})", claim.machine, claim.host)),
            // The dead machine's pushed work: the task goes on from it.
            wip: repo.commit_of(&seen_wip_ref(&claim.id)),
        };
        let message = self.claim_message(&claim.id, &held);
        let commit = repo.claim_commit(&message, Some(&claim.commit))?;
        let update = RefUpdate::new(
            claim_ref(&claim.id),
            Some(commit.clone()),
            Lease::At(claim.commit.clone()),
        );
        Ok(match self.push(repo, &[update], Push::AtomicUnverified)? {
            Pushed::Accepted { .. } => {
                repo.set_ref(&seen_ref(&claim.id), &commit)?;
                let mut seen = self.seen();
                seen.observed.remove(&claim.id);
                seen.held.insert(claim.id.clone(), Held { commit, ..held });
                Claimed::TookOver(claim.host.clone())
            }
            Pushed::Rejected { .. } => Claimed::Taken(claim.host.clone()),
            Pushed::Unreachable(said) => Claimed::Offline(said),
        })
    }

    /// Whether another machine's claim of `id` is stale: the same beat at
    /// this machine's ticks over `remote.stale_after` (at least three
    /// times the holder's heartbeat, and three ticks). Counted on this
    /// machine's clock only; a restarted run waits the whole time again.
    /// The heartbeat a claim states counts up to `stale_after` only: a
    /// claim written with an interval of years is stale in three times
    /// `stale_after` at most, not never.
    fn stale(&self, id: &str) -> bool {
        let seen = self.seen();
        let stale_after = self.settings.stale_after;
        seen.observed.get(id).is_some_and(|observed| {
            let after = stale_after.max(observed.interval.min(stale_after) * 3);
            observed.ticks >= 3 && observed.since.elapsed() >= after
        })
    }

    /// What a waiting machine watches on the remote: its tip and whose
    /// claims are on it. A change means work moved.
    pub(super) fn moves(&self, repo: &Repo) -> String {
        let mut claims: Vec<String> = (self.seen().claims.iter())
            .map(|claim| format!("{} {}", claim.id, claim.machine))
            .collect();
        claims.sort();
        format!("{:?} {}", self.synced(repo), claims.join(","))
    }

    /// Whether another machine holds a claim that is not stale: work it
    /// lands may make more tasks workable here.
    pub(super) fn others_working(&self) -> bool {
        let ids: Vec<String> = {
            let seen = self.seen();
            seen.claims
                .iter()
                .filter(|claim| claim.machine != self.machine.id)
                .map(|claim| claim.id.clone())
                .collect()
        };
        ids.iter().any(|id| !self.stale(id))
    }

    fn claim_message(&self, id: &str, held: &Held) -> String {
        format!(
            "ralph claim {id}\n\nMachine: {}\nWorker: {}\nRun: {}\nBranch: {}\nBeat: {}\nInterval: {}\n{}",
            self.machine.named(),
            held.worker,
            self.run_id,
            held.branch,
            held.beat,
            crate::config::ShowDuration(self.settings.heartbeat),
            held.taken_from
                .as_ref()
                .map_or(String::new(), |from| format!("Taken-over-from: {from}\n"))
        )
    }

    /// Renews the claims this machine holds whose last beat is a
    /// heartbeat old: each beat a child of the last, pushed with a lease
    /// on it. Returns the ids whose claim another machine took over.
    pub(super) fn beat(&self, repo: &Repo) -> Result<Vec<String>, Error> {
        let due: Vec<(String, Held)> = self
            .seen()
            .held
            .iter()
            .filter(|(_, held)| held.renewed.elapsed() >= self.settings.heartbeat)
            .map(|(id, held)| (id.clone(), held.clone()))
            .collect();
        let mut lost = Vec::new();
        for (id, held) in due {
            let next = Held {
                beat: held.beat + 1,
                renewed: Instant::now(),
                ..held.clone()
            };
            let commit = repo.claim_commit(&self.claim_message(&id, &next), Some(&held.commit))?;
            let mut updates = vec![RefUpdate::new(
                claim_ref(&id),
                Some(commit.clone()),
                Lease::At(held.commit.clone()),
            )];
            // The task branch's tip goes with the beat when it moved: a
            // machine that takes the task over goes on from it.
            let tip = repo.commit_of(&format!("refs/heads/{}", held.branch));
            if let Some(tip) = tip.as_ref().filter(|tip| held.wip.as_ref() != Some(*tip)) {
                updates.push(RefUpdate::new(
                    wip_ref(&id),
                    Some(tip.clone()),
                    held.wip.clone().map_or(Lease::Absent, Lease::At),
                ));
            }
            match self.push(repo, &updates, Push::AtomicUnverified)? {
                Pushed::Accepted { .. } => {
                    repo.set_ref(&seen_ref(&id), &commit)?;
                    let wip = tip.or(held.wip.clone());
                    if let Some(wip) = &wip {
                        repo.set_ref(&seen_wip_ref(&id), wip)?;
                    }
                    self.seen().held.insert(
                        id.clone(),
                        Held {
                            commit,
                            wip,
                            ..next
                        },
                    );
                }
                Pushed::Rejected { .. } => lost.push(id),
                // Tried again at the next heartbeat.
                Pushed::Unreachable(_) => {}
            }
        }
        Ok(lost)
    }

    /// The deletion of task `id`'s claim, with a lease on its last beat,
    /// when this machine holds it.
    pub(super) fn release(&self, id: &str) -> Vec<RefUpdate> {
        let seen = self.seen();
        let Some(held) = seen.held.get(id) else {
            return Vec::new();
        };
        let mut updates = vec![RefUpdate::new(
            claim_ref(id),
            None,
            Lease::At(held.commit.clone()),
        )];
        if let Some(wip) = &held.wip {
            updates.push(RefUpdate::new(wip_ref(id), None, Lease::At(wip.clone())));
        }
        updates
    }

    /// The dead machine's work a take-over of `id` goes on from, if it
    /// pushed any.
    pub(super) fn taken_over_work(&self, id: &str) -> Option<String> {
        self.seen().held.get(id).and_then(|held| held.wip.clone())
    }

    /// Forgets a claim released on the remote.
    pub(super) fn forget(&self, id: &str) {
        self.seen().held.remove(id);
    }

    /// Pushes the base's tip `landing`, built on `on` (the remote tip the
    /// base was last moved to), with a lease on `on`; with it the task's
    /// branch tip under `refs/ralph/tasks/<id>` (new) and the deletion of
    /// its claim when `release` and this machine holds it.
    pub(super) fn push_landing(
        &self,
        repo: &Repo,
        landing: &str,
        on: &str,
        task: Option<(&str, Option<&str>)>,
        release: bool,
    ) -> Result<Pushed, Error> {
        let mut updates = vec![RefUpdate::new(
            format!("refs/heads/{}", self.branch),
            Some(landing.to_owned()),
            Lease::At(on.to_owned()),
        )];
        if let Some((id, tip)) = task {
            if let Some(tip) = tip {
                // The task's history, replacing an older landing's of the
                // same id (a base rewound and the task worked again): the
                // archive check before each push keeps a landing unique.
                updates.push(RefUpdate::new(
                    crate::git::Repo::preserved_ref(id),
                    Some(tip.to_owned()),
                    Lease::Replace,
                ));
            }
            if release {
                updates.extend(self.release(id));
            }
        }
        let pushed = self.push(repo, &updates, Push::Atomic)?;
        if matches!(pushed, Pushed::Accepted { .. })
            && release
            && let Some((id, _)) = task
        {
            self.forget(id);
            repo.delete_ref(&seen_ref(id))?;
            repo.delete_ref(&seen_wip_ref(id))?;
        }
        Ok(pushed)
    }
}

impl Remote {
    /// Whether task `id` is in the archive of remote tip `tip`.
    pub(super) fn archived_at(&self, repo: &Repo, tip: &str, id: &str) -> Result<bool, Error> {
        let done = repo.file_at(tip, &repo.queue_file(crate::paths::DONE_FILE))?;
        Ok(merge::ids(&done).contains(id))
    }

    /// Keeps `commit`, work on task `id` that another machine's landing
    /// made moot, on the remote under `refs/ralph/orphans/<id>/<machine>-<n>`
    /// (a new ref, the next free `n`); returns the ref.
    pub(super) fn orphan(&self, repo: &Repo, id: &str, commit: &str) -> Result<String, Error> {
        let mut last = String::new();
        for n in 1..=20 {
            let name = format!("refs/ralph/orphans/{id}/{}-{n}", &self.machine.id[..8]);
            let update = RefUpdate::new(name.clone(), Some(commit.to_owned()), Lease::Absent);
            match self.push(repo, &[update], Push::AtomicUnverified)? {
                Pushed::Accepted { .. } => {
                    self.forget(id);
                    return Ok(name);
                }
                Pushed::Rejected { .. } => continue,
                Pushed::Unreachable(said) => last = reason(&said).to_owned(),
            }
        }
        // Kept here at least: the remote would not take it.
        let name = format!("refs/ralph/orphans/{id}/{}-local", &self.machine.id[..8]);
        repo.set_ref(&name, commit)?;
        tracing::warn!(%last, "an orphan kept locally only");
        Ok(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_stop_says_what_and_the_way_out_with_its_exit_code() {
        use crate::exit::Reportable;
        let remote = || "origin/main".to_owned();
        let cases = [
            (
                RemoteError::Collision {
                    remote: remote(),
                    ids: vec!["C".into()],
                },
                "tasks.jsonl: C added here and on origin/main as different tasks",
                "give your task another id (`ralph task validate` checks the file), then run again",
                Exit::InvalidInput,
            ),
            (
                RemoteError::Landing {
                    task: "A".into(),
                    remote: remote(),
                    why: "refused 8 times in a row with nothing landed in between (last: x)".into(),
                    kept: "refs/ralph/landing/A".into(),
                },
                "the landing of A did not reach origin/main: refused 8 times in a row with nothing landed in between (last: x)",
                "the squash is kept under refs/ralph/landing/A and the work on its task branch; merge the base into the branch, then run again",
                Exit::NeedsPerson,
            ),
            (
                RemoteError::Waiting {
                    task: "A".into(),
                    remote: remote(),
                    said: "ssh: connect to host fake port 22: Network is unreachable".into(),
                    kept: "refs/ralph/landing/A".into(),
                },
                "the landing of A waits for origin/main, which cannot be reached: ssh: connect to host fake port 22: Network is unreachable",
                "nothing is lost: the landing is kept under refs/ralph/landing/A, and the next `ralph run` pushes it once the remote answers",
                Exit::Transient,
            ),
            (
                RemoteError::Unreachable {
                    remote: remote(),
                    said: "fatal: no such repository".into(),
                },
                "remote.enabled: origin/main cannot be reached: fatal: no such repository",
                "check the remote (`git fetch`) and run again; nothing local was changed",
                Exit::Transient,
            ),
        ];
        for (err, message, hint, exit) in cases {
            assert_eq!(err.to_string(), message);
            assert_eq!(err.hint().as_deref(), Some(hint));
            assert_eq!(err.exit(), exit);
        }
    }

    #[test]
    fn a_machine_is_made_once_and_read_after() {
        let dir = assert_fs::TempDir::new().unwrap();
        let paths = Paths::new(dir.path());
        let made = Machine::of(&paths).unwrap();
        assert_eq!(made.id.len(), 32);
        assert!(made.id.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(Machine::of(&paths).unwrap(), made);
        let other = assert_fs::TempDir::new().unwrap();
        assert_ne!(Machine::of(&Paths::new(other.path())).unwrap().id, made.id);
    }
}
