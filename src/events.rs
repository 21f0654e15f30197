//! `.ralph/events.ndjson`: one JSON object per transition, append-only.

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::files::own;
use crate::redact::redact_json;

/// One transition of the loop.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Event {
    /// When it happened (RFC 3339).
    pub timestamp: String,
    /// The run it belongs to.
    pub run_id: String,
    /// The task, if any.
    pub task_id: Option<String>,
    /// The run's iteration number.
    pub iteration: u64,
    /// The role of the iteration, if any.
    pub role: Option<String>,
    /// What the loop was doing: `run`, `claim`, `agent`, `iteration`, `verify`, `merge`, ...
    pub phase: String,
    /// How it went: `started`, `ok`, `failed`, a failure class, ...
    pub status: String,
    /// A human sentence.
    pub detail: String,
    /// Extra fields (the iteration receipt: agent, model, bytes, duration, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Event {
    /// The extra field `key` as a whole number, if it is one.
    pub(crate) fn number(&self, key: &str) -> Option<u64> {
        self.extra.get(key).and_then(Value::as_u64)
    }

    /// The extra field `key` as a number with a fraction, if it is a number.
    pub(crate) fn float(&self, key: &str) -> Option<f64> {
        self.extra.get(key).and_then(Value::as_f64)
    }

    /// The extra field `key` as a string, if it is one.
    pub(crate) fn text(&self, key: &str) -> Option<&str> {
        self.extra.get(key).and_then(Value::as_str)
    }

    /// The extra field `key` as a boolean, if it is one.
    pub(crate) fn flag(&self, key: &str) -> Option<bool> {
        self.extra.get(key).and_then(Value::as_bool)
    }
}

/// Where a reader of the log is: after the last whole line it read, in
/// one version of the file (its inode).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Offset {
    at: u64,
    inode: u64,
}

/// The events one read of the log found.
#[derive(Debug, Default)]
pub(crate) struct Appended {
    /// The readable events, in order.
    pub events: Vec<Event>,
    /// Whole lines that are no event (torn by a crash).
    pub skipped: usize,
    /// Where the next read starts.
    pub next: Offset,
    /// Whether the file was replaced or cut: the events are its first.
    pub restarted: bool,
}

/// The event log of one project.
#[derive(Clone, Debug)]
pub(crate) struct EventLog {
    /// The project root, from which the log is reached without a link.
    root: PathBuf,
    path: PathBuf,
}

impl EventLog {
    /// The event log of the project at `paths`.
    pub(crate) fn open(paths: &crate::paths::Paths) -> EventLog {
        EventLog {
            root: paths.project().to_owned(),
            path: paths.events(),
        }
    }

    /// Appends `event` (fsynced), secrets masked. A torn last line left by a crash is
    /// terminated first, so it stays one unreadable line instead of
    /// swallowing this record.
    pub(crate) fn append(&self, event: &Event) -> std::io::Result<()> {
        own::create_parent(&self.root, &self.path)?;
        let mut line = String::new();
        if !self.ends_with_newline()? {
            line.push('\n');
        }
        let mut value = serde_json::to_value(event).expect("events serialize");
        redact_json(&mut value);
        line.push_str(&value.to_string());
        line.push('\n');
        if crate::fault::armed("mid_event_append") {
            // Half a line reaches the disk, then the process dies.
            own::append(&self.root, &self.path, &line.as_bytes()[..line.len() / 2])?;
            crate::fault::crash_at("mid_event_append");
        }
        own::append(&self.root, &self.path, line.as_bytes())
    }

    /// The last `count` readable events; unreadable (torn) lines are skipped
    /// and counted.
    pub(crate) fn tail(&self, count: usize) -> std::io::Result<(Vec<Event>, usize)> {
        let read = self.read_from(Offset::default())?;
        let mut events = read.events;
        let start = events.len().saturating_sub(count);
        Ok((events.split_off(start), read.skipped))
    }

    /// The events of the log's last `bytes` at most (whole lines), and
    /// where a read of what follows starts: a look at a long log costs
    /// what a look at a short one does.
    pub(crate) fn recent(&self, bytes: u64) -> std::io::Result<Appended> {
        use std::os::unix::fs::MetadataExt;
        let mut file = match own::open_read(&self.root, &self.path) {
            Ok(file) => file,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return self.read_from(Offset::default());
            }
            Err(err) => return Err(err),
        };
        let meta = file.metadata()?;
        let at = meta.len().saturating_sub(bytes);
        if at == 0 {
            return self.read_from(Offset::default());
        }
        // A line cut at `at` is passed over, not counted as torn.
        let mut before = [0u8; 1];
        file.seek(SeekFrom::Start(at - 1))?;
        file.read_exact(&mut before)?;
        let mut read = self.read_from(Offset {
            at,
            inode: meta.ino(),
        })?;
        if before[0] != b'\n' {
            read.skipped = read.skipped.saturating_sub(1);
        }
        Ok(read)
    }

    /// The events of the whole lines appended since `from` (a line still
    /// being written is read once it is whole); from the file's start
    /// when it was replaced or cut since (a missing file has none).
    pub(crate) fn read_from(&self, from: Offset) -> std::io::Result<Appended> {
        use std::os::unix::fs::MetadataExt;
        let mut bytes = Vec::new();
        let (inode, start) = match own::open_read(&self.root, &self.path) {
            Ok(mut file) => {
                let meta = file.metadata()?;
                let same = meta.ino() == from.inode && meta.len() >= from.at;
                let start = if same { from.at } else { 0 };
                file.seek(SeekFrom::Start(start))?;
                file.read_to_end(&mut bytes)?;
                (meta.ino(), start)
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => (0, 0),
            Err(err) => return Err(err),
        };
        let whole = (bytes.iter().rposition(|b| *b == b'\n')).map_or(0, |end| end + 1);
        let next = Offset {
            at: start + whole as u64,
            inode,
        };
        let restarted = inode != from.inode || start != from.at;
        let mut read = Appended {
            next,
            restarted,
            ..Appended::default()
        };
        for line in bytes[..whole].split(|b| *b == b'\n') {
            let line = String::from_utf8_lossy(line);
            match serde_json::from_str(&line) {
                Ok(event) => read.events.push(event),
                Err(_) if line.trim().is_empty() => {}
                Err(_) => read.skipped += 1,
            }
        }
        Ok(read)
    }

    /// Whether the log is missing, empty or ends its last line.
    fn ends_with_newline(&self) -> std::io::Result<bool> {
        let mut file = match own::open_read(&self.root, &self.path) {
            Ok(file) => file,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(true),
            Err(err) => return Err(err),
        };
        if file.seek(SeekFrom::End(0))? == 0 {
            return Ok(true);
        }
        file.seek(SeekFrom::End(-1))?;
        let mut last = [0u8; 1];
        file.read_exact(&mut last)?;
        Ok(last[0] == b'\n')
    }
}

