//! Confined agents, with the real bubblewrap: what an agent may write
//! (its checkout, the git folder, the queue, its temporary folder) and
//! what it may not (the home folder, the system, a sibling folder,
//! another worker's tree), the keys it cannot read, and the settings'
//! `on` and `auto` when bubblewrap is missing or cannot confine.

use std::process::Command;

use crate::support::{TestProject, Tool, finish, path_without, skip_without};

fn pending(id: &str) -> String {
    format!(r#"{{"id":"{id}","title":"task {id}","status":"pending","leaf":true}}"#)
}

/// What the agent tries, each line of `$PROBE` saying `<what> written`
/// or `<what> refused` (`$SIBLING` is a folder beside the project; the
/// probe is in `.ralph/tmp/`, which a confined agent may write).
const PROBES: &str = r#"PROBE="$RALPH_PROJECT_DIR/.ralph/tmp/probe-$RALPH_TASK_ID.txt"
try() { if ( eval "$1" ); then echo "$2 written" >> "$PROBE"; else echo "$2 refused" >> "$PROBE"; fi; }
try 'echo x >> "$HOME/.bashrc"' home
try 'echo x > /etc/ralph-test' system
try 'echo x > "$SIBLING/x"' sibling
try 'echo x > "$TMPDIR/t" && [ "$TMPDIR" != /tmp ]' tmp
if cat "$HOME/.ssh/id_ed25519" 2> /dev/null | grep -q PRIVATE; then echo "key read" >> "$PROBE"; else echo "key hidden" >> "$PROBE"; fi
"#;

/// A project whose home folder (outside it) holds a key and a `.bashrc`,
/// with a sibling folder beside it.
fn project() -> TestProject {
    let p = TestProject::new().task(&pending("A")).git_init();
    let home = p.aux().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(
        home.join(".ssh/id_ed25519"),
        "-----BEGIN OPENSSH PRIVATE KEY-----\n",
    )
    .unwrap();
    std::fs::write(home.join(".bashrc"), "# mine\n").unwrap();
    std::fs::create_dir_all(p.aux().join("sibling")).unwrap();
    p
}

fn confined(p: &TestProject, args: &[&str]) -> Command {
    let mut command = p.run_command(args);
    command
        .env("RALPH_SANDBOX_MODE", "on")
        .env("HOME", p.aux().join("home"));
    command
}

/// The agent's script: `$SIBLING` named (a confined agent does not get
/// the variables of ralph's environment a test would set), then `body`.
fn agent_with_sibling(p: TestProject, body: &str) -> TestProject {
    let sibling = p.aux().join("sibling");
    p.agent(&format!("SIBLING='{}'\n{body}", sibling.display()))
}

#[test]
fn a_confined_agent_does_its_task_and_writes_nowhere_else() {
    if skip_without(Tool::Bwrap) {
        return;
    }
    let p = agent_with_sibling(
        project(),
        &format!("{PROBES}work A.txt done\nralph task complete A > /dev/null\n"),
    );
    let run = finish(confined(&p, &[]), 60);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stderr.contains("agents run confined: bubblewrap"),
        "{run:#?}"
    );
    // The refusals are named, with the way to widen the sandbox.
    let (home, sibling) = (p.aux().join("home"), p.aux().join("sibling"));
    // (The first: the test's own prelude, recording the call outside.)
    let named = format!(
        "A: the sandbox refused the agent's writes to {}, {}/.bashrc, /etc/ralph-test, {}/x; ralph's configuration, the git folder's settings and hooks are a person's to change (docs/SECURITY.md); for another path it needs, add it to sandbox.writable in config/ralph.yaml\n",
        p.aux().join("rec/calls").display(),
        home.display(),
        sibling.display()
    );
    assert!(run.stderr.contains(&named), "{run:#?}");
    let iteration = p
        .json_lines(".ralph/events.ndjson")
        .into_iter()
        .find(|event| event["phase"] == "iteration")
        .unwrap();
    assert_eq!(iteration["refused_writes"].as_array().unwrap().len(), 4);
    assert_eq!(
        p.read(".ralph/tmp/probe-A.txt"),
        "home refused\nsystem refused\nsibling refused\ntmp written\nkey hidden\n"
    );
    // Nothing outside was written; the task's own work was merged.
    assert_eq!(
        std::fs::read_to_string(p.aux().join("home/.bashrc")).unwrap(),
        "# mine\n"
    );
    assert!(!std::path::Path::new("/etc/ralph-test").exists());
    assert!(!p.aux().join("sibling/x").exists());
    assert_eq!(p.git(&["show", "main:A.txt"]), "done");
    assert!(p.read("tasks-done.jsonl").contains(r#""id":"A""#));
}

#[test]
fn a_workers_agent_cannot_write_into_another_workers_tree() {
    if skip_without(Tool::Bwrap) {
        return;
    }
    let p = project().task(&pending("B")).agent(
        r#"PROBE="$RALPH_PROJECT_DIR/.ralph/tmp/probe-$RALPH_TASK_ID.txt"
if [ "$RALPH_TASK_ID" = A ]; then
  i=0
  while [ ! -d ../B ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
  [ -d ../B ] && echo "B seen" >> "$PROBE"
  if ( echo x >> "$RALPH_PROJECT_DIR/working.md" ) 2> /dev/null; then echo "checkout written" >> "$PROBE"; else echo "checkout refused" >> "$PROBE"; fi
  if ( echo x > ../B/from-A.txt ) 2> /dev/null; then echo "other tree written" >> "$PROBE"; else echo "other tree refused" >> "$PROBE"; fi
else
  sleep 1
fi
work "$RALPH_TASK_ID.txt" done
ralph task complete "$RALPH_TASK_ID" > /dev/null
"#,
    );
    let run = finish(confined(&p, &["--workers", "2"]), 60);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        p.read(".ralph/tmp/probe-A.txt"),
        "B seen\ncheckout refused\nother tree refused\n"
    );
    assert_eq!(p.git(&["show", "main:B.txt"]), "done");
    assert!(p.try_git(&["show", "main:from-A.txt"]).is_none());
}

#[test]
fn on_without_bubblewrap_refuses_to_start_naming_what_to_install() {
    let p = project().agent("work A.txt done\n");
    let mut command = confined(&p, &[]);
    command.env("PATH", path_without("bwrap", &p.aux().join("path")));
    let run = finish(command, 60);
    assert_eq!(run.code, 30, "{run:#?}");
    assert_eq!(
        run.stderr,
        "error: sandbox.mode is on and agents cannot be confined: no bwrap on PATH: install bubblewrap (Debian, Ubuntu: apt install bubblewrap; Fedora: dnf install bubblewrap)\nhint: install it, or set sandbox.mode to auto (run unconfined when it cannot) in config/ralph.yaml\n"
    );
    assert_eq!(p.calls().len(), 0, "no agent ran");
}

#[test]
fn auto_where_bubblewrap_cannot_confine_runs_unconfined_and_says_why_once() {
    let p = project().agent("work A.txt done\nralph task complete A > /dev/null\n");
    // A bubblewrap that this machine forbids its namespaces.
    p.script(
        "bin/bwrap",
        "echo 'bwrap: No permissions to create new namespace' >&2\nexit 1\n",
    );
    let mut command = confined(&p, &[]);
    command
        .env("RALPH_SANDBOX_MODE", "auto")
        .env("PATH", p.path_with_aux_bin());
    let run = finish(command, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    let warning = "warning: agents run unconfined: bubblewrap cannot confine here: bwrap: No permissions to create new namespace; sandbox.mode: off in config/ralph.yaml says you mean it (docs/AGENT.md)\n";
    assert_eq!(run.stderr.matches(warning).count(), 1, "{run:#?}");
    assert_eq!(p.git(&["show", "main:A.txt"]), "done");
}

#[test]
fn dry_run_prints_the_exact_confinement_and_doctor_the_tool() {
    if skip_without(Tool::Bwrap) {
        return;
    }
    let p = project().agent("work A.txt done\n");
    let dir = p.path().display().to_string();
    let home = p.aux().join("home").display().to_string();
    let run = finish(confined(&p, &["--dry-run"]), 60);
    assert_eq!(run.code, 0, "{run:#?}");
    let line = run
        .stdout
        .lines()
        .skip_while(|line| !line.starts_with("sandbox: bubblewrap "))
        .nth(1)
        .unwrap_or_else(|| panic!("{run:#?}"));
    assert!(line.starts_with("  "), "{line}");
    assert!(
        line.contains(
            "bwrap --ro-bind / / --dev /dev --unshare-pid --proc /proc --new-session --die-with-parent --cap-drop ALL"
        ),
        "{line}"
    );
    assert!(
        line.contains(&format!(" --bind-try {dir} {dir} ")),
        "{line}"
    );
    assert!(line.contains(&format!(" --tmpfs {home}/.ssh ")), "{line}");
    assert!(line.ends_with(" --"), "{line}");
    let json = finish(confined(&p, &["--dry-run", "--json"]), 60);
    let json: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert!(
        json["sandbox"][0].as_str().unwrap().ends_with("/bwrap"),
        "{json}"
    );
    // Nothing ran, and the doctor says the same.
    assert_eq!(p.calls().len(), 0);
    let mut doctor = p.ralph_command(&["doctor"]);
    doctor
        .env("RALPH_SANDBOX_MODE", "auto")
        .env("HOME", p.aux().join("home"));
    let doctor = finish(doctor, 60);
    assert!(
        doctor
            .stdout
            .contains("\nok: sandbox: agents run confined: bubblewrap ")
            && doctor
                .stdout
                .contains("; a trial confinement worked here\n"),
        "{doctor:#?}"
    );
    let mut doctor = p.ralph_command(&["doctor"]);
    doctor
        .env("RALPH_SANDBOX_MODE", "on")
        .env("PATH", path_without("bwrap", &p.aux().join("path")));
    let doctor = finish(doctor, 60);
    assert_eq!(doctor.code, 10, "{doctor:#?}");
    assert!(
        doctor.stdout.contains(
            "error: sandbox: sandbox.mode is on and agents cannot be confined: no bwrap on PATH"
        ),
        "{doctor:#?}"
    );
}

#[test]
fn a_secret_split_across_two_writes_never_reaches_the_agents_log() {
    let p = project().agent(
        r#"printf 'pushing with %s' "$(printf 'ghp_%s' 'a1B2a1B2a1B2a1B2')"
sleep 0.3
printf '%s and %s\n' 'a1B2a1B2a1B2a1B2a1B2' "$DEPLOY_TOKEN"
work A.txt done
ralph task complete A > /dev/null
"#,
    );
    let mut command = p.run_command(&[]);
    command.env("DEPLOY_TOKEN", "s3cr3t-deploy-value-42");
    let run = finish(command, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    let log = p.read(".ralph/logs/1-A.log");
    assert_eq!(log, "pushing with [redacted] and [redacted]\n");
}

#[test]
fn a_failed_iterations_evidence_names_the_writes_refused() {
    if skip_without(Tool::Bwrap) {
        return;
    }
    let p = project().agent(&crate::support::by_iteration(
        "RALPH_TASK_ITERATION",
        r#"1) echo x > /etc/ralph-test; exit 1 ;;
*) work A.txt done; ralph task complete A > /dev/null ;;"#,
    ));
    let run = finish(confined(&p, &[]), 60);
    assert_eq!(run.code, 0, "{run:#?}");
    let prompt = p.read(".ralph/prompts/2-A.md");
    assert!(
        prompt.contains("the sandbox refused the agent's writes to ")
            && prompt.contains("/etc/ralph-test; ralph's configuration, the git folder's settings and hooks are a person's to change (docs/SECURITY.md); for another path it needs, add it to sandbox.writable"),
        "{prompt}"
    );
}

#[test]
fn cargo_and_npm_build_inside_the_sandbox_with_their_caches() {
    if skip_without(Tool::Bwrap) || skip_without(Tool::Npm) {
        return;
    }
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cargo")
        });
    let rustup_home = std::env::var_os("RUSTUP_HOME")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var_os("HOME").unwrap()).join(".rustup")
        });
    let p = project()
        .file("Cargo.toml", "[package]\nname = \"hello\"\nversion = \"0.1.0\"\nedition = \"2021\"\n")
        .file("src/main.rs", "fn main() { println!(\"hello\"); }\n")
        .file(
            "package.json",
            r#"{"name":"hello","version":"1.0.0","scripts":{"build":"node -e \"require('fs').writeFileSync('npm-built.txt','ok')\""}}"#,
        )
        .file(".gitignore", "target/\nnpm-built.txt\n");
    p.git(&["add", "-A"]);
    p.git(&["commit", "-q", "-m", "a crate and a package"]);
    // The npm cache exists, as it does once npm has run.
    std::fs::create_dir_all(p.aux().join("home/.npm")).unwrap();
    let p = p.agent(
        r#"cargo build --offline --quiet && [ -x target/debug/hello ] && echo "cargo built" >> .ralph/tmp/probe.txt
npm run build --silent && [ -e npm-built.txt ] && echo "npm built" >> .ralph/tmp/probe.txt
ls "$HOME/.npm/_logs" > /dev/null 2>&1 && echo "npm cache written" >> .ralph/tmp/probe.txt
work A.txt done
ralph task complete A > /dev/null
"#,
    );
    let mut command = confined(&p, &[]);
    command
        .env("CARGO_HOME", &cargo_home)
        .env("RUSTUP_HOME", &rustup_home)
        .env(
            "PATH",
            format!(
                "{}:{}",
                cargo_home.join("bin").display(),
                std::env::var("PATH").unwrap()
            ),
        );
    let run = finish(command, 120);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        p.read(".ralph/tmp/probe.txt"),
        "cargo built\nnpm built\nnpm cache written\n",
        "{run:#?}"
    );
}

