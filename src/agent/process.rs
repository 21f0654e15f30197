//! Running an agent: spawn it in its own process group, feed the prompt,
//! capture the output, enforce the time limit and cancellation, and leave
//! no process of the group behind.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Component, Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use chrono::Utc;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::Error;
use super::capture::{BoundedLog, Capture, Echo};
use super::classify::{Failure, Status, judge};
use super::env::{Context, Host, base_environment, environment};
use super::login::LoginWatch;
use super::preset::Preset;
use super::spec::PromptPassing;
use super::spec::{Invocation, Spec};
use super::transcript::{Transcript, Usage};
use crate::config::ShowDuration;

/// How often the supervisor looks at the process, the clock and the flag.
const TICK: Duration = Duration::from_millis(10);
/// How long to wait for a SIGKILLed group to disappear.
const KILL_WAIT: Duration = Duration::from_secs(2);
/// How long to wait for the last output once the group is gone; a process
/// that left the group may hold the pipe open forever.
const DRAIN_WAIT: Duration = Duration::from_millis(500);
/// Output chunks in flight between the reader thread and the supervisor.
const CHANNEL_CHUNKS: usize = 16;
/// Bytes read from the agent at a time.
const CHUNK_BYTES: usize = 64 * 1024;
/// Time limit of the preflight login check.
const PREFLIGHT_TIMEOUT: Duration = Duration::from_secs(30);

/// Time and size limits of one agent run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// How long the agent may run before its group is stopped.
    pub timeout: Duration,
    /// Between SIGTERM and SIGKILL when the group is stopped.
    pub grace: Duration,
    /// The most bytes the log file keeps (the tail is kept).
    pub log_bytes: u64,
}

impl Limits {
    /// Default time between SIGTERM and SIGKILL.
    pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);
    /// Default size limit of a log file.
    pub const DEFAULT_LOG_BYTES: u64 = 8 * 1024 * 1024;
}

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
    let mut env = environment(host, dialect, request.context, &prompt_file);
    if let Some(confinement) = request.confinement {
        env = confinement.environment(env, dialect);
    }
    let program = resolve(spec, host)?;
    trace_command(&program, &invocation, request.prompt, &env);
    let log = BoundedLog::create(
        &host.project_dir,
        request.log_file,
        request.limits.log_bytes,
    )?;
    let mut command = match request.confinement {
        Some(confinement) => confinement.command(&program),
        None => Command::new(&program),
    };
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
    .map_err(|source| Error::Spawn {
        agent: spec.label(),
        program: program.clone(),
        source,
    })?;
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
    let ended =
        supervise(command, None, &mut capture, &limits, None, None, None).map_err(|source| {
            Error::Spawn {
                agent: spec.label(),
                program: program.clone(),
                source,
            }
        })?;
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
        return if is_executable(&path) {
            Ok(path)
        } else {
            Err(missing(Some(path)))
        };
    }
    std::env::split_paths(&host.agent_path())
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| host.project_dir.join(dir).join(program))
        .find(|path| is_executable(path))
        .ok_or_else(|| missing(None))
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// How a supervised process ended.
pub(super) struct Ended {
    pub(super) status: Status,
    pub(super) timed_out: bool,
    pub(super) interrupted: bool,
    pub(super) duration: Duration,
}

/// Where the supervisor is in stopping the group.
#[derive(Clone, Copy, PartialEq)]
enum Stopping {
    Not,
    Termed(Instant),
    Killed(Instant),
}

/// The process groups [`supervise`] runs now, for [`kill_live_groups`].
static LIVE_GROUPS: std::sync::Mutex<Vec<Pid>> = std::sync::Mutex::new(Vec::new());

/// Keeps a group in [`LIVE_GROUPS`] while it lives in this value.
pub(super) struct Registered(Pid);

impl Registered {
    pub(super) fn new(group: Pid) -> Registered {
        let mut groups = LIVE_GROUPS.lock().unwrap_or_else(|e| e.into_inner());
        groups.push(group);
        Registered(group)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut groups = LIVE_GROUPS.lock().unwrap_or_else(|e| e.into_inner());
        groups.retain(|group| *group != self.0);
    }
}

/// Kills (SIGKILL) every process group ralph runs now: agents and
/// checks, with everything they started. Their supervisors then see them
/// end as usual, so the run still saves its state and its result.
pub fn kill_live_groups() {
    let groups = LIVE_GROUPS.lock().unwrap_or_else(|e| e.into_inner());
    for group in groups.iter() {
        signal_group(*group, Signal::SIGKILL);
    }
}

