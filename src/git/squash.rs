//! One squash commit per task on the base branch, the bookkeeping commit
//! of the queue files, and the squash message format.

use git2::{Index, Oid};

use super::error::{Context, Result};
use super::{Clean, CommitId, Head, Repo, WIP_SUBJECT_PREFIX};

/// What merging a task branch into the base would give, without doing it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SquashPreview {
    /// It merges cleanly and changes something.
    Clean,
    /// It merges cleanly but changes nothing apart from the queue files.
    Empty,
    /// It conflicts on these paths.
    Conflict(Vec<String>),
}

/// What [`Repo::squash_into_base`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Squash {
    /// One commit landed on the base and the branch is gone.
    Merged(Merged),
    /// Nothing to merge apart from the queue files: nothing was done, the
    /// task branch stays checked out, and the caller decides.
    Empty,
    /// The merge conflicts on these paths: nothing was committed, the base
    /// is untouched and the task branch is checked out.
    Conflict(Vec<String>),
    /// A hook (`pre-commit`, `commit-msg`) refused the commit; what it
    /// printed. Nothing was committed, the base is untouched and the task
    /// branch is checked out with its work.
    Rejected(String),
}

/// A task branch squashed into the base.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Merged {
    /// The squash commit on the base.
    pub commit: CommitId,
    /// The branch's tip, kept under `preserved_ref`.
    pub tip: CommitId,
    /// `refs/ralph/tasks/<id>`.
    pub preserved_ref: String,
}

/// The task id and title a squash commit's subject names (`[A.1] title`,
/// or `[A.1]` for a task without a title), as [`squash_message`] writes
/// it; `None` for any other commit.
pub fn squash_subject(subject: &str) -> Option<(&str, &str)> {
    let (id, title) = subject.strip_prefix('[')?.split_once(']')?;
    let title = match title {
        "" => "",
        title => title.strip_prefix(' ')?,
    };
    (!id.is_empty() && !id.contains(' ')).then_some((id, title))
}

/// The squash commit's message (docs/DESIGN.md section 6): the subject
/// `[<id>] <title>`, the branch's commit subjects as `- ` bullets (ralph's
/// own wip commits left out), then the `trailers`, a line each:
/// `Completes: <id>` for each task the commit finishes (a parent archived
/// with its last child), or `Split-into:` when a task became a container.
/// The title and the subjects are one line each, at most
/// [`crate::text::TITLE_CHARS`] characters; what the agent wrote (title,
/// subjects, the notes among the trailers) goes onto the base, so secrets
/// are masked in all of it.
pub fn squash_message(id: &str, title: &str, subjects: &[String], trailers: &[String]) -> String {
    let line = |text: &str| crate::text::one_line(text, crate::text::TITLE_CHARS);
    let title = line(title);
    let mut message = if title.is_empty() {
        format!("[{id}]\n\n")
    } else {
        format!("[{id}] {title}\n\n")
    };
    let bullets: Vec<&String> = subjects
        .iter()
        .filter(|subject| !subject.starts_with(WIP_SUBJECT_PREFIX))
        .collect();
    for subject in &bullets {
        message.push_str("- ");
        message.push_str(&line(subject));
        message.push('\n');
    }
    if !bullets.is_empty() {
        message.push('\n');
    }
    for trailer in trailers {
        message.push_str(trailer);
        message.push('\n');
    }
    crate::redact::redact(&message).into_owned()
}

/// The in-memory merge of a task branch into the base.
enum Merge {
    /// The merged tree, and the base and branch commits it merges.
    Tree {
        tree: Oid,
        base: Oid,
        tip: Oid,
    },
    Empty,
    Conflict(Vec<String>),
}

/// What a squash under way notes: the base's tip, the merged tree, and
/// the commit whose tree was checked out (the task branch's tip, or the
/// base's when the tree stays on the base).
struct SquashNote {
    base: Oid,
    merged: Oid,
    from: Oid,
}

impl Repo {
    /// Merges `branch` into the base in memory and says how it would go;
    /// changes nothing. The queue files count with their bytes on disk.
    pub fn preview_squash(&self, branch: &str) -> Result<SquashPreview> {
        Ok(match self.merge_in_memory(branch, false)? {
            Merge::Tree { .. } => SquashPreview::Clean,
            Merge::Empty => SquashPreview::Empty,
            Merge::Conflict(paths) => SquashPreview::Conflict(paths),
        })
    }

