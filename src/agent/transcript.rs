//! Reading an agent's output: the JSON events presets print, the lines that
//! may carry error messages, and the token usage and cost reported.
//!
//! Only lines that are not JSON events, and the text of error events, are
//! evidence for classification: tool results inside events can quote any
//! file (ralph's own sources among them), so they are never searched.

use serde::Serialize;
use serde_json::Value;

use super::preset::Preset;

/// Tokens and cost of one agent run, as far as the tool reports them.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Usage {
    /// Prompt tokens, cached ones included.
    pub input_tokens: u64,
    /// Of the prompt tokens, those read from the provider's cache.
    pub cached_input_tokens: u64,
    /// Generated tokens, reasoning included.
    pub output_tokens: u64,
    /// Cost in US dollars, when the tool states it.
    pub cost_usd: Option<f64>,
}

/// What the output says, read once for classification and usage.
#[derive(Debug, Default)]
pub(crate) struct Transcript {
    /// Lines that may carry an error message: non-JSON lines and the text of
    /// error events.
    pub evidence: Vec<String>,
    /// The text of a final result or turn that reports an error.
    pub error_result: Option<String>,
    /// Permission denials listed in the final result.
    pub denials: usize,
    /// The HTTP status of the model API's error, when the tool states it
    /// (claude's `api_error_status`).
    pub api_status: Option<u64>,
    /// The kind of the model API's error, when the tool states it (claude's
    /// `"error":"rate_limit"` on an assistant message).
    pub api_error: Option<String>,
    /// How long the tool said it waits before its next retry of the model
    /// API (claude's `api_retry` events).
    pub retry_delay_ms: Option<u64>,
    /// Tokens and cost, when reported.
    pub usage: Option<Usage>,
    /// The tool whose conventions the output follows.
    dialect: Option<Preset>,
}

/// The tokens and cost `output` reports, read with `dialect`'s conventions.
pub fn usage(dialect: Option<Preset>, output: &str) -> Option<Usage> {
    Transcript::read(dialect, output).usage
}

impl Transcript {
    /// Reads `output` with the conventions of `dialect`.
    pub(super) fn read(dialect: Option<Preset>, output: &str) -> Transcript {
        let mut transcript = Transcript {
            dialect,
            ..Transcript::default()
        };
        for line in output.lines() {
            // Leading spaces stay: patterns anchored at the start of a line
            // must not match indented code the tool echoes.
            let line = line.trim_end();
            let trimmed = line.trim_start();
            if trimmed.is_empty() {
                continue;
            }
            let event = trimmed
                .starts_with('{')
                .then(|| serde_json::from_str::<Value>(trimmed).ok())
                .flatten()
                .filter(Value::is_object);
            match event {
                Some(event) => transcript.event(&event),
                None => {
                    if dialect == Some(Preset::Aider) {
                        transcript.aider_tokens(trimmed);
                    }
                    transcript.evidence.push(line.to_owned());
                }
            }
        }
        transcript
    }

    fn event(&mut self, event: &Value) {
        let kind = event["type"].as_str().unwrap_or("");
        match kind {
            "result" => self.result(event),
            // claude says each retry of the model API: what failed, and
            // how long it waits (the API's retry-after).
            "system" if event["subtype"].as_str() == Some("api_retry") => {
                if let Some(status) = event["error_status"].as_u64() {
                    self.api_status = Some(status);
                }
                if let Some(error) = event["error"].as_str() {
                    self.api_error = Some(error.to_owned());
                }
                self.retry_delay_ms = event["retry_delay_ms"].as_u64();
            }
            "assistant" => {
                let error = event
                    .get("error")
                    .or_else(|| event.pointer("/message/error"))
                    .and_then(Value::as_str);
                if let Some(error) = error {
                    self.api_error = Some(error.to_owned());
                }
            }
            "turn.completed" => {
                if let Some(usage) = event.get("usage") {
                    let input = number(usage, "input_tokens");
                    let cached = number(usage, "cached_input_tokens");
                    let output = number(usage, "output_tokens");
                    self.add(input, cached, output, None);
                }
            }
            "step_finish" => {
                if let Some(tokens) = event.pointer("/part/tokens") {
                    let cache = &tokens["cache"];
                    let read = number(cache, "read");
                    let input = number(tokens, "input") + read + number(cache, "write");
                    let output = number(tokens, "output") + number(tokens, "reasoning");
                    let cost = event.pointer("/part/cost").and_then(Value::as_f64);
                    self.add(input, read, output, cost);
                }
            }
            "turn.failed" => {
                let text = error_text(event).unwrap_or_else(|| "turn failed".to_owned());
                self.evidence.push(text.clone());
                self.error_result = Some(text);
                self.api_status = error_status(event).or(self.api_status);
            }
            "error" | "session.error" => {
                if let Some(text) = error_text(event) {
                    self.evidence.push(text);
                }
                self.api_status = error_status(event).or(self.api_status);
            }
            _ => {}
        }
    }

