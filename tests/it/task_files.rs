//! The task files themselves: byte-preserving writes, malformed input,
//! concurrent edits and the seed's shell recipes.

use crate::support::TestProject;

const HINT: &str = "hint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n";

#[test]
fn a_change_rewrites_only_its_own_line() {
    let original = concat!(
        "{ \"id\" : \"A\", \"title\":\"Ünïcödé ☕ 日本語\",\"status\":\"pending\",  \"leaf\":false, \"x-owner\": {\"name\":\"kim\", \"tags\":[1,2.50,null]} }\n",
        "{\"leaf\":true,\"status\":\"pending\",\"title\":\"odd key order\",\"id\":\"A.1\",\"estimate\":1e3}\n",
        "\n",
        "{\"id\":\"A.2\",   \"title\":\"escaped \\u00e9 \\\"quotes\\\"\",\"status\":\"in_progress\",\"leaf\":true}\n",
        "\t{\"id\":\"B\",\"title\":\"tabbed\",\"status\":\"done\",\"leaf\":true,\"notes\":\"keep\"}   \n",
    );
    let p = TestProject::new().file("tasks.jsonl", original);
    p.ralph(&["task", "start", "A.1"])
        .ok("A.1: pending -> active\n");
    let after = p.read("tasks.jsonl");
    let before: Vec<&str> = original.split_inclusive('\n').collect();
    let now: Vec<&str> = after.split_inclusive('\n').collect();
    assert_eq!(before.len(), now.len());
    for (i, (b, a)) in before.iter().zip(&now).enumerate() {
        if i == 1 {
            assert_eq!(
                *a,
                "{\"leaf\":true,\"status\":\"active\",\"title\":\"odd key order\",\"id\":\"A.1\",\"estimate\":1000.0}\n"
            );
        } else {
            assert_eq!(b, a, "line {} changed", i + 1);
        }
    }
}

#[test]
fn crlf_files_keep_their_line_endings() {
    let original = "{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\r\n{\"id\":\"B\",\"title\":\"b\",\"status\":\"pending\",\"leaf\":true}\r\n";
    let p = TestProject::new().file("tasks.jsonl", original);
    p.ralph(&["task", "start", "B"]).success();
    p.ralph(&["task", "add", "c"]).ok("C\n");
    let after = p.read("tasks.jsonl");
    assert!(after.starts_with("{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\r\n{\"id\":\"B\",\"title\":\"b\",\"status\":\"active\",\"leaf\":true}\r\n{\"id\":\"C\""));
    assert!(after.ends_with("}\r\n"));
    assert_eq!(after.matches('\n').count(), after.matches("\r\n").count());
    // The archive too: a record appended to a CRLF file ends in CRLF.
    let p = p.file(
        "tasks-done.jsonl",
        "{\"id\":\"Z\",\"title\":\"z\",\"status\":\"complete\",\"leaf\":true}\r\n",
    );
    p.ralph(&["task", "archive", "A"]).success();
    let archive = p.read("tasks-done.jsonl");
    assert_eq!(archive.lines().count(), 2, "{archive}");
    assert_eq!(
        archive.matches('\n').count(),
        archive.matches("\r\n").count()
    );
}

