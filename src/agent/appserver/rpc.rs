//! The app-server process and its JSON-RPC over stdio: one JSON object a
//! line, without `"jsonrpc"`. Every line is classified by its shape first
//! (a response has `id` and `result` or `error`; a server request `id` and
//! `method`; a notification `method` and no `id`), never by id alone: the
//! server's request ids are a counter of its own. Lines that are not JSON
//! objects are skipped; stderr is drained to a file so its pipe never
//! fills.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use nix::unistd::Pid;
use serde_json::{Value, json};

use super::super::process::{Registered, child_notes_its_group, group_alive, signal_group};

/// The most bytes of the server's stderr kept.
const STDERR_BYTES: u64 = 1 << 20;

/// One message from the server.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Message {
    /// The answer to one of ralph's requests.
    Response {
        /// The id ralph gave the request.
        id: Value,
        /// `result`, or `error`.
        result: Result<Value, Value>,
    },
    /// A request the server asks ralph to answer (an approval).
    Request {
        /// The server's own id for it.
        id: Value,
        /// What it asks.
        method: String,
        /// Its parameters.
        params: Value,
    },
    /// A notification.
    Notification {
        /// What it says.
        method: String,
        /// Its parameters.
        params: Value,
    },
}

/// Reads one line of the server's output by its shape; `None` for a line
/// that is no JSON object, or of no known shape.
pub(super) fn classify(line: &str) -> Option<Message> {
    let Value::Object(mut object) = serde_json::from_str(line).ok()? else {
        return None;
    };
    let params = object.remove("params").unwrap_or(Value::Null);
    let id = object.remove("id");
    let method = match object.remove("method") {
        Some(Value::String(method)) => Some(method),
        _ => None,
    };
    match (id, method) {
        (Some(id), Some(method)) => Some(Message::Request { id, method, params }),
        (None, Some(method)) => Some(Message::Notification { method, params }),
        (Some(id), None) => {
            let result = match (object.remove("result"), object.remove("error")) {
                (Some(result), _) => Ok(result),
                (None, Some(error)) => Err(error),
                (None, None) => return None,
            };
            Some(Message::Response { id, result })
        }
        (None, None) => None,
    }
}

/// What waiting for the next message gave.
pub(super) enum Received {
    Message(Message),
    /// Nothing came in time.
    Nothing,
    /// The server closed its output: it exited, or is exiting.
    Closed,
}

/// A running app-server, in its own process group.
pub(super) struct Server {
    child: Child,
    group: Pid,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
    _registered: Registered,
}

