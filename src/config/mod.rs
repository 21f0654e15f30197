//! Loop settings from `config/ralph.yaml`, then `RALPH_*` environment
//! variables. Every key is optional; unknown keys are an error naming the
//! key. Each key is declared in [`KEYS`], with its default and variable.

mod keys;
mod place;
mod value;

use std::time::Duration;

use serde::{Deserialize, Serialize};
use strum::{Display, IntoStaticStr};

use crate::exit::Exit;
use crate::files;
use crate::paths::SETTINGS_FILE;
pub(crate) use keys::{KEYS, env_vars};
use place::{line_of_check, line_starting, value_line};
pub(crate) use value::{ShowDuration, parse_duration, parse_minutes, parse_time_limit};
use value::{duration, minutes, time_limit};

/// The agent presets ralph knows.
pub(crate) const PRESETS: [&str; 9] = [
    "claude",
    "codex",
    "codex-app-server",
    "opencode",
    "amp",
    "gemini",
    "qwen",
    "aider",
    "cursor",
];

/// The loop's settings, defaults filled in.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Settings {
    /// Which agent runs and how.
    pub agent: AgentSettings,
    /// A pool of workers, each on its own task in its own worktree; `None`
    /// is one worker in the project's own checkout.
    pub workers: Option<u64>,
    /// Iterations per run.
    pub max_iterations: u64,
    /// Wall-clock minutes per run; `None` is no limit.
    #[serde(deserialize_with = "minutes")]
    pub max_run_minutes: Option<u64>,
    /// Iterations one task may take before it is blocked.
    pub max_iterations_per_task: u64,
    /// Wall-clock minutes one task's iterations may take, across runs,
    /// before it is blocked; `None` is no limit.
    #[serde(deserialize_with = "minutes")]
    pub max_task_minutes: Option<u64>,
    /// Failed iterations in a row before a task is blocked.
    pub max_consecutive_failures: u64,
    /// Iterations without a commit or file change that count as a failure.
    pub no_progress_iterations: u64,
    /// Wait after a failure; doubles after each failure, capped at 10x.
    #[serde(deserialize_with = "duration")]
    pub retry_backoff: Duration,
    /// Longest wait for a usage limit whose reset the tool does not say:
    /// the wait starts at `retry_backoff` and doubles up to this.
    #[serde(deserialize_with = "duration")]
    pub usage_limit_max_wait: Duration,
    /// Wait between iterations.
    #[serde(deserialize_with = "duration")]
    pub pause_between_iterations: Duration,
    /// With `ralph run --poll`, how long an idle run waits before it
    /// looks at the queue again.
    #[serde(deserialize_with = "duration")]
    pub poll_interval: Duration,
    /// Branch tasks merge into; `None` is the branch checked out at start.
    pub base_branch: Option<String>,
    /// Prefix of task branch names.
    pub branch_prefix: String,
    /// Verification commands.
    pub verify: VerifySettings,
    /// Pushing the base.
    pub git: GitSettings,
    /// Where the work goes: the base (`local`), or a pull request (`pr`).
    pub delivery: Delivery,
    /// When the queue drains, one more task: a `final-reviewer` iteration
    /// over the whole run's work, which passes or adds follow-up tasks.
    pub final_review: bool,
    /// Labels the pull request gets with `delivery: pr`.
    pub delivery_labels: Vec<String>,
    /// Most a task may cost, in US dollars, across runs, before it is
    /// blocked; `None` is no cap.
    pub max_task_cost_usd: Option<f64>,
    /// Most one run may cost, in US dollars, before it takes no more work.
    pub max_run_cost_usd: Option<f64>,
    /// Most tokens (input and output) a task may take, across runs.
    pub max_task_tokens: Option<u64>,
    /// Most tokens (input and output) one run may take.
    pub max_run_tokens: Option<u64>,
    /// Telling people: the command run for events worth their attention.
    pub notify: NotifySettings,
    /// Watching a branch for PRDs to plan.
    pub watch: WatchSettings,
    /// Every this many iterations on a task, the reviewer takes a turn
    /// whatever the triggers say; `None` is never.
    pub review_every: Option<u64>,
    /// Days the records of iterations are kept (`src/retention.rs`); 0:
    /// forever.
    pub retention_days: u64,
    /// When `ralph report`'s page is written by the run itself.
    pub report: ReportWhen,
    pub sandbox: SandboxSettings,
    /// Sharing the queue with other machines through the git remote.
    pub remote: RemoteSettings,
}

