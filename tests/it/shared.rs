//! Several machines sharing one queue through a git remote
//! (`ralph run --remote`, docs/SCALE.md): clones of one bare repository on
//! this host, each running ralph with a scripted agent, git's real
//! transport between them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::support::{Run, TestProject, wait_for, wait_until};

/// A task line: `id`, pending, a leaf, with `deps`.
fn task(id: &str, deps: &[&str]) -> String {
    let deps: Vec<String> = deps.iter().map(|d| format!("\"{d}\"")).collect();
    format!(
        r#"{{"id":"{id}","title":"task {id}","status":"pending","leaf":true,"deps":[{}]}}"#,
        deps.join(",")
    )
}

/// The agent: works a moment, commits a file of its own, marks the task
/// complete; the machine's name goes into the file. A task whose title
/// says "split" is split into two children instead.
const AGENT: &str = r#"echo "$RALPH_TASK_ID $MACHINE" >> "$REC/worked"
if [ -f "$REC/slow" ]; then work "$RALPH_TASK_ID.partial" "begun by $MACHINE"; sleep 30; fi
if [ -f "$REC/slow-$RALPH_TASK_ID" ]; then sleep 3; fi
case "$RALPH_TASK_TITLE" in split*) ralph task split "$RALPH_TASK_ID" "first half" "second half" > /dev/null; exit 0;; esac
sleep 0.2
work "$RALPH_TASK_ID.txt" "$RALPH_TASK_ID by $MACHINE"
ralph task complete "$RALPH_TASK_ID" > /dev/null
"#;

/// A bare remote holding the project made from `tasks`, and `machines`
/// clones of it, each with the agent.
struct Fleet {
    origin: TestProject,
    machines: Vec<TestProject>,
    /// Workers per machine.
    workers: &'static str,
}

impl Fleet {
    fn new(tasks: &[String], machines: usize) -> Fleet {
        let mut origin = TestProject::new();
        for line in tasks {
            origin = origin.task(line);
        }
        let origin = origin.git_init();
        let remote = origin.aux().join("remote.git");
        origin.git(&["clone", "-q", "--bare", ".", remote.to_str().unwrap()]);
        // Every move of the remote's refs logged, to check it only ever
        // moved main forward.
        origin.git(&[
            "-C",
            remote.to_str().unwrap(),
            "config",
            "core.logAllRefUpdates",
            "always",
        ]);
        let machines = (0..machines)
            .map(|_| {
                let machine = TestProject::new().agent(AGENT);
                machine.git(&["clone", "-q", remote.to_str().unwrap(), "."]);
                machine.git(&["config", "user.name", "Test Author"]);
                machine.git(&["config", "user.email", "author@example.com"]);
                machine
            })
            .collect();
        Fleet {
            origin,
            machines,
            workers: "2",
        }
    }

    fn remote(&self) -> PathBuf {
        self.origin.aux().join("remote.git")
    }

    /// `git args` in the bare remote.
    fn at_remote(&self, args: &[&str]) -> String {
        let output = std::process::Command::new("git")
            .arg("-C")
            .arg(self.remote())
            .args(args)
            .output()
            .unwrap();
        assert!(output.status.success(), "git {args:?}: {output:?}");
        String::from_utf8_lossy(&output.stdout)
            .trim_end()
            .to_owned()
    }

    /// Starts `ralph run --remote --workers N` on machine `n` (from 0),
    /// with fast heartbeats, a second of a wait before a retry lasting
    /// 5 ms (a landing tried again after 0.5 ms or 5 ms, not 100 ms or
    /// 1 s) and `env`.
    fn start(&self, n: usize, env: &[(&str, &str)]) -> std::process::Child {
        let mut command = self.machines[n].run_command(&["--remote", "--workers", self.workers]);
        command
            .env("MACHINE", format!("m{}", n + 1))
            .env("RALPH_REMOTE_HEARTBEAT", "200ms")
            .env("RALPH_TEST_SECOND_MS", "5")
            .env("RALPH_MAX_ITERATIONS", "100")
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        command.spawn().unwrap()
    }

    /// Starts `ralph run --remote` on every machine; waits for them all.
    fn run_all(&self) -> Vec<Run> {
        let children: Vec<_> = (0..self.machines.len())
            .map(|n| self.start(n, &[]))
            .collect();
        children
            .into_iter()
            .map(|child| wait_for(child, 180))
            .collect()
    }

