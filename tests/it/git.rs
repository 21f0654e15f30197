//! The git workflow (ralph::git) against real temporary repositories: the
//! shared set-up here, one file per concern in `git/`.

mod branch_names;
mod claim;
mod history;
mod identity;
mod large;
mod layouts;
mod leftovers;
mod preflight;
mod push;
mod squash;
mod workers;

use proptest::prelude::*;
use ralph::Reportable;
use ralph::git::{
    BranchCommit, Claimed, Error, Head, Identity, Options, Repo, Squash, SquashPreview, Time,
    branch_name, slug,
};
use ralph::task::TaskId;

use crate::support::{GitRepo, isolate_libgit2_config};

const TASKS: &str =
    "{\"id\":\"A\",\"title\":\"Choose session library\",\"status\":\"pending\",\"leaf\":true}\n";
const TITLE: &str = "Choose session library";
const BRANCH: &str = "task/A-choose-session-library";

fn id(text: &str) -> TaskId {
    TaskId::parse(text).expect("a valid id")
}

/// The identity every ralph commit in these tests carries.
fn identity() -> Identity {
    Identity::new("Ralph Bot", "ralph-bot@example.com").at(Time {
        seconds: 1_767_225_600,
        offset_minutes: 0,
    })
}

fn open(repo: &GitRepo) -> Repo {
    open_with(repo, &Options::default())
}

fn open_with(repo: &GitRepo, options: &Options) -> Repo {
    Repo::open(&ralph::paths::Paths::new(repo.path()), options)
        .expect("open the repository")
        .with_identity(identity())
}

/// The error as `ralph` prints it, and its exit code.
fn report(err: Error) -> (String, u8) {
    let err = ralph::Error::from(err);
    (ralph::cli::Report(&err).to_string(), err.exit() as u8)
}

/// A repository on `main` with the queue files committed and ralph's
/// runtime folder ignored.
fn project() -> GitRepo {
    let repo = GitRepo::new();
    repo.write("tasks.jsonl", TASKS);
    repo.write("tasks-done.jsonl", "");
    repo.write(".gitignore", "*.log\n.ralph/\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "add tasks"]);
    repo
}

/// What the loop does when task A is complete: moves it to the archive.
fn archive_a(repo: &GitRepo, tip: &str) {
    repo.write("tasks.jsonl", "");
    repo.write(
        "tasks-done.jsonl",
        &format!("{{\"id\":\"A\",\"title\":\"{TITLE}\",\"commit\":\"{tip}\"}}\n"),
    );
}

/// The trailers of a squash that completes task `id` alone.
fn completes(id: &str) -> [String; 1] {
    [format!("Completes: {id}")]
}

fn current_branch(repo: &GitRepo) -> String {
    repo.git(&["symbolic-ref", "--short", "HEAD"])
}

/// Commits on `main` from a linked worktree, as a person would while the
/// task branch is checked out; the worktree is removed afterwards.
fn commit_on_main_elsewhere(repo: &GitRepo, rel: &str, contents: &str, message: &str) {
    let other = repo.sibling("other");
    let other_str = other.to_str().expect("a UTF-8 temp path");
    repo.git(&["worktree", "add", "-q", other_str, "main"]);
    std::fs::write(other.join(rel), contents).expect("write in the worktree");
    repo.git_in(&other, &["add", "--", rel]);
    repo.git_in(&other, &["commit", "-q", "-m", message]);
    repo.git(&["worktree", "remove", other_str]);
}

/// The tree of the same squash made by hand with git, in another worktree:
/// `git merge --squash` of the branch plus the queue files' bytes on disk.
fn squash_by_hand(repo: &GitRepo) -> String {
    let cli = repo.sibling("cli");
    let cli_str = cli.to_str().unwrap();
    repo.git(&["worktree", "add", "-q", "-b", "cli-squash", cli_str, "main"]);
    repo.git_in(&cli, &["merge", "-q", "--squash", BRANCH]);
    for file in ["tasks.jsonl", "tasks-done.jsonl"] {
        std::fs::copy(repo.path().join(file), cli.join(file)).unwrap();
    }
    repo.git_in(&cli, &["add", "tasks.jsonl", "tasks-done.jsonl"]);
    repo.git_in(&cli, &["commit", "-q", "-m", "squash by hand"]);
    let tree = repo.git_in(&cli, &["rev-parse", "HEAD^{tree}"]);
    repo.git(&["worktree", "remove", cli_str]);
    tree
}