/// The `remote:` section: several machines share one queue through the
/// base's remote (docs/SCALE.md).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct RemoteSettings {
    /// Whether the queue is shared through the base's upstream.
    pub enabled: bool,
    /// How often the remote is read and held claims renewed.
    #[serde(deserialize_with = "duration")]
    pub heartbeat: Duration,
    /// How long a claim must stay unchanged before another machine may
    /// take it over.
    #[serde(deserialize_with = "duration")]
    pub stale_after: Duration,
    /// Pushes of a landing the remote refuses in a row (another machine
    /// landed first) before the task goes back to its agent.
    pub land_attempts: u64,
}

impl Default for RemoteSettings {
    fn default() -> RemoteSettings {
        RemoteSettings {
            enabled: false,
            heartbeat: Duration::from_secs(60),
            stale_after: Duration::from_secs(600),
            land_attempts: 8,
        }
    }
}

/// `report`: whether a run writes `.ralph/report.html` as it ends.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ReportWhen {
    /// Only `ralph report` writes it.
    #[default]
    Never,
    /// At the end of every run, its path printed.
    OnExit,
}

/// The `sandbox:` section: how agents are confined (docs/AGENT.md).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct SandboxSettings {
    /// Whether agents run confined.
    pub mode: SandboxMode,
    /// More paths agents may write (`~/` and paths from the project allowed).
    pub writable: Vec<String>,
    /// More paths hidden from agents.
    pub hidden: Vec<String>,
    /// More paths of the project agents may not change.
    pub protected: Vec<String>,
    /// More environment variables agents get.
    pub pass_env: Vec<String>,
    /// Whether confined agents reach the network.
    pub network: bool,
}

impl Default for SandboxSettings {
    fn default() -> SandboxSettings {
        SandboxSettings {
            mode: SandboxMode::Auto,
            writable: Vec::new(),
            hidden: Vec::new(),
            protected: Vec::new(),
            pass_env: Vec::new(),
            network: true,
        }
    }
}

/// `sandbox.mode`: whether agents run confined.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SandboxMode {
    /// Confined when the system's tool works here; unconfined otherwise,
    /// said once.
    #[default]
    Auto,
    /// Confined, or the run refuses to start.
    On,
    /// Never confined.
    Off,
}

/// The `watch:` section (docs/UNATTENDED.md).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct WatchSettings {
    /// Glob patterns of PRD files (`prds/*.md`); empty: no watching.
    pub prds: Vec<String>,
    /// The branch watched; `None` is the base.
    pub branch: Option<String>,
    /// The remote the branch is fetched from at each look; `None`: the
    /// local branch.
    pub remote: Option<String>,
    /// Largest PRD planned, in bytes.
    pub max_prd_bytes: u64,
    /// With `delivery: pr`: rounds of feedback (reviews requesting
    /// changes, failing checks) worked per pull request; 0: none read.
    pub feedback_rounds: u64,
}

impl Default for WatchSettings {
    fn default() -> WatchSettings {
        WatchSettings {
            prds: Vec::new(),
            branch: None,
            remote: None,
            max_prd_bytes: 256 * 1024,
            feedback_rounds: 3,
        }
    }
}

