//! ralph: runs coding agents in a durable, file-based loop.
//!
//! The binary's `main` calls [`main`]; everything else lives here so tests
//! can reach it. See `docs/ARCHITECTURE.md` for how the modules fit.

pub mod agent;
pub mod bench_data;
pub mod cli;
pub mod clock;
pub mod config;
pub mod contract;
pub mod critique;
pub mod delivery;
pub mod demo;
pub mod detect;
pub mod doctor;
pub mod error;
pub mod events;
pub mod exit;
pub mod fault;
pub mod files;
#[doc(hidden)]
pub mod fuzzing;
pub mod git;
pub mod init;
pub mod paths;
pub mod plan;
pub mod platform;
pub mod project;
pub mod prompt;
pub mod redact;
pub mod roles;
pub mod runner;
pub mod state;
pub mod task;
pub mod text;
pub mod trace;

pub use error::Error;
pub use exit::{Exit, Reportable};

/// Runs the command line and returns the process exit code.
pub fn main() -> std::process::ExitCode {
    cli::main().into()
}
