//! Confining an agent: bubblewrap (`bwrap`) on Linux, `sandbox-exec` with
//! a generated profile on macOS. [`Policy`] says what the agent may write
//! and what it may not see; [`wrap`] turns a command line into the
//! confined one. Both the bubblewrap arguments and the macOS profile are
//! plain text made from the policy, so both are tested on any system.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What a confined agent may do. The whole system is read-only but for
/// what the mounts open, in order: a later mount over an earlier one wins
/// (a worker's own worktree writable inside the read-only worktrees).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Policy {
    /// Paths opened or closed for writing, in order.
    pub mounts: Vec<Mount>,
    /// Paths that read as empty: folders as an empty folder, files as
    /// unreadable.
    pub hidden: Vec<PathBuf>,
    /// Whether the network is the user's (else none at all).
    pub network: bool,
    /// Whether the agent shares the system's process space and `/proc`
    /// (where the system forbids a private one): weaker, said at the
    /// start. Otherwise its processes live in a space of their own and
    /// all end with the iteration.
    pub host_processes: bool,
}

/// One path of a [`Policy`].
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Mount {
    /// Writable.
    Write(PathBuf),
    /// Read-only again, inside a writable one.
    Read(PathBuf),
}

/// The program that confines.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tool {
    /// bubblewrap, at this path.
    Bwrap(PathBuf),
    /// macOS's sandbox-exec, at this path.
    SandboxExec(PathBuf),
}

impl Tool {
    /// The tool of this system, found on `path` (a `PATH` value), or what
    /// to install.
    pub(crate) fn find(path: &std::ffi::OsStr) -> Result<Tool, String> {
        let (name, install) = match cfg!(target_os = "macos") {
            true => (
                "sandbox-exec",
                "sandbox-exec is part of macOS; it is missing from PATH",
            ),
            false => (
                "bwrap",
                "install bubblewrap (Debian, Ubuntu: apt install bubblewrap; Fedora: dnf install bubblewrap)",
            ),
        };
        let found = std::env::split_paths(path)
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file());
        match (found, name) {
            (Some(program), "bwrap") => Ok(Tool::Bwrap(program)),
            (Some(program), _) => Ok(Tool::SandboxExec(program)),
            (None, _) => Err(format!("no {name} on PATH: {install}")),
        }
    }

    /// The program's name, as messages say it.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Tool::Bwrap(_) => "bubblewrap",
            Tool::SandboxExec(_) => "sandbox-exec",
        }
    }

    /// Confines `true` once, as an agent would be: the tool's version and
    /// whether its processes must share the system's process space (some
    /// containers forbid a private `/proc`), or why it cannot confine at
    /// all (some containers forbid the namespaces bubblewrap needs).
    pub(crate) fn trial(&self) -> Result<(String, bool), String> {
        let try_with = |host_processes: bool| {
            let policy = Policy {
                mounts: vec![Mount::Write(std::env::temp_dir())],
                network: true,
                host_processes,
                ..Policy::default()
            };
            let (program, args) = wrap(self, &policy, Path::new("true"), &[]);
            let output = std::process::Command::new(&program)
                .args(&args)
                .stdin(std::process::Stdio::null())
                .output()
                .map_err(|err| format!("{} did not start: {err}", program.display()))?;
            if output.status.success() {
                return Ok(());
            }
            let said = String::from_utf8_lossy(&output.stderr);
            let said = said.trim();
            Err(format!(
                "{} cannot confine here: {}",
                self.name(),
                if said.is_empty() {
                    "it failed without a word"
                } else {
                    said
                }
            ))
        };
        let host_processes = match try_with(false) {
            Ok(()) => false,
            Err(why) => match self {
                Tool::Bwrap(_) => try_with(true).map(|()| true).map_err(|_| why)?,
                Tool::SandboxExec(_) => return Err(why),
            },
        };
        let version = match self {
            Tool::Bwrap(program) => {
                let version = crate::platform::stdout_of(
                    std::process::Command::new(program).arg("--version"),
                );
                version.map_or_else(|| "bubblewrap".to_owned(), |v| v.trim().to_owned())
            }
            Tool::SandboxExec(_) => "sandbox-exec (macOS)".to_owned(),
        };
        Ok((version, host_processes))
    }

    /// What this confinement holds back less than docs/SECURITY.md says
    /// of bubblewrap, each said as what an agent can then do.
    pub(crate) fn weaker(&self, host_processes: bool) -> Vec<&'static str> {
        match self {
            Tool::Bwrap(_) if host_processes => vec![
                "this system forbids a private /proc: the agent sees the system's processes, and one it starts in a session of its own can outlive its iteration",
            ],
            Tool::Bwrap(_) => Vec::new(),
            Tool::SandboxExec(_) => vec![
                "sandbox-exec has no private process space: a process the agent starts in a session of its own can outlive its iteration",
                "sandbox-exec lets the agent ask macOS services (the keychain among them) what the user may ask",
            ],
        }
    }
}

