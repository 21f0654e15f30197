//! The squash commit, conflicts, empty branches and bookkeeping commits.

use super::*;

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

    let Squash::Merged(merged) = git
        .squash_into_base(BRANCH, &id("A"), TITLE, &completes("A"))
        .unwrap()
    else {
        panic!("expected a merge");
    };
    assert_eq!(merged.tip.as_str(), tip);
    assert_eq!(merged.preserved_ref, "refs/ralph/tasks/A");
    assert_eq!(repo.git(&["rev-parse", "main"]), merged.commit.as_str());
    // One commit, single parent, the message of docs/DESIGN.md section 6.
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
    let long: String = (1..=12).map(|n| format!("line {n}\n")).collect();
    repo.commit_file("lib/long.txt", &long, "add long");
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    repo.commit_file("lib/a.txt", "one\ntwo\nthree\nfour\n", "Append to a");
    repo.git(&["rm", "-q", "lib/gone.txt"]);
    repo.git(&["commit", "-q", "-m", "Remove gone"]);
    repo.commit_file("lib/b.txt", "b\n", "Add b");
    repo.write("bin/tool.sh", "#!/bin/sh\n");
    repo.git(&["add", "--chmod=+x", "bin/tool.sh"]);
    repo.git(&["mv", "lib/long.txt", "lib/renamed.txt"]);
    repo.write("lib/renamed.txt", &long.replace("line 12", "line twelve"));
    repo.git(&["commit", "-q", "-am", "Rename long, add a tool"]);
    // The base moves on meanwhile, without conflicting, also in the file
    // the branch renamed.
    commit_on_main_elsewhere(&repo, "README.md", "# moved\n", "Base moves");
    commit_on_main_elsewhere(
        &repo,
        "lib/long.txt",
        &long.replace("line 1\n", "line one\n"),
        "Base edits long",
    );
    let tip = git.branch_tip(BRANCH).unwrap();
    archive_a(&repo, tip.as_str());

    let expected = squash_by_hand(&repo);

    let squash = git
        .squash_into_base(BRANCH, &id("A"), TITLE, &completes("A"))
        .unwrap();
    assert!(matches!(squash, Squash::Merged(_)));
    assert_eq!(repo.git(&["rev-parse", "main^{tree}"]), expected);
    assert_eq!(repo.read("README.md"), "# moved\n");
    assert!(repo.read("lib/renamed.txt").starts_with("line one\n"));
    assert!(repo.read("lib/renamed.txt").ends_with("line twelve\n"));
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
    let squash = git
        .squash_into_base(BRANCH, &id("A"), TITLE, &completes("A"))
        .unwrap();
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
    let squash = git
        .squash_into_base(BRANCH, &id("A"), TITLE, &completes("A"))
        .unwrap();
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
        git.squash_into_base(BRANCH, &id("A"), TITLE, &completes("A"))
            .unwrap(),
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
    let err = git
        .squash_into_base(BRANCH, &id("A"), TITLE, &completes("A"))
        .unwrap_err();
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
        git.squash_into_base(BRANCH, &id("A"), TITLE, &completes("A"))
            .unwrap(),
        Squash::Merged(_)
    ));
    assert_eq!(
        repo.git(&["ls-tree", "--name-only", "main"]),
        ".gitignore\nREADME.md\nwork.txt"
    );
    assert_eq!(git.commit_queue_files("bookkeeping").unwrap(), None);
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
        git.squash_into_base(BRANCH, &id("A"), TITLE, &completes("A"))
            .unwrap(),
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
fn the_same_work_gives_the_same_commit_ids() {
    let commits: Vec<String> = (0..2)
        .map(|_| {
            let repo = project();
            let git = open(&repo);
            finished_task(&repo, &git);
            match git
                .squash_into_base(BRANCH, &id("A"), TITLE, &completes("A"))
                .unwrap()
            {
                Squash::Merged(merged) => merged.commit.to_string(),
                other => panic!("expected a merge, got {other:?}"),
            }
        })
        .collect();
    assert_eq!(commits[0], commits[1]);
}

#[test]
fn a_branch_on_an_unmoved_base_squashes_to_the_tree_of_git_merge_squash() {
    // The base does not move: ralph takes the branch's tree without a
    // merge, and compares trees subtree by subtree. Whole folders added
    // and removed, a file turned into a folder, a mode change and a link.
    let repo = project();
    repo.commit_file("old/a.txt", "a\n", "add old");
    repo.commit_file("old/deep/b.txt", "b\n", "add deep");
    repo.commit_file("shape", "a file\n", "add shape");
    repo.commit_file("tool.sh", "#!/bin/sh\n", "add tool");
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    repo.git(&["rm", "-q", "-r", "old", "shape"]);
    repo.write("shape/inner.txt", "now a folder\n");
    repo.write("new/one/two/c.txt", "c\n");
    use std::os::unix::fs::PermissionsExt;
    let tool = repo.path().join("tool.sh");
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    repo.git(&["add", "-A"]);
    std::os::unix::fs::symlink("tool.sh", repo.path().join("link")).unwrap();
    repo.git(&["add", "link"]);
    repo.git(&["commit", "-q", "-m", "Reshape"]);
    let expected_files = repo.git(&["diff", "--name-only", "main", BRANCH]);
    assert_eq!(
        git.files_changed(BRANCH).unwrap().join("\n"),
        expected_files
    );
    let tip = git.branch_tip(BRANCH).unwrap();
    archive_a(&repo, tip.as_str());

    let expected = squash_by_hand(&repo);

    assert_eq!(git.preview_squash(BRANCH).unwrap(), SquashPreview::Clean);
    let squash = git
        .squash_into_base(BRANCH, &id("A"), TITLE, &completes("A"))
        .unwrap();
    assert!(matches!(squash, Squash::Merged(_)));
    assert_eq!(repo.git(&["rev-parse", "main^{tree}"]), expected);
    assert_eq!(current_branch(&repo), "main");
    assert!(repo.status().is_empty());
    assert_eq!(repo.read("shape/inner.txt"), "now a folder\n");
    assert!(!repo.path().join("old").exists());
}

