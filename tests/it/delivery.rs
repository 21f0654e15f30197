//! Delivery: the base pushed to a real bare repository as the remote
//! (`git.push`), through the user's own git.

use crate::support::{FINISH, TestProject, by_iteration, phases};

fn pending(id: &str) -> String {
    format!(r#"{{"id":"{id}","title":"task {id}","status":"pending","leaf":true}}"#)
}

/// A project with tasks A and B, `git.push: <push>` in its settings, and a
/// bare repository `<aux>/remote.git` as `origin`, holding `main`.
fn project(push: &str, agent: &str) -> TestProject {
    let p = TestProject::new()
        .task(&pending("A"))
        .task(&pending("B"))
        .git_init()
        .agent(agent);
    let config = p
        .read("config/ralph.yaml")
        .replace("  push: never", &format!("  push: {push}"));
    let p = p.file("config/ralph.yaml", config);
    p.git(&["commit", "-q", "--allow-empty", "-am", "push setting"]);
    let remote = p.aux().join("remote.git");
    p.git(&[
        "init",
        "-q",
        "--bare",
        "-b",
        "main",
        remote.to_str().unwrap(),
    ]);
    p.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
    p.git(&["push", "-q", "origin", "main"]);
    p
}

/// `git ARGS` in the bare remote.
fn remote_git(p: &TestProject, args: &[&str]) -> String {
    let remote = p.aux().join("remote.git");
    let mut all = vec!["--git-dir", remote.to_str().unwrap()];
    all.extend_from_slice(args);
    p.git(&all)
}

/// The `push` events of the run: `status: detail`.
fn pushes(p: &TestProject) -> Vec<String> {
    p.json_lines(".ralph/events.ndjson")
        .iter()
        .filter(|e| e["phase"] == "push")
        .map(|e| {
            format!(
                "{}: {}",
                e["status"].as_str().unwrap(),
                e["detail"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn on_merge_pushes_each_squash_commit() {
    let p = project("on_merge", &by_iteration("RALPH_ITERATION", FINISH));
    p.run(&[]).success();
    let local = p.git(&["rev-parse", "main"]);
    assert_eq!(remote_git(&p, &["rev-parse", "main"]), local);
    let pushes = pushes(&p);
    assert_eq!(pushes.len(), 2, "{pushes:#?}");
    assert!(pushes[0].starts_with("ok: main at "), "{pushes:#?}");
    assert!(pushes[0].ends_with(" pushed to origin/main"), "{pushes:#?}");
    // Each push came right after its task's merge.
    let events: Vec<String> = p
        .json_lines(".ralph/events.ndjson")
        .iter()
        .filter(|e| e["phase"] == "merge" || e["phase"] == "push")
        .map(|e| {
            format!(
                "{} {}",
                e["task_id"].as_str().unwrap_or("-"),
                e["phase"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(events, ["A merge", "- push", "B merge", "- push"]);
}

#[test]
fn on_exit_pushes_once_at_the_end_and_never_pushes_nothing() {
    let p = project("on_exit", &by_iteration("RALPH_ITERATION", FINISH));
    let before = remote_git(&p, &["rev-parse", "main"]);
    p.run(&[]).success();
    assert_eq!(
        remote_git(&p, &["rev-parse", "main"]),
        p.git(&["rev-parse", "main"])
    );
    assert_ne!(remote_git(&p, &["rev-parse", "main"]), before);
    assert_eq!(pushes(&p).len(), 1);

    // The default is never: the remote is left alone.
    let quiet = project("never", &by_iteration("RALPH_ITERATION", FINISH));
    let before = remote_git(&quiet, &["rev-parse", "main"]);
    quiet.run(&[]).success();
    assert_eq!(remote_git(&quiet, &["rev-parse", "main"]), before);
    assert!(pushes(&quiet).is_empty());
}

#[test]
fn a_push_after_someone_else_pushed_stops_the_run_and_loses_nothing() {
    // While A is worked, another clone pushes to main.
    let p = project(
        "on_merge",
        &by_iteration(
            "RALPH_ITERATION",
            &format!(
                "1) other=\"$REC/../other\"; git clone -q \"$REC/../remote.git\" \"$other\" 2>> \"$REC/err\" && (cd \"$other\" && echo theirs > theirs.txt && git add theirs.txt && git -c user.name=O -c user.email=o@e commit -qm theirs && git push -q origin main) 2>> \"$REC/err\"\n   work A.txt done; ralph task complete A > /dev/null ;;\n{FINISH}"
            ),
        ),
    );
    let run = p.run(&[]);
    assert_eq!(run.code, 20, "{run:#?}\n{}", p.rec("err"));
    let local = p.git(&["rev-parse", "--short=7", "main"]);
    let theirs = remote_git(&p, &["rev-parse", "--short=7", "main"]);
    assert_ne!(local, theirs);
    let reason = format!(
        "the push of main to origin/main was rejected: origin/main is at {theirs} (someone else pushed), which main at {local} does not include; nothing local was lost or rewritten. Bring main up to date (`git pull --rebase origin main`) and run again: ralph's next run starts from the new base"
    );
    assert!(
        run.stderr.contains(&format!("warning: {reason}\n")),
        "{run:#?}"
    );
    assert_eq!(p.json(".ralph/result.json")["reason"], reason);
    assert_eq!(p.json(".ralph/result.json")["status"], "failed");
    // A's work is on the local base; B was not started.
    assert_eq!(p.git(&["log", "-1", "--format=%s", "main"]), "[A] task A");
    assert_eq!(p.read("A.txt"), "done\n");
    assert_eq!(p.calls().len(), 1);
    assert!(phases(&p, "B").is_empty());
    // The remote kept the other clone's commit.
    assert_eq!(
        remote_git(&p, &["log", "-1", "--format=%s", "main"]),
        "theirs"
    );
}

#[test]
fn a_transient_push_failure_is_retried() {
    let p = project("on_exit", &by_iteration("RALPH_ITERATION", FINISH));
    // A pre-receive hook that declines the first push only.
    let hook = p.aux().join("remote.git/hooks/pre-receive");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\nif [ ! -f '{0}' ]; then touch '{0}'; echo 'remote busy, try later' >&2; exit 1; fi\nexit 0\n",
            p.aux().join("declined-once").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = run_quickly(&p);
    assert_eq!(run.code, 0, "{run:#?}");
    let pushes = pushes(&p);
    assert_eq!(pushes.len(), 2, "{pushes:#?}");
    assert!(
        pushes[0].starts_with("retry: the push of main to origin/main failed (")
            && pushes[0].contains("remote busy, try later")
            && pushes[0].ends_with("; trying again in 10ms"),
        "{pushes:#?}"
    );
    assert!(pushes[1].starts_with("ok: "), "{pushes:#?}");
    assert_eq!(
        remote_git(&p, &["rev-parse", "main"]),
        p.git(&["rev-parse", "main"])
    );
}

/// A recording stand-in for the GitHub CLI `gh` (a test double, not the
/// real tool): it records each call's arguments and standard input in
/// `$REC/gh`, says it is logged in, lists the pull request it opened
/// before, and prints an address when one is created.
fn fake_gh(p: &TestProject) {
    gh_script(
        p,
        r#"echo "gh $*" >> "$REC/gh"
case "$1 $2" in
  "auth status") exit 0 ;;
  "pr list") if [ -f "$REC/pr-open" ]; then echo '[{"number":7,"url":"https://github.test/o/r/pull/7"}]'; else echo '[]'; fi ;;
  "pr create") cat > "$REC/pr-body"; touch "$REC/pr-open"; echo "https://github.test/o/r/pull/7" ;;
  "pr edit") cat > "$REC/pr-body" ;;
esac
"#,
    );
}

/// Writes `<aux>/bin/gh`: `$REC` set, then `body` (no agent prelude: the
/// body comes on standard input).
fn gh_script(p: &TestProject, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    let path = p.aux().join("bin/gh");
    let text = format!("#!/bin/sh\nREC='{}'\n{body}", p.aux().join("rec").display());
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn pr_project(agent: &str) -> TestProject {
    let p = project("never", agent);
    let config = p
        .read("config/ralph.yaml")
        .replace("delivery: local", "delivery: pr");
    let p = p.file("config/ralph.yaml", config);
    p.git(&["commit", "-q", "-am", "deliver by pull request"]);
    fake_gh(&p);
    p
}

/// `ralph run ARGS` with `<aux>/bin` (the fake `gh`) first on `PATH`, and
/// the waits before a `gh` call's retries 10 ms, 20 ms and 40 ms.
fn run_with_gh(p: &TestProject, args: &[&str]) -> crate::support::Run {
    let mut command = p.run_command(args);
    command.env("PATH", p.path_with_aux_bin());
    command.env("RALPH_TEST_SECOND_MS", "5");
    crate::support::finish(command, 60)
}

/// `ralph run` with a second of a wait before a retry lasting 5 ms: a
/// push's 2 s and 4 s are waited as 10 ms and 20 ms.
fn run_quickly(p: &TestProject) -> crate::support::Run {
    let mut command = p.run_command(&[]);
    command.env("RALPH_TEST_SECOND_MS", "5");
    crate::support::finish(command, 60)
}

/// The `pull_request` events of the run: `status: detail`.
fn pull_request_events(p: &TestProject) -> Vec<String> {
    p.json_lines(".ralph/events.ndjson")
        .iter()
        .filter(|e| e["phase"] == "pull_request")
        .map(|e| {
            format!(
                "{}: {}",
                e["status"].as_str().unwrap(),
                e["detail"].as_str().unwrap()
            )
        })
        .collect()
}

/// A shell function for a fake `gh`: `$(count NAME)` is 1 at its first
/// call, 2 at its second, and so on.
const COUNT: &str = r#"count() { n=$(cat "$REC/count-$1" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "$REC/count-$1"; echo $n; }
"#;

#[test]
fn a_pull_request_is_opened_once_and_updated_by_the_next_run() {
    let p = pr_project(&by_iteration("RALPH_ITERATION", FINISH));
    let main_before = p.git(&["rev-parse", "main"]);
    let run = run_with_gh(&p, &["--pr-branch", "notes"]);
    assert_eq!(run.code, 0, "{run:#?}");
    // The work is on ralph/notes, pushed; main is untouched.
    assert_eq!(p.git(&["rev-parse", "main"]), main_before);
    assert_eq!(
        p.git(&["log", "--format=%s", "main..ralph/notes"]),
        "[B] task B\n[A] task A"
    );
    assert_eq!(
        remote_git(&p, &["rev-parse", "ralph/notes"]),
        p.git(&["rev-parse", "ralph/notes"])
    );
    let calls = p.rec("gh");
    assert!(
        calls
            .contains("gh pr create --base main --head ralph/notes --title task A --body-file -\n"),
        "{calls}"
    );
    let body = p.rec("pr-body");
    assert!(body.starts_with("## Tasks\n"), "{body}");
    assert!(body.contains("- [x] A task A ("), "{body}");
    assert!(body.contains("- [x] B task B ("), "{body}");
    assert!(body.contains("## Commits\n"), "{body}");
    assert!(body.contains("## Totals\n"), "{body}");
    let result = p.json(".ralph/result.json");
    assert_eq!(
        result["pull_request"]["url"],
        "https://github.test/o/r/pull/7"
    );
    assert_eq!(result["pull_request"]["action"], "opened");
    assert_eq!(result["pull_request"]["draft"], false);

    // A new task, a second run: the same branch, the pull request updated.
    let p = p.task(&pending("C"));
    let run = run_with_gh(&p, &[]);
    assert_eq!(run.code, 0, "{run:#?}");
    let calls = p.rec("gh");
    assert_eq!(calls.matches("gh pr create").count(), 1, "{calls}");
    assert!(
        calls.contains("gh pr edit 7 --title task A --body-file -\n"),
        "{calls}"
    );
    assert!(
        p.rec("pr-body").contains("- [x] C task C ("),
        "{}",
        p.rec("pr-body")
    );
    assert_eq!(
        p.json(".ralph/result.json")["pull_request"]["action"],
        "updated"
    );
}

#[test]
fn a_blocked_run_opens_a_draft_that_leads_with_why() {
    // A finishes; B's agent always fails.
    let p = pr_project(&format!(
        "if [ \"$RALPH_TASK_ID\" = B ]; then exit 1; fi\n{}",
        r#"work "$RALPH_TASK_ID.txt" done; ralph task complete "$RALPH_TASK_ID" > /dev/null"#
    ));
    let run = run_with_gh(&p, &["--pr-branch", "notes"]);
    assert_eq!(run.code, 10, "{run:#?}");
    let calls = p.rec("gh");
    assert!(calls.contains("--body-file - --draft\n"), "{calls}");
    let body = p.rec("pr-body");
    assert!(body.starts_with("## Not finished\n"), "{body}");
    assert!(body.contains("- [x] A task A ("), "{body}");
    assert!(
        body.contains("- [ ] B task B — blocked: failed 3 iterations in a row"),
        "{body}"
    );
    assert!(
        body.contains("\nNext step: unblock the blocked tasks (`ralph task show ID` says why one is blocked; `ralph task start ID` sets it going again) or fix the failing checks, then run ralph again\n"),
        "{body}"
    );
    assert_eq!(p.json(".ralph/result.json")["pull_request"]["draft"], true);
}

#[test]
fn a_secret_in_a_task_title_is_redacted_from_the_body() {
    let p = pr_project(&by_iteration("RALPH_ITERATION", FINISH));
    let secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    let p = p.task(&format!(
        r#"{{"id":"C","title":"rotate {secret}","status":"pending","leaf":true}}"#
    ));
    p.git(&["commit", "-q", "-am", "a task"]);
    let run = run_with_gh(&p, &["--pr-branch", "notes"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let body = p.rec("pr-body");
    assert!(!body.contains(secret), "{body}");
    assert!(body.contains("[redacted]"), "{body}");
}

#[test]
fn delivery_pr_without_gh_stops_before_any_agent_runs() {
    let p = pr_project(&by_iteration("RALPH_ITERATION", FINISH));
    std::fs::remove_file(p.aux().join("bin/gh")).unwrap();
    let run = run_with_gh(&p, &[]);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            20,
            "error: delivery: pr: gh (the GitHub CLI) is not installed or not on PATH\nhint: or set delivery: local in config/ralph.yaml to keep the work on the base\n"
        ),
        "{run:#?}"
    );
    assert!(p.calls().is_empty());
    assert_eq!(p.json(".ralph/result.json")["status"], "failed");
}

/// A push to a remote the repository lacks would fail only after the
/// work is done: the run refuses to start, naming it, before any agent.
#[test]
fn a_push_or_pull_request_to_a_missing_remote_stops_before_any_agent_runs() {
    let said = |hint: &str| {
        format!(
            "error: the repository has no remote origin, so the push would fail after the work is done\nhint: add it (`git remote add origin URL`), name another in git.remote, or set git.push: never{hint}\n"
        )
    };
    let p = project("on_merge", &by_iteration("RALPH_ITERATION", FINISH));
    p.git(&["remote", "remove", "origin"]);
    let run = p.run(&[]);
    assert_eq!((run.code, run.stderr), (30, said("")));
    assert!(p.calls().is_empty());

    let p = pr_project(&by_iteration("RALPH_ITERATION", FINISH));
    p.git(&["remote", "remove", "origin"]);
    let run = run_with_gh(&p, &["--pr-branch", "notes"]);
    assert_eq!((run.code, run.stderr), (30, said(" and delivery: local")));
    assert!(p.calls().is_empty());
    assert_eq!(p.git(&["branch", "--list", "ralph/*"]), "");
}

#[test]
fn a_failed_pull_request_keeps_the_branch_pushed_and_prints_the_command() {
    let p = pr_project(&by_iteration("RALPH_ITERATION", FINISH));
    gh_script(
        &p,
        r#"case "$1 $2" in
  "auth status") exit 0 ;;
  "pr list") echo '[]' ;;
  "pr create") echo 'GraphQL: Resource not accessible' >&2; exit 1 ;;
esac
"#,
    );
    let run = run_with_gh(&p, &["--pr-branch", "notes"]);
    // Not "drained", exit 0: a failure of its own class, which a
    // service manager's restart tries again (exit 20).
    assert_eq!(run.code, 20, "{run:#?}");
    assert_eq!(p.json(".ralph/result.json")["status"], "failed");
    assert_eq!(p.json(".ralph/result.json")["class"], "pull_request_failed");
    assert!(
        run.stderr.contains("ralph: failed — the work is done and pushed, but its pull request could not be opened or updated (gh pr create failed (exit status: 1): GraphQL: Resource not accessible); the next run tries again, or do it by hand: gh pr create "),
        "{run:#?}"
    );
    // Not a server's or the network's failure: not tried again.
    assert!(!run.stderr.contains("trying again"), "{run:#?}");
    let command = "gh pr create --base main --head ralph/notes --title 'task A' --body-file .ralph/pull-request.md";
    assert!(run.stderr.contains(command), "{run:#?}");
    let result = p.json(".ralph/result.json");
    assert_eq!(result["pull_request"]["action"], "failed");
    assert_eq!(result["pull_request"]["command"], command);
    assert!(p.read(".ralph/pull-request.md").contains("## Tasks\n"));
    assert_eq!(
        remote_git(&p, &["rev-parse", "ralph/notes"]),
        p.git(&["rev-parse", "ralph/notes"])
    );
}

#[test]
fn delivery_pr_logged_out_or_without_a_name_stops_before_any_agent_runs() {
    let p = pr_project(&by_iteration("RALPH_ITERATION", FINISH));
    gh_script(
        &p,
        r#"case "$1 $2" in
  "auth status") echo 'You are not logged into any GitHub hosts.' >&2; exit 1 ;;
esac
"#,
    );
    let run = run_with_gh(&p, &[]);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            20,
            "error: delivery: pr: gh is not logged in (gh auth status failed (exit status: 1): You are not logged into any GitHub hosts.); run `gh auth login`\nhint: or set delivery: local in config/ralph.yaml to keep the work on the base\n"
        ),
    );
    // Logged in, but nothing to name the branch after.
    fake_gh(&p);
    let p = p.file("tasks.jsonl", "");
    let run = run_with_gh(&p, &[]);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            30,
            "error: delivery: pr: the pull request needs a branch name: give one with --pr-branch NAME, or add a task\nhint: nothing was written; change the flags or config/ralph.yaml as it says (docs/UNATTENDED.md), or set delivery: local\n"
        ),
    );
    assert!(p.calls().is_empty());
}

