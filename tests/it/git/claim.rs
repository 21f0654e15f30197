//! Claiming and resuming task branches, work measures, and queue files carried over checkouts.

use super::*;

#[test]
fn claim_creates_the_task_branch_from_the_base_tip_and_checks_it_out() {
    let repo = project();
    let git = open(&repo);
    let claim = git.claim(&id("A"), TITLE).unwrap();
    assert_eq!(
        claim,
        Claimed {
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
        Claimed {
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
    // The branch's version differs from the base's, so the checkout has
    // the path to update: it must still not bring the file back.
    repo.write("tasks-done.jsonl", "{\"id\":\"Y\"}\n");
    repo.git(&["commit", "-qam", "archive on the branch"]);
    std::fs::remove_file(repo.path().join("tasks-done.jsonl")).unwrap();
    git.checkout_base().unwrap();
    assert_eq!(current_branch(&repo), "main");
    assert!(!repo.path().join("tasks-done.jsonl").exists());
}
