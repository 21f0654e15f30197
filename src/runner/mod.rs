//! The loop (`ralph run`): a pure decision over what it observes, and an
//! executor that performs each action and records it.

pub mod decide;
pub mod lock;

/// The stop file, relative to the project root.
pub const STOP_FILE: &str = ".stop";
