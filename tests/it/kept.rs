//! Everything an agent did is kept or named: a mode change left
//! uncommitted, and commits a rewound task branch no longer reaches.

use crate::support::TestProject;

/// A project whose `run.sh` is committed as a plain file, with one task.
fn with_script(agent: &str) -> TestProject {
    let project = TestProject::new()
        .file("run.sh", "#!/bin/sh\necho hi\n")
        .git_init()
        .agent(agent);
    project
        .ralph(&["task", "add", "make run.sh runnable"])
        .success();
    project
}

#[test]
fn a_mode_change_left_uncommitted_reaches_the_base() {
    // Content unchanged, only the executable bit: git status says ` M`.
    let project = with_script(
        r#"chmod +x run.sh; echo note > notes.txt; ralph task complete "$RALPH_TASK_ID" > /dev/null"#,
    );
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stderr.contains("ralph: drained"), "{run:#?}");
    assert_eq!(
        project.git(&["ls-tree", "main", "run.sh", "notes.txt"]),
        format!(
            "100644 blob {}\tnotes.txt\n100755 blob {}\trun.sh",
            project.git(&["rev-parse", "main:notes.txt"]),
            project.git(&["rev-parse", "main:run.sh"])
        )
    );
    assert_eq!(project.git(&["status", "--porcelain"]), "", "{run:#?}");
}

#[test]
fn every_kind_of_change_an_agent_leaves_is_committed_as_git_add_all_would() {
    // Mode, type (file to symlink), deletion, rename and content, each
    // left uncommitted in one iteration.
    let project = TestProject::new()
        .file("run.sh", "#!/bin/sh\necho hi\n")
        .file("link.txt", "a file\n")
        .file("gone.txt", "to delete\n")
        .file("old.txt", "to rename\n")
        .file("edit.txt", "before\n")
        .git_init()
        .agent(
            r#"chmod +x run.sh
rm link.txt && ln -s run.sh link.txt
rm gone.txt
mv old.txt new.txt
echo after > edit.txt
ralph task complete "$RALPH_TASK_ID" > /dev/null"#,
        );
    project
        .ralph(&["task", "add", "change everything"])
        .success();
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    let tree = project.git(&["ls-tree", "main"]);
    let modes: Vec<String> = tree
        .lines()
        .filter(|line| {
            !line.contains("tasks") && !line.contains("config") && !line.contains("roles")
        })
        .map(|line| {
            let (meta, path) = line.split_once('\t').expect("ls-tree line");
            format!("{} {path}", meta.split(' ').next().expect("mode"))
        })
        .collect();
    assert!(modes.contains(&"100755 run.sh".to_owned()), "{modes:?}");
    assert!(modes.contains(&"120000 link.txt".to_owned()), "{modes:?}");
    assert!(modes.contains(&"100644 new.txt".to_owned()), "{modes:?}");
    assert!(
        !modes
            .iter()
            .any(|m| m.ends_with(" gone.txt") || m.ends_with(" old.txt"))
    );
    assert_eq!(project.git(&["show", "main:edit.txt"]), "after");
    assert_eq!(project.git(&["status", "--porcelain"]), "", "{run:#?}");
}

#[test]
fn a_change_no_commit_takes_is_named_when_the_run_ends() {
    // verify.run writes a file after the last leftovers commit.
    let project = TestProject::new()
        .file(
            "config/ralph.yaml",
            "verify:\n  run:\n    - \"echo built > artefact.txt\"\n",
        )
        .git_init()
        .agent(
            crate::support::FINISH
                .trim_start_matches("*) ")
                .trim_end_matches(";;"),
        );
    project.ralph(&["task", "add", "one"]).success();
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    let warning = "warning: ralph leaves 1 uncommitted change that no commit took: ?? artefact.txt; `git status` shows it\n";
    assert!(run.stderr.contains(warning), "{run:#?}");
    assert!(project.read("ralph.log").contains(warning.trim_end()));
}

/// A project with one task, `A`, committed in `tasks.jsonl` (as a team
/// that keeps its queue in git has it), and the fake agent `agent`.
fn committed_task(agent: &str) -> TestProject {
    let project = TestProject::new().git_init().agent(agent);
    project.ralph(&["task", "add", "rewind"]).success();
    project.git(&["add", "tasks.jsonl"]);
    project.git(&["commit", "-q", "-m", "queue task A"]);
    project
}

#[test]
fn a_completion_after_a_rewind_stands_and_the_dropped_commit_is_kept() {
    // Every iteration of A but its first rewinds the branch (dropping the
    // commit before, and reverting tasks.jsonl, which loses task B, added
    // and not committed), commits other work and completes the task.
    let project = committed_task(&format!(
        "case \"$RALPH_TASK_ID-$RALPH_TASK_ITERATION\" in\n{}\n{}\nesac\n",
        r#"A-1) work first.txt one ;;
A-*) git reset -q --hard HEAD~1; work second.txt two; ralph task complete A > /dev/null ;;"#,
        crate::support::FINISH
    ));
    project.ralph(&["task", "add", "later"]).success();
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stderr.contains("ralph: drained"), "{run:#?}");
    assert_eq!(project.calls().len(), 3, "{run:#?}");
    // Merged once, with the second iteration's work.
    let log = project.git(&["log", "--format=%s", "main"]);
    assert_eq!(log.matches("[A]").count(), 1, "{log}");
    assert_eq!(project.git(&["show", "main:second.txt"]), "two");
    assert!(project.try_git(&["show", "main:first.txt"]).is_none());
    // The dropped commit is kept, and the output and ralph.log say where.
    let kept = "refs/ralph/dropped/A/2";
    assert_eq!(
        project.git(&["log", "--format=%s", "-1", kept]),
        "A: first.txt"
    );
    let said = format!(
        "warning: A: the task branch task/A-rewind no longer holds 1 commit it had at {} (dropped during iteration 2 by `git reset`, an amend, a rebase or a move of the branch); ralph keeps it under {kept}: `git log main..{kept}` shows the branch as it was",
        &project.git(&["rev-parse", kept])[..7]
    );
    assert!(run.stderr.contains(&said), "{run:#?}");
    assert!(project.read("ralph.log").contains(&said));
    // The revert was said, and is no failure; B was put back and done.
    assert!(
        run.stderr
            .contains("warning: tasks.jsonl was reverted to its version in commit"),
        "{run:#?}"
    );
    assert!(run.stderr.contains("(1 task gone: B)"), "{run:#?}");
    assert_eq!(project.git(&["show", "main:B.txt"]), "done");
    assert_eq!(
        project.json(".ralph/result.json")["failures"],
        serde_json::json!({})
    );
}

#[test]
fn an_agent_that_rebases_its_own_commits_loses_none_and_hears_no_alarm() {
    let project = committed_task(&crate::support::by_iteration(
        "RALPH_TASK_ITERATION",
        r#"1) work first.txt one ;;
*) work second.txt two
   git commit -q --amend -m "A: second, reworded"
   git rebase -q --force-rebase main
   ralph task complete "$RALPH_TASK_ID" > /dev/null ;;"#,
    ));
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(!run.stderr.contains("no longer holds"), "{run:#?}");
    assert!(
        project
            .git(&["for-each-ref", "refs/ralph/dropped/"])
            .is_empty()
    );
    assert_eq!(project.git(&["show", "main:first.txt"]), "one");
    assert_eq!(project.git(&["show", "main:second.txt"]), "two");
}
