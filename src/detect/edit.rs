//! Writing the checks found into the text of `config/ralph.yaml`: the
//! values of `verify.task` and `verify.run` replaced, every other byte
//! kept (comments, spacing, key order, line endings).

use std::fmt::Write;

use super::{Check, Scope, run_list, task_list};
use crate::config::{self, Settings};
use crate::exit::Exit;
use crate::paths::SETTINGS_FILE;

/// Why the checks were not written into `config/ralph.yaml`.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The file's `verify` section is laid out in a way the edit does not
    /// handle; the edited text would not have held the checks.
    #[error(
        "{SETTINGS_FILE}: its verify section is laid out in a way ralph cannot edit safely, so nothing was written; set verify.task and verify.run there by hand"
    )]
    Unusual,
    /// There is no settings file to write into.
    #[error("{SETTINGS_FILE} does not exist; `ralph init` writes it with the checks found")]
    Missing,
    /// The settings file is wrong as it is.
    #[error(transparent)]
    Settings(#[from] config::Error),
}

/// The settings `text` with `verify.task` and `verify.run` set to the
/// lists of `checks`, each command followed by a comment naming its
/// source; every other byte is kept. The result is parsed again, and
/// refused unless it holds exactly the checks and every other setting
/// as before.
pub(crate) fn with_checks(text: &str, checks: &[Check]) -> Result<String, WriteError> {
    let mut wanted = Settings::parse(text)?;
    wanted.verify.task = task_list(checks);
    wanted.verify.run = run_list(checks);
    let task: Vec<&Check> = checks
        .iter()
        .filter(|check| check.scope == Scope::Task)
        .collect();
    let run: Vec<&Check> = checks.iter().collect();
    let edited = edit(text, &[("task", &task), ("run", &run)]).ok_or(WriteError::Unusual)?;
    match Settings::parse(&edited) {
        Ok(settings) if settings == wanted => Ok(edited),
        _ => Err(WriteError::Unusual),
    }
}

impl crate::exit::Reportable for WriteError {
    /// The exit code for this error.
    fn exit(&self) -> Exit {
        match self {
            WriteError::Unusual | WriteError::Missing => Exit::InvalidInput,
            WriteError::Settings(err) => err.exit(),
        }
    }

    /// What the person can do about it.
    fn hint(&self) -> Option<String> {
        match self {
            WriteError::Unusual | WriteError::Missing => None,
            WriteError::Settings(err) => err.hint(),
        }
    }
}

/// `text` as a YAML double-quoted string: `"npm run \"lint\""`.
pub(crate) fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if printable(c) => out.push(c),
            c => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
        }
    }
    out.push('"');
    out
}

/// Whether YAML takes `c` as it is, in a quoted string or a comment (no
/// control character, line break or byte order mark).
fn printable(c: char) -> bool {
    matches!(c, ' '..='~' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
        && !matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}')
}

/// One line of the text: its content and its ending (`\n`, `\r\n`, or
/// nothing for a last line without one).
#[derive(Clone, Copy)]
struct Line<'t> {
    text: &'t str,
    end: &'t str,
}

impl Line<'_> {
    fn indent(&self) -> usize {
        self.text.len() - self.text.trim_start_matches(' ').len()
    }

    /// Whether it holds no YAML content: blank, or only a comment.
    fn is_quiet(&self) -> bool {
        let rest = self.text.trim_start();
        rest.is_empty() || rest.starts_with('#')
    }

    /// The mapping key it starts with at `indent`, and the text after the
    /// colon: `  task: []` is `("task", " []")` at indent 2.
    fn key_at(&self, indent: usize) -> Option<(&str, &str)> {
        if self.indent() != indent {
            return None;
        }
        let rest = &self.text[indent..];
        let (key, value) = rest.split_once(':')?;
        let plain = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        (plain && (value.is_empty() || value.starts_with([' ', '\t']))).then_some((key, value))
    }
}

