//! `ralph doctor`: for one project, what `ralph run` would do and what
//! stops it, as a list of findings (ok, warning, error), each with the fix.
//! Every check runs even when an earlier one failed (a broken settings file
//! still lets git and the queue be checked), and each reuses the check the
//! loop itself makes. Nothing is written: no state, no event, no lock a
//! live run could wait on (the only trace is the unreferenced commit object
//! of the signing check with `commit.gpgsign`, as a run's preflight
//! leaves).

mod agent;
mod checks;
mod delivery;
mod git;
mod queue;

use crate::exit::Reportable;
use std::sync::atomic::AtomicBool;

use serde::Serialize;

use crate::config::{Settings, env_vars};
use crate::paths::{Paths, SETTINGS_FILE, STOP_FILE};
use crate::runner::RunOptions;
use crate::state::StateFile;

/// How many ids or paths a finding names before it says "and N more".
const NAMED: usize = 5;

/// How a finding stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, strum::IntoStaticStr)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub(crate) enum Level {
    /// As it should be; said for the record.
    Ok,
    /// Works, but probably not as meant.
    Warning,
    /// `ralph run` would refuse, or fail: a person must fix it.
    Error,
}

impl Level {
    /// The word that starts the finding's line.
    pub(crate) fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One thing the doctor found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Finding {
    /// What was checked: `run`, `settings`, `git`, `hooks`, `signing`,
    /// `queue`, `triggers`, `agent`, `next`, `checks`, `delivery`, `push`.
    pub check: &'static str,
    /// How it stands.
    pub level: Level,
    /// What was found, on one line.
    pub message: String,
    /// What to do about it, for a warning or an error.
    pub fix: Option<String>,
}

/// What the doctor is asked, read from the command line and the
/// environment at the edge.
#[derive(Clone, Debug, Default)]
pub(crate) struct Request {
    /// Run `verify.task` and `verify.run` now.
    pub run_checks: bool,
    /// `--agent`: the preset to check instead of the configured agent.
    pub agent: Option<String>,
    /// `--agent-cmd`: the custom command to check instead.
    pub agent_cmd: Option<String>,
    /// The `RALPH_*` variables of the environment that override settings.
    pub env: Vec<(String, String)>,
}

/// Examines the project at `paths`; `interrupted` stops a check command
/// `--run-checks` runs.
pub(crate) fn examine(paths: &Paths, request: &Request, interrupted: &AtomicBool) -> Vec<Finding> {
    let mut found = Findings::default();
    let live = run(&mut found, paths);
    let settings = settings(&mut found, paths, request);
    let settings_ok = settings.is_ok();
    let settings = settings.unwrap_or_default();
    let state = StateFile::open(paths).peek();
    let repo = git::git(&mut found, paths, &settings, &state, live);
    if let Some(repo) = &repo {
        git::hooks(&mut found, repo);
        git::signing(&mut found, repo);
    }
    let queue = queue::queue(&mut found, paths, !settings.watch.prds.is_empty());
    let triggers_ok = queue::triggers(&mut found, paths, &settings);
    let options = RunOptions {
        settings,
        agent_cmd: request.agent_cmd.clone(),
        once: false,
        stream: false,
        quiet: true,
        kill_grace: crate::agent::Limits::DEFAULT_GRACE,
        pr_branch: None,
        poll: None,
        sandbox: crate::runner::confine::Sandbox::Off,
    };
    let agent_ok = agent::agent(&mut found, paths, &options);
    agent::sandbox(&mut found, &options.settings);
    agent::caps(&mut found, &options);
    let mut has_task = false;
    if settings_ok && triggers_ok && agent_ok && queue.is_some() {
        has_task = queue::next(&mut found, paths, &options);
    }
    checks::checks(
        &mut found,
        paths,
        &options.settings,
        request.run_checks,
        interrupted,
    );
    delivery::delivery(&mut found, paths, &options, repo.as_ref(), has_task);
    delivery::watch(&mut found, paths, &options.settings, repo.as_ref());
    delivery::shared(&mut found, &options.settings, repo.as_ref());
    found.list
}

/// Whether any finding is an error: `ralph doctor` then exits 10.
pub(crate) fn has_error(findings: &[Finding]) -> bool {
    findings.iter().any(|f| f.level == Level::Error)
}

/// The findings so far.
#[derive(Default)]
struct Findings {
    list: Vec<Finding>,
}

impl Findings {
    fn add(&mut self, check: &'static str, level: Level, message: &str, fix: Option<&str>) {
        self.list.push(Finding {
            check,
            level,
            message: one_line(message),
            fix: fix.map(one_line),
        });
    }

    fn ok(&mut self, check: &'static str, message: &str) {
        self.add(check, Level::Ok, message, None);
    }

    fn warning(&mut self, check: &'static str, message: &str, fix: &str) {
        self.add(check, Level::Warning, message, Some(fix));
    }

