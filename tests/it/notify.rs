//! `notify.command`: the events worth a person's attention, each told to a
//! command of theirs with the event as JSON on stdin and its kind in
//! `RALPH_EVENT`, never holding up the loop.

use crate::support::{FINISH, TestProject, by_iteration, finish, wait_for};

fn pending(id: &str) -> String {
    format!(r#"{{"id":"{id}","title":"task {id}","status":"pending","leaf":true}}"#)
}

/// Writes `<aux>/notify.sh`, which appends `$RALPH_EVENT <stdin>` to
/// `$REC/notices` and then runs `then`; its path.
fn notifier(p: &TestProject, then: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = p.aux().join("notify.sh");
    let rec = p.aux().join("rec");
    std::fs::create_dir_all(&rec).unwrap();
    let text = format!(
        "#!/bin/sh\nREC='{}'\nprintf '%s %s\\n' \"$RALPH_EVENT\" \"$(cat)\" >> \"$REC/notices\"\n{then}\n",
        rec.display()
    );
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// The notices told, in order: the kind and the event's JSON.
fn notices(p: &TestProject) -> Vec<(String, serde_json::Value)> {
    p.rec("notices")
        .lines()
        .map(|line| {
            let (kind, json) = line.split_once(' ').unwrap();
            (kind.to_owned(), serde_json::from_str(json).unwrap())
        })
        .collect()
}

/// `ralph run` with `command` as `notify.command`, and `env`.
fn run_telling(p: &TestProject, command: &str, env: &[(&str, &str)]) -> crate::support::Run {
    let mut run = p.run_command(&[]);
    run.env("RALPH_NOTIFY_COMMAND", command)
        .envs(env.iter().copied());
    finish(run, 60)
}

fn kinds(p: &TestProject) -> Vec<String> {
    notices(p).into_iter().map(|(kind, _)| kind).collect()
}

#[test]
fn each_event_is_told_with_its_json_on_stdin_and_its_kind_in_the_environment() {
    // A is done; B is blocked by its agent.
    let p = TestProject::new()
        .task(&pending("A"))
        .task(&pending("B"))
        .git_init()
        .agent(&format!(
            "if [ \"$RALPH_TASK_ID\" = B ]; then ralph task block B --reason 'needs the API key' > /dev/null; exit 0; fi\n{}",
            by_iteration("RALPH_ITERATION", FINISH)
        ));
    let command = notifier(&p, "");
    let run = run_telling(&p, &command, &[]);
    assert_eq!(run.code, 10, "{run:#?}");
    assert_eq!(kinds(&p), ["task_merged", "task_blocked", "run_ended"]);
    let notices = notices(&p);
    let (_, merged) = &notices[0];
    assert_eq!(merged["event"], "task_merged");
    assert_eq!(merged["task"], "A");
    assert_eq!(merged["verified"], false);
    assert_eq!(
        merged["commit"].as_str().unwrap(),
        p.git(&["rev-parse", "main~1"]),
        "{merged}"
    );
    assert_eq!(
        merged["project"].as_str().unwrap(),
        p.path().canonicalize().unwrap().display().to_string()
    );
    let run_id = p.json(".ralph/result.json")["run_id"].clone();
    assert_eq!(merged["run_id"], run_id);
    let (_, blocked) = &notices[1];
    assert_eq!(blocked["task"], "B");
    assert!(
        blocked["message"]
            .as_str()
            .unwrap()
            .starts_with("B blocked: "),
        "{blocked}"
    );
    let (_, ended) = &notices[2];
    assert_eq!(ended["status"], "blocked");
    assert_eq!(ended["merged"], 1);
    assert_eq!(ended["blocked"], 1);
    assert!(ended.get("task").is_none(), "{ended}");
}

#[test]
fn notify_on_keeps_only_the_kinds_it_names() {
    let p = TestProject::new()
        .task(&pending("A"))
        .task(&pending("B"))
        .git_init()
        .agent(&by_iteration("RALPH_ITERATION", FINISH));
    let command = notifier(&p, "");
    let config = p.read("config/ralph.yaml").replace(
        "  command: null\n  # The kinds",
        &format!("  command: '{command}'\n  # The kinds"),
    );
    assert!(config.contains(&command), "{config}");
    let config = config.replace("  on: []\n", "  on: [run_ended]\n");
    let p = p.file("config/ralph.yaml", config);
    p.git(&["commit", "-q", "-am", "notify"]);
    let run = p.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(kinds(&p), ["run_ended"]);

    // A kind ralph does not know is refused with its line.
    let config = p
        .read("config/ralph.yaml")
        .replace("  on: [run_ended]\n", "  on: [task_done]\n");
    let line = config
        .lines()
        .position(|l| l == "  on: [task_done]")
        .unwrap()
        + 1;
    let p = p.file("config/ralph.yaml", config);
    let run = p.run(&[]);
    assert_eq!(run.code, 30, "{run:#?}");
    assert!(
        run.stderr.starts_with(&format!(
            "error: config/ralph.yaml:{line}: notify.on[0]: unknown variant `task_done`, expected one of `task_merged`, "
        )),
        "{run:#?}"
    );
}

#[test]
fn a_notify_command_that_hangs_is_stopped_at_its_timeout_and_holds_nothing_up() {
    // The command notes its process and sleeps; B's agent, which runs
    // while A's notice is still being told, notes that it is alive.
    let p = TestProject::new()
        .task(&pending("A"))
        .task(&pending("B"))
        .git_init()
        .agent(&format!(
            "if [ \"$RALPH_TASK_ID\" = B ] && kill -0 \"$(cat \"$REC/notify.pid\")\" 2> /dev/null; then echo alive > \"$REC/alive-during-B\"; fi\n{}",
            by_iteration("RALPH_ITERATION", FINISH)
        ));
    let command = notifier(
        &p,
        "[ \"$RALPH_EVENT\" = task_merged ] || exit 0\necho $$ > \"$REC/notify.pid\"\nexec sleep 60",
    );
    let run = run_telling(&p, &command, &[("RALPH_NOTIFY_TIMEOUT", "3s")]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(p.rec("alive-during-B"), "alive\n", "the loop waited");
    assert_eq!(p.git(&["show", "main:B.txt"]), "done");
    let log = p.read("ralph.log");
    let stopped = log
        .lines()
        .filter(|line| {
            line.contains(
                " warning: notify.command for task_merged failed: stopped at its time limit (3s)",
            )
        })
        .count();
    assert_eq!(stopped, 2, "{log}");
    // Nothing of it is left running (once init has reaped it).
    let pid = p.rec("notify.pid");
    let alive = || {
        std::process::Command::new("sh")
            .args(["-c", "kill -0 \"$1\" 2> /dev/null", "sh", pid.trim()])
            .status()
            .unwrap()
            .success()
    };
    for _ in 0..100 {
        if !alive() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("notify command {pid} still runs");
}

#[test]
fn a_failing_notify_command_is_logged_and_the_run_goes_on() {
    let p = TestProject::new()
        .task(&pending("A"))
        .git_init()
        .agent(&by_iteration("RALPH_ITERATION", FINISH));
    let command = notifier(&p, "echo 'ntfy: 403 forbidden' >&2; exit 3");
    let run = run_telling(&p, &command, &[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(kinds(&p), ["task_merged", "run_ended"]);
    let log = p.read("ralph.log");
    assert!(
        log.contains(
            " warning: notify.command for task_merged failed: exit code 3: ntfy: 403 forbidden\n"
        ),
        "{log}"
    );
    assert!(
        log.contains(" warning: notify.command for run_ended failed: exit code 3: "),
        "{log}"
    );
    assert_eq!(p.json(".ralph/result.json")["status"], "drained");
}

#[test]
fn a_polling_run_tells_when_it_goes_idle_and_when_it_ends() {
    let p = TestProject::new()
        .git_init()
        .agent(&by_iteration("RALPH_ITERATION", FINISH));
    let command = notifier(&p, "");
    let child = p
        .run_command(&["--poll", "1s"])
        .env("RALPH_NOTIFY_COMMAND", &command)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    crate::support::wait_for_file(&p.aux().join("rec/notices"));
    p.ralph(&["stop"]).success();
    let run = wait_for(child, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(kinds(&p), ["run_idle", "run_ended"]);
    let (_, idle) = &notices(&p)[0];
    assert_eq!(idle["poll_interval"], "1s");
    assert_eq!(
        idle["message"],
        "ralph is idle: the queue is drained; looking again every 1s"
    );
}

#[test]
fn a_usage_limit_wait_is_told() {
    let p = TestProject::new().task(&pending("A")).git_init();
    p.script(
        "bin/claude",
        r#"if [ ! -e "$REC/limited" ]; then
  touch "$REC/limited"
  echo '{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|1767323045"}'
  exit 0
fi
work A.txt x
ralph task complete A > /dev/null
echo '{"type":"result","subtype":"success","is_error":false,"result":"done"}'
"#,
    );
    let command = notifier(&p, "");
    let mut run = p.ralph_command(&["run", "--agent", "claude"]);
    run.env("PATH", p.path_with_aux_bin())
        .env("RALPH_NOTIFY_COMMAND", &command);
    let run = finish(run, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(kinds(&p), ["usage_limit", "task_merged", "run_ended"]);
    let (_, limit) = &notices(&p)[0];
    assert_eq!(limit["task"], "A");
    assert!(limit["wait_seconds"].is_u64(), "{limit}");
    assert!(
        limit["message"]
            .as_str()
            .unwrap()
            .starts_with("usage limit: waiting "),
        "{limit}"
    );
}

#[test]
fn a_pull_request_is_told_with_its_address() {
    let p = TestProject::new()
        .task(&pending("A"))
        .git_init()
        .agent(&by_iteration("RALPH_ITERATION", FINISH));
    let config = p
        .read("config/ralph.yaml")
        .replace("delivery: local", "delivery: pr");
    let p = p.file("config/ralph.yaml", config);
    p.git(&["commit", "-q", "-am", "deliver by pull request"]);
    let remote = p.aux().join("remote.git");
    let remote = remote.to_str().unwrap();
    p.git(&["init", "-q", "--bare", "-b", "main", remote]);
    p.git(&["remote", "add", "origin", remote]);
    p.git(&["push", "-q", "origin", "main"]);
    // A stand-in for the GitHub CLI: logged in, no pull request yet.
    p.script(
        "bin/gh",
        r#"case "$1 $2" in
  "pr list") echo '[]' ;;
  "pr create") cat > /dev/null; echo "https://github.test/o/r/pull/9" ;;
esac
"#,
    );
    let command = notifier(&p, "");
    let mut run = p.run_command(&["--pr-branch", "notes"]);
    run.env("RALPH_NOTIFY_COMMAND", &command)
        .env("PATH", p.path_with_aux_bin());
    let run = finish(run, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(kinds(&p), ["task_merged", "pull_request", "run_ended"]);
    let notices = notices(&p);
    let (_, pr) = &notices[1];
    assert_eq!(pr["url"], "https://github.test/o/r/pull/9");
    assert_eq!(pr["action"], "opened");
    assert_eq!(pr["draft"], false);
    assert_eq!(
        notices[2].1["pull_request"],
        "https://github.test/o/r/pull/9"
    );
    // The run's report names it too.
    p.ralph(&["report"]).success();
    let page = p.read(".ralph/report.html");
    assert!(
        page.contains("<dt>pull request</dt><dd>opened https://github.test/o/r/pull/9</dd>"),
        "{page}"
    );
}

/// The `notify:` sections under docs/NOTIFY.md's "Recipes", in order.
fn recipes() -> Vec<String> {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/NOTIFY.md")).unwrap();
    let (_, recipes) = doc.split_once("\n## Recipes\n").unwrap();
    recipes
        .split("```yaml\n")
        .skip(1)
        .map(|block| block.split_once("```").unwrap().0.to_owned())
        .collect()
}

#[test]
fn every_recipe_of_the_manual_tells_what_it_says() {
    let recipes = recipes();
    assert_eq!(recipes.len(), 4, "{recipes:#?}");
    if crate::support::skip_without(crate::support::Tool::Jq) {
        return;
    }
    for recipe in recipes {
        let p = TestProject::new()
            .task(&pending("A"))
            .git_init()
            .agent(&by_iteration("RALPH_ITERATION", FINISH));
        // The shipped settings end with their notify: section.
        let config = p.read("config/ralph.yaml");
        let (settings, _) = config.split_once("\nnotify:\n").unwrap();
        let p = p.file("config/ralph.yaml", format!("{settings}\n{recipe}"));
        p.git(&["commit", "-q", "-am", "notify"]);
        // Stand-ins for the programs the recipes call: each records its
        // arguments and its standard input.
        for program in ["notify-send", "osascript", "curl"] {
            use std::os::unix::fs::PermissionsExt;
            let path = p.aux().join("bin").join(program);
            let text = format!(
                "#!/bin/sh\n{{ echo \"== {program}\"; for a in \"$@\"; do echo \"arg: $a\"; done; echo \"stdin: $(cat)\"; }} >> '{}'\n",
                p.aux().join("rec/programs").display()
            );
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let mut run = p.run_command(&[]);
        run.env("PATH", p.path_with_aux_bin()).env(
            "SLACK_WEBHOOK_URL",
            "https://hooks.slack.test/services/T0/B0/x",
        );
        let run = finish(run, 60);
        assert_eq!(run.code, 0, "{recipe}\n{run:#?}");
        let told = p.rec("programs");
        let log = p.read("ralph.log");
        assert!(!log.contains("notify.command"), "{recipe}\n{log}");
        let ended = "ralph run drained: the queue is drained";
        if recipe.contains("notify-send") {
            assert!(
                told.contains("== notify-send\narg: ralph: task_merged\narg: A done: squash-merged into main\n"),
                "{told}"
            );
            assert!(
                told.contains(&format!("arg: ralph: run_ended\narg: {ended}\n")),
                "{told}"
            );
        } else if recipe.contains("osascript") {
            assert!(
                told.contains("arg: display notification (item 1 of argv) with title \"ralph\"\narg: -e\narg: end run\narg: A done: squash-merged into main\n"),
                "{told}"
            );
        } else if recipe.contains("ntfy.sh") {
            // Only the kinds it lists: no task_merged.
            assert!(!told.contains("A done"), "{told}");
            assert!(
                told.contains(&format!(
                    "arg: Title: ralph run_ended\narg: -d\narg: {ended}\narg: https://ntfy.sh/"
                )),
                "{told}"
            );
        } else {
            assert!(
                told.contains(&format!(
                    "arg: https://hooks.slack.test/services/T0/B0/x\nstdin: {{\"text\":\"ralph: {ended}\"}}\n"
                )),
                "{told}"
            );
        }
    }
}
