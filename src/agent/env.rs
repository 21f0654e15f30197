//! The agent's environment: ralph's own, minus the variables that would make
//! an agent think it runs inside another agent's session, plus `RALPH_*`.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use super::Error;
use super::preset::Preset;

/// Variables a parent agent sets for its own tools; passed on, they would
/// make the agent ralph starts believe it is nested in that session.
pub const NESTED_SESSION_VARS: [&str; 8] = [
    "CLAUDECODE",
    "CLAUDE_CODE_ENTRYPOINT",
    "CLAUDE_CODE_SSE_PORT",
    "CODEX_SANDBOX",
    "CODEX_SANDBOX_NETWORK_DISABLED",
    "GEMINI_CLI",
    "QWEN_CODE",
    "OPENCODE",
];

/// Variables of ralph's environment a confined command keeps, whatever
/// its agent: where things are, the locale and terminal, the proxy and
/// certificates the network needs, and the usual tool homes.
const KEPT: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "TZ",
    "TMPDIR",
    "IS_SANDBOX",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "REQUESTS_CA_BUNDLE",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "GOPATH",
    "JAVA_HOME",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "NO_UPDATE_NOTIFIER",
    "CI",
];

/// Beginnings of the names a confined command keeps, whatever its agent:
/// the locale's, and ralph's own.
const KEPT_PREFIXES: &[&str] = &["LC_", "RALPH_"];

/// Beginnings of the names of the variables each preset's agent reads
/// (its API keys, endpoints and own settings), kept for it when
/// confined. A custom command gets those of the preset whose binary it
/// runs, else none (`sandbox.pass_env` names more).
pub(crate) fn preset_variables(preset: Option<Preset>) -> &'static [&'static str] {
    match preset {
        Some(Preset::Claude) => &[
            "ANTHROPIC_",
            "CLAUDE_",
            "DISABLE_",
            "MCP_",
            "MAX_THINKING_TOKENS",
            "BASH_DEFAULT_TIMEOUT_MS",
            "BASH_MAX_TIMEOUT_MS",
        ],
        Some(Preset::Codex) => &["OPENAI_", "CODEX_", "AZURE_OPENAI_"],
        Some(Preset::Opencode) => &[
            "OPENCODE_",
            "ANTHROPIC_",
            "OPENAI_",
            "OPENROUTER_",
            "GEMINI_",
            "GOOGLE_",
            "GROQ_",
            "DEEPSEEK_",
            "MISTRAL_",
            "XAI_",
        ],
        Some(Preset::Amp) => &["AMP_"],
        Some(Preset::Gemini) => &["GEMINI_", "GOOGLE_"],
        Some(Preset::Qwen) => &["QWEN_", "DASHSCOPE_", "OPENAI_"],
        Some(Preset::Aider) => &[
            "AIDER_",
            "OPENAI_",
            "ANTHROPIC_",
            "OPENROUTER_",
            "GEMINI_",
            "DEEPSEEK_",
            "GROQ_",
            "MISTRAL_",
            "XAI_",
        ],
        Some(Preset::Cursor) => &["CURSOR_"],
        None => &[],
    }
}

/// Whether a confined command of `preset`'s agent (a check: none) keeps
/// the variable `name`: the ones every command keeps, the preset's own,
/// and those `pass` (`sandbox.pass_env`) names. Nothing else: not
/// `SSH_AUTH_SOCK`, `TMUX`, `GITHUB_TOKEN` or any other secret of
/// ralph's, whose pushes and `gh` calls run outside.
pub(crate) fn kept_when_confined(name: &str, preset: Option<Preset>, pass: &[String]) -> bool {
    KEPT.contains(&name)
        || pass.iter().any(|kept| kept == name)
        || (KEPT_PREFIXES.iter())
            .chain(preset_variables(preset))
            .any(|prefix| name.starts_with(prefix))
            && !NESTED_SESSION_VARS.contains(&name)
}

/// `env` with only what a confined command keeps ([`kept_when_confined`]).
pub(crate) fn confined(
    env: Vec<(OsString, OsString)>,
    preset: Option<Preset>,
    pass: &[String],
) -> Vec<(OsString, OsString)> {
    env.into_iter()
        .filter(|(name, _)| {
            name.to_str()
                .is_some_and(|name| kept_when_confined(name, preset, pass))
        })
        .collect()
}

/// Facts about the machine agents run on, read once at the edge.
#[derive(Clone, Debug)]
pub struct Host {
    /// ralph's environment, the base of every agent's.
    pub env: Vec<(OsString, OsString)>,
    /// The project folder agents run in (absolute).
    pub project_dir: PathBuf,
    /// ralph's own executable, for `RALPH_BIN` and the front of `PATH`.
    pub ralph_bin: PathBuf,
    /// Whether ralph runs as root (claude then needs `IS_SANDBOX=1`).
    pub is_root: bool,
}

