//! The git workflow (ralph::git) against real temporary repositories.

use proptest::prelude::*;
use ralph::git::{
    BranchCommit, Claim, Error, Head, Identity, Options, Repo, Squash, SquashPreview, Time,
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
    Repo::open(repo.path(), options)
        .expect("open the repository")
        .with_identity(identity())
}

/// The error as `ralph` prints it, and its exit code.
fn report(err: Error) -> (String, u8) {
    let err = ralph::Error::from(err);
    (ralph::error::Report(&err).to_string(), err.exit() as u8)
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

// ---------------------------------------------------------------- preflight

#[test]
fn outside_a_repository_open_says_so() {
    isolate_libgit2_config();
    let temp = assert_fs::TempDir::new().unwrap();
    let err = Repo::open(temp.path(), &Options::default()).err().unwrap();
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
    let err = Repo::open(&bare, &Options::default()).err().unwrap();
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
    let err = Repo::open(repo.path(), &Options::default()).err().unwrap();
    assert_eq!(
        report(err),
        (
            "error: the repository has no commits yet; task branches start from the base branch's tip\nhint: make an initial commit: `git add -A && git commit -m \"initial commit\"`".to_owned(),
            30
        )
    );
}

#[test]
fn the_base_is_the_current_branch_whatever_its_name() {
    for name in ["main", "master", "trunk/v2"] {
        let repo = GitRepo::with_branch(name);
        assert_eq!(open(&repo).base(), name);
    }
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
    let err = Repo::open(repo.path(), &missing).err().unwrap();
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
    let err = Repo::open(repo.path(), &Options::default()).err().unwrap();
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
    let err = Repo::open(repo.path(), &options).err().unwrap();
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
    let err = Repo::open(repo.path(), &Options::default()).err().unwrap();
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
    let err = Repo::open(repo.path(), &Options::default()).err().unwrap();
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
fn a_project_in_a_subfolder_has_its_queue_files_there() {
    let repo = GitRepo::new();
    repo.write("app/tasks.jsonl", TASKS);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "tasks"]);
    let git = Repo::open(&repo.path().join("app"), &Options::default())
        .unwrap()
        .with_identity(identity());
    repo.write("app/tasks.jsonl", "");
    repo.write("app/.ralph/lock", "");
    git.preflight().unwrap();
    repo.write("tasks.jsonl", "not the queue\n");
    assert_eq!(git.uncommitted_changes().unwrap(), ["tasks.jsonl"]);
}

// -------------------------------------------------------------------- claim

#[test]
fn claim_creates_the_task_branch_from_the_base_tip_and_checks_it_out() {
    let repo = project();
    let git = open(&repo);
    let claim = git.claim(&id("A"), TITLE).unwrap();
    assert_eq!(
        claim,
        Claim {
            branch: BRANCH.to_owned(),
            resumed: false
        }
    );
    assert_eq!(current_branch(&repo), BRANCH);
    assert_eq!(
        repo.git(&["rev-parse", BRANCH]),
        repo.git(&["rev-parse", "main"])
    );
    assert_eq!(git.head().unwrap(), Head::Branch(BRANCH.to_owned()));
    assert!(repo.status().is_empty());
}

#[test]
fn claim_resumes_an_existing_branch_of_the_same_task() {
    let repo = project();
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    repo.commit_file("work.txt", "work\n", "Start work");
    git.checkout_base().unwrap();
    assert_eq!(current_branch(&repo), "main");
    // Even after the title changed, the task's branch is the one resumed.
    let claim = git.claim(&id("A"), "A new title").unwrap();
    assert_eq!(
        claim,
        Claim {
            branch: BRANCH.to_owned(),
            resumed: true
        }
    );
    assert_eq!(current_branch(&repo), BRANCH);
    assert_eq!(repo.read("work.txt"), "work\n");
    // Claiming while on it changes nothing.
    assert!(git.claim(&id("A"), TITLE).unwrap().resumed);
    assert_eq!(
        repo.git(&["branch", "--list", "task/*", "--format=%(refname:short)"]),
        BRANCH
    );
}

#[test]
fn claim_does_not_mistake_another_tasks_branch() {
    let repo = project();
    let git = open(&repo);
    git.claim(&id("A.11"), "eleven").unwrap();
    git.checkout_base().unwrap();
    let claim = git.claim(&id("A.1"), "one").unwrap();
    assert_eq!(claim.branch, "task/A.1-one");
    assert!(!claim.resumed);
}

