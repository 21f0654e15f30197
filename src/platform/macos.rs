//! macOS: `renamex_np` swaps two files in one step; everything else is
//! the portable version.

// Built only where this call exists (see `mod.rs`).
#![cfg(target_os = "macos")]

pub use super::portable::{Watch, environment_has, git_at_work_in, group_members, zombie};

use std::io;
use std::path::Path;

pub fn exchange(a: &Path, b: &Path) -> io::Result<bool> {
    use nix::NixPath;
    use nix::errno::Errno;
    let swapped = a.with_nix_path(|a| {
        b.with_nix_path(|b| {
            // SAFETY: both are NUL-terminated paths that outlive the call,
            // which only reads them.
            let status =
                unsafe { nix::libc::renamex_np(a.as_ptr(), b.as_ptr(), nix::libc::RENAME_SWAP) };
            Errno::result(status)
        })
    })??;
    match swapped {
        Ok(_) => Ok(true),
        // A file system that cannot swap (FAT, some network ones): the
        // swap in three steps still works there.
        Err(Errno::ENOTSUP | Errno::EOPNOTSUPP | Errno::EINVAL | Errno::ENOSYS) => {
            super::portable::exchange(a, b)
        }
        Err(err) => Err(err.into()),
    }
}