/// Settings a pull request does not go with are refused before `gh` is
/// asked or a branch made, with exit 30 (never 20, which a service
/// manager restarts forever): a queue shared through the remote, and
/// workers with watched PRDs.
#[test]
fn delivery_pr_with_settings_it_does_not_go_with_exits_30_writing_nothing() {
    let p = pr_project(&by_iteration("RALPH_ITERATION", FINISH));
    let branches = |p: &TestProject| p.git(&["branch", "--format=%(refname:short)"]);
    let before = branches(&p);
    let run = run_with_gh(&p, &["--remote"]);
    assert_eq!(run.code, 30, "{run:#?}");
    assert!(
        run.stderr.starts_with("error: delivery: pr: a queue shared through the remote (--remote, remote.enabled) lands each task on the base: a pull request does not go with it; run without --remote, or set delivery: local\nhint: nothing was written"),
        "{run:#?}"
    );
    let config = p
        .read("config/ralph.yaml")
        .replace("prds: []", "prds: [\"prds/*.md\"]");
    assert!(config.contains("prds/*.md"), "{config}");
    let p = p.file("config/ralph.yaml", config);
    let run = run_with_gh(&p, &["--workers", "2"]);
    assert_eq!(run.code, 30, "{run:#?}");
    assert!(
        run.stderr.starts_with(
            "error: delivery: pr: a pull request per watched PRD takes one worker: drop --workers"
        ),
        "{run:#?}"
    );
    assert!(p.calls().is_empty());
    assert_eq!(p.rec("gh"), "", "gh was not asked");
    assert_eq!(branches(&p), before, "no branch made");
}

