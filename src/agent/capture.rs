//! Keeping an agent's output: a log file bounded in size (the tail is kept,
//! or the head of a server's stderr), small in-memory windows for
//! classification and evidence, and an optional echo to the terminal.
//! Memory stays flat however much the agent prints. The app-server's
//! transcript is a [`Capture`] of the lines ralph writes for its turn.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::Error;
use crate::files::{PathError, own};

/// The first line of a log whose beginning was dropped.
pub const TRIMMED_MARKER: &str =
    "[ralph: earlier output dropped to keep this log under its size limit]\n";

/// Output kept from the start for classification.
const HEAD_BYTES: usize = 64 * 1024;
/// Output kept from the end for classification (a final result event can
/// be long: it repeats the agent's last message).
const TAIL_BYTES: usize = 256 * 1024;
/// Output quoted as evidence in the outcome.
pub const EVIDENCE_BYTES: usize = 4 * 1024;
/// The longest line held back from the log until its end arrives: a
/// longer one is masked and written in pieces.
const PENDING_BYTES: usize = 64 * 1024;
/// Block size for copying inside the log file.
const COPY_BYTES: usize = 64 * 1024;

/// Where the agent's output is echoed while it runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Echo {
    /// Nowhere: the log file only.
    #[default]
    Off,
    /// To ralph's stderr.
    Stderr,
}

/// A log file that never grows past `limit` bytes: when it would, the
/// oldest output is dropped (whole lines where possible) and the file
/// starts with [`TRIMMED_MARKER`], or, keeping its head, the newest output
/// is. It stays readable while the agent runs.
pub(crate) struct BoundedLog {
    file: File,
    path: PathBuf,
    len: u64,
    limit: u64,
    keep_head: bool,
}

impl BoundedLog {
    /// Creates (or truncates) the log at `path`, a file of the project at
    /// `root`, making its folder as needed; never through a link.
    pub(super) fn create(root: &Path, path: &Path, limit: u64) -> Result<BoundedLog, Error> {
        let fail = |source| Error::Log(PathError::new(path, source));
        own::create_parent(root, path).map_err(fail)?;
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(true);
        let file = own::open(root, path, &options).map_err(fail)?;
        // Room for the marker and a useful tail, whatever the caller asked.
        let limit = limit.max(4 * TRIMMED_MARKER.len() as u64);
        Ok(BoundedLog {
            file,
            path: path.to_owned(),
            len: 0,
            limit,
            keep_head: false,
        })
    }

    /// The log keeping the start of the output rather than its end.
    pub(super) fn keeping_head(mut self) -> BoundedLog {
        self.keep_head = true;
        self
    }

    /// Appends `data`, dropping old output first when the limit would be passed.
    pub(super) fn write(&mut self, data: &[u8]) -> io::Result<()> {
        if self.len + data.len() as u64 <= self.limit {
            self.file.write_all_at(data, self.len)?;
            self.len += data.len() as u64;
            return Ok(());
        }
        if self.keep_head {
            let room = &data[..(self.limit - self.len) as usize];
            self.file.write_all_at(room, self.len)?;
            self.len += room.len() as u64;
            return Ok(());
        }
        let marker = TRIMMED_MARKER.len() as u64;
        let budget = self.limit - marker;
        // Keep about half the budget so trimming happens once per half-limit
        // of output, not on every write.
        let half = budget / 2;
        if data.len() as u64 >= half {
            let keep = &data[data.len() - (budget as usize).min(data.len())..];
            self.file.write_all_at(TRIMMED_MARKER.as_bytes(), 0)?;
            self.file.write_all_at(keep, marker)?;
            self.len = marker + keep.len() as u64;
        } else {
            let mut keep_old = half - data.len() as u64;
            let mut from = self.len - keep_old;
            // `from` lies past the marker (the file is over half full), so
            // copying towards the start never overwrites unread bytes.
            debug_assert!(from >= marker);
            let mut block = vec![0; COPY_BYTES];
            let first = (keep_old as usize).min(COPY_BYTES);
            self.file.read_exact_at(&mut block[..first], from)?;
            if let Some(newline) = block[..first.min(4096)].iter().position(|&b| b == b'\n') {
                from += newline as u64 + 1;
                keep_old -= newline as u64 + 1;
            }
            self.file.write_all_at(TRIMMED_MARKER.as_bytes(), 0)?;
            let mut to = marker;
            let end = from + keep_old;
            while from < end {
                let n = ((end - from) as usize).min(COPY_BYTES);
                self.file.read_exact_at(&mut block[..n], from)?;
                self.file.write_all_at(&block[..n], to)?;
                from += n as u64;
                to += n as u64;
            }
            self.file.write_all_at(data, to)?;
            self.len = to + data.len() as u64;
        }
        self.file.set_len(self.len)?;
        Ok(())
    }

