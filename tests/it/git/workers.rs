//! Task worktrees for parallel workers: one per task under
//! `.ralph/worktrees/`, its queue files links to the project's live queue
//! that the agent's git commands neither stage nor put back.

use super::*;

fn tree(git: &Repo, repo: &GitRepo) -> ralph::git::TaskTree {
    git.task_tree(repo.path(), "A", TITLE)
        .expect("the task's worktree")
}

#[test]
fn a_task_gets_a_worktree_on_its_branch_with_the_live_queue() {
    let repo = project();
    repo.commit_file("src.txt", "base\n", "src");
    let git = open(&repo);
    let made = tree(&git, &repo);
    assert_eq!(made.path, repo.path().join(".ralph/worktrees/A"));
    assert_eq!(made.folder, made.path);
    assert_eq!((made.branch.as_str(), made.resumed), (BRANCH, false));
    assert_eq!(
        repo.git_in(&made.path, &["symbolic-ref", "--short", "HEAD"]),
        BRANCH
    );
    assert_eq!(
        repo.git(&["rev-parse", BRANCH]),
        repo.git(&["rev-parse", "main"]),
        "forked from the base's tip"
    );
    assert_eq!(
        std::fs::read_to_string(made.path.join("src.txt")).unwrap(),
        "base\n"
    );
    // The project stays on the base; the worktree is clean to git.
    assert_eq!(current_branch(&repo), "main");
    assert_eq!(repo.git_in(&made.path, &["status", "--porcelain"]), "");
    // The queue read in the worktree is the project's, as it changes.
    repo.write("tasks.jsonl", "{\"id\":\"LIVE\"}\n");
    assert_eq!(
        std::fs::read_to_string(made.path.join("tasks.jsonl")).unwrap(),
        "{\"id\":\"LIVE\"}\n"
    );
    assert_eq!(
        git.task_trees(repo.path()).unwrap(),
        [("A".to_owned(), made.path.clone(), made.folder.clone())]
    );
}

#[test]
fn an_agents_git_commands_in_the_worktree_leave_the_links_alone() {
    let repo = project();
    let git = open(&repo);
    let made = tree(&git, &repo);
    let wt = &made.path;
    let linked = || {
        ["tasks.jsonl", "tasks-done.jsonl"].iter().all(|name| {
            std::fs::read_link(wt.join(name)).is_ok_and(|to| to == repo.path().join(name))
        })
    };
    std::fs::write(wt.join("work.txt"), "work\n").unwrap();
    repo.git_in(wt, &["add", "-A"]);
    repo.git_in(wt, &["commit", "-q", "-m", "work"]);
    assert_eq!(
        repo.git_in(wt, &["show", "--name-only", "--format=", "HEAD"]),
        "work.txt",
        "git add -A leaves the links out"
    );
    for command in [
        &["reset", "-q", "--hard", "HEAD~1"][..],
        &["stash", "-q", "-u"],
        &["checkout", "-q", "--", "."],
    ] {
        std::fs::write(wt.join("more.txt"), "more\n").unwrap();
        let _ = repo.try_git_in(wt, command);
        assert!(linked(), "after git {command:?}");
    }
    assert_eq!(
        repo.read("tasks.jsonl"),
        TASKS,
        "the project's queue is untouched"
    );
}

#[test]
fn a_worktree_is_found_again_made_again_and_removed() {
    let repo = project();
    let git = open(&repo);
    let first = tree(&git, &repo);
    std::fs::write(first.path.join("work.txt"), "work\n").unwrap();
    repo.git_in(&first.path, &["add", "work.txt"]);
    repo.git_in(&first.path, &["commit", "-q", "-m", "work"]);
    let again = tree(&git, &repo);
    assert_eq!(
        (again.path.clone(), again.resumed),
        (first.path.clone(), true)
    );
    // Deleted by hand: made again on the same branch, work kept.
    std::fs::remove_dir_all(&first.path).unwrap();
    let remade = tree(&git, &repo);
    assert!(remade.resumed);
    assert_eq!(
        std::fs::read_to_string(remade.path.join("work.txt")).unwrap(),
        "work\n"
    );
    git.remove_task_tree(&remade.path).unwrap();
    assert!(!remade.path.exists());
    assert!(git.task_trees(repo.path()).unwrap().is_empty());
    assert!(
        repo.git(&["branch", "--list", BRANCH]).contains(BRANCH),
        "the branch stays"
    );
}

