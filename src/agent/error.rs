//! Errors of choosing, checking and starting an agent. A failed iteration is
//! not an error: it is an [`Outcome`](super::Outcome) with a failure class.

use std::path::PathBuf;

use super::classify::FailureClass;
use super::preset::Preset;
use crate::config::PRESETS;
use crate::exit::Exit;

/// What can stop ralph from running an agent at all.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Neither a preset nor a command is configured.
    #[error("no agent configured")]
    NoAgent,
    /// `agent.preset` or `--agent` names no known preset.
    #[error("unknown agent preset `{0}`")]
    UnknownPreset(String),
    /// A custom command line cannot be split into words.
    #[error("agent command `{command}` cannot be used: {reason}")]
    BadCommand {
        /// The command line as written.
        command: String,
        /// Why it cannot be used.
        reason: &'static str,
    },
    /// A model was asked of a preset that has no model option.
    #[error("agent `{preset}` cannot choose a model, but model `{model}` was asked for")]
    ModelUnsupported {
        /// The preset.
        preset: Preset,
        /// The model asked for.
        model: String,
    },
    /// A custom command's `{prompt}` argument would exceed the OS limit.
    #[error(
        "the prompt ({bytes} bytes) is too long for one command-line argument (the limit is {limit} bytes)"
    )]
    PromptTooLong {
        /// The prompt's size.
        bytes: usize,
        /// The longest argument the OS takes.
        limit: usize,
    },
    /// The agent's program is not installed, or its path names no file.
    #[error("{}", missing_message(*.preset, .program, .path.as_ref()))]
    MissingBinary {
        /// The preset, when one was chosen by name.
        preset: Option<Preset>,
        /// The program as written.
        program: String,
        /// The file looked at, when the program is a path.
        path: Option<PathBuf>,
    },
    /// The agent's program is a file without the execute bit.
    #[error("agent command {}: the file is there but not executable", .path.display())]
    NotExecutable {
        /// The file.
        path: PathBuf,
    },
    /// The operating system refused to start the agent.
    #[error("cannot start agent {agent} ({}): {source}", program.display())]
    Spawn {
        /// The agent's label.
        agent: String,
        /// The program that was executed.
        program: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// Writing the agent's log failed.
    #[error(transparent)]
    Log(#[from] crate::files::PathError),
    /// ralph cannot locate its own executable for `RALPH_BIN`.
    #[error("cannot locate ralph's own executable: {0}")]
    SelfPath(std::io::Error),
    /// The preflight check found the agent logged out.
    #[error("agent `{preset}` is not logged in: {detail}")]
    NotLoggedIn {
        /// The preset.
        preset: Preset,
        /// What the tool said.
        detail: String,
    },
    /// The worker contract asked for an `agent.mode` the agent's backend
    /// does not offer.
    #[error("agent.mode {mode} is not offered by {agent}, which offers {}", offered.join(", "))]
    ModeNotOffered {
        /// The mode asked for, by its name in the contract.
        mode: &'static str,
        /// The agent's label.
        agent: String,
        /// The modes it offers.
        offered: Vec<&'static str>,
    },
    /// `agent.deny` holds a pattern that is no regular expression.
    #[error("{reason}")]
    BadDeny {
        /// The pattern and what is wrong with it.
        reason: String,
    },
    /// The preflight check itself failed.
    #[error("agent `{preset}`: the login check failed: {detail}")]
    Preflight {
        /// The preset.
        preset: Preset,
        /// What went wrong.
        detail: String,
    },
}

fn missing_message(preset: Option<Preset>, program: &str, path: Option<&PathBuf>) -> String {
    let agent = match preset {
        Some(preset) => format!("agent `{preset}` not found"),
        None => "agent command not found".to_owned(),
    };
    match path {
        Some(path) => format!("{agent}: there is no file {}", path.display()),
        None => format!("{agent}: no `{program}` on PATH"),
    }
}

impl Error {
    /// The failure class an iteration that hit this error gets, if any.
    pub fn class(&self) -> Option<FailureClass> {
        match self {
            Error::MissingBinary { .. } | Error::NotExecutable { .. } => {
                Some(FailureClass::MissingBinary)
            }
            Error::NotLoggedIn { .. } => Some(FailureClass::Auth),
            _ => None,
        }
    }

    /// Makes the system's refusal to start `program`, for `agent`, an
    /// [`Error::Spawn`].
    pub(super) fn spawn(
        agent: String,
        program: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Error {
        let program = program.into();
        move |source| Error::Spawn {
            agent,
            program,
            source,
        }
    }
}

impl crate::exit::Reportable for Error {
    /// The exit code for this error: configuration problems are invalid
    /// input, the rest may pass on a later try.
    fn exit(&self) -> Exit {
        match self {
            Error::NoAgent
            | Error::UnknownPreset(_)
            | Error::BadCommand { .. }
            | Error::ModelUnsupported { .. }
            | Error::PromptTooLong { .. }
            | Error::ModeNotOffered { .. }
            | Error::BadDeny { .. }
            | Error::MissingBinary { .. }
            | Error::NotExecutable { .. } => Exit::InvalidInput,
            Error::Log(err) => err.exit(),
            Error::Spawn { .. }
            | Error::SelfPath(_)
            | Error::NotLoggedIn { .. }
            | Error::Preflight { .. } => Exit::Transient,
        }
    }

    /// What the person can do about it.
    fn hint(&self) -> Option<String> {
        const CHOOSE: &str = "set agent.preset or agent.command in config/ralph.yaml, or pass --agent or --agent-cmd";
        match self {
            Error::NoAgent => Some(CHOOSE.to_owned()),
            Error::UnknownPreset(_) => Some(format!(
                "use one of {}, or a command with --agent-cmd",
                PRESETS.join(", ")
            )),
            Error::BadCommand { .. } => Some(
                "the command is split like a shell would, without running one: quote arguments with spaces"
                    .to_owned(),
            ),
            Error::ModelUnsupported { .. } => Some(
                "remove agent.model (and the role's model), or spell out a command with agent.command"
                    .to_owned(),
            ),
            Error::PromptTooLong { .. } => Some(
                "write {prompt_file} instead of {prompt} in the agent command, or drop both to pass the prompt on stdin"
                    .to_owned(),
            ),
            Error::MissingBinary {
                preset: Some(preset),
                ..
            } => Some(format!(
                "{}, or choose another agent: {CHOOSE}",
                preset.install_hint()
            )),
            Error::NotExecutable { path } => Some(format!(
                "make it executable: chmod +x {}",
                crate::text::shell_quoted(&path.to_string_lossy())
            )),
            Error::MissingBinary { preset: None, .. } => Some(
                "fix agent.command in config/ralph.yaml or --agent-cmd (a relative path starts at the project folder)"
                    .to_owned(),
            ),
            Error::NotLoggedIn { preset, .. } => Some(preset.login_hint().to_owned()),
            Error::BadDeny { .. } => Some(
                "write each agent.deny entry as a regular expression (docs/AGENT.md)".to_owned(),
            ),
            Error::ModeNotOffered { .. } => Some(
                "set agent.mode to one it offers in the run input, or choose an agent that offers this mode (docs/AGENT.md lists each backend's modes)"
                    .to_owned(),
            ),
            Error::Spawn { .. }
            | Error::SelfPath(_)
            | Error::Preflight { .. } => None,
            Error::Log(err) => err.hint(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::Reportable;

    #[test]
    fn missing_binaries_say_what_to_install() {
        let err = Error::MissingBinary {
            preset: Some(Preset::Claude),
            program: "claude".to_owned(),
            path: None,
        };
        assert_eq!(
            err.to_string(),
            "agent `claude` not found: no `claude` on PATH"
        );
        assert_eq!(
            err.hint().unwrap(),
            "install Claude Code (npm i -g @anthropic-ai/claude-code), or choose another agent: set agent.preset or agent.command in config/ralph.yaml, or pass --agent or --agent-cmd"
        );
        assert_eq!(err.exit(), Exit::InvalidInput);
        assert_eq!(err.class(), Some(FailureClass::MissingBinary));

        let err = Error::MissingBinary {
            preset: None,
            program: "./bin/agent".to_owned(),
            path: Some(PathBuf::from("/p/bin/agent")),
        };
        assert_eq!(
            err.to_string(),
            "agent command not found: there is no file /p/bin/agent"
        );
    }

    #[test]
    fn login_and_start_failures_are_transient() {
        let err = Error::NotLoggedIn {
            preset: Preset::Codex,
            detail: "Not logged in".to_owned(),
        };
        assert_eq!(
            err.to_string(),
            "agent `codex` is not logged in: Not logged in"
        );
        assert_eq!(
            err.hint().unwrap(),
            "run `codex login`, or set OPENAI_API_KEY"
        );
        assert_eq!(err.exit(), Exit::Transient);
        assert_eq!(err.class(), Some(FailureClass::Auth));
        let err = Error::Preflight {
            preset: Preset::Codex,
            detail: "`codex login status` timed out after 30s".to_owned(),
        };
        assert_eq!(
            err.to_string(),
            "agent `codex`: the login check failed: `codex login status` timed out after 30s"
        );
        let err = Error::Spawn {
            agent: "`claude`".to_owned(),
            program: PathBuf::from("/bin/claude"),
            source: std::io::Error::from_raw_os_error(8),
        };
        assert_eq!(
            err.to_string(),
            "cannot start agent `claude` (/bin/claude): Exec format error (os error 8)"
        );
        assert_eq!(err.exit(), Exit::Transient);
    }

    #[test]
    fn configuration_mistakes_have_hints() {
        assert_eq!(
            Error::NoAgent.hint().unwrap(),
            "set agent.preset or agent.command in config/ralph.yaml, or pass --agent or --agent-cmd"
        );
        assert_eq!(
            Error::UnknownPreset("x".to_owned()).hint().unwrap(),
            "use one of claude, codex, codex-app-server, opencode, amp, gemini, qwen, aider, cursor, or a command with --agent-cmd"
        );
        let err = Error::BadCommand {
            command: "a 'b".to_owned(),
            reason: "a quote is not closed",
        };
        assert_eq!(
            err.hint().unwrap(),
            "the command is split like a shell would, without running one: quote arguments with spaces"
        );
        let err = Error::ModelUnsupported {
            preset: Preset::Amp,
            model: "m".to_owned(),
        };
        assert_eq!(
            err.hint().unwrap(),
            "remove agent.model (and the role's model), or spell out a command with agent.command"
        );
        assert_eq!(
            Error::SelfPath(std::io::Error::from_raw_os_error(2)).to_string(),
            "cannot locate ralph's own executable: No such file or directory (os error 2)"
        );
    }
}
