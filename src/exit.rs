//! The exit codes ralph documents: a leaf every module's errors map to.

/// The process exit codes ralph documents (docs/DESIGN.md section 7 and 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The command did what was asked.
    Success = 0,
    /// Nothing to do: `ralph task next` found no workable task; and for
    /// `ralph merge-queue`, git's merge driver, a conflict left for a
    /// person (git reads 1 so).
    NothingToDo = 1,
    /// The command line was wrong.
    Usage = 2,
    /// Work remains that needs a person.
    NeedsPerson = 10,
    /// A failure that may pass: I/O, a held lock, an agent that keeps failing.
    Transient = 20,
    /// Invalid input: a malformed task file, config or argument value.
    InvalidInput = 30,
    /// Interrupted by a signal.
    Interrupted = 130,
}

/// What an area's error says beyond its message: the exit code it ends
/// a command with, and what the person can do about it. Every area keeps
/// its own error type and implements this once.
pub trait Reportable {
    /// The exit code this error ends the process with.
    fn exit(&self) -> Exit;

    /// A follow-up line telling the person what to do, when there is one.
    fn hint(&self) -> Option<String> {
        None
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> Self {
        std::process::ExitCode::from(exit as u8)
    }
}