/// `program args` confined by `tool` as `policy` says: the program to
/// start and its arguments.
pub(crate) fn wrap(
    tool: &Tool,
    policy: &Policy,
    program: &Path,
    args: &[OsString],
) -> (PathBuf, Vec<OsString>) {
    let (tool, mut wrapped) = prefix(tool, policy);
    wrapped.push(program.as_os_str().to_owned());
    wrapped.extend(args.iter().cloned());
    (tool, wrapped)
}

/// What goes before a command to confine it: the tool and its arguments.
pub(crate) fn prefix(tool: &Tool, policy: &Policy) -> (PathBuf, Vec<OsString>) {
    let args = match tool {
        Tool::Bwrap(_) => bwrap_args(policy),
        Tool::SandboxExec(_) => vec!["-p".into(), macos_profile(policy).into()],
    };
    match tool {
        Tool::Bwrap(path) | Tool::SandboxExec(path) => (path.clone(), args),
    }
}

/// bubblewrap's arguments before the command: the system read-only, a
/// fresh `/dev`, a private process space with its own `/proc` (every
/// process in it ends when the agent does), a new session (no keystrokes
/// pushed into ralph's terminal), no capability even as root, each mount
/// that exists in order, each hidden path that exists covered, the
/// network kept or cut, and the agent ended with ralph. bubblewrap itself
/// stays in the process group ralph signals.
pub(crate) fn bwrap_args(policy: &Policy) -> Vec<OsString> {
    let mut args: Vec<OsString> = ["--ro-bind", "/", "/", "--dev", "/dev"]
        .map(OsString::from)
        .to_vec();
    if !policy.host_processes {
        args.extend(["--unshare-pid", "--proc", "/proc"].map(OsString::from));
    }
    args.extend(["--new-session", "--die-with-parent", "--cap-drop", "ALL"].map(OsString::from));
    let mut bind = |flag: &str, path: &Path| {
        args.push(flag.into());
        args.push(path.as_os_str().to_owned());
        args.push(path.as_os_str().to_owned());
    };
    // bubblewrap cannot make a missing mount point on a read-only system;
    // a path that goes between this look and bwrap's start (a queue
    // write's temp file in the project's folder) is skipped by `-try`.
    for mount in &policy.mounts {
        match mount {
            Mount::Write(path) if path.exists() => bind("--bind-try", path),
            Mount::Read(path) if path.exists() => bind("--ro-bind-try", path),
            _ => {}
        }
    }
    for path in &policy.hidden {
        if path.is_dir() {
            args.extend(["--tmpfs".into(), path.as_os_str().to_owned()]);
        } else if path.exists() {
            args.extend([
                "--ro-bind".into(),
                "/dev/null".into(),
                path.as_os_str().to_owned(),
            ]);
        }
    }
    if !policy.network {
        args.push("--unshare-net".into());
    }
    args.push("--".into());
    args
}