    /// A clone without ralph appends `tasks` to the queue by hand and
    /// pushes, fetching again until the push goes through.
    fn push_by_hand(&self, tasks: &[String]) {
        let person = TestProject::new();
        person.git(&["clone", "-q", self.remote().to_str().unwrap(), "."]);
        person.git(&["config", "user.name", "A Person"]);
        person.git(&["config", "user.email", "person@example.com"]);
        for _ in 0..50 {
            person.git(&["fetch", "-q"]);
            person.git(&["reset", "-q", "--hard", "origin/main"]);
            let mut queue = person.read_or_empty("tasks.jsonl");
            for line in tasks {
                queue.push_str(&format!("{line}\n"));
            }
            std::fs::write(person.path().join("tasks.jsonl"), queue).unwrap();
            person.git(&["commit", "-q", "-am", "add tasks by hand"]);
            if person.try_git(&["push", "-q", "origin", "main"]).is_some() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("the hand edit never got pushed");
    }

    /// The claims on the remote, by task id.
    fn claims(&self) -> Vec<String> {
        self.at_remote(&["for-each-ref", "--format=%(refname)", "refs/ralph/claims/"])
            .lines()
            .map(|line| line.trim_start_matches("refs/ralph/claims/").to_owned())
            .collect()
    }

    /// Checks the invariants of docs/SCALE.md on the remote: each id of
    /// `ids` has exactly one `Completes:` commit on main and one archive
    /// record, the base moved only forward (a linear history of single
    /// parents), each commit's archive a byte prefix of its child's, no
    /// claim left.
    fn check_remote(&self, ids: &[&str]) {
        let log = self.at_remote(&["log", "--format=%H %P%n%B%n--end--", "main"]);
        let mut completes: BTreeMap<String, usize> = BTreeMap::new();
        for line in log.lines() {
            if let Some(id) = line.strip_prefix("Completes: ") {
                *completes.entry(id.to_owned()).or_default() += 1;
            }
        }
        for id in ids {
            assert_eq!(completes.get(*id), Some(&1), "{id}: {completes:?}\n{log}");
        }
        assert_eq!(self.at_remote(&["rev-list", "--min-parents=2", "main"]), "");
        let done = self.at_remote(&["show", "main:tasks-done.jsonl"]);
        let mut archived: Vec<String> = done
            .lines()
            .map(|line| {
                let value: serde_json::Value = serde_json::from_str(line).unwrap();
                value["id"].as_str().unwrap().to_owned()
            })
            .collect();
        archived.sort();
        let mut expected: Vec<String> = ids.iter().map(|id| (*id).to_owned()).collect();
        expected.sort();
        assert_eq!(archived, expected, "{done}");
        // Each commit's archive is a byte prefix of its child's.
        let commits = self.at_remote(&["rev-list", "--reverse", "main"]);
        let mut last = String::new();
        for commit in commits.lines() {
            let output = std::process::Command::new("git")
                .arg("-C")
                .arg(self.remote())
                .args(["show", &format!("{commit}:tasks-done.jsonl")])
                .output()
                .unwrap();
            let now = String::from_utf8_lossy(&output.stdout).into_owned();
            assert!(
                now.starts_with(&last),
                "{commit} rewrote the archive:\n{last}\n--\n{now}"
            );
            last = now;
        }
        assert_eq!(self.at_remote(&["for-each-ref", "refs/ralph/claims/"]), "");
        assert_eq!(self.at_remote(&["for-each-ref", "refs/ralph/wip/"]), "");
        // main only ever moved forward: each value in its log descends
        // from the one before (a person's rewind aside, which a test makes
        // on purpose after this check).
        let moves = self.at_remote(&["reflog", "show", "--format=%H", "refs/heads/main"]);
        let moves: Vec<&str> = moves.lines().collect();
        for pair in moves.windows(2) {
            let (newer, older) = (pair[0], pair[1]);
            let output = std::process::Command::new("git")
                .arg("-C")
                .arg(self.remote())
                .args(["merge-base", "--is-ancestor", older, newer])
                .status()
                .unwrap();
            assert!(
                output.success(),
                "main moved from {older} to {newer}, not forward"
            );
        }
        // The agent's own commit of each leaf it worked is kept in that
        // task's history on the remote.
        for id in ids {
            let kept = format!("refs/ralph/tasks/{id}");
            if self.at_remote(&["for-each-ref", &kept]).is_empty() {
                continue;
            }
            let subjects = self.at_remote(&["log", "--format=%s", &kept]);
            assert!(
                subjects
                    .lines()
                    .any(|line| line == format!("{id}: {id}.txt")),
                "{id}: {subjects}"
            );
        }
    }
}

/// Checks `machine` worked none of `ids`.
fn not_worked_by(machine: &TestProject, ids: &[String]) {
    let lines = worked(machine);
    for id in ids {
        assert!(
            !lines.iter().any(|line| line.starts_with(&format!("{id} "))),
            "{id} was worked by the other machine: {lines:?}"
        );
    }
}

fn worked(machine: &TestProject) -> Vec<String> {
    machine.rec("worked").lines().map(str::to_owned).collect()
}

fn files_of(path: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(path)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".txt"))
        .collect();
    names.sort();
    names
}

#[test]
fn two_machines_share_a_queue_and_land_every_task_once() {
    let ids = ["A", "B", "C", "D", "E", "F", "G", "H"];
    let tasks: Vec<String> = ids
        .iter()
        .map(|id| match *id {
            "E" => task(id, &["A"]),
            "H" => task(id, &["E"]),
            _ => task(id, &[]),
        })
        .collect();
    let fleet = Fleet::new(&tasks, 2);
    let runs = fleet.run_all();
    for run in &runs {
        assert_eq!(run.code, 0, "{run:#?}");
    }
    fleet.check_remote(&ids);
    // Both machines worked, and no task was worked by both.
    let (one, two) = (worked(&fleet.machines[0]), worked(&fleet.machines[1]));
    assert!(!one.is_empty() && !two.is_empty(), "{one:?} {two:?}");
    for line in &one {
        let id = line.split(' ').next().unwrap();
        assert!(
            !two.iter().any(|other| other.split(' ').next() == Some(id)),
            "{id} worked on both: {one:?} {two:?}"
        );
    }
    // Each clone's checkout ends on the shared tip, with every file.
    let tip = fleet.at_remote(&["rev-parse", "main"]);
    for machine in &fleet.machines {
        machine.git(&["fetch", "-q"]);
        let expected: Vec<String> = ids.iter().map(|id| format!("{id}.txt")).collect();
        if machine.git(&["rev-parse", "main"]) == tip {
            assert_eq!(files_of(machine.path()), expected);
        }
        assert_eq!(machine.git(&["status", "--porcelain"]), "");
    }
}

