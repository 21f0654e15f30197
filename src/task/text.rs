//! The strings of a task (title, body, blocked reason) without a copy each:
//! while the task sits in the queue it was read with, each is a range of the
//! file's text as read.

use std::borrow::Cow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use crate::files;

/// The text of a task file as read, for the strings of its tasks to share.
///
/// Every thread that parses lines makes its own `Source` around the same
/// text, so the reference counts touched for each string are never touched
/// by two threads at once.
pub struct Source {
    text: Arc<Contents>,
}

impl Source {
    /// A source over `text`.
    pub fn new(text: Arc<Contents>) -> Arc<Source> {
        Arc::new(Source { text })
    }
}

/// A task file's text: read into memory, or mapped (under a lease, see
/// [`files::Mapped`]), checked to be UTF-8 either way.
pub struct Contents(Held);

enum Held {
    Read(String),
    /// Checked to be UTF-8 when made.
    Mapped(files::Mapped),
}

impl Contents {
    /// The bytes of a mapped file, once checked to be UTF-8.
    pub fn mapped(mapped: files::Mapped) -> Result<Contents, (files::Mapped, std::str::Utf8Error)> {
        match std::str::from_utf8(&mapped) {
            Ok(_) => Ok(Contents(Held::Mapped(mapped))),
            Err(err) => Err((mapped, err)),
        }
    }

    /// Lets go of a mapped file's lease (nothing to do for bytes read).
    ///
    /// # Safety
    ///
    /// Nothing may read the text afterwards (see [`files::Mapped::let_go`]).
    pub unsafe fn let_go(&self) {
        if let Held::Mapped(mapped) = &self.0 {
            // SAFETY: passed on to the caller.
            unsafe { mapped.let_go() };
        }
    }
}

impl fmt::Debug for Contents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Contents({} bytes)", self.len())
    }
}

impl From<String> for Contents {
    fn from(text: String) -> Contents {
        Contents(Held::Read(text))
    }
}

impl Deref for Contents {
    type Target = str;

    fn deref(&self) -> &str {
        match &self.0 {
            Held::Read(text) => text,
            // SAFETY: checked to be UTF-8 in `Contents::mapped`, and the
            // lease keeps the file's bytes as they were until it is let go
            // of, after which nothing reads them (`Contents::let_go`).
            Held::Mapped(mapped) => unsafe { std::str::from_utf8_unchecked(mapped) },
        }
    }
}

/// Turns a string read from a line into a [`Text`]: a range of `source`
/// when the string is a slice of it (no escapes were decoded), a copy
/// otherwise.
pub fn text_from(source: Option<&Arc<Source>>, value: Cow<'_, str>) -> Text {
    match (source, value) {
        (Some(source), Cow::Borrowed(value)) => Text(Span::of_or_own(source, value)),
        (_, value) => Text(Span::own(value.into_owned())),
    }
}

/// A range of a source's text, 16 bytes (a queue holds some 400k of
/// them). Clones share the source.
#[derive(Clone)]
pub struct Span {
    source: Arc<Source>,
    start: u32,
    /// [`WHOLE`] for all of the source, whatever its length.
    len: u32,
}

/// The `len` of a span that is all of its source.
const WHOLE: u32 = u32::MAX;

impl Span {
    /// `value` as a range of `source`, when it is a slice of its text
    /// (within the first 4 GiB).
    pub fn of(source: &Arc<Source>, value: &str) -> Option<Span> {
        let base = source.text.as_ptr() as usize;
        let at = value.as_ptr() as usize;
        if at < base || at + value.len() > base + source.text.len() {
            return None;
        }
        let (start, len) = (
            u32::try_from(at - base).ok()?,
            u32::try_from(value.len()).ok()?,
        );
        (len != WHOLE).then(|| Span {
            source: Arc::clone(source),
            start,
            len,
        })
    }

