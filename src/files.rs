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
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let dir = parent_dir(path);
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut out = io::BufWriter::with_capacity(1 << 16, File::create(&temp)?);
        write(&mut out)?;
        let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
        if let Ok(meta) = fs::metadata(path) {
            file.set_permissions(meta.permissions())?;
        }
        file.sync_all()?;
        drop(file);
        fs::rename(&temp, path)?;
        sync_dir(dir)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
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

/// Reads `path`, treating a missing file as empty.
pub fn read_or_empty(path: &Path) -> io::Result<Vec<u8>> {
    match fs::read(path) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        other => other,
    }
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
    fn append_creates_then_appends() {
        let dir = assert_fs::TempDir::new().unwrap();
        let path = dir.path().join("log");
        append_durable(&path, b"a\n").unwrap();
        append_durable(&path, b"b\n").unwrap();
        assert_eq!(read_or_empty(&path).unwrap(), b"a\nb\n");
        assert_eq!(read_or_empty(&dir.path().join("missing")).unwrap(), b"");
    }
}
