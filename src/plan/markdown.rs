//! Reading a Markdown PRD, line by line (docs/PLANNING.md is the grammar):
//! the `#` title is the document, other headings are sections, and
//! requirements are headings or list items that start with an id (`FR-1:`),
//! or unticked checklist items (`- [ ] ...`). Under a requirement, labelled
//! lines (`Acceptance criteria:`, `Depends on:`, `Files:`, `Verify:`) fill
//! its fields and the rest is its body.

use std::collections::HashMap;

use super::{Draft, Node, Skipped};

/// A problem and the 1-based line it is on.
type Failure = (usize, String);

/// What one line of the document is.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind<'a> {
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
    /// Anything else, with its indentation; fenced code is `Text` too, so
    /// nothing in it is read as structure.
    Text {
        indent: usize,
    },
}

#[derive(Clone, Copy, Debug)]
struct Line<'a> {
    number: usize,
    text: &'a str,
    kind: Kind<'a>,
}

/// Splits `text` into classified lines, skipping YAML front matter.
fn lines(text: &str) -> Vec<Line<'_>> {
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
            Kind::Text { indent }
        } else if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(&trimmed[..3]);
            Kind::Text { indent }
        } else if trimmed.is_empty() {
            Kind::Blank
        } else if let Some(heading) = heading(line) {
            heading
        } else if let Some(item) = item(line, indent) {
            item
        } else {
            Kind::Text { indent }
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
fn requirement(text: &str, heading: bool) -> Option<(String, String)> {
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
fn ids_in(text: &str) -> Vec<String> {
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
fn strip_emphasis(text: &str) -> &str {
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
enum Label {
    Acceptance,
    DependsOn,
    Files,
    Verify,
    Description,
}

/// A labelled line (`Depends on: FR-1`, `**Acceptance criteria:**`,
/// `#### Acceptance criteria`, `- Files: src/*.ts`): the label and the
/// text after it.
fn label(line: &str) -> Option<(Label, &str)> {
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
fn code_spans(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::trim)
        .filter(|span| !span.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A requirement open for its following lines.
struct Open {
    /// Its node, or `None` for a ticked item (skipped, lines swallowed).
    node: Option<usize>,
    /// Heading level, or list-item column plus one.
    depth: Ending,
    /// The lines under it.
    content: Vec<usize>,
}

#[derive(Clone, Copy)]
enum Ending {
    /// Ends at a heading of this level or higher.
    Heading(usize),
    /// Ends at a non-blank line indented this much or less.
    Item(usize),
}

/// A section heading not yet given a node (sections without requirements
/// make no task).
struct Section {
    level: usize,
    line: usize,
    title: String,
    node: Option<usize>,
    prose: Vec<usize>,
}

struct Reader<'a> {
    document: &'a str,
    lines: Vec<Line<'a>>,
    nodes: Vec<Node>,
    skipped: Vec<Skipped>,
    sections: Vec<Section>,
    /// The document's own prose (before the first section).
    prose: Vec<usize>,
    /// Requirement id -> (node or None when ticked, line).
    ids: HashMap<String, (Option<usize>, usize)>,
    /// Keys given out, to keep them unique.
    keys: HashMap<String, usize>,
    /// Per node: the `Depends on` ids and the line naming them.
    wanted: Vec<(usize, String, usize)>,
}

/// Reads `text`, the document named `document`.
pub(super) fn read(document: &str, text: &str) -> Result<Draft, Failure> {
    let lines = lines(text);
    let title = lines
        .iter()
        .find_map(|line| match line.kind {
            Kind::Heading { level: 1, text } => Some((line.number, text)),
            _ => None,
        })
        .filter(|(number, _)| {
            // The title is the first heading of the document.
            !lines
                .iter()
                .any(|line| line.number < *number && matches!(line.kind, Kind::Heading { .. }))
        });
    let stem = document
        .rsplit('/')
        .next()
        .unwrap_or(document)
        .trim_end_matches(".md")
        .trim_end_matches(".markdown");
    let mut reader = Reader {
        document,
        lines,
        nodes: vec![Node {
            title: title
                .map_or(stem, |(_, text)| strip_emphasis(text))
                .to_owned(),
            line: title.map_or(1, |(number, _)| number),
            ..Node::default()
        }],
        skipped: Vec::new(),
        sections: Vec::new(),
        prose: Vec::new(),
        ids: HashMap::new(),
        keys: HashMap::new(),
        wanted: Vec::new(),
    };
    reader.walk(title.map(|(number, _)| number))?;
    reader.finish()
}

impl Reader<'_> {
    fn walk(&mut self, title: Option<usize>) -> Result<(), Failure> {
        let mut open: Option<Open> = None;
        for at in 0..self.lines.len() {
            let line = self.lines[at];
            if Some(line.number) == title {
                continue;
            }
            if let Some(current) = &mut open {
                let ends = match (current.depth, line.kind) {
                    (Ending::Heading(level), Kind::Heading { level: other, text }) => {
                        other <= level || requirement(text, true).is_some()
                    }
                    (Ending::Heading(_), _) => false,
                    (_, Kind::Blank) => false,
                    (Ending::Item(indent), Kind::Item { indent: other, .. })
                    | (Ending::Item(indent), Kind::Text { indent: other }) => other <= indent,
                    (Ending::Item(_), Kind::Heading { .. }) => true,
                };
                if !ends {
                    current.content.push(at);
                    continue;
                }
                let done = open.take().expect("open");
                self.close(done)?;
            }
            open = self.start(at)?;
        }
        if let Some(done) = open {
            self.close(done)?;
        }
        while let Some(section) = self.sections.pop() {
            self.end_section(section);
        }
        Ok(())
    }

    /// Reads line `at` outside any requirement; returns the requirement it
    /// opens, if it does.
    fn start(&mut self, at: usize) -> Result<Option<Open>, Failure> {
        let line = self.lines[at];
        match line.kind {
            Kind::Heading { level, text } => {
                while self.sections.last().is_some_and(|s| s.level >= level) {
                    let section = self.sections.pop().expect("checked");
                    self.end_section(section);
                }
                if let Some((id, title)) = requirement(text, true) {
                    let node = self.requirement(at, Some(id), title)?;
                    return Ok(Some(Open {
                        node: Some(node),
                        depth: Ending::Heading(level),
                        content: Vec::new(),
                    }));
                }
                self.sections.push(Section {
                    level,
                    line: line.number,
                    title: strip_emphasis(text).to_owned(),
                    node: None,
                    prose: Vec::new(),
                });
            }
            Kind::Item {
                indent,
                checkbox,
                text,
            } => {
                let found = requirement(text, false);
                if found.is_some() || checkbox.is_some() {
                    let (id, title) = match found {
                        Some((id, title)) => (Some(id), title),
                        None => (None, strip_emphasis(text).to_owned()),
                    };
                    let node = if checkbox == Some(true) {
                        self.ticked(at, id, title)?;
                        None
                    } else {
                        Some(self.requirement(at, id, title)?)
                    };
                    return Ok(Some(Open {
                        node,
                        depth: Ending::Item(indent),
                        content: Vec::new(),
                    }));
                }
                self.prose_line(at);
            }
            Kind::Blank | Kind::Text { .. } => self.prose_line(at),
        }
        Ok(None)
    }

    fn prose_line(&mut self, at: usize) {
        match self.sections.last_mut() {
            Some(section) => section.prose.push(at),
            None => self.prose.push(at),
        }
    }

    /// A new requirement node under the innermost section.
    fn requirement(
        &mut self,
        at: usize,
        id: Option<String>,
        title: String,
    ) -> Result<usize, Failure> {
        let number = self.lines[at].number;
        let parent = self.section_node();
        let index = self.nodes.len();
        let key = match &id {
            Some(id) => {
                self.claim_id(id, Some(index), number)?;
                self.unique_key(id.clone())
            }
            None => self.unique_key(super::source_key(&title)),
        };
        let title = match (&id, title.is_empty()) {
            (Some(id), true) => id.clone(),
            (Some(id), false) => format!("{id}: {title}"),
            (None, _) => title,
        };
        if title.is_empty() {
            return Err((
                number,
                "a requirement needs a title after its checkbox or id".to_owned(),
            ));
        }
        self.nodes.push(Node {
            parent: Some(parent),
            leaf: true,
            key,
            requirement: id,
            title,
            line: number,
            ..Node::default()
        });
        Ok(index)
    }

    /// A ticked checklist item: skipped, but its id still counts for
    /// `Depends on`.
    fn ticked(&mut self, at: usize, id: Option<String>, title: String) -> Result<(), Failure> {
        let number = self.lines[at].number;
        let key = match &id {
            Some(id) => {
                self.claim_id(id, None, number)?;
                id.clone()
            }
            None => super::source_key(&title),
        };
        self.skipped.push(Skipped {
            source: format!("{}#{key}", self.document),
            title: match &id {
                Some(id) => format!("{id}: {title}"),
                None => title,
            },
            reason: format!("ticked (`- [x]`) on line {number}"),
        });
        Ok(())
    }

    fn claim_id(&mut self, id: &str, node: Option<usize>, number: usize) -> Result<(), Failure> {
        if let Some((_, first)) = self.ids.get(id) {
            return Err((
                number,
                format!(
                    "{id} is defined twice (first on line {first}); give each requirement its own id"
                ),
            ));
        }
        self.ids.insert(id.to_owned(), (node, number));
        Ok(())
    }

    /// `key`, or `key-2`, `key-3`... when taken (empty keys become `item`).
    fn unique_key(&mut self, key: String) -> String {
        let key = if key.is_empty() {
            "item".to_owned()
        } else {
            key
        };
        let count = self.keys.entry(key.clone()).or_insert(0);
        *count += 1;
        if *count == 1 {
            key
        } else {
            let unique = format!("{key}-{count}");
            self.keys.insert(unique.clone(), 1);
            unique
        }
    }

    /// The node of the innermost section, made (with its outer sections)
    /// now that it holds a requirement.
    fn section_node(&mut self) -> usize {
        let mut parent = 0;
        for at in 0..self.sections.len() {
            if let Some(node) = self.sections[at].node {
                parent = node;
                continue;
            }
            let title = self.sections[at].title.clone();
            let key = self.unique_key(super::source_key(&title));
            let index = self.nodes.len();
            self.nodes.push(Node {
                parent: Some(parent),
                key,
                title: if title.is_empty() {
                    format!("Section on line {}", self.sections[at].line)
                } else {
                    title
                },
                line: self.sections[at].line,
                ..Node::default()
            });
            self.sections[at].node = Some(index);
            parent = index;
        }
        parent
    }

    fn end_section(&mut self, section: Section) {
        if let Some(node) = section.node {
            self.nodes[node].body = self.prose_of(&section.prose);
        }
    }

    /// Fills a requirement's fields from the lines under it.
    fn close(&mut self, open: Open) -> Result<(), Failure> {
        let Some(node) = open.node else {
            return Ok(());
        };
        let content = &open.content;
        let mut body: Vec<String> = Vec::new();
        let mut at = 0;
        while at < content.len() {
            let line = self.lines[content[at]];
            let Some((label, value)) = label(line.text) else {
                body.push(line.text.to_owned());
                at += 1;
                continue;
            };
            at += 1;
            // The list items that follow a label belong to it.
            let mut items: Vec<String> = Vec::new();
            if !value.is_empty() {
                items.push(value.to_owned());
            }
            let mut item_indent = None;
            while label != Label::Description && at < content.len() {
                let next = self.lines[content[at]];
                match next.kind {
                    Kind::Blank => {}
                    Kind::Item { indent, text, .. }
                        if item_indent.is_none_or(|first| indent <= first) =>
                    {
                        item_indent.get_or_insert(indent);
                        items.push(text.to_owned());
                    }
                    Kind::Item { indent, .. } | Kind::Text { indent }
                        if item_indent.is_some_and(|first| indent > first) =>
                    {
                        if let Some(last) = items.last_mut() {
                            last.push(' ');
                            last.push_str(next.text.trim());
                        }
                    }
                    _ => break,
                }
                at += 1;
            }
            let items = items.into_iter().map(|item| item.trim().to_owned());
            let target = &mut self.nodes[node];
            match label {
                Label::Acceptance => target.acceptance.extend(items.filter(|i| !i.is_empty())),
                Label::Files => {
                    for item in items {
                        let spans = code_spans(&item);
                        if spans.is_empty() {
                            target.files.extend(
                                item.split([',', ' ', '\t'])
                                    .filter(|f| !f.is_empty())
                                    .map(str::to_owned),
                            );
                        } else {
                            target.files.extend(spans);
                        }
                    }
                }
                Label::Verify => {
                    for item in items {
                        let spans = code_spans(&item);
                        if spans.is_empty() {
                            target.verify.push(item);
                        } else {
                            target.verify.extend(spans);
                        }
                    }
                }
                Label::DependsOn => {
                    for item in items {
                        let ids = ids_in(&item);
                        let none = ["none", "n/a", "-", "nothing"]
                            .contains(&item.to_ascii_lowercase().trim_end_matches('.'));
                        if ids.is_empty() && !none {
                            return Err((
                                line.number,
                                format!(
                                    "\"Depends on: {item}\" names no requirement id; write the ids it needs, like `Depends on: FR-1, FR-3`"
                                ),
                            ));
                        }
                        for id in ids {
                            self.wanted.push((node, id, line.number));
                        }
                    }
                }
                // The text after `Description:` is body, at the line's indent.
                Label::Description => {
                    if !value.is_empty() {
                        let indent = &line.text[..line.text.len() - line.text.trim_start().len()];
                        body.push(format!("{indent}{value}"));
                    }
                }
            }
        }
        self.nodes[node].body = tidy(&body);
        Ok(())
    }

    fn prose_of(&self, prose: &[usize]) -> Option<String> {
        let text: Vec<String> = prose
            .iter()
            .map(|&at| self.lines[at].text.to_owned())
            .collect();
        tidy(&text)
    }

    /// Resolves `Depends on` ids into node indexes and checks for cycles.
    fn finish(mut self) -> Result<Draft, Failure> {
        for (node, id, number) in std::mem::take(&mut self.wanted) {
            match self.ids.get(&id) {
                None => {
                    let this = self.nodes[node]
                        .requirement
                        .clone()
                        .unwrap_or_else(|| self.nodes[node].title.clone());
                    return Err((
                        number,
                        format!(
                            "{this} depends on {id}, which this document does not define; define {id} or remove it from \"Depends on\""
                        ),
                    ));
                }
                Some((Some(dep), _)) if *dep == node => {
                    return Err((
                        number,
                        format!("{id} depends on itself; remove it from \"Depends on\""),
                    ));
                }
                Some((Some(dep), _)) => {
                    if !self.nodes[node].deps.contains(dep) {
                        self.nodes[node].deps.push(*dep);
                    }
                }
                // Ticked: done already.
                Some((None, _)) => {}
            }
        }
        if let Some(cycle) = super::find_cycle(&self.nodes) {
            let names: Vec<String> = cycle
                .iter()
                .map(|&index| {
                    self.nodes[index]
                        .requirement
                        .clone()
                        .unwrap_or_else(|| self.nodes[index].title.clone())
                })
                .collect();
            return Err((
                self.nodes[cycle[0]].line,
                format!(
                    "requirements depend on each other in a circle ({} -> {}); remove one of these \"Depends on\" entries",
                    names.join(" -> "),
                    names[0]
                ),
            ));
        }
        self.nodes[0].body = self.prose_of(&self.prose.clone());
        Ok(Draft {
            nodes: self.nodes,
            skipped: self.skipped,
        })
    }
}

/// Lines as a body: dedented, blank lines at either end dropped, runs of
/// blank lines made one; `None` when nothing is left.
fn tidy(lines: &[String]) -> Option<String> {
    // Only spaces and tabs are indentation: a wider blank character is
    // text, and cutting through it would split a character.
    let indent = |line: &str| {
        line.bytes()
            .take_while(|b| *b == b' ' || *b == b'\t')
            .count()
    };
    let dedent = lines
        .iter()
        .filter(|line| !line.trim().is_empty())
        .map(|line| indent(line))
        .min()?;
    let mut out: Vec<&str> = Vec::new();
    for line in lines {
        let line = if line.trim().is_empty() {
            ""
        } else {
            line[dedent..].trim_end()
        };
        if line.is_empty() && out.last().is_none_or(|last| last.is_empty()) {
            continue;
        }
        out.push(line);
    }
    while out.last() == Some(&"") {
        out.pop();
    }
    (!out.is_empty()).then(|| out.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirement_ids_need_setting_off_in_items() {
        let read = |text| requirement(text, false);
        assert_eq!(read("FR-1: Log in"), Some(("FR-1".into(), "Log in".into())));
        assert_eq!(
            read("**FR-2**: Reset"),
            Some(("FR-2".into(), "Reset".into()))
        );
        assert_eq!(
            read("**FR-2:** Reset"),
            Some(("FR-2".into(), "Reset".into()))
        );
        assert_eq!(
            read("[REQ-12] Export"),
            Some(("REQ-12".into(), "Export".into()))
        );
        assert_eq!(
            read("US-003 - Sort"),
            Some(("US-003".into(), "Sort".into()))
        );
        assert_eq!(read("R1. Fast"), Some(("R1".into(), "Fast".into())));
        assert_eq!(read("R1.2: Sub"), Some(("R1.2".into(), "Sub".into())));
        assert_eq!(read("MP3 support"), None);
        assert_eq!(read("FR-1 Log in"), None);
        assert_eq!(read("FRX1: no"), Some(("FRX1".into(), "no".into())));
        assert_eq!(read("Fr-1: lower"), None);
        assert_eq!(read("A-1b: word"), None);
        assert_eq!(
            requirement("FR-1 Log in", true),
            Some(("FR-1".into(), "Log in".into()))
        );
        assert_eq!(requirement("Q3 Goals", true), None);
        assert_eq!(
            requirement("FR-7", true),
            Some(("FR-7".into(), String::new()))
        );
    }

    #[test]
    fn labels_are_read_in_their_usual_spellings() {
        assert_eq!(label("Depends on: FR-1"), Some((Label::DependsOn, "FR-1")));
        assert_eq!(
            label("- **Depends on:** FR-1"),
            Some((Label::DependsOn, "FR-1"))
        );
        assert_eq!(
            label("**Acceptance Criteria**:"),
            Some((Label::Acceptance, ""))
        );
        assert_eq!(
            label("#### Acceptance criteria"),
            Some((Label::Acceptance, ""))
        );
        assert_eq!(
            label("Verify: `npm test`"),
            Some((Label::Verify, "`npm test`"))
        );
        assert_eq!(label("Files are stored on disk"), None);
        assert_eq!(label("Acceptance of the terms matters"), None);
    }

    #[test]
    fn bodies_dedent_by_spaces_and_tabs_only() {
        let lines = ["    a".to_owned(), "\u{3000}b".to_owned(), "  c".to_owned()];
        assert_eq!(tidy(&lines).as_deref(), Some("    a\n\u{3000}b\n  c"));
        let lines = ["", "    a", "", "", "      b", ""].map(str::to_owned);
        assert_eq!(tidy(&lines).as_deref(), Some("a\n\n  b"));
    }

    #[test]
    fn crlf_documents_read_like_lf_ones() {
        let lf = "# T\n\n## S\n\n- FR-1: one\n  Depends on: FR-2\n- FR-2: two\n";
        let crlf = lf.replace('\n', "\r\n");
        let titles = |text: &str| -> Vec<(String, Vec<usize>)> {
            read("d.md", text)
                .unwrap()
                .nodes
                .into_iter()
                .map(|node| (node.title, node.deps))
                .collect()
        };
        assert_eq!(titles(&crlf), titles(lf));
        assert_eq!(titles(lf)[2], ("FR-1: one".to_owned(), vec![3]));
    }

    #[test]
    fn ids_are_found_as_words() {
        assert_eq!(ids_in("FR-1, FR-3 and US-004."), ["FR-1", "FR-3", "US-004"]);
        assert_eq!(ids_in("XFR-1x, nothing"), Vec::<String>::new());
    }
}
