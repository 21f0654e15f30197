//! `ralph init`: the shipped defaults, embedded in the binary, and writing
//! the ones a project is missing.

use std::path::Path;

use crate::detect::Check;
use crate::files;
use crate::paths::SETTINGS_FILE;

/// Whether `--force` may replace a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ownership {
    /// A shipped default: `--force` replaces it.
    Default,
    /// The project's own data (tasks, learnings): never replaced.
    Data,
}

/// One file `ralph init` creates.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shipped {
    /// Path relative to the project root.
    pub path: &'static str,
    /// Its default content.
    pub text: &'static str,
    /// Whether `--force` may replace it.
    pub ownership: Ownership,
}

const fn shipped(path: &'static str, text: &'static str) -> Shipped {
    Shipped {
        path,
        text,
        ownership: Ownership::Default,
    }
}

const fn data(path: &'static str, text: &'static str) -> Shipped {
    Shipped {
        path,
        text,
        ownership: Ownership::Data,
    }
}

/// The shipped planner role (`ralph plan --agent` uses it when the project
/// has no `roles/planner.md`).
pub(crate) const PLANNER_ROLE: &str = include_str!("../roles/planner.md");

/// Every file `ralph init` writes, from the repository's `roles/`,
/// `config/` and `templates/` folders.
pub(crate) const SHIPPED: &[Shipped] = &[
    shipped("working.md", include_str!("../templates/working.md")),
    data("learnings.md", include_str!("../templates/learnings.md")),
    data("tasks.jsonl", ""),
    data("tasks-done.jsonl", ""),
    shipped("roles/reviewer.md", include_str!("../roles/reviewer.md")),
    shipped("roles/architect.md", include_str!("../roles/architect.md")),
    shipped("roles/debugger.md", include_str!("../roles/debugger.md")),
    shipped(
        "roles/documenter.md",
        include_str!("../roles/documenter.md"),
    ),
    shipped(
        "roles/refactorer.md",
        include_str!("../roles/refactorer.md"),
    ),
    shipped("roles/planner.md", PLANNER_ROLE),
    shipped(
        "roles/final-reviewer.md",
        include_str!("../roles/final-reviewer.md"),
    ),
    shipped("config/roles.yaml", include_str!("../config/roles.yaml")),
    shipped("config/ralph.yaml", include_str!("../config/ralph.yaml")),
];

/// A ready-made set of triggers and roles `ralph init --workflow` writes
/// (docs/WORKFLOWS.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Workflow {
    /// The shipped defaults.
    #[default]
    Classic,
    /// The enhanced loop's cycle: build, review with a verdict, replan
    /// after a rejection, recover after a failure, a final review.
    Enhanced,
}

/// The enhanced workflow's triggers.
pub(crate) const ENHANCED_ROLES: &str = include_str!("../workflows/enhanced/roles.yaml");
/// The role of its replanning turn.
const REPLANNER_ROLE: &str = include_str!("../workflows/enhanced/replanner.md");

impl Workflow {
    /// The files it adds to the shipped ones.
    fn extra(self) -> &'static [Shipped] {
        const ENHANCED: &[Shipped] = &[shipped("roles/replanner.md", REPLANNER_ROLE)];
        match self {
            Workflow::Classic => &[],
            Workflow::Enhanced => ENHANCED,
        }
    }

    /// The text it writes for the shipped file at `path` (`text`).
    fn text(self, path: &str, text: &str) -> String {
        match (self, path) {
            (Workflow::Enhanced, "config/roles.yaml") => ENHANCED_ROLES.to_owned(),
            (Workflow::Enhanced, SETTINGS_FILE) => {
                text.replacen("\nfinal_review: false\n", "\nfinal_review: true\n", 1)
            }
            _ => text.to_owned(),
        }
    }
}

/// Paths ralph keeps out of git.
pub(crate) const IGNORED: [&str; 3] = [".ralph/", "ralph.log", ".stop"];

/// What `ralph init` did with one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// It was missing and is now written.
    Created,
    /// It existed and `--force` replaced it.
    Replaced,
    /// It existed and was left alone.
    Kept,
    /// It existed, holds the project's data, and `--force` left it alone.
    KeptData,
}

/// The report of `ralph init`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Report {
    /// Each shipped file and what happened to it.
    pub files: Vec<(&'static str, Action)>,
    /// Entries added to `.gitignore`.
    pub ignored: Vec<&'static str>,
    /// Whether the folder is inside a git repository.
    pub in_git: bool,
}

