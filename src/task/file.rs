//! The task files as lines of text: parsing that keeps every byte, and
//! edits that rewrite only the lines they change.

use std::mem::MaybeUninit;
use std::ops::Range;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::error::{Error, Result};
use super::id::{IdHasher, IdMap};
use super::model::{Task, parse_map, parse_object};
use super::text::{Contents, Source, Span};
use crate::files;

/// How a line ends; kept so untouched lines are written back as they were.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineEnd {
    /// `\n`
    Lf,
    /// `\r\n`
    CrLf,
    /// The last line of a file without a final newline.
    Missing,
}

impl LineEnd {
    fn as_str(self) -> &'static str {
        match self {
            LineEnd::Lf => "\n",
            LineEnd::CrLf => "\r\n",
            LineEnd::Missing => "",
        }
    }
}

/// The text of one line: a slice of the file as read, shared by all its
/// lines (one buffer, no copy per line), or the line's own text once edited.
/// Lines compare their text's buffers with `Arc::ptr_eq`: the lines read by
/// different threads have different `Source`s.
#[derive(Clone)]
pub struct LineText(Span);

impl LineText {
    fn new(text: String) -> LineText {
        LineText(Span::own(text))
    }

    /// The text as a string slice.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

super::text::str_like!(LineText);

/// One line of `tasks.jsonl`: its exact text and, unless blank, its task.
#[derive(Clone, Debug)]
pub struct Line {
    /// The text without its line ending (and without a leading BOM).
    pub text: LineText,
    /// The line ending as found.
    pub end: LineEnd,
    /// The task on this line; `None` for a blank line.
    pub task: Option<Task>,
}

const BOM: &str = "\u{feff}";

/// Checks a task file is UTF-8, naming the line and column of the first bad
/// byte when it is not.
fn utf8_error(name: &str, bytes: &[u8], err: std::str::Utf8Error) -> Error {
    let (line, message) = crate::files::not_utf8(bytes, err);
    Error::Malformed {
        file: name.to_owned(),
        line,
        message,
    }
}

/// The first line of `rest`: its text, its ending and what follows it.
fn next_line(rest: &str) -> (&str, LineEnd, &str) {
    match memchr_newline(rest) {
        Some(nl) if rest[..nl].ends_with('\r') => (&rest[..nl - 1], LineEnd::CrLf, &rest[nl + 1..]),
        Some(nl) => (&rest[..nl], LineEnd::Lf, &rest[nl + 1..]),
        None => (rest, LineEnd::Missing, ""),
    }
}

fn memchr_newline(text: &str) -> Option<usize> {
    memchr::memchr(b'\n', text.as_bytes())
}

fn conflict_marker(name: &str, line: usize) -> Error {
    Error::Malformed {
        file: name.to_owned(),
        line,
        message: "merge conflict marker; resolve the conflict (keep one version of each task line) and delete the marker lines".to_owned(),
    }
}

/// Splits a file's text into lines, checking what every task file must
/// satisfy besides UTF-8: no merge-conflict markers. Calls `line` with each
/// line's text and ending, in order.
fn split_lines<'a>(
    name: &str,
    content: &'a str,
    mut line: impl FnMut(&'a str, LineEnd),
) -> Result<bool> {
    let (bom, content) = match content.strip_prefix(BOM) {
        Some(rest) => (true, rest),
        None => (false, content),
    };
    let mut count = 0;
    let mut rest = content;
    while !rest.is_empty() {
        let (text, end, next) = next_line(rest);
        count += 1;
        if is_conflict_marker(text) {
            return Err(conflict_marker(name, count));
        }
        line(text, end);
        rest = next;
    }
    Ok(bom)
}

/// What reading a run of lines found besides the lines themselves.
#[derive(Default)]
struct RunReport {
    /// How many lines the run has.
    count: usize,
    /// Each line's [`id_hash`] ([`NO_TASK`] for a blank line), hashed
    /// while the line is at hand: the index is then built from these alone.
    hashes: Vec<u64>,
    /// The run's first conflict marker (its line number in the run, from 0).
    conflict: Option<usize>,
    /// The run's first bad task line (from 0) and what is wrong with it.
    error: Option<(usize, String)>,
}

/// One thread's share of a file's lines: slots of the one `Vec` they end
/// up in, filled in order (the run's lines were counted first).
struct Slots<'a> {
    slots: &'a mut [MaybeUninit<Line>],
    filled: usize,
}

impl Slots<'_> {
    fn push(&mut self, line: Line) {
        self.slots[self.filled].write(line);
        self.filled += 1;
    }
}

/// How many lines `run` splits into (as `next_line` splits them).
fn line_count(run: &str) -> usize {
    let newlines = memchr::memchr_iter(b'\n', run.as_bytes()).count();
    newlines + usize::from(!run.is_empty() && !run.ends_with('\n'))
}

