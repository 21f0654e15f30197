//! The one child-process supervisor, for the agent's program, the checks
//! and the Codex app-server alike: [`Group`], a child in a process group of
//! its own (listed for [`kill_live_groups`], noted in `.ralph/agent.pgid`
//! while it runs, killed with what escaped it); [`read_chunks`], a pipe
//! read to its end from a thread; and [`supervise`], a command watched to
//! its end: output into a bounded log, the deadline, cancellation, and the
//! whole group stopped (SIGTERM, SIGKILL after the grace).

use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::capture::Capture;
use super::classify::Status;
use super::login::LoginWatch;

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

/// When a supervised run must stop: at `at`, or once `cancel` (a Ctrl-C
/// handler's flag) is set.
pub(super) struct Deadline<'a> {
    pub(super) at: Instant,
    pub(super) cancel: Option<&'a AtomicBool>,
}

impl Deadline<'_> {
    /// Whether the run was cancelled.
    pub(super) fn cancelled(&self) -> bool {
        self.cancel.is_some_and(|flag| flag.load(Ordering::SeqCst))
    }

    /// The time left.
    pub(super) fn left(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }
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

/// The process groups ralph runs now, for [`kill_live_groups`].
static LIVE_GROUPS: std::sync::Mutex<Vec<Pid>> = std::sync::Mutex::new(Vec::new());

/// A child process in a process group of its own (the group's id is the
/// leader's pid), in [`LIVE_GROUPS`] while this value lives.
pub(super) struct Group {
    pub(super) child: Child,
    id: Pid,
    started: Instant,
    /// Where the group is noted while it runs.
    file: Option<PathBuf>,
}

impl Group {
    /// Spawns `command` in a process group of its own, noted in
    /// `group_file` if given, so that a run after a `kill -9` of ralph can
    /// stop it ([`stop_leftover_group`]).
    pub(super) fn spawn(mut command: Command, group_file: Option<&Path>) -> std::io::Result<Group> {
        command.process_group(0);
        if let Some(path) = group_file {
            child_notes_its_group(&mut command, path);
        }
        let spawned = command.spawn();
        // The command holds our copies of the pipes' write ends: drop them
        // so a reader sees the end of output when the group is gone.
        drop(command);
        let child = spawned?;
        let group = Group {
            started: Instant::now(),
            id: Pid::from_raw(child.id() as i32),
            file: group_file.map(Path::to_owned),
            child,
        };
        let mut groups = LIVE_GROUPS.lock().unwrap_or_else(|e| e.into_inner());
        groups.push(group.id);
        drop(groups);
        if let Some(path) = group_file {
            crate::fault::crash_at("after_spawn");
            // A ralph killed with -9 leaves this behind; the next run stops the
            // group. No fsync: a power cut ends the group too. The child wrote
            // the same already (when it could): this covers it if it could not.
            note_group(path, group.child.id());
        }
        Ok(group)
    }

    /// Kills the group and reaps its leader, when its supervision cannot
    /// start; returns `err`.
    pub(super) fn abandon(mut self, err: std::io::Error) -> std::io::Error {
        signal_group(self.id, Signal::SIGKILL);
        let _ = self.child.wait();
        err
    }

    /// Ends a group whose leader was asked to exit (its input closed, say):
    /// it has `grace` to do so, then the whole group is killed, and last
    /// every process whose environment holds `marker` (a child in a session
    /// of its own, which no group signal reaches). Returns how the leader
    /// ended.
    pub(super) fn end(mut self, grace: Duration, marker: &[u8]) -> Option<ExitStatus> {
        let mut status = None;
        wait_for(grace, || {
            status = self.child.try_wait().ok().flatten();
            status.is_some()
        });
        if status.is_none() {
            signal_group(self.id, Signal::SIGKILL);
            status = self.child.wait().ok();
        }
        // Anything left in its group (a command's child it did not end).
        if group_alive(self.id) {
            signal_group(self.id, Signal::SIGKILL);
        }
        sweep(marker);
        self.unnote();
        status
    }