/// The variable that names the project to the agent, and so marks the
/// agent's processes as this project's.
pub(super) const PROJECT_DIR_VAR: &str = "RALPH_PROJECT_DIR";

/// `RALPH_PROJECT_DIR=<dir>` as it stands in an agent's environment (see
/// `platform::environment_has`) for a project at `dir`.
pub(super) fn project_marker(dir: &Path) -> std::io::Result<Vec<u8>> {
    let mut marker = format!("{PROJECT_DIR_VAR}=").into_bytes();
    marker.extend_from_slice(std::path::absolute(dir)?.as_os_str().as_encoded_bytes());
    Ok(marker)
}

impl Host {
    /// Reads the environment, ralph's executable and the user of this process.
    pub fn from_process(project_dir: &Path) -> Result<Host, Error> {
        Ok(Host {
            env: std::env::vars_os().collect(),
            project_dir: std::path::absolute(project_dir).map_err(Error::SelfPath)?,
            ralph_bin: std::env::current_exe().map_err(Error::SelfPath)?,
            is_root: nix::unistd::geteuid().is_root(),
        })
    }

    /// The value of `name` in ralph's environment.
    pub fn var(&self, name: &str) -> Option<&OsStr> {
        self.env
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_os_str())
    }

    /// `PATH` for agents: the folder of ralph's executable, then ralph's `PATH`.
    pub fn agent_path(&self) -> OsString {
        let inherited = self.var("PATH").map(OsStr::to_owned).unwrap_or_default();
        let Some(dir) = self
            .ralph_bin
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
        else {
            return inherited;
        };
        let mut dirs = vec![dir.to_owned()];
        dirs.extend(std::env::split_paths(&inherited));
        // A folder with `:` in its name cannot be on PATH; leave PATH alone.
        std::env::join_paths(dirs).unwrap_or(inherited)
    }
}

/// What the agent is told about the iteration through `RALPH_*` variables.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Context {
    /// `RALPH_TASK_ID`: the task being worked on.
    pub task_id: String,
    /// `RALPH_TASK_TITLE`: its title.
    pub task_title: String,
    /// `RALPH_ROLE`: the role of this iteration, empty without one.
    pub role: Option<String>,
    /// `RALPH_ITERATION`: the iteration number in this run.
    pub iteration: u64,
    /// `RALPH_TASK_ITERATION`: iterations spent on this task, this one included.
    pub task_iteration: u64,
    /// `RALPH_BRANCH`: the task's branch.
    pub branch: String,
    /// `RALPH_RUN_ID`: the run's id.
    pub run_id: String,
    /// `RALPH_WORKER`: the parallel worker's number (1..N), when there are
    /// workers.
    pub worker: Option<u32>,
}

/// The environment without iteration variables: ralph's, minus nested-session
/// variables, `PATH` led by ralph's folder, and `IS_SANDBOX=1` for claude as
/// root (it refuses to skip permissions as root otherwise).
pub(crate) fn base_environment(host: &Host, dialect: Option<Preset>) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = host
        .env
        .iter()
        .filter(|(key, _)| {
            let key = key.to_string_lossy();
            !NESTED_SESSION_VARS.contains(&key.as_ref()) && key != "PATH" && key != "IS_SANDBOX"
        })
        .cloned()
        .collect();
    env.push(("PATH".into(), host.agent_path()));
    if dialect == Some(Preset::Claude) && host.is_root {
        env.push(("IS_SANDBOX".into(), "1".into()));
    } else if let Some(value) = host.var("IS_SANDBOX") {
        env.push(("IS_SANDBOX".into(), value.to_owned()));
    }
    env
}