    /// Flushes the log to disk.
    pub(super) fn finish(self) -> Result<(), Error> {
        (self.file.sync_all()).map_err(|source| Error::Log(PathError::new(&self.path, source)))
    }
}

/// Everything kept of the output once the agent is done.
#[derive(Debug)]
pub(crate) struct Captured {
    /// Bytes the agent printed in total.
    pub bytes: u64,
    /// The start and end of the output, for classification.
    pub text: String,
    /// The last few KB, for evidence.
    pub tail: String,
}

/// The sink every chunk of output goes through.
pub(crate) struct Capture {
    log: Option<BoundedLog>,
    log_error: Option<io::Error>,
    echo: Echo,
    head: Vec<u8>,
    tail: Vec<u8>,
    bytes: u64,
    /// Output after the last line end, not yet in the log.
    pending: Vec<u8>,
}

impl Capture {
    /// A sink writing to `log` (if any) and echoing as asked.
    pub(super) fn new(log: Option<BoundedLog>, echo: Echo) -> Capture {
        Capture {
            log,
            log_error: None,
            echo,
            head: Vec::new(),
            tail: Vec::new(),
            bytes: 0,
            pending: Vec::new(),
        }
    }

    /// Takes one chunk of output.
    pub(super) fn write(&mut self, chunk: &[u8]) {
        self.bytes += chunk.len() as u64;
        if self.head.len() < HEAD_BYTES {
            let room = HEAD_BYTES - self.head.len();
            self.head.extend_from_slice(&chunk[..room.min(chunk.len())]);
        }
        self.tail.extend_from_slice(chunk);
        if self.tail.len() > 2 * TAIL_BYTES {
            self.tail.drain(..self.tail.len() - TAIL_BYTES);
        }
        if self.log.is_some() {
            // Whole lines are masked and written; a secret split across
            // two reads is whole by then.
            self.pending.extend_from_slice(chunk);
            let whole = match self.pending.len() > PENDING_BYTES {
                true => self.pending.len(),
                false => self
                    .pending
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |at| at + 1),
            };
            if whole > 0 {
                let lines: Vec<u8> = self.pending.drain(..whole).collect();
                self.log_masked(&lines);
            }
        }
        // A closed terminal must not stop the agent.
        let _ = match self.echo {
            Echo::Off => Ok(()),
            Echo::Stderr => io::stderr().lock().write_all(chunk),
        };
    }

    /// Takes a line of ralph's own, masked (the app-server's transcript).
    pub(super) fn line(&mut self, text: &str) {
        self.write(format!("{}\n", crate::redact::redact(text)).as_bytes());
    }

    /// Writes `bytes` to the log with its secrets masked (as every other
    /// output of ralph: `redact`).
    fn log_masked(&mut self, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        let masked = crate::redact::redact(&text);
        if let Some(log) = &mut self.log
            && let Err(err) = log.write(masked.as_bytes())
        {
            // Keep running the agent; the error is reported at the end.
            self.log_error = Some(err);
            self.log = None;
        }
    }

    /// Closes the log and returns what was kept.
    pub(super) fn finish(mut self, log_path: Option<&Path>) -> Result<Captured, Error> {
        let rest = std::mem::take(&mut self.pending);
        if !rest.is_empty() {
            self.log_masked(&rest);
        }
        if let (Some(err), Some(path)) = (self.log_error, log_path) {
            return Err(Error::Log(PathError::new(path, err)));
        }
        if let Some(log) = self.log {
            log.finish()?;
        }
        let tail_start = self.tail.len().saturating_sub(TAIL_BYTES);
        let tail = &self.tail[tail_start..];
        let text = if self.bytes as usize <= tail.len() {
            String::from_utf8_lossy(tail).into_owned()
        } else {
            // Cut both windows at line boundaries so no half event is read.
            let head_end = self
                .head
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |at| at + 1);
            let tail_from = tail
                .iter()
                .position(|&b| b == b'\n')
                .map_or(tail.len(), |at| at + 1);
            let mut text = String::from_utf8_lossy(&self.head[..head_end]).into_owned();
            text.push_str(&String::from_utf8_lossy(&tail[tail_from..]));
            text
        };
        Ok(Captured {
            bytes: self.bytes,
            text,
            tail: evidence_tail(tail),
        })
    }
}

