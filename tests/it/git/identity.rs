//! Who ralph commits as.

use super::*;

#[test]
fn the_identity_comes_from_the_repository_config() {
    let repo = GitRepo::new();
    let identity = Repo::open(&ralph::paths::Paths::new(repo.path()), &Options::default())
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
    let git = Repo::open(&ralph::paths::Paths::new(repo.path()), &Options::default()).unwrap();
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
