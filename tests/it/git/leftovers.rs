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
    // An agent's `git add -A` takes a queue temp file and a runtime file
    // along: neither enters the commit.
    repo.write("tasks.jsonl.tmp", "{\"half\":\"written\"}\n");
    repo.git(&["add", "tasks.jsonl.tmp", ".stop"]);

    let leftovers = git.commit_leftovers(BRANCH, &id("A"), 3).unwrap();
    let wip = leftovers.wip_commit.clone().expect("a wip commit");
    assert_eq!(leftovers.left_branch, None);
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
        [
            " M tasks-done.jsonl",
            " M tasks.jsonl",
            "?? .stop",
            "?? tasks.jsonl.tmp"
        ]
    );
    // Nothing left: no commit.
    let again = git.commit_leftovers(BRANCH, &id("A"), 4).unwrap();
    assert_eq!(again.wip_commit, None);
}

#[test]
fn tracked_files_named_like_queue_temps_or_runtime_files_are_the_projects() {
    let repo = project();
    repo.write("tasks.jsonl.example", "{\"id\":\"EX\"}\n");
    repo.write(".stop", "committed on purpose\n");
    repo.git(&["add", "tasks.jsonl.example", ".stop"]);
    repo.git(&["commit", "-q", "-m", "example files"]);
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    repo.write("tasks.jsonl.example", "{\"id\":\"EX2\"}\n");
    repo.write(".stop", "changed\n");
    assert_eq!(
        git.uncommitted_changes().unwrap(),
        [".stop", "tasks.jsonl.example"]
    );
    let leftovers = git.commit_leftovers(BRANCH, &id("A"), 1).unwrap();
    assert!(leftovers.wip_commit.is_some());
    assert_eq!(
        repo.git(&["show", "--name-status", "--format=", "HEAD"]),
        "M\t.stop\nM\ttasks.jsonl.example"
    );
    assert!(git.uncommitted_changes().unwrap().is_empty());
    // Back on the base, the base's versions are on disk.
    git.checkout_base().unwrap();
    assert_eq!(repo.read("tasks.jsonl.example"), "{\"id\":\"EX\"}\n");
    assert!(repo.status().is_empty(), "{:?}", repo.status());
}

#[test]
fn a_leftover_whose_name_is_not_utf8_is_committed() {
    use std::os::unix::ffi::OsStrExt;
    let repo = project();
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    std::fs::write(repo.path().join(name), "latin-1 name\n").unwrap();
    let leftovers = git.commit_leftovers(BRANCH, &id("A"), 1).unwrap();
    assert!(leftovers.wip_commit.is_some());
    assert_eq!(
        repo.git(&["show", "--name-status", "--format=", "HEAD"]),
        "A\t\"caf\\351.txt\""
    );
    assert!(repo.status().is_empty(), "{:?}", repo.status());
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
    assert_eq!(leftovers.wip_commit, None);
}