/// Thirty tasks, some waiting on others, two split by their agent.
fn thirty() -> (Vec<String>, Vec<String>) {
    let mut lines = Vec::new();
    let mut landed = Vec::new();
    for n in 1..=30 {
        let id = format!("T{n:02}");
        let deps: Vec<String> = match n {
            n if n % 7 == 0 => vec![format!("T{:02}", n - 5)],
            12 => vec!["T03".to_owned(), "T04".to_owned()],
            _ => Vec::new(),
        };
        let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
        let mut line = task(&id, &deps);
        if n == 9 || n == 20 {
            line = line.replace(&format!("task {id}"), &format!("split {id}"));
            landed.push(format!("{id}.1"));
            landed.push(format!("{id}.2"));
        }
        landed.push(id);
        lines.push(line);
    }
    (lines, landed)
}

#[test]
fn three_machines_with_two_workers_each_land_thirty_tasks_once() {
    let (tasks, landed) = thirty();
    let fleet = Fleet::new(&tasks, 3);
    let runs = fleet.run_all();
    for run in &runs {
        assert_eq!(run.code, 0, "{run:#?}");
    }
    let ids: Vec<&str> = landed.iter().map(String::as_str).collect();
    fleet.check_remote(&ids);
    // No leaf was worked twice, and every machine had a share.
    let mut worked: BTreeMap<String, usize> = BTreeMap::new();
    for machine in &fleet.machines {
        let lines = self::worked(machine);
        assert!(!lines.is_empty(), "a machine did nothing");
        for line in lines {
            *worked
                .entry(line.split(' ').next().unwrap().to_owned())
                .or_default() += 1;
        }
    }
    for (id, count) in &worked {
        assert_eq!(*count, 1, "{id} worked {count} times: {worked:?}");
    }
    // Each task's branch history is kept on the remote.
    let kept = fleet.at_remote(&["for-each-ref", "--format=%(refname)", "refs/ralph/tasks/"]);
    for id in ["T01", "T09.1", "T30"] {
        assert!(
            kept.lines()
                .any(|line| line == format!("refs/ralph/tasks/{id}")),
            "{id}: {kept}"
        );
    }
}

/// Machine 1 starts on six tasks with a slow agent and is killed with -9
/// once it holds two claims; returns the ids it held.
fn killed_holding_two_claims(fleet: &Fleet) -> Vec<String> {
    std::fs::write(fleet.machines[0].aux().join("rec/slow"), "").unwrap();
    let mut child = fleet.start(0, &[]);
    // Both claims on the remote, and known here (the kill comes after
    // the push, not between it and the local ref).
    let known = || {
        fleet.machines[0]
            .git(&["for-each-ref", "refs/ralph/seen/claims/"])
            .lines()
            .count()
    };
    // And the work each agent began, pushed with a beat.
    let pushed = || {
        fleet
            .at_remote(&["for-each-ref", "refs/ralph/wip/"])
            .lines()
            .count()
    };
    wait_until(&mut child, 30, "no two claims made", || {
        fleet.claims().len() >= 2 && known() >= 2 && pushed() >= 2
    });
    let held = fleet.claims();
    child.kill().unwrap();
    child.wait().unwrap();
    std::fs::remove_file(fleet.machines[0].aux().join("rec/slow")).unwrap();
    held
}

fn six() -> (Vec<String>, Vec<&'static str>) {
    let ids = vec!["A", "B", "C", "D", "E", "F"];
    (ids.iter().map(|id| task(id, &[])).collect(), ids)
}

#[test]
fn a_machine_killed_holding_claims_resumes_them_when_restarted_in_time() {
    let (tasks, ids) = six();
    let fleet = Fleet::new(&tasks, 2);
    let held = killed_holding_two_claims(&fleet);
    // `ralph status` shows the claims as its last fetch saw them.
    let status = fleet.machines[0].ralph(&["status"]);
    assert_eq!(status.code, 0, "{status:#?}");
    assert!(
        status.stdout.contains("shared queue: this machine "),
        "{}",
        status.stdout
    );
    let json = fleet.machines[0].ralph(&["status", "--json"]).json();
    let machine = json["shared"]["machine"].as_str().unwrap().to_owned();
    let claims = json["shared"]["claims"].as_array().unwrap();
    for id in &held {
        assert!(
            status
                .stdout
                .contains(&format!("  {id}: {} (", &machine[..8])),
            "{id}: {}",
            status.stdout
        );
        let claim = claims.iter().find(|c| c["task"] == id.as_str()).unwrap();
        assert_eq!(claim["machine"], machine.as_str());
        assert!(claim["beat"].as_u64().is_some() && claim["worker"] != "");
    }
    // So does `ralph top`.
    let mut top = fleet.machines[0].ralph_command(&["top", "--once"]);
    top.env("COLUMNS", "200").env("LINES", "30");
    let top = crate::support::finish(top, 30);
    for id in &held {
        assert!(
            top.stdout.contains(&format!("{id} here beat ")),
            "{id}: {}",
            top.stdout
        );
    }
    // Restarted before its claims go stale, beside a second machine:
    // its claims are its own, so it goes on with them and nobody else
    // works them.
    let one = fleet.start(0, &[("RALPH_REMOTE_STALE_AFTER", "30s")]);
    let two = fleet.start(1, &[("RALPH_REMOTE_STALE_AFTER", "30s")]);
    let (one, two) = (wait_for(one, 120), wait_for(two, 120));
    assert_eq!(one.code, 0, "{one:#?}");
    assert_eq!(two.code, 0, "{two:#?}");
    fleet.check_remote(&ids);
    not_worked_by(&fleet.machines[1], &held);
}