    /// Squashes task `id`'s `branch` into the base: ONE commit on the base,
    /// its single parent the base tip, with the tree of `git merge --squash`
    /// plus the queue files' bytes on disk, and the message of
    /// [`squash_message`] with `trailers`, made by the user's `git commit`
    /// (hooks, signing). Then keeps the branch tip under
    /// `refs/ralph/tasks/<id>` and deletes the branch, with the base checked
    /// out. A conflict, an empty branch or a hook's refusal changes nothing
    /// (see [`Squash`]). Refuses a dirty working tree.
    pub fn squash_into_base(
        &self,
        branch: &str,
        id: &str,
        title: &str,
        trailers: &[String],
    ) -> Result<Squash> {
        self.check_no_operation()?;
        let clean = self.check_clean()?;
        Ok(self.squash_clean(branch, id, title, trailers, clean)?.0)
    }

    /// [`Repo::squash_into_base`] from a tree known to be clean: no
    /// scan. Hands the tree's cleanliness back unless a hook ran in it (a
    /// hook may write files).
    pub fn squash_clean(
        &self,
        branch: &str,
        id: &str,
        title: &str,
        trailers: &[String],
        clean: Clean,
    ) -> Result<(Squash, Option<Clean>)> {
        let (squash, clean) = self.squash_commit(branch, id, title, trailers, clean)?;
        if let Squash::Merged(_) = squash {
            crate::fault::crash_at("after_squash_commit");
            self.drop_task_branch(branch, id)?;
        }
        Ok((squash, clean))
    }

    /// The squash commit of [`Repo::squash_clean`] alone: with
    /// [`Squash::Merged`], the base is checked out at the new commit and the
    /// task branch still exists (its tip preserved): the caller archives
    /// the task, then [`Repo::amend_with_queue_files`] and
    /// [`Repo::preserve_and_delete_branch`]. A refused commit puts the
    /// branch back. Takes the tree's cleanliness and hands it back unless a
    /// hook ran.
    pub fn squash_commit(
        &self,
        branch: &str,
        id: &str,
        title: &str,
        trailers: &[String],
        clean: Clean,
    ) -> Result<(Squash, Option<Clean>)> {
        let hooks = self.has_commit_hooks();
        let message = |subjects: &[String]| squash_message(id, title, subjects, trailers);
        let squash = self.merge_and_commit(branch, Some(&Repo::preserved_ref(id)), message)?;
        let clean = match squash {
            Squash::Merged(_) | Squash::Rejected(_) if hooks => None,
            _ => Some(clean),
        };
        Ok((squash, clean))
    }

    /// Lands commit `landing` (a landing the shared remote refused: one
    /// commit on the base as it was) again on the base as it is now: its
    /// change merged three ways from its parent, the queue files from
    /// disk, committed with its own message by the user's git.
    pub fn replay_landing(&self, landing: &str) -> Result<Squash> {
        let branch = "ralph-replay";
        let action = "mark the landing to land again";
        let commit = self.find_commit(landing, action)?;
        let message = String::from_utf8_lossy(commit.message_bytes()).into_owned();
        self.git
            .reference(
                &format!("refs/heads/{branch}"),
                commit.id(),
                true,
                "ralph: replay",
            )
            .doing(action)?;
        let squash = self.merge_and_commit(branch, None, |_| message);
        let _ = self
            .git
            .find_reference(&format!("refs/heads/{branch}"))
            .and_then(|mut reference| reference.delete());
        squash
    }