/// Splits `run` (whole lines of `source`'s text) into lines and reads
/// their tasks, putting them into `lines`. After a bad task it only looks
/// for conflict markers, which are reported before any task error.
fn read_run(source: &Arc<Source>, run: &str, lines: &mut Slots) -> RunReport {
    let mut report = RunReport::default();
    let mut rest = run;
    while !rest.is_empty() {
        let (text, end, next) = next_line(rest);
        let number = report.count;
        report.count += 1;
        rest = next;
        if is_conflict_marker(text) {
            report.conflict = Some(number);
            break;
        }
        if report.error.is_some() {
            continue;
        }
        let task = if is_blank(text) {
            None
        } else {
            match Task::read(text, Some(source)) {
                Ok(task) => Some(task),
                Err(message) => {
                    report.error = Some((number, message));
                    continue;
                }
            }
        };
        report.hashes.push(line_hash(&task));
        // A range of the file's text: the line shares it.
        let text = Span::of_or_own(source, text);
        lines.push(Line {
            text: LineText(text),
            end,
            task,
        });
    }
    report
}

/// Splits the file's text (after any BOM, from `from`) into lines and reads
/// the task of every non-blank line, reporting the first problem in file
/// order: a conflict marker before any bad task. A big file is read by a
/// few threads at once, each taking a run of whole lines (a line's task
/// depends on its text alone) with its own `Source`.
fn read_lines(name: &str, text: &Arc<Contents>, from: usize) -> Result<(Vec<Line>, Vec<u64>)> {
    // Below this, a thread costs more than it saves.
    const BYTES_PER_THREAD: usize = 1 << 20;
    let body = &text[from..];
    let threads = match body.len() / BYTES_PER_THREAD {
        0 | 1 => 1,
        most => crate::files::cores().min(4).min(most),
    };
    // Runs of about equal size, each cut after a newline.
    let mut runs = Vec::with_capacity(threads);
    let mut rest = body;
    for n in (1..=threads).rev() {
        let cut = match rest.len() / n {
            0 => rest.len(),
            size => memchr_newline(&rest[size..]).map_or(rest.len(), |nl| size + nl + 1),
        };
        runs.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    // Each thread puts its lines straight into their place in one `Vec`
    // (in huge pages: one page fault per 2 MiB), so the runs' lines are
    // counted first, rather than a second run's lines being copied after
    // the first's (into fresh memory, on one thread, with both in memory).
    let counts = on_threads(runs.clone(), line_count);
    let total = counts.iter().sum();
    let mut lines: Vec<Line> = Vec::with_capacity(total);
    crate::files::advise_huge_pages(&mut lines);
    let mut shares = Vec::with_capacity(runs.len());
    let mut rest = &mut lines.spare_capacity_mut()[..total];
    for (&count, run) in counts.iter().zip(&runs) {
        let (share, after) = rest.split_at_mut(count);
        shares.push((share, run));
        rest = after;
    }
    let done = on_threads(shares, |(slots, run): (_, &&str)| {
        let mut slots = Slots { slots, filled: 0 };
        let report = read_run(&Source::new(Arc::clone(text)), run, &mut slots);
        (slots.filled, report)
    });
    let (filled, reports): (Vec<usize>, Vec<RunReport>) = done.into_iter().unzip();
    if filled == counts {
        // SAFETY: the first `total` slots are initialized: each run's share
        // of them, in order, was filled whole.
        unsafe { lines.set_len(total) };
    } else {
        // A run stopped at a problem: drop the lines it did read.
        let mut start = 0;
        for (count, filled) in counts.iter().zip(&filled) {
            for slot in &mut lines.spare_capacity_mut()[start..start + filled] {
                // SAFETY: the first `filled` slots of the run's share were
                // written, and are dropped once (the Vec's length stays 0).
                unsafe { slot.assume_init_drop() };
            }
            start += count;
        }
        let stopped = reports
            .iter()
            .any(|r| r.conflict.is_some() || r.error.is_some());
        assert!(
            stopped,
            "a run read fewer lines than it has, with no problem"
        );
    }
    let mut before = 0;
    let mut error = None;
    let mut hashes = Vec::with_capacity(lines.len());
    for report in &reports {
        hashes.extend_from_slice(&report.hashes);
        if let Some(number) = report.conflict {
            return Err(conflict_marker(name, before + number + 1));
        }
        if error.is_none()
            && let Some((number, message)) = &report.error
        {
            error = Some((before + number + 1, message.clone()));
        }
        before += report.count;
    }
    match error {
        Some((line, message)) => Err(Error::Malformed {
            file: name.to_owned(),
            line,
            message,
        }),
        None => Ok((lines, hashes)),
    }
}

/// `work` on each item, the first on this thread and each other on a
/// thread of its own; the results in order.
fn on_threads<T: Send, R: Send>(items: Vec<T>, work: impl Fn(T) -> R + Sync) -> Vec<R> {
    let work = &work;
    std::thread::scope(|scope| {
        let mut items = items.into_iter();
        let first = items.next().expect("at least one item");
        let others: Vec<_> = items.map(|item| scope.spawn(move || work(item))).collect();
        let mut results = vec![work(first)];
        results.extend(
            others
                .into_iter()
                .map(|other| other.join().expect("the work does not panic")),
        );
        results
    })
}

fn is_conflict_marker(text: &str) -> bool {
    ["<<<<<<<", "=======", ">>>>>>>", "|||||||"]
        .iter()
        .any(|marker| text.starts_with(marker))
}

fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

/// `tasks.jsonl`, parsed line by line. Rendering it back gives the same
/// bytes except for the lines an edit touched.
#[derive(Clone, Debug)]
pub struct TaskFile {
    name: String,
    bom: bool,
    lines: Vec<Line>,
    /// The text as read, which the lines share.
    text: Arc<Contents>,
    /// While the only edits are removals: the byte ranges of `text` removed
    /// since, in the order they were removed. The file is then the text
    /// without them, written without a pass over the lines (an archive of
    /// one task out of 100k). They may overlap: an unterminated last line
    /// takes the ending before it, which may have gone with the line
    /// before.
    cut: Option<Vec<Range<usize>>>,
    /// Line index of each id's first occurrence.
    index: IdIndex,
    /// The first repeated id in file order: (its line index, the first's).
    duplicate: Option<(usize, usize)>,
}

impl TaskFile {
    /// Parses the file's bytes; `name` is used in error messages.
    pub fn parse(name: &str, bytes: &[u8]) -> Result<TaskFile> {
        TaskFile::parse_owned(name, bytes.to_vec())
    }

    /// Parses the file's bytes, keeping them as the lines' shared text.
    pub fn parse_owned(name: &str, bytes: Vec<u8>) -> Result<TaskFile> {
        match String::from_utf8(bytes) {
            Ok(text) => TaskFile::parse_text(name, Arc::new(text.into())),
            Err(err) => Err(utf8_error(name, err.as_bytes(), err.utf8_error())),
        }
    }

    /// Parses a mapped file (see [`files::map_leased`]): its lines share
    /// the mapping, so it lasts, and the lease with it, as long as they do.
    pub(crate) fn parse_mapped(name: &str, mapped: files::Mapped) -> Result<TaskFile> {
        match Contents::mapped(mapped) {
            Ok(text) => TaskFile::parse_text(name, Arc::new(text)),
            Err((bytes, err)) => Err(utf8_error(name, &bytes, err)),
        }
    }

    fn parse_text(name: &str, text: Arc<Contents>) -> Result<TaskFile> {
        let bom = text.starts_with(BOM);
        let (lines, hashes) = read_lines(name, &text, if bom { BOM.len() } else { 0 })?;
        let (index, duplicate) = IdIndex::build(&lines, hashes.iter().copied());
        Ok(TaskFile {
            name: name.to_owned(),
            bom,
            lines,
            text,
            cut: Some(Vec::new()),
            index,
            duplicate,
        })
    }

    fn reindex(&mut self) {
        // The old index goes first: never two in memory at once.
        self.index = IdIndex::default();
        let hashes = self.lines.iter().map(|line| line_hash(&line.task));
        let (index, duplicate) = IdIndex::build(&self.lines, hashes);
        self.index = index;
        self.duplicate = duplicate;
    }

    /// The first id that appears twice, in file order: the line index of
    /// the repeat and of the first occurrence.
    pub fn first_duplicate(&self) -> Option<(usize, usize)> {
        self.duplicate
    }

    /// The file's name as shown in messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Every line, blank ones included, in file order.
    pub fn lines(&self) -> &[Line] {
        &self.lines
    }

    /// The tasks in file order, each with its index in `lines()`.
    pub fn tasks(&self) -> impl Iterator<Item = (usize, &Task)> {
        self.lines
            .iter()
            .enumerate()
            .filter_map(|(index, line)| line.task.as_ref().map(|task| (index, task)))
    }

    /// The index of the first line holding the task `id`.
    pub fn position(&self, id: &str) -> Option<usize> {
        self.index.get(&self.lines, id)
    }

    /// The task `id`, if this file has it.
    pub fn get(&self, id: &str) -> Option<&Task> {
        self.position(id)
            .and_then(|index| self.lines[index].task.as_ref())
    }

    /// The full JSON object on line `index`, unknown fields and key order kept.
    pub fn object(&self, index: usize) -> Result<Map<String, Value>> {
        parse_map(&self.lines[index].text).map_err(|message| Error::Malformed {
            file: self.name.clone(),
            line: index + 1,
            message,
        })
    }

    /// Whether an edit changed the content since it was parsed (any edit
    /// but a removal clears `cut`).
    pub fn is_changed(&self) -> bool {
        !matches!(&self.cut, Some(ranges) if ranges.is_empty())
    }

    /// Rewrites the task on line `index` through `edit`, keeping its other
    /// fields, their order and the line ending.
    pub fn edit(&mut self, index: usize, edit: impl FnOnce(&mut Map<String, Value>)) -> Result<()> {
        let mut object = self.object(index)?;
        edit(&mut object);
        let line = self.line_from(object, self.lines[index].end, index)?;
        if line.text != self.lines[index].text {
            let id_changed =
                line.task.as_ref().map(|t| &t.id) != self.lines[index].task.as_ref().map(|t| &t.id);
            self.lines[index] = line;
            self.cut = None;
            if id_changed {
                self.reindex();
            }
        }
        Ok(())
    }

    /// Inserts a new task line before line `index` (`lines().len()` appends).
    pub fn insert(&mut self, index: usize, object: Map<String, Value>) -> Result<()> {
        let end = self.default_end();
        let line = self.line_from(object, end, index)?;
        if index == self.lines.len()
            && let Some(last) = self.lines.last_mut()
            && last.end == LineEnd::Missing
        {
            last.end = end;
        }
        self.lines.insert(index, line);
        self.cut = None;
        self.reindex();
        Ok(())
    }

    /// Removes line `index`.
    pub fn remove(&mut self, index: usize) {
        // Without repeated ids, the index follows the removal rather than
        // being built again.
        let follow = self.duplicate.is_none();
        if follow {
            self.index.remove_line(&self.lines, index);
        }
        let removed = self.lines.remove(index);
        // The bytes it leaves out: its text and ending, or for an
        // unterminated last line, the ending before it too.
        // (A line past 4 GiB has a copy of its text: no cutting then.)
        let (text, mut bytes) = removed.text.0.range();
        bytes.end += removed.end.as_str().len();
        let mut cuttable = Arc::ptr_eq(text, &self.text);
        if removed.end == LineEnd::Missing
            && let Some(last) = self.lines.last_mut()
        {
            last.end = LineEnd::Missing;
            let (text, before) = last.text.0.range();
            cuttable &= Arc::ptr_eq(text, &self.text);
            bytes.start = before.end;
        }
        match &mut self.cut {
            Some(ranges) if cuttable => ranges.push(bytes),
            _ => self.cut = None,
        }
        if !follow {
            self.reindex();
        }
    }

    /// The file's bytes: untouched lines exactly as read (what `write_to`
    /// writes).
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        self.write_to(&mut out)
            .expect("writing to memory does not fail");
        String::from_utf8(out).expect("lines are UTF-8")
    }

    /// Writes the file's bytes (what `render` returns) to `out`.
    pub fn write_to(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        match &self.cut {
            Some(ranges) => self.write_cut_to(ranges, out),
            None => self.write_lines_to(out),
        }
    }

    /// `write_to` for a file whose only edits are removals: the text read
    /// without the bytes removed.
    fn write_cut_to(
        &self,
        ranges: &[Range<usize>],
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        let text = self.text.as_bytes();
        let mut ranges = ranges.to_vec();
        ranges.sort_unstable_by_key(|range| range.start);
        let mut from = 0;
        for range in ranges {
            if range.start > from {
                out.write_all(&text[from..range.start])?;
            }
            from = from.max(range.end);
        }
        out.write_all(&text[from..])
    }

    /// Lets go of the lease on a mapped file (see [`files::Mapped::let_go`]).
    ///
    /// # Safety
    ///
    /// Nothing may read the file's lines afterwards (their text may
    /// change); dropping them is fine.
    pub unsafe fn let_go(&self) {
        // SAFETY: passed on to the caller.
        unsafe { self.text.let_go() };
    }

    /// `write_to` line by line.
    fn write_lines_to(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        if self.bom {
            out.write_all(BOM.as_bytes())?;
        }
        // Lines that follow each other in the buffer they were read from,
        // endings included (all of them, but around an edit), are written
        // as one slice of it rather than line by line.
        let mut run: Option<(&Arc<Contents>, usize, usize)> = None;
        for line in &self.lines {
            let (source, text) = line.text.0.range();
            let ending = line.end.as_str();
            let end = text.end + ending.len();
            let in_source = source.get(text.end..end) == Some(ending);
            if let Some((run_source, _, run_end)) = &mut run
                && Arc::ptr_eq(run_source, source)
                && *run_end == text.start
                && in_source
            {
                *run_end = end;
                continue;
            }
            if let Some((run_source, run_start, run_end)) = run.take() {
                out.write_all(&run_source.as_bytes()[run_start..run_end])?;
            }
            if in_source {
                run = Some((source, text.start, end));
            } else {
                out.write_all(line.text.as_bytes())?;
                out.write_all(ending.as_bytes())?;
            }
        }
        if let Some((run_source, run_start, run_end)) = run {
            out.write_all(&run_source.as_bytes()[run_start..run_end])?;
        }
        Ok(())
    }

    /// New lines end like the file's first line (LF for an empty file).
    fn default_end(&self) -> LineEnd {
        match self.lines.first().map(|line| line.end) {
            Some(LineEnd::CrLf) => LineEnd::CrLf,
            _ => LineEnd::Lf,
        }
    }

    fn line_from(&self, object: Map<String, Value>, end: LineEnd, index: usize) -> Result<Line> {
        let text = serde_json::to_string(&object).expect("a JSON map serializes");
        let task = Task::from_json(&text).map_err(|message| Error::Malformed {
            file: self.name.clone(),
            line: index + 1,
            message,
        })?;
        Ok(Line {
            text: LineText::new(text),
            end,
            task: Some(task),
        })
    }
}

