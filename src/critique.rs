//! `.ralph/critique/<task-id>.md`: the evidence of every failed attempt on
//! a task, appended as it happens and kept across runs, so a prompt shows
//! the attempts before the last one too, not only the last.
//!
//! An entry, in Markdown:
//!
//! ````text
//! ### Iteration 3 · 2026-01-01T00:10:00Z · role debugger · exit
//!
//! the agent failed with exit code 1 (exit: exit code 1, log: .ralph/logs/7-A.log)
//!
//! ```
//! the end of its output
//! ```
//! ````

use std::io;
use std::path::Path;

use crate::files::own;
use crate::prompt::{EVIDENCE_TAIL_BYTES, Evidence, bounded_tail};

/// Most bytes of earlier attempts a prompt carries.
pub(crate) const PROMPT_BYTES: usize = 8 * 1024;

/// How an entry's heading starts.
const HEADING: &str = "### Iteration ";

/// The entry for a failure of the task's iteration number `task_iteration`
/// (across runs), at `time`, in `role`. The output tail is bounded as the
/// prompt bounds it, and fenced with more backticks than it holds in a row.
pub(crate) fn entry(
    task_iteration: u64,
    time: &str,
    role: Option<&str>,
    evidence: &Evidence,
) -> String {
    let mut text = format!(
        "{HEADING}{task_iteration} · {time} · role {} · {}\n\n",
        role.unwrap_or("none"),
        evidence.class
    );
    // A summary line that looks like a heading or a fence would split or
    // swallow entries when the file is read back: indented, it does not.
    for line in evidence.summary.trim_end().lines() {
        if line.starts_with(HEADING) || line.starts_with('`') {
            text.push(' ');
        }
        text.push_str(line);
        text.push('\n');
    }
    let tail = evidence
        .output_tail
        .as_deref()
        .map(|tail| bounded_tail(tail, EVIDENCE_TAIL_BYTES).trim_end_matches('\n'))
        .filter(|tail| !tail.trim().is_empty());
    if let Some(tail) = tail {
        let fence = "`".repeat(longest_run(tail, '`').max(2) + 1);
        text.push_str(&format!("\n{fence}\n{tail}\n{fence}\n"));
    }
    text.push('\n');
    text
}

/// Appends `entry` to the critique file at `path` (fsynced), closing first
/// a fence an entry cut short by a crash left open, so the new entry reads
/// as its own.
pub(crate) fn append(root: &Path, path: &Path, entry: &str) -> io::Result<()> {
    let before = own::read(root, path)?;
    let before = String::from_utf8_lossy(&before);
    let mut text = String::new();
    if !before.is_empty() && !before.ends_with('\n') {
        text.push('\n');
    }
    if let Some(ticks) = scan(&before).1 {
        text.push_str(&"`".repeat(ticks));
        text.push_str("\n\n");
    }
    text.push_str(entry);
    own::append(root, path, text.as_bytes())
}

/// The entries of a critique file's text, oldest first, each with its
/// trailing blank line; text before the first heading is left out.
pub(crate) fn entries(text: &str) -> Vec<&str> {
    let starts = scan(text).0;
    starts
        .iter()
        .enumerate()
        .map(|(i, &start)| &text[start..starts.get(i + 1).copied().unwrap_or(text.len())])
        .collect()
}

/// The earlier attempts a prompt shows from the critique file at `path`:
/// the newest entries that fit in [`PROMPT_BYTES`], newest last, without
/// the newest of all when `skip_newest` (it is the last failure, which the
/// prompt shows in a section of its own). `None` when there is nothing.
pub(crate) fn for_prompt(
    root: &Path,
    path: &Path,
    skip_newest: bool,
) -> io::Result<Option<String>> {
    let bytes = own::read(root, path)?;
    let text = String::from_utf8_lossy(&bytes);
    let mut all = entries(&text);
    if skip_newest {
        all.pop();
    }
    let shown = bounded(&all, PROMPT_BYTES);
    let shown = shown.trim_end();
    Ok((!shown.is_empty()).then(|| shown.to_owned()))
}

/// The newest `entries` whose text fits in `max` bytes together, oldest
/// first; whole entries are dropped, oldest first, and when the newest
/// alone is larger, its last `max` bytes are kept.
pub(crate) fn bounded(entries: &[&str], max: usize) -> String {
    let mut from = entries.len();
    let mut total = 0;
    while from > 0 && total + entries[from - 1].len() <= max {
        from -= 1;
        total += entries[from].len();
    }
    match entries.last() {
        Some(newest) if from == entries.len() => bounded_tail(newest, max).to_owned(),
        _ => entries[from..].concat(),
    }
}

