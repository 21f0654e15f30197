//! The agent module through its library API, with fake agents: small shell
//! scripts named after each preset's binary that record their argv, stdin
//! and environment, print canned output, sleep, spawn children and exit N.

use ralph::Reportable;
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use assert_fs::TempDir;
use ralph::agent::{
    self, Context, Echo, FailureClass, Host, Limits, MAX_ARG_BYTES, Outcome, Preset, PromptPassing,
    Request, Spec, Status, TRIMMED_MARKER, Usage,
};

/// Records argv (NUL-separated), what stdin is, stdin's content and the
/// environment into `$REC`.
const RECORD: &str = r#"printf '%s\0' "$@" > "$REC/argv"
readlink /proc/$$/fd/0 > "$REC/stdin_is"
cat > "$REC/stdin"
env > "$REC/env"
pwd > "$REC/pwd"
"#;

/// A temporary project, a folder of fake agents and a folder of records.
struct Bench {
    dir: TempDir,
    root: bool,
}

impl Bench {
    fn new() -> Bench {
        let dir = TempDir::new().expect("temp dir");
        for folder in ["project/.ralph/prompts", "bin", "rec", "ralph-bin"] {
            fs::create_dir_all(dir.path().join(folder)).expect("folders");
        }
        Bench { dir, root: false }
    }

    fn project(&self) -> PathBuf {
        self.dir.path().join("project")
    }

    fn rec_dir(&self) -> PathBuf {
        self.dir.path().join("rec")
    }

    fn rec(&self, name: &str) -> String {
        fs::read_to_string(self.rec_dir().join(name)).unwrap_or_default()
    }

    fn argv(&self) -> Vec<String> {
        let argv = self.rec("argv");
        let mut args: Vec<String> = argv.split('\0').map(str::to_owned).collect();
        args.pop();
        args
    }