#[test]
fn a_dead_machines_claims_are_taken_over_once_stale_and_its_return_lands_nothing_twice() {
    let (tasks, ids) = six();
    let fleet = Fleet::new(&tasks, 2);
    let held = killed_holding_two_claims(&fleet);
    // The second machine waits out stale_after, then takes the dead
    // machine's tasks over and lands everything.
    let two = wait_for(fleet.start(1, &[("RALPH_REMOTE_STALE_AFTER", "1s")]), 120);
    assert_eq!(two.code, 0, "{two:#?}");
    for id in &held {
        assert!(
            two.stderr.contains(&format!("{id}: "))
                && two.stderr.contains("taken over, going on from its work"),
            "{id}: {}",
            two.stderr
        );
        // The work the dead machine began is in what landed.
        assert_eq!(
            fleet.at_remote(&["show", &format!("main:{id}.partial")]),
            "begun by m1"
        );
    }
    fleet.check_remote(&ids);
    // The dead machine comes back: nothing left for it, nothing twice.
    let one = wait_for(fleet.start(0, &[]), 120);
    assert_eq!(one.code, 0, "{one:#?}");
    fleet.check_remote(&ids);
}

/// Makes machine `n` reach the remote through `ssh://fake`, a script
/// that runs git's own `git-upload-pack`/`git-receive-pack` on the bare
/// repository, or fails as a network does while `<aux>/partition`
/// exists: git's real transport, cut at will. Returns the environment
/// its runs need.
fn through_fake_ssh(fleet: &Fleet, n: usize) -> Vec<(String, String)> {
    let machine = &fleet.machines[n];
    let script = machine.aux().join("fake-ssh");
    std::fs::write(
        &script,
        r#"#!/bin/sh
if [ -f "$(dirname "$0")/partition" ]; then
  echo "ssh: connect to host fake port 22: Network is unreachable" >&2
  exit 255
fi
shift
exec sh -c "$*"
"#,
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let url = format!("ssh://fake{}", fleet.remote().display());
    machine.git(&["remote", "set-url", "origin", &url]);
    vec![
        ("GIT_SSH_COMMAND".to_owned(), script.display().to_string()),
        ("GIT_SSH_VARIANT".to_owned(), "simple".to_owned()),
    ]
}

#[test]
fn a_partitioned_machine_finishes_its_tasks_offline_and_lands_them_after() {
    let (tasks, ids) = six();
    let fleet = Fleet::new(&tasks, 2);
    let env = through_fake_ssh(&fleet, 0);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let partition = fleet.machines[0].aux().join("partition");
    // Cut off once it claimed its first tasks; the link comes back once
    // a landing waited for it.
    let mut stale = env.clone();
    stale.push(("RALPH_REMOTE_STALE_AFTER", "60s"));
    let mut one = fleet.start(0, &stale);
    wait_until(&mut one, 30, "no claims made", || {
        !fleet.claims().is_empty()
    });
    std::fs::write(&partition, "").unwrap();
    let held = fleet.claims();
    let two = fleet.start(1, &[("RALPH_REMOTE_STALE_AFTER", "60s")]);
    // Cut off long enough to finish its work and wait to land it.
    let log = fleet.machines[0].path().join(".ralph/events.ndjson");
    wait_until(&mut one, 60, "no landing waited", || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("\"unreachable\"")
    });
    std::fs::remove_file(&partition).unwrap();
    let (one, two) = (wait_for(one, 120), wait_for(two, 120));
    assert_eq!(one.code, 0, "{one:#?}");
    assert_eq!(two.code, 0, "{two:#?}");
    fleet.check_remote(&ids);
    // What it held when cut off, it landed itself once back.
    not_worked_by(&fleet.machines[1], &held);
    assert!(one.stderr.contains("cannot be reached"), "{}", one.stderr);
    // The landings it kept while cut off are gone once landed.
    assert_eq!(
        fleet.machines[0].git(&["for-each-ref", "refs/ralph/landing/"]),
        ""
    );
}

