//! The words of a Markdown PRD: what each line is (heading, list item,
//! labelled line, prose), requirement ids and code spans. The grammar is
//! docs/PLANNING.md's; `super` reads the lines into a plan.

/// What one line of the document is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Kind<'a> {
    Blank,
    /// An ATX heading (`## Text`).
    Heading {
        level: usize,
        text: &'a str,
    },
    /// A list item: its marker's column, its checkbox (`Some(true)` when
    /// ticked) and the text after them.
    Item {
        indent: usize,
        checkbox: Option<bool>,
        text: &'a str,
    },
    /// Anything else, with its indentation; fenced code is `Text` too
    /// (`code`), so nothing in it is read as structure, labels included.
    Text {
        indent: usize,
        code: bool,
    },
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Line<'a> {
    pub(super) number: usize,
    pub(super) text: &'a str,
    pub(super) kind: Kind<'a>,
}

/// Splits `text` into classified lines, skipping YAML front matter.
pub(super) fn lines(text: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    let mut front_matter = text.starts_with("---\n") || text.starts_with("---\r\n");
    for (index, raw) in text.lines().enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let number = index + 1;
        if front_matter {
            if number > 1 && (line == "---" || line == "...") {
                front_matter = false;
            }
            continue;
        }
        let indent = indent_of(line);
        let trimmed = line.trim_start();
        let kind = if let Some(marker) = fence {
            if trimmed.starts_with(marker) {
                fence = None;
            }
            Kind::Text { indent, code: true }
        } else if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(&trimmed[..3]);
            Kind::Text { indent, code: true }
        } else if trimmed.is_empty() {
            Kind::Blank
        } else if let Some(heading) = heading(line) {
            heading
        } else if let Some(item) = item(line, indent) {
            item
        } else {
            Kind::Text {
                indent,
                code: false,
            }
        };
        out.push(Line {
            number,
            text: line,
            kind,
        });
    }
    out
}

/// Columns of leading whitespace, a tab counting as four.
fn indent_of(line: &str) -> usize {
    line.chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum()
}

fn heading(line: &str) -> Option<Kind<'_>> {
    if indent_of(line) > 3 {
        return None;
    }
    let trimmed = line.trim_start();
    let level = trimmed.bytes().take_while(|&b| b == b'#').count();
    let rest = &trimmed[level..];
    if !(1..=6).contains(&level) || !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    // A closing run of `#` is not part of the text.
    let text = rest.trim();
    let text = match text.trim_end_matches('#') {
        stripped if stripped.is_empty() || stripped.ends_with([' ', '\t']) => stripped.trim_end(),
        _ => text,
    };
    Some(Kind::Heading { level, text })
}

fn item(line: &str, indent: usize) -> Option<Kind<'_>> {
    let trimmed = line.trim_start();
    let after = if let Some(rest) = trimmed
        .strip_prefix("- ")
        .or_else(|| trimmed.strip_prefix("* "))
        .or_else(|| trimmed.strip_prefix("+ "))
    {
        rest
    } else {
        let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
        let rest = &trimmed[digits..];
        if !(1..=9).contains(&digits) {
            return None;
        }
        rest.strip_prefix(". ")
            .or_else(|| rest.strip_prefix(") "))?
    };
    let after = after.trim_start();
    let (checkbox, text) = match after.get(..3) {
        Some("[ ]") => (Some(false), &after[3..]),
        Some("[x]" | "[X]") => (Some(true), &after[3..]),
        _ => (None, after),
    };
    if checkbox.is_some() && !(text.is_empty() || text.starts_with([' ', '\t'])) {
        return Some(Kind::Item {
            indent,
            checkbox: None,
            text: after.trim_end(),
        });
    }
    Some(Kind::Item {
        indent,
        checkbox,
        text: text.trim(),
    })
}

/// A requirement id at the start of `text` and the title after it. In a
/// list item the id must be set off (`FR-1:`, `FR-1 -`, `**FR-1**`,
/// `[FR-1]`); in a heading a space after an id with a dash will do
/// (`### FR-1 Login`).
pub(super) fn requirement(text: &str, heading: bool) -> Option<(String, String)> {
    let (opener, rest) = ["**", "__", "[", "`"]
        .iter()
        .find_map(|opener| text.strip_prefix(opener).map(|rest| (*opener, rest)))
        .unwrap_or(("", text));
    let length = id_length(rest)?;
    let (id, mut rest) = rest.split_at(length);
    let mut set_off = false;
    if !opener.is_empty() {
        let closer = match opener {
            "[" => "]",
            other => other,
        };
        // `**FR-1:**` keeps its colon inside the emphasis.
        rest = rest.strip_prefix(':').map_or(rest, |after| {
            set_off = after.starts_with(closer);
            after
        });
        rest = rest.strip_prefix(closer)?;
        set_off = true;
    }
    let title_start = rest.trim_start();
    let separated = ["::", ":", ".", ")", "-", "\u{2013}", "\u{2014}"]
        .iter()
        .find_map(|sep| title_start.strip_prefix(sep));
    let title = match separated {
        // `FR-1.` must not be `FR-1.2`: a separator is followed by a space.
        Some(after) if after.is_empty() || after.starts_with([' ', '\t']) => after,
        _ if set_off => title_start,
        _ if rest.is_empty() => rest,
        _ if heading && id.contains(['-', '_']) && rest.starts_with([' ', '\t']) => title_start,
        _ => return None,
    };
    let title = strip_emphasis(title.trim()).trim();
    Some((id.to_owned(), title.to_owned()))
}