    fn env(&self) -> BTreeMap<String, String> {
        self.rec("env")
            .lines()
            .filter_map(|line| line.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    /// Writes an executable shell script at `path` (relative to the temp dir).
    fn script(&self, path: &str, body: &str) {
        let full = self.dir.path().join(path);
        let text = format!("#!/bin/sh\nREC='{}'\n{body}", self.rec_dir().display());
        fs::write(&full, text).expect("write script");
        fs::set_permissions(&full, fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    /// A fake agent binary on the agent's PATH.
    fn fake(&self, program: &str, body: &str) {
        self.script(&format!("bin/{program}"), body);
    }

    fn host(&self) -> Host {
        Host {
            env: vec![
                (
                    "PATH".into(),
                    format!("{}:/usr/bin:/bin", self.dir.path().join("bin").display()).into(),
                ),
                ("HOME".into(), self.dir.path().into()),
                ("CLAUDECODE".into(), "1".into()),
                ("CLAUDE_CODE_ENTRYPOINT".into(), "sdk-ts".into()),
                ("KEEP_ME".into(), "yes".into()),
            ],
            project_dir: self.project(),
            ralph_bin: self.dir.path().join("ralph-bin/ralph"),
            is_root: self.root,
        }
    }

    fn context() -> Context {
        Context {
            task_id: "A.1".to_owned(),
            task_title: "Pick a session library".to_owned(),
            role: Some("reviewer".to_owned()),
            iteration: 7,
            task_iteration: 2,
            branch: "task/A.1-pick-a-session-library".to_owned(),
            run_id: "run-1".to_owned(),
            worker: None,
        }
    }

    fn limits(timeout_ms: u64) -> Limits {
        Limits {
            timeout: Duration::from_millis(timeout_ms),
            grace: Duration::from_millis(200),
            log_bytes: Limits::DEFAULT_LOG_BYTES,
        }
    }

    fn run_with(
        &self,
        spec: &Spec,
        prompt: &str,
        limits: Limits,
        cancel: Option<&AtomicBool>,
    ) -> Result<Outcome, agent::Error> {
        let prompt_file = Path::new(".ralph/prompts/7-A.1.md");
        fs::write(self.project().join(prompt_file), prompt).expect("save prompt");
        let log_file = self.project().join(".ralph/logs/7-A.1.log");
        agent::run(
            spec,
            &self.host(),
            &Request {
                context: &Bench::context(),
                prompt,
                prompt_file,
                log_file: &log_file,
                limits,
                cancel,
                echo: Echo::Off,
                group_file: None,
                work_dir: None,
                model: None,
                activity: None,
                confinement: None,
            },
        )
    }

    fn run(&self, spec: &Spec, prompt: &str) -> Outcome {
        self.run_with(spec, prompt, Bench::limits(10_000), None)
            .expect("agent runs")
    }

    fn log(&self) -> Vec<u8> {
        fs::read(self.project().join(".ralph/logs/7-A.1.log")).unwrap_or_default()
    }

    fn pid(&self, name: &str) -> i32 {
        self.rec(name)
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("pid in {name}"))
    }
}

/// Whether a process runs: present and not a zombie (an orphan's zombie
/// may linger when init does not reap).
fn running(pid: i32) -> bool {
    let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.trim_start().chars().next());
    !matches!(state, Some(Some('Z' | 'X')))
}

fn wait_for_file(path: &Path) {
    for _ in 0..200 {
        if path.exists() && fs::metadata(path).is_ok_and(|m| m.len() > 0) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("{} never appeared", path.display());
}

#[test]
fn every_preset_gets_its_command_line_prompt_and_environment() {
    let prompt = "Do the task.\nIt's \"quoted\" and has $dollars.\n";
    let stdin = PromptPassing::Stdin;
    let cases: [(Preset, &[&str], PromptPassing); 8] = [
        (
            Preset::Claude,
            &[
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--dangerously-skip-permissions",
                "--model",
                "big",
            ],
            stdin,
        ),
        (
            Preset::Codex,
            &[
                "exec",
                "--json",
                "--dangerously-bypass-approvals-and-sandbox",
                "--skip-git-repo-check",
                "-m",
                "big",
                "-",
            ],
            stdin,
        ),
        (
            Preset::Opencode,
            &["run", "--format", "json", "--auto", "-m", "big"],
            stdin,
        ),
        (
            Preset::Amp,
            &["-x", "--stream-json", "--dangerously-allow-all"],
            stdin,
        ),
        (
            Preset::Gemini,
            &["-o", "stream-json", "--yolo", "--skip-trust", "-m", "big"],
            stdin,
        ),
        (
            Preset::Qwen,
            &["-o", "stream-json", "--yolo", "-m", "big"],
            stdin,
        ),
        (
            Preset::Aider,
            &[
                "--message-file",
                "PROMPT_FILE",
                "--yes-always",
                "--no-pretty",
                "--no-stream",
                "--no-check-update",
                "--analytics-disable",
                "--no-show-model-warnings",
                "--no-auto-commits",
                "--model",
                "big",
            ],
            PromptPassing::File,
        ),
        (
            Preset::Cursor,
            &[
                "-p",
                "--output-format",
                "stream-json",
                "--force",
                "--trust",
                "--model",
                "big",
            ],
            stdin,
        ),
    ];
    for (preset, expected, passing) in cases {
        let bench = Bench::new();
        bench.fake(preset.program(), RECORD);
        let model = (preset != Preset::Amp).then_some("big");
        let outcome = bench.run(&Spec::preset(preset, model).unwrap(), prompt);
        assert!(outcome.succeeded(), "{preset}: {outcome:?}");
        assert_eq!(outcome.passing, passing, "{preset}");

        let prompt_file = bench.project().join(".ralph/prompts/7-A.1.md");
        let expected: Vec<String> = expected
            .iter()
            .map(|arg| match *arg {
                "PROMPT_FILE" => prompt_file.display().to_string(),
                arg => arg.to_owned(),
            })
            .collect();
        assert_eq!(bench.argv(), expected, "{preset}");
        if passing == stdin {
            assert_eq!(bench.rec("stdin"), prompt, "{preset}");
        } else {
            assert_eq!(bench.rec("stdin_is").trim(), "/dev/null", "{preset}");
        }

        let env = bench.env();
        let var = |key: &str| env.get(key).map(String::as_str);
        assert_eq!(var("RALPH_TASK_ID"), Some("A.1"));
        assert_eq!(var("RALPH_TASK_TITLE"), Some("Pick a session library"));
        assert_eq!(var("RALPH_ROLE"), Some("reviewer"));
        assert_eq!(var("RALPH_ITERATION"), Some("7"));
        assert_eq!(var("RALPH_TASK_ITERATION"), Some("2"));
        assert_eq!(var("RALPH_BRANCH"), Some("task/A.1-pick-a-session-library"));
        assert_eq!(
            var("RALPH_PROMPT_FILE"),
            Some(prompt_file.to_str().unwrap())
        );
        assert_eq!(
            var("RALPH_PROJECT_DIR"),
            Some(bench.project().to_str().unwrap())
        );
        assert_eq!(var("RALPH_RUN_ID"), Some("run-1"));
        let ralph_bin = bench.dir.path().join("ralph-bin/ralph");
        assert_eq!(var("RALPH_BIN"), Some(ralph_bin.to_str().unwrap()));
        let path = var("PATH").unwrap();
        let ralph_dir = bench.dir.path().join("ralph-bin");
        assert!(
            path.starts_with(&format!("{}:", ralph_dir.display())),
            "{path}"
        );
        assert_eq!(var("CLAUDECODE"), None);
        assert_eq!(var("CLAUDE_CODE_ENTRYPOINT"), None);
        assert_eq!(var("KEEP_ME"), Some("yes"));
        assert_eq!(bench.rec("pwd").trim(), bench.project().to_str().unwrap());
    }
}

#[test]
fn claude_as_root_is_told_it_runs_in_a_sandbox() {
    let mut bench = Bench::new();
    bench.root = true;
    bench.fake("claude", RECORD);
    bench.run(&Spec::preset(Preset::Claude, None).unwrap(), "p");
    assert_eq!(bench.env().get("IS_SANDBOX").map(String::as_str), Some("1"));

    let bench = Bench::new();
    bench.fake("claude", RECORD);
    bench.run(&Spec::preset(Preset::Claude, None).unwrap(), "p");
    assert_eq!(bench.env().get("IS_SANDBOX"), None);

    let mut bench = Bench::new();
    bench.root = true;
    bench.fake("gemini", RECORD);
    bench.run(&Spec::preset(Preset::Gemini, None).unwrap(), "p");
    assert_eq!(bench.env().get("IS_SANDBOX"), None);
}

#[test]
fn custom_commands_substitute_placeholders_and_respect_quotes() {
    let bench = Bench::new();
    bench.script("project/agent.sh", RECORD);
    let spec =
        Spec::custom(r#"./agent.sh --file={prompt_file} --say "two words" 'lit {prompt}' plain"#)
            .unwrap();
    let outcome = bench.run(&spec, "hello {prompt_file}");
    assert!(outcome.succeeded(), "{outcome:?}");
    let prompt_file = bench.project().join(".ralph/prompts/7-A.1.md");
    assert_eq!(
        bench.argv(),
        [
            format!("--file={}", prompt_file.display()),
            "--say".to_owned(),
            "two words".to_owned(),
            "lit hello {prompt_file}".to_owned(),
            "plain".to_owned(),
        ]
    );
    assert_eq!(bench.rec("stdin_is").trim(), "/dev/null");
    assert_eq!(outcome.passing, PromptPassing::Argv);

    // A prompt in argv leaves stdin null (codex would wait on it otherwise),
    // and the tool's name picks its output conventions.
    let bench = Bench::new();
    bench.fake(
        "codex",
        &format!("{RECORD}echo '{{\"type\":\"turn.failed\",\"error\":{{\"message\":\"401 Unauthorized\"}}}}'\nexit 1\n"),
    );
    let outcome = bench.run(&Spec::custom("codex exec --json {prompt}").unwrap(), "go");
    assert_eq!(bench.argv(), ["exec", "--json", "go"]);
    assert_eq!(bench.rec("stdin_is").trim(), "/dev/null");
    assert_eq!(outcome.failure.unwrap().class, FailureClass::Auth);

    // Without placeholders the prompt goes to stdin.
    let bench = Bench::new();
    bench.fake("my-agent", RECORD);
    let outcome = bench.run(&Spec::custom("my-agent --flag").unwrap(), "on stdin");
    assert_eq!(bench.argv(), ["--flag"]);
    assert_eq!(bench.rec("stdin"), "on stdin");
    assert_eq!(outcome.passing, PromptPassing::Stdin);
}

#[test]
fn prompts_of_128_kib_never_go_in_argv() {
    let big = "p".repeat(MAX_ARG_BYTES + 10);
    let bench = Bench::new();
    bench.fake("amp", RECORD);
    let outcome = bench.run(&Spec::preset(Preset::Amp, None).unwrap(), &big);
    assert!(outcome.succeeded(), "{outcome:?}");
    assert_eq!(outcome.passing, PromptPassing::Stdin);
    assert_eq!(
        bench.argv(),
        ["-x", "--stream-json", "--dangerously-allow-all"]
    );
    assert_eq!(bench.rec("stdin"), big);

    let bench = Bench::new();
    bench.fake("cursor-agent", RECORD);
    bench.run(&Spec::preset(Preset::Cursor, None).unwrap(), &big);
    assert_eq!(bench.rec("stdin").len(), big.len());
    assert!(!bench.argv().contains(&big));

    let bench = Bench::new();
    bench.fake("my-agent", RECORD);
    let err = bench
        .run_with(
            &Spec::custom("my-agent {prompt}").unwrap(),
            &big,
            Bench::limits(10_000),
            None,
        )
        .unwrap_err();
    assert_eq!(
        ralph::cli::Report(&err.into()).to_string(),
        "error: the prompt (131082 bytes) is too long for one command-line argument (the limit is 131071 bytes)\n\
         hint: write {prompt_file} instead of {prompt} in the agent command, or drop both to pass the prompt on stdin"
    );
    assert_eq!(bench.rec("argv"), "", "the agent never started");

    // Just under the limit still goes in argv.
    let fits = "p".repeat(MAX_ARG_BYTES - 1);
    bench.run(&Spec::custom("my-agent {prompt}").unwrap(), &fits);
    assert_eq!(bench.argv(), [fits]);
}

#[test]
fn a_big_prompt_to_an_agent_that_never_reads_stdin_does_not_block() {
    let bench = Bench::new();
    bench.fake("claude", "echo done\nexit 0\n");
    let big = "x".repeat(4 * 1024 * 1024);
    let outcome = bench.run(&Spec::preset(Preset::Claude, None).unwrap(), &big);
    assert!(outcome.succeeded(), "{outcome:?}");
    assert_eq!(outcome.tail, "done\n");
}

#[test]
fn a_timeout_stops_the_whole_group_even_a_child_ignoring_sigterm() {
    let bench = Bench::new();
    bench.fake(
        "claude",
        r#"echo $$ > "$REC/leader.pid"
sleep 1000 &
echo $! > "$REC/sleep.pid"
sh -c 'trap "" TERM; echo $$ > "$1/stubborn.tmp"; mv "$1/stubborn.tmp" "$1/stubborn.pid"; while :; do sleep 0.05; done' stubborn "$REC" &
echo started
wait
"#,
    );
    let outcome = bench
        .run_with(
            &Spec::preset(Preset::Claude, None).unwrap(),
            "p",
            // Long enough for every process to start on a busy machine.
            Bench::limits(2000),
            None,
        )
        .unwrap();
    assert!(outcome.timed_out);
    assert!(!outcome.interrupted);
    let failure = outcome.failure.clone().unwrap();
    assert_eq!(failure.class, FailureClass::Timeout);
    assert_eq!(failure.reason, "timed out after 2s");
    assert_eq!(outcome.status, Status::Signaled(15));
    assert_eq!(outcome.tail, "started\n");
    for pid in ["leader.pid", "sleep.pid", "stubborn.pid"] {
        assert!(!running(bench.pid(pid)), "{pid} still runs");
    }
}

#[test]
fn nothing_the_agent_started_outlives_a_normal_exit() {
    let bench = Bench::new();
    bench.fake(
        "codex",
        r#"sleep 1000 &
echo $! > "$REC/sleep.pid"
sh -c 'trap "" TERM; while :; do sleep 0.05; done' &
echo $! > "$REC/stubborn.pid"
cat > /dev/null
exit 0
"#,
    );
    let outcome = bench.run(&Spec::preset(Preset::Codex, None).unwrap(), "p");
    assert!(outcome.succeeded(), "{outcome:?}");
    assert_eq!(outcome.status, Status::Exited(0));
    assert!(!running(bench.pid("sleep.pid")));
    assert!(!running(bench.pid("stubborn.pid")));
}

#[test]
fn cancellation_stops_the_group_and_reports_interrupted() {
    let bench = Bench::new();
    bench.fake(
        "gemini",
        r#"sleep 1000 &
echo $! > "$REC/sleep.pid"
echo working
wait
"#,
    );
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&cancel);
    let pid_file = bench.rec_dir().join("sleep.pid");
    let setter = std::thread::spawn(move || {
        wait_for_file(&pid_file);
        flag.store(true, Ordering::SeqCst);
    });
    let outcome = bench
        .run_with(
            &Spec::preset(Preset::Gemini, None).unwrap(),
            "p",
            Bench::limits(10_000),
            Some(&cancel),
        )
        .unwrap();
    setter.join().unwrap();
    assert!(outcome.interrupted);
    assert!(!outcome.timed_out);
    assert_eq!(outcome.failure, None);
    assert!(!outcome.succeeded());
    assert_eq!(outcome.tail, "working\n");
    assert!(!running(bench.pid("sleep.pid")));
}

#[test]
fn a_flood_of_output_keeps_the_log_bounded() {
    let bench = Bench::new();
    // 50 MiB of lines, then a last line.
    bench.fake(
        "opencode",
        r#"cat > /dev/null
yes 'a line of agent output that goes on' | head -c 52428800
echo 'the very end'
"#,
    );
    let limits = Limits {
        log_bytes: 1024 * 1024,
        ..Bench::limits(20_000)
    };
    let outcome = bench
        .run_with(
            &Spec::preset(Preset::Opencode, None).unwrap(),
            "p",
            limits,
            None,
        )
        .unwrap();
    assert!(outcome.succeeded(), "{outcome:?}");
    assert_eq!(outcome.output_bytes, 52_428_800 + 13);
    let log = bench.log();
    assert!(log.len() <= 1024 * 1024, "log is {} bytes", log.len());
    assert!(log.len() >= 256 * 1024, "log keeps a useful tail");
    assert!(log.starts_with(TRIMMED_MARKER.as_bytes()));
    assert!(log.ends_with(b"the very end\n"));
    assert!(outcome.tail.ends_with("the very end\n"));
    assert!(outcome.tail.len() <= agent::EVIDENCE_BYTES);
}

#[test]
fn the_log_holds_stdout_and_stderr_in_order() {
    let bench = Bench::new();
    bench.fake(
        "qwen",
        "cat > /dev/null\necho one\necho two >&2\necho three\nexit 3\n",
    );
    let outcome = bench.run(&Spec::preset(Preset::Qwen, None).unwrap(), "p");
    assert_eq!(bench.log(), b"one\ntwo\nthree\n");
    assert_eq!(outcome.status, Status::Exited(3));
    assert_eq!(outcome.output_bytes, 14);
    let failure = outcome.failure.unwrap();
    assert_eq!(failure.class, FailureClass::Exit);
    assert_eq!(failure.reason, "qwen failed with exit code 3");
}

#[test]
fn a_missing_binary_names_the_preset_and_how_to_install_it() {
    let bench = Bench::new();
    let err = bench
        .run_with(
            &Spec::preset(Preset::Claude, None).unwrap(),
            "p",
            Bench::limits(1000),
            None,
        )
        .unwrap_err();
    assert_eq!(err.class(), Some(FailureClass::MissingBinary));
    let err = ralph::Error::from(err);
    assert_eq!(err.exit(), ralph::Exit::InvalidInput);
    assert_eq!(
        ralph::cli::Report(&err).to_string(),
        "error: agent `claude` not found: no `claude` on PATH\n\
         hint: install Claude Code (npm i -g @anthropic-ai/claude-code), or choose another agent: set agent.preset or agent.command in config/ralph.yaml, or pass --agent or --agent-cmd"
    );

    let err =
        agent::preflight(&Spec::preset(Preset::Cursor, None).unwrap(), &bench.host()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "agent `cursor` not found: no `cursor-agent` on PATH"
    );
    assert_eq!(
        err.hint().unwrap(),
        "install the Cursor CLI (curl https://cursor.com/install -fsS | bash), or choose another agent: set agent.preset or agent.command in config/ralph.yaml, or pass --agent or --agent-cmd"
    );

    // `./bin/agent` as a custom command: its error as the person reads it.
    let custom = || {
        let err = bench
            .run_with(
                &Spec::custom("./bin/agent {prompt_file}").unwrap(),
                "p",
                Bench::limits(1000),
                None,
            )
            .unwrap_err();
        let err = ralph::Error::from(err);
        assert_eq!(err.exit(), ralph::Exit::InvalidInput);
        ralph::cli::Report(&err).to_string()
    };
    assert_eq!(
        custom(),
        format!(
            "error: agent command not found: there is no file {}/bin/agent\n\
             hint: fix agent.command in config/ralph.yaml or --agent-cmd (a relative path starts at the project folder)",
            bench.project().display()
        )
    );

    // The file is there, without its execute bit: said so, with the fix.
    fs::create_dir_all(bench.project().join("bin")).unwrap();
    fs::write(bench.project().join("bin/agent"), "#!/bin/sh\n").unwrap();
    assert_eq!(
        custom(),
        format!(
            "error: agent command {0}/bin/agent: the file is there but not executable\n\
             hint: make it executable: chmod +x {0}/bin/agent",
            bench.project().display()
        )
    );
}

#[test]
fn an_unstartable_agent_is_a_transient_error() {
    let bench = Bench::new();
    fs::write(bench.dir.path().join("bin/claude"), "not a script").unwrap();
    fs::set_permissions(
        bench.dir.path().join("bin/claude"),
        fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let err = bench
        .run_with(
            &Spec::preset(Preset::Claude, None).unwrap(),
            "p",
            Bench::limits(1000),
            None,
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "cannot start agent `claude` ({}/bin/claude): Exec format error (os error 8)",
            bench.dir.path().display()
        )
    );
    assert_eq!(ralph::Error::from(err).exit(), ralph::Exit::Transient);
}

#[test]
fn codex_preflight_checks_the_login() {
    let bench = Bench::new();
    bench.fake(
        "codex",
        r#"printf '%s\0' "$@" > "$REC/argv"
if [ -e "$REC/logged-in" ]; then echo "Logged in using ChatGPT"; exit 0; fi
echo "Not logged in"
exit 1
"#,
    );
    let spec = Spec::preset(Preset::Codex, None).unwrap();
    let err = agent::preflight(&spec, &bench.host()).unwrap_err();
    assert_eq!(bench.argv(), ["login", "status"]);
    assert_eq!(err.class(), Some(FailureClass::Auth));
    let err = ralph::Error::from(err);
    assert_eq!(err.exit(), ralph::Exit::Transient);
    assert_eq!(
        ralph::cli::Report(&err).to_string(),
        "error: agent `codex` is not logged in: Not logged in\n\
         hint: run `codex login`, or set OPENAI_API_KEY"
    );
    fs::write(bench.rec_dir().join("logged-in"), "").unwrap();
    agent::preflight(&spec, &bench.host()).unwrap();

    bench.fake("codex", "echo 'config error' >&2\nexit 2\n");
    let err = agent::preflight(&spec, &bench.host()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "agent `codex`: the login check failed: `codex login status` failed with exit code 2: config error"
    );

    // Other presets only need their binary.
    bench.fake("claude", "exit 1\n");
    agent::preflight(&Spec::preset(Preset::Claude, None).unwrap(), &bench.host()).unwrap();
}

#[test]
fn failures_are_classified_from_what_the_tool_prints() {
    let cases: [(Preset, &str, FailureClass); 6] = [
        (
            Preset::Claude,
            r#"echo '{"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login"}'; exit 1"#,
            FailureClass::Auth,
        ),
        (
            Preset::Claude,
            r#"echo '{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|1767323045"}'; exit 0"#,
            FailureClass::UsageLimit,
        ),
        (
            Preset::Claude,
            r#"echo '--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons' >&2; exit 1"#,
            FailureClass::Permission,
        ),
        (
            Preset::Claude,
            r#"echo '{"type":"result","subtype":"success","is_error":true,"result":"API Error: 529 overloaded"}'; exit 0"#,
            FailureClass::Exit,
        ),
        (
            Preset::Aider,
            "echo 'litellm.AuthenticationError: AnthropicException - invalid x-api-key'; exit 0",
            FailureClass::Auth,
        ),
        (
            Preset::Amp,
            "echo 'No API key found. Starting login flow...'; exit 0",
            FailureClass::Auth,
        ),
    ];
    for (preset, script, class) in cases {
        let bench = Bench::new();
        bench.fake(preset.program(), &format!("cat > /dev/null\n{script}\n"));
        let outcome = bench.run(&Spec::preset(preset, None).unwrap(), "p");
        let failure = outcome
            .failure
            .clone()
            .unwrap_or_else(|| panic!("{script}"));
        assert_eq!(failure.class, class, "{script}");
        assert!(!outcome.succeeded());
        if class == FailureClass::UsageLimit {
            assert_eq!(
                failure.resets_at.map(|at| at.timestamp()),
                Some(1_767_323_045)
            );
        }
    }
}

#[test]
fn tokens_and_cost_are_read_from_the_final_result() {
    let bench = Bench::new();
    bench.fake(
        "claude",
        r#"cat > /dev/null
echo '{"type":"system","subtype":"init"}'
echo '{"type":"result","subtype":"success","is_error":false,"result":"ok","total_cost_usd":0.0421,"usage":{"input_tokens":12,"cache_creation_input_tokens":300,"cache_read_input_tokens":4000,"output_tokens":95}}'
"#,
    );
    let outcome = bench.run(&Spec::preset(Preset::Claude, None).unwrap(), "p");
    assert!(outcome.succeeded(), "{outcome:?}");
    assert_eq!(
        outcome.usage,
        Some(Usage {
            input_tokens: 4312,
            cached_input_tokens: 4000,
            output_tokens: 95,
            cost_usd: Some(0.0421),
        })
    );

    let bench = Bench::new();
    bench.fake(
        "codex",
        r#"cat > /dev/null
echo '{"type":"turn.completed","usage":{"input_tokens":500,"cached_input_tokens":100,"output_tokens":20}}'
"#,
    );
    let outcome = bench.run(&Spec::preset(Preset::Codex, None).unwrap(), "p");
    assert_eq!(
        outcome.usage,
        Some(Usage {
            input_tokens: 500,
            cached_input_tokens: 100,
            output_tokens: 20,
            cost_usd: None,
        })
    );
}

/// A file where ralph keeps its log folder (it may be an agent's doing):
/// refused, naming it, before the agent starts; no retry cures it.
#[test]
fn a_log_folder_that_is_a_file_is_refused_naming_it() {
    let bench = Bench::new();
    bench.fake("claude", RECORD);
    fs::write(bench.project().join(".ralph/logs"), "a file, not a folder").unwrap();
    let err = bench
        .run_with(
            &Spec::preset(Preset::Claude, None).unwrap(),
            "p",
            Bench::limits(1000),
            None,
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        ".ralph/logs: a file, where ralph keeps a folder of its own"
    );
    assert_eq!(ralph::Error::from(err).exit(), ralph::Exit::InvalidInput);
    assert_eq!(bench.rec("argv"), "", "the agent never started");
}

/// amp without credentials starts a login flow and waits for a person,
/// stdin closed or not: it is stopped as soon as the prompt appears (the
/// limit here is ten minutes) and the failure is `auth`.
#[test]
fn a_login_prompt_stops_the_agent_at_once_as_auth() {
    let bench = Bench::new();
    bench.fake(
        "amp",
        r#"echo $$ > "$REC/leader.pid"
echo "No API key found. Starting login flow..."
printf 'paste your code here: '
sleep 600
"#,
    );
    let outcome = bench
        .run_with(
            &Spec::preset(Preset::Amp, None).unwrap(),
            "p",
            Bench::limits(600_000),
            None,
        )
        .unwrap();
    // Stopped at the prompt: the ten-minute limit never came.
    assert!(!outcome.timed_out);
    let failure = outcome.failure.clone().unwrap();
    assert_eq!(failure.class, FailureClass::Auth);
    assert_eq!(
        failure.reason,
        "amp started an interactive login nobody can answer in a loop (No API key found. Starting login flow...); stopped at once"
    );
    assert!(!running(bench.pid("leader.pid")));
}

/// A tool still retrying a rate limit when its time is up was waiting out
/// the limit: `usage_limit`, not the task's `timeout`.
#[test]
fn a_rate_limit_retried_past_the_timeout_is_a_usage_limit() {
    let bench = Bench::new();
    bench.fake(
        "gemini",
        r#"echo "Attempt 1 failed with status 429. Retrying with backoff..."
sleep 600
"#,
    );
    let outcome = bench
        .run_with(
            &Spec::preset(Preset::Gemini, None).unwrap(),
            "p",
            Bench::limits(1000),
            None,
        )
        .unwrap();
    assert!(outcome.timed_out);
    let failure = outcome.failure.clone().unwrap();
    assert_eq!(failure.class, FailureClass::UsageLimit);
    assert_eq!(
        failure.reason,
        "gemini: Attempt 1 failed with status 429. Retrying with backoff... (timed out after 1s, still retrying)"
    );
}
