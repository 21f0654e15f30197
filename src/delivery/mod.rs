//! Delivering a run's work as a pull request: its body, written from the
//! run's records (`body.rs`), and the GitHub CLI that opens it (`gh.rs`).
//! Pushing the base is git's (`git::push`), driven by `runner::deliver`.

pub(crate) mod body;
pub(crate) mod gh;