#[test]
fn a_push_that_fails_every_time_ends_the_run_with_the_commits_kept() {
    let p = project("on_exit", &by_iteration("RALPH_ITERATION", FINISH));
    // A pre-receive hook that declines every push.
    let hook = p.aux().join("remote.git/hooks/pre-receive");
    std::fs::write(&hook, "#!/bin/sh\necho 'remote down' >&2\nexit 1\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let before = remote_git(&p, &["rev-parse", "main"]);
    let run = run_quickly(&p);
    assert_eq!(run.code, 20, "{run:#?}");
    let pushes = pushes(&p);
    assert_eq!(pushes.len(), 3, "{pushes:#?}");
    assert!(pushes[1].ends_with("; trying again in 20ms"), "{pushes:#?}");
    let reason = p.json(".ralph/result.json")["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        reason.starts_with("the push of main to origin/main failed 3 times (last: ")
            && reason.contains("remote down")
            && reason.ends_with("); the commits are safe locally: push main by hand, or run again"),
        "{reason}"
    );
    assert!(
        run.stderr.contains(&format!("warning: {reason}\n")),
        "{run:#?}"
    );
    assert_eq!(pushes[2], format!("failed: {reason}"));
    // Both tasks are merged locally; the remote is where it was.
    assert_eq!(
        p.git(&["log", "-2", "--format=%s", "main"]),
        "[B] task B\n[A] task A"
    );
    assert_eq!(remote_git(&p, &["rev-parse", "main"]), before);
}

#[test]
fn dry_run_names_the_push_and_the_gh_command_and_runs_neither() {
    let p = pr_project(&by_iteration("RALPH_ITERATION", FINISH));
    let branches = p.git(&["branch", "--list"]);
    let run = run_with_gh(&p, &["--dry-run", "--pr-branch", "notes"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stdout.contains(
            "push:   ralph/notes to origin/ralph/notes once, when the run ends\npull request, when the run ends: gh pr create --base main --head ralph/notes --title 'task A' --body-file .ralph/pull-request.md\n  (gh pr edit instead when one is open; a draft when the run ends unfinished)\n"
        ),
        "{run:#?}"
    );
    let run = run_with_gh(&p, &["--dry-run", "--json"]);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        json["pull_request"],
        "gh pr create --base main --head ralph/task-a --title 'task A' --body-file .ralph/pull-request.md"
    );
    assert_eq!(
        json["push"],
        "ralph/task-a to origin/ralph/task-a once, when the run ends"
    );
    // Nothing ran and nothing was made: no gh call, no branch, no agent.
    assert!(!p.aux().join("rec/gh").exists());
    assert_eq!(p.git(&["branch", "--list"]), branches);
    assert!(p.calls().is_empty());

    // Pushing the base, without a pull request.
    let p = project("on_merge", &by_iteration("RALPH_ITERATION", FINISH));
    let run = p.run(&["--dry-run"]);
    assert!(
        run.stdout
            .contains("push:   main to origin/main after each squash commit\n"),
        "{run:#?}"
    );
    assert!(!run.stdout.contains("pull request"), "{run:#?}");
    let quiet = project("never", &by_iteration("RALPH_ITERATION", FINISH));
    assert!(!quiet.run(&["--dry-run"]).stdout.contains("push:"));
}

#[test]
fn a_body_over_githubs_limit_keeps_every_task_and_cuts_the_evidence() {
    // Each task's check is a 40,000-character command, so the two checks
    // alone pass the 65,536-character limit.
    let p = pr_project(&by_iteration("RALPH_ITERATION", FINISH));
    let long = format!("test -n '{}'", "x".repeat(40_000));
    let config = p
        .read("config/ralph.yaml")
        .replace("  task: []", &format!("  task:\n    - \"{long}\""));
    let p = p.file("config/ralph.yaml", config);
    p.git(&["commit", "-q", "-am", "a long check"]);
    let run = run_with_gh(&p, &["--pr-branch", "notes"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let body = p.rec("pr-body");
    assert!(body.chars().count() <= 65_536, "{}", body.chars().count());
    assert!(body.starts_with("## Tasks\n"), "{}", &body[..200]);
    assert!(body.contains("- [x] A task A ("), "{}", &body[..400]);
    assert!(body.contains("- [x] B task B ("), "{}", &body[..400]);
    // The commits went first, then B's check; each cut says so.
    let cut = |section: &str| {
        let start = body.find(section).unwrap();
        let end = body[start + 3..]
            .find("## ")
            .map_or(body.len(), |e| e + start + 3);
        body[start..end].to_owned()
    };
    let verification = cut("## Verification\n");
    assert_eq!(verification.matches("- ✅ `test -n").count(), 1);
    assert!(verification.ends_with("\n_… 1 more line cut to fit GitHub's limit._\n\n"));
    assert_eq!(
        cut("## Commits\n"),
        "## Commits\n\n_… 2 more lines cut to fit GitHub's limit._\n\n"
    );
    assert!(body.contains("## Totals\n"));
    assert_eq!(body, p.read(".ralph/pull-request.md"));
}

#[test]
fn the_final_review_of_a_pull_request_run_is_in_its_body() {
    let agent = r#"case "$RALPH_ROLE" in
final-reviewer) ralph task complete "$RALPH_TASK_ID" > /dev/null ;;
*) work "$RALPH_TASK_ID.txt" done; ralph task complete "$RALPH_TASK_ID" > /dev/null ;;
esac
"#;
    let p = pr_project(agent);
    let run = run_with_gh(&p, &["--pr-branch", "notes", "--final-review"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        p.git(&["log", "--format=%s", "main..ralph/notes"]),
        "[C] Final review of the run\n[B] task B\n[A] task A"
    );
    let body = p.rec("pr-body");
    assert!(body.contains("- [x] C Final review of the run ("), "{body}");
    assert_eq!(
        remote_git(&p, &["rev-parse", "ralph/notes"]),
        p.git(&["rev-parse", "ralph/notes"])
    );
}

#[test]
fn a_gh_that_lists_no_json_fails_the_pull_request_not_the_run() {
    let p = pr_project(&by_iteration("RALPH_ITERATION", FINISH));
    gh_script(
        &p,
        r#"case "$1 $2" in
  "auth status") exit 0 ;;
  "pr list") echo 'Welcome to GitHub CLI!' ;;
esac
"#,
    );
    let run = run_with_gh(&p, &["--pr-branch", "notes"]);
    assert_eq!(
        run.code, 20,
        "a pull request not opened fails the run (pull_request_failed): {run:#?}"
    );
    let result = p.json(".ralph/result.json");
    assert_eq!(result["pull_request"]["action"], "failed");
    assert_eq!(
        result["pull_request"]["error"],
        "gh pr list printed no JSON (expected value at line 1 column 1): Welcome to GitHub CLI!"
    );
    assert_eq!(
        remote_git(&p, &["rev-parse", "ralph/notes"]),
        p.git(&["rev-parse", "ralph/notes"])
    );
}

#[test]
fn a_gh_that_cannot_reach_github_at_the_start_is_asked_again() {
    let p = pr_project(&by_iteration("RALPH_ITERATION", FINISH));
    gh_script(
        &p,
        &format!(
            r#"{COUNT}echo "gh $*" >> "$REC/gh"
case "$1 $2" in
  "auth status") if [ "$(count auth)" -le 2 ]; then echo 'error connecting to api.github.com: dial tcp: connection refused' >&2; exit 1; fi ;;
  "pr list") echo '[]' ;;
  "pr create") cat > "$REC/pr-body"; echo "https://github.test/o/r/pull/7" ;;
esac
"#
        ),
    );
    let run = run_with_gh(&p, &["--pr-branch", "notes"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(p.rec("gh").matches("gh auth status").count(), 3);
    assert!(
        run.stderr.contains(
            "gh cannot reach GitHub (gh auth status failed (exit status: 1): error connecting to api.github.com: dial tcp: connection refused); trying again in 20ms (retry 2 of 3)\n"
        ),
        "{run:#?}"
    );
    assert_eq!(
        p.json(".ralph/result.json")["pull_request"]["action"],
        "opened"
    );
}

#[test]
fn gh_server_and_network_errors_are_tried_again_until_it_answers() {
    let p = pr_project(&by_iteration("RALPH_ITERATION", FINISH));
    gh_script(
        &p,
        &format!(
            r#"{COUNT}echo "gh $*" >> "$REC/gh"
case "$1 $2" in
  "auth status") exit 0 ;;
  "pr list") if [ "$(count list)" = 1 ]; then echo 'Post "https://api.github.com/graphql": EOF' >&2; exit 1; fi; echo '[]' ;;
  "pr create") cat > "$REC/pr-body"; if [ "$(count create)" -le 2 ]; then echo 'HTTP 502: Bad Gateway (https://api.github.com/graphql)' >&2; exit 1; fi; echo "https://github.test/o/r/pull/7" ;;
esac
"#
        ),
    );
    let run = run_with_gh(&p, &["--pr-branch", "notes"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let calls = p.rec("gh");
    assert_eq!(calls.matches("gh pr list").count(), 2, "{calls}");
    assert_eq!(calls.matches("gh pr create").count(), 3, "{calls}");
    let list = "gh pr list failed (exit status: 1): Post \"https://api.github.com/graphql\": EOF";
    let create = "gh pr create failed (exit status: 1): HTTP 502: Bad Gateway (https://api.github.com/graphql)";
    assert_eq!(
        pull_request_events(&p),
        [
            format!("retry: {list}; trying again in 10ms (retry 1 of 3)"),
            format!("retry: {create}; trying again in 10ms (retry 1 of 3)"),
            format!("retry: {create}; trying again in 20ms (retry 2 of 3)"),
            "opened: opened https://github.test/o/r/pull/7".to_owned(),
        ]
    );
    assert!(
        run.stderr
            .contains(&format!("{create}; trying again in 20ms (retry 2 of 3)\n")),
        "{run:#?}"
    );
    let result = p.json(".ralph/result.json");
    assert_eq!(result["pull_request"]["action"], "opened");
    assert!(p.rec("pr-body").contains("- [x] B task B ("));
}

#[test]
fn gh_failing_transiently_four_times_leaves_the_command_to_run_by_hand() {
    let p = pr_project(&by_iteration("RALPH_ITERATION", FINISH));
    gh_script(
        &p,
        r#"echo "gh $*" >> "$REC/gh"
case "$1 $2" in
  "auth status") exit 0 ;;
  "pr list") echo '[]' ;;
  "pr create") echo 'HTTP 503: Service Unavailable' >&2; exit 1 ;;
