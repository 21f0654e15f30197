//! The Codex app-server as an agent backend (`agent.preset:
//! codex-app-server`): each iteration starts `codex app-server` in the
//! task's checkout, in a process group of its own, with ralph's
//! environment and a temporary folder of its own, and runs one turn with
//! the prompt as its input. ralph answers every approval by its policy
//! (`policy.rs`), writes every command, file change and message to the
//! iteration's transcript as it happens, owns the deadline (the turn is
//! interrupted, the server shut down, its processes ended) and reads the
//! turn's failure from its error. With `agent.mode: session_loop` the
//! task's thread is resumed in its next iteration. See docs/AGENT.md.

mod policy;
mod rpc;
mod turn;

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::backend::{Backend, Mode};
use super::capture::{BoundedLog, Capture, Captured, Echo};
use super::env::Host;
use super::error::Error;
use super::preset::Preset;
use super::process::{Outcome, Request};
use super::supervisor::Deadline;
use super::{FailureClass, PromptPassing, Status};
use crate::config::AgentSettings;
use crate::files::{PathError, own};

/// The preset's name.
pub const PRESET: &str = "codex-app-server";

/// The codex versions whose app-server ralph was tested with.
pub const TESTED_VERSIONS: &str = "0.169";

/// The variable that marks every process of one turn (see
/// `rpc::Server::shut_down`).
const SESSION_VAR: &str = "RALPH_AGENT_SESSION";

/// How long the server has to end once its input is closed.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// The Codex app-server backend.
pub struct AppServer {
    settings: AgentSettings,
    /// The server's command line: `codex app-server`, or the agent
    /// command the settings give.
    argv: Vec<String>,
    host: Host,
    /// Each task's thread, for `session_loop`.
    threads: HashMap<String, String>,
}

impl AppServer {
    /// The backend the settings describe; `agent_cmd` (or
    /// `agent.command`) replaces `codex app-server` as the server's
    /// command line.
    pub fn new(
        settings: &AgentSettings,
        agent_cmd: Option<&str>,
        host: Host,
    ) -> Result<AppServer, Error> {
        let argv = match agent_cmd.or(settings.command.as_deref()) {
            Some(line) => shlex::split(line)
                .filter(|words| !words.is_empty())
                .ok_or_else(|| Error::BadCommand {
                    command: line.to_owned(),
                    reason: "it has an unclosed quote, or no words",
                })?,
            None => vec!["codex".to_owned(), "app-server".to_owned()],
        };
        policy::Policy::new(&host.project_dir, &settings.deny)
            .map_err(|reason| Error::BadDeny { reason })?;
        Ok(AppServer {
            settings: settings.clone(),
            argv,
            host,
            threads: HashMap::new(),
        })
    }

    /// Whether the server is codex's own (not a command of the settings).
    fn is_codex(&self) -> bool {
        self.argv == ["codex", "app-server"]
    }

    /// The program, found as the CLI backend finds its own.
    fn program(&self) -> Result<PathBuf, Error> {
        let spec = super::Spec::new(
            &AgentSettings {
                preset: None,
                command: Some(
                    shlex::try_join(self.argv.iter().map(String::as_str)).unwrap_or_default(),
                ),
                ..self.settings.clone()
            },
            None,
            None,
        )?;
        super::process::resolve(&spec, &self.host)
    }

    /// `codex --version`'s version, and whether it is one ralph was tested
    /// with; `None` when it cannot be asked (a server of the settings).
    pub fn version(&self) -> Option<(String, bool)> {
        if !self.is_codex() {
            return None;
        }
        let program = self.program().ok()?;
        let output = Command::new(program)
            .arg("--version")
            .env_clear()
            .envs(self.host.env.iter().cloned())
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        let version = text.rsplit(' ').next().unwrap_or_default().to_owned();
        let tested =
            version == TESTED_VERSIONS || version.starts_with(&format!("{TESTED_VERSIONS}."));
        Some((version, tested))
    }

