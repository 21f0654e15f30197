//! `ralph init`: make a folder ready for ralph.

use std::fmt::Write;

use clap::Args;
use serde_json::json;

use super::{Context, Outcome, to_json};
use crate::config::PRESETS;
use crate::error::Error;
use crate::init::{Action, init};

/// Arguments of `ralph init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Replace the shipped defaults that exist (never tasks or learnings)
    #[arg(long)]
    pub force: bool,
    /// Agent preset to write into config/ralph.yaml [default: claude]
    #[arg(long, value_name = "PRESET", value_parser = clap::builder::PossibleValuesParser::new(PRESETS))]
    pub agent: Option<String>,
}

/// Runs `ralph init` in the folder named by `--dir`, or the current one.
pub fn run(args: &InitArgs, context: &Context) -> Result<Outcome, Error> {
    let report =
        init(&context.paths, args.force, args.agent.as_deref()).map_err(|source| Error::Io {
            path: context.paths.root().to_owned(),
            source,
        })?;
    let mut outcome = Outcome::default();
    let settings_kept = report.files.iter().any(|(path, action)| {
        *path == "config/ralph.yaml" && matches!(action, Action::Kept | Action::KeptData)
    });
    if let (Some(agent), true) = (&args.agent, settings_kept) {
        let _ = writeln!(
            outcome.stderr,
            "note: config/ralph.yaml exists, so --agent {agent} was not written; set agent.preset there or pass --force"
        );
    }
    if !report.in_git {
        let _ = writeln!(
            outcome.stderr,
            "note: {} is not in a git repository yet; `ralph run` needs one: git init && git add -A && git commit -m start",
            context.paths.root().display()
        );
    }
    if context.json {
        let of = |wanted: &[Action]| -> Vec<&str> {
            report
                .files
                .iter()
                .filter(|(_, a)| wanted.contains(a))
                .map(|(p, _)| *p)
                .collect()
        };
        outcome.stdout = to_json(&json!({
            "created": of(&[Action::Created]),
            "replaced": of(&[Action::Replaced]),
            "kept": of(&[Action::Kept, Action::KeptData]),
            "gitignore_added": report.ignored,
            "git_repository": report.in_git,
        }));
        return Ok(outcome);
    }
    for (path, action) in &report.files {
        let line = match action {
            Action::Created => format!("created {path}"),
            Action::Replaced => format!("replaced {path}"),
            Action::Kept => format!("kept {path} (it exists; --force replaces it)"),
            Action::KeptData => {
                format!("kept {path} (it holds the project's own data; never replaced)")
            }
        };
        let _ = writeln!(outcome.stdout, "{line}");
    }
    if !report.ignored.is_empty() {
        let _ = writeln!(
            outcome.stdout,
            "added to .gitignore: {}",
            report.ignored.join(", ")
        );
    }
    Ok(outcome)
}
