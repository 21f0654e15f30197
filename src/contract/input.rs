//! `run-input.json`, contract version 1: read and checked field by field,
//! each problem named by its JSON path (`$.limits.story_max_attempts`).

use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::agent::Mode;
use crate::config::PRESETS;

/// The contract version this ralph reads and writes.
pub(crate) const CONTRACT_VERSION: u64 = 1;

/// A checked `run-input.json`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RunInput {
    /// The orchestrator's id for the run.
    pub run_id: String,
    /// The repository, an absolute path.
    pub repo_path: PathBuf,
    /// The PRD, relative to the repository (or absolute).
    pub prd_path: String,
    /// The branch the working branch was cut from.
    pub base_branch: String,
    /// The branch the stories' squash commits go to.
    pub working_branch: String,
    /// Attempt and time budgets.
    pub limits: Limits,
    /// Commands run per story before its merge.
    pub story_commands: Vec<String>,
    /// Commands run once at the end.
    pub run_commands: Vec<String>,
    /// How the agent carries a story across attempts; the agent's
    /// backend must offer it (`ralph execute` checks).
    pub mode: Mode,
    /// A preset name or a model, when given.
    pub model_hint: Option<String>,
}

/// `limits` of the input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Limits {
    /// Attempts per story (`max_iterations_per_task`).
    pub story_max_attempts: u64,
    /// Attempts in the whole run (`max_iterations`).
    pub run_max_attempts: u64,
    /// Minutes per story (`max_task_minutes`).
    pub story_timeout_minutes: u64,
    /// Minutes for the run (`max_run_minutes`).
    pub run_timeout_minutes: u64,
}

/// A problem with the input: where (a JSON path) and what.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Problem {
    /// `$` for the whole file, `$.limits.run_max_attempts` for a field.
    pub path: String,
    /// What is wrong and what is expected.
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

fn problem(path: &str, message: impl Into<String>) -> Problem {
    Problem {
        path: path.to_owned(),
        message: message.into(),
    }
}

