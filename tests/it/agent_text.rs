//! Text from the agent is masked and bounded (issue 46, point 6): what an
//! agent writes (commit subjects, task titles, bodies, ids, notes, block
//! reasons) reaches git history and ralph's logs with secrets masked, never
//! travels unbounded in a command line or an environment, and cannot wedge
//! a run.

use crate::support::TestProject;

const FIX_THE_LINE: &str = "hint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n";

#[test]
fn an_id_starting_with_a_dash_is_refused_on_the_command_line_and_in_the_queue() {
    let p = TestProject::new().task(r#"{"id":"A","title":"a","status":"pending","leaf":true}"#);
    let before = p.read("tasks.jsonl");
    p.ralph(&["task", "add", "x", "--id=-x"]).fails(
        2,
        "error: invalid value '-x' for '--id <ID>': id \"-x\" starts with '-', which a command line reads as an option; start it with a letter, digit or _\n\nFor more information, try '--help'.\n",
    );
    let run = p.ralph(&["task", "add", "x", "--id", "--help"]);
    assert_eq!((run.code, run.stdout.as_str()), (2, ""), "{run:#?}");
    assert_eq!(p.read("tasks.jsonl"), before);

    let p = p.task(r#"{"id":"--help","title":"b","status":"pending","leaf":true}"#);
    p.ralph(&["task", "validate"]).fails(
        30,
        &format!("error: tasks.jsonl:2: id \"--help\" starts with '-', which a command line reads as an option; start it with a letter, digit or _\n{FIX_THE_LINE}"),
    );
}

#[test]
fn ralph_task_refuses_a_title_or_body_over_its_bound_and_writes_nothing() {
    let p = TestProject::new().task(r#"{"id":"A","title":"a","status":"pending","leaf":true}"#);
    let before = p.read("tasks.jsonl");
    let title = "t".repeat(5 * 1024);
    p.ralph(&["task", "add", &title]).fails(
        30,
        "error: the title is 5120 bytes long, over the bound of 4096 bytes\nhint: keep the title to one line and put the details in the body\n",
    );
    p.ralph(&["task", "split", "A", "first", &title]).fails(
        30,
        "error: the title is 5120 bytes long, over the bound of 4096 bytes\nhint: keep the title to one line and put the details in the body\n",
    );
    let body = "b".repeat(70_000);
    p.ralph(&["task", "add", "short", "--body", &body]).fails(
        30,
        "error: the body is 70000 bytes long, over the bound of 65536 bytes\nhint: put long material in a file of the project and name that file in the body\n",
    );
    let check = "v".repeat(5000);
    p.ralph(&["task", "add", "short", "--verify", "true", "--verify", &check]).fails(
        30,
        "error: a verify command is 5000 bytes long, over the bound of 4096 bytes\nhint: put a long check in a script of the project and run that script\n",
    );
    assert_eq!(p.read("tasks.jsonl"), before);
    // At the bound exactly is fine.
    p.ralph(&["task", "add", &"t".repeat(4096)]).ok("B\n");

    // A document's requirement is held to the same bounds.
    let p = p.file("prd.md", format!("# X\n\n- FR-1: {}\n", "r".repeat(5000)));
    let before = p.read("tasks.jsonl");
    p.ralph(&["plan", "prd.md"]).fails(
        30,
        "error: prd.md:3: the title is 5006 bytes long, over the bound of 4096 bytes; shorten it\nhint: docs/PLANNING.md describes what `ralph plan` reads\n",
    );
    assert_eq!(p.read("tasks.jsonl"), before);
}

/// Agents write tasks whose title, body or own check is over its bound:
/// each is blocked, saying why, before any agent or check runs for it; the
/// other tasks are done, and the run ends needing a person (exit 10),
/// again and again.
#[test]
fn a_task_over_a_bound_in_the_queue_is_blocked_and_the_run_goes_on() {
    let p = TestProject::new()
        .task(r#"{"id":"A","title":"a","status":"pending","leaf":true}"#)
        .task(r#"{"id":"B","title":"b","status":"pending","leaf":true}"#)
        .git_init()
        .agent(
            r#"long=$(head -c 143360 /dev/zero | tr '\0' x)
case "$RALPH_TASK_ID" in
A)
  printf '{"id":"C","title":"%s","status":"pending","leaf":true}\n' "$long" >> tasks.jsonl
  printf '{"id":"D","title":"d","status":"pending","leaf":true,"body":"%s%s"}\n' "$long" "$long" >> tasks.jsonl
  printf '{"id":"E","title":"e","status":"pending","leaf":true}\n' >> tasks.jsonl ;;
B)
  # Its own check, too long for any command line, then done.
  work B.txt done
  grep -v '"id":"B"' tasks.jsonl > tasks.jsonl.tmp
  printf '{"id":"B","title":"b","status":"complete","leaf":true,"verify":["%s"]}\n' "$long" >> tasks.jsonl.tmp
  mv tasks.jsonl.tmp tasks.jsonl
  exit 0 ;;
esac
work "$RALPH_TASK_ID.txt" done; ralph task complete "$RALPH_TASK_ID" > /dev/null
"#,
        );
    let run = p.run(&[]);
    assert_eq!(run.code, 10, "{run:#?}");
    let worked: Vec<String> = p
        .calls()
        .iter()
        .map(|call| call.split(' ').nth(1).unwrap().to_owned())
        .collect();
    assert_eq!(worked, ["A", "B", "E"]);
    let reason = |id: &str, what: &str, bytes: usize, most: usize| {
        format!(
            "{what} is {bytes} bytes long, over the bound of {most} bytes; shorten it in tasks.jsonl, then set the task going again (`ralph task start {id}`)"
        )
    };
    let reasons = [
        ("C", reason("C", "the title", 143360, 4096)),
        ("D", reason("D", "the body", 286720, 65536)),
        ("B", reason("B", "a verify command", 143360, 4096)),
    ];
    let tasks = p.json_lines("tasks.jsonl");
    let blocked: Vec<(&str, &str, &str)> = tasks
        .iter()
        .map(|t| {
            let text = |key: &str| t[key].as_str().unwrap_or_default();
            (text("id"), text("status"), text("blocked_reason"))
        })
        .collect();
    let wanted: Vec<(&str, &str, &str)> = reasons
        .iter()
        .map(|(id, reason)| (*id, "blocked", reason.as_str()))
        .collect();
    assert_eq!(blocked, wanted);
    for (id, reason) in &reasons {
        let line = format!("{id} blocked: {reason}");
        assert!(run.stderr.contains(&line), "{run:#?}");
        assert!(p.read("ralph.log").contains(&line));
    }
    let done = crate::support::ids(&p.read("tasks-done.jsonl"));
    assert_eq!(done, ["A", "E"]);

    // The next run does not wedge on them either.
    let again = p.run(&[]);
    assert_eq!(again.code, 10, "{again:#?}");
    assert_eq!(p.calls().len(), 3, "no agent was started");
    assert_eq!(p.json_lines("tasks.jsonl"), tasks);
}

/// The value of a secret in ralph's environment, as an agent might copy it.
const SECRET: &str = "s3cr3t-value-4242-xyz";

/// An agent writes the value of `GITHUB_TOKEN` into a commit subject, a
/// task title, its notes (through `ralph task note` and straight into the
/// notes file) and a block reason: on the base branch, in branch names,
/// `ralph.log` and the events it is `[redacted]`, never the value.
#[test]
fn secrets_an_agent_writes_are_masked_in_history_and_logs() {
    let p = TestProject::new()
        .task(r#"{"id":"A","title":"a","status":"pending","leaf":true}"#)
        .task(r#"{"id":"B","title":"b","status":"pending","leaf":true}"#)
        .git_init()
        .agent(&format!(
            r#"TOKEN={SECRET}
case "$RALPH_TASK_ID" in
A)
  printf 'done\n' > A.txt && git add A.txt && git commit -q -m "push with $TOKEN"
  ralph task note A "tried $TOKEN" > /dev/null
  printf '### t · note\n\nraw %s\n\n' "$TOKEN" >> .ralph/notes/A.md
  printf '{{"id":"C","title":"deploy with %s","status":"pending","leaf":true}}\n' "$TOKEN" >> tasks.jsonl
  ralph task complete A > /dev/null ;;
B) ralph task block B --reason "needs $TOKEN to go on" > /dev/null ;;
C) work C.txt done; ralph task complete C > /dev/null ;;
esac
"#
        ));
    let mut command = p.run_command(&[]);
    command.env("GITHUB_TOKEN", SECRET);
    let run = crate::support::finish(command, 60);
    assert_eq!(run.code, 10, "{run:#?}");
    let messages = p.git(&["log", "main", "--format=%B%x00"]);
    let squash_a = messages
        .split('\0')
        .find(|message| message.trim_start().starts_with("[A]"))
        .unwrap_or_else(|| panic!("{messages}"));
    // The note's heading carries the time `ralph task note` ran.
    let (before_time, after_time) = squash_a.trim().split_once("> ### 20").unwrap();
    assert_eq!(
        before_time,
        "[A] a\n\n- push with [redacted]\n\nNotes on the task, newest first:\n>\n> ### t · note\n>\n> raw [redacted]\n>\n"
    );
    assert!(
        after_time.ends_with("Z · note\n>\n> tried [redacted]\n\nCompletes: A"),
        "{squash_a}"
    );
    assert!(
        messages.contains("[C] deploy with [redacted]\n"),
        "{messages}"
    );
    let blocked = &p.json_lines("tasks.jsonl")[0];
    assert_eq!(blocked["blocked_reason"], "needs [redacted] to go on");
    let refs = p.git(&["for-each-ref", "--format=%(refname)"]);
    // The task branches' names, as the checkouts name them (the agent's
    // own commit subjects are its own).
    let reflog = p.git(&["reflog", "--all", "--format=%gs"]);
    let reflog: String = reflog
        .lines()
        .filter(|line| line.contains("task/"))
        .map(|line| format!("{line}\n"))
        .collect();
    for (place, text) in [
        ("the base's commit messages", messages.clone()),
        // The queue files go onto the base as the agent left them (its
        // own writing, like any file it commits); what ralph writes is
        // masked.
        (
            "the base's history but the queue files",
            p.git(&[
                "log",
                "-p",
                "main",
                "--",
                ".",
                ":!tasks.jsonl",
                ":!tasks-done.jsonl",
            ]),
        ),
        ("the refs", refs),
        ("the branch names in the reflog", reflog.clone()),
        ("ralph.log", p.read("ralph.log")),
        ("the events", p.read(".ralph/events.ndjson")),
        ("the terminal", run.stderr.clone()),
    ] {
        assert!(!text.contains(SECRET), "{place}:\n{text}");
    }
    assert!(reflog.contains("task/C-deploy-with-redacted"), "{reflog}");
}

/// amp and cursor get the prompt on stdin, whatever it holds: never in
/// their command line, where what agents wrote could reach the system's
/// limit or read as an option.
#[test]
fn amp_and_cursor_read_every_prompt_on_stdin() {
    use std::os::unix::fs::PermissionsExt;
    for (preset, program, args) in [
        ("amp", "amp", "-x --stream-json --dangerously-allow-all"),
        (
            "cursor",
            "cursor-agent",
            "-p --output-format stream-json --force --trust",
        ),
    ] {
        let p = TestProject::new()
            .task(r#"{"id":"A","title":"--help me","status":"pending","leaf":true}"#)
            .git_init();
        let fake = p.aux().join("bin").join(program);
        let rec = p.aux().join("rec");
        std::fs::write(
            &fake,
            format!(
                "#!/bin/sh\necho \"$@\" > '{0}/argv'\ncat > '{0}/stdin'\nralph task complete \"$RALPH_TASK_ID\" > /dev/null\n",
                rec.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut command = p.ralph_command(&["run", "--agent", preset, "--once"]);
        command.env("PATH", p.path_with_aux_bin());
        let run = crate::support::finish(command, 60);
        assert_eq!(run.code, 0, "{preset}: {run:#?}");
        assert_eq!(p.rec("argv"), format!("{args}\n"), "{preset}");
        let prompt = p.rec("stdin");
        assert!(prompt.contains("--help me"), "{preset}: {prompt}");
        assert!(p.read("tasks-done.jsonl").contains(r#""id":"A""#));
    }
}

/// The pull request is named after the top task's title, which no bound
/// holds when it is a container (no agent works on one): its title in
/// `gh`'s command line is one masked line of at most 200 characters, and
/// its branch is named after the masked title.
#[test]
fn a_pull_request_s_title_and_branch_are_masked_and_bounded() {
    let title = format!("deploy with {SECRET} {}", "w".repeat(140_000));
    let p = TestProject::new()
        .task(&format!(
            r#"{{"id":"A","title":"{title}","status":"pending","leaf":false}}"#
        ))
        .task(r#"{"id":"A.1","title":"a1","status":"pending","leaf":true}"#)
        .git_init()
        .agent("exit 0\n");
    let config = p
        .read("config/ralph.yaml")
        .replace("delivery: local", "delivery: pr");
    let p = p.file("config/ralph.yaml", config);
    p.git(&["commit", "-q", "-am", "deliver by pull request"]);
    let mut command = p.run_command(&["--dry-run", "--json"]);
    command.env("GITHUB_TOKEN", SECRET);
    let run = crate::support::finish(command, 60);
    assert_eq!(run.code, 0, "{run:#?}");
    let shown: String = format!("deploy with [redacted] {}", "w".repeat(200))
        .chars()
        .take(200)
        .collect();
    assert_eq!(
        run.json()["pull_request"],
        format!(
            "gh pr create --base main --head ralph/deploy-with-redacted --title '{shown}...' --body-file .ralph/pull-request.md"
        )
    );
}
