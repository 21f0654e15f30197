//! Dotted task ids (`A`, `A.1`, `A.1.2`) and the allocation of new ones.

use std::fmt;

use smol_str::SmolStr;

/// Deepest nesting an id may have; deeper ids are refused as malformed.
pub const MAX_DEPTH: usize = 32;
/// Longest id, in bytes; ids end up in branch names and commit subjects.
pub const MAX_LEN: usize = 200;

/// A validated task id: segments of ASCII letters, digits, `-` or `_`,
/// separated by single dots, not starting with `-` (ids go into command
/// lines, where one would read as an option). The part before the last
/// dot is the parent.
///
/// Ids are short, so they are kept inline (up to 23 bytes), cheap to copy
/// into the index and the tree.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId(SmolStr);

impl TaskId {
    /// Checks `text` and returns it as an id, or says what is wrong with it.
    pub fn parse(text: &str) -> Result<TaskId, String> {
        check(text)?;
        Ok(TaskId(SmolStr::new(text)))
    }

    /// The id as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The parent's id (`A.1` for `A.1.2`), or `None` at the top level.
    pub fn parent(&self) -> Option<TaskId> {
        parent_of(&self.0).map(|p| TaskId(SmolStr::new(p)))
    }

    /// 1 for `A`, 2 for `A.1`, and so on.
    pub fn depth(&self) -> usize {
        self.0.split('.').count()
    }

    /// The id of this task's child with number `n`.
    pub fn child(&self, n: u64) -> TaskId {
        TaskId(smol_str::format_smolstr!("{}.{n}", self.0))
    }

    /// Whether `other` lies below this id in the hierarchy.
    pub fn is_ancestor_of(&self, other: &str) -> bool {
        other.len() > self.0.len() + 1
            && other.starts_with(self.0.as_str())
            && other.as_bytes()[self.0.len()] == b'.'
    }
}

/// An id reads as the string it is, so code that only names tasks (git's
/// branch and ref names) takes a plain `&str`.
impl std::ops::Deref for TaskId {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

/// Maps keyed by id are looked up with a plain `&str` (the hash and
/// equality of an id are its string's).
impl std::borrow::Borrow<str> for TaskId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

/// A checked id, read without a copy: a string with an escape is refused
/// (a valid id needs none; the caller reads such a line another way).
impl<'de> serde::Deserialize<'de> for TaskId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<TaskId, D::Error> {
        let text = <&str>::deserialize(deserializer)?;
        TaskId::parse(text).map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for TaskId {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        TaskId::parse(text)
    }
}

/// The parent part of an id string, without validating it.
pub fn parent_of(id: &str) -> Option<&str> {
    id.rfind('.').map(|dot| &id[..dot])
}

/// The segment after the last dot (the whole id at the top level).
pub fn last_segment(id: &str) -> &str {
    id.rfind('.').map_or(id, |dot| &id[dot + 1..])
}

/// Whether `bytes` is a valid id: segments of letters, digits, `-` or `_`
/// between single dots, not starting with `-`, at most `MAX_LEN` bytes and
/// `MAX_DEPTH` segments.
fn is_plain_id(bytes: &[u8]) -> bool {
    if bytes.is_empty() || bytes.len() > MAX_LEN || bytes[0] == b'-' {
        return false;
    }
    // One pass: a dot must follow a segment's character (not the start
    // or another dot), and the id must not end with one.
    let (mut dots, mut after_dot) = (0, true);
    for &byte in bytes {
        if byte == b'.' {
            if after_dot {
                return false;
            }
            dots += 1;
            after_dot = true;
        } else if byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_' {
            after_dot = false;
        } else {
            return false;
        }
    }
    !after_dot && dots < MAX_DEPTH
}

fn check(text: &str) -> Result<(), String> {
    // The common case in one pass over the bytes; the loop below words
    // the problem when there is one.
    if is_plain_id(text.as_bytes()) {
        return Ok(());
    }
    worded_check(text)
}

/// The checks of `is_plain_id` one by one, saying which fails.
fn worded_check(text: &str) -> Result<(), String> {
    const SHAPE: &str = "ids are dotted paths like A, A.1, A.1.2";
    if text.is_empty() {
        return Err("empty id".to_owned());
    }
    if text.len() > MAX_LEN {
        return Err(format!(
            "id is {} bytes long; at most {MAX_LEN}",
            text.len()
        ));
    }
    if text.starts_with('-') {
        return Err(format!(
            "id {text:?} starts with '-', which a command line reads as an option; start it with a letter, digit or _"
        ));
    }
    let mut depth = 0;
    for segment in text.split('.') {
        depth += 1;
        if segment.is_empty() {
            return Err(format!("id {text:?} has an empty segment; {SHAPE}"));
        }
        if let Some(bad) = segment
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
        {
            return Err(format!(
                "id {text:?} contains {bad:?}; use letters, digits, - and _ between the dots"
            ));
        }
    }
    if depth > MAX_DEPTH {
        return Err(format!(
            "id {text:?} is {depth} levels deep; at most {MAX_DEPTH}"
        ));
    }
    Ok(())
}