#[test]
fn claim_refuses_a_dirty_tree_and_creates_nothing() {
    let repo = project();
    let git = open(&repo);
    repo.write("README.md", "edited\n");
    let err = git.claim(&id("A"), TITLE).unwrap_err();
    assert!(matches!(err, Error::Dirty { ref paths } if paths == &["README.md"]));
    assert_eq!(repo.git(&["branch", "--list", "task/*"]), "");
}

#[test]
fn a_configured_prefix_names_the_branches() {
    let repo = project();
    let options = Options {
        branch_prefix: "ralph/".to_owned(),
        ..Options::default()
    };
    let git = open_with(&repo, &options);
    assert_eq!(
        git.claim(&id("A"), "Hello").unwrap().branch,
        "ralph/A-hello"
    );
}

// ----------------------------------------------------------- branch names

proptest! {
    #[test]
    fn any_title_yields_a_valid_branch_name(
        title in prop_oneof![any::<String>(), "[ -~]{0,120}", "[./@{}~^:?*\\[\\\\ -]{0,40}"],
        task in "[A-Za-z0-9_-]{1,6}(\\.[A-Za-z0-9_-]{1,6}){0,3}|[A-Z]\\.lock",
    ) {
        let name = branch_name("task/", &id(&task), &title);
        prop_assert!(
            git2::Reference::is_valid_name(&format!("refs/heads/{name}")),
            "invalid: {name:?}"
        );
        let slug = slug(&title);
        prop_assert!(slug.len() <= 40);
        prop_assert!(slug.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'));
        prop_assert!(!slug.starts_with('-') && !slug.ends_with('-') && !slug.contains("--"));
    }
}

#[test]
fn hostile_titles_pass_git_check_ref_format() {
    let repo = GitRepo::new();
    let titles = [
        "",
        "$(rm -rf ~); `echo pwned` && | > < 'quoted' \"double\"",
        "../../etc/passwd",
        "a/b/c/",
        "ends with a dot.",
        "foo.lock",
        "HEAD@{1} ~ ^ : ? * [ \\",
        "🚀🔥 emoji only 🎉",
        "Ünïcödé Çrème brûlée",
        "\t\n\r control \u{7f}",
        "--force",
        "@",
        "x".repeat(300).as_str(),
    ]
    .map(str::to_owned);
    for title in titles {
        for task in ["A", "A.1.2", "B-2.x_y", "A.lock"] {
            let name = branch_name("task/", &id(task), &title);
            repo.git(&["check-ref-format", "--branch", &name]);
            repo.git(&["check-ref-format", &format!("refs/heads/{name}")]);
        }
    }
}

// ------------------------------------------------------------ work measures

#[test]
fn work_is_measured_against_the_point_the_branch_left_the_base() {
    let repo = project();
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    assert!(git.commits_since_base(BRANCH).unwrap().is_empty());
    assert!(git.files_changed(BRANCH).unwrap().is_empty());
    let first = repo.commit_file("src/session.rs", "// sessions\n", "Add session module");
    repo.write("tasks.jsonl", "{\"agent\":\"edit\"}\n");
    repo.write("README.md", "# sessions\n");
    repo.git(&["commit", "-q", "-am", "Wire sessions"]);
    let second = repo.git(&["rev-parse", "HEAD"]);
    // The base moving on is no work of the branch's.
    commit_on_main_elsewhere(&repo, "other.txt", "other\n", "Unrelated");
    let commits = git.commits_since_base(BRANCH).unwrap();
    let expected = [(first, "Add session module"), (second, "Wire sessions")];
    assert_eq!(
        commits
            .iter()
            .map(|c| (c.id.to_string(), c.subject.as_str()))
            .collect::<Vec<_>>(),
        expected
            .iter()
            .map(|(id, subject)| (id.clone(), *subject))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        git.files_changed(BRANCH).unwrap(),
        ["README.md", "src/session.rs"]
    );
    let err = git.commits_since_base("task/B-gone").unwrap_err();
    assert_eq!(
        report(err),
        (
            "error: task branch \"task/B-gone\" does not exist".to_owned(),
            30
        )
    );
}

// ---------------------------------------------------------------- leftovers

#[test]
fn leftovers_are_committed_without_queue_runtime_or_ignored_files() {
    let repo = project();
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    repo.write("new.txt", "new\n");
    repo.write("README.md", "changed\n");
    repo.write("tasks.jsonl", "{\"staged\":\"by the agent\"}\n");
    repo.git(&["add", "tasks.jsonl"]);
    repo.write("tasks-done.jsonl", "{\"id\":\"Z\"}\n");
    repo.write(".stop", "");
    repo.write("debug.log", "ignored\n");

    let leftovers = git.commit_leftovers(BRANCH, &id("A"), 3).unwrap();
    let wip = leftovers.wip_commit.clone().expect("a wip commit");
    assert_eq!(leftovers.left_branch, None);
    assert!(leftovers.base_commits.is_empty());
    assert_eq!(repo.git(&["rev-parse", BRANCH]), wip.as_str());
    assert_eq!(
        repo.git(&["log", "-1", "--format=%s%n%an <%ae> %at"]),
        "ralph: wip A iteration 3\nRalph Bot <ralph-bot@example.com> 1767225600"
    );
    assert_eq!(
        repo.git(&["show", "--name-status", "--format=", "HEAD"]),
        "M\tREADME.md\nA\tnew.txt"
    );
    // The queue files stay as they were on disk, uncommitted.
    assert_eq!(repo.read("tasks.jsonl"), "{\"staged\":\"by the agent\"}\n");
    assert_eq!(
        repo.status(),
        [" M tasks-done.jsonl", " M tasks.jsonl", "?? .stop"]
    );
    // Nothing left: no commit.
    let again = git.commit_leftovers(BRANCH, &id("A"), 4).unwrap();
    assert_eq!(again.wip_commit, None);
}

#[test]
fn leftovers_commit_deletions() {
    let repo = project();
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    std::fs::remove_file(repo.path().join("README.md")).unwrap();
    git.commit_leftovers(BRANCH, &id("A"), 1).unwrap();
    assert_eq!(
        repo.git(&["show", "--name-status", "--format=", "HEAD"]),
        "D\tREADME.md"
    );
    assert!(repo.status().is_empty());
}

#[test]
fn an_agent_that_left_for_the_base_is_brought_back() {
    let repo = project();
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    repo.commit_file("work.txt", "work\n", "Work");
    repo.git(&["switch", "-q", "main"]);
    let leftovers = git.commit_leftovers(BRANCH, &id("A"), 1).unwrap();
    let left = leftovers.left_branch.expect("reported");
    assert_eq!(left.found, Head::Branch("main".to_owned()));
    assert!(left.returned && !left.fast_forwarded && left.dirty.is_empty());
    assert_eq!(current_branch(&repo), BRANCH);
    assert!(leftovers.base_commits.is_empty());
    assert_eq!(leftovers.wip_commit, None);
}

#[test]
fn commits_an_agent_made_on_the_base_are_reported_not_rewritten() {
    let repo = project();
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    repo.git(&["switch", "-q", "main"]);
    let oops = repo.commit_file("oops.txt", "oops\n", "Oops, on main");
    let leftovers = git.commit_leftovers(BRANCH, &id("A"), 1).unwrap();
    assert!(leftovers.left_branch.expect("reported").returned);
    assert_eq!(
        leftovers.base_commits,
        [BranchCommit {
            id: git.branch_tip("main").unwrap(),
            subject: "Oops, on main".to_owned()
        }]
    );
    assert_eq!(repo.git(&["rev-parse", "main"]), oops);
    assert_eq!(current_branch(&repo), BRANCH);
}

#[test]
fn work_committed_on_a_detached_head_is_taken_onto_the_branch() {
    let repo = project();
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    repo.git(&["switch", "-q", "--detach"]);
    let detached = repo.commit_file("work.txt", "work\n", "Detached work");
    let leftovers = git.commit_leftovers(BRANCH, &id("A"), 2).unwrap();
    let left = leftovers.left_branch.expect("reported");
    assert_eq!(left.found, Head::Detached(git.branch_tip(BRANCH).unwrap()));
    assert!(left.returned && left.fast_forwarded);
    assert_eq!(repo.git(&["rev-parse", BRANCH]), detached);
    assert_eq!(current_branch(&repo), BRANCH);
    assert!(repo.status().is_empty());
}

#[test]
fn an_agent_that_left_uncommitted_work_elsewhere_is_not_moved() {
    let repo = project();
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    repo.git(&["switch", "-q", "-c", "side"]);
    repo.write("stray.txt", "stray\n");
    let leftovers = git.commit_leftovers(BRANCH, &id("A"), 1).unwrap();
    let left = leftovers.left_branch.expect("reported");
    assert_eq!(left.found, Head::Branch("side".to_owned()));
    assert!(!left.returned);
    assert_eq!(left.dirty, ["stray.txt"]);
    assert_eq!(leftovers.wip_commit, None);
    assert_eq!(current_branch(&repo), "side");
}

// ---------------------------------------------------------------- carry-over

#[test]
fn queue_files_keep_their_bytes_across_checkouts_with_a_hand_edit_pending() {
    let repo = project();
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    // The agent commits its own version of the queue on the branch.
    repo.write("tasks.jsonl", "{\"agent\":1}\n");
    repo.git(&["commit", "-q", "-am", "Agent touches the queue"]);
    // A person edits the queue by hand while the task branch is out.
    let edited = "{\"id\":\"A\",\"hand\":\"edit\"}\n{\"id\":\"B\"}\n";
    repo.write("tasks.jsonl", edited);
    repo.write("tasks-done.jsonl", "{\"id\":\"Z\"}\n");
    git.checkout_base().unwrap();
    assert_eq!(current_branch(&repo), "main");
    assert_eq!(repo.read("tasks.jsonl"), edited);
    assert_eq!(repo.read("tasks-done.jsonl"), "{\"id\":\"Z\"}\n");
    git.claim(&id("A"), TITLE).unwrap();
    assert_eq!(repo.read("tasks.jsonl"), edited);
    assert_eq!(
        git.commit_leftovers(BRANCH, &id("A"), 1)
            .unwrap()
            .wip_commit,
        None
    );
    assert_eq!(repo.read("tasks.jsonl"), edited);
    assert_eq!(repo.status(), [" M tasks-done.jsonl", " M tasks.jsonl"]);
}

#[test]
fn a_queue_file_missing_on_disk_stays_missing_across_checkouts() {
    let repo = project();
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    std::fs::remove_file(repo.path().join("tasks-done.jsonl")).unwrap();
    git.checkout_base().unwrap();
    assert!(!repo.path().join("tasks-done.jsonl").exists());
}

// -------------------------------------------------------------------- squash

/// Claims A, commits two pieces of work and a wip leftover, archives A.
fn finished_task(repo: &GitRepo, git: &Repo) -> String {
    git.claim(&id("A"), TITLE).unwrap();
    repo.commit_file("src/session.rs", "// sessions\n", "Add session module");
    repo.commit_file("README.md", "# sessions\n", "Wire sessions");
    repo.write("notes.txt", "left over\n");
    git.commit_leftovers(BRANCH, &id("A"), 2).unwrap();
    let tip = git.branch_tip(BRANCH).unwrap();
    archive_a(repo, tip.as_str());
    tip.to_string()
}

#[test]
fn squash_writes_one_commit_with_the_archive_and_keeps_the_tip() {
    let repo = project();
    let git = open(&repo);
    let base_before = repo.git(&["rev-parse", "main"]);
    let tip = finished_task(&repo, &git);
    assert_eq!(git.preview_squash(BRANCH).unwrap(), SquashPreview::Clean);

    let Squash::Merged(merged) = git.squash_into_base(BRANCH, &id("A"), TITLE).unwrap() else {
        panic!("expected a merge");
    };
    assert_eq!(merged.tip.as_str(), tip);
    assert_eq!(merged.preserved_ref, "refs/ralph/tasks/A");
    assert_eq!(repo.git(&["rev-parse", "main"]), merged.commit.as_str());
    // One commit, single parent, the message of DESIGN.md section 6.
    assert_eq!(
        repo.git(&["rev-list", "--parents", "-n", "1", "main"]),
        format!("{} {base_before}", merged.commit)
    );
    assert_eq!(
        repo.git(&["log", "-1", "--format=%B", "main"]),
        "[A] Choose session library\n\n- Add session module\n- Wire sessions\n\nCompletes: A"
    );
    assert_eq!(
        repo.git(&[
            "log",
            "-1",
            "--format=%(trailers:key=Completes,valueonly)",
            "main"
        ]),
        "A"
    );
    assert_eq!(
        repo.git(&["log", "-1", "--format=%an <%ae> %at", "main"]),
        "Ralph Bot <ralph-bot@example.com> 1767225600"
    );
    // The archive move is inside it.
    assert_eq!(repo.git(&["show", "main:tasks.jsonl"]), "");
    assert_eq!(
        repo.git(&["show", "main:tasks-done.jsonl"]),
        format!("{{\"id\":\"A\",\"title\":\"{TITLE}\",\"commit\":\"{tip}\"}}")
    );
    assert_eq!(
        repo.git(&["diff", "--name-only", &base_before, "main"]),
        "README.md\nnotes.txt\nsrc/session.rs\ntasks-done.jsonl\ntasks.jsonl"
    );
    // The full history stays reachable; the branch is gone.
    assert_eq!(repo.git(&["rev-parse", "refs/ralph/tasks/A"]), tip);
    assert_eq!(
        repo.git(&[
            "log",
            "--format=%s",
            &format!("{base_before}..refs/ralph/tasks/A")
        ]),
        "ralph: wip A iteration 2\nWire sessions\nAdd session module"
    );
    assert_eq!(repo.git(&["branch", "--list", "task/*"]), "");
    // Clean, on the base.
    assert_eq!(current_branch(&repo), "main");
    assert!(repo.status().is_empty(), "{:?}", repo.status());
}

#[test]
fn squash_gives_the_tree_of_git_merge_squash() {
    let repo = project();
    repo.commit_file("lib/a.txt", "one\ntwo\nthree\n", "add a");
    repo.commit_file("lib/gone.txt", "gone\n", "add gone");
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    repo.commit_file("lib/a.txt", "one\ntwo\nthree\nfour\n", "Append to a");
    repo.git(&["rm", "-q", "lib/gone.txt"]);
    repo.git(&["commit", "-q", "-m", "Remove gone"]);
    repo.commit_file("lib/b.txt", "b\n", "Add b");
    // The base moves on meanwhile, without conflicting.
    commit_on_main_elsewhere(&repo, "README.md", "# moved\n", "Base moves");
    let tip = git.branch_tip(BRANCH).unwrap();
    archive_a(&repo, tip.as_str());

    // The same squash by hand, in another worktree.
    let cli = repo.sibling("cli");
    let cli_str = cli.to_str().unwrap();
    repo.git(&["worktree", "add", "-q", "-b", "cli-squash", cli_str, "main"]);
    repo.git_in(&cli, &["merge", "-q", "--squash", BRANCH]);
    for file in ["tasks.jsonl", "tasks-done.jsonl"] {
        std::fs::copy(repo.path().join(file), cli.join(file)).unwrap();
    }
    repo.git_in(&cli, &["add", "tasks.jsonl", "tasks-done.jsonl"]);
    repo.git_in(&cli, &["commit", "-q", "-m", "squash by hand"]);
    let expected = repo.git_in(&cli, &["rev-parse", "HEAD^{tree}"]);
    repo.git(&["worktree", "remove", cli_str]);

    let squash = git.squash_into_base(BRANCH, &id("A"), TITLE).unwrap();
    assert!(matches!(squash, Squash::Merged(_)));
    assert_eq!(repo.git(&["rev-parse", "main^{tree}"]), expected);
    assert_eq!(repo.read("README.md"), "# moved\n");
    assert!(repo.status().is_empty());
}

#[test]
fn queue_files_never_conflict_their_bytes_on_disk_win() {
    let repo = project();
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    repo.write("tasks.jsonl", "{\"branch\":\"version\"}\n");
    repo.commit_file("work.txt", "work\n", "Work");
    repo.git(&["commit", "-q", "-am", "Agent commits the queue"]);
    commit_on_main_elsewhere(
        &repo,
        "tasks.jsonl",
        "{\"base\":\"version\"}\n",
        "Base edits the queue",
    );
    repo.write("tasks.jsonl", "{\"disk\":\"version\"}\n");
    assert_eq!(git.preview_squash(BRANCH).unwrap(), SquashPreview::Clean);
    let squash = git.squash_into_base(BRANCH, &id("A"), TITLE).unwrap();
    assert!(matches!(squash, Squash::Merged(_)));
    assert_eq!(
        repo.git(&["show", "main:tasks.jsonl"]),
        "{\"disk\":\"version\"}"
    );
    assert!(repo.status().is_empty());
}

#[test]
fn a_conflicting_squash_commits_nothing_and_returns_to_the_branch() {
    let repo = project();
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    repo.commit_file("README.md", "# branch\n", "Branch edits README");
    commit_on_main_elsewhere(&repo, "README.md", "# base\n", "Base edits README");
    let base_before = repo.git(&["rev-parse", "main"]);
    let hand_edit = "{\"id\":\"A\",\"status\":\"ready\"}\n";
    repo.write("tasks.jsonl", hand_edit);
    assert_eq!(
        git.preview_squash(BRANCH).unwrap(),
        SquashPreview::Conflict(vec!["README.md".to_owned()])
    );
    let squash = git.squash_into_base(BRANCH, &id("A"), TITLE).unwrap();
    assert_eq!(squash, Squash::Conflict(vec!["README.md".to_owned()]));
    assert_eq!(repo.git(&["rev-parse", "main"]), base_before);
    assert_eq!(current_branch(&repo), BRANCH);
    assert_eq!(repo.read("README.md"), "# branch\n");
    assert_eq!(repo.read("tasks.jsonl"), hand_edit);
    assert_eq!(repo.status(), [" M tasks.jsonl"]);
    assert!(
        repo.try_git_in(
            repo.path(),
            &["rev-parse", "--verify", "-q", "refs/ralph/tasks/A"]
        )
        .stdout
        .is_empty()
    );
}

#[test]
fn a_branch_with_nothing_but_queue_changes_is_reported_empty() {
    let repo = project();
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    repo.write("tasks.jsonl", "{\"agent\":1}\n");
    repo.git(&["commit", "-q", "-am", "Only the queue"]);
    archive_a(&repo, "abc");
    let base_before = repo.git(&["rev-parse", "main"]);
    assert_eq!(git.preview_squash(BRANCH).unwrap(), SquashPreview::Empty);
    assert_eq!(
        git.squash_into_base(BRANCH, &id("A"), TITLE).unwrap(),
        Squash::Empty
    );
    assert_eq!(repo.git(&["rev-parse", "main"]), base_before);
    assert_eq!(current_branch(&repo), BRANCH);
}

#[test]
fn squash_refuses_a_dirty_tree() {
    let repo = project();
    let git = open(&repo);
    finished_task(&repo, &git);
    repo.write("stray.txt", "stray\n");
    let err = git.squash_into_base(BRANCH, &id("A"), TITLE).unwrap_err();
    assert!(matches!(err, Error::Dirty { ref paths } if paths == &["stray.txt"]));
    assert_eq!(current_branch(&repo), BRANCH);
}

#[test]
fn a_bookkeeping_commit_holds_only_the_queue_files() {
    let repo = project();
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    repo.commit_file("work.txt", "work\n", "Work");
    let blocked = "{\"id\":\"A\",\"status\":\"blocked\",\"blocked_reason\":\"stuck\"}\n";
    repo.write("tasks.jsonl", blocked);
    let base_before = repo.git(&["rev-parse", "main"]);
    let commit = git
        .commit_queue_files("ralph: block A")
        .unwrap()
        .expect("a commit");
    assert_eq!(repo.git(&["rev-parse", "main"]), commit.as_str());
    assert_eq!(
        repo.git(&["rev-list", "--parents", "-n", "1", "main"]),
        format!("{commit} {base_before}")
    );
    assert_eq!(
        repo.git(&["show", "--name-only", "--format=%s", "main"]),
        "ralph: block A\n\ntasks.jsonl"
    );
    assert_eq!(current_branch(&repo), "main");
    assert_eq!(repo.read("tasks.jsonl"), blocked);
    assert!(repo.status().is_empty(), "{:?}", repo.status());
    // The task branch stays for a later resume; nothing new: no commit.
    assert_eq!(
        repo.git(&["branch", "--list", "task/*", "--format=%(refname:short)"]),
        BRANCH
    );
    assert_eq!(git.commit_queue_files("ralph: block A").unwrap(), None);
}

#[test]
fn ignored_untracked_queue_files_stay_out_of_commits() {
    let repo = GitRepo::new();
    repo.write(".gitignore", "tasks.jsonl\ntasks-done.jsonl\n");
    repo.git(&["add", ".gitignore"]);
    repo.git(&["commit", "-q", "-m", "ignore the queue"]);
    repo.write("tasks.jsonl", TASKS);
    let git = open(&repo);
    git.preflight().unwrap();
    git.claim(&id("A"), TITLE).unwrap();
    repo.commit_file("work.txt", "work\n", "Work");
    repo.write("tasks.jsonl", "");
    assert!(matches!(
        git.squash_into_base(BRANCH, &id("A"), TITLE).unwrap(),
        Squash::Merged(_)
    ));
    assert_eq!(
        repo.git(&["ls-tree", "--name-only", "main"]),
        ".gitignore\nREADME.md\nwork.txt"
    );
    assert_eq!(git.commit_queue_files("bookkeeping").unwrap(), None);
}

// ------------------------------------------------------- identity, worktrees

#[test]
fn the_identity_comes_from_the_repository_config() {
    let repo = GitRepo::new();
    let identity = Repo::open(repo.path(), &Options::default())
        .unwrap()
        .identity()
        .clone();
    assert_eq!(identity, Identity::new("Test Author", "author@example.com"));
    assert_eq!(identity.warning(), None);
}

#[test]
fn a_missing_identity_falls_back_to_ralph_with_a_warning() {
    let repo = project();
    repo.git(&["config", "--unset", "user.name"]);
    repo.git(&["config", "--unset", "user.email"]);
    let git = Repo::open(repo.path(), &Options::default()).unwrap();
    let identity = git.identity().clone();
    assert_eq!(
        (
            identity.name.as_str(),
            identity.email.as_str(),
            identity.fallback
        ),
        ("ralph", "ralph@localhost", true)
    );
    assert_eq!(
        identity.warning().unwrap(),
        "git user.name or user.email is not configured; ralph commits as ralph <ralph@localhost> (set them with `git config user.name ...` and `git config user.email ...`)"
    );
    git.claim(&id("A"), TITLE).unwrap();
    repo.write("work.txt", "work\n");
    git.commit_leftovers(BRANCH, &id("A"), 1).unwrap();
    assert_eq!(
        repo.git(&["log", "-1", "--format=%an <%ae>"]),
        "ralph <ralph@localhost>"
    );
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

    let git = Repo::open(&wt, &Options::default())
        .unwrap()
        .with_identity(identity());
    assert_eq!(git.base(), "feature");
    git.preflight().unwrap();
    git.claim(&id("A"), TITLE).unwrap();
    std::fs::write(wt.join("work.txt"), "work\n").unwrap();
    std::fs::write(wt.join("tasks.jsonl"), "").unwrap();
    git.commit_leftovers(BRANCH, &id("A"), 1).unwrap();
    assert!(matches!(
        git.squash_into_base(BRANCH, &id("A"), TITLE).unwrap(),
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
fn an_empty_branch_can_be_closed_keeping_its_tip() {
    let repo = project();
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    repo.write("tasks.jsonl", "{\"agent\":1}\n");
    repo.git(&["commit", "-q", "-am", "Only the queue"]);
    let tip = git.branch_tip(BRANCH).unwrap();
    assert_eq!(
        git.squash_into_base(BRANCH, &id("A"), TITLE).unwrap(),
        Squash::Empty
    );
    assert_eq!(
        git.preserve_and_delete_branch(BRANCH, &id("A")).unwrap(),
        tip
    );
    assert_eq!(current_branch(&repo), "main");
    assert_eq!(repo.git(&["rev-parse", "refs/ralph/tasks/A"]), tip.as_str());
    assert_eq!(repo.git(&["branch", "--list", "task/*"]), "");
    assert_eq!(repo.read("tasks.jsonl"), "{\"agent\":1}\n");
    assert_eq!(
        git.commit_queue_files("ralph: close A")
            .unwrap()
            .map(|c| c.to_string()),
        Some(repo.git(&["rev-parse", "main"]))
    );
    assert!(repo.status().is_empty());
}

#[test]
fn preserved_refs_are_valid_for_every_id() {
    assert_eq!(Repo::preserved_ref(&id("A.1.1")), "refs/ralph/tasks/A.1.1");
    assert_eq!(
        Repo::preserved_ref(&id("A.lock")),
        "refs/ralph/tasks/A.lock-task"
    );
}