    /// A final result event: claude, amp, cursor and qwen say `is_error`,
    /// gemini says `status`.
    fn result(&mut self, event: &Value) {
        let is_error = match event["is_error"].as_bool() {
            Some(flag) => flag,
            None => match event["status"].as_str() {
                Some(status) => status != "success",
                None => event["subtype"]
                    .as_str()
                    .is_some_and(|subtype| subtype.starts_with("error")),
            },
        };
        if is_error {
            let text = event["result"]
                .as_str()
                .map(str::to_owned)
                .or_else(|| error_text(event))
                .or_else(|| event["subtype"].as_str().map(str::to_owned))
                .unwrap_or_else(|| "error".to_owned());
            self.evidence.extend(text.lines().map(str::to_owned));
            self.error_result = Some(text);
        }
        if let Some(status) = event["api_error_status"].as_u64() {
            self.api_status = Some(status);
        }
        self.denials = event["permission_denials"].as_array().map_or(0, Vec::len);
        let cost = event
            .get("total_cost_usd")
            .or_else(|| event.get("cost_usd"))
            .and_then(Value::as_f64);
        if let Some(usage) = event.get("usage").filter(|u| u.is_object()) {
            let read = number(usage, "cache_read_input_tokens");
            // Anthropic's `input_tokens` leave the cache out; qwen's (the
            // OpenAI convention) have it in already.
            let input = match self.dialect {
                Some(Preset::Qwen) => number(usage, "input_tokens"),
                _ => {
                    number(usage, "input_tokens")
                        + read
                        + number(usage, "cache_creation_input_tokens")
                }
            };
            // A final result states the run's totals.
            self.usage = Some(Usage {
                input_tokens: input,
                cached_input_tokens: read,
                output_tokens: number(usage, "output_tokens"),
                cost_usd: cost,
            });
        } else if let Some(stats) = event.get("stats").filter(|s| s.is_object()) {
            self.usage = Some(gemini_stats(stats));
        } else if let Some(cost) = cost {
            self.usage = Some(Usage {
                cost_usd: Some(cost),
                ..Usage::default()
            });
        }
    }

    fn add(&mut self, input: u64, cached: u64, output: u64, cost: Option<f64>) {
        let usage = self.usage.get_or_insert_with(Usage::default);
        usage.input_tokens += input;
        usage.cached_input_tokens += cached;
        usage.output_tokens += output;
        if let Some(cost) = cost {
            usage.cost_usd = Some(usage.cost_usd.unwrap_or(0.0) + cost);
        }
    }

    /// aider prints `Tokens: 2.3k sent, 1.2k cache hit, 120 received. Cost:
    /// $0.01 message, $0.03 session.` after each message.
    fn aider_tokens(&mut self, line: &str) {
        let Some(rest) = line.strip_prefix("Tokens: ") else {
            return;
        };
        let mut input = 0;
        let mut cached = 0;
        let mut output = 0;
        let (tokens, cost) = rest.split_once(". Cost: ").unwrap_or((rest, ""));
        for part in tokens.trim_end_matches('.').split(", ") {
            let Some((amount, what)) = part.split_once(' ') else {
                continue;
            };
            let amount = aider_amount(amount);
            match what {
                "sent" => input += amount,
                "cache hit" => cached += amount,
                "received" => output += amount,
                _ => {}
            }
        }
        self.add(input, cached, output, None);
        let session = cost
            .split(", ")
            .find_map(|part| part.strip_suffix(" session."))
            .and_then(|amount| amount.trim_start_matches('$').parse::<f64>().ok());
        if let (Some(session), Some(usage)) = (session, self.usage.as_mut()) {
            // The session figure is cumulative: the last one is the total.
            usage.cost_usd = Some(session);
        }
    }
}

