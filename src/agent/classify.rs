//! Why an iteration failed: a class for every failure, decided from the
//! preset, the exit status and the output, never the exit code alone.

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, NaiveDateTime, TimeZone, Utc};
use regex::Regex;
use serde::{Deserialize, Serialize};

use super::preset::Preset;
use super::transcript::Transcript;

/// The kind of a failed iteration; events and summaries use [`as_str`](Self::as_str).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// The agent failed without a more specific reason.
    Exit,
    /// The agent ran past its time limit and was stopped.
    Timeout,
    /// The agent is not logged in or its credentials were refused.
    Auth,
    /// A usage, rate or quota limit was hit.
    UsageLimit,
    /// The agent was denied a permission it needed.
    Permission,
    /// The agent's program is not installed.
    MissingBinary,
    /// The agent left `tasks.jsonl` malformed.
    InvalidQueue,
    /// The agent left the task branch and ralph could not return.
    LeftBranch,
    /// A verification command failed.
    VerifyFailed,
    /// Too many iterations without a commit or file change.
    NoProgress,
}

impl FailureClass {
    /// Every class, in the order of the design document.
    pub const ALL: [FailureClass; 10] = [
        FailureClass::Exit,
        FailureClass::Timeout,
        FailureClass::Auth,
        FailureClass::UsageLimit,
        FailureClass::Permission,
        FailureClass::MissingBinary,
        FailureClass::InvalidQueue,
        FailureClass::LeftBranch,
        FailureClass::VerifyFailed,
        FailureClass::NoProgress,
    ];

    /// The name used in events, state and summaries.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureClass::Exit => "exit",
            FailureClass::Timeout => "timeout",
            FailureClass::Auth => "auth",
            FailureClass::UsageLimit => "usage_limit",
            FailureClass::Permission => "permission",
            FailureClass::MissingBinary => "missing_binary",
            FailureClass::InvalidQueue => "invalid_queue",
            FailureClass::LeftBranch => "left_branch",
            FailureClass::VerifyFailed => "verify_failed",
            FailureClass::NoProgress => "no_progress",
        }
    }
}

impl fmt::Display for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

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

/// How the agent's process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// It exited with this code.
    Exited(i32),
    /// It was killed by this signal.
    Signaled(i32),
}

impl Status {
    /// Whether it exited with code 0.
    pub fn success(self) -> bool {
        self == Status::Exited(0)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Status::Exited(code) => write!(f, "exit code {code}"),
            Status::Signaled(signal) => write!(f, "killed by signal {signal}"),
        }
    }
}

/// When a pattern applies.
#[derive(Clone, Copy, PartialEq)]
enum When {
    /// Only when the run otherwise looks failed (a non-zero exit or an
    /// error result): tools print transient retries on the way to success.
    Failed,
    /// Even after a clean exit: the tool exits 0 on this failure.
    Always,
}

