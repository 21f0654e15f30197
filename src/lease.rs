//! Whether anybody has a file open for writing, asked of the kernel with a
//! read lease (`fcntl(F_SETLEASE, F_RDLCK)`), which it grants only when no
//! descriptor of the file is open for writing. The queue's reads and writes
//! wait a moment for a recently changed file in case a writer (an editor
//! rewriting it in place, a `>>` append) is still at work; when the kernel
//! says nobody is, there is nothing to wait for.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Once;

/// True when no process has `path` open for writing right now; false when
/// one does or the kernel cannot tell (leases disabled, a file of another
/// user without `CAP_LEASE`, a network file system, no such file).
pub fn nobody_writing(path: &Path) -> bool {
    // Another process opening the file for writing while the lease is held
    // (a few microseconds) makes the kernel send SIGIO, whose default
    // action ends the process: ralph has no use for it.
    static IGNORE_SIGIO: Once = Once::new();
    IGNORE_SIGIO.call_once(|| {
        use nix::sys::signal::{SigHandler, Signal, signal};
        // SAFETY: SIG_IGN runs no code in the handler.
        let _ = unsafe { signal(Signal::SIGIO, SigHandler::SigIgn) };
    });
    let Ok(file) = File::open(path) else {
        return false;
    };
    let fd = file.as_raw_fd();
    // SAFETY: plain fcntl calls on a descriptor this function owns.
    let taken = unsafe { libc::fcntl(fd, libc::F_SETLEASE, libc::F_RDLCK) } == 0;
    if taken {
        // SAFETY: as above; closing the file would also drop the lease.
        unsafe { libc::fcntl(fd, libc::F_SETLEASE, libc::F_UNLCK) };
    }
    taken
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
}