/// Line indexes by id: open addressing over slots that compare with the
/// lines' own ids, so no id is copied (a `HashMap<String, usize>` was a
/// tenth of a loaded queue's memory). Each slot keeps 32 bits of its id's
/// hash too, so a probe past another id rarely needs to read that id.
#[derive(Clone, Debug, Default)]
struct IdIndex {
    /// A line index and a hash tag per slot, `EMPTY` when free; a power of
    /// two long.
    slots: Vec<(u32, u32)>,
}

const EMPTY: u32 = u32::MAX;
/// A slot whose line was removed: lookups probe past it.
const REMOVED: u32 = u32::MAX - 1;

/// What [`id_hash`] never returns: the mark of a line without a task.
const NO_TASK: u64 = u64::MAX;

/// A line's hash for the index: its task's [`id_hash`], or [`NO_TASK`].
fn line_hash(task: &Option<Task>) -> u64 {
    task.as_ref()
        .map_or(NO_TASK, |task| id_hash(task.id.as_str()))
}

/// The hash the index files an id under (FxHash, never [`NO_TASK`]).
fn id_hash(id: &str) -> u64 {
    use std::hash::Hasher;
    let mut hasher = IdHasher::default();
    hasher.write(id.as_bytes());
    hasher.finish().min(NO_TASK - 1)
}

