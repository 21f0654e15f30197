//! Leftover commits after an iteration, and an agent that left the branch.

use super::*;

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

#[test]
fn work_staged_but_not_committed_is_a_leftover() {
    let repo = project();
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    repo.write("staged.txt", "staged\n");
    repo.git(&["add", "staged.txt"]);
    let leftovers = git.commit_leftovers(BRANCH, &id("A"), 1).unwrap();
    assert!(leftovers.wip_commit.is_some());
    assert!(leftovers.clean.is_some());
    assert_eq!(
        repo.git(&["show", "--name-status", "--format=", "HEAD"]),
        "A\tstaged.txt"
    );
    assert!(repo.status().is_empty());
}

#[test]
fn a_clean_token_comes_only_from_a_tree_left_clean() {
    let repo = project();
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    // Nothing to commit: clean, no commit.
    let leftovers = git.commit_leftovers(BRANCH, &id("A"), 1).unwrap();
    assert_eq!(leftovers.wip_commit, None);
    assert!(leftovers.clean.is_some());
    // Left on the base with uncommitted work: not clean.
    repo.git(&["checkout", "-q", "main"]);
    repo.write("README.md", "edited on main\n");
    let leftovers = git.commit_leftovers(BRANCH, &id("A"), 2).unwrap();
    assert!(leftovers.left_branch.is_some());
    assert_eq!(leftovers.clean, None);
}
