//! The worker contract for orchestrators (contract version 1): a checked
//! `run-input.json`, and the files written to the out-dir: `plan.json`,
//! `progress.ndjson` and `result.json`. The schemas of all four are in
//! `docs/contract/`.

pub(crate) mod execute;
pub(crate) mod input;
pub(crate) mod output;
pub(crate) mod progress;

use std::path::Path;

use serde::{Deserialize, Serialize};

pub(crate) use input::{CONTRACT_VERSION, RunInput};

use crate::error::Error;
pub use crate::files::sha256_hex;
use crate::plan::Plan;
use output::{PLAN_FILE, PROGRESS_FILE, Progress, RESULT_FILE, ResultFile};

/// `plan.json`: the stories of a PRD, in the order they are worked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PlanFile {
    /// Always [`CONTRACT_VERSION`].
    pub contract_version: u64,
    /// The input's run id.
    pub run_id: String,
    /// The PRD as the input names it, and the SHA-256 of its bytes.
    pub prd: PrdRef,
    /// The stories, `S1`, `S2`, ... in plan order.
    pub stories: Vec<Story>,
}

/// Which PRD a plan was made from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PrdRef {
    /// `prd_path` of the input.
    pub path: String,
    /// Lowercase hex SHA-256 of the PRD's bytes.
    pub sha256: String,
}

/// One story: a leaf task of the plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Story {
    /// `S1`, `S2`, ... in plan order.
    pub id: String,
    /// The task's title.
    pub title: String,
    /// Stories that must be done first.
    pub deps: Vec<String>,
    /// What must hold when it is done.
    pub acceptance_criteria: Vec<String>,
    /// The files to focus on.
    pub file_focus: Vec<String>,
    /// Its own `Verify:` commands, then the input's `story_commands`.
    pub verification_commands: Vec<String>,
    /// Where in the PRD it comes from (`prds/auth.md#FR-3`).
    pub source: String,
}

impl PlanFile {
    /// The stories of `plan`: its leaves, numbered in plan order.
    pub(crate) fn new(input: &RunInput, plan: &Plan, prd_bytes: &[u8]) -> PlanFile {
        let leaves: Vec<usize> = (0..plan.tasks.len())
            .filter(|&index| plan.tasks[index].leaf)
            .collect();
        let story_id = |index: usize| {
            leaves
                .iter()
                .position(|&leaf| leaf == index)
                .map(|at| format!("S{}", at + 1))
        };
        let stories = leaves
            .iter()
            .enumerate()
            .map(|(at, &index)| {
                let task = &plan.tasks[index];
                let mut verification_commands = task.verify.clone();
                verification_commands.extend(input.story_commands.iter().cloned());
                Story {
                    id: format!("S{}", at + 1),
                    title: task.title.clone(),
                    deps: task.deps.iter().filter_map(|&dep| story_id(dep)).collect(),
                    acceptance_criteria: task.acceptance.clone(),
                    file_focus: task.files.clone(),
                    verification_commands,
                    source: task.source.clone(),
                }
            })
            .collect();
        PlanFile {
            contract_version: CONTRACT_VERSION,
            run_id: input.run_id.clone(),
            prd: PrdRef {
                path: input.prd_path.clone(),
                sha256: sha256_hex(prd_bytes),
            },
            stories,
        }
    }

    /// The file's text: pretty JSON and a final newline, the same bytes
    /// for the same plan.
    pub(crate) fn to_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a plan serializes");
        text.push('\n');
        text
    }
}

