//! Drawing one frame of `ralph top` into a ratatui buffer: the run at the
//! top, a row per worker, the queue's tree beside the recent events, the
//! keys at the bottom, and over them the details, the help or the stop
//! question. Only the rows in view are drawn, so a queue of 10,000 tasks
//! costs no more than one of ten.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget, Wrap};

use super::model::{RunState, Snapshot, Tone, span};
use super::read::Details;
use crate::task::Status;
use crate::text::pack;

/// The panels the arrows move in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Panel {
    /// The workers' rows.
    #[default]
    Workers,
    /// The queue's tree.
    Queue,
    /// The recent events.
    Events,
}

impl Panel {
    /// The next panel, as Tab goes.
    pub(crate) fn next(self) -> Panel {
        match self {
            Panel::Workers => Panel::Queue,
            Panel::Queue => Panel::Events,
            Panel::Events => Panel::Workers,
        }
    }
}

/// What is drawn over the panels.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) enum Overlay {
    /// Nothing.
    #[default]
    None,
    /// The keys (`?`).
    Help,
    /// A task's log and last failure (Enter).
    Details(Details),
    /// "Stop the run?" (`s`).
    ConfirmStop,
    /// A line of news: the stop was asked, or could not be.
    Said(String),
}

/// Where the person is in the view.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Cursor {
    /// The panel the arrows move in.
    pub focus: Panel,
    /// The selected row of each panel.
    pub selected: [usize; 3],
    /// What is drawn over the panels.
    pub overlay: Overlay,
}

impl Cursor {
    /// The selected row of the focused panel.
    pub(crate) fn row(&self) -> usize {
        self.selected[self.focus as usize]
    }

    /// Moves the selection of the focused panel by `by` rows, within
    /// `rows` rows.
    pub(crate) fn step(&mut self, by: isize, rows: usize) {
        let row = &mut self.selected[self.focus as usize];
        let moved = row.saturating_add_signed(by);
        *row = moved.min(rows.saturating_sub(1));
    }

    /// The task of the selected row of the focused panel, if any.
    pub(crate) fn task<'s>(&self, snapshot: &'s Snapshot) -> Option<&'s str> {
        let row = self.row();
        match self.focus {
            Panel::Workers => snapshot.workers.get(row).map(|w| w.task.as_str()),
            Panel::Queue => snapshot.queue.get(row).map(|q| q.id.as_str()),
            Panel::Events => (snapshot.events.get(row))
                .map(|e| e.task.as_str())
                .filter(|task| !task.is_empty()),
        }
    }

    /// How many rows the focused panel has.
    pub(crate) fn rows(&self, snapshot: &Snapshot) -> usize {
        match self.focus {
            Panel::Workers => snapshot.workers.len(),
            Panel::Queue => snapshot.queue.len(),
            Panel::Events => snapshot.events.len(),
        }
    }
}

/// The keys, as `?` lists them.
pub(crate) const KEYS: &[(&str, &str)] = &[
    ("q", "quit"),
    ("↑ ↓", "move in the panel (PgUp PgDn, Home End)"),
    ("Tab", "next panel (Shift-Tab back)"),
    ("Enter", "the task's log and last failure"),
    ("s", "stop the run after its current iterations"),
    ("?", "these keys"),
    ("Esc", "close what is open"),
];

