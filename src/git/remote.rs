//! What sharing one queue through the git remote asks of git
//! (docs/SCALE.md): fetching the base with every machine's claims,
//! atomic pushes with leases read from git's porcelain lines, claim
//! commits, and moving the project's checkout to another commit of the
//! base while the live queue files on disk stay as they are.

use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use super::Repo;
use super::error::{Context, Error, Result};

/// Where the remote's claims are kept locally after a fetch.
pub const SEEN_CLAIMS: &str = "refs/ralph/seen/claims/";

/// Where the remote's work-in-progress tips are kept locally after a
/// fetch.
pub const SEEN_WIP: &str = "refs/ralph/seen/wip/";

/// Longest a fetch or push to the shared remote may take.
pub const REMOTE_TIMEOUT: Duration = Duration::from_secs(120);

/// What a push may expect of a remote ref before it changes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lease {
    /// Nothing: a plain update.
    None,
    /// The ref must not exist.
    Absent,
    /// The ref must hold this commit.
    At(String),
    /// Whatever it holds, it is replaced (a ref of ralph's own, never a
    /// branch).
    Replace,
}

/// One ref an atomic push changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefUpdate {
    /// The remote ref (`refs/heads/main`, `refs/ralph/claims/A`).
    pub name: String,
    /// The commit it gets; `None` deletes it.
    pub to: Option<String>,
    /// What it must hold first.
    pub lease: Lease,
}

impl RefUpdate {
    /// Ref `name` set to `to` (`None` deletes it) if it holds `lease`.
    pub fn new(name: impl Into<String>, to: Option<String>, lease: Lease) -> RefUpdate {
        RefUpdate {
            name: name.into(),
            to,
            lease,
        }
    }
}

/// How an atomic push went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pushed {
    /// Every ref was changed.
    Accepted,
    /// The remote refused: nothing was changed. The refs it refused for
    /// their own sake (a lease, a hook), each with git's reason; the
    /// others only failed with them.
    Rejected(Vec<(String, String)>),
    /// The remote could not be reached (or git did not finish): what git
    /// said.
    Unreachable(String),
}

/// A claim as the remote holds it, read from its commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    /// The task id.
    pub id: String,
    /// The claim's commit (its latest beat).
    pub commit: String,
    /// The holder's machine id.
    pub machine: String,
    /// The holder's host name, for people.
    pub host: String,
    /// Its beat count.
    pub beat: u64,
    /// The holder's heartbeat as written (`60s`, `200ms`).
    pub interval: String,
    /// The holder's worker number.
    pub worker: String,
    /// When the last beat was written, by the holder's clock (for
    /// people; never compared).
    pub written: String,
}

impl Repo {
    /// Fetches the base from `remote` into `refs/remotes/<remote>/<base>`
    /// and every claim into `refs/ralph/seen/claims/` (pruned), through
    /// the user's git; `Err` text is what git said.
    pub fn fetch_shared(
        &self,
        remote: &str,
        branch: &str,
    ) -> Result<std::result::Result<(), String>> {
        let base = format!("+refs/heads/{branch}:refs/remotes/{remote}/{branch}");
        let claims = format!("+refs/ralph/claims/*:{SEEN_CLAIMS}*");
        let wip = format!("+refs/ralph/wip/*:{SEEN_WIP}*");
        let args = [
            "fetch",
            "--prune",
            "--no-tags",
            "--quiet",
            remote,
            &base,
            &claims,
            &wip,
        ];
        let output = self.remote_git("fetch", &args, "fetch the shared queue", REMOTE_TIMEOUT)?;
        Ok(match output {
            Some(output) if output.status.success() => Ok(()),
            Some(output) => Err(said(&output)),
            None => Err(format!(
                "git fetch did not finish in {}s",
                REMOTE_TIMEOUT.as_secs()
            )),
        })
    }

