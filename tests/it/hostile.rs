//! Hostile and broken input, table-driven: every broken file gives its
//! exact one-line error (file, line, what) with a hint, the documented exit
//! code, and leaves every file of the project byte-identical. A few hostile
//! but valid inputs are accepted and kept as they are.

use std::collections::BTreeMap;
use std::path::Path;

use crate::support::TestProject;

const GOOD: &[u8] = b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n";

struct Case {
    name: &'static str,
    files: Vec<(&'static str, Vec<u8>)>,
    args: &'static [&'static str],
    exit: i32,
    stderr: &'static str,
}

/// Billion laughs: ten levels of ten-fold aliases (10^10 strings expanded).
fn yaml_bomb() -> String {
    let mut yaml = String::from(
        "x0: &x0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    for level in 1..10 {
        let refs = vec![format!("*x{}", level - 1); 10].join(",");
        yaml.push_str(&format!("x{level}: &x{level} [{refs}]\n"));
    }
    yaml
}

/// The same bomb built inside the trigger list.
fn yaml_bomb_in_triggers() -> String {
    let mut yaml = String::from("triggers:\n  - &t0 {condition: \"true\", role: reviewer}\n");
    for level in 1..10 {
        let refs = vec![format!("*t{}", level - 1); 10].join(",");
        yaml.push_str(&format!("  - &t{level} [{refs}]\n"));
    }
    yaml
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "tasks: invalid JSON",
            files: vec![("tasks.jsonl", b"{\"id\":\"A\",\"title\":\"a\"\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks.jsonl:1: invalid JSON at column 21: EOF while parsing an object\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "tasks: trailing garbage",
            files: vec![("tasks.jsonl", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true} x\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks.jsonl:1: invalid JSON at column 55: trailing characters\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "tasks: missing title",
            files: vec![("tasks.jsonl", b"{\"id\":\"A\",\"status\":\"pending\",\"leaf\":true}\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks.jsonl:1: missing field `title`\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "tasks: mistyped leaf",
            files: vec![("tasks.jsonl", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":\"yes\"}\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks.jsonl:1: field `leaf` must be true or false, not \"yes\"\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "tasks: number as id",
            files: vec![("tasks.jsonl", b"{\"id\":7,\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks.jsonl:1: field `id` must be a string, not 7\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "tasks: unknown status",
            files: vec![("tasks.jsonl", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"doing\",\"leaf\":true}\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks.jsonl:1: unknown status \"doing\" (use pending, active, ready, complete or blocked)\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "tasks: empty id",
            files: vec![("tasks.jsonl", b"{\"id\":\"\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks.jsonl:1: empty id\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "tasks: id with a slash",
            files: vec![("tasks.jsonl", b"{\"id\":\"A/../b\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks.jsonl:1: id \"A/../b\" contains '/'; use letters, digits, - and _ between the dots\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "tasks: conflict marker",
            files: vec![("tasks.jsonl", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n=======\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks.jsonl:2: merge conflict marker; resolve the conflict (keep one version of each task line) and delete the marker lines\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "tasks: invalid UTF-8",
            files: vec![("tasks.jsonl", b"{\"id\":\"A\",\"title\":\"\xc3(\",\"status\":\"pending\",\"leaf\":true}\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks.jsonl:1: not valid UTF-8 (byte 0xc3 at column 20); save the file as UTF-8\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "tasks: NUL byte",
            files: vec![("tasks.jsonl", b"{\"id\":\"A\",\"title\":\"a\x00\",\"status\":\"pending\",\"leaf\":true}\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks.jsonl:1: invalid JSON at column 21: control character (\\u0000-\\u001F) found while parsing a string\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "tasks: 10 MB line",
            files: vec![("tasks.jsonl", [&b"{\"id\":\"A\",\"title\":\""[..], &vec![b'x'; 10_000_000], b"\n"].concat())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks.jsonl:1: invalid JSON at column 10000019: EOF while parsing a string\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "tasks: deep nesting",
            files: vec![("tasks.jsonl", [&b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true,\"x\":"[..], &vec![b'['; 5000], &vec![b']'; 5000], b"}\n"].concat())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks.jsonl:1: nested deeper than 128 levels; flatten the line's values\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "tasks: 10,000-level id",
            files: vec![("tasks.jsonl", format!("{{\"id\":\"A{}\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}}\n", ".1".repeat(10_000)).into_bytes())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks.jsonl:1: id is 20001 bytes long; at most 200\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "tasks: duplicate id",
            files: vec![("tasks.jsonl", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks.jsonl:2: duplicate id \"A\" (first on line 1); give one of them a new id\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "tasks: missing parent",
            files: vec![("tasks.jsonl", b"{\"id\":\"A.1\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks.jsonl:1: parent \"A\" of task \"A.1\" does not exist; add the parent or fix the id\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "tasks: leaf with children",
            files: vec![("tasks.jsonl", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n{\"id\":\"A.1\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks.jsonl:1: task \"A\" has \"leaf\": true but has children (A.1 on line 2); set \"leaf\": false\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "tasks: unknown dep",
            files: vec![("tasks.jsonl", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true,\"deps\":[\"Z\"]}\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks.jsonl:1: task \"A\" depends on \"Z\", which is in neither tasks.jsonl nor tasks-done.jsonl; fix or remove it in \"deps\"\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "tasks: dependency cycle",
            files: vec![("tasks.jsonl", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true,\"deps\":[\"B\"]}\n{\"id\":\"B\",\"title\":\"b\",\"status\":\"pending\",\"leaf\":true,\"deps\":[\"A\"]}\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks.jsonl:1: dependency cycle A -> B -> A; remove one of these deps\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "tasks: duplicate key",
            files: vec![("tasks.jsonl", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"status\":\"active\",\"leaf\":true}\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks.jsonl:1: duplicate field `status`\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "tasks: BOM in the middle",
            files: vec![("tasks.jsonl", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n\xef\xbb\xbf{\"id\":\"B\",\"title\":\"b\",\"status\":\"pending\",\"leaf\":true}\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks.jsonl:2: invalid JSON at column 1: expected value\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "tasks: null line",
            files: vec![("tasks.jsonl", b"null\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks.jsonl:1: expected a JSON object ({...}), found another JSON value\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "tasks: array line",
            files: vec![("tasks.jsonl", b"[\"A\",\"a\",\"pending\",true]\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks.jsonl:1: expected a JSON object ({...}), found another JSON value\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "tasks: body an object",
            files: vec![("tasks.jsonl", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true,\"body\":{}}\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks.jsonl:1: field `body` must be a string, not {}\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "done: number as id",
            files: vec![("tasks-done.jsonl", b"{\"id\":12}\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks-done.jsonl:1: field `id` must be a string, not 12\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "done: array line",
            files: vec![("tasks-done.jsonl", b"[]\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks-done.jsonl:1: expected a JSON object ({...}), found another JSON value\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "done: NUL byte",
            files: vec![("tasks-done.jsonl", b"\x00\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks-done.jsonl:1: invalid JSON at column 1: expected value\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "done: conflict marker",
            files: vec![("tasks-done.jsonl", b">>>>>>> theirs\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks-done.jsonl:1: merge conflict marker; resolve the conflict (keep one version of each task line) and delete the marker lines\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "done: broken line before the last",
            files: vec![("tasks-done.jsonl", b"{\"id\":\"Q\"\n{\"id\":\"R\"}\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks-done.jsonl:1: invalid JSON at column 9: EOF while parsing an object\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "done: missing id",
            files: vec![("tasks-done.jsonl", b"{\"title\":\"x\"}\n".to_vec())],
            args: &["task", "validate"],
            exit: 30,
            stderr: "error: tasks-done.jsonl:1: missing field `id`\nhint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n",
        },
        Case {
            name: "roles: unknown variable",
            files: vec![("config/roles.yaml", b"triggers:\n  - condition: \"brnch_commits >= 5\"\n    role: reviewer\n".to_vec())],
            args: &["roles", "check"],
            exit: 30,
            stderr: "error: config/roles.yaml: trigger 1 (condition \"brnch_commits >= 5\"): unknown variable `brnch_commits` (did you mean `branch_commits`?); known: task_id, task_title, task_status, task_kind, task_depth, iteration, task_iteration, branch_commits, files_changed, last_iteration_failed, consecutive_failures, task_marked_ready_to_complete, elapsed_minutes, last_review, review_rejections, task_notes, iterations_since_review\nhint: fix config/roles.yaml (the syntax is described at the top of the default file, `ralph init` writes it), then run `ralph roles check`\n",
        },
        Case {
            name: "roles: condition not true/false",
            files: vec![("config/roles.yaml", b"triggers:\n  - condition: \"task_title\"\n    role: reviewer\n".to_vec())],
            args: &["roles", "check"],
            exit: 30,
            stderr: "error: config/roles.yaml: trigger 1 (condition \"task_title\"): the condition gives a string, not true or false\nhint: fix config/roles.yaml (the syntax is described at the top of the default file, `ralph init` writes it), then run `ralph roles check`\n",
        },
        Case {
            name: "roles: string compared with a number",
            files: vec![("config/roles.yaml", b"triggers:\n  - condition: \"task_title > 3\"\n    role: reviewer\n".to_vec())],
            args: &["roles", "check"],
            exit: 30,
            stderr: "error: config/roles.yaml: trigger 1 (condition \"task_title > 3\"): compares a string with a number; both sides must be the same type\nhint: fix config/roles.yaml (the syntax is described at the top of the default file, `ralph init` writes it), then run `ralph roles check`\n",
        },
        Case {
            name: "roles: triggers not a list",
            files: vec![("config/roles.yaml", b"triggers: 5\n".to_vec())],
            args: &["roles", "check"],
            exit: 30,
            stderr: "error: config/roles.yaml:1: triggers: invalid type: integer `5`, expected a sequence\nhint: fix config/roles.yaml (the syntax is described at the top of the default file, `ralph init` writes it), then run `ralph roles check`\n",
        },
        Case {
            name: "roles: tab indentation",
            files: vec![("config/roles.yaml", b"triggers:\n\t- condition: \"true\"\n".to_vec())],
            args: &["roles", "check"],
            exit: 30,
            stderr: "error: config/roles.yaml:2: found character that cannot start any token\nhint: fix config/roles.yaml (the syntax is described at the top of the default file, `ralph init` writes it), then run `ralph roles check`\n",
        },
        Case {
            name: "roles: invalid UTF-8",
            files: vec![("config/roles.yaml", b"triggers: []\n# \xff\n".to_vec())],
            args: &["roles", "check"],
            exit: 30,
            stderr: "error: config/roles.yaml:2: not valid UTF-8 (byte 0xff at column 3); save the file as UTF-8\nhint: fix config/roles.yaml (the syntax is described at the top of the default file, `ralph init` writes it), then run `ralph roles check`\n",
        },
        Case {
            name: "roles: NUL byte",
            files: vec![("config/roles.yaml", b"triggers: []\x00\n".to_vec())],
            args: &["roles", "check"],
            exit: 30,
            stderr: "error: config/roles.yaml:1: control characters are not allowed at position 12\nhint: fix config/roles.yaml (the syntax is described at the top of the default file, `ralph init` writes it), then run `ralph roles check`\n",
        },
        Case {
            name: "roles: duplicate key",
            files: vec![("config/roles.yaml", b"triggers:\n  - condition: \"true\"\n    role: reviewer\n    role: debugger\n".to_vec())],
            args: &["roles", "check"],
            exit: 30,
            stderr: "error: config/roles.yaml:2: triggers[0]: duplicate field `role`\nhint: fix config/roles.yaml (the syntax is described at the top of the default file, `ralph init` writes it), then run `ralph roles check`\n",
        },
        Case {
            name: "roles: YAML bomb beside the triggers",
            files: vec![("config/roles.yaml", format!("{}triggers: []\n", yaml_bomb()).into_bytes())],
            args: &["roles", "check"],
            exit: 30,
            stderr: "error: config/roles.yaml:1: unknown field `x0`, expected `triggers`\nhint: fix config/roles.yaml (the syntax is described at the top of the default file, `ralph init` writes it), then run `ralph roles check`\n",
        },
        Case {
            name: "roles: YAML bomb inside the triggers",
            files: vec![("config/roles.yaml", yaml_bomb_in_triggers().into_bytes())],
            args: &["roles", "check"],
            exit: 30,
            stderr: "error: config/roles.yaml:3: triggers[1]: invalid type: sequence, expected a section of `key: value` lines\nhint: fix config/roles.yaml (the syntax is described at the top of the default file, `ralph init` writes it), then run `ralph roles check`\n",
        },
        Case {
            name: "roles: role without a file",
            files: vec![("config/roles.yaml", b"triggers:\n  - condition: \"true\"\n    role: tester\n".to_vec())],
            args: &["roles", "check"],
            exit: 30,
            stderr: "error: config/roles.yaml: trigger 1 (condition \"true\"): role \"tester\" has no file roles/tester.md; create it or fix the role name\nhint: fix config/roles.yaml (the syntax is described at the top of the default file, `ralph init` writes it), then run `ralph roles check`\n",
        },
        Case {
            name: "roles: unknown key",
            files: vec![("config/roles.yaml", b"triggers:\n  - condition: \"true\"\n    role: reviewer\n    modle: opus\n".to_vec())],
            args: &["roles", "check"],
            exit: 30,
            stderr: "error: config/roles.yaml:4: triggers[0]: unknown field `modle`, expected one of `condition`, `role`, `model`, `description` (did you mean `model`?)\nhint: fix config/roles.yaml (the syntax is described at the top of the default file, `ralph init` writes it), then run `ralph roles check`\n",
        },
        Case {
            name: "settings: unknown key",
            files: vec![("config/ralph.yaml", b"max_iteration: 3\n".to_vec()), ("tasks.jsonl", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n".to_vec())],
            args: &["run", "--dry-run"],
            exit: 30,
            stderr: "error: config/ralph.yaml:1: unknown field `max_iteration`, expected one of `agent`, `workers`, `max_iterations`, `max_run_minutes`, `max_iterations_per_task`, `max_task_minutes`, `max_consecutive_failures`, `no_progress_iterations`, `retry_backoff`, `usage_limit_max_wait`, `pause_between_iterations`, `poll_interval`, `base_branch`, `branch_prefix`, `verify`, `git`, `delivery`, `final_review`, `delivery_labels`, `max_task_cost_usd`, `max_run_cost_usd`, `max_task_tokens`, `max_run_tokens`, `notify`, `watch`, `review_every`, `retention_days`, `report`, `sandbox`, `remote` (did you mean `max_iterations`?)\nhint: fix config/ralph.yaml; docs/CONFIG.md lists every key and its values\n",
        },
        Case {
            name: "settings: duplicate key",
            files: vec![("config/ralph.yaml", b"max_iterations: 3\nmax_iterations: 4\n".to_vec()), ("tasks.jsonl", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n".to_vec())],
            args: &["run", "--dry-run"],
            exit: 30,
            stderr: "error: config/ralph.yaml:2: max_iterations: written twice; keep one\nhint: fix config/ralph.yaml; docs/CONFIG.md lists every key and its values\n",
        },
        Case {
            name: "settings: negative number",
            files: vec![("config/ralph.yaml", b"max_iterations: -1\n".to_vec()), ("tasks.jsonl", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n".to_vec())],
            args: &["run", "--dry-run"],
            exit: 30,
            stderr: "error: config/ralph.yaml:1: max_iterations: invalid type: integer `-1`, expected u64\nhint: fix config/ralph.yaml; docs/CONFIG.md lists every key and its values\n",
        },
        Case {
            name: "settings: duration without a unit",
            files: vec![("config/ralph.yaml", b"agent:\n  timeout: 20\n".to_vec()), ("tasks.jsonl", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n".to_vec())],
            args: &["run", "--dry-run"],
            exit: 30,
            stderr: "error: config/ralph.yaml:2: agent.timeout: duration \"20\" needs a unit: ms, s, m or h\nhint: fix config/ralph.yaml; docs/CONFIG.md lists every key and its values\n",
        },
        Case {
            name: "settings: invalid UTF-8",
            files: vec![("config/ralph.yaml", b"x: \xff\n".to_vec()), ("tasks.jsonl", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n".to_vec())],
            args: &["run", "--dry-run"],
            exit: 30,
            stderr: "error: config/ralph.yaml:1: not valid UTF-8 (byte 0xff at column 4); save the file as UTF-8\nhint: fix config/ralph.yaml; docs/CONFIG.md lists every key and its values\n",
        },
        Case {
            name: "settings: unterminated quote in the agent command",
            files: vec![("config/ralph.yaml", b"agent:\n  command: \"unterminated \\\"quote\"\n".to_vec()), ("tasks.jsonl", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n".to_vec())],
            args: &["run", "--dry-run"],
            exit: 30,
            stderr: "error: agent command `unterminated \"quote` cannot be used: a quote is not closed\nhint: the command is split like a shell would, without running one: quote arguments with spaces\n",
        },
        Case {
            name: "settings: unknown preset",
            files: vec![("config/ralph.yaml", b"agent:\n  preset: claud\n".to_vec()), ("tasks.jsonl", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n".to_vec())],
            args: &["run", "--dry-run"],
            exit: 30,
            stderr: "error: config/ralph.yaml:2: agent.preset: unknown preset \"claud\"; use one of claude, codex, codex-app-server, opencode, amp, gemini, qwen, aider, cursor\nhint: fix config/ralph.yaml; docs/CONFIG.md lists every key and its values\n",
        },
        Case {
            name: "settings: YAML bomb",
            files: vec![("config/ralph.yaml", yaml_bomb().into_bytes()), ("tasks.jsonl", GOOD.to_vec())],
            args: &["run", "--dry-run"],
            exit: 30,
            stderr: "error: config/ralph.yaml:1: unknown field `x0`, expected one of `agent`, `workers`, `max_iterations`, `max_run_minutes`, `max_iterations_per_task`, `max_task_minutes`, `max_consecutive_failures`, `no_progress_iterations`, `retry_backoff`, `usage_limit_max_wait`, `pause_between_iterations`, `poll_interval`, `base_branch`, `branch_prefix`, `verify`, `git`, `delivery`, `final_review`, `delivery_labels`, `max_task_cost_usd`, `max_run_cost_usd`, `max_task_tokens`, `max_run_tokens`, `notify`, `watch`, `review_every`, `retention_days`, `report`, `sandbox`, `remote`\nhint: fix config/ralph.yaml; docs/CONFIG.md lists every key and its values\n",
        },
        Case {
            name: "role file: invalid UTF-8",
            files: vec![("roles/reviewer.md", b"# r\n\xff\n".to_vec()), ("config/roles.yaml", b"triggers:\n  - condition: \"true\"\n    role: reviewer\n".to_vec()), ("tasks.jsonl", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n".to_vec())],
            args: &["run", "--dry-run"],
            exit: 30,
            stderr: "error: roles/reviewer.md:2: not valid UTF-8 (byte 0xff at column 1); save the file as UTF-8\nhint: fix roles/reviewer.md, then run `ralph roles check`\n",
        },
        Case {
            name: "template: syntax error",
            files: vec![("templates/context.md.j2", b"{% for %}".to_vec()), ("tasks.jsonl", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n".to_vec())],
            args: &["run", "--dry-run"],
            exit: 30,
            stderr: "error: templates/context.md.j2:1: syntax error: unexpected end of block, expected in\nhint: fix templates/context.md.j2 (variables: task, ancestors, iteration, task_iteration, role, trigger, evidence, critique, review, notes, rejection) or delete it to use the default\n",
        },
        Case {
            name: "template: undefined variable",
            files: vec![("templates/context.md.j2", b"{{ nope }}".to_vec()), ("tasks.jsonl", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n".to_vec())],
            args: &["run", "--dry-run"],
            exit: 30,
            stderr: "error: templates/context.md.j2:1: undefined value: `nope` is undefined\nhint: fix templates/context.md.j2 (variables: task, ancestors, iteration, task_iteration, role, trigger, evidence, critique, review, notes, rejection) or delete it to use the default\n",
        },
        Case {
            name: "template: invalid UTF-8",
            files: vec![("templates/context.md.j2", b"\xfe".to_vec()), ("tasks.jsonl", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n".to_vec())],
            args: &["run", "--dry-run"],
            exit: 30,
            stderr: "error: templates/context.md.j2:1: not valid UTF-8 (byte 0xfe at column 1); save the file as UTF-8\nhint: fix templates/context.md.j2 (variables: task, ancestors, iteration, task_iteration, role, trigger, evidence, critique, review, notes, rejection) or delete it to use the default\n",
        },
        Case {
            name: "working.md: invalid UTF-8",
            files: vec![("working.md", b"ok\n\xc0".to_vec()), ("tasks.jsonl", b"{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n".to_vec())],
            args: &["run", "--dry-run"],
            exit: 30,
            stderr: "error: working.md:2: not valid UTF-8 (byte 0xc0 at column 1); save the file as UTF-8\nhint: fix working.md, or move it aside and run `ralph init` to write the default\n",
        },
    ]
}

/// Every file of the project (not `.git`), path to bytes.
fn snapshot(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, into: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, into);
            } else {
                let name = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                into.insert(name, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut files = BTreeMap::new();
    walk(root, root, &mut files);
    files
}

#[test]
fn every_broken_input_gets_its_exact_error_and_changes_nothing() {
    let cases = cases();
    assert!(cases.len() >= 40, "{} cases", cases.len());
    for case in cases {
        let mut project = TestProject::new();
        project.ralph(&["init"]).success();
        for (path, bytes) in &case.files {
            project = project.file(path, bytes);
        }
        let before = snapshot(project.path());
        let run = project.ralph(case.args);
        assert_eq!(
            (run.code, run.stdout.as_str(), run.stderr.as_str()),
            (case.exit, "", case.stderr),
            "{}",
            case.name
        );
        assert!(
            before == snapshot(project.path()),
            "{}: a file changed",
            case.name
        );
    }
}

#[test]
fn a_bom_and_crlf_line_endings_are_accepted_and_kept() {
    let text = b"\xef\xbb\xbf{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\r\n{\"id\":\"B\",\"title\":\"b\",\"status\":\"pending\",\"leaf\":true}\r\n";
    let project = TestProject::new().file("tasks.jsonl", text);
    project.ralph(&["task", "validate"]).success();
    project.ralph(&["task", "start", "B"]).success();
    let after = project.bytes("tasks.jsonl");
    assert!(after.starts_with(
        b"\xef\xbb\xbf{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\r\n"
    ));
    assert!(after.ends_with(b"\"status\":\"active\",\"leaf\":true}\r\n"));
}

#[test]
fn a_torn_last_line_of_the_archive_is_ignored_then_quarantined() {
    let torn = b"{\"id\":\"Q\",\"title\":\"q\"}\n{\"id\":\"R\",\"ti";
    let project = TestProject::new()
        .file("tasks-done.jsonl", torn)
        .task(std::str::from_utf8(GOOD).unwrap().trim());
    project.ralph(&["task", "validate"]).ok_noting(
        "ok: 1 task: 1 pending, 0 active, 0 ready, 0 complete, 0 blocked; 1 archived\n",
        "warning: tasks-done.jsonl:2: a torn last line (a crash during an append?) is ignored; the next archive moves it to .ralph/queue/quarantine\n",
    );
    assert_eq!(
        project.bytes("tasks-done.jsonl"),
        torn,
        "reading repairs nothing"
    );
    let run = project.ralph(&["task", "archive", "A"]).success();
    assert!(run.stderr.starts_with("warning: tasks-done.jsonl:2: a torn last line (a crash during an append?) was moved to .ralph/queue/quarantine/tasks-done.jsonl.line2."), "{run:#?}");
    let done = project.read("tasks-done.jsonl");
    let lines: Vec<&str> = done.lines().collect();
    assert_eq!(
        lines[0], "{\"id\":\"Q\",\"title\":\"q\"}",
        "complete records are never dropped"
    );
    assert!(lines[1].starts_with("{\"id\":\"A\""), "{done}");
    assert_eq!(lines.len(), 2);
    let kept: Vec<_> = std::fs::read_dir(project.path().join(".ralph/queue/quarantine"))
        .unwrap()
        .collect();
    assert_eq!(kept.len(), 1);
    assert_eq!(
        std::fs::read(kept[0].as_ref().unwrap().path()).unwrap(),
        b"{\"id\":\"R\",\"ti"
    );
}
