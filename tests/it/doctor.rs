//! `ralph doctor`: one line per finding, every check run even when an
//! earlier one fails, exit 10 when any line is an error, nothing written.

use std::os::unix::fs::PermissionsExt;

use crate::support::{RALPH, Run, TestProject, Tool, skip_without, wait_for_file};

/// A project `ralph run` can work: git on `main` with everything
/// committed, one task, a check in `verify.task`, and a stand-in `claude`
/// in `<aux>/bin` (never run: the doctor only looks for it).
fn healthy() -> TestProject {
    let p = TestProject::new()
        .git_init()
        .file("check.sh", "test -f working.md\n");
    let config = p
        .read("config/ralph.yaml")
        .replace("  task: []", "  task: [\"sh check.sh\"]");
    let p = p.file("config/ralph.yaml", config);
    p.ralph(&["task", "add", "add a flag"]).success();
    p.git(&["add", "-A"]);
    p.git(&["commit", "-q", "-m", "a task and a check"]);
    tool(&p, "bin/claude", "exit 0\n");
    p
}

/// Writes an executable script at `<aux>/<path>`.
fn tool(p: &TestProject, path: &str, body: &str) {
    let full = p.aux().join(path);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(&full, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&full, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Sets `verify.task` and `verify.run` in the project's config and
/// commits everything.
fn checks(p: &TestProject, task: &str, run: &str) {
    let config: Vec<String> = p
        .read("config/ralph.yaml")
        .lines()
        .map(|line| {
            if line.starts_with("  task: ") {
                format!("  task: {task}")
            } else if line.starts_with("  run: ") {
                format!("  run: {run}")
            } else {
                line.to_owned()
            }
        })
        .collect();
    std::fs::write(p.path().join("config/ralph.yaml"), config.join("\n") + "\n").unwrap();
    p.git(&["add", "-A"]);
    p.git(&["commit", "-q", "-m", "checks"]);
}

/// `ralph doctor ARGS` with `<aux>/bin` first on PATH; the temporary
/// folders' paths and the checks' durations in its output normalised to
/// `<project>`, `<aux>` and `<t>`.
fn doctor(p: &TestProject, args: &[&str]) -> Run {
    doctor_with_path(p, &p.path_with_aux_bin(), args)
}

fn doctor_with_path(p: &TestProject, path: &str, args: &[&str]) -> Run {
    let output = p
        .command(RALPH)
        .env("PATH", path)
        .arg("doctor")
        .args(args)
        .output()
        .expect("run ralph doctor");
    let mut run = Run::from(output);
    run.stdout = normalise(p, &run.stdout);
    run
}

fn normalise(p: &TestProject, text: &str) -> String {
    let text = text
        .replace(&p.aux().display().to_string(), "<aux>")
        .replace(&p.path().display().to_string(), "<project>");
    let seconds = regex::Regex::new(r"(in|after) \d+\.\ds").unwrap();
    seconds.replace_all(&text, "$1 <t>").into_owned()
}

/// The lines of `run`'s stdout that are about `check`.
fn about<'r>(run: &'r Run, check: &str) -> Vec<&'r str> {
    let tag = format!("{check}: ");
    run.stdout
        .lines()
        .filter(|line| {
            line.split_once(": ")
                .is_some_and(|(_, rest)| rest.starts_with(&tag))
        })
        .collect()
}

const RUN_OK: &str = "ok: run: none live\n";
/// The tests run agents unconfined (tests/it/support.rs says so through
/// the environment; tests/it/sandbox.rs confines them).
const SETTINGS_OK: &str =
    "ok: settings: config/ralph.yaml is valid; RALPH_SANDBOX_MODE from the environment\n";
const GIT_OK: &str = "\
ok: git: base branch main (the branch checked out)
ok: git: ready: no merge or rebase under way, the working tree clean apart from the queue files
ok: git: ralph commits as Test Author <author@example.com>
";
const HOOKS_AND_SIGNING_OK: &str = "\
ok: hooks: none in .git/hooks
ok: signing: off (commit.gpgsign is not set)
";
const QUEUE_OK: &str = "ok: queue: 1 task (1 pending); 0 archived\n";
const TRIGGERS_OK: &str =
    "ok: triggers: 6 triggers in config/roles.yaml, each valid, with its role file\n";