    /// Merges `branch` into the base and commits the result with the
    /// message made from the branch's commit subjects; `preserve` is the
    /// ref that keeps the branch's tip.
    fn merge_and_commit(
        &self,
        branch: &str,
        preserve: Option<&str>,
        message: impl FnOnce(&[String]) -> String,
    ) -> Result<Squash> {
        let _timed = super::timing::timed("squash", branch);
        self.check_no_operation()?;
        // With parallel workers the tree stays on the base and the branch
        // is checked out in the task's own worktree: the merge is made
        // from the base as checked out, the branch never checked out here.
        let on_base = self.is_on(&self.base)?;
        let (tree, base, tip) = match self.merge_in_memory(branch, true)? {
            Merge::Tree { tree, base, tip } => (tree, base, tip),
            Merge::Empty => return Ok(Squash::Empty),
            Merge::Conflict(paths) => {
                if !on_base && !self.is_on(branch)? {
                    self.checkout_carrying_queue(branch)?;
                }
                return Ok(Squash::Conflict(paths));
            }
        };
        let subjects: Vec<String> = self
            .commits_between(base, tip)?
            .into_iter()
            .map(|commit| commit.subject)
            .collect();
        let message = message(&subjects);
        // The tip is preserved before anything else, so no crash loses it.
        if let Some(name) = preserve {
            self.write_ref(name, tip, "ralph: preserve the task branch")?;
        }
        let from = if on_base { self.base.as_str() } else { branch };
        if !on_base && !self.is_on(branch)? {
            self.checkout_carrying_queue(branch)?;
        }
        let tree = self.git.find_tree(tree).doing("read the merged tree")?;
        let from_tree = self
            .git
            .find_commit(if on_base { base } else { tip })
            .and_then(|commit| commit.tree())
            .doing(&format!("read the tree of {from}"))?;
        // A kill between writing the merged files and their commit would
        // leave them as uncommitted changes on the base, or on the task
        // branch before HEAD moved: a note says so, and the next run puts
        // the files back (`undo_interrupted_squash`).
        let from_commit = if on_base { base } else { tip };
        self.note_squash(Some(SquashNote {
            base,
            merged: tree.id(),
            from: from_commit,
        }))?;
        // The merge, staged and checked out on the base, is committed by
        // the user's git: its hooks judge it, its signing signs it.
        self.switch_tree(&from_tree, &tree, false)?;
        crate::fault::crash_at("mid_squash_files");
        self.point_head_at(&self.base)?;
        crate::fault::crash_at("mid_squash_commit");
        let committed = self.commit_index(&message, true)?;
        if committed.is_ok() {
            self.note_squash(None)?;
        }
        match committed {
            Ok(commit) => Ok(Squash::Merged(Merged {
                commit,
                tip: tip.into(),
                preserved_ref: preserve.unwrap_or_default().to_owned(),
            })),
            Err(said) => {
                // Back to where it was: the task branch, or the base.
                self.switch_tree(&tree, &from_tree, true)?;
                self.point_head_at(from)?;
                self.note_squash(None)?;
                if is_git_failure(&said) {
                    return Err(super::Error::Command {
                        action: format!("commit the squash on {}", self.base),
                        said,
                    });
                }
                Ok(Squash::Rejected(said))
            }
        }
    }

    /// Where a squash notes what it is doing while its files are out.
    fn squash_note(&self) -> std::path::PathBuf {
        self.git.path().join("ralph-squash-in-progress")
    }

    /// Notes a squash under way, or removes the note.
    fn note_squash(&self, under_way: Option<SquashNote>) -> Result<()> {
        let path = self.squash_note();
        let io = crate::files::at(path.clone());
        match under_way {
            Some(SquashNote { base, merged, from }) => {
                crate::files::write_atomic(&path, format!("{base} {merged} {from}\n").as_bytes())
                    .map_err(io)
            }
            None => crate::files::remove_if_exists(&path).map_err(io),
        }
    }

    /// Puts the files back as they were when a run was killed in the
    /// middle of a squash (the merged files written, not yet committed):
    /// as the base has them once HEAD had moved there, as the task branch
    /// has them before. Returns the branch whose files were put back; a
    /// squash that was committed, or a HEAD moved since, only loses its
    /// note.
    pub fn undo_interrupted_squash(&self) -> Result<Option<String>> {
        let Ok(note) = std::fs::read_to_string(self.squash_note()) else {
            return Ok(None);
        };
        let mut ids = note.split_whitespace().map(Oid::from_str);
        let (Some(Ok(base)), Some(Ok(merged))) = (ids.next(), ids.next()) else {
            self.note_squash(None)?;
            return Ok(None);
        };
        // A note of an older ralph names no branch commit: the base's.
        let from = ids.next().and_then(|id| id.ok()).unwrap_or(base);
        let head = self.head()?;
        let head_tip = self.head_commit("read HEAD's commit")?;
        let back_to = match &head {
            Head::Branch(branch) if *branch == self.base && head_tip.id() == base => {
                Some(branch.clone())
            }
            Head::Branch(branch) if from != base && head_tip.id() == from => Some(branch.clone()),
            _ => None,
        };
        if back_to.is_some() {
            let merged = self.git.find_tree(merged).doing("read the merged tree")?;
            let tree = head_tip.tree().doing("read the tree of HEAD")?;
            self.switch_tree(&merged, &tree, true)?;
        }
        self.note_squash(None)?;
        Ok(back_to)
    }

