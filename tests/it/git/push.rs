//! Pushing: a push that does not finish is stopped, and says so.

use std::time::Duration;

use ralph::git::{Lease, Push, Pushed, RefUpdate};

use super::*;

#[test]
fn a_push_that_does_not_finish_in_time_is_stopped_and_said() {
    let repo = GitRepo::new();
    let remote = repo.sibling("remote.git");
    let remote_path = remote.to_str().unwrap();
    repo.git(&["init", "-q", "--bare", "-b", "main", remote_path]);
    // The remote never answers in time: its pre-receive hook sleeps.
    let hook = remote.join("hooks/pre-receive");
    std::fs::write(&hook, "#!/bin/sh\nsleep 20\n").unwrap();
    let mut mode = std::fs::metadata(&hook).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o755);
    std::fs::set_permissions(&hook, mode).unwrap();
    repo.git(&["remote", "add", "origin", remote_path]);
    let repo = open(&repo);
    let target = repo.push_target("main", None);
    let main = RefUpdate::new(
        "refs/heads/main",
        Some("refs/heads/main".into()),
        Lease::None,
    );
    let pushed = repo
        .push(&target.remote, &[main], Push::Plain, Duration::from_secs(1))
        .unwrap();
    assert_eq!(
        pushed,
        Pushed::Unreachable("git push did not finish in 1s".to_owned())
    );
}
