//! ralph: runs coding agents in a durable, file-based loop.
//!
//! The binary's `main` calls [`main`]; everything else lives here so tests
//! can reach it. See `docs/ARCHITECTURE.md` for how the modules fit.

pub mod agent;
pub mod bench_data;
pub mod cli;
pub(crate) mod clock;
pub(crate) mod config;
pub mod contract;
pub(crate) mod critique;
pub(crate) mod delivery;
pub(crate) mod demo;
pub(crate) mod detect;
pub(crate) mod doctor;
pub(crate) mod error;
pub(crate) mod events;
pub(crate) mod exit;
pub mod fault;
pub mod files;
#[doc(hidden)]
pub mod fuzzing;
pub mod git;
pub(crate) mod init;
pub(crate) mod machine;
pub(crate) mod notes;
pub(crate) mod notify;
pub mod paths;
pub mod plan;
pub(crate) mod platform;
pub(crate) mod project;
pub mod prompt;
mod protected;
pub(crate) mod redact;
pub(crate) mod report;
pub(crate) mod result;
pub(crate) mod retention;
pub(crate) mod retry;
pub mod roles;
pub(crate) mod run_lock;
pub(crate) mod runner;
pub(crate) mod state;
pub mod task;
pub(crate) mod text;
pub(crate) mod top;
pub(crate) mod trace;
pub(crate) mod view;

pub use error::Error;
pub use exit::{Exit, Reportable};

/// Runs the command line and returns the process exit code.
pub fn main() -> std::process::ExitCode {
    cli::main().into()
}
