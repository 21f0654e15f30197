//! Every setting, declared once: its path in `config/ralph.yaml`, its
//! environment variable and `ralph run` flag, what it holds, its default
//! and what it is for. The environment overrides, the defaults in
//! `ralph run --help` and the manual's table are made from [`KEYS`];
//! tests hold the `Settings` structs, the shipped `config/ralph.yaml` and
//! docs/CONFIG.md to it. A new setting is a field of `Settings` (its value
//! in `Default`) and a row here; those tests then name the key to write
//! into `config/ralph.yaml` and print the manual's new table.

use std::time::Duration;

use serde::de::{DeserializeOwned, IntoDeserializer, value::Error as ValueError};

use super::check_workers;
use super::parse_labels;
use super::{Delivery, Mode, PRESETS, Push, ReportWhen, SandboxMode, ServerSandbox, Settings};
use super::{parse_duration, parse_minutes, parse_time_limit};

/// One setting.
#[derive(Debug)]
pub(crate) struct Key {
    /// Its dotted path in the file, like `agent.timeout`.
    pub path: &'static str,
    /// The environment variable that overrides the file, if any.
    pub env: Option<&'static str>,
    /// The `ralph run` flag that overrides both, if any.
    pub flag: Option<&'static str>,
    /// What it holds, as the manual says it (the manual's table is made,
    /// and checked, by this module's tests).
    #[cfg_attr(not(test), allow(dead_code))]
    pub holds: &'static str,
    /// Its default, as the file writes it.
    pub default: &'static str,
    /// What it is for, in one line.
    pub doc: &'static str,
    /// Sets it from its environment variable's text.
    pub(super) set: fn(&mut Settings, &str) -> Result<(), String>,
}

