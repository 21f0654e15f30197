//! Files too large to read whole. libgit2 reads a blob whole (a loose
//! object twice over: its compressed bytes, then the inflated ones) to
//! write the file out, and an agent may leave a file of hundreds of MB. A
//! blob larger than [`LARGE_BLOB`] (its size read from the object's
//! header) is never read by ralph: the user's git writes it out, streaming
//! it.

use super::Repo;
use super::tree::TreeFile;

/// The size in bytes above which ralph never reads a blob whole (4 MiB),
/// so its memory stays within a few times this whatever an agent leaves:
/// reading a loose object takes up to twice its size for a moment, and a
/// diff holds two.
pub const LARGE_BLOB: u64 = 4 << 20;

impl Repo {
    /// The size of `file`'s blob, read from the object's header, when it
    /// is a regular file. An object that cannot be read has none: libgit2
    /// then skips it, as it did before it was weighed.
    fn blob_size(&self, file: Option<TreeFile>) -> Option<u64> {
        let file = file.filter(|file| matches!(file.mode, 0o100644 | 0o100755))?;
        let (size, _) = self.git.odb().ok()?.read_header(file.id).ok()?;
        Some(size as u64)
    }

    /// Whether `file` is a regular file larger than [`LARGE_BLOB`].
    pub(super) fn is_large(&self, file: Option<TreeFile>) -> bool {
        self.blob_size(file).is_some_and(|size| size > LARGE_BLOB)
    }
}
