//! The agent a run would start.

use super::Findings;
use crate::agent::{self, Host, Preset, Spec};
use crate::paths::Paths;
use crate::runner::RunOptions;

/// The agent a run would start: its command, its program found as the run
/// finds it, and for codex its login (`codex login status`, the one tool
/// with an offline status command ralph trusts). Whether it was found.
pub(super) fn agent(found: &mut Findings, paths: &Paths, options: &RunOptions) -> bool {
    if options.settings.agent.preset.as_deref() == Some(agent::APP_SERVER) {
        return app_server(found, paths, options);
    }
    let Some(spec) = found.check(
        "agent",
        Spec::new(&options.settings.agent, options.agent_cmd.as_deref(), None),
    ) else {
        return false;
    };
    let Some(host) = found.check("agent", Host::from_process(paths.project())) else {
        return false;
    };
    let Some(program) = found.check("agent", agent::resolve(&spec, &host)) else {
        return false;
    };
    if found
        .check("agent", agent::preflight(&spec, &host))
        .is_none()
    {
        return false;
    }
    let login = match (spec.dialect(), spec.named_preset()) {
        (Some(Preset::Codex), _) => "`codex login status` says it is logged in".to_owned(),
        (_, Some(preset)) => format!(
            "{preset} has no offline login check, so a login it lacks shows at the first iteration, which then stops the run (exit 20)"
        ),
        (_, None) => "a login it needs shows at the first iteration".to_owned(),
    };
    found.ok(
        "agent",
        &format!("{} found at {}; {login}", spec.label(), program.display()),
    );
    true
}

/// The Codex app-server backend: its program, its version against the
/// versions ralph was tested with, and codex's login.
fn app_server(found: &mut Findings, paths: &Paths, options: &RunOptions) -> bool {
    let backend = Host::from_process(paths.project()).and_then(|host| {
        agent::AppServer::new(&options.settings.agent, options.agent_cmd.as_deref(), host)
    });
    let Some(backend) = found.check("agent", backend) else {
        return false;
    };
    if found
        .check("agent", agent::Backend::preflight(&backend))
        .is_none()
    {
        return false;
    }
    let label = agent::Backend::label(&backend);
    match backend.version() {
        Some((version, true)) => found.ok(
            "agent",
            &format!("{label}: codex {version}, a version ralph was tested with; `codex login status` says it is logged in"),
        ),
        Some((version, false)) => found.warning(
            "agent",
            &format!("{label}: codex {version}; ralph was tested with codex {}.x, and the app-server protocol moves fast", agent::TESTED_VERSIONS),
            &format!("install the tested version (`npm install -g @openai/codex@{}`), or run and watch the first iterations' transcripts", agent::TESTED_VERSIONS),
        ),
        None => found.ok(
            "agent",
            &format!("{label}: a server command of the settings; its version and login show at the first iteration"),
        ),
    }
    true
}

/// The spending caps, when any is set: whether the agent reports what
/// they count (a cap on what it does not report never applies).
pub(super) fn caps(found: &mut Findings, options: &RunOptions) {
    let settings = &options.settings;
    let on_cost = [
        ("max_task_cost_usd", settings.max_task_cost_usd.is_some()),
        ("max_run_cost_usd", settings.max_run_cost_usd.is_some()),
    ];
    let on_tokens = [
        ("max_task_tokens", settings.max_task_tokens.is_some()),
        ("max_run_tokens", settings.max_run_tokens.is_some()),
    ];
    let set = |caps: &[(&'static str, bool)]| -> Vec<&'static str> {
        caps.iter()
            .filter(|(_, on)| *on)
            .map(|(name, _)| *name)
            .collect()
    };
    let (cost_caps, token_caps) = (set(&on_cost), set(&on_tokens));
    if cost_caps.is_empty() && token_caps.is_empty() {
        return;
    }
    let (label, reports) = if settings.agent.preset.as_deref() == Some(agent::APP_SERVER)
        && settings.agent.command.is_none()
        && options.agent_cmd.is_none()
    {
        (agent::APP_SERVER.to_owned(), Some((false, true)))
    } else {
        match Spec::new(&settings.agent, options.agent_cmd.as_deref(), None) {
            Ok(spec) => (spec.label(), spec.dialect().map(Preset::reports)),
            Err(_) => return,
        }
    };
    let Some((cost, tokens)) = reports else {
        found.warning(
            "caps",
            &format!(
                "{} set, but whether {label} reports its cost or tokens shows only in its output: a cap on what it does not report never applies",
                cost_caps.iter().chain(&token_caps).copied().collect::<Vec<_>>().join(", ")
            ),
            "have the command print a JSON line with `total_cost_usd` and `usage` (`input_tokens`, `output_tokens`), as Claude Code does (docs/LOOP.md, Spending caps), or use a preset",
        );
        return;
    };
    let mut unreported: Vec<&str> = Vec::new();
    if !cost {
        unreported.extend(&cost_caps);
    }
    if !tokens {
        unreported.extend(&token_caps);
    }
    if unreported.is_empty() {
        let all: Vec<&str> = cost_caps.iter().chain(&token_caps).copied().collect();
        found.ok(
            "caps",
            &format!("{} counted from what {label} reports", all.join(", ")),
        );
    } else {
        found.warning(
            "caps",
            &format!(
                "{} set, but {label} reports no {}: {} never applies",
                unreported.join(", "),
                if cost { "tokens" } else { "cost" },
                if unreported.len() == 1 { "it" } else { "they" },
            ),
            if cost {
                "cap its cost instead (max_task_cost_usd, max_run_cost_usd)"
            } else {
                "cap its tokens instead (max_task_tokens, max_run_tokens)"
            },
        );
    }
}

/// Whether agents run confined here: the tool, its version and a trial
/// confinement, as `ralph run` decides at its start.
pub(super) fn sandbox(found: &mut Findings, settings: &crate::config::Settings) {
    use crate::runner::confine::{Sandbox, decide_here};
    match decide_here(&settings.sandbox) {
        Ok(Sandbox::On(jail)) if !jail.weaker().is_empty() => found.warning(
            "sandbox",
            &format!(
                "agents run confined: {}; a trial confinement worked here, weaker than docs/SECURITY.md says: {}",
                jail.version,
                jail.weaker().join("; ")
            ),
            "run ralph where the system allows a private process space (a container started with --privileged, or a plain machine)",
        ),
        Ok(Sandbox::On(jail)) => found.ok(
            "sandbox",
            &format!(
                "agents run confined: {}; a trial confinement worked here",
                jail.version
            ),
        ),
        Ok(Sandbox::Off) => found.ok(
            "sandbox",
            "sandbox.mode is off: agents run unconfined, as you set",
        ),
        Ok(Sandbox::Unavailable(why)) => found.warning(
            "sandbox",
            &format!("agents run unconfined: {why}"),
            "install bubblewrap where the system allows it, or set sandbox.mode: off in config/ralph.yaml to say you mean it (docs/AGENT.md)",
        ),
        Err(err) => found.failed("sandbox", err),
    }
}