    /// Removes the group's note, once the group is gone.
    fn unnote(&self) {
        if let Some(path) = &self.file {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        let mut groups = LIVE_GROUPS.lock().unwrap_or_else(|e| e.into_inner());
        groups.retain(|group| *group != self.id);
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
fn child_notes_its_group(command: &mut Command, path: &Path) {
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
fn note_group(path: &Path, pid: u32) {
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
        });
    let mut group = Group::spawn(command, group_file)?;
    tracing::debug!(pid = group.child.id(), "started in its own process group");
    if crate::fault::armed("mid_agent") {
        std::thread::sleep(Duration::from_millis(200));
        crate::fault::crash_at("mid_agent");
    }
    let output = match start_threads(&mut group.child, stdin, reader) {
        Ok(output) => output,
        Err(err) => return Err(group.abandon(err)),
    };
    let started = group.started;
    let deadline = Deadline {
        at: started + limits.timeout,
        cancel,
    };
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
            match group.child.try_wait() {
                Ok(exit) => status = exit.map(|exit| (exit, Instant::now())),
                Err(err) => {
                    signal_group(group.id, Signal::SIGKILL);
                    return Err(err);
                }
            }
        }
        let now = Instant::now();
        match stopping {
            Stopping::Not => {
                if status.is_none() {
                    if deadline.cancelled() {
                        interrupted = true;
                    } else if asked_to_log_in {
                        // Nobody will answer: stop it now, not at the timeout.
                    } else if now >= deadline.at {
                        timed_out = true;
                    } else {
                        continue;
                    }
                }
                // The leader is done (or must stop): the rest of its group
                // goes too, so nothing it started outlives the iteration.
                signal_group(group.id, Signal::SIGTERM);
                stopping = Stopping::Termed(now);
            }
            Stopping::Termed(since) if now.duration_since(since) >= limits.grace => {
                signal_group(group.id, Signal::SIGKILL);
                stopping = Stopping::Killed(now);
            }
            Stopping::Killed(since) if now.duration_since(since) >= KILL_WAIT => {
                // Something in the group survives SIGKILL (stuck in the
                // kernel): stop waiting for it, but reap the leader.
                if status.is_none() {
                    status = Some((group.child.wait()?, Instant::now()));
                }
                break;
            }
            _ => {}
        }
        if status.is_some() && !group_alive(group.id) {
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
    group.unnote();
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
    reader: std::io::PipeReader,
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
    read_chunks(reader, "agent-output", move |chunk| {
        sender.send(chunk.to_vec()).is_ok()
    })?;
    Ok(receiver)
}

/// Reads `reader` to its end in a thread named `name`, handing each chunk
/// to `take` for as long as it says to go on.
pub(super) fn read_chunks(
    mut reader: impl Read + Send + 'static,
    name: &str,
    mut take: impl FnMut(&[u8]) -> bool + Send + 'static,
) -> std::io::Result<()> {
    thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            let mut buffer = vec![0; CHUNK_BYTES];
            loop {
                match reader.read(&mut buffer) {
                    Ok(0) => break,
                    Ok(n) if !take(&buffer[..n]) => break,
                    Ok(_) => {}
                    Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        })?;
    Ok(())
}

/// Sends `signal` to every process of the group; a group already gone is fine.
fn signal_group(group: Pid, signal: Signal) {
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
    if !wait_for(grace, || !group_alive(group)) {
        signal_group(group, Signal::SIGKILL);
    }
    true
}

/// Kills every process whose environment holds `marker`, and waits a
/// moment for them to go.
fn sweep(marker: &[u8]) {
    let me = std::process::id();
    let Some(pids) = crate::platform::processes() else {
        return;
    };
    let found: Vec<u32> = pids
        .into_iter()
        .filter(|&pid| pid != me && crate::platform::environment_has(pid, marker) == Some(true))
        .collect();
    for pid in &found {
        tracing::debug!(pid, "killing a process the app-server's turn left");
        let _ = nix::sys::signal::kill(Pid::from_raw(*pid as i32), Signal::SIGKILL);
    }
    let gone = || found.iter().all(|pid| !crate::platform::alive(*pid));
    wait_for(Duration::from_millis(500), gone);
}

/// Looks at `done` every tick until it holds or `limit` has passed;
/// returns whether it held.
fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + limit;
    while !done() {
        if Instant::now() >= until {
            return false;
        }
        thread::sleep(TICK);
    }
    true
}

/// Whether a process of the group is still running. Zombies do not count:
/// an orphan killed with the group waits for an init that may never reap it.
fn group_alive(group: Pid) -> bool {
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
