//! `tasks.jsonl` as lines of text: parsing that keeps every byte, and
//! edits that rewrite only the lines they change.

use serde_json::{Map, Value};
use std::ops::Range;

use rustc_hash::FxHashMap;

use super::error::{Error, Result};
use super::id::TaskId;
use super::model::{Task, parse_object};
use std::collections::hash_map::Entry;

/// How a line ends; kept so untouched lines are written back as they were.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineEnd {
    /// `\n`
    Lf,
    /// `\r\n`
    CrLf,
    /// The last line of a file without a final newline.
    Missing,
}

impl LineEnd {
    fn as_str(self) -> &'static str {
        match self {
            LineEnd::Lf => "\n",
            LineEnd::CrLf => "\r\n",
            LineEnd::Missing => "",
        }
    }
}

/// One line of `tasks.jsonl`: its exact text and, unless blank, its task.
#[derive(Clone, Debug)]
pub struct Line {
    /// The text without its line ending (and without a leading BOM): see
    /// [`TaskFile::line_text`].
    text: LineText,
    /// The line ending as found.
    pub end: LineEnd,
    /// The task on this line; `None` for a blank line.
    pub task: Option<Task>,
}

/// Where a line's text is: in the file's text as read (no copy per line),
/// or its own once an edit made it.
#[derive(Clone, Debug)]
enum LineText {
    Read(Range<usize>),
    Own(String),
}

const BOM: &str = "\u{feff}";

/// Checks a task file is UTF-8, naming the line and column of the first bad
/// byte when it is not.
pub(super) fn utf8_error(name: &str, bytes: &[u8], err: std::str::Utf8Error) -> Error {
    let (line, message) = crate::files::not_utf8(bytes, err);
    Error::Malformed {
        file: name.to_owned(),
        line,
        message,
    }
}