fn lines(text: &str) -> Vec<Line<'_>> {
    text.split_inclusive('\n')
        .map(|line| {
            let text = line
                .strip_suffix('\n')
                .map(|line| line.strip_suffix('\r').unwrap_or(line))
                .unwrap_or(line);
            Line {
                text,
                end: &line[text.len()..],
            }
        })
        .collect()
}

/// A value's text split from a comment after it: `` []  # none`` is
/// `("[]", "  # none")`. A `#` inside quotes, or right after a
/// character, starts no comment.
fn split_comment(value: &str) -> (&str, &str) {
    let mut quote = None;
    let mut escaped = false;
    let mut previous = ' ';
    for (at, c) in value.char_indices() {
        match quote {
            Some('"') if escaped => escaped = false,
            Some('"') if c == '\\' => escaped = true,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '#' && (previous == ' ' || previous == '\t') => {
                let code = value[..at].trim_end_matches([' ', '\t']);
                return (code.trim_start(), &value[code.len()..]);
            }
            None => {}
        }
        previous = c;
    }
    (value.trim(), "")
}

/// The lines of one key's new value: `task: []`, or `task:` and an item
/// per check with its source as a comment. `comment` is what followed
/// the old value on the key's line.
fn key_lines(indent: usize, key: &str, checks: &[&Check], comment: &str) -> Vec<String> {
    let pad = " ".repeat(indent);
    if checks.is_empty() {
        return vec![format!("{pad}{key}: []{comment}")];
    }
    let mut out = vec![format!("{pad}{key}:{comment}")];
    for check in checks {
        let source: String = check
            .source
            .chars()
            .map(|c| if printable(c) { c } else { '\u{fffd}' })
            .collect();
        out.push(format!("{pad}  - {}  # {source}", quote(&check.command)));
    }
    out
}

/// A replacement of the lines `start..end` of the text (an insertion
/// when they are equal).
struct Edit {
    start: usize,
    end: usize,
    lines: Vec<String>,
}

/// `text` with the keys of the top-level `verify:` mapping set to the
/// checks given for each; `None` when the section's layout is not one
/// this understands.
fn edit(text: &str, keys: &[(&str, &[&Check])]) -> Option<String> {
    let lines = lines(text);
    let eol = lines
        .iter()
        .map(|line| line.end)
        .find(|end| !end.is_empty())
        .unwrap_or("\n");
    let verify: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].key_at(0).is_some_and(|(key, _)| key == "verify"))
        .collect();
    let &[at] = verify.as_slice() else {
        if !verify.is_empty() {
            return None;
        }
        return Some(appended(text, &lines, eol, keys));
    };
    let (_, value) = lines[at].key_at(0)?;
    if !split_comment(value).0.is_empty() {
        // `verify: {task: [...]}` or an alias: not a block to edit.
        return None;
    }
    let end = (at + 1..lines.len())
        .find(|&i| !lines[i].is_quiet() && lines[i].indent() == 0)
        .unwrap_or(lines.len());
    let content: Vec<usize> = (at + 1..end).filter(|&i| !lines[i].is_quiet()).collect();
    let indent = content.first().map_or(2, |&i| lines[i].indent());
    let mut edits = Vec::new();
    let mut missing = Vec::new();
    for (key, checks) in keys {
        let found: Vec<usize> = content
            .iter()
            .copied()
            .filter(|&i| lines[i].key_at(indent).is_some_and(|(k, _)| k == *key))
            .collect();
        match found.as_slice() {
            [] => missing.extend(key_lines(indent, key, checks, "")),
            [line] => {
                let (_, value) = lines[*line].key_at(indent)?;
                let (_, comment) = split_comment(value);
                // The value goes on while lines are deeper than the key
                // (or list items at its depth); comments after it stay.
                let last = content
                    .iter()
                    .copied()
                    .skip_while(|&i| i <= *line)
                    .take_while(|&i| {
                        let deeper = lines[i].indent() > indent;
                        let item = lines[i].indent() == indent && {
                            let rest = &lines[i].text[indent..];
                            rest == "-" || rest.starts_with("- ")
                        };
                        deeper || item
                    })
                    .last()
                    .unwrap_or(*line);
                edits.push(Edit {
                    start: *line,
                    end: last + 1,
                    lines: key_lines(indent, key, checks, comment),
                });
            }
            _ => return None,
        }
    }
    if !missing.is_empty() {
        let after = content.last().copied().unwrap_or(at) + 1;
        edits.push(Edit {
            start: after,
            end: after,
            lines: missing,
        });
    }
    edits.sort_by_key(|edit| edit.start);
    Some(applied(&lines, eol, &edits))
}

