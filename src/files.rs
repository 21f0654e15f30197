//! Durable file writes: atomic replacement and fsynced appends.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

/// Replaces `path` with `bytes` atomically: a temp file in the same folder,
/// fsynced, keeps the old file's permissions, renamed over the target, then
/// the folder is fsynced. A crash leaves either the old or the new content.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, |file| file.write_all(bytes))
}

/// `write_atomic`, with the content written by `write` (buffered), so a
/// large file need not be built in memory first.
fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    write_atomic_checked(path, write, None, None).map(|_| ())
}

/// The spare of a file ralph rewrites often: `.NAME.spare` beside it.
fn spare_of(path: &Path) -> std::path::PathBuf {
    parent_dir(path).join(format!(".{}.spare", file_name(path)))
}

/// `write_atomic_with`, keeping the replaced version as a spare beside it
/// (`.NAME.spare`) and writing into the spare when nobody has it open (see
/// [`write_atomic_unless_changed`]): for ralph's own files rewritten many
/// times a run, where making and deleting a file costs more than writing it.
pub fn write_atomic_reusing(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    write_atomic_checked(path, write, None, Some(&spare_of(path))).map(|_| ())
}

/// `write_atomic_with` for a file read with stamp `expected`: it replaces
/// the file only while it still is that version, and returns `Ok(false)`
/// (writing nothing) when someone changed it, so the caller can apply its
/// change to the new content instead of overwriting it. The swap is an
/// atomic exchange, checked after the fact: a file renamed over the target
/// in the instant between the check and the swap (`jq ... && mv`) is put
/// back, never lost.
///
/// The replaced version is kept at `spare` (on the same file system)
/// instead of being deleted, and the next write goes into it
/// when nobody has it open: rewriting a file's pages in place is cheaper
/// than making new ones and freeing the old (a third of the time to
/// replace a 24 MiB file). It is scratch space, not a backup: a write in
/// progress leaves it half old, half new.
pub fn write_atomic_unless_changed(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    expected: Stamp,
    spare: &Path,
) -> io::Result<bool> {
    write_atomic_checked(path, write, Some(expected), Some(spare))
}

fn write_atomic_checked(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    expected: Option<Stamp>,
    spare: Option<&Path>,
) -> io::Result<bool> {
    debug_assert!(spare != Some(path), "a file is not its own spare");
    let dir = parent_dir(path);
    let reused = spare.and_then(|spare| Some((spare, reusable(spare, path)?)));
    let temp = match reused {
        Some((spare, _)) => spare.to_owned(),
        None => dir.join(temp_name(file_name(path), std::process::id())),
    };
    let result = (|| {
        let file = match reused {
            Some((_, file)) => file,
            None => File::create(&temp)?,
        };
        let mut out = io::BufWriter::with_capacity(1 << 16, WriteBehind::new(file));
        write(&mut out)?;
        let WriteBehind { file, written, .. } =
            out.into_inner().map_err(io::IntoInnerError::into_error)?;
        // A reused spare may be longer than the new content.
        file.set_len(written)?;
        if let Ok(meta) = fs::metadata(path) {
            file.set_permissions(meta.permissions())?;
        }
        file.sync_all()?;
        drop(file);
        let replaced = match expected {
            None if spare.is_some() => {
                exchange(&temp, path)?;
                true
            }
            None => {
                fs::rename(&temp, path)?;
                true
            }
            Some(expected) => replace_if(&temp, path, expected)?,
        };
        // After an exchange, `temp` holds the replaced version: it becomes
        // the spare (a reused spare already is), or is removed.
        if replaced && spare != Some(temp.as_path()) {
            let kept = spare.is_some_and(|spare| fs::rename(&temp, spare).is_ok());
            if !kept {
                remove_if_there(&temp)?;
            }
        }
        if replaced {
            sync_dir(dir)?;
        }
        Ok(replaced)
    })();
    if !matches!(result, Ok(true)) {
        // Ralph's own bytes (or a spare's scratch): `replace_if` never
        // leaves somebody else's file here.
        let _ = fs::remove_file(&temp);
    }
    result
}