fn aider_amount(text: &str) -> u64 {
    let (number, scale) = match text.strip_suffix('k') {
        Some(number) => (number, 1_000.0),
        None => (text, 1.0),
    };
    number
        .parse::<f64>()
        .map_or(0, |value| (value * scale).round() as u64)
}

/// Gemini's result `stats`: flat counters, or per-model `tokens`.
fn gemini_stats(stats: &Value) -> Usage {
    let flat = |names: [&str; 2]| names.iter().find_map(|name| stats[*name].as_u64());
    if let Some(input) = flat(["input_tokens", "inputTokens"]) {
        // gemini's `output_tokens` leave the thinking out; the total has it.
        let output = flat(["output_tokens", "outputTokens"]).unwrap_or(0);
        let total = flat(["total_tokens", "totalTokens"]).unwrap_or(0);
        return Usage {
            input_tokens: input,
            cached_input_tokens: flat(["cached", "cachedTokens"]).unwrap_or(0),
            output_tokens: output.max(total.saturating_sub(input)),
            cost_usd: None,
        };
    }
    let mut usage = Usage::default();
    if let Some(models) = stats["models"].as_object() {
        for model in models.values() {
            let tokens = &model["tokens"];
            usage.input_tokens += number(tokens, "prompt");
            usage.cached_input_tokens += number(tokens, "cached");
            usage.output_tokens += number(tokens, "candidates") + number(tokens, "thoughts");
        }
    }
    usage
}

fn number(value: &Value, key: &str) -> u64 {
    value[key].as_u64().unwrap_or(0)
}

/// The HTTP status an error event states as a number (opencode's
/// `error.data.statusCode`, a `status` or `code` of the error).
fn error_status(event: &Value) -> Option<u64> {
    [
        "/error/data/statusCode",
        "/properties/error/data/statusCode",
        "/error/statusCode",
        "/error/status",
        "/error/code",
        "/status",
    ]
    .into_iter()
    .find_map(|path| {
        let status = event.pointer(path)?.as_u64()?;
        (400..600).contains(&status).then_some(status)
    })
}

