//! Keeping secrets out of what ralph writes for people: `ralph.log`, the
//! event log and the terminal. The agent's raw log keeps what it printed.

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::Regex;

/// What a redacted secret is replaced with.
pub(crate) const MASK: &str = "[redacted]";

/// Values shorter than this are not treated as secrets (too many false hits).
const MIN_SECRET_LEN: usize = 8;

/// Finds and masks secrets: the values of environment variables whose names
/// look secret, and common token shapes.
#[derive(Debug)]
pub(crate) struct Redactor {
    values: Vec<String>,
    shapes: Regex,
}

/// Whether an environment variable's name says it holds a secret.
pub(crate) fn is_secret_name(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    ["_KEY", "_TOKEN", "_SECRET"]
        .iter()
        .any(|end| name.ends_with(end))
        || [
            "PASSWORD",
            "PASSWD",
            "SECRET",
            "API_KEY",
            "APIKEY",
            "ACCESS_KEY",
            "PRIVATE_KEY",
            "CREDENTIAL",
        ]
        .iter()
        .any(|part| name.contains(part))
        || name == "TOKEN"
}

impl Redactor {
    /// A redactor for these environment variables.
    pub(crate) fn new(env: impl IntoIterator<Item = (String, String)>) -> Redactor {
        let mut values: Vec<String> = env
            .into_iter()
            .filter(|(name, value)| is_secret_name(name) && value.len() >= MIN_SECRET_LEN)
            .map(|(_, value)| value)
            .collect();
        // Longest first, so a secret containing another is masked whole.
        values.sort_by_key(|value| std::cmp::Reverse(value.len()));
        values.dedup();
        let shapes = Regex::new(concat!(
            r"sk-ant-[A-Za-z0-9_\-]{20,}",
            r"|sk-(?:proj-)?[A-Za-z0-9_\-]{20,}",
            r"|gh[pousr]_[A-Za-z0-9]{30,}",
            r"|github_pat_[A-Za-z0-9_]{30,}",
            r"|xox[abposr]-[A-Za-z0-9\-]{10,}",
            r"|AKIA[0-9A-Z]{16}",
            r"|AIza[0-9A-Za-z_\-]{35}",
            r"|glpat-[A-Za-z0-9_\-]{20,}",
            r"|(?i:bearer)\s+[A-Za-z0-9._\-+/=]{20,}",
            r"|-----BEGIN [A-Z ]*PRIVATE KEY-----",
        ))
        .expect("the token shapes are a valid regex");
        Redactor { values, shapes }
    }

    /// `text` with every secret replaced by [`MASK`].
    pub(crate) fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for value in &self.values {
            if out.contains(value.as_str()) {
                out = Cow::Owned(out.replace(value.as_str(), MASK));
            }
        }
        match self.shapes.replace_all(&out, MASK) {
            Cow::Borrowed(_) => out,
            Cow::Owned(masked) => Cow::Owned(masked),
        }
    }

    /// Masks secrets in every string of `value` (keys are ralph's own).
    pub(crate) fn redact_json(&self, value: &mut serde_json::Value) {
        use serde_json::Value;
        match value {
            Value::String(text) => {
                if let Cow::Owned(masked) = self.redact(text) {
                    *text = masked;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.redact_json(item)),
            Value::Object(fields) => fields.values_mut().for_each(|item| self.redact_json(item)),
            _ => {}
        }
    }
}

/// Redacts `text` with the secrets of ralph's own environment, read once.
pub(crate) fn redact(text: &str) -> Cow<'_, str> {
    redactor().redact(text)
}

/// [`redact`] for every string of a JSON value, before it is serialized:
/// a secret with a quote or a backslash no longer reads the same once
/// escaped in JSON text.
pub(crate) fn redact_json(value: &mut serde_json::Value) {
    redactor().redact_json(value);
}

fn redactor() -> &'static Redactor {
    static REDACTOR: OnceLock<Redactor> = OnceLock::new();
    REDACTOR.get_or_init(|| Redactor::new(std::env::vars()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names() {
        for name in [
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "DB_PASSWORD",
            "client_secret",
            "TOKEN",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "KEYBOARD",
            "TOKENIZER_PATH",
            "RALPH_TASK_ID",
        ] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn masks_env_values_and_token_shapes() {
        let redactor = Redactor::new([
            ("MY_API_KEY".to_owned(), "hunter2-very-secret".to_owned()),
            ("SHORT_TOKEN".to_owned(), "abc".to_owned()),
            ("HOME".to_owned(), "/home/kim".to_owned()),
        ]);
        assert_eq!(
            redactor.redact("key=hunter2-very-secret home=/home/kim abc"),
            "key=[redacted] home=/home/kim abc"
        );
        let tokens = "a sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA b ghp_0123456789abcdefghijklmnopqrstuvwxyz c AKIAABCDEFGHIJKLMNOP d Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig";
        assert_eq!(
            redactor.redact(tokens),
            "a [redacted] b [redacted] c [redacted] d Authorization: [redacted]"
        );
        assert!(matches!(redactor.redact("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn masks_secrets_that_json_escapes() {
        let secret = r#"pa"ss\word-1234"#;
        let redactor = Redactor::new([("DB_PASSWORD".to_owned(), secret.to_owned())]);
        let mut value = serde_json::json!({
            "detail": format!("login with {secret} failed"),
            "extra": {"argv": ["--password", secret]},
        });
        redactor.redact_json(&mut value);
        let text = value.to_string();
        assert!(!text.contains("word-1234"), "{text}");
        assert_eq!(value["detail"], "login with [redacted] failed");
        assert_eq!(value["extra"]["argv"][1], MASK);
    }
}