#[test]
fn commits_an_agent_made_on_the_base_are_reported_not_rewritten() {
    let repo = project();
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    repo.git(&["switch", "-q", "main"]);
    let before = git.branch_tip("main").unwrap();
    let oops = repo.commit_file("oops.txt", "oops\n", "Oops, on main");
    let leftovers = git.commit_leftovers(BRANCH, &id("A"), 1).unwrap();
    assert!(leftovers.left_branch.expect("reported").returned);
    let oops_commit = BranchCommit {
        id: git.branch_tip("main").unwrap(),
        subject: "Oops, on main".to_owned(),
    };
    assert_eq!(
        git.base_commits_since(&before).unwrap(),
        (vec![oops_commit.clone()], vec![]),
        "made in this checkout"
    );
    assert_eq!(repo.git(&["rev-parse", "main"]), oops);
    assert_eq!(current_branch(&repo), BRANCH);
    // A commit made without this checkout's HEAD (another worktree, a
    // script with plumbing) is someone else's.
    let tree = repo.git(&["rev-parse", "main^{tree}"]);
    let theirs = repo.git(&["commit-tree", &tree, "-p", "main", "-m", "Theirs"]);
    repo.git(&["update-ref", "refs/heads/main", &theirs]);
    let (here, elsewhere) = git.base_commits_since(&before).unwrap();
    assert_eq!(here, [oops_commit]);
    assert_eq!(elsewhere.len(), 1);
    assert_eq!(elsewhere[0].subject, "Theirs");
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

/// A repository with files in folders, one ignored folder holding a file
/// tracked anyway, on a claimed task's branch, its working tree watched
/// (on Linux; elsewhere every scan is a full one: the same answers).
fn layout() -> (GitRepo, Repo) {
    let repo = project();
    repo.write("src/a/one.txt", "one\n");
    repo.write("src/b/two.txt", "two\n");
    repo.write(".gitignore", "*.log\n.ralph/\nbuild/\n");
    repo.write("build/kept.txt", "tracked though ignored\n");
    repo.git(&["add", "-A"]);
    repo.git(&["add", "-f", "build/kept.txt"]);
    repo.git(&["commit", "-q", "-m", "layout"]);
    let git = open(&repo);
    git.watch_changes().unwrap();
    git.preflight().unwrap();
    git.claim(&id("A"), TITLE).unwrap();
    (repo, git)
}

fn wip_files(repo: &GitRepo) -> String {
    repo.git(&["show", "--name-status", "--format=", "HEAD"])
}

#[test]
fn a_tree_sees_a_head_moved_with_its_index() {
    let (repo, git) = layout();
    repo.write("src/a/new.txt", "new\n");
    assert!(
        git.commit_leftovers(BRANCH, &id("A"), 1)
            .unwrap()
            .wip_commit
            .is_some()
    );
    // The agent undoes that commit: HEAD and the index move back, no file
    // is written, and new.txt is untracked again.
    repo.git(&["reset", "-q", "HEAD~1"]);
    let leftovers = git.commit_leftovers(BRANCH, &id("A"), 2).unwrap();
    assert!(leftovers.wip_commit.is_some(), "new.txt left uncommitted");
    assert_eq!(wip_files(&repo), "A\tsrc/a/new.txt");
    assert!(git.uncommitted_changes().unwrap().is_empty());
}

#[test]
fn a_tree_commits_every_kind_of_leftover() {
    let (repo, git) = layout();
    // Edits, a new folder tree, a deletion, a tracked file in an ignored
    // folder, and an ignored file (left out).
    repo.write("src/a/one.txt", "changed\n");
    repo.write("new/deep/er/three.txt", "three\n");
    std::fs::remove_file(repo.path().join("src/b/two.txt")).unwrap();
    repo.write("build/kept.txt", "changed too\n");
    repo.write("build/out.o", "ignored\n");
    git.commit_leftovers(BRANCH, &id("A"), 1).unwrap();
    assert_eq!(
        wip_files(&repo),
        "M\tbuild/kept.txt\nA\tnew/deep/er/three.txt\nM\tsrc/a/one.txt\nD\tsrc/b/two.txt"
    );
    assert!(repo.status().is_empty());
    // The next iteration sees only what changed since.
    repo.write("new/deep/er/three.txt", "three, again\n");
    git.commit_leftovers(BRANCH, &id("A"), 2).unwrap();
    assert_eq!(wip_files(&repo), "M\tnew/deep/er/three.txt");
    let again = git.commit_leftovers(BRANCH, &id("A"), 3).unwrap();
    assert_eq!(again.wip_commit, None);
}

#[test]
fn a_tree_commits_moves_index_only_changes_and_revealed_files() {
    let (repo, git) = layout();
    // A folder moved.
    std::fs::rename(repo.path().join("src/a"), repo.path().join("src/moved")).unwrap();
    repo.write("src/moved/four.txt", "four\n");
    git.commit_leftovers(BRANCH, &id("A"), 1).unwrap();
    assert_eq!(
        wip_files(&repo),
        "A\tsrc/moved/four.txt\nR100\tsrc/a/one.txt\tsrc/moved/one.txt"
    );
    assert!(repo.status().is_empty());
    // Index-only changes touch no file: `git rm --cached` leaves the file
    // on disk, untracked; the leftovers take it back, with no change.
    repo.git(&["rm", "-q", "--cached", "src/b/two.txt"]);
    let leftovers = git.commit_leftovers(BRANCH, &id("A"), 2).unwrap();
    assert_eq!(leftovers.wip_commit, None);
    assert!(repo.status().is_empty());
    // A .gitignore change shows a file nobody touched since.
    repo.write("build/was-ignored.txt", "x\n");
    git.commit_leftovers(BRANCH, &id("A"), 3).unwrap();
    repo.write(".gitignore", "*.log\n.ralph/\n");
    git.commit_leftovers(BRANCH, &id("A"), 4).unwrap();
    assert_eq!(wip_files(&repo), "M\t.gitignore\nA\tbuild/was-ignored.txt");
    assert!(repo.status().is_empty());
}

/// Whether the index file holds the extension with `signature`.
fn index_has(repo: &GitRepo, signature: &[u8; 4]) -> bool {
    let index = std::fs::read(repo.path().join(".git/index")).unwrap();
    index.windows(4).any(|window| window == signature)
}

#[test]
fn a_tree_stages_tracked_edits_through_gits_filters_with_their_stat_data() {
    use std::os::unix::fs::PermissionsExt;
    let (repo, git) = layout();
    // A rot13 clean/smudge filter, as git-crypt sets one up.
    let rot13 = "tr A-Za-z N-ZA-Mn-za-m";
    repo.git(&["config", "filter.rot13.clean", rot13]);
    repo.git(&["config", "filter.rot13.smudge", rot13]);
    repo.write(".gitattributes", "secret/** filter=rot13\n");
    repo.write("secret/plan.txt", "Attack\n");
    repo.write("tool.sh", "echo hi\n");
    git.commit_leftovers(BRANCH, &id("A"), 1).unwrap();
    // Tracked now: what the watch sees next are plain tracked files, an
    // edit, an edit under a filter, one in an ignored folder, a mode
    // change and a deletion.
    repo.write("secret/plan.txt", "Retreat\n");
    repo.write("src/a/one.txt", "changed\n");
    repo.write("build/kept.txt", "changed too\n");
    let tool = repo.path().join("tool.sh");
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::remove_file(repo.path().join("src/b/two.txt")).unwrap();
    git.commit_leftovers(BRANCH, &id("A"), 2).unwrap();
    assert_eq!(
        wip_files(&repo),
        "M\tbuild/kept.txt\nM\tsecret/plan.txt\nM\tsrc/a/one.txt\nD\tsrc/b/two.txt\nM\ttool.sh"
    );
    assert_eq!(
        repo.git(&["cat-file", "-p", "HEAD:secret/plan.txt"]),
        "Ergerng"
    );
    assert!(
        repo.git(&["ls-tree", "HEAD", "tool.sh"])
            .starts_with("100755 "),
    );
    // The index is HEAD's tree, and each plain file's entry carries its
    // stat data: git, without refreshing, finds nothing changed (an entry
    // under a filter libgit2 cannot run may be marked for git to look at
    // again).
    assert_eq!(
        repo.git(&["diff-index", "--cached", "--name-only", "HEAD"]),
        ""
    );
    let stale = repo.git(&["diff-files", "--name-only"]);
    assert!(
        stale.lines().all(|path| path == "secret/plan.txt"),
        "{stale}"
    );
    assert!(repo.status().is_empty());
    // Undone edits stage nothing and commit nothing.
    repo.write("src/a/one.txt", "changed\n");
    let again = git.commit_leftovers(BRANCH, &id("A"), 3).unwrap();
    assert_eq!(again.wip_commit, None);
}

#[test]
fn a_tree_whose_index_keeps_an_untracked_cache_keeps_it() {
    let (repo, git) = layout();
    repo.git(&["config", "core.untrackedCache", "true"]);
    repo.git(&["status", "--porcelain"]);
    assert!(index_has(&repo, b"UNTR"), "git wrote no untracked cache");
    repo.write("src/a/one.txt", "changed\n");
    git.commit_leftovers(BRANCH, &id("A"), 1).unwrap();
    assert_eq!(wip_files(&repo), "M\tsrc/a/one.txt");
    // The user's git staged it, keeping what libgit2 would have dropped.
    assert!(index_has(&repo, b"UNTR"), "the untracked cache is gone");
    assert!(repo.status().is_empty());
}
