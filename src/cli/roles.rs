//! `ralph roles check|which`: validate and debug the triggers.

use std::fmt::Write;

use clap::{Args, Subcommand};
use serde_json::{Map, Value, json};

use super::{Context, Outcome, current_task, to_json};
use crate::error::Error;
use crate::paths::ROLES_FILE;
use crate::roles::{self, TriggerContext};
use crate::task::{Store, TaskId};

/// The `ralph roles` subcommands.
#[derive(Debug, Subcommand)]
pub enum RolesCommand {
    /// Check config/roles.yaml: syntax, names, types and role files
    Check,
    /// Show which role the next iteration would get, and why
    Which(WhichArgs),
}

/// Arguments of `roles which`.
#[derive(Debug, Args)]
pub struct WhichArgs {
    /// Evaluate for this task [default: the next task]
    #[arg(long, value_name = "ID")]
    pub task: Option<TaskId>,
    /// Set a variable, e.g. branch_commits=7 or "iterations_since_role('documenter')=12" (repeatable)
    #[arg(long = "var", value_name = "NAME=VALUE")]
    pub vars: Vec<String>,
}

/// Runs one `ralph roles` command.
pub(super) fn run(command: &RolesCommand, context: &Context) -> Result<Outcome, Error> {
    match command {
        RolesCommand::Check => check(context),
        RolesCommand::Which(args) => which(args, context),
    }
}

fn check(context: &Context) -> Result<Outcome, Error> {
    let triggers = roles::load(&context.paths)?;
    let missing = !context.paths.roles_config().exists();
    if context.json {
        let list: Vec<Value> = triggers
            .list
            .iter()
            .map(|t| {
                json!({
                    "number": t.number,
                    "condition": t.condition,
                    "normalized": t.normalized,
                    "role": t.role,
                    "model": t.model,
                    "description": t.description,
                })
            })
            .collect();
        return Ok(Outcome::print(to_json(
            &json!({ "valid": true, "triggers": list }),
        )));
    }
    if missing {
        return Ok(Outcome::print(format!(
            "ok: no {ROLES_FILE}, so no triggers: every iteration runs without a role (`ralph init` writes the defaults)\n"
        )));
    }
    let mut out = String::new();
    for trigger in &triggers.list {
        let model = trigger
            .model
            .as_deref()
            .map(|m| format!(" (model {m})"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "trigger {}: {} -> {}{model}",
            trigger.number, trigger.condition, trigger.role
        );
    }
    let _ = writeln!(out, "ok: {} triggers", triggers.list.len());
    Ok(Outcome::print(out))
}

fn which(args: &WhichArgs, context: &Context) -> Result<Outcome, Error> {
    let triggers = roles::load(&context.paths)?;
    let queue = Store::open(&context.paths).load()?;
    let task = current_task(&queue, args.task.as_ref())?;
    let mut trigger_context = match task {
        Some(task) => {
            let (state, iterations, measures) =
                crate::runner::context::observe(&context.paths, task)?;
            crate::runner::context::trigger_context(
                &context.paths,
                &queue,
                task,
                &state,
                iterations,
                &measures,
            )
        }
        None => TriggerContext::default(),
    };
    for assignment in &args.vars {
        trigger_context
            .set(assignment)
            .map_err(roles::Error::Override)?;
    }
    let decision = triggers.choose(&trigger_context)?;
    let mut outcome = Outcome::default();
    if task.is_none() {
        outcome.stderr =
            "note: no current task; task variables are empty unless set with --var\n".to_owned();
    }
    if context.json {
        let mut values = Map::new();
        for (name, value) in &decision.reads {
            values.insert(name.clone(), value_json(value));
        }
        let evaluated: Vec<Value> = decision
            .evaluated
            .iter()
            .map(|(number, result)| json!({ "trigger": number, "result": result }))
            .collect();
        let fired = decision.fired.as_ref();
        outcome.stdout = to_json(&json!({
            "task": task.map(|t| t.id.as_str()),
            "role": fired.map(|f| f.role.as_str()),
            "trigger": fired.map(|f| f.number),
            "condition": fired.map(|f| f.condition.as_str()),
            "model": fired.and_then(|f| f.model.as_deref()),
            "evaluated": evaluated,
            "values": values,
        }));
        return Ok(outcome);
    }
    let out = &mut outcome.stdout;
    if let Some(task) = task {
        let _ = writeln!(out, "task: {} {}", task.id, super::text::safe(&task.title));
    }
    for (number, result) in &decision.evaluated {
        let condition = &triggers.list[number - 1].condition;
        let _ = writeln!(out, "trigger {number}: {:5}  {condition}", result);
    }
    match &decision.fired {
        Some(fired) => {
            let model = fired
                .model
                .as_deref()
                .map(|m| format!(", model {m}"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "role: {} (trigger {}: {}{model})",
                fired.role, fired.number, fired.condition
            );
        }
        None => {
            let _ = writeln!(out, "role: none (no trigger is true)");
        }
    }
    if !decision.reads.is_empty() {
        let _ = writeln!(out, "values read:");
        for (name, value) in &decision.reads {
            let _ = writeln!(
                out,
                "  {name} = {}",
                super::text::safe(&value_json(value).to_string())
            );
        }
    }
    Ok(outcome)
}

fn value_json(value: &evalexpr::Value) -> Value {
    match value {
        evalexpr::Value::String(text) => Value::String(text.clone()),
        evalexpr::Value::Int(n) => Value::from(*n),
        evalexpr::Value::Float(f) => Value::from(*f),
        evalexpr::Value::Boolean(b) => Value::Bool(*b),
        other => Value::String(other.to_string()),
    }
}
