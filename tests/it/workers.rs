//! Parallel workers (`ralph run --workers N`): each task in its own git
//! worktree, merges one at a time into the base, nothing lost or doubled.

use crate::support::{TestProject, Tool, finish, skip_without};

/// A task line: `id`, pending, a leaf, with `deps`.
fn task(id: &str, deps: &[&str]) -> String {
    let deps: Vec<String> = deps.iter().map(|d| format!("\"{d}\"")).collect();
    format!(
        r#"{{"id":"{id}","title":"task {id}","status":"pending","leaf":true,"deps":[{}]}}"#,
        deps.join(",")
    )
}

/// The agent: records its start and end per task (seconds with
/// nanoseconds), works a moment, commits a file of its own and marks the
/// task complete.
const AGENT: &str = r#"echo "start $RALPH_TASK_ID $RALPH_WORKER $(date +%s.%N) $(pwd)" >> "$REC/spans"
sleep 0.3
work "$RALPH_TASK_ID.txt" "$RALPH_TASK_ID"
ralph task complete "$RALPH_TASK_ID" > /dev/null
echo "end $RALPH_TASK_ID $RALPH_WORKER $(date +%s.%N)" >> "$REC/spans"
"#;

fn spans(project: &TestProject) -> Vec<(String, f64, f64)> {
    let text = project.rec("spans");
    let mut spans = Vec::new();
    for line in text.lines().filter(|l| l.starts_with("start ")) {
        let parts: Vec<&str> = line.split(' ').collect();
        let id = parts[1].to_owned();
        let start: f64 = parts[3].parse().unwrap();
        let end = text
            .lines()
            .filter(|l| l.starts_with(&format!("end {id} ")))
            .map(|l| l.split(' ').nth(3).unwrap().parse::<f64>().unwrap())
            .find(|end| *end >= start)
            .unwrap_or(f64::MAX);
        spans.push((id, start, end));
    }
    spans
}

#[test]
fn four_workers_merge_every_task_once_in_parallel_respecting_deps() {
    let mut project = TestProject::new();
    let ids = ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K"];
    for id in ids {
        let deps: &[&str] = match id {
            "E" => &["A"],
            "H" => &["E", "F"],
            "K" => &["J"],
            _ => &[],
        };
        project = project.task(&task(id, deps));
    }
    // L is split by its agent into two children, worked like any task.
    let project = project.task(&task("L", &[]));
    let project = project.git_init().agent(&format!(
        "if [ \"$RALPH_TASK_ID\" = L ]; then ralph task split L 'first half' 'second half' > /dev/null; exit 0; fi\n{AGENT}"
    ));
    let run = finish(
        {
            let mut command = project.run_command(&["--workers", "4"]);
            command.env("RALPH_MAX_ITERATIONS", "40");
            command
        },
        120,
    );
    assert_eq!(run.code, 0, "{run:#?}");
    // Every task merged exactly once, each its own commit on a linear base.
    let log = project.git(&["log", "--format=%s", "main"]);
    for id in ids {
        assert_eq!(
            log.lines()
                .filter(|l| *l == format!("[{id}] task {id}"))
                .count(),
            1,
            "{id}: {log}"
        );
    }
    assert_eq!(project.git(&["rev-list", "--merges", "main"]), "");
    for id in ["L.1", "L.2"] {
        assert_eq!(log.matches(&format!("[{id}] ")).count(), 1, "{id}: {log}");
    }
    let done: Vec<String> = project
        .json_lines("tasks-done.jsonl")
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(done.len(), ids.len() + 3, "{done:?}");
    assert_eq!(project.read("tasks.jsonl"), "");
    // The project's tree is on the base and shows the merged work.
    assert_eq!(project.git(&["branch", "--show-current"]), "main");
    for id in ids {
        assert_eq!(project.read(&format!("{id}.txt")), format!("{id}\n"));
    }
    assert_eq!(project.git(&["status", "--porcelain"]), "");
    // No worktree or task branch left, nor a worktree's folder.
    assert_eq!(project.git(&["worktree", "list"]).lines().count(), 1);
    let left: Vec<_> = std::fs::read_dir(project.path().join(".ralph/worktrees"))
        .map(|dir| dir.map(|entry| entry.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(project.git(&["branch", "--list", "task/*"]), "");
    // Worked side by side, each task by one worker at a time, in its worktree,
    // never before its deps were done.
    let spans = spans(&project);
    assert_eq!(spans.len(), ids.len() + 2, "{spans:?}");
    let overlap = spans
        .iter()
        .any(|(a, s1, e1)| spans.iter().any(|(b, s2, e2)| a != b && s1 < e2 && s2 < e1));
    assert!(overlap, "some tasks ran at once: {spans:?}");
    let end_of = |id: &str| spans.iter().find(|(t, _, _)| t == id).unwrap().2;
    let start_of = |id: &str| spans.iter().find(|(t, _, _)| t == id).unwrap().1;
    assert!(start_of("E") > end_of("A"));
    assert!(start_of("H") > end_of("E") && start_of("H") > end_of("F"));
    for line in project
        .rec("spans")
        .lines()
        .filter(|l| l.starts_with("start "))
    {
        assert!(line.contains("/.ralph/worktrees/"), "{line}");
    }
}

/// Two tasks change the same line: the first to finish merges; the
/// other's squash conflicts with the moved base, it gets the paths as
/// evidence in its own worktree, merges the base there, resolves, and
/// lands. No commit is lost; the other worker is never held up.
#[test]
fn a_conflict_between_workers_is_resolved_in_the_losing_worktree() {
    let project = TestProject::new()
        .file("shared.txt", "base\n")
        .task(&task("A", &[]))
        .task(&task("B", &[]))
        .git_init()
        .agent(
            r#"case "$RALPH_TASK_ID-$RALPH_TASK_ITERATION" in
A-1) work shared.txt A; ralph task complete A > /dev/null ;;
B-1) # B finishes once A is merged, so its squash is the one to conflict.
     until git -C "$RALPH_PROJECT_DIR" log main --format=%s | grep -q '^\[A\]'; do sleep 0.05; done
     work shared.txt B; ralph task complete B > /dev/null ;;
B-*) printf 'A\nB\n' > shared.txt
     git add shared.txt && git commit -q --no-edit
     ralph task complete B > /dev/null ;;
esac
"#,
        );
    let run = finish(project.run_command(&["--workers", "2"]), 120);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.read("shared.txt"), "A\nB\n");
    assert_eq!(
        project.git(&["log", "--format=%s", "main"]),
        "[B] task B\n[A] task A\ninitial commit"
    );
    let result = project.json(".ralph/result.json");
    assert_eq!(result["failures"], serde_json::json!({"merge_conflict": 1}));
    // The agent could not have merged over its worktree's queue links:
    // ralph started the merge, the agent finished it.
    let prompt = std::fs::read_dir(project.path().join(".ralph/prompts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.to_string_lossy().ends_with("-B.md") && !p.to_string_lossy().ends_with("/1-B.md")
        })
        .map(|p| std::fs::read_to_string(p).unwrap())
        .expect("B's second prompt");
    assert!(
        prompt.contains("ralph started merging main into it in this worktree: resolve the conflicts in shared.txt, `git add` them and `git commit` to finish the merge"),
        "{prompt}"
    );
    assert_eq!(project.git(&["worktree", "list"]).lines().count(), 1);
}