    /// Amends the commit at the base's tip (the squash just made, checked
    /// out) with the queue files' bytes on disk and `trailers` it lacks:
    /// the archive record goes into the task's own commit. Skips the hooks,
    /// which passed that commit already; signs when the user signs.
    pub fn amend_with_queue_files(&self, trailers: &[String]) -> Result<CommitId> {
        let _timed = super::timing::timed("amend_squash", &self.base);
        let head = self.head_commit("read the squash commit")?;
        let mut message = String::from_utf8_lossy(head.message_bytes()).into_owned();
        for trailer in trailers {
            if !message.lines().any(|line| line == trailer) {
                if !message.ends_with('\n') {
                    message.push('\n');
                }
                message.push_str(trailer);
                message.push('\n');
            }
        }
        let tree = head.tree().doing("read the squash commit's tree")?;
        if !self.commits_through_git(false) {
            let amended = self.tree_with_queue_files(&tree, &tree)?;
            let amended = self.git.find_tree(amended).doing("read the amended tree")?;
            let signature = self.identity.signature()?;
            self.wait_for_head_locks()?;
            let commit = head
                .amend(
                    Some("HEAD"),
                    None,
                    Some(&signature),
                    None,
                    Some(&message),
                    Some(&amended),
                )
                .doing("add the archive record to the squash commit")?;
            self.queue_entries_follow(&amended)?;
            return Ok(commit.into());
        }
        let files = self.committable_queue_files(&tree)?;
        self.git_commit(&["--amend", "--no-verify"], &files, &message)?
            .map_err(|said| super::Error::Command {
                action: format!(
                    "add the archive record to the squash commit on {}",
                    self.base
                ),
                said,
            })
    }

    /// Commits the queue files' bytes on disk, and nothing else, on the
    /// base (checking it out first, carrying them over): the bookkeeping
    /// of a blocked task when nothing is merged. `None` when they match the
    /// base already. Made by the user's `git commit`: hooks and signing
    /// apply. Refuses a dirty working tree.
    pub fn commit_queue_files(&self, message: &str) -> Result<Option<CommitId>> {
        let _timed = super::timing::timed("commit_queue_files", &self.base);
        self.checkout_base()?;
        let base = self.tip(&self.base)?;
        let base_tree = base.tree().doing("read the base's tree")?;
        let mut index = Index::new().doing("make an index")?;
        index.read_tree(&base_tree).doing("read the base's tree")?;
        self.put_queue_files(&mut index, &base_tree)?;
        let tree_id = index
            .write_tree_to(&self.git)
            .doing("write the queue files' tree")?;
        if tree_id == base_tree.id() {
            return Ok(None);
        }
        if !self.commits_through_git(true) {
            let tree = self
                .git
                .find_tree(tree_id)
                .doing("read the queue files' tree")?;
            let signature = self.identity.signature()?;
            self.wait_for_ref_locks(&[&format!("refs/heads/{}", self.base)])?;
            let commit = self
                .git
                .commit(
                    Some(&format!("refs/heads/{}", self.base)),
                    &signature,
                    &signature,
                    message,
                    &tree,
                    &[&base],
                )
                .doing(&format!("commit the queue files on {}", self.base))?;
            // HEAD moved with the base: the index entries of the queue
            // files follow, so they read as committed.
            self.queue_entries_follow(&tree)?;
            return Ok(Some(commit.into()));
        }
        let files = self.committable_queue_files(&base_tree)?;
        match self.git_commit(&[], &files, message)? {
            Ok(commit) => Ok(Some(commit)),
            Err(said) if is_git_failure(&said) => Err(super::Error::Command {
                action: format!("commit the queue files on {}", self.base),
                said,
            }),
            Err(said) => Err(super::Error::HookRejected {
                subject: message.lines().next().unwrap_or_default().to_owned(),
                said,
            }),
        }
    }

    /// Merges `branch` into the base in memory. With `queue`, the merged
    /// tree holds the queue files' bytes on disk; a preview leaves them out
    /// when it can (they never conflict: they are taken from disk).
    fn merge_in_memory(&self, branch: &str, queue: bool) -> Result<Merge> {
        let _timed = super::timing::timed("merge_in_memory", branch);
        let tip = self.tip(branch)?;
        let base = self.tip(&self.base)?;
        let base_tree = base.tree().doing("read the base's tree")?;
        let tree_id = if self.is_ancestor(base.id(), tip.id())? {
            // The base has not moved since the branch left it: the merge
            // is the branch's tree (as `git merge --squash` gives it),
            // without merging 10,000 files' entries to find that out.
            let tip_tree = tip.tree().doing(&format!("read the tree of {branch}"))?;
            if queue {
                self.tree_with_queue_files(&tip_tree, &base_tree)?
            } else {
                tip_tree.id()
            }
        } else {
            // A large file is never read (see large.rs): a conflict if
            // both sides changed it, and no renames looked for among them.
            let large = self.large_in_merge(base.id(), tip.id())?;
            if !large.both_changed.is_empty() {
                return Ok(Merge::Conflict(large.both_changed));
            }
            let mut options = git2::MergeOptions::new();
            options.find_renames(large.renames);
            let mut index = self
                .git
                .merge_commits(&base, &tip, Some(&options))
                .doing(&format!("merge {branch} into {} in memory", self.base))?;
            self.put_queue_files(&mut index, &base_tree)?;
            if index.has_conflicts() {
                return Ok(Merge::Conflict(conflict_paths(&index)?));
            }
            index
                .write_tree_to(&self.git)
                .doing("write the merged tree")?
        };
        let tree = self.git.find_tree(tree_id).doing("read the merged tree")?;
        let changes_something = self
            .changed_paths(&base_tree, &tree)?
            .iter()
            .any(|path| !self.is_queue_file(&String::from_utf8_lossy(path)));
        Ok(if changes_something {
            Merge::Tree {
                tree: tree_id,
                base: base.id(),
                tip: tip.id(),
            }
        } else {
            Merge::Empty
        })
    }