/// The run whose records `out_dir` holds: the one an execute started
/// there (`.ralph/contract-run.json`), else the one a result names, else
/// (with `plans`) the one planned there; `None` for a fresh folder.
fn owner(out_dir: &Path, plans: bool) -> Option<String> {
    let records = [crate::paths::CONTRACT_RUN_FILE, RESULT_FILE, PLAN_FILE];
    records[..if plans { 3 } else { 2 }]
        .iter()
        .filter_map(|name| std::fs::read_to_string(out_dir.join(name)).ok())
        .filter_map(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .find_map(|value| value.get("run_id")?.as_str().map(str::to_owned))
}

/// Refuses an out-dir holding the records of a run other than `run_id`
/// (with `plans`, its plan too): nothing of that run's is overwritten.
pub(crate) fn check_out_dir(out_dir: &Path, run_id: &str, plans: bool) -> Result<(), Error> {
    match owner(out_dir, plans) {
        Some(owner) if owner != run_id => Err(Error::Contract(format!(
            "{}: holds the files of run {owner:?}, not {run_id:?}; give this run a fresh --out-dir",
            out_dir.display()
        ))),
        _ => Ok(()),
    }
}

/// Writes a `result.json` saying the command was refused for `message`
/// (the input or the plan is wrong), and returns the error to report. An
/// out-dir holding another run's files keeps them: the error alone says it.
pub(crate) fn refuse(out_dir: &Path, run_id: Option<String>, message: String) -> Error {
    let owner = owner(out_dir, false);
    if owner.is_some() && owner != run_id {
        return Error::Contract(message);
    }
    match ResultFile::plan_failed(run_id, message.clone()).save(out_dir) {
        Ok(()) => Error::Contract(message),
        Err(source) => crate::files::at(out_dir.join(RESULT_FILE))(source),
    }
}

/// Reads and checks `run-input.json`, its repository included; a refusal
/// is written to `out_dir/result.json`.
pub(crate) fn read_input(input_path: &Path, out_dir: &Path) -> Result<RunInput, Error> {
    if out_dir.is_file() {
        return Err(Error::InTheWay {
            path: out_dir.to_owned(),
            what: "a file",
            need: "a folder (--out-dir)",
        });
    }
    let shown = input_path.display().to_string();
    let text = std::fs::read_to_string(input_path).map_err(|err| {
        refuse(
            out_dir,
            None,
            format!("{shown}: cannot read the input: {err}"),
        )
    })?;
    let input = input::parse(&text)
        .map_err(|problem| refuse(out_dir, None, format!("{shown}: {problem}")))?;
    if !input.repo_path.is_dir() {
        let folder = input.repo_path.display();
        return Err(refuse(
            out_dir,
            Some(input.run_id.clone()),
            format!("{shown}: $.repo_path: {folder} is not a folder"),
        ));
    }
    Ok(input)
}

/// `ralph plan --input INPUT --out-dir DIR`: checks the input, plans its
/// PRD, writes `DIR/plan.json` and a `plan` event to `DIR/progress.ndjson`.
/// Every failure writes `DIR/result.json` saying so, and is returned.
pub(crate) fn plan(input_path: &Path, out_dir: &Path, now: &str) -> Result<PlanFile, Error> {
    let shown = input_path.display().to_string();
    let input = read_input(input_path, out_dir)?;
    check_out_dir(out_dir, &input.run_id, true)?;
    let run_id = Some(input.run_id.clone());
    let fail = |run_id: Option<String>, message: String| refuse(out_dir, run_id, message);
    let prd_file = input.repo_path.join(&input.prd_path);
    let bytes = std::fs::read(&prd_file).map_err(|err| {
        let file = prd_file.display();
        fail(
            run_id.clone(),
            format!("{shown}: $.prd_path: cannot read {file}: {err}"),
        )
    })?;
    let plan = crate::plan::read(&input.prd_path, &input.prd_path, &bytes)
        .map_err(|err| fail(run_id.clone(), err.to_string()))?;
    let file = PlanFile::new(&input, &plan, &bytes);
    if file.stories.is_empty() {
        // `ralph execute` refuses a plan without a story: said here, first.
        return Err(fail(
            run_id,
            format!(
                "{}: no story to plan: every requirement is ticked done, or the document has none (docs/PLANNING.md)",
                input.prd_path
            ),
        ));
    }
    // A run executing here holds its plan: another one (the PRD changed
    // since) would not be the plan it works to.
    let started = std::fs::read_to_string(out_dir.join(crate::paths::CONTRACT_RUN_FILE))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok());
    if let Some(started) = started
        && started["plan_sha256"] != sha256_hex(file.to_text().as_bytes())
    {
        return Err(Error::Contract(format!(
            "{}: run {:?} is executing a plan made from other bytes of {}; keep that plan, or give a new run a fresh --out-dir",
            out_dir.display(),
            input.run_id,
            input.prd_path
        )));
    }
    let io = crate::files::at::<Error>;
    std::fs::create_dir_all(out_dir).map_err(io(out_dir.to_owned()))?;
    let plan_path = out_dir.join(PLAN_FILE);
    crate::files::write_atomic(&plan_path, file.to_text().as_bytes()).map_err(io(plan_path))?;
    let skipped: Vec<&str> = plan.skipped.iter().map(|s| s.source.as_str()).collect();
    Progress {
        timestamp: now.to_owned(),
        run_id: input.run_id.clone(),
        story_id: None,
        phase: "plan",
        attempt: None,
        status: "ok".to_owned(),
        context: serde_json::json!({
            "stories": file.stories.len(),
            "prd_sha256": file.prd.sha256,
            "skipped": skipped,
        }),
    }
    .append(out_dir)
    .map_err(io(out_dir.join(PROGRESS_FILE)))?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_is_the_standard_one() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
