//! The task record: the fields ralph understands, read from one JSON line.

use serde::Deserialize;
use serde::de::{self, Visitor};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;

use super::id::TaskId;

/// Where a task stands. `in_progress` and `done` are read as aliases.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, strum::IntoStaticStr, strum::Display,
)]
#[strum(serialize_all = "snake_case")]
pub enum Status {
    /// Not started.
    Pending,
    /// Being worked on (alias `in_progress`).
    Active,
    /// Work done, awaiting review.
    Ready,
    /// Finished, waiting to be archived (alias `done`).
    Complete,
    /// Needs a person; skipped by the loop with its whole subtree.
    Blocked,
}

impl Status {
    /// Every status, in the order they are reported.
    pub const ALL: [Status; 5] = [
        Status::Pending,
        Status::Active,
        Status::Ready,
        Status::Complete,
        Status::Blocked,
    ];

    /// Reads a status as written in a file or on the command line.
    pub fn parse(text: &str) -> Option<Status> {
        Some(match text {
            "pending" => Status::Pending,
            "active" | "in_progress" => Status::Active,
            "ready" => Status::Ready,
            "complete" | "done" => Status::Complete,
            "blocked" => Status::Blocked,
            _ => return None,
        })
    }

    /// The canonical name ralph writes.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl std::str::FromStr for Status {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Status::parse(text).ok_or_else(|| unknown_status(text))
    }
}

fn unknown_status(text: &str) -> String {
    format!("unknown status {text:?} (use pending, active, ready, complete or blocked)")
}

/// One task of `tasks.jsonl`: the fields ralph acts on. The line's other
/// fields (a `body`, a `blocked_reason`, anything else) are checked, stay in
/// the file's text and are read from there when wanted
/// ([`super::TaskFile::object`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Task {
    /// The dotted id.
    pub id: TaskId,
    /// One-line description.
    pub title: String,
    /// Where the task stands.
    pub status: Status,
    /// Whether the task is workable (`true`) or only organises children.
    pub leaf: bool,
    /// Ids that must be done (archived or complete) before this task starts.
    pub deps: Vec<TaskId>,
}

/// Every field of a task line that ralph understands (section 2 of the
/// design and the richer fields of `ralph plan`); any other is the user's
/// own, kept untouched and shown to the prompt template as `task.extra`.
pub const KNOWN_FIELDS: [&str; 18] = [
    "id",
    "title",
    "status",
    "leaf",
    "body",
    "deps",
    "notes",
    "blocked_reason",
    "attempts",
    "created",
    "completed",
    "commit",
    "branch",
    "acceptance",
    "files",
    "verify",
    "source",
    "kind",
];

/// The items of an array-of-strings field (`acceptance`, `files`,
/// `verify`) of a task's object; empty when the field is absent or `null`
/// (a valid line holds nothing else there).
pub fn string_list(object: &Map<String, Value>, key: &str) -> Vec<String> {
    match object.get(key) {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// The known fields of a line, typed loosely so each problem gets its own
/// message; unknown fields are skipped by serde without being built, and
/// strings without escapes are borrowed from the line, not copied.
#[derive(Deserialize)]
struct RawTask<'a> {
    #[serde(borrow)]
    id: Option<Raw<'a>>,
    #[serde(borrow)]
    title: Option<Raw<'a>>,
    #[serde(borrow)]
    status: Option<Raw<'a>>,
    #[serde(borrow)]
    leaf: Option<Raw<'a>>,
    #[serde(borrow)]
    deps: Option<Raw<'a>>,
    #[serde(borrow)]
    body: Option<Raw<'a>>,
    #[serde(borrow)]
    notes: Option<Raw<'a>>,
    #[serde(borrow)]
    blocked_reason: Option<Raw<'a>>,
    #[serde(borrow)]
    attempts: Option<Raw<'a>>,
    #[serde(borrow)]
    created: Option<Raw<'a>>,
    #[serde(borrow)]
    completed: Option<Raw<'a>>,
    #[serde(borrow)]
    commit: Option<Raw<'a>>,
    #[serde(borrow)]
    branch: Option<Raw<'a>>,
    #[serde(borrow)]
    acceptance: Option<Raw<'a>>,
    #[serde(borrow)]
    files: Option<Raw<'a>>,
    #[serde(borrow)]
    verify: Option<Raw<'a>>,
    #[serde(borrow)]
    source: Option<Raw<'a>>,
    #[serde(borrow)]
    kind: Option<Raw<'a>>,
}

/// One field's value: the common shapes without building a `Value`.
/// JSON `null` never gets here (serde reads it as a missing `Option`).
enum Raw<'a> {
    Bool(bool),
    Str(Cow<'a, str>),
    /// Strings of an array of strings (the shape of `deps`).
    Strs(Vec<Cow<'a, str>>),
    Other(Value),
}

impl<'de: 'a, 'a> Deserialize<'de> for Raw<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(RawVisitor(std::marker::PhantomData))
    }
}

