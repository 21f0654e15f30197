//! A fast path for reading a task line: one pass over the bytes that checks
//! the whole line is JSON and picks out the fields ralph understands, with
//! no allocation but the task's own strings.
//!
//! It only ever answers for lines it fully understands: anything unusual
//! (a JSON error, an escape in a key, a number that is not a plain integer,
//! deep nesting, a duplicate or mistyped known field, an invalid id or
//! status) returns `None`, and the caller reads the line again with serde,
//! which gives the exact message. So the fast path can only be faster,
//! never different.

use std::borrow::Cow;

use super::id::TaskId;
use super::model::{Status, Task};
use super::text::{Source, text_from};
use std::sync::Arc;

/// Deeper nesting than this is left to serde (whose limit is 128).
const MAX_NESTING: usize = 100;

/// The known fields found on a line, as raw spans of the text.
#[derive(Default)]
struct Fields<'a> {
    id: Option<Cow<'a, str>>,
    title: Option<Cow<'a, str>>,
    status: Option<Cow<'a, str>>,
    leaf: Option<bool>,
    deps: Option<Vec<TaskId>>,
    body: Option<Option<Cow<'a, str>>>,
    blocked_reason: Option<Option<Cow<'a, str>>>,
    /// notes, attempts, created, completed, commit, branch: only checked.
    seen_other: u8,
}

/// Reads `text` as a task, or `None` when serde must look at it.
pub fn task(text: &str, source: Option<&Arc<Source>>) -> Option<Task> {
    let mut scanner = Scanner {
        bytes: text.as_bytes(),
        text,
        at: 0,
    };
    let fields = scanner.object()?;
    scanner.skip_ws();
    if scanner.at != scanner.bytes.len() {
        return None;
    }
    let id = TaskId::parse(&fields.id?).ok()?;
    let status = Status::parse(&fields.status?)?;
    Some(Task {
        id,
        title: text_from(source, fields.title?),
        status,
        leaf: fields.leaf?,
        deps: fields.deps.unwrap_or_default().into(),
        body: fields.body.flatten().map(|body| text_from(source, body)),
        blocked_reason: fields
            .blocked_reason
            .flatten()
            .map(|reason| text_from(source, reason)),
    })
}

struct Scanner<'a> {
    bytes: &'a [u8],
    text: &'a str,
    at: usize,
}

impl<'a> Scanner<'a> {
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\r' | b'\n') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        self.skip_ws();
        if self.bytes.get(self.at) == Some(&byte) {
            self.at += 1;
            Some(())
        } else {
            None
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.bytes.get(self.at).copied()
    }

