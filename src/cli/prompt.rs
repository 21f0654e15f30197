//! `ralph prompt`: print the prompt the next iteration would get, and why.

use std::fmt::Write;

use clap::Args;
use serde_json::json;

use super::{Context, Outcome, current_task, to_json};
use crate::error::Error;
use crate::exit::Exit;
use crate::prompt;
use crate::roles;
use crate::runner;
use crate::task::{Store, TaskId};

/// Arguments of `ralph prompt`.
#[derive(Debug, Args)]
pub struct PromptArgs {
    /// Build the prompt for this task [default: the next task]
    #[arg(long, value_name = "ID")]
    pub task: Option<TaskId>,
}

/// Runs `ralph prompt`.
pub(super) fn run(args: &PromptArgs, context: &Context) -> Result<Outcome, Error> {
    let queue = Store::open(&context.paths).load()?;
    let Some(task) = current_task(&queue, args.task.as_ref())? else {
        return Ok(Outcome {
            stderr: "no workable task to build a prompt for; pass --task ID\n".to_owned(),
            exit: Some(Exit::NothingToDo),
            ..Outcome::default()
        });
    };
    let triggers = roles::load(&context.paths)?;
    let (state, iterations, measures) = runner::context::observe(&context.paths, task)?;
    let decision = triggers.choose(&runner::context::trigger_context(
        &context.paths,
        &queue,
        task,
        &state,
        iterations,
        &measures,
    ))?;
    let mut variables = runner::context::prompt_context(
        &context.paths,
        &queue,
        task,
        &decision,
        &state,
        iterations,
        measures.branch.as_deref(),
    );
    variables.review = runner::context::peek_review(&context.paths, &queue, task, &state);
    let text = prompt::build(&context.paths, &decision, &variables)?;
    let why = match &decision.fired {
        Some(fired) => format!(
            "role: {} (trigger {}: {})",
            fired.role, fired.number, fired.condition
        ),
        None => "role: none (no trigger is true)".to_owned(),
    };
    if context.json {
        return Ok(Outcome::print(to_json(&json!({
            "task": task.id.as_str(),
            "role": decision.fired.as_ref().map(|f| f.role.as_str()),
            "trigger": decision.fired.as_ref().map(|f| f.number),
            "bytes": text.len(),
            "prompt": text,
        }))));
    }
    let mut stderr = String::new();
    let _ = writeln!(
        stderr,
        "task: {} {}",
        task.id,
        super::text::safe(&task.title)
    );
    let _ = writeln!(stderr, "{why}");
    let _ = writeln!(stderr, "prompt: {} bytes", text.len());
    Ok(Outcome {
        stderr,
        ..Outcome::print(text)
    })
}