/// Draws `snapshot` as `ui` has it into `buf` over `area`.
pub(crate) fn draw(area: Rect, buf: &mut Buffer, snapshot: &Snapshot, ui: &Cursor) {
    // What the run does on two lines at most, its facts on four.
    let width = usize::from(area.width.saturating_sub(2));
    let (state, colour) = state_line(&snapshot.state);
    let mut state = pack(state.split(' '), " ", width.max(1));
    state.truncate(2);
    let facts = (snapshot.facts.iter()).map(|(label, value)| format!("{label} {value}"));
    let mut facts = pack(facts, " · ", width);
    facts.truncate(4);
    let header = 2 + (state.len() + facts.len()) as u16;
    let workers = 3 + snapshot.workers.len().clamp(1, 8) as u16;
    let [top, middle, rest, footer] = Layout::vertical([
        Constraint::Length(header),
        Constraint::Length(workers),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(area);
    let mut lines: Vec<Line> = (state.into_iter())
        .map(|line| Line::styled(line, Style::new().fg(colour).bold()))
        .collect();
    lines.extend(facts.into_iter().map(Line::raw));
    let title = match &snapshot.run_id {
        Some(id) => format!(" ralph top · run {id} "),
        None => " ralph top ".to_owned(),
    };
    Paragraph::new(lines)
        .block(Block::bordered().title(title))
        .render(top, buf);
    draw_workers(middle, buf, snapshot, ui);
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(rest);
    draw_queue(left, buf, snapshot, ui);
    draw_events(right, buf, snapshot, ui);
    let keys = [
        (" q", " quit  "),
        ("↑↓", " move  "),
        ("Tab", " panel  "),
        ("Enter", " details  "),
        ("s", " stop  "),
        ("?", " keys"),
    ];
    let keys = keys.map(|(key, word)| [Span::styled(key, Style::new().bold()), Span::raw(word)]);
    let keys = Line::from_iter(keys.into_iter().flatten());
    Paragraph::new(keys).render(footer, buf);
    draw_overlay(area, buf, &ui.overlay);
}

/// What the run does, in words and colour.
fn state_line(state: &RunState) -> (String, Color) {
    match state {
        RunState::NoRun => (
            "no run yet in this project: `ralph run` starts one".to_owned(),
            Color::DarkGray,
        ),
        RunState::NotRunning { last_seen, ended } => (
            match ended {
                Some(ended) => format!("not running, last seen {last_seen}; it ended {ended}"),
                None => format!(
                    "not running, last seen {last_seen}; it ended without a result (killed or crashed)"
                ),
            },
            Color::Red,
        ),
        RunState::Working => ("working".to_owned(), Color::Green),
        RunState::Stopping => (
            "stopping after the current iterations (.stop)".to_owned(),
            Color::Magenta,
        ),
        RunState::Idle { every, next_look } => (
            format!("idle, polling every {every}, next look at {next_look}"),
            Color::Blue,
        ),
        RunState::Waiting { until } => (
            format!("waiting for a usage limit until {until}"),
            Color::Yellow,
        ),
    }
}

/// Draws the block of panel `which` over `area`, its border bright when it
/// has the focus; returns the area inside it and whether it has the focus.
fn panel(area: Rect, buf: &mut Buffer, which: Panel, title: String, ui: &Cursor) -> (Rect, bool) {
    let focused = ui.focus == which;
    let style = match focused {
        true => Style::new().fg(Color::Cyan),
        false => Style::new().fg(Color::DarkGray),
    };
    let block = Block::new()
        .borders(Borders::ALL)
        .border_style(style)
        .title(Span::styled(title, Style::new().bold()));
    let inner = block.inner(area);
    block.render(area, buf);
    (inner, focused)
}

/// The first row to show of `rows` so that `selected` is in a window of
/// `height` rows.
fn scroll(selected: usize, height: usize) -> usize {
    selected.saturating_sub(height.saturating_sub(1))
}

fn draw_workers(area: Rect, buf: &mut Buffer, snapshot: &Snapshot, ui: &Cursor) {
    let heading = format!(" workers ({}) ", snapshot.workers.len());
    let (inner, focused) = panel(area, buf, Panel::Workers, heading, ui);
    // The title takes two fifths of what the fixed columns leave, what
    // the agent does the rest.
    let rest = usize::from(inner.width).saturating_sub(39);
    let title = rest * 2 / 5;
    let header = [
        ("task", 8),
        ("title", title),
        ("role", 11),
        ("it", 3),
        ("phase", 6),
        ("time", 6),
    ];
    let mut lines = vec![Line::styled(
        row_text(&header, "doing"),
        Style::new().add_modifier(Modifier::UNDERLINED),
    )];
    if snapshot.workers.is_empty() {
        lines.push(Line::styled(
            snapshot.no_task.clone(),
            Style::new().fg(Color::DarkGray),
        ));
    }
    let height = inner.height.saturating_sub(1) as usize;
    let first = scroll(ui.selected[Panel::Workers as usize], height);
    for (index, worker) in snapshot.workers.iter().enumerate().skip(first).take(height) {
        let time = worker.seconds.map(span).unwrap_or_else(|| "-".to_owned());
        let text = row_text(
            &[
                (&worker.task, 8),
                (&worker.title, title),
                (&worker.role, 11),
                (&worker.iteration.to_string(), 3),
                (&worker.phase, 6),
                (&time, 6),
            ],
            &worker.activity,
        );
        let style = selected_style(focused && index == ui.row());
        lines.push(Line::styled(text, style));
    }
    Paragraph::new(lines).render(inner, buf);
}

/// Columns of at most the given widths, then the rest.
fn row_text(columns: &[(&str, usize)], rest: &str) -> String {
    let mut text = String::new();
    for (value, width) in columns {
        if *width == 0 {
            continue;
        }
        let value: String = value.chars().take(*width).collect();
        text.push_str(&format!("{value:<width$} "));
    }
    text.push_str(rest);
    text
}

fn selected_style(selected: bool) -> Style {
    match selected {
        true => Style::new().add_modifier(Modifier::REVERSED),
        false => Style::new(),
    }
}

/// A status's mark and colour.
fn mark(status: Option<Status>) -> (&'static str, Color) {
    match status {
        None => ("✓", Color::DarkGray),
        Some(Status::Complete) => ("●", Color::Green),
        Some(Status::Active) => ("▶", Color::Cyan),
        Some(Status::Ready) => ("◆", Color::Blue),
        Some(Status::Blocked) => ("✗", Color::Red),
        Some(Status::Pending) => ("○", Color::Reset),
    }
}

fn draw_queue(area: Rect, buf: &mut Buffer, snapshot: &Snapshot, ui: &Cursor) {
    let heading = format!(" queue ({}) ", snapshot.queue_size);
    let (inner, focused) = panel(area, buf, Panel::Queue, heading, ui);
    if let Some(error) = &snapshot.queue_error {
        Paragraph::new(format!("cannot be read: {error}"))
            .style(Style::new().fg(Color::Red))
            .wrap(Wrap { trim: true })
            .render(inner, buf);
        return;
    }
    if snapshot.queue.is_empty() {
        let empty = "nothing left in tasks.jsonl";
        Paragraph::new(Line::styled(empty, Style::new().fg(Color::DarkGray))).render(inner, buf);
        return;
    }
    let height = inner.height as usize;
    let selected = ui.selected[Panel::Queue as usize];
    let first = scroll(selected, height);
    let lines: Vec<Line> = (snapshot.queue.iter().enumerate().skip(first).take(height))
        .map(|(index, row)| {
            let (mark, colour) = mark(row.status);
            let progress = match row.progress {
                Some((done, total)) => format!(" {done}/{total}"),
                None => String::new(),
            };
            let style = selected_style(focused && index == selected);
            Line::from(vec![
                Span::raw("  ".repeat(row.depth.min(8))),
                Span::styled(mark, Style::new().fg(colour)),
                Span::raw(" "),
                Span::styled(row.id.clone(), Style::new().bold()),
                Span::raw(format!("{progress} {}", row.title)),
            ])
            .style(style)
        })
        .collect();
    Paragraph::new(lines).render(inner, buf);
}

fn draw_events(area: Rect, buf: &mut Buffer, snapshot: &Snapshot, ui: &Cursor) {
    let (inner, focused) = panel(area, buf, Panel::Events, " recent events ".to_owned(), ui);
    let height = inner.height as usize;
    let selected = ui.selected[Panel::Events as usize];
    let first = scroll(selected, height);
    let lines: Vec<Line> = (snapshot.events.iter().enumerate().skip(first).take(height))
        .map(|(index, event)| {
            let colour = match event.tone {
                Tone::Good => Color::Green,
                Tone::Bad => Color::Red,
                Tone::Plain => Color::Reset,
            };
            let mut spans = vec![
                Span::styled(event.time.clone(), Style::new().fg(Color::DarkGray)),
                Span::raw(" "),
            ];
            if !event.task.is_empty() {
                spans.push(Span::styled(
                    format!("{} ", event.task),
                    Style::new().bold(),
                ));
            }
            // What the row cannot hold ends with `…`, never mid-word unsaid.
            let used: usize = spans.iter().map(|span| span.content.chars().count()).sum();
            let room = usize::from(inner.width).saturating_sub(used);
            spans.push(Span::styled(
                ellipsis(&event.text, room),
                Style::new().fg(colour),
            ));
            Line::from(spans).style(selected_style(focused && index == selected))
        })
        .collect();
    Paragraph::new(lines).render(inner, buf);
}

/// A box of `width` by `height` in the middle of `area`, within it.
fn centred(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    }
}

fn draw_overlay(area: Rect, buf: &mut Buffer, overlay: &Overlay) {
    let (title, lines, size): (String, Vec<Line>, (u16, u16)) = match overlay {
        Overlay::None => return,
        Overlay::Help => (
            " keys ".to_owned(),
            KEYS.iter()
                .map(|(key, what)| {
                    Line::from(vec![
                        Span::styled(format!("{key:>6}  "), Style::new().bold()),
                        Span::raw(*what),
                    ])
                })
                .collect(),
            (60, KEYS.len() as u16 + 2),
        ),
        Overlay::ConfirmStop => (
            " stop the run? ".to_owned(),
            vec![
                Line::raw("Stop the run after its current iterations, as `ralph stop`?"),
                Line::styled("y: stop   any other key: go back", Style::new().bold()),
            ],
            (66, 4),
        ),
        Overlay::Said(text) => (
            " ralph top ".to_owned(),
            vec![
                Line::raw(text.clone()),
                Line::styled("any key: go back", Style::new().bold()),
            ],
            (area.width.saturating_sub(4), 5),
        ),
        Overlay::Details(details) => details_lines(details, area),
    };
    let rect = centred(area, size.0, size.1);
    Clear.render(rect, buf);
    Paragraph::new(lines)
        .block(
            Block::bordered()
                .title(title)
                .border_style(Style::new().fg(Color::Cyan)),
        )
        .render(rect, buf);
}

/// The details box of a task: as many of its log's last lines as fit,
/// then its last failure.
fn details_lines(details: &Details, area: Rect) -> (String, Vec<Line<'static>>, (u16, u16)) {
    let bold = Style::new().bold();
    let size = (area.width.saturating_sub(4), area.height.saturating_sub(2));
    // Inside the borders, after a two-space indent: longer lines wrap.
    let width = usize::from(size.0).saturating_sub(4).max(1);
    let indented = |lines: &[String]| -> Vec<Line<'static>> {
        (lines.iter())
            .flat_map(|line| wrap(line, width))
            .map(|row| Line::raw(format!("  {row}")))
            .collect()
    };
    let mut failure = Vec::new();
    match &details.evidence {
        Some(evidence) => {
            failure.push(Line::styled("last failure:", bold.fg(Color::Red)));
            let evidence: Vec<String> = evidence.lines().map(str::to_owned).collect();
            let rows = indented(&evidence);
            let keep = rows.len().saturating_sub(8);
            failure.extend(rows.into_iter().skip(keep));
        }
        None => failure.push(Line::styled("no failure on record", bold)),
    }
    failure.push(Line::styled("Esc: close", Style::new().fg(Color::DarkGray)));
    // Borders, the log's heading, then the failure below.
    let room = usize::from(size.1).saturating_sub(3 + failure.len());
    let mut lines = vec![match &details.log {
        Some(log) => Line::styled(format!("log {log}, last lines:"), bold),
        None => Line::styled("no agent log yet", bold),
    }];
    let rows = indented(&details.tail);
    let keep = rows.len().saturating_sub(room);
    lines.extend(rows.into_iter().skip(keep));
    lines.extend(failure);
    (format!(" {} ", details.task), lines, size)
}

/// `line` in rows of at most `width` characters (at least one row).
fn wrap(line: &str, width: usize) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    chars
        .chunks(width)
        .map(|row| row.iter().collect())
        .collect()
}

/// `text` in at most `width` characters, ending with `…` when cut.
fn ellipsis(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// The text of `buf`, one line per row, trailing blanks cut.
pub(crate) fn text(buf: &Buffer) -> String {
    let area = buf.area;
    let mut out = String::new();
    for y in area.top()..area.bottom() {
        let mut line = String::new();
        for x in area.left()..area.right() {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
