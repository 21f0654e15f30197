//! Preflight: what makes a repository ready, and the errors that say what is not.

use super::*;

#[test]
fn outside_a_repository_open_says_so() {
    isolate_libgit2_config();
    let temp = assert_fs::TempDir::new().unwrap();
    let err = Repo::open(&ralph::paths::Paths::new(temp.path()), &Options::default())
        .err()
        .unwrap();
    assert_eq!(
        report(err),
        (
            format!(
                "error: {}: not inside a git repository\nhint: ralph keeps each task on its own git branch: run `git init`, then make an initial commit",
                temp.path().display()
            ),
            30
        )
    );
}

#[test]
fn a_bare_repository_is_refused() {
    let repo = GitRepo::new();
    let bare = repo.sibling("bare.git");
    repo.git(&["init", "-q", "--bare", bare.to_str().unwrap()]);
    let err = Repo::open(&ralph::paths::Paths::new(&bare), &Options::default())
        .err()
        .unwrap();
    assert_eq!(
        report(err),
        (
            format!(
                "error: {}/: a bare repository has no working tree\nhint: run ralph in a checkout of it (`git clone` or `git worktree add`)",
                bare.display()
            ),
            30
        )
    );
}

#[test]
fn a_repository_without_commits_is_refused() {
    let repo = GitRepo::empty("main");
    let err = Repo::open(&ralph::paths::Paths::new(repo.path()), &Options::default())
        .err()
        .unwrap();
    assert_eq!(
        report(err),
        (
            "error: the repository has no commits yet; task branches start from the base branch's tip\nhint: make an initial commit: `git add -A && git commit -m \"initial commit\"`".to_owned(),
            30
        )
    );
}

#[test]
fn a_configured_base_must_exist() {
    let repo = GitRepo::new();
    repo.git(&["branch", "develop"]);
    let develop = Options {
        base_branch: Some("develop".to_owned()),
        ..Options::default()
    };
    assert_eq!(open_with(&repo, &develop).base(), "develop");
    let missing = Options {
        base_branch: Some("release".to_owned()),
        ..Options::default()
    };
    let err = Repo::open(&ralph::paths::Paths::new(repo.path()), &missing)
        .err()
        .unwrap();
    assert_eq!(
        report(err),
        (
            "error: base branch \"release\" does not exist\nhint: create that branch, or set base_branch in config/ralph.yaml to an existing one".to_owned(),
            30
        )
    );
}

#[test]
fn a_task_branch_is_not_taken_for_the_base() {
    let repo = GitRepo::new();
    repo.git(&["switch", "-q", "-c", "task/A-x"]);
    let err = Repo::open(&ralph::paths::Paths::new(repo.path()), &Options::default())
        .err()
        .unwrap();
    assert_eq!(
        report(err),
        (
            "error: the current branch task/A-x is a task branch, not a base branch\nhint: check out the branch tasks should merge into (`git switch main`), or set base_branch in config/ralph.yaml".to_owned(),
            30
        )
    );
    // With the base configured, resuming on the task branch is fine.
    let options = Options {
        base_branch: Some("main".to_owned()),
        ..Options::default()
    };
    open_with(&repo, &options).preflight().unwrap();
}

#[test]
fn a_branch_prefix_must_make_valid_names() {
    let repo = GitRepo::new();
    let options = Options {
        branch_prefix: "bad..prefix/".to_owned(),
        ..Options::default()
    };
    let err = Repo::open(&ralph::paths::Paths::new(repo.path()), &options)
        .err()
        .unwrap();
    assert_eq!(
        report(err),
        (
            "error: branch_prefix \"bad..prefix/\" does not make valid branch names\nhint: use letters, digits, `-` and `/` (the default is `task/`)".to_owned(),
            30
        )
    );
}

