//! Bounded records for a runner that never stops (`retention.days`): the
//! transcripts and prompts of iterations older than that are deleted, and
//! `events.ndjson` is moved aside to `events.old.ndjson` (replacing the
//! one before) once its first event is older, so the log a look reads
//! holds a few weeks at most. Run at each run's start and each idle look.

use std::io;
use std::time::{Duration, SystemTime};

use crate::files::own;
use crate::paths::{LOGS_DIR, PROMPTS_DIR, Paths};

/// What a pruning did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Pruned {
    /// Transcripts and prompts deleted.
    pub files: usize,
    /// Whether `events.ndjson` was moved aside.
    pub events: bool,
}

impl Pruned {
    /// What it did in words, when it did something.
    pub(crate) fn said(&self, days: u64) -> Option<String> {
        let mut what = Vec::new();
        if self.files > 0 {
            what.push(format!(
                "removed {} of .ralph/logs and .ralph/prompts older than {}",
                crate::text::count(self.files, "file"),
                crate::text::count(days as usize, "day")
            ));
        }
        if self.events {
            what.push(format!(
                "moved the events before the last {} to .ralph/events.old.ndjson",
                crate::text::count(days as usize, "day")
            ));
        }
        (!what.is_empty()).then(|| format!("retention: {}", what.join("; ")))
    }
}

/// The old events' file, beside the log.
pub(crate) fn old_events(paths: &Paths) -> std::path::PathBuf {
    paths.events().with_file_name("events.old.ndjson")
}

/// Prunes the records of the project at `paths` older than `days` (none
/// when 0), as of `now`.
pub(crate) fn prune(paths: &Paths, days: u64, now: SystemTime) -> io::Result<Pruned> {
    let mut pruned = Pruned::default();
    if days == 0 {
        return Ok(pruned);
    }
    let cutoff = now - Duration::from_secs(days.saturating_mul(86_400).min(1 << 40));
    let root = paths.project();
    for dir in [LOGS_DIR, PROMPTS_DIR] {
        let dir = root.join(dir);
        // A folder that is not ralph's own (a link) is not walked.
        if own::check(root, &dir, own::Need::Folder).is_err() {
            continue;
        }
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == io::ErrorKind::NotFound => continue,
            Err(err) => return Err(err),
        };
        for entry in entries {
            let entry = entry?;
            // Gone meanwhile (a worker's own pruning): nothing to do.
            let Some(meta) = gone_is_none(entry.metadata())? else {
                continue;
            };
            // Only ralph's files; a link is never followed, nor removed.
            if meta.file_type().is_file()
                && meta.modified()? < cutoff
                && gone_is_none(std::fs::remove_file(entry.path()))?.is_some()
            {
                pruned.files += 1;
            }
        }
    }
    let events = paths.events();
    if first_event_before(paths, cutoff)? {
        // A writer that opened the log before the move appends to the old
        // one: nothing is lost, and the next append makes a new log.
        std::fs::rename(&events, old_events(paths))?;
        pruned.events = true;
    }
    Ok(pruned)
}

/// `result`, with a file that is not there (any more) as `None`.
fn gone_is_none<T>(result: io::Result<T>) -> io::Result<Option<T>> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err),
    }
}

/// Whether the first event of the log happened before `cutoff`.
fn first_event_before(paths: &Paths, cutoff: SystemTime) -> io::Result<bool> {
    use std::io::{BufRead, BufReader, Read};
    let file = match own::open_read(paths.project(), &paths.events()) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(err) => return Err(err),
    };
    let mut first = String::new();
    BufReader::new(file.take(64 * 1024)).read_line(&mut first)?;
    let event: Option<crate::events::Event> = serde_json::from_str(&first).ok();
    let at = event.and_then(|event| chrono::DateTime::parse_from_rfc3339(&event.timestamp).ok());
    Ok(at.is_some_and(|at| SystemTime::from(at) < cutoff))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_records_go_and_new_ones_stay() {
        let dir = assert_fs::TempDir::new().unwrap();
        let paths = Paths::new(dir.path());
        let root = paths.project().to_owned();
        std::fs::create_dir_all(root.join(LOGS_DIR)).unwrap();
        std::fs::create_dir_all(root.join(PROMPTS_DIR)).unwrap();
        let old = root.join(LOGS_DIR).join("1-A.log");
        let new = root.join(PROMPTS_DIR).join("2-A.md");
        std::fs::write(&old, "old").unwrap();
        std::fs::write(&new, "new").unwrap();
        let month_ago = SystemTime::now() - Duration::from_secs(31 * 86_400);
        std::fs::File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(month_ago)
            .unwrap();
        // A link in the folder is neither followed nor removed.
        let outside = root.join("outside.txt");
        std::fs::write(&outside, "x").unwrap();
        std::os::unix::fs::symlink(&outside, root.join(LOGS_DIR).join("3-A.log")).unwrap();
        std::fs::write(
            paths.events(),
            "{\"timestamp\":\"2020-01-01T00:00:00Z\",\"run_id\":\"r\",\"task_id\":null,\"iteration\":0,\"role\":null,\"phase\":\"run\",\"status\":\"started\",\"detail\":\"\"}\n",
        )
        .unwrap();
        let pruned = prune(&paths, 30, SystemTime::now()).unwrap();
        assert_eq!(
            pruned,
            Pruned {
                files: 1,
                events: true
            }
        );
        assert!(!old.exists() && new.exists() && outside.exists());
        assert!(!paths.events().exists() && old_events(&paths).exists());
        assert_eq!(
            pruned.said(30).unwrap(),
            "retention: removed 1 file of .ralph/logs and .ralph/prompts older than 30 days; moved the events before the last 30 days to .ralph/events.old.ndjson"
        );
        // Nothing old left: nothing done; 0 days keeps everything.
        assert_eq!(
            prune(&paths, 30, SystemTime::now()).unwrap(),
            Pruned::default()
        );
        assert_eq!(
            prune(&paths, 0, SystemTime::now() + Duration::from_secs(1 << 30)).unwrap(),
            Pruned::default()
        );
    }
}
