//! Swapping two files: in one step where the system can (Linux's
//! `renameat2`, macOS's `renamex_np`), in three steps where it or its file
//! system cannot. Both builds run the same swap: the `portable` feature
//! stands for macOS, which swaps in one step too.

use std::io;
use std::path::{Path, PathBuf};

/// Swaps the files at `a` and `b`. `Ok(false)`: neither way works here
/// (no swap and no hard links), and nothing was done.
pub(crate) fn exchange(a: &Path, b: &Path) -> io::Result<bool> {
    if in_one_step(a, b)? {
        return Ok(true);
    }
    in_three_steps(a, b)
}

/// `Ok(false)`: this file system cannot swap (some network ones).
#[cfg(target_os = "linux")]
fn in_one_step(a: &Path, b: &Path) -> io::Result<bool> {
    use nix::errno::Errno;
    use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
    match renameat2(AT_FDCWD, a, AT_FDCWD, b, RenameFlags::RENAME_EXCHANGE) {
        Ok(()) => Ok(true),
        Err(Errno::EINVAL | Errno::ENOSYS | Errno::EOPNOTSUPP) => Ok(false),
        Err(err) => Err(err.into()),
    }
}

/// `Ok(false)`: this file system cannot swap (FAT, some network ones;
/// APFS and HFS+ can).
#[cfg(target_os = "macos")]
#[allow(unsafe_code)]
fn in_one_step(a: &Path, b: &Path) -> io::Result<bool> {
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
        Err(Errno::ENOTSUP | Errno::EOPNOTSUPP | Errno::EINVAL | Errno::ENOSYS) => Ok(false),
        Err(err) => Err(err.into()),
    }
}

/// Other Unixes: no swap in one step that ralph knows of.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn in_one_step(_a: &Path, _b: &Path) -> io::Result<bool> {
    Ok(false)
}

/// Swaps in three steps: a second name for `b` (a hard link), `a` renamed
/// over `b`, then that second name renamed to `a`. Not atomic: a file
/// renamed over `b` between the first two steps would be lost, so `b` is
/// looked at again just before the second, and a `b` that is no longer
/// the file linked calls the swap off as `NotFound` (for the caller, a
/// change like a deletion), leaving only the moment between that look and
/// the rename. A write into the old `b` (an append, an editor writing in
/// place) lands in the file that ends up at `a`, where the caller looks
/// for it. `Ok(false)`: no hard links here, and nothing was done.
fn in_three_steps(a: &Path, b: &Path) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let mut name = b.as_os_str().to_owned();
    name.push(format!(".swap-{}", std::process::id()));
    let old = PathBuf::from(name);
    // One left by a process of the same id that was killed mid-swap.
    let _ = std::fs::remove_file(&old);
    match std::fs::hard_link(b, &old) {
        Ok(()) => {}
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Err(err),
        Err(_) => return Ok(false),
    }
    let identity = |path: &Path| std::fs::metadata(path).map(|meta| (meta.dev(), meta.ino()));
    let linked = identity(&old);
    if linked.is_err() || identity(b).ok() != linked.ok() {
        let _ = std::fs::remove_file(&old);
        return Err(io::ErrorKind::NotFound.into());
    }
    if let Err(err) = std::fs::rename(a, b) {
        let _ = std::fs::remove_file(&old);
        return Err(err);
    }
    std::fs::rename(&old, a)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two files `a` and `b` holding their names, in a folder of their own.
    fn pair() -> (assert_fs::TempDir, PathBuf, PathBuf) {
        let dir = assert_fs::TempDir::new().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, "a").unwrap();
        std::fs::write(&b, "b").unwrap();
        (dir, a, b)
    }

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn both_ways_swap_two_files_and_leave_nothing_else() {
        let swaps: [fn(&Path, &Path) -> io::Result<bool>; 3] =
            [exchange, in_one_step, in_three_steps];
        for swap in swaps {
            let (dir, a, b) = pair();
            // Every way swaps on the local file systems tests run on.
            assert!(swap(&a, &b).unwrap());
            assert_eq!((read(&a), read(&b)), ("b".into(), "a".into()));
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
        }
    }

    #[test]
    fn the_three_steps_keep_the_inode_so_a_late_append_reaches_a() {
        use std::io::Write;
        let (_dir, a, b) = pair();
        // A writer that opened `b` to append just before the swap.
        let mut late = std::fs::OpenOptions::new().append(true).open(&b).unwrap();
        assert!(in_three_steps(&a, &b).unwrap());
        late.write_all(b"+late").unwrap();
        assert_eq!((read(&a), read(&b)), ("b+late".into(), "a".into()));
    }

    #[test]
    fn the_three_steps_on_a_missing_b_do_nothing_but_say_not_found() {
        let (dir, a, b) = pair();
        std::fs::remove_file(&b).unwrap();
        let err = in_three_steps(&a, &b).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert_eq!(read(&a), "a");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn the_three_steps_get_past_a_second_name_a_killed_swap_left() {
        let (dir, a, b) = pair();
        let stale = dir.path().join(format!("b.swap-{}", std::process::id()));
        std::fs::write(&stale, "stale").unwrap();
        assert!(in_three_steps(&a, &b).unwrap());
        assert_eq!((read(&a), read(&b)), ("b".into(), "a".into()));
        assert!(!stale.exists());
    }
}