fn id_at(lines: &[Line], slot: u32) -> &str {
    lines[slot as usize]
        .task
        .as_ref()
        .expect("indexed lines hold tasks")
        .id
        .as_str()
}

impl IdIndex {
    /// Indexes the tasks of `lines`, given each line's [`id_hash`]; also
    /// returns the first repeated id in file order, as (its line index, the
    /// first occurrence's).
    fn build(
        lines: &[Line],
        hashes: impl ExactSizeIterator<Item = u64>,
    ) -> (IdIndex, Option<(usize, usize)>) {
        debug_assert_eq!(hashes.len(), lines.len(), "one hash per line");
        let size = (lines.len() * 2).next_power_of_two().max(8);
        let mut index = IdIndex {
            slots: vec![(EMPTY, 0); size],
        };
        let mut duplicate = None;
        for (position, hash) in hashes.enumerate() {
            if hash == NO_TASK {
                continue;
            }
            let line = u32::try_from(position).expect("a task file has fewer than 4G lines");
            let (mut slot, tag) = index.home(hash);
            loop {
                match index.slots[slot] {
                    (EMPTY, _) => {
                        index.slots[slot] = (line, tag);
                        break;
                    }
                    (first, found) if found == tag && id_at(lines, first) == id_at(lines, line) => {
                        duplicate = duplicate.or(Some((position, first as usize)));
                        break;
                    }
                    _ => slot = (slot + 1) & (index.slots.len() - 1),
                }
            }
        }
        (index, duplicate)
    }