fn remove_if_there(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => Err(err),
        _ => Ok(()),
    }
}

/// `spare`, opened for writing, when the next version of `path` can be
/// written into it: a regular file with no other name (not a symlink, no
/// hard link, not `path` itself), on the same file system as `path`'s
/// folder, that nobody has open (a reader of an old version keeps it).
fn reusable(spare: &Path, path: &Path) -> Option<File> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    // Not blocking: a `ralph task` command with the spare (a version it
    // mapped) under its lease makes the open fail at once.
    let file = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(spare)
        .ok()?;
    let meta = file.metadata().ok()?;
    let target = fs::metadata(path).ok();
    let ours = meta.is_file()
        && meta.nlink() == 1
        && meta.dev() == fs::metadata(parent_dir(path)).ok()?.dev()
        && target.is_none_or(|target| target.ino() != meta.ino() || target.dev() != meta.dev());
    (ours && crate::lease::nobody_else_has_open(&file)).then_some(file)
}

/// A file being written that starts the disk writes of each few MiB as
/// soon as they are written (`sync_file_range`, without waiting), so the
/// `fsync` at the end waits only for the last of them instead of all.
struct WriteBehind {
    file: File,
    /// Bytes written so far, and how many of them are handed to the disk.
    written: u64,
    started: u64,
}

impl WriteBehind {
    const STEP: u64 = 4 << 20;

    fn new(file: File) -> WriteBehind {
        WriteBehind {
            file,
            written: 0,
            started: 0,
        }
    }
}