esac
"#,
    );
    let run = run_with_gh(&p, &["--pr-branch", "notes"]);
    assert_eq!(
        run.code, 20,
        "a pull request not opened fails the run (pull_request_failed): {run:#?}"
    );
    let calls = p.rec("gh");
    assert_eq!(calls.matches("gh pr create").count(), 4, "{calls}");
    let events = pull_request_events(&p);
    assert_eq!(events.len(), 4, "{events:#?}");
    assert!(
        events[2].ends_with("trying again in 40ms (retry 3 of 3)"),
        "{events:#?}"
    );
    let command = "gh pr create --base main --head ralph/notes --title 'task A' --body-file .ralph/pull-request.md";
    assert_eq!(
        events[3],
        format!(
            "failed: gh pr create failed (exit status: 1): HTTP 503: Service Unavailable; ralph/notes is pushed: open the pull request with `{command}`"
        )
    );
    assert_eq!(
        p.json(".ralph/result.json")["pull_request"]["command"],
        command
    );
    assert_eq!(
        remote_git(&p, &["rev-parse", "ralph/notes"]),
        p.git(&["rev-parse", "ralph/notes"])
    );
}

#[test]
fn a_gh_that_hangs_is_stopped_at_its_deadline_and_asked_again() {
    let p = pr_project(&by_iteration("RALPH_ITERATION", FINISH));
    // The first `gh pr create` never answers: it sleeps past the test.
    gh_script(
        &p,
        &format!(
            r#"{COUNT}echo "gh $*" >> "$REC/gh"
case "$1 $2" in
  "auth status") exit 0 ;;
  "pr list") echo '[]' ;;
  "pr create") if [ "$(count create)" = 1 ]; then exec sleep 120; fi; cat > "$REC/pr-body"; echo "https://github.test/o/r/pull/7" ;;
