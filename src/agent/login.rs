//! Interactive login prompts. A tool without credentials may start a login
//! flow and wait for a person (amp's `paste your code here:`, aider's
//! browser login), even with stdin closed: nobody answers in a loop, so
//! ralph stops the agent as soon as such a prompt appears and calls it
//! `auth`, rather than waiting out the timeout.

use regex::Regex;

use super::preset::Preset;

/// The most recent output kept to find a prompt split across reads.
const RECENT_BYTES: usize = 4096;

/// Each tool's wording of a login prompt that waits for a person.
fn pattern(dialect: Preset) -> &'static str {
    match dialect {
        Preset::Amp => r"starting login flow|paste (the|your) (authorization )?code",
        Preset::Aider => {
            r"connect aider with openrouter|login to openrouter or create a free account|waiting up to \d+ minutes for .*login"
        }
        // Any tool that asks for a code pasted from a browser login.
        _ => r"paste (the|your) (authorization |verification )?(code|token) here",
    }
}

/// Watches an agent's output, as it arrives, for a login prompt.
#[derive(Debug)]
pub(super) struct LoginWatch {
    regex: Regex,
    recent: Vec<u8>,
    seen: Option<String>,
}

impl LoginWatch {
    /// A watch for `dialect`'s prompts; `None` for a custom command (its
    /// output is its own).
    pub(super) fn for_dialect(dialect: Option<Preset>) -> Option<LoginWatch> {
        let pattern = pattern(dialect?);
        Some(LoginWatch {
            regex: Regex::new(&format!("(?i){pattern}"))
                .expect("login patterns are valid (unit-tested)"),
            recent: Vec::new(),
            seen: None,
        })
    }

    /// Takes the next `chunk` of output; true once a prompt was seen. Only
    /// lines that are not JSON events count: a tool result inside an event
    /// may quote any text.
    pub(super) fn feed(&mut self, chunk: &[u8]) -> bool {
        if self.seen.is_some() {
            return true;
        }
        self.recent.extend_from_slice(chunk);
        if self.recent.len() > RECENT_BYTES {
            let cut = self.recent.len() - RECENT_BYTES;
            self.recent.drain(..cut);
        }
        let text = String::from_utf8_lossy(&self.recent).into_owned();
        self.seen = self.find(&text);
        self.seen.is_some()
    }

    /// The first line of `output` that is a login prompt.
    pub(super) fn find(&self, output: &str) -> Option<String> {
        output
            .lines()
            .map(str::trim)
            .filter(|line| !line.starts_with('{'))
            .find(|line| self.regex.is_match(line))
            .map(str::to_owned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles() {
        for preset in Preset::ALL {
            Regex::new(&format!("(?i){}", pattern(preset))).unwrap();
        }
    }

    #[test]
    fn a_prompt_is_seen_across_reads_but_not_inside_an_event() {
        let mut watch = LoginWatch::for_dialect(Some(Preset::Amp)).unwrap();
        assert!(!watch.feed(b"{\"type\":\"tool_result\",\"text\":\"paste your code here:\"}\n"));
        assert!(!watch.feed(b"No API key found. Starting lo"));
        assert!(watch.feed(b"gin flow...\npaste your code here: "));
        assert_eq!(
            watch
                .find("a\nNo API key found. Starting login flow...\n")
                .as_deref(),
            Some("No API key found. Starting login flow...")
        );
        let mut claude = LoginWatch::for_dialect(Some(Preset::Claude)).unwrap();
        assert!(!claude.feed(b"{\"type\":\"assistant\"}\nworking\n"));
        assert!(claude.feed(b"Paste your code here: "));
        assert!(LoginWatch::for_dialect(None).is_none());
    }
}