/// Splits a file's text into lines with their endings, after a leading
/// BOM (returned as `true`), refusing merge-conflict markers: a marker
/// anywhere is reported before any problem with a task.
pub(super) fn split_lines<'a>(
    name: &str,
    content: &'a str,
) -> Result<(bool, Vec<(&'a str, LineEnd)>)> {
    let (bom, mut rest) = match content.strip_prefix(BOM) {
        Some(rest) => (true, rest),
        None => (false, content),
    };
    let mut lines = Vec::new();
    while !rest.is_empty() {
        let (text, end, next) = match rest.find('\n') {
            Some(nl) if rest[..nl].ends_with('\r') => {
                (&rest[..nl - 1], LineEnd::CrLf, &rest[nl + 1..])
            }
            Some(nl) => (&rest[..nl], LineEnd::Lf, &rest[nl + 1..]),
            None => (rest, LineEnd::Missing, ""),
        };
        if is_conflict_marker(text) {
            return Err(Error::Malformed {
                file: name.to_owned(),
                line: lines.len() + 1,
                message: "merge conflict marker; resolve the conflict (keep one version of each task line) and delete the marker lines".to_owned(),
            });
        }
        lines.push((text, end));
        rest = next;
    }
    Ok((bom, lines))
}

fn is_conflict_marker(text: &str) -> bool {
    ["<<<<<<<", "=======", ">>>>>>>", "|||||||"]
        .iter()
        .any(|marker| text.starts_with(marker))
}

pub(super) fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

/// `tasks.jsonl`, parsed line by line. Rendering it back gives the same
/// bytes except for the lines an edit touched.
#[derive(Clone, Debug)]
pub struct TaskFile {
    name: String,
    bom: bool,
    /// The file's text as read, which unedited lines are ranges of.
    text: String,
    lines: Vec<Line>,
    /// Line index of each id's first occurrence (FxHash: the ids are the
    /// project's own, with no attacker to guard against, and SipHash was a
    /// tenth of the time to load a queue).
    index: FxHashMap<TaskId, usize>,
    /// The first repeated id in file order: (its line index, the first's).
    duplicate: Option<(usize, usize)>,
    /// Whether an edit changed the lines since they were parsed.
    changed: bool,
}

impl TaskFile {
    /// Parses the file's bytes; `name` is used in error messages.
    pub fn parse(name: &str, bytes: &[u8]) -> Result<TaskFile> {
        TaskFile::parse_owned(name, bytes.to_vec())
    }

    /// `parse`, keeping the bytes as the file's text rather than a copy.
    pub fn parse_owned(name: &str, bytes: Vec<u8>) -> Result<TaskFile> {
        let text = String::from_utf8(bytes)
            .map_err(|err| utf8_error(name, err.as_bytes(), err.utf8_error()))?;
        let (bom, split) = split_lines(name, &text)?;
        let mut lines = Vec::with_capacity(split.len());
        for (number, (line, end)) in split.into_iter().enumerate() {
            let start = line.as_ptr() as usize - text.as_ptr() as usize;
            let task = if is_blank(line) {
                None
            } else {
                let task = Task::from_json(line).map_err(|message| Error::Malformed {
                    file: name.to_owned(),
                    line: number + 1,
                    message,
                })?;
                Some(task)
            };
            lines.push(Line {
                text: LineText::Read(start..start + line.len()),
                end,
                task,
            });
        }
        let mut file = TaskFile {
            name: name.to_owned(),
            bom,
            text,
            lines,
            index: FxHashMap::default(),
            duplicate: None,
            changed: false,
        };
        file.reindex();
        Ok(file)
    }

    fn reindex(&mut self) {
        self.index.clear();
        self.index.reserve(self.lines.len());
        self.duplicate = None;
        for position in 0..self.lines.len() {
            self.index_line(position);
        }
    }

    /// Adds line `position`'s task to the index, or notes it as a repeat
    /// of an earlier line's id.
    fn index_line(&mut self, position: usize) {
        let Some(task) = &self.lines[position].task else {
            return;
        };
        match self.index.entry(task.id.clone()) {
            Entry::Occupied(first) => {
                self.duplicate = self.duplicate.or(Some((position, *first.get())));
            }
            Entry::Vacant(slot) => {
                slot.insert(position);
            }
        }
    }

    /// The first id that appears twice, in file order: the line index of
    /// the repeat and of the first occurrence.
    pub fn first_duplicate(&self) -> Option<(usize, usize)> {
        self.duplicate
    }

    /// The file's name as shown in messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Every line, blank ones included, in file order.
    pub fn lines(&self) -> &[Line] {
        &self.lines
    }

    /// The tasks in file order, each with its index in `lines()`.
    pub fn tasks(&self) -> impl Iterator<Item = (usize, &Task)> {
        self.lines
            .iter()
            .enumerate()
            .filter_map(|(index, line)| line.task.as_ref().map(|task| (index, task)))
    }

    /// The index of the first line holding the task `id`.
    pub fn position(&self, id: &str) -> Option<usize> {
        self.index.get(id).copied()
    }

    /// The task `id`, if this file has it.
    pub fn get(&self, id: &str) -> Option<&Task> {
        self.position(id)
            .and_then(|index| self.lines[index].task.as_ref())
    }

    /// The full JSON object on line `index`, unknown fields and key order kept.
    pub fn object(&self, index: usize) -> Result<Map<String, Value>> {
        parse_object(self.line_text(index)).map_err(|message| Error::Malformed {
            file: self.name.clone(),
            line: index + 1,
            message,
        })
    }

    /// Whether an edit changed the content since it was parsed.
    pub fn is_changed(&self) -> bool {
        self.changed
    }

    /// Rewrites the task on line `index` through `edit`, keeping its other
    /// fields, their order and the line ending.
    pub fn edit(&mut self, index: usize, edit: impl FnOnce(&mut Map<String, Value>)) -> Result<()> {
        let mut object = self.object(index)?;
        edit(&mut object);
        let line = self.line_from(object, self.lines[index].end, index)?;
        if self.text_of(&line) != self.line_text(index) {
            let id = |line: &Line| line.task.as_ref().map(|task| task.id.clone());
            let moved = id(&line) != id(&self.lines[index]);
            self.lines[index] = line;
            self.changed = true;
            if moved {
                self.reindex();
            }
        }
        Ok(())
    }

    /// Inserts a new task line before line `index` (`lines().len()` appends).
    pub fn insert(&mut self, index: usize, object: Map<String, Value>) -> Result<()> {
        let end = self.default_end();
        let line = self.line_from(object, end, index)?;
        if index == self.lines.len()
            && let Some(last) = self.lines.last_mut()
            && last.end == LineEnd::Missing
        {
            last.end = end;
        }
        self.lines.insert(index, line);
        self.changed = true;
        if index + 1 == self.lines.len() {
            // Appended: no other line moved.
            self.index_line(index);
        } else {
            self.reindex();
        }
        Ok(())
    }

    /// Removes line `index`. When it was the unterminated last line, the
    /// line before it becomes the unterminated one.
    pub fn remove(&mut self, index: usize) {
        let removed = self.lines.remove(index);
        if removed.end == LineEnd::Missing
            && let Some(last) = self.lines.last_mut()
        {
            last.end = LineEnd::Missing;
        }
        self.changed = true;
        self.reindex();
    }

    /// The text of line `index`, without its ending.
    pub fn line_text(&self, index: usize) -> &str {
        self.text_of(&self.lines[index])
    }

    fn text_of<'a>(&'a self, line: &'a Line) -> &'a str {
        match &line.text {
            LineText::Read(range) => &self.text[range.clone()],
            LineText::Own(text) => text,
        }
    }

    /// The file's bytes: untouched lines exactly as read.
    pub fn render(&self) -> String {
        let mut out = Vec::with_capacity(self.text.len() + 256);
        self.write_to(&mut out)
            .expect("writing to memory does not fail");
        String::from_utf8(out).expect("lines are UTF-8")
    }

    /// Writes the file's bytes (what `render` returns) to `out`.
    pub fn write_to(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        if self.bom {
            out.write_all(BOM.as_bytes())?;
        }
        for line in &self.lines {
            out.write_all(self.text_of(line).as_bytes())?;
            out.write_all(line.end.as_str().as_bytes())?;
        }
        Ok(())
    }

    /// New lines end like the file's first line (LF for an empty file).
    fn default_end(&self) -> LineEnd {
        match self.lines.first().map(|line| line.end) {
            Some(LineEnd::CrLf) => LineEnd::CrLf,
            _ => LineEnd::Lf,
        }
    }

    fn line_from(&self, object: Map<String, Value>, end: LineEnd, index: usize) -> Result<Line> {
        let text = serde_json::to_string(&object).expect("a JSON map serializes");
        let task = Task::from_json(&text).map_err(|message| Error::Malformed {
            file: self.name.clone(),
            line: index + 1,
            message,
        })?;
        Ok(Line {
            text: LineText::Own(text),
            end,
            task: Some(task),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ODD: &str = "{ \"title\" : \"café ☕\", \"id\":\"A\",\"leaf\":false , \"status\":\"pending\", \"x\": [1, 2] }\r\n\
        \n\
        {\"id\":\"A.1\",\"title\":\"日本\",\"status\":\"in_progress\",\"leaf\":true,\"deep\":{\"k\":null}}\n\
        {\"leaf\":true,  \"id\":\"A.2\", \"status\":\"pending\",\"title\":\"two\"}";

    #[test]
    fn the_index_follows_edits_as_a_fresh_parse_would() {
        let text: String = (0..300)
            .map(|n| {
                if n % 7 == 3 {
                    "\n".to_owned()
                } else {
                    format!(
                        "{{\"id\":\"T{n}\",\"title\":\"t\",\"status\":\"pending\",\"leaf\":true}}\n"
                    )
                }
            })
            .collect();
        let mut file = TaskFile::parse("tasks.jsonl", text.as_bytes()).unwrap();
        // From the end, the start, the middle, and blank lines too.
        for index in [298, 0, 150, 2, 150, 149, 5] {
            file.remove(index);
            let fresh = TaskFile::parse("tasks.jsonl", file.render().as_bytes()).unwrap();
            for n in 0..300 {
                let id = format!("T{n}");
                assert_eq!(
                    file.position(&id),
                    fresh.position(&id),
                    "{id} after removing {index}"
                );
            }
        }
        assert_eq!(file.position("T0"), None);
        // Inserts at the end and in the middle, an edit of a title and one
        // of an id, and a repeated id appended.
        let task = |id: &str| {
            parse_object(&format!(
                "{{\"id\":\"{id}\",\"title\":\"t\",\"status\":\"pending\",\"leaf\":true}}"
            ))
            .unwrap()
        };
        let end = file.lines().len();
        file.insert(end, task("N1")).unwrap();
        file.insert(10, task("N2")).unwrap();
        let at = file.position("T20").unwrap();
        file.edit(at, |object| {
            object.insert("title".into(), "new".into());
        })
        .unwrap();
        file.edit(at, |object| {
            object.insert("id".into(), "N3".into());
        })
        .unwrap();
        let end = file.lines().len();
        file.insert(end, task("T30")).unwrap();
        let fresh = TaskFile::parse("tasks.jsonl", file.render().as_bytes()).unwrap();
        for id in (0..300)
            .map(|n| format!("T{n}"))
            .chain(["N1", "N2", "N3"].map(String::from))
        {
            assert_eq!(file.position(&id), fresh.position(&id), "{id}");
        }
        assert_eq!(file.first_duplicate(), fresh.first_duplicate());
        assert!(file.first_duplicate().is_some());
    }

    /// Every order of removing every line of a few odd files: what is
    /// left is the other lines as they were, the last one unterminated
    /// when the file's last line was.
    #[test]
    fn a_file_with_lines_removed_is_its_text_without_them() {
        fn orders(left: Vec<usize>, done: &mut Vec<usize>, each: &mut dyn FnMut(&[usize])) {
            each(done);
            for (n, &line) in left.iter().enumerate() {
                let mut rest = left.clone();
                rest.remove(n);
                done.push(line);
                orders(rest, done, each);
                done.pop();
            }
        }
        let task = |id: &str| {
            format!("{{\"id\":\"{id}\",\"title\":\"t\",\"status\":\"pending\",\"leaf\":true}}")
        };
        let files = [
            ODD.to_owned(),
            format!("{BOM}{}\n\n{}\r\n{}", task("A"), task("B"), task("C")),
            format!("{}\n{}\n\n", task("A"), task("B")),
            format!("\n{}", task("A")),
            task("A"),
        ];
        for text in &files {
            let parsed = TaskFile::parse("tasks.jsonl", text.as_bytes()).unwrap();
            let body = text.strip_prefix(BOM).unwrap_or(text);
            let original: Vec<&str> = body.split_inclusive('\n').collect();
            let unterminated = !body.ends_with('\n');
            orders(
                (0..original.len()).collect(),
                &mut Vec::new(),
                &mut |removed| {
                    let mut file = parsed.clone();
                    // Original line numbers to indexes in what is left.
                    for (n, &line) in removed.iter().enumerate() {
                        let shift = removed[..n].iter().filter(|&&gone| gone < line).count();
                        file.remove(line - shift);
                    }
                    let mut expected = String::from(if text.starts_with(BOM) { BOM } else { "" });
                    let kept: Vec<&str> = (0..original.len())
                        .filter(|n| !removed.contains(n))
                        .map(|n| original[n])
                        .collect();
                    for (n, line) in kept.iter().enumerate() {
                        if unterminated && n + 1 == kept.len() {
                            expected.push_str(line.trim_end_matches('\n').trim_end_matches('\r'));
                        } else {
                            expected.push_str(line);
                        }
                    }
                    assert_eq!(
                        file.render(),
                        expected,
                        "{text:?} after removing lines {removed:?}"
                    );
                },
            );
        }
    }

    #[test]
    fn renders_untouched_files_byte_for_byte() {
        let file = TaskFile::parse("tasks.jsonl", ODD.as_bytes()).unwrap();
        assert_eq!(file.render(), ODD);
        let with_bom = format!("{BOM}{ODD}");
        assert_eq!(
            TaskFile::parse("tasks.jsonl", with_bom.as_bytes())
                .unwrap()
                .render(),
            with_bom
        );
    }

    #[test]
    fn an_edit_rewrites_only_its_line() {
        let mut file = TaskFile::parse("tasks.jsonl", ODD.as_bytes()).unwrap();
        let index = file.position("A.1").unwrap();
        file.edit(index, |object| {
            object.insert("status".into(), "ready".into());
        })
        .unwrap();
        let out = file.render();
        let before: Vec<&str> = ODD.split('\n').collect();
        let after: Vec<&str> = out.split('\n').collect();
        assert_eq!(before.len(), after.len());
        for (i, (b, a)) in before.iter().zip(&after).enumerate() {
            if i == index {
                assert_eq!(
                    *a,
                    r#"{"id":"A.1","title":"日本","status":"ready","leaf":true,"deep":{"k":null}}"#
                );
            } else {
                assert_eq!(b, a);
            }
        }
    }

    #[test]
    fn appending_to_a_file_without_final_newline_starts_a_line() {
        let mut file = TaskFile::parse("tasks.jsonl", ODD.as_bytes()).unwrap();
        let object =
            parse_object(r#"{"id":"B","title":"b","status":"pending","leaf":true}"#).unwrap();
        file.insert(file.lines().len(), object).unwrap();
        let out = file.render();
        assert!(out.starts_with(ODD));
        // New lines take the first line's ending (CRLF here).
        assert_eq!(
            &out[ODD.len()..],
            "\r\n{\"id\":\"B\",\"title\":\"b\",\"status\":\"pending\",\"leaf\":true}\r\n"
        );
    }

    #[test]
    fn removing_the_unterminated_last_line_keeps_the_file_unterminated() {
        let mut file = TaskFile::parse("tasks.jsonl", ODD.as_bytes()).unwrap();
        file.remove(file.position("A.2").unwrap());
        assert!(ODD.starts_with(&file.render()[..file.render().len()]));
        assert!(file.render().ends_with("null}}"));
    }

    #[test]
    fn conflict_markers_name_their_line() {
        let text =
            "{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n<<<<<<< HEAD\n";
        assert_eq!(
            TaskFile::parse("tasks.jsonl", text.as_bytes())
                .unwrap_err()
                .to_string(),
            "tasks.jsonl:2: merge conflict marker; resolve the conflict (keep one version of each task line) and delete the marker lines"
        );
    }

    /// The first problem in file order wins, but a conflict marker
    /// anywhere comes before a bad task; blank lines and a last line
    /// without an ending are lines too.
    #[test]
    fn a_files_first_problem_is_reported() {
        let line = |n: usize| {
            format!("{{\"id\":\"T{n}\",\"title\":\"t\",\"status\":\"pending\",\"leaf\":true}}\n")
        };
        let lines: Vec<String> = (0..100).map(line).collect();
        let with = |changes: &[(usize, &str)]| {
            let mut lines = lines.clone();
            for (at, text) in changes {
                lines[*at] = text.to_string();
            }
            TaskFile::parse("tasks.jsonl", lines.concat().as_bytes()).map(|file| file.lines().len())
        };
        let bad = "{\"id\":\"X\"}\n";
        let marker = "=======\n";
        assert_eq!(with(&[]).unwrap(), 100);
        for (changes, line) in [
            (vec![(10, bad), (90, bad)], 11),
            (vec![(90, bad)], 91),
            (vec![(10, bad), (90, marker)], 91),
            (vec![(50, marker), (90, marker)], 51),
        ] {
            let err = with(&changes).unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("tasks.jsonl:{line}: ")),
                "{changes:?}: {err}"
            );
        }
        let mut odd = lines.clone();
        odd[1] = "\n".into();
        odd[40] = "   \r\n".into();
        odd[99] = line(99).trim_end().to_owned();
        let file = TaskFile::parse("tasks.jsonl", odd.concat().as_bytes()).unwrap();
        assert_eq!(file.lines().len(), 100);
        assert_eq!(file.render(), odd.concat());
    }
}
