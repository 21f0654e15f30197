//! ralph's own files in a project: the queue files, `ralph.log` and
//! everything under `.ralph/`. ralph reaches them without following a
//! link, on the way from the project root as at the end, and only when
//! each is of the kind ralph made (a file, a folder). An agent that swaps
//! `ralph.log` or `.ralph/logs` for a link to `~/.profile` gets ralph to
//! write nothing there, nor to read it back into a prompt: every helper
//! here refuses with a [`NotOwn`], naming what it found.
//!
//! The way is checked before the file is opened, and the file opened with
//! `O_NOFOLLOW`; an atomic replacement renames over the name, which
//! replaces a link rather than following it.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use super::Stamp;
use crate::paths::{DONE_FILE, TASKS_FILE};

/// What ralph keeps at a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// A regular file.
    File,
    /// A real folder.
    Folder,
}

/// Something standing where ralph keeps a file or folder of its own: a
/// link, or another kind of thing. Carried as the source of an
/// `io::Error` ([`not_own`] finds it again), so every area's I/O error
/// reports it.
#[derive(Debug)]
pub struct NotOwn {
    /// Where, relative to the project root.
    pub path: PathBuf,
    /// What is there: `a link to /home/u/.profile`, `a folder`, ...
    pub found: String,
    /// What ralph keeps there.
    pub need: Need,
}

impl fmt::Display for NotOwn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let need = match self.need {
            Need::File => "file",
            Need::Folder => "folder",
        };
        write!(
            f,
            "{}: {}, where ralph keeps a {need} of its own",
            self.path.display(),
            self.found
        )
    }
}

impl std::error::Error for NotOwn {}

impl NotOwn {
    /// What the person does about it.
    pub fn hint(&self) -> String {
        let name = self.path.file_name().unwrap_or_default().to_string_lossy();
        let never = "ralph never reads or writes through a link, nor into what it did not make";
        if self.path == Path::new(&*name) && [TASKS_FILE, DONE_FILE].contains(&&*name) {
            return format!(
                "{never}: put the file itself back in its place (ralph's last copy of it is .ralph/queue/{name}.valid), then run again"
            );
        }
        format!("{never}: remove it (ralph makes its own again), then run again")
    }
}

/// The [`NotOwn`] an I/O error carries, if it is one.
pub fn not_own(err: &io::Error) -> Option<&NotOwn> {
    err.get_ref()?.downcast_ref::<NotOwn>()
}

/// Checks the way from the project root `root` to `path` (a path under
/// it): every folder on it a real folder, not a link, and `path` itself,
/// where it exists, what `need` says. What does not exist yet is fine.
/// `root` itself is the person's choice and may be reached through links.
pub fn check(root: &Path, path: &Path, need: Need) -> io::Result<()> {
    let (root, rel) = below(root, path);
    let parts: Vec<Component<'_>> = rel.components().collect();
    let mut at = root.to_path_buf();
    for (n, part) in parts.iter().enumerate() {
        at.push(part);
        let want = if n + 1 == parts.len() {
            need
        } else {
            Need::Folder
        };
        let meta = match fs::symlink_metadata(&at) {
            Ok(meta) => meta,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(err) => return Err(err),
        };
        if let Some(found) = misfit(&at, &meta, want) {
            return Err(refused(root, &at, found, want));
        }
    }
    Ok(())
}

/// Checks each of `entries` (paths under `root`, each with what it must
/// be) as [`check`] does; the first found wrong is the error.
pub fn check_all(root: &Path, entries: &[(PathBuf, Need)]) -> Result<(), super::PathError> {
    for (path, need) in entries {
        check(root, path, *need).map_err(|err| super::PathError::new(path, err))?;
    }
    Ok(())
}

/// Creates folder `dir` under `root` with the folders on its way, where
/// missing; refuses a link or a file anywhere on it.
pub fn create_dir(root: &Path, dir: &Path) -> io::Result<()> {
    let (root, rel) = below(root, dir);
    let mut at = root.to_path_buf();
    for part in rel.components() {
        at.push(part);
        if let Err(err) = fs::create_dir(&at)
            && err.kind() != io::ErrorKind::AlreadyExists
        {
            return Err(err);
        }
        // Made now or before, by ralph or by someone else: a link put
        // there (even one to nowhere, which `create_dir` takes for a
        // folder that exists) is refused.
        let meta = fs::symlink_metadata(&at)?;
        if let Some(found) = misfit(&at, &meta, Need::Folder) {
            return Err(refused(root, &at, found, Need::Folder));
        }
    }
    Ok(())
}

