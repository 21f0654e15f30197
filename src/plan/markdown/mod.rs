//! Reading a Markdown PRD, line by line (docs/PLANNING.md is the grammar):
//! the `#` title is the document, other headings are sections, and
//! requirements are headings or list items that start with an id (`FR-1:`),
//! or unticked checklist items (`- [ ] ...`). Under a requirement, labelled
//! lines (`Acceptance criteria:`, `Depends on:`, `Files:`, `Verify:`) fill
//! its fields and the rest is its body.

use std::collections::HashMap;

use super::{Draft, Node, Skipped};
use lex::{Kind, Label, Line, code_spans, ids_in, label, lines, requirement, strip_emphasis};

mod lex;

/// A problem and the 1-based line it is on.
type Failure = (usize, String);

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
    ids: super::Ids,
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
                    // The next requirement, a list item with an id, unless
                    // it is one of a label's items (`Depends on:` then
                    // `- FR-1`).
                    (Ending::Heading(_), Kind::Item { text, .. }) => {
                        requirement(text, false).is_some() && !self.in_label_list(&current.content)
                    }
                    (Ending::Heading(_), _) => false,
                    (_, Kind::Blank) => false,
                    (Ending::Item(indent), Kind::Item { indent: other, .. })
                    | (Ending::Item(indent), Kind::Text { indent: other, .. }) => other <= indent,
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

    /// Whether a list item after the lines `content` (a requirement's, so
    /// far) is one of a label's items: back over the blank lines and the
    /// items before it, the first label (a line or an item) comes before
    /// any other line.
    fn in_label_list(&self, content: &[usize]) -> bool {
        for &at in content.iter().rev() {
            let line = self.lines[at];
            match line.kind {
                Kind::Blank => {}
                Kind::Item { .. } if label(line.text).is_none() => {}
                Kind::Item { .. } | Kind::Text { code: false, .. } => {
                    return label(line.text).is_some();
                }
                _ => return false,
            }
        }
        false
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
            let labelled = match line.kind {
                Kind::Text { code: true, .. } => None,
                _ => label(line.text),
            };
            let Some((label, value)) = labelled else {
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
            // A blank line ends a list of ids, paths or commands once it
            // has one (the checklist after `Depends on: FR-2` and a blank
            // line is body); acceptance criteria may be a loose list.
            let short_list = matches!(label, Label::DependsOn | Label::Files | Label::Verify);
            while label != Label::Description && at < content.len() {
                let next = self.lines[content[at]];
                match next.kind {
                    Kind::Blank if short_list && !items.is_empty() => break,
                    Kind::Blank => {}
                    Kind::Item { indent, text, .. }
                        if item_indent.is_none_or(|first| indent <= first) =>
                    {
                        item_indent.get_or_insert(indent);
                        items.push(text.to_owned());
                    }
                    Kind::Item { indent, .. }
                    | Kind::Text {
                        indent,
                        code: false,
                    } if item_indent.is_some_and(|first| indent > first) => {
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
            match super::depend(&mut self.nodes, &self.ids, node, &id) {
                Ok(()) => {}
                Err(super::Unresolved::Unknown) => {
                    let this = self.nodes[node].name();
                    return Err((
                        number,
                        format!(
                            "{this} depends on {id}, which this document does not define; define {id} or remove it from \"Depends on\""
                        ),
                    ));
                }
                Err(super::Unresolved::Itself) => {
                    return Err((
                        number,
                        format!("{id} depends on itself; remove it from \"Depends on\""),
                    ));
                }
            }
        }
        if let Some(cycle) = super::find_cycle(&self.nodes) {
            let names: Vec<&str> = cycle
                .iter()
                .map(|&index| self.nodes[index].name())
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

    /// A requirement's fenced example is its body, however much its lines
    /// look like labels: never a check that runs, a file or a dependency.
    #[test]
    fn labels_in_fenced_code_are_body_text() {
        let text = "# T\n\n### FR-1: Configure the CI\n\n```yaml\nVerify: ./deploy-to-prod.sh\nFiles: secrets.env\nDepends on: FR-9\n```\n\nVerify: `cargo test`\n";
        let draft = read("d.md", text).unwrap();
        let node = draft
            .nodes
            .iter()
            .find(|n| n.title == "FR-1: Configure the CI")
            .unwrap();
        assert_eq!(node.verify, ["cargo test"]);
        assert!(node.files.is_empty() && node.deps.is_empty());
        assert_eq!(
            node.body.as_deref(),
            Some("```yaml\nVerify: ./deploy-to-prod.sh\nFiles: secrets.env\nDepends on: FR-9\n```")
        );
    }

    /// A blank line ends `Depends on:`'s list: the checklist after it is
    /// the requirement's body, not more ids.
    #[test]
    fn a_blank_line_ends_the_list_of_dependencies() {
        let text = "# T\n\n### FR-1: Accounts\n\n### FR-2: Sign up\n\nDepends on: FR-1\n\n- [ ] the form has an email field\n- [ ] a wrong password is refused\n\n### FR-3: Profile\n\nDepends on:\n- FR-1\n- FR-2\n\nVerify: `cargo test`\n\n- [ ] shows the name\n";
        let draft = read("d.md", text).unwrap();
        let found = |title: &str| {
            let at = draft.nodes.iter().position(|n| n.title == title);
            at.unwrap_or_else(|| panic!("no {title}"))
        };
        let sign_up = &draft.nodes[found("FR-2: Sign up")];
        assert_eq!(sign_up.deps, [found("FR-1: Accounts")]);
        assert_eq!(
            sign_up.body.as_deref(),
            Some("- [ ] the form has an email field\n- [ ] a wrong password is refused")
        );
        let profile = &draft.nodes[found("FR-3: Profile")];
        assert_eq!(
            profile.deps,
            [found("FR-1: Accounts"), found("FR-2: Sign up")]
        );
        assert_eq!(profile.verify, ["cargo test"]);
        assert_eq!(profile.body.as_deref(), Some("- [ ] shows the name"));
    }

    /// A list item with an id ends the heading requirement above it and is
    /// a requirement of its own, but not one of a label's items.
    #[test]
    fn an_item_requirement_after_a_heading_requirement_is_its_own() {
        let text = "# T\n\n### FR-0: Accounts\n\n### FR-1: Sign up\n\nDepends on:\n- FR-0\n\n### FR-5: Profile\nProse.\n\n- FR-2: Confirm email\n- FR-3: Resend\n  Depends on: FR-2\n";
        let draft = read("d.md", text).unwrap();
        let found = |title: &str| {
            let at = draft.nodes.iter().position(|n| n.title == title);
            at.unwrap_or_else(|| panic!("no {title}"))
        };
        assert_eq!(
            draft.nodes[found("FR-1: Sign up")].deps,
            [found("FR-0: Accounts")]
        );
        assert_eq!(
            draft.nodes[found("FR-5: Profile")].body.as_deref(),
            Some("Prose.")
        );
        assert_eq!(
            draft.nodes[found("FR-3: Resend")].deps,
            [found("FR-2: Confirm email")]
        );
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
