//! `ralph demo`: a sample project run end to end by a scripted agent, and
//! `ralph demo-agent`, that agent.

use std::fmt::Write;
use std::path::PathBuf;

use clap::Args;

use super::{Context, Outcome};
use crate::config::Settings;
use crate::demo;
use crate::error::Error;
use crate::exit::Exit;
use crate::git::{self, Repo};
use crate::runner::{self, RunOptions};

/// Arguments of `ralph demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Folder for the sample project, new or empty [default: a new temporary folder]
    #[arg(value_name = "DIR")]
    pub folder: Option<PathBuf>,
    /// The global `--dir`, which the demo refuses: taken here (same id)
    /// so that clap does not list it in the demo's help.
    #[arg(long = "dir", value_name = "DIR", hide = true)]
    pub dir: Option<PathBuf>,
    /// The global `--json`, refused and hidden the same way.
    #[arg(long, hide = true)]
    pub json: bool,
}

/// Runs `ralph demo`.
pub(super) fn run(args: &DemoArgs, context: &Context) -> Result<Outcome, Error> {
    let folder = match &args.folder {
        Some(folder) => context.paths.join(folder),
        None => std::env::temp_dir().join(format!(
            "ralph-demo-{}",
            chrono::Utc::now().format("%Y%m%d-%H%M%S-%f")
        )),
    };
    let occupied = std::fs::read_dir(&folder)
        .map(|mut entries| entries.next().is_some())
        .unwrap_or(false);
    if occupied {
        return Err(crate::task::Error::Refused {
            message: format!(
                "{} is not empty; the demo makes its own project",
                folder.display()
            ),
            hint: Some("pass a new folder, or none for a temporary one".to_owned()),
        }
        .into());
    }
    let bin = std::env::current_exe().map_err(crate::files::at::<Error>(PathBuf::from("ralph")))?;
    let agent = format!(
        "{} demo-agent",
        shlex::try_quote(&bin.to_string_lossy()).map_err(|_| Error::from(
            crate::files::PathError::new(
                bin.clone(),
                std::io::Error::other("the path of ralph cannot be quoted")
            )
        ))?
    );
    let folder = crate::paths::Paths::new(folder);
    demo::create(&folder, &agent)?;
    crate::runner::ui::say(&format!(
        "ralph demo: a sample project in {}",
        folder.root().display()
    ));
    let options = RunOptions {
        settings: Settings::load(&folder)?,
        agent_cmd: None,
        once: false,
        stream: false,
        quiet: false,
        kill_grace: crate::agent::Limits::DEFAULT_GRACE,
        pr_branch: None,
        poll: None,
        sandbox: crate::runner::confine::Sandbox::Off,
    };
    let result = runner::run(&folder, &options, super::run::interrupt_flag())?;
    let repo = Repo::open(
        &folder,
        &git::Options {
            base_branch: Some(demo::BASE.to_owned()),
            ..git::Options::default()
        },
    )?;
    let mut out = String::new();
    let _ = writeln!(out, "\ngit log --oneline {}:", demo::BASE);
    for commit in repo.base_log(20)? {
        let _ = writeln!(out, "  {} {}", commit.id.short(), commit.subject);
    }
    let done = std::fs::read_to_string(folder.join(crate::paths::DONE_FILE)).unwrap_or_default();
    let _ = writeln!(out, "\ntasks-done.jsonl:");
    for line in done.lines() {
        let _ = writeln!(out, "  {line}");
    }
    let _ = write!(
        out,
        "\nLook next:\n  cd {}\n  cat ralph.log                    one line per iteration and per merge\n  {} status\n                                   the last run and its recent events\n  ls .ralph/prompts .ralph/logs    every prompt the agent got, and what it printed\n  git log refs/ralph/tasks/A.1     a task's full history before its squash\n",
        folder.root().display(),
        bin.display()
    );
    Ok(Outcome::print(out).with_exit(Some(result.status.exit())))
}

/// Runs one iteration of the scripted demo agent in the current project.
pub(super) fn agent(context: &Context) -> Result<Outcome, Error> {
    let (said, code) = demo::agent(&context.paths, &demo::AgentTurn::from_env())?;
    let exit = if code == 0 {
        Exit::Success
    } else {
        Exit::NothingToDo
    };
    Ok(Outcome::print(said).with_exit(Some(exit)))
}
