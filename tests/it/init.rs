//! `ralph init`: what it creates, keeps and replaces.

use crate::support::{TestProject, finish};

const CREATED: &str = "created working.md
created learnings.md
created tasks.jsonl
created tasks-done.jsonl
created roles/reviewer.md
created roles/architect.md
created roles/debugger.md
created roles/documenter.md
created roles/refactorer.md
created roles/planner.md
created roles/final-reviewer.md
created config/roles.yaml
created config/ralph.yaml
added to .gitignore: .ralph/, ralph.log, .stop
no checks found for verify.task and verify.run
";

#[test]
fn init_creates_every_default_and_says_when_git_is_missing() {
    let p = TestProject::new();
    let note = format!(
        "note: {} is not in a git repository yet; `ralph run` needs one: git init && git add -A && git commit -m start\n",
        p.path().display()
    );
    p.ralph(&["init"]).ok_noting(CREATED, &note);
    assert_eq!(
        p.read(".gitignore"),
        "# ralph runtime files\n.ralph/\nralph.log\n.stop\n"
    );
    assert_eq!(p.read("tasks.jsonl"), "");
    assert!(p.read("working.md").contains("ralph task ready"));
    for role in [
        "reviewer",
        "architect",
        "debugger",
        "documenter",
        "refactorer",
        "planner",
        "final-reviewer",
    ] {
        assert!(
            p.read(&format!("roles/{role}.md")).starts_with("# Role: "),
            "{role}"
        );
    }
    // The written project is consistent: its triggers check out.
    p.ralph(&["roles", "check"]).success();
}

#[test]
fn init_never_overwrites_without_force_and_force_spares_the_data() {
    let p = TestProject::new()
        .file(".git/HEAD", "ref: refs/heads/main\n")
        .file("working.md", "my own workflow\n")
        .file(
            "tasks.jsonl",
            "{\"id\":\"A\",\"title\":\"mine\",\"status\":\"pending\",\"leaf\":true}\n",
        )
        .file(".gitignore", "target\n/.ralph\n");
    let run = p.ralph(&["init"]).success();
    assert!(run.stdout.starts_with("kept working.md (it exists; --force replaces it)\ncreated learnings.md\nkept tasks.jsonl (it holds the project's own data; never replaced)\n"), "{run:?}");
    assert!(
        run.stdout
            .ends_with("added to .gitignore: ralph.log, .stop\nno checks found for verify.task and verify.run\n"),
        "{run:?}"
    );
    assert_eq!(run.stderr, "");
    assert_eq!(p.read("working.md"), "my own workflow\n");
    assert_eq!(
        p.read(".gitignore"),
        "target\n/.ralph\n# ralph runtime files\nralph.log\n.stop\n"
    );

    let forced = p.ralph(&["init", "--force", "--agent", "aider"]).success();
    assert!(forced.stdout.starts_with("replaced working.md\nkept learnings.md (it holds the project's own data; never replaced)\nkept tasks.jsonl (it holds the project's own data; never replaced)\n"), "{forced:?}");
    assert!(p.read("working.md").contains("ralph task ready"));
    assert!(p.read("tasks.jsonl").contains("mine"));
    assert!(p.read("config/ralph.yaml").contains("  preset: aider"));
    // Only aider's own files are left to add the second time: aider
    // would add them on its first run, as that task's change.
    assert!(
        forced.stdout.ends_with(
            "added to .gitignore: .aider*\nno checks found for verify.task and verify.run\n"
        ),
        "{forced:?}"
    );
    assert!(
        p.read(".gitignore")
            .ends_with("# ralph runtime files\n.aider*\n")
    );
}

#[test]
fn init_refuses_an_unknown_agent_and_reports_json() {
    let p = TestProject::new().file(".git/HEAD", "ref: refs/heads/main\n");
    let bad = p.ralph(&["init", "--agent", "gpt"]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("invalid value 'gpt'"), "{bad:?}");
    assert!(!p.path().join("working.md").exists());
    let json = p.ralph(&["init", "--json"]).success().json();
    assert_eq!(json["created"].as_array().unwrap().len(), 13);
    assert_eq!(json["git_repository"], true);
    assert_eq!(
        json["gitignore_added"],
        serde_json::json!([".ralph/", "ralph.log", ".stop"])
    );
}

