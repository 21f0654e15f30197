//! `ralph init`: make a folder ready for ralph, with the checks its
//! project already runs; `ralph init --detect`: compare those with the
//! settings, and `--write` them there.

use std::fmt::Write;

use clap::Args;
use serde_json::json;

use super::{Context, Outcome, to_json};
use crate::config::{PRESETS, Settings, VerifySettings};
use crate::detect::{self, Check, WriteError};
use crate::error::Error;
use crate::init::{Action, init};
use crate::paths::SETTINGS_FILE;
use crate::text;

/// Arguments of `ralph init`.
#[derive(Debug, Args)]
#[command(after_help = "\
Checks: init looks at the project's files (Cargo.toml, package.json, pyproject.toml, go.mod, \
a Makefile, a justfile, CI files) for the commands its developers run, and writes them into a \
new config/ralph.yaml: tests into verify.task (before each merge), every check into verify.run \
(once, when the queue drains). ralph's docs/CONFIG.md, \"Checks found at init\", has the rules.")]
pub struct InitArgs {
    /// Replace the shipped defaults that exist (never tasks or learnings)
    #[arg(long)]
    pub force: bool,
    /// Agent preset to write into config/ralph.yaml [default: claude]
    #[arg(long, value_name = "PRESET", value_parser = clap::builder::PossibleValuesParser::new(PRESETS))]
    pub agent: Option<String>,
    /// Agent command line to write into config/ralph.yaml (agent.command), as `ralph run --agent-cmd` takes it
    #[arg(long, value_name = "CMD", conflicts_with = "agent")]
    pub agent_cmd: Option<String>,
    /// Look for no checks: a new config/ralph.yaml gets empty verify lists
    #[arg(long, conflicts_with = "detect")]
    pub no_detect: bool,
    /// Only report the checks found and the ones config/ralph.yaml has; create nothing
    #[arg(long, conflicts_with_all = ["force", "agent", "agent_cmd"])]
    pub detect: bool,
    /// With --detect: write the checks found into config/ralph.yaml's verify lists
    #[arg(long, requires = "detect")]
    pub write: bool,
    /// Also make `git merge` merge the queue files with `ralph merge-queue` (.gitattributes and this clone's git config; docs/SCALE.md)
    #[arg(long, conflicts_with = "detect")]
    pub remote: bool,
    /// Write this workflow's triggers and roles (docs/WORKFLOWS.md); existing files are kept unless --force
    #[arg(long, value_enum, default_value_t = crate::init::Workflow::Classic, conflicts_with = "detect")]
    pub workflow: crate::init::Workflow,
}