/// A project in a subfolder of its repository: `ralph status` reads each
/// worker's state from the same subfolder of its worktree, and a `.stop`
/// in the project's folder ends the run once the workers are done.
#[test]
fn status_and_stop_work_for_the_workers_of_a_project_in_a_subfolder() {
    let project = TestProject::new().file(
        "sub/tasks.jsonl",
        format!(
            "{}\n{}\n{}\n",
            task("A", &[]),
            task("B", &[]),
            task("C", &[])
        ),
    );
    project.ralph_in("sub", &["init"]).success();
    project.git(&["init", "-q", "-b", "main"]);
    project.git(&["add", "-A"]);
    project.git(&["commit", "-q", "-m", "a project in sub/"]);
    let project = project.agent(
        r#"touch "$REC/started-$RALPH_TASK_ID"
while [ ! -e "$REC/go" ]; do sleep 0.05; done
work "$RALPH_TASK_ID.txt" done
ralph task complete "$RALPH_TASK_ID" > /dev/null
"#,
    );
    let child = project
        .run_command(&["--workers", "2"])
        .current_dir(project.path().join("sub"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start");
    for id in ["A", "B"] {
        crate::support::wait_for_file(&project.aux().join(format!("rec/started-{id}")));
    }
    let status = project.ralph_in("sub", &["status"]);
    project.ralph_in("sub", &["stop"]).success();
    std::fs::write(project.aux().join("rec/go"), "").expect("go");
    let run = crate::support::wait_for(child, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stderr
            .contains("ralph: stopped — .stop asked the run to stop"),
        "{run:#?}"
    );
    assert!(!project.aux().join("rec/started-C").exists(), "{run:#?}");
    assert_eq!(project.json_lines("sub/tasks-done.jsonl").len(), 2);
    for id in ["A", "B"] {
        assert!(
            status.stdout.contains(&format!(
                "worker: {id} task {id} (iteration 1 of the task, role none, phase agent, since "
            )),
            "{status:#?}"
        );
    }
}

/// `.stop` during a run with three busy workers: each finishes its
/// iteration, then the run stops (exit 0) with nothing left running.
#[test]
fn stop_lets_every_worker_finish_its_iteration() {
    let mut project = TestProject::new();
    for id in ["A", "B", "C", "D"] {
        project = project.task(&task(id, &[]));
    }
    let project = project.git_init().agent(
        r#"echo "$RALPH_TASK_ID" >> "$REC/started"
touch "$REC/started-$RALPH_TASK_ID"
while [ ! -e "$RALPH_PROJECT_DIR/.stop" ]; do sleep 0.05; done
sleep 0.3
work "$RALPH_TASK_ID.txt" done
echo "$RALPH_TASK_ID" >> "$REC/finished"
"#,
    );
    let child = start_workers(&project, 3);
    for id in ["A", "B", "C"] {
        crate::support::wait_for_file(&project.aux().join(format!("rec/started-{id}")));
    }
    // `ralph status` shows each worker's task.
    let status = project.ralph(&["status"]);
    for id in ["A", "B", "C"] {
        assert!(
            status.stdout.contains(&format!(
                "worker: {id} task {id} (iteration 1 of the task, role none, phase agent, since "
            )),
            "{status:#?}"
        );
    }
    std::fs::write(project.path().join(".stop"), "").expect("stop");
    let run = crate::support::wait_for(child, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stderr.contains("ralph: stopped"), "{run:#?}");
    let mut finished: Vec<String> = project.rec("finished").lines().map(str::to_owned).collect();
    finished.sort();
    assert_eq!(
        finished,
        ["A", "B", "C"],
        "every agent finished its iteration"
    );
    assert!(
        !project.rec("started").contains('D'),
        "no new task after .stop"
    );
    assert!(!project.path().join(".stop").exists());
}

/// An agent in its worktree runs `ralph task add`, `split` and
/// `complete`, and reads `tasks.jsonl`: all on the project's live queue.
#[test]
fn an_agent_in_a_worktree_uses_the_live_queue() {
    let project = TestProject::new()
        .task(&task("A", &[]))
        .task(&task("B", &[]))
        .git_init()
        .agent(
            r#"cp tasks.jsonl "$REC/seen-$RALPH_TASK_ID-$RALPH_TASK_ITERATION"
case "$RALPH_TASK_ID" in
A) ralph task add "from A" > /dev/null; work A.txt A; ralph task complete A > /dev/null ;;
B) ralph task split B "first half" "second half" > /dev/null ;;
*) work "$RALPH_TASK_ID.txt" x; ralph task complete "$RALPH_TASK_ID" > /dev/null ;;
esac
"#,
        );
    let run = finish(project.run_command(&["--workers", "2"]), 120);
    assert_eq!(run.code, 0, "{run:#?}");
    let done: Vec<String> = project
        .json_lines("tasks-done.jsonl")
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    for id in ["A", "B.1", "B.2", "C", "B"] {
        assert!(done.contains(&id.to_owned()), "{id}: {done:?}");
    }
    // What the agent read in its worktree was the live queue: B active
    // (claimed by ralph after the base commit had it pending).
    let seen = project.rec("seen-B-1");
    assert!(
        seen.contains(r#""id":"B","title":"task B","status":"active""#),
        "{seen}"
    );
}

