//! A task's notes and review verdicts, which carry between fresh-context
//! iterations: `.ralph/notes/<id>.md` (`ralph task note`, and each
//! verdict's notes), appended as dated entries, and
//! `.ralph/reviews/<id>.jsonl` (`ralph task review`), one verdict a line.
//! Both are appended durably, so a kill loses at most the entry being
//! written, and never deleted; at the squash the notes are quoted in the
//! commit's body too ([`for_squash`]).

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::files::own;

/// Most bytes of notes a prompt carries (newest first).
pub(crate) const PROMPT_BYTES: usize = 6 * 1024;

/// How an entry's heading starts.
const HEADING: &str = "### ";

/// How the heading of a rejection's notes ends.
const REJECTED: &str = "· review rejected";

/// A reviewer's verdict on a `ready` task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub(crate) enum Verdict {
    /// The work is done: the task is `complete`.
    Passed,
    /// Not yet: back to `active`, with the reasons.
    Rejected,
}

impl Verdict {
    /// Its name, as the trigger variable `last_review` has it.
    pub(crate) fn as_str(self) -> &'static str {
        self.into()
    }

    /// The status it gives the task.
    pub(crate) fn status(self) -> crate::task::Status {
        match self {
            Verdict::Passed => crate::task::Status::Complete,
            Verdict::Rejected => crate::task::Status::Active,
        }
    }
}

/// One verdict, a line of `.ralph/reviews/<id>.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Review {
    /// When (RFC 3339).
    pub time: String,
    /// Which.
    pub verdict: Verdict,
    /// Why, as the reviewer wrote it.
    #[serde(default)]
    pub notes: String,
    /// The task's iteration it was given in (0: before any).
    #[serde(default)]
    pub task_iteration: u64,
}

/// Appends a dated note, `kind` saying whose (`note`, `review passed`,
/// `review rejected`), to `path` in the project at `root`.
pub(crate) fn append_note(
    root: &Path,
    path: &Path,
    time: &str,
    kind: &str,
    text: &str,
) -> io::Result<()> {
    let mut entry = format!("{HEADING}{time} · {kind}\n\n");
    // A line that looks like an entry's heading would split the entry when
    // the file is read back: indented, it does not.
    for line in text.trim_end().lines() {
        if line.starts_with(HEADING) {
            entry.push(' ');
        }
        entry.push_str(line);
        entry.push('\n');
    }
    entry.push('\n');
    own::append(root, path, entry.as_bytes())
}

/// Appends a verdict to `path` in the project at `root`.
pub(crate) fn append_review(root: &Path, path: &Path, review: &Review) -> io::Result<()> {
    let mut line = serde_json::to_string(review).expect("plain data serialises");
    line.push('\n');
    own::append(root, path, line.as_bytes())
}

/// Records `review` of task `id`, once the status it gives took effect:
/// the verdict's line, its notes for the task's next prompts, and an
/// event in the run's log (under the run's role and iteration as the
/// state has them).
pub(crate) fn record_review(
    paths: &crate::paths::Paths,
    id: &str,
    review: &Review,
) -> Result<(), crate::files::PathError> {
    use crate::files::PathError;
    let reviews = paths.reviews(id);
    append_review(paths.project(), &reviews, review).map_err(|e| PathError::new(reviews, e))?;
    let notes = &review.notes;
    if !notes.is_empty() {
        let kind = format!("review {}", review.verdict.as_str());
        let file = paths.notes(id);
        append_note(paths.project(), &file, &review.time, &kind, notes)
            .map_err(|e| PathError::new(file, e))?;
    }
    let state = crate::state::StateFile::open(paths).peek();
    let event = crate::events::Event {
        timestamp: review.time.clone(),
        run_id: state.run_id,
        task_id: Some(id.to_owned()),
        iteration: state.iteration,
        role: state.role,
        phase: "review".into(),
        status: review.verdict.as_str().into(),
        detail: notes.lines().next().unwrap_or_default().to_owned(),
        extra: crate::events::fields(serde_json::json!({"notes": notes})),
    };
    (crate::events::EventLog::open(paths).append(&event))
        .map_err(|e| PathError::new(paths.events(), e))
}

/// The text of notes or verdicts file `path` in the project at `root`;
/// `None` when it is missing or is not ralph's own (a link).
fn read(root: &Path, path: &Path) -> Option<String> {
    own::read_text(root, path).ok().flatten()
}