/// Runs `ralph init` in the folder named by `--dir`, or the current one.
pub(super) fn run(args: &InitArgs, context: &Context) -> Result<Outcome, Error> {
    if args.detect {
        return compare(args, context);
    }
    // Refused before anything is written.
    let in_git = (context.paths.root().ancestors()).any(|dir| dir.join(".git").exists());
    if args.remote && !in_git {
        return Err(remote_needs_git());
    }
    let checks = if args.no_detect {
        Vec::new()
    } else {
        detect::detect(context.paths.root())
    };
    let agent = match (&args.agent, &args.agent_cmd) {
        (Some(preset), _) => Some(crate::init::Agent::Preset(preset)),
        (None, Some(command)) => Some(crate::init::Agent::Command(command)),
        (None, None) => None,
    };
    let report = init(&context.paths, args.force, agent, &checks, args.workflow)?;
    let mut outcome = Outcome::default();
    let settings_kept = report.files.iter().any(|(path, action)| {
        *path == SETTINGS_FILE && matches!(action, Action::Kept | Action::KeptData)
    });
    if let (Some(agent), true) = (agent, settings_kept) {
        let (flag, key) = match agent {
            crate::init::Agent::Preset(preset) => (format!("--agent {preset}"), "agent.preset"),
            crate::init::Agent::Command(_) => ("--agent-cmd".to_owned(), "agent.command"),
        };
        let _ = writeln!(
            outcome.stderr,
            "note: config/ralph.yaml exists, so {flag} was not written; set {key} there"
        );
    }
    if settings_kept
        && !checks.is_empty()
        && configured(context)
            .ok()
            .flatten()
            .is_none_or(|(_, settings)| !has_checks(&settings.verify, &checks))
    {
        let _ = writeln!(
            outcome.stderr,
            "note: config/ralph.yaml exists, so the checks found were not written; `ralph init --detect --write` writes them"
        );
    }
    let kept: Vec<&str> = (report.files.iter())
        .filter(|(path, action)| {
            *action == Action::Kept && ["config/roles.yaml", SETTINGS_FILE].contains(path)
        })
        .map(|(path, _)| *path)
        .collect();
    if args.workflow != crate::init::Workflow::Classic && !kept.is_empty() {
        let _ = writeln!(
            outcome.stderr,
            "note: {} already {}, so the enhanced workflow did not replace {}; `ralph init --workflow enhanced --force` does",
            kept.join(" and "),
            if kept.len() == 1 { "exists" } else { "exist" },
            if kept.len() == 1 { "it" } else { "them" },
        );
    }
    if !report.in_git {
        let _ = writeln!(
            outcome.stderr,
            "note: {} is not in a git repository yet; `ralph run` needs one: git init && git add -A && git commit -m start",
            context.paths.root().display()
        );
    }
    let merge_driver = match args.remote {
        true => remote(context, report.in_git)?,
        false => Vec::new(),
    };
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
            "detected": detected_json(&checks),
            "checks_written": !settings_kept && !checks.is_empty(),
            "merge_driver": merge_driver,
        }));
        return Ok(outcome);
    }
    for line in &merge_driver {
        let _ = writeln!(outcome.stdout, "{line}");
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
    if !args.no_detect {
        outcome.stdout.push_str(&found(&checks));
    }
    Ok(outcome)
}

/// `ralph init --detect [--write]`: the checks found against the ones
/// `config/ralph.yaml` has, written there with `--write`.
fn compare(args: &InitArgs, context: &Context) -> Result<Outcome, Error> {
    let checks = detect::detect(context.paths.root());
    let configured = configured(context)?;
    let up_to_date = configured
        .as_ref()
        .is_some_and(|(_, settings)| has_checks(&settings.verify, &checks));
    let mut written = false;
    if args.write && !checks.is_empty() && !up_to_date {
        let Some((text, _)) = &configured else {
            return Err(WriteError::Missing.into());
        };
        // A leading byte order mark is kept, like every other byte.
        let (bom, body) = match text.strip_prefix('\u{feff}') {
            Some(body) => ("\u{feff}", body),
            None => ("", text.as_str()),
        };
        let edited = format!("{bom}{}", detect::with_checks(body, &checks)?);
        let path = context.paths.settings();
        crate::files::write_atomic(&path, edited.as_bytes())
            .map_err(crate::files::at::<Error>(path))?;
        written = true;
    }
    if context.json {
        let configured = configured
            .as_ref()
            .map(|(_, settings)| json!({"task": settings.verify.task, "run": settings.verify.run}));
        return Ok(Outcome::print(to_json(&json!({
            "detected": detected_json(&checks),
            "configured": configured,
            "up_to_date": up_to_date,
            "written": written,
        }))));
    }
    let mut out = found(&checks);
    if let Some((_, settings)) = &configured {
        for (key, list) in [
            ("task", &settings.verify.task),
            ("run", &settings.verify.run),
        ] {
            let _ = writeln!(out, "{SETTINGS_FILE} has verify.{key}: {}", flow(list));
        }
    }
    let verdict = if configured.is_none() {
        "config/ralph.yaml does not exist yet; `ralph init` writes it with the checks found"
    } else if checks.is_empty() {
        if args.write {
            "nothing written: no checks found"
        } else {
            ""
        }
    } else if up_to_date {
        "config/ralph.yaml has these checks already"
    } else if written {
        "wrote these checks into verify.task and verify.run of config/ralph.yaml"
    } else {
        "`ralph init --detect --write` writes these checks into config/ralph.yaml"
    };
    if !verdict.is_empty() {
        let _ = writeln!(out, "{verdict}");
    }
    Ok(Outcome::print(out))
}