esac
"#
        ),
    );
    // With a second lasting 5 ms, the 2-minute deadline is 600 ms.
    let run = run_with_gh(&p, &["--pr-branch", "notes"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let calls = p.rec("gh");
    assert_eq!(calls.matches("gh pr create").count(), 2, "{calls}");
    assert_eq!(
        pull_request_events(&p),
        [
            "retry: gh pr create did not finish in 600ms; trying again in 10ms (retry 1 of 3)",
            "opened: opened https://github.test/o/r/pull/7",
        ]
    );
    assert_eq!(
        p.json(".ralph/result.json")["pull_request"]["action"],
        "opened"
    );
    assert!(p.rec("pr-body").contains("- [x] B task B ("));
}

/// A project whose pull request body is past 60,000 bytes but within
/// GitHub's 65,536 characters: each task's check is a 31,000-character
/// command.
fn long_body_project() -> TestProject {
    let p = pr_project(&by_iteration("RALPH_ITERATION", FINISH));
    let long = format!("test -n '{}'", "x".repeat(31_000));
    let config = p
        .read("config/ralph.yaml")
        .replace("  task: []", &format!("  task:\n    - \"{long}\""));
    let p = p.file("config/ralph.yaml", config);
    p.git(&["commit", "-q", "-am", "a long check"]);
    p
}

#[test]
fn a_body_refused_for_its_length_is_sent_once_more_cut_shorter() {
    let p = long_body_project();
    gh_script(
        &p,
        &format!(
            r#"{COUNT}echo "gh $*" >> "$REC/gh"
case "$1 $2" in
  "auth status") exit 0 ;;
  "pr list") echo '[]' ;;
  "pr create") n=$(count create); cat > "$REC/body-$n"
    if [ $n = 1 ]; then echo 'GraphQL: Body is too long (maximum is 65536 characters) (createPullRequest)' >&2; exit 1; fi
    echo "https://github.test/o/r/pull/7" ;;
esac
"#
        ),
    );
    let run = run_with_gh(&p, &["--pr-branch", "notes"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(p.rec("gh").matches("gh pr create").count(), 2);
    let (full, short) = (p.rec("body-1"), p.rec("body-2"));
    assert!(full.len() > 60_000, "{}", full.len());
    assert!(short.len() <= 60_000, "{}", short.len());
    // The full body stays where the cut says it is; the short one beside it.
    assert_eq!(p.read(".ralph/pull-request.md"), full);
    assert_eq!(p.read(".ralph/pull-request-short.md"), short);
    assert!(short.starts_with("## Tasks\n"), "{}", &short[..200]);
    assert!(short.contains("- [x] A task A ("), "{}", &short[..400]);
    assert!(short.contains("- [x] B task B ("), "{}", &short[..400]);
    assert!(
        short.contains(
            "_… 1 more line cut to fit GitHub's limit; the full body is in `.ralph/pull-request.md`._\n"
        ),
        "{short}"
    );
    let events = pull_request_events(&p);
    assert_eq!(
        events[0],
        format!(
            "retry: GitHub refused the pull request's body for its length ({} characters, {} bytes); sending it once more cut to {} bytes (the full body stays in .ralph/pull-request.md)",
            full.chars().count(),
            full.len(),
            short.len()
        )
    );
    assert_eq!(events[1], "opened: opened https://github.test/o/r/pull/7");
    assert_eq!(events.len(), 2, "{events:#?}");

    // Refused every time: one shorter try only, and the command by hand
    // sends the shorter body.
    let p = long_body_project();
    gh_script(
        &p,
        r#"echo "gh $*" >> "$REC/gh"
case "$1 $2" in
  "auth status") exit 0 ;;
  "pr list") echo '[]' ;;
  "pr create") echo 'GraphQL: Body is too long (maximum is 65536 characters) (createPullRequest)' >&2; exit 1 ;;
