//! The test project builder every integration test uses: a temporary
//! folder, a pinned environment, and the real `ralph` binary.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Once;

use assert_fs::TempDir;

mod browser;
mod tools;
pub(crate) use browser::{ansi_page, chromium, chromium_requests, chromium_screenshot};
pub(crate) use tools::{
    REQUIRE_TOOLS, Tool, node_with_global_modules, path_without, skip_without, summary,
};

/// Serialises the tests that load the machine the most (many processes and
/// races by design), so they do not widen each other's timing windows on a
/// small machine. Hold the guard for the whole test.
pub(crate) fn heavy() -> std::sync::MutexGuard<'static, ()> {
    static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());
    // A failed heavy test poisons the lock; the others still run.
    HEAVY
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The binary under test.
pub(crate) const RALPH: &str = env!("CARGO_BIN_EXE_ralph");

/// A temporary project folder.
pub(crate) struct TestProject {
    dir: TempDir,
    /// Outside the project: the fake agent, fake tools and their records.
    aux: TempDir,
}

impl TestProject {
    /// An empty project folder.
    pub(crate) fn new() -> TestProject {
        let aux = TempDir::new().expect("temp dir");
        for folder in ["bin", "rec"] {
            std::fs::create_dir_all(aux.path().join(folder)).expect("aux folders");
        }
        TestProject {
            dir: TempDir::new().expect("temp dir"),
            aux,
        }
    }

    /// Writes `contents` to `path` (folders created as needed).
    pub(crate) fn file(self, path: &str, contents: impl AsRef<[u8]>) -> TestProject {
        let full = self.path().join(path);
        std::fs::create_dir_all(full.parent().expect("a file has a folder"))
            .expect("create folders");
        std::fs::write(full, contents).expect("write file");
        self
    }

    /// Appends one task line (JSON, newline added) to `tasks.jsonl`.
    pub(crate) fn task(self, line: &str) -> TestProject {
        let mut text = self.read_or_empty("tasks.jsonl");
        text.push_str(line);
        text.push('\n');
        self.file("tasks.jsonl", text)
    }

    /// The project folder.
    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Reads a project file as text.
    pub(crate) fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.path().join(path))
            .unwrap_or_else(|e| panic!("read {path}: {e}"))
    }

    /// Reads a project file as bytes, empty when missing.
    pub(crate) fn bytes(&self, path: &str) -> Vec<u8> {
        std::fs::read(self.path().join(path)).unwrap_or_default()
    }

    /// Reads a project file, empty when missing.
    pub(crate) fn read_or_empty(&self, path: &str) -> String {
        std::fs::read_to_string(self.path().join(path)).unwrap_or_default()
    }

    /// Runs `ralph ARGS` in the project folder.
    pub(crate) fn ralph(&self, args: &[&str]) -> Run {
        self.ralph_in(".", args)
    }

    /// Runs `ralph ARGS` in a folder of the project.
    pub(crate) fn ralph_in(&self, folder: &str, args: &[&str]) -> Run {
        let output = pinned_command(RALPH, self.path())
            .current_dir(self.path().join(folder))
            .args(args)
            .output()
            .expect("run ralph");
        Run::from(output)
    }

    /// Runs `script` with `sh` in the project as a person would type it,
    /// `ralph` first on `PATH` (linked into `<aux>/bin`): its output, or
    /// the test fails naming the script.
    pub(crate) fn sh(&self, script: &str) -> String {
        let link = self.aux().join("bin/ralph");
        if !link.exists() {
            std::os::unix::fs::symlink(RALPH, &link).expect("link ralph");
        }
        let output = (self.command("sh"))
            .args(["-c", script])
            .env("PATH", self.path_with_aux_bin())
            .env("RALPH_PAUSE_BETWEEN_ITERATIONS", "0ms")
            .output()
            .expect("run sh");
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(output.status.success(), "`{script}` failed:\n{said}");
        said
    }

    /// A command for `program` in the project with the pinned environment.
    pub(crate) fn command(&self, program: &str) -> Command {
        let mut command = pinned_command(program, self.path());
        command.current_dir(self.path());
        command
    }
}

