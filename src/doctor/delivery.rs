//! Where the work goes, and where it is pushed.

use super::Findings;
use crate::config::{Delivery, Push};
use crate::git::Repo;
use crate::paths::Paths;
use crate::runner::{self, RunOptions};

/// Where the work goes: the base or a pull request (`gh` installed and
/// logged in), and where it is pushed (the remote must exist).
pub(super) fn delivery(
    found: &mut Findings,
    paths: &Paths,
    options: &RunOptions,
    repo: Option<&Repo>,
    has_task: bool,
) {
    let settings = &options.settings;
    let pr = settings.delivery == Delivery::Pr;
    let base = repo.map_or("the base branch", Repo::base);
    if pr {
        match crate::delivery::gh::Gh::new(paths.root()).preflight_once() {
            Ok(()) if !settings.watch.prds.is_empty() => found.ok(
                "delivery",
                &format!("pr: gh is installed and logged in; each watched PRD is worked on a branch ralph/<prd-name> with its own pull request into {base}, other tasks on ralph/<name>"),
            ),
            Ok(()) => found.ok(
                "delivery",
                &format!("pr: gh is installed and logged in; the run works on a branch ralph/<name> and opens a pull request into {base}"),
            ),
            Err(failure) => found.error(
                "delivery",
                &format!("pr: {failure}"),
                "fix that, or set delivery: local in config/ralph.yaml to keep the work on the base",
            ),
        }
    } else {
        found.ok(
            "delivery",
            &format!("local: each finished task is squash-merged into {base}"),
        );
    }
    if let Some(key) = settings.git.ssh_key_file(paths.project()) {
        match crate::git::check_key(&key) {
            Ok(()) => found.ok(
                "push",
                &format!(
                    "git.ssh_key: {} is a private key you can read; ralph's pushes use it alone",
                    key.display()
                ),
            ),
            Err(err) => found.failed("push", err),
        }
    }
    if settings.remote.enabled {
        // The shared queue lands each task on the remote as it is made;
        // `remote:` checks that the remote takes it.
        found.ok(
            "push",
            "the queue is shared (remote.enabled): each landing is pushed to the base's remote as it is made, whatever git.push says (docs/SCALE.md)",
        );
        return;
    }
    if settings.git.push == Push::Never && !pr {
        found.ok(
            "push",
            "never (git.push): the work stays in this repository",
        );
        return;
    }
    let Some(repo) = repo else {
        return;
    };
    // Where the run pushes (`Repo::push_target`): `git.remote` when set,
    // else the base's upstream remote, else origin; the pull request's new
    // branch has no upstream.
    let remote = match (&settings.git.remote, pr) {
        (Some(remote), _) => remote.clone(),
        (None, false) => repo.push_target(repo.base(), None).remote,
        (None, true) => "origin".to_owned(),
    };
    if !repo.has_remote(&remote) {
        found.failed(
            "push",
            crate::git::Error::NoRemote {
                remote,
                pull_request: pr,
            },
        );
        return;
    }
    let preview = if pr && !has_task {
        None
    } else {
        match found.check("push", runner::deliver::preview(paths, options)) {
            Some(preview) => preview.push,
            None => return,
        }
    };
    let message = match preview {
        Some(push) => push,
        None => format!("the pull request's branch to {remote}, once a task names it"),
    };
    found.ok(
        "push",
        &format!("{message}, through your git (its credentials and hooks)"),
    );
}