/// The agent `ralph init` writes into a new `config/ralph.yaml`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Agent<'a> {
    /// A preset by name (`--agent`).
    Preset(&'a str),
    /// A command line of one's own (`--agent-cmd`).
    Command(&'a str),
}

/// Writes the shipped files missing under `root` (all defaults with
/// `force`), with `agent` as the agent and `checks` as the `verify` lists
/// in `config/ralph.yaml`, and adds ralph's runtime paths to `.gitignore`.
pub(crate) fn init(
    paths: &crate::paths::Paths,
    force: bool,
    agent: Option<Agent<'_>>,
    checks: &[Check],
    workflow: Workflow,
) -> Result<Report, crate::error::Error> {
    let root = paths.root();
    in_the_way(paths)?;
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| crate::error::Error::from(crate::files::PathError::new(path, source))
    };
    let mut report = Report {
        files: Vec::new(),
        ignored: Vec::new(),
        in_git: root.ancestors().any(|dir| dir.join(".git").exists()),
    };
    for file in SHIPPED.iter().chain(workflow.extra()) {
        let path = paths.join(file.path);
        let exists = path.exists();
        let action = match (exists, force, file.ownership) {
            (false, _, _) => Action::Created,
            (true, _, Ownership::Data) => Action::KeptData,
            (true, true, Ownership::Default) => Action::Replaced,
            (true, false, Ownership::Default) => Action::Kept,
        };
        if matches!(action, Action::Created | Action::Replaced) {
            let shipped = workflow.text(file.path, file.text);
            let text = if file.path == SETTINGS_FILE {
                settings(&shipped, agent, checks).map_err(io(&path))?
            } else {
                shipped
            };
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(io(dir))?;
            }
            files::write_atomic(&path, text.as_bytes()).map_err(io(&path))?;
        }
        report.files.push((file.path, action));
    }
    let gitignore = paths.join(".gitignore");
    let existing = files::read_or_empty(&gitignore).map_err(io(&gitignore))?;
    let existing = String::from_utf8_lossy(&existing);
    let present = |entry: &str| {
        let bare = entry.trim_end_matches('/');
        existing.lines().map(str::trim).any(|line| {
            let line = line.trim_start_matches('/');
            line == entry || line == bare
        })
    };
    // aider adds `.aider*` to .gitignore itself on its first run, which
    // would be the first task's change: written here instead.
    let aider: &[&'static str] = if agent == Some(Agent::Preset("aider")) {
        &[".aider*"]
    } else {
        &[]
    };
    report.ignored = IGNORED
        .iter()
        .chain(aider)
        .copied()
        .filter(|entry| !present(entry))
        .collect();
    if !report.ignored.is_empty() {
        files::append_patterns(
            &gitignore,
            &existing,
            "ralph runtime files",
            &report.ignored,
        )
        .map_err(io(&gitignore))?;
    }
    Ok(report)
}

/// Refuses, before anything is written, a file where a shipped file's
/// folder goes (`config` as a file) or a folder where a file goes.
fn in_the_way(paths: &crate::paths::Paths) -> Result<(), crate::error::Error> {
    let root = paths.root();
    let blocked =
        |path: std::path::PathBuf, what, need| crate::error::Error::InTheWay { path, what, need };
    for file in SHIPPED.iter().map(|file| file.path).chain([".gitignore"]) {
        let path = paths.join(file);
        if path.is_dir() {
            return Err(blocked(path, "a folder", "a file"));
        }
        let folders = path.ancestors().skip(1).take_while(|dir| *dir != root);
        if let Some(dir) = folders.into_iter().find(|dir| dir.is_file()) {
            return Err(blocked(dir.to_owned(), "a file", "a folder"));
        }
    }
    Ok(())
}

/// The settings `text` with `agent` as the agent and `checks` as the
/// `verify` lists.
fn settings(text: &str, agent: Option<Agent<'_>>, checks: &[Check]) -> std::io::Result<String> {
    let text = match agent {
        Some(Agent::Preset(preset)) => with_preset(text, preset),
        Some(Agent::Command(command)) => with_command(text, command),
        None => text.to_owned(),
    };
    if checks.is_empty() {
        return Ok(text);
    }
    // The shipped verify section is a plain one, which takes any checks
    // (a unit test of `detect` shows it); an error here is a bug.
    crate::detect::with_checks(&text, checks).map_err(std::io::Error::other)
}

/// The settings text with `agent.preset` set to `preset`.
fn with_preset(text: &str, preset: &str) -> String {
    text.replacen("  preset: claude", &format!("  preset: {preset}"), 1)
}

/// The settings text with `agent.command` set to `command` (a YAML
/// double-quoted string, which JSON's quoting is).
fn with_command(text: &str, command: &str) -> String {
    let quoted = serde_json::Value::from(command).to_string();
    text.replacen("  command: null", &format!("  command: {quoted}"), 1)
}

/// The lines `ralph init --remote` puts in `.gitattributes`: the queue
/// files merged by `ralph merge-queue` (docs/SCALE.md).
pub(crate) const QUEUE_ATTRIBUTES: [&str; 2] = [
    "tasks.jsonl merge=ralph-queue",
    "tasks-done.jsonl merge=ralph-queue",
];