/// Every malformed input: the exact one-line error, exit 30, nothing written.
#[test]
fn malformed_input_fails_with_file_line_and_fix_and_writes_nothing() {
    let good = r#"{"id":"A","title":"a","status":"pending","leaf":true}"#;
    let cases: &[(&str, &[u8], &[u8], &str)] = &[
        ("invalid JSON", b"{\"id\":\"A\",\"title\":\"a\"\n", b"", "tasks.jsonl:1: invalid JSON at column 21: EOF while parsing an object"),
        ("trailing garbage", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true} x\n", b"", "tasks.jsonl:1: invalid JSON at column 55: trailing characters"),
        ("missing title", b"{\"id\":\"A\",\"status\":\"pending\",\"leaf\":true}\n", b"", "tasks.jsonl:1: missing field `title`"),
        ("missing leaf", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\"}\n", b"", "tasks.jsonl:1: missing field `leaf`"),
        ("null status", b"{\"id\":\"A\",\"title\":\"a\",\"status\":null,\"leaf\":true}\n", b"", "tasks.jsonl:1: missing field `status`"),
        ("mistyped leaf", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":\"yes\"}\n", b"", "tasks.jsonl:1: field `leaf` must be true or false, not \"yes\""),
        ("mistyped title", b"{\"id\":\"A\",\"title\":[\"a\"],\"status\":\"pending\",\"leaf\":true}\n", b"", "tasks.jsonl:1: field `title` must be a string, not [\"a\"]"),
        ("number id", b"{\"id\":7,\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n", b"", "tasks.jsonl:1: field `id` must be a string, not 7"),
        ("unknown status", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"doing\",\"leaf\":true}\n", b"", "tasks.jsonl:1: unknown status \"doing\" (use pending, active, ready, complete or blocked)"),
        ("empty id", b"{\"id\":\"\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n", b"", "tasks.jsonl:1: empty id"),
        ("bad id", b"{\"id\":\"A/../b\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n", b"", "tasks.jsonl:1: id \"A/../b\" contains '/'; use letters, digits, - and _ between the dots"),
        ("mistyped deps", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true,\"deps\":[1]}\n", b"", "tasks.jsonl:1: field `deps` must be an array of id strings, not 1"),
        ("mistyped attempts", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true,\"attempts\":-1}\n", b"", "tasks.jsonl:1: field `attempts` must be a whole number, not -1"),
        ("duplicate key", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"status\":\"active\",\"leaf\":true}\n", b"", "tasks.jsonl:1: duplicate field `status`"),
        ("array line", b"[\"A\",\"a\",\"pending\",true]\n", b"", "tasks.jsonl:1: expected a JSON object ({...}), found another JSON value"),
        ("conflict marker", b"<<<<<<< HEAD\n", b"", "tasks.jsonl:1: merge conflict marker; resolve the conflict (keep one version of each task line) and delete the marker lines"),
        ("invalid UTF-8", b"{\"id\":\"A\",\"title\":\"\xc3\x28\",\"status\":\"pending\",\"leaf\":true}\n", b"", "tasks.jsonl:1: not valid UTF-8 (byte 0xc3 at column 20); save the file as UTF-8"),
        ("duplicate id", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n\n{\"id\":\"A\",\"title\":\"b\",\"status\":\"pending\",\"leaf\":true}\n", b"", "tasks.jsonl:3: duplicate id \"A\" (first on line 1); give one of them a new id"),
        ("missing parent", b"{\"id\":\"A.1\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n", b"", "tasks.jsonl:1: parent \"A\" of task \"A.1\" does not exist; add the parent or fix the id"),
        ("leaf with children", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n{\"id\":\"A.1\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n", b"", "tasks.jsonl:1: task \"A\" has \"leaf\": true but has children (A.1 on line 2); set \"leaf\": false"),
        ("unknown dep", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true,\"deps\":[\"Z\"]}\n", b"", "tasks.jsonl:1: task \"A\" depends on \"Z\", which is in neither tasks.jsonl nor tasks-done.jsonl; fix or remove it in \"deps\""),
        ("cycle", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true,\"deps\":[\"B\"]}\n{\"id\":\"B\",\"title\":\"b\",\"status\":\"pending\",\"leaf\":true,\"deps\":[\"A\"]}\n", b"", "tasks.jsonl:1: dependency cycle A -> B -> A; remove one of these deps"),
        ("archive without id", good.as_bytes(), b"{\"title\":\"x\"}\n", "tasks-done.jsonl:1: missing field `id`"),
        ("archive invalid JSON", good.as_bytes(), b"{\"id\":\"Q\"}\n{\"id\":\n", "tasks-done.jsonl:2: invalid JSON at column 6: EOF while parsing a value"),
        ("archive conflict marker", good.as_bytes(), b">>>>>>> theirs\n", "tasks-done.jsonl:1: merge conflict marker; resolve the conflict (keep one version of each task line) and delete the marker lines"),
    ];
    for (what, tasks, done, message) in cases {
        let p = TestProject::new()
            .file("tasks.jsonl", tasks)
            .file("tasks-done.jsonl", done);
        let expected = format!("error: {message}\n{HINT}");
        for args in [
            &["task", "validate"][..],
            &["task", "next"],
            &["task", "add", "x"],
            &["task", "archive", "A"],
        ] {
            let run = p.ralph(args);
            assert_eq!(
                (run.code, run.stderr.as_str()),
                (30, expected.as_str()),
                "{what}: ralph {args:?}"
            );
        }
        assert_eq!(
            p.bytes("tasks.jsonl"),
            *tasks,
            "{what}: tasks.jsonl changed"
        );
        assert_eq!(
            p.bytes("tasks-done.jsonl"),
            *done,
            "{what}: tasks-done.jsonl changed"
        );
    }
}

#[test]
fn blank_lines_in_the_middle_are_fine_and_kept() {
    let text = "{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n\n   \n{\"id\":\"B\",\"title\":\"b\",\"status\":\"pending\",\"leaf\":true}\n";
    let p = TestProject::new().file("tasks.jsonl", text);
    p.ralph(&["task", "validate"]).success();
    p.ralph(&["task", "start", "B"]).success();
    assert!(p.read("tasks.jsonl").starts_with(
        "{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n\n   \n"
    ));
}

#[test]
fn the_seeds_grep_pipeline_agrees_with_task_next_on_files_ralph_wrote() {
    let p = TestProject::new();
    for title in ["one", "two", "three"] {
        p.ralph(&["task", "add", title]).success();
    }
    p.ralph(&["task", "split", "A", "one-a", "one-b"]).success();
    p.ralph(&["task", "block", "A.1", "--reason", "x"])
        .success();
    let seed = p
        .command("sh")
        .args([
            "-c",
            r#"grep '"leaf":true' tasks.jsonl | grep '"status":"pending"' | head -1"#,
        ])
        .output()
        .unwrap();
    let line: serde_json::Value = serde_json::from_slice(&seed.stdout).unwrap();
    let ours = p.ralph(&["task", "next", "--json"]).success().json();
    assert_eq!(line["id"], "A.2");
    assert_eq!(ours["id"], line["id"]);
}

#[test]
fn files_written_by_the_seeds_archive_recipe_read_fine() {
    let p = TestProject::new()
        .task(r#"{"id":"A","title":"auth","status":"pending","leaf":false}"#)
        .task(r#"{"id":"A.1","title":"choose","status":"complete","leaf":true}"#)
        .task(r#"{"id":"A.2","title":"middleware","status":"pending","leaf":true}"#);
    // The seed: TASK=$(grep ...); echo "$TASK" | jq -c '. + {completed:..,commit:..}' >> tasks-done.jsonl;
    // grep -v ... > tmp && mv tmp tasks.jsonl. `jq -c` output is compact JSON
    // with the new keys last, which serde_json reproduces here.
    let line = p.read("tasks.jsonl").lines().nth(1).unwrap().to_owned();
    let mut object: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&line).unwrap();
    object.insert("completed".into(), "2024-01-21".into());
    object.insert("commit".into(), "abc123".into());
    std::fs::write(
        p.path().join("tasks-done.jsonl"),
        format!("{}\n", serde_json::Value::Object(object)),
    )
    .unwrap();
    let status = p
        .command("sh")
        .args([
            "-c",
            r#"grep -v '"id":"A.1"' tasks.jsonl > tmp && mv tmp tasks.jsonl"#,
        ])
        .status()
        .unwrap();
    assert!(status.success());
    p.ralph(&["task", "validate"])
        .ok("ok: 2 tasks: 2 pending, 0 active, 0 ready, 0 complete, 0 blocked; 1 archived\n");
    p.ralph(&["task", "next"]).ok("A.2 middleware\n");
    p.ralph(&["task", "add", "x", "--parent", "A"]).ok("A.3\n");
    p.ralph(&["task", "archive", "A.2"]).ok("archived A.2\n");
    let done = p.read("tasks-done.jsonl");
    assert!(done.starts_with("{\"id\":\"A.1\",\"title\":\"choose\",\"status\":\"complete\",\"leaf\":true,\"completed\":\"2024-01-21\",\"commit\":\"abc123\"}\n"));
}

#[test]
fn a_jq_style_rewrite_between_two_ralph_writes_is_kept() {
    let p = TestProject::new();
    p.ralph(&["task", "add", "one"]).success();
    p.ralph(&["task", "add", "two"]).success();
    // What `jq -c '...' tasks.jsonl > tmp && mv tmp tasks.jsonl` does.
    let status = p
        .command("sh")
        .args(["-c", r#"sed 's/"title":"one"/"title":"one","owner":"kim"/' tasks.jsonl > tmp && mv tmp tasks.jsonl"#])
        .status()
        .unwrap();
    assert!(status.success());
    p.ralph(&["task", "start", "B"]).success();
    p.ralph(&["task", "add", "three"]).ok("C\n");
    let text = p.read("tasks.jsonl");
    assert!(text.contains(r#""title":"one","owner":"kim""#), "{text}");
    assert!(
        text.contains(r#""id":"B","title":"two","status":"active""#),
        "{text}"
    );
}

#[test]
fn an_append_with_shell_redirection_is_kept() {
    let p = TestProject::new();
    p.ralph(&["task", "add", "one"]).success();
    let status = p
        .command("sh")
        .args([
            "-c",
            r#"echo '{"id":"B","title":"by hand","status":"pending","leaf":true}' >> tasks.jsonl"#,
        ])
        .status()
        .unwrap();
    assert!(status.success());
    p.ralph(&["task", "add", "three"]).ok("C\n");
    assert_eq!(p.read("tasks.jsonl").lines().count(), 3);
}

#[test]
fn racing_writers_lose_nothing_and_never_share_an_id() {
    let p = TestProject::new();
    std::thread::scope(|scope| {
        for writer in 0..2 {
            let p = &p;
            scope.spawn(move || {
                for n in 0..40 {
                    p.ralph(&["task", "add", &format!("writer {writer} task {n}")])
                        .success();
                }
            });
        }
    });
    let text = p.read("tasks.jsonl");
    let ids: std::collections::HashSet<String> = crate::support::ids(&text).into_iter().collect();
    assert_eq!(text.lines().count(), 80);
    assert_eq!(ids.len(), 80);
    for writer in 0..2 {
        for n in 0..40 {
            assert!(text.contains(&format!("\"writer {writer} task {n}\"")));
        }
    }
}

#[test]
fn no_temporary_files_are_left_behind() {
    let p = TestProject::new();
    p.ralph(&["task", "add", "one"]).success();
    p.ralph(&["task", "archive", "A"]).success();
    let mut names: Vec<String> = std::fs::read_dir(p.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, [".ralph", "tasks-done.jsonl", "tasks.jsonl"]);
}

/// A big `tasks.jsonl` (20,000 tasks, over 4 MiB) reads and writes as a
/// small one: the same answers, the same bytes written, the same errors.
#[test]
fn a_big_file_reads_and_writes_as_a_small_one() {
    let line = |n: usize| {
        format!(
            "{{\"id\":\"T{n}\",\"title\":\"task number {n} with a title long enough\",\"status\":\"{}\",\"leaf\":true,\"body\":\"{}\"}}\n",
            if n == 19_999 { "pending" } else { "blocked" },
            "details ".repeat(20)
        )
    };
    let original: String = (0..20_000).map(line).collect();
    assert!(original.len() > 4 << 20);
    let p = TestProject::new().file("tasks.jsonl", &original);
    p.ralph(&["task", "next"])
        .ok("T19999 task number 19999 with a title long enough\n");
    p.ralph(&["task", "complete", "T19999"]).success();
    p.ralph(&["task", "archive", "T19999", "--commit", "abc"])
        .ok("archived T19999\n");
    let archived = p.json_lines("tasks-done.jsonl");
    assert_eq!(archived.len(), 1);
    assert_eq!(archived[0]["id"], "T19999");
    assert_eq!(archived[0]["commit"], "abc");
    // Every other line byte for byte.
    let kept: String = (0..19_999).map(line).collect();
    assert!(p.read("tasks.jsonl") == kept);
    // A bad byte deep in the file is found, and nothing is written.
    let mut bytes = kept.into_bytes();
    let at = bytes.len() - 20;
    bytes[at] = 0xff;
    std::fs::write(p.path().join("tasks.jsonl"), &bytes).unwrap();
    let run = p.ralph(&["task", "start", "T3"]);
    assert_eq!(run.code, 30, "{run:#?}");
    assert!(
        run.stderr
            .starts_with("error: tasks.jsonl:19999: not valid UTF-8 (byte 0xff at column "),
        "{run:#?}"
    );
    assert!(p.bytes("tasks.jsonl") == bytes);
}

/// A `ralph task` command holds nothing while its output is read: an
/// append does not wait for a slow reader of the output.
#[test]
fn a_slow_reader_of_the_output_does_not_hold_writers_of_a_big_file() {
    use std::io::Read;
    let line = |n: usize| {
        format!(
            "{{\"id\":\"T{n}\",\"title\":\"{}\",\"status\":\"pending\",\"leaf\":true}}\n",
            "t".repeat(200)
        )
    };
    let text: String = (0..25_000).map(line).collect();
    let p = TestProject::new().file("tasks.jsonl", &text);
    let mut list = p
        .ralph_command(&["task", "list"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Its output has begun (more than a pipe holds, so it now waits).
    let mut stdout = list.stdout.take().unwrap();
    let mut first = [0u8; 1];
    stdout.read_exact(&mut first).unwrap();
    let path = p.path().join("tasks.jsonl");
    let (sent, appended) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut file, line(25_000).as_bytes()).unwrap();
        sent.send(()).unwrap();
    });
    let waited = appended.recv_timeout(std::time::Duration::from_secs(10));
    let mut rest = Vec::new();
    stdout.read_to_end(&mut rest).unwrap();
    assert!(list.wait().unwrap().success());
    assert!(
        waited.is_ok(),
        "the append waited for the reader of the output"
    );
    assert!(p.read("tasks.jsonl").ends_with(&line(25_000)));
}

#[test]
fn a_queue_file_that_is_a_symbolic_link_is_refused_and_what_it_points_to_is_left_alone() {
    // The queue kept outside the repository and linked in: ralph reads
    // and writes its queue files only as files of their own (an agent
    // could have made the link, to have ralph write elsewhere), and says
    // what to do.
    let p = TestProject::new()
        .task(r#"{"id":"A","title":"first","status":"pending","leaf":true}"#)
        .agent(&crate::support::by_iteration(
            "RALPH_ITERATION",
            crate::support::FINISH,
        ));
    let real = p.aux().join("queue.jsonl");
    std::fs::rename(p.path().join("tasks.jsonl"), &real).unwrap();
    std::os::unix::fs::symlink(&real, p.path().join("tasks.jsonl")).unwrap();
    let p = p.git_init();
    let before = std::fs::read(&real).unwrap();
    let error = format!(
        "error: tasks.jsonl: a link to {}, where ralph keeps a file of its own\nhint: ralph never reads or writes through a link, nor into what it did not make: put the file itself back in its place (ralph's last copy of it is .ralph/queue/tasks.jsonl.valid), then run again\n",
        real.display()
    );
    p.ralph(&["task", "add", "second"]).fails(30, &error);
    p.ralph(&["task", "list"]).fails(30, &error);
    p.run(&[]).fails(30, &error);
    assert_eq!(std::fs::read(&real).unwrap(), before);
    assert!(
        std::fs::symlink_metadata(p.path().join("tasks.jsonl"))
            .unwrap()
            .is_symlink()
    );
    assert!(p.calls().is_empty(), "{:?}", p.calls());
    // Put in its place, the file is worked as any.
    std::fs::remove_file(p.path().join("tasks.jsonl")).unwrap();
    std::fs::rename(&real, p.path().join("tasks.jsonl")).unwrap();
    p.run(&[]).success();
    assert_eq!(crate::support::ids(&p.read("tasks-done.jsonl")), ["A"]);
    let entry = p.git(&["ls-tree", "main", "tasks.jsonl"]);
    assert!(entry.starts_with("100644 blob "), "{entry}");
}

#[test]
fn an_editor_open_on_the_queue_neither_stops_a_run_nor_enters_its_commits() {
    // vim has tasks.jsonl open when the run starts; during it, emacs's
    // auto-save file and a JetBrains safe write come and go.
    let p = TestProject::new()
        .task(r#"{"id":"A","title":"first","status":"pending","leaf":true}"#)
        .git_init()
        .agent(&crate::support::by_iteration(
            "RALPH_ITERATION",
            &format!(
                "1) printf 'autosave' > '#tasks.jsonl#'; printf 'old' > tasks.jsonl___jb_old___; {}",
                crate::support::FINISH.trim_start_matches("*) ")
            ),
        ))
        .file(".tasks.jsonl.swp", "b0VIM 9.0 swap");
    p.run(&[]).success();
    let committed = p.git(&["log", "--format=", "--name-only", "main"]);
    for companion in [
        ".tasks.jsonl.swp",
        "#tasks.jsonl#",
        "tasks.jsonl___jb_old___",
    ] {
        assert!(
            !committed.contains(companion),
            "{companion} committed:\n{committed}"
        );
        assert!(p.path().join(companion).exists(), "{companion} removed");
    }
    assert!(committed.contains("A.txt"), "{committed}");
}

/// `ralph status` shows what it can when a hand edit broke the queue: the
/// run, and the broken line with its fix in place of the counts.
#[test]
fn status_names_a_broken_queue_line_and_still_shows_the_rest() {
    let p = TestProject::new().file(
        "tasks.jsonl",
        "{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n{\"id\":\"B\",\"title\":\"oops\"\n",
    );
    let said = "tasks.jsonl:2: invalid JSON at column 24: EOF while parsing an object; fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written";
    p.ralph(&["status"])
        .ok(&format!("run: none live\nqueue: cannot be read: {said}\n"));
    let json = p.ralph(&["status", "--json"]).success().json();
    assert_eq!(json["queue_error"], said);
    assert_eq!(json["counts"], serde_json::Value::Null);
    assert_eq!(json["live"], false);
}

/// A crash between an archive's two writes leaves the id in both files:
/// it is archived, so every view reads it so, and none writes a byte.
#[test]
fn an_id_in_both_files_reads_as_archived_in_every_view() {
    let tasks = concat!(
        "{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n",
        "{\"id\":\"B\",\"title\":\"b\",\"status\":\"pending\",\"leaf\":true,\"deps\":[\"A\"]}\n",
    );
    let done = "{\"id\":\"A\",\"title\":\"a\",\"status\":\"complete\",\"leaf\":true,\"completed\":\"2026-01-01T00:00:00Z\"}\n";
    let p = TestProject::new()
        .file("tasks.jsonl", tasks)
        .file("tasks-done.jsonl", done);
    p.ralph(&["task", "list"]).ok("B  pending   b\n");
    let listed = p.ralph(&["task", "list", "--json"]).success().json();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    p.ralph(&["task", "tree"]).ok(concat!(
        "[ ] B b\n",
        "\n",
        "1 task: 1 pending, 0 active, 0 ready, 0 complete, 0 blocked; 1 archived\n",
    ));
    p.ralph(&["task", "show", "A"]).ok_noting(
        concat!(
            "A  a  (archived, tasks-done.jsonl line 1)\n",
            "status: complete\n",
            "leaf: true\n",
            "completed: 2026-01-01T00:00:00Z\n",
        ),
        "note: tasks.jsonl line 1 still holds A, left by an archive cut short; it reads as archived, and `ralph task archive A` (or the next run) removes the line\n",
    );
    assert_eq!(
        p.ralph(&["task", "show", "A", "--json"]).success().json()["status"],
        "complete"
    );
    p.ralph(&["status"])
        .ok("run: none live\nqueue: 1 task (1 pending); 1 archived\n");
    let status = p.ralph(&["status", "--json"]).success().json();
    assert_eq!(status["counts"]["pending"], 1);
    assert_eq!(status["counts"]["archived"], 1);
    p.ralph(&["task", "validate"])
        .ok("ok: 1 task: 1 pending, 0 active, 0 ready, 0 complete, 0 blocked; 1 archived\n");
    p.ralph(&["task", "next"]).ok("B b\n");
    assert_eq!(p.read("tasks.jsonl"), tasks);
    assert_eq!(p.read("tasks-done.jsonl"), done);
    assert!(!p.path().join(".ralph").exists(), "a view wrote .ralph/");
}
