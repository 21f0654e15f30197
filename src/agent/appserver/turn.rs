//! One iteration as one turn of the app-server: initialize, a thread
//! (new, or the task's own resumed), the turn with the prompt as its
//! input, every message of the turn handled (approvals by policy, items
//! into the transcript, usage per request), until the turn completes, the
//! deadline passes (the turn is interrupted) or the server goes away.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::policy::{Decision, Policy};
use super::rpc::{Message, Received, Server};
use crate::agent::capture::Capture;
use crate::agent::supervisor::Deadline;
use crate::agent::{Activity, Failure, FailureClass, Usage};

/// How long the server may take to answer `initialize`, a thread's start
/// and the turn's start.
const ANSWER_WAIT: Duration = Duration::from_secs(20);
/// How long an interrupted turn may take to say it ended.
const INTERRUPT_WAIT: Duration = Duration::from_secs(3);
/// How often the deadline and cancellation are looked at.
const TICK: Duration = Duration::from_millis(100);
/// The most bytes of one command's output the transcript keeps.
const COMMAND_OUTPUT_BYTES: usize = 2000;

/// What the turn asks of the server.
pub(super) struct Ask<'a> {
    pub cwd: &'a str,
    pub prompt: &'a str,
    pub model: Option<&'a str>,
    /// `workspace-write` or `danger-full-access`.
    pub sandbox: &'a str,
    /// Folders the agent may write besides the checkout.
    pub writable: Vec<String>,
    /// The task's thread, to resume (`session_loop`).
    pub thread: Option<&'a str>,
    pub deadline: Deadline<'a>,
    /// Told what the agent does, as the transcript says it.
    pub activity: Option<&'a Activity<'a>>,
}

/// How the turn went.
#[derive(Debug, Default)]
pub(super) struct Turned {
    /// `completed`, `failed` or `interrupted`; `None` when the turn never
    /// ended (the server went away, or never started it).
    pub status: Option<&'static str>,
    pub failure: Option<Failure>,
    pub timed_out: bool,
    pub interrupted: bool,
    pub usage: Option<Usage>,
    /// The thread the turn ran in.
    pub thread: Option<String>,
    /// What ralph decided, for the receipt.
    pub accepted: u64,
    pub declined: u64,
    pub refused_requests: u64,
    pub commands: u64,
    pub files_changed: u64,
}

/// Runs the turn (see the module doc).
pub(super) fn run(
    server: &mut Server,
    ask: &Ask<'_>,
    policy: &Policy,
    transcript: &mut Capture,
) -> Turned {
    let mut turn = Turning {
        ask,
        policy,
        turned: Turned::default(),
        files: HashMap::new(),
        turn_id: None,
        error: None,
        usage: Usage::default(),
        usage_seen: false,
    };
    if let Err(failure) = turn.start(server, transcript) {
        turn.turned.failure = Some(failure);
        return turn.turned;
    }
    turn.follow(server, transcript);
    turn.end(transcript)
}

/// The state of a turn under way.
struct Turning<'a> {
    ask: &'a Ask<'a>,
    policy: &'a Policy,
    turned: Turned,
    /// Paths of each file change item, by item id (its approval request
    /// names none).
    files: HashMap<String, Vec<String>>,
    turn_id: Option<String>,
    /// The last `error` notification that will not be retried.
    error: Option<Value>,
    usage: Usage,
    usage_seen: bool,
}