/// Sets up the queue files' merge driver in the project at `paths`: the
/// lines of `.gitattributes` it lacks (appended; commit them) and, in
/// this clone's git config, `ralph merge-queue` as the driver. Returns
/// what it did, a line each.
pub(crate) fn queue_merge_driver(
    paths: &crate::paths::Paths,
    repo: &crate::git::Repo,
    ralph: &str,
) -> Result<Vec<String>, crate::Error> {
    let path = paths.project().join(".gitattributes");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let missing: Vec<&str> = (QUEUE_ATTRIBUTES.iter().copied())
        .filter(|line| !text.lines().any(|have| have.trim() == *line))
        .collect();
    let mut said = Vec::new();
    if missing.is_empty() {
        said.push(".gitattributes already gives the queue files to ralph-queue".to_owned());
    } else {
        let mut text = text;
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        for line in &missing {
            text.push_str(line);
            text.push('\n');
        }
        crate::files::write_atomic(&path, text.as_bytes())
            .map_err(crate::files::at::<crate::Error>(&path))?;
        said.push(
            "wrote .gitattributes: tasks.jsonl and tasks-done.jsonl merge=ralph-queue (commit it)"
                .to_owned(),
        );
    }
    let driver = format!("{ralph} merge-queue %O %A %B %P");
    repo.set_merge_driver("ralph-queue", "ralph's merge of the queue files", &driver)?;
    said.push(format!(
        "git config merge.ralph-queue.driver \"{driver}\" (this clone)"
    ));
    Ok(said)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{PRESETS, Settings};
    use crate::roles::Triggers;

    #[test]
    fn every_shipped_file_parses() {
        let settings = Settings::parse(include_str!("../config/ralph.yaml")).unwrap();
        assert_eq!(
            settings,
            Settings::default(),
            "the shipped settings are the defaults"
        );
        let roles: Vec<&str> = SHIPPED
            .iter()
            .filter_map(|file| file.path.strip_prefix("roles/")?.strip_suffix(".md"))
            .collect();
        let triggers = Triggers::parse(include_str!("../config/roles.yaml"), |role| {
            roles.contains(&role)
        })
        .unwrap();
        assert_eq!(triggers.list.len(), 6);
        // The enhanced workflow's triggers, against its roles (as
        // `ralph roles check` checks them).
        let enhanced: Vec<&str> = (SHIPPED.iter().chain(Workflow::Enhanced.extra()))
            .filter_map(|file| file.path.strip_prefix("roles/")?.strip_suffix(".md"))
            .collect();
        let triggers = Triggers::parse(ENHANCED_ROLES, |role| enhanced.contains(&role)).unwrap();
        let picked: Vec<&str> = triggers.list.iter().map(|t| t.role.as_str()).collect();
        assert_eq!(
            picked,
            ["final-reviewer", "debugger", "reviewer", "replanner"]
        );
        assert!(Triggers::parse(ENHANCED_ROLES, |role| roles.contains(&role)).is_err());
        assert!(
            Workflow::Enhanced.extra()[0]
                .text
                .starts_with("# Role: Replanner\n")
        );
        let settings = Settings::parse(
            &Workflow::Enhanced.text(SETTINGS_FILE, include_str!("../config/ralph.yaml")),
        )
        .unwrap();
        assert!(settings.final_review);
        for file in SHIPPED.iter().filter(|f| f.path.ends_with(".md")) {
            assert!(
                file.text.starts_with("# "),
                "{} starts with a title",
                file.path
            );
        }
        crate::prompt::render_context(
            "default",
            crate::prompt::DEFAULT_CONTEXT_TEMPLATE,
            &crate::prompt::context_for(
                &crate::task::Queue::empty(),
                &crate::task::Task::from_json(
                    r#"{"id":"A","title":"t","status":"active","leaf":true}"#,
                )
                .unwrap(),
                &triggers
                    .choose(&crate::roles::TriggerContext::default())
                    .unwrap(),
            ),
        )
        .unwrap();
    }

    #[test]
    fn the_settings_take_a_preset_and_checks_together() {
        let checks = [crate::detect::Check {
            command: "npm test".to_owned(),
            source: "package.json".to_owned(),
            scope: crate::detect::Scope::Task,
        }];
        let text = settings(
            include_str!("../config/ralph.yaml"),
            Some(Agent::Preset("codex")),
            &checks,
        )
        .unwrap();
        let settings = Settings::parse(&text).unwrap();
        assert_eq!(settings.agent.preset.as_deref(), Some("codex"));
        assert_eq!(settings.verify.task, ["npm test"]);
        assert_eq!(settings.verify.run, ["npm test"]);
        assert!(text.contains("    - \"npm test\"  # package.json\n"));
    }

    #[test]
    fn a_command_of_ones_own_is_written_quoted() {
        let command = r#"examples/agent.sh --say "it's {prompt_file}""#;
        let text = settings(
            include_str!("../config/ralph.yaml"),
            Some(Agent::Command(command)),
            &[],
        )
        .unwrap();
        let settings = Settings::parse(&text).unwrap();
        assert_eq!(settings.agent.command.as_deref(), Some(command));
    }

    #[test]
    fn every_preset_can_be_set() {
        for preset in PRESETS {
            let text = with_preset(include_str!("../config/ralph.yaml"), preset);
            assert_eq!(
                Settings::parse(&text).unwrap().agent.preset.as_deref(),
                Some(preset)
            );
        }
    }
}