/// The text of `config/ralph.yaml` and its settings; `None` when it is
/// missing.
fn configured(context: &Context) -> Result<Option<(String, Settings)>, Error> {
    let path = context.paths.settings();
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(crate::files::at(path)(source)),
    };
    let text = String::from_utf8(bytes).map_err(|err| {
        let (line, message) = crate::files::not_utf8(err.as_bytes(), err.utf8_error());
        crate::config::Error::Invalid {
            line: Some(line),
            message,
        }
    })?;
    let settings = Settings::parse(text.strip_prefix('\u{feff}').unwrap_or(&text))?;
    Ok(Some((text, settings)))
}

/// Whether the settings' verify lists are those of `checks`.
fn has_checks(verify: &VerifySettings, checks: &[Check]) -> bool {
    verify.task == detect::task_list(checks) && verify.run == detect::run_list(checks)
}

/// A line per check found, or one saying there is none.
fn found(checks: &[Check]) -> String {
    if checks.is_empty() {
        return "no checks found for verify.task and verify.run\n".to_owned();
    }
    let mut out = String::new();
    for check in checks {
        let lists: Vec<String> = check
            .lists()
            .iter()
            .map(|list| format!("verify.{list}"))
            .collect();
        let _ = writeln!(
            out,
            "found `{}` ({}): {}",
            text::safe(&check.command),
            text::safe(&check.source),
            lists.join(", ")
        );
    }
    out
}

/// A list of commands as YAML flow: `["cargo test", "npm test"]`.
fn flow(list: &[String]) -> String {
    let items: Vec<String> = list.iter().map(|item| detect::quote(item)).collect();
    format!("[{}]", items.join(", "))
}

fn detected_json(checks: &[Check]) -> serde_json::Value {
    checks
        .iter()
        .map(|check| {
            json!({
                "command": check.command,
                "source": check.source,
                "lists": check.lists(),
            })
        })
        .collect()
}

/// `--remote`: the queue files' merge driver set up (docs/SCALE.md).
fn remote(context: &Context, in_git: bool) -> Result<Vec<String>, Error> {
    if !in_git {
        return Err(remote_needs_git());
    }
    let settings = crate::config::Settings::load_with_env(&context.paths)?;
    let repo = crate::runner::worker::open_repo(&context.paths, &settings, None)?;
    // `ralph` when that is this program on PATH, else this program's path.
    let me = std::env::current_exe().ok();
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("ralph"))
            .find(|candidate| candidate.is_file())
    });
    let same = |a: &std::path::Path, b: &std::path::Path| {
        a.canonicalize()
            .ok()
            .is_some_and(|a| b.canonicalize().ok() == Some(a))
    };
    let ralph = match (&me, &on_path) {
        (Some(me), Some(found)) if same(me, found) => "ralph".to_owned(),
        (Some(me), _) => crate::text::shell_quoted(&me.display().to_string()),
        (None, _) => "ralph".to_owned(),
    };
    crate::init::queue_merge_driver(&context.paths, &repo, &ralph)
}

/// `--remote` where there is no git repository.
fn remote_needs_git() -> Error {
    crate::task::Error::Refused {
        message: "--remote needs a git repository: the merge driver is git's".to_owned(),
        hint: Some(
            "git init && git add -A && git commit -m start, then ralph init --remote".to_owned(),
        ),
    }
    .into()
}
