//! The app-server process and its JSON-RPC over stdio: one JSON object a
//! line, without `"jsonrpc"`. Every line is classified by its shape first
//! (a response has `id` and `result` or `error`; a server request `id` and
//! `method`; a notification `method` and no `id`), never by id alone: the
//! server's request ids are a counter of its own. Lines that are not JSON
//! objects are skipped. The process is the supervisor's (`Group`): its
//! stderr drained to a bounded log so its pipe never fills.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::super::capture::BoundedLog;
use super::super::supervisor::{Group, read_chunks};

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
    group: Group,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
}

impl Server {
    /// Starts `command`, stderr going to `stderr_file`; its process group
    /// is noted in `group_file`.
    pub(super) fn start(
        mut command: Command,
        stderr_file: &Path,
        group_file: Option<&Path>,
    ) -> std::io::Result<Server> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut group = Group::spawn(command, group_file)?;
        tracing::debug!(
            pid = group.child.id(),
            "app-server started in its own process group"
        );
        let stdout = group.child.stdout.take().expect("stdout is piped");
        let stderr = group.child.stderr.take().expect("stderr is piped");
        let (sender, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line.trim_end().to_owned()).is_err() {
                    break;
                }
            }
        });
        // Its start kept (never through a link), read on to the end.
        let dir = crate::files::parent_dir(stderr_file);
        let log = BoundedLog::create(dir, stderr_file, STDERR_BYTES).ok();
        let mut log = log.map(BoundedLog::keeping_head);
        let read = read_chunks(stderr, "app-server-stderr", move |chunk| {
            let _ = log.as_mut().map(|log| log.write(chunk));
            true
        });
        if let Err(err) = read {
            return Err(group.abandon(err));
        }
        Ok(Server {
            stdin: group.child.stdin.take(),
            group,
            lines,
            next_id: 0,
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
    /// ends the commands it runs), then the supervisor's end of its group
    /// and every process whose environment holds `marker` (`Group::end`).
    /// Returns how the server ended.
    pub(super) fn shut_down(
        mut self,
        grace: Duration,
        marker: &[u8],
    ) -> Option<std::process::ExitStatus> {
        drop(self.stdin.take());
        self.group.end(grace, marker)
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