    /// The environment of the server (and so of every command the agent
    /// runs): the agent's, with a temporary folder of the server's own.
    fn environment(
        &self,
        request: &Request<'_>,
        tmp: &Path,
        marker: &str,
    ) -> Vec<(OsString, OsString)> {
        let mut env = request.environment(&self.host, Some(Preset::Codex));
        env.retain(|(key, _)| key != "TMPDIR");
        env.push(("TMPDIR".into(), tmp.as_os_str().to_owned()));
        let (key, value) = marker.split_once('=').expect("a marker is NAME=value");
        env.push((key.into(), value.into()));
        env
    }

    /// The folders the agent may write beside its checkout: the project's
    /// `.ralph/` (and the project itself for a worker in a worktree: the
    /// queue files live there), and the server's temporary folder.
    fn writable(&self, checkout: &Path, tmp: &Path) -> Vec<String> {
        let mut roots = vec![
            checkout.to_owned(),
            self.host.project_dir.join(".ralph"),
            tmp.to_owned(),
        ];
        if checkout != self.host.project_dir {
            roots.push(self.host.project_dir.clone());
        }
        roots
            .iter()
            .map(|root| root.display().to_string())
            .collect()
    }
}

impl Backend for AppServer {
    fn label(&self) -> String {
        match self.is_codex() {
            true => format!("`{PRESET}`"),
            false => format!("{PRESET} command `{}`", self.argv.join(" ")),
        }
    }

    fn model(&self) -> Option<&str> {
        self.settings.model.as_deref()
    }

    fn modes(&self) -> &'static [Mode] {
        &[Mode::RalphFresh, Mode::SessionLoop]
    }

    fn login_hint(&self) -> &'static str {
        Preset::Codex.login_hint()
    }

    fn preflight(&self) -> Result<(), Error> {
        self.program()?;
        if !self.is_codex() {
            return Ok(());
        }
        // The same login check the `codex` preset makes: without
        // credentials codex retries forever.
        let codex = AgentSettings {
            preset: Some("codex".to_owned()),
            command: None,
            ..self.settings.clone()
        };
        super::process::preflight(&super::Spec::new(&codex, None, None)?, &self.host)
    }

    fn check_model(&self, _model: &str) -> Result<(), Error> {
        Ok(())
    }

    fn command_line(
        &self,
        _prompt_file: &Path,
        _prompt: &str,
        _model: Option<&str>,
    ) -> Result<Vec<String>, Error> {
        Ok(self.argv.clone())
    }

    fn iterate(&mut self, request: &Request<'_>) -> Result<Outcome, Error> {
        let started = Instant::now();
        let program = self.program()?;
        let checkout = request
            .work_dir
            .unwrap_or(&self.host.project_dir)
            .to_owned();
        let root = &self.host.project_dir;
        let tmp = root.join(".ralph/tmp/codex");
        own::create_dir(root, &tmp).map_err(log_error(&tmp))?;
        // Kept whole: its lines are ralph's, a command's output cut short.
        let log = BoundedLog::create(root, request.log_file, u64::MAX)?;
        let mut transcript = Capture::new(Some(log), Echo::Off);
        let policy = policy::Policy::new(&checkout, &self.settings.deny)
            .map_err(|reason| Error::BadDeny { reason })?;
        let stderr_file = request.log_file.with_extension("stderr");
        // Every process of this turn carries it, so none outlives it.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos());
        let marker = format!(
            "{SESSION_VAR}={}-{}-{nanos}",
            std::process::id(),
            request.context.iteration
        );
        // The server, and every command it runs, inside the sandbox if any.
        let mut command = request.command(&program);
        command
            .args(&self.argv[1..])
            .current_dir(&checkout)
            .env_clear()
            .envs(self.environment(request, &tmp, &marker));
        let mut server = rpc::Server::start(command, &stderr_file, request.group_file)
            .map_err(Error::spawn(self.label(), &program))?;
        let session = self.settings.mode == Mode::SessionLoop;
        let thread = session
            .then(|| self.threads.get(&request.context.task_id).cloned())
            .flatten();
        if session && thread.is_none() && request.context.task_iteration > 1 {
            transcript.line("ralph: the task's thread is not known to this run; a new thread");
        }
        let cwd = checkout.display().to_string();
        let ask = turn::Ask {
            cwd: &cwd,
            prompt: request.prompt,
            model: request.model.or(self.settings.model.as_deref()),
            sandbox: self.settings.server_sandbox.into(),
            writable: self.writable(&checkout, &tmp),
            thread: thread.as_deref(),
            deadline: Deadline {
                at: started + request.limits.timeout,
                cancel: request.cancel,
            },
            activity: request.activity,
        };
        let turned = turn::run(&mut server, &ask, &policy, &mut transcript);
        let exit = server.shut_down(SHUTDOWN_GRACE, marker.as_bytes());
        transcript.line(&format!(
            "ralph: the app-server ended ({})",
            exit.map_or("killed".to_owned(), |exit| exit.to_string())
        ));
        match (&turned.thread, session) {
            (Some(thread), true) => {
                self.threads
                    .insert(request.context.task_id.clone(), thread.clone());
            }
            _ => {
                self.threads.remove(&request.context.task_id);
            }
        }
        Ok(outcome(turned, transcript.finish(None)?, started, request))
    }
}