    /// The first slot to look at for an id of [`id_hash`] `hash` (its high bits: FxHash's
    /// low bits vary little between short ids), and its tag (both halves
    /// of the hash mixed).
    fn home(&self, hash: u64) -> (usize, u32) {
        let bits = self.slots.len().trailing_zeros();
        ((hash >> (64 - bits)) as usize, (hash ^ (hash >> 32)) as u32)
    }

    fn get(&self, lines: &[Line], id: &str) -> Option<usize> {
        self.slot(lines, id).map(|slot| self.slots[slot].0 as usize)
    }

    /// The slot holding `id`'s line.
    fn slot(&self, lines: &[Line], id: &str) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let (mut slot, tag) = self.home(id_hash(id));
        loop {
            match self.slots[slot] {
                (EMPTY, _) => return None,
                (line, found) if line != REMOVED && found == tag && id_at(lines, line) == id => {
                    return Some(slot);
                }
                _ => slot = (slot + 1) & (self.slots.len() - 1),
            }
        }
    }

    /// Follows the removal of line `index` (still in `lines`): forgets its
    /// id, and the lines after it move up one.
    fn remove_line(&mut self, lines: &[Line], index: usize) {
        if let Some(task) = &lines[index].task
            && let Some(slot) = self.slot(lines, task.id.as_str())
        {
            self.slots[slot].0 = REMOVED;
        }
        for (line, _) in &mut self.slots {
            if *line != EMPTY && *line != REMOVED && *line as usize > index {
                *line -= 1;
            }
        }
    }
}

/// Where an archived id sits in `tasks-done.jsonl`.
#[derive(Clone, Copy, Debug)]
struct DoneEntry {
    line: usize,
    start: usize,
    end: usize,
}

/// `tasks-done.jsonl`: the append-only archive. Only ids are read eagerly;
/// a record's other fields are parsed when asked for.
#[derive(Clone, Debug)]
pub struct DoneLog {
    name: String,
    text: String,
    /// A last line cut short by a crash during an append, ignored.
    torn: Option<Torn>,
    ids: IdMap<String, DoneEntry>,
    order: Vec<String>,
    /// Records queued for appending, as (id, JSON line).
    appended: Vec<(String, String)>,
}