/// Reads and checks the text of a `run-input.json`.
pub(crate) fn parse(text: &str) -> Result<RunInput, Problem> {
    let value: Value = serde_json::from_str(text).map_err(|err| {
        problem(
            "$",
            format!(
                "invalid JSON at line {} column {}: {}",
                err.line(),
                err.column(),
                crate::text::without_position(&err.to_string())
            ),
        )
    })?;
    let root = object(&value, "$")?;
    only(
        root,
        "$",
        &[
            "contract_version",
            "run_id",
            "repo_path",
            "prd_path",
            "base_branch",
            "working_branch",
            "limits",
            "verification",
            "agent",
        ],
    )?;
    match root.get("contract_version") {
        Some(Value::Number(n)) if n.as_u64() == Some(CONTRACT_VERSION) => {}
        Some(other) => {
            return Err(problem(
                "$.contract_version",
                format!("must be {CONTRACT_VERSION} (the version this ralph reads), not {other}"),
            ));
        }
        None => return Err(missing("$.contract_version")),
    }
    let run_id = string(root, "$", "run_id")?;
    if !run_id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        || run_id.starts_with('.')
    {
        return Err(problem(
            "$.run_id",
            format!(
                "{run_id:?} must be letters, digits, '-', '_' or '.' (it names files), not starting with '.'"
            ),
        ));
    }
    let repo_path = PathBuf::from(string(root, "$", "repo_path")?);
    if !repo_path.is_absolute() {
        return Err(problem(
            "$.repo_path",
            format!(
                "{:?} must be an absolute path",
                repo_path.display().to_string()
            ),
        ));
    }
    let prd_path = string(root, "$", "prd_path")?;
    let base_branch = branch(root, "base_branch")?;
    let working_branch = branch(root, "working_branch")?;

    let limits_value = root.get("limits").ok_or_else(|| missing("$.limits"))?;
    let limits_map = object(limits_value, "$.limits")?;
    let names = [
        "story_max_attempts",
        "run_max_attempts",
        "story_timeout_minutes",
        "run_timeout_minutes",
    ];
    only(limits_map, "$.limits", &names)?;
    let count = |name: &str| -> Result<u64, Problem> {
        let path = format!("$.limits.{name}");
        match limits_map.get(name) {
            Some(Value::Number(n)) if n.as_u64().is_some_and(|n| n > 0) => {
                Ok(n.as_u64().expect("checked"))
            }
            Some(other) => Err(problem(
                &path,
                format!("must be a whole number above 0, not {other}"),
            )),
            None => Err(missing(&path)),
        }
    };
    let limits = Limits {
        story_max_attempts: count(names[0])?,
        run_max_attempts: count(names[1])?,
        story_timeout_minutes: count(names[2])?,
        run_timeout_minutes: count(names[3])?,
    };

    let verification = root
        .get("verification")
        .ok_or_else(|| missing("$.verification"))?;
    let verification = object(verification, "$.verification")?;
    only(
        verification,
        "$.verification",
        &["story_commands", "run_commands"],
    )?;
    let commands = |name: &str| -> Result<Vec<String>, Problem> {
        let path = format!("$.verification.{name}");
        let items = match verification.get(name) {
            Some(Value::Array(items)) => items,
            Some(other) => {
                return Err(problem(
                    &path,
                    format!("must be an array of command strings, not {other}"),
                ));
            }
            None => return Err(missing(&path)),
        };
        items
            .iter()
            .enumerate()
            .map(|(at, item)| match item {
                Value::String(command) if !command.trim().is_empty() => Ok(command.clone()),
                other => Err(problem(
                    &format!("{path}[{at}]"),
                    format!("must be a non-empty command string, not {other}"),
                )),
            })
            .collect()
    };
    let story_commands = commands("story_commands")?;
    let run_commands = commands("run_commands")?;

    let agent = root.get("agent").ok_or_else(|| missing("$.agent"))?;
    let agent = object(agent, "$.agent")?;
    only(agent, "$.agent", &["mode", "model_hint"])?;
    let name = string(agent, "$.agent", "mode")?;
    let Some(mode) = Mode::named(&name) else {
        let modes: Vec<&str> = Mode::ALL.iter().map(|mode| mode.as_str()).collect();
        return Err(problem(
            "$.agent.mode",
            format!("{name:?} is not a mode; the modes are {}", modes.join(", ")),
        ));
    };
    let model_hint = match agent.get("model_hint") {
        None | Some(Value::Null) => None,
        Some(Value::String(hint)) if !hint.trim().is_empty() => Some(hint.clone()),
        Some(other) => {
            return Err(problem(
                "$.agent.model_hint",
                format!(
                    "must be a preset name ({}) or a model, not {other}",
                    PRESETS.join(", ")
                ),
            ));
        }
    };
    Ok(RunInput {
        run_id,
        repo_path,
        prd_path,
        base_branch,
        working_branch,
        limits,
        story_commands,
        run_commands,
        mode,
        model_hint,
    })
}

fn missing(path: &str) -> Problem {
    problem(
        path,
        "missing; docs/contract/run-input.schema.json lists every field",
    )
}

fn object<'a>(value: &'a Value, path: &str) -> Result<&'a Map<String, Value>, Problem> {
    value
        .as_object()
        .ok_or_else(|| problem(path, format!("must be an object, not {value}")))
}

/// Refuses fields outside `known`, naming the first.
fn only(map: &Map<String, Value>, path: &str, known: &[&str]) -> Result<(), Problem> {
    match map.keys().find(|key| !known.contains(&key.as_str())) {
        Some(key) => Err(problem(
            &format!("{path}.{key}"),
            format!("unknown field; the fields here are {}", known.join(", ")),
        )),
        None => Ok(()),
    }
}

fn string(map: &Map<String, Value>, path: &str, key: &str) -> Result<String, Problem> {
    let path = format!("{path}.{key}");
    match map.get(key) {
        Some(Value::String(text)) if !text.trim().is_empty() => Ok(text.clone()),
        Some(other) => Err(problem(
            &path,
            format!("must be a non-empty string, not {other}"),
        )),
        None => Err(missing(&path)),
    }
}