struct RawVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for RawVisitor<'a> {
    type Value = Raw<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Raw<'a>, E> {
        Ok(Raw::Bool(value))
    }

    fn visit_borrowed_str<E: de::Error>(self, value: &'de str) -> Result<Raw<'a>, E> {
        Ok(Raw::Str(Cow::Borrowed(value)))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Raw<'a>, E> {
        Ok(Raw::Str(Cow::Owned(value.to_owned())))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<Raw<'a>, E> {
        Ok(Raw::Str(Cow::Owned(value)))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Raw<'a>, E> {
        Ok(Raw::Other(value.into()))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Raw<'a>, E> {
        Ok(Raw::Other(value.into()))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Raw<'a>, E> {
        Ok(Value::from(value).into())
    }

    fn visit_unit<E: de::Error>(self) -> Result<Raw<'a>, E> {
        Ok(Raw::Other(Value::Null))
    }

    fn visit_none<E: de::Error>(self) -> Result<Raw<'a>, E> {
        Ok(Raw::Other(Value::Null))
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Raw<'a>, A::Error> {
        // Strings are kept as such until the first other item; from there
        // on everything is collected as a `Value` (only for the message).
        let mut strs = Vec::new();
        while let Some(item) = seq.next_element::<Raw<'a>>()? {
            match item {
                Raw::Str(text) => strs.push(text),
                other => {
                    let mut items: Vec<Value> = strs
                        .into_iter()
                        .map(|text| Value::from(text.into_owned()))
                        .collect();
                    items.push(other.into_value());
                    while let Some(item) = seq.next_element::<Value>()? {
                        items.push(item);
                    }
                    return Ok(Raw::Other(Value::Array(items)));
                }
            }
        }
        Ok(Raw::Strs(strs))
    }

    fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Raw<'a>, A::Error> {
        Value::deserialize(de::value::MapAccessDeserializer::new(map)).map(Raw::Other)
    }
}

impl From<Value> for Raw<'_> {
    fn from(value: Value) -> Self {
        Raw::Other(value)
    }
}

impl Raw<'_> {
    fn into_value(self) -> Value {
        match self {
            Raw::Bool(value) => Value::Bool(value),
            Raw::Str(text) => Value::String(text.into_owned()),
            Raw::Strs(items) => Value::Array(
                items
                    .into_iter()
                    .map(|item| Value::String(item.into_owned()))
                    .collect(),
            ),
            Raw::Other(value) => value,
        }
    }
}

/// The known fields of a well-formed line, typed: serde reads such a line
/// in one pass with no value built but the task's own strings. Any line it
/// refuses is read again as a [`RawTask`], which words the problem, so the
/// two agree on every line that parses (the `task_file` fuzz target checks
/// it). A new field goes into both.
#[derive(Deserialize)]
// The fields ralph checks but does not keep are never read.
#[allow(dead_code)]
struct TypedTask<'a> {
    id: TaskId,
    #[serde(borrow)]
    title: Cow<'a, str>,
    status: Status,
    leaf: bool,
    #[serde(default)]
    deps: Option<Vec<TaskId>>,
    #[serde(default)]
    body: Option<Str>,
    #[serde(default)]
    notes: Option<Str>,
    #[serde(default)]
    blocked_reason: Option<Str>,
    #[serde(default)]
    attempts: Option<u64>,
    #[serde(default)]
    created: Option<Str>,
    #[serde(default)]
    completed: Option<Str>,
    #[serde(default)]
    commit: Option<Str>,
    #[serde(default)]
    branch: Option<Str>,
    #[serde(default)]
    acceptance: Option<Vec<Str>>,
    #[serde(default)]
    files: Option<Vec<Str>>,
    #[serde(default)]
    verify: Option<Vec<Str>>,
    #[serde(default)]
    source: Option<Str>,
    #[serde(default)]
    kind: Option<Str>,
}

