//! `.ralph/state.json`: what the loop knows between iterations and across
//! runs, written atomically after every transition.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::files;
use crate::prompt::Evidence;

/// The loop's state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct State {
    /// Id of the run that wrote this state last.
    pub run_id: String,
    /// When that run started (RFC 3339).
    pub started: String,
    /// When the state was written (RFC 3339).
    pub updated: String,
    /// Iterations of that run.
    pub iteration: u64,
    /// Iterations across all runs; role history counts in these.
    pub total_iterations: u64,
    /// The task being worked on, if any.
    pub current_task: Option<String>,
    /// The role of the current or last iteration.
    pub role: Option<String>,
    /// The base branch of that run, so a run resumed on a task branch
    /// knows where to merge.
    pub base: Option<String>,
    /// What the loop was doing (`claim`, `agent`, `verify`, `merge`, ...).
    pub phase: String,
    /// For each role, `total_iterations` when it last ran.
    pub roles: BTreeMap<String, u64>,
    /// Progress per task id, kept across runs until the task is archived.
    pub tasks: BTreeMap<String, TaskProgress>,
    /// Failed iterations of that run by class.
    pub failures: BTreeMap<String, u64>,
}

/// What the loop remembers of one task.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TaskProgress {
    /// Iterations spent on the task, across runs.
    pub iterations: u64,
    /// Failed iterations in a row.
    pub consecutive_failures: u64,
    /// Iterations in a row without a new commit or file change.
    pub no_progress: u64,
    /// Whether the last iteration failed.
    pub last_failed: bool,
    /// Evidence of the last failure, for the next prompt.
    pub evidence: Option<Evidence>,
    /// When the task was claimed (RFC 3339).
    pub claimed: Option<String>,
    /// The task's branch.
    pub branch: Option<String>,
    /// The task's title when it was claimed (for messages when
    /// `tasks.jsonl` cannot be read).
    pub title: Option<String>,
}

impl State {
    /// Iterations since `role` last ran; this run's iterations if it never did.
    pub fn iterations_since_role(&self, role: &str) -> u64 {
        match self.roles.get(role) {
            Some(at) => self.total_iterations.saturating_sub(*at),
            None => self.iteration,
        }
    }

    /// Every role's count, for the trigger context.
    pub fn role_counts(&self) -> BTreeMap<String, i64> {
        self.roles
            .keys()
            .map(|role| (role.clone(), self.iterations_since_role(role) as i64))
            .collect()
    }
}

/// Reads and writes the state file of one project.
#[derive(Clone, Debug)]
pub struct StateFile {
    path: PathBuf,
}

/// What loading found.
#[derive(Clone, Debug, PartialEq)]
pub enum Loaded {
    /// No state yet.
    Fresh,
    /// The state as written.
    Found,
    /// The file did not parse; it was moved aside to the named file.
    Quarantined(PathBuf),
}

impl StateFile {
    /// The state file of the project at `root`.
    pub fn open(paths: &crate::paths::Paths) -> StateFile {
        StateFile {
            path: paths.state(),
        }
    }

    /// Reads the state. A file that does not parse (a hand edit, a disk
    /// fault) is moved aside rather than trusted or silently dropped.
    pub fn load(&self) -> std::io::Result<(State, Loaded)> {
        let bytes = files::read_or_empty(&self.path)?;
        if bytes.is_empty() {
            return Ok((State::default(), Loaded::Fresh));
        }
        match serde_json::from_slice(&bytes) {
            Ok(state) => Ok((state, Loaded::Found)),
            Err(_) => {
                let aside = self.path.with_extension("json.corrupt");
                std::fs::rename(&self.path, &aside)?;
                Ok((State::default(), Loaded::Quarantined(aside)))
            }
        }
    }

    /// Reads the state without changing anything: a missing or corrupt file
    /// reads as a fresh state (for `ralph status`, `prompt`, `--dry-run`).
    pub fn peek(&self) -> State {
        let bytes = files::read_or_empty(&self.path).unwrap_or_default();
        serde_json::from_slice(&bytes).unwrap_or_default()
    }

    /// Writes the state atomically.
    pub fn save(&self, state: &State) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut text = serde_json::to_string_pretty(state).expect("the state serializes");
        text.push('\n');
        let write = |file: &mut std::fs::File| {
            std::io::Write::write_all(file, text.as_bytes())?;
            crate::fault::crash_at("mid_state_write");
            Ok(())
        };
        files::write_atomic_with(&self.path, write)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_history_counts_across_runs() {
        let mut state = State {
            iteration: 2,
            total_iterations: 30,
            ..State::default()
        };
        assert_eq!(
            state.iterations_since_role("documenter"),
            2,
            "never ran: since the run started"
        );
        state.roles.insert("documenter".into(), 25);
        assert_eq!(state.iterations_since_role("documenter"), 5);
        assert_eq!(state.role_counts()["documenter"], 5);
    }

    #[test]
    fn saves_loads_and_quarantines() {
        let dir = assert_fs::TempDir::new().unwrap();
        let file = StateFile::open(&crate::paths::Paths::new(dir.path()));
        assert_eq!(file.load().unwrap().1, Loaded::Fresh);
        let mut state = State {
            run_id: "r1".into(),
            ..State::default()
        };
        state.tasks.entry("A".into()).or_default().iterations = 3;
        file.save(&state).unwrap();
        assert_eq!(file.load().unwrap().0, state);
        std::fs::write(dir.path().join(crate::paths::STATE_FILE), "{ torn").unwrap();
        let (fresh, loaded) = file.load().unwrap();
        assert_eq!(fresh, State::default());
        assert_eq!(
            loaded,
            Loaded::Quarantined(dir.path().join(".ralph/state.json.corrupt"))
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join(".ralph/state.json.corrupt")).unwrap(),
            "{ torn"
        );
    }
}