const AGENT_OK: &str = "ok: agent: `claude` found at <aux>/bin/claude; claude has no offline login check, so a login it lacks shows at the first iteration, which then stops the run (exit 20)\nok: sandbox: sandbox.mode is off: agents run unconfined, as you set\n";
const NEXT_OK: &str =
    "ok: next: A add a flag: branch task/A-add-a-flag, role none (no trigger is true)\n";
const CHECKS_LISTED: &str = "\
ok: checks: verify.task `sh check.sh` runs before each merge; `ralph doctor --run-checks` runs it now
ok: checks: verify.run is empty: nothing runs when the queue drains
";
const DELIVERY_OK: &str = "\
ok: delivery: local: each finished task is squash-merged into main
ok: push: never (git.push): the work stays in this repository
";

#[test]
fn a_healthy_project_is_all_ok_and_exits_0() {
    let p = healthy();
    let before = listing(&p);
    doctor(&p, &[]).ok(&[
        RUN_OK,
        SETTINGS_OK,
        GIT_OK,
        HOOKS_AND_SIGNING_OK,
        QUEUE_OK,
        TRIGGERS_OK,
        AGENT_OK,
        NEXT_OK,
        CHECKS_LISTED,
        DELIVERY_OK,
    ]
    .concat());
    assert_eq!(listing(&p), before, "the doctor wrote something");
    assert_eq!(p.git(&["status", "--porcelain"]), "");
}

#[test]
fn a_dirty_tree_is_an_error_with_its_fix_and_exit_10() {
    let p = healthy().file("src/a.rs", "fn main() {}\n");
    let run = doctor(&p, &[]);
    assert_eq!(run.code, 10, "{run:#?}");
    assert_eq!(
        about(&run, "git"),
        [
            "ok: git: base branch main (the branch checked out)",
            "error: git: uncommitted changes in the working tree: src/a.rs; commit or stash them (`git stash -u`), or list them in .gitignore; only tasks.jsonl and tasks-done.jsonl may stay modified",
            "ok: git: ralph commits as Test Author <author@example.com>",
        ]
    );
    // Every other check still ran, and passed.
    assert!(
        run.stdout
            .ends_with(&[NEXT_OK, CHECKS_LISTED, DELIVERY_OK].concat())
    );
    assert_eq!(run.stdout.matches("error: ").count(), 1, "{run:#?}");
}

#[test]
fn a_missing_agent_binary_is_an_error_with_exit_10() {
    let p = healthy();
    // A PATH with git and sh only: no claude anywhere.
    let tools = p.aux().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    for program in ["git", "sh"] {
        let found = std::env::split_paths(&std::env::var_os("PATH").unwrap())
            .map(|dir| dir.join(program))
            .find(|path| path.is_file())
            .unwrap_or_else(|| panic!("{program} is on PATH"));
        std::os::unix::fs::symlink(found, tools.join(program)).unwrap();
    }
    let run = doctor_with_path(&p, tools.to_str().unwrap(), &[]);
    assert_eq!(run.code, 10, "{run:#?}");
    assert_eq!(
        about(&run, "agent"),
        [
            "error: agent: agent `claude` not found: no `claude` on PATH; install Claude Code (npm i -g @anthropic-ai/claude-code), or choose another agent: set agent.preset or agent.command in config/ralph.yaml, or pass --agent or --agent-cmd"
        ]
    );
    // --agent-cmd checks the command given instead.
    tool(&p, "agent.sh", "exit 0\n");
    let agent = p.aux().join("agent.sh");
    let run = doctor_with_path(
        &p,
        tools.to_str().unwrap(),
        &[
            "--agent-cmd",
            &format!("{} {{prompt_file}}", agent.display()),
        ],
    );
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        about(&run, "agent"),
        [
            "ok: agent: command `<aux>/agent.sh {prompt_file}` found at <aux>/agent.sh; a login it needs shows at the first iteration"
        ]
    );
}

