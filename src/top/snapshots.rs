//! Frame snapshots of `ralph top`: each scenario's sources are made by
//! hand, drawn on ratatui's test backend at 80×24, and compared with
//! the frame kept in `src/top/snapshots/<name>.txt`. After a deliberate
//! change to the view, `RALPH_BLESS=1 cargo test --lib top::` writes the
//! frames again; review them with `git diff`.

use std::rc::Rc;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

use super::digest::Digest;
use super::live::{Action, press};
use super::model::{Snapshot, Sources, WorkerSource};
use super::read::Details;
use super::view::{self, Cursor, Overlay, Panel};
use crate::events::Event;
use crate::state::{Phase, Polling, State, TaskProgress, WaitReason, Waiting};
use crate::task::Queue;

const NOW: &str = "2026-11-27T10:05:00Z";
const RUN: &str = "20261127T100000Z-4242";

fn now() -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(NOW).unwrap().to_utc()
}

fn event(at: &str, task: Option<&str>, phase: &str, status: &str, detail: &str) -> Event {
    Event {
        timestamp: format!("2026-11-27T{at}Z"),
        run_id: RUN.into(),
        task_id: task.map(str::to_owned),
        iteration: 1,
        phase: phase.into(),
        status: status.into(),
        detail: detail.into(),
        ..Event::default()
    }
}

/// A run that started at 10:00 on main and merged A.1.
fn history() -> Vec<Event> {
    let mut started = event("10:00:00", None, "run", "started", "on main, agent claude");
    let extra = json!({"base": "main", "agent": "claude", "max_iterations": 50});
    started.extra = extra.as_object().cloned().unwrap();
    let mut spent = event(
        "10:01:10",
        Some("A.1"),
        "iteration",
        "ok",
        "exit code 0 in 70s",
    );
    let usage = json!({"input_tokens": 41_000, "output_tokens": 2_300, "cost_usd": 0.42});
    spent.extra = usage.as_object().cloned().unwrap();
    let mut failed = event(
        "10:03:20",
        Some("A.2"),
        "iteration",
        "exit",
        "exit code 1 in 80s",
    );
    failed.extra = usage.as_object().cloned().unwrap();
    vec![
        started,
        event(
            "10:00:01",
            Some("A.1"),
            "claim",
            "ok",
            "created branch task/A.1",
        ),
        spent,
        event(
            "10:01:12",
            Some("A.1"),
            "verify",
            "ok",
            "cargo test: exit code 0",
        ),
        event(
            "10:01:13",
            Some("A.1"),
            "merge",
            "ok",
            "squash-merged into main",
        ),
        event(
            "10:01:14",
            Some("A.2"),
            "claim",
            "ok",
            "created branch task/A.2",
        ),
        failed,
    ]
}

const TASKS: &str = r#"{"id":"A","title":"build the parser","status":"pending","leaf":false}
{"id":"A.2","title":"parse nested lists","status":"active","leaf":true}
{"id":"A.3","title":"report errors with line numbers","status":"pending","leaf":true}
{"id":"B","title":"write the docs","status":"pending","leaf":true}
{"id":"C","title":"set up CI","status":"blocked","leaf":true,"blocked_reason":"needs a token"}
"#;
const DONE: &str = r#"{"id":"A.1","title":"tokenize the input","status":"complete","leaf":true}
"#;

/// State mid-iteration on `task` since `since`, its `iterations` so far.
fn working(task: &str, role: &str, iterations: u64, since: &str) -> State {
    let progress = TaskProgress {
        iterations,
        iteration_started: Some(format!("2026-11-27T{since}Z")),
        ..TaskProgress::default()
    };
    State {
        run_id: RUN.into(),
        updated: "2026-11-27T10:04:59Z".into(),
        current_task: Some(task.into()),
        role: Some(role.into()),
        base: Some("main".into()),
        phase: Phase::Agent,
        tasks: [(task.to_owned(), progress)].into(),
        ..State::default()
    }
}