/// The iteration's outcome from how its turn went.
fn outcome(
    turned: turn::Turned,
    transcript: Captured,
    started: Instant,
    request: &Request<'_>,
) -> Outcome {
    let mut receipt = Map::new();
    receipt.insert("thread".into(), json!(turned.thread));
    for (key, value) in [
        ("approvals_accepted", turned.accepted),
        ("approvals_declined", turned.declined),
        ("requests_refused", turned.refused_requests),
        ("commands", turned.commands),
        ("files_changed_by_agent", turned.files_changed),
    ] {
        receipt.insert(key.into(), Value::from(value));
    }
    let failure = turned.failure;
    let status = Status::Turn(match turned.status {
        Some(status) => status,
        None if failure
            .as_ref()
            .is_some_and(|f| f.class == FailureClass::Timeout) =>
        {
            "interrupted"
        }
        None => "failed",
    });
    Outcome {
        status,
        timed_out: turned.timed_out,
        interrupted: turned.interrupted,
        duration: started.elapsed(),
        output_bytes: transcript.bytes,
        tail: transcript.tail,
        failure,
        usage: turned.usage,
        passing: PromptPassing::Stdin,
        transcript: request.log_file.to_owned(),
        receipt,
    }
}

/// Whether the settings choose this backend.
pub(super) fn chosen(settings: &AgentSettings) -> bool {
    settings.preset.as_deref() == Some(PRESET)
}

/// Makes a failure to write the turn's log at `path` an [`Error::Log`].
fn log_error(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Log(PathError::new(path, source))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_is_codex_unless_the_settings_name_another() {
        let host = Host {
            env: Vec::new(),
            project_dir: PathBuf::from("/p"),
            ralph_bin: PathBuf::from("/usr/bin/ralph"),
            is_root: false,
        };
        let settings = AgentSettings {
            preset: Some(PRESET.to_owned()),
            ..AgentSettings::default()
        };
        let codex = AppServer::new(&settings, None, host.clone()).unwrap();
        assert_eq!(codex.argv, ["codex", "app-server"]);
        assert_eq!(codex.label(), "`codex-app-server`");
        assert_eq!(codex.modes(), [Mode::RalphFresh, Mode::SessionLoop]);
        let fake = AppServer::new(&settings, Some("python3 fake.py ok"), host.clone()).unwrap();
        assert_eq!(fake.argv, ["python3", "fake.py", "ok"]);
        assert_eq!(
            fake.label(),
            "codex-app-server command `python3 fake.py ok`"
        );
        assert_eq!(
            fake.writable(
                Path::new("/p/.ralph/worktrees/A"),
                Path::new("/p/.ralph/tmp/codex")
            ),
            [
                "/p/.ralph/worktrees/A",
                "/p/.ralph",
                "/p/.ralph/tmp/codex",
                "/p"
            ]
        );
        let bad = AgentSettings {
            deny: vec!["(".to_owned()],
            ..settings
        };
        assert!(AppServer::new(&bad, None, host).is_err());
    }
}
