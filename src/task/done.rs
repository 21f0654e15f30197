//! `tasks-done.jsonl`: the append-only archive, read for its ids, with
//! records queued for appending and a torn last line set aside.

use rustc_hash::FxHashMap;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::error::{Error, Result};
use super::file::{is_blank, split_lines, utf8_error};
use super::model::parse_object;

/// Where an archived id sits in `tasks-done.jsonl`.
#[derive(Clone, Copy, Debug)]
struct DoneEntry {
    line: usize,
    start: usize,
    end: usize,
}

/// `tasks-done.jsonl`: the append-only archive. Only ids are read eagerly;
/// a record's other fields are parsed when asked for.
#[derive(Clone, Debug)]
pub struct DoneLog {
    name: String,
    text: String,
    /// A last line cut short by a crash during an append, ignored.
    torn: Option<Torn>,
    ids: FxHashMap<String, DoneEntry>,
    order: Vec<String>,
    /// Records queued for appending, as (id, JSON line).
    appended: Vec<(String, String)>,
}

/// The unterminated, incomplete last line of the archive.
#[derive(Clone, Debug, PartialEq)]
pub struct Torn {
    /// Its 1-based line number.
    pub line: usize,
    /// Where it starts in the file.
    pub offset: u64,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

impl Torn {
    /// The warning for a command that reads the archive and leaves the
    /// torn line where it is.
    pub fn ignored_warning(line: usize) -> String {
        format!(
            "warning: tasks-done.jsonl:{line}: a torn last line (a crash during an append?) is ignored; the next archive moves it to {}",
            crate::paths::QUARANTINE_DIR
        )
    }
}

/// Splits off an unterminated last line that is not a whole JSON value
/// (a power loss during an append): it is ignored, never parsed as a record.
fn split_torn(bytes: &[u8]) -> (&[u8], Option<Torn>) {
    let start = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
    let tail = &bytes[start..];
    if tail.is_empty() {
        return (bytes, None);
    }
    let cut_short = match std::str::from_utf8(tail) {
        // A character cut in two.
        Err(err) => err.error_len().is_none(),
        Ok(text) if text.trim().is_empty() => false,
        Ok(text) => {
            serde_json::from_str::<serde::de::IgnoredAny>(text).is_err_and(|err| err.is_eof())
        }
    };
    if !cut_short {
        return (bytes, None);
    }
    let torn = Torn {
        line: bytes[..start].iter().filter(|&&b| b == b'\n').count() + 1,
        offset: start as u64,
        bytes: tail.to_vec(),
    };
    (&bytes[..start], Some(torn))
}

#[derive(Deserialize)]
struct DoneId {
    id: Option<Value>,
}

impl DoneLog {
    /// Parses the archive's bytes; `name` is used in error messages.
    pub fn parse(name: &str, bytes: &[u8]) -> Result<DoneLog> {
        let (bytes, torn) = split_torn(bytes);
        let text = std::str::from_utf8(bytes).map_err(|err| utf8_error(name, bytes, err))?;
        let (_, lines) = split_lines(name, text)?;
        let base = text.as_ptr() as usize;
        let mut ids = FxHashMap::default();
        let mut order = Vec::with_capacity(lines.len());
        for (index, (line, _)) in lines.iter().enumerate() {
            if is_blank(line) {
                continue;
            }
            let malformed = |message: String| Error::Malformed {
                file: name.to_owned(),
                line: index + 1,
                message,
            };
            let record: DoneId = parse_object(line).map_err(malformed)?;
            let id = match record.id {
                Some(Value::String(id)) if !id.is_empty() => id,
                Some(Value::String(_)) => return Err(malformed("empty id".to_owned())),
                None | Some(Value::Null) => return Err(malformed("missing field `id`".to_owned())),
                Some(other) => {
                    return Err(malformed(format!(
                        "field `id` must be a string, not {other}"
                    )));
                }
            };
            let start = line.as_ptr() as usize - base;
            if let std::collections::hash_map::Entry::Vacant(slot) = ids.entry(id) {
                order.push(slot.key().clone());
                slot.insert(DoneEntry {
                    line: index + 1,
                    start,
                    end: start + line.len(),
                });
            }
        }
        Ok(DoneLog {
            name: name.to_owned(),
            text: text.to_owned(),
            torn,
            ids,
            order,
            appended: Vec::new(),
        })
    }

