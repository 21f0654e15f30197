//! Why an iteration failed: a class for every failure, decided from the
//! preset, the exit status and the output, never the exit code alone.

use std::fmt;

use chrono::{DateTime, Utc};
use regex::Regex;
use serde::Serialize;

pub use super::class::FailureClass;
use super::login::LoginWatch;
use super::preset::Preset;
use super::reset::reset_time;
use super::rules::{When, rules};
use super::transcript::Transcript;

/// A failed agent run: its class, a one-line reason, and when a usage
/// limit resets if the tool said so.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// The kind of failure.
    pub class: FailureClass,
    /// One line saying what happened, quoting the tool where it can.
    pub reason: String,
    /// When the usage limit resets, if the tool said.
    pub resets_at: Option<DateTime<Utc>>,
}

impl Failure {
    /// A failure of `class` for `reason`, with no reset time.
    pub(crate) fn new(class: FailureClass, reason: impl Into<String>) -> Failure {
        Failure {
            class,
            reason: reason.into(),
            resets_at: None,
        }
    }
}

/// How the agent's process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// It exited with this code.
    Exited(i32),
    /// It was killed by this signal.
    Signaled(i32),
    /// A structured backend's turn ended so (`completed`, `failed`,
    /// `interrupted`).
    Turn(&'static str),
}

impl Status {
    /// Whether it exited with code 0.
    pub fn success(self) -> bool {
        matches!(self, Status::Exited(0) | Status::Turn("completed"))
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Status::Exited(code) => write!(f, "exit code {code}"),
            Status::Signaled(signal) => write!(f, "killed by signal {signal}"),
            Status::Turn(status) => write!(f, "turn {status}"),
        }
    }
}

/// Judges one agent run that ended on its own (`timed_out` is `None`) or
/// was stopped at its time limit: a login prompt it was waiting at is
/// `auth`; a run stopped at the limit is `timeout` unless its output
/// already says it was waiting out a rate limit or failing to log in (tools
/// retry both for minutes), which is the cause; otherwise [`classify`].
pub fn judge(
    dialect: Option<Preset>,
    status: Status,
    timed_out: Option<std::time::Duration>,
    output: &str,
    now: DateTime<Utc>,
) -> Option<Failure> {
    let name = dialect.map_or("the agent", Preset::name);
    let prompt = LoginWatch::for_dialect(dialect).and_then(|watch| watch.find(output));
    if let Some(prompt) = prompt {
        return matched(
            "login_prompt",
            None,
            Failure::new(
                FailureClass::Auth,
                format!(
                    "{name} started an interactive login nobody can answer in a loop ({}); stopped at once",
                    one_line(&prompt)
                ),
            ),
        );
    }
    let Some(limit) = timed_out else {
        return classify(dialect, status, output, now);
    };
    let after = format!("timed out after {}", crate::config::ShowDuration(limit));
    let cause = classify(dialect, Status::Signaled(15), output, now)
        .filter(|failure| matches!(failure.class, FailureClass::UsageLimit | FailureClass::Auth));
    Some(match cause {
        Some(cause) => Failure {
            reason: format!("{} ({after}, still retrying)", cause.reason),
            ..cause
        },
        None => Failure::new(FailureClass::Timeout, after),
    })
}

