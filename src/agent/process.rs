//! Running an agent's command-line program once: its command and
//! environment, run under the supervisor (`supervisor.rs`), and what its
//! output says.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use chrono::Utc;

use super::Error;
use super::capture::{BoundedLog, Capture, Echo};
use super::classify::{Failure, Status, judge};
use super::env::{Context, Host, base_environment, environment};
use super::login::LoginWatch;
use super::preset::Preset;
use super::spec::PromptPassing;
use super::spec::{Invocation, Spec};
use super::supervisor::{Limits, supervise};
use super::transcript::{Transcript, Usage};
use crate::config::ShowDuration;

/// Time limit of the preflight login check.
const PREFLIGHT_TIMEOUT: Duration = Duration::from_secs(30);

/// One iteration's agent run, as the loop asks for it.
#[derive(Clone, Copy)]
pub struct Request<'a> {
    /// The `RALPH_*` facts about the iteration.
    pub context: &'a Context,
    /// The prompt text.
    pub prompt: &'a str,
    /// Where the caller saved the prompt (relative to the project or
    /// absolute; a worker's prompts are the project's too).
    pub prompt_file: &'a Path,
    /// Where the output goes (`.ralph/logs/<iteration>-<task>.log`).
    pub log_file: &'a Path,
    /// Time and size limits.
    pub limits: Limits,
    /// Set (by a Ctrl-C handler) to stop the agent; the outcome then says
    /// `interrupted`.
    pub cancel: Option<&'a AtomicBool>,
    /// Whether to echo the output while it runs.
    pub echo: Echo,
    /// Where to note the agent's process group while it runs, so a run
    /// after a `kill -9` of ralph can stop it ([`stop_leftover_group`]).
    pub group_file: Option<&'a Path>,
    /// The folder the agent works in when not the project's (a pooled
    /// worker's task worktree).
    pub work_dir: Option<&'a Path>,
    /// The model the iteration's role asks for, over the agent's own.
    pub model: Option<&'a str>,
    /// Told, while the iteration runs, each thing the agent does that a
    /// structured backend reports (`command`, `file_change`, ...), with a
    /// line saying it.
    pub activity: Option<&'a Activity<'a>>,
    /// The confinement the agent's command runs in, if any.
    pub confinement: Option<&'a Confinement>,
}

impl Request<'_> {
    /// The agent's environment on `host`, for `dialect`, confined as asked.
    pub(super) fn environment(
        &self,
        host: &Host,
        dialect: Option<Preset>,
    ) -> Vec<(OsString, OsString)> {
        let prompt_file = host.project_dir.join(self.prompt_file);
        let env = environment(host, dialect, self.context, &prompt_file);
        match self.confinement {
            Some(confinement) => confinement.environment(env, dialect),
            None => env,
        }
    }

    /// A command running `program`, in the request's confinement if any.
    pub(super) fn command(&self, program: &Path) -> Command {
        match self.confinement {
            Some(confinement) => confinement.command(program),
            None => Command::new(program),
        }
    }
}

/// A confinement of the agent's process (bubblewrap, sandbox-exec): the
/// program and arguments put before the agent's command line, and the
/// private temporary folder it gets as `TMPDIR`.
#[derive(Clone, Debug, PartialEq)]
pub struct Confinement {
    /// The confining program.
    pub program: PathBuf,
    /// Its arguments, before the agent's program.
    pub args: Vec<std::ffi::OsString>,
    /// The agent's temporary folder, writable and its alone.
    pub tmp: PathBuf,
    /// `sandbox.pass_env`: variables kept beside those every confined
    /// command keeps (`env::kept_when_confined`).
    pub pass_env: Vec<String>,
}

impl Confinement {
    /// `env` as a command confined here gets it: only what it keeps, and
    /// its private temporary folder as `TMPDIR`.
    pub fn environment(
        &self,
        env: Vec<(OsString, OsString)>,
        dialect: Option<Preset>,
    ) -> Vec<(OsString, OsString)> {
        let mut env = super::env::confined(env, dialect, &self.pass_env);
        env.retain(|(key, _)| key != "TMPDIR");
        env.push(("TMPDIR".into(), self.tmp.clone().into_os_string()));
        env
    }