    fn error(&mut self, check: &'static str, message: &str, fix: &str) {
        self.add(check, Level::Error, message, Some(fix));
    }

    /// An error a check of the loop's returned: its message and its hint.
    fn failed(&mut self, check: &'static str, err: impl Into<crate::Error>) {
        let err = err.into();
        let hint = err.hint();
        self.add(check, Level::Error, &err.to_string(), hint.as_deref());
    }

    /// The value `result` holds, or `None` with its error recorded as
    /// [`Findings::failed`] does.
    fn check<T, E: Into<crate::Error>>(
        &mut self,
        check: &'static str,
        result: Result<T, E>,
    ) -> Option<T> {
        result.map_err(|err| self.failed(check, err)).ok()
    }
}

/// Text on one line: each line trimmed, empty ones dropped, joined by ` / `
/// (what git or a hook printed may span several).
fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" / ")
}

/// Whether a run is live (as `ralph status` tells, without disturbing
/// it), and `.stop`.
fn run(found: &mut Findings, paths: &Paths) -> bool {
    let holder = crate::run_lock::live_holder(paths)
        .map_err(|source| crate::files::PathError::new(paths.run_lock(), source));
    let holder = found.check("run", holder).flatten();
    let stop = paths.join(STOP_FILE).exists();
    match &holder {
        Some(holder) => {
            found.ok(
                "run",
                &format!(
                    "a run is live (pid {}, since {}); the doctor changes nothing, and leaves the working tree's checks out while the run works in it",
                    holder.pid, holder.since
                ),
            );
            if stop {
                found.ok(
                    "run",
                    &format!("{STOP_FILE} exists: the live run stops after its current iteration"),
                );
            }
        }
        None => {
            found.ok("run", "none live");
            if stop {
                found.warning(
                    "run",
                    &format!("{STOP_FILE} exists, so the next `ralph run` removes it and stops before its first iteration"),
                    &format!("remove it (`rm {STOP_FILE}`) unless a run should stop"),
                );
            }
        }
    }
    holder.is_some()
}

/// The settings as `ralph run` builds them: the file, then the
/// environment, then the agent flags. The defaults when they do not load.
fn settings(
    found: &mut Findings,
    paths: &Paths,
    request: &Request,
) -> Result<Settings, crate::Error> {
    let loaded = Settings::load(paths).and_then(|mut settings| {
        settings
            .apply_env(|name| {
                request
                    .env
                    .iter()
                    .find(|(key, _)| key == name)
                    .map(|(_, value)| value.clone())
            })
            .map(|()| settings)
    });
    let mut settings = match loaded {
        Ok(settings) => settings,
        Err(err) => {
            let err = crate::Error::from(err);
            let hint = err.hint();
            found.add(
                "settings",
                Level::Error,
                &format!("{err} (the checks below assume the defaults)"),
                hint.as_deref(),
            );
            return Err(err);
        }
    };
    if let Some(preset) = &request.agent {
        settings.agent.preset = Some(preset.clone());
        settings.agent.command = None;
    }
    let mut message = if paths.settings().exists() {
        format!("{SETTINGS_FILE} is valid")
    } else {
        format!("no {SETTINGS_FILE}, so the defaults (`ralph init` writes one)")
    };
    let from_env: Vec<&str> = env_vars()
        .filter(|name| request.env.iter().any(|(key, _)| key == name))
        .collect();
    if !from_env.is_empty() {
        message.push_str(&format!("; {} from the environment", from_env.join(", ")));
    }
    found.ok("settings", &message);
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_are_one_line_each() {
        assert_eq!(
            one_line(
                "error: Load key \"k\": no such file\n\nfatal: failed to write commit object\n"
            ),
            "error: Load key \"k\": no such file / fatal: failed to write commit object"
        );
    }

    #[test]
    fn long_lists_name_five_and_count_the_rest() {
        let ids: Vec<String> = ["A", "B", "C", "D", "E", "F", "G"]
            .iter()
            .map(|id| (*id).to_owned())
            .collect();
        assert_eq!(crate::text::named(&ids[..2], NAMED), "A, B");
        assert_eq!(crate::text::named(&ids, NAMED), "A, B, C, D, E and 2 more");
    }

    #[test]
    fn durations_read_like_the_run_summary() {
        assert_eq!(checks::took(std::time::Duration::from_millis(420)), "0.4s");
        assert_eq!(checks::took(std::time::Duration::from_secs(185)), "3m05s");
    }

    #[test]
    fn an_error_finding_is_what_makes_the_doctor_fail() {
        let finding = |level| Finding {
            check: "git",
            level,
            message: String::new(),
            fix: None,
        };
        assert!(!has_error(&[finding(Level::Ok), finding(Level::Warning)]));
        assert!(has_error(&[finding(Level::Ok), finding(Level::Error)]));
    }
}