/// An agent that, until `$REC/killed` exists, leaves uncommitted work,
/// says it started and waits to be killed; then it finishes its task.
const KILLED_MID_ITERATION: &str = r#"if [ ! -e "$REC/killed" ]; then
  echo "left by the killed run" > "$RALPH_TASK_ID-wip.txt"
  touch "$REC/started-$RALPH_TASK_ID"
  sleep 600
fi
work "$RALPH_TASK_ID.txt" done
ralph task complete "$RALPH_TASK_ID" > /dev/null
"#;

/// Starts `ralph run --workers N`, its output kept for `wait_for`.
fn start_workers(project: &TestProject, workers: usize) -> std::process::Child {
    project
        .run_command(&["--workers", &workers.to_string()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start")
}

/// Runs `ralph run --workers N`, waits until the agents of tasks `ids`
/// have started, kills ralph with SIGKILL (its agents go on) and marks
/// the kill for [`KILLED_MID_ITERATION`].
fn kill_mid_iteration(project: &TestProject, workers: usize, ids: &[&str]) {
    let mut child = project
        .run_command(&["--workers", &workers.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start");
    for id in ids {
        crate::support::wait_for_file(&project.aux().join(format!("rec/started-{id}")));
    }
    child.kill().expect("kill -9");
    let _ = child.wait();
    std::fs::write(project.aux().join("rec/killed"), "").expect("mark");
}

/// `kill -9` of ralph while three workers' agents are mid-iteration, then
/// a new run: the agents left running are stopped, what they left
/// uncommitted is kept, every task resumes in its worktree and lands once,
/// and nothing stray is left.
#[test]
fn a_run_killed_with_9_resumes_each_task_in_its_worktree() {
    if skip_without(Tool::Ps) {
        return;
    }
    let mut project = TestProject::new();
    for id in ["A", "B", "C"] {
        project = project.task(&task(id, &[]));
    }
    let project = project.git_init().agent(KILLED_MID_ITERATION);
    kill_mid_iteration(&project, 3, &["A", "B", "C"]);
    let run = finish(project.run_command(&["--workers", "3"]), 120);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        run.stderr
            .matches("stopped the agent a previous run left running")
            .count(),
        3,
        "{run:#?}"
    );
    for id in ["A", "B", "C"] {
        assert_eq!(
            project.read(&format!("{id}-wip.txt")),
            "left by the killed run\n"
        );
        let log = project.git(&["log", "--format=%s", "main"]);
        assert_eq!(
            log.matches(&format!("[{id}] task {id}")).count(),
            1,
            "{log}"
        );
    }
    assert_eq!(project.read("tasks.jsonl"), "");
    assert_eq!(project.git(&["worktree", "list"]).lines().count(), 1);
    assert_eq!(project.git(&["branch", "--list", "task/*"]), "");
    project.git(&["fsck", "--no-progress"]);
    // No agent of either run is left.
    let agent = project.aux().join("agent.sh").display().to_string();
    let left: Vec<String> = command_lines()
        .into_iter()
        .filter(|line| line.contains(&agent))
        .collect();
    assert!(left.is_empty(), "{left:#?}");
}

/// The command line of every process, as `ps -eo args` shows them, read
/// from /proc (so the test needs no `ps`).
fn command_lines() -> Vec<String> {
    std::fs::read_dir("/proc")
        .expect("read /proc")
        .flatten()
        .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
        .map(|line| String::from_utf8_lossy(&line).replace('\0', " "))
        .collect()
}

/// Ctrl-C with four agents at work: every agent's process group is
/// stopped, the state saved, exit 130, no process left.
#[test]
fn ctrl_c_stops_every_workers_agent() {
    let mut project = TestProject::new();
    for id in ["A", "B", "C", "D"] {
        project = project.task(&task(id, &[]));
    }
    let project = project.git_init().agent(
        r#"touch "$REC/started-$RALPH_TASK_ID"
sleep 600 &
echo $! > "$REC/child-$RALPH_TASK_ID"
wait
"#,
    );
    let child = start_workers(&project, 4);
    for id in ["A", "B", "C", "D"] {
        crate::support::wait_for_file(&project.aux().join(format!("rec/child-{id}")));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("SIGINT");
    let run = crate::support::wait_for(child, 60);
    assert_eq!(run.code, 130, "{run:#?}");
    for id in ["A", "B", "C", "D"] {
        let pid: i32 = project.rec(&format!("child-{id}")).trim().parse().unwrap();
        let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
            && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .unwrap_or_default()
                .contains(") Z ");
        assert!(!alive, "{id}'s agent child {pid} outlived the run");
    }
    assert_eq!(project.json(".ralph/result.json")["status"], "interrupted");
}

/// One worker's agent hits a usage limit: every worker's next iteration
/// waits until it resets (they run the same agent).
#[test]
fn a_usage_limit_on_one_worker_pauses_the_others() {
    let project = TestProject::new()
        .task(&task("A", &[]))
        .task(&task("B", &[]))
        .git_init();
    project.script(
        "bin/claude",
        r#"case "$RALPH_TASK_ID" in
A) if [ ! -e "$REC/limited" ]; then
     touch "$REC/limited"
     reset=$(( $(date +%s) + 2 ))
     echo "reset $reset" >> "$REC/times"
     echo '{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|'$reset'"}'
     exit 0
   fi
   work A.txt a ;;
B) echo "B$RALPH_TASK_ITERATION $(date +%s.%N)" >> "$REC/times"
   sleep 0.5
   [ "$RALPH_TASK_ITERATION" -ge 2 ] && work B.txt b ;;
esac
[ -e "$RALPH_TASK_ID.txt" ] && ralph task complete "$RALPH_TASK_ID" > /dev/null
echo '{"type":"result","subtype":"success","is_error":false,"result":"ok"}'
"#,
    );
    let mut command = project.ralph_command(&["run", "--agent", "claude", "--workers", "2"]);
    let path = project.path_with_aux_bin();
    command.env("PATH", path);
    let run = finish(command, 120);
    assert_eq!(run.code, 0, "{run:#?}");
    let times = project.rec("times");
    let at = |what: &str| -> f64 {
        times
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{what} ")))
            .unwrap_or_else(|| panic!("{what}: {times}"))
            .parse()
            .unwrap()
    };
    // Ordered by the clock the limit names, not by a tolerance.
    assert!(
        at("B2") >= at("reset"),
        "B's next iteration waited for A's limit to reset: {times}"
    );
    assert!(
        run.stderr.contains("w2 B: waiting") || run.stderr.contains("w1 B: waiting"),
        "{run:#?}"
    );
}

/// A usage limit is no work done: with workers too, it costs none of the
/// run's iterations.
#[test]
fn a_usage_limit_on_a_worker_costs_no_iteration_of_the_run() {
    let project = TestProject::new()
        .task(&task("A", &[]))
        .task(&task("B", &[]))
        .git_init();
    project.script(
        "bin/claude",
        r#"if [ "$RALPH_TASK_ID" = A ] && [ ! -e "$REC/limited" ]; then
  touch "$REC/limited"
  echo '{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|'$(( $(date +%s) + 1 ))'"}'
  exit 0
fi
work "$RALPH_TASK_ID.txt" done
ralph task complete "$RALPH_TASK_ID" > /dev/null
echo '{"type":"result","subtype":"success","is_error":false,"result":"ok"}'
"#,
    );
    // Two tasks, one iteration each: the limit must not take a third.
    let mut command = project.ralph_command(&[
        "run",
        "--agent",
        "claude",
        "--workers",
        "2",
        "--max-iterations",
        "2",
    ]);
    command.env("PATH", project.path_with_aux_bin());
    let run = finish(command, 120);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.json(".ralph/result.json")["status"], "drained");
}

/// `max_iterations` counts every worker's iterations.
#[test]
fn max_iterations_counts_every_workers_iterations() {
    let mut project = TestProject::new();
    for id in ["A", "B", "C", "D", "E", "F"] {
        project = project.task(&task(id, &[]));
    }
    let project = project.git_init().agent(AGENT);
    let mut command = project.run_command(&["--workers", "4"]);
    command.env("RALPH_MAX_ITERATIONS", "3");
    let run = finish(command, 120);
    assert_eq!(run.code, 10, "{run:#?}");
    assert_eq!(project.calls().len(), 3, "{:?}", project.calls());
    assert_eq!(
        project.json(".ralph/result.json")["status"],
        "budget_exhausted"
    );
}

/// A parallel run killed with -9, then a single-worker run: the tasks
/// left in worktrees go on in the project's checkout, their work kept.
#[test]
fn a_single_run_takes_over_tasks_a_parallel_run_left_in_worktrees() {
    if skip_without(Tool::Ps) {
        return;
    }
    let project = TestProject::new()
        .task(&task("A", &[]))
        .task(&task("B", &[]))
        .git_init()
        .agent(KILLED_MID_ITERATION);
    kill_mid_iteration(&project, 2, &["A", "B"]);
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    for id in ["A", "B"] {
        assert_eq!(
            project.read(&format!("{id}-wip.txt")),
            "left by the killed run\n"
        );
        assert!(
            run.stderr.contains(&format!(
                "stopped the agent a previous run left running in task {id}'s worktree\ntask {id} goes on in the project's checkout; its worktree from a parallel run is removed (its work is on its branch)\n"
            )),
            "{run:#?}"
        );
    }
    assert_eq!(project.git(&["worktree", "list"]).lines().count(), 1);
    assert_eq!(project.git(&["branch", "--list", "task/*"]), "");
}

/// What a killed parallel run leaves that no task needs goes at the next
/// start, each said: the worktree of a task a person deleted meanwhile
/// (its branch stays), and a lock a git process left in a worktree.
#[test]
fn a_parallel_run_clears_what_a_killed_one_left() {
    if skip_without(Tool::Lsof) {
        return;
    }
    let project = TestProject::new()
        .task(&task("A", &[]))
        .task(&task("B", &[]))
        .git_init()
        .agent(KILLED_MID_ITERATION);
    kill_mid_iteration(&project, 2, &["A", "B"]);
    let kept = project.read("tasks.jsonl");
    let without_b: String = kept
        .lines()
        .filter(|l| !l.contains(r#""id":"B""#))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(project.path().join("tasks.jsonl"), without_b).expect("delete B by hand");
    std::fs::write(project.path().join(".git/worktrees/A/index.lock"), "").expect("a stale lock");
    let run = finish(project.run_command(&["--workers", "2"]), 120);
    assert_eq!(run.code, 0, "{run:#?}");
    for line in [
        "removed the worktree of task B, which is no longer in tasks.jsonl\n",
        "/.git/worktrees/A/index.lock in task A's worktree (a git process died holding it)\n",
    ] {
        assert!(run.stderr.contains(line), "{line}\n{run:#?}");
    }
    assert_eq!(
        project.git(&["log", "-1", "--format=%s", "main"]),
        "[A] task A"
    );
    assert!(
        project
            .git(&["branch", "--list", "task/B-*"])
            .contains("task/B-task-b")
    );
    assert_eq!(project.git(&["worktree", "list"]).lines().count(), 1);
}

/// Workers need the queue files committed on the base: a run without them
/// says so before it claims anything, exit 30.
#[test]
fn workers_refuse_a_queue_not_committed_on_the_base() {
    let project = TestProject::new().git_init().agent(AGENT);
    project.git(&["rm", "-q", "--cached", "tasks.jsonl"]);
    project.git(&["commit", "-q", "-m", "untrack the queue"]);
    project.ralph(&["task", "add", "one"]).success();
    let run = finish(project.run_command(&["--workers", "2"]), 60);
    assert_eq!(run.code, 30, "{run:#?}");
    assert_eq!(
        run.stderr,
        "error: tasks.jsonl is not committed on the base branch main; parallel workers link it into each task's worktree\nhint: commit it (`git add tasks.jsonl && git commit -m \"track the queue\"`), or run without --workers\n"
    );
    assert!(
        project
            .read("tasks.jsonl")
            .contains(r#""status":"pending""#)
    );
    assert!(project.calls().is_empty());
}

/// A run killed in the middle of a squash made in the project's checkout
/// (the merged files written, not yet committed) left them uncommitted on
/// the base: the next run puts the base back, says so, and goes on.
#[test]
fn a_squash_cut_short_on_the_base_is_undone_at_start() {
    let project = TestProject::new()
        .task(&task("A", &[]))
        .git_init()
        .agent(AGENT);
    // The task's branch, with its work committed.
    let base = project.git(&["rev-parse", "main"]);
    project.git(&["switch", "-q", "-c", "task/A-task-a"]);
    std::fs::write(project.path().join("A.txt"), "A\n").expect("work");
    project.git(&["add", "A.txt"]);
    project.git(&["commit", "-q", "-m", "A: A.txt"]);
    let merged = project.git(&["rev-parse", "HEAD^{tree}"]);
    project.git(&["switch", "-q", "main"]);
    // What the cut-short squash left: the merged files staged on the base,
    // and the note ralph writes before it writes them.
    project.git(&["checkout", "task/A-task-a", "--", "A.txt"]);
    std::fs::write(
        project.path().join(".git/ralph-squash-in-progress"),
        format!("{base} {merged}\n"),
    )
    .expect("the note");
    let run = finish(project.run_command(&["--workers", "2"]), 60);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stderr.contains(
            "a squash into main was cut short when ralph stopped; its files were put back as the base has them\n"
        ),
        "{run:#?}"
    );
    assert!(
        !project
            .path()
            .join(".git/ralph-squash-in-progress")
            .exists()
    );
    assert_eq!(
        project.git(&["log", "-1", "--format=%s", "main"]),
        "[A] task A"
    );
    assert_eq!(project.git(&["status", "--porcelain"]), "");
}

/// An agent that clones a repository into the tree (here: makes one) and
/// leaves it: it is committed as a gitlink, as `git add` does, and the
/// repository itself, whose files and history are nowhere else, survives
/// its worktree: moved to where the project's checkout holds the gitlink,
/// or kept aside when something else is there. One worker runs in the
/// project's checkout, where the repository simply stays.
#[test]
fn a_repository_the_agent_leaves_in_the_tree_is_committed_and_kept() {
    let agent = r#"git init -q -b trunk "lib-$RALPH_TASK_ID"
echo "$RALPH_TASK_ID" > "lib-$RALPH_TASK_ID/f"
git -C "lib-$RALPH_TASK_ID" add f
git -C "lib-$RALPH_TASK_ID" -c user.name=a -c user.email=a@b commit -q -m lib
echo uncommitted > "lib-$RALPH_TASK_ID/g"
ralph task complete "$RALPH_TASK_ID" > /dev/null
"#;
    for workers in ["1", "2"] {
        let project = TestProject::new()
            .task(&task("A", &[]))
            .git_init()
            .agent(agent);
        let run = finish(project.run_command(&["--workers", workers]), 60);
        assert_eq!(run.code, 0, "{workers}: {run:#?}");
        let lib = project.path().join("lib-A");
        assert_eq!(project.read("lib-A/f"), "A\n", "{workers}");
        assert_eq!(project.read("lib-A/g"), "uncommitted\n", "{workers}");
        let head = project.git(&["-C", lib.to_str().unwrap(), "rev-parse", "HEAD"]);
        assert_eq!(
            project.git(&["ls-tree", "main", "lib-A"]),
            format!("160000 commit {head}\tlib-A"),
            "{workers}"
        );
        // Clean but for the repository's own uncommitted file.
        assert_eq!(
            project.git(&["status", "--porcelain", "--ignore-submodules=dirty"]),
            "",
            "{workers}"
        );
        if workers == "2" {
            assert!(
                run.stderr.contains(
                    "\nw1 warning: lib-A in the worktree .ralph/worktrees/A is a git repository of its own, committed as a gitlink (as `git add` does); ralph moved it to lib-A before removing the worktree\n"
                ),
                "{run:#?}"
            );
        }
    }
}

/// The archive check a single run makes after each iteration is made for
/// each worker: a worker's agent that rewrites `tasks-done.jsonl` (through
/// its worktree's link to the project's) gets it put back, the line it
/// forged quarantined, and the warning and evidence say so.
#[test]
fn an_archive_a_workers_agent_rewrites_is_put_back_and_said() {
    let record = r#"{"id":"A","title":"old","status":"complete","leaf":true,"completed":"2026-01-01T00:00:00Z"}"#;
    let project = TestProject::new()
        .file("tasks-done.jsonl", format!("{record}\n"))
        .task(&task("B", &[]))
        .task(&task("C", &["B"]))
        .git_init()
        .agent(&format!(
            r#"case "$RALPH_TASK_ID-$RALPH_TASK_ITERATION" in
B-1) printf '%s\n' '{{"id":"C","title":"forged","status":"complete","leaf":true}}' > tasks-done.jsonl ;;
*) {AGENT} ;;
esac"#
        ));
    let run = project.run(&["--workers", "2"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let done = project.read("tasks-done.jsonl");
    assert!(done.starts_with(&format!("{record}\n")), "{done}");
    let ids: Vec<String> = crate::support::ids(&done);
    assert_eq!(ids, ["A", "B", "C"], "{run:#?}");
    assert!(
        run.stderr.contains(
            "w1 warning: tasks-done.jsonl had 1 archived record changed or removed and had 1 line that ralph did not write (moved to .ralph/queue/quarantine/"
        ),
        "{run:#?}"
    );
    let quarantine: Vec<_> = std::fs::read_dir(project.path().join(".ralph/queue/quarantine"))
        .expect("the quarantine")
        .map(|entry| entry.expect("entry").path())
        .collect();
    assert_eq!(quarantine.len(), 1, "{quarantine:?}");
    assert!(
        std::fs::read_to_string(&quarantine[0])
            .expect("read")
            .contains("forged")
    );
    assert_eq!(
        project.json(".ralph/result.json")["failures"],
        serde_json::json!({"archive_edited": 1})
    );
    let prompt = std::fs::read_dir(project.path().join(".ralph/prompts"))
        .expect("prompts")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.to_string_lossy().ends_with("-B.md"))
        .map(|path| std::fs::read_to_string(path).expect("read"))
        .find(|text| text.contains("archive_edited"));
    assert!(prompt.is_some(), "B's second prompt has the evidence");
}

/// `.stop` touched by hand in a project in a subfolder of its repository,
/// while two workers are in their first iterations: the run ends once
/// those iterations are done, exit 0, and nothing else starts.
#[test]
fn a_stop_file_ends_two_workers_of_a_project_in_a_subfolder() {
    let project = TestProject::new().file(
        "sub/tasks.jsonl",
        format!(
            "{}\n{}\n{}\n{}\n",
            task("A", &[]),
            task("B", &[]),
            task("C", &[]),
            task("D", &[])
        ),
    );
    project.ralph_in("sub", &["init"]).success();
    project.git(&["init", "-q", "-b", "main"]);
    project.git(&["add", "-A"]);
    project.git(&["commit", "-q", "-m", "a project in sub/"]);
    let project = project.agent(
        r#"touch "$REC/started-$RALPH_TASK_ID"
sleep 0.5
work "$RALPH_TASK_ID.txt" done
ralph task complete "$RALPH_TASK_ID" > /dev/null
"#,
    );
    let child = project
        .run_command(&["--workers", "2"])
        .current_dir(project.path().join("sub"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start");
    crate::support::wait_for_file(&project.aux().join("rec/started-A"));
    std::fs::write(project.path().join("sub/.stop"), "").expect("touch .stop");
    let run = crate::support::wait_for(child, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stderr
            .contains("ralph: stopped — .stop asked the run to stop"),
        "{run:#?}"
    );
    assert!(!project.path().join("sub/.stop").exists(), "{run:#?}");
    // Only the iterations under way when .stop appeared ran.
    let started: Vec<&str> = ["A", "B", "C", "D"]
        .into_iter()
        .filter(|id| project.aux().join(format!("rec/started-{id}")).exists())
        .collect();
    assert!(started.len() <= 2, "{started:?} {run:#?}");
    assert_eq!(
        project.json_lines("sub/tasks-done.jsonl").len(),
        started.len(),
        "{run:#?}"
    );
    assert_eq!(project.git(&["worktree", "list"]).lines().count(), 1);
}

/// One worker waits out a long backoff while the other pauses between
/// iterations; whichever sees `.stop` first takes it away, and the other
/// still stops at once rather than at the end of its wait.
#[test]
fn a_stop_file_ends_a_worker_in_a_long_backoff() {
    let project = TestProject::new().file(
        "sub/tasks.jsonl",
        format!(
            "{}\n{}\n{}\n",
            task("A", &[]),
            task("B", &[]),
            task("C", &[])
        ),
    );
    project.ralph_in("sub", &["init"]).success();
    project.git(&["init", "-q", "-b", "main"]);
    project.git(&["add", "-A"]);
    project.git(&["commit", "-q", "-m", "a project in sub/"]);
    let project = project.agent(
        r#"if [ "$RALPH_TASK_ID" = A ]; then touch "$REC/failed-A"; exit 3; fi
while [ ! -e "$REC/failed-A" ]; do sleep 0.05; done
work "$RALPH_TASK_ID.txt" done
ralph task complete "$RALPH_TASK_ID" > /dev/null
touch "$REC/done-$RALPH_TASK_ID"
"#,
    );
    let child = project
        .run_command(&["--workers", "2"])
        .env("RALPH_RETRY_BACKOFF", "10m")
        .env("RALPH_PAUSE_BETWEEN_ITERATIONS", "1s")
        .current_dir(project.path().join("sub"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start");
    crate::support::wait_for_file(&project.aux().join("rec/done-B"));
    std::thread::sleep(std::time::Duration::from_millis(300));
    std::fs::write(project.path().join("sub/.stop"), "").expect("touch .stop");
    // A hang guard, not a timing: the backoff alone is ten minutes.
    let run = crate::support::wait_for(child, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stderr
            .contains("ralph: stopped — .stop asked the run to stop"),
        "{run:#?}"
    );
    assert!(!project.path().join("sub/.stop").exists(), "{run:#?}");
    assert!(
        project
            .read("sub/tasks.jsonl")
            .contains(r#""id":"A","title":"task A","status":"active""#)
    );
}

/// A pool whose terminal goes away (stderr's reader closed: `ralph run
/// 2>&1 | head`, a closed window) works on and ends as it would: its
/// lines are dropped, never a worker's end that leaves the pool waiting
/// for it forever.
#[test]
fn a_pool_whose_stderr_reader_is_gone_finishes_its_work() {
    let mut project = TestProject::new();
    for id in ["A", "B", "C", "D"] {
        project = project.task(&task(id, &[]));
    }
    let project = project.git_init().agent(AGENT);
    let mut child = project
        .run_command(&["--workers", "2"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes away before the run has said anything.
    drop(child.stderr.take());
    let run = crate::support::wait_for(child, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    let done = project.json_lines("tasks-done.jsonl");
    assert_eq!(done.len(), 4, "{done:?}");
}

/// The first agent hits its usage limit: the next of `agent.fallback`
/// works on instead of the run waiting, and the first comes back once its
/// limit resets.
#[test]
fn a_usage_limit_hands_the_task_to_the_fallback_agent_until_it_resets() {
    let project = TestProject::new()
        .task(&task("A", &[]))
        .task(&task("B", &["A"]))
        .git_init();
    project.script(
        "bin/claude",
        r#"echo "claude $RALPH_TASK_ID" >> "$REC/agents"
if [ ! -e "$REC/limited" ]; then
  touch "$REC/limited"
  echo '{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|'$(( $(date +%s) + 2 ))'"}'
  exit 0
fi
work "$RALPH_TASK_ID.txt" claude
ralph task complete "$RALPH_TASK_ID" > /dev/null
echo '{"type":"result","subtype":"success","is_error":false,"result":"ok"}'
"#,
    );
    project.script(
        "bin/spare-agent",
        r#"echo "spare $RALPH_TASK_ID" >> "$REC/agents"
ralph status > "$REC/status"
sleep 3
work "$RALPH_TASK_ID.txt" spare
ralph task complete "$RALPH_TASK_ID" > /dev/null
"#,
    );
    let spare = project.aux().join("bin/spare-agent");
    let config = project
        .telling_notices(&project.read("config/ralph.yaml"))
        .replace(
            "  fallback: []",
            &format!("  fallback: [{}]", spare.display()),
        );
    let project = project.file("config/ralph.yaml", config);
    project.git(&["commit", "-q", "-am", "a fallback agent"]);
    let mut command = project.ralph_command(&["run", "--agent", "claude"]);
    command.env("PATH", project.path_with_aux_bin());
    let run = finish(command, 120);
    assert_eq!(run.code, 0, "{run:#?}");
    // A by the spare agent, B by claude again: no wait for the limit.
    assert_eq!(
        project.rec("agents"),
        "claude A\nspare A\nclaude B\n",
        "{run:#?}"
    );
    let log = project.read("ralph.log");
    assert!(
        log.contains("usage limit of `claude`: ")
            && log.contains(" takes over (agent.fallback); the first agent is back at "),
        "{log}"
    );
    assert!(
        log.contains("`claude` is back (its usage limit reset)"),
        "{log}"
    );
    assert!(!log.contains("waiting"), "{log}");
    // Said to ralph status while it lasts, and told.
    assert!(
        project.rec("status").contains("agent: command `")
            && project.rec("status").contains(
                "spare-agent` runs in place of `claude` (its usage limit, agent.fallback) until "
            ),
        "{}",
        project.rec("status")
    );
    assert!(
        project
            .rec("notices")
            .contains("usage_limit usage limit of `claude`: "),
        "{}",
        project.rec("notices")
    );
    // The receipts name the agent that ran.
    let agents: Vec<String> = (project.json_lines(".ralph/events.ndjson").iter())
        .filter(|event| event["phase"] == "iteration")
        .map(|event| event["agent"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(agents.len(), 3, "{agents:?}");
    assert!(
        agents[1].contains("spare-agent") && agents[2] == agents[0],
        "{agents:?}"
    );
}