/// A string field ralph checks but does not keep.
struct Str;

/// A status as written in a file (aliases read), refused otherwise.
impl<'de> Deserialize<'de> for Status {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Status, D::Error> {
        let text = <&str>::deserialize(deserializer)?;
        Status::parse(text).ok_or_else(|| de::Error::custom(unknown_status(text)))
    }
}

impl<'de> Deserialize<'de> for Str {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Str, D::Error> {
        struct StrVisitor;
        impl Visitor<'_> for StrVisitor {
            type Value = Str;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_str<E: de::Error>(self, _: &str) -> Result<Str, E> {
                Ok(Str)
            }
        }
        deserializer.deserialize_str(StrVisitor)
    }
}

impl TypedTask<'_> {
    /// The task, when every field is valid as well as well-typed.
    fn into_task(self) -> Option<Task> {
        Some(Task {
            id: self.id,
            title: self.title.into_owned(),
            status: self.status,
            leaf: self.leaf,
            deps: self.deps.unwrap_or_default(),
        })
    }
}

impl Task {
    /// Reads a task from one line of JSON text, or says what is wrong with it.
    pub fn from_json(text: &str) -> Result<Task, String> {
        if text.trim_start().starts_with('{')
            && nesting_depth(text) <= MAX_DEPTH
            && let Ok(typed) = serde_json::from_str::<TypedTask>(text)
            && let Some(task) = typed.into_task()
        {
            return Ok(task);
        }
        Task::from_raw(text)
    }

    /// `from_json` through [`RawTask`] alone: every problem worded.
    #[doc(hidden)]
    pub fn from_raw(text: &str) -> Result<Task, String> {
        // serde skips unknown fields of any depth, but cannot read a line
        // deeper than its limit back as an object to edit it: refuse such a
        // line here, so every command agrees about it.
        if nesting_depth(text) > MAX_DEPTH {
            return Err(format!(
                "nested deeper than {MAX_DEPTH} levels; flatten the line's values"
            ));
        }
        let raw: RawTask = parse_object(text)?;
        let id = TaskId::parse(&required_string(raw.id, "id")?)?;
        let title = required_string(raw.title, "title")?.into_owned();
        let status = required_string(raw.status, "status")?;
        let status = Status::parse(&status).ok_or_else(|| unknown_status(&status))?;
        let leaf = match required(raw.leaf, "leaf")? {
            Raw::Bool(leaf) => leaf,
            other => return Err(mistyped("leaf", "true or false", other)),
        };
        let deps: Vec<TaskId> = match raw.deps {
            None => Vec::new(),
            Some(Raw::Strs(items)) => items
                .iter()
                .map(|dep| TaskId::parse(dep).map_err(|e| format!("in \"deps\": {e}")))
                .collect::<Result<_, _>>()?,
            Some(Raw::Other(Value::Array(items))) => {
                // An array with a non-string item: the items before it are
                // checked first, as they come.
                let mut deps = Vec::new();
                for item in items {
                    match item {
                        Value::String(dep) => {
                            deps.push(TaskId::parse(&dep).map_err(|e| format!("in \"deps\": {e}"))?)
                        }
                        other => {
                            return Err(mistyped("deps", "an array of id strings", other.into()));
                        }
                    }
                }
                deps
            }
            Some(other) => return Err(mistyped("deps", "an array of id strings", other)),
        };
        for (value, name) in [
            (raw.body, "body"),
            (raw.blocked_reason, "blocked_reason"),
            (raw.notes, "notes"),
            (raw.created, "created"),
            (raw.completed, "completed"),
            (raw.commit, "commit"),
            (raw.branch, "branch"),
            (raw.source, "source"),
            (raw.kind, "kind"),
        ] {
            optional_str(value, name)?;
        }
        for (value, name) in [
            (raw.acceptance, "acceptance"),
            (raw.files, "files"),
            (raw.verify, "verify"),
        ] {
            optional_strs(value, name)?;
        }
        match raw.attempts {
            None => {}
            Some(Raw::Other(Value::Number(n))) if n.is_u64() => {}
            Some(other) => return Err(mistyped("attempts", "a whole number", other)),
        }
        Ok(Task {
            id,
            title,
            status,
            leaf,
            deps,
        })
    }
}