/// The unterminated, incomplete last line of the archive.
#[derive(Clone, Debug, PartialEq)]
pub struct Torn {
    /// Its 1-based line number.
    pub line: usize,
    /// Where it starts in the file.
    pub offset: u64,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

impl Torn {
    /// The warning for a command that reads the archive and leaves the
    /// torn line where it is.
    pub fn ignored_warning(line: usize) -> String {
        format!(
            "warning: tasks-done.jsonl:{line}: a torn last line (a crash during an append?) is ignored; the next archive moves it to {}",
            super::store::QUARANTINE_DIR
        )
    }
}

/// Splits off an unterminated last line that is not a whole JSON value
/// (a power loss during an append): it is ignored, never parsed as a record.
fn split_torn(bytes: &[u8]) -> (&[u8], Option<Torn>) {
    let start = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
    let tail = &bytes[start..];
    if tail.is_empty() {
        return (bytes, None);
    }
    let cut_short = match std::str::from_utf8(tail) {
        // A character cut in two.
        Err(err) => err.error_len().is_none(),
        Ok(text) if text.trim().is_empty() => false,
        Ok(text) => {
            serde_json::from_str::<serde::de::IgnoredAny>(text).is_err_and(|err| err.is_eof())
        }
    };
    if !cut_short {
        return (bytes, None);
    }
    let torn = Torn {
        line: bytes[..start].iter().filter(|&&b| b == b'\n').count() + 1,
        offset: start as u64,
        bytes: tail.to_vec(),
    };
    (&bytes[..start], Some(torn))
}

#[derive(Deserialize)]
struct DoneId {
    id: Option<Value>,
}

impl DoneLog {
    /// Parses the archive's bytes; `name` is used in error messages.
    pub fn parse(name: &str, bytes: &[u8]) -> Result<DoneLog> {
        let (bytes, torn) = split_torn(bytes);
        let text = std::str::from_utf8(bytes).map_err(|err| utf8_error(name, bytes, err))?;
        let mut lines = Vec::new();
        split_lines(name, text, |line, end| lines.push((line, end)))?;
        let base = text.as_ptr() as usize;
        let mut ids = IdMap::with_capacity_and_hasher(lines.len(), Default::default());
        let mut order = Vec::with_capacity(lines.len());
        for (index, (line, _)) in lines.iter().enumerate() {
            if is_blank(line) {
                continue;
            }
            let malformed = |message: String| Error::Malformed {
                file: name.to_owned(),
                line: index + 1,
                message,
            };
            let record: DoneId = parse_object(line).map_err(malformed)?;
            let id = match record.id {
                Some(Value::String(id)) if !id.is_empty() => id,
                Some(Value::String(_)) => return Err(malformed("empty id".to_owned())),
                None | Some(Value::Null) => return Err(malformed("missing field `id`".to_owned())),
                Some(other) => {
                    return Err(malformed(format!(
                        "field `id` must be a string, not {other}"
                    )));
                }
            };
            let start = line.as_ptr() as usize - base;
            if let std::collections::hash_map::Entry::Vacant(slot) = ids.entry(id) {
                order.push(slot.key().clone());
                slot.insert(DoneEntry {
                    line: index + 1,
                    start,
                    end: start + line.len(),
                });
            }
        }
        Ok(DoneLog {
            name: name.to_owned(),
            text: text.to_owned(),
            torn,
            ids,
            order,
            appended: Vec::new(),
        })
    }

    /// Whether `id` is archived (read from the file or appended since).
    pub fn contains(&self, id: &str) -> bool {
        self.ids.contains_key(id) || self.appended_ids().any(|appended| appended == id)
    }

    /// The torn last line, if the file ends with one.
    pub fn torn(&self) -> Option<&Torn> {
        self.torn.as_ref()
    }

    /// Archived ids in file order, each once, appended ones last.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.order
            .iter()
            .map(String::as_str)
            .chain(self.appended_ids())
    }

    /// How many distinct ids are archived.
    pub fn len(&self) -> usize {
        self.order.len() + self.appended.len()
    }

    /// Whether nothing is archived.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The archived record of `id` with all its fields.
    pub fn record(&self, id: &str) -> Option<Map<String, Value>> {
        if let Some(entry) = self.ids.get(id) {
            return parse_map(&self.text[entry.start..entry.end]).ok();
        }
        self.appended
            .iter()
            .find(|(appended, _)| appended == id)
            .and_then(|(_, line)| parse_map(line).ok())
    }

    /// The 1-based line of `id` in the file, when it was read from there.
    pub fn line_of(&self, id: &str) -> Option<usize> {
        self.ids.get(id).map(|entry| entry.line)
    }

    /// Queues the record of `id` to be appended.
    pub fn append(&mut self, id: &str, record: &Map<String, Value>) {
        let line = serde_json::to_string(record).expect("a JSON map serializes");
        self.appended.push((id.to_owned(), line));
    }

    /// The text to append to the file for the queued records, starting on a
    /// fresh line even when the file lacks a final newline; empty if none.
    pub fn pending_text(&self) -> String {
        if self.appended.is_empty() {
            return String::new();
        }
        let mut out = String::new();
        // A torn last line is cut off before appending (`torn`), so the
        // file then ends with a newline.
        if self.torn.is_none() && !self.text.is_empty() && !self.text.ends_with('\n') {
            out.push('\n');
        }
        for (_, line) in &self.appended {
            out.push_str(line);
            out.push('\n');
        }
        out
    }

