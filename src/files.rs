//! Durable file I/O: atomic replacement, fsynced appends, and reads that
//! wait out a rewrite in place. ralph's own files in a project go through
//! [`own`], which never follows a link to them.

pub mod own;

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::exit::Exit;
use crate::platform;

/// An I/O failure and the file or folder it happened at: the one such
/// error every area's error type carries (`Io`).
#[derive(Debug)]
pub struct PathError {
    /// The file or folder involved.
    pub path: PathBuf,
    /// What the operating system said.
    pub source: io::Error,
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match own::not_own(&self.source) {
            // It names the path itself: the link or folder that is wrong,
            // which may be on the way to `path`.
            Some(refused) => write!(f, "{refused}"),
            None => write!(f, "{}: {}", self.path.display(), self.source),
        }
    }
}

impl std::error::Error for PathError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

impl PathError {
    /// The failure `source` at `path`.
    pub fn new(path: impl Into<PathBuf>, source: io::Error) -> PathError {
        PathError {
            path: path.into(),
            source,
        }
    }

    /// The exit code it ends a command with: invalid input for a link (or
    /// another stranger) where ralph keeps a file of its own, which no
    /// retry cures; a transient failure otherwise.
    pub(crate) fn exit(&self) -> Exit {
        match own::not_own(&self.source) {
            Some(_) => Exit::InvalidInput,
            None => Exit::Transient,
        }
    }

    /// What the person can do about it, when ralph knows.
    pub(crate) fn hint(&self) -> Option<String> {
        own::not_own(&self.source).map(own::NotOwn::hint)
    }
}

/// Turns an I/O failure at `path` into any error that carries a
/// [`PathError`]: `.map_err(files::at(&path))?`.
pub fn at<E: From<PathError>>(path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> E {
    let path = path.into();
    move |source| E::from(PathError::new(path, source))
}

/// Replaces `path` with `bytes` atomically: a temp file in the same folder,
/// fsynced, keeping the old file's permissions, renamed over the target,
/// then the folder is fsynced. A crash leaves either the old or the new
/// content. Where `path` is a symbolic link, the link is replaced by the
/// file: nothing is written where it points.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, |file| file.write_all(bytes))
}

/// `write_atomic`, with the content written into the temp file by `write`.
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    write_then(path, write, |temp| fs::rename(temp, path).map(|()| true)).map(|_| ())
}

/// `write_atomic_with` for a file read with stamp `expected`: it replaces the
/// file only while it still is that version, and returns `Ok(false)`
/// (writing nothing) when someone changed it, so the caller can apply its
/// change to the new content instead of overwriting it.
///
/// The check is made again after the new file is swapped in: a write to
/// the version replaced in the instant between the check and the swap
/// (`>>`, an editor writing in place) is seen and that version put back,
/// never lost. Where the system swaps in one step (Linux, macOS), so is a
/// file renamed over the target in that instant (`jq ... && mv`);
/// elsewhere, that rename is lost in a window of microseconds
/// (docs/REFERENCE.md, "Platforms").
pub fn write_atomic_unless_changed(
    path: &Path,
    write: impl FnOnce(&mut File) -> io::Result<()>,
    expected: Stamp,
) -> io::Result<bool> {
    write_then(path, write, |temp| replace_if(temp, path, expected))
}

/// Writes a fresh temp file beside `path` through `write` (fsynced, with
/// `path`'s permissions), hands it to `replace`, and fsyncs the folder
/// when it replaced `path`. The temp file never outlives the call.
fn write_then(
    path: &Path,
    write: impl FnOnce(&mut File) -> io::Result<()>,
    replace: impl FnOnce(&Path) -> io::Result<bool>,
) -> io::Result<bool> {
    let dir = parent_dir(path);
    let temp = dir.join(temp_name(file_name(path), std::process::id()));
    let result = (|| {
        let mut file = create_temp(&temp)?;
        write(&mut file)?;
        if let Ok(meta) = fs::symlink_metadata(path)
            && meta.is_file()
        {
            file.set_permissions(meta.permissions())?;
        }
        file.sync_all()?;
        drop(file);
        let replaced = replace(&temp)?;
        if replaced {
            sync_dir(dir)?;
        }
        Ok(replaced)
    })();
    // Ralph's own bytes, or the version just replaced: `replace_if` never
    // leaves somebody else's file here.
    let _ = fs::remove_file(&temp);
    result
}

/// Creates the temp file `temp`, new: a file or link found there (a
/// writer with this pid that died, or a trap) is removed, never written
/// through.
fn create_temp(temp: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let create = || {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(nix::libc::O_NOFOLLOW)
            .open(temp)
    };
    match create() {
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
            fs::remove_file(temp)?;
            create()
        }
        other => other,
    }
}