#[test]
fn init_with_an_agent_keeps_existing_settings_and_says_so() {
    let p = TestProject::new()
        .file(".git/HEAD", "ref: refs/heads/main\n")
        .file("config/ralph.yaml", "max_iterations: 3\n");
    let run = p.ralph(&["init", "--agent", "codex"]).success();
    assert_eq!(
        run.stderr,
        "note: config/ralph.yaml exists, so --agent codex was not written; set agent.preset there\n"
    );
    assert_eq!(p.read("config/ralph.yaml"), "max_iterations: 3\n");
    let run = p
        .ralph(&["init", "--agent-cmd", "examples/agent.sh"])
        .success();
    assert_eq!(
        run.stderr,
        "note: config/ralph.yaml exists, so --agent-cmd was not written; set agent.command there\n"
    );
    assert_eq!(p.read("config/ralph.yaml"), "max_iterations: 3\n");
}

/// The walk-through's agent kept in the project: `ralph init --agent-cmd`
/// writes it, so `ralph doctor` and a plain `ralph run` use it.
#[test]
fn init_with_an_agent_command_writes_it_and_doctor_and_run_use_it() {
    let p = TestProject::new().file(
        "bin/agent.sh",
        "#!/bin/sh\ncat > /dev/null\nralph task complete \"$RALPH_TASK_ID\" > /dev/null\n",
    );
    std::fs::set_permissions(
        p.path().join("bin/agent.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    p.git(&["init", "-q", "-b", "main"]);
    p.ralph(&["init", "--no-detect", "--agent-cmd", "bin/agent.sh"])
        .success();
    let settings = p.read("config/ralph.yaml");
    assert!(
        settings.contains("  command: \"bin/agent.sh\"\n"),
        "{settings}"
    );
    p.git(&["add", "-A"]);
    p.git(&["commit", "-q", "-m", "ralph init"]);
    let doctor = p.ralph(&["doctor"]);
    assert!(
        doctor.stdout.contains("ok: agent: ") && !doctor.stdout.contains("not found"),
        "{doctor:?}"
    );
    p.ralph(&["task", "add", "first"]).success();
    let run = finish(p.ralph_command(&["run"]), 60);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(p.read("tasks-done.jsonl").contains("\"id\":\"A\""));
}

/// A file where init needs a folder (or the reverse) is named, with exit
/// 30, before anything is written.
#[test]
fn init_refuses_a_file_in_the_way_and_writes_nothing() {
    let p = TestProject::new().file("config", "notes\n");
    p.ralph(&["init", "--no-detect"]).fails(
        30,
        &format!(
            "error: {}: a file, where ralph needs a folder\nhint: move or rename it, then run the command again; nothing was written\n",
            p.path().join("config").display()
        ),
    );
    let names: Vec<String> = std::fs::read_dir(p.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["config"]);
}

/// init run in a subfolder of a ralph project would make a second project
/// there, which every command run from it would then see instead: it is
/// refused, and `--dir .` says that is what is wanted.
#[test]
fn init_in_a_folder_of_a_project_is_refused_unless_asked_with_dir() {
    let p = TestProject::new();
    p.ralph(&["init", "--no-detect"]).success();
    std::fs::create_dir(p.path().join("src")).unwrap();
    p.ralph_in("src", &["init", "--no-detect"]).fails(
        30,
        &format!(
            "error: {} is inside the ralph project {}\nhint: run ralph from anywhere in {} (every command finds it), or pass --dir . to make this folder a project of its own\n",
            p.path().join("src").display(),
            p.path().display(),
            p.path().display()
        ),
    );
    assert_eq!(std::fs::read_dir(p.path().join("src")).unwrap().count(), 0);
    p.ralph_in("src", &["init", "--no-detect", "--dir", "."])
        .success();
    assert!(p.path().join("src/tasks.jsonl").is_file());
    // Again in the project's own folder: it keeps what is there.
    p.ralph(&["init", "--no-detect"]).success();
}