#[test]
fn codex_is_asked_whether_it_is_logged_in() {
    let p = healthy();
    tool(
        &p,
        "bin/codex",
        "[ \"$1 $2\" = \"login status\" ] || exit 2\necho 'Not logged in'\nexit 1\n",
    );
    let run = doctor(&p, &["--agent", "codex"]);
    assert_eq!(run.code, 10, "{run:#?}");
    assert_eq!(
        about(&run, "agent"),
        [
            "error: agent: agent `codex` is not logged in: Not logged in; run `codex login`, or set OPENAI_API_KEY"
        ]
    );
    tool(&p, "bin/codex", "echo 'Logged in using ChatGPT'\n");
    let run = doctor(&p, &["--agent", "codex"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        about(&run, "agent"),
        ["ok: agent: `codex` found at <aux>/bin/codex; `codex login status` says it is logged in"]
    );
}

#[test]
fn run_checks_runs_each_check_and_reports_how_it_went() {
    let p = healthy().file(
        "fail.sh",
        "echo compiling\necho 'test flag ... FAILED' >&2\nexit 3\n",
    );
    checks(&p, "[\"sh check.sh\"]", "[\"sh fail.sh\"]");
    let run = doctor(&p, &["--run-checks"]);
    assert_eq!(run.code, 10, "{run:#?}");
    assert_eq!(
        about(&run, "checks"),
        [
            "ok: checks: verify.task `sh check.sh` passed in <t>",
            "error: checks: verify.run `sh fail.sh` failed (exit code 3) after <t>: test flag ... FAILED; make it pass, or fix the command in config/ralph.yaml: a failing verify.run ends the run with exit 10",
        ]
    );
    // The same checks merely listed without --run-checks: nothing fails.
    let run = doctor(&p, &[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        about(&run, "checks"),
        [
            "ok: checks: verify.task `sh check.sh` runs before each merge; `ralph doctor --run-checks` runs it now",
            "ok: checks: verify.run `sh fail.sh` runs once when the queue drains; `ralph doctor --run-checks` runs it now",
        ]
    );
}

#[test]
fn a_failing_task_check_is_an_error_and_no_check_is_a_warning() {
    let p = healthy();
    checks(&p, "[\"sh check.sh\", \"test -f missing.txt\"]", "[]");
    let run = doctor(&p, &["--run-checks"]);
    assert_eq!(run.code, 10, "{run:#?}");
    assert_eq!(
        about(&run, "checks"),
        [
            "ok: checks: verify.task `sh check.sh` passed in <t>",
            "error: checks: verify.task `test -f missing.txt` failed (exit code 1) after <t>; make it pass, or fix the command in config/ralph.yaml: a task is merged only when every verify.task command passes",
            "ok: checks: verify.run is empty: nothing runs when the queue drains",
        ]
    );
    checks(&p, "[]", "[]");
    let run = doctor(&p, &["--run-checks"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        about(&run, "checks"),
        [
            "warning: checks: verify.task is empty: the agent's word alone decides when a task is done; add a check (the project's tests or build) to verify.task in config/ralph.yaml, or run `ralph init --detect`",
            "ok: checks: verify.run is empty: nothing runs when the queue drains",
        ]
    );
}

#[test]
fn invalid_triggers_are_an_error_and_the_rest_is_still_checked() {
    let p = healthy().file(
        "config/roles.yaml",
        "triggers:\n  - condition: \"brnch_commits >= 5\"\n    role: reviewer\n",
    );
    p.git(&["commit", "-q", "-am", "a typo"]);
    let run = doctor(&p, &[]);
    assert_eq!(run.code, 10, "{run:#?}");
    assert_eq!(
        about(&run, "triggers"),
        [
            "error: triggers: config/roles.yaml: trigger 1 (condition \"brnch_commits >= 5\"): unknown variable `brnch_commits` (did you mean `branch_commits`?); known: task_id, task_title, task_status, task_kind, task_depth, iteration, task_iteration, branch_commits, files_changed, last_iteration_failed, consecutive_failures, task_marked_ready_to_complete, elapsed_minutes, last_review, review_rejections, task_notes, iterations_since_review; fix config/roles.yaml (the syntax is described at the top of the default file, `ralph init` writes it), then run `ralph roles check`"
        ]
    );
    // No next task is worked out with broken triggers; the rest is as healthy.
    assert!(about(&run, "next").is_empty(), "{run:#?}");
    assert!(
        run.stdout
            .starts_with(&[RUN_OK, SETTINGS_OK, GIT_OK, HOOKS_AND_SIGNING_OK, QUEUE_OK].concat())
    );
    assert!(
        run.stdout
            .ends_with(&[AGENT_OK, CHECKS_LISTED, DELIVERY_OK].concat())
    );
}

#[test]
fn an_invalid_queue_line_is_an_error_with_its_line() {
    let p = healthy();
    let mut tasks = p.read("tasks.jsonl");
    tasks.push_str("{\"id\":\"B\",\"title\":\"no status\",\"leaf\":true}\n");
    let p = p.file("tasks.jsonl", tasks);
    let run = doctor(&p, &[]);
    assert_eq!(run.code, 10, "{run:#?}");
    assert_eq!(
        about(&run, "queue"),
        [
            "error: queue: tasks.jsonl:2: missing field `status`; fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written"
        ]
    );
    assert!(about(&run, "next").is_empty(), "{run:#?}");
    assert_eq!(run.stdout.matches("error: ").count(), 1, "{run:#?}");
}

#[test]
fn a_folder_that_is_not_a_repository_is_an_error_line_not_a_crash() {
    let p = TestProject::new();
    p.ralph(&["init"]).success();
    p.ralph(&["task", "add", "add a flag"]).success();
    tool(&p, "bin/claude", "exit 0\n");
    let before = listing(&p);
    let run = doctor(&p, &[]);
    assert_eq!(run.code, 10, "{run:#?}");
    assert_eq!(run.stderr, "");
    assert_eq!(
        run.stdout,
        [
            RUN_OK,
            SETTINGS_OK,
            "error: git: <project>: not inside a git repository; ralph keeps each task on its own git branch: run `git init`, then make an initial commit\n",
            QUEUE_OK,
            TRIGGERS_OK,
            AGENT_OK,
            NEXT_OK,
            "warning: checks: verify.task is empty: the agent's word alone decides when a task is done; add a check (the project's tests or build) to verify.task in config/ralph.yaml, or run `ralph init --detect`\n",
            "ok: checks: verify.run is empty: nothing runs when the queue drains\n",
            "ok: delivery: local: each finished task is squash-merged into the base branch\n",
            "ok: push: never (git.push): the work stays in this repository\n",
        ]
        .concat()
    );
    assert_eq!(listing(&p), before, "the doctor wrote something");
}

#[test]
fn broken_settings_are_an_error_and_git_and_the_queue_are_still_checked() {
    let p = healthy().file("config/ralph.yaml", "max_iteratons: 5\n");
    p.git(&["commit", "-q", "-am", "a typo"]);
    let run = doctor(&p, &[]);
    assert_eq!(run.code, 10, "{run:#?}");
    assert_eq!(
        about(&run, "settings"),
        [
            "error: settings: config/ralph.yaml:1: unknown field `max_iteratons`, expected one of `agent`, `workers`, `max_iterations`, `max_run_minutes`, `max_iterations_per_task`, `max_task_minutes`, `max_consecutive_failures`, `no_progress_iterations`, `retry_backoff`, `usage_limit_max_wait`, `pause_between_iterations`, `poll_interval`, `base_branch`, `branch_prefix`, `verify`, `git`, `delivery`, `final_review`, `delivery_labels`, `max_task_cost_usd`, `max_run_cost_usd`, `max_task_tokens`, `max_run_tokens`, `notify`, `watch`, `review_every`, `retention_days`, `report`, `sandbox`, `remote` (did you mean `max_iterations`?) (the checks below assume the defaults); fix config/ralph.yaml; docs/CONFIG.md lists every key and its values"
        ]
    );
    assert!(run.stdout.contains(GIT_OK), "{run:#?}");
    assert!(run.stdout.contains(QUEUE_OK), "{run:#?}");
    // (The settings broken, their defaults are assumed: sandbox.mode auto.)
    let agent_found = AGENT_OK.lines().next().unwrap();
    assert!(run.stdout.contains(agent_found), "{run:#?}");
}

#[test]
fn json_is_an_array_of_check_level_message_fix() {
    let p = healthy().file("src/a.rs", "fn main() {}\n");
    let run = doctor(&p, &["--json"]);
    assert_eq!(run.code, 10, "{run:#?}");
    let findings = run.json();
    let findings = findings.as_array().unwrap();
    assert_eq!(
        findings[0],
        serde_json::json!({"check": "run", "level": "ok", "message": "none live", "fix": null})
    );
    assert_eq!(
        findings[3],
        serde_json::json!({
            "check": "git",
            "level": "error",
            "message": "uncommitted changes in the working tree: src/a.rs",
            "fix": "commit or stash them (`git stash -u`), or list them in .gitignore; only tasks.jsonl and tasks-done.jsonl may stay modified",
        })
    );
    let levels: Vec<&str> = findings
        .iter()
        .map(|f| f["level"].as_str().unwrap())
        .collect();
    assert_eq!(levels.iter().filter(|l| **l == "error").count(), 1);
    assert!(
        levels
            .iter()
            .all(|l| ["ok", "warning", "error"].contains(l))
    );
}

#[test]
fn hooks_and_signing_in_effect_are_reported() {
    if skip_without(Tool::SshKeygen) {
        return;
    }
    let p = healthy();
    tool(&p, "hook", "exit 0\n");
    for hook in ["pre-commit", "pre-push", "post-checkout"] {
        std::fs::copy(p.aux().join("hook"), p.path().join(".git/hooks").join(hook)).unwrap();
    }
    let key = p.aux().join("id_ed25519");
    let made = std::process::Command::new("ssh-keygen")
        .args([
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            "author@example.com",
            "-f",
        ])
        .arg(&key)
        .output()
        .expect("run ssh-keygen");
    assert!(made.status.success(), "{made:?}");
    p.git(&["config", "gpg.format", "ssh"]);
    p.git(&["config", "commit.gpgsign", "true"]);
    p.git(&["config", "user.signingkey", key.to_str().unwrap()]);
    let run = doctor(&p, &[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        about(&run, "hooks"),
        [
            "ok: hooks: in effect: post-checkout, pre-commit, pre-push (.git/hooks); ralph's commits on the base run pre-commit (a refusal sends the task back to the agent); its pushes run pre-push; post-checkout never run (ralph checks out and merges without git's commands)"
        ]
    );
    assert_eq!(
        about(&run, "signing"),
        [
            "ok: signing: on (commit.gpgsign, gpg.format ssh, user.signingkey <aux>/id_ed25519): a trial signature worked, and ralph's commits go through git to be signed"
        ]
    );
    assert_eq!(p.git(&["status", "--porcelain"]), "");

    // A key that is not there: git cannot sign, which stops a run.
    p.git(&["config", "user.signingkey", "/nonexistent/key"]);
    let run = doctor(&p, &[]);
    assert_eq!(run.code, 10, "{run:#?}");
    let signing = about(&run, "signing");
    assert_eq!(signing.len(), 1, "{run:#?}");
    assert!(
        signing[0]
            .starts_with("error: signing: commit.gpgsign is set but git cannot sign a commit: "),
        "{run:#?}"
    );
    assert!(
        signing[0].ends_with("; make signing work (`git config user.signingkey ...`, a key your gpg or ssh agent has), or unset commit.gpgsign for this repository"),
        "{run:#?}"
    );
}

#[test]
fn core_hooks_path_is_where_the_hooks_are() {
    let p = healthy();
    tool(&p, "hook", "exit 0\n");
    std::fs::create_dir_all(p.path().join(".githooks")).unwrap();
    std::fs::copy(p.aux().join("hook"), p.path().join(".githooks/commit-msg")).unwrap();
    p.git(&["add", ".githooks"]);
    p.git(&["commit", "-q", "-m", "hooks"]);
    p.git(&["config", "core.hooksPath", ".githooks"]);
    let run = doctor(&p, &[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        about(&run, "hooks"),
        [
            "ok: hooks: in effect: commit-msg (.githooks); ralph's commits on the base run commit-msg (a refusal sends the task back to the agent)"
        ]
    );
}

#[test]
fn the_doctor_works_beside_a_live_run_and_leaves_it_alone() {
    let p = healthy().agent(
        r#"touch "$REC/waiting"
while [ ! -e "$REC/go" ]; do sleep 0.02; done
ralph task complete "$RALPH_TASK_ID" > /dev/null
"#,
    );
    let child = p
        .run_command(&[])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(&p.aux().join("rec/waiting"));
    let events = p.read(".ralph/events.ndjson");
    let state = p.read(".ralph/state.json");
    let run = doctor(&p, &[]);
    let after = (p.read(".ralph/events.ndjson"), p.read(".ralph/state.json"));
    std::fs::write(p.aux().join("rec/go"), "").unwrap();
    let ran = crate::support::wait_for(child, 60);
    assert_eq!(
        (events, state),
        after,
        "the doctor changed the run's records"
    );
    assert_eq!(run.code, 0, "{run:#?}");
    let pid = regex::Regex::new(r"pid \d+, since [0-9TZ:-]+").unwrap();
    assert_eq!(
        pid.replace(about(&run, "run")[0], "pid <pid>, since <time>"),
        "ok: run: a run is live (pid <pid>, since <time>); the doctor changes nothing, and leaves the working tree's checks out while the run works in it"
    );
    assert_eq!(
        about(&run, "git"),
        [
            "ok: git: base branch main (the one the last run recorded; HEAD is on its task branch task/A-add-a-flag)",
            "ok: git: ralph commits as Test Author <author@example.com>",
        ]
    );
    assert!(
        run.stdout
            .contains("ok: queue: 1 task (1 active); 0 archived\n"),
        "{run:#?}"
    );
    // The run was not disturbed: it finished the task.
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert_eq!(p.read("tasks.jsonl"), "");
}

#[test]
fn stop_file_pull_requests_and_pushes_are_checked() {
    let p = healthy().file(".stop", "");
    let config = p
        .read("config/ralph.yaml")
        .replace("  push: never", "  push: on_merge");
    let p = p.file("config/ralph.yaml", config);
    p.git(&["commit", "-q", "-am", "push on merge"]);
    let run = doctor(&p, &[]);
    assert_eq!(run.code, 10, "{run:#?}");
    assert_eq!(
        about(&run, "run"),
        [
            "ok: run: none live",
            "warning: run: .stop exists, so the next `ralph run` removes it and stops before its first iteration; remove it (`rm .stop`) unless a run should stop",
        ]
    );
    assert_eq!(
        about(&run, "push"),
        [
            "error: push: the repository has no remote origin, so the push would fail after the work is done; add it (`git remote add origin URL`), name another in git.remote, or set git.push: never"
        ]
    );
    let remote = p.aux().join("remote.git");
    p.git(&["init", "-q", "--bare", remote.to_str().unwrap()]);
    p.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
    let run = doctor(&p, &[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        about(&run, "push"),
        [
            "ok: push: main to origin/main after each squash commit, through your git (its credentials and hooks)"
        ]
    );

    // delivery: pr asks gh whether it is logged in.
    let config = p
        .read("config/ralph.yaml")
        .replace("delivery: local", "delivery: pr");
    std::fs::write(p.path().join("config/ralph.yaml"), config).unwrap();
    p.git(&["commit", "-q", "-am", "deliver by pull request"]);
    tool(
        &p,
        "bin/gh",
        "case \"$1 $2\" in\n  \"auth status\") echo 'You are not logged into any GitHub hosts.' >&2; exit 1 ;;\nesac\n",
    );
    let run = doctor(&p, &[]);
    assert_eq!(run.code, 10, "{run:#?}");
    assert_eq!(
        about(&run, "delivery"),
        [
            "error: delivery: pr: gh is not logged in (gh auth status failed (exit status: 1): You are not logged into any GitHub hosts.); run `gh auth login`; fix that, or set delivery: local in config/ralph.yaml to keep the work on the base"
        ]
    );
    tool(&p, "bin/gh", "exit 0\n");
    let run = doctor(&p, &[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        about(&run, "delivery"),
        [
            "ok: delivery: pr: gh is installed and logged in; the run works on a branch ralph/<name> and opens a pull request into main"
        ]
    );
    assert_eq!(
        about(&run, "push"),
        [
            "ok: push: ralph/add-a-flag to origin/ralph/add-a-flag after each squash commit, through your git (its credentials and hooks)"
        ]
    );
}

/// Every file of the project but `.git`, with its bytes.
fn listing(p: &TestProject) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &std::path::Path, dir: &std::path::Path, out: &mut Vec<(String, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            if rel == ".git" {
                continue;
            }
            if path.is_dir() {
                out.push((rel, Vec::new()));
                walk(root, &path, out);
            } else {
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(p.path(), p.path(), &mut out);
    out.sort();
    out
}

#[test]
fn a_stopped_runs_task_branch_and_a_git_lock_are_explained() {
    let p = healthy().agent("echo half > half.txt\n");
    let run = p.run(&["--once"]);
    assert_eq!(run.code, 0, "{run:#?}");
    // A person goes on where the run stopped, and a git command died
    // holding the index lock.
    let p = p.file("more.txt", "by hand\n");
    std::fs::write(p.path().join(".git/index.lock"), "").unwrap();
    let run = doctor(&p, &[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        about(&run, "git"),
        [
            "ok: git: base branch main (the one the last run recorded; HEAD is on its task branch task/A-add-a-flag)",
            "ok: git: HEAD is on task/A-add-a-flag, where a stopped run left task A: the next run commits what is uncommitted there and resumes it",
            "ok: git: ready: no merge or rebase under way",
            "warning: git: .git/index.lock exists: a git command holds it, or one died holding it; wait for that command to finish; `ralph run` removes the lock at its start when no git process works in the repository",
            "ok: git: ralph commits as Test Author <author@example.com>",
        ]
    );
}

#[test]
fn help_states_the_line_format_and_the_exit_codes() {
    let help = TestProject::new().ralph(&["doctor", "--help"]).success();
    assert!(
        help.stdout.contains(
            "Exit codes: 0 nothing is an error (warnings allowed), 10 at least one error:\na person must fix something before `ralph run` can work.\n"
        ),
        "{help:#?}"
    );
    assert!(
        help.stdout
            .contains("One line per finding: `ok: CHECK: what was found`")
    );
}

#[test]
fn a_detached_head_is_fine_only_where_the_run_can_leave_it() {
    let p = healthy();
    p.git(&["checkout", "-q", "--detach"]);
    let short = &p.git(&["rev-parse", "HEAD"])[..7];
    let run = doctor(&p, &[]);
    assert_eq!(run.code, 10, "{run:#?}");
    // What needs no base branch is checked all the same.
    let git = about(&run, "git");
    assert_eq!(
        git[0],
        format!(
            "error: git: HEAD is detached at {short}; ralph needs a base branch to merge tasks into; check out the branch tasks should merge into (`git switch main`), or set base_branch in config/ralph.yaml"
        )
    );
    assert!(git[1].starts_with("ok: git: ralph commits as "), "{git:?}");
    assert_eq!(git.len(), 2, "{git:?}");
    assert_eq!(about(&run, "hooks").len(), 1, "{run:#?}");
    assert_eq!(about(&run, "signing").len(), 1, "{run:#?}");
    let config = p
        .read("config/ralph.yaml")
        .replace("base_branch: null", "base_branch: main");
    std::fs::write(p.path().join("config/ralph.yaml"), config).unwrap();
    p.git(&["switch", "-q", "main"]);
    p.git(&["commit", "-q", "-am", "base main"]);
    // As a CI checkout leaves it: detached at the base's tip.
    p.git(&["checkout", "-q", "--detach", "main"]);
    let short = &p.git(&["rev-parse", "HEAD"])[..7];
    let run = doctor(&p, &[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        about(&run, "git")[0],
        format!(
            "ok: git: base branch main (base_branch in config/ralph.yaml); HEAD is detached at {short}, and the run checks main out first"
        )
    );
}

#[test]
fn the_codex_app_server_is_checked_for_its_version_and_login() {
    let p = healthy();
    let codex = |version: &str| {
        format!(
            "case \"$1 $2\" in\n--version*) echo 'codex-cli {version}' ;;\n'login status') echo 'Logged in using an API key' ;;\n*) exit 2 ;;\nesac\n"
        )
    };
    tool(&p, "bin/codex", &codex("0.169.0"));
    let run = doctor(&p, &["--agent", "codex-app-server"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        about(&run, "agent"),
        [
            "ok: agent: `codex-app-server`: codex 0.169.0, a version ralph was tested with; `codex login status` says it is logged in"
        ]
    );
    tool(&p, "bin/codex", &codex("0.171.2"));
    let run = doctor(&p, &["--agent", "codex-app-server"]);
    assert_eq!(
        about(&run, "agent"),
        [
            "warning: agent: `codex-app-server`: codex 0.171.2; ralph was tested with codex 0.169.x, and the app-server protocol moves fast; install the tested version (`npm install -g @openai/codex@0.169`), or run and watch the first iterations' transcripts"
        ]
    );
}

#[test]
fn spending_caps_are_checked_against_what_the_agent_reports() {
    let p = healthy();
    let with = |env: &[(&str, &str)]| {
        let output = p
            .command(RALPH)
            .env("PATH", p.path_with_aux_bin())
            .envs(env.iter().copied())
            .arg("doctor")
            .output()
            .expect("run ralph doctor");
        Run::from(output)
    };
    // No cap, no line.
    assert!(about(&with(&[]), "caps").is_empty());
    let run = with(&[
        ("RALPH_MAX_RUN_COST_USD", "5"),
        ("RALPH_MAX_TASK_TOKENS", "200000"),
    ]);
    assert_eq!(
        about(&run, "caps"),
        ["ok: caps: max_run_cost_usd, max_task_tokens counted from what `claude` reports"]
    );
    let run = with(&[
        ("RALPH_AGENT_PRESET", "gemini"),
        ("RALPH_MAX_TASK_COST_USD", "1"),
        ("RALPH_MAX_RUN_TOKENS", "9000"),
    ]);
    assert_eq!(
        about(&run, "caps"),
        [
            "warning: caps: max_task_cost_usd set, but `gemini` reports no cost: it never applies; cap its tokens instead (max_task_tokens, max_run_tokens)"
        ]
    );
    let run = with(&[
        ("RALPH_AGENT_COMMAND", "./my-agent.sh"),
        ("RALPH_MAX_RUN_TOKENS", "9000"),
    ]);
    let caps = about(&run, "caps");
    assert_eq!(caps.len(), 1, "{run:#?}");
    assert!(
        caps[0].starts_with("warning: caps: max_run_tokens set, but whether command `./my-agent.sh` reports its cost or tokens shows only in its output"),
        "{caps:?}"
    );
}

#[test]
fn a_git_ssh_key_is_checked_when_set() {
    let p = healthy();
    let config = p
        .read("config/ralph.yaml")
        .replace("  ssh_key: null", "  ssh_key: keys/deploy");
    let p = p.file("config/ralph.yaml", config);
    p.git(&["commit", "-q", "-am", "a deploy key"]);
    let run = doctor(&p, &[]);
    assert_eq!(run.code, 10, "{run:#?}");
    assert_eq!(
        about(&run, "push"),
        [
            "error: push: git.ssh_key: <project>/keys/deploy: there is no such file, so the push would fail after the work is done; point git.ssh_key at the private key file, readable by you alone (`chmod 600 <project>/keys/deploy`), or set it to null to push with your own ssh setup",
            "ok: push: never (git.push): the work stays in this repository",
        ]
    );
    let key = p.path().join("keys/deploy");
    std::fs::create_dir_all(key.parent().unwrap()).unwrap();
    std::fs::write(&key, "not really a key\n").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(about(&doctor(&p, &[]), "push")[0].contains(
        "keys/deploy: others may read it (mode 644), and ssh ignores such a private key"
    ));
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let run = doctor(&p, &[]);
    assert_eq!(
        about(&run, "push")[0],
        "ok: push: git.ssh_key: <project>/keys/deploy is a private key you can read; ralph's pushes use it alone"
    );
}

#[test]
fn watching_for_prds_is_checked_and_an_empty_queue_is_no_warning() {
    let p = TestProject::new().git_init();
    tool(&p, "bin/claude", "exit 0\n");
    let config = p
        .read("config/ralph.yaml")
        .replace("  prds: []", "  prds: [prds/*.md]")
        .replace(
            "  remote: null\n  # Largest",
            "  remote: upstream\n  # Largest",
        );
    let p = p.file("config/ralph.yaml", config);
    p.git(&["commit", "-q", "-am", "watch"]);
    let run = doctor(&p, &[]);
    assert_eq!(run.code, 10, "{run:#?}");
    assert_eq!(
        about(&run, "watch"),
        [
            "error: watch: watch.remote: there is no remote \"upstream\"; add it (`git remote add upstream URL`), or set watch.remote to one `git remote -v` lists"
        ]
    );
    assert_eq!(
        about(&run, "queue")[1..],
        [
            "ok: queue: no task yet: `ralph run --poll` plans the PRDs pushed to the watched branch (watch.prds)"
        ]
    );
    p.git(&["remote", "add", "upstream", "/nowhere.git"]);
    assert_eq!(
        about(&doctor(&p, &[]), "watch"),
        [
            "ok: watch: prds/*.md on upstream/main, fetched at each look; the base, when it is that branch, is fast-forwarded to it when the run is idle"
        ]
    );
}