esac
"#,
    );
    let run = run_with_gh(&p, &["--pr-branch", "notes"]);
    assert_eq!(
        run.code, 20,
        "a pull request not opened fails the run (pull_request_failed): {run:#?}"
    );
    assert_eq!(p.rec("gh").matches("gh pr create").count(), 2);
    assert_eq!(
        p.json(".ralph/result.json")["pull_request"]["command"],
        "gh pr create --base main --head ralph/notes --title 'task A' --body-file .ralph/pull-request-short.md"
    );
}

#[test]
fn delivery_labels_go_on_the_pull_request_and_into_the_command_by_hand() {
    let p = pr_project(&by_iteration("RALPH_ITERATION", FINISH));
    let config = p.read("config/ralph.yaml").replace(
        "delivery_labels: []",
        "delivery_labels: [ralph, \"needs review\"]",
    );
    let p = p.file("config/ralph.yaml", config);
    p.git(&["commit", "-q", "-am", "labels"]);
    let run = run_with_gh(&p, &["--dry-run", "--json", "--pr-branch", "notes"]);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        json["pull_request"],
        "gh pr create --base main --head ralph/notes --title 'task A' --body-file .ralph/pull-request.md --label ralph --label 'needs review'"
    );
    let run = run_with_gh(&p, &["--pr-branch", "notes"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let calls = p.rec("gh");
    assert!(
        calls.contains(
            "gh pr create --base main --head ralph/notes --title task A --body-file - --label ralph --label needs review\n"
        ),
        "{calls}"
    );

    // The next run updates it, and gh refuses: the command by hand is
    // the update, labels and all, and the branch is pushed.
    let p = p.task(&pending("C"));
    gh_script(
        &p,
        r#"echo "gh $*" >> "$REC/gh"
case "$1 $2" in
  "auth status") exit 0 ;;
  "pr list") echo '[{"number":7,"url":"https://github.test/o/r/pull/7"}]' ;;
  "pr edit") echo "could not add label: 'needs review' not found" >&2; exit 1 ;;
