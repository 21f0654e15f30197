//! The command line: argument structs, dispatch, and printing results.

mod bench_gen;
mod demo;
mod doctor;
mod execute;
mod init;
mod merge_queue;
mod plan;
mod prompt;
mod report;
mod roles;
mod run;
mod status;
mod stop;
mod task;
mod top;
use crate::exit::Reportable;
use crate::paths::Paths;
use crate::text;

use std::fmt;
use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::error::{Error, Exit};

/// The help heading of the options every command takes, listed after a
/// command's own.
const GLOBAL: &str = "Global options";

/// ralph runs coding agents in a durable, file-based loop.
#[derive(Debug, Parser)]
#[command(name = "ralph", version, about, max_term_width = 100)]
pub struct Cli {
    /// Project folder [default: nearest folder up from here holding tasks.jsonl or .git]
    #[arg(long, global = true, value_name = "DIR", help_heading = GLOBAL)]
    pub dir: Option<PathBuf>,
    /// Print data as one JSON value
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub json: bool,
    /// Write debug tracing to stderr (same as RALPH_LOG=debug)
    #[arg(short, long, global = true, help_heading = GLOBAL)]
    pub verbose: bool,
    /// What to do
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write deterministic task files for scripts/bench.sh
    #[command(hide = true)]
    BenchGen(bench_gen::BenchGenArgs),
    /// Run a sample project end to end with a scripted agent (no network, no model)
    Demo(demo::DemoArgs),
    /// The demo's scripted agent (run by `ralph demo`)
    #[command(hide = true)]
    DemoAgent,
    /// Check this project: what `ralph run` would do, and what is missing (exit 10 on an error)
    Doctor(doctor::DoctorArgs),
    /// The worker contract: work a plan's stories on the working branch (docs/contract/)
    Execute(execute::ExecuteArgs),
    /// Create the files ralph needs in this folder (never overwrites without --force)
    Init(init::InitArgs),
    /// Git's merge driver for tasks.jsonl and tasks-done.jsonl: `ralph merge-queue %O %A %B %P` (docs/SCALE.md)
    MergeQueue(merge_queue::MergeQueueArgs),
    /// Turn a requirements document (PRD) into tasks, deterministically
    Plan(plan::PlanArgs),
    /// Print the prompt the next iteration would get, and why that role
    Prompt(prompt::PromptArgs),
    /// Write one self-contained HTML page of what a run did (.ralph/report.html)
    Report(report::ReportArgs),
    /// Check and debug the role triggers in config/roles.yaml
    #[command(subcommand)]
    Roles(roles::RolesCommand),
    /// Run the loop: claim tasks, run the agent, merge finished work
    Run(run::RunArgs),
    /// Show whether a run is live, its task and iteration, queue counts and recent events
    Status,
    /// Ask a running loop to stop between iterations (creates .stop)
    Stop,
    /// Read and change the task queue (tasks.jsonl, tasks-done.jsonl)
    #[command(subcommand)]
    Task(task::TaskCommand),
    /// Watch the run live: workers, queue, events (q quits; --once prints one frame)
    Top(top::TopArgs),
}

/// What a command produced: its output and how the process should exit.
#[derive(Debug, Default, PartialEq)]
pub struct Outcome {
    /// Data for stdout.
    pub stdout: String,
    /// Notes for stderr.
    pub stderr: String,
    /// How the command ended.
    pub exit: Option<Exit>,
}

impl Outcome {
    /// An outcome that prints `stdout` and succeeds.
    pub fn print(stdout: String) -> Outcome {
        Outcome {
            stdout,
            ..Outcome::default()
        }
    }

    /// This outcome, ending with `exit` when there is one.
    pub fn with_exit(self, exit: Option<Exit>) -> Outcome {
        Outcome { exit, ..self }
    }
}

/// What every command gets from the edge: the project paths and the clock.
#[derive(Debug, Clone)]
pub struct Context {
    /// The project paths.
    pub paths: Paths,
    /// The current time, RFC 3339 in UTC, for records written now.
    pub now: String,
    /// Whether to print JSON.
    pub json: bool,
    /// Whether this is an agent's command inside a run (`RALPH_RUN_ID` is
    /// set): text it writes to the queue is then masked like the logs.
    pub in_run: bool,
    /// The folder ralph was started in, which relative paths on the
    /// command line are relative to.
    pub cwd: PathBuf,
}