/// Classifies one agent run from the tool's conventions, how it ended and
/// what it printed; `None` means it succeeded. `now` anchors relative reset
/// times ("try again in 2 hours").
pub fn classify(
    dialect: Option<Preset>,
    status: Status,
    output: &str,
    now: DateTime<Utc>,
) -> Option<Failure> {
    let transcript = Transcript::read(dialect, output);
    let failed = !status.success() || transcript.error_result.is_some();
    if let Some(dialect) = dialect {
        if dialect.exit_code_means_auth(status) {
            return matched(
                "auth_exit_code",
                None,
                Failure::new(
                    FailureClass::Auth,
                    format!("{dialect} reported no authentication configured ({status})"),
                ),
            );
        }
        // What the tool says of the model API's error, structured, before
        // its wording: a rate limit's text changes between versions.
        if failed && let Some(class) = api_class(&transcript) {
            let said = transcript
                .error_result
                .as_deref()
                .map(one_line)
                .unwrap_or_else(|| format!("the model API answered {}", api_said(&transcript)));
            return matched(
                "api_error",
                None,
                Failure {
                    class,
                    reason: format!("{dialect}: {said}"),
                    resets_at: (class == FailureClass::UsageLimit)
                        .then(|| {
                            reset_time(&transcript.evidence, now).or_else(|| {
                                let wait = transcript.retry_delay_ms?;
                                Some(now + chrono::Duration::milliseconds(wait as i64))
                            })
                        })
                        .flatten(),
                },
            );
        }
        for &(class, when, pattern) in rules(dialect) {
            if when == When::Failed && !failed {
                continue;
            }
            let regex = Regex::new(&format!("(?i){pattern}"))
                .expect("classification patterns are valid regexes (unit-tested)");
            if let Some(line) = transcript.evidence.iter().find(|line| regex.is_match(line)) {
                let resets_at = (class == FailureClass::UsageLimit)
                    .then(|| reset_time(&transcript.evidence, now))
                    .flatten();
                // The line of a multi-line message that says it.
                let said = line
                    .lines()
                    .find(|part| regex.is_match(part))
                    .unwrap_or(line);
                return matched(
                    "pattern",
                    Some(pattern),
                    Failure {
                        class,
                        reason: format!("{dialect}: {}", one_line(said)),
                        resets_at,
                    },
                );
            }
        }
        if failed && transcript.denials > 0 {
            return matched(
                "permission_denials",
                None,
                Failure::new(
                    FailureClass::Permission,
                    format!(
                        "{dialect} failed after {} permission denial(s)",
                        transcript.denials
                    ),
                ),
            );
        }
    }
    let name = dialect.map_or("the agent", Preset::name);
    if let Some(text) = &transcript.error_result {
        return matched(
            "error_result",
            None,
            Failure::new(
                FailureClass::Exit,
                format!("{name} reported an error ({status}): {}", one_line(text)),
            ),
        );
    }
    if !status.success() {
        return matched(
            "exit_status",
            None,
            Failure::new(FailureClass::Exit, format!("{name} failed with {status}")),
        );
    }
    tracing::debug!(%status, "classified: no failure rule matched");
    None
}

/// Logs (at debug level) the classification `rule` that matched, with its
/// `pattern` when it is one of the tool's wordings, and hands `failure` on.
fn matched(rule: &str, pattern: Option<&str>, failure: Failure) -> Option<Failure> {
    tracing::debug!(
        rule,
        pattern,
        class = failure.class.as_str(),
        reason = ?crate::redact::redact(&failure.reason),
        "classification rule matched"
    );
    Some(failure)
}

impl Preset {
    /// Gemini and Qwen Code exit 41 when no authentication is configured.
    fn exit_code_means_auth(self, status: Status) -> bool {
        matches!(self, Preset::Gemini | Preset::Qwen) && status == Status::Exited(41)
    }
}

/// The class a model API error stated by the tool means: a rate limit
/// waits, a refused key is `auth`; anything else is left to the wording.
fn api_class(transcript: &Transcript) -> Option<FailureClass> {
    let error = transcript.api_error.as_deref().unwrap_or("");
    match (transcript.api_status, error) {
        (Some(429), _) | (_, "rate_limit" | "rate_limit_error" | "billing_error") => {
            Some(FailureClass::UsageLimit)
        }
        (Some(401), _) | (_, "authentication_failed" | "authentication_error") => {
            Some(FailureClass::Auth)
        }
        _ => None,
    }
}

/// The API error as stated: `429 (rate_limit)`.
fn api_said(transcript: &Transcript) -> String {
    match (transcript.api_status, transcript.api_error.as_deref()) {
        (Some(status), Some(error)) => format!("{status} ({error})"),
        (Some(status), None) => status.to_string(),
        (None, Some(error)) => error.to_owned(),
        (None, None) => "an error".to_owned(),
    }
}

