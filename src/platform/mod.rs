//! The few calls that differ between operating systems, each behind one
//! function (or, for the working-tree watch, one type): Linux gets its
//! system calls (`linux.rs`, `inotify.rs`); macOS and every other Unix get
//! a portable version (`portable.rs`) that uses only POSIX calls and the
//! `ps` and `lsof` commands. The swap of two files is one function for
//! all (`swap.rs`), in one step where the system can. Linux builds both
//! versions: `RALPH_TEST_PLATFORM=portable` makes a process use the
//! portable one, so the tests run macOS's code on Linux from the same
//! build.

#[cfg(target_os = "linux")]
mod inotify;
#[cfg(target_os = "linux")]
mod linux;
mod portable;

pub(crate) mod sandbox;
mod swap;

use std::path::Path;

/// The variable that makes a Linux process use the portable calls.
#[cfg(target_os = "linux")]
const PORTABLE_VAR: &str = "RALPH_TEST_PLATFORM";

/// Whether this Linux process uses the portable calls (elsewhere they
/// are the only ones): `RALPH_TEST_PLATFORM=portable`, read once.
#[cfg(target_os = "linux")]
fn portable() -> bool {
    static CHOSEN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *CHOSEN.get_or_init(|| std::env::var_os(PORTABLE_VAR).is_some_and(|v| v == "portable"))
}

/// Calls `$name` of the version this process uses.
macro_rules! chosen {
    ($name:ident($($arg:expr),*)) => {{
        #[cfg(target_os = "linux")]
        let value = if portable() { portable::$name($($arg),*) } else { linux::$name($($arg),*) };
        #[cfg(not(target_os = "linux"))]
        let value = portable::$name($($arg),*);
        value
    }};
}

/// The changes to a working tree since the last scan: inotify on Linux;
/// with the portable calls it never starts, and every scan is a full one.
#[cfg(target_os = "linux")]
pub(crate) use inotify::Watch;
#[cfg(not(target_os = "linux"))]
pub(crate) use portable::Watch;

/// Swaps the files at `a` and `b`: in one step on Linux and macOS, in
/// three elsewhere and on file systems that cannot (see `swap.rs`).
/// `Ok(false)`: this system or file system cannot, and nothing was done.
pub(crate) use swap::exchange;

/// The processes of process group `group` that are still running (not
/// zombies), or `None` when this system cannot tell.
pub(crate) fn group_members(group: i32) -> Option<Vec<u32>> {
    chosen!(group_members(group))
}

/// Every process that is still running (not a zombie), or `None` when
/// this system cannot tell.
pub(crate) fn processes() -> Option<Vec<u32>> {
    chosen!(processes())
}

/// Whether the environment of process `pid` holds the entry `entry`
/// (`NAME=value`), or `None` when it cannot be read.
pub(crate) fn environment_has(pid: u32, entry: &[u8]) -> Option<bool> {
    chosen!(environment_has(pid, entry))
}

/// Whether a running `git` process may be at work in one of `places`.
/// Where the working folder of a process cannot be read, any `git`
/// process counts.
pub(crate) fn git_at_work_in(places: &[&Path]) -> bool {
    chosen!(git_at_work_in(places))
}