/// Parses the command line, runs the command, prints, and returns the exit code.
pub fn main() -> Exit {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return if err.use_stderr() {
                Exit::Usage
            } else {
                Exit::Success
            };
        }
    };
    if let Command::Demo(demo) = &cli.command
        && (cli.dir.is_some() || cli.json || demo.dir.is_some() || demo.json)
    {
        // A usage error, worded and coded as clap's own.
        let _ = <Cli as clap::CommandFactory>::command()
            .error(
                clap::error::ErrorKind::ArgumentConflict,
                "`ralph demo` takes neither --dir nor --json: name its folder as `ralph demo DIR`",
            )
            .print();
        return Exit::Usage;
    }
    let var = std::env::var_os(crate::trace::LOG_VAR);
    if let Some(warning) = crate::trace::init(cli.verbose, var) {
        write_quietly(&mut std::io::stderr(), &warning);
    }
    match run(cli) {
        Ok(outcome) => {
            write_quietly(&mut std::io::stdout(), &outcome.stdout);
            write_quietly(&mut std::io::stderr(), &outcome.stderr);
            outcome.exit.unwrap_or(Exit::Success)
        }
        Err(err) => {
            write_quietly(&mut std::io::stderr(), &format!("{}\n", Report(&err)));
            err.exit()
        }
    }
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<Outcome, Error> {
    let cwd = std::env::current_dir().map_err(crate::files::at::<Error>("."))?;
    // An agent of `ralph execute` works on the queue of the run's home.
    let project_dir = std::env::var_os("RALPH_PROJECT_DIR").map(PathBuf::from);
    let home = || crate::project::home_of_agent(project_dir.as_deref(), &cwd);
    let root = match (&cli.command, &cli.dir) {
        // init makes the folder it is run in (or --dir) a project, but not
        // a second one inside a project by accident.
        (Command::Init(_), None) => {
            let found = crate::project::find_root(None, &cwd)?;
            if found != cwd && found.join(crate::paths::TASKS_FILE).is_file() {
                return Err(Error::InsideProject {
                    dir: cwd,
                    project: found,
                });
            }
            cwd.clone()
        }
        (Command::BenchGen(_), None) => cwd.clone(),
        (_, None) => match home() {
            Some(home) => home,
            None => crate::project::find_root(None, &cwd)?,
        },
        (_, Some(dir)) => crate::project::find_root(Some(dir), &cwd)?,
    };
    // A run, or `.stop`, means nothing outside a project: refused with
    // nothing written. What makes a queue (`ralph task add`, `ralph
    // plan`) may start one in a plain folder, and says what it made.
    let outside = (!crate::project::is_project(&root)).then(|| present(&root));
    if outside.is_some() && matches!(cli.command, Command::Run(_) | Command::Stop) {
        return Err(Error::NoProject { dir: root });
    }
    let context = Context {
        paths: crate::paths::Paths::new(root),
        now: crate::clock::now(),
        json: cli.json,
        in_run: std::env::var_os("RALPH_RUN_ID").is_some(),
        cwd,
    };
    let makes_a_queue = matches!(cli.command, Command::Task(_) | Command::Plan(_));
    let outcome = match cli.command {
        Command::BenchGen(args) => bench_gen::run(&args, &context),
        Command::Demo(args) => demo::run(&args, &context),
        Command::DemoAgent => demo::agent(&context),
        Command::Doctor(args) => doctor::run(&args, &context),
        Command::Execute(args) => execute::run(&args, &context),
        Command::Init(args) => init::run(&args, &context),
        Command::Plan(args) => plan::run(&args, &context),
        Command::Prompt(args) => prompt::run(&args, &context),
        Command::Report(args) => report::run(&args, &context),
        Command::MergeQueue(args) => merge_queue::run(&args, &context),
        Command::Roles(command) => roles::run(&command, &context),
        Command::Run(args) => run::run(&args, &context),
        Command::Status => status::run(&context),
        Command::Top(args) => top::run(&args, &context),
        Command::Stop => stop::run(&context),
        Command::Task(command) => task::run(command, &context),
    };
    let mut outcome = outcome?;
    if let Some(before) = outside.filter(|_| makes_a_queue) {
        outcome
            .stderr
            .push_str(&made_outside(context.paths.project(), &before));
    }
    Ok(outcome)
}

/// The files a command may make in a folder that is no project.
const MADE_OUTSIDE: [&str; 2] = [crate::paths::TASKS_FILE, crate::paths::RUNTIME_DIR];

/// Which of [`MADE_OUTSIDE`] are in `root`.
fn present(root: &std::path::Path) -> Vec<&'static str> {
    (MADE_OUTSIDE.into_iter())
        .filter(|name| root.join(name).exists())
        .collect()
}

/// What a command run outside a project made there (`made`, of those
/// that were not there before it ran: `before`), said with where.
fn made_outside(root: &std::path::Path, before: &[&str]) -> String {
    let made: Vec<&str> = (present(root).into_iter())
        .filter(|name| !before.contains(name))
        .collect();
    if made.is_empty() {
        return String::new();
    }
    format!(
        "note: made {} in {}, which was no project (no tasks.jsonl in it or above, no git repository); if you meant your project, remove {} and run the command there\n",
        made.join(" and "),
        root.display(),
        if made.len() == 1 { "it" } else { "them" },
    )
}

/// The task a command is about: `id` when given (it must be in
/// `tasks.jsonl`), otherwise the task the loop works on next.
fn current_task<'q>(
    queue: &'q crate::task::Queue,
    id: Option<&crate::task::TaskId>,
) -> Result<Option<&'q crate::task::Task>, Error> {
    match id {
        Some(id) => Ok(Some(live_task(queue, id)?)),
        None => Ok(queue.next()),
    }
}

/// Task `id` of `tasks.jsonl`, or the error that names it missing there.
fn live_task<'q>(
    queue: &'q crate::task::Queue,
    id: &crate::task::TaskId,
) -> Result<&'q crate::task::Task, crate::task::Error> {
    queue
        .get(id.as_str())
        .ok_or_else(|| crate::task::Error::NotFound {
            id: id.to_string(),
            place: crate::paths::TASKS_FILE,
        })
}

/// One JSON value on a line.
fn to_json(value: &impl serde::Serialize) -> String {
    let mut text = serde_json::to_string(value).expect("JSON values serialize");
    text.push('\n');
    text
}

/// Writes to a stream, ignoring a closed pipe (`ralph task list | head`).
fn write_quietly(stream: &mut dyn Write, text: &str) {
    let _ = stream
        .write_all(text.as_bytes())
        .and_then(|()| stream.flush());
}

/// Writes an error the way every command reports one: `error: ...` and an
/// optional `hint: ...` line.
pub struct Report<'a>(pub &'a Error);

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: {}", self.0)?;
        if let Some(hint) = self.0.hint() {
            write!(f, "\nhint: {hint}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}
