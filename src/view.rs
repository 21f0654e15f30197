//! What a run looks like from its files, read without any lock, each
//! again only when its `Stamp` changed: the state and each worker's, the
//! result, the events from where the last read ended, the shared queue's
//! claims and landings, the run lock's holder. `ralph status` reads it
//! once, `ralph top` as it changes; both only render it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::events::{Appended, EventLog, Offset};
use crate::files::{Stamp, own};
use crate::git::remote::Claim;
use crate::paths::Paths;
use crate::result::RunResult;
use crate::run_lock::Holder;
use crate::state::{State, StateFile, TaskProgress};

/// A parallel worker: its task (its worktree's name) and the state its
/// engine keeps in the task's worktree.
pub(crate) struct Worker {
    /// The task.
    pub task: String,
    /// Its state, as [`StateFile::peek`] reads it.
    pub state: State,
}

impl Worker {
    /// Its progress on its task.
    pub(crate) fn progress(&self) -> TaskProgress {
        (self.state.tasks.get(&self.task).cloned()).unwrap_or_default()
    }
}

/// What this clone knows of the machines sharing its queue: its own id,
/// the claims as the last fetch saw them and its landings waiting for a
/// push.
#[derive(PartialEq)]
pub(crate) struct Shared {
    /// This machine's id.
    pub machine: String,
    /// Every machine's claims, as last fetched.
    pub claims: Vec<Claim>,
    /// The tasks whose landing waits for its push.
    pub landings: Vec<String>,
}

/// A run's files as last read.
pub(crate) struct Run {
    /// The project's paths.
    pub paths: Paths,
    seen: HashMap<PathBuf, Option<Stamp>>,
    events: Offset,
    /// `.ralph/state.json`.
    pub state: State,
    /// The workers with a worktree under `.ralph/worktrees/`, in task order.
    pub workers: Vec<Worker>,
    /// `.ralph/result.json`.
    pub result: Option<RunResult>,
    /// The shared queue; `None` for a clone that never shared it.
    pub shared: Option<Shared>,
}

impl Run {
    /// The run of the project at `paths`; nothing is read yet.
    pub(crate) fn new(paths: Paths) -> Run {
        Run {
            paths,
            seen: HashMap::new(),
            events: Offset::default(),
            state: State::default(),
            workers: Vec::new(),
            result: None,
            shared: None,
        }
    }

    /// Whether `path` changed since this asked last (or is asked first).
    pub(crate) fn changed(&mut self, path: &Path) -> bool {
        let now = Stamp::of(path).ok();
        self.seen.insert(path.to_owned(), now) != Some(now)
    }

    /// Reads again the state, the workers', the result and the shared
    /// queue where they changed, and says whether any did.
    pub(crate) fn read(&mut self) -> bool {
        let paths = self.paths.clone();
        let mut changed = false;
        if self.changed(&paths.state()) {
            changed = true;
            self.state = StateFile::open(&paths).peek();
        }
        if self.changed(&paths.result()) {
            changed = true;
            self.result = RunResult::read(&paths);
        }
        let mut before: HashMap<String, State> = (self.workers.drain(..))
            .map(|worker| (worker.task, worker.state))
            .collect();
        for (task, root) in worker_roots(&paths) {
            let fresh = self.changed(&root.state());
            let state = match before.remove(&task) {
                Some(state) if !fresh => state,
                _ => {
                    changed = true;
                    StateFile::open(&root).peek()
                }
            };
            self.workers.push(Worker { task, state });
        }
        let shared = shared(&paths);
        changed |= !before.is_empty() || shared != self.shared;
        self.shared = shared;
        changed
    }

    /// The events appended since the last call: all of them at first,
    /// and again when the file was replaced or cut (`restarted`).
    /// The events of the log's last `bytes` (see [`EventLog::recent`]);
    /// [`Run::events`] then reads what follows.
    pub(crate) fn recent_events(&mut self, bytes: u64) -> std::io::Result<Appended> {
        let read = EventLog::open(&self.paths).recent(bytes);
        self.events = read.as_ref().map_or(Offset::default(), |read| read.next);
        read
    }

    pub(crate) fn events(&mut self) -> std::io::Result<Appended> {
        let read = EventLog::open(&self.paths).read_from(self.events);
        self.events = read.as_ref().map_or(Offset::default(), |read| read.next);
        read
    }
}

/// The run holding the project's run lock (the OS lock probed for an
/// instant, which a starting run waits out), when it has not written its
/// result: how `ralph status` and `ralph top` both judge a run live.
pub(crate) fn live(paths: &Paths, result: Option<&RunResult>) -> Option<Holder> {
    let holder = match crate::run_lock::live_holder(paths) {
        // The OS lock says it, whoever has the pid now.
        Ok(holder) => holder?,
        // A lock file this user may not open for writing (a look from
        // another account): its holder's process tells instead.
        Err(_) => {
            let bytes = own::read(paths.project(), &paths.run_lock()).ok()?;
            let holder: Holder = serde_json::from_slice(&bytes).ok()?;
            crate::platform::alive(holder.pid).then_some(holder)?
        }
    };
    let ended = result.is_some_and(|result| result.run_id == holder.run_id);
    (!ended).then_some(holder)
}

fn shared(paths: &Paths) -> Option<Shared> {
    let machine = crate::machine::Machine::known(paths)?;
    let repo = crate::git::Repo::open_without_base(paths, &Default::default()).ok()?;
    Some(Shared {
        machine: machine.id,
        claims: repo.seen_claims().unwrap_or_default(),
        landings: (repo
            .refs_under(&crate::git::remote::landing_ref(""))
            .unwrap_or_default())
        .into_iter()
        .map(|(name, _)| name)
        .collect(),
    })
}

/// The task and paths of each worker with a worktree under
/// `.ralph/worktrees/`, in task order.
fn worker_roots(paths: &Paths) -> Vec<(String, Paths)> {
    // A project in a subfolder of its repository is in the same subfolder
    // of each worktree, and its worker's state is there.
    let project = paths.project();
    let top = project.ancestors().find(|dir| dir.join(".git").exists());
    let inner = top.and_then(|top| project.strip_prefix(top).ok());
    let mut workers: Vec<(String, Paths)> = (std::fs::read_dir(paths.worktrees()).into_iter())
        .flatten()
        .flatten()
        .filter(|entry| entry.path().join(".git").exists())
        .filter_map(|entry| {
            let task = entry.file_name().to_str()?.to_owned();
            let root = entry.path().join(inner.unwrap_or(Path::new("")));
            Some((task, paths.in_worktree(root)))
        })
        .collect();
    workers.sort_by(|a, b| a.0.cmp(&b.0));
    workers
}