fn sources(state: State, tasks: &str, done: &str, events: Vec<Event>) -> Sources {
    let queue = Queue::parse(tasks.as_bytes(), done.as_bytes());
    let rows = queue.as_ref().map(super::model::rows).unwrap_or_default();
    let mut digest = Digest::default();
    for event in events {
        digest.add(event);
    }
    Sources {
        live: Some(crate::run_lock::Holder {
            pid: 4242,
            since: "2026-11-27T10:00:00Z".into(),
            run_id: RUN.into(),
        }),
        state,
        workers: Vec::new(),
        activity: None,
        rows: Rc::new(rows),
        queue: Rc::new(queue.map_err(|e| e.to_string())),
        digest: Rc::new(digest),
        stop_asked: false,
        shared: None,
        result: None,
    }
}

/// One worker on A.2, mid-iteration, in the usual queue and history.
fn mid_iteration() -> Sources {
    sources(
        working("A.2", "debugger", 2, "10:03:30"),
        TASKS,
        DONE,
        history(),
    )
}

/// The frame of `sources` as `ui` has it, on ratatui's test backend.
fn frame(sources: &Sources, ui: &Cursor, width: u16, height: u16) -> String {
    let snapshot = Snapshot::of(sources, now());
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| view::draw(frame.area(), frame.buffer_mut(), &snapshot, ui))
        .unwrap();
    view::text(terminal.backend().buffer())
}

/// Compares `frame` with the kept snapshot `name` (or keeps it, blessed).
fn check(name: &str, frame: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/top/snapshots")
        .join(format!("{name}.txt"));
    if std::env::var_os("RALPH_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, frame).unwrap();
        return;
    }
    let kept = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "no snapshot {}: RALPH_BLESS=1 cargo test --lib top:: writes it\n{frame}",
            path.display()
        )
    });
    assert_eq!(
        frame,
        kept,
        "frame {name} differs from {}:\n{frame}",
        path.display()
    );
}

#[test]
fn one_worker_mid_iteration() {
    let mut sources = sources(
        working("A.2", "debugger", 2, "10:03:30"),
        TASKS,
        DONE,
        history(),
    );
    sources.activity = Some("running cargo test -p parser".into());
    let frame = frame(&sources, &Cursor::default(), 80, 24);
    check("one_worker", &frame);
    for shown in [
        "A.2",
        "debugger",
        "1m30s",
        "running cargo test",
        "iterations 2 of 50",
    ] {
        assert!(frame.contains(shown), "{shown} missing:\n{frame}");
    }
}

#[test]
fn three_workers() {
    let mut state = working("A.2", "debugger", 2, "10:03:30");
    state.current_task = None;
    let mut sources = sources(state, TASKS, DONE, history());
    let worker = |task: &str, role: &str, n: u64, since: &str, doing: &str| WorkerSource {
        task: task.into(),
        state: working(task, role, n, since),
        activity: Some(doing.into()),
    };
    sources.workers = vec![
        worker(
            "A.2",
            "debugger",
            2,
            "10:03:30",
            "error[E0308]: mismatched types",
        ),
        worker("A.3", "implementer", 1, "10:04:10", "editing src/errors.rs"),
        worker("B", "implementer", 1, "10:04:40", "writing docs/usage.md"),
    ];
    let frame = frame(&sources, &Cursor::default(), 80, 24);
    check("three_workers", &frame);
    assert!(frame.contains("workers (3)"), "{frame}");
}

#[test]
fn idle_polling() {
    let mut state = State {
        run_id: RUN.into(),
        phase: Phase::Idle,
        polling: Some(Polling {
            every: "30s".into(),
            next_look: "2026-11-27T10:05:21Z".into(),
        }),
        ..State::default()
    };
    state.updated = "2026-11-27T10:04:51Z".into();
    let sources = sources(state, "", DONE, history());
    let frame = frame(&sources, &Cursor::default(), 80, 24);
    check("idle_polling", &frame);
    assert!(
        frame.contains("idle, polling every 30s, next look at 2026-11-27T10:05:21Z"),
        "{frame}"
    );
}

/// With no task under way, the workers panel says what the run does:
/// its checks, a merge, the wait for work, the pick of the next task.
#[test]
fn no_task_under_way_says_what_the_run_does() {
    for (phase, said) in [
        (
            Phase::Verify,
            "no task under way: the run's checks (verify.run) are running",
        ),
        (
            Phase::Merge,
            "no task under way: a task is being merged into the base",
        ),
        (
            Phase::Between,
            "no task under way: between tasks: the next one is being picked",
        ),
    ] {
        let mut state = working("A.2", "debugger", 2, "10:03:30");
        state.current_task = None;
        state.phase = phase;
        let sources = sources(state, TASKS, DONE, history());
        let frame = frame(&sources, &Cursor::default(), 100, 24);
        assert!(frame.contains(said), "{phase:?}: {frame}");
    }
}

