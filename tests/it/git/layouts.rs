//! Repository shapes: base names, a project in a subfolder, linked worktrees.

use super::*;
use crate::support::{Tool, skip_without};

#[test]
fn the_base_is_the_current_branch_whatever_its_name() {
    for name in ["main", "master", "trunk/v2"] {
        let repo = GitRepo::with_branch(name);
        assert_eq!(open(&repo).base(), name);
    }
}

#[test]
fn a_project_in_a_subfolder_has_its_queue_files_there() {
    let repo = GitRepo::new();
    repo.write("app/tasks.jsonl", TASKS);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "tasks"]);
    let git = Repo::open(
        &ralph::paths::Paths::new(repo.path().join("app")),
        &Options::default(),
    )
    .unwrap()
    .with_identity(identity());
    repo.write("app/tasks.jsonl", "");
    repo.write("app/.ralph/lock", "");
    git.preflight().unwrap();
    repo.write("tasks.jsonl", "not the queue\n");
    assert_eq!(git.uncommitted_changes().unwrap(), ["tasks.jsonl"]);
}

#[test]
fn a_linked_worktree_with_a_master_base_works_like_a_checkout() {
    let repo = GitRepo::with_branch("master");
    repo.write("tasks.jsonl", TASKS);
    repo.write(".gitignore", ".ralph/\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "tasks"]);
    let master_before = repo.git(&["rev-parse", "master"]);
    let wt = repo.sibling("wt");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "feature",
        wt.to_str().unwrap(),
        "master",
    ]);

    let git = Repo::open(&ralph::paths::Paths::new(&wt), &Options::default())
        .unwrap()
        .with_identity(identity());
    assert_eq!(git.base(), "feature");
    git.preflight().unwrap();
    git.claim(&id("A"), TITLE).unwrap();
    std::fs::write(wt.join("work.txt"), "work\n").unwrap();
    std::fs::write(wt.join("tasks.jsonl"), "").unwrap();
    git.commit_leftovers(BRANCH, &id("A"), 1).unwrap();
    assert!(matches!(
        git.squash_into_base(BRANCH, &id("A"), TITLE, &completes("A"))
            .unwrap(),
        Squash::Merged(_)
    ));
    assert_eq!(
        repo.git_in(&wt, &["symbolic-ref", "--short", "HEAD"]),
        "feature"
    );
    assert_eq!(repo.git_in(&wt, &["status", "--porcelain"]), "");
    assert_eq!(repo.git_in(&wt, &["show", "feature:tasks.jsonl"]), "");
    assert_eq!(repo.git(&["rev-parse", "master"]), master_before);
    assert_eq!(current_branch(&repo), "master");
    assert!(repo.status().is_empty());
}

#[test]
fn stale_locks_of_a_linked_worktree_are_found_where_git_keeps_them() {
    if skip_without(Tool::Lsof) {
        return;
    }
    let (repo, wt) = with_feature_worktree();
    let common = repo.path().join(".git");
    let own = common.join("worktrees/wt");
    std::fs::write(own.join("index.lock"), "").unwrap();
    std::fs::write(common.join("refs/heads/feature.lock"), "").unwrap();
    let git = Repo::open(&ralph::paths::Paths::new(&wt), &Options::default()).unwrap();
    let removed = git.clear_stale_locks().unwrap();
    assert_eq!(
        removed,
        [
            common.join("refs/heads/feature.lock"),
            own.join("index.lock")
        ]
    );
    assert!(!own.join("index.lock").exists());
    assert!(!common.join("refs/heads/feature.lock").exists());
}