/// The last `EVIDENCE_BYTES` of the output, from a line start when one is
/// near, as text.
fn evidence_tail(tail: &[u8]) -> String {
    let start = tail.len().saturating_sub(EVIDENCE_BYTES);
    let mut window = &tail[start..];
    if start > 0
        && let Some(newline) = window.iter().position(|&b| b == b'\n')
        && newline + 1 < window.len()
    {
        window = &window[newline + 1..];
    }
    String::from_utf8_lossy(window).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn lines(from: usize, to: usize) -> String {
        (from..to).map(|n| format!("line {n:06}\n")).collect()
    }

    #[test]
    fn small_logs_are_kept_whole() {
        let dir = assert_fs::TempDir::new().unwrap();
        let path = dir.path().join("logs/1-A.log");
        let mut log = BoundedLog::create(dir.path(), &path, 1024).unwrap();
        log.write(b"hello\n").unwrap();
        log.write(b"world\n").unwrap();
        log.finish().unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "hello\nworld\n");
    }

    #[test]
    fn big_logs_keep_the_tail_in_whole_lines() {
        let dir = assert_fs::TempDir::new().unwrap();
        let path = dir.path().join("a.log");
        let limit = 4096;
        let mut log = BoundedLog::create(dir.path(), &path, limit).unwrap();
        let text = lines(0, 2000);
        for chunk in text.as_bytes().chunks(100) {
            log.write(chunk).unwrap();
            assert!(log.len <= limit);
        }
        log.finish().unwrap();
        let kept = fs::read_to_string(&path).unwrap();
        assert!(kept.len() as u64 <= limit);
        let body = kept.strip_prefix(TRIMMED_MARKER).unwrap();
        assert!(text.ends_with(body));
        assert!(body.starts_with("line "), "starts at a line: {body:.20}");
        assert!(body.ends_with("line 001999\n"));
        assert!(body.len() > 1000);
    }

    #[test]
    fn a_secret_split_across_two_reads_never_reaches_the_log() {
        let dir = assert_fs::TempDir::new().unwrap();
        let path = dir.path().join("logs/1-A.log");
        let log = BoundedLog::create(dir.path(), &path, 1 << 20).unwrap();
        let mut capture = Capture::new(Some(log), Echo::Off);
        let token = format!("ghp_{}", "a1B2".repeat(9));
        let (first, second) = token.split_at(10);
        capture.write(format!("working\nusing {first}").as_bytes());
        // Half a line is held back until its end arrives.
        assert_eq!(fs::read_to_string(&path).unwrap(), "working\n");
        capture.write(format!("{second} to push\nno end").as_bytes());
        let captured = capture.finish(Some(&path)).unwrap();
        let logged = fs::read_to_string(&path).unwrap();
        assert_eq!(logged, "working\nusing [redacted] to push\nno end");
        assert!(!logged.contains("ghp_"));
        // What ralph reads to judge the iteration is the output itself.
        assert!(captured.text.contains(&token));
    }

    #[test]
    fn a_log_keeping_its_head_drops_what_comes_past_the_limit() {
        let dir = assert_fs::TempDir::new().unwrap();
        let path = dir.path().join("a.stderr");
        let log = BoundedLog::create(dir.path(), &path, 1000).unwrap();
        let mut log = log.keeping_head();
        let text = lines(0, 200);
        for chunk in text.as_bytes().chunks(64) {
            log.write(chunk).unwrap();
        }
        drop(log);
        assert_eq!(fs::read_to_string(&path).unwrap(), text[..1000]);
    }

    #[test]
    fn lines_of_ralphs_own_are_masked_counted_and_kept_for_evidence() {
        let dir = assert_fs::TempDir::new().unwrap();
        let path = dir.path().join("logs/1-A.log");
        let log = BoundedLog::create(dir.path(), &path, u64::MAX).unwrap();
        let mut capture = Capture::new(Some(log), Echo::Off);
        let token = format!("ghp_{}", "a1B2".repeat(9));
        capture.line("ralph: thread t-1");
        capture.line(&format!("$ git push {token}"));
        let captured = capture.finish(Some(&path)).unwrap();
        let logged = "ralph: thread t-1\n$ git push [redacted]\n";
        assert_eq!(fs::read_to_string(&path).unwrap(), logged);
        assert_eq!(captured.tail, logged);
        assert_eq!(captured.bytes, logged.len() as u64);
    }

    #[test]
    fn a_chunk_bigger_than_the_limit_keeps_its_own_tail() {
        let dir = assert_fs::TempDir::new().unwrap();
        let path = dir.path().join("a.log");
        let mut log = BoundedLog::create(dir.path(), &path, 1000).unwrap();
        log.write(b"start\n").unwrap();
        let big = lines(0, 500);
        log.write(big.as_bytes()).unwrap();
        log.finish().unwrap();
        let kept = fs::read_to_string(&path).unwrap();
        assert_eq!(kept.len(), 1000);
        assert!(kept.starts_with(TRIMMED_MARKER));
        assert!(kept.ends_with("line 000499\n"));
    }

    #[test]
    fn capture_keeps_head_and_tail_for_classification() {
        let mut capture = Capture::new(None, Echo::Off);
        let text = lines(0, 60_000);
        for chunk in text.as_bytes().chunks(65_536) {
            capture.write(chunk);
        }
        let captured = capture.finish(None).unwrap();
        assert_eq!(captured.bytes, text.len() as u64);
        assert!(captured.text.starts_with("line 000000\n"));
        assert!(captured.text.ends_with("line 059999\n"));
        assert!(captured.text.len() <= HEAD_BYTES + TAIL_BYTES);
        for line in captured.text.lines() {
            assert_eq!(line.len(), 11, "whole lines only: {line}");
        }
        assert!(captured.tail.len() <= EVIDENCE_BYTES);
        assert!(captured.tail.starts_with("line "));
        assert!(captured.tail.ends_with("line 059999\n"));
    }

    #[test]
    fn short_output_is_kept_as_is() {
        let mut capture = Capture::new(None, Echo::Off);
        capture.write("héllo\nwörld".as_bytes());
        let captured = capture.finish(None).unwrap();
        assert_eq!(captured.text, "héllo\nwörld");
        assert_eq!(captured.tail, "héllo\nwörld");
        assert_eq!(captured.bytes, 13);
    }
}
