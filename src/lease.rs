//! Whether anybody has a file open for writing, asked of the kernel with a
//! read lease (`fcntl(F_SETLEASE, F_RDLCK)`), which it grants only when no
//! descriptor of the file is open for writing. The queue's reads and writes
//! wait a moment for a recently changed file in case a writer (an editor
//! rewriting it in place, a `>>` append) is still at work; when the kernel
//! says nobody is, there is nothing to wait for. A write lease (`F_WRLCK`)
//! is granted only when nobody else has the file open at all: a spare file
//! (of the queue, the state, the valid copy) is written over only then.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Once;

/// True when no process has `path` open for writing right now; false when
/// one does or the kernel cannot tell (leases disabled, a file of another
/// user without `CAP_LEASE`, a network file system, no such file).
pub fn nobody_writing(path: &Path) -> bool {
    writing(path) == Some(false)
}

/// Whether some process has `path` open for writing right now (one that
/// waits for another's lease to open it counts); `None` when the kernel
/// cannot tell (see `nobody_writing`).
pub fn writing(path: &Path) -> Option<bool> {
    let file = File::open(path).ok()?;
    match take(&file, libc::F_RDLCK) {
        Ok(()) => {
            let_go(&file);
            Some(false)
        }
        Err(err) => (err.raw_os_error() == Some(libc::EAGAIN)).then_some(true),
    }
}

/// True when `file` (open for writing) is open nowhere else right now, in
/// this process or another, for reading or writing: the kernel grants a
/// write lease only then. False when it is, or the kernel cannot tell.
pub fn nobody_else_has_open(file: &File) -> bool {
    let taken = take(file, libc::F_WRLCK).is_ok();
    if taken {
        let_go(file);
    }
    taken
}

/// Takes a read lease on `file` and keeps it until `let_go` (or until the
/// file is closed and unmapped): while it is held, nobody can open the
/// file for writing or truncate it (they wait until it is let go of, or
/// for the system's `lease-break-time`). False when the kernel did not
/// grant it (somebody has the file open for writing, or see
/// `nobody_writing`), or when the lease would not hold writers off for
/// sure: a file system whose leases may miss a writer (network, FUSE), or
/// a `lease-break-time` under 5 s.
pub fn hold_read(file: &File) -> bool {
    sure_to_hold(file) && take(file, libc::F_RDLCK).is_ok()
}

/// Lets go of a lease taken on `file` (see `hold_read`).
pub fn let_go(file: &File) {
    // SAFETY: a plain fcntl call on a descriptor the caller owns.
    unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLEASE, libc::F_UNLCK) };
}

/// Takes a lease of `kind` on `file`.
fn take(file: &File, kind: libc::c_int) -> std::io::Result<()> {
    catch_sigio();
    // SAFETY: a plain fcntl call on a descriptor the caller owns.
    match unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLEASE, kind) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// Whether a lease on `file` holds every writer off long enough: a local
/// file system whose leases see every writer (ext4, xfs, btrfs, tmpfs),
/// and a writer that waits at least 5 s for one (the default is 45).
fn sure_to_hold(file: &File) -> bool {
    use nix::sys::statfs::{
        BTRFS_SUPER_MAGIC, EXT4_SUPER_MAGIC, TMPFS_MAGIC, XFS_SUPER_MAGIC, fstatfs,
    };
    static SLOW_BREAK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let slow_break = *SLOW_BREAK.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/fs/lease-break-time")
            .ok()
            .and_then(|text| text.trim().parse::<u64>().ok())
            .is_some_and(|seconds| seconds >= 5)
    });
    let local = fstatfs(file).is_ok_and(|fs| {
        [
            EXT4_SUPER_MAGIC,
            XFS_SUPER_MAGIC,
            BTRFS_SUPER_MAGIC,
            TMPFS_MAGIC,
        ]
        .contains(&fs.filesystem_type())
    });
    slow_break && local
}

fn catch_sigio() {
    // Another process opening the file while a lease is held makes the
    // kernel send SIGIO, whose default action ends the process: ralph
    // catches it and does nothing (the opener waits for the lease to go).
    // A handler, unlike an ignored signal, is reset by `exec`, so the
    // agents ralph starts get SIGIO's default as usual.
    static CATCH_SIGIO: Once = Once::new();
    CATCH_SIGIO.call_once(|| {
        use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
        extern "C" fn nothing(_: libc::c_int) {}
        let action = SigAction::new(
            SigHandler::Handler(nothing),
            SaFlags::SA_RESTART,
            SigSet::empty(),
        );
        // SAFETY: the handler does nothing, so it is async-signal-safe.
        let _ = unsafe { sigaction(Signal::SIGIO, &action) };
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_file_open_for_writing_is_seen() {
        let dir = assert_fs::TempDir::new().unwrap();
        let path = dir.path().join("tasks.jsonl");
        std::fs::write(&path, "{}\n").unwrap();
        assert!(nobody_writing(&path));
        let mut writer = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        assert!(!nobody_writing(&path));
        writer.write_all(b"{}\n").unwrap();
        drop(writer);
        assert!(nobody_writing(&path));
        // Open for reading only: no writer.
        let _reader = File::open(&path).unwrap();
        assert!(nobody_writing(&path));
        assert!(!nobody_writing(&dir.path().join("missing")));
    }

    #[test]
    fn programs_started_afterwards_get_sigio_as_usual() {
        let dir = assert_fs::TempDir::new().unwrap();
        let path = dir.path().join("tasks.jsonl");
        std::fs::write(&path, "{}\n").unwrap();
        assert!(nobody_writing(&path));
        let status = std::process::Command::new("cat")
            .arg("/proc/self/status")
            .output()
            .unwrap();
        let status = String::from_utf8(status.stdout).unwrap();
        let ignored = status
            .lines()
            .find_map(|line| line.strip_prefix("SigIgn:"))
            .map(|mask| u64::from_str_radix(mask.trim(), 16).unwrap())
            .unwrap();
        let sigio = 1u64 << (libc::SIGIO - 1);
        assert_eq!(ignored & sigio, 0, "SIGIO ignored in a child: {ignored:#x}");
    }

    #[test]
    fn any_other_open_descriptor_is_seen() {
        let dir = assert_fs::TempDir::new().unwrap();
        let path = dir.path().join("spare");
        std::fs::write(&path, "{}\n").unwrap();
        let mine = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        assert!(nobody_else_has_open(&mine));
        let reader = File::open(&path).unwrap();
        assert!(!nobody_else_has_open(&mine), "a reader");
        drop(reader);
        assert!(nobody_else_has_open(&mine));
        let writer = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        assert!(!nobody_else_has_open(&mine), "another writer");
        drop(writer);
        assert!(nobody_else_has_open(&mine));
    }
}