    /// A command running `program` confined here.
    pub fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.args).arg(program);
        command
    }
}

/// Told what the agent does while it runs: its kind (`command`,
/// `file_change`, ...) and a line saying it.
pub type Activity<'a> = dyn Fn(&str, &str) + Sync + 'a;

/// What happened when the agent ran.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// How the agent's process ended.
    pub status: Status,
    /// Whether it was stopped for running past the timeout.
    pub timed_out: bool,
    /// Whether it was stopped because the run was cancelled.
    pub interrupted: bool,
    /// From start until the agent's process ended.
    pub duration: Duration,
    /// Bytes of output in total (the log keeps at most the limit).
    pub output_bytes: u64,
    /// The last few KB of output, for evidence.
    pub tail: String,
    /// Why the run failed; `None` when it succeeded or was interrupted.
    pub failure: Option<Failure>,
    /// Tokens and cost, when the tool reported them.
    pub usage: Option<Usage>,
    /// How the prompt reached the agent.
    pub passing: PromptPassing,
    /// Where the iteration's transcript is (the agent's output, bounded).
    pub transcript: PathBuf,
    /// What the backend adds to the iteration's receipt.
    pub receipt: serde_json::Map<String, serde_json::Value>,
}

impl Outcome {
    /// Whether the agent did its job: not interrupted and no failure.
    pub fn succeeded(&self) -> bool {
        !self.interrupted && self.failure.is_none()
    }
}

/// Runs the agent once for an iteration and reports what happened; an
/// error means it could not be started (or its log not written).
pub fn run(spec: &Spec, host: &Host, request: &Request<'_>) -> Result<Outcome, Error> {
    let work_dir = request.work_dir.unwrap_or(&host.project_dir);
    let prompt_file = host.project_dir.join(request.prompt_file);
    let invocation = spec.invocation(&prompt_file, request.prompt)?;
    let dialect = spec.dialect();
    let env = request.environment(host, dialect);
    let program = resolve(spec, host)?;
    trace_command(&program, &invocation, request.prompt, &env);
    let log = BoundedLog::create(
        &host.project_dir,
        request.log_file,
        request.limits.log_bytes,
    )?;
    let mut command = request.command(&program);
    command
        .args(&invocation.args)
        .current_dir(work_dir)
        .env_clear()
        .envs(env);
    let stdin =
        (invocation.passing == PromptPassing::Stdin).then(|| request.prompt.as_bytes().to_vec());
    let mut capture = Capture::new(Some(log), request.echo);
    let mut login = LoginWatch::for_dialect(dialect);
    let ended = supervise(
        command,
        stdin,
        &mut capture,
        &request.limits,
        request.cancel,
        request.group_file,
        login.as_mut(),
    )
    .map_err(Error::spawn(spec.label(), &program))?;
    let captured = capture.finish(Some(request.log_file))?;
    let failure = if ended.interrupted {
        None
    } else {
        judge(
            dialect,
            ended.status,
            ended.timed_out.then_some(request.limits.timeout),
            &captured.text,
            Utc::now(),
        )
    };
    tracing::debug!(
        status = %ended.status,
        duration_ms = crate::trace::ms(ended.duration),
        timed_out = ended.timed_out,
        interrupted = ended.interrupted,
        output_bytes = captured.bytes,
        class = failure.as_ref().map(|failure| failure.class.as_str()),
        "agent ended"
    );
    let mut receipt = serde_json::Map::new();
    if request.confinement.is_some() {
        // What the sandbox refused, so a person can widen it.
        let refused = crate::platform::sandbox::refused_paths(&captured.text);
        if !refused.is_empty() {
            receipt.insert("refused_writes".into(), refused.into());
        }
    }
    Ok(Outcome {
        status: ended.status,
        timed_out: ended.timed_out,
        interrupted: ended.interrupted,
        duration: ended.duration,
        output_bytes: captured.bytes,
        tail: captured.tail,
        failure,
        usage: Transcript::read(dialect, &captured.text).usage,
        passing: invocation.passing,
        transcript: request.log_file.to_path_buf(),
        receipt,
    })
}