    /// The top-level object, recording the known fields.
    fn object(&mut self) -> Option<Fields<'a>> {
        let mut fields = Fields::default();
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(fields);
        }
        loop {
            self.eat(b'"')?;
            let key = self.key()?;
            self.eat(b':')?;
            self.skip_ws();
            match key {
                "id" => set(&mut fields.id, self.string_value()?)?,
                "title" => set(&mut fields.title, self.string_value()?)?,
                "status" => set(&mut fields.status, self.string_value()?)?,
                "leaf" => set(&mut fields.leaf, self.bool_value()?)?,
                "deps" => set(&mut fields.deps, self.id_array()?)?,
                "body" => set(&mut fields.body, self.optional_string()?)?,
                "blocked_reason" => set(&mut fields.blocked_reason, self.optional_string()?)?,
                "notes" | "created" | "completed" | "commit" | "branch" | "attempts" => {
                    let bit = match key {
                        "notes" => 1,
                        "created" => 2,
                        "completed" => 4,
                        "commit" => 8,
                        "branch" => 16,
                        _ => 32,
                    };
                    if fields.seen_other & bit != 0 {
                        return None;
                    }
                    fields.seen_other |= bit;
                    if bit == 32 {
                        self.optional_whole_number()?;
                    } else {
                        self.optional_string()?;
                    }
                }
                _ => self.value(0)?,
            }
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(fields);
                }
                _ => return None,
            }
        }
    }

    /// A key after its opening quote; escapes are left to serde.
    fn key(&mut self) -> Option<&'a str> {
        let start = self.at;
        self.at = special_from(self.bytes, self.at)?;
        if self.bytes[self.at] != b'"' {
            return None;
        }
        self.at += 1;
        Some(&self.text[start..self.at - 1])
    }

    /// A string after its opening quote, unescaped.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        let start = self.at;
        self.at = special_from(self.bytes, self.at)?;
        if self.bytes[self.at] == b'"' {
            self.at += 1;
            return Some(Cow::Borrowed(&self.text[start..self.at - 1]));
        }
        if self.bytes[self.at] != b'\\' {
            return None;
        }
        let mut out = String::from(&self.text[start..self.at]);
        loop {
            let run = self.at;
            loop {
                match *self.bytes.get(self.at)? {
                    b'"' | b'\\' => break,
                    0x00..=0x1f => return None,
                    _ => self.at += 1,
                }
            }
            out.push_str(&self.text[run..self.at]);
            if self.bytes[self.at] == b'"' {
                self.at += 1;
                return Some(Cow::Owned(out));
            }
            self.at += 1;
            let escaped = *self.bytes.get(self.at)?;
            self.at += 1;
            out.push(match escaped {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'u' => {
                    let hex = self.text.get(self.at..self.at + 4)?;
                    if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                        return None;
                    }
                    self.at += 4;
                    // Surrogates (pairs or lone) are left to serde.
                    char::from_u32(u32::from_str_radix(hex, 16).ok()?)?
                }
                _ => return None,
            });
        }
    }

    fn string_value(&mut self) -> Option<Cow<'a, str>> {
        self.eat(b'"')?;
        self.string()
    }

    fn optional_string(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.bytes[self.at..].starts_with(b"null") {
            self.at += 4;
            return Some(None);
        }
        self.string_value().map(Some)
    }

    fn bool_value(&mut self) -> Option<bool> {
        if self.bytes[self.at..].starts_with(b"true") {
            self.at += 4;
            Some(true)
        } else if self.bytes[self.at..].starts_with(b"false") {
            self.at += 5;
            Some(false)
        } else {
            None
        }
    }

    /// An array of id strings (an invalid id is left to serde).
    fn id_array(&mut self) -> Option<Vec<TaskId>> {
        self.eat(b'[')?;
        let mut items = Vec::new();
        if self.peek()? == b']' {
            self.at += 1;
            return Some(items);
        }
        loop {
            items.push(TaskId::parse(&self.string_value()?).ok()?);
            match self.peek()? {
                b',' => self.at += 1,
                b']' => {
                    self.at += 1;
                    return Some(items);
                }
                _ => return None,
            }
        }
    }

    /// `null` or a plain integer that fits a u64 (at most 18 digits).
    fn optional_whole_number(&mut self) -> Option<()> {
        if self.bytes[self.at..].starts_with(b"null") {
            self.at += 4;
            return Some(());
        }
        self.integer(false)
    }

    /// A plain integer: `0` or a non-zero digit then digits, at most 18
    /// digits; fractions and exponents are left to serde.
    fn integer(&mut self, signed: bool) -> Option<()> {
        if signed && self.bytes.get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        let start = self.at;
        while self.bytes.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        let digits = &self.bytes[start..self.at];
        if digits.is_empty() || digits.len() > 18 || (digits[0] == b'0' && digits.len() > 1) {
            return None;
        }
        match self.bytes.get(self.at) {
            Some(b'.' | b'e' | b'E') => None,
            _ => Some(()),
        }
    }

    /// Any JSON value, checked and skipped.
    fn value(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_NESTING {
            return None;
        }
        match self.peek()? {
            b'"' => {
                self.at += 1;
                self.string().map(drop)
            }
            b'{' => {
                self.at += 1;
                if self.peek()? == b'}' {
                    self.at += 1;
                    return Some(());
                }
                loop {
                    self.eat(b'"')?;
                    self.string()?;
                    self.eat(b':')?;
                    self.value(depth + 1)?;
                    match self.peek()? {
                        b',' => self.at += 1,
                        b'}' => {
                            self.at += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            b'[' => {
                self.at += 1;
                if self.peek()? == b']' {
                    self.at += 1;
                    return Some(());
                }
                loop {
                    self.value(depth + 1)?;
                    match self.peek()? {
                        b',' => self.at += 1,
                        b']' => {
                            self.at += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            b't' | b'f' => self.bool_value().map(drop),
            b'n' if self.bytes[self.at..].starts_with(b"null") => {
                self.at += 4;
                Some(())
            }
            b'-' | b'0'..=b'9' => self.integer(true),
            _ => None,
        }
    }
}

/// The index of the first `"`, `\\` or control character at or after
/// `from`; eight bytes at a time, as strings are most of a line.
fn special_from(bytes: &[u8], mut from: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(chunk) = bytes.get(from..from + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let quote = word ^ (ONES * u64::from(b'"'));
        let backslash = word ^ (ONES * u64::from(b'\\'));
        // A byte below 0x20, or a zero byte in `quote` or `backslash`, sets
        // its high bit here (false hits only follow a true one).
        let hits = (quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (word.wrapping_sub(ONES * 0x20) & !word);
        if hits & HIGH != 0 {
            // The lowest hit is a true one: little-endian, so it is the
            // first byte of the eight in the text.
            return Some(from + ((hits & HIGH).trailing_zeros() / 8) as usize);
        }
        from += 8;
    }
    bytes[from..]
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .map(|offset| from + offset)
}

/// Records a known field, refusing a second occurrence (serde's
/// "duplicate field" error).
fn set<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(value);
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path agrees with serde wherever it answers.
    /// Both read the line as a slice of a shared source, as a file's
    /// lines are read.
    fn agrees(line: &str) -> bool {
        let text = Arc::new(crate::task::text::Contents::from(line.to_owned()));
        let source = Source::new(Arc::clone(&text));
        let shared: &str = &text;
        let slow = Task::from_json_slow(shared, Some(&source));
        match task(shared, Some(&source)) {
            Some(fast) => {
                assert_eq!(Ok(fast), slow, "{line}");
                true
            }
            None => false,
        }
    }

    #[test]
    fn fast_path_matches_serde_or_steps_aside() {
        let answered = [
            r#"{"id":"A.1","title":"t","status":"in_progress","leaf":true,"deps":["B"],"x":{"y":[1,-2,null,false,"s\n\u00e9"]}}"#,
            r#" { "id" : "A" , "title" : "caf\u00e9 \"q\" \\ \/ \t" , "status":"done","leaf":false , "body":null, "attempts": 3, "notes":"n"} "#,
            r#"{"id":"A","title":"t","status":"blocked","leaf":true,"blocked_reason":"why","deps":[],"e":{},"f":[]}"#,
        ];
        for line in answered {
            assert!(agrees(line), "{line}");
        }
        let aside = [
            r#"{"id":"A","id":"B","title":"t","status":"pending","leaf":true}"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":true,"x":1.5}"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":true,"x":1e3}"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":true,"x":012}"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":true,"x":"\ud83d\ude00"}"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":true,"\u0069d":"B"}"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":true} x"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":true,}"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":"yes"}"#,
            r#"{"id":"A","title":"t","status":"doing","leaf":true}"#,
            r#"{"id":"A..1","title":"t","status":"pending","leaf":true}"#,
            r#"{"id":"A","title":"t","status":"pending"}"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":true,"attempts":-1}"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":true,"commit":"a","commit":"b"}"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":true,"deps":["A",1]}"#,
            "{\"id\":\"A\",\"title\":\"t\u{1}\",\"status\":\"pending\",\"leaf\":true}",
            r#"["A"]"#,
            r#"{"id":"A","title":"t""#,
            "not json",
            "",
        ];
        for line in aside {
            assert!(task(line, None).is_none(), "{line}");
        }
        let deep = format!(
            r#"{{"id":"A","title":"t","status":"pending","leaf":true,"x":{}{}}}"#,
            "[".repeat(120),
            "]".repeat(120)
        );
        assert!(task(&deep, None).is_none());
    }
}
