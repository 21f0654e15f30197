//! Text for people: untrusted text made safe for a terminal, library
//! messages made tidy.

use std::borrow::Cow;
use std::fmt::Write;

/// `text` with control characters escaped (`\n`, `\u{1b}`), so a task title
/// can never move the cursor, recolour the terminal or fake a line.
pub(crate) fn safe(text: &str) -> Cow<'_, str> {
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

/// Most characters of a task's title ralph repeats on one line: a commit
/// subject, a pull request's title.
pub(crate) const TITLE_CHARS: usize = 200;

/// Untrusted `text` made fit to repeat on one line (a commit subject, a
/// title, a variable): secrets masked ([`crate::redact`]; before the cut,
/// so no part of one is left), whitespace collapsed, control characters
/// escaped, and at most `most` characters, then `...`.
pub(crate) fn one_line(text: &str, most: usize) -> String {
    let masked = crate::redact::redact(text);
    let line = masked.split_whitespace().collect::<Vec<_>>().join(" ");
    let safe = safe(&line);
    if safe.chars().count() <= most {
        return safe.into_owned();
    }
    let mut cut: String = safe.chars().take(most).collect();
    cut.push_str("...");
    cut
}

/// `text` quoted for a POSIX shell; as it is where it cannot be (only a
/// NUL cannot, and no path or argument holds one).
pub(crate) fn shell_quoted(text: &str) -> String {
    shlex::try_quote(text).map_or_else(|_| text.to_owned(), Cow::into_owned)
}

/// A serde error message without the ` at line L column C` its library
/// appends: ralph names the file and line itself.
pub(crate) fn without_position(message: &str) -> &str {
    message
        .rfind(" at line ")
        .map_or(message, |at| &message[..at])
}

/// A YAML reader's error for people: no position (the caller names the
/// line), and no name of a Rust type the reader has never seen.
pub(crate) fn yaml_message(message: &str) -> String {
    let message = without_position(message);
    if let Some((before, _)) = message.split_once("expected struct ") {
        return format!("{before}expected a section of `key: value` lines");
    }
    // serde's "unknown field `x`, expected one of `a`, `b`": the nearest
    // key said too.
    let unknown = (message.split_once("unknown field `"))
        .and_then(|(_, rest)| rest.split_once("`, expected one of "));
    match unknown {
        Some((name, expected)) => {
            let keys = expected.split('`').skip(1).step_by(2);
            format!("{message}{}", did_you_mean(name, keys))
        }
        None => message.to_owned(),
    }
}

/// ` (did you mean `known`?)` for the name among `known` nearest to the
/// misspelt `name` (within two edits, or a fifth of its length for a
/// long one), or nothing when none is that near.
pub(crate) fn did_you_mean<'k>(name: &str, known: impl IntoIterator<Item = &'k str>) -> String {
    (known.into_iter())
        .map(|known| (strsim::levenshtein(name, known), known))
        .filter(|(edits, known)| *edits <= 2.max(known.len() / 5))
        .min()
        .map(|(_, known)| format!(" (did you mean `{known}`?)"))
        .unwrap_or_default()
}

/// `items` joined by `, `, the first `most` of them, then how many more:
/// `A, B, C and 2 more`.
pub(crate) fn named<T: AsRef<str>>(items: &[T], most: usize) -> String {
    let shown: Vec<&str> = items.iter().take(most).map(AsRef::as_ref).collect();
    match items.len().saturating_sub(most) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

/// Failures by class for people: `exit ×1, timeout ×2` (how many of
/// each, never read as an exit code), or `none`.
pub(crate) fn tally<K: std::fmt::Display>(counts: &std::collections::BTreeMap<K, u64>) -> String {
    if counts.is_empty() {
        return "none".to_owned();
    }
    (counts.iter())
        .map(|(class, n)| format!("{class} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A whole number of seconds for a scale: `0s`, `45s`, `2m`, `1m30s`.
pub(crate) fn minutes_seconds(seconds: f64) -> String {
    let seconds = seconds.round() as u64;
    match (seconds / 60, seconds % 60) {
        (0, s) => format!("{s}s"),
        (m, 0) => format!("{m}m"),
        (m, s) => format!("{m}m{s:02}s"),
    }
}

/// `count` and `noun`, in the plural unless `count` is 1: `1 task`,
/// `3 tasks`. Every noun ralph counts takes an `s`.
pub(crate) fn count(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

/// `items` joined by `separator` into lines of at most `width` characters:
/// a new line where the next item would not fit, and a line of its own for
/// an item wider than `width`.
pub(crate) fn pack<S: Into<String>>(
    items: impl IntoIterator<Item = S>,
    separator: &str,
    width: usize,
) -> Vec<String> {
    let gap = separator.chars().count();
    let mut lines: Vec<String> = Vec::new();
    for item in items {
        let item = item.into();
        match lines.last_mut() {
            Some(line) if line.chars().count() + gap + item.chars().count() <= width => {
                line.push_str(separator);
                line.push_str(&item);
            }
            _ => lines.push(item),
        }
    }
    lines
}

#[cfg(test)]
mod tests {

    #[test]
    fn named_lists_the_first_then_how_many_more() {
        let ids = ["A", "B", "C"];
        assert_eq!(named(&ids, 3), "A, B, C");
        assert_eq!(named(&ids, 2), "A, B and 1 more");
        assert_eq!(named::<&str>(&[], 2), "");
    }

    use super::*;

    #[test]
    fn items_are_packed_into_lines_of_a_width() {
        assert_eq!(pack(["ab", "cd", "ef"], " · ", 7), ["ab · cd", "ef"]);
        assert_eq!(pack(["abcdef", "g"], " ", 3), ["abcdef", "g"]);
        assert!(pack(Vec::<String>::new(), " ", 3).is_empty());
    }

    #[test]
    fn one_line_is_masked_collapsed_escaped_and_cut() {
        assert_eq!(one_line("  a\n b\u{1b}[1m  ", 20), "a b\\u{1b}[1m");
        assert_eq!(one_line("abcdef", 3), "abc...");
        // A token is masked whole, though the cut falls inside it.
        let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyz";
        assert_eq!(one_line(&format!("use {token}"), 10), "use [redac...");
    }

    #[test]
    fn counts_are_pluralised() {
        assert_eq!(count(1, "task"), "1 task");
        assert_eq!(count(0, "task"), "0 tasks");
        assert_eq!(count(3, "iteration"), "3 iterations");
    }

    #[test]
    fn serde_positions_are_dropped() {
        assert_eq!(
            without_position("missing field `id` at line 1 column 9"),
            "missing field `id`"
        );
        assert_eq!(without_position("no position here"), "no position here");
    }

    #[test]
    fn escapes_control_characters_only() {
        assert_eq!(safe("plain ☕ text"), "plain ☕ text");
        assert_eq!(safe("a\nb\x1b[31mred\u{9b}"), "a\\nb\\u{1b}[31mred\\u{9b}");
    }
}
