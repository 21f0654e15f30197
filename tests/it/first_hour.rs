//! A newcomer's first hour, as the README writes it: its walk-through's
//! commands run as shown, in a fresh repository, with the scripted agent
//! the README offers to whoever has no agent installed. The docs cannot
//! drift from the tool: a command they show that fails fails here.

use crate::support::TestProject;

/// The README's walk-through block: the commands from `ralph init` on
/// (the lines before it install the binary and enter the project), a
/// continued line joined, comments cut.
fn walk_through() -> Vec<String> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let section = readme
        .split("## A five-minute walk-through")
        .nth(1)
        .unwrap();
    let block = section.split("```sh\n").nth(1).unwrap();
    let block = block.split("```").next().unwrap().replace("\\\n", " ");
    let lines: Vec<String> = (block.lines())
        .map(|line| {
            line.split("  #")
                .next()
                .unwrap_or_default()
                .trim()
                .to_owned()
        })
        .filter(|line| !line.is_empty())
        .collect();
    let from = lines.iter().position(|line| line == "ralph init").unwrap();
    lines[from..].to_vec()
}

/// The walk-through as written, `ralph run` with the README's example
/// agent (`--agent-cmd .../examples/agent.sh`, "no agent installed
/// yet?"); then, kept in the project as the README says (`ralph init
/// --agent-cmd`), `ralph run` and `ralph doctor` need no flag.
#[test]
fn the_readmes_walk_through_runs_as_written() {
    let agent = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/agent.sh");
    let commands = walk_through();
    assert!(
        commands.iter().any(|c| c == "ralph run"),
        "the walk-through runs ralph: {commands:?}"
    );
    for keep in [false, true] {
        let project = TestProject::new();
        std::os::unix::fs::symlink(crate::support::RALPH, project.aux().join("bin/ralph")).unwrap();
        // "cd my-project: a git repository with a commit"
        project.sh("git init -q -b main && echo '# my project' > README.md && git add -A && git commit -q -m start",
        );
        for command in &commands {
            let command = match (command.as_str(), keep) {
                ("ralph init", true) => format!("ralph init --agent-cmd {agent}"),
                (run, false) if run.starts_with("ralph run") => {
                    format!("{run} --agent-cmd {agent}")
                }
                (other, _) => other.to_owned(),
            };
            project.sh(&command);
        }
        // Both tasks done, each a squash commit on main.
        let done = project.json_lines("tasks-done.jsonl");
        assert_eq!(done.len(), 2, "keep {keep}: {done:?}");
        let subjects = project.sh("git log --format=%s main");
        assert!(subjects.contains("[A] add a --verbose flag"), "{subjects}");
        assert!(subjects.contains("[B] document --verbose"), "{subjects}");
        if keep {
            let doctor = project.sh("ralph doctor");
            assert!(!doctor.contains("error:"), "{doctor}");
        }
    }
}
