//! `ralph plan`: compiles a product requirements document into tasks,
//! deterministically (the same bytes give the same tasks, in the same
//! order). docs/PLANNING.md holds the grammar.
//!
//! A reader turns the document into a [`Draft`]: a tree of a document, its
//! sections and its requirements, with dependencies by index. [`order`]
//! then sorts each level (dependencies first, then requirement ids,
//! numeric-aware, then text order) into the plan the task store adds.

mod json;
mod markdown;
mod order;

use std::collections::HashMap;
use std::fmt;

use crate::exit::Exit;
use crate::task::PlannedTask;

/// Where the grammar is written down, for hints.
pub const GUIDE: &str = "docs/PLANNING.md";

/// A document compiled into tasks, in the order they go into the queue.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The document as its tasks name it (`prds/auth.md`).
    pub document: String,
    /// The tasks, parents before children, in queue order.
    pub tasks: Vec<PlannedTask>,
    /// Requirements left out, and why.
    pub skipped: Vec<Skipped>,
}

/// A requirement the document marks as done already.
#[derive(Clone, Debug, PartialEq)]
pub struct Skipped {
    /// Where it comes from.
    pub source: String,
    /// Its title.
    pub title: String,
    /// Why it was left out.
    pub reason: String,
}

/// A document ralph cannot plan from: nothing is written.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub struct Error {
    /// The document as named on the command line.
    pub file: String,
    /// The 1-based line, when one is to blame.
    pub line: Option<usize>,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl crate::exit::Reportable for Error {
    /// Every planning error is invalid input.
    fn exit(&self) -> Exit {
        Exit::InvalidInput
    }

    /// Where to read what a document may say.
    fn hint(&self) -> Option<String> {
        Some(format!("{GUIDE} describes what `ralph plan` reads"))
    }
}

/// One node of a document before ordering: the document (index 0), a
/// section, or a requirement.
#[derive(Clone, Debug, Default)]
struct Node {
    /// The parent's index; `None` only for the document.
    parent: Option<usize>,
    /// Whether it is a requirement (a leaf task).
    leaf: bool,
    /// The part of `source` after `#`; empty for the document.
    key: String,
    /// The requirement id, when it has one.
    requirement: Option<String>,
    title: String,
    body: Option<String>,
    acceptance: Vec<String>,
    files: Vec<String>,
    verify: Vec<String>,
    /// Indexes of the requirements it depends on.
    deps: Vec<usize>,
    /// The line it starts on (or its position in a JSON list, from 1).
    line: usize,
    /// For stories of a `prd.json`: their priority, ordered before ids.
    priority: Option<i64>,
}

impl Node {
    /// Its requirement id, or its title when it has none.
    fn name(&self) -> &str {
        self.requirement.as_deref().unwrap_or(&self.title)
    }
}

/// What a reader makes of a document.
#[derive(Debug, Default)]
struct Draft {
    nodes: Vec<Node>,
    skipped: Vec<Skipped>,
}

/// Reads the document `bytes`, named `document` in the tasks' `source` and
/// `shown` in messages: a `prd.json` (snarktank/ralph, ralph-tui) when it
/// is a JSON object, Markdown otherwise.
pub fn read(document: &str, shown: &str, bytes: &[u8]) -> Result<Plan, Error> {
    let error = |line: Option<usize>, message: String| Error {
        file: shown.to_owned(),
        line,
        message,
    };
    let text = std::str::from_utf8(bytes).map_err(|err| {
        let (line, _) = crate::files::not_utf8(bytes, err);
        error(
            Some(line),
            "not UTF-8 text; save the document as UTF-8".to_owned(),
        )
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let draft = if text.trim_start().starts_with('{') {
        json::read(document, text).map_err(|(line, message)| error(line, message))?
    } else {
        markdown::read(document, text).map_err(|(line, message)| error(Some(line), message))?
    };
    // A pushed document is untrusted: a task it would make must be one
    // the queue takes (`ralph task add` refuses the same).
    for node in &draft.nodes {
        if let Some(over) =
            crate::task::Oversized::of(&node.title, node.body.as_deref(), &node.verify)
        {
            return Err(error(Some(node.line), format!("{over}; shorten it")));
        }
    }
    if draft.nodes.len() <= 1 && draft.skipped.is_empty() {
        return Err(error(
            None,
            format!(
                "no requirements found: no requirement ids (FR-1, REQ-12, US-003, R1) as headings or list items, no `- [ ]` checklist items, no `userStories`; to have an agent plan a free-form document, run `ralph plan --agent {shown}`"
            ),
        ));
    }
    Ok(order::arrange(document, draft))
}

/// Why a dependency of a requirement does not resolve.
enum Unresolved {
    /// No requirement of the document has the id.
    Unknown,
    /// The id is the requirement's own.
    Itself,
}

/// Requirement id -> its node (`None`: ticked, done already) and line.
type Ids = HashMap<String, (Option<usize>, usize)>;

/// Adds the requirement `id` to the deps of `nodes[node]` once; a ticked
/// one is done already and adds nothing.
fn depend(nodes: &mut [Node], ids: &Ids, node: usize, id: &str) -> Result<(), Unresolved> {
    match ids.get(id) {
        None => Err(Unresolved::Unknown),
        Some((Some(dep), _)) if *dep == node => Err(Unresolved::Itself),
        Some((Some(dep), _)) => {
            if !nodes[node].deps.contains(dep) {
                nodes[node].deps.push(*dep);
            }
            Ok(())
        }
        Some((None, _)) => Ok(()),
    }
}

/// A dependency cycle among the nodes, if any, in dependency order.
fn find_cycle(nodes: &[Node]) -> Option<Vec<usize>> {
    crate::task::find_cycle(nodes.len(), |node| nodes[node].deps.iter().copied())
}

/// The key a task without a requirement id has in its `source`
/// (`prds/auth.md#document-the-auth-endpoints-in-docs-api`): its title's
/// slug. Sources are a task's identity across plans, so this must never
/// change; the unit test pins it, whatever branch naming does. A title
/// with letters the slug cannot spell (`日本語`) gets a hash of its text
/// after the slug, so its key follows its text too, not its position.
pub(crate) fn source_key(title: &str) -> String {
    let slug = crate::git::slug(title);
    let unspelled = title
        .chars()
        .any(|c| c.is_alphanumeric() && crate::git::slug(c.encode_utf8(&mut [0; 4])).is_empty());
    if !unspelled {
        return slug;
    }
    // FNV-1a: the same text gives the same key on every machine.
    let hash = title
        .trim()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        });
    let hash = format!("{:08x}", hash >> 32);
    if slug.is_empty() {
        hash
    } else {
        format!("{slug}-{hash}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_keys_never_change() {
        assert_eq!(
            source_key("Document the auth endpoints in docs/api.md, with examples"),
            "document-the-auth-endpoints-in-docs-api"
        );
        assert_eq!(
            source_key("Sign in with ÉTÉ 2026!"),
            "sign-in-with-ete-2026"
        );
        assert_eq!(source_key("  "), "");
        // Letters no slug spells: a hash of the text, never a position.
        let cjk = source_key("項目一");
        assert_eq!(cjk, "15c5d720");
        assert_ne!(cjk, source_key("項目二"));
        assert_eq!(cjk, source_key("項目一"));
        assert!(source_key("日本語 release").starts_with("release-"));
    }
}