/// Where each entry of `text` starts, and the length of the fence left
/// open at its end, if any.
fn scan(text: &str) -> (Vec<usize>, Option<usize>) {
    let mut starts = Vec::new();
    let mut fence: Option<usize> = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        let ticks = bare.len() - bare.trim_start_matches('`').len();
        match fence {
            Some(open) if ticks >= open && bare[ticks..].trim().is_empty() => fence = None,
            Some(_) => {}
            None if ticks >= 3 => fence = Some(ticks),
            None if bare.starts_with(HEADING) => starts.push(at),
            None => {}
        }
        at += line.len();
    }
    (starts, fence)
}

/// The longest run of `c` in `text`.
fn longest_run(text: &str, c: char) -> usize {
    text.split(|other| other != c)
        .map(str::len)
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evidence(class: &str, summary: &str, tail: Option<&str>) -> Evidence {
        Evidence {
            class: serde_json::from_value(class.into()).expect("a class name"),
            summary: summary.into(),
            output_tail: tail.map(str::to_owned),
        }
    }

    #[test]
    fn an_entry_has_its_heading_summary_and_fenced_tail() {
        let text = entry(
            3,
            "2026-01-01T00:10:00Z",
            Some("debugger"),
            &evidence("exit", "the agent failed", Some("boom\n")),
        );
        assert_eq!(
            text,
            "### Iteration 3 · 2026-01-01T00:10:00Z · role debugger · exit\n\nthe agent failed\n\n```\nboom\n```\n\n"
        );
        let bare = entry(1, "T", None, &evidence("no_progress", "idle", Some("")));
        assert_eq!(
            bare,
            "### Iteration 1 · T · role none · no_progress\n\nidle\n\n"
        );
    }

    #[test]
    fn entries_split_on_headings_outside_fences_only() {
        let tricky = "``` fake\n### Iteration 9 · inside the output\n";
        let first = entry(1, "T1", None, &evidence("exit", "one", Some(tricky)));
        assert!(first.contains("\n````\n"), "a longer fence: {first}");
        let second = entry(
            2,
            "T2",
            None,
            &evidence("exit", "### Iteration 7 two", None),
        );
        let third = entry(3, "T3", None, &evidence("timeout", "three", Some("x")));
        let text = format!("# preamble\n\n{first}{second}{third}");
        assert_eq!(entries(&text), [first.as_str(), &second, &third]);
    }

    #[test]
    fn the_prompt_gets_the_newest_entries_within_8_kb() {
        let big = |n: u64, fill: char| {
            entry(
                n,
                "T",
                None,
                &evidence("exit", "failed", Some(&fill.to_string().repeat(3000))),
            )
        };
        let (one, two, three) = (big(1, 'a'), big(2, 'b'), big(3, 'c'));
        let all = [one.as_str(), &two, &three];
        // Three entries of ~3 KB: the oldest goes whole.
        assert_eq!(bounded(&all, PROMPT_BYTES), format!("{two}{three}"));
        assert!(bounded(&all, PROMPT_BYTES).len() <= PROMPT_BYTES);
        assert_eq!(bounded(&all, 100_000), format!("{one}{two}{three}"));
        assert_eq!(bounded(&[], PROMPT_BYTES), "");
        // A newest entry over the bound alone: its end is kept.
        let huge = format!("### Iteration 4 · T\n\n{}END\n", "é".repeat(6000));
        let kept = bounded(&[one.as_str(), &huge], PROMPT_BYTES);
        assert!(kept.len() <= PROMPT_BYTES && kept.len() > PROMPT_BYTES - 4);
        assert!(kept.ends_with("END\n") && huge.ends_with(&kept));
    }

    #[test]
    fn the_file_accumulates_and_the_prompt_leaves_out_the_last_failure() {
        let dir = assert_fs::TempDir::new().unwrap();
        let path = dir.path().join(".ralph/critique/A.1.md");
        assert_eq!(
            for_prompt(dir.path(), &path, false).unwrap(),
            None,
            "no file yet"
        );
        let first = entry(1, "T1", None, &evidence("exit", "one", Some("out 1")));
        let second = entry(2, "T2", None, &evidence("exit", "two", Some("out 2")));
        append(dir.path(), &path, &first).unwrap();
        assert_eq!(for_prompt(dir.path(), &path, true).unwrap(), None);
        append(dir.path(), &path, &second).unwrap();
        assert_eq!(
            for_prompt(dir.path(), &path, true).unwrap().as_deref(),
            Some(first.trim_end())
        );
        assert_eq!(
            for_prompt(dir.path(), &path, false).unwrap(),
            Some(format!("{first}{second}").trim_end().to_owned())
        );
        // An entry a crash cut short inside its fence is closed first.
        std::fs::write(
            &path,
            "### Iteration 1 · T1 · role none · exit\n\none\n\n```\nout",
        )
        .unwrap();
        append(dir.path(), &path, &second).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(entries(&text).len(), 2, "{text}");
        assert_eq!(entries(&text)[1], second);
    }
}
