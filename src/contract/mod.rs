//! The worker contract for orchestrators (contract version 1): a checked
//! `run-input.json`, and the files written to the out-dir: `plan.json`,
//! `progress.ndjson` and `result.json`. The schemas of all four are in
//! `docs/contract/`.

pub mod input;
pub mod output;

use serde::Serialize;

pub use input::{CONTRACT_VERSION, RunInput};

use crate::plan::Plan;

/// `plan.json`: the stories of a PRD, in the order they are worked.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlanFile {
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
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PrdRef {
    /// `prd_path` of the input.
    pub path: String,
    /// Lowercase hex SHA-256 of the PRD's bytes.
    pub sha256: String,
}

/// One story: a leaf task of the plan.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Story {
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
    pub fn new(input: &RunInput, plan: &Plan, prd_bytes: &[u8]) -> PlanFile {
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
    pub fn to_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a plan serializes");
        text.push('\n');
        text
    }
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
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
