//! Writing a task's line: the fields a person or a document gives, and a
//! new task's line with its keys in the order ralph writes them.

use serde_json::{Map, Value};

use super::id::TaskId;
use super::model::Status;

/// The fields of a task line a person or a document writes.
#[derive(Default)]
pub(super) struct TaskText<'a> {
    pub title: &'a str,
    pub body: Option<&'a str>,
    pub acceptance: &'a [String],
    pub files: &'a [String],
    pub verify: &'a [String],
    pub deps: Vec<Value>,
}

impl TaskText<'_> {
    /// Writes the fields into `object`, removing those that are empty, so
    /// an existing line ends up with exactly this text.
    pub(super) fn write(self, object: &mut Map<String, Value>) {
        let strings = |items: &[String]| (!items.is_empty()).then(|| Value::from(items.to_vec()));
        object.insert("title".into(), self.title.into());
        for (key, value) in [
            ("body", self.body.map(Value::from)),
            ("acceptance", strings(self.acceptance)),
            ("files", strings(self.files)),
            ("verify", strings(self.verify)),
            (
                "deps",
                (!self.deps.is_empty()).then(|| Value::Array(self.deps)),
            ),
        ] {
            match value {
                Some(value) => object.insert(key.into(), value),
                None => object.shift_remove(key),
            };
        }
    }
}

/// A new pending task's line, keys in the order ralph writes them: id,
/// title, status, leaf, the rest of `text`, the `tags` that are given
/// (`source`, `kind`), then `created`.
pub(super) fn new_line(
    id: &TaskId,
    leaf: bool,
    text: TaskText<'_>,
    tags: &[(&str, Option<&str>)],
    now: &str,
) -> Map<String, Value> {
    let mut object = Map::new();
    object.insert("id".into(), id.as_str().into());
    object.insert("title".into(), Value::Null);
    object.insert("status".into(), Status::Pending.as_str().into());
    object.insert("leaf".into(), leaf.into());
    text.write(&mut object);
    for (key, value) in tags {
        if let Some(value) = value {
            object.insert((*key).into(), (*value).into());
        }
    }
    object.insert("created".into(), now.into());
    object
}