fn branch(map: &Map<String, Value>, key: &str) -> Result<String, Problem> {
    let name = string(map, "$", key)?;
    let bad = name.starts_with(['-', '/', '.'])
        || name.ends_with(['/', '.'])
        || name.ends_with(".lock")
        || name.contains("..")
        || name.contains("//")
        || name.contains("@{")
        || name
            .chars()
            .any(|c| c.is_ascii_control() || " ~^:?*[\\".contains(c));
    if bad {
        return Err(problem(
            &format!("$.{key}"),
            format!("{name:?} is not a valid git branch name"),
        ));
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = r#"{
      "contract_version": 1,
      "run_id": "run_20260213_abc123",
      "repo_path": "/abs/path/to/repo",
      "prd_path": "prds/003-example-feature.md",
      "base_branch": "main",
      "working_branch": "feature/example",
      "limits": {"story_max_attempts": 4, "run_max_attempts": 20, "story_timeout_minutes": 20, "run_timeout_minutes": 180},
      "verification": {"story_commands": ["npm test -- tests/auth.test.ts"], "run_commands": ["npm run lint", "npm test"]},
      "agent": {"mode": "ralph_fresh", "model_hint": "opencode"}
    }"#;

    #[test]
    fn the_issues_example_reads() {
        let input = parse(VALID).unwrap();
        assert_eq!(input.run_id, "run_20260213_abc123");
        assert_eq!(input.limits.run_timeout_minutes, 180);
        assert_eq!(input.run_commands, ["npm run lint", "npm test"]);
        assert_eq!(input.model_hint.as_deref(), Some("opencode"));
    }

    #[test]
    fn each_problem_names_its_json_path() {
        let with = |from: &str, to: &str| {
            assert!(VALID.contains(from), "{from}");
            parse(&VALID.replacen(from, to, 1)).unwrap_err().to_string()
        };
        assert_eq!(
            with(r#""contract_version": 1"#, r#""contract_version": 2"#),
            "$.contract_version: must be 1 (the version this ralph reads), not 2"
        );
        assert_eq!(
            with(r#""story_max_attempts": 4"#, r#""story_max_attempts": 0"#),
            "$.limits.story_max_attempts: must be a whole number above 0, not 0"
        );
        assert_eq!(
            with(r#""mode": "ralph_fresh""#, r#""mode": "session""#),
            "$.agent.mode: \"session\" is not a mode; the modes are ralph_fresh, session_loop, single_pass"
        );
        assert_eq!(
            with(r#""npm run lint", "#, r#""npm run lint", 3, "#),
            "$.verification.run_commands[1]: must be a non-empty command string, not 3"
        );
        assert_eq!(
            with(
                r#""repo_path": "/abs/path/to/repo""#,
                r#""repo_path": "repo""#
            ),
            "$.repo_path: \"repo\" must be an absolute path"
        );
        assert_eq!(
            with(r#""run_id": "run_20260213_abc123""#, r#""run_id": "../up""#),
            "$.run_id: \"../up\" must be letters, digits, '-', '_' or '.' (it names files), not starting with '.'"
        );
        assert_eq!(
            with(r#""model_hint": "opencode""#, r#""model_hint": 7"#),
            format!(
                "$.agent.model_hint: must be a preset name ({}) or a model, not 7",
                crate::config::PRESETS.join(", ")
            )
        );
        assert_eq!(
            with(
                r#""working_branch": "feature/example""#,
                r#""working_branch": "a b""#
            ),
            "$.working_branch: \"a b\" is not a valid git branch name"
        );
        assert_eq!(
            with(
                r#""base_branch": "main","#,
                r#""base_branch": "main", "extra": 1,"#
            ),
            "$.extra: unknown field; the fields here are contract_version, run_id, repo_path, prd_path, base_branch, working_branch, limits, verification, agent"
        );
        assert_eq!(
            with(r#""prd_path": "prds/003-example-feature.md","#, ""),
            "$.prd_path: missing; docs/contract/run-input.schema.json lists every field"
        );
        assert_eq!(
            parse("[1]").unwrap_err().to_string(),
            "$: must be an object, not [1]"
        );
    }
}
