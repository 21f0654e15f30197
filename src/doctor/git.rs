//! The repository as `ralph run`'s preflight finds it, its hooks and its
//! signing.

use super::Findings;
use crate::config::Settings;
use crate::git::{self, COMMIT_HOOKS, Head, Repo};
use crate::paths::Paths;
use crate::runner;
use crate::state::State;

/// The repository as the run's preflight finds it. `None` when it cannot
/// be opened (the finding says why).
pub(super) fn git(
    found: &mut Findings,
    paths: &Paths,
    settings: &Settings,
    state: &State,
    live: bool,
) -> Option<Repo> {
    let repo = runner::worker::open_repo(paths, settings, state.base.as_deref());
    let Some(repo) = found.check("git", repo) else {
        // No base (a detached HEAD, a bad branch_prefix): what needs none
        // is still checked.
        let options = git::Options {
            base_branch: None,
            branch_prefix: Settings::default().branch_prefix,
            ssh_key: None,
        };
        if let Ok(repo) = Repo::open_without_base(paths, &options) {
            identity(found, &repo);
            hooks(found, &repo);
            signing(found, &repo);
        }
        return None;
    };
    let head = repo.head().ok();
    let base = repo.base();
    let why = match (&settings.base_branch, &head) {
        (Some(_), _) => "base_branch in config/ralph.yaml".to_owned(),
        (None, Some(Head::Branch(on))) if on == base => "the branch checked out".to_owned(),
        (None, Some(Head::Branch(on))) => {
            format!("the one the last run recorded; HEAD is on its task branch {on}")
        }
        (None, _) => "the one the last run recorded".to_owned(),
    };
    let resumed = state.current_task.as_deref().and_then(|task| {
        let branch = state.tasks.get(task)?.branch.as_deref()?;
        Some((task, branch))
    });
    // A live run's working tree is its own to change: only what does not
    // look at it is checked.
    let problems = if live {
        Vec::new()
    } else {
        repo.preflight_problems(resumed.map(|(_, branch)| branch))
    };
    let detached = match &head {
        Some(Head::Detached(at))
            if !problems
                .iter()
                .any(|problem| matches!(problem, git::Error::DetachedHead { .. })) =>
        {
            format!(
                "; HEAD is detached at {}, and the run checks {base} out first",
                at.short()
            )
        }
        _ => String::new(),
    };
    found.ok("git", &format!("base branch {base} ({why}){detached}"));
    if !live {
        let resuming = match (resumed, &head) {
            (Some((task, branch)), Some(Head::Branch(on))) if on == branch => {
                found.ok(
                    "git",
                    &format!("HEAD is on {branch}, where a stopped run left task {task}: the next run commits what is uncommitted there and resumes it"),
                );
                true
            }
            _ => false,
        };
        if problems.is_empty() {
            found.ok(
                "git",
                if resuming {
                    "ready: no merge or rebase under way"
                } else {
                    "ready: no merge or rebase under way, the working tree clean apart from the queue files"
                },
            );
        }
        for problem in problems {
            found.failed("git", problem);
        }
        for lock in repo.lock_files() {
            found.warning(
                "git",
                &format!("{} exists: a git command holds it, or one died holding it", lock.display()),
                "wait for that command to finish; `ralph run` removes the lock at its start when no git process works in the repository",
            );
        }
    }
    if settings.workers.is_some() {
        found.check("git", repo.check_queue_on_base());
    }
    identity(found, &repo);
    for (file, rule) in repo.ignored_queue_files() {
        let (message, fix) = crate::git::ignored_queue_file(&file, &rule);
        found.warning("git", &message, &fix);
    }
    Some(repo)
}

/// Who ralph's commits are by.
fn identity(found: &mut Findings, repo: &Repo) {
    let identity = repo.identity();
    if identity.fallback {
        found.warning(
            "git",
            &format!(
                "user.name or user.email is not configured, so ralph commits as {} <{}>",
                identity.name, identity.email
            ),
            "set them with `git config user.name ...` and `git config user.email ...`",
        );
    } else {
        found.ok(
            "git",
            &format!("ralph commits as {} <{}>", identity.name, identity.email),
        );
    }
}

/// The repository's hooks, and which of them ralph's git commands run.
pub(super) fn hooks(found: &mut Findings, repo: &Repo) {
    let hooks = repo.hooks();
    if hooks.names.is_empty() {
        found.ok("hooks", &format!("none in {}", hooks.place));
        return;
    }
    let (commit, other): (Vec<String>, Vec<String>) = hooks
        .names
        .iter()
        .cloned()
        .partition(|name| COMMIT_HOOKS.contains(&name.as_str()));
    let (push, other): (Vec<String>, Vec<String>) =
        other.into_iter().partition(|name| name == "pre-push");
    let mut effects = Vec::new();
    if !commit.is_empty() {
        effects.push(format!(
            "ralph's commits on the base run {} (a refusal sends the task back to the agent)",
            commit.join(", ")
        ));
    }
    if !push.is_empty() {
        effects.push("its pushes run pre-push".to_owned());
    }
    if !other.is_empty() {
        effects.push(format!(
            "{} never run (ralph checks out and merges without git's commands)",
            other.join(", ")
        ));
    }
    found.ok(
        "hooks",
        &format!(
            "in effect: {} ({}); {}",
            hooks.names.join(", "),
            hooks.place,
            effects.join("; ")
        ),
    );
}

/// Whether commits are signed, and whether git can sign one.
pub(super) fn signing(found: &mut Findings, repo: &Repo) {
    match repo.signing() {
        Ok(None) => found.ok("signing", "off (commit.gpgsign is not set)"),
        Ok(Some(signing)) => {
            let key = signing
                .key
                .map(|key| format!(", user.signingkey {key}"))
                .unwrap_or_default();
            found.ok(
                "signing",
                &format!(
                    "on (commit.gpgsign, gpg.format {}{key}): a trial signature worked, and ralph's commits go through git to be signed",
                    signing.format
                ),
            );
        }
        Err(err) => found.failed("signing", err),
    }
}