esac
"#,
    );
    let run = run_with_gh(&p, &[]);
    assert_eq!(
        run.code, 20,
        "a pull request not opened fails the run (pull_request_failed): {run:#?}"
    );
    let calls = p.rec("gh");
    assert_eq!(
        calls.matches("gh pr edit 7 --title task A --body-file - --add-label ralph --add-label needs review\n").count(),
        1,
        "{calls}"
    );
    let command = "gh pr edit 7 --title 'task A' --body-file .ralph/pull-request.md --add-label ralph --add-label 'needs review'";
    assert!(
        run.stderr.contains(&format!(
            "warning: gh pr edit failed (exit status: 1): could not add label: 'needs review' not found; ralph/notes is pushed: update pull request #7 with `{command}`\n"
        )),
        "{run:#?}"
    );
    let result = p.json(".ralph/result.json");
    assert_eq!(result["pull_request"]["action"], "failed");
    assert_eq!(result["pull_request"]["command"], command);
    assert_eq!(
        remote_git(&p, &["rev-parse", "ralph/notes"]),
        p.git(&["rev-parse", "ralph/notes"])
    );
}

/// Sets `git.ssh_key: <key>` in the project's settings and commits them.
fn set_ssh_key(p: &TestProject, key: &str) {
    let config = p
        .read("config/ralph.yaml")
        .replace("  ssh_key: null", &format!("  ssh_key: \"{key}\""));
    std::fs::write(p.path().join("config/ralph.yaml"), config).unwrap();
    p.git(&["commit", "-q", "-am", "a deploy key"]);
}