/// Deserializes one JSON object from `text`, refusing other JSON values
/// (serde would otherwise accept an array for a struct).
pub(super) fn parse_object<'a, T: Deserialize<'a>>(text: &'a str) -> Result<T, String> {
    if !text.trim_start().starts_with('{') {
        return Err(match serde_json::from_str::<serde::de::IgnoredAny>(text) {
            Ok(_) => "expected a JSON object ({...}), found another JSON value".to_owned(),
            Err(err) => invalid_json(err),
        });
    }
    serde_json::from_str(text).map_err(invalid_json)
}

/// The deepest JSON line ralph reads (serde_json's own limit).
const MAX_DEPTH: usize = 128;

/// How deeply `[` and `{` nest in `text`, outside strings.
fn nesting_depth(text: &str) -> usize {
    // Never deeper than the brackets it has: most lines have a handful,
    // and counting them is far cheaper than following strings.
    // `[` is `{` but for bit 0x20, which no other byte has so; summed in
    // bytes, a chunk at a time, the count compiles to vector code.
    let brackets: usize = (text.as_bytes().chunks(128))
        .map(|chunk| {
            let count: u8 = chunk.iter().map(|&b| u8::from(b | 0x20 == b'{')).sum();
            usize::from(count)
        })
        .sum();
    if brackets <= MAX_DEPTH {
        return brackets;
    }
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for byte in text.bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

fn invalid_json(err: serde_json::Error) -> String {
    if err.is_data() {
        // A data error (duplicate or mistyped field) reads well on its own.
        return crate::text::without_position(&err.to_string()).to_owned();
    }
    let message = err.to_string();
    format!(
        "invalid JSON at column {}: {}",
        err.column(),
        crate::text::without_position(&message)
    )
}

fn required<'a>(value: Option<Raw<'a>>, name: &str) -> Result<Raw<'a>, String> {
    match value {
        None | Some(Raw::Other(Value::Null)) => Err(format!("missing field `{name}`")),
        Some(value) => Ok(value),
    }
}

fn required_string<'a>(value: Option<Raw<'a>>, name: &str) -> Result<Cow<'a, str>, String> {
    match required(value, name)? {
        Raw::Str(text) => Ok(text),
        other => Err(mistyped(name, "a string", other)),
    }
}

fn optional_str<'a>(value: Option<Raw<'a>>, name: &str) -> Result<Option<Cow<'a, str>>, String> {
    match value {
        None | Some(Raw::Other(Value::Null)) => Ok(None),
        Some(Raw::Str(text)) => Ok(Some(text)),
        Some(other) => Err(mistyped(name, "a string", other)),
    }
}

/// Checks an optional array of strings (`acceptance`, `files`, `verify`).
fn optional_strs(value: Option<Raw<'_>>, name: &str) -> Result<(), String> {
    match value {
        None | Some(Raw::Other(Value::Null)) | Some(Raw::Strs(_)) => Ok(()),
        Some(other) => Err(mistyped(name, "an array of strings", other)),
    }
}