/// The message of an error event, wherever the tool puts it, after the
/// error's name when there is one (`ProviderAuthError: ...`).
fn error_text(event: &Value) -> Option<String> {
    let at = |path| {
        event
            .pointer(path)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let message = [
        "/message",
        "/error/message",
        "/error/data/message",
        "/properties/error/message",
        "/properties/error/data/message",
        "/error",
    ]
    .into_iter()
    .find_map(at);
    let name = ["/error/name", "/properties/error/name"]
        .into_iter()
        .find_map(at);
    match (name, message) {
        (Some(name), Some(message)) => Some(format!("{name}: {message}")),
        (name, message) => message.or(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_results_give_totals_and_cost() {
        let output = r#"{"type":"system","subtype":"init"}
{"type":"assistant","message":{"content":[{"type":"text","text":"Not logged in"}]}}
{"type":"result","subtype":"success","is_error":false,"result":"done","total_cost_usd":0.25,"usage":{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":50}}"#;
        let t = Transcript::read(Some(Preset::Claude), output);
        assert_eq!(
            t.usage,
            Some(Usage {
                input_tokens: 1110,
                cached_input_tokens: 1000,
                output_tokens: 50,
                cost_usd: Some(0.25)
            })
        );
        assert!(t.evidence.is_empty(), "event text is not evidence");
        assert_eq!(t.error_result, None);
    }

    #[test]
    fn codex_turns_add_up() {
        let output = r#"{"type":"thread.started","thread_id":"t"}
{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":7}}
{"type":"turn.completed","usage":{"input_tokens":50,"cached_input_tokens":0,"output_tokens":3}}"#;
        let t = Transcript::read(Some(Preset::Codex), output);
        assert_eq!(
            t.usage,
            Some(Usage {
                input_tokens: 150,
                cached_input_tokens: 40,
                output_tokens: 10,
                cost_usd: None
            })
        );
    }

    #[test]
    fn opencode_steps_add_up_with_cost() {
        let output = r#"{"type":"step_finish","part":{"tokens":{"input":10,"output":5,"reasoning":2,"cache":{"read":100,"write":0}},"cost":0.5}}
{"type":"step_finish","part":{"tokens":{"input":1,"output":1,"reasoning":0,"cache":{"read":0,"write":3}},"cost":0.25}}"#;
        let t = Transcript::read(Some(Preset::Opencode), output);
        assert_eq!(
            t.usage,
            Some(Usage {
                input_tokens: 114,
                cached_input_tokens: 100,
                output_tokens: 8,
                cost_usd: Some(0.75)
            })
        );
    }

    #[test]
    fn gemini_stats_flat_or_per_model() {
        let flat = r#"{"type":"result","status":"success","stats":{"total_tokens":30,"input_tokens":20,"output_tokens":10,"cached":5}}"#;
        let t = Transcript::read(Some(Preset::Gemini), flat);
        assert_eq!(
            t.usage,
            Some(Usage {
                input_tokens: 20,
                cached_input_tokens: 5,
                output_tokens: 10,
                cost_usd: None
            })
        );
        let models = r#"{"type":"result","status":"error","error":{"type":"x","message":"Quota exceeded"},"stats":{"models":{"gemini-2.5-pro":{"tokens":{"prompt":7,"candidates":2,"cached":1,"thoughts":1}}}}}"#;
        let t = Transcript::read(Some(Preset::Gemini), models);
        assert_eq!(t.usage.unwrap().output_tokens, 3);
        assert_eq!(t.error_result.as_deref(), Some("Quota exceeded"));
    }

    #[test]
    fn aider_token_lines_add_up_and_keep_the_session_cost() {
        let output = "Tokens: 2.3k sent, 1k cache hit, 120 received. Cost: $0.01 message, $0.01 session.\n\
                      some text\n\
                      Tokens: 700 sent, 80 received. Cost: $0.02 message, $0.03 session.\n";
        let t = Transcript::read(Some(Preset::Aider), output);
        assert_eq!(
            t.usage,
            Some(Usage {
                input_tokens: 3000,
                cached_input_tokens: 1000,
                output_tokens: 200,
                cost_usd: Some(0.03)
            })
        );
        assert_eq!(t.evidence.len(), 3);
    }

    #[test]
    fn error_events_are_evidence() {
        let output = r#"plain stderr line
{"type":"error","message":"stream error: 401 Unauthorized"}
{"type":"turn.failed","error":{"message":"You've hit your usage limit."}}
{"type":"session.error","properties":{"error":{"name":"ProviderAuthError","data":{"message":"no key"}}}}
{"type":"error","error":{"name":"APIError"}}"#;
        let t = Transcript::read(Some(Preset::Codex), output);
        assert_eq!(
            t.evidence,
            [
                "plain stderr line",
                "stream error: 401 Unauthorized",
                "You've hit your usage limit.",
                "ProviderAuthError: no key",
                "APIError"
            ]
        );
        assert_eq!(
            t.error_result.as_deref(),
            Some("You've hit your usage limit.")
        );
    }

    #[test]
    fn permission_denials_are_counted() {
        let output = r#"{"type":"result","subtype":"success","is_error":true,"result":"API Error: 500","permission_denials":[{"tool_name":"Bash"}]}"#;
        let t = Transcript::read(Some(Preset::Claude), output);
        assert_eq!(t.denials, 1);
        assert_eq!(t.error_result.as_deref(), Some("API Error: 500"));
        assert_eq!(t.usage, None);
    }
}