impl Turning<'_> {
    /// Initialize, the thread, the turn.
    fn start(&mut self, server: &mut Server, transcript: &mut Capture) -> Result<(), Failure> {
        let init = json!({
            "clientInfo": {"name": "ralph", "title": "ralph", "version": env!("CARGO_PKG_VERSION")},
            "capabilities": {"experimentalApi": false},
        });
        let user_agent = self.call(server, "initialize", init, transcript)?;
        transcript.line(&format!(
            "ralph: codex app-server {}",
            user_agent["userAgent"]
                .as_str()
                .unwrap_or("(no user agent)")
        ));
        server
            .notify("initialized")
            .map_err(|err| failure(format!("the app-server's input closed: {err}")))?;
        let mut thread = Map::new();
        thread.insert("cwd".into(), json!(self.ask.cwd));
        thread.insert("approvalPolicy".into(), json!("untrusted"));
        thread.insert("sandbox".into(), json!(self.ask.sandbox));
        if let Some(model) = self.ask.model {
            thread.insert("model".into(), json!(model));
        }
        let started = match self.ask.thread {
            Some(id) => {
                let mut resume = thread.clone();
                resume.insert("threadId".into(), json!(id));
                match self.call(server, "thread/resume", Value::Object(resume), transcript) {
                    Ok(started) => Some(started),
                    Err(not) => {
                        transcript.line(&format!(
                            "ralph: the task's thread {id} could not be resumed ({}); a new thread",
                            not.reason
                        ));
                        None
                    }
                }
            }
            None => None,
        };
        let started = match started {
            Some(started) => started,
            None => self.call(server, "thread/start", Value::Object(thread), transcript)?,
        };
        let thread_id = started["thread"]["id"]
            .as_str()
            .ok_or_else(|| failure("the app-server started a thread without an id"))?
            .to_owned();
        let mut turn = Map::new();
        turn.insert("threadId".into(), json!(thread_id));
        turn.insert(
            "input".into(),
            json!([{"type": "text", "text": self.ask.prompt, "text_elements": []}]),
        );
        if self.ask.sandbox == "workspace-write" {
            turn.insert(
                "sandboxPolicy".into(),
                // The system's /tmp stays out: the server's own TMPDIR is
                // one of the writable roots.
                json!({
                    "type": "workspaceWrite",
                    "writableRoots": self.ask.writable,
                    "networkAccess": true,
                    "excludeSlashTmp": true,
                }),
            );
        }
        self.turned.thread = Some(thread_id.clone());
        transcript.line(&format!("ralph: thread {thread_id}"));
        let started = self.call(server, "turn/start", Value::Object(turn), transcript)?;
        let turn_id = started["turn"]["id"]
            .as_str()
            .ok_or_else(|| failure("the app-server started a turn without an id"))?;
        transcript.line(&format!("ralph: turn {turn_id}"));
        self.turn_id = Some(turn_id.to_owned());
        Ok(())
    }

    /// Sends request `method` and waits for its answer, handling whatever
    /// else arrives meanwhile.
    fn call(
        &mut self,
        server: &mut Server,
        method: &str,
        params: Value,
        transcript: &mut Capture,
    ) -> Result<Value, Failure> {
        let id = server.request(method, params).map_err(|err| {
            failure(format!(
                "the app-server's input closed before {method}: {err}"
            ))
        })?;
        let wait = ANSWER_WAIT.min(self.ask.deadline.left());
        let answer = server.answer_to(&id, wait, |server, message| {
            self.handle(server, message, transcript);
        });
        match answer {
            Some(Ok(result)) => Ok(result),
            Some(Err(error)) => Err(failure(format!(
                "the app-server refused {method}: {}",
                error["message"].as_str().unwrap_or("no message")
            ))),
            None => Err(failure(format!("the app-server did not answer {method}"))),
        }
    }

    /// Every message until the turn completes, the deadline passes, a
    /// signal asks, or the server goes away.
    fn follow(&mut self, server: &mut Server, transcript: &mut Capture) {
        loop {
            if self.turned.status.is_some() {
                return;
            }
            let cancelled = self.ask.deadline.cancelled();
            if cancelled || Instant::now() >= self.ask.deadline.at {
                self.turned.interrupted = cancelled;
                self.turned.timed_out = !cancelled;
                self.interrupt(server, transcript);
                return;
            }
            match server.receive(TICK) {
                Received::Message(message) => self.handle(server, message, transcript),
                Received::Nothing => {}
                Received::Closed => {
                    transcript
                        .line("ralph: the app-server closed its output before the turn ended");
                    return;
                }
            }
        }
    }

    /// Asks the server to stop the turn, and waits a moment for it to say
    /// it did (a command it runs goes on until the server is shut down).
    fn interrupt(&mut self, server: &mut Server, transcript: &mut Capture) {
        let Some(turn) = self.turn_id.clone() else {
            return;
        };
        let thread = self.turned.thread.clone().unwrap_or_default();
        transcript.line(&format!(
            "ralph: {}; interrupting the turn",
            if self.turned.interrupted {
                "a signal stops the run"
            } else {
                "the iteration's timeout passed"
            }
        ));
        if server
            .request(
                "turn/interrupt",
                json!({"threadId": thread, "turnId": turn}),
            )
            .is_err()
        {
            return;
        }
        let until = Instant::now() + INTERRUPT_WAIT;
        while self.turned.status.is_none() && Instant::now() < until {
            match server.receive(TICK) {
                Received::Message(message) => self.handle(server, message, transcript),
                Received::Nothing => {}
                Received::Closed => return,
            }
        }
    }

    fn handle(&mut self, server: &mut Server, message: Message, transcript: &mut Capture) {
        match message {
            Message::Request { id, method, params } => {
                self.answer(server, id, &method, &params, transcript)
            }
            Message::Notification { method, params } => self.note(&method, &params, transcript),
            // Answers to requests nobody waits for any more (an interrupt).
            Message::Response { .. } => {}
        }
    }

    /// Answers a server request: approvals by policy, anything else with
    /// an error, so the turn never waits on ralph.
    fn answer(
        &mut self,
        server: &mut Server,
        id: Value,
        method: &str,
        params: &Value,
        transcript: &mut Capture,
    ) {
        let (what, decision) = match method {
            "item/commandExecution/requestApproval" => {
                let command = params["command"].as_str().unwrap_or_default();
                (
                    format!("command `{command}`"),
                    self.policy.command(command, params["cwd"].as_str()),
                )
            }
            "item/fileChange/requestApproval" => {
                let item = params["itemId"].as_str().unwrap_or_default();
                let paths = self.files.get(item).cloned().unwrap_or_default();
                let decision = match paths.is_empty() {
                    // Nothing said where: the model is told to try again.
                    true => Decision::Decline("it names no file".to_owned()),
                    false => self.policy.files(&paths),
                };
                (
                    format!("change of {}", crate::text::named(&paths, 5)),
                    decision,
                )
            }
            other => {
                self.turned.refused_requests += 1;
                transcript.line(&format!(
                    "ralph: refused the app-server's request {other} (ralph does not handle it)"
                ));
                let _ = server.refuse(&id, &format!("ralph does not handle {other}"));
                return;
            }
        };
        let answer = match &decision {
            Decision::Accept => {
                self.turned.accepted += 1;
                transcript.line(&format!("approval: accepted {what}"));
                "accept"
            }
            Decision::Decline(why) => {
                self.turned.declined += 1;
                let line = format!("approval: declined {what}: {why}");
                self.activity(transcript, "declined", &line);
                "decline"
            }
        };
        let _ = server.answer(&id, json!({ "decision": answer }));
    }

    /// Takes note of a notification.
    fn note(&mut self, method: &str, params: &Value, transcript: &mut Capture) {
        let ours = |params: &Value| {
            let turn = params["turnId"]
                .as_str()
                .or_else(|| params["turn"]["id"].as_str());
            turn.is_none() || turn == self.turn_id.as_deref()
        };
        match method {
            "item/started" => {
                let item = &params["item"];
                match item["type"].as_str() {
                    Some("commandExecution") => {
                        let command = item["command"].as_str().unwrap_or_default();
                        self.activity(transcript, "command", &format!("running `{command}`"));
                    }
                    Some("fileChange") => {
                        if let Some(id) = item["id"].as_str() {
                            let paths = changed_paths(item).map(str::to_owned).collect();
                            self.files.insert(id.to_owned(), paths);
                        }
                    }
                    _ => {}
                }
            }
            "item/completed" if ours(params) => self.item(&params["item"], transcript),
            "thread/tokenUsage/updated" if ours(params) => {
                let last = &params["tokenUsage"]["last"];
                let count = |key: &str| last[key].as_u64().unwrap_or(0);
                self.usage.input_tokens += count("inputTokens");
                self.usage.cached_input_tokens += count("cachedInputTokens");
                self.usage.output_tokens += count("outputTokens");
                self.usage_seen = true;
            }
            "error" if ours(params) => {
                let message = params["error"]["message"].as_str().unwrap_or("an error");
                if params["willRetry"].as_bool() == Some(true) {
                    transcript.line(&format!("retrying: {message}"));
                } else {
                    transcript.line(&format!("error: {message}"));
                    self.error = Some(params["error"].clone());
                }
            }
            "turn/completed" if ours(params) => {
                let turn = &params["turn"];
                self.turned.status = Some(match turn["status"].as_str() {
                    Some("completed") => "completed",
                    Some("interrupted") => "interrupted",
                    _ => "failed",
                });
                if !turn["error"].is_null() {
                    self.error = Some(turn["error"].clone());
                }
            }
            _ => {}
        }
    }

    /// An item the turn finished.
    fn item(&mut self, item: &Value, transcript: &mut Capture) {
        match item["type"].as_str() {
            Some("commandExecution") => {
                self.turned.commands += 1;
                let command = item["command"].as_str().unwrap_or_default();
                let status = item["status"].as_str().unwrap_or("completed");
                let exit = item["exitCode"].as_i64();
                // codex 0.169 sends `durationMs: 0`; its start and end say
                // how long the command took.
                let ms = |key: &str| item[key].as_u64();
                let took = match (ms("startedAtMs"), ms("completedAtMs"), ms("durationMs")) {
                    (Some(start), Some(end), _) if end >= start => Some(end - start),
                    (_, _, duration) => duration,
                }
                .map(|ms| format!(", {:.1} s", ms as f64 / 1000.0))
                .unwrap_or_default();
                let ended = match exit {
                    Some(code) => format!("exit {code}"),
                    None => status.to_owned(),
                };
                transcript.line(&format!("$ {command}  ({ended}{took})"));
                if let Some(output) = item["aggregatedOutput"].as_str() {
                    let start = output.len().saturating_sub(COMMAND_OUTPUT_BYTES);
                    let start = (start..=output.len())
                        .find(|&at| output.is_char_boundary(at))
                        .unwrap_or(0);
                    for line in output[start..].lines() {
                        transcript.line(&format!("  {line}"));
                    }
                }
            }
            Some("fileChange") => {
                let paths: Vec<String> = changed_paths(item).map(|path| self.shown(path)).collect();
                let status = item["status"].as_str().unwrap_or("completed");
                if status == "completed" {
                    self.turned.files_changed += paths.len() as u64;
                }
                self.activity(
                    transcript,
                    "file_change",
                    &format!(
                        "changed {} ({status}): {}",
                        crate::text::count(paths.len(), "file"),
                        crate::text::named(&paths, 10)
                    ),
                );
            }
            Some("agentMessage") => {
                if let Some(text) = item["text"].as_str().filter(|text| !text.is_empty()) {
                    transcript.line(&format!("agent: {text}"));
                }
            }
            _ => {}
        }
    }

    /// Something the agent does now: a line of the transcript, and told to
    /// the loop's events as well.
    fn activity(&self, transcript: &mut Capture, kind: &str, text: &str) {
        transcript.line(text);
        if let Some(activity) = self.ask.activity {
            activity(kind, &crate::redact::redact(text));
        }
    }

    /// `path` relative to the checkout when inside it.
    fn shown(&self, path: &str) -> String {
        let cwd = self.ask.cwd.trim_end_matches('/');
        path.strip_prefix(cwd)
            .map(|rest| rest.trim_start_matches('/').to_owned())
            .unwrap_or_else(|| path.to_owned())
    }

    /// The turn's ending, read into a failure when it did not complete.
    fn end(mut self, transcript: &mut Capture) -> Turned {
        if self.usage_seen {
            transcript.line(&format!(
                "usage: {} input ({} cached), {} output",
                self.usage.input_tokens, self.usage.cached_input_tokens, self.usage.output_tokens
            ));
            self.turned.usage = Some(self.usage.clone());
        }
        transcript.line(&format!(
            "ralph: turn {}",
            self.turned.status.unwrap_or("never completed")
        ));
        if self.turned.interrupted {
            return self.turned;
        }
        self.turned.failure = match (self.turned.status, self.turned.timed_out) {
            (_, true) => Some(Failure::new(
                FailureClass::Timeout,
                "the turn ran past the iteration's timeout; ralph interrupted it and shut the app-server down",
            )),
            (Some("completed"), false) => None,
            (Some(_), false) => Some(classify(self.error.as_ref())),
            (None, false) => Some(failure(
                "the app-server went away before the turn completed",
            )),
        };
        self.turned
    }
}

