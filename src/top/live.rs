//! The full-screen terminal of `ralph top`: reads the files at least once
//! a second, draws when something changed, and answers the keys. The
//! terminal is restored on `q`, on a panic (ratatui's hook) and on SIGTERM
//! or SIGHUP (the handler asks the loop to end); a terminal that hung up
//! ends it too.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::model::Snapshot;
use super::read::Reader;
use super::view::{self, Cursor, Overlay, Panel};
use crate::paths::Paths;

/// How often the files are read again.
const REFRESH: Duration = Duration::from_secs(1);

/// How long one wait for a key lasts: also how soon a signal is seen.
const TICK: Duration = Duration::from_millis(200);

/// Lines of a task's log the details show.
const DETAIL_LINES: usize = 200;

/// What a key asks for.
#[derive(Debug, PartialEq)]
pub(crate) enum Action {
    /// Nothing beyond what the key did to the view.
    Stay,
    /// End `ralph top`.
    Quit,
    /// Ask the run to stop (`.stop`).
    Stop,
    /// Show the details of this task.
    Details(String),
}

/// Runs the view until `q`, Ctrl-C or a signal.
pub(crate) fn run(paths: &Paths) -> std::io::Result<()> {
    let ended = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&ended);
    // SIGINT, SIGTERM and SIGHUP end the loop, which restores the terminal.
    let _ = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst));
    let mut terminal = ratatui::try_init()?;
    let result = live(&mut terminal, paths, &ended);
    ratatui::restore();
    result
}

fn live(
    terminal: &mut ratatui::DefaultTerminal,
    paths: &Paths,
    ended: &AtomicBool,
) -> std::io::Result<()> {
    let mut reader = Reader::new(paths.clone());
    let mut ui = Cursor::default();
    let (sources, _) = reader.read();
    let mut snapshot = Snapshot::of(&sources, chrono::Utc::now());
    let mut read_at = Instant::now();
    let mut dirty = true;
    while !ended.load(Ordering::SeqCst) {
        if read_at.elapsed() >= REFRESH {
            let started = Instant::now();
            let (sources, changed) = reader.read();
            let read = started.elapsed();
            let next = Snapshot::of(&sources, chrono::Utc::now());
            dirty |= next != snapshot;
            snapshot = next;
            read_at = Instant::now();
            let ms = crate::trace::ms;
            tracing::debug!(
                changed,
                read_ms = ms(read),
                model_ms = ms(started.elapsed() - read),
                "ralph top read the files"
            );
            if let Overlay::Details(details) = &ui.overlay {
                let fresh = reader.details(&details.task, DETAIL_LINES);
                dirty |= fresh != *details;
                ui.overlay = Overlay::Details(fresh);
            }
        }
        if dirty {
            let started = Instant::now();
            terminal.draw(|frame| view::draw(frame.area(), frame.buffer_mut(), &snapshot, &ui))?;
            let draw_ms = crate::trace::ms(started.elapsed());
            tracing::debug!(draw_ms, "ralph top drew a frame");
            dirty = false;
        }
        match input(TICK)? {
            Input::Quiet => continue,
            Input::HungUp => break,
            Input::Ready => {}
        }
        // Every event crossterm has read, not only the first.
        while event::poll(Duration::ZERO)? {
            match event::read()? {
                Event::Key(key) if key.kind == KeyEventKind::Press => {
                    dirty = true;
                    match press(&mut ui, &snapshot, key) {
                        Action::Stay => {}
                        Action::Quit => return Ok(()),
                        Action::Stop => ui.overlay = Overlay::Said(ask_stop(paths)),
                        Action::Details(task) => {
                            ui.overlay = Overlay::Details(reader.details(&task, DETAIL_LINES));
                        }
                    }
                }
                Event::Resize(..) => dirty = true,
                _ => {}
            }
        }
    }
    Ok(())
}

/// What the terminal has for `ralph top`.
enum Input {
    /// Nothing within the wait.
    Quiet,
    /// Bytes to read, or a signal (a resize) woke the wait.
    Ready,
    /// The terminal is gone (its window closed, the ssh link dropped).
    HungUp,
}

/// Waits up to `timeout` for the terminal (standard input) to have
/// something. Asked here, not of crossterm: crossterm reads a hung-up
/// terminal's end of file again and again without returning.
fn input(timeout: Duration) -> std::io::Result<Input> {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    let stdin = std::io::stdin();
    let mut fds = [PollFd::new(
        std::os::fd::AsFd::as_fd(&stdin),
        PollFlags::POLLIN,
    )];
    let millis = u16::try_from(timeout.as_millis()).unwrap_or(u16::MAX);
    match poll(&mut fds, PollTimeout::from(millis)) {
        Ok(0) => Ok(Input::Quiet),
        Ok(_) => {
            let events = fds[0].revents().unwrap_or(PollFlags::empty());
            let gone = PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL;
            Ok(match events.intersects(gone) {
                true => Input::HungUp,
                false => Input::Ready,
            })
        }
        Err(nix::errno::Errno::EINTR) => Ok(Input::Ready),
        Err(errno) => Err(errno.into()),
    }
}

/// Creates `.stop`, as `ralph stop` does, and says so.
fn ask_stop(paths: &Paths) -> String {
    match crate::files::own::replace(paths.project(), &paths.stop(), b"") {
        Ok(()) => format!(
            "created {}: the run stops after its current iterations",
            crate::paths::STOP_FILE
        ),
        Err(err) => format!("cannot create {}: {err}", paths.stop().display()),
    }
}

/// What `key` does to `ui`, and what it asks for beyond it.
pub(crate) fn press(ui: &mut Cursor, snapshot: &Snapshot, key: KeyEvent) -> Action {
    let control = key.modifiers.contains(KeyModifiers::CONTROL);
    // `q` quits whatever is open.
    if (control && key.code == KeyCode::Char('c')) || key.code == KeyCode::Char('q') {
        return Action::Quit;
    }
    match (&ui.overlay, key.code) {
        (Overlay::ConfirmStop, KeyCode::Char('y' | 'Y')) => {
            ui.overlay = Overlay::None;
            return Action::Stop;
        }
        (Overlay::ConfirmStop | Overlay::Said(_), _)
        | (
            Overlay::Help | Overlay::Details(_),
            KeyCode::Esc | KeyCode::Enter | KeyCode::Char('?'),
        ) => {
            ui.overlay = Overlay::None;
            return Action::Stay;
        }
        _ => {}
    }
    let rows = ui.rows(snapshot);
    match key.code {
        KeyCode::Char('?') => ui.overlay = Overlay::Help,
        KeyCode::Char('s') => ui.overlay = Overlay::ConfirmStop,
        KeyCode::Esc => ui.overlay = Overlay::None,
        KeyCode::Up | KeyCode::Char('k') => ui.step(-1, rows),
        KeyCode::Down | KeyCode::Char('j') => ui.step(1, rows),
        KeyCode::PageUp => ui.step(-10, rows),
        KeyCode::PageDown => ui.step(10, rows),
        KeyCode::Home => ui.step(isize::MIN, rows),
        KeyCode::End => ui.step(isize::MAX, rows),
        KeyCode::Tab => ui.focus = ui.focus.next(),
        KeyCode::BackTab => ui.focus = ui.focus.next().next(),
        KeyCode::Left => ui.focus = Panel::Queue,
        KeyCode::Right => ui.focus = Panel::Events,
        KeyCode::Enter => {
            if let Some(task) = ui.task(snapshot) {
                return Action::Details(task.to_owned());
            }
        }
        _ => {}
    }
    Action::Stay
}