/// What happened, as `RALPH_EVENT` and the event's `event` field say it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub(crate) enum NotifyKind {
    /// A task's work reached the base (or the pull request's branch).
    TaskMerged,
    /// A task was blocked: it waits for a person.
    TaskBlocked,
    /// A PRD became tasks.
    PrdPlanned,
    /// A PRD was refused (too large, or not a document ralph can plan).
    PrdRefused,
    /// A pull request was opened or updated, or `gh` failed to.
    PullRequest,
    /// The agent hit its usage limit and the run waits.
    UsageLimit,
    /// A run's spending cap was reached: it takes no more work.
    CapReached,
    /// The run ended.
    RunEnded,
    /// A polling run found nothing workable and waits.
    RunIdle,
    /// A review requesting changes or a failing check on a PRD's pull
    /// request became tasks (or, its rounds used up, waits for a person).
    PrFeedback,
    /// A PRD's pull request was merged (or closed) on the host.
    PrMerged,
    /// The checkout cannot take the watched branch (a person's merge,
    /// new PRDs) until a person clears the way.
    WatchStuck,
}

impl NotifyKind {
    /// Its name.
    pub(crate) fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The `notify:` section (docs/NOTIFY.md).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct NotifySettings {
    /// Run with `sh -c` for each event, the event as JSON on its stdin;
    /// `None` tells nobody.
    pub command: Option<String>,
    /// The kinds of events it runs for; empty: all of them.
    pub on: Vec<NotifyKind>,
    /// Longest the command may run before it is stopped.
    #[serde(deserialize_with = "time_limit")]
    pub timeout: Duration,
}

impl Default for NotifySettings {
    fn default() -> NotifySettings {
        NotifySettings {
            command: None,
            on: Vec::new(),
            timeout: Duration::from_secs(10),
        }
    }
}

/// `delivery`: where the run's work ends up.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Delivery {
    /// Squash commits on the base branch.
    #[default]
    Local,
    /// Squash commits on a branch `ralph/<name>`, pushed, and a pull
    /// request opened or updated with `gh` when the run ends.
    Pr,
}

/// The `git:` section.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct GitSettings {
    /// When the base is pushed.
    pub push: Push,
    /// The remote pushed to when the base has no upstream; `None` is
    /// `origin`.
    pub remote: Option<String>,
    /// The private key ralph's pushes use instead of the user's own ssh
    /// setup, as written (`~/` and relative paths allowed).
    pub ssh_key: Option<String>,
}

impl GitSettings {
    /// The file `ssh_key` names: `~/` is `$HOME`, and a relative path is
    /// from the project's folder `project`.
    pub(crate) fn ssh_key_file(&self, project: &std::path::Path) -> Option<std::path::PathBuf> {
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        (self.ssh_key.as_deref()).map(|key| crate::git::key_path(key, project, home.as_deref()))
    }
}

/// `git.push`: when the base goes to its remote.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Push {
    /// Never: the work stays local.
    #[default]
    Never,
    /// After each squash commit.
    OnMerge,
    /// Once, when the run ends.
    OnExit,
}

/// The `agent:` section.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct AgentSettings {
    /// A preset name (claude, codex, ...).
    pub preset: Option<String>,
    /// A custom command line; overrides the preset.
    pub command: Option<String>,
    /// The model to ask for, passed with the preset's own flag.
    pub model: Option<String>,
    /// Time limit per iteration.
    #[serde(deserialize_with = "time_limit")]
    pub timeout: Duration,
    /// How the agent carries a task across iterations.
    pub mode: Mode,
    /// Command patterns (regular expressions) a structured agent is never
    /// allowed to run, beside ralph's own checks (a push, a command outside
    /// the checkout, `rm -rf /`, a download piped into an interpreter).
    pub deny: Vec<String>,
    /// The sandbox the Codex app-server runs the agent's commands in.
    pub server_sandbox: ServerSandbox,
    /// The agents (presets or command lines) that take over, in order,
    /// while the one before hits its usage limit.
    pub fallback: Vec<String>,
}