/// The paths a `fileChange` item names.
fn changed_paths(item: &Value) -> impl Iterator<Item = &str> {
    let changes = item["changes"].as_array().into_iter().flatten();
    changes.filter_map(|change| change["path"].as_str())
}

/// A failure of class `exit` with `reason`.
fn failure(reason: impl Into<String>) -> Failure {
    Failure::new(FailureClass::Exit, reason)
}

/// The class of a failed turn, from its error: the HTTP status the server
/// reports wherever it puts it (`codexErrorInfo` is a word or a one-key
/// object), then the message's words.
fn classify(error: Option<&Value>) -> Failure {
    let Some(error) = error else {
        return failure("the turn failed without saying why");
    };
    let message = error["message"]
        .as_str()
        .unwrap_or("the turn failed")
        .to_owned();
    let details = error["additionalDetails"].as_str().unwrap_or_default();
    let info = &error["codexErrorInfo"];
    let status = info
        .as_object()
        .and_then(|info| info.values().next())
        .and_then(|inner| inner["httpStatusCode"].as_u64());
    let words = format!("{message} {details} {}", info.as_str().unwrap_or_default()).to_lowercase();
    let reason = format!("codex: {message}");
    if status == Some(401)
        || status == Some(403)
        || words.contains("401 unauthorized")
        || words.contains("unauthorized")
        || words.contains("incorrect api key")
    {
        return Failure::new(FailureClass::Auth, reason);
    }
    if status == Some(429)
        || words.contains("429")
        || words.contains("rate limit")
        || words.contains("usage limit")
        || words.contains("too many requests")
    {
        let evidence = [message.clone(), details.to_owned()];
        return Failure {
            class: FailureClass::UsageLimit,
            reason,
            resets_at: crate::agent::reset_time(&evidence, chrono::Utc::now()),
        };
    }
    failure(reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_turn_is_classified_from_its_error_not_its_variant() {
        let unauthorized = json!({"message": "unexpected status 401 Unauthorized: Incorrect API key provided",
            "codexErrorInfo": {"httpConnectionFailed": {"httpStatusCode": 401}}});
        assert_eq!(classify(Some(&unauthorized)).class, FailureClass::Auth);
        let limited = json!({"message": "exceeded retry limit, last status: 429 Too Many Requests",
            "codexErrorInfo": {"responseTooManyFailedAttempts": {"httpStatusCode": 429}}});
        assert_eq!(classify(Some(&limited)).class, FailureClass::UsageLimit);
        let later = json!({"message": "You've hit your usage limit. Try again in 2 hours.", "codexErrorInfo": "usageLimitExceeded"});
        let failure = classify(Some(&later));
        assert_eq!(failure.class, FailureClass::UsageLimit);
        assert!(failure.resets_at.is_some());
        let busy = json!({"message": "We're currently experiencing high demand", "codexErrorInfo": "internalServerError"});
        let failure = classify(Some(&busy));
        assert_eq!(failure.class, FailureClass::Exit);
        assert_eq!(
            failure.reason,
            "codex: We're currently experiencing high demand"
        );
        assert_eq!(classify(None).class, FailureClass::Exit);
    }
}