/// Creates the folder of `path` under `root` (see [`create_dir`]).
pub fn create_parent(root: &Path, path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(dir) => create_dir(root, dir),
        None => Ok(()),
    }
}

/// Opens file `path` under `root` with `options`, never through a link
/// (see [`check`]; the open itself does not follow one either). The
/// folder must exist: [`create_parent`] makes it.
pub fn open(root: &Path, path: &Path, options: &OpenOptions) -> io::Result<File> {
    check(root, path, Need::File)?;
    let mut options = options.clone();
    options.custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_CLOEXEC);
    let file = match options.open(path) {
        Ok(file) => file,
        // A link put there since the check.
        Err(err) if err.raw_os_error() == Some(nix::libc::ELOOP) => {
            check(root, path, Need::File)?;
            return Err(err);
        }
        Err(err) => return Err(err),
    };
    // A named pipe or a device put there since the check.
    let meta = file.metadata()?;
    if let Some(found) = misfit(path, &meta, Need::File) {
        let (root, _) = below(root, path);
        return Err(refused(root, path, found, Need::File));
    }
    Ok(file)
}

/// Opens file `path` under `root` for reading, never through a link.
pub fn open_read(root: &Path, path: &Path) -> io::Result<File> {
    open(root, path, OpenOptions::new().read(true))
}

/// Reads file `path` under `root` (missing: `None`), never through a
/// link.
pub fn read_if_exists(root: &Path, path: &Path) -> io::Result<Option<Vec<u8>>> {
    match open_read(root, path) {
        Ok(mut file) => {
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes)?;
            Ok(Some(bytes))
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err),
    }
}

/// Reads file `path` under `root` (missing: empty), never through a link.
pub fn read(root: &Path, path: &Path) -> io::Result<Vec<u8>> {
    Ok(read_if_exists(root, path)?.unwrap_or_default())
}

/// Reads file `path` under `root` as text (missing: `None`; bytes that
/// are not UTF-8 are replaced), never through a link.
pub fn read_text(root: &Path, path: &Path) -> io::Result<Option<String>> {
    let bytes = read_if_exists(root, path)?;
    Ok(bytes.map(|bytes| String::from_utf8_lossy(&bytes).into_owned()))
}

/// Appends `bytes` to file `path` under `root` (created, with its folder,
/// if missing) and fsyncs before returning; never through a link.
pub fn append(root: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    create_parent(root, path)?;
    let existed = fs::symlink_metadata(path).is_ok();
    let mut file = open(root, path, OpenOptions::new().create(true).append(true))?;
    file.write_all(bytes)?;
    file.sync_all()?;
    if !existed {
        super::sync_dir(super::parent_dir(path))?;
    }
    Ok(())
}

/// Replaces file `path` under `root` with `bytes` atomically (see
/// [`super::write_atomic`]), its folder made where missing; a link there
/// is refused, never followed.
pub fn replace(root: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace_with(root, path, |file| file.write_all(bytes))
}

/// [`replace`], with the content written into the temp file by `write`.
pub fn replace_with(
    root: &Path,
    path: &Path,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    create_parent(root, path)?;
    check(root, path, Need::File)?;
    super::write_atomic_with(path, write)
}

/// [`super::write_atomic_unless_changed`] for file `path` under `root`;
/// a link there is refused, never followed.
pub fn replace_unless_changed(
    root: &Path,
    path: &Path,
    write: impl FnOnce(&mut File) -> io::Result<()>,
    expected: Stamp,
) -> io::Result<bool> {
    check(root, path, Need::File)?;
    super::write_atomic_unless_changed(path, write, expected)
}

/// [`super::read_settled`] for file `path` under `root`: refuses a link.
pub fn read_settled<T>(
    root: &Path,
    path: &Path,
    parse: impl FnMut(Vec<u8>) -> T,
) -> io::Result<(T, Stamp)> {
    check(root, path, Need::File)?;
    super::read_settled_with(path, parse, |path| read(root, path))
}