impl Server {
    /// Starts `argv` in `cwd` with exactly `env`, stderr going to
    /// `stderr_file`; its process group is noted in `group_file`.
    pub(super) fn start(
        argv: &[String],
        cwd: &Path,
        env: Vec<(OsString, OsString)>,
        stderr_file: &Path,
        group_file: Option<&Path>,
    ) -> std::io::Result<Server> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| std::io::Error::other("no app-server command"))?;
        let mut command = Command::new(program);
        command
            .args(args)
            .current_dir(cwd)
            .env_clear()
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        if let Some(path) = group_file {
            child_notes_its_group(&mut command, path);
        }
        let mut child = command.spawn()?;
        let group = Pid::from_raw(child.id() as i32);
        let registered = Registered::new(group);
        if let Some(path) = group_file {
            crate::agent::process::note_group(path, child.id());
        }
        tracing::debug!(
            pid = child.id(),
            "app-server started in its own process group"
        );
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        let (sender, lines) = mpsc::channel();
        thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            loop {
                line.clear();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if sender.send(line.trim_end().to_owned()).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let stderr_file = stderr_file.to_owned();
        thread::spawn(move || drain(stderr, &stderr_file));
        Ok(Server {
            stdin: child.stdin.take(),
            child,
            group,
            lines,
            next_id: 0,
            _registered: registered,
        })
    }

    /// Sends request `method`; returns its id.
    pub(super) fn request(&mut self, method: &str, params: Value) -> std::io::Result<Value> {
        let id = json!(self.next_id);
        self.next_id += 1;
        self.send(&json!({"id": id, "method": method, "params": params}))?;
        Ok(id)
    }

    /// Sends notification `method`.
    pub(super) fn notify(&mut self, method: &str) -> std::io::Result<()> {
        self.send(&json!({ "method": method }))
    }

    /// Answers the server's request `id` with `result`.
    pub(super) fn answer(&mut self, id: &Value, result: Value) -> std::io::Result<()> {
        self.send(&json!({"id": id, "result": result}))
    }

    /// Answers the server's request `id` with an error.
    pub(super) fn refuse(&mut self, id: &Value, message: &str) -> std::io::Result<()> {
        let error = json!({"code": -32601, "message": message});
        self.send(&json!({"id": id, "error": error}))
    }

    fn send(&mut self, message: &Value) -> std::io::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| std::io::Error::other("the app-server's input is closed"))?;
        let mut line = serde_json::to_vec(message).map_err(std::io::Error::other)?;
        line.push(b'\n');
        stdin.write_all(&line)?;
        stdin.flush()
    }

    /// The next message, waiting at most `wait`; lines that are no message
    /// are skipped.
    pub(super) fn receive(&mut self, wait: Duration) -> Received {
        let until = Instant::now() + wait;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => match classify(&line) {
                    Some(message) => return Received::Message(message),
                    None => {
                        tracing::debug!(line = %crate::text::safe(&line), "app-server line skipped");
                        continue;
                    }
                },
                Err(RecvTimeoutError::Timeout) => return Received::Nothing,
                Err(RecvTimeoutError::Disconnected) => return Received::Closed,
            }
        }
    }

    /// Waits for the answer to request `id`, at most `wait`, passing every
    /// other message to `other`; `None` when none came in time or the
    /// server closed.
    pub(super) fn answer_to(
        &mut self,
        id: &Value,
        wait: Duration,
        mut other: impl FnMut(&mut Server, Message),
    ) -> Option<Result<Value, Value>> {
        let until = Instant::now() + wait;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.receive(left) {
                Received::Message(Message::Response { id: got, result }) if got == *id => {
                    return Some(result);
                }
                Received::Message(message) => other(self, message),
                Received::Nothing | Received::Closed => return None,
            }
        }
    }

    /// Ends the server: its input closed (a graceful shutdown, which also
    /// ends the commands it runs), then, if it is still there after
    /// `grace`, its whole process group killed, and last every process
    /// whose environment holds `marker` (a command's background child in a
    /// session of its own, which no group signal reaches). Returns how the
    /// server ended.
    pub(super) fn shut_down(
        mut self,
        grace: Duration,
        marker: &[u8],
    ) -> Option<std::process::ExitStatus> {
        drop(self.stdin.take());
        let until = Instant::now() + grace;
        let mut status = None;
        while Instant::now() < until {
            if let Ok(Some(exit)) = self.child.try_wait() {
                status = Some(exit);
                break;
            }
            thread::sleep(Duration::from_millis(10));
        }
        if status.is_none() {
            signal_group(self.group, Signal::SIGKILL);
            status = self.child.wait().ok();
        }
        // Anything left in its group (a command's child it did not end).
        if group_alive(self.group) {
            signal_group(self.group, Signal::SIGKILL);
        }
        sweep(marker);
        status
    }
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
    for _ in 0..50 {
        if found.iter().all(|pid| !crate::platform::alive(*pid)) {
            return;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// Copies the server's stderr to `path` (never through a link), keeping at most
/// [`STDERR_BYTES`] and reading on to the end so the pipe never fills.
fn drain(mut stderr: impl Read, path: &Path) {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    let dir = crate::files::parent_dir(path);
    let mut file = crate::files::own::open(dir, path, &options).ok();
    let mut kept = 0u64;
    let mut buffer = [0u8; 8192];
    loop {
        match stderr.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if let Some(out) = &mut file {
                    let room = STDERR_BYTES.saturating_sub(kept).min(n as u64) as usize;
                    if room > 0 && out.write_all(&buffer[..room]).is_ok() {
                        kept += room as u64;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_told_apart_by_their_shape_not_their_id() {
        assert_eq!(
            classify(r#"{"id":0,"result":{"ok":true}}"#),
            Some(Message::Response {
                id: json!(0),
                result: Ok(json!({"ok": true}))
            })
        );
        // The server's request 0 is no answer to ralph's request 0.
        assert_eq!(
            classify(
                r#"{"id":0,"method":"item/commandExecution/requestApproval","params":{"command":"ls"}}"#
            ),
            Some(Message::Request {
                id: json!(0),
                method: "item/commandExecution/requestApproval".into(),
                params: json!({"command": "ls"})
            })
        );
        assert_eq!(
            classify(r#"{"method":"turn/started","params":{},"emittedAtMs":1}"#),
            Some(Message::Notification {
                method: "turn/started".into(),
                params: json!({})
            })
        );
        assert_eq!(
            classify(r#"{"id":"c1","error":{"code":-32600,"message":"Not initialized"}}"#),
            Some(Message::Response {
                id: json!("c1"),
                result: Err(json!({"code": -32600, "message": "Not initialized"}))
            })
        );
        for garbage in ["", "not json", "[1,2]", "{}", r#"{"id":3}"#, "WARNING: x"] {
            assert_eq!(classify(garbage), None, "{garbage}");
        }
    }
}
