//! What sharing one queue through the git remote asks of git
//! (docs/SCALE.md), besides the fetch and the push of `transport.rs`:
//! what the fetch brings of every machine's claims, claim commits, and
//! moving the project's checkout to another commit of the base while the
//! live queue files on disk stay as they are.

use super::Repo;
use super::error::{Context, Result};

/// Where the remote's claims are kept locally after a fetch.
pub const SEEN_CLAIMS: &str = "refs/ralph/seen/claims/";

/// Where the remote's work-in-progress tips are kept locally after a
/// fetch.
pub const SEEN_WIP: &str = "refs/ralph/seen/wip/";

/// The local ref keeping `what`'s landing (a task's, or the base's for a
/// bookkeeping commit) until it is pushed; with `""`, their folder.
pub fn landing_ref(what: &str) -> String {
    format!("refs/ralph/landing/{what}")
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

    /// The local refs under `prefix` (the landings, [`landing_ref`]`("")`),
    /// by the name after it.
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

    /// The queue files' bytes at `commit`: `tasks.jsonl`, then
    /// `tasks-done.jsonl` (empty when it has none).
    pub fn queue_files_at(&self, commit: &str) -> Result<(Vec<u8>, Vec<u8>)> {
        Ok((
            self.file_at(commit, &self.queue_file(crate::paths::TASKS_FILE))?,
            self.file_at(commit, &self.queue_file(crate::paths::DONE_FILE))?,
        ))
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
}