    /// Whether `id` is archived (read from the file or appended since).
    pub fn contains(&self, id: &str) -> bool {
        self.ids.contains_key(id) || self.appended_ids().any(|appended| appended == id)
    }

    /// The torn last line, if the file ends with one.
    pub fn torn(&self) -> Option<&Torn> {
        self.torn.as_ref()
    }

    /// Archived ids in file order, each once, appended ones last.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.order
            .iter()
            .map(String::as_str)
            .chain(self.appended_ids())
    }

    /// How many distinct ids are archived.
    pub fn len(&self) -> usize {
        self.order.len() + self.appended.len()
    }

    /// Whether nothing is archived.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The archived record of `id` with all its fields.
    pub fn record(&self, id: &str) -> Option<Map<String, Value>> {
        if let Some(entry) = self.ids.get(id) {
            return parse_object(&self.text[entry.start..entry.end]).ok();
        }
        self.appended
            .iter()
            .find(|(appended, _)| appended == id)
            .and_then(|(_, line)| parse_object(line).ok())
    }

    /// The 1-based line of `id` in the file, when it was read from there.
    pub fn line_of(&self, id: &str) -> Option<usize> {
        self.ids.get(id).map(|entry| entry.line)
    }

    /// Queues the record of `id` to be appended.
    pub fn append(&mut self, id: &str, record: &Map<String, Value>) {
        let line = serde_json::to_string(record).expect("a JSON map serializes");
        self.appended.push((id.to_owned(), line));
    }

    /// The text to append to the file for the queued records, starting on a
    /// fresh line even when the file lacks a final newline; empty if none.
    pub fn pending_text(&self) -> String {
        if self.appended.is_empty() {
            return String::new();
        }
        let mut out = String::new();
        // New records end like the file's first line: a file kept with
        // CRLF endings stays so.
        let end = match self.text.split_once('\n') {
            Some((first, _)) if first.ends_with('\r') => "\r\n",
            _ => "\n",
        };
        // A torn last line is cut off before appending (`torn`), so the
        // file then ends with a newline.
        if self.torn.is_none() && !self.text.is_empty() && !self.text.ends_with('\n') {
            out.push_str(end);
        }
        for (_, line) in &self.appended {
            out.push_str(line);
            out.push_str(end);
        }
        out
    }

    /// The file's name as shown in messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn appended_ids(&self) -> impl Iterator<Item = &str> {
        self.appended.iter().map(|(id, _)| id.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn done_log_reads_ids_and_records() {
        let text = "{\"id\":\"A.1.1\",\"title\":\"x\",\"completed\":\"2024-01-21\",\"commit\":\"abc123\"}\n\n{\"id\":\"B\"}";
        let mut done = DoneLog::parse("tasks-done.jsonl", text.as_bytes()).unwrap();
        assert!(done.contains("A.1.1") && done.contains("B") && !done.contains("A"));
        assert_eq!(done.line_of("B"), Some(3));
        assert_eq!(done.record("A.1.1").unwrap()["commit"], "abc123");
        done.append("C", &parse_object(r#"{"id":"C","title":"c"}"#).unwrap());
        assert!(done.contains("C"));
        assert_eq!(done.pending_text(), "\n{\"id\":\"C\",\"title\":\"c\"}\n");
        assert_eq!(done.ids().collect::<Vec<_>>(), ["A.1.1", "B", "C"]);
        assert_eq!(
            DoneLog::parse("tasks-done.jsonl", b"{\"title\":\"x\"}\n")
                .unwrap_err()
                .to_string(),
            "tasks-done.jsonl:1: missing field `id`"
        );
    }

    #[test]
    fn bad_utf8_names_its_line() {
        let bytes = b"{}\n{\"id\":\"\xff\"}\n";
        assert_eq!(
            DoneLog::parse("tasks-done.jsonl", bytes)
                .unwrap_err()
                .to_string(),
            "tasks-done.jsonl:2: not valid UTF-8 (byte 0xff at column 8); save the file as UTF-8"
        );
    }
}