/// The standard output of `command` (no input, its errors dropped) when it
/// ran and exited 0; `None` otherwise, the command missing included.
pub(crate) fn stdout_of(command: &mut std::process::Command) -> Option<String> {
    use std::process::Stdio;
    let output = (command.stdin(Stdio::null()).stderr(Stdio::null()))
        .output()
        .ok()?;
    (output.status.success()).then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Whether process `pid` is running. A zombie is not: a process killed
/// with its agent may never be reaped (an init that reaps no orphans).
pub(crate) fn alive(pid: u32) -> bool {
    use nix::errno::Errno;
    // 0 would name our own group.
    let Ok(raw @ 1..) = i32::try_from(pid) else {
        return false;
    };
    // EPERM: it runs, as somebody else.
    let signalled = matches!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None),
        Ok(()) | Err(Errno::EPERM)
    );
    signalled && !chosen!(zombie(pid))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One version's calls, so that a Linux test run checks both.
    struct Version {
        name: &'static str,
        group_members: fn(i32) -> Option<Vec<u32>>,
        environment_has: fn(u32, &[u8]) -> Option<bool>,
        zombie: fn(u32) -> bool,
        processes: fn() -> Option<Vec<u32>>,
        git_at_work_in: fn(&[&Path]) -> bool,
    }

    /// Whether `program` is on PATH: the portable calls' answers without
    /// `ps` or `lsof` are their fallbacks.
    fn on_path(program: &str) -> bool {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path).any(|dir| dir.join(program).is_file())
    }

    fn versions() -> Vec<Version> {
        #[allow(unused_mut)]
        let mut versions = vec![Version {
            name: "portable",
            group_members: portable::group_members,
            environment_has: portable::environment_has,
            zombie: portable::zombie,
            processes: portable::processes,
            git_at_work_in: portable::git_at_work_in,
        }];
        #[cfg(target_os = "linux")]
        versions.push(Version {
            name: "linux",
            group_members: linux::group_members,
            environment_has: linux::environment_has,
            zombie: linux::zombie,
            processes: linux::processes,
            git_at_work_in: linux::git_at_work_in,
        });
        versions
    }

    #[test]
    fn a_group_and_its_environment_are_seen_by_each_version() {
        use std::os::unix::process::CommandExt;
        for version in versions() {
            let name = version.name;
            if name == "portable" && !on_path("ps") {
                // Without `ps` the portable calls cannot tell.
                assert_eq!((version.group_members)(1), None);
                assert_eq!((version.processes)(), None);
                continue;
            }
            let mut child = std::process::Command::new("sleep")
                .arg("30")
                .env("RALPH_PLATFORM_TEST", "yes")
                .process_group(0)
                .spawn()
                .unwrap();
            let pid = child.id();
            let running = |pid| {
                nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None).is_ok()
                    && !(version.zombie)(pid)
            };
            // Until `sleep` has replaced the spawning process.
            let seen = (0..100).any(|_| {
                std::thread::sleep(std::time::Duration::from_millis(20));
                (version.environment_has)(pid, b"RALPH_PLATFORM_TEST=yes") == Some(true)
            });
            assert!(seen, "{name}: the child's environment was not read");
            let other = (version.environment_has)(pid, b"RALPH_PLATFORM_TEST=no");
            assert_eq!(other, Some(false), "{name}");
            assert_eq!(
                (version.group_members)(pid as i32),
                Some(vec![pid]),
                "{name}"
            );
            assert!(running(pid), "{name}");
            assert!((version.processes)().unwrap().contains(&pid), "{name}");
            child.kill().unwrap();
            // Killed, not yet reaped: a zombie, which does not count.
            let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while running(pid) && std::time::Instant::now() < until {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            assert!(!running(pid), "{name}: a zombie counts as alive");
            child.wait().unwrap();
            assert!(!running(pid), "{name}");
            assert_eq!((version.group_members)(pid as i32), Some(vec![]), "{name}");
        }
    }

    #[test]
    fn a_git_at_work_is_seen_where_it_works_by_each_version() {
        use std::process::{Command, Stdio};
        let at_work = std::env::temp_dir().join(format!("ralph-platform-{}", std::process::id()));
        let elsewhere = at_work.with_extension("elsewhere");
        std::fs::create_dir_all(&at_work).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        // A git that waits for its input, working in `at_work`.
        let mut git = (Command::new("git").args(["hash-object", "--stdin"]))
            .current_dir(&at_work)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        for version in versions() {
            let name = version.name;
            let seen = (0..100).any(|_| {
                std::thread::sleep(std::time::Duration::from_millis(20));
                (version.git_at_work_in)(&[&at_work])
            });
            assert!(seen, "{name}: the git at work was not seen");
            // Without `lsof`, any running git counts.
            let fallback = name == "portable" && !on_path("lsof");
            assert_eq!((version.git_at_work_in)(&[&elsewhere]), fallback, "{name}");
        }
        drop(git.stdin.take());
        git.wait().unwrap();
        std::fs::remove_dir_all(&at_work).unwrap();
        std::fs::remove_dir_all(&elsewhere).unwrap();
    }

    #[test]
    fn alive_is_the_chosen_versions_answer() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        assert!(alive(child.id()));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!alive(child.id()));
    }
}