#[test]
fn waiting_for_a_usage_limit() {
    let mut state = working("A.2", "debugger", 2, "10:03:30");
    state.phase = Phase::Between;
    state.waiting = Some(Waiting {
        why: WaitReason::UsageLimit,
        task: "A.2".into(),
        until: "2026-11-27T11:00:00Z".into(),
    });
    let frame = frame(
        &sources(state, TASKS, DONE, history()),
        &Cursor::default(),
        80,
        24,
    );
    check("usage_limit", &frame);
    assert!(
        frame.contains("waiting for a usage limit until 2026-11-27T11:00:00Z"),
        "{frame}"
    );
    assert!(frame.contains("limit"), "{frame}");
}

#[test]
fn a_crashed_run() {
    let mut sources = sources(
        working("A.2", "debugger", 2, "10:03:30"),
        TASKS,
        DONE,
        history(),
    );
    sources.live = None;
    let frame = frame(&sources, &Cursor::default(), 80, 24);
    check("crashed", &frame);
    assert!(
        frame.contains("not running, last seen 2026-11-27T10:04:59Z"),
        "{frame}"
    );
    assert!(frame.contains("without a result (killed"), "{frame}");
    assert!(frame.contains("no task under way"), "{frame}");
}

#[test]
fn a_project_with_no_run_yet() {
    let mut sources = sources(State::default(), TASKS, "", Vec::new());
    sources.live = None;
    let frame = frame(&sources, &Cursor::default(), 80, 24);
    check("no_run", &frame);
    assert!(frame.contains("no run yet in this project"), "{frame}");
}

/// 100 parents of 99 tasks each, one archived per parent.
fn ten_thousand() -> (String, String) {
    let (mut tasks, mut done) = (String::new(), String::new());
    for parent in 1..=100 {
        tasks.push_str(&format!(
            "{{\"id\":\"P{parent}\",\"title\":\"area {parent}\",\"status\":\"pending\",\"leaf\":false}}\n"
        ));
        done.push_str(&format!(
            "{{\"id\":\"P{parent}.1\",\"title\":\"first of area {parent}\",\"status\":\"complete\",\"leaf\":true}}\n"
        ));
        for child in 2..=100 {
            tasks.push_str(&format!(
                "{{\"id\":\"P{parent}.{child}\",\"title\":\"step {child} of area {parent}\",\"status\":\"pending\",\"leaf\":true}}\n"
            ));
        }
    }
    (tasks, done)
}

#[test]
fn a_queue_of_ten_thousand_tasks_scrolls_to_the_selection() {
    let (tasks, done) = ten_thousand();
    let sources = sources(
        working("P1.2", "implementer", 1, "10:04:00"),
        &tasks,
        &done,
        history(),
    );
    let mut ui = Cursor {
        focus: Panel::Queue,
        ..Cursor::default()
    };
    let snapshot = Snapshot::of(&sources, now());
    assert_eq!(snapshot.queue.len(), 10_100);
    // Down to the 5,001st row, through the keys.
    for _ in 0..500 {
        press(
            &mut ui,
            &snapshot,
            key(ratatui::crossterm::event::KeyCode::PageDown),
        );
    }
    assert_eq!(ui.row(), 5000);
    let frame = frame(&sources, &ui, 80, 24);
    check("ten_thousand", &frame);
    assert!(frame.contains("10000 tasks, 100 archived"), "{frame}");
    assert!(frame.contains("P50.51"), "{frame}");
}

fn key(code: ratatui::crossterm::event::KeyCode) -> ratatui::crossterm::event::KeyEvent {
    ratatui::crossterm::event::KeyEvent::from(code)
}