    /// The file's name as shown in messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn appended_ids(&self) -> impl Iterator<Item = &str> {
        self.appended.iter().map(|(id, _)| id.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ODD: &str = "{ \"title\" : \"café ☕\", \"id\":\"A\",\"leaf\":false , \"status\":\"pending\", \"x\": [1, 2] }\r\n\
        \n\
        {\"id\":\"A.1\",\"title\":\"日本\",\"status\":\"in_progress\",\"leaf\":true,\"deep\":{\"k\":null}}\n\
        {\"leaf\":true,  \"id\":\"A.2\", \"status\":\"pending\",\"title\":\"two\"}";

    #[test]
    fn the_index_follows_removals_as_a_fresh_parse_would() {
        let text: String = (0..300)
            .map(|n| {
                if n % 7 == 3 {
                    "\n".to_owned()
                } else {
                    format!(
                        "{{\"id\":\"T{n}\",\"title\":\"t\",\"status\":\"pending\",\"leaf\":true}}\n"
                    )
                }
            })
            .collect();
        let mut file = TaskFile::parse("tasks.jsonl", text.as_bytes()).unwrap();
        // From the end, the start, the middle, and blank lines too.
        for index in [298, 0, 150, 2, 150, 149, 5] {
            file.remove(index);
            let fresh = TaskFile::parse("tasks.jsonl", file.render().as_bytes()).unwrap();
            for n in 0..300 {
                let id = format!("T{n}");
                assert_eq!(
                    file.position(&id),
                    fresh.position(&id),
                    "{id} after removing {index}"
                );
            }
        }
        assert_eq!(file.position("T0"), None);
    }

    /// Every order of removing every line of a few odd files: the file
    /// written as cut from its text equals the file written line by line.
    #[test]
    fn a_file_with_lines_removed_is_its_text_without_them() {
        fn orders(left: Vec<usize>, done: &mut Vec<usize>, each: &mut dyn FnMut(&[usize])) {
            each(done);
            for (n, &line) in left.iter().enumerate() {
                let mut rest = left.clone();
                rest.remove(n);
                done.push(line);
                orders(rest, done, each);
                done.pop();
            }
        }
        let task = |id: &str| {
            format!("{{\"id\":\"{id}\",\"title\":\"t\",\"status\":\"pending\",\"leaf\":true}}")
        };
        let files = [
            ODD.to_owned(),
            format!("{BOM}{}\n\n{}\r\n{}", task("A"), task("B"), task("C")),
            format!("{}\n{}\n\n", task("A"), task("B")),
            format!("\n{}", task("A")),
            task("A"),
        ];
        for text in &files {
            let parsed = TaskFile::parse("tasks.jsonl", text.as_bytes()).unwrap();
            let count = parsed.lines().len();
            orders((0..count).collect(), &mut Vec::new(), &mut |removed| {
                let mut file = parsed.clone();
                // Original line numbers to indexes in what is left.
                for (n, &line) in removed.iter().enumerate() {
                    let shift = removed[..n].iter().filter(|&&gone| gone < line).count();
                    file.remove(line - shift);
                }
                let mut by_lines = Vec::new();
                file.write_lines_to(&mut by_lines).unwrap();
                assert!(file.cut.is_some());
                assert_eq!(
                    file.render(),
                    String::from_utf8(by_lines).unwrap(),
                    "{text:?} after removing lines {removed:?}"
                );
            });
        }
    }

    /// 100k lines are 12 MB in memory (the queue's biggest part after
    /// the text): keep them small.
    #[test]
    fn a_line_takes_120_bytes() {
        assert!(std::mem::size_of::<Line>() <= 120);
    }

    #[test]
    fn renders_untouched_files_byte_for_byte() {
        let file = TaskFile::parse("tasks.jsonl", ODD.as_bytes()).unwrap();
        assert_eq!(file.render(), ODD);
        let mut written = Vec::new();
        file.write_to(&mut written).unwrap();
        assert_eq!(written, ODD.as_bytes());
        let with_bom = format!("{BOM}{ODD}");
        assert_eq!(
            TaskFile::parse("tasks.jsonl", with_bom.as_bytes())
                .unwrap()
                .render(),
            with_bom
        );
    }

    #[test]
    fn an_edit_rewrites_only_its_line() {
        let mut file = TaskFile::parse("tasks.jsonl", ODD.as_bytes()).unwrap();
        let index = file.position("A.1").unwrap();
        file.edit(index, |object| {
            object.insert("status".into(), "ready".into());
        })
        .unwrap();
        let out = file.render();
        let before: Vec<&str> = ODD.split('\n').collect();
        let after: Vec<&str> = out.split('\n').collect();
        assert_eq!(before.len(), after.len());
        for (i, (b, a)) in before.iter().zip(&after).enumerate() {
            if i == index {
                assert_eq!(
                    *a,
                    r#"{"id":"A.1","title":"日本","status":"ready","leaf":true,"deep":{"k":null}}"#
                );
            } else {
                assert_eq!(b, a);
            }
        }
    }

    #[test]
    fn appending_to_a_file_without_final_newline_starts_a_line() {
        let mut file = TaskFile::parse("tasks.jsonl", ODD.as_bytes()).unwrap();
        let object = parse_map(r#"{"id":"B","title":"b","status":"pending","leaf":true}"#).unwrap();
        file.insert(file.lines().len(), object).unwrap();
        let out = file.render();
        assert!(out.starts_with(ODD));
        // New lines take the first line's ending (CRLF here).
        assert_eq!(
            &out[ODD.len()..],
            "\r\n{\"id\":\"B\",\"title\":\"b\",\"status\":\"pending\",\"leaf\":true}\r\n"
        );
    }

    #[test]
    fn removing_the_unterminated_last_line_keeps_the_file_unterminated() {
        let mut file = TaskFile::parse("tasks.jsonl", ODD.as_bytes()).unwrap();
        file.remove(file.position("A.2").unwrap());
        assert!(ODD.starts_with(&file.render()[..file.render().len()]));
        assert!(file.render().ends_with("null}}"));
    }

    #[test]
    fn conflict_markers_and_bad_utf8_name_their_line() {
        let text =
            "{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n<<<<<<< HEAD\n";
        assert_eq!(
            TaskFile::parse("tasks.jsonl", text.as_bytes())
                .unwrap_err()
                .to_string(),
            "tasks.jsonl:2: merge conflict marker; resolve the conflict (keep one version of each task line) and delete the marker lines"
        );
        let bytes = b"{}\n{\"id\":\"\xff\"}\n";
        assert_eq!(
            DoneLog::parse("tasks-done.jsonl", bytes)
                .unwrap_err()
                .to_string(),
            "tasks-done.jsonl:2: not valid UTF-8 (byte 0xff at column 8); save the file as UTF-8"
        );
    }

    /// A file big enough to be read by several threads: the first problem
    /// in file order wins, a conflict marker over a bad task anywhere, and
    /// the lines read before a problem are dropped, whichever run it is in.
    #[test]
    fn a_big_files_first_problem_wins_whichever_thread_reads_it() {
        let line = |n: usize| {
            format!(
                "{{\"id\":\"T{n}\",\"title\":\"a title of some length\",\"status\":\"pending\",\"leaf\":true}}\n"
            )
        };
        let lines: Vec<String> = (0..60_000).map(line).collect();
        assert!(lines.concat().len() > 4 << 20, "big enough for 2+ threads");
        let with = |changes: &[(usize, &str)]| {
            let mut lines = lines.clone();
            for (at, text) in changes {
                lines[*at] = text.to_string();
            }
            let text = lines.concat();
            TaskFile::parse("tasks.jsonl", text.as_bytes()).map(|file| file.lines().len())
        };
        let bad = "{\"id\":\"X\"}\n";
        let marker = "=======\n";
        assert_eq!(with(&[]).unwrap(), 60_000);
        for (changes, line) in [
            (vec![(10, bad), (59_000, bad)], 11),
            (vec![(59_000, bad)], 59_001),
            (vec![(10, bad), (59_000, marker)], 59_001),
            (vec![(30_500, marker), (59_000, marker)], 30_501),
        ] {
            let err = with(&changes).unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("tasks.jsonl:{line}: ")),
                "{changes:?}: {err}"
            );
        }
        // Every line read before the problems is dropped (each held a
        // share of the text).
        let mut broken = lines.clone();
        broken[20_000] = bad.into();
        broken[50_000] = bad.into();
        let text: Arc<Contents> = Arc::new(broken.concat().into());
        assert!(read_lines("tasks.jsonl", &text, 0).is_err());
        assert_eq!(Arc::strong_count(&text), 1, "lines read were kept");
        // A blank line and one without an ending, in every run: all counted.
        let mut odd = lines.clone();
        odd[100] = "\n".into();
        odd[40_000] = "   \r\n".into();
        odd[59_999] = line(59_999).trim_end().to_owned();
        let file = TaskFile::parse("tasks.jsonl", odd.concat().as_bytes()).unwrap();
        assert_eq!(file.lines().len(), 60_000);
        assert_eq!(file.render(), odd.concat());
    }

    #[test]
    fn done_log_reads_ids_and_records() {
        let text = "{\"id\":\"A.1.1\",\"title\":\"x\",\"completed\":\"2024-01-21\",\"commit\":\"abc123\"}\n\n{\"id\":\"B\"}";
        let mut done = DoneLog::parse("tasks-done.jsonl", text.as_bytes()).unwrap();
        assert!(done.contains("A.1.1") && done.contains("B") && !done.contains("A"));
        assert_eq!(done.line_of("B"), Some(3));
        assert_eq!(done.record("A.1.1").unwrap()["commit"], "abc123");
        done.append("C", &parse_map(r#"{"id":"C","title":"c"}"#).unwrap());
        assert!(done.contains("C"));
        assert_eq!(done.pending_text(), "\n{\"id\":\"C\",\"title\":\"c\"}\n");
        assert_eq!(done.ids().collect::<Vec<_>>(), ["A.1.1", "B", "C"]);
        assert_eq!(
            DoneLog::parse("tasks-done.jsonl", b"{\"title\":\"x\"}\n")
                .unwrap_err()
                .to_string(),
            "tasks-done.jsonl:1: missing field `id`"
        );
    }
}
