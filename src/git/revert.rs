//! What git did to the queue files under the loop: whether their bytes are
//! a version git holds (a commit's or a stash's), and the stashes an agent
//! left. An agent's `git reset --hard`, `git stash` or `git checkout -- .`
//! puts a queue file back to such a version; a person's hand edit is none.

use super::error::{Context, Result};
use super::{CommitId, Repo};

/// How far back the history is searched for a queue file's version.
const HISTORY_LIMIT: usize = 200;

/// One entry of the stash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stash {
    /// The stash commit.
    pub id: CommitId,
    /// Its reflog message (`WIP on task/A-x: 1a2b3c4 subject`).
    pub message: String,
}

impl Repo {
    /// Where git holds `bytes` as the queue file `name` (`tasks.jsonl` or
    /// `tasks-done.jsonl`): in one of the last commits of `since`'s history
    /// (`commit 1a2b3c4`), or else in a stash entry (`stash@{0}`), its staged or
    /// its untracked files included. `None` when no version matches.
    pub fn queue_file_version(&self, name: &str, bytes: &[u8], since: &CommitId) -> Option<String> {
        let rel = self
            .queue
            .iter()
            .map(|file| file.rel.as_str())
            .find(|rel| rel.rsplit('/').next() == Some(name))?;
        let blob = git2::Oid::hash_object(git2::ObjectType::Blob, bytes).ok()?;
        let holds = |commit: &git2::Commit<'_>| {
            commit
                .tree()
                .ok()
                .and_then(|tree| tree.get_path(super::git2_path(rel)).ok())
                .is_some_and(|entry| entry.id() == blob)
        };
        let mut walk = self.git.revwalk().ok()?;
        walk.push(git2::Oid::from_str(since.as_str()).ok()?).ok()?;
        let commit = walk
            .take(HISTORY_LIMIT)
            .filter_map(|oid| self.git.find_commit(oid.ok()?).ok())
            .find(|commit| holds(commit));
        if let Some(commit) = commit {
            return Some(format!("commit {}", CommitId::from(commit.id()).short()));
        }
        let stashes = self.git.reflog("refs/stash").ok()?;
        // The stash's tree, then its index and untracked-files commits.
        stashes
            .iter()
            .position(|entry| {
                self.git.find_commit(entry.id_new()).is_ok_and(|stash| {
                    holds(&stash) || stash.parents().skip(1).any(|parent| holds(&parent))
                })
            })
            .map(|n| format!("stash@{{{n}}}"))
    }

    /// Whether a branch that was at `before` went back to `after`, one of
    /// its ancestors (`git reset --hard HEAD~1`).
    pub fn went_back(&self, before: &CommitId, after: &CommitId) -> bool {
        let (Ok(before), Ok(after)) = (
            git2::Oid::from_str(before.as_str()),
            git2::Oid::from_str(after.as_str()),
        ) else {
            return false;
        };
        before != after && self.git.graph_descendant_of(before, after).unwrap_or(false)
    }

    /// The stash's entries, newest (`stash@{0}`) first.
    pub fn stashes(&self) -> Result<Vec<Stash>> {
        let Ok(reflog) = self.git.reflog("refs/stash") else {
            return Ok(Vec::new());
        };
        reflog
            .iter()
            .map(|entry| {
                self.git
                    .find_commit(entry.id_new())
                    .doing("read a stash entry")
                    .map(|commit| Stash {
                        id: commit.id().into(),
                        message: String::from_utf8_lossy(entry.message_bytes().unwrap_or_default())
                            .into_owned(),
                    })
            })
            .collect()
    }
}