/// `agent.server_sandbox`: where the Codex app-server lets the agent's
/// commands write (docs/AGENT.md).
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq, IntoStaticStr)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum ServerSandbox {
    /// The task's checkout, the queue and `.ralph/`; `.git` is read-only,
    /// so ralph commits the agent's work.
    #[default]
    WorkspaceWrite,
    /// Anywhere the user can write; the agent commits itself.
    DangerFullAccess,
}

/// How an agent carries a task across iterations (the worker contract's
/// `agent.mode`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, IntoStaticStr, Display,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Mode {
    /// A fresh context every iteration: the files and the prompt are the
    /// memory (ralph's loop).
    #[default]
    RalphFresh,
    /// One session per task, kept across its iterations.
    SessionLoop,
    /// One iteration per task.
    SinglePass,
}

impl Mode {
    /// Every mode, by its name in the contract.
    pub const ALL: [Mode; 3] = [Mode::RalphFresh, Mode::SessionLoop, Mode::SinglePass];

    /// The mode's name in the contract.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The mode named `name`, if any.
    pub fn named(name: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|mode| mode.as_str() == name)
    }
}

/// Most parallel workers (`--workers` takes as many).
pub(crate) const MAX_WORKERS: u64 = 64;

/// A spending cap: a number above 0.
fn check_cap(dollars: f64) -> Result<f64, String> {
    match dollars > 0.0 && dollars.is_finite() {
        true => Ok(dollars),
        false => Err(format!(
            "{dollars} is not a cap; write an amount above 0, or null for none"
        )),
    }
}

/// `workers` when it is a number of agents ralph runs side by side.
fn check_workers(workers: u64) -> Result<u64, String> {
    if (1..=MAX_WORKERS).contains(&workers) {
        Ok(workers)
    } else {
        Err(format!(
            "{workers} is not between 1 and {MAX_WORKERS}; write how many agents work side by side, like 2"
        ))
    }
}

/// A label name of `delivery_labels`: not empty, and without a comma,
/// which `gh` reads as two labels.
fn check_label(label: &str) -> Result<(), String> {
    if label.trim().is_empty() || ["null", "~"].contains(&label.trim()) {
        Err("an empty label; remove it, or write the label's name".to_owned())
    } else if label.contains(',') {
        Err(format!(
            "{label:?} holds a comma, which gh reads as two labels; write each label as its own entry"
        ))
    } else {
        Ok(())
    }
}

/// Labels from `RALPH_DELIVERY_LABELS`: comma-separated names (`[]` or
/// nothing: none).
fn parse_labels(text: &str) -> Result<Vec<String>, String> {
    let text = text.trim();
    if text.is_empty() || text == "[]" {
        return Ok(Vec::new());
    }
    let labels: Vec<String> = text.split(',').map(|l| l.trim().to_owned()).collect();
    labels.iter().try_for_each(|l| check_label(l))?;
    Ok(labels)
}

/// Whether a verify command is one of the obvious non-checks: nothing at
/// all, or a command that exits 0 without looking at anything (`true`,
/// `:`, `exit 0`). A command that passes for other reasons is the
/// project's business.
pub(crate) fn checks_nothing(command: &str) -> bool {
    let words: Vec<&str> = command.split_whitespace().collect();
    matches!(
        words.as_slice(),
        [] | ["true" | "/bin/true" | "/usr/bin/true" | ":" | "exit"] | ["exit", "0"]
    )
}

/// The `verify:` section.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct VerifySettings {
    /// Commands that must pass before a task is merged.
    pub task: Vec<String>,
    /// Commands run once when the queue drains.
    pub run: Vec<String>,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            agent: AgentSettings::default(),
            workers: None,
            max_iterations: 50,
            max_run_minutes: None,
            max_iterations_per_task: 20,
            max_task_minutes: None,
            max_consecutive_failures: 3,
            no_progress_iterations: 3,
            retry_backoff: Duration::from_secs(10),
            usage_limit_max_wait: Duration::from_secs(30 * 60),
            pause_between_iterations: Duration::from_secs(2),
            poll_interval: Duration::from_secs(30),
            base_branch: None,
            branch_prefix: "task/".to_owned(),
            verify: VerifySettings::default(),
            git: GitSettings::default(),
            delivery: Delivery::Local,
            final_review: false,
            delivery_labels: Vec::new(),
            max_task_cost_usd: None,
            max_run_cost_usd: None,
            max_task_tokens: None,
            max_run_tokens: None,
            notify: NotifySettings::default(),
            watch: WatchSettings::default(),
            review_every: None,
            retention_days: 30,
            report: ReportWhen::Never,
            sandbox: SandboxSettings::default(),
            remote: RemoteSettings::default(),
        }
    }
}