/// The length of a requirement id at the start of `text`: 1 to 10
/// uppercase letters, an optional `-` or `_`, 1 to 6 digits, optional
/// `.N` parts; ended by a character that cannot continue a word.
fn id_length(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let letters = bytes.iter().take_while(|b| b.is_ascii_uppercase()).count();
    if !(1..=10).contains(&letters) {
        return None;
    }
    let mut at = letters;
    if matches!(bytes.get(at), Some(b'-' | b'_')) {
        at += 1;
    }
    let digits = bytes[at..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    if !(1..=6).contains(&digits) {
        return None;
    }
    at += digits;
    while bytes.get(at) == Some(&b'.') {
        let more = bytes[at + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if more == 0 {
            break;
        }
        at += 1 + more;
    }
    match bytes.get(at) {
        Some(b) if b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_' => None,
        _ => Some(at),
    }
}

/// Every requirement id in `text` standing as a word of its own.
pub(super) fn ids_in(text: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let before = text[..at].chars().next_back();
        let starts_word = before.is_none_or(|c| !(c.is_alphanumeric() || c == '-' || c == '_'));
        if starts_word && let Some(length) = id_length(&text[at..]) {
            ids.push(text[at..at + length].to_owned());
            at += length;
            continue;
        }
        at += text[at..].chars().next().map_or(1, char::len_utf8);
    }
    ids
}

/// `**text**`, `__text__` or `*text*` without the markers.
pub(super) fn strip_emphasis(text: &str) -> &str {
    for marker in ["**", "__"] {
        if let Some(inner) = text
            .strip_prefix(marker)
            .and_then(|rest| rest.strip_suffix(marker))
        {
            return inner;
        }
    }
    text
}

/// The fields a labelled line fills.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Label {
    Acceptance,
    DependsOn,
    Files,
    Verify,
    Description,
}

/// A labelled line (`Depends on: FR-1`, `**Acceptance criteria:**`,
/// `#### Acceptance criteria`, `- Files: src/*.ts`): the label and the
/// text after it.
pub(super) fn label(line: &str) -> Option<(Label, &str)> {
    let mut text = line.trim();
    let is_heading = text.starts_with('#');
    text = text.trim_start_matches('#').trim_start();
    for marker in ["- ", "* ", "+ "] {
        if let Some(rest) = text.strip_prefix(marker) {
            text = rest.trim_start();
        }
    }
    let emphasis = ["**", "__"]
        .iter()
        .find(|marker| text.starts_with(**marker))
        .copied();
    if let Some(marker) = emphasis {
        text = &text[marker.len()..];
    }
    let lower = text.to_ascii_lowercase();
    const NAMES: [(&str, Label); 10] = [
        ("acceptance criteria", Label::Acceptance),
        ("acceptance", Label::Acceptance),
        ("depends on", Label::DependsOn),
        ("dependencies", Label::DependsOn),
        ("deps", Label::DependsOn),
        ("files", Label::Files),
        ("verification", Label::Verify),
        ("verify", Label::Verify),
        ("description", Label::Description),
        ("details", Label::Description),
    ];
    let (name, label) = NAMES.iter().find(|(name, _)| lower.starts_with(name))?;
    let mut rest = &text[name.len()..];
    let mut colon = false;
    if let Some(after) = rest.strip_prefix(':') {
        rest = after;
        colon = true;
    }
    if let Some(marker) = emphasis {
        rest = rest.strip_prefix(marker)?;
        if !colon && let Some(after) = rest.strip_prefix(':') {
            rest = after;
            colon = true;
        }
    }
    let rest = rest.trim();
    // A heading names its section; elsewhere the label needs its colon.
    if colon || (is_heading && rest.is_empty()) {
        Some((*label, rest))
    } else {
        None
    }
}

/// The text of `code` spans (`` `npm test` ``) in `text`.
pub(super) fn code_spans(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::trim)
        .filter(|span| !span.is_empty())
        .map(str::to_owned)
        .collect()
}