/// A fake agent's body that behaves by iteration: `$var`
/// (`RALPH_ITERATION`, the run's, or `RALPH_TASK_ITERATION`, the task's)
/// picks a branch of `case` from `steps`.
pub(crate) fn by_iteration(var: &str, steps: &str) -> String {
    format!("case \"${var}\" in\n{steps}\nesac\n")
}

/// The `case` branch that finishes the task: work a file of its own,
/// commit it, mark the task complete.
pub(crate) const FINISH: &str =
    r#"*) work "$RALPH_TASK_ID.txt" done; ralph task complete "$RALPH_TASK_ID" > /dev/null ;;"#;

/// Settings every `ralph run` in tests gets, so loops do not wait: no pause
/// between iterations, a short retry backoff and kill grace.
pub(crate) const FAST_RUN: [(&str, &str); 3] = [
    ("RALPH_PAUSE_BETWEEN_ITERATIONS", "0ms"),
    ("RALPH_RETRY_BACKOFF", "10ms"),
    ("RALPH_KILL_GRACE", "200ms"),
];

/// What every fake agent script starts with: `$REC` (a folder for records
/// outside the project), the prompt read from stdin, one line per call in
/// `$REC/calls` (`iteration task task_iteration role`), and `work FILE TEXT`,
/// which writes, stages and commits a file.
const AGENT_PRELUDE: &str = r#"cat > /dev/null
echo "$RALPH_ITERATION $RALPH_TASK_ID $RALPH_TASK_ITERATION ${RALPH_ROLE:-none}" >> "$REC/calls"
work() { printf '%s\n' "$2" > "$1" && git add -- "$1" && git commit -q -m "$RALPH_TASK_ID: $1"; }
"#;

impl TestProject {
    /// Makes the project a git repository on `main`: `ralph init`, the
    /// identity in the repository's config, and one commit of everything.
    pub(crate) fn git_init(self) -> TestProject {
        let init = self.ralph(&["init"]);
        assert_eq!(init.code, 0, "{init:#?}");
        self.git(&["init", "-q", "-b", "main"]);
        self.git(&["config", "user.name", GIT_AUTHOR.0]);
        self.git(&["config", "user.email", GIT_AUTHOR.1]);
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", "initial commit"]);
        self
    }