#[test]
fn work_a_machine_finished_while_its_claim_was_taken_over_is_kept_not_landed_twice() {
    let (tasks, ids) = six();
    let fleet = Fleet::new(&tasks, 2);
    let env = through_fake_ssh(&fleet, 0);
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    env.push(("RALPH_REMOTE_STALE_AFTER", "1s"));
    let partition = fleet.machines[0].aux().join("partition");
    let mut one = fleet.start(0, &env);
    wait_until(&mut one, 30, "no claims made", || {
        !fleet.claims().is_empty()
    });
    std::fs::write(&partition, "").unwrap();
    let held = fleet.claims();
    // Machine 2 sees those claims go unrenewed, takes them over and lands
    // every task while machine 1 is cut off.
    let two = wait_for(fleet.start(1, &[("RALPH_REMOTE_STALE_AFTER", "1s")]), 120);
    assert_eq!(two.code, 0, "{two:#?}");
    fleet.check_remote(&ids);
    std::fs::remove_file(&partition).unwrap();
    let one = wait_for(one, 120);
    assert_eq!(one.code, 0, "{one:#?}");
    // Nothing landed twice; what machine 1 finished offline is kept.
    fleet.check_remote(&ids);
    let orphans = fleet.at_remote(&["for-each-ref", "--format=%(refname)", "refs/ralph/orphans/"]);
    let worked_offline: Vec<String> = worked(&fleet.machines[0])
        .iter()
        .map(|line| line.split(' ').next().unwrap().to_owned())
        .filter(|id| held.contains(id))
        .collect();
    assert!(!worked_offline.is_empty(), "{held:?}");
    for id in &worked_offline {
        assert!(
            orphans.contains(&format!("refs/ralph/orphans/{id}/")),
            "{id}: {orphans}\n{}",
            one.stderr
        );
    }
    assert!(
        one.stderr
            .contains("landed on origin/main by another machine first"),
        "{}",
        one.stderr
    );
    let status = fleet.machines[0].ralph(&["status"]);
    assert!(status.stdout.contains("  orphaned: "), "{}", status.stdout);
    // Its result says so too, not "merged".
    let result = fleet.machines[0].json(".ralph/result.json");
    for id in &worked_offline {
        let outcome = result["outcomes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["task"] == id.as_str())
            .unwrap_or_else(|| panic!("{id}: {result}"));
        assert_eq!(outcome["outcome"], "orphaned", "{outcome}");
        assert!(
            outcome["detail"]
                .as_str()
                .unwrap()
                .contains("refs/ralph/orphans/"),
            "{outcome}"
        );
    }
}

/// Makes the remote hold the first push to main until another push has
/// moved main (at most 30 s), then go on with it; the held push's new
/// value is written to `held` in the bare repository.
fn hold_first_push_to_main(fleet: &Fleet) {
    remote_hook(
        fleet,
        r#"while read old new ref; do
  if [ "$ref" = refs/heads/main ] && mv "$GIT_DIR/hold" "$GIT_DIR/holding" 2>/dev/null; then
    i=0
    while [ "$(git rev-parse refs/heads/main)" = "$old" ] && [ $i -lt 600 ]; do
      sleep 0.05; i=$((i+1))
    done
    echo "$new" > "$GIT_DIR/held"
  fi
done
exit 0
"#,
    );
    std::fs::write(fleet.remote().join("hold"), "").unwrap();
}

#[test]
fn two_machines_racing_to_land_both_land_once_the_later_on_the_new_tip() {
    let tasks = vec![task("A", &[]), task("B", &[])];
    // One worker each: each machine lands one of the two.
    let mut fleet = Fleet::new(&tasks, 2);
    fleet.workers = "1";
    hold_first_push_to_main(&fleet);
    let runs = fleet.run_all();
    for run in &runs {
        assert_eq!(run.code, 0, "{run:#?}");
    }
    fleet.check_remote(&["A", "B"]);
    // One push was held and refused; its machine landed again on top.
    let held = std::fs::read_to_string(fleet.remote().join("held")).unwrap();
    let log = fleet.at_remote(&["rev-list", "main"]);
    assert!(!log.contains(held.trim()), "the held push landed as it was");
    let retried = runs
        .iter()
        .filter(|run| run.stderr.contains("landing again on its new tip"))
        .count();
    assert_eq!(retried, 1, "{runs:#?}");
}

/// Installs `script` as the remote's pre-receive hook, run once for each
/// push with the pushed ref updates on stdin.
fn remote_hook(fleet: &Fleet, script: &str) {
    let hook = fleet.remote().join("hooks/pre-receive");
    std::fs::write(&hook, format!("#!/bin/sh\n{script}")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn landings_refused_because_others_landed_first_go_on_past_land_attempts() {
    let fleet = Fleet::new(&[task("A", &[])], 1);
    // Three landings of "other machines", a chain on main, kept aside.
    for n in 1..=3 {
        let file = fleet.origin.path().join(format!("other-{n}.txt"));
        std::fs::write(file, "landed elsewhere\n").unwrap();
        fleet.origin.git(&["add", "-A"]);
        fleet
            .origin
            .git(&["commit", "-q", "-m", &format!("other {n}")]);
        let remote = fleet.remote();
        let to = format!("HEAD:refs/other/{n}");
        fleet
            .origin
            .git(&["push", "-q", remote.to_str().unwrap(), &to]);
    }
    // Each of the first three pushes to main finds that another machine
    // landed first: the hook moves main on, and git refuses the push's
    // lease, as it does when two machines race.
    remote_hook(
        &fleet,
        r#"while read old new ref; do
  n=$(cat "$GIT_DIR/moved" 2>/dev/null || echo 0)
  if [ "$ref" = refs/heads/main ] && [ "$n" -lt 3 ]; then
    n=$((n+1)); echo $n > "$GIT_DIR/moved"
    env -u GIT_QUARANTINE_PATH git update-ref refs/heads/main refs/other/$n
  fi
done
exit 0
"#,
    );
    let run = wait_for(fleet.start(0, &[("RALPH_REMOTE_LAND_ATTEMPTS", "2")]), 180);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        run.stderr.matches("landing again on its new tip").count(),
        3,
        "{run:#?}"
    );
    fleet.check_remote(&["A"]);
    let files = fleet.at_remote(&["ls-tree", "--name-only", "main"]);
    for file in ["other-1.txt", "other-2.txt", "other-3.txt", "A.txt"] {
        assert!(files.lines().any(|line| line == file), "{file}: {files}");
    }
}

#[test]
fn a_remote_refusing_a_landing_with_nothing_landed_stops_after_land_attempts() {
    let fleet = Fleet::new(&[task("A", &[])], 1);
    // A protected branch: every push to main refused, nothing else lands.
    remote_hook(
        &fleet,
        r#"while read old new ref; do
  if [ "$ref" = refs/heads/main ]; then echo "main is protected" >&2; exit 1; fi
done
exit 0
"#,
    );
    let before = fleet.at_remote(&["rev-parse", "main"]);
    let run = wait_for(fleet.start(0, &[("RALPH_REMOTE_LAND_ATTEMPTS", "2")]), 180);
    assert_eq!(run.code, 10, "{run:#?}");
    assert!(
        run.stderr
            .contains("refused 2 times in a row with nothing landed in between"),
        "{run:#?}"
    );
    assert_eq!(
        run.stderr.matches("landing again on its new tip").count(),
        1,
        "{run:#?}"
    );
    assert_eq!(fleet.at_remote(&["rev-parse", "main"]), before);
    // Nothing lost: the landing is kept, and A's work on it.
    let machine = &fleet.machines[0];
    let kept = machine.git(&["ls-tree", "--name-only", "refs/ralph/landing/A"]);
    assert!(kept.lines().any(|line| line == "A.txt"), "{kept}");
}

#[test]
fn a_persons_queue_edits_pushed_from_another_clone_are_worked_with_the_rest() {
    let (tasks, ids) = six();
    let fleet = Fleet::new(&tasks, 2);
    let mut children: Vec<_> = (0..2).map(|n| fleet.start(n, &[])).collect();
    wait_until(&mut children[0], 30, "no claims made", || {
        !fleet.claims().is_empty()
    });
    // A fourth clone, without ralph, adds two tasks by hand and pushes.
    fleet.push_by_hand(&[task("X", &[]), task("Y", &["X"])]);
    for child in children {
        let run = wait_for(child, 120);
        assert_eq!(run.code, 0, "{run:#?}");
    }
    let mut all = ids.clone();
    all.extend(["X", "Y"]);
    fleet.check_remote(&all);
}

#[test]
fn a_force_pushed_base_stops_the_machines_with_how_to_resync() {
    let (tasks, ids) = six();
    let fleet = Fleet::new(&tasks, 1);
    let runs = fleet.run_all();
    assert_eq!(runs[0].code, 0, "{:#?}", runs[0]);
    fleet.check_remote(&ids);
    // Someone rewinds main on the remote to its first commit.
    let first = fleet.at_remote(&["rev-list", "--max-parents=0", "main"]);
    fleet.at_remote(&["update-ref", "refs/heads/main", &first]);
    // The log of main starts again here: the checks below are of the
    // moves after the rewind.
    fleet.at_remote(&["reflog", "expire", "--expire=now", "--all"]);
    let machine = &fleet.machines[0];
    let before = (
        machine.git(&["rev-parse", "main"]),
        machine.read("tasks-done.jsonl"),
    );
    let run = wait_for(fleet.start(0, &[]), 60);
    assert_eq!(run.code, 20, "{run:#?}");
    assert!(
        run.stderr.contains("error: origin/main was rewritten: ")
            && run.stderr.contains("is no longer in its history")
            && run.stderr.contains("hint: if that was intended"),
        "{}",
        run.stderr
    );
    // Nothing local changed, nothing pushed.
    assert_eq!(
        (
            machine.git(&["rev-parse", "main"]),
            machine.read("tasks-done.jsonl")
        ),
        before
    );
    assert_eq!(fleet.at_remote(&["rev-parse", "main"]), first);
    // The person meant it and follows the hint: the queue as the remote
    // has it is worked again on the rewound base.
    machine.git(&["fetch", "-q"]);
    machine.git(&["reset", "-q", "--keep", "origin/main"]);
    machine.git(&[
        "checkout",
        "origin/main",
        "--",
        "tasks.jsonl",
        "tasks-done.jsonl",
    ]);
    machine.git(&["update-ref", "-d", "refs/ralph/sync/main"]);
    let run = wait_for(fleet.start(0, &[]), 60);
    assert_eq!(run.code, 0, "{run:#?}");
    fleet.check_remote(&ids);
}

#[test]
fn doctor_checks_that_the_remote_takes_ralphs_refs() {
    let (tasks, _) = six();
    let fleet = Fleet::new(&tasks, 1);
    let machine = &fleet.machines[0];
    let doctor = |machine: &TestProject| {
        let mut command = machine.ralph_command(&["doctor"]);
        command.env("RALPH_REMOTE_ENABLED", "true");
        crate::support::finish(command, 60)
    };
    let run = doctor(machine);
    assert!(
        run.stdout.contains("ok: remote: origin/main takes ralph's refs (a probe under refs/ralph/ was created and deleted with leases)"),
        "{run:#?}"
    );
    assert_eq!(fleet.at_remote(&["for-each-ref", "refs/ralph/"]), "");
    // A host that refuses custom refs: an error with the way out.
    let hook = fleet.remote().join("hooks/pre-receive");
    std::fs::write(
        &hook,
        "#!/bin/sh\nwhile read old new ref; do case \"$ref\" in refs/ralph/*) echo \"custom refs are not allowed\" >&2; exit 1;; esac; done\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = doctor(machine);
    assert_eq!(run.code, 10, "{run:#?}");
    assert!(
        run.stdout.contains("error: remote: origin refused creating a ref under refs/ralph/: [remote rejected] (pre-receive hook declined)"),
        "{run:#?}"
    );
    // Without an upstream it says how to set one.
    machine.git(&["branch", "--unset-upstream"]);
    let run = doctor(machine);
    assert!(
        run.stdout.contains("error: remote: remote.enabled, but the base main has no upstream to share the queue through"),
        "{run:#?}"
    );
    // And so does the run, which starts nothing.
    let run = wait_for(fleet.start(0, &[]), 60);
    assert_eq!(run.code, 30, "{run:#?}");
    assert!(
        run.stderr.contains("error: remote.enabled: the base main has no upstream to share the queue through\nhint: set one (`git push -u origin main`"),
        "{}",
        run.stderr
    );
    assert_eq!(machine.rec("worked"), "");
}

#[test]
fn a_dry_run_says_the_queue_is_shared_and_touches_nothing_remote() {
    let (tasks, _) = six();
    let fleet = Fleet::new(&tasks, 1);
    let machine = &fleet.machines[0];
    let before = fleet.at_remote(&["for-each-ref"]);
    let run = crate::support::finish(machine.run_command(&["--remote", "--dry-run"]), 60);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stdout.contains("task:   A task A\n"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("shared: the queue goes through the base's upstream"),
        "{}",
        run.stdout
    );
    let json = crate::support::finish(
        machine.run_command(&["--remote", "--dry-run", "--json"]),
        60,
    );
    assert_eq!(json.json()["shared"], true);
    assert_eq!(fleet.at_remote(&["for-each-ref"]), before);
    assert!(!machine.path().join(".ralph/machine").exists());
}

#[test]
fn a_split_whose_landing_was_refused_is_made_again_and_never_claimed_twice() {
    // The split comes first (its agent takes no time), so its push is
    // the one held, then refused once the other machine's task landed.
    let tasks = vec![task("S", &[]).replace("task S", "split S"), task("B", &[])];
    let mut fleet = Fleet::new(&tasks, 2);
    fleet.workers = "1";
    hold_first_push_to_main(&fleet);
    let runs = fleet.run_all();
    for run in &runs {
        assert_eq!(run.code, 0, "{run:#?}");
    }
    fleet.check_remote(&["S", "S.1", "S.2", "B"]);
    let splits: usize = fleet
        .machines
        .iter()
        .map(|machine| {
            worked(machine)
                .iter()
                .filter(|line| line.starts_with("S "))
                .count()
        })
        .sum();
    assert_eq!(splits, 1, "S was split more than once: {runs:#?}");
}

#[test]
fn a_run_refuses_a_base_with_a_persons_unpushed_commit_or_a_remote_it_cannot_reach() {
    let (tasks, _) = six();
    let fleet = Fleet::new(&tasks, 1);
    let machine = &fleet.machines[0];
    // A commit of a person's on main that origin lacks: ralph shares
    // only what the remote has, and changes nothing.
    std::fs::write(machine.path().join("notes.txt"), "mine\n").unwrap();
    machine.git(&["add", "notes.txt"]);
    machine.git(&["commit", "-q", "-m", "a note of mine"]);
    let tip = machine.git(&["rev-parse", "main"]);
    let run = wait_for(fleet.start(0, &[]), 60);
    assert_eq!(run.code, 30, "{run:#?}");
    assert!(
        run.stderr.contains("error: remote.enabled: the base main has commits origin/main lacks\nhint: push them (`git push`), or move them to a branch and reset main to origin/main; ralph shares only what the remote has"),
        "{}",
        run.stderr
    );
    assert_eq!(machine.git(&["rev-parse", "main"]), tip);
    assert_eq!(machine.rec("worked"), "");
    // A remote that is not there.
    machine.git(&["reset", "-q", "--hard", "origin/main"]);
    machine.git(&["remote", "set-url", "origin", "/nonexistent/remote.git"]);
    let run = wait_for(fleet.start(0, &[]), 60);
    assert_eq!(run.code, 20, "{run:#?}");
    assert!(
        run.stderr
            .contains("error: remote.enabled: origin/main cannot be reached: ")
            && run.stderr.contains(
                "hint: check the remote (`git fetch`) and run again; nothing local was changed"
            ),
        "{}",
        run.stderr
    );
    assert_eq!(machine.rec("worked"), "");
}

/// The commands of a `sh` block of a doc, comments cut, but `ralph run`
/// and `ralph doctor` (which the test runs itself) and what `skip` says.
fn script_of(block: &str) -> String {
    let lines = (block.lines())
        .map(|line| line.split("  #").next().unwrap_or_default().trim())
        .filter(|line| {
            !line.is_empty() && !line.contains("ralph run") && !line.contains("ralph doctor")
        });
    let mut script = "set -e\n".to_owned();
    for line in lines {
        script.push_str(line);
        script.push('\n');
    }
    script
}

/// docs/SCALE.md's set-up on two machines, as written: the first
/// machine's commands commit every file of ralph's (its checkout is clean,
/// so the second runs the same settings, roles and agent), the second's
/// clone is clean too, and doctor on it says the queue's landings are
/// pushed, not that the work stays in the repository.
#[test]
fn the_set_up_scale_md_shows_leaves_both_machines_clean_and_alike() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/SCALE.md")).unwrap();
    let set_up = doc.split("## Set it up on two machines").nth(1).unwrap();
    let blocks: Vec<&str> = (set_up.split("```sh\n").skip(1))
        .map(|block| block.split("```").next().unwrap())
        .take(2)
        .collect();
    let remote = TestProject::new();
    remote.git(&["init", "-q", "--bare", "-b", "main"]);
    let machine = |script: &str| {
        let machine = TestProject::new();
        machine.sh(&script.replace("<the remote>", &remote.path().display().to_string()));
        machine
    };
    // The first machine: a project whose base is pushed to the remote.
    let first = machine(&format!(
        "set -e\ngit init -q -b main\necho '# project' > README.md\ngit add -A\ngit commit -q -m start\ngit remote add origin {}\n{}",
        remote.path().display(),
        script_of(blocks[0]).trim_start_matches("set -e\n")
    ));
    assert_eq!(first.git(&["status", "--porcelain"]), "");
    let second = machine(&script_of(blocks[1]));
    let clone = second.path().join("project");
    let git_status = second
        .command("git")
        .args(["-C", "project", "status", "--porcelain"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&git_status.stdout), "");
    for file in [
        "config/ralph.yaml",
        "config/roles.yaml",
        "roles/reviewer.md",
        "working.md",
    ] {
        assert_eq!(
            std::fs::read(clone.join(file)).unwrap(),
            std::fs::read(first.path().join(file)).unwrap(),
            "{file}"
        );
    }
    let doctor = second
        .command(crate::support::RALPH)
        .args(["doctor"])
        .current_dir(&clone)
        .env("RALPH_REMOTE_ENABLED", "true")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        said.contains("ok: push: the queue is shared (remote.enabled): each landing is pushed to the base's remote as it is made, whatever git.push says (docs/SCALE.md)\n")
            && !said.contains("the work stays in this repository")
            && !said.contains("uncommitted changes"),
        "{said}"
    );
}

#[test]
fn a_polling_machine_works_what_is_pushed_to_the_remote_while_it_is_idle() {
    let fleet = Fleet::new(&[task("A", &[])], 1);
    // The default heartbeat (60s): the idle run's looks read the remote.
    let mut command = fleet.machines[0].run_command(&["--remote", "--poll", "1s"]);
    command
        .env("MACHINE", "m1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    wait_until(&mut child, 60, "never idle", || {
        fleet.machines[0]
            .read_or_empty("ralph.log")
            .contains("idle: ")
    });
    fleet.push_by_hand(&[task("X", &[])]);
    wait_until(&mut child, 60, "X never landed", || {
        fleet
            .at_remote(&["log", "--format=%B", "main"])
            .contains("Completes: X")
    });
    std::fs::write(fleet.machines[0].path().join(".stop"), "").unwrap();
    let run = wait_for(child, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    fleet.check_remote(&["A", "X"]);
}

#[test]
fn a_machine_waiting_on_others_claims_ends_soon_after_the_last_landing() {
    // Whoever claims B holds it 3 seconds; the other machine, with
    // nothing else to claim, waits for it. With an hour's heartbeat, a
    // machine that looked again only once per heartbeat would still be
    // waiting when `wait_for` gives up.
    let fleet = Fleet::new(&[task("A", &[]), task("B", &[])], 2);
    for machine in &fleet.machines {
        std::fs::write(machine.aux().join("rec/slow-B"), "").unwrap();
    }
    let start = |n: usize| {
        let mut command = fleet.machines[n].run_command(&["--remote"]);
        command
            .env("MACHINE", format!("m{}", n + 1))
            .env("RALPH_REMOTE_HEARTBEAT", "1h")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        command.spawn().unwrap()
    };
    let mut first = start(0);
    wait_until(&mut first, 30, "m1 never claimed", || {
        !fleet.claims().is_empty()
    });
    let second = start(1);
    let runs = [wait_for(first, 60), wait_for(second, 60)];
    for run in &runs {
        assert_eq!(run.code, 0, "{run:#?}");
    }
    // One of them did wait for the other's claim.
    assert!(
        runs.iter().any(|run| run
            .stderr
            .contains("nothing to claim here now: other machines hold tasks; looking at origin/main again within 1h")),
        "{runs:#?}"
    );
    fleet.check_remote(&["A", "B"]);
}

#[test]
fn a_claim_stating_a_heartbeat_of_centuries_goes_stale_all_the_same() {
    let fleet = Fleet::new(&[task("A", &[])], 1);
    // A claim of A written by hand on the remote, by no machine that
    // will ever beat again, stating a heartbeat of 585,000 years.
    let tree = fleet.at_remote(&["rev-parse", "main^{tree}"]);
    let message = "ralph claim A\n\nMachine: 00000000-forged (elsewhere)\nWorker: 1\nRun: forged\nBranch: ralph/a\nBeat: 1\nInterval: 5124095576030h\n";
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(fleet.remote())
        .args([
            "-c",
            "user.name=x",
            "-c",
            "user.email=x@x",
            "commit-tree",
            &tree,
            "-m",
            message,
        ])
        .output()
        .unwrap();
    let forged = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    fleet.at_remote(&["update-ref", "refs/ralph/claims/A", &forged]);
    let run = wait_for(fleet.start(0, &[("RALPH_REMOTE_STALE_AFTER", "1s")]), 120);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stderr.contains("taken over"), "{}", run.stderr);
    fleet.check_remote(&["A"]);
}