#[test]
fn queue_files_not_on_the_base_are_refused_with_the_fix() {
    let repo = GitRepo::new();
    repo.write("README.md", "readme\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "start"]);
    repo.write("tasks.jsonl", TASKS);
    let git = open(&repo);
    let err = git.task_tree(repo.path(), "A", TITLE).unwrap_err();
    assert_eq!(
        report(err),
        (
            "error: tasks.jsonl is not committed on the base branch main; parallel workers link it into each task's worktree\nhint: commit it (`git add tasks.jsonl && git commit -m \"track the queue\"`), or run without --workers".to_owned(),
            30
        )
    );
}

/// `ralph task` run inside a task's worktree (by its agent) reads and
/// changes the project's live queue; the links stay links.
#[test]
fn ralph_task_in_a_worktree_changes_the_projects_queue() {
    let repo = project();
    let git = open(&repo);
    let made = tree(&git, &repo);
    let ralph = |args: &[&str]| {
        let output = crate::support::pinned_command(crate::support::RALPH, repo.path())
            .current_dir(&made.path)
            .args(args)
            .output()
            .expect("run ralph");
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).expect("utf-8")
    };
    assert_eq!(ralph(&["task", "add", "follow-up"]), "B\n");
    ralph(&["task", "complete", "A"]);
    assert!(repo.read("tasks.jsonl").contains("follow-up"));
    assert!(repo.read("tasks.jsonl").contains(r#""status":"complete""#));
    assert!(std::fs::read_link(made.path.join("tasks.jsonl")).is_ok());
    assert_eq!(
        std::fs::read_to_string(made.path.join("tasks.jsonl")).unwrap(),
        repo.read("tasks.jsonl")
    );
    assert_eq!(repo.git_in(&made.path, &["status", "--porcelain"]), "");
}

/// With workers the project's tree stays on the base: a task's branch,
/// checked out in its worktree, is squashed into the base from there,
/// one task after the other, three-way against the base as it is by then;
/// a conflict leaves the base and both trees as they were.
#[test]
fn tasks_are_squashed_into_the_base_checked_out_in_the_project() {
    let repo = project();
    repo.write(
        "tasks.jsonl",
        &format!(
            "{TASKS}{}",
            TASKS.replace("\"A\"", "\"B\"").replace("Choose", "Pick")
        ),
    );
    repo.git(&["commit", "-q", "-am", "two tasks"]);
    repo.commit_file("shared.txt", "one\n", "shared");
    let git = open(&repo);
    let a = git.task_tree(repo.path(), "A", TITLE).unwrap();
    let b = git
        .task_tree(repo.path(), "B", "Pick session library")
        .unwrap();
    for (tree, file, text) in [(&a, "a.txt", "a\n"), (&b, "b.txt", "b\n")] {
        std::fs::write(tree.path.join(file), text).unwrap();
        repo.git_in(&tree.path, &["add", file]);
        repo.git_in(&tree.path, &["commit", "-q", "-m", file]);
    }
    for (id, title, tree) in [("A", TITLE, &a), ("B", "Pick session library", &b)] {
        let clean = git.check_clean().unwrap();
        let trailers = [format!("Completes: {id}")];
        let (squash, _) = git
            .squash_commit(&tree.branch, id, title, &trailers, clean)
            .unwrap();
        assert!(matches!(squash, Squash::Merged(_)), "{id}: {squash:?}");
        git.remove_task_tree(&tree.path).unwrap();
        git.preserve_and_delete_branch(&tree.branch, id).unwrap();
    }
    assert_eq!(current_branch(&repo), "main");
    assert_eq!(
        repo.git(&["log", "--format=%s", "main"]),
        "[B] Pick session library\n[A] Choose session library\nshared\ntwo tasks\nadd tasks\ninitial commit"
    );
    assert_eq!(
        repo.read("a.txt"),
        "a\n",
        "the project's tree shows the merged work"
    );
    assert_eq!(repo.read("b.txt"), "b\n");
    assert_eq!(repo.status(), Vec::<String>::new());
    // Two worktrees changing the same line: the second conflicts.
    let c = git.task_tree(repo.path(), "C", "third").unwrap();
    let d = git.task_tree(repo.path(), "D", "fourth").unwrap();
    for (tree, text) in [(&c, "c\n"), (&d, "d\n")] {
        std::fs::write(tree.path.join("shared.txt"), text).unwrap();
        repo.git_in(&tree.path, &["commit", "-q", "-am", text.trim()]);
    }
    let clean = git.check_clean().unwrap();
    let (squash, _) = git
        .squash_commit(&c.branch, "C", "third", &[], clean)
        .unwrap();
    assert!(matches!(squash, Squash::Merged(_)));
    let before = repo.git(&["rev-parse", "main"]);
    let clean = git.check_clean().unwrap();
    let (squash, _) = git
        .squash_commit(&d.branch, "D", "fourth", &[], clean)
        .unwrap();
    assert_eq!(squash, Squash::Conflict(vec!["shared.txt".to_owned()]));
    assert_eq!(repo.git(&["rev-parse", "main"]), before);
    assert_eq!(current_branch(&repo), "main");
    assert_eq!(repo.read("shared.txt"), "c\n");
    assert_eq!(repo.status(), Vec::<String>::new());
    assert_eq!(
        std::fs::read_to_string(d.path.join("shared.txt")).unwrap(),
        "d\n"
    );
}
