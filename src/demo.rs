//! `ralph demo`: a sample project and a scripted agent (`ralph demo-agent`)
//! that shows the whole loop without a network or a model.

use crate::paths::Paths;
use std::io::Read;
use std::path::Path;

use crate::error::Error;
use crate::git::{self, Repo};
use crate::task::{Patch, Status, Store, TaskId};

/// The sample project's tasks (the same file as `examples/demo/tasks.jsonl`).
pub(crate) const TASKS: &str = include_str!("../examples/demo/tasks.jsonl");
/// The sample project's README.
pub(crate) const README: &str = include_str!("../examples/demo/README.md");
/// The base branch of the sample project.
pub(crate) const BASE: &str = "main";

/// Creates the sample project in the empty or missing folder `dir`: ralph's
/// defaults, the sample tasks, settings that run the demo agent `agent`
/// quickly, and a git repository with a first commit.
pub(crate) fn create(paths: &Paths, agent: &str) -> Result<(), Error> {
    let dir = paths.root();
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| Error::from(crate::files::PathError::new(path, source))
    };
    if dir.is_file() {
        return Err(Error::InTheWay {
            path: dir.to_owned(),
            what: "a file",
            need: "a folder",
        });
    }
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    crate::init::init(paths, false, None, &[], crate::init::Workflow::Classic)?;
    let settings = settings(agent);
    for (name, text) in [
        ("README.md", README),
        ("tasks.jsonl", TASKS),
        ("check.sh", CHECK),
        ("config/ralph.yaml", settings.as_str()),
    ] {
        let path = dir.join(name);
        crate::files::write_atomic(&path, text.as_bytes()).map_err(io(&path))?;
    }
    git::init_with_commit(dir, BASE, "start the greet project")?;
    Ok(())
}

/// The demo project's check (`verify.task`): every note the agent wrote
/// starts with a title line, so no task is merged on the agent's word.
const CHECK: &str = "#!/bin/sh\n# The demo's check, run before each merge: every note has a title line.\nfor note in work/*.md; do\n  head -n 1 \"$note\" | grep -q '^# ' || { echo \"$note has no title line\"; exit 1; }\ndone\n";

/// The shipped settings with the demo agent, its check and short waits.
fn settings(agent: &str) -> String {
    let command = serde_yaml::to_string(agent).expect("a string serializes");
    crate::init::SHIPPED
        .iter()
        .find(|file| file.path == "config/ralph.yaml")
        .expect("the settings are shipped")
        .text
        .replacen(
            "  command: null",
            &format!("  command: {}", command.trim()),
            1,
        )
        .replacen("  timeout: 20m", "  timeout: 1m", 1)
        .replacen("  task: []", "  task: [\"sh check.sh\"]", 1)
        .replacen("retry_backoff: 10s", "retry_backoff: 1s", 1)
        .replacen(
            "pause_between_iterations: 2s",
            "pause_between_iterations: 0ms",
            1,
        )
}

/// What the demo agent is told through the environment.
#[derive(Clone, Debug, Default)]
pub(crate) struct AgentTurn {
    /// `RALPH_TASK_ID`.
    pub task_id: String,
    /// `RALPH_TASK_TITLE`.
    pub title: String,
    /// `RALPH_ROLE` (empty without a role).
    pub role: String,
    /// `RALPH_TASK_ITERATION`.
    pub task_iteration: u64,
}

impl AgentTurn {
    /// Reads the turn from ralph's environment variables.
    pub(crate) fn from_env() -> AgentTurn {
        let var = |name: &str| std::env::var(name).unwrap_or_default();
        AgentTurn {
            task_id: var("RALPH_TASK_ID"),
            title: var("RALPH_TASK_TITLE"),
            role: var("RALPH_ROLE"),
            task_iteration: var("RALPH_TASK_ITERATION").parse().unwrap_or(1),
        }
    }
}

/// One iteration of the scripted agent in the project at `paths`: prints
/// what it does and returns the exit code.
pub(crate) fn agent(paths: &Paths, turn: &AgentTurn) -> Result<(String, i32), Error> {
    // Read the prompt like a real agent, though the script ignores it.
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    let id = TaskId::parse(&turn.task_id).map_err(|message| {
        crate::task::Error::refused(format!(
            "RALPH_TASK_ID: {message}; run the demo agent through `ralph demo`"
        ))
    })?;
    let store = Store::open(paths);
    let now = crate::clock::now();
    let set = |status| {
        store.apply(
            &Patch::SetStatus {
                id: id.clone(),
                status,
            },
            &now,
        )
    };
    if turn.role == "reviewer" {
        set(Status::Complete)?;
        return Ok((
            format!("reviewed {id}: the change does what the title says; marked complete\n"),
            0,
        ));
    }
    if turn.title.contains("docs") {
        let titles = vec![
            "write the usage section".to_owned(),
            "write the install section".to_owned(),
        ];
        store.apply(
            &Patch::Split {
                id: id.clone(),
                titles,
            },
            &now,
        )?;
        return Ok((
            format!("{id} is two steps: split it into a usage and an install section\n"),
            0,
        ));
    }
    if turn.title.contains("tests") && turn.task_iteration == 1 {
        return Ok((
            "running the tests...\nerror: test runner `greet_test.sh` not found\n".to_owned(),
            1,
        ));
    }
    let file = paths.join("work").join(format!("{id}.md"));
    let role = if turn.role.is_empty() {
        "no role"
    } else {
        turn.role.as_str()
    };
    let text = format!(
        "# {}\n\nDone by the demo agent on iteration {} of {id} ({role}).\n",
        turn.title, turn.task_iteration
    );
    std::fs::create_dir_all(file.parent().expect("work/ is a folder"))
        .map_err(|source| Error::from(crate::files::PathError::new(file.clone(), source)))?;
    crate::files::write_atomic(&file, text.as_bytes())
        .map_err(crate::files::at::<Error>(file.clone()))?;
    let repo = Repo::open(
        paths,
        &git::Options {
            base_branch: Some(BASE.to_owned()),
            ..git::Options::default()
        },
    )?;
    repo.commit_work(&turn.title)?;
    // The first task goes through a review; the others finish at once.
    let status = if turn.title.contains("greet function") {
        Status::Ready
    } else {
        Status::Complete
    };
    set(status)?;
    Ok((
        format!(
            "{id}: wrote work/{id}.md, committed \"{}\", marked {status}\n",
            turn.title
        ),
        0,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_tasks_are_valid_and_the_settings_parse() {
        let queue = crate::task::Queue::parse(TASKS.as_bytes(), b"").unwrap();
        assert_eq!(queue.next().unwrap().id.as_str(), "A.1");
        let settings = crate::config::Settings::parse(&settings("/opt/ralph demo-agent")).unwrap();
        assert_eq!(
            settings.agent.command.as_deref(),
            Some("/opt/ralph demo-agent")
        );
        assert_eq!(settings.pause_between_iterations, std::time::Duration::ZERO);
        assert_eq!(settings.retry_backoff, std::time::Duration::from_secs(1));
    }
}