/// Takes the exclusive lock on file `path` under `root` (created, with
/// its folder, if missing), waiting for the holder (see [`super::lock`]);
/// never through a link.
pub fn lock(root: &Path, path: &Path) -> io::Result<File> {
    create_parent(root, path)?;
    let file = open(
        root,
        path,
        OpenOptions::new().create(true).truncate(false).write(true),
    )?;
    super::take_lock(file, path)
}

/// `root`, and `path` relative to it. A `path` outside `root` (a caller's
/// mistake) is checked from its own folder: its last part at least.
fn below<'a>(root: &'a Path, path: &'a Path) -> (&'a Path, &'a Path) {
    match path.strip_prefix(root) {
        Ok(rel) => (root, rel),
        Err(_) => {
            debug_assert!(false, "{} is not under {}", path.display(), root.display());
            let dir = super::parent_dir(path);
            (dir, path.strip_prefix(dir).unwrap_or(path))
        }
    }
}

/// What is wrong with `meta`, the entry at `at`, where ralph keeps a
/// `want`: `None` when it is one.
fn misfit(at: &Path, meta: &fs::Metadata, want: Need) -> Option<String> {
    let kind = meta.file_type();
    if kind.is_symlink() {
        let target = fs::read_link(at).unwrap_or_default();
        return Some(format!("a link to {}", shown(&target)));
    }
    let found = if kind.is_dir() {
        "a folder"
    } else if kind.is_file() {
        "a file"
    } else if kind.is_fifo() {
        "a named pipe"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "a device"
    };
    let fits = match want {
        Need::File => kind.is_file(),
        Need::Folder => kind.is_dir(),
    };
    (!fits).then(|| found.to_owned())
}

/// A link's target as a message shows it: control characters escaped,
/// and at most 200 characters (whoever made the link chose it).
fn shown(target: &Path) -> String {
    const MOST: usize = 200;
    let text = target.to_string_lossy();
    let safe = crate::text::safe(&text);
    match safe.char_indices().nth(MOST) {
        Some((end, _)) => format!("{}...", &safe[..end]),
        None => safe.into_owned(),
    }
}

