//! `ralph run`: the loop.

use std::fmt::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use clap::{Arg, Args};
use serde_json::json;

use super::{Context, Outcome, to_json};
use crate::agent;
use crate::config::{KEYS, PRESETS, Settings, parse_duration, parse_time_limit};
use crate::error::Error;
use crate::exit::Exit;
use crate::runner::{self, RunOptions};

/// Where settings come from, then each default from [`KEYS`] in lines of
/// 75 characters, then the exit codes: the text after `ralph run --help`'s
/// options.
fn after_help() -> String {
    let defaults = KEYS
        .iter()
        .map(|key| format!("{} {}", key.path, key.default));
    format!(
        "\
Settings come from config/ralph.yaml, then RALPH_<KEY> environment variables
(the key's path in capitals: RALPH_AGENT_TIMEOUT), then these flags. Defaults:
  {}
Exit codes: 0 drained or stopped, 10 work needs a person (blocked, budget
spent, verify.run failed), 20 transient failure (lock held, agent not
authenticated), 30 invalid input (tasks, roles, config, missing agent), 130
interrupted.",
        crate::text::pack(defaults, " · ", 75).join("\n  ")
    )
}

/// A flag's help, with the default of the setting it overrides.
fn with_default(arg: Arg) -> Arg {
    let long = arg.get_long().map(|long| format!("--{long}"));
    let Some(key) = KEYS
        .iter()
        .find(|key| key.flag.is_some() && key.flag == long.as_deref())
    else {
        return arg;
    };
    // A key's doc ends by saying what null means, when that is its default.
    let default = match key.doc.split_once("; null: ") {
        Some((_, null)) if key.default == "null" => format!("null: {null}"),
        _ => key.default.to_owned(),
    };
    let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
    arg.help(format!("{help} [default: {}, {default}]", key.path))
}

/// Arguments of `ralph run`; each flag that overrides a setting names it
/// in [`KEYS`], which adds the default to its help.
#[derive(Debug, Args)]
#[command(after_help = after_help(), mut_args = with_default)]
pub struct RunArgs {
    /// Agents working side by side, each on its own task in its own git worktree (1 too: the checkout stays on the base)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=crate::config::MAX_WORKERS))]
    pub workers: Option<u64>,
    /// Iterations for this run
    #[arg(long, value_name = "N")]
    pub max_iterations: Option<u64>,
    /// Wall-clock minutes for this run; it stops after the iteration that reaches them
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_run_minutes: Option<u64>,
    /// Wall-clock minutes a task's iterations may take, across runs, before it is blocked
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_task_minutes: Option<u64>,
    /// Agent preset
    #[arg(long, value_name = "PRESET", value_parser = clap::builder::PossibleValuesParser::new(PRESETS), conflicts_with = "agent_cmd")]
    pub agent: Option<String>,
    /// Custom agent command, split like a shell; {prompt_file} and {prompt} are substituted, otherwise the prompt goes to stdin
    #[arg(long, value_name = "CMD")]
    pub agent_cmd: Option<String>,
    /// Model passed with the preset's own flag
    #[arg(long, value_name = "M")]
    pub model: Option<String>,
    /// Time limit per iteration, like 20m or 90s
    #[arg(long, value_name = "DURATION", value_parser = parse_time_limit)]
    pub timeout: Option<Duration>,
    /// When the queue drains, add one final-review task over the whole run's work, at most twice a run
    #[arg(long)]
    pub final_review: bool,
    /// Share the queue with other machines through the base's upstream remote (docs/SCALE.md)
    #[arg(long)]
    pub remote: bool,
    /// Run a single iteration
    #[arg(long)]
    pub once: bool,
    /// Keep running when no task is workable: wait, look again, go on; .stop, `ralph stop` or a signal ends it
    #[arg(long, value_name = "INTERVAL", num_args = 0..=1, value_parser = parse_time_limit, conflicts_with = "once")]
    pub poll: Option<Option<Duration>>,
    /// Print what would happen (task, branch, role, prompt size, agent argv) and run nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Echo the agent's output to the terminal
    #[arg(long)]
    pub stream: bool,
    /// Print only the closing summary
    #[arg(long)]
    pub quiet: bool,
    /// With delivery: pr, the pull request's branch ralph/NAME [default: from the first task's top-level title]
    #[arg(long, value_name = "NAME")]
    pub pr_branch: Option<String>,
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// How many Ctrl-Cs or SIGTERMs have come.
static SIGNALS: AtomicUsize = AtomicUsize::new(0);

/// The flag a signal sets, with the handler installed. The first Ctrl-C or
/// SIGTERM stops the agent (SIGTERM, SIGKILL after the grace) and saves
/// state; a second kills the agent and any check now, and state is still
/// saved; a third ends ralph at once, for a run stuck elsewhere.
pub(super) fn interrupt_flag() -> &'static AtomicBool {
    let _ = ctrlc::set_handler(|| match SIGNALS.fetch_add(1, Ordering::SeqCst) {
        0 => {
            INTERRUPTED.store(true, Ordering::SeqCst);
            crate::runner::ui::say(&format!(
                "ralph: stopping: the agent gets {} to finish, then state is saved; interrupt again to kill it now",
                crate::config::ShowDuration(kill_grace())
            ));
        }
        1 => {
            agent::kill_live_groups();
            crate::runner::ui::say(
                "ralph: killed the agent; saving state (interrupt again to quit at once)",
            );
        }
        _ => std::process::exit(Exit::Interrupted as i32),
    });
    &INTERRUPTED
}

/// Runs `ralph run`.
pub(super) fn run(args: &RunArgs, context: &Context) -> Result<Outcome, Error> {
    let mut settings = Settings::load_with_env(&context.paths)?;
    settings.workers = args.workers.or(settings.workers);
    settings.max_iterations = args.max_iterations.unwrap_or(settings.max_iterations);
    settings.max_run_minutes = args.max_run_minutes.or(settings.max_run_minutes);
    settings.max_task_minutes = args.max_task_minutes.or(settings.max_task_minutes);
    settings.agent.model = args.model.clone().or(settings.agent.model);
    settings.agent.timeout = args.timeout.unwrap_or(settings.agent.timeout);
    settings.final_review |= args.final_review;
    settings.remote.enabled |= args.remote;
    if settings.remote.enabled {
        // Sharing the queue, a task lands by its push (docs/SCALE.md).
        settings.git.push = crate::config::Push::Never;
    }
    if let Some(preset) = &args.agent {
        settings.agent.preset = Some(preset.clone());
        settings.agent.command = None;
    }
    let settings_poll = settings.poll_interval;
    let sandbox = runner::confine::decide_here(&settings.sandbox)?;
    let options = RunOptions {
        settings,
        agent_cmd: args.agent_cmd.clone(),
        once: args.once,
        stream: args.stream,
        quiet: args.quiet,
        kill_grace: kill_grace(),
        pr_branch: args.pr_branch.clone(),
        poll: args.poll.map(|every| every.unwrap_or(settings_poll)),
        sandbox,
    };
    if args.dry_run {
        return dry_run(&options, context);
    }
    let result = runner::run(&context.paths, &options, interrupt_flag())?;
    let mut outcome = Outcome::default();
    if context.json {
        outcome.stdout = to_json(&result);
    }
    outcome.exit = Some(result.status.exit());
    Ok(outcome)
}

/// The grace between SIGTERM and SIGKILL; `RALPH_KILL_GRACE` shortens it (tests).
pub(super) fn kill_grace() -> Duration {
    std::env::var("RALPH_KILL_GRACE")
        .ok()
        .and_then(|text| parse_duration(&text).ok())
        .unwrap_or(agent::Limits::DEFAULT_GRACE)
}

fn dry_run(options: &RunOptions, context: &Context) -> Result<Outcome, Error> {
    let plan = runner::dry_run::plan(&context.paths, options)?;
    let (delivery, refused) = match plan.task {
        Some(_) => (
            runner::deliver::preview(&context.paths, options)?,
            runner::dry_run::refusals(&context.paths, options, plan.model.as_deref()),
        ),
        None => Default::default(),
    };
    let exit = (!refused.is_empty()).then_some(Exit::InvalidInput);
    // A run under way decides its own next step; this one is a guess.
    let live = crate::run_lock::live_holder(&context.paths).ok().flatten();
    if context.json {
        return Ok(Outcome::print(to_json(&json!({
            "live_run": live.as_ref().map(|h| json!({"pid": h.pid, "since": h.since, "run_id": h.run_id})),
            "task": plan.task,
            "title": plan.title,
            "branch": plan.branch,
            "role": plan.role,
            "prompt_bytes": plan.prompt_bytes,
            "agent": plan.argv,
            "sandbox": plan.confinement,
            "push": delivery.push,
            "pull_request": delivery.pull_request,
            "shared": options.settings.remote.enabled,
            "refused": refused,
        })))
        .with_exit(exit));
    }
    let mut out = String::new();
    if let Some(h) = &live {
        let _ = writeln!(
            out,
            "a run is under way (pid {}, since {}, run {}): it works the queue now, and its next step may not be this one",
            h.pid, h.since, h.run_id
        );
    }
    let Some(task) = &plan.task else {
        out.push_str("nothing to do: no workable task\n");
        return Ok(Outcome::print(out));
    };
    let _ = writeln!(out, "task:   {task} {}", crate::text::safe(&plan.title));
    let _ = writeln!(out, "branch: {}", plan.branch.as_deref().unwrap_or("-"));
    let _ = writeln!(out, "role:   {}", plan.role_why);
    let _ = writeln!(out, "prompt: {} bytes", plan.prompt_bytes);
    let _ = writeln!(
        out,
        "agent:  {} ({})",
        crate::text::safe(&plan.argv.join(" ")),
        plan.agent
    );
    match (&options.sandbox, &plan.confinement) {
        (runner::confine::Sandbox::On(jail), Some(confinement)) => {
            let version = &jail.version;
            for weaker in jail.weaker() {
                let _ = writeln!(out, "sandbox: weaker here: {weaker}");
            }
            let _ = writeln!(
                out,
                "sandbox: {version}, the agent's command line after:\n  {}",
                crate::text::safe(
                    &shlex::try_join(confinement.iter().map(String::as_str)).unwrap_or_default()
                )
            );
        }
        (runner::confine::Sandbox::Unavailable(why), _) => {
            let _ = writeln!(
                out,
                "sandbox: none, the agent runs unconfined: {}",
                crate::text::safe(why)
            );
        }
        _ => {
            let _ = writeln!(out, "sandbox: off");
        }
    }
    if let Some(push) = &delivery.push {
        let _ = writeln!(out, "push:   {}", crate::text::safe(push));
    }
    if options.settings.remote.enabled {
        let _ = writeln!(
            out,
            "shared: the queue goes through the base's upstream (claims and landings, docs/SCALE.md); the task above is the first this clone would try to claim, and this dry run read nothing from the remote"
        );
    }
    if let Some(command) = &delivery.pull_request {
        let _ = writeln!(
            out,
            "pull request, when the run ends: {}\n  (gh pr edit instead when one is open; a draft when the run ends unfinished)",
            crate::text::safe(command)
        );
    }
    for refusal in &refused {
        let _ = writeln!(out, "refused: {}", crate::text::safe(refusal));
    }
    // A run that would be refused exits as that run would.
    Ok(Outcome::print(out).with_exit(exit))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn each_flag_of_the_table_shows_its_default_in_the_help() {
        let mut cli = crate::cli::Cli::command();
        let run = cli.find_subcommand_mut("run").expect("ralph run");
        let help = run.render_help().to_string();
        for key in KEYS {
            let Some(flag) = key.flag else { continue };
            let line = (help.lines())
                .find(|line| line.trim_start().starts_with(&format!("{flag} ")))
                .unwrap_or_else(|| panic!("{} names {flag}, which ralph run lacks", key.path));
            let default = format!("[default: {}, {}", key.path, key.default);
            assert!(line.contains(&default), "{line}");
            assert!(help.contains(&format!(" {} {}", key.path, key.default)));
        }
    }
}