/// The sandbox-exec profile (SBPL): everything allowed but writing,
/// writing allowed where the mounts say (a later rule wins), the hidden
/// paths neither read nor written, and the network denied when cut.
pub(crate) fn macos_profile(policy: &Policy) -> String {
    let quoted = |path: &Path| {
        let text = path.to_string_lossy();
        format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
    };
    let mut profile = String::from(
        "(version 1)\n(allow default)\n(deny file-write*)\n\
         (allow file-write* (literal \"/dev/null\") (literal \"/dev/tty\") (literal \"/dev/dtracehelper\") (regex #\"^/dev/fd/\") (regex #\"^/dev/ttys\"))\n",
    );
    for mount in &policy.mounts {
        let (rule, path) = match mount {
            Mount::Write(path) => ("allow", path),
            Mount::Read(path) => ("deny", path),
        };
        profile.push_str(&format!(
            "({rule} file-write* (subpath {}))\n",
            quoted(path)
        ));
    }
    for path in &policy.hidden {
        profile.push_str(&format!(
            "(deny file-read* file-write* (subpath {}))\n",
            quoted(path)
        ));
    }
    if !policy.network {
        profile.push_str("(deny network*)\n(allow network* (local unix))\n");
    }
    profile
}

/// The paths an agent's output says it could not write (`Read-only file
/// system`, `Permission denied`, `Operation not permitted`, as shells,
/// coreutils, git, Python and Node say it), each once, in order, at most
/// ten; relative ones (`config/ralph.yaml`) as the agent wrote them.
pub(crate) fn refused_paths(output: &str) -> Vec<String> {
    static PATH: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"(?:^|[\s'"‘`(])((?:/|~/)[^\s'"’`:,()]+)"#).expect("a valid regex")
    });
    let mut paths: Vec<String> = Vec::new();
    for line in output.lines() {
        // ASCII lowering keeps the byte offsets of `line`.
        let lower = line.to_ascii_lowercase();
        let Some(at) = [
            "read-only file system",
            "permission denied",
            "operation not permitted",
        ]
        .iter()
        .find_map(|said| lower.find(said)) else {
            continue;
        };
        // The path refused is the one right before the complaint
        // (`cannot create config/x: ...`, `touch: cannot touch '/x': ...`;
        // a shell names its script first), or else the last absolute one
        // before it, or the first after it (`...: '/x'`).
        let named: Vec<regex::Match> = (PATH.captures_iter(line))
            .filter_map(|c| c.get(1))
            .collect();
        let found = right_before(&line[..at])
            .or_else(|| {
                named
                    .iter()
                    .rev()
                    .find(|m| m.end() <= at)
                    .map(|m| m.as_str())
            })
            .or_else(|| named.iter().find(|m| m.start() >= at).map(|m| m.as_str()));
        if let Some(found) = found
            && !paths.iter().any(|p| p == found)
            && paths.len() < 10
        {
            paths.push(found.to_owned());
        }
    }
    paths
}