/// Moves `temp` over `path` when `path` is still the version `expected`.
/// Whatever is left at `temp` is ralph's own: a file of somebody else's
/// that a swap brought there is put back, or aside.
fn replace_if(temp: &Path, path: &Path, expected: Stamp) -> io::Result<bool> {
    if Stamp::of(path)? != expected {
        return Ok(false);
    }
    if expected.0.is_none() {
        // There was no file: create it only if nobody did meanwhile (a
        // hard link never replaces).
        return match fs::hard_link(temp, path) {
            Ok(()) => Ok(true),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(_) => fs::rename(temp, path).map(|()| true),
        };
    }
    let ours = Stamp::of(temp)?;
    match platform::exchange(temp, path) {
        Ok(true) => {}
        Ok(false) => return fs::rename(temp, path).map(|()| true),
        // Deleted since the check: a change like any other.
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(err) => return Err(err),
    }
    // `temp` now holds the version replaced. A writer that opened it just
    // before the swap without truncating it (`>>`) writes a moment later:
    // a file changed in the last moments, so in use, gets a short grace.
    if expected.age() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(1));
    }
    if Stamp::of(temp)? == expected {
        return Ok(true);
    }
    // Someone changed it between the check and the swap: theirs goes back.
    if Stamp::of(path)? == ours && platform::exchange(temp, path)? {
        return Ok(false);
    }
    fs::rename(temp, displaced(path))?;
    Ok(false)
}

/// The files of somebody else's that swaps over `path` had to move aside
/// ([`displaced`]), in name order.
pub fn displaced_copies(path: &Path) -> Vec<PathBuf> {
    let prefix = format!("{}.displaced-", file_name(path));
    let Ok(entries) = fs::read_dir(parent_dir(path)) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(&prefix))
        .map(|entry| entry.path())
        .collect();
    found.sort();
    found
}

/// Where a file of somebody else's that ralph had to move is kept: named
/// `tasks.jsonl.<...>`, so git never takes it into a commit.
fn displaced(path: &Path) -> PathBuf {
    parent_dir(path).join(format!(
        "{}.displaced-{}",
        file_name(path),
        std::process::id()
    ))
}

/// What identifies one version of a file: device, inode, size and
/// modification time (`None`: no file; a link is its own version). A rename over it and an append
/// change it; an in-place rewrite changes it unless it keeps the size and
/// lands within the same tick of the file system's clock (a few
/// milliseconds), which is why fresh files get a second look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp(Option<(u64, u64, u64, i64, i64)>);

impl Stamp {
    /// The stamp of `path` now.
    pub fn of(path: &Path) -> io::Result<Stamp> {
        use std::os::unix::fs::MetadataExt;
        // A link's own: a stamp never looks through one.
        match fs::symlink_metadata(path) {
            Ok(meta) => Ok(Stamp(Some((
                meta.dev(),
                meta.ino(),
                meta.size(),
                meta.mtime(),
                meta.mtime_nsec(),
            )))),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(Stamp(None)),
            Err(err) => Err(err),
        }
    }

    /// Whether there was a file.
    pub fn exists(&self) -> bool {
        self.0.is_some()
    }

    /// How long ago the file was last modified: `Duration::MAX` for no
    /// file (never fresh), zero for a time in the future.
    pub fn age(&self) -> Duration {
        let Some((_, _, _, secs, nanos)) = self.0 else {
            return Duration::MAX;
        };
        let modified =
            std::time::UNIX_EPOCH + Duration::new(secs.max(0) as u64, nanos.max(0) as u32);
        std::time::SystemTime::now()
            .duration_since(modified)
            .unwrap_or_default()
    }
}

/// Reads `path` (missing: empty) once it has settled, and hands its bytes
/// to `parse`: a file modified in the last moment may be in the middle of a
/// rewrite by an editor that does not write atomically, so a fresh file
/// counts only once its stamp has stayed the same for a short while after
/// the read; when it changed, it is read again. Returns what `parse` made
/// of the settled bytes (even an error: a torn read is never reported as
/// one) and the stamp they belong to.
pub fn read_settled<T>(path: &Path, parse: impl FnMut(Vec<u8>) -> T) -> io::Result<(T, Stamp)> {
    read_settled_with(path, parse, read_or_empty)
}

