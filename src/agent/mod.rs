//! Running coding agents: presets and custom commands ([`Spec`]), the
//! process around one run ([`run`], [`preflight`]), supervised as every
//! child process is (`supervisor.rs`), and what its output means
//! ([`classify`], [`FailureClass`]). Only this module spawns agents.
//! See `docs/AGENT.md` for the presets, the environment and the rules.

mod appserver;
mod backend;
mod capture;
mod class;
mod classify;
mod env;
mod error;
mod login;
mod preset;
mod process;
mod reset;
mod rules;
mod shell;
mod spec;
mod supervisor;
mod transcript;

pub use appserver::{AppServer, PRESET as APP_SERVER, TESTED_VERSIONS};
pub use backend::{Backend, Cli, Mode, backend, fallbacks};
pub use capture::{EVIDENCE_BYTES, Echo, TRIMMED_MARKER};
pub use classify::{Failure, FailureClass, Status, classify, judge};
pub(crate) use env::kept_when_confined;
pub use env::{Context, Host, NESTED_SESSION_VARS};
pub use error::Error;
pub use preset::Preset;
pub use process::{Activity, Confinement, Outcome, Request, preflight, resolve, run};
pub use reset::reset_time;
pub use shell::{ShellRun, run_shell, run_shell_with};
pub use spec::{Invocation, MAX_ARG_BYTES, PromptPassing, Spec};
pub use supervisor::{Limits, kill_live_groups, stop_leftover_group};
pub use transcript::{Usage, usage};