#[test]
fn a_detached_head_is_refused() {
    let repo = GitRepo::new();
    repo.git(&["switch", "-q", "--detach"]);
    let short = repo.git(&["rev-parse", "HEAD"])[..7].to_owned();
    let expected = (
        format!(
            "error: HEAD is detached at {short}; ralph needs a base branch to merge tasks into\nhint: check out the branch tasks should merge into (`git switch main`), or set base_branch in config/ralph.yaml"
        ),
        30,
    );
    let err = Repo::open(&ralph::paths::Paths::new(repo.path()), &Options::default())
        .err()
        .unwrap();
    assert_eq!(report(err), expected);
    let options = Options {
        base_branch: Some("main".to_owned()),
        ..Options::default()
    };
    let err = open_with(&repo, &options).preflight().unwrap_err();
    assert_eq!(report(err), expected);
}

/// Two branches that change README.md's line differently.
fn diverged() -> GitRepo {
    let repo = GitRepo::new();
    repo.git(&["switch", "-q", "-c", "side"]);
    repo.commit_file("README.md", "side\n", "side");
    repo.git(&["switch", "-q", "main"]);
    repo.commit_file("README.md", "main\n", "main");
    repo
}

#[test]
fn a_merge_in_progress_is_refused() {
    let repo = diverged();
    assert!(
        !repo
            .try_git_in(repo.path(), &["merge", "side"])
            .status
            .success()
    );
    let err = open(&repo).preflight().unwrap_err();
    assert_eq!(
        report(err),
        (
            "error: a merge is in progress\nhint: finish it, or abandon it with `git merge --abort`".to_owned(),
            30
        )
    );
}

#[test]
fn a_rebase_in_progress_is_refused() {
    let repo = diverged();
    assert!(
        !repo
            .try_git_in(repo.path(), &["rebase", "side"])
            .status
            .success()
    );
    let err = Repo::open(&ralph::paths::Paths::new(repo.path()), &Options::default())
        .err()
        .unwrap();
    assert_eq!(
        report(err),
        (
            "error: a rebase is in progress\nhint: finish it, or abandon it with `git rebase --abort`".to_owned(),
            30
        )
    );
}

#[test]
fn preflight_names_dirty_files_but_not_queue_runtime_or_ignored_ones() {
    let repo = project();
    let git = open(&repo);
    git.preflight().unwrap();
    repo.write("tasks.jsonl", "{\"edited\":true}\n");
    repo.write("tasks-done.jsonl", "{\"id\":\"Z\"}\n");
    repo.write(".ralph/state.json", "{}\n");
    repo.write("ralph.log", "log\n");
    repo.write("debug.log", "ignored\n");
    git.preflight().unwrap();
    repo.write("README.md", "changed\n");
    repo.write("notes/todo.txt", "new\n");
    repo.git(&["rm", "-q", ".gitignore"]);
    let err = git.preflight().unwrap_err();
    assert_eq!(
        report(err),
        (
            "error: uncommitted changes in the working tree: .gitignore, README.md, debug.log, notes/todo.txt\nhint: commit or stash them (`git stash -u`), or list them in .gitignore; only tasks.jsonl and tasks-done.jsonl may stay modified".to_owned(),
            30
        )
    );
}

#[test]
fn a_tracked_runtime_file_counts_as_a_change() {
    let repo = GitRepo::new();
    repo.commit_file(
        ".ralph/state.json",
        "{}\n",
        "commit runtime state by mistake",
    );
    let git = open(&repo);
    repo.write(".ralph/state.json", "{\"run\":1}\n");
    repo.write(".ralph/lock", "");
    let err = git.preflight().unwrap_err();
    assert!(matches!(err, Error::Dirty { ref paths } if paths == &[".ralph/state.json"]));
}

#[test]
fn a_split_index_is_refused_with_how_to_join_it() {
    let repo = project();
    repo.git(&["config", "core.splitIndex", "true"]);
    repo.git(&["update-index", "--split-index"]);
    let err = open(&repo).preflight().err().unwrap();
    assert_eq!(
        report(err),
        (
            "error: the repository's index is split (core.splitIndex), which the git library ralph reads it with does not support\nhint: join it again: `git config core.splitIndex false && git update-index --no-split-index`".to_owned(),
            30
        )
    );
    // Joined again as the hint says, the repository is ready.
    repo.git(&["config", "core.splitIndex", "false"]);
    repo.git(&["update-index", "--no-split-index"]);
    open(&repo).preflight().unwrap();
}