/// The position of a top-level letter id in the sequence `A..Z, AA, AB, ...`
/// (A = 1), or `None` when the segment is not all capital letters.
pub fn letters_number(segment: &str) -> Option<u64> {
    if segment.is_empty() || segment.len() > 12 || !segment.bytes().all(|b| b.is_ascii_uppercase())
    {
        return None;
    }
    Some(
        segment
            .bytes()
            .fold(0, |n, b| n * 26 + u64::from(b - b'A') + 1),
    )
}

/// The top-level id at position `n` of `A..Z, AA, AB, ...` (1 = A).
pub fn letters_name(mut n: u64) -> String {
    let mut letters = Vec::new();
    while n > 0 {
        n -= 1;
        letters.push(b'A' + (n % 26) as u8);
        n /= 26;
    }
    letters.reverse();
    String::from_utf8(letters).expect("letters are ASCII")
}

/// The number of a child segment (`3` in `A.3`), when it is a plain number.
pub fn child_number(segment: &str) -> Option<u64> {
    if segment.starts_with('0') || !segment.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    segment.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_one_pass_check_agrees_with_the_worded_one() {
        // Every string of up to six of these characters.
        let alphabet = ["A", "7", ".", "_", "-", "!"];
        let mut strings = vec![String::new()];
        for _ in 0..6 {
            let longer: Vec<String> = strings
                .iter()
                .filter(|s| s.len() == strings.last().map_or(0, String::len))
                .flat_map(|s| alphabet.iter().map(move |c| format!("{s}{c}")))
                .collect();
            strings.extend(longer);
        }
        assert!(strings.len() > 50_000);
        let deep = |segments: usize| vec!["A"; segments].join(".");
        let edges = [deep(32), deep(33), "a".repeat(200), "a".repeat(201)];
        assert!(worded_check(&edges[0]).is_ok() && worded_check(&edges[1]).is_err());
        for text in strings.iter().chain(&edges) {
            assert_eq!(
                is_plain_id(text.as_bytes()),
                worded_check(text).is_ok(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn letters_round_trip() {
        for (n, name) in [
            (1, "A"),
            (26, "Z"),
            (27, "AA"),
            (28, "AB"),
            (52, "AZ"),
            (53, "BA"),
            (702, "ZZ"),
            (703, "AAA"),
        ] {
            assert_eq!(letters_name(n), name);
            assert_eq!(letters_number(name), Some(n));
        }
        assert_eq!(letters_number("Ab"), None);
        assert_eq!(letters_number("A1"), None);
    }

    #[test]
    fn child_numbers() {
        assert_eq!(child_number("12"), Some(12));
        assert_eq!(child_number("012"), None);
        assert_eq!(child_number("x"), None);
        assert_eq!(child_number(""), None);
    }

    #[test]
    fn parents_and_depth() {
        let id = TaskId::parse("A.1.2").unwrap();
        assert_eq!(id.parent().unwrap().as_str(), "A.1");
        assert_eq!(id.depth(), 3);
        assert_eq!(TaskId::parse("A").unwrap().parent(), None);
        let a1 = TaskId::parse("A.1").unwrap();
        assert!(a1.is_ancestor_of("A.1.2"));
        assert!(!a1.is_ancestor_of("A.10"));
        assert!(!a1.is_ancestor_of("A.1"));
        assert_eq!(last_segment("A.1.2"), "2");
    }

    #[test]
    fn malformed_ids_are_refused_with_a_reason() {
        assert_eq!(TaskId::parse("").unwrap_err(), "empty id");
        assert_eq!(
            TaskId::parse("A..1").unwrap_err(),
            "id \"A..1\" has an empty segment; ids are dotted paths like A, A.1, A.1.2"
        );
        assert_eq!(
            TaskId::parse("A/1").unwrap_err(),
            "id \"A/1\" contains '/'; use letters, digits, - and _ between the dots"
        );
        assert_eq!(
            TaskId::parse("--help").unwrap_err(),
            "id \"--help\" starts with '-', which a command line reads as an option; start it with a letter, digit or _"
        );
        assert!(TaskId::parse("A.-1").is_ok() && TaskId::parse("A-1").is_ok());
        let deep = vec!["1"; 40].join(".");
        assert_eq!(
            TaskId::parse(&deep).unwrap_err(),
            format!("id {deep:?} is 40 levels deep; at most 32")
        );
        assert!(
            TaskId::parse(&"A".repeat(201))
                .unwrap_err()
                .contains("at most 200")
        );
    }
}