fn mistyped(name: &str, expected: &str, found: Raw<'_>) -> String {
    let mut shown = found.into_value().to_string();
    if shown.len() > 40 {
        let cut = (0..=37)
            .rev()
            .find(|&i| shown.is_char_boundary(i))
            .unwrap_or(0);
        shown.truncate(cut);
        shown.push_str("...");
    }
    format!("field `{name}` must be {expected}, not {shown}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(line: &str) -> String {
        Task::from_json(line).unwrap_err()
    }

    #[test]
    fn reads_a_task_with_aliases_and_unknown_fields() {
        let task = Task::from_json(
            r#"{"id":"A.1","title":"t","status":"in_progress","leaf":true,"deps":["B"],"x":{"y":[1]}}"#,
        )
        .unwrap();
        assert_eq!(task.id.as_str(), "A.1");
        assert_eq!(task.status, Status::Active);
        assert_eq!(*task.deps, [TaskId::parse("B").unwrap()]);
        let done =
            Task::from_json(r#"{"id":"A","title":"t","status":"done","leaf":false}"#).unwrap();
        assert_eq!(done.status, Status::Complete);
    }

    /// The typed reading and the one that words errors agree on odd lines
    /// (the fuzz target checks many more).
    #[test]
    fn both_readings_agree() {
        for line in [
            r#"{"id":"A","title":"t","status":"done","leaf":true,"body":null,"notes":"n"}"#,
            r#"{"id":"A\u002e1","title":"t\n","status":"pending","leaf":true}"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":true,"deps":["B",1]}"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":true,"attempts":1.0}"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":true,"attempts":null}"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":true,"commit":5}"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":true,"x":{"deps":[1]}}"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":true,"leaf":false}"#,
            r#"{"id":"a b","title":"t","status":"pending","leaf":true}"#,
            r#"{"id":"A","title":"t","status":"PENDING","leaf":true}"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":true,"acceptance":["a","b\u0021"],"files":[],"verify":["make"],"source":"p.md#R1","kind":"feature"}"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":true,"acceptance":null,"files":null,"verify":null,"source":null,"kind":null}"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":true,"acceptance":"x"}"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":true,"files":["a",1]}"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":true,"verify":[null]}"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":true,"verify":[["x"]]}"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":true,"source":["x"]}"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":true,"kind":true}"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":true,"kind":"a","kind":"b"}"#,
        ] {
            assert_eq!(Task::from_json(line), Task::from_raw(line), "{line}");
        }
    }

    /// The richer fields (`acceptance`, `files`, `verify`, `source`,
    /// `kind`) are read by the typed reading itself, not only by the one
    /// that words errors.
    #[test]
    fn the_typed_reading_takes_the_richer_fields() {
        for line in [
            r#"{"id":"A","title":"t","status":"pending","leaf":true,"acceptance":["a","b\n"],"files":["src/x.rs"],"verify":[],"source":"prd.md#R1","kind":"feature"}"#,
            r#"{"id":"A","title":"t","status":"pending","leaf":true,"acceptance":null,"kind":null}"#,
        ] {
            let typed = serde_json::from_str::<TypedTask>(line).map(|t| t.into_task());
            assert!(matches!(typed, Ok(Some(_))), "{line}");
            assert!(Task::from_raw(line).is_ok(), "{line}");
        }
    }

    #[test]
    fn each_problem_has_its_own_message() {
        assert_eq!(
            err(r#"{"title":"t","status":"pending","leaf":true}"#),
            "missing field `id`"
        );
        assert_eq!(
            err(r#"{"id":5,"title":"t","status":"pending","leaf":true}"#),
            "field `id` must be a string, not 5"
        );
        assert_eq!(
            err(r#"{"id":"","title":"t","status":"pending","leaf":true}"#),
            "empty id"
        );
        assert_eq!(
            err(r#"{"id":"A","title":"t","status":"doing","leaf":true}"#),
            "unknown status \"doing\" (use pending, active, ready, complete or blocked)"
        );
        assert_eq!(
            err(r#"{"id":"A","title":"t","status":"pending","leaf":"yes"}"#),
            "field `leaf` must be true or false, not \"yes\""
        );
        assert_eq!(
            err(r#"{"id":"A","title":"t","status":"pending","leaf":true,"deps":"B"}"#),
            "field `deps` must be an array of id strings, not \"B\""
        );
        assert_eq!(
            err(r#"{"id":"A","title":"t","status":"pending","leaf":true,"acceptance":"x"}"#),
            "field `acceptance` must be an array of strings, not \"x\""
        );
        assert_eq!(
            err(r#"{"id":"A","title":"t","status":"pending","leaf":true,"files":["a",1]}"#),
            "field `files` must be an array of strings, not [\"a\",1]"
        );
        assert_eq!(
            err(r#"{"id":"A","title":"t","status":"pending","leaf":true,"verify":{"cmd":"make"}}"#),
            "field `verify` must be an array of strings, not {\"cmd\":\"make\"}"
        );
        assert_eq!(
            err(r#"{"id":"A","title":"t","status":"pending","leaf":true,"source":5}"#),
            "field `source` must be a string, not 5"
        );
        assert_eq!(
            err(r#"{"id":"A","title":"t","status":"pending","leaf":true,"kind":["bug"]}"#),
            "field `kind` must be a string, not [\"bug\"]"
        );
        assert_eq!(
            err(r#"{"id":"A","id":"B","title":"t","status":"pending","leaf":true}"#),
            "duplicate field `id`"
        );
        assert_eq!(
            err(r#"["A","t","pending",true]"#),
            "expected a JSON object ({...}), found another JSON value"
        );
        assert_eq!(
            err(r#"{"id":"A","title":"t""#),
            "invalid JSON at column 21: EOF while parsing an object"
        );
        assert_eq!(err("not json"), "invalid JSON at column 2: expected ident");
    }
}