/// The word that ends `text` before its `: `, when it reads as a path: it
/// has a `/` or a `.` in it, and no `@` (`git@host: Permission denied`).
fn right_before(text: &str) -> Option<&str> {
    let text = text.trim_end().strip_suffix(':')?;
    let word = text.rsplit(char::is_whitespace).next()?;
    let word = word.trim_matches(|c| matches!(c, '\'' | '"' | '‘' | '’' | '`'));
    let looks = (word.contains('/') || word.contains('.'))
        && !word.contains('@')
        && !word.ends_with(']')
        && !word.is_empty();
    looks.then_some(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_paths_a_sandbox_refused_are_read_from_what_tools_print() {
        let output = "\
touch: cannot touch '/etc/ralph-test': Read-only file system
/tmp/agent.sh: 1: cannot create /home/me/.bashrc: Read-only file system
OSError: [Errno 30] Read-only file system: '/usr/lib/x.py'
Error: EROFS: read-only file system, open '/opt/app/cache.json'
mkdir: cannot create directory ‘/srv/data’: Permission denied
git@github.com: Permission denied (publickey).
touch: cannot touch '/etc/ralph-test': Read-only file system
/tmp/agent.sh: 4: cannot create config/ralph.yaml: Read-only file system
/tmp/agent.sh: line 5: working.md: Read-only file system
error: could not lock config file .git/config: Read-only file system
all good in /tmp/x
";
        assert_eq!(
            refused_paths(output),
            [
                "/etc/ralph-test",
                "/home/me/.bashrc",
                "/usr/lib/x.py",
                "/opt/app/cache.json",
                "/srv/data",
                "config/ralph.yaml",
                "working.md",
                ".git/config"
            ]
        );
    }

    fn policy(dir: &Path) -> Policy {
        Policy {
            mounts: vec![
                Mount::Write(dir.join("project")),
                Mount::Read(dir.join("project/.ralph/worktrees")),
                Mount::Write(dir.join("project/.ralph/worktrees/A")),
                Mount::Write(dir.join("missing")),
            ],
            hidden: vec![
                dir.join("home/.ssh"),
                dir.join("home/.netrc"),
                dir.join("home/.aws"),
            ],
            network: false,
            host_processes: false,
        }
    }

    #[test]
    fn bubblewrap_binds_what_exists_in_order_and_covers_the_hidden() {
        let dir = assert_fs::TempDir::new().unwrap();
        for folder in ["project/.ralph/worktrees/A", "home/.ssh"] {
            std::fs::create_dir_all(dir.path().join(folder)).unwrap();
        }
        std::fs::write(dir.path().join("home/.netrc"), "machine x").unwrap();
        let d = dir.path().display();
        let args: Vec<String> = bwrap_args(&policy(dir.path()))
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let expected = format!(
            "--ro-bind / / --dev /dev --unshare-pid --proc /proc \
             --new-session --die-with-parent --cap-drop ALL \
             --bind-try {d}/project {d}/project \
             --ro-bind-try {d}/project/.ralph/worktrees {d}/project/.ralph/worktrees \
             --bind-try {d}/project/.ralph/worktrees/A {d}/project/.ralph/worktrees/A \
             --tmpfs {d}/home/.ssh --ro-bind /dev/null {d}/home/.netrc --unshare-net --"
        );
        assert_eq!(args.join(" "), expected);
    }

    #[test]
    fn the_macos_profile_for_a_single_run_and_a_worker() {
        let single = Policy {
            mounts: vec![
                Mount::Write("/Users/me/project".into()),
                Mount::Write("/private/var/folders/x/T/ralph-1".into()),
            ],
            hidden: vec!["/Users/me/.ssh".into()],
            network: true,
            host_processes: false,
        };
        assert_eq!(
            macos_profile(&single),
            "(version 1)\n(allow default)\n(deny file-write*)\n\
             (allow file-write* (literal \"/dev/null\") (literal \"/dev/tty\") (literal \"/dev/dtracehelper\") (regex #\"^/dev/fd/\") (regex #\"^/dev/ttys\"))\n\
             (allow file-write* (subpath \"/Users/me/project\"))\n\
             (allow file-write* (subpath \"/private/var/folders/x/T/ralph-1\"))\n\
             (deny file-read* file-write* (subpath \"/Users/me/.ssh\"))\n"
        );
        let worker = macos_profile(&policy(Path::new("/Users/me")));
        // The worker's own tree is writable after the others are closed.
        let closed = worker
            .find("(deny file-write* (subpath \"/Users/me/project/.ralph/worktrees\"))")
            .unwrap();
        let opened = worker
            .find("(allow file-write* (subpath \"/Users/me/project/.ralph/worktrees/A\"))")
            .unwrap();
        assert!(closed < opened, "{worker}");
        assert!(
            worker.ends_with("(deny network*)\n(allow network* (local unix))\n"),
            "{worker}"
        );
        assert!(
            worker.contains("(deny file-read* file-write* (subpath \"/Users/me/home/.netrc\"))")
        );
    }

    #[test]
    fn a_quote_in_a_path_cannot_end_the_profiles_string() {
        let policy = Policy {
            mounts: vec![Mount::Write("/a\"b\\c".into())],
            ..Policy::default()
        };
        assert!(macos_profile(&policy).contains("(subpath \"/a\\\"b\\\\c\")"));
    }
}
