//! The seam between the loop and the agent: what the loop asks of an
//! agent for one iteration ([`Backend`]), whatever runs it. Today's one
//! implementation, [`Cli`], starts the agent's command-line program once
//! per iteration in a fresh process; a backend that keeps a long-lived
//! session (a JSON-RPC server) goes beside it, and the loop does not
//! change.

use std::path::Path;

use super::env::Host;
use super::error::Error;
use super::process::{self, Outcome, Request};
use super::spec::Spec;
use crate::config::AgentSettings;
pub use crate::config::Mode;

/// What the loop needs of an agent. One iteration is one call of
/// [`Backend::iterate`]; the loop knows nothing else of how it runs.
pub trait Backend: Send {
    /// The agent as messages name it: `` `claude` ``, `` command `./agent.sh` ``.
    fn label(&self) -> String;

    /// The model an iteration runs when its role names none.
    fn model(&self) -> Option<&str>;

    /// The modes it offers.
    fn modes(&self) -> &'static [Mode];

    /// What a person does when the agent is not logged in.
    fn login_hint(&self) -> &'static str;

    /// Checks, once before a run, that the agent can work at all.
    fn preflight(&self) -> Result<(), Error>;

    /// Checks that an iteration can run `model` (a role's).
    fn check_model(&self, model: &str) -> Result<(), Error>;

    /// The command line an iteration with `prompt` (saved at
    /// `prompt_file`) and the role's `model` would start, for `--dry-run`.
    fn command_line(
        &self,
        prompt_file: &Path,
        prompt: &str,
        model: Option<&str>,
    ) -> Result<Vec<String>, Error>;

    /// Runs one iteration: `request.prompt` as the agent's input, in
    /// `request.work_dir` with ralph's environment, within
    /// `request.limits`, stopped when `request.cancel` is set; every
    /// process it started is gone when it returns. An error means the
    /// agent could not be started at all.
    fn iterate(&mut self, request: &Request<'_>) -> Result<Outcome, Error>;

    /// Refuses `mode` when this backend does not offer it, with the
    /// modes it does.
    fn check_mode(&self, mode: Mode) -> Result<(), Error> {
        if self.modes().contains(&mode) {
            return Ok(());
        }
        Err(Error::ModeNotOffered {
            mode: mode.as_str(),
            agent: self.label(),
            offered: self.modes().iter().map(|mode| mode.as_str()).collect(),
        })
    }
}

/// The backend the settings choose: the Codex app-server for its preset
/// (`--agent-cmd` or `agent.command` then name the server's command), else
/// `--agent-cmd`, `agent.command` or a preset, run as a command-line
/// program per iteration.
pub fn backend(
    settings: &AgentSettings,
    agent_cmd: Option<&str>,
    host: Host,
) -> Result<Box<dyn Backend>, Error> {
    if super::appserver::chosen(settings) {
        return Ok(Box::new(super::appserver::AppServer::new(
            settings, agent_cmd, host,
        )?));
    }
    Ok(Box::new(Cli::new(settings, agent_cmd, host)?))
}

/// The agents of `agent.fallback`, in order: an entry naming a preset is
/// that preset, any other a command line, with the first one's other
/// settings. `--agent-cmd` replaces the first agent only.
pub fn fallbacks(settings: &AgentSettings, host: &Host) -> Result<Vec<Box<dyn Backend>>, Error> {
    let mut agents = Vec::new();
    for entry in &settings.fallback {
        let preset = crate::config::PRESETS.contains(&entry.as_str());
        let settings = AgentSettings {
            preset: preset.then(|| entry.clone()),
            command: (!preset).then(|| entry.clone()),
            model: None,
            fallback: Vec::new(),
            ..settings.clone()
        };
        agents.push(backend(&settings, None, host.clone())?);
    }
    Ok(agents)
}

/// The agent's command-line program, started once per iteration in a
/// process group of its own.
pub struct Cli {
    settings: AgentSettings,
    agent_cmd: Option<String>,
    host: Host,
    /// The command as the settings give it (no role's model).
    spec: Spec,
}

impl Cli {
    /// The program the settings name, on `host`.
    pub fn new(
        settings: &AgentSettings,
        agent_cmd: Option<&str>,
        host: Host,
    ) -> Result<Cli, Error> {
        Ok(Cli {
            spec: Spec::new(settings, agent_cmd, None)?,
            settings: settings.clone(),
            agent_cmd: agent_cmd.map(str::to_owned),
            host,
        })
    }

    /// The command an iteration with the role's `model` runs.
    fn spec_for(&self, model: Option<&str>) -> Result<Spec, Error> {
        match model {
            None => Ok(self.spec.clone()),
            Some(model) => Spec::new(&self.settings, self.agent_cmd.as_deref(), Some(model)),
        }
    }
}

impl Backend for Cli {
    fn label(&self) -> String {
        self.spec.label()
    }

    fn model(&self) -> Option<&str> {
        self.spec.model()
    }

    fn modes(&self) -> &'static [Mode] {
        &[Mode::RalphFresh]
    }

    fn login_hint(&self) -> &'static str {
        self.spec
            .dialect()
            .map_or("log the agent in", |preset| preset.login_hint())
    }

    fn preflight(&self) -> Result<(), Error> {
        process::preflight(&self.spec, &self.host)
    }

    fn check_model(&self, model: &str) -> Result<(), Error> {
        self.spec_for(Some(model)).map(drop)
    }

    fn command_line(
        &self,
        prompt_file: &Path,
        prompt: &str,
        model: Option<&str>,
    ) -> Result<Vec<String>, Error> {
        let invocation = self.spec_for(model)?.invocation(prompt_file, prompt)?;
        let mut argv = vec![invocation.program.clone()];
        argv.extend(
            invocation
                .args
                .iter()
                .map(|a| a.to_string_lossy().into_owned()),
        );
        Ok(argv)
    }

    fn iterate(&mut self, request: &Request<'_>) -> Result<Outcome, Error> {
        let spec = self.spec_for(request.model)?;
        process::run(&spec, &self.host, request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_are_named_as_the_contract_names_them() {
        for mode in Mode::ALL {
            assert_eq!(Mode::named(mode.as_str()), Some(mode));
            assert_eq!(serde_json::to_string(&mode).unwrap(), format!("\"{mode}\""));
        }
        assert_eq!(Mode::named("session"), None);
    }

    #[test]
    fn the_command_line_backend_offers_fresh_iterations_only() {
        let host = Host {
            env: Vec::new(),
            project_dir: std::path::PathBuf::from("/tmp"),
            ralph_bin: std::path::PathBuf::from("/usr/bin/ralph"),
            is_root: false,
        };
        let settings = AgentSettings {
            command: Some("./agent.sh".to_owned()),
            ..AgentSettings::default()
        };
        let cli = Cli::new(&settings, None, host).unwrap();
        assert!(cli.check_mode(Mode::RalphFresh).is_ok());
        assert_eq!(
            cli.check_mode(Mode::SessionLoop).unwrap_err().to_string(),
            "agent.mode session_loop is not offered by command `./agent.sh`, which offers ralph_fresh"
        );
    }
}