/// Watching a branch for PRDs, when `watch.prds` is set: what is
/// watched, the remote it is fetched from, which must exist, and what
/// stopped the last look from bringing the base forward. Nothing is
/// fetched.
pub(super) fn watch(
    found: &mut Findings,
    paths: &crate::paths::Paths,
    settings: &crate::config::Settings,
    repo: Option<&Repo>,
) {
    let watch = &settings.watch;
    if watch.prds.is_empty() {
        return;
    }
    let watched = crate::runner::watch::Watched::load(paths);
    if let Some(stuck) = watched.ok().and_then(|watched| watched.stuck) {
        found.error(
            "watch",
            &format!("stuck since {}: {}", stuck.since, stuck.problem),
            &stuck.fix,
        );
    }
    let branch = (watch.branch.clone())
        .or_else(|| repo.map(|repo| repo.base().to_owned()))
        .unwrap_or_else(|| "the base branch".to_owned());
    let globs = watch.prds.join(", ");
    match (&watch.remote, repo) {
        (Some(remote), Some(repo)) if !repo.has_remote(remote) => found.error(
            "watch",
            &format!("watch.remote: there is no remote {remote:?}"),
            &format!("add it (`git remote add {remote} URL`), or set watch.remote to one `git remote -v` lists"),
        ),
        (Some(remote), _) => found.ok(
            "watch",
            &format!("{globs} on {remote}/{branch}, fetched at each look; the base, when it is that branch, is fast-forwarded to it when the run is idle"),
        ),
        (None, _) => found.ok("watch", &format!("{globs} on {branch}, at each look")),
    }
    if watch.max_prd_bytes == 0 {
        found.warning(
            "watch",
            "watch.max_prd_bytes is 0: every PRD is refused as too large",
            "set it to the largest PRD to plan, in bytes (262144 by default)",
        );
    }
}

/// With `remote.enabled`: the base has an upstream, and its remote takes
/// ralph's refs: a probe ref is created where none may exist, then
/// deleted with a lease on it, as claims are (docs/SCALE.md).
pub(super) fn shared(
    found: &mut Findings,
    settings: &crate::config::Settings,
    repo: Option<&Repo>,
) {
    use crate::git::{DEADLINE, Lease, Push, Pushed, RefUpdate};
    if !settings.remote.enabled {
        return;
    }
    let Some(repo) = repo else {
        return;
    };
    if settings.delivery == Delivery::Pr {
        found.error(
            "remote",
            "remote.enabled with delivery: pr: a shared queue lands on the base",
            "set delivery: local, or remote.enabled: false",
        );
        return;
    }
    let Some(upstream) = repo.upstream(repo.base()) else {
        found.error(
            "remote",
            &format!(
                "remote.enabled, but the base {} has no upstream to share the queue through",
                repo.base()
            ),
            &format!("set one: `git push -u origin {}`", repo.base()),
        );
        return;
    };
    let probe = format!("refs/ralph/probe/doctor-{}", std::process::id());
    let commit = match repo.claim_commit("ralph doctor: a probe of the remote\n", None) {
        Ok(commit) => commit,
        Err(err) => return found.failed("remote", err),
    };
    let create = RefUpdate::new(probe.clone(), Some(commit.clone()), Lease::Absent);
    let delete = RefUpdate::new(probe.clone(), None, Lease::At(commit));
    let fix = "a remote that refuses refs/ralph/* cannot share a queue (docs/SCALE.md says how to check a host); use another remote, or remote.enabled: false";
    let remote = upstream.remote.as_str();
    let push = |update| repo.push(remote, &[update], Push::AtomicUnverified, DEADLINE);
    let pushed = push(create).and_then(|created| match created {
        Pushed::Accepted { .. } => push(delete).map(|deleted| (true, deleted)),
        other => Ok((false, other)),
    });
    match pushed {
        Ok((true, Pushed::Accepted { .. })) => found.ok(
            "remote",
            &format!("{upstream} takes ralph's refs (a probe under refs/ralph/ was created and deleted with leases): the queue is shared through it"),
        ),
        Ok((created, Pushed::Rejected { refs, .. })) => {
            let said = refs.iter().map(|(_, why)| why.as_str()).collect::<Vec<_>>().join("; ");
            let what = if created { "deleting" } else { "creating" };
            found.error("remote", &format!("{} refused {what} a ref under refs/ralph/: {said}", upstream.remote), fix);
        }
        Ok((_, Pushed::Unreachable(said))) => found.error(
            "remote",
            &format!("{} cannot be reached: {}", upstream.remote, crate::redact::redact(crate::git::reason(&said))),
            "check it with `git fetch`",
        ),
        Ok((false, Pushed::Accepted { .. })) => {}
        Err(err) => found.failed("remote", err),
    }
}
