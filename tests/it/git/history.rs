//! What the base gained over a run, for the final review's prompt.

use super::*;

#[test]
fn base_changes_since_counts_lines_renames_and_binaries_without_the_queue() {
    let repo = project();
    repo.write("src/old.rs", "one\ntwo\nthree\nfour\nfive\nsix\n");
    repo.write("gone.txt", "a\nb\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "before the run"]);
    let start = repo.git(&["rev-parse", "HEAD"]);
    let git = open(&repo);
    assert!(git.base_descends_from(&start));
    assert_eq!(
        git.base_changes_since(&start).unwrap(),
        ralph::git::BaseChanges::default()
    );

    // A rename with one line changed, a deletion, a binary file, two new
    // lines, and the queue files changed: what the run merged.
    repo.git(&["mv", "src/old.rs", "src/new.rs"]);
    repo.write("src/new.rs", "one\ntwo\nTHREE\nfour\nfive\nsix\n");
    repo.git(&["rm", "-q", "gone.txt"]);
    repo.write("logo.png", "\0\u{1}\u{2}binary");
    repo.write("README.md", "# test\nmore\nand more\n");
    repo.write("tasks.jsonl", "");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "[A] first task"]);
    repo.commit_file("notes.md", "x\n", "[B] second task");

    let changes = git.base_changes_since(&start).unwrap();
    let subjects: Vec<&str> = changes.commits.iter().map(|c| c.subject.as_str()).collect();
    assert_eq!(subjects, ["[A] first task", "[B] second task"]);
    let files: Vec<(&str, usize, usize, bool)> = changes
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.insertions, f.deletions, f.binary))
        .collect();
    assert_eq!(
        files,
        [
            ("README.md", 2, 0, false),
            ("gone.txt", 0, 2, false),
            ("logo.png", 0, 0, true),
            ("notes.md", 1, 0, false),
            ("src/new.rs", 1, 1, false),
        ]
    );
    // A base reset behind the start no longer descends from it.
    repo.git(&["reset", "-q", "--hard", "HEAD~3"]);
    assert!(!git.base_descends_from(&start));
    assert!(!git.base_descends_from("not a commit"));
}

#[test]
fn the_trailers_the_base_lacks_are_found_in_one_walk_within_the_limit() {
    let repo = project();
    repo.git(&[
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "[A] first\n\nCompletes: A.1\nCompletes: A",
    ]);
    repo.commit_file("b.txt", "b\n", "[B] second\n\nCompletes: B");
    let git = open(&repo);
    let wanted: Vec<String> = [
        "Completes: A",
        "Completes: C",
        "Completes: B",
        "Completes: A.1",
    ]
    .map(str::to_owned)
    .to_vec();
    assert_eq!(
        git.base_lacks_trailers(&wanted, 1000).unwrap(),
        ["Completes: C"]
    );
    // Only the last commit is looked at: A's trailers are out of reach.
    assert_eq!(
        git.base_lacks_trailers(&wanted, 1).unwrap(),
        ["Completes: A", "Completes: C", "Completes: A.1"]
    );
    assert!(git.base_has_trailer("Completes: B", 1).unwrap());
    assert!(!git.base_has_trailer("Completes: A.", 1000).unwrap());
}