/// [`read_settled`], with the file's bytes read by `read`.
fn read_settled_with<T>(
    path: &Path,
    mut parse: impl FnMut(Vec<u8>) -> T,
    read: impl Fn(&Path) -> io::Result<Vec<u8>>,
) -> io::Result<(T, Stamp)> {
    // A tool rewriting a file in place truncates it and writes the new
    // bytes a moment later (microseconds for a shell's `>`).
    const FRESH: Duration = Duration::from_millis(2);
    let mut last = None;
    for _ in 0..20 {
        let before = Stamp::of(path)?;
        let bytes = read(path)?;
        let after = Stamp::of(path)?;
        let read_at = Instant::now();
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
        // Unchanged for FRESH since the read: any rewrite in place is over.
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
            Ok((parse(read(path)?), stamp))
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

/// Removes file `path`; one already gone is fine.
pub fn remove_if_exists(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => Err(err),
        _ => Ok(()),
    }
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
        if pid == std::process::id() || !platform::alive(pid) {
            fs::remove_file(entry.path())?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Creates the folder of `path`, with its parents, where missing.
pub fn create_parent(path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(dir) => fs::create_dir_all(dir),
        None => Ok(()),
    }
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

/// Appends to an ignore file (`.gitignore`) whose text is `existing` a
/// `# header` line and one line per pattern (see [`patterns_text`]).
pub fn append_patterns<T: AsRef<str>>(
    path: &Path,
    existing: &str,
    header: &str,
    patterns: &[T],
) -> io::Result<()> {
    append_durable(path, patterns_text(existing, header, patterns).as_bytes())
}

/// What an ignore file whose text is `existing` gets appended for a
/// `# header` line and one line per pattern: on lines of their own even
/// when the file lacks its last newline.
pub fn patterns_text<T: AsRef<str>>(existing: &str, header: &str, patterns: &[T]) -> String {
    let mut text = String::new();
    if !existing.is_empty() && !existing.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!("# {header}\n"));
    for pattern in patterns {
        text.push_str(pattern.as_ref());
        text.push('\n');
    }
    text
}

/// Takes the exclusive lock on `path` (created, with its folder, if
/// missing), waiting for the holder; released when the returned file is
/// dropped, and by the system if the process dies.
pub fn lock(path: &Path) -> io::Result<File> {
    create_parent(path)?;
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)?;
    take_lock(file, path)
}

/// Takes the exclusive lock on `file` (at `path`), waiting for the holder.
fn take_lock(file: File, path: &Path) -> io::Result<File> {
    let started = std::time::Instant::now();
    file.lock()?;
    let waited_ms = crate::trace::ms(started.elapsed());
    tracing::debug!(lock = ?path, waited_ms, "took the lock");
    Ok(file)
}

/// Reads `path`, treating a missing file as empty.
pub fn read_or_empty(path: &Path) -> io::Result<Vec<u8>> {
    match fs::read(path) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        other => other,
    }
}