    /// Pushes `updates` to `remote` in one atomic push (all or nothing),
    /// each with its lease. `verify` runs the `pre-push` hook (pushes of
    /// the base); claims skip it (`--no-verify`).
    pub fn push_atomic(&self, remote: &str, updates: &[RefUpdate], verify: bool) -> Result<Pushed> {
        let mut args: Vec<String> = ["push", "--atomic", "--porcelain"]
            .map(str::to_owned)
            .to_vec();
        if !verify {
            args.push("--no-verify".into());
        }
        for update in updates {
            match &update.lease {
                Lease::None | Lease::Replace => {}
                Lease::Absent => args.push(format!("--force-with-lease={}:", update.name)),
                Lease::At(commit) => {
                    args.push(format!("--force-with-lease={}:{commit}", update.name));
                }
            }
        }
        args.push(remote.to_owned());
        for update in updates {
            let force = if update.lease == Lease::Replace {
                "+"
            } else {
                ""
            };
            args.push(format!(
                "{force}{}:{}",
                update.to.as_deref().unwrap_or(""),
                update.name
            ));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let Some(output) =
            self.remote_git("push", &args, "push to the shared remote", REMOTE_TIMEOUT)?
        else {
            return Ok(Pushed::Unreachable(format!(
                "git push did not finish in {}s",
                REMOTE_TIMEOUT.as_secs()
            )));
        };
        Ok(read_porcelain(
            &String::from_utf8_lossy(&output.stdout),
            output.status.success(),
            said(&output),
        ))
    }

    /// Writes a claim commit (the empty tree, `parent` the previous beat)
    /// with `message`; never signed, no hook (it never reaches a branch).
    pub fn claim_commit(&self, message: &str, parent: Option<&str>) -> Result<String> {
        let tree = self.git_ok(&["mktree"], b"", "write the empty tree of a claim")?;
        let tree = String::from_utf8_lossy(&tree).trim().to_owned();
        let mut args = vec!["-c", "commit.gpgSign=false", "commit-tree", &tree];
        if let Some(parent) = parent {
            args.extend(["-p", parent]);
        }
        let commit = self.git_ok(&args, message.as_bytes(), "write a claim commit")?;
        Ok(String::from_utf8_lossy(&commit).trim().to_owned())
    }

    /// The claims as the last fetch saw them, by task id.
    pub fn seen_claims(&self) -> Result<Vec<Claim>> {
        let mut claims = Vec::new();
        for (id, target) in self.refs_under(SEEN_CLAIMS)? {
            let Ok(commit) = git2::Oid::from_str(&target).and_then(|oid| self.git.find_commit(oid))
            else {
                continue;
            };
            let message = commit.message().unwrap_or_default();
            let field = |key: &str| {
                message
                    .lines()
                    .find_map(|line| line.strip_prefix(key).map(|v| v.trim().to_owned()))
                    .unwrap_or_default()
            };
            let (machine, host) = match field("Machine:").split_once(' ') {
                Some((machine, host)) => (
                    machine.to_owned(),
                    host.trim_matches(|c| c == '(' || c == ')').to_owned(),
                ),
                None => (field("Machine:"), String::new()),
            };
            claims.push(Claim {
                id,
                commit: target,
                machine,
                host,
                beat: field("Beat:").parse().unwrap_or(0),
                interval: field("Interval:"),
                worker: field("Worker:"),
                written: chrono::DateTime::from_timestamp(commit.time().seconds(), 0)
                    .map(crate::clock::stamp)
                    .unwrap_or_default(),
            });
        }
        Ok(claims)
    }

    /// The local refs under `prefix` (`refs/ralph/landing/`), by the
    /// name after it.
    pub fn refs_under(&self, prefix: &str) -> Result<Vec<(String, String)>> {
        let action = "read ralph's refs";
        let mut found = Vec::new();
        for reference in self
            .git
            .references_glob(&format!("{prefix}*"))
            .doing(action)?
        {
            let reference = reference.doing(action)?;
            if let (Ok(name), Some(target)) = (reference.name(), reference.target()) {
                let name = name.strip_prefix(prefix).unwrap_or(name).to_owned();
                found.push((name, target.to_string()));
            }
        }
        Ok(found)
    }

    /// Whether commit `ancestor` is `commit` or in its history.
    pub fn descends_from(&self, commit: &str, ancestor: &str) -> Result<bool> {
        let action = "compare two commits of the base";
        let (a, c) = (
            git2::Oid::from_str(ancestor).doing(action)?,
            git2::Oid::from_str(commit).doing(action)?,
        );
        self.is_ancestor(a, c)
    }

    /// The whole message of `commit`.
    pub fn message_of(&self, commit: &str) -> Result<String> {
        let commit = self.find_commit(commit, "read a landing's message")?;
        Ok(String::from_utf8_lossy(commit.message_bytes()).into_owned())
    }

    /// The first parent of `commit`, if it has one.
    pub fn parent_of(&self, commit: &str) -> Option<String> {
        let commit = self
            .git
            .find_commit(git2::Oid::from_str(commit).ok()?)
            .ok()?;
        Some(commit.parent_id(0).ok()?.to_string())
    }

    /// The repository-relative path of queue file `name` (`tasks.jsonl`,
    /// `tasks-done.jsonl`): the project may be a folder of the checkout.
    pub fn queue_file(&self, name: &str) -> String {
        self.queue
            .iter()
            .find(|file| file.rel == name || file.rel.ends_with(&format!("/{name}")))
            .map_or_else(|| name.to_owned(), |file| file.rel.clone())
    }

    /// The bytes of `path` at `commit` (empty when it has none).
    pub fn file_at(&self, commit: &str, path: &str) -> Result<Vec<u8>> {
        let action = "read a queue file of the shared base";
        let tree = self.find_commit(commit, action)?.tree().doing(action)?;
        let Ok(entry) = tree.get_path(std::path::Path::new(path)) else {
            return Ok(Vec::new());
        };
        let blob = self.git.find_blob(entry.id()).doing(action)?;
        Ok(blob.content().to_vec())
    }

    /// Points local ref `name` at `commit` (`git update-ref`).
    pub fn set_ref(&self, name: &str, commit: &str) -> Result<()> {
        self.git_ok(&["update-ref", name, commit], b"", "move a ref of ralph's")?;
        Ok(())
    }

    /// Deletes local ref `name`, if it exists.
    pub fn delete_ref(&self, name: &str) -> Result<()> {
        if let Ok(mut reference) = self.git.find_reference(name) {
            reference.delete().doing("delete a ref of ralph's")?;
        }
        Ok(())
    }

    /// Moves the base, checked out in this working tree, to `target`
    /// (any commit: ahead, or back after a push the remote refused),
    /// through the user's git so filters apply. The queue files on disk
    /// are left as they are: they are the live queue, already merged with
    /// `target`'s. A path someone changed in the checkout stops the move
    /// (git's "not uptodate"), with nothing changed.
    pub fn move_base_to(&self, target: &str) -> Result<()> {
        let base_ref = format!("refs/heads/{}", self.base);
        let from = self.branch_tip(&self.base)?;
        if from.as_str() == target {
            return Ok(());
        }
        self.checkout_base()?;
        let action = "move the checkout to the shared base";
        // No queue write lands while the index holds other bytes.
        let _queue = self.lock_queue()?;
        let files: Vec<&str> = self.queue.iter().map(|file| file.rel.as_str()).collect();
        // The index takes the target's queue files, so git sees nothing
        // of them to check out, and leaves the disk's bytes alone.
        for file in &files {
            let spec = format!("{target}:{file}");
            match self.git.revparse_single(&spec) {
                Ok(blob) => {
                    let info = format!("100644,{},{file}", blob.id());
                    self.git_ok(
                        &["update-index", "--add", "--cacheinfo", &info],
                        b"",
                        action,
                    )?;
                }
                Err(_) => {
                    self.git_ok(&["update-index", "--force-remove", file], b"", action)?;
                }
            }
        }
        let moved = self.git_ok(
            &["read-tree", "-m", "-u", from.as_str(), target],
            b"",
            action,
        );
        if let Err(err) = moved {
            // Back as it was: HEAD's queue files in the index.
            let mut reset = vec!["reset", "--quiet", "--"];
            reset.extend(&files);
            let _ = self.git_ok(&reset, b"", action);
            return Err(err);
        }
        self.git_ok(
            &["update-ref", &base_ref, target, from.as_str()],
            b"",
            action,
        )?;
        Ok(())
    }

    /// Runs `git args` against a remote (the user's credentials, the
    /// run's ssh key), in C's locale (its porcelain lines are read),
    /// timed as `op`, stopped after `timeout`: `None` then.
    pub(super) fn remote_git(
        &self,
        op: &'static str,
        args: &[&str],
        action: &str,
        timeout: Duration,
    ) -> Result<Option<Output>> {
        let _timed = super::timing::timed(op, action);
        let mut command = self.remote_command()?;
        // The porcelain lines are parsed: git's own words.
        command
            .env("LC_ALL", "C")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let failed = |source: std::io::Error| Error::Command {
            action: action.to_owned(),
            said: format!("cannot run git: {source}"),
        };
        let mut child = command.spawn().map_err(failed)?;
        let started = Instant::now();
        while child.try_wait().map_err(failed)?.is_none() {
            if started.elapsed() >= timeout {
                let _ = child.kill();
                let _ = child.wait();
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        child.wait_with_output().map(Some).map_err(failed)
    }
}

/// What git said, its first line: the one that says why (`ssh: connect
/// to host ...`, `fatal: ...`), without the advice git adds.
fn said(output: &Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or_default()
        .to_owned()
}

/// Whether a refused ref's summary says it failed only with the others
/// of an atomic push: the client's `(atomic push failed)`, the server's
/// `(atomic transaction failed)` when another ref's update lost its race.
fn collateral(summary: &str) -> bool {
    summary.contains("atomic push failed") || summary.contains("atomic transaction failed")
}

/// Reads `git push --porcelain` (`<flag>\t<from>:<to>\t<summary>` per
/// ref, `!` refused). With `--atomic`, the refs that failed only because
/// another did say `(atomic push failed)`; the others name their reason.
/// No ref line at all: the remote was not reached.
fn read_porcelain(stdout: &str, success: bool, said: String) -> Pushed {
    let lines: Vec<(&str, &str, &str)> = stdout
        .lines()
        .filter_map(|line| {
            let mut fields = line.splitn(3, '\t');
            let flag = fields.next()?;
            let refs = fields.next()?;
            let summary = fields.next().unwrap_or("");
            (flag.len() == 1).then_some((flag, refs, summary))
        })
        .collect();
    if lines.is_empty() {
        return Pushed::Unreachable(said);
    }
    let refused: Vec<(String, String)> = lines
        .iter()
        .filter(|(flag, _, summary)| *flag == "!" && !collateral(summary))
        .map(|(_, refs, summary)| {
            let name = refs.rsplit(':').next().unwrap_or(refs);
            (name.to_owned(), (*summary).to_owned())
        })
        .collect();
    if success && refused.is_empty() && lines.iter().all(|(flag, _, _)| *flag != "!") {
        return Pushed::Accepted;
    }
    if refused.is_empty() {
        // Every ref "failed with the others": a hook refused the whole.
        return Pushed::Rejected(vec![(String::new(), said)]);
    }
    Pushed::Rejected(refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn porcelain_lines_say_which_ref_refused_and_why() {
        let accepted = "To ../remote.git\n*\tabc:refs/ralph/claims/A\t[new reference]\nDone\n";
        assert_eq!(
            read_porcelain(accepted, true, String::new()),
            Pushed::Accepted
        );
        let raced = "To ../remote.git\n!\trefs/heads/main:refs/heads/main\t[rejected] (stale info)\n!\tabc:refs/ralph/tasks/A\t[rejected] (atomic push failed)\nDone\n";
        assert_eq!(
            read_porcelain(raced, false, "error".into()),
            Pushed::Rejected(vec![(
                "refs/heads/main".into(),
                "[rejected] (stale info)".into()
            )])
        );
        let lost = "To x\n!\tabc:refs/ralph/claims/A\t[remote rejected] (cannot lock ref 'refs/ralph/claims/A': reference already exists)\nDone\n";
        assert!(matches!(
            read_porcelain(lost, false, String::new()),
            Pushed::Rejected(refs) if refs[0].0 == "refs/ralph/claims/A"
        ));
        // The server's compare-and-swap lost: every ref says so alike.
        let raced = "To x\n!\tabc:refs/heads/main\t[remote rejected] (atomic transaction failed)\n!\tdef:refs/ralph/claims/A\t[remote rejected] (atomic transaction failed)\nDone\n";
        assert!(matches!(
            read_porcelain(raced, false, "error".into()),
            Pushed::Rejected(refs) if refs.len() == 1 && refs[0].0.is_empty()
        ));
        assert_eq!(
            read_porcelain(
                "",
                false,
                "fatal: Could not read from remote repository.".into()
            ),
            Pushed::Unreachable("fatal: Could not read from remote repository.".into())
        );
    }
}
