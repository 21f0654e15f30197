//! `ralph demo` on a fresh folder, and the example agent script.

use std::process::Command;

use crate::support::{RALPH, TestProject, pinned_command};

#[test]
fn the_demo_runs_the_sample_project_to_the_end() {
    let p = TestProject::new();
    let run = p.ralph(&["demo", "greet"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let folder = p.path().join("greet");
    // The base holds one squash commit per leaf task, newest first.
    let subjects: Vec<&str> = run
        .stdout
        .lines()
        .skip_while(|line| !line.starts_with("git log --oneline main:"))
        .skip(1)
        .take_while(|line| !line.is_empty())
        .map(|line| line.trim().split_once(' ').expect("sha and subject").1)
        .collect();
    assert_eq!(
        subjects,
        [
            "[C] refactor the file layout",
            "[B.2] write the install section",
            "[B.1] write the usage section",
            "[A.2] add tests for greet",
            "[A.1] write the greet function",
            "start the greet project",
        ]
    );
    let done = std::fs::read_to_string(folder.join("tasks-done.jsonl")).unwrap();
    assert_eq!(
        crate::support::ids(&done),
        ["A.1", "A.2", "A", "B.1", "B.2", "B", "C"]
    );
    assert_eq!(
        std::fs::read_to_string(folder.join("tasks.jsonl")).unwrap(),
        ""
    );
    // Every role the demo is meant to show did run.
    let log = std::fs::read_to_string(folder.join("ralph.log")).unwrap();
    for shown in [
        "[reviewer]",
        "[debugger]",
        "[architect]",
        "B split into B.1, B.2",
        "-> exit",
    ] {
        assert!(log.contains(shown), "ralph.log lacks {shown:?}:\n{log}");
    }
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join(".ralph/result.json")).unwrap())
            .unwrap();
    assert_eq!(result["status"], "drained");
    assert_eq!(result["failures"]["exit"], 1);
    // Each merge passed the demo's check first: none on the agent's word.
    let merged: Vec<String> = (result["outcomes"].as_array().unwrap().iter())
        .filter(|o| o["outcome"] == "merged")
        .map(|o| format!("{} {}", o["task"].as_str().unwrap(), o["verified"]))
        .collect();
    assert_eq!(
        merged,
        ["A.1 true", "A.2 true", "B.1 true", "B.2 true", "C true"]
    );
    assert!(
        !(run.stdout.clone() + &run.stderr).contains("verify.task is empty"),
        "{run:#?}"
    );
    // What to type next works from the demo's folder: ralph by its path.
    let bin = std::fs::canonicalize(RALPH).unwrap();
    let next = run.stdout.split_once("\nLook next:\n").unwrap().1;
    assert_eq!(
        next,
        format!(
            "  cd {}\n  cat ralph.log                    one line per iteration and per merge\n  {} status\n                                   the last run and its recent events\n  ls .ralph/prompts .ralph/logs    every prompt the agent got, and what it printed\n  git log refs/ralph/tasks/A.1     a task's full history before its squash\n",
            folder.display(),
            bin.display()
        )
    );
    // --dir and --json are not the demo's: a usage error, not ignored.
    let wrong = p.ralph(&["demo", "--dir", "elsewhere"]);
    assert_eq!(wrong.code, 2, "{wrong:#?}");
    assert!(
        wrong.stderr.starts_with(
            "error: `ralph demo` takes neither --dir nor --json: name its folder as `ralph demo DIR`\n"
        ),
        "{wrong:#?}"
    );
    assert!(!p.path().join("elsewhere").exists());
    // Both ways round, and for --json; the demo's help lists neither.
    for args in [["--dir", "elsewhere", "demo"], ["demo", "--json", "greet2"]] {
        let wrong = p.ralph(&args);
        assert_eq!(wrong.code, 2, "{args:?}: {wrong:#?}");
        assert!(wrong.stderr.contains("takes neither"), "{wrong:#?}");
    }
    let help = p.ralph(&["demo", "--help"]);
    assert_eq!(help.code, 0, "{help:#?}");
    assert!(help.stdout.contains("[DIR]"), "{}", help.stdout);
    assert!(
        !help.stdout.contains("--dir") && !help.stdout.contains("--json"),
        "{}",
        help.stdout
    );
    // A folder with something in it is refused, and so is a file.
    p.ralph(&["demo", "greet"]).fails(
        30,
        &format!(
            "error: {} is not empty; the demo makes its own project\nhint: pass a new folder, or none for a temporary one\n",
            folder.display()
        ),
    );
    std::fs::write(p.path().join("a-file"), "x").unwrap();
    p.ralph(&["demo", "a-file"]).fails(
        30,
        &format!(
            "error: {}: a file, where ralph needs a folder\nhint: move or rename it, then run the command again; nothing was written\n",
            p.path().join("a-file").display()
        ),
    );
}

#[test]
fn the_example_agent_script_follows_the_contract() {
    let p = TestProject::new().file("README.md", "# example\n");
    p.ralph(&["init"]).success();
    git_start(&p);
    p.ralph(&["task", "add", "first note"]).success();
    p.ralph(&["task", "add", "second note"]).success();
    run_example_agent(&p);
    let log = Command::new("git")
        .args(["log", "--format=%s", "main"])
        .current_dir(p.path())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&log.stdout),
        "[B] second note\n[A] first note\nstart\n"
    );
    assert_eq!(p.read("notes/A.md"), "first note\n");
}

/// A retry of the same task (its check failed once) runs the example
/// agent again on a note it committed already: it just completes the task.
#[test]
fn the_example_agent_script_can_run_twice_on_a_task() {
    let p = TestProject::new().file("README.md", "# example\n");
    p.ralph(&["init"]).success();
    let marker = p.aux().join("checked-once");
    std::fs::write(
        p.path().join("config/ralph.yaml"),
        format!(
            "verify:\n  task:\n    - \"test -f {0} || {{ touch {0}; exit 1; }}\"\n",
            marker.display()
        ),
    )
    .unwrap();
    git_start(&p);
    p.ralph(&["task", "add", "a note"]).success();
    run_example_agent(&p);
    let result = p.json(".ralph/result.json");
    assert_eq!(result["failures"], serde_json::json!({"verify_failed": 1}));
    assert_eq!(result["iterations"], 2, "{result}");
    assert_eq!(p.read("notes/A.md"), "a note\n");
}

/// The project as a repository on `main`, everything in one commit.
/// `ralph run --quiet` with `examples/agent.sh`; it must drain (exit 0).
fn run_example_agent(p: &TestProject) {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/agent.sh");
    let run = pinned_command(RALPH, p.path())
        .current_dir(p.path())
        .env("RALPH_PAUSE_BETWEEN_ITERATIONS", "0ms")
        .env("RALPH_RETRY_BACKOFF", "10ms")
        .args(["run", "--quiet", "--agent-cmd", script.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

fn git_start(p: &TestProject) {
    let git = |args: &[&str]| {
        let status = p.command("git").args(args).status().unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["config", "user.name", "Test Author"]);
    git(&["config", "user.email", "author@example.com"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "start"]);
}