    /// Whether `ancestor` is `commit` or one of its ancestors.
    pub(super) fn is_ancestor(&self, ancestor: Oid, commit: Oid) -> Result<bool> {
        Ok(ancestor == commit
            || self
                .git
                .graph_descendant_of(commit, ancestor)
                .doing("compare the branch with the base")?)
    }
}

/// Whether a refused `git commit` failed in git itself (signing, a
/// missing filter, a full disk: `fatal:`) rather than in a hook.
fn is_git_failure(said: &str) -> bool {
    said.lines().any(|line| line.starts_with("fatal:"))
}

fn conflict_paths(index: &Index) -> Result<Vec<String>> {
    let mut paths = Vec::new();
    for conflict in index.conflicts().doing("list the conflicts")? {
        let conflict = conflict.doing("list the conflicts")?;
        let side = conflict.our.or(conflict.their).or(conflict.ancestor);
        if let Some(entry) = side {
            paths.push(String::from_utf8_lossy(&entry.path).into_owned());
        }
    }
    paths.sort();
    paths.dedup();
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message of a squash that completes task `id` alone.
    fn completing(id: &str, title: &str, subjects: &[String]) -> String {
        squash_message(id, title, subjects, &[format!("Completes: {id}")])
    }

    #[test]
    fn the_message_lists_subjects_without_wip_commits() {
        let subjects = [
            "Add session module".to_owned(),
            "ralph: wip A.1.1 iteration 2".to_owned(),
            "Wire sessions".to_owned(),
        ];
        assert_eq!(
            completing("A.1.1", "choose session library", &subjects),
            "[A.1.1] choose session library\n\n- Add session module\n- Wire sessions\n\nCompletes: A.1.1\n"
        );
    }

    #[test]
    fn a_message_without_subjects_has_only_the_trailer_after_the_title() {
        let wip = ["ralph: wip B iteration 1".to_owned()];
        assert_eq!(
            completing("B", "  multi\nline   title ", &wip),
            "[B] multi line title\n\nCompletes: B\n"
        );
        assert_eq!(completing("C", "", &[]), "[C]\n\nCompletes: C\n");
        assert_eq!(
            completing("D", "evil\u{1b}[31m\ttitle", &[]),
            "[D] evil\\u{1b}[31m title\n\nCompletes: D\n"
        );
        let long = completing("E", &"x".repeat(100_000), &[]);
        assert_eq!(
            long.lines().next().unwrap().len(),
            "[E] ".len() + crate::text::TITLE_CHARS + 3
        );
    }

    #[test]
    fn secrets_are_masked_in_every_part_of_the_message() {
        let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyz";
        let subjects = [format!("Push with {token}")];
        let notes = format!("Notes on the task, newest first:\n>\n> token {token}\n");
        let message = squash_message("A", &format!("use {token}"), &subjects, &[notes]);
        assert_eq!(
            message,
            "[A] use [redacted]\n\n- Push with [redacted]\n\nNotes on the task, newest first:\n>\n> token [redacted]\n\n"
        );
    }

    #[test]
    fn a_squash_subject_names_its_task() {
        for (id, title) in [("A.1", "login form"), ("B", "")] {
            let message = completing(id, title, &[]);
            let subject = message.lines().next().unwrap();
            assert_eq!(squash_subject(subject), Some((id, title)));
        }
        assert_eq!(squash_subject("fix the build"), None);
        assert_eq!(squash_subject("[wip]x"), None);
        assert_eq!(squash_subject("[two words] x"), None);
    }
}