/// The full environment of one iteration's agent.
pub(crate) fn environment(
    host: &Host,
    dialect: Option<Preset>,
    context: &Context,
    prompt_file: &Path,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = base_environment(host, dialect)
        .into_iter()
        .filter(|(key, _)| !key.to_string_lossy().starts_with("RALPH_"))
        .collect();
    let mut set = |key: &str, value: OsString| env.push((key.into(), value));
    set("RALPH_TASK_ID", context.task_id.clone().into());
    set("RALPH_TASK_TITLE", context.task_title.clone().into());
    set(
        "RALPH_ROLE",
        context.role.clone().unwrap_or_default().into(),
    );
    set("RALPH_ITERATION", context.iteration.to_string().into());
    set(
        "RALPH_TASK_ITERATION",
        context.task_iteration.to_string().into(),
    );
    set("RALPH_BRANCH", context.branch.clone().into());
    set("RALPH_PROMPT_FILE", prompt_file.as_os_str().to_owned());
    set(PROJECT_DIR_VAR, host.project_dir.as_os_str().to_owned());
    set("RALPH_RUN_ID", context.run_id.clone().into());
    if let Some(worker) = context.worker {
        set("RALPH_WORKER", worker.to_string().into());
    }
    set("RALPH_BIN", host.ralph_bin.as_os_str().to_owned());
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(is_root: bool) -> Host {
        Host {
            env: vec![
                ("PATH".into(), "/usr/bin:/bin".into()),
                ("HOME".into(), "/home/me".into()),
                ("CLAUDECODE".into(), "1".into()),
                ("CLAUDE_CODE_ENTRYPOINT".into(), "cli".into()),
                ("RALPH_TASK_ID".into(), "OLD".into()),
                ("RALPH_MAX_ITERATIONS".into(), "3".into()),
            ],
            project_dir: "/p".into(),
            ralph_bin: "/opt/ralph/bin/ralph".into(),
            is_root,
        }
    }

    fn get<'a>(env: &'a [(OsString, OsString)], key: &str) -> Vec<&'a str> {
        env.iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.to_str().unwrap())
            .collect()
    }

    #[test]
    fn a_confined_agent_keeps_its_presets_keys_and_no_secret_of_ralphs() {
        let env: Vec<(OsString, OsString)> = [
            "PATH",
            "HOME",
            "LC_ALL",
            "TERM",
            "ANTHROPIC_API_KEY",
            "CLAUDE_CODE_OAUTH_TOKEN",
            "CLAUDECODE",
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "SSH_AUTH_SOCK",
            "GPG_AGENT_INFO",
            "TMUX",
            "TMUX_PANE",
            "DBUS_SESSION_BUS_ADDRESS",
            "AWS_SECRET_ACCESS_KEY",
            "DATABASE_URL",
            "RALPH_TASK_ID",
        ]
        .iter()
        .map(|name| (OsString::from(name), OsString::from("v")))
        .collect();
        let names = |preset, pass: &[String]| -> Vec<String> {
            confined(env.clone(), preset, pass)
                .into_iter()
                .map(|(name, _)| name.into_string().unwrap())
                .collect()
        };
        assert_eq!(
            names(Some(Preset::Claude), &[]),
            [
                "PATH",
                "HOME",
                "LC_ALL",
                "TERM",
                "ANTHROPIC_API_KEY",
                "CLAUDE_CODE_OAUTH_TOKEN",
                "RALPH_TASK_ID"
            ]
        );
        assert_eq!(
            names(Some(Preset::Codex), &[]),
            [
                "PATH",
                "HOME",
                "LC_ALL",
                "TERM",
                "OPENAI_API_KEY",
                "RALPH_TASK_ID"
            ]
        );
        // A check, or a custom command: the common ones, and what the
        // user passes.
        assert_eq!(
            names(None, &["DATABASE_URL".to_owned()]),
            [
                "PATH",
                "HOME",
                "LC_ALL",
                "TERM",
                "DATABASE_URL",
                "RALPH_TASK_ID"
            ]
        );
    }

    #[test]
    fn nested_session_variables_are_dropped_and_path_leads_with_ralph() {
        let env = base_environment(&host(false), Some(Preset::Claude));
        assert!(get(&env, "CLAUDECODE").is_empty());
        assert!(get(&env, "CLAUDE_CODE_ENTRYPOINT").is_empty());
        assert_eq!(get(&env, "HOME"), ["/home/me"]);
        assert_eq!(get(&env, "PATH"), ["/opt/ralph/bin:/usr/bin:/bin"]);
        assert!(get(&env, "IS_SANDBOX").is_empty());
    }

    #[test]
    fn claude_as_root_runs_as_a_sandbox() {
        let env = base_environment(&host(true), Some(Preset::Claude));
        assert_eq!(get(&env, "IS_SANDBOX"), ["1"]);
        let env = base_environment(&host(true), Some(Preset::Codex));
        assert!(get(&env, "IS_SANDBOX").is_empty());
    }

    #[test]
    fn iteration_variables_replace_inherited_ones() {
        let context = Context {
            task_id: "A.1".into(),
            task_title: "Do it".into(),
            role: None,
            iteration: 3,
            task_iteration: 2,
            branch: "task/A.1-do-it".into(),
            run_id: "r1".into(),
            worker: Some(2),
        };
        let env = environment(
            &host(false),
            None,
            &context,
            Path::new("/p/.ralph/prompts/3-A.1.md"),
        );
        assert_eq!(get(&env, "RALPH_TASK_ID"), ["A.1"]);
        assert_eq!(get(&env, "RALPH_ROLE"), [""]);
        assert_eq!(get(&env, "RALPH_ITERATION"), ["3"]);
        assert_eq!(get(&env, "RALPH_TASK_ITERATION"), ["2"]);
        assert_eq!(
            get(&env, "RALPH_PROMPT_FILE"),
            ["/p/.ralph/prompts/3-A.1.md"]
        );
        assert_eq!(get(&env, "RALPH_PROJECT_DIR"), ["/p"]);
        assert_eq!(get(&env, "RALPH_BIN"), ["/opt/ralph/bin/ralph"]);
        assert_eq!(get(&env, "RALPH_MAX_ITERATIONS"), Vec::<&str>::new());
        assert_eq!(get(&env, "RALPH_WORKER"), ["2"]);
    }
}