/// Reads a UTF-8 text file (a leading BOM is dropped); `None` when it does
/// not exist. Bytes that are not UTF-8 give the caller's error from
/// `invalid(line, message)` (the 1-based line of the first bad byte, and a
/// message naming its column and the fix); a failed read, a [`PathError`]
/// at `path`.
pub fn read_text<E: From<PathError>>(
    path: &Path,
    invalid: impl FnOnce(usize, String) -> E,
) -> Result<Option<String>, E> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(E::from(PathError::new(path, err))),
    };
    match String::from_utf8(bytes) {
        Ok(text) => Ok(Some(
            text.strip_prefix('\u{feff}')
                .map(str::to_owned)
                .unwrap_or(text),
        )),
        Err(err) => {
            let (line, message) = not_utf8(err.as_bytes(), err.utf8_error());
            Err(invalid(line, message))
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

pub(crate) fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// Whether `path` (through a link) is a file with an execute bit: a
/// program to run, or a hook git would run.
pub(crate) fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn an_atomic_write_replaces_a_link_and_never_writes_where_it_points() {
        use std::os::unix::fs::symlink;
        let ours = |file: &mut File| file.write_all(b"ours\n");
        let dir = assert_fs::TempDir::new().unwrap();
        let home = assert_fs::TempDir::new().unwrap();
        let target = home.path().join(".profile");
        fs::write(&target, "read\n").unwrap();
        let link = dir.path().join("tasks.jsonl");
        symlink(&target, &link).unwrap();
        write_atomic(&link, b"again\n").unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().is_file());
        assert_eq!(fs::read(&link).unwrap(), b"again\n");
        // Checked against the link's own stamp, swapped for it.
        let other = dir.path().join("done.jsonl");
        symlink(&target, &other).unwrap();
        let stamp = Stamp::of(&other).unwrap();
        assert!(write_atomic_unless_changed(&other, ours, stamp).unwrap());
        assert_eq!(fs::read(&other).unwrap(), b"ours\n");
        assert!(fs::symlink_metadata(&other).unwrap().is_file());
        // A link at the temp file's name is removed, not written through.
        let temp = dir.path().join(temp_name("state.json", std::process::id()));
        symlink(&target, &temp).unwrap();
        write_atomic(&dir.path().join("state.json"), b"{}\n").unwrap();
        assert!(!temp.exists() && fs::symlink_metadata(&temp).is_err());
        assert_eq!(fs::read(&target).unwrap(), b"read\n");
    }

    #[test]
    fn a_checked_write_never_replaces_a_file_changed_since_it_was_read() {
        let ours = |file: &mut File| file.write_all(b"ours\n");
        let dir = assert_fs::TempDir::new().unwrap();
        let path = dir.path().join("tasks.jsonl");
        fs::write(&path, "read\n").unwrap();
        let stamp = Stamp::of(&path).unwrap();
        // Someone else's `mv` lands after our read.
        fs::write(dir.path().join("other"), "theirs\n").unwrap();
        fs::rename(dir.path().join("other"), &path).unwrap();
        assert!(!write_atomic_unless_changed(&path, ours, stamp).unwrap());
        assert_eq!(fs::read(&path).unwrap(), b"theirs\n");
        // Read again, the write goes through.
        let stamp = Stamp::of(&path).unwrap();
        assert!(write_atomic_unless_changed(&path, ours, stamp).unwrap());
        assert_eq!(fs::read(&path).unwrap(), b"ours\n");
        // A file that appeared where there was none is not replaced either.
        let fresh = dir.path().join("new.jsonl");
        let none = Stamp::of(&fresh).unwrap();
        fs::write(&fresh, "created\n").unwrap();
        assert!(!write_atomic_unless_changed(&fresh, ours, none).unwrap());
        assert_eq!(fs::read(&fresh).unwrap(), b"created\n");
        // And where there still is none, it is created.
        let other = dir.path().join("other.jsonl");
        let none = Stamp::of(&other).unwrap();
        assert!(write_atomic_unless_changed(&other, ours, none).unwrap());
        assert_eq!(fs::read(&other).unwrap(), b"ours\n");
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            3,
            "no temp file left"
        );
    }

    #[test]
    fn a_settled_read_waits_out_a_rewrite_in_place() {
        let dir = assert_fs::TempDir::new().unwrap();
        let path = dir.path().join("tasks.jsonl");
        // Stamped in the future: fresh however slow the machine.
        let soon = std::time::SystemTime::now() + Duration::from_secs(3600);
        let write = |text: &str| {
            fs::write(&path, text).unwrap();
            File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(soon)
                .unwrap();
        };
        write("");
        // The editor's write lands just after ralph read the truncated file.
        let mut reads = Vec::new();
        let (bytes, stamp) = read_settled(&path, |bytes| {
            if reads.is_empty() {
                write("whole\n");
            }
            reads.push(bytes.clone());
            bytes
        })
        .unwrap();
        assert_eq!(reads, [b"".to_vec(), b"whole\n".to_vec()]);
        assert_eq!(bytes, b"whole\n");
        assert_eq!(stamp, Stamp::of(&path).unwrap());
        // A file not fresh is taken as read.
        fs::write(&path, "old\n").unwrap();
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(std::time::SystemTime::now() - Duration::from_secs(60))
            .unwrap();
        let mut calls = 0;
        read_settled(&path, |_| calls += 1).unwrap();
        assert_eq!(calls, 1);
    }

    #[test]
    fn stale_temps_of_dead_writers_are_removed() {
        let dir = assert_fs::TempDir::new().unwrap();
        assert_eq!(temp_owner(".tasks.jsonl.42.tmp", "tasks.jsonl"), Some(42));
        assert_eq!(temp_owner(".tasks.jsonl.x.tmp", "tasks.jsonl"), None);
        assert_eq!(temp_owner("tasks.jsonl", "tasks.jsonl"), None);
        // A pid past the system's limit never runs; pid 1 always does.
        fs::write(
            dir.path().join(temp_name("tasks.jsonl", 99_999_999)),
            "torn",
        )
        .unwrap();
        fs::write(dir.path().join(temp_name("tasks.jsonl", 1)), "live").unwrap();
        fs::write(dir.path().join("keep.txt"), "").unwrap();
        assert_eq!(
            remove_stale_temps(&dir.path().join("tasks.jsonl")).unwrap(),
            1
        );
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
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