#[test]
fn git_ssh_key_is_the_key_ralphs_push_offers_and_is_never_printed() {
    use std::os::unix::fs::PermissionsExt;
    let p = project("on_exit", &by_iteration("RALPH_ITERATION", FINISH));
    // A key in a folder whose name a shell would split.
    let key = p.aux().join("my keys/deploy key");
    std::fs::create_dir_all(key.parent().unwrap()).unwrap();
    std::fs::write(&key, "not really a key\n").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    set_ssh_key(&p, key.to_str().unwrap());
    // The remote over ssh, through a stand-in `ssh` that records its
    // arguments, then serves the push from the bare repository.
    p.git(&[
        "remote",
        "set-url",
        "origin",
        "ssh://git@example.invalid/x.git",
    ]);
    let ssh = p.aux().join("bin/ssh");
    let script = r#"#!/bin/sh
printf '%s\n' "$@" >> "$REC/ssh"
# The last argument is git's command: git-receive-pack '/x.git'.
for last; do :; done
exec git "$(echo "${last%% *}" | sed 's/^git-//')" "$REMOTE"
"#;
    let script = script
        .replace("$REC", &p.aux().join("rec").display().to_string())
        .replace("$REMOTE", &p.aux().join("remote.git").display().to_string());
    std::fs::write(&ssh, script).unwrap();
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut command = p.run_command(&[]);
    command.env("PATH", p.path_with_aux_bin());
    // The setting wins over the caller's own GIT_SSH_COMMAND.
    command.env("GIT_SSH_COMMAND", "false");
    let run = crate::support::finish(command, 60);
    assert_eq!(run.code, 0, "{run:#?}\n{}", p.rec("ssh"));
    let args = p.rec("ssh");
    assert!(
        args.starts_with(&format!("-i\n{}\n-o\nIdentitiesOnly=yes\n", key.display())),
        "{args}"
    );
    assert!(args.contains("git@example.invalid\n"), "{args}");
    assert_eq!(
        remote_git(&p, &["rev-parse", "main"]),
        p.git(&["rev-parse", "main"])
    );
    // Neither the key's path nor the command that names it is printed or
    // logged.
    for (name, text) in [
        ("stdout", run.stdout.clone()),
        ("stderr", run.stderr.clone()),
        ("ralph.log", p.read("ralph.log")),
        ("events", p.read(".ralph/events.ndjson")),
        ("result", p.read(".ralph/result.json")),
    ] {
        assert!(!text.contains("deploy key"), "{name}: {text}");
        assert!(!text.contains("IdentitiesOnly"), "{name}: {text}");
    }
}

#[test]
fn a_git_ssh_key_that_cannot_be_used_stops_the_run_before_any_agent() {
    let p = project("on_merge", &by_iteration("RALPH_ITERATION", FINISH));
    set_ssh_key(&p, "keys/deploy");
    let run = p.run(&[]);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            30,
            format!(
                "error: git.ssh_key: {}: there is no such file, so the push would fail after the work is done\nhint: point git.ssh_key at the private key file, readable by you alone (`chmod 600 {0}`), or set it to null to push with your own ssh setup\n",
                p.path().join("keys/deploy").display()
            )
            .as_str()
        ),
        "{run:#?}"
    );
    assert!(p.calls().is_empty());

    // The same before a pull request's branch is made.
    let p = pr_project(&by_iteration("RALPH_ITERATION", FINISH));
    set_ssh_key(&p, "keys/deploy");
    let run = run_with_gh(&p, &["--pr-branch", "notes"]);
    assert_eq!(run.code, 30, "{run:#?}");
    assert!(run.stderr.starts_with("error: git.ssh_key: "), "{run:#?}");
    assert!(p.calls().is_empty());
    assert_eq!(p.git(&["branch", "--list", "ralph/*"]), "");
}
