//! `ralph top`: a live view of the run in this project, made only from the
//! files ralph already writes (`.ralph/state.json`, each worker's state,
//! `.ralph/events.ndjson`, the agents' logs, the queue), read-only and
//! without taking any lock: it works from another terminal, over ssh, for
//! a run started by anyone, and for a run that crashed.
//!
//! [`read`] reads the files (each again only when it changed), [`model`]
//! makes a frame's content of them, [`view`] draws it and [`live`] runs
//! the terminal.

mod digest;
mod live;
mod model;
mod read;
mod view;

#[cfg(test)]
mod snapshots;

use crate::paths::Paths;

pub(crate) use live::run;

/// One frame of the view of the project at `paths`, `width` by `height`
/// cells, as text (`ralph top --once`).
pub(crate) fn once(paths: &Paths, width: u16, height: u16) -> String {
    let started = std::time::Instant::now();
    let (sources, _) = read::Reader::new(paths.clone()).read();
    let read = started.elapsed();
    let snapshot = model::Snapshot::of(&sources, chrono::Utc::now());
    let made = started.elapsed();
    let text = frame(&snapshot, &view::Cursor::default(), width, height);
    let ms = crate::trace::ms;
    tracing::debug!(
        read_ms = ms(read),
        model_ms = ms(made - read),
        draw_ms = ms(started.elapsed() - made),
        "ralph top drew a frame"
    );
    text
}

/// `snapshot` drawn as `ui` has it on `width` by `height` cells, as text.
fn frame(snapshot: &model::Snapshot, ui: &view::Cursor, width: u16, height: u16) -> String {
    let area = ratatui::layout::Rect::new(0, 0, width, height);
    let mut buf = ratatui::buffer::Buffer::empty(area);
    view::draw(area, &mut buf, snapshot, ui);
    view::text(&buf)
}