type Rule = (FailureClass, When, &'static str);

/// Each tool's wording for its failures, checked in order, case-insensitive,
/// against the evidence lines only.
fn rules(dialect: Preset) -> &'static [Rule] {
    use FailureClass::{Auth, Permission, UsageLimit};
    use When::{Always, Failed};
    match dialect {
        Preset::Claude => &[
            (
                UsageLimit,
                Failed,
                r"usage limit reached|you've hit your (usage )?limit|limit reached ∙ resets|(5-hour|weekly|session|opus) limit reached|out of (extra )?usage|rate_limit_error|credit balance is too low",
            ),
            (
                Auth,
                Failed,
                r"not logged in|invalid api key|please run /login|oauth token (has )?(expired|revoked)|authentication_error|api error: 401",
            ),
            (
                Permission,
                Failed,
                r"cannot be used with root/sudo|permission denied|permission to use \S+ (was|has been) denied",
            ),
        ],
        Preset::Codex => &[
            (
                UsageLimit,
                Failed,
                r"usage limit|rate limit|429 too many requests|quota exceeded|insufficient_quota",
            ),
            (
                Auth,
                Failed,
                r"not logged in|401 unauthorized|invalid api key|incorrect api key|please (re-?)?log ?in|token (has )?expired|refresh token",
            ),
            (
                Permission,
                Failed,
                r"permission denied|approval (was )?denied",
            ),
        ],
        Preset::Opencode => &[
            (
                UsageLimit,
                Failed,
                r"usage limit|rate limit|\b429\b|quota|insufficient_quota|credit balance",
            ),
            (
                Auth,
                Failed,
                r"providerautherror|\b401\b|unauthorized|invalid api key|not logged in|no api key",
            ),
            (Permission, Failed, r"permission denied|permission rejected"),
        ],
        Preset::Amp => &[
            (
                Auth,
                Always,
                r"login flow|log in to amp|paste (the|your) (code|token)|authorization code|not logged in|amp_api_key|invalid api key|\b401\b|unauthorized",
            ),
            (
                UsageLimit,
                Failed,
                r"out of (free )?credits|insufficient (credits|balance)|usage limit|rate limit|\b429\b|quota",
            ),
            (Permission, Failed, r"permission denied"),
        ],
        Preset::Gemini | Preset::Qwen => &[
            (
                UsageLimit,
                Failed,
                r"quota exceeded|exhausted your (daily )?quota|resource_exhausted|rate limit|\b429\b|too many requests|usage limit",
            ),
            (
                Auth,
                Failed,
                r"please set an auth method|auth method|api key not valid|invalid api key|unauthenticated|\b401\b|login required|failed to log ?in|oauth",
            ),
            (
                Permission,
                Failed,
                r"permission_denied|permission denied|\b403\b",
            ),
        ],
        Preset::Aider => &[
            (
                Auth,
                Always,
                r"(?m)^(litellm\.)?authenticationerror|not able to authenticate you",
            ),
            (
                UsageLimit,
                Always,
                r"insufficient_quota|exceeded your current quota|credit balance is too low",
            ),
            (UsageLimit, Failed, r"(?m)^(litellm\.)?ratelimiterror"),
        ],
        Preset::Cursor => &[
            (
                UsageLimit,
                Failed,
                r"usage limit|hit your limit|rate limit|\b429\b|quota|out of (fast )?requests",
            ),
            (
                Auth,
                Failed,
                r"authentication required|not authenticated|cursor-agent login|cursor_api_key|unauthorized|\b401\b",
            ),
            (Permission, Failed, r"permission denied|not trusted"),
        ],
    }
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
            return Some(Failure {
                class: FailureClass::Auth,
                reason: format!("{dialect} reported no authentication configured ({status})"),
                resets_at: None,
            });
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
                return Some(Failure {
                    class,
                    reason: format!("{dialect}: {}", one_line(line)),
                    resets_at,
                });
            }
        }
        if failed && transcript.denials > 0 {
            return Some(Failure {
                class: FailureClass::Permission,
                reason: format!(
                    "{dialect} failed after {} permission denial(s)",
                    transcript.denials
                ),
                resets_at: None,
            });
        }
    }
    let name = dialect.map_or("the agent", Preset::name);
    if let Some(text) = &transcript.error_result {
        return Some(Failure {
            class: FailureClass::Exit,
            reason: format!("{name} reported an error ({status}): {}", one_line(text)),
            resets_at: None,
        });
    }
    (!status.success()).then(|| Failure {
        class: FailureClass::Exit,
        reason: format!("{name} failed with {status}"),
        resets_at: None,
    })
}

