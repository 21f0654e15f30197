//! `ralph top`: one frame (`--once`) of real runs from start to end, a
//! killed run, a usage-limit wait and parallel workers; then the live
//! view in a real terminal (tmux) beside a scripted run, quit with `q`
//! and ended by SIGTERM, each leaving the terminal as it was.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{RALPH, TestProject, Tool, pinned_command, skip_without, wait_for};

fn pending(id: &str) -> String {
    format!(r#"{{"id":"{id}","title":"task {id}","status":"pending","leaf":true}}"#)
}

/// An agent that says what it does, waits for `$REC/go` (at most 20 s),
/// then finishes its task.
const WAITS_FOR_GO: &str = r#"echo "busy on $RALPH_TASK_ID"
i=0
while [ ! -e "$REC/go" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done
work "$RALPH_TASK_ID.txt" done
ralph task complete "$RALPH_TASK_ID" > /dev/null
"#;

fn start(command: &mut Command) -> Child {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ralph run")
}

/// `ralph top --once` in `p`.
fn frame(p: &TestProject) -> String {
    let run = p.ralph(&["top", "--once"]);
    assert_eq!(run.code, 0, "{run:#?}");
    run.stdout
}

/// The first frame (within 30 s) of which `ready` holds.
#[track_caller]
fn frame_when(p: &TestProject, ready: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let frame = frame(p);
        if ready(&frame) {
            return frame;
        }
        assert!(
            Instant::now() < deadline,
            "never seen; last frame:\n{frame}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn one_frame_follows_a_run_from_its_task_to_its_end() {
    let p = TestProject::new()
        .task(&pending("A"))
        .task(&pending("B"))
        .git_init()
        .agent(WAITS_FOR_GO);
    let fresh = frame(&p);
    assert!(fresh.contains("no run yet in this project"), "{fresh}");
    assert!(fresh.contains("queue (2 tasks, 0 archived)"), "{fresh}");
    assert_eq!(fresh.lines().count(), 24, "80×24 by default:\n{fresh}");
    let run = start(&mut p.run_command(&[]));
    let busy = frame_when(&p, |f| f.contains("busy on A"));
    assert!(busy.contains("│working"), "{busy}");
    assert!(busy.contains("│A        task A"), "{busy}");
    assert!(busy.contains(" agent "), "{busy}");
    assert!(busy.contains("▶ A task A"), "{busy}");
    std::fs::write(p.aux().join("rec/go"), "").unwrap();
    let run = wait_for(run, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    let ended = frame(&p);
    assert!(ended.contains("not running, last seen"), "{ended}");
    assert!(ended.contains("ended drained"), "{ended}");
    assert!(ended.contains("tasks 2 done, 0 left, 0 blocked"), "{ended}");
    assert!(ended.contains("iterations 2 of 50"), "{ended}");
    assert!(
        ended.contains("A merged: squash-merged into main"),
        "{ended}"
    );
    // Another size, from the environment.
    let mut wide = p.ralph_command(&["top", "--once"]);
    wide.env("COLUMNS", "120").env("LINES", "40");
    let wide = crate::support::finish(wide, 30);
    assert_eq!(wide.stdout.lines().count(), 40, "{wide:#?}");
    assert!(wide.stdout.lines().all(|line| line.chars().count() <= 120));
}

#[test]
fn a_killed_run_reads_as_not_running_with_when_it_was_last_seen() {
    let p = TestProject::new()
        .task(&pending("A"))
        .git_init()
        .agent(WAITS_FOR_GO);
    let mut run = start(&mut p.run_command(&[]));
    frame_when(&p, |f| f.contains("busy on A"));
    run.kill().unwrap();
    run.wait().unwrap();
    // Its agent, left behind, ends itself.
    std::fs::write(p.aux().join("rec/go"), "").unwrap();
    let frame = frame(&p);
    assert!(frame.contains("not running, last seen 20"), "{frame}");
    assert!(frame.contains("without a result (killed"), "{frame}");
    assert!(frame.contains("no task under way"), "{frame}");
}

#[test]
fn parallel_workers_each_have_a_row() {
    let p = TestProject::new()
        .task(&pending("A"))
        .task(&pending("B"))
        .git_init()
        .agent(WAITS_FOR_GO);
    let run = start(&mut p.run_command(&["--workers", "2"]));
    let busy = frame_when(&p, |f| f.contains("busy on A") && f.contains("busy on B"));
    assert!(busy.contains("workers (2)"), "{busy}");
    std::fs::write(p.aux().join("rec/go"), "").unwrap();
    let run = wait_for(run, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    let ended = frame(&p);
    assert!(ended.contains("tasks 2 done"), "{ended}");
}

#[test]
fn a_usage_limit_wait_is_shown_with_its_end_and_kept_in_the_state_while_it_lasts() {
    let p = TestProject::new().task(&pending("A")).git_init();
    p.script(
        "bin/claude",
        r#"reset=$(( $(date +%s) + 600 ))
echo '{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|'$reset'"}'
"#,
    );
    let mut command = p.ralph_command(&["run", "--agent", "claude"]);
    command.env("PATH", p.path_with_aux_bin());
    let run = start(&mut command);
    let waiting = frame_when(&p, |f| f.contains("waiting for a usage limit until"));
    assert!(waiting.contains(" limit "), "the worker's phase: {waiting}");
    let state = p.json(".ralph/state.json");
    assert_eq!(state["waiting"]["why"], "usage_limit", "{state}");
    assert_eq!(state["waiting"]["task"], "A", "{state}");
    p.ralph(&["stop"]).success();
    let run = wait_for(run, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    let state = p.json(".ralph/state.json");
    assert!(state.get("waiting").is_none(), "the wait is over: {state}");
    let waits: Vec<serde_json::Value> = p
        .json_lines(".ralph/events.ndjson")
        .into_iter()
        .filter(|event| event["phase"] == "wait")
        .collect();
    assert_eq!(waits.len(), 1, "{waits:?}");
    assert_eq!(waits[0]["status"], "usage_limit");
    assert_eq!(waits[0]["task_id"], "A");
    assert!(
        waits[0]["wait_seconds"].as_u64().unwrap() > 500,
        "{waits:?}"
    );
}

#[test]
fn without_a_terminal_it_prints_the_status_once() {
    let p = TestProject::new().task(&pending("A")).git_init();
    let run = p.ralph(&["top"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.stdout, p.ralph(&["status"]).stdout);
    assert!(run.stdout.starts_with("run: none live\n"), "{run:#?}");
}

#[test]
fn with_json_it_prints_the_status_as_data_once_or_not() {
    let p = TestProject::new().task(&pending("A")).git_init();
    let status = p.ralph(&["status", "--json"]);
    for args in [&["top", "--json"][..], &["top", "--once", "--json"]] {
        let run = p.ralph(args);
        assert_eq!(run.code, 0, "{args:?}: {run:#?}");
        assert_eq!(run.stdout, status.stdout, "{args:?}");
        assert_eq!(run.json()["live"], false, "{args:?}");
    }
}

/// A tmux server of its own (its socket in the test's folder), killed
/// when dropped.
struct Tmux {
    socket: PathBuf,
    home: PathBuf,
}

impl Tmux {
    fn new(p: &TestProject) -> Tmux {
        Tmux {
            socket: p.aux().join("tmux.sock"),
            home: p.path().to_owned(),
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = pinned_command("tmux", &self.home);
        command
            .arg("-f")
            .arg("/dev/null")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .env("TERM", "xterm-256color");
        command
    }

    #[track_caller]
    fn run(&self, args: &[&str]) -> String {
        let output = self.command(args).output().expect("run tmux");
        assert!(output.status.success(), "tmux {args:?}: {output:?}");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// A window of 100×30 running `script` with `sh`.
    fn start(&self, name: &str, script: &str) {
        self.run(&[
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            "100",
            "-y",
            "30",
            "sh",
            "-c",
            script,
        ]);
    }

    fn capture(&self, name: &str) -> String {
        self.run(&["capture-pane", "-p", "-t", name])
    }

    /// The pane's text once `ready` holds of it (within 30 s).
    #[track_caller]
    fn capture_when(&self, name: &str, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let pane = self.capture(name);
            if ready(&pane) {
                return pane;
            }
            assert!(Instant::now() < deadline, "never seen; the pane:\n{pane}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.command(&["kill-server"]).output();
    }
}

/// The pane's script: `ralph top` (its pid in `top.pid`), then what it
/// exited with and the terminal's modes after it.
fn top_script(p: &TestProject) -> String {
    let aux = p.aux().display();
    format!(
        "cd '{dir}' && sh -c 'echo $$ > {aux}/top.pid; exec {RALPH} top'; echo \"TOP-EXITED $?\"; stty -a > {aux}/stty.txt; sleep 600",
        dir = p.path().display(),
    )
}

/// `ralph top` started in a tmux window of its own in `p`, once it shows
/// its first frame, with its pid.
fn top_in_tmux(p: &TestProject) -> (Tmux, i32) {
    let tmux = Tmux::new(p);
    tmux.start("top", &top_script(p));
    tmux.capture_when("top", |pane| pane.contains("no run yet in this project"));
    (tmux, top_pid(p))
}

/// The pid `ralph top` ran as (`top_script` notes it).
fn top_pid(p: &TestProject) -> i32 {
    let text = std::fs::read_to_string(p.aux().join("top.pid")).unwrap();
    text.trim().parse().unwrap()
}

/// Whether the terminal modes `stty -a` printed are a shell's: echo and
/// line editing on, as before `ralph top` took the terminal raw.
#[track_caller]
fn assert_restored(p: &TestProject, tmux: &Tmux, name: &str) {
    let stty = p.aux().join("stty.txt");
    crate::support::wait_for_file(&stty);
    std::thread::sleep(Duration::from_millis(200));
    let modes = std::fs::read_to_string(&stty).unwrap();
    let words: Vec<&str> = modes.split_whitespace().collect();
    for mode in ["icanon", "echo", "isig"] {
        assert!(
            words.contains(&mode),
            "{mode} is off after ralph top: {modes}"
        );
    }
    let alternate = tmux.run(&["display-message", "-p", "-t", name, "#{alternate_on}"]);
    assert_eq!(alternate.trim(), "0", "still on the alternate screen");
}

#[test]
fn in_a_real_terminal_it_follows_a_run_and_q_restores_the_terminal() {
    if skip_without(Tool::Tmux) {
        return;
    }
    let p = TestProject::new()
        .task(&pending("A"))
        .task(&pending("B"))
        .task(&pending("C"))
        .git_init()
        .agent(
            r#"echo "step 1 of $RALPH_TASK_ID"
sleep 1
if [ "$RALPH_TASK_ID" = B ] && [ "$RALPH_TASK_ITERATION" = 1 ]; then
  echo "error: the parser failed on nested lists"
  exit 1
fi
echo "step 2 of $RALPH_TASK_ID"
sleep 1
work "$RALPH_TASK_ID.txt" done
ralph task complete "$RALPH_TASK_ID" > /dev/null
"#,
        );
    let tmux = Tmux::new(&p);
    tmux.start("top", &top_script(&p));
    tmux.capture_when("top", |pane| pane.contains("no run yet in this project"));
    // B fails once, and waits a second before its retry.
    let run = start(p.run_command(&[]).env("RALPH_RETRY_BACKOFF", "1s"));
    // The task and its progress, then the merges, as they happen.
    let busy = tmux.capture_when("top", |pane| {
        pane.contains("step 1 of A") || pane.contains("step 2 of A")
    });
    assert!(busy.contains("│A "), "{busy}");
    assert!(busy.contains("working"), "{busy}");
    let failed = tmux.capture_when("top", |pane| pane.contains("B failed (exit)"));
    assert!(failed.contains("A merged"), "{failed}");
    let again = tmux.capture_when("top", |pane| pane.contains(" of C"));
    screenshot(&tmux, "top", "top.png");
    assert!(again.contains("B wait retry"), "{again}");
    let run = wait_for(run, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    let ended = tmux.capture_when("top", |pane| {
        pane.contains("B merged") && pane.contains("not running")
    });
    assert!(ended.contains("tasks 3 done, 0 left, 0 blocked"), "{ended}");
    report_screenshot(&p);
    // Keys: `?` lists them, Esc closes, `q` quits.
    tmux.run(&["send-keys", "-t", "top", "?"]);
    tmux.capture_when("top", |pane| pane.contains("these keys"));
    tmux.run(&["send-keys", "-t", "top", "Escape"]);
    tmux.capture_when("top", |pane| !pane.contains("these keys"));
    // `s` asks first, `y` stops the run as `ralph stop` does.
    tmux.run(&["send-keys", "-t", "top", "s"]);
    tmux.capture_when("top", |pane| {
        pane.contains("Stop the run after its current iterations")
    });
    assert!(!p.path().join(".stop").exists());
    tmux.run(&["send-keys", "-t", "top", "y"]);
    tmux.capture_when("top", |pane| pane.contains("created .stop"));
    assert!(p.path().join(".stop").exists());
    std::fs::remove_file(p.path().join(".stop")).unwrap();
    // It follows the window's size.
    tmux.run(&["resize-window", "-t", "top", "-x", "80", "-y", "24"]);
    let small = tmux.capture_when("top", |pane| {
        pane.lines()
            .next()
            .is_some_and(|top| top.chars().count() == 80)
    });
    assert!(
        small.lines().all(|line| line.chars().count() <= 80),
        "{small}"
    );
    tmux.run(&["send-keys", "-t", "top", "q"]);
    let after = tmux.capture_when("top", |pane| pane.contains("TOP-EXITED"));
    assert!(after.contains("TOP-EXITED 0"), "{after}");
    assert!(
        !after.contains("ralph top · run"),
        "the view is gone: {after}"
    );
    assert_restored(&p, &tmux, "top");
    assert!(!running(top_pid(&p)), "ralph top is gone");
}

#[test]
fn in_a_real_terminal_sigterm_ends_it_with_the_terminal_restored() {
    if skip_without(Tool::Tmux) {
        return;
    }
    let p = TestProject::new().task(&pending("A")).git_init();
    let (tmux, pid) = top_in_tmux(&p);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let after = tmux.capture_when("top", |pane| pane.contains("TOP-EXITED"));
    assert!(after.contains("TOP-EXITED 0"), "{after}");
    assert_restored(&p, &tmux, "top");
}

/// With `RALPH_SCREENSHOTS=<folder>` (scripts/screenshots.sh): the pane,
/// colours and all, drawn by headless Chromium into `<folder>/<file>`.
fn screenshot(tmux: &Tmux, name: &str, file: &str) {
    let Some(folder) = std::env::var_os("RALPH_SCREENSHOTS") else {
        return;
    };
    let pane = tmux.run(&["capture-pane", "-e", "-p", "-t", name]);
    let page = Path::new(&folder).join("top.html");
    std::fs::write(&page, crate::support::ansi_page(&pane)).unwrap();
    crate::support::chromium_screenshot(&page, &Path::new(&folder).join(file), (900, 560));
    std::fs::remove_file(page).unwrap();
}

/// With `RALPH_SCREENSHOTS=<folder>`: the run's `ralph report` page, drawn
/// by headless Chromium into `<folder>/report.png`.
fn report_screenshot(p: &TestProject) {
    let Some(folder) = std::env::var_os("RALPH_SCREENSHOTS") else {
        return;
    };
    p.ralph(&["report"]).success();
    let page = p.path().join(".ralph/report.html");
    crate::support::chromium_screenshot(&page, &Path::new(&folder).join("report.png"), (1000, 760));
}

#[test]
fn in_a_real_terminal_closing_the_window_ends_it() {
    if skip_without(Tool::Tmux) {
        return;
    }
    let p = TestProject::new().task(&pending("A")).git_init();
    let (tmux, pid) = top_in_tmux(&p);
    // The window goes, and with it the terminal.
    tmux.run(&["kill-server"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while running(pid) {
        assert!(Instant::now() < deadline, "ralph top outlived its terminal");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether process `pid` runs (a zombie does not: nothing may reap it).
fn running(pid: i32) -> bool {
    let output = Command::new("ps")
        .args(["-o", "stat=", "-p", &pid.to_string()])
        .output()
        .expect("run ps");
    let stat = String::from_utf8_lossy(&output.stdout);
    !stat.trim().is_empty() && !stat.trim().starts_with('Z')
}