/// The verdicts given so far in `path` (in the project at `root`), oldest
/// first; a torn last line (a kill mid-append) is left out, and a file
/// that cannot be read gives none.
pub(crate) fn reviews(root: &Path, path: &Path) -> Vec<Review> {
    let text = read(root, path).unwrap_or_default();
    text.lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// The entries of a notes file, oldest first.
fn entries(text: &str) -> Vec<&str> {
    let mut starts: Vec<usize> = text
        .match_indices(&format!("\n{HEADING}"))
        .map(|(at, _)| at + 1)
        .collect();
    if text.starts_with(HEADING) {
        starts.insert(0, 0);
    }
    starts
        .iter()
        .enumerate()
        .map(|(index, &start)| {
            let end = starts.get(index + 1).copied().unwrap_or(text.len());
            text[start..end].trim_end()
        })
        .collect()
}

/// How many notes the task has.
pub(crate) fn count(root: &Path, path: &Path) -> usize {
    read(root, path).map_or(0, |text| entries(&text).len())
}

/// The task's notes for a prompt: newest first, whole entries within
/// [`PROMPT_BYTES`], saying how many older ones were left out. `None`
/// when it has none.
/// `shown_apart`: the newest entry is the last rejection's reasons, which
/// the prompt shows in a section of their own: left out here.
pub(crate) fn for_prompt(root: &Path, path: &Path, shown_apart: bool) -> Option<String> {
    let text = read(root, path)?;
    let mut all = entries(&text);
    if shown_apart
        && all
            .last()
            .is_some_and(|entry| entry.lines().next().is_some_and(|l| l.ends_with(REJECTED)))
    {
        all.pop();
    }
    if all.is_empty() {
        return None;
    }
    let mut shown: Vec<&str> = Vec::new();
    let mut used = 0;
    for entry in all.iter().rev() {
        if used + entry.len() > PROMPT_BYTES && !shown.is_empty() {
            break;
        }
        // One entry larger than the whole budget: its end.
        let entry = crate::prompt::bounded_tail(entry, PROMPT_BYTES);
        used += entry.len() + 2;
        shown.push(entry);
    }
    let mut out = shown.join("\n\n");
    let left = all.len() - shown.len();
    if left > 0 {
        out.push_str(&format!(
            "\n\n_{} older in {}._",
            crate::text::count(left, "note"),
            path.display()
        ));
    }
    Some(out)
}

/// Most bytes of notes a squash commit's body quotes.
const SQUASH_BYTES: usize = 2 * 1024;

/// The task's notes for its squash commit's body, so they stay in the
/// history once the task is archived: newest first, whole entries within
/// [`SQUASH_BYTES`], quoted (`> `) so no line of them reads as a trailer,
/// ending with a blank line before the trailers. `None` without notes.
pub(crate) fn for_squash(root: &Path, path: &Path) -> Option<String> {
    let text = read(root, path)?;
    let all = entries(&text);
    let mut out = String::from("Notes on the task, newest first:\n");
    let mut used = 0;
    let mut shown = 0;
    for entry in all.iter().rev() {
        if used + entry.len() > SQUASH_BYTES && shown > 0 {
            break;
        }
        used += entry.len();
        shown += 1;
        out.push_str(">\n");
        for line in entry.lines() {
            match line.is_empty() {
                true => out.push_str(">\n"),
                false => out.push_str(&format!("> {line}\n")),
            }
        }
    }
    if shown == 0 {
        return None;
    }
    if shown < all.len() {
        out.push_str(&format!(
            ">\n> ({} older)\n",
            crate::text::count(all.len() - shown, "note")
        ));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_come_newest_first_within_the_budget() {
        let temp = assert_fs::TempDir::new().unwrap();
        let dir = temp.path().to_owned();
        let path = dir.join(".ralph/notes/A.md");
        assert_eq!(for_prompt(&dir, &path, false), None);
        append_note(&dir, &path, "t1", "note", "first").unwrap();
        append_note(&dir, &path, "t2", "review rejected", "second\n").unwrap();
        assert_eq!(count(&dir, &path), 2);
        assert_eq!(
            for_prompt(&dir, &path, false).unwrap(),
            "### t2 · review rejected\n\nsecond\n\n### t1 · note\n\nfirst"
        );
        for n in 0..20 {
            append_note(&dir, &path, &format!("n{n}"), "note", &"x".repeat(500)).unwrap();
        }
        let shown = for_prompt(&dir, &path, false).unwrap();
        assert!(shown.starts_with("### n19 · note"), "{shown}");
        assert!(shown.len() <= PROMPT_BYTES + 200, "{}", shown.len());
        assert!(
            shown.ends_with(&format!("older in {}._", path.display())),
            "{shown}"
        );
        let squash = for_squash(&dir, &path).unwrap();
        assert!(
            squash.starts_with("Notes on the task, newest first:\n>\n> ### n19 · note\n>\n> xxx"),
            "{squash}"
        );
        assert!(squash.len() < 3 * 1024, "{}", squash.len());
        assert!(squash.ends_with(" older)\n"), "{squash}");
        assert!(
            squash
                .lines()
                .all(|line| line.starts_with('>') || line.starts_with("Notes"))
        );
    }

    #[test]
    fn verdicts_are_read_back_and_a_torn_line_is_skipped() {
        let temp = assert_fs::TempDir::new().unwrap();
        let dir = temp.path().to_owned();
        let path = dir.join(".ralph/reviews/A.jsonl");
        let review = Review {
            time: "t".into(),
            verdict: Verdict::Rejected,
            notes: "missing tests".into(),
            task_iteration: 2,
        };
        append_review(&dir, &path, &review).unwrap();
        crate::files::append_durable(&path, b"{\"time\":\"t\",\"verd").unwrap();
        assert_eq!(reviews(&dir, &path), [review]);
    }
}
