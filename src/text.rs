//! Making untrusted text safe and tidy for a terminal.

use std::borrow::Cow;
use std::fmt::Write;

/// `text` with control characters escaped (`\n`, `\u{1b}`), so a task title
/// can never move the cursor, recolour the terminal or fake a line.
pub fn safe(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            let _ = write!(out, "{}", c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_control_characters_only() {
        assert_eq!(safe("plain ☕ text"), "plain ☕ text");
        assert_eq!(safe("a\nb\x1b[31mred\u{9b}"), "a\\nb\\u{1b}[31mred\\u{9b}");
    }
}