/// Logs (at debug level) the agent's command line, redacted as ralph.log
/// is and with a prompt passed on it shown as `{prompt}`, and the names of
/// the variables of its environment: never their values, which may be
/// secrets.
fn trace_command(
    program: &Path,
    invocation: &Invocation,
    prompt: &str,
    env: &[(OsString, OsString)],
) {
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    let mut argv = vec![program.display().to_string()];
    argv.extend(invocation.args.iter().map(|arg| {
        let arg = arg.to_string_lossy();
        let arg = match invocation.passing {
            PromptPassing::Argv if !prompt.is_empty() => arg.replace(prompt, "{prompt}"),
            _ => arg.into_owned(),
        };
        crate::redact::redact(&arg).into_owned()
    }));
    tracing::debug!(
        ?argv,
        passing = ?invocation.passing,
        prompt_bytes = prompt.len(),
        "agent command"
    );
    let mut names: Vec<_> = env.iter().map(|(name, _)| name.to_string_lossy()).collect();
    names.sort();
    names.dedup();
    tracing::debug!(
        count = names.len(),
        ?names,
        "agent environment (names only)"
    );
}

/// Checks once, at the start of a run, that the agent can work: its
/// program is installed, and for codex that `codex login status` says it
/// is logged in (without credentials codex retries forever).
pub fn preflight(spec: &Spec, host: &Host) -> Result<(), Error> {
    let program = resolve(spec, host)?;
    if spec.dialect() != Some(Preset::Codex) {
        return Ok(());
    }
    let mut command = Command::new(&program);
    command
        .args(["login", "status"])
        .current_dir(&host.project_dir)
        .env_clear()
        .envs(base_environment(host, spec.dialect()));
    let mut capture = Capture::new(None, Echo::Off);
    let limits = Limits {
        timeout: PREFLIGHT_TIMEOUT,
        grace: Duration::from_secs(1),
        log_bytes: 0,
    };
    let ended = supervise(command, None, &mut capture, &limits, None, None, None)
        .map_err(Error::spawn(spec.label(), &program))?;
    let output = capture.finish(None)?.text;
    let detail = output
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("no output")
        .to_owned();
    match ended.status {
        _ if ended.timed_out => Err(Error::Preflight {
            preset: Preset::Codex,
            detail: format!(
                "`codex login status` did not answer within {}",
                ShowDuration(PREFLIGHT_TIMEOUT)
            ),
        }),
        Status::Exited(0) => Ok(()),
        Status::Exited(1) => Err(Error::NotLoggedIn {
            preset: Preset::Codex,
            detail,
        }),
        status => Err(Error::Preflight {
            preset: Preset::Codex,
            detail: format!("`codex login status` failed with {status}: {detail}"),
        }),
    }
}

/// Finds the agent's program: a path is taken relative to the project, a
/// bare name is looked up on the agent's `PATH`.
pub fn resolve(spec: &Spec, host: &Host) -> Result<PathBuf, Error> {
    let program = spec.program();
    let missing = |path: Option<PathBuf>| Error::MissingBinary {
        preset: spec.named_preset(),
        program: program.to_owned(),
        path,
    };
    if program.contains('/') {
        let relative: PathBuf = Path::new(program)
            .components()
            .filter(|part| *part != Component::CurDir)
            .collect();
        let path = host.project_dir.join(relative);
        return if crate::files::is_executable(&path) {
            Ok(path)
        } else if path.is_file() {
            Err(Error::NotExecutable { path })
        } else {
            Err(missing(Some(path)))
        };
    }
    std::env::split_paths(&host.agent_path())
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| host.project_dir.join(dir).join(program))
        .find(|path| crate::files::is_executable(path))
        .ok_or_else(|| missing(None))
}