    /// Runs `git args` in the project; panics unless it succeeds. Returns
    /// stdout without the trailing newline.
    pub(crate) fn git(&self, args: &[&str]) -> String {
        let output = self.command("git").args(args).output().expect("run git");
        assert!(
            output.status.success(),
            "git {args:?} failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout)
            .trim_end_matches('\n')
            .to_owned()
    }

    /// Runs `git args` in the project: its stdout (trailing newline
    /// removed) when it succeeds, `None` when it fails.
    pub(crate) fn try_git(&self, args: &[&str]) -> Option<String> {
        let output = self.command("git").args(args).output().expect("run git");
        output.status.success().then(|| {
            String::from_utf8_lossy(&output.stdout)
                .trim_end_matches('\n')
                .to_owned()
        })
    }

    /// The folder outside the project holding fake tools and records.
    pub(crate) fn aux(&self) -> &Path {
        self.aux.path()
    }

    /// Writes the fake agent, `<aux>/agent.sh`: the prelude, then `body`.
    pub(crate) fn agent(self, body: &str) -> TestProject {
        self.script("agent.sh", body);
        self
    }

    /// Writes an executable script at `<aux>/<path>`: the prelude, then `body`.
    pub(crate) fn script(&self, path: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let full = self.aux().join(path);
        let text = format!(
            "#!/bin/sh\nREC='{}'\n{AGENT_PRELUDE}{body}",
            self.aux().join("rec").display()
        );
        std::fs::write(&full, text).expect("write script");
        std::fs::set_permissions(&full, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        full
    }

    /// `PATH` with `<aux>/bin` first, where tests put fake tools (`claude`,
    /// a slow `git`) for ralph to find.
    pub(crate) fn path_with_aux_bin(&self) -> String {
        format!(
            "{}:{}",
            self.aux().join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }

    /// `config` (the project's `config/ralph.yaml`) with `notify.command`
    /// appending `$RALPH_EVENT $RALPH_MESSAGE` to `$REC/notices`, which
    /// [`TestProject::rec`] reads.
    pub(crate) fn telling_notices(&self, config: &str) -> String {
        let notices = self.aux().join("rec/notices");
        config.replace(
            "  command: null\n  # The kinds",
            &format!(
                "  command: 'echo \"$RALPH_EVENT $RALPH_MESSAGE\" >> {}'\n  # The kinds",
                notices.display()
            ),
        )
    }

    /// A record the fake agent wrote into `$REC`, empty when missing.
    pub(crate) fn rec(&self, name: &str) -> String {
        std::fs::read_to_string(self.aux().join("rec").join(name)).unwrap_or_default()
    }

    /// The lines of `$REC/calls`: one per agent call.
    pub(crate) fn calls(&self) -> Vec<String> {
        self.rec("calls").lines().map(str::to_owned).collect()
    }

    /// `ralph ARGS` with the fast loop settings, not started yet.
    pub(crate) fn ralph_command(&self, args: &[&str]) -> Command {
        let mut command = self.command(RALPH);
        command.args(args).envs(FAST_RUN);
        command
    }

    /// `ralph run --agent-cmd <aux>/agent.sh ARGS`, not started yet.
    pub(crate) fn run_command(&self, args: &[&str]) -> Command {
        let agent = self.aux().join("agent.sh");
        let mut command =
            self.ralph_command(&["run", "--agent-cmd", agent.to_str().expect("utf-8 path")]);
        command.args(args);
        command
    }

    /// Runs `ralph run` with the fake agent and waits (at most a minute).
    pub(crate) fn run(&self, args: &[&str]) -> Run {
        finish(self.run_command(args), 60)
    }

    /// A project file parsed as JSON.
    pub(crate) fn json(&self, path: &str) -> serde_json::Value {
        serde_json::from_str(&self.read(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// A JSON-lines project file, one value per line.
    pub(crate) fn json_lines(&self, path: &str) -> Vec<serde_json::Value> {
        self.read_or_empty(path)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{path}: {e}: {l}")))
            .collect()
    }
}

/// `phase/status` of every event of `.ralph/events.ndjson` about `task`.
pub(crate) fn phases(project: &TestProject, task: &str) -> Vec<String> {
    project
        .json_lines(".ralph/events.ndjson")
        .iter()
        .filter(|e| e["task_id"] == task)
        .map(|e| {
            format!(
                "{}/{}",
                e["phase"].as_str().unwrap(),
                e["status"].as_str().unwrap()
            )
        })
        .collect()
}

/// The `id` of each line of a task file's text, in order.
pub(crate) fn ids(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| {
            let task: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
            task["id"].as_str().expect("a string id").to_owned()
        })
        .collect()
}

/// Runs `command`, killing it and failing the test if it takes longer than
/// `seconds` (a hang is a bug, not a slow test).
pub(crate) fn finish(mut command: Command, seconds: u64) -> Run {
    use std::process::Stdio;
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the command");
    wait_for(child, seconds)
}

/// Waits for `child`, killing it and failing the test after `seconds`.
pub(crate) fn wait_for(child: std::process::Child, seconds: u64) -> Run {
    let pid = child.id();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(child.wait_with_output());
    });
    match receiver.recv_timeout(std::time::Duration::from_secs(seconds)) {
        Ok(output) => Run::from(output.expect("wait for the command")),
        Err(_) => {
            let pid = nix::unistd::Pid::from_raw(pid.try_into().expect("a pid fits in i32"));
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            panic!("the command did not finish within {seconds}s");
        }
    }
}

/// Waits, at most `seconds`, until `done` holds while `child` runs. A
/// child that ends first, or a wait that runs out, fails the test with
/// `what` and what the child printed.
pub(crate) fn wait_until(
    child: &mut std::process::Child,
    seconds: u64,
    what: &str,
    mut done: impl FnMut() -> bool,
) {
    let started = std::time::Instant::now();
    while !done() {
        if started.elapsed().as_secs() > seconds || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let _ = child.wait();
            let mut said = String::new();
            if let Some(mut stderr) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut stderr, &mut said);
            }
            panic!("{what}: {said}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Waits until `path` exists (at most 30 s).
pub(crate) fn wait_for_file(path: &Path) {
    for _ in 0..3000 {
        if path.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("{} never appeared", path.display());
}

/// A command with a cleared environment: PATH kept, HOME in the project,
/// git's global and system config neutralised, author and dates pinned.
pub(crate) fn pinned_command(program: &str, home: &Path) -> Command {
    let mut command = Command::new(program);
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("LC_ALL", "C")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Test Author")
        .env("GIT_AUTHOR_EMAIL", "author@example.com")
        .env("GIT_COMMITTER_NAME", "Test Author")
        .env("GIT_COMMITTER_EMAIL", "author@example.com")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        // Agents run unconfined but in tests/it/sandbox.rs: the fake
        // agents keep their records outside the project, in `$REC`.
        .env("RALPH_SANDBOX_MODE", "off");
    // The platform calls `.ci/run` has the suite run (src/platform/).
    if let Some(platform) = std::env::var_os("RALPH_TEST_PLATFORM") {
        command.env("RALPH_TEST_PLATFORM", platform);
    }
    command
}

/// The result of one run of the binary.
#[derive(Debug)]
pub(crate) struct Run {
    /// Exit code (-1 when killed by a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(output: Output) -> Run {
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl Run {
    /// Asserts success with exactly this stdout and nothing on stderr.
    #[track_caller]
    pub(crate) fn ok(self, stdout: &str) -> Run {
        assert_eq!(
            (self.code, self.stdout.as_str(), self.stderr.as_str()),
            (0, stdout, ""),
            "{self:#?}"
        );
        self
    }

    /// Asserts success with exactly this stdout and this stderr.
    #[track_caller]
    pub(crate) fn ok_noting(self, stdout: &str, stderr: &str) -> Run {
        assert_eq!(
            (self.code, self.stdout.as_str(), self.stderr.as_str()),
            (0, stdout, stderr),
            "{self:#?}"
        );
        self
    }

    /// Asserts success and returns the run for further checks.
    #[track_caller]
    pub(crate) fn success(self) -> Run {
        assert_eq!(self.code, 0, "{self:#?}");
        self
    }

    /// Asserts exit `code`, exactly this stderr, and nothing on stdout.
    #[track_caller]
    pub(crate) fn fails(self, code: i32, stderr: &str) -> Run {
        assert_eq!(
            (self.code, self.stdout.as_str(), self.stderr.as_str()),
            (code, "", stderr),
            "{self:#?}"
        );
        self
    }

    /// Parses stdout as JSON.
    #[track_caller]
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:#?}"))
    }
}

/// The date every test commit made with the `git` command carries.
pub(crate) const GIT_DATE: &str = "2026-01-01T00:00:00Z";
/// The author of every test commit made with the `git` command.
pub(crate) const GIT_AUTHOR: (&str, &str) = ("Test Author", "author@example.com");

/// A temporary git repository for tests, driven with the `git` command in
/// a cleared environment: HOME inside the temp folder, no global or system
/// config, author and dates pinned, so commit ids are stable. The
/// repository lives in `<temp>/repo`; other folders of `<temp>` are free
/// for linked worktrees and the like.
pub(crate) struct GitRepo {
    temp: TempDir,
    root: PathBuf,
}

impl GitRepo {
    /// `git init -b main` with `user.name`/`user.email` in the repository's
    /// config and one commit of `README.md`.
    pub(crate) fn new() -> GitRepo {
        GitRepo::with_branch("main")
    }

    /// Like [`GitRepo::new`], with the first branch called `branch`.
    pub(crate) fn with_branch(branch: &str) -> GitRepo {
        let repo = GitRepo::empty(branch);
        repo.commit_file("README.md", "# test\n", "initial commit");
        repo
    }

    /// `git init -b <branch>` with the identity configured but no commit.
    pub(crate) fn empty(branch: &str) -> GitRepo {
        isolate_libgit2_config();
        let temp = TempDir::new().expect("make a temp dir");
        let root = temp.path().join("repo");
        std::fs::create_dir_all(temp.path().join("home")).expect("make HOME");
        std::fs::create_dir_all(&root).expect("make the repo folder");
        let repo = GitRepo { temp, root };
        repo.git(&["init", "-q", "-b", branch]);
        repo.git(&["config", "user.name", GIT_AUTHOR.0]);
        repo.git(&["config", "user.email", GIT_AUTHOR.1]);
        repo
    }

    /// The repository's working tree.
    pub(crate) fn path(&self) -> &Path {
        &self.root
    }

    /// A path next to the repository, inside the temp folder.
    pub(crate) fn sibling(&self, name: &str) -> PathBuf {
        self.temp.path().join(name)
    }

    /// Runs `git args` in the repository; panics unless it succeeds.
    /// Returns stdout without the trailing newline.
    pub(crate) fn git(&self, args: &[&str]) -> String {
        self.git_in(&self.root, args)
    }

    /// Runs `git args` in `dir` (a linked worktree, say); panics unless it
    /// succeeds. Returns stdout without the trailing newline.
    pub(crate) fn git_in(&self, dir: &Path, args: &[&str]) -> String {
        let output = self.try_git_in(dir, args);
        assert!(
            output.status.success(),
            "git {args:?} failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout)
            .trim_end_matches('\n')
            .to_owned()
    }

    /// Runs `git args` in `dir` and returns whatever happened.
    pub(crate) fn try_git_in(&self, dir: &Path, args: &[&str]) -> Output {
        Command::new("git")
            .args(args)
            .current_dir(dir)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.temp.path().join("home"))
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_DATE", GIT_DATE)
            .env("GIT_COMMITTER_DATE", GIT_DATE)
            .env("GIT_AUTHOR_NAME", GIT_AUTHOR.0)
            .env("GIT_AUTHOR_EMAIL", GIT_AUTHOR.1)
            .env("GIT_COMMITTER_NAME", GIT_AUTHOR.0)
            .env("GIT_COMMITTER_EMAIL", GIT_AUTHOR.1)
            .env("LC_ALL", "C")
            .output()
            .expect("run git")
    }

    /// Writes `contents` to `rel` in the working tree, making folders.
    pub(crate) fn write(&self, rel: &str, contents: &str) {
        let path = self.root.join(rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("make folders");
        }
        std::fs::write(path, contents).expect("write a file");
    }

    /// Reads `rel` from the working tree.
    pub(crate) fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root.join(rel)).expect("read a file")
    }

    /// Writes `rel`, stages it and commits it with `message`; returns the
    /// new commit's id.
    pub(crate) fn commit_file(&self, rel: &str, contents: &str, message: &str) -> String {
        self.write(rel, contents);
        self.git(&["add", "--", rel]);
        self.git(&["commit", "-q", "-m", message]);
        self.git(&["rev-parse", "HEAD"])
    }

    /// `git status --porcelain` lines.
    pub(crate) fn status(&self) -> Vec<String> {
        let status = self.git(&["status", "--porcelain"]);
        status.lines().map(str::to_owned).collect()
    }
}

/// Points libgit2's global, XDG and system config search paths at an empty
/// folder, once per test process, so tests that call the library in
/// process never read the machine's `~/.gitconfig`. libgit2 keeps these
/// paths process-wide, which is why this is not per repository.
pub(crate) fn isolate_libgit2_config() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let empty =
            std::env::temp_dir().join(format!("ralph-tests-no-config-{}", std::process::id()));
        std::fs::create_dir_all(&empty).expect("make the empty config folder");
        for level in [
            git2::ConfigLevel::Global,
            git2::ConfigLevel::XDG,
            git2::ConfigLevel::System,
            git2::ConfigLevel::ProgramData,
        ] {
            // SAFETY: runs once, before this process's tests touch libgit2
            // (every in-process git test starts by building a GitRepo).
            #[allow(unsafe_code)]
            unsafe { git2::opts::set_search_path(level, &empty) }
                .expect("set libgit2's config search path");
        }
    });
}

/// Makes the file at `path` executable (a hook, a script).
pub(crate) fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// `text` quoted for a POSIX shell.
pub(crate) fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}