#[test]
fn enter_shows_the_tasks_log_and_last_failure_and_esc_closes_it() {
    use ratatui::crossterm::event::KeyCode;
    let sources = mid_iteration();
    let snapshot = Snapshot::of(&sources, now());
    let mut ui = Cursor::default();
    assert_eq!(
        press(&mut ui, &snapshot, key(KeyCode::Enter)),
        Action::Details("A.2".into())
    );
    ui.overlay = Overlay::Details(Details {
        task: "A.2".into(),
        log: Some(".ralph/logs/7-A.2.log".into()),
        tail: vec![
            "test parse::nested ... FAILED".into(),
            "error: 1 test failed".into(),
        ],
        evidence: Some("exit: the agent failed with exit code 1 (log: .ralph/logs/7-A.2.log)\nthread 'main' panicked at src/parse.rs:42: nested brackets past the limit of the parser".into()),
    });
    let frame = frame(&sources, &ui, 80, 24);
    check("details", &frame);
    // A long line wraps, a line break is one: nothing cut, no `\n` written.
    assert!(!frame.contains("\\n"), "{frame}");
    assert!(frame.contains("of the parser"), "{frame}");
    assert!(frame.contains("7-A.2.log)"), "{frame}");
    assert_eq!(press(&mut ui, &snapshot, key(KeyCode::Esc)), Action::Stay);
    assert_eq!(ui.overlay, Overlay::None);
}

#[test]
fn the_keys_move_switch_panels_ask_before_stopping_and_quit() {
    use ratatui::crossterm::event::KeyCode;
    let sources = mid_iteration();
    let snapshot = Snapshot::of(&sources, now());
    let mut ui = Cursor::default();
    press(&mut ui, &snapshot, key(KeyCode::Tab));
    assert_eq!(ui.focus, Panel::Queue);
    press(&mut ui, &snapshot, key(KeyCode::End));
    assert_eq!(ui.row(), snapshot.queue.len() - 1);
    assert_eq!(ui.task(&snapshot), Some("C"));
    press(&mut ui, &snapshot, key(KeyCode::Up));
    assert_eq!(ui.task(&snapshot), Some("B"));
    press(&mut ui, &snapshot, key(KeyCode::BackTab));
    assert_eq!(ui.focus, Panel::Workers);
    press(&mut ui, &snapshot, key(KeyCode::Char('?')));
    check("help", &frame(&sources, &ui, 80, 24));
    press(&mut ui, &snapshot, key(KeyCode::Esc));
    // `s` asks first; anything but `y` goes back.
    assert_eq!(
        press(&mut ui, &snapshot, key(KeyCode::Char('s'))),
        Action::Stay
    );
    assert_eq!(ui.overlay, Overlay::ConfirmStop);
    assert_eq!(
        press(&mut ui, &snapshot, key(KeyCode::Char('n'))),
        Action::Stay
    );
    assert_eq!(ui.overlay, Overlay::None);
    press(&mut ui, &snapshot, key(KeyCode::Char('s')));
    assert_eq!(
        press(&mut ui, &snapshot, key(KeyCode::Char('y'))),
        Action::Stop
    );
    // `q` quits, also from over a box.
    ui.overlay = Overlay::Said("created .stop".into());
    assert_eq!(
        press(&mut ui, &snapshot, key(KeyCode::Char('q'))),
        Action::Quit
    );
    let control_c = ratatui::crossterm::event::KeyEvent::new(
        KeyCode::Char('c'),
        ratatui::crossterm::event::KeyModifiers::CONTROL,
    );
    assert_eq!(
        press(&mut Cursor::default(), &snapshot, control_c),
        Action::Quit
    );
}

#[test]
fn a_narrow_or_short_terminal_still_draws() {
    let sources = mid_iteration();
    for (width, height) in [(20, 6), (1, 1), (200, 60), (80, 10)] {
        let frame = frame(&sources, &Cursor::default(), width, height);
        assert_eq!(frame.lines().count(), usize::from(height));
    }
}

#[test]
fn a_structured_backend_says_what_its_agent_does_in_this_iteration() {
    let mut state = working("A.2", "debugger", 2, "10:03:30");
    state.iteration = 3;
    let doing = |iteration: u64| {
        let mut events = history();
        let mut agent = event(
            "10:04:50",
            Some("A.2"),
            "agent",
            "command",
            "running `cargo test`",
        );
        agent.iteration = iteration;
        events.push(agent);
        let mut sources = sources(state.clone(), TASKS, DONE, events);
        sources.activity = Some("the log's last line".into());
        Snapshot::of(&sources, now()).workers[0].activity.clone()
    };
    assert_eq!(doing(3), "running `cargo test`");
    // An earlier iteration's command is not what it does now.
    assert_eq!(doing(2), "the log's last line");
}