/// The error refusing `at` (under `root`), where `found` stands.
fn refused(root: &Path, at: &Path, found: String, need: Need) -> io::Error {
    let path = at.strip_prefix(root).unwrap_or(at).to_path_buf();
    io::Error::other(NotOwn { path, found, need })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// The message of the [`NotOwn`] `result` ended with.
    fn refusal<T: fmt::Debug>(result: io::Result<T>) -> String {
        let err = result.expect_err("refused");
        not_own(&err)
            .unwrap_or_else(|| panic!("not a refusal: {err}"))
            .to_string()
    }

    #[test]
    fn no_helper_writes_or_reads_through_a_link() {
        let home = assert_fs::TempDir::new().unwrap();
        let profile = home.path().join(".profile");
        fs::write(&profile, "PATH=/usr/bin\n").unwrap();
        fs::create_dir(home.path().join("bashrc.d")).unwrap();
        let dir = assert_fs::TempDir::new().unwrap();
        let root = dir.path();
        let log = root.join("ralph.log");
        symlink(&profile, &log).unwrap();
        let expected = format!(
            "ralph.log: a link to {}, where ralph keeps a file of its own",
            profile.display()
        );
        assert_eq!(refusal(append(root, &log, b"x\n")), expected);
        assert_eq!(refusal(replace(root, &log, b"x\n")), expected);
        assert_eq!(refusal(read(root, &log)), expected);
        assert_eq!(refusal(lock(root, &log)), expected);
        let stamp = Stamp::of(&log).unwrap();
        let ours = |file: &mut File| file.write_all(b"x\n");
        assert_eq!(
            refusal(replace_unless_changed(root, &log, ours, stamp)),
            expected
        );
        assert_eq!(refusal(read_settled(root, &log, |b| b)), expected);
        // A folder on the way that is a link: refused there, by name.
        fs::create_dir(root.join(".ralph")).unwrap();
        symlink(home.path().join("bashrc.d"), root.join(".ralph/logs")).unwrap();
        let file = root.join(".ralph/logs/1-A.log");
        let folder = format!(
            ".ralph/logs: a link to {}, where ralph keeps a folder of its own",
            home.path().join("bashrc.d").display()
        );
        assert_eq!(refusal(append(root, &file, b"x\n")), folder);
        assert_eq!(refusal(create_dir(root, &file)), folder);
        assert_eq!(refusal(replace(root, &file, b"x\n")), folder);
        assert_eq!(refusal(check(root, &file, Need::File)), folder);
        // A link to nowhere is refused too, and not made.
        let pgid = root.join(".ralph/agent.pgid");
        symlink(home.path().join("made"), &pgid).unwrap();
        assert!(refusal(append(root, &pgid, b"1")).starts_with(".ralph/agent.pgid: a link to "));
        assert!(refusal(replace(root, &pgid, b"1")).starts_with(".ralph/agent.pgid: a link to "));
        // Nothing reached the home folder.
        assert_eq!(fs::read(&profile).unwrap(), b"PATH=/usr/bin\n");
        assert_eq!(
            fs::read_dir(home.path().join("bashrc.d")).unwrap().count(),
            0
        );
        assert!(!home.path().join("made").exists());
        // And the links are left as they were, for a person to look at.
        assert!(fs::symlink_metadata(&log).unwrap().is_symlink());
        assert!(fs::symlink_metadata(&pgid).unwrap().is_symlink());
    }

    #[test]
    fn only_a_file_where_a_file_belongs_and_a_folder_where_a_folder_does() {
        let dir = assert_fs::TempDir::new().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("ralph.log")).unwrap();
        let err = append(root, &root.join("ralph.log"), b"x").unwrap_err();
        let refused = not_own(&err).expect("refused");
        assert_eq!(
            refused.to_string(),
            "ralph.log: a folder, where ralph keeps a file of its own"
        );
        assert_eq!(
            refused.hint(),
            "ralph never reads or writes through a link, nor into what it did not make: remove it (ralph makes its own again), then run again"
        );
        fs::write(root.join(".ralph"), "").unwrap();
        assert_eq!(
            refusal(create_dir(root, &root.join(".ralph/logs"))),
            ".ralph: a file, where ralph keeps a folder of its own"
        );
        nix::unistd::mkfifo(&root.join("tasks.jsonl"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let err = read(root, &root.join("tasks.jsonl")).unwrap_err();
        let refused = not_own(&err).expect("refused");
        assert_eq!(
            refused.to_string(),
            "tasks.jsonl: a named pipe, where ralph keeps a file of its own"
        );
        assert_eq!(
            refused.hint(),
            "ralph never reads or writes through a link, nor into what it did not make: put the file itself back in its place (ralph's last copy of it is .ralph/queue/tasks.jsonl.valid), then run again"
        );
    }

    #[test]
    fn own_files_are_made_written_and_read_as_usual() {
        let dir = assert_fs::TempDir::new().unwrap();
        // The project root itself may be reached through a link.
        let root = &dir.path().join("project");
        fs::create_dir(dir.path().join("real")).unwrap();
        symlink(dir.path().join("real"), root).unwrap();
        let events = root.join(".ralph/events.ndjson");
        append(root, &events, b"a\n").unwrap();
        append(root, &events, b"b\n").unwrap();
        assert_eq!(read(root, &events).unwrap(), b"a\nb\n");
        let state = root.join(".ralph/worktrees/A/.ralph/state.json");
        replace(root, &state, b"{}\n").unwrap();
        replace(root, &state, b"{ }\n").unwrap();
        assert_eq!(read_text(root, &state).unwrap().as_deref(), Some("{ }\n"));
        assert_eq!(read(root, &root.join(".ralph/missing")).unwrap(), b"");
        assert_eq!(read_text(root, &root.join(".ralph/missing")).unwrap(), None);
        drop(lock(root, &root.join(".ralph/tasks.lock")).unwrap());
        // The link a long target makes is named within bounds.
        let long = "x".repeat(300);
        symlink(&long, root.join("ralph.log")).unwrap();
        let message = refusal(append(root, &root.join("ralph.log"), b""));
        assert_eq!(
            message,
            format!(
                "ralph.log: a link to {}..., where ralph keeps a file of its own",
                "x".repeat(200)
            )
        );
    }
}
