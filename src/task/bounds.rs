//! How long a task's title and body may be. The title travels in the
//! agent's environment (`RALPH_TASK_TITLE`: Linux refuses any one variable
//! of 128 KiB, and the agent would never start), the body in every prompt
//! for the task. `ralph task` refuses longer ones; the loop blocks a task
//! whose line has one (a hand edit, an agent's) before any agent gets it.

use std::fmt;

use super::error::Error;
use super::queue::Queue;

/// The longest title, in bytes.
pub const MAX_TITLE_BYTES: usize = 4 * 1024;
/// The longest body, in bytes.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// A task's title or body over its bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Oversized {
    /// `title` or `body`.
    pub field: &'static str,
    /// How long it is, in bytes.
    pub bytes: usize,
    /// Its bound, in bytes.
    pub most: usize,
}

impl fmt::Display for Oversized {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the {} is {} bytes long, over the bound of {} bytes",
            self.field, self.bytes, self.most
        )
    }
}

impl Oversized {
    /// The first of `title` and `body` over its bound.
    pub fn of(title: &str, body: Option<&str>) -> Option<Oversized> {
        let over = |field, bytes, most| (bytes > most).then_some(Oversized { field, bytes, most });
        over("title", title.len(), MAX_TITLE_BYTES)
            .or_else(|| over("body", body.map_or(0, str::len), MAX_BODY_BYTES))
    }

    /// The refusal of a command that would write it.
    pub(super) fn refused(&self) -> Error {
        let hint = match self.field {
            "title" => "keep the title to one line and put the details in the body",
            _ => "put long material in a file of the project and name that file in the body",
        };
        Error::Refused {
            message: self.to_string(),
            hint: Some(hint.to_owned()),
        }
    }

    /// Why the loop blocks task `id` with it, and what a person does
    /// about it.
    pub fn block_reason(&self, id: &str) -> String {
        format!(
            "{self}; shorten it in tasks.jsonl, then set the task going again (`ralph task start {id}`)"
        )
    }
}

/// Refuses a `title` and `body` over their bounds.
pub(super) fn check(title: &str, body: Option<&str>) -> Result<(), Error> {
    match Oversized::of(title, body) {
        Some(over) => Err(over.refused()),
        None => Ok(()),
    }
}

impl Queue {
    /// What of live task `id`'s title and body is over its bound, if any.
    pub fn oversized(&self, id: &str) -> Option<Oversized> {
        let task = self.get(id)?;
        if let Some(over) = Oversized::of(&task.title, None) {
            return Some(over);
        }
        let object = self.object(id)?;
        let body = object.get("body").and_then(serde_json::Value::as_str);
        Oversized::of("", body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_and_bodies_are_bounded_in_bytes() {
        let fits = "é".repeat(MAX_TITLE_BYTES / 2);
        assert_eq!(
            Oversized::of(&fits, Some(&"x".repeat(MAX_BODY_BYTES))),
            None
        );
        let over = Oversized::of(&format!("{fits}x"), None).unwrap();
        assert_eq!(
            over.to_string(),
            "the title is 4097 bytes long, over the bound of 4096 bytes"
        );
        let body = "x".repeat(MAX_BODY_BYTES + 1);
        assert_eq!(
            Oversized::of("t", Some(&body)).unwrap().block_reason("A.1"),
            "the body is 65537 bytes long, over the bound of 65536 bytes; shorten it in tasks.jsonl, then set the task going again (`ralph task start A.1`)"
        );
    }

    #[test]
    fn the_queue_says_which_task_is_over_a_bound() {
        let long = "x".repeat(MAX_BODY_BYTES + 1);
        let tasks = format!(
            "{{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}}\n{{\"id\":\"B\",\"title\":\"b\",\"status\":\"pending\",\"leaf\":true,\"body\":\"{long}\"}}\n"
        );
        let queue = Queue::parse(tasks.as_bytes(), b"").unwrap();
        assert_eq!(queue.oversized("A"), None);
        assert_eq!(queue.oversized("B").unwrap().field, "body");
        assert_eq!(queue.oversized("C"), None);
    }
}