#[test]
fn no_lock_is_removed_while_a_git_process_works_in_the_repository() {
    if skip_without(Tool::Lsof) {
        return;
    }
    let repo = GitRepo::new();
    std::fs::write(repo.path().join(".git/index.lock"), "").unwrap();
    // A git process at work here (as a person's `git commit` waiting for
    // its editor): this one waits for its input.
    let mut live = std::process::Command::new("git")
        .args(["hash-object", "--stdin"])
        .current_dir(repo.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let git = Repo::open(&ralph::paths::Paths::new(repo.path()), &Options::default()).unwrap();
    let removed = git.clear_stale_locks();
    drop(live.stdin.take());
    live.wait().unwrap();
    assert!(removed.unwrap().is_empty());
    assert!(repo.path().join(".git/index.lock").exists());
    // Once it is gone, the lock is stale.
    assert_eq!(
        git.clear_stale_locks().unwrap(),
        [std::path::PathBuf::from(".git/index.lock")]
    );
}

/// The base checked out in another worktree: the preflight refuses before
/// anything is committed, naming that worktree and the ways out; the
/// worktree that has the base checked out runs as usual.
#[test]
fn a_base_checked_out_in_another_worktree_is_refused_up_front() {
    let (repo, wt) = with_feature_worktree();
    let main_before = repo.git(&["rev-parse", "main"]);
    let on_main = Options {
        base_branch: Some("main".to_owned()),
        ..Options::default()
    };
    let git = Repo::open(&ralph::paths::Paths::new(&wt), &on_main).unwrap();
    let err = git.preflight().err().unwrap();
    let main = repo.path().canonicalize().unwrap();
    assert_eq!(
        report(err),
        (
            format!(
                "error: the base branch main is checked out in another worktree, {0}; ralph commits each task onto it, which would leave that worktree's files behind\nhint: run ralph in that worktree, or switch it to another branch (`git -C {0} switch --detach`), or set base_branch in config/ralph.yaml to a branch no other worktree has checked out",
                main.display()
            ),
            30
        )
    );
    assert_eq!(repo.git(&["rev-parse", "main"]), main_before);
    // Where main is checked out, and with the worktree's own branch as
    // the base, the preflight passes.
    open_with(&repo, &on_main).preflight().unwrap();
    Repo::open(&ralph::paths::Paths::new(&wt), &Options::default())
        .unwrap()
        .preflight()
        .unwrap();
}

/// A repository on `main` with a linked worktree `wt` beside it, on a new
/// branch `feature`.
fn with_feature_worktree() -> (GitRepo, std::path::PathBuf) {
    let repo = GitRepo::new();
    let wt = repo.sibling("wt");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "feature",
        wt.to_str().unwrap(),
    ]);
    (repo, wt)
}

#[test]
fn a_submodule_checkout_is_a_checkout_like_any_other() {
    let sub = GitRepo::new();
    let parent = GitRepo::new();
    parent.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        sub.path().to_str().unwrap(),
        "sub",
    ]);
    parent.git(&["commit", "-q", "-m", "add sub"]);
    let checkout = parent.path().join("sub");
    parent.git_in(&checkout, &["switch", "-q", "-c", "work"]);
    // git lists a submodule's main worktree by its git folder; it is the
    // checkout ralph runs in, not another worktree.
    let git = Repo::open(&ralph::paths::Paths::new(&checkout), &Options::default()).unwrap();
    assert_eq!(git.base(), "work");
    git.preflight().unwrap();
    // A linked worktree of the submodule with the same base is refused,
    // naming the submodule's checkout.
    let wt = parent.sibling("sub-wt");
    parent.git_in(
        &checkout,
        &["worktree", "add", "-q", "-b", "other", wt.to_str().unwrap()],
    );
    let on_work = Options {
        base_branch: Some("work".to_owned()),
        ..Options::default()
    };
    let err = Repo::open(&ralph::paths::Paths::new(&wt), &on_work)
        .unwrap()
        .preflight()
        .err()
        .unwrap();
    let (message, code) = report(err);
    assert!(
        message.starts_with(&format!(
            "error: the base branch work is checked out in another worktree, {};",
            checkout.canonicalize().unwrap().display()
        )),
        "{message}"
    );
    assert_eq!(code, 30);
}
