//! Files larger than ralph reads whole (`git::LARGE_BLOB`): written out by
//! the user's git, binary in diffs, renamed only unchanged, a conflict
//! when both sides of a merge change one; and files longer than ralph
//! diffs line by line (`git::MAX_DIFF_LINES`).

use ralph::git::{LARGE_BLOB, MAX_DIFF_LINES};

use super::*;

/// A binary file of just over `LARGE_BLOB` bytes, all `fill`.
fn large(fill: u8) -> Vec<u8> {
    vec![fill; LARGE_BLOB as usize + 1]
}

fn write_large(repo: &GitRepo, rel: &str, fill: u8) {
    let path = repo.path().join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, large(fill)).unwrap();
}

fn is_large(repo: &GitRepo, rel: &str, fill: u8) -> bool {
    std::fs::read(repo.path().join(rel)).is_ok_and(|bytes| bytes == large(fill))
}

#[test]
fn a_large_file_renamed_unchanged_is_one_file_and_binary_in_the_runs_diff() {
    let repo = project();
    write_large(&repo, "data/model.bin", 0);
    repo.write("notes.txt", "one\ntwo\nthree\nfour\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "data"]);
    let start = repo.git(&["rev-parse", "HEAD"]);
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    // An exact rename of a large file, a new large file, and a small
    // rename with an edit, which is still found.
    repo.git(&["mv", "data/model.bin", "data/renamed.bin"]);
    write_large(&repo, "data/weights.bin", 1);
    repo.git(&["mv", "notes.txt", "docs.txt"]);
    repo.write("docs.txt", "one\ntwo\nthree\nFOUR\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "Rework the data"]);
    assert_eq!(
        git.files_changed(BRANCH).unwrap(),
        ["data/renamed.bin", "data/weights.bin", "docs.txt"]
    );

    let tip = git.branch_tip(BRANCH).unwrap();
    archive_a(&repo, tip.as_str());
    let squash = git
        .squash_into_base(BRANCH, &id("A"), TITLE, &completes("A"))
        .unwrap();
    assert!(matches!(squash, Squash::Merged(_)));
    let files: Vec<(String, usize, usize, bool)> = (git.base_changes_since(&start).unwrap())
        .files
        .into_iter()
        .map(|f| (f.path, f.insertions, f.deletions, f.binary))
        .collect();
    assert_eq!(
        files,
        [
            ("data/renamed.bin".to_owned(), 0, 0, true),
            ("data/weights.bin".to_owned(), 0, 0, true),
            ("docs.txt".to_owned(), 1, 1, false),
        ]
    );
    assert!(is_large(&repo, "data/renamed.bin", 0));
    assert!(repo.status().is_empty(), "{:?}", repo.status());
}

#[test]
fn a_large_file_is_written_by_git_and_never_over_a_file_in_its_way() {
    let repo = project();
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    write_large(&repo, "big.bin", 2);
    repo.write("small.txt", "small\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "Add files"]);
    git.checkout_base().unwrap();
    assert!(!repo.path().join("big.bin").exists());

    // A file in the large file's way, after the scan: the checkout
    // writes nothing, the small file neither.
    let clean = git.check_clean().unwrap();
    repo.write("big.bin", "a person's file\n");
    let err = git.claim_clean(&id("A"), TITLE, clean).unwrap_err();
    assert!(matches!(err, Error::Dirty { ref paths } if paths == &["big.bin"]));
    assert_eq!(repo.read("big.bin"), "a person's file\n");
    assert!(!repo.path().join("small.txt").exists());
    assert_eq!(current_branch(&repo), "main");

    std::fs::remove_file(repo.path().join("big.bin")).unwrap();
    let claim = git.claim(&id("A"), TITLE).unwrap();
    assert!(claim.resumed);
    assert!(is_large(&repo, "big.bin", 2));
    assert_eq!(repo.read("small.txt"), "small\n");
    assert!(repo.status().is_empty(), "{:?}", repo.status());
}

#[test]
fn a_large_file_merges_over_a_moved_base_as_git_merges_it() {
    let repo = project();
    repo.commit_file("gone.txt", "gone\n", "add gone");
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    // A file deleted and a large one added on one side: what libgit2
    // would weigh against each other for a rename.
    write_large(&repo, "big.bin", 3);
    repo.git(&["rm", "-q", "gone.txt"]);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "Replace gone"]);
    commit_on_main_elsewhere(&repo, "README.md", "# moved\n", "Base moves");
    let tip = git.branch_tip(BRANCH).unwrap();
    archive_a(&repo, tip.as_str());
    let expected = squash_by_hand(&repo);

    let squash = git
        .squash_into_base(BRANCH, &id("A"), TITLE, &completes("A"))
        .unwrap();
    assert!(matches!(squash, Squash::Merged(_)));
    assert_eq!(repo.git(&["rev-parse", "main^{tree}"]), expected);
    assert!(is_large(&repo, "big.bin", 3));
    assert!(repo.status().is_empty(), "{:?}", repo.status());
}

#[test]
fn a_large_file_both_sides_changed_is_a_conflict() {
    let repo = project();
    write_large(&repo, "shared.bin", 0);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "add shared"]);
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    write_large(&repo, "shared.bin", 1);
    repo.git(&["commit", "-q", "-am", "Branch changes shared"]);
    let base_version = String::from_utf8(large(2)).unwrap();
    commit_on_main_elsewhere(&repo, "shared.bin", &base_version, "Base changes shared");
    let base_before = repo.git(&["rev-parse", "main"]);

    let conflict = vec!["shared.bin".to_owned()];
    assert_eq!(
        git.preview_squash(BRANCH).unwrap(),
        SquashPreview::Conflict(conflict.clone())
    );
    let squash = git
        .squash_into_base(BRANCH, &id("A"), TITLE, &completes("A"))
        .unwrap();
    assert_eq!(squash, Squash::Conflict(conflict));
    assert_eq!(repo.git(&["rev-parse", "main"]), base_before);
    assert_eq!(current_branch(&repo), BRANCH);
    assert!(is_large(&repo, "shared.bin", 1));
}

#[test]
fn a_file_too_long_to_diff_is_binary_in_the_runs_diff_and_a_conflict_to_merge() {
    // One line more than ralph diffs, after a first line that changes.
    let long = |first: &str| format!("{first}\n{}", "x\n".repeat(MAX_DIFF_LINES));
    let repo = project();
    repo.write("long.txt", &long("one"));
    repo.write("short.txt", "one\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "add long"]);
    let start = repo.git(&["rev-parse", "HEAD"]);
    let git = open(&repo);
    git.claim(&id("A"), TITLE).unwrap();
    repo.write("long.txt", &long("two"));
    repo.git(&["commit", "-q", "-am", "Branch edits the first line"]);
    let base_version = format!("{}end\n", long("one"));
    commit_on_main_elsewhere(&repo, "long.txt", &base_version, "Base adds a line");
    commit_on_main_elsewhere(&repo, "short.txt", "one\ntwo\n", "Base edits short");

    let files: Vec<(String, usize, usize, bool)> = (git.base_changes_since(&start).unwrap())
        .files
        .into_iter()
        .map(|f| (f.path, f.insertions, f.deletions, f.binary))
        .collect();
    assert_eq!(
        files,
        [
            ("long.txt".to_owned(), 0, 0, true),
            ("short.txt".to_owned(), 1, 0, false),
        ]
    );
    assert_eq!(
        git.preview_squash(BRANCH).unwrap(),
        SquashPreview::Conflict(vec!["long.txt".to_owned()])
    );
}