impl Write for WriteBehind {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let n = self.file.write(bytes)?;
        self.written += n as u64;
        if self.written - self.started >= Self::STEP {
            use std::os::fd::AsRawFd;
            // SAFETY: a plain system call on our own open descriptor; it
            // only starts writeback of the range (no memory is passed).
            // A failure is harmless: the final fsync writes everything.
            let _ = unsafe {
                libc::sync_file_range(
                    self.file.as_raw_fd(),
                    self.started as libc::off64_t,
                    (self.written - self.started) as libc::off64_t,
                    libc::SYNC_FILE_RANGE_WRITE,
                )
            };
            self.started = self.written;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Whether `renameat2` failed only for want of support for its flags here.
fn unsupported(err: nix::errno::Errno) -> bool {
    use nix::errno::Errno;
    matches!(err, Errno::EINVAL | Errno::ENOSYS | Errno::EOPNOTSUPP)
}

/// Swaps `temp` and `path` (a rename when there is no `path` yet, or the
/// file system cannot swap).
fn exchange(temp: &Path, path: &Path) -> io::Result<()> {
    use nix::errno::Errno;
    use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
    match renameat2(AT_FDCWD, temp, AT_FDCWD, path, RenameFlags::RENAME_EXCHANGE) {
        Ok(()) => Ok(()),
        Err(err) if err == Errno::ENOENT || unsupported(err) => fs::rename(temp, path),
        Err(err) => Err(err.into()),
    }
}

/// Moves `temp` over `path` when `path` is still the version `expected`;
/// the file it replaced may be left at `temp`, for the caller to remove.
/// Whatever else is left at `temp` is ralph's own: a file of somebody
/// else's that the swap brought there is put back or aside, even when
/// that fails halfway.
fn replace_if(temp: &Path, path: &Path, expected: Stamp) -> io::Result<bool> {
    use nix::errno::Errno;
    use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
    if Stamp::of(path)? != expected {
        return Ok(false);
    }
    let ours = Stamp::of(temp)?;
    if expected.0.is_none() {
        // There was no file: create it only if nobody did meanwhile.
        return match renameat2(
            AT_FDCWD,
            temp,
            AT_FDCWD,
            path,
            RenameFlags::RENAME_NOREPLACE,
        ) {
            Ok(()) => Ok(true),
            Err(Errno::EEXIST) => Ok(false),
            Err(err) if unsupported(err) => fs::rename(temp, path).map(|()| true),
            Err(err) => Err(err.into()),
        };
    }
    match renameat2(AT_FDCWD, temp, AT_FDCWD, path, RenameFlags::RENAME_EXCHANGE) {
        Ok(()) => {}
        Err(err) if unsupported(err) => return fs::rename(temp, path).map(|()| true),
        Err(err) => return Err(err.into()),
    }
    let checked = check_replaced(temp, path, expected, ours);
    if checked.is_err() && fs::symlink_metadata(temp).is_ok() {
        // Whose file `temp` holds is unknown: keep it rather than let the
        // caller delete it.
        let _ = fs::rename(temp, displaced(path));
    }
    checked
}

/// After the swap in `replace_if`, `temp` holds the file that was
/// replaced: was it the one read (`expected`)? If not, someone renamed
/// theirs over `path` in between: put it back, or aside when ours
/// (`ours`) is no longer at `path` either.
fn check_replaced(temp: &Path, path: &Path, expected: Stamp, ours: Stamp) -> io::Result<bool> {
    use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
    // A writer that opened it before the swap (`>>`, an editor writing in
    // place, or one that waited for a `ralph task` command's lease on it)
    // may still be writing to it: wait while the kernel says somebody has
    // it open for writing (2 s at most: a writer that keeps it open is
    // checked as it is then), so their write is seen below.
    // Where the kernel cannot tell, a file changed in the last moments
    // gets a short grace.
    let waiting = std::time::Instant::now();
    loop {
        match crate::lease::writing(temp) {
            Some(true) if waiting.elapsed() < std::time::Duration::from_secs(2) => {
                std::thread::sleep(std::time::Duration::from_millis(1))
            }
            None if expected.age() < std::time::Duration::from_secs(2) => {
                std::thread::sleep(std::time::Duration::from_millis(10));
                break;
            }
            _ => break,
        }
    }
    if Stamp::of(temp)? == expected {
        // The caller removes it (see `write_atomic_checked`).
        return Ok(true);
    }
    if Stamp::of(path)? == ours {
        renameat2(AT_FDCWD, temp, AT_FDCWD, path, RenameFlags::RENAME_EXCHANGE)?;
        fs::remove_file(temp)?;
    } else {
        fs::rename(temp, displaced(path))?;
    }
    Ok(false)
}

/// Where a file of somebody else's that ralph had to move is kept: named
/// `tasks.jsonl.<...>`, so git never takes it into a commit.
fn displaced(path: &Path) -> std::path::PathBuf {
    parent_dir(path).join(format!(
        "{}.displaced-{}",
        file_name(path),
        std::process::id()
    ))
}

/// What identifies one version of a file: device, inode, size and
/// modification time (`None`: no file). A rename over it and an append
/// change it; an in-place rewrite changes it unless it keeps the size and
/// lands within the same tick of the file system's clock (a few
/// milliseconds), which is why fresh files get a second look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp(Option<(u64, u64, u64, i64, i64)>);

impl Stamp {
    /// The stamp of `path` now.
    pub fn of(path: &Path) -> io::Result<Stamp> {
        match fs::metadata(path) {
            Ok(meta) => Ok(Stamp::of_metadata(&meta)),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(Stamp(None)),
            Err(err) => Err(err),
        }
    }

    /// The stamp of the open file `file` now.
    pub fn of_file(file: &File) -> io::Result<Stamp> {
        Ok(Stamp::of_metadata(&file.metadata()?))
    }

    fn of_metadata(meta: &fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        Stamp(Some((
            meta.dev(),
            meta.ino(),
            meta.size(),
            meta.mtime(),
            meta.mtime_nsec(),
        )))
    }

    /// How long ago the file was last modified: `Duration::MAX` for no
    /// file (never fresh), zero for a time in the future.
    pub fn age(&self) -> std::time::Duration {
        let Some((_, _, _, secs, nanos)) = self.0 else {
            return std::time::Duration::MAX;
        };
        let modified = std::time::UNIX_EPOCH
            + std::time::Duration::new(secs.max(0) as u64, nanos.max(0) as u32);
        std::time::SystemTime::now()
            .duration_since(modified)
            .unwrap_or_default()
    }
}

/// Reads `path` (missing: empty) once it has settled, and hands its bytes
/// to `parse`: a file modified in the last moment may be in the middle of a
/// rewrite by an editor that does not write atomically, so a fresh file
/// counts only once nobody has it open for writing (see [`crate::lease`])
/// or its stamp has stayed the same for a short while after the read
/// (usually the time `parse` takes anyway; otherwise the rest is slept);
/// when it changed, it is read again. Returns what `parse` made of
/// the settled bytes (even an error: a torn read is never reported as one)
/// and the stamp they belong to.
pub fn read_settled<T>(path: &Path, mut parse: impl FnMut(Vec<u8>) -> T) -> io::Result<(T, Stamp)> {
    const FRESH: std::time::Duration = std::time::Duration::from_millis(10);
    let mut last = None;
    for _ in 0..20 {
        let before = Stamp::of(path)?;
        let bytes = read_or_empty(path)?;
        let after = Stamp::of(path)?;
        let read_at = std::time::Instant::now();
        if before != after {
            // Changed while being read.
            std::thread::sleep(FRESH);
            continue;
        }
        let fresh = after.age() < FRESH;
        let value = parse(bytes);
        if !fresh {
            return Ok((value, after));
        }
        // Nobody has it open for writing and it is unchanged since the
        // read: any rewrite in place is over. Otherwise, unchanged for FRESH
        // since the read (the stamp catches any write, as for a file that
        // was not fresh): settled.
        if crate::lease::nobody_writing(path) && Stamp::of(path)? == after {
            return Ok((value, after));
        }
        std::thread::sleep(FRESH.saturating_sub(read_at.elapsed()));
        if Stamp::of(path)? == after {
            return Ok((value, after));
        }
        last = Some((value, after));
    }
    match last {
        Some(last) => Ok(last),
        // It changed during every read: take it as it is now.
        None => {
            let stamp = Stamp::of(path)?;
            Ok((parse(read_or_empty(path)?), stamp))
        }
    }
}

/// The name of the temp file `write_atomic` uses for `name`.
pub fn temp_name(name: &str, pid: u32) -> String {
    format!(".{name}.{pid}.tmp")
}

/// The writer's pid when `file` is a temp file of `write_atomic` for `name`.
pub fn temp_owner(file: &str, name: &str) -> Option<u32> {
    file.strip_prefix('.')?
        .strip_prefix(name)?
        .strip_prefix('.')?
        .strip_suffix(".tmp")?
        .parse()
        .ok()
}

/// Removes the temp files of `write_atomic` for `path` (beside it) that a
/// writer left behind when it died (its pid no longer runs). Returns how
/// many.
pub fn remove_stale_temps(path: &Path) -> io::Result<usize> {
    let (dir, name) = (parent_dir(path), file_name(path));
    let mut removed = 0;
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let file = entry.file_name();
        let Some(pid) = temp_owner(&file.to_string_lossy(), name) else {
            continue;
        };
        let alive = pid != std::process::id() && Path::new(&format!("/proc/{pid}")).exists();
        if !alive {
            fs::remove_file(entry.path())?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Appends `bytes` to `path` (creating it) and fsyncs before returning.
pub fn append_durable(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let existed = path.exists();
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    if !existed {
        sync_dir(parent_dir(path))?;
    }
    Ok(())
}

/// Reads `path`, treating a missing file as empty. A big file's buffer
/// asks for huge pages (see [`advise_huge_pages`]).
pub fn read_or_empty(path: &Path) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut file = match File::open(path) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        other => other?,
    };
    let size = file.metadata().map_or(0, |meta| meta.len() as usize);
    let halves = if size >= BIG_READ && cores() > 1 {
        read_in_halves(&file, size)
    } else {
        None
    };
    let mut bytes = match halves {
        Some(bytes) => {
            // Anything written past the size seen is read below.
            use std::io::Seek;
            file.seek(io::SeekFrom::Start(size as u64))?;
            bytes
        }
        None => {
            let mut bytes = Vec::new();
            bytes.try_reserve_exact(size)?;
            advise_huge_pages(&mut bytes);
            bytes
        }
    };
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A file's bytes mapped into memory, read-only, under a read lease (see
/// [`crate::lease::hold_read`]): until it is let go of ([`Mapped::let_go`])
/// or dropped, nobody can open the file for writing or truncate it, so its
/// bytes stay as they were mapped. Reading a big file this way needs no
/// memory of its own and no copy: the bytes are the page cache's.
pub struct Mapped {
    bytes: std::ptr::NonNull<u8>,
    len: usize,
    /// Holds the lease until it is closed (by `let_go`, or after the unmap).
    file: std::sync::Mutex<Option<File>>,
}

// SAFETY: the mapping is read-only and the lease keeps anybody from
// writing the file until it is let go of, after which nothing reads it:
// its bytes can be read from any thread.
unsafe impl Send for Mapped {}
// SAFETY: as above.
unsafe impl Sync for Mapped {}

impl Mapped {
    /// Lets go of the lease, so whoever waits to write the file goes on.
    ///
    /// # Safety
    ///
    /// Nothing may read the bytes afterwards (they may change, or vanish
    /// past a new end of file); dropping what holds them is fine.
    pub unsafe fn let_go(&self) {
        if let Ok(mut file) = self.file.lock()
            && let Some(file) = file.take()
        {
            // The mapping keeps the open file alive past the close: the
            // lease is let go of by name.
            crate::lease::let_go(&file);
        }
    }
}

impl std::ops::Deref for Mapped {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: `len` bytes mapped readable at `bytes` until dropped.
        unsafe { std::slice::from_raw_parts(self.bytes.as_ptr(), self.len) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map_leased`, unmapped once; no
        // slice of it outlives `self`. The file closes after.
        unsafe { libc::munmap(self.bytes.as_ptr().cast(), self.len) };
    }
}

/// `path` mapped under a read lease, with its stamp; `None` (read it
/// instead) for a small or missing file, a file system other than a local
/// one whose leases see every writer (ext4, xfs, btrfs, tmpfs), or when
/// the kernel grants no lease (somebody has it open for writing) or lets
/// a writer break one in under 5 s (`/proc/sys/fs/lease-break-time`).
/// Only for a load that is let go of soon: a writer of the file waits
/// until it is.
pub fn map_leased(path: &Path) -> io::Result<Option<(Mapped, Stamp)>> {
    use std::os::fd::AsRawFd;
    let file = match File::open(path) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        other => other?,
    };
    let size = file.metadata()?.len();
    if size < BIG_READ as u64 || !crate::lease::hold_read(&file) {
        return Ok(None);
    }
    // Under the lease: the size and stamp of the bytes that stay.
    let meta = file.metadata()?;
    let stamp = Stamp::of_metadata(&meta);
    let Ok(len) = usize::try_from(meta.len()) else {
        return Ok(None);
    };
    if len == 0 {
        return Ok(None);
    }
    // SAFETY: a read-only mapping of a file nobody can write while the
    // lease is held; unmapped in `Drop`.
    let bytes = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if bytes == libc::MAP_FAILED {
        return Ok(None);
    }
    let bytes = std::ptr::NonNull::new(bytes.cast()).expect("mmap never maps at 0");
    Ok(Some((
        Mapped {
            bytes,
            len,
            file: std::sync::Mutex::new(Some(file)),
        },
        stamp,
    )))
}

/// The smallest file `read_or_empty` reads with two threads.
const BIG_READ: usize = 4 << 20;

/// How many threads can run at once here, asked once per process (the
/// answer costs a few file reads under cgroups).
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The first `size` bytes of a big `file`, read by two threads that each
/// fill half of the buffer: copying the bytes and faulting in the pages
/// they land on is most of the time to read a big file. `None` for a small
/// file, or when the file is shorter than `size` by now (the caller reads
/// it the plain way).
fn read_in_halves(file: &File, size: usize) -> Option<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    // Above `HUGE`, the plain read's allocation reports a failure as an
    // error where `vec!` would abort.
    const HUGE: usize = 1 << 30;
    if !(BIG_READ..=HUGE).contains(&size) {
        return None;
    }
    // A fresh mapping (calloc), zeroed by the kernel as its pages are first
    // touched: by the thread that fills them.
    let mut bytes = vec![0u8; size];
    advise_huge_pages(&mut bytes);
    let (first, second) = bytes.split_at_mut(size / 2);
    let read = std::thread::scope(|scope| {
        let other = scope.spawn(|| file.read_exact_at(second, (size / 2) as u64));
        let mine = file.read_exact_at(first, 0);
        mine.is_ok() && other.join().is_ok_and(|read| read.is_ok())
    });
    read.then_some(bytes)
}

/// Asks the kernel to back the whole 2 MiB pages of `buffer`'s capacity
/// with huge pages (where transparent huge pages are on, or in `madvise`
/// mode): filling a fresh 24 MiB buffer otherwise takes some 6,000 page
/// faults, a quarter of the time to load a big queue. Only a hint; small
/// buffers are left alone.
pub fn advise_huge_pages<T>(buffer: &mut Vec<T>) {
    use nix::sys::mman::{MmapAdvise, madvise};
    const HUGE_PAGE: usize = 2 << 20;
    let start = buffer.as_mut_ptr() as usize;
    let end = start + buffer.capacity() * std::mem::size_of::<T>();
    let (first, last) = (
        start.next_multiple_of(HUGE_PAGE),
        end / HUGE_PAGE * HUGE_PAGE,
    );
    if last <= first {
        return;
    }
    let Some(from) = std::ptr::NonNull::new(first as *mut std::ffi::c_void) else {
        return;
    };
    // SAFETY: the range lies inside the buffer's own allocation, and
    // MADV_HUGEPAGE changes only how the kernel backs those pages, never
    // what they hold. A refusal (no THP support) changes nothing.
    let _ = unsafe { madvise(from, last - first, MmapAdvise::MADV_HUGEPAGE) };
}

/// Why a text file could not be read.
#[derive(Debug)]
pub enum TextError {
    /// The file does not exist.
    Missing,
    /// It is not UTF-8; the message names the line, column and byte.
    NotUtf8 {
        /// 1-based line of the first bad byte.
        line: usize,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// Reading failed.
    Io(io::Error),
}

/// Reads a UTF-8 text file (a leading BOM is dropped).
pub fn read_text(path: &Path) -> Result<String, TextError> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Err(TextError::Missing),
        Err(err) => return Err(TextError::Io(err)),
    };
    match String::from_utf8(bytes) {
        Ok(text) => Ok(text
            .strip_prefix('\u{feff}')
            .map(str::to_owned)
            .unwrap_or(text)),
        Err(err) => {
            let (line, message) = not_utf8(err.as_bytes(), err.utf8_error());
            Err(TextError::NotUtf8 { line, message })
        }
    }
}

/// Where `bytes` stop being UTF-8 (`err`): the 1-based line, and a message
/// naming the byte and its column, and the fix.
pub fn not_utf8(bytes: &[u8], err: std::str::Utf8Error) -> (usize, String) {
    let valid = &bytes[..err.valid_up_to()];
    let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = valid.len() - valid.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1) + 1;
    let message = format!(
        "not valid UTF-8 (byte 0x{:02x} at column {column}); save the file as UTF-8",
        bytes[err.valid_up_to()]
    );
    (line, message)
}

fn file_name(path: &Path) -> &str {
    path.file_name().and_then(|n| n.to_str()).unwrap_or("file")
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 5 MiB file and an odd byte, every position distinct enough to
    /// catch a read at the wrong offset: its path and bytes.
    fn big_file(dir: &assert_fs::TempDir) -> (std::path::PathBuf, Vec<u8>) {
        let path = dir.path().join("big.jsonl");
        let bytes: Vec<u8> = (0..(5 << 20) + 1).map(|i: u32| (i % 251) as u8).collect();
        fs::write(&path, &bytes).unwrap();
        (path, bytes)
    }

    #[test]
    fn a_big_file_is_mapped_under_a_lease_that_holds_writers_off() {
        let dir = assert_fs::TempDir::new().unwrap();
        let (path, bytes) = big_file(&dir);
        let (mapped, stamp) = map_leased(&path).unwrap().expect("mapped");
        assert!(*mapped == bytes[..]);
        assert_eq!(stamp, Stamp::of(&path).unwrap());
        // A writer waits for the lease: its append lands only once the
        // mapping is gone, and the mapped bytes never change meanwhile.
        let mut writer = std::process::Command::new("sh")
            .arg("-c")
            .arg("printf more >> \"$0\"")
            .arg(&path)
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(
            writer.try_wait().unwrap().is_none(),
            "the append did not wait"
        );
        assert!(*mapped == bytes[..]);
        drop(mapped);
        assert!(writer.wait().unwrap().success());
        assert_eq!(fs::metadata(&path).unwrap().len(), bytes.len() as u64 + 4);
        // Not mapped: a file open for writing, a small file, no file.
        let open = OpenOptions::new().append(true).open(&path).unwrap();
        assert!(map_leased(&path).unwrap().is_none());
        drop(open);
        assert!(map_leased(&path).unwrap().is_some());
        fs::write(&path, b"{}\n").unwrap();
        assert!(map_leased(&path).unwrap().is_none());
        assert!(map_leased(&dir.path().join("missing")).unwrap().is_none());
    }

    #[test]
    fn a_big_file_read_in_halves_is_read_whole() {
        let dir = assert_fs::TempDir::new().unwrap();
        let (path, bytes) = big_file(&dir);
        assert!(read_in_halves(&File::open(&path).unwrap(), bytes.len()).is_some());
        assert!(read_or_empty(&path).unwrap() == bytes);
        // A file shorter than the size asked for is left to the plain read.
        assert!(read_in_halves(&File::open(&path).unwrap(), bytes.len() + 10).is_none());
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp_file() {
        let dir = assert_fs::TempDir::new().unwrap();
        let path = dir.path().join("f.jsonl");
        write_atomic(&path, b"one\n").unwrap();
        write_atomic(&path, b"two\n").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two\n");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_checked_write_never_replaces_a_file_changed_since_it_was_read() {
        let dir = assert_fs::TempDir::new().unwrap();
        let path = dir.path().join("tasks.jsonl");
        fs::create_dir(dir.path().join(".ralph")).unwrap();
        let spare = dir.path().join(".ralph/spare");
        fs::write(&path, "read\n").unwrap();
        let stamp = Stamp::of(&path).unwrap();
        // Someone else's `mv` lands after our read.
        fs::write(dir.path().join("other"), "theirs\n").unwrap();
        fs::rename(dir.path().join("other"), &path).unwrap();
        let written =
            write_atomic_unless_changed(&path, |out| out.write_all(b"ours\n"), stamp, &spare)
                .unwrap();
        assert!(!written);
        assert_eq!(fs::read(&path).unwrap(), b"theirs\n");
        // Read again, the write goes through.
        let stamp = Stamp::of(&path).unwrap();
        assert!(
            write_atomic_unless_changed(&path, |out| out.write_all(b"ours\n"), stamp, &spare)
                .unwrap()
        );
        assert_eq!(fs::read(&path).unwrap(), b"ours\n");
        // A file that appeared where there was none is not replaced either.
        let fresh = dir.path().join("new.jsonl");
        let none = Stamp::of(&fresh).unwrap();
        fs::write(&fresh, "created\n").unwrap();
        assert!(
            !write_atomic_unless_changed(&fresh, |out| out.write_all(b"ours\n"), none, &spare)
                .unwrap()
        );
        let names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name != ".ralph")
            .collect();
        assert_eq!(names.len(), 2, "no temp file left: {names:?}");
    }

    #[test]
    fn a_spare_takes_the_next_version_unless_someone_has_it_open() {
        use std::os::unix::fs::MetadataExt;
        let dir = assert_fs::TempDir::new().unwrap();
        let path = dir.path().join("tasks.jsonl");
        let spare = dir.path().join(".ralph/tasks.jsonl.spare");
        fs::create_dir(spare.parent().unwrap()).unwrap();
        let inode = |path: &Path| fs::metadata(path).unwrap().ino();
        let write = |text: &'static str| {
            let stamp = Stamp::of(&path).unwrap();
            let write = |out: &mut dyn Write| out.write_all(text.as_bytes());
            assert!(write_atomic_unless_changed(&path, write, stamp, &spare).unwrap());
            assert_eq!(fs::read_to_string(&path).unwrap(), text);
        };
        fs::write(&path, "first version, the longest\n").unwrap();
        let first = inode(&path);
        // No spare yet: a new file, and the replaced one is kept as spare.
        write("second\n");
        assert_eq!(inode(&spare), first);
        let second = inode(&path);
        // The spare takes the next version (cut to its length), and the
        // replaced one becomes the spare.
        write("third\n");
        assert_eq!(inode(&path), first);
        assert_eq!(inode(&spare), second);
        // A reader of the spare (an old version) keeps what it reads.
        let reader = File::open(&spare).unwrap();
        write("fourth\n");
        assert_ne!(inode(&path), second, "a spare open elsewhere is left alone");
        drop(reader);
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            2,
            "no temp file left"
        );
        // Neither a hard-linked spare nor a symlink is written through.
        fs::hard_link(&spare, dir.path().join("link")).unwrap();
        let linked = fs::read_to_string(&spare).unwrap();
        write("fifth\n");
        assert_eq!(fs::read_to_string(dir.path().join("link")).unwrap(), linked);
        fs::remove_file(&spare).unwrap();
        fs::write(dir.path().join("target"), "kept\n").unwrap();
        std::os::unix::fs::symlink(dir.path().join("target"), &spare).unwrap();
        write("sixth\n");
        assert_eq!(
            fs::read_to_string(dir.path().join("target")).unwrap(),
            "kept\n"
        );
    }

    #[test]
    fn a_file_rewritten_often_recycles_its_spare() {
        use std::os::unix::fs::MetadataExt;
        let dir = assert_fs::TempDir::new().unwrap();
        let path = dir.path().join("state.json");
        let spare = spare_of(&path);
        assert_eq!(spare, dir.path().join(".state.json.spare"));
        let save = |text: &'static str| {
            write_atomic_reusing(&path, |out| out.write_all(text.as_bytes())).unwrap();
            assert_eq!(fs::read_to_string(&path).unwrap(), text);
        };
        save("{\"iteration\": 1, \"long\": true}\n");
        assert!(!spare.exists(), "nothing was replaced");
        let first = fs::metadata(&path).unwrap().ino();
        save("{\"iteration\": 2}\n");
        assert_eq!(fs::metadata(&spare).unwrap().ino(), first);
        // A reader of the old version keeps it; the next save makes a file.
        let reader = File::open(&spare).unwrap();
        let second = fs::metadata(&path).unwrap().ino();
        save("{\"iteration\": 3}\n");
        assert_ne!(fs::metadata(&path).unwrap().ino(), first);
        assert_eq!(fs::metadata(&spare).unwrap().ino(), second);
        drop(reader);
        save("{\"iteration\": 4}\n");
        assert_eq!(fs::metadata(&path).unwrap().ino(), second);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn stale_temps_of_dead_writers_are_removed() {
        let dir = assert_fs::TempDir::new().unwrap();
        assert_eq!(temp_owner(".tasks.jsonl.42.tmp", "tasks.jsonl"), Some(42));
        assert_eq!(temp_owner(".tasks.jsonl.x.tmp", "tasks.jsonl"), None);
        assert_eq!(temp_owner("tasks.jsonl", "tasks.jsonl"), None);
        // pid 0 never names a live process of ours.
        fs::write(dir.path().join(temp_name("tasks.jsonl", 0)), "torn").unwrap();
        fs::write(dir.path().join("keep.txt"), "").unwrap();
        assert_eq!(
            remove_stale_temps(&dir.path().join("tasks.jsonl")).unwrap(),
            1
        );
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn append_creates_then_appends() {
        let dir = assert_fs::TempDir::new().unwrap();
        let path = dir.path().join("log");
        append_durable(&path, b"a\n").unwrap();
        append_durable(&path, b"b\n").unwrap();
        assert_eq!(read_or_empty(&path).unwrap(), b"a\nb\n");
        assert_eq!(read_or_empty(&dir.path().join("missing")).unwrap(), b"");
    }
}