/// The lines with the edits made; new lines end with `eol`, and a last
/// line without an ending keeps having none.
fn applied(lines: &[Line<'_>], eol: &str, edits: &[Edit]) -> String {
    let mut out = String::new();
    let mut next = 0;
    let mut edits = edits.iter().peekable();
    while next <= lines.len() {
        if let Some(edit) = edits.next_if(|edit| edit.start == next) {
            if out.ends_with(|c| c != '\n') {
                out.push_str(eol);
            }
            let ends = if edit.end > edit.start {
                lines[edit.end - 1].end
            } else {
                eol
            };
            let count = edit.lines.len();
            for (n, line) in edit.lines.iter().enumerate() {
                out.push_str(line);
                out.push_str(if n + 1 == count { ends } else { eol });
            }
            next = edit.end;
            continue;
        }
        let Some(line) = lines.get(next) else { break };
        out.push_str(line.text);
        out.push_str(line.end);
        next += 1;
    }
    out
}

/// `text` with a `verify:` section added at its end.
fn appended(text: &str, lines: &[Line<'_>], eol: &str, keys: &[(&str, &[&Check])]) -> String {
    let mut out = text.to_owned();
    if !text.is_empty() && !text.ends_with('\n') {
        out.push_str(eol);
    }
    if lines
        .last()
        .is_some_and(|line| !line.text.trim().is_empty())
    {
        out.push_str(eol);
    }
    out.push_str("verify:");
    out.push_str(eol);
    for (key, checks) in keys {
        for line in key_lines(2, key, checks, "") {
            out.push_str(&line);
            out.push_str(eol);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHIPPED: &str = include_str!("../../config/ralph.yaml");

    fn checks() -> Vec<Check> {
        vec![
            Check::new("cargo test", "Cargo.toml", Scope::Task),
            Check::new(
                "cargo clippy --all-targets -- -D warnings",
                "Cargo.toml; .github/workflows/ci.yml runs clippy",
                Scope::Run,
            ),
        ]
    }

    const BLOCK: &str = r#"  task:
    - "cargo test"  # Cargo.toml
  # Commands run once, in the project dir, when the queue drains.
  run:
    - "cargo test"  # Cargo.toml
    - "cargo clippy --all-targets -- -D warnings"  # Cargo.toml; .github/workflows/ci.yml runs clippy
"#;

    #[test]
    fn the_shipped_settings_get_the_checks_in_place_of_the_empty_lists() {
        let written = with_checks(SHIPPED, &checks()).unwrap();
        let old = "  task: []\n  # Commands run once, in the project dir, when the queue drains.\n  run: []\n";
        assert!(SHIPPED.contains(old));
        assert_eq!(written, SHIPPED.replacen(old, BLOCK, 1));
        // No checks: the lists are written empty, as shipped.
        assert_eq!(with_checks(SHIPPED, &[]).unwrap(), SHIPPED);
    }

    #[test]
    fn block_lists_flow_lists_and_crlf_are_edited_in_place() {
        let text = "verify:   # mine\r\n    task:\r\n    - \"make test\"\r\n\r\n    # between\r\n    - make lint\r\n    # after\r\n    run: [\"a\", 'b # c']   # keep me\r\nmax_iterations: 5\r\n";
        let want = "verify:   # mine\r\n    task:\r\n      - \"cargo test\"  # Cargo.toml\r\n    # after\r\n    run:   # keep me\r\n      - \"cargo test\"  # Cargo.toml\r\n      - \"cargo clippy --all-targets -- -D warnings\"  # Cargo.toml; .github/workflows/ci.yml runs clippy\r\nmax_iterations: 5\r\n";
        assert_eq!(with_checks(text, &checks()).unwrap(), want);
    }

    #[test]
    fn a_missing_section_or_key_is_added() {
        assert_eq!(
            with_checks("max_iterations: 5", &checks()[..1]).unwrap(),
            "max_iterations: 5\n\nverify:\n  task:\n    - \"cargo test\"  # Cargo.toml\n  run:\n    - \"cargo test\"  # Cargo.toml\n"
        );
        assert_eq!(
            with_checks("", &checks()[..1]).unwrap(),
            "verify:\n  task:\n    - \"cargo test\"  # Cargo.toml\n  run:\n    - \"cargo test\"  # Cargo.toml\n"
        );
        assert_eq!(
            with_checks("verify:\n  run: []\ngit:\n  push: never\n", &checks()[..1]).unwrap(),
            "verify:\n  run:\n    - \"cargo test\"  # Cargo.toml\n  task:\n    - \"cargo test\"  # Cargo.toml\ngit:\n  push: never\n"
        );
        assert_eq!(
            with_checks("verify:", &checks()[..1]).unwrap(),
            "verify:\n  task:\n    - \"cargo test\"  # Cargo.toml\n  run:\n    - \"cargo test\"  # Cargo.toml\n"
        );
    }

    #[test]
    fn layouts_it_cannot_edit_are_refused() {
        for text in [
            "verify: {task: [], run: []}\n",
            "verify: &v\n  task: []\n",
            "verify:\n  \"task\": []\n",
            "\"verify\":\n  task: []\n",
        ] {
            assert!(
                matches!(with_checks(text, &checks()), Err(WriteError::Unusual)),
                "{text}"
            );
        }
        for text in ["verify: [", "verify:\n  task: []\n  task: []\n"] {
            assert!(
                matches!(with_checks(text, &checks()), Err(WriteError::Settings(_))),
                "{text}"
            );
        }
    }

    #[test]
    fn commands_are_quoted_so_they_read_back_as_they_are() {
        let tricky = [
            r#"echo "a: b" # not a comment \ done"#,
            "it's\ttab\nnew\u{7}line\u{85}\u{2028}\u{feff}é🙂",
            "- [x]: {y}, &z *w !t |",
        ];
        for command in tricky {
            let yaml = format!("value: {}\n", quote(command));
            let parsed: std::collections::BTreeMap<String, String> =
                serde_yaml::from_str(&yaml).unwrap();
            assert_eq!(parsed["value"], command, "{yaml}");
        }
        let checks: Vec<Check> = tricky
            .iter()
            .map(|command| Check::new(*command, "odd\nsource # x", Scope::Task))
            .collect();
        let written = with_checks(SHIPPED, &checks).unwrap();
        assert!(written.contains("  # odd\u{fffd}source # x\n"), "{written}");
    }

    #[test]
    fn comments_are_split_outside_quotes() {
        assert_eq!(split_comment(" []  # none"), ("[]", "  # none"));
        assert_eq!(split_comment(" [\"a # b\"]"), ("[\"a # b\"]", ""));
        assert_eq!(
            split_comment(" ['it''s', \"\\\"#\"] #c"),
            ("['it''s', \"\\\"#\"]", " #c")
        );
        assert_eq!(split_comment(" a#b"), ("a#b", ""));
        assert_eq!(split_comment("   # only"), ("", "   # only"));
    }
}