#[test]
fn an_archive_record_pushed_by_hand_is_said_and_not_taken_for_done() {
    let fleet = Fleet::new(&[task("A", &[]), task("B", &[])], 1);
    // A clone archives B by hand, with no work and no landing.
    let person = TestProject::new();
    person.git(&["clone", "-q", fleet.remote().to_str().unwrap(), "."]);
    person.git(&["config", "user.name", "A Person"]);
    person.git(&["config", "user.email", "person@example.com"]);
    let queue = person.read("tasks.jsonl");
    let kept: String = queue
        .lines()
        .filter(|line| !line.contains("\"B\""))
        .map(|line| format!("{line}\n"))
        .collect();
    std::fs::write(person.path().join("tasks.jsonl"), kept).unwrap();
    std::fs::write(
        person.path().join("tasks-done.jsonl"),
        format!("{}\n", task("B", &[]).replace("pending", "done")),
    )
    .unwrap();
    person.git(&["commit", "-q", "-am", "B is done, trust me"]);
    person.git(&["push", "-q", "origin", "main"]);
    let run = wait_for(fleet.start(0, &[]), 60);
    assert_eq!(run.code, 30, "{run:#?}");
    assert!(
        run.stderr.contains("tasks-done.jsonl archives B with no landing: no commit since the last read says `Completes:` for it\nhint: a task is done when its work lands, which ralph writes with `Completes: ID` in the landing; remove those records from tasks-done.jsonl on origin/main (a commit pushed there), or put the tasks back as pending, then run again; nothing local was changed\n"),
        "{}",
        run.stderr
    );
    // Nothing taken: B is still to do here, nothing was worked or landed.
    let machine = &fleet.machines[0];
    assert!(machine.read("tasks.jsonl").contains("\"id\":\"B\""));
    assert!(machine.read_or_empty("tasks-done.jsonl").is_empty());
    assert!(worked(machine).is_empty());
}