/// An event's extra fields from a JSON object (`json!({..})`), in the
/// order written; anything but an object gives none.
pub(crate) fn fields(object: Value) -> Map<String, Value> {
    match object {
        Value::Object(fields) => fields,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(status: &str) -> Event {
        Event {
            timestamp: "2026-01-01T00:00:00Z".into(),
            run_id: "r".into(),
            phase: "agent".into(),
            status: status.into(),
            ..Event::default()
        }
    }

    #[test]
    fn appends_and_reads_back_skipping_a_torn_line() {
        let dir = assert_fs::TempDir::new().unwrap();
        let log = EventLog::open(&crate::paths::Paths::new(dir.path()));
        log.append(&event("one")).unwrap();
        // A crash mid-append leaves half a line.
        crate::files::append_durable(
            &dir.path().join(crate::paths::EVENTS_FILE),
            b"{\"timestamp\":\"2026",
        )
        .unwrap();
        log.append(&event("two")).unwrap();
        let (events, skipped) = log.tail(10).unwrap();
        assert_eq!(
            events.iter().map(|e| e.status.as_str()).collect::<Vec<_>>(),
            ["one", "two"]
        );
        assert_eq!(skipped, 1);
        assert_eq!(log.tail(1).unwrap().0[0].status, "two");
    }

    #[test]
    fn the_recent_events_are_the_whole_lines_of_the_logs_end() {
        let dir = assert_fs::TempDir::new().unwrap();
        let log = EventLog::open(&crate::paths::Paths::new(dir.path()));
        for n in 0..100 {
            log.append(&event(&format!("s{n:02}"))).unwrap();
        }
        let line = std::fs::read_to_string(dir.path().join(crate::paths::EVENTS_FILE))
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .len() as u64
            + 1;
        let statuses = |read: &Appended| -> Vec<String> {
            read.events.iter().map(|e| e.status.clone()).collect()
        };
        // Three lines and a half: the cut one passed over, not torn.
        let read = log.recent(line * 7 / 2).unwrap();
        assert_eq!(statuses(&read), ["s97", "s98", "s99"]);
        assert_eq!(read.skipped, 0);
        // Exactly three lines: all three.
        let read = log.recent(line * 3).unwrap();
        assert_eq!(statuses(&read), ["s97", "s98", "s99"]);
        assert_eq!(read.skipped, 0);
        // What follows is read from where it ended.
        log.append(&event("s100")).unwrap();
        assert_eq!(statuses(&log.read_from(read.next).unwrap()), ["s100"]);
        // More than the log: all of it.
        assert_eq!(log.recent(1 << 30).unwrap().events.len(), 101);
    }

    #[test]
    fn reads_whole_lines_from_an_offset_and_from_the_start_once_cut() {
        let dir = assert_fs::TempDir::new().unwrap();
        let log = EventLog::open(&crate::paths::Paths::new(dir.path()));
        let missing = log.read_from(Offset::default()).unwrap();
        assert!(missing.events.is_empty() && !missing.restarted);
        log.append(&event("one")).unwrap();
        let path = dir.path().join(crate::paths::EVENTS_FILE);
        crate::files::append_durable(&path, b"{\"timestamp\":\"2026").unwrap();
        let first = log.read_from(Offset::default()).unwrap();
        assert_eq!((first.events.len(), first.skipped), (1, 0));
        assert!(first.restarted, "a first read starts a file");
        // The half line is read once the next append ends it.
        log.append(&event("two")).unwrap();
        let next = log.read_from(first.next).unwrap();
        assert_eq!((next.events[0].status.as_str(), next.skipped), ("two", 1));
        assert!(!next.restarted);
        assert!(log.read_from(next.next).unwrap().events.is_empty());
        // Cut shorter: read again from its start.
        std::fs::write(&path, "").unwrap();
        log.append(&event("three")).unwrap();
        let cut = log.read_from(next.next).unwrap();
        assert!(cut.restarted);
        assert_eq!(cut.events[0].status, "three");
    }
}
