//! How long a task's title, body and own checks may be. The title travels
//! in the agent's environment (`RALPH_TASK_TITLE`: Linux refuses any one
//! variable of 128 KiB, and the agent would never start), each `verify`
//! command in a command line (`sh -c`), the body in every prompt for the
//! task. `ralph task` refuses longer ones; the loop blocks a task whose
//! line has one (a hand edit, an agent's) before any agent gets it.

use std::fmt;

use super::error::Error;
use super::queue::Queue;

/// The longest title, in bytes.
pub const MAX_TITLE_BYTES: usize = 4 * 1024;
/// The longest body, in bytes.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// The longest `verify` command, in bytes.
pub const MAX_VERIFY_BYTES: usize = 4 * 1024;

/// A task's title, body or `verify` command over its bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Oversized {
    /// What it is: `the title`, `the body`, `a verify command`.
    pub what: &'static str,
    /// How long it is, in bytes.
    pub bytes: usize,
    /// Its bound, in bytes.
    pub most: usize,
}

impl fmt::Display for Oversized {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is {} bytes long, over the bound of {} bytes",
            self.what, self.bytes, self.most
        )
    }
}

impl Oversized {
    /// The first of `title`, `body` and the `verify` commands over its
    /// bound.
    pub fn of(title: &str, body: Option<&str>, verify: &[String]) -> Option<Oversized> {
        let over = |what, bytes, most| (bytes > most).then_some(Oversized { what, bytes, most });
        over("the title", title.len(), MAX_TITLE_BYTES)
            .or_else(|| over("the body", body.map_or(0, str::len), MAX_BODY_BYTES))
            .or_else(|| {
                let longest = verify.iter().map(String::len).max().unwrap_or(0);
                over("a verify command", longest, MAX_VERIFY_BYTES)
            })
    }

    /// The refusal of a command that would write it.
    pub(super) fn refused(&self) -> Error {
        let hint = match self.what {
            "the title" => "keep the title to one line and put the details in the body",
            "the body" => {
                "put long material in a file of the project and name that file in the body"
            }
            _ => "put a long check in a script of the project and run that script",
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

/// Refuses a `title`, `body` or `verify` command over its bound.
pub(super) fn check(title: &str, body: Option<&str>, verify: &[String]) -> Result<(), Error> {
    match Oversized::of(title, body, verify) {
        Some(over) => Err(over.refused()),
        None => Ok(()),
    }
}

impl Queue {
    /// What of live task `id`'s title, body and `verify` commands is over
    /// its bound, if any.
    pub fn oversized(&self, id: &str) -> Option<Oversized> {
        let task = self.get(id)?;
        if let Some(over) = Oversized::of(&task.title, None, &[]) {
            return Some(over);
        }
        let object = self.object(id)?;
        let body = object.get("body").and_then(serde_json::Value::as_str);
        let verify = super::model::string_list(&object, "verify");
        Oversized::of("", body, &verify)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_bodies_and_checks_are_bounded_in_bytes() {
        let fits = "é".repeat(MAX_TITLE_BYTES / 2);
        let body = "x".repeat(MAX_BODY_BYTES);
        let verify = ["v".repeat(MAX_VERIFY_BYTES)];
        assert_eq!(Oversized::of(&fits, Some(&body), &verify), None);
        let over = Oversized::of(&format!("{fits}x"), None, &[]).unwrap();
        assert_eq!(
            over.to_string(),
            "the title is 4097 bytes long, over the bound of 4096 bytes"
        );
        let body = format!("{body}x");
        assert_eq!(
            Oversized::of("t", Some(&body), &[])
                .unwrap()
                .block_reason("A.1"),
            "the body is 65537 bytes long, over the bound of 65536 bytes; shorten it in tasks.jsonl, then set the task going again (`ralph task start A.1`)"
        );
        let verify = ["true".to_owned(), "v".repeat(MAX_VERIFY_BYTES + 2)];
        assert_eq!(
            Oversized::of("t", None, &verify).unwrap().to_string(),
            "a verify command is 4098 bytes long, over the bound of 4096 bytes"
        );
    }

    #[test]
    fn the_queue_says_which_task_is_over_a_bound() {
        let long = "x".repeat(MAX_BODY_BYTES + 1);
        let check = "v".repeat(MAX_VERIFY_BYTES + 1);
        let tasks = format!(
            "{{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}}\n{{\"id\":\"B\",\"title\":\"b\",\"status\":\"pending\",\"leaf\":true,\"body\":\"{long}\"}}\n{{\"id\":\"C\",\"title\":\"c\",\"status\":\"pending\",\"leaf\":true,\"verify\":[\"{check}\"]}}\n"
        );
        let queue = Queue::parse(tasks.as_bytes(), b"").unwrap();
        assert_eq!(queue.oversized("A"), None);
        assert_eq!(queue.oversized("B").unwrap().what, "the body");
        assert_eq!(queue.oversized("C").unwrap().what, "a verify command");
        assert_eq!(queue.oversized("D"), None);
    }
}