    /// `value` as a range of `source` when it is a slice of it (see
    /// `Span::of`), otherwise as its own copy.
    pub fn of_or_own(source: &Arc<Source>, value: &str) -> Span {
        Span::of(source, value).unwrap_or_else(|| Span::own(value.to_owned()))
    }

    /// `text` as its own source.
    pub fn own(text: String) -> Span {
        Span {
            source: Source::new(Arc::new(text.into())),
            start: 0,
            len: WHOLE,
        }
    }

    /// The text as a string slice.
    pub fn as_str(&self) -> &str {
        let (text, range) = self.range();
        &text[range]
    }

    /// The text this is a range of, and the range.
    pub fn range(&self) -> (&Arc<Contents>, std::ops::Range<usize>) {
        let text = &self.source.text;
        if self.len == WHOLE {
            return (text, 0..text.len());
        }
        let start = self.start as usize;
        (text, start..start + self.len as usize)
    }
}

/// A string of a task: a range of its file's text, or its own copy.
///
/// A clone is always its own copy, so a task kept after its queue is gone
/// (the runner keeps the task it works on) never holds the whole file's
/// text in memory.
pub struct Text(Span);

impl Text {
    /// The text as a string slice.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl Clone for Text {
    fn clone(&self) -> Text {
        Text(Span::own(self.as_str().to_owned()))
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl From<String> for Text {
    fn from(text: String) -> Text {
        Text(Span::own(text))
    }
}

impl From<&str> for Text {
    fn from(text: &str) -> Text {
        Text(Span::own(text.to_owned()))
    }
}

/// `Deref` to `str`, `Debug` and `Display` as the string, and equality by
/// the string, for a type with an `as_str` (a task's strings, a line's
/// text).
macro_rules! str_like {
    ($type:ty) => {
        impl std::ops::Deref for $type {
            type Target = str;

            fn deref(&self) -> &str {
                self.as_str()
            }
        }

        impl std::fmt::Debug for $type {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Debug::fmt(self.as_str(), f)
            }
        }

        impl std::fmt::Display for $type {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl PartialEq for $type {
            fn eq(&self, other: &$type) -> bool {
                self.as_str() == other.as_str()
            }
        }

        impl Eq for $type {}

        impl PartialEq<str> for $type {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<&str> for $type {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl PartialEq<String> for $type {
            fn eq(&self, other: &String) -> bool {
                self.as_str() == other
            }
        }
    };
}
pub(super) use str_like;

str_like!(Text);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slice_of_the_source_is_shared_and_a_clone_is_a_copy() {
        let source = Source::new(Arc::new("{\"title\":\"hello\"}".to_owned().into()));
        let slice = &source.text[10..15];
        let text = text_from(Some(&source), Cow::Borrowed(slice));
        assert_eq!(text, "hello");
        assert!(Arc::ptr_eq(&text.0.source, &source));
        assert_eq!((text.0.start, text.0.len), (10, 5));
        assert_eq!(Arc::strong_count(&source), 2);
        let copy = text.clone();
        assert!(!Arc::ptr_eq(&copy.0.source, &source));
        assert_eq!(copy, text);
        drop(text);
        assert_eq!(Arc::strong_count(&source), 1, "the copy holds no share");
        assert_eq!(std::mem::size_of::<Text>(), 16);
    }

    #[test]
    fn anything_else_is_a_copy() {
        let source = Source::new(Arc::new("abc".to_owned().into()));
        let elsewhere = String::from("abc");
        for value in [
            Cow::Borrowed(elsewhere.as_str()),
            Cow::Owned("a\"b".to_owned()),
        ] {
            let text = text_from(Some(&source), value.clone());
            assert!(!Arc::ptr_eq(&text.0.source, &source));
            assert_eq!(text, value.as_ref());
        }
        assert!(!Arc::ptr_eq(
            &text_from(None, Cow::Borrowed(&source.text[..])).0.source,
            &source
        ));
        assert_eq!(Arc::strong_count(&source), 1);
    }
}