/// A line shortened for a reason: first line, at most 200 characters.
fn one_line(text: &str) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    match line.char_indices().nth(200) {
        Some((at, _)) => format!("{}...", &line[..at]),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap()
    }

    fn class(dialect: Option<Preset>, status: Status, output: &str) -> Option<FailureClass> {
        classify(dialect, status, output, now()).map(|f| f.class)
    }

    #[test]
    fn class_names_are_the_documented_ones() {
        let names: Vec<&str> = FailureClass::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            names,
            [
                "exit",
                "timeout",
                "auth",
                "usage_limit",
                "permission",
                "missing_binary",
                "invalid_queue",
                "left_branch",
                "verify_failed",
                "no_progress"
            ]
        );
        for class in FailureClass::ALL.into_iter().chain(FailureClass::LOOP) {
            let json = serde_json::to_string(&class).unwrap();
            assert_eq!(json, format!("\"{class}\""));
            assert_eq!(serde_json::from_str::<FailureClass>(&json).unwrap(), class);
        }
    }

    /// (dialect, status, output, expected class)
    #[test]
    fn canned_outputs_are_classified() {
        use FailureClass::*;
        use Preset::*;
        let ok = Status::Exited(0);
        let one = Status::Exited(1);
        let cases: Vec<(Option<Preset>, Status, &str, Option<FailureClass>)> = vec![
            // claude
            (
                Some(Claude),
                ok,
                r#"{"type":"result","subtype":"success","is_error":false,"result":"done"}"#,
                None,
            ),
            (
                Some(Claude),
                ok,
                r#"{"type":"result","subtype":"success","is_error":true,"result":"API Error: 500 overloaded"}"#,
                Some(Exit),
            ),
            (
                Some(Claude),
                one,
                r#"{"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login"}"#,
                Some(Auth),
            ),
            (
                Some(Claude),
                one,
                "Invalid API key · Please run /login",
                Some(Auth),
            ),
            (
                Some(Claude),
                ok,
                r#"{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|1767323045"}"#,
                Some(UsageLimit),
            ),
            (
                Some(Claude),
                one,
                r#"{"type":"result","is_error":true,"result":"5-hour limit reached ∙ resets 3pm"}"#,
                Some(UsageLimit),
            ),
            (
                Some(Claude),
                one,
                "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons",
                Some(Permission),
            ),
            (
                Some(Claude),
                one,
                r#"{"type":"result","is_error":true,"result":"stopped","permission_denials":[{"tool_name":"Write"}]}"#,
                Some(Permission),
            ),
            (
                Some(Claude),
                ok,
                r#"{"type":"result","is_error":false,"result":"ok","permission_denials":[{"tool_name":"Write"}]}"#,
                None,
            ),
            // a tool result quoting the patterns is not evidence
            (
                Some(Claude),
                ok,
                r#"{"type":"user","message":{"content":[{"type":"tool_result","content":"usage limit reached|1 Not logged in"}]}}"#,
                None,
            ),
            (Some(Claude), Status::Exited(2), "boom", Some(Exit)),
            (
                Some(Claude),
                ok,
                "warning: rate_limit_error, retrying",
                None,
            ),
            // codex
            (
                Some(Codex),
                one,
                r#"{"type":"turn.failed","error":{"message":"You've hit your usage limit. Try again in 2 hours 5 minutes."}}"#,
                Some(UsageLimit),
            ),
            (
                Some(Codex),
                one,
                r#"{"type":"error","message":"unexpected status 401 Unauthorized: Missing bearer"}"#,
                Some(Auth),
            ),
            (
                Some(Codex),
                ok,
                r#"{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}"#,
                None,
            ),
            (
                Some(Codex),
                ok,
                r#"{"type":"turn.failed","error":{"message":"model overloaded"}}"#,
                Some(Exit),
            ),
            // opencode
            (
                Some(Opencode),
                one,
                r#"{"type":"error","error":{"name":"ProviderAuthError","data":{"message":"no credentials for anthropic"}}}"#,
                Some(Auth),
            ),
            (
                Some(Opencode),
                one,
                r#"{"type":"error","message":"API rate limit exceeded"}"#,
                Some(UsageLimit),
            ),
            // a status stated as a number decides, whatever the wording
            (
                Some(Opencode),
                one,
                r#"{"type":"error","error":{"name":"APIError","data":{"message":"Too busy","statusCode":429}}}"#,
                Some(UsageLimit),
            ),
            (
                Some(Opencode),
                one,
                r#"{"type":"error","error":{"name":"APIError","data":{"message":"Nope","statusCode":401}}}"#,
                Some(Auth),
            ),
            (
                Some(Opencode),
                one,
                r#"{"type":"error","error":{"name":"APIError","data":{"message":"Boom","statusCode":500}}}"#,
                Some(Exit),
            ),
            // amp: the login flow is an auth failure even after exit 0
            (
                Some(Amp),
                ok,
                "No API key found. Starting login flow...\nPaste your code here:",
                Some(Auth),
            ),
            (
                Some(Amp),
                ok,
                r#"{"type":"result","subtype":"success","is_error":false,"result":"done"}"#,
                None,
            ),
            (
                Some(Amp),
                one,
                r#"{"type":"result","subtype":"error_during_execution","is_error":true,"error":"Out of credits"}"#,
                Some(UsageLimit),
            ),
            // gemini and qwen
            (Some(Gemini), Status::Exited(41), "", Some(Auth)),
            (
                Some(Gemini),
                one,
                r#"{"type":"result","status":"error","error":{"type":"FatalError","message":"Quota exceeded for quota metric"}}"#,
                Some(UsageLimit),
            ),
            (
                Some(Gemini),
                ok,
                r#"{"type":"result","status":"success","stats":{"input_tokens":1}}"#,
                None,
            ),
            (
                Some(Qwen),
                Status::Exited(41),
                "Please set an Auth method",
                Some(Auth),
            ),
            (Some(Qwen), Status::Exited(53), "", Some(Exit)),
            // aider exits 0 on auth failure
            (
                Some(Aider),
                ok,
                "litellm.AuthenticationError: AnthropicException - invalid x-api-key",
                Some(Auth),
            ),
            (
                Some(Aider),
                ok,
                "Error: You exceeded your current quota",
                Some(UsageLimit),
            ),
            (
                Some(Aider),
                ok,
                "litellm.RateLimitError: retrying in 1s\nApplied edit to a.rs",
                None,
            ),
            (
                Some(Aider),
                ok,
                "+    \"litellm.AuthenticationError\" in a diff",
                None,
            ),
            (
                Some(Aider),
                ok,
                "litellm.BadRequestError: AnthropicException - Your credit balance is too low",
                Some(UsageLimit),
            ),
            (
                Some(Aider),
                ok,
                "+    if err.code == \"insufficient_quota\": # in a diff\nApplied edit to a.py",
                None,
            ),
            (Some(Aider), ok, "Applied edit to src/main.rs", None),
            // cursor
            (
                Some(Cursor),
                one,
                "Authentication required. Please run 'cursor-agent login' first, or set CURSOR_API_KEY environment variable.",
                Some(Auth),
            ),
            (
                Some(Cursor),
                one,
                r#"{"type":"result","is_error":true,"result":"You've hit your usage limit"}"#,
                Some(UsageLimit),
            ),
            // custom commands: the exit code and error results only
            (None, ok, "Not logged in", None),
            (None, Status::Signaled(9), "", Some(Exit)),
            (
                None,
                ok,
                r#"{"type":"result","is_error":true,"result":"x"}"#,
                Some(Exit),
            ),
        ];
        for (dialect, status, output, expected) in cases {
            assert_eq!(
                class(dialect, status, output),
                expected,
                "{dialect:?} {status} {output}"
            );
        }
    }

    #[test]
    fn reasons_quote_the_tool() {
        let failure = classify(
            Some(Preset::Claude),
            Status::Exited(1),
            r#"{"type":"result","is_error":true,"result":"Not logged in · Please run /login"}"#,
            now(),
        )
        .unwrap();
        assert_eq!(failure.reason, "claude: Not logged in · Please run /login");
        let failure = classify(Some(Preset::Codex), Status::Exited(3), "", now()).unwrap();
        assert_eq!(failure.reason, "codex failed with exit code 3");
        let failure = classify(None, Status::Signaled(9), "", now()).unwrap();
        assert_eq!(failure.reason, "the agent failed with killed by signal 9");
        let failure = classify(
            Some(Preset::Claude),
            Status::Exited(0),
            r#"{"type":"result","is_error":true,"result":"API Error: 500\nmore"}"#,
            now(),
        )
        .unwrap();
        assert_eq!(
            failure.reason,
            "claude reported an error (exit code 0): API Error: 500"
        );
        let failure = classify(Some(Preset::Gemini), Status::Exited(41), "", now()).unwrap();
        assert_eq!(
            failure.reason,
            "gemini reported no authentication configured (exit code 41)"
        );
    }
}
