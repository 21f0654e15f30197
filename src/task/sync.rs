//! Bringing another machine's queue files into this one's (docs/SCALE.md):
//! both files on disk merged three ways with a fetched version, under the
//! queue lock, as one write.

use super::error::{Error, Result, io_error};
use super::merge::{self, Merged, Sides};
use super::store::Store;
use crate::files::{Stamp, own};

impl Store {
    /// Merges `theirs` (the fetched base's queue files) into the files on
    /// disk, from `common` (the version both last agreed on): under the
    /// queue lock, the archive written first (it only gains records, so a
    /// crash between the two writes leaves a record in both, which reads
    /// as archived), then `tasks.jsonl`, replaced only if nobody changed it
    /// meanwhile (otherwise merged again with what is there now). Writes
    /// nothing when the merge changes nothing, nor when an id was added on
    /// both sides as different tasks (its `collisions`). Returns the
    /// merge's warnings and collisions.
    pub fn merge_in(&self, common: Sides<'_>, theirs: Sides<'_>) -> Result<Merged> {
        const ATTEMPTS: usize = 20;
        let _lock = self.lock()?;
        for _ in 0..ATTEMPTS {
            let tasks_path = self.paths.tasks();
            let done = self.read(&self.paths.done())?;
            let (tasks, stamp): (Vec<u8>, Stamp) =
                (own::read_settled(self.root(), &tasks_path, |bytes| bytes))
                    .map_err(io_error(&tasks_path))?;
            let ours = Sides {
                tasks: &tasks,
                done: &done,
            };
            let merged = merge::merge(common, ours, theirs);
            if !merged.collisions.is_empty() {
                // Two tasks under one id: written, the queue would not
                // load. The caller says which; nothing changes.
                return Ok(merged);
            }
            if merged.done != done {
                let path = self.paths.done();
                (own::replace(self.root(), &path, &merged.done)).map_err(io_error(&path))?;
            }
            if merged.tasks != tasks {
                let bytes = &merged.tasks;
                let write = |file: &mut std::fs::File| std::io::Write::write_all(file, bytes);
                let replaced = own::replace_unless_changed(self.root(), &tasks_path, write, stamp)
                    .map_err(io_error(&tasks_path))?;
                if !replaced {
                    continue;
                }
            }
            // While an agent runs, ralph's copies follow: this is ralph's
            // own write, not an agent's.
            if self.paths.queue_watch().exists() {
                self.keep(&self.paths.valid_queue(), &merged.tasks)?;
                self.keep(&self.paths.valid_archive(), &merged.done)?;
            }
            return Ok(merged);
        }
        Err(Error::KeepsChanging { attempts: ATTEMPTS })
    }
}