impl Default for AgentSettings {
    fn default() -> AgentSettings {
        AgentSettings {
            preset: Some("claude".to_owned()),
            command: None,
            model: None,
            timeout: Duration::from_secs(20 * 60),
            mode: Mode::RalphFresh,
            deny: Vec::new(),
            server_sandbox: ServerSandbox::WorkspaceWrite,
            fallback: Vec::new(),
        }
    }
}

/// What is wrong with the settings file.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The YAML is malformed or has a wrong key or value.
    #[error("{SETTINGS_FILE}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    Invalid {
        /// 1-based line, when known.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// An environment variable has a value that does not fit its setting.
    #[error("{name}: {message}")]
    Env {
        /// The variable's name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// Reading or writing a file failed.
    #[error(transparent)]
    Io(#[from] crate::files::PathError),
}

impl crate::exit::Reportable for Error {
    /// The exit code for this error.
    fn exit(&self) -> Exit {
        match self {
            Error::Invalid { .. } | Error::Env { .. } => Exit::InvalidInput,
            Error::Io(err) => err.exit(),
        }
    }

    /// What the person can do about it.
    fn hint(&self) -> Option<String> {
        match self {
            Error::Invalid { .. } => Some(format!(
                "fix {SETTINGS_FILE}; docs/CONFIG.md lists every key and its values"
            )),
            Error::Env { name, .. } => Some(format!("fix or unset {name}")),
            Error::Io(err) => err.hint(),
        }
    }
}

impl Settings {
    /// Parses settings text; an empty file gives the defaults.
    pub(crate) fn parse(yaml: &str) -> Result<Settings, Error> {
        if yaml.trim().is_empty() {
            return Ok(Settings::default());
        }
        let settings: Settings = serde_yaml::from_str(yaml).map_err(|err| {
            let message = crate::text::yaml_message(&err.to_string());
            match value_line(yaml, &message) {
                Some((line, message)) => Error::Invalid {
                    line: Some(line),
                    message,
                },
                None => Error::Invalid {
                    line: err.location().map(|l| l.line()),
                    message,
                },
            }
        })?;
        if let Some(preset) = &settings.agent.preset
            && settings.agent.command.is_none()
            && !PRESETS.contains(&preset.as_str())
        {
            return Err(Error::Invalid {
                line: value_line(yaml, &format!("{preset:?}")).map(|(line, _)| line),
                message: format!(
                    "agent.preset: unknown preset {preset:?}; use one of {}",
                    PRESETS.join(", ")
                ),
            });
        }
        if let Some(Err(message)) = settings.workers.map(check_workers) {
            return Err(Error::Invalid {
                line: line_starting(yaml, "workers:"),
                message: format!("workers: {message}"),
            });
        }
        for (key, cap) in [
            ("max_task_cost_usd", settings.max_task_cost_usd),
            ("max_run_cost_usd", settings.max_run_cost_usd),
        ] {
            if let Some(Err(message)) = cap.map(check_cap) {
                return Err(Error::Invalid {
                    line: line_starting(yaml, key),
                    message: format!("{key}: {message}"),
                });
            }
        }
        for (key, commands) in [
            ("task", &settings.verify.task),
            ("run", &settings.verify.run),
        ] {
            // YAML's null in a list reads as the text "null".
            if let Some(command) = commands.iter().find(|c| ["null", "~"].contains(&c.trim())) {
                return Err(Error::Invalid {
                    line: line_of_check(yaml, key, command),
                    message: format!(
                        "verify.{key}: an empty entry (`- {command}`); remove the line, or write the command there"
                    ),
                });
            }
            if let Some(command) = commands.iter().find(|command| checks_nothing(command)) {
                return Err(Error::Invalid {
                    line: line_of_check(yaml, key, command),
                    message: format!(
                        "verify.{key}: {command:?} always passes, so it checks nothing; remove it, or name a command that tests the project (for example `cargo test` or `npm test`)"
                    ),
                });
            }
        }
        if let Err(message) = settings
            .delivery_labels
            .iter()
            .try_for_each(|l| check_label(l))
        {
            return Err(Error::Invalid {
                line: line_starting(yaml, "delivery_labels:"),
                message: format!("delivery_labels: {message}"),
            });
        }
        Ok(settings)
    }

    /// Overrides settings from environment variables read through `get`.
    pub(crate) fn apply_env(&mut self, get: impl Fn(&str) -> Option<String>) -> Result<(), Error> {
        for key in KEYS {
            let Some((name, value)) = key.env.and_then(|name| Some((name, get(name)?))) else {
                continue;
            };
            (key.set)(self, &value).map_err(|message| Error::Env {
                name: name.to_owned(),
                message,
            })?;
            if key.path == "agent.preset" {
                // A preset from the environment beats the file's command.
                self.agent.command = None;
            }
        }
        Ok(())
    }

    /// The project's settings as a command runs with them: the file (or the
    /// defaults), then the process's `RALPH_*` variables over it.
    pub(crate) fn load_with_env(paths: &crate::paths::Paths) -> Result<Settings, Error> {
        let mut settings = Settings::load(paths)?;
        settings.apply_env(|name| std::env::var(name).ok())?;
        Ok(settings)
    }

    /// Loads the project's settings; a missing file gives the defaults.
    pub(crate) fn load(paths: &crate::paths::Paths) -> Result<Settings, Error> {
        let text = files::read_text(&paths.settings(), |line, message| Error::Invalid {
            line: Some(line),
            message,
        })?;
        text.map_or_else(|| Ok(Settings::default()), |text| Settings::parse(&text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_clock_budgets_are_off_by_default_and_positive_minutes() {
        let defaults = Settings::default();
        assert_eq!(
            (defaults.max_task_minutes, defaults.max_run_minutes),
            (None, None)
        );
        let set = Settings::parse("max_task_minutes: 45\nmax_run_minutes: null\n").unwrap();
        assert_eq!(
            (set.max_task_minutes, set.max_run_minutes),
            (Some(45), None)
        );
        let refused = |yaml: &str| Settings::parse(yaml).unwrap_err().to_string();
        assert_eq!(
            refused("max_iterations: 5\nmax_task_minutes: 0\n"),
            "config/ralph.yaml:2: max_task_minutes: 0 is not a positive whole number of minutes; write one like 30, or null for no limit"
        );
        assert_eq!(
            refused("max_run_minutes: 30m\n"),
            "config/ralph.yaml:1: max_run_minutes: \"30m\" is not a positive whole number of minutes; write one like 30, or null for no limit"
        );
        assert_eq!(
            refused("max_run_minutes: -5\n"),
            "config/ralph.yaml:1: max_run_minutes: -5 is not a positive whole number of minutes; write one like 30, or null for no limit"
        );
    }

    /// The line and message `yaml` is refused with.
    fn refused(yaml: &str) -> (Option<usize>, String) {
        match Settings::parse(yaml) {
            Err(Error::Invalid { line, message }) => (line, message),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn workers_are_between_1_and_64() {
        assert_eq!(
            refused("max_iterations: 5\nworkers: 0\n"),
            (
                Some(2),
                "workers: 0 is not between 1 and 64; write how many agents work side by side, like 2".to_owned()
            )
        );
        assert_eq!(refused("workers: 65\n").0, Some(1));
        assert_eq!(Settings::parse("workers: 64\n").unwrap().workers, Some(64));
        assert_eq!(Settings::parse("workers: null\n").unwrap().workers, None);
    }

    #[test]
    fn obvious_non_checks_are_refused_on_their_line() {
        for command in [
            "",
            "  ",
            "true",
            ":",
            "exit 0",
            "exit  0",
            "/bin/true",
            "exit",
        ] {
            assert!(checks_nothing(command), "{command:?}");
        }
        for command in [
            "cargo test",
            "true && cargo test",
            "exit 1",
            "test -f out",
            "truee",
        ] {
            assert!(!checks_nothing(command), "{command:?}");
        }
        assert_eq!(
            refused("verify:\n  task:\n    - cargo test\n    - \"exit 0\"  # placeholder\n"),
            (
                Some(4),
                "verify.task: \"exit 0\" always passes, so it checks nothing; remove it, or name a command that tests the project (for example `cargo test` or `npm test`)".to_owned()
            )
        );
        assert_eq!(
            refused("max_iterations: 5\nverify:\n  task: [cargo test]\n  run: [\"\"]\n").0,
            Some(4)
        );
        assert_eq!(
            refused("verify:\n  run:\n  - make check\n  - ':'\n").1,
            "verify.run: \":\" always passes, so it checks nothing; remove it, or name a command that tests the project (for example `cargo test` or `npm test`)"
        );
        assert_eq!(refused("verify: {task: [\"true\"]}\n").0, None);
        assert!(Settings::parse("verify:\n  task: [\"exit 1\", cargo test]\n").is_ok());
    }

    #[test]
    fn the_final_review_is_off_by_default_and_a_switch() {
        assert!(!Settings::default().final_review);
        assert!(
            Settings::parse("final_review: true\n")
                .unwrap()
                .final_review
        );
    }

    #[test]
    fn a_null_check_is_an_empty_entry_not_a_command() {
        assert_eq!(
            Settings::parse("verify:\n  task:\n    - cargo test\n    - null\n")
                .unwrap_err()
                .to_string(),
            "config/ralph.yaml:4: verify.task: an empty entry (`- null`); remove the line, or write the command there"
        );
    }

    #[test]
    fn a_section_of_the_wrong_shape_names_no_rust_type() {
        assert_eq!(
            Settings::parse("verify:\n  - cargo test\n")
                .unwrap_err()
                .to_string(),
            "config/ralph.yaml:2: verify: invalid type: sequence, expected a section of `key: value` lines"
        );
    }

    /// A value's own check names the value's line and key, not the line
    /// serde_yaml gives (its mapping's first key).
    #[test]
    fn a_bad_value_names_its_own_line_and_key() {
        let shipped = include_str!("../../config/ralph.yaml");
        let at = |needle: &str| shipped.lines().position(|l| l.starts_with(needle)).unwrap() + 1;
        let text = shipped.replace("retry_backoff: 10s", "retry_backoff: 10 s");
        assert_eq!(
            Settings::parse(&text).unwrap_err().to_string(),
            format!(
                "config/ralph.yaml:{}: retry_backoff: \"10 s\" is not a duration; write it like 500ms, 10s, 20m or 1h",
                at("retry_backoff:")
            )
        );
        let text = format!("{shipped}max_iterations: 3\n");
        assert_eq!(
            Settings::parse(&text).unwrap_err().to_string(),
            format!(
                "config/ralph.yaml:{}: max_iterations: written twice; keep one",
                text.lines().count()
            )
        );
        let text = shipped.replace("  timeout: 20m", "  timeout: 20min");
        assert_eq!(
            Settings::parse(&text).unwrap_err().to_string(),
            format!(
                "config/ralph.yaml:{}: agent.timeout: \"20min\" is not a duration; write it like 500ms, 10s, 20m or 1h",
                at("  timeout:")
            )
        );
    }

    #[test]
    fn empty_settings_are_the_defaults() {
        assert_eq!(Settings::parse("").unwrap(), Settings::default());
        assert_eq!(
            Settings::parse("max_iterations: 7\n")
                .unwrap()
                .max_iterations,
            7
        );
    }

    #[test]
    fn wrong_keys_and_values_name_the_line() {
        assert_eq!(
            Settings::parse("max_iterations: 5\nmax_iteration: 3\n")
                .unwrap_err()
                .to_string(),
            "config/ralph.yaml:2: unknown field `max_iteration`, expected one of `agent`, `workers`, `max_iterations`, `max_run_minutes`, `max_iterations_per_task`, `max_task_minutes`, `max_consecutive_failures`, `no_progress_iterations`, `retry_backoff`, `usage_limit_max_wait`, `pause_between_iterations`, `poll_interval`, `base_branch`, `branch_prefix`, `verify`, `git`, `delivery`, `final_review`, `delivery_labels`, `max_task_cost_usd`, `max_run_cost_usd`, `max_task_tokens`, `max_run_tokens`, `notify`, `watch`, `review_every`, `retention_days`, `report`, `sandbox`, `remote` (did you mean `max_iterations`?)"
        );
        // A key nothing is near gets no guess; the hint never offers a
        // command that would overwrite the file being fixed.
        let far = Settings::parse("colour: blue\n").unwrap_err();
        assert!(!far.to_string().contains("did you mean"), "{far}");
        let hint = crate::exit::Reportable::hint(&far).unwrap();
        assert_eq!(
            hint,
            "fix config/ralph.yaml; docs/CONFIG.md lists every key and its values"
        );
        let nested = Settings::parse("agent:\n  timout: 5m\n").unwrap_err();
        assert!(
            nested.to_string().ends_with("(did you mean `timeout`?)"),
            "{nested}"
        );
        assert_eq!(
            Settings::parse("agent:\n  timeout: 20\n")
                .unwrap_err()
                .to_string(),
            "config/ralph.yaml:2: agent.timeout: duration \"20\" needs a unit: ms, s, m or h"
        );
        assert_eq!(
            Settings::parse("agent:\n  preset: claud\n")
                .unwrap_err()
                .to_string(),
            "config/ralph.yaml:2: agent.preset: unknown preset \"claud\"; use one of claude, codex, codex-app-server, opencode, amp, gemini, qwen, aider, cursor"
        );
    }

    #[test]
    fn delivery_labels_are_names_without_commas() {
        assert!(Settings::default().delivery_labels.is_empty());
        assert_eq!(
            Settings::parse("delivery_labels: [ralph, \"needs review\"]\n")
                .unwrap()
                .delivery_labels,
            ["ralph", "needs review"]
        );
        assert_eq!(
            refused("delivery: pr\ndelivery_labels: [\"a,b\"]\n"),
            (
                Some(2),
                "delivery_labels: \"a,b\" holds a comma, which gh reads as two labels; write each label as its own entry".to_owned()
            )
        );
        assert_eq!(
            refused("delivery_labels:\n  - ralph\n  - \"\"\n"),
            (
                Some(1),
                "delivery_labels: an empty label; remove it, or write the label's name".to_owned()
            )
        );
        // The variable takes them comma-separated.
        let mut settings = Settings::default();
        let labels = |settings: &mut Settings, value: &str| {
            let value = value.to_owned();
            (settings.apply_env(|name| (name == "RALPH_DELIVERY_LABELS").then(|| value.clone())))
                .map_err(|err| err.to_string())
        };
        labels(&mut settings, " ralph , needs review").unwrap();
        assert_eq!(settings.delivery_labels, ["ralph", "needs review"]);
        labels(&mut settings, "").unwrap();
        assert!(settings.delivery_labels.is_empty());
        assert_eq!(
            labels(&mut settings, "ralph,,x").unwrap_err(),
            "RALPH_DELIVERY_LABELS: an empty label; remove it, or write the label's name"
        );
    }
}