/// Has the child write its process id, which is its group's, to `path`
/// before it runs anything: ralph writes it there after the spawn too, but
/// a ralph killed with -9 in between would leave an agent nobody knows of,
/// working in the tree under the next run.
#[allow(unsafe_code)]
pub(super) fn child_notes_its_group(command: &mut Command, path: &Path) {
    use nix::libc;
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return;
    };
    let note = move || {
        // SAFETY: run in the child between fork and exec, where only
        // async-signal-safe calls may be made: getpid, open, write and
        // close, on memory made before the fork; a failure is ignored.
        unsafe {
            let mut digits = [0u8; 12];
            let mut at = digits.len();
            let mut pid = libc::getpid().unsigned_abs();
            loop {
                at -= 1;
                digits[at] = b'0' + (pid % 10) as u8;
                pid /= 10;
                if pid == 0 {
                    break;
                }
            }
            // Never through a link an agent put there.
            let flags =
                libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC | libc::O_NOFOLLOW;
            let fd = libc::open(path.as_ptr(), flags, 0o644 as libc::c_uint);
            if fd >= 0 {
                libc::write(fd, digits[at..].as_ptr().cast(), digits.len() - at);
                libc::close(fd);
            }
        }
        Ok(())
    };
    // SAFETY: `note` makes only async-signal-safe calls (above).
    unsafe {
        command.pre_exec(note);
    }
}

/// Notes `pid`, an agent's process group, in `path` (`.ralph/agent.pgid`),
/// best effort, never through a link.
pub(super) fn note_group(path: &Path, pid: u32) {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    let dir = crate::files::parent_dir(path);
    if let Ok(mut file) = crate::files::own::open(dir, path, &options) {
        let _ = std::io::Write::write_all(&mut file, pid.to_string().as_bytes());
    }
}

