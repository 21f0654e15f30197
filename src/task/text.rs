//! The strings of a task (title, body, blocked reason) without a copy each:
//! while the task sits in the queue it was read with, each is a range of the
//! file's text as read.

use std::borrow::Cow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// The text of a task file as read, for the strings of its tasks to share.
///
/// Every thread that parses lines makes its own `Source` around the same
/// text, so the reference counts touched for each string are never touched
/// by two threads at once.
pub struct Source {
    text: Arc<String>,
}

impl Source {
    /// A source over `text`.
    pub fn new(text: Arc<String>) -> Arc<Source> {
        Arc::new(Source { text })
    }

    /// The text shared.
    pub fn text(&self) -> &Arc<String> {
        &self.text
    }
}

/// Turns a string read from a line into a [`Text`]: a range of `source`
/// when the string is a slice of it (no escapes were decoded), a copy
/// otherwise.
pub fn text_from(source: Option<&Arc<Source>>, value: Cow<'_, str>) -> Text {
    if let (Some(source), Cow::Borrowed(value)) = (source, &value) {
        let base = source.text.as_ptr() as usize;
        let at = value.as_ptr() as usize;
        if at >= base
            && at + value.len() <= base + source.text.len()
            && let (Ok(start), Ok(len)) = (u32::try_from(at - base), u32::try_from(value.len()))
        {
            return Text(Repr::Shared {
                source: Arc::clone(source),
                start,
                len,
            });
        }
    }
    Text(Repr::Owned(value.into_owned().into_boxed_str()))
}

/// A string of a task: a range of its file's text, or its own copy.
///
/// A clone is always its own copy, so a task kept after its queue is gone
/// (the runner keeps the task it works on) never holds the whole file's
/// text in memory.
pub struct Text(Repr);

enum Repr {
    Shared {
        source: Arc<Source>,
        start: u32,
        len: u32,
    },
    Owned(Box<str>),
}

impl Text {
    /// The text as a string slice.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Shared { source, start, len } => {
                let start = *start as usize;
                &source.text[start..start + *len as usize]
            }
            Repr::Owned(text) => text,
        }
    }
}

impl Clone for Text {
    fn clone(&self) -> Text {
        Text(Repr::Owned(self.as_str().into()))
    }
}

impl Deref for Text {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl From<String> for Text {
    fn from(text: String) -> Text {
        Text(Repr::Owned(text.into_boxed_str()))
    }
}

impl From<&str> for Text {
    fn from(text: &str) -> Text {
        Text(Repr::Owned(text.into()))
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Text) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Text {}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Text {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slice_of_the_source_is_shared_and_a_clone_is_a_copy() {
        let source = Source::new(Arc::new("{\"title\":\"hello\"}".to_owned()));
        let slice = &source.text[10..15];
        let text = text_from(Some(&source), Cow::Borrowed(slice));
        assert_eq!(text, "hello");
        assert!(matches!(
            text.0,
            Repr::Shared {
                start: 10,
                len: 5,
                ..
            }
        ));
        assert_eq!(Arc::strong_count(&source), 2);
        let copy = text.clone();
        assert!(matches!(copy.0, Repr::Owned(_)));
        assert_eq!(copy, text);
        drop(text);
        assert_eq!(Arc::strong_count(&source), 1, "the copy holds no share");
    }

    #[test]
    fn anything_else_is_a_copy() {
        let source = Source::new(Arc::new("abc".to_owned()));
        let elsewhere = String::from("abc");
        for value in [
            Cow::Borrowed(elsewhere.as_str()),
            Cow::Owned("a\"b".to_owned()),
        ] {
            let text = text_from(Some(&source), value.clone());
            assert!(matches!(text.0, Repr::Owned(_)));
            assert_eq!(text, value.as_ref());
        }
        assert!(matches!(
            text_from(None, Cow::Borrowed(&source.text[..])).0,
            Repr::Owned(_)
        ));
        assert_eq!(Arc::strong_count(&source), 1);
    }
}