#[test]
fn a_clean_token_skips_the_scan_but_never_an_edit_the_checkout_would_overwrite() {
    let repo = project();
    repo.commit_file("lib.txt", "base\n", "add lib");
    repo.commit_file("notes.txt", "notes\n", "add notes");
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    repo.commit_file("lib.txt", "branch\n", "Change lib");
    git.checkout_base().unwrap();
    let clean = git.check_clean().unwrap();
    // Someone edits the file after the scan; resuming the branch would
    // overwrite it, so the claim stops instead and the edit stays.
    repo.write("lib.txt", "a person's edit\n");
    let err = git.claim_clean(&id("A"), TITLE, clean).unwrap_err();
    assert!(matches!(err, Error::Dirty { ref paths } if paths == &["lib.txt"]));
    assert_eq!(repo.read("lib.txt"), "a person's edit\n");
    assert_eq!(current_branch(&repo), "main");
    // A file the checkout does not touch is carried over, as by `git
    // checkout`: the scan the token stands for is not repeated.
    repo.write("lib.txt", "base\n");
    let clean = git.check_clean().unwrap();
    repo.write("notes.txt", "edited after the scan\n");
    let claim = git.claim_clean(&id("A"), TITLE, clean).unwrap();
    assert!(claim.resumed);
    assert_eq!(repo.read("lib.txt"), "branch\n");
    assert_eq!(repo.read("notes.txt"), "edited after the scan\n");
}

#[test]
fn an_index_lock_another_git_holds_for_a_moment_is_waited_out() {
    let repo = project();
    let git = open(&repo);
    finished_task(&repo, &git);
    let Squash::Merged(_) = git
        .squash_into_base(BRANCH, &id("A"), TITLE, &completes("A"))
        .unwrap()
    else {
        panic!("expected a merge");
    };
    // The archive changes again, and its record goes into the squash
    // commit while a `git status` elsewhere (an editor, a shell prompt)
    // holds the index lock to refresh the index.
    let record = format!("{{\"id\":\"A\",\"title\":\"{TITLE}\",\"commit\":\"x\"}}\n");
    repo.write("tasks-done.jsonl", &record);
    let lock = repo.path().join(".git/index.lock");
    std::fs::write(&lock, "").unwrap();
    let release = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        std::fs::remove_file(lock).unwrap();
    });
    git.amend_with_queue_files(&[]).unwrap();
    release.join().unwrap();
    assert_eq!(
        repo.git(&["show", "main:tasks-done.jsonl"]),
        record.trim_end()
    );
    assert!(repo.status().is_empty(), "{:?}", repo.status());
}

/// A queue file an agent swapped for a link (to a file of the home
/// folder) never enters a commit on the base, made by libgit2 or, with a
/// hook, by the user's git: the commit is refused, naming it, and the base
/// stays where it was.
#[test]
fn a_queue_file_that_is_a_link_is_never_committed_on_the_base() {
    for hook in [false, true] {
        let repo = project();
        let git = open(&repo);
        if hook {
            use std::os::unix::fs::PermissionsExt;
            let path = repo.path().join(".git/hooks/pre-commit");
            std::fs::write(&path, "#!/bin/sh\nexit 0\n").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        finished_task(&repo, &git);
        let profile = repo.sibling(".profile");
        std::fs::write(&profile, "export PATH=/usr/bin\n").unwrap();
        std::fs::remove_file(repo.path().join("tasks-done.jsonl")).unwrap();
        std::os::unix::fs::symlink(&profile, repo.path().join("tasks-done.jsonl")).unwrap();
        let base_before = repo.git(&["rev-parse", "main"]);
        let expected = (
            format!(
                "error: tasks-done.jsonl: a link to {}, where ralph keeps a file of its own\nhint: ralph never reads or writes through a link, nor into what it did not make: put the file itself back in its place (ralph's last copy of it is .ralph/queue/tasks-done.jsonl.valid), then run again",
                profile.display()
            ),
            30,
        );
        let err = git
            .squash_into_base(BRANCH, &id("A"), TITLE, &completes("A"))
            .unwrap_err();
        assert_eq!(report(err), expected, "hook: {hook}");
        assert_eq!(repo.git(&["rev-parse", "main"]), base_before);
        assert_eq!(current_branch(&repo), BRANCH, "nothing checked out");
        assert!(!repo.path().join(".git/ralph-squash-in-progress").exists());
        let err = git.commit_queue_files("ralph: block A").unwrap_err();
        assert_eq!(report(err), expected, "hook: {hook}");
        assert_eq!(repo.git(&["rev-parse", "main"]), base_before);
        let tree = repo.git(&["ls-tree", "-r", "main"]);
        assert!(!tree.contains("120000"), "{tree}");
        assert_eq!(
            std::fs::read_to_string(&profile).unwrap(),
            "export PATH=/usr/bin\n"
        );
    }
}