impl Preset {
    /// Gemini and Qwen Code exit 41 when no authentication is configured.
    fn exit_code_means_auth(self, status: Status) -> bool {
        matches!(self, Preset::Gemini | Preset::Qwen) && status == Status::Exited(41)
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

/// When a usage limit resets, from the forms tools print: claude's
/// `usage limit reached|<epoch>`, an RFC 3339 time after "reset", or a
/// relative "try again in 2 hours 5 minutes" / "retry in 23.5s". Clock
/// times without a date or zone ("resets 3pm (Europe/Paris)") give `None`.
pub fn reset_time(evidence: &[String], now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let epoch = Regex::new(r"(?i)limit reached\|(\d{9,11})").expect("valid regex");
    let stamp = Regex::new(
        r"(?i)reset(?:s|ting)?(?: at| on)?:?\s+(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)",
    )
    .expect("valid regex");
    let relative = Regex::new(
        r"(?i)(?:try again|retry|resets?|reset) in ((?:\d+(?:\.\d+)?\s*(?:days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b[\s,]*(?:and\s+)?)+)",
    )
    .expect("valid regex");
    let delay = Regex::new(r#"(?i)"retryDelay"\s*:\s*"(\d+(?:\.\d+)?)s""#).expect("valid regex");
    for line in evidence {
        if let Some(caps) = epoch.captures(line)
            && let Ok(seconds) = caps[1].parse::<i64>()
        {
            return Utc.timestamp_opt(seconds, 0).single();
        }
        if let Some(caps) = stamp.captures(line)
            && let Some(at) = parse_stamp(&caps[1])
        {
            return Some(at);
        }
        if let Some(caps) = relative.captures(line)
            && let Some(wait) = parse_relative(&caps[1])
        {
            return chrono::Duration::from_std(wait).ok().map(|wait| now + wait);
        }
        if let Some(caps) = delay.captures(line)
            && let Ok(seconds) = caps[1].parse::<f64>()
        {
            return chrono::Duration::from_std(Duration::from_secs_f64(seconds))
                .ok()
                .map(|wait| now + wait);
        }
    }
    None
}

fn parse_stamp(text: &str) -> Option<DateTime<Utc>> {
    let text = text.replace(' ', "T");
    if let Ok(at) = DateTime::parse_from_rfc3339(&text) {
        return Some(at.with_timezone(&Utc));
    }
    for format in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M"] {
        if let Ok(naive) = NaiveDateTime::parse_from_str(&text, format) {
            return Some(naive.and_utc());
        }
    }
    None
}

fn parse_relative(text: &str) -> Option<Duration> {
    let part = Regex::new(r"(?i)(\d+(?:\.\d+)?)\s*([a-z]+)").expect("valid regex");
    let mut seconds = 0.0;
    for caps in part.captures_iter(text) {
        let amount: f64 = caps[1].parse().ok()?;
        let unit = match caps[2].to_ascii_lowercase().chars().next()? {
            'd' => 86_400.0,
            'h' => 3_600.0,
            'm' => 60.0,
            's' => 1.0,
            _ => continue,
        };
        seconds += amount * unit;
    }
    (seconds > 0.0).then(|| Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        for class in FailureClass::ALL {
            let json = serde_json::to_string(&class).unwrap();
            assert_eq!(json, format!("\"{class}\""));
            assert_eq!(serde_json::from_str::<FailureClass>(&json).unwrap(), class);
        }
    }

    #[test]
    fn every_pattern_compiles() {
        for preset in Preset::ALL {
            for (_, _, pattern) in rules(preset) {
                Regex::new(&format!("(?i){pattern}")).unwrap();
            }
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

    #[test]
    fn reset_times_are_read_when_stated() {
        let reset = |dialect, text: &str| {
            classify(Some(dialect), Status::Exited(1), text, now())
                .unwrap()
                .resets_at
        };
        assert_eq!(
            reset(
                Preset::Claude,
                r#"{"type":"result","is_error":true,"result":"Claude AI usage limit reached|1767323045"}"#
            ),
            Utc.timestamp_opt(1_767_323_045, 0).single()
        );
        assert_eq!(
            reset(
                Preset::Claude,
                "Usage limit reached, resets at 2026-01-02T08:00:00Z"
            ),
            Some(Utc.with_ymd_and_hms(2026, 1, 2, 8, 0, 0).unwrap())
        );
        assert_eq!(
            reset(
                Preset::Codex,
                r#"{"type":"turn.failed","error":{"message":"You've hit your usage limit. Try again in 2 hours 5 minutes."}}"#
            ),
            Some(now() + chrono::Duration::minutes(125))
        );
        assert_eq!(
            reset(Preset::Gemini, "Quota exceeded. Please retry in 23.5s."),
            Some(now() + chrono::Duration::milliseconds(23_500))
        );
        assert_eq!(
            reset(
                Preset::Gemini,
                r#"429 RESOURCE_EXHAUSTED {"retryDelay": "40s"}"#
            ),
            Some(now() + chrono::Duration::seconds(40))
        );
        assert_eq!(
            reset(
                Preset::Claude,
                "5-hour limit reached ∙ resets 3pm (Europe/Paris)"
            ),
            None
        );
    }
}