/// Runs `command` in its own process group with stdout and stderr merged
/// into `capture`, writes `stdin` (then closes it) from a thread, and stops
/// the whole group (SIGTERM, SIGKILL after the grace) on timeout, on
/// cancellation and after the leader exits.
pub(super) fn supervise(
    mut command: Command,
    stdin: Option<Vec<u8>>,
    capture: &mut Capture,
    limits: &Limits,
    cancel: Option<&AtomicBool>,
    group_file: Option<&Path>,
    mut login: Option<&mut LoginWatch>,
) -> std::io::Result<Ended> {
    let (reader, writer) = std::io::pipe()?;
    command
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .process_group(0);
    if let Some(path) = group_file {
        child_notes_its_group(&mut command, path);
    }
    let spawned = command.spawn();
    // The command holds our copies of the pipe's write end: drop them so the
    // reader sees the end of output when the group is gone.
    drop(command);
    let mut child = spawned?;
    let started = Instant::now();
    // The process group's id is the leader's pid.
    tracing::debug!(pid = child.id(), "started in its own process group");
    let group = Pid::from_raw(child.id() as i32);
    let _registered = Registered::new(group);
    if let Some(path) = group_file {
        crate::fault::crash_at("after_spawn");
        // A ralph killed with -9 leaves this behind; the next run stops the
        // group. No fsync: a power cut ends the group too. The child wrote
        // the same already (when it could): this covers it if it could not.
        note_group(path, child.id());
    }
    if crate::fault::armed("mid_agent") {
        std::thread::sleep(Duration::from_millis(200));
        crate::fault::crash_at("mid_agent");
    }
    let output = match start_threads(&mut child, stdin, reader) {
        Ok(output) => output,
        Err(err) => {
            let _ = killpg(group, Signal::SIGKILL);
            let _ = child.wait();
            return Err(err);
        }
    };
    let deadline = started + limits.timeout;
    let mut status: Option<(ExitStatus, Instant)> = None;
    let mut stopping = Stopping::Not;
    let mut timed_out = false;
    let mut interrupted = false;
    let mut asked_to_log_in = false;
    let mut output_open = true;
    // Once the output is closed, the leader is usually a moment from being
    // reapable: look again soon, then less often, up to a tick.
    let mut nap = Duration::from_millis(1);
    loop {
        if output_open {
            match output.recv_timeout(TICK) {
                Ok(chunk) => {
                    capture.write(&chunk);
                    let mut prompt = watch(&mut login, &chunk);
                    // Take what is queued, but keep looking at the clock.
                    for chunk in output.try_iter().take(CHANNEL_CHUNKS) {
                        capture.write(&chunk);
                        prompt |= watch(&mut login, &chunk);
                    }
                    asked_to_log_in |= prompt;
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => output_open = false,
            }
        } else {
            thread::sleep(nap);
            nap = (nap * 2).min(TICK);
        }
        if status.is_none() {
            match child.try_wait() {
                Ok(exit) => status = exit.map(|exit| (exit, Instant::now())),
                Err(err) => {
                    signal_group(group, Signal::SIGKILL);
                    return Err(err);
                }
            }
        }
        let now = Instant::now();
        match stopping {
            Stopping::Not => {
                if status.is_none() {
                    if cancel.is_some_and(|flag| flag.load(Ordering::SeqCst)) {
                        interrupted = true;
                    } else if asked_to_log_in {
                        // Nobody will answer: stop it now, not at the timeout.
                    } else if now >= deadline {
                        timed_out = true;
                    } else {
                        continue;
                    }
                }
                // The leader is done (or must stop): the rest of its group
                // goes too, so nothing it started outlives the iteration.
                signal_group(group, Signal::SIGTERM);
                stopping = Stopping::Termed(now);
            }
            Stopping::Termed(since) if now.duration_since(since) >= limits.grace => {
                signal_group(group, Signal::SIGKILL);
                stopping = Stopping::Killed(now);
            }
            Stopping::Killed(since) if now.duration_since(since) >= KILL_WAIT => {
                // Something in the group survives SIGKILL (stuck in the
                // kernel): stop waiting for it, but reap the leader.
                if status.is_none() {
                    status = Some((child.wait()?, Instant::now()));
                }
                break;
            }
            _ => {}
        }
        if status.is_some() && !group_alive(group) {
            break;
        }
    }
    let drain_until = Instant::now() + DRAIN_WAIT;
    while output_open {
        let left = drain_until.saturating_duration_since(Instant::now());
        match output.recv_timeout(left) {
            Ok(chunk) => capture.write(&chunk),
            Err(_) => output_open = false,
        }
    }
    let (exit, ended_at) = status.expect("the loop ends only once the leader is reaped");
    if let Some(path) = group_file {
        let _ = std::fs::remove_file(path);
    }
    Ok(Ended {
        status: match (exit.code(), exit.signal()) {
            (Some(code), _) => Status::Exited(code),
            (None, Some(signal)) => Status::Signaled(signal),
            (None, None) => Status::Exited(-1),
        },
        timed_out,
        interrupted,
        duration: ended_at.duration_since(started),
    })
}

/// Feeds `chunk` to the login watch, if any: whether a prompt was seen.
fn watch(login: &mut Option<&mut LoginWatch>, chunk: &[u8]) -> bool {
    login.as_mut().is_some_and(|watch| watch.feed(chunk))
}

/// Starts the thread writing the prompt to stdin (if any) and the thread
/// reading the merged output, which it hands over in chunks.
fn start_threads(
    child: &mut Child,
    stdin: Option<Vec<u8>>,
    mut reader: std::io::PipeReader,
) -> std::io::Result<mpsc::Receiver<Vec<u8>>> {
    if let (Some(prompt), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // From a thread: an agent that never reads its stdin must not block
        // ralph. Dropping the pipe closes it; a write error means the agent
        // exited or closed stdin, which its outcome will show.
        thread::Builder::new()
            .name("agent-stdin".to_owned())
            .spawn(move || {
                let _ = pipe.write_all(&prompt);
            })?;
    }
    let (sender, receiver) = mpsc::sync_channel(CHANNEL_CHUNKS);
    thread::Builder::new()
        .name("agent-output".to_owned())
        .spawn(move || {
            let mut buffer = vec![0; CHUNK_BYTES];
            loop {
                match reader.read(&mut buffer) {
                    Ok(0) => break,
                    Ok(n) => {
                        if sender.send(buffer[..n].to_vec()).is_err() {
                            break;
                        }
                    }
                    Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        })?;
    Ok(receiver)
}

/// Sends `signal` to every process of the group; a group already gone is fine.
pub(super) fn signal_group(group: Pid, signal: Signal) {
    let _ = killpg(group, signal);
}

/// Stops the agent process group a previous ralph noted in `group_file`
/// before it died (killed with -9, say), if that group still runs in
/// `project_dir`: SIGTERM, then SIGKILL after `grace`. Returns whether a
/// group was stopped. The file is removed once the group is gone or known
/// not to be an agent of the project's: a ralph killed in the middle of
/// this leaves the note for the next one.
pub fn stop_leftover_group(group_file: &Path, project_dir: &Path, grace: Duration) -> bool {
    // Never read through a link: the run refuses one there before this.
    let dir = crate::files::parent_dir(group_file);
    let Ok(Some(text)) = crate::files::own::read_text(dir, group_file) else {
        return false;
    };
    let stopped = stop_group_of_project(&text, project_dir, grace);
    let _ = std::fs::remove_file(group_file);
    stopped
}

/// [`stop_leftover_group`] for the group id `text` names.
fn stop_group_of_project(text: &str, project_dir: &Path, grace: Duration) -> bool {
    let Ok(raw) = text.trim().parse::<i32>() else {
        return false;
    };
    if raw <= 1 {
        return false;
    }
    let group = Pid::from_raw(raw);
    // Never ralph's own group (the id reused by the shell that started it).
    if group == nix::unistd::getpgrp() {
        return false;
    }
    // Only a group with a member that is this project's agent or one of
    // its children (the leader may be gone, its background children not),
    // as the environment ralph gave the agent says: the id may have been
    // reused by an unrelated process since.
    let Ok(marker) = super::env::project_marker(project_dir) else {
        return false;
    };
    let marked = || {
        live_members(group)
            .into_iter()
            .any(|pid| crate::platform::environment_has(pid, &marker) == Some(true))
    };
    // A member in the middle of an exec shows no environment: look again.
    let ours = (0..3).any(|look| {
        if look > 0 {
            std::thread::sleep(TICK);
        }
        marked()
    });
    if !ours || !group_alive(group) {
        return false;
    }
    crate::fault::crash_at("mid_leftover_stop");
    signal_group(group, Signal::SIGTERM);
    let until = Instant::now() + grace;
    while group_alive(group) && Instant::now() < until {
        std::thread::sleep(TICK);
    }
    if group_alive(group) {
        signal_group(group, Signal::SIGKILL);
    }
    true
}

/// Whether a process of the group is still running. Zombies do not count:
/// an orphan killed with the group waits for an init that may never reap it.
pub(super) fn group_alive(group: Pid) -> bool {
    match killpg(group, None) {
        // ESRCH: no such group; EPERM: a member we may not signal, nothing
        // more we can do.
        Err(_) => false,
        // When the system cannot tell, the group is taken as alive (it is
        // signalled again).
        Ok(()) => {
            crate::platform::group_members(group.as_raw()).is_none_or(|members| !members.is_empty())
        }
    }
}

/// The processes of `group` that are not zombies (none when the system
/// cannot tell).
fn live_members(group: Pid) -> Vec<u32> {
    crate::platform::group_members(group.as_raw()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    /// A group whose leader exited but whose background child, an agent of
    /// the project's, lives on is stopped; one of another project's, or
    /// ralph's own, is left alone.
    #[test]
    fn a_leftover_group_without_its_leader_is_stopped() {
        let project = assert_fs::TempDir::new().unwrap();
        let elsewhere = assert_fs::TempDir::new().unwrap();
        let file = project.path().join("agent.pgid");
        let leftover = |dir: &Path| {
            let mut leader = std::process::Command::new("sh")
                .args(["-c", "sleep 30 > /dev/null 2>&1 &"])
                .env(super::super::env::PROJECT_DIR_VAR, dir)
                .env("RALPH_TEST_ASLEEP", "1")
                .process_group(0)
                .spawn()
                .unwrap();
            let group = Pid::from_raw(leader.id() as i32);
            assert!(leader.wait().unwrap().success());
            // Until the child's environment can be read (mid-exec, it
            // reads as nothing).
            let asleep = || {
                live_members(group).into_iter().any(|pid| {
                    crate::platform::environment_has(pid, b"RALPH_TEST_ASLEEP=1") == Some(true)
                })
            };
            let until = Instant::now() + Duration::from_secs(5);
            while !asleep() && Instant::now() < until {
                std::thread::sleep(TICK);
            }
            std::fs::write(&file, group.as_raw().to_string()).unwrap();
            group
        };
        let group = leftover(elsewhere.path());
        assert!(group_alive(group), "the child lives on without its leader");
        assert!(!stop_leftover_group(
            &file,
            project.path(),
            Duration::from_secs(1)
        ));
        assert!(group_alive(group), "a group at work elsewhere was stopped");
        signal_group(group, Signal::SIGKILL);
        std::fs::write(&file, nix::unistd::getpgrp().as_raw().to_string()).unwrap();
        let here = std::env::current_dir().unwrap();
        assert!(!stop_leftover_group(&file, &here, Duration::from_secs(1)));
        let group = leftover(project.path());
        assert!(stop_leftover_group(
            &file,
            project.path(),
            Duration::from_secs(1)
        ));
        let until = Instant::now() + Duration::from_secs(5);
        while group_alive(group) && Instant::now() < until {
            std::thread::sleep(TICK);
        }
        assert!(!group_alive(group), "the leftover child still runs");
        assert!(!file.exists());
    }
}
