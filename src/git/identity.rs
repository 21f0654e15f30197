//! Who ralph's commits are by, and when they are made.

use super::error::{Context, Result};

/// The name used when the repository's config has no `user.name`.
pub const FALLBACK_NAME: &str = "ralph";
/// The email used when the repository's config has no `user.email`.
pub const FALLBACK_EMAIL: &str = "ralph@localhost";

/// The author and committer of every commit ralph makes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// The name (`user.name`).
    pub name: String,
    /// The email (`user.email`).
    pub email: String,
    /// When commits are dated; `None` means the current time.
    pub time: Option<Time>,
    /// Whether the name or email fell back to `ralph <ralph@localhost>`
    /// because git's config lacks them.
    pub fallback: bool,
}

/// A fixed commit time, as git stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Time {
    /// Seconds since the Unix epoch.
    pub seconds: i64,
    /// The time zone's offset from UTC, in minutes.
    pub offset_minutes: i32,
}

impl Identity {
    /// An identity with the given name and email, dated at the current time.
    pub fn new(name: impl Into<String>, email: impl Into<String>) -> Identity {
        Identity {
            name: name.into(),
            email: email.into(),
            time: None,
            fallback: false,
        }
    }

    /// The same identity, dating every commit at `time`.
    pub fn at(self, time: Time) -> Identity {
        Identity {
            time: Some(time),
            ..self
        }
    }

    /// The identity git's config gives for `repo` (`user.name`,
    /// `user.email`), each falling back to `ralph <ralph@localhost>`. Never
    /// fails: an unreadable config counts as missing.
    pub(crate) fn from_config(repo: &git2::Repository) -> Identity {
        let config = repo.config().ok();
        let get = |key: &str| {
            config
                .as_ref()
                .and_then(|config| config.get_string(key).ok())
                .filter(|value| !value.trim().is_empty())
        };
        let (name, email) = (get("user.name"), get("user.email"));
        let fallback = name.is_none() || email.is_none();
        Identity {
            name: name.unwrap_or_else(|| FALLBACK_NAME.to_owned()),
            email: email.unwrap_or_else(|| FALLBACK_EMAIL.to_owned()),
            time: None,
            fallback,
        }
    }

    /// The warning to show once when the identity fell back, else `None`.
    pub fn warning(&self) -> Option<String> {
        self.fallback.then(|| {
            format!(
                "git user.name or user.email is not configured; ralph commits as {} <{}> (set them with `git config user.name ...` and `git config user.email ...`)",
                self.name, self.email
            )
        })
    }

    /// The libgit2 signature for a commit made now.
    pub(crate) fn signature(&self) -> Result<git2::Signature<'static>> {
        match self.time {
            Some(time) => git2::Signature::new(
                &self.name,
                &self.email,
                &git2::Time::new(time.seconds, time.offset_minutes),
            ),
            None => git2::Signature::now(&self.name, &self.email),
        }
        .doing("make the commit signature")
    }
}
