//! The few calls that differ between operating systems, each behind one
//! function (or, for the working-tree watch, one type): Linux gets its
//! system calls (`linux.rs`, `inotify.rs`); macOS and every other Unix get
//! a portable version (`portable.rs`) that uses only POSIX calls and the
//! `ps` and `lsof` commands. The swap of two files is one function for
//! all (`swap.rs`), in one step where the system can. The cargo feature
//! `portable` forces the portable version on Linux too, so CI builds and
//! tests it.

#[cfg(all(target_os = "linux", not(feature = "portable")))]
mod inotify;
#[cfg(all(target_os = "linux", not(feature = "portable")))]
mod linux;
#[cfg(all(target_os = "linux", not(feature = "portable")))]
use linux as imp;

#[cfg(any(not(target_os = "linux"), feature = "portable"))]
mod portable;
#[cfg(any(not(target_os = "linux"), feature = "portable"))]
use portable as imp;

pub(crate) mod sandbox;
mod swap;

use std::path::Path;

/// The changes to a working tree since the last scan: inotify on Linux;
/// elsewhere it never starts, and every scan is a full one.
pub(crate) use imp::Watch;

/// Swaps the files at `a` and `b`: in one step on Linux and macOS, in
/// three elsewhere and on file systems that cannot (see `swap.rs`).
/// `Ok(false)`: this system or file system cannot, and nothing was done.
pub(crate) use swap::exchange;

/// The processes of process group `group` that are still running (not
/// zombies), or `None` when this system cannot tell.
pub(crate) fn group_members(group: i32) -> Option<Vec<u32>> {
    imp::group_members(group)
}

/// Every process that is still running (not a zombie), or `None` when
/// this system cannot tell.
pub(crate) fn processes() -> Option<Vec<u32>> {
    imp::processes()
}

/// Whether the environment of process `pid` holds the entry `entry`
/// (`NAME=value`), or `None` when it cannot be read.
pub(crate) fn environment_has(pid: u32, entry: &[u8]) -> Option<bool> {
    imp::environment_has(pid, entry)
}

/// Whether a running `git` process may be at work in one of `places`.
/// Where the working folder of a process cannot be read, any `git`
/// process counts.
pub(crate) fn git_at_work_in(places: &[&Path]) -> bool {
    imp::git_at_work_in(places)
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
    signalled && !imp::zombie(pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_and_its_environment_are_seen() {
        use std::os::unix::process::CommandExt;
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env("RALPH_PLATFORM_TEST", "yes")
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id();
        // Until `sleep` has replaced the spawning process.
        let seen = (0..100).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            environment_has(pid, b"RALPH_PLATFORM_TEST=yes") == Some(true)
        });
        assert!(seen, "the child's environment was not read");
        assert_eq!(environment_has(pid, b"RALPH_PLATFORM_TEST=no"), Some(false));
        assert_eq!(group_members(pid as i32), Some(vec![pid]));
        assert!(alive(pid));
        child.kill().unwrap();
        // Killed, not yet reaped: a zombie, which does not count.
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while alive(pid) && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(!alive(pid), "a zombie counts as alive");
        child.wait().unwrap();
        assert!(!alive(pid));
        assert_eq!(group_members(pid as i32), Some(vec![]));
    }
}