/// What a key holds: its name in the manual, and how its environment
/// variable is read (the file is read by serde, into the field's type).
struct Type<T>(&'static str, fn(&str) -> Result<T, String>);

const COUNT: Type<u64> = Type("whole number", count);
const WORKERS: Type<Option<u64>> = Type("whole number, or null", |text| {
    check_workers(count(text)?).map(Some)
});
const MINUTES: Type<Option<u64>> = Type("minutes, or null", |text| or_null(text, parse_minutes));
const DURATION: Type<Duration> = Type("duration", parse_duration);
const TIME_LIMIT: Type<Duration> = Type("duration above 0", parse_time_limit);
const TEXT: Type<Option<String>> = Type("text, or null", |text| {
    Ok((!text.is_empty()).then(|| text.to_owned()))
});
const STRING: Type<String> = Type("text", |text| Ok(text.to_owned()));
const PRESET: Type<Option<String>> = Type("preset", |text| match PRESETS.contains(&text) {
    true => Ok(Some(text.to_owned())),
    false => Err(format!(
        "unknown preset {text:?}; use one of {}",
        PRESETS.join(", ")
    )),
});
const SWITCH: Type<bool> = Type("true or false", |text| match text.trim() {
    "true" => Ok(true),
    "false" | "" => Ok(false),
    _ => Err(format!("{text:?} is not true or false")),
});
const PUSH: Type<Push> = Type("never, on_merge or on_exit", |text| {
    choice(text, "push setting", PUSH.0)
});
const REPORT: Type<ReportWhen> = Type("never or on_exit", |text| {
    choice(text, "report setting", REPORT.0)
});
const DELIVERY: Type<Delivery> = Type("local or pr", |text| choice(text, "delivery", DELIVERY.0));
/// Lists are written in the file only: no key of this type has a variable.
const LIST: Type<Vec<String>> = Type("list of commands", |_| Err(String::new()));
/// The same, of regular expressions.
const PATTERNS: Type<Vec<String>> = Type("list of patterns", |_| Err(String::new()));
const MODE: Type<Mode> = Type("ralph_fresh, session_loop or single_pass", |text| {
    choice(text, "mode", MODE.0)
});
/// Glob patterns, written in the file only.
const GLOBS: Type<Vec<String>> = Type("list of glob patterns", |_| Err(String::new()));
/// Kinds of events, written in the file only.
const KINDS: Type<Vec<super::NotifyKind>> = Type("list of event kinds", |_| Err(String::new()));
const DOLLARS: Type<Option<f64>> = Type("US dollars, or null", |text| {
    or_null(text, |text| {
        super::check_cap(
            text.parse()
                .map_err(|_| format!("{text:?} is not a number"))?,
        )
    })
});
const TOKENS: Type<Option<u64>> = Type("whole number, or null", |text| or_null(text, count));
/// Label names; the variable takes them comma-separated.
const LABELS: Type<Vec<String>> = Type("list of labels", parse_labels);
const SANDBOX: Type<ServerSandbox> = Type("workspace-write or danger-full-access", |text| {
    choice(text, "server sandbox", SANDBOX.0)
});

const CONFINE: Type<SandboxMode> = Type("auto, on or off", |text| {
    choice(text, "sandbox mode", CONFINE.0)
});
/// Paths, written in the file only.
const PATHS: Type<Vec<String>> = Type("list of paths", |_| Err(String::new()));
/// Names of environment variables, written in the file only.
const NAMES: Type<Vec<String>> = Type("list of variable names", |_| Err(String::new()));

/// `null` (or nothing) is none; any other text is `parse`d.
fn or_null<T>(text: &str, parse: impl Fn(&str) -> Result<T, String>) -> Result<Option<T>, String> {
    match text.trim() {
        "" | "null" => Ok(None),
        text => parse(text).map(Some),
    }
}

/// A whole number, from an environment variable.
fn count(text: &str) -> Result<u64, String> {
    (text.trim().parse()).map_err(|_| format!("{text:?} is not a whole number"))
}

/// One of an enum's values, by the name the file uses for it.
fn choice<T: DeserializeOwned>(text: &str, what: &str, names: &str) -> Result<T, String> {
    let text = text.trim();
    T::deserialize(text.into_deserializer())
        .map_err(|_: ValueError| format!("{text:?} is not a {what}; use {names}"))
}

/// Rows of `path: TYPE = "default", VARIABLE or -, "--flag" or -, "doc";`.
macro_rules! keys {
    (@some -) => { None };
    (@some $name:ident) => { Some(stringify!($name)) };
    (@some $flag:literal) => { Some($flag) };
    ($($($part:ident).+: $type:ident = $default:literal, $env:tt, $flag:tt, $doc:literal;)*) => {
        &[$(Key {
            path: stringify!($($part).+),
            env: keys!(@some $env),
            flag: keys!(@some $flag),
            holds: $type.0,
            default: $default,
            doc: $doc,
            set: |settings, text| {
                settings.$($part).+ = ($type.1)(text)?;
                Ok(())
            },
        }),*]
    };
}

/// Every setting, in the order of the `Settings` fields.
pub(crate) const KEYS: &[Key] = keys! {
    agent.preset: PRESET = "claude", RALPH_AGENT_PRESET, "--agent",
        "The agent that runs, one of the presets; agent.command replaces it";
    agent.command: TEXT = "null", RALPH_AGENT_COMMAND, "--agent-cmd",
        "Your own agent command line, split like a shell, with `{prompt_file}` or `{prompt}` replaced (neither: the prompt goes to stdin); null: the preset";
    agent.model: TEXT = "null", RALPH_AGENT_MODEL, "--model",
        "The model, passed with the preset's own flag; null: the agent's own default";
    agent.timeout: TIME_LIMIT = "20m", RALPH_AGENT_TIMEOUT, "--timeout",
        "Longest an iteration may run before the agent is stopped and the iteration fails";
    agent.mode: MODE = "ralph_fresh", RALPH_AGENT_MODE, -,
        "How the agent carries a task across iterations: ralph_fresh (a fresh context each time) or, with codex-app-server, session_loop (one thread per task)";
    agent.deny: PATTERNS = "[]", -, -,
        "Command patterns (regular expressions) codex-app-server's agent is never allowed to run, beside ralph's own checks (a push, a command outside the checkout, rm -rf /, a download piped into an interpreter)";
    agent.server_sandbox: SANDBOX = "workspace-write", RALPH_AGENT_SERVER_SANDBOX, -,
        "Where codex-app-server lets the agent's commands write: workspace-write (the checkout, the queue and .ralph/; ralph commits) or danger-full-access";
    agent.fallback: LIST = "[]", -, -,
        "Agents that take over, in order, while the one before waits out its usage limit (presets like codex, or command lines); the first comes back once its limit resets; empty: the run waits";
    workers: WORKERS = "null", RALPH_WORKERS, "--workers",
        "Agents working side by side (1 to 64), each on its own task in its own git worktree; null: one agent in the project's checkout";
    max_iterations: COUNT = "50", RALPH_MAX_ITERATIONS, "--max-iterations",
        "Most iterations in one `ralph run`";
    max_run_minutes: MINUTES = "null", RALPH_MAX_RUN_MINUTES, "--max-run-minutes",
        "Most wall-clock minutes in one `ralph run`, which stops after the iteration that reaches them; null: no limit";
    max_iterations_per_task: COUNT = "20", RALPH_MAX_ITERATIONS_PER_TASK, -,
        "Most iterations one task may take, across runs, before it is blocked";
    max_task_minutes: MINUTES = "null", RALPH_MAX_TASK_MINUTES, "--max-task-minutes",
        "Most wall-clock minutes one task's iterations may take, across runs, before it is blocked; null: no limit";
    max_consecutive_failures: COUNT = "3", RALPH_MAX_CONSECUTIVE_FAILURES, -,
        "Failed iterations in a row on one task before it is blocked";
    no_progress_iterations: COUNT = "3", RALPH_NO_PROGRESS_ITERATIONS, -,
        "Iterations in a row without a commit or file change before that counts as a failure";
    retry_backoff: DURATION = "10s", RALPH_RETRY_BACKOFF, -,
        "Wait after a failed iteration; doubles after each failure, capped at 10x";
    usage_limit_max_wait: DURATION = "30m", RALPH_USAGE_LIMIT_MAX_WAIT, -,
        "Longest wait for a usage limit whose reset the agent does not say: retry_backoff, doubling up to this";
    pause_between_iterations: DURATION = "2s", RALPH_PAUSE_BETWEEN_ITERATIONS, -,
        "Wait between two iterations";
    poll_interval: DURATION = "30s", RALPH_POLL_INTERVAL, "--poll",
        "With `ralph run --poll`, how long an idle run waits before it looks at the queue again (no agent runs meanwhile)";
    base_branch: TEXT = "null", RALPH_BASE_BRANCH, -,
        "Branch tasks start from and merge into; null: the branch checked out when the run starts";
    branch_prefix: STRING = "task/", RALPH_BRANCH_PREFIX, -,
        "Prefix of task branch names, as in `task/<id>-<slug>`";
    verify.task: LIST = "[]", -, -,
        "Commands that must pass before a task is merged (`sh -c`, in the project), before the task's own `verify`";
    verify.run: LIST = "[]", -, -,
        "Commands run once when the queue drains; the result is in `.ralph/result.json`";
    git.push: PUSH = "never", RALPH_GIT_PUSH, -,
        "When the base is pushed, through your own git and never forced: never, on_merge (after each squash commit) or on_exit (when the run ends)";
    git.remote: TEXT = "null", RALPH_GIT_REMOTE, -,
        "The remote pushed to when the base has no upstream; null: origin";
    git.ssh_key: TEXT = "null", RALPH_GIT_SSH_KEY, -,
        "A private key (a deploy key) ralph's own pushes use, through GIT_SSH_COMMAND, which it then overrides, as is core.sshCommand; `~/` and paths from the project allowed; null: your own ssh setup";
    delivery: DELIVERY = "local", RALPH_DELIVERY, -,
        "Where the work goes: local (squash commits on the base) or pr (on a branch `ralph/<name>`, pushed, and a pull request with gh)";
    final_review: SWITCH = "false", RALPH_FINAL_REVIEW, "--final-review",
        "When the queue drains, one final-reviewer task over the run's work, which passes it or adds follow-up tasks";
    delivery_labels: LABELS = "[]", RALPH_DELIVERY_LABELS, -,
        "Labels the pull request gets with delivery: pr (`--label`, `--add-label` on an update); they must exist in the repository. The variable takes them comma-separated";
    max_task_cost_usd: DOLLARS = "null", RALPH_MAX_TASK_COST_USD, -,
        "Most a task's iterations may cost, across runs, as the agent reports it, before the task is blocked; null: no cap";
    max_run_cost_usd: DOLLARS = "null", RALPH_MAX_RUN_COST_USD, -,
        "Most one run may cost, as the agent reports it, before it takes no more work (a polling run waits for a raised cap); null: no cap";
    max_task_tokens: TOKENS = "null", RALPH_MAX_TASK_TOKENS, -,
        "Most tokens (input and output) a task's iterations may take, across runs, before the task is blocked; null: no cap";
    max_run_tokens: TOKENS = "null", RALPH_MAX_RUN_TOKENS, -,
        "Most tokens (input and output) one run may take before it takes no more work; null: no cap";
    notify.command: TEXT = "null", RALPH_NOTIFY_COMMAND, -,
        "Run with `sh -c` in the project for each event worth a person's attention, the event as one JSON object on stdin and its kind in `RALPH_EVENT` (docs/NOTIFY.md); null: nobody is told";
    notify.on: KINDS = "[]", -, -,
        "The kinds notify.command runs for (task_merged, task_blocked, prd_planned, prd_refused, pull_request, usage_limit, cap_reached, run_ended, run_idle, watch_stuck, pr_feedback, pr_merged); empty: all";
    notify.timeout: TIME_LIMIT = "10s", RALPH_NOTIFY_TIMEOUT, -,
        "Longest notify.command may run before it is stopped; the loop never waits for it";
    watch.prds: GLOBS = "[]", -, -,
        "Glob patterns of PRD files (`prds/*.md`, `prds/**/*.json`) whose additions and changes on the watched branch ralph plans at each look (docs/UNATTENDED.md); empty: no watching";
    watch.branch: TEXT = "null", RALPH_WATCH_BRANCH, -,
        "The branch watched for PRDs; null: the base";
    watch.remote: TEXT = "null", RALPH_WATCH_REMOTE, -,
        "The remote the watched branch is fetched from at each look, the base fast-forwarded to it between tasks; null: the local branch";
    watch.max_prd_bytes: COUNT = "262144", RALPH_WATCH_MAX_PRD_BYTES, -,
        "Largest PRD file planned, in bytes; a larger one is refused (prd_file_too_large)";
    watch.feedback_rounds: COUNT = "3", RALPH_WATCH_FEEDBACK_ROUNDS, -,
        "With delivery: pr and watch.prds, how many rounds of feedback on a PRD's pull request (a review requesting changes, a failing check: each becomes a task on its branch) ralph works before it leaves the rest to a person; 0: feedback is not read";
    review_every: TOKENS = "null", RALPH_REVIEW_EVERY, -,
        "Every this many iterations on a task, the reviewer role takes a turn whatever the triggers pick (its verdict needs the task ready; otherwise it leaves notes); null: only as the triggers say";
    retention_days: COUNT = "30", RALPH_RETENTION_DAYS, -,
        "Days ralph keeps the records of iterations: older transcripts and prompts (.ralph/logs, .ralph/prompts) are deleted and events.ndjson is moved to .ralph/events.old.ndjson once its first event is older, at each run's start and each idle look; 0: kept forever";
    report: REPORT = "never", RALPH_REPORT, -,
        "never, or on_exit: every run ends by writing `ralph report`'s page, .ralph/report.html, and printing its path";
    sandbox.mode: CONFINE = "auto", RALPH_SANDBOX_MODE, -,
        "Confine agents (bubblewrap on Linux, sandbox-exec on macOS; docs/AGENT.md): auto (when the tool works here, else unconfined, said once), on (refuse to start without it) or off";
    sandbox.writable: PATHS = "[]", -, -,
        "More paths a confined agent may write, beside its checkout, the git folder, the queue, its own state and the caches (`~/` and paths from the project allowed)";
    sandbox.hidden: PATHS = "[]", -, -,
        "More paths a confined agent sees as empty, beside ~/.ssh, ~/.aws, ~/.gnupg, ~/.config/gh, ~/.netrc and ~/.docker";
    sandbox.protected: PATHS = "[]", -, -,
        "More paths of the project a confined agent may not change, beside config/, roles/, working.md, .gitattributes, a tracked hooks folder and .ralph/; a task whose squash changes one is blocked for a person (docs/SECURITY.md)";
    sandbox.pass_env: NAMES = "[]", -, -,
        "More environment variables a confined agent gets, beside PATH, HOME, the locale, TERM, TMPDIR, its preset's own (API keys) and RALPH_* (docs/AGENT.md)";
    sandbox.network: SWITCH = "true", RALPH_SANDBOX_NETWORK, -,
        "Whether a confined agent reaches the network (its model's API needs it); false for an agent against a local model";
    remote.enabled: SWITCH = "false", RALPH_REMOTE_ENABLED, "--remote",
        "Share the queue with other machines through the base's upstream remote (docs/SCALE.md): claims, landings and queue edits go through it";
    remote.heartbeat: DURATION = "60s", RALPH_REMOTE_HEARTBEAT, -,
        "With remote.enabled, how often the remote is read and this machine's claims renewed";
    remote.stale_after: DURATION = "10m", RALPH_REMOTE_STALE_AFTER, -,
        "With remote.enabled, how long another machine's claim must stay unchanged (at least 3 heartbeats seen) before this one takes it over";
    remote.land_attempts: COUNT = "8", RALPH_REMOTE_LAND_ATTEMPTS, -,
        "With remote.enabled, pushes of a landing refused in a row with nothing landed in between (a hook or a protected branch) before the run stops with the landing kept under refs/ralph/landing/; a refusal because another machine landed first is not counted: the landing is made again on the new tip";
};

/// The environment variables that override settings.
pub(crate) fn env_vars() -> impl Iterator<Item = &'static str> {
    KEYS.iter().filter_map(|key| key.env)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The manual's table of settings, between these lines of docs/CONFIG.md.
    const MANUAL_START: &str =
        "<!-- settings:start: made from src/config/keys.rs, edit it there -->";
    /// Where the manual's table ends.
    const MANUAL_END: &str = "<!-- settings:end -->";

    /// The manual's table of settings, in Markdown.
    fn manual_table() -> String {
        let code = |text: Option<&str>| text.map(|text| format!("`{text}`")).unwrap_or_default();
        let mut table =
            "| key | default | variable | `ralph run` flag | value | what for |\n".to_owned();
        table.push_str("|---|---|---|---|---|---|\n");
        for key in KEYS {
            table.push_str(&format!(
                "| `{}` | `{}` | {} | {} | {} | {} |\n",
                key.path,
                key.default,
                code(key.env),
                code(key.flag),
                key.holds,
                key.doc
            ));
        }
        table
    }

    /// The fields serde knows in the section `yaml` opens, in order: it
    /// names them all when it refuses an unknown one.
    fn fields(yaml: &str) -> Vec<String> {
        let message = Settings::parse(yaml).unwrap_err().to_string();
        let (_, expected) = message
            .split_once("expected ")
            .expect("serde names the fields");
        expected
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn every_field_is_a_key_and_every_key_holds_its_default() {
        let mut paths = vec![];
        for field in fields("unknown: 1\n") {
            let section = format!("{field}.");
            if KEYS.iter().any(|key| key.path.starts_with(&section)) {
                let inner = fields(&format!("{field}:\n  unknown: 1\n"));
                paths.extend(inner.iter().map(|name| format!("{section}{name}")));
            } else {
                paths.push(field);
            }
        }
        let keys: Vec<&str> = KEYS.iter().map(|key| key.path).collect();
        assert_eq!(
            paths, keys,
            "a field of Settings without a row in KEYS, or out of order"
        );
        for key in KEYS {
            let yaml = match key.path.split_once('.') {
                Some((section, name)) => format!("{section}:\n  {name}: {}\n", key.default),
                None => format!("{}: {}\n", key.path, key.default),
            };
            assert_eq!(
                Settings::parse(&yaml).unwrap(),
                Settings::default(),
                "{}'s default in KEYS is not Settings::default()'s",
                key.path
            );
        }
    }

    #[test]
    fn a_variable_is_ralph_and_the_path_in_capitals() {
        for key in KEYS {
            let named = format!("RALPH_{}", key.path.replace('.', "_").to_uppercase());
            assert!(key.env.is_none_or(|env| env == named), "{}", key.path);
            // Its variable sets what its default sets.
            if key.env.is_some() && key.default != "null" {
                let mut settings = Settings::default();
                (key.set)(&mut settings, key.default).unwrap();
                assert_eq!(settings, Settings::default(), "{}", key.path);
            }
        }
        let without: Vec<&str> = (KEYS.iter().filter(|key| key.env.is_none()))
            .map(|key| key.path)
            .collect();
        assert_eq!(
            without,
            [
                "agent.deny",
                "agent.fallback",
                "verify.task",
                "verify.run",
                "notify.on",
                "watch.prds",
                "sandbox.writable",
                "sandbox.hidden",
                "sandbox.protected",
                "sandbox.pass_env"
            ]
        );
    }

    #[test]
    fn the_manual_shows_the_table() {
        let manual = include_str!("../../docs/CONFIG.md");
        let shown = (manual.split_once(MANUAL_START))
            .and_then(|(_, rest)| rest.split_once(MANUAL_END))
            .map(|(shown, _)| shown);
        let table = format!("\n\n{}\n", manual_table());
        assert!(
            shown == Some(table.as_str()),
            "docs/CONFIG.md's settings differ from KEYS; put this between {MANUAL_START} and {MANUAL_END}:\n{table}"
        );
    }

    #[test]
    fn the_shipped_file_writes_every_key_at_its_default() {
        use serde_yaml::Value;
        use std::collections::{BTreeMap, BTreeSet};
        let value = |text| serde_yaml::from_str::<Value>(text).unwrap();
        let file = value(include_str!("../../config/ralph.yaml"));
        let sections = file.as_mapping().expect("a mapping").iter();
        let shipped: BTreeMap<String, Value> = (sections.flat_map(|(key, value)| {
            let key = key.as_str().expect("a key is text");
            match value.as_mapping() {
                Some(section) => (section.iter())
                    .map(|(name, value)| {
                        (format!("{key}.{}", name.as_str().unwrap()), value.clone())
                    })
                    .collect(),
                None => vec![(key.to_owned(), value.clone())],
            }
        }))
        .collect();
        let keys: BTreeMap<String, Value> = (KEYS.iter())
            .map(|key| (key.path.to_owned(), value(key.default)))
            .collect();
        let differ: BTreeSet<&String> = (shipped.keys().chain(keys.keys()))
            .filter(|path| shipped.get(*path) != keys.get(*path))
            .collect();
        assert!(
            differ.is_empty(),
            "config/ralph.yaml and KEYS differ at {differ:?}"
        );
    }

    #[test]
    fn a_variable_beats_the_file_or_names_what_fits() {
        let file = "agent:\n  command: x\nmax_task_minutes: 45\nfinal_review: true\n";
        let read = |name: &str, value: &str| {
            let mut settings = Settings::parse(file).unwrap();
            (settings.apply_env(|asked| (asked == name).then(|| value.to_owned())))
                .map(|()| settings)
                .map_err(|err| err.to_string())
        };
        let set = |name, value| read(name, value).unwrap();
        let codex = set("RALPH_AGENT_PRESET", "codex").agent;
        assert_eq!(
            (codex.preset.as_deref(), codex.command),
            (Some("codex"), None)
        );
        assert_eq!(set("RALPH_MAX_ITERATIONS", "9").max_iterations, 9);
        assert_eq!(
            set("RALPH_RETRY_BACKOFF", "500ms")
                .retry_backoff
                .as_millis(),
            500
        );
        assert_eq!(set("RALPH_MAX_TASK_MINUTES", "").max_task_minutes, None);
        assert_eq!(set("RALPH_MAX_RUN_MINUTES", "90").max_run_minutes, Some(90));
        assert_eq!(set("RALPH_GIT_PUSH", "on_exit").git.push, Push::OnExit);
        assert_eq!(set("RALPH_DELIVERY", "pr").delivery, Delivery::Pr);
        assert!(set("RALPH_FINAL_REVIEW", "true").final_review);
        assert!(!set("RALPH_FINAL_REVIEW", "false").final_review);
        let refused = "\
RALPH_MAX_ITERATIONS=lots: \"lots\" is not a whole number
RALPH_AGENT_TIMEOUT=5: duration \"5\" needs a unit: ms, s, m or h
RALPH_AGENT_PRESET=gpt: unknown preset \"gpt\"; use one of claude, codex, codex-app-server, opencode, amp, gemini, qwen, aider, cursor
RALPH_MAX_TASK_MINUTES=0: \"0\" is not a positive whole number of minutes; write one like 30, or null for no limit
RALPH_WORKERS=100: 100 is not between 1 and 64; write how many agents work side by side, like 2
RALPH_GIT_PUSH=always: \"always\" is not a push setting; use never, on_merge or on_exit
RALPH_DELIVERY=github: \"github\" is not a delivery; use local or pr
RALPH_FINAL_REVIEW=yes: \"yes\" is not true or false";
        for line in refused.lines() {
            let (name, rest) = line.split_once('=').unwrap();
            let (value, message) = rest.split_once(": ").unwrap();
            assert_eq!(read(name, value).unwrap_err(), format!("{name}: {message}"));
        }
    }
}