#[test]
fn with_the_network_off_a_confined_agent_reaches_nothing() {
    if skip_without(Tool::Bwrap) || skip_without(Tool::Python3) {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let agent = format!(
        r#"if python3 -c "import socket; socket.create_connection(('127.0.0.1', {port}), 2)" 2> /dev/null; then echo reached >> .ralph/tmp/probe.txt; else echo "not reached" >> .ralph/tmp/probe.txt; fi
work A.txt done
ralph task complete A > /dev/null
"#
    );
    // As the user has it: the listener here is reached.
    let p = project().agent(&agent);
    let run = finish(confined(&p, &[]), 60);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(p.read(".ralph/tmp/probe.txt"), "reached\n");
    // sandbox.network: false: not even loopback.
    let p = project().agent(&agent);
    let mut command = confined(&p, &[]);
    command.env("RALPH_SANDBOX_NETWORK", "false");
    let run = finish(command, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(p.read(".ralph/tmp/probe.txt"), "not reached\n");
    drop(listener);
}

#[test]
fn the_planning_agent_is_confined_too() {
    if skip_without(Tool::Bwrap) {
        return;
    }
    let p = agent_with_sibling(
        project().file("prd.md", "# Export\n\nNotes out as CSV.\n"),
        &format!("{PROBES}ralph task add \"Export as CSV\" > /dev/null\n"),
    );
    let agent = p.aux().join("agent.sh");
    let mut command = p.ralph_command(&[
        "plan",
        "--agent",
        "prd.md",
        "--agent-cmd",
        agent.to_str().unwrap(),
    ]);
    command
        .env("RALPH_SANDBOX_MODE", "on")
        .env("HOME", p.aux().join("home"));
    let run = finish(command, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    // It wrote the queue, and nothing outside.
    assert!(p.read("tasks.jsonl").contains("Export as CSV"));
    assert_eq!(
        p.read(".ralph/tmp/probe-.txt"),
        "home refused\nsystem refused\nsibling refused\ntmp written\nkey hidden\n"
    );
}
