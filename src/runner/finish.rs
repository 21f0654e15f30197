//! Ending a task's stay on its branch: verify and squash-merge a finished
//! task, merge a split one, block one, and recover a merge a crash cut short.

use serde_json::{Map, Value, json};

use crate::events::fields;

use super::RunError;
use super::shared::Landed;
use super::worker::{Worker, now};
use crate::agent::FailureClass;
use crate::error::Error;
use crate::git::{self, Squash, SquashPreview};
use crate::prompt::Evidence;
use crate::result::{TaskEnd, TaskOutcome};
use crate::state::Phase;
use crate::task::{Change, Patch, Queue, Status, Task, TaskId};

impl Worker<'_> {
    /// Verify, then squash-merge and archive task `id`.
    pub(super) fn finish_task(&mut self, id: &TaskId, task: Option<&Task>) -> Result<(), Error> {
        let Some(task) = task.cloned() else {
            return Ok(());
        };
        // A crash after the archive below finds the task here and lands it
        // (`recover_archived_task`), also when it was completed by hand,
        // outside an iteration of its own.
        if self.state.current_task.as_deref() != Some(id.as_str()) {
            self.state.current_task = Some(id.to_string());
            self.save_state()?;
        }
        let Some(branch) = self.task_branch(id, &task.title)? else {
            // Completed without ever being worked on (marked by hand).
            let changes = self.archive(id, None)?;
            return self.land(id, &task.title, None, &completes(&changes));
        };
        // A change of what agents may not change waits for a person.
        if self.held_for_approval(id, &branch, Status::Complete)? {
            return Ok(());
        }
        self.state.phase = Phase::Verify;
        // The task's own checks as the queue holds them now: the agent may
        // have changed them while it worked, past their bound too.
        let queue = self.store.load()?;
        if let Some(over) = queue.oversized(id.as_str()) {
            return self.block(id, &over.block_reason(id.as_str()));
        }
        let own = queue.string_list(id.as_str(), "verify");
        drop(queue);
        // The checks run on the task's work: its branch checked out.
        if !self.options.settings.verify.task.is_empty() || !own.is_empty() {
            self.repo.claim(id, &task.title)?;
            // The checks may write files: the squash scans the tree.
            self.clean = None;
        }
        if !self.verify_task(id, &own)? {
            return Ok(());
        }
        // Parallel workers merge one at a time, each against the base as
        // the others left it.
        let _turn = self.seat.merge_turn();
        // Sharing the queue: the squash builds on the remote's tip.
        self.catch_up()?;
        self.state.phase = Phase::Merge;
        match self.repo.preview_squash(&branch)? {
            SquashPreview::Conflict(paths) => return self.conflicted(id, &paths),
            SquashPreview::Empty => {
                let tip = self.repo.branch_tip(&branch)?;
                let changes = self.archive(id, Some(tip.to_string()))?;
                crate::fault::crash_at("after_archive");
                self.state.phase = Phase::Squash;
                self.save_state()?;
                return self.land(id, &task.title, Some(&branch), &completes(&changes));
            }
            SquashPreview::Clean => {}
        }
        // The squash is committed before the task is archived: a hook that
        // refuses it leaves the task to its agent, with the hook's words.
        let tip = self.repo.branch_tip(&branch)?;
        self.state.phase = Phase::Squash;
        self.save_state()?;
        let clean = match self.clean.take() {
            Some(clean) => clean,
            None => self.base().check_clean()?,
        };
        let mut trailers = vec![format!("Completes: {id}")];
        // The task's notes go into the history with it (a paragraph
        // before the trailers).
        if let Some(notes) =
            crate::notes::for_squash(self.paths.project(), &self.paths.notes(id.as_str()))
        {
            trailers.insert(0, notes);
        }
        // The squash names the review that passed the work, if one did.
        if let Some(review) =
            crate::notes::reviews(self.paths.project(), &self.paths.reviews(id.as_str()))
                .pop()
                .filter(|review| review.verdict == crate::notes::Verdict::Passed)
        {
            trailers.push(format!("Reviewed: passed {}", review.time));
        }
        let (squash, clean) =
            (self.base()).squash_commit(&branch, id, &task.title, &trailers, clean)?;
        self.clean = clean;
        match squash {
            Squash::Merged(_) => {}
            Squash::Rejected(said) => {
                self.ui
                    .log(&format!("{id}: a git hook refused the squash commit"));
                let summary = format!(
                    "a git hook of the repository refused the squash commit on {} (its output is below); make the work pass it, commit, then mark the task complete again",
                    self.repo.base()
                );
                return self.task_failed(id, FailureClass::HookRejected, &summary, &said);
            }
            Squash::Conflict(paths) => return self.conflicted(id, &paths),
            Squash::Empty => {
                let changes = self.archive(id, Some(tip.to_string()))?;
                return self.land(id, &task.title, Some(&branch), &completes(&changes));
            }
        }
        crate::fault::crash_at("after_squash_commit");
        // The archive record names the branch tip, which stays reachable
        // under refs/ralph/tasks/<id>; it joins the squash commit.
        let changes = self.archive(id, Some(tip.to_string()))?;
        crate::fault::crash_at("after_archive");
        let commit = self.base().amend_with_queue_files(&completes(&changes))?;
        let landed = self.after_landing(id, Some(tip.to_string()), Some(commit.to_string()))?;
        self.leave_worktree()?;
        self.base().preserve_and_delete_branch(&branch, id)?;
        let commit = match landed {
            Landed::Here(commit) => commit,
            Landed::Orphaned(kept) => return self.orphaned(id, &kept),
        };
        let detail = format!("squash-merged into {}", self.repo.base());
        self.merged_task(id, commit, &detail)?;
        // A hook ran in the squash (no clean token came back): what it
        // wrote would stop the next claim with a puzzling dirty tree.
        if self.clean.is_none() {
            self.clean = Some(self.base().check_clean().map_err(|err| {
                match err {
                    crate::git::Error::Dirty { paths } => RunError::HookWroteFiles {
                        task: id.to_string(),
                        paths,
                    }
                    .into(),
                    err => Error::from(err),
                }
            })?);
        }
        Ok(())
    }

    /// Squashes `branch` into the base, without scanning the tree again
    /// when it is known to be clean.
    fn squash(
        &mut self,
        branch: &str,
        id: &TaskId,
        title: &str,
        trailers: &[String],
    ) -> Result<Squash, Error> {
        // The branch is deleted once merged: not while a worktree has it.
        self.leave_worktree()?;
        Ok(match self.clean.take() {
            Some(clean) => {
                let (squash, clean) = self
                    .base()
                    .squash_clean(branch, id, title, trailers, clean)?;
                self.clean = clean;
                squash
            }
            None => self.base().squash_into_base(branch, id, title, trailers)?,
        })
    }

    /// The task's branch, if it still exists.
    fn task_branch(&self, id: &TaskId, title: &str) -> Result<Option<String>, Error> {
        Ok(match self.state.progress(id.as_str()).branch {
            Some(branch) if self.repo.branch_tip(&branch).is_ok() => Some(branch),
            _ => self.repo.find_task_branch(id, title)?,
        })
    }

    /// Runs `verify.task`, then the task's `own` commands (its `verify`
    /// field); false when the task cannot be merged now (a command failed,
    /// or a signal stopped it).
    fn verify_task(&mut self, id: &TaskId, own: &[String]) -> Result<bool, Error> {
        const CONFIGURED: &str = "the verification command";
        const OWN: &str = "the task's own verification command";
        let configured = self.options.settings.verify.task.clone();
        let configured = configured.iter().map(|command| (command, CONFIGURED));
        let mut passed = 0;
        for (command, what) in configured.chain(own.iter().map(|command| (command, OWN))) {
            let (result, interrupted) = self.check(Some(id), "verify", "verify_failed", command)?;
            // A signal that stops the check is not the task's failure: the
            // task stays complete and the next run verifies it again.
            if interrupted {
                self.save_state()?;
                return Ok(false);
            }
            if !result.passed {
                self.ui.log(&format!(
                    "{id}: verify failed: {command}: {}",
                    result.status
                ));
                let summary = format!("{what} `{command}` failed ({})", result.status);
                self.task_failed(
                    id,
                    FailureClass::VerifyFailed,
                    &summary,
                    &result.output_tail,
                )?;
                return Ok(false);
            }
            passed += 1;
        }
        // Kept with the task's progress, so a merge finished by the next
        // run (after a crash) still knows its work was checked.
        self.state.tasks.entry(id.to_string()).or_default().checked = passed;
        self.save_state()?;
        Ok(true)
    }

    /// A container whose last child was archived without it (by hand:
    /// ralph archives a parent with its last child) is done: archives the
    /// first such as `ralph task archive` does, parents that empty with it
    /// included, and lands it as a task finished without a branch. Returns
    /// whether there was one.
    pub(super) fn finish_emptied_container(&mut self, queue: &Queue) -> Result<bool, Error> {
        let Some(task) = queue.emptied_containers().first().map(|&task| task.clone()) else {
            return Ok(false);
        };
        self.ui.log(&format!(
            "{}: all its tasks are archived; archiving it too",
            task.id
        ));
        // As in `finish_task`: a crash after the archive finds the task
        // here and lands it (`recover_archived_task`).
        self.state.current_task = Some(task.id.to_string());
        self.save_state()?;
        let changes = self.archive(&task.id, None)?;
        self.land(&task.id, &task.title, None, &completes(&changes))?;
        Ok(true)
    }

    fn archive(&mut self, id: &TaskId, commit: Option<String>) -> Result<Vec<Change>, Error> {
        Ok(self.store.apply(
            &Patch::Archive {
                id: id.clone(),
                commit,
            },
            &now(),
        )?)
    }

    /// Puts an archived task on the base: ONE squash commit of its branch,
    /// or, with nothing to merge, a commit of the queue files; either way
    /// with the task's trailers. Then the run's bookkeeping.
    pub(super) fn land(
        &mut self,
        id: &TaskId,
        title: &str,
        branch: Option<&str>,
        trailers: &[String],
    ) -> Result<(), Error> {
        let _turn = self.seat.merge_turn();
        self.catch_up()?;
        let bookkeeping = |engine: &mut Self| -> Result<Option<String>, Error> {
            let message = git::squash_message(id, title, &[], trailers);
            Ok(engine
                .base()
                .commit_queue_files(&message)?
                .map(|c| c.to_string()))
        };
        let mut tip = None;
        let (commit, detail) = match branch {
            None => (bookkeeping(self)?, "archived; it had no branch".to_owned()),
            Some(branch) => match self.squash(branch, id, title, trailers)? {
                Squash::Merged(merged) => {
                    tip = Some(merged.tip.to_string());
                    (
                        Some(merged.commit.to_string()),
                        format!("squash-merged into {}", self.repo.base()),
                    )
                }
                Squash::Empty => {
                    // The trailers first: a kill between the two leaves
                    // the branch, by which the next run finds the task.
                    let commit = bookkeeping(self)?;
                    self.base().preserve_and_delete_branch(branch, id)?;
                    (commit, "nothing to merge; archived".to_owned())
                }
                Squash::Conflict(paths) => {
                    return Err(RunError::Stranded {
                        head: branch.to_owned(),
                        paths,
                    }
                    .into());
                }
                Squash::Rejected(said) => {
                    return Err(RunError::HookRejected {
                        task: id.to_string(),
                        branch: branch.to_owned(),
                        said,
                    }
                    .into());
                }
            },
        };
        match self.after_landing(id, tip, commit)? {
            Landed::Here(commit) => self.merged_task(id, commit, &detail),
            Landed::Orphaned(kept) => self.orphaned(id, &kept),
        }
    }

    /// Sharing the queue, another machine landed task `id` first: this
    /// machine's work is kept under `kept`; the task ends here as
    /// orphaned, not merged.
    fn orphaned(&mut self, id: &TaskId, kept: &str) -> Result<(), Error> {
        self.state.tasks.remove(id.as_str());
        let detail = format!("another machine landed it first; this work is kept under {kept}");
        self.task_ended(id, TaskEnd::Orphaned, None, &detail)
    }

    /// The agent archived the task itself: merge what its branch holds.
    pub(super) fn merge_archived(&mut self, id: &TaskId, title: &str) -> Result<(), Error> {
        let branch = self.task_branch(id, title)?;
        self.land(id, title, branch.as_deref(), &[format!("Completes: {id}")])
    }

    /// A crash between archiving a task and landing it on the base leaves
    /// an archived task whose squash is missing or half done: finish it,
    /// never committing the same task twice.
    pub(super) fn recover_archived_task(&mut self) -> Result<(), Error> {
        let Some(task) = self.state.current_task.clone() else {
            return Ok(());
        };
        let queue = self.store.load()?;
        let Ok(id) = TaskId::parse(&task) else {
            return Ok(());
        };
        if !queue.done.contains(&task) && queue.get(&task).is_some() {
            return self.recover_squashed_task(&id, &queue);
        }
        // The raw line: one left in tasks.jsonl too is the loop's to clean
        // up (`finish_archived_lines`).
        if !queue.done.contains(&task) || queue.tasks.get(&task).is_some() {
            return Ok(());
        }
        self.land_archived(&id, &queue)
    }

    /// Finishes task `id`, archived in `queue` when ralph stopped, never
    /// committing a trailer twice: when its squash landed, the trailers
    /// of the parents archived with it are committed if they are missing,
    /// then its branch goes; otherwise it is landed now with the trailers
    /// the base lacks. The branch goes last, so a run killed before it is
    /// gone finds the task again by it.
    pub(super) fn land_archived(&mut self, id: &TaskId, queue: &Queue) -> Result<(), Error> {
        let record = queue.done.record(id.as_str()).unwrap_or_default();
        let text = |key: &str| record.get(key).and_then(Value::as_str).map(str::to_owned);
        let title = text("title").unwrap_or_default();
        // The tasks archived with it (its parents) carry the same commit.
        let trailers: Vec<String> = match text("commit") {
            Some(tip) => (queue.done.ids())
                .filter(|other| {
                    let record = queue.done.record(other).unwrap_or_default();
                    record.get("commit").and_then(Value::as_str) == Some(tip.as_str())
                })
                .map(|other| format!("Completes: {other}"))
                .collect(),
            None => vec![format!("Completes: {id}")],
        };
        let branch = self.task_branch(id, &title)?;
        let own = format!("Completes: {id}");
        let missing = self.missing_trailers(trailers)?;
        self.ui.line(&format!(
            "{id}: archived before ralph stopped; finishing its merge"
        ));
        if missing.contains(&own) {
            return self.land(id, &title, branch.as_deref(), &missing);
        }
        if !missing.is_empty() {
            let message = format!(
                "ralph: archive with {id}\n\nIts squash commit landed before ralph stopped.\n\n{}\n",
                missing.join("\n")
            );
            self.commit_queue(id, &message)?;
        }
        if let Some(branch) = &branch {
            self.base().preserve_and_delete_branch(branch, id)?;
        }
        let detail = match branch {
            Some(_) => "its squash had landed; branch removed",
            None => "its squash had landed",
        };
        self.merged_task(id, None, detail)
    }

    /// Those of `trailers` the base's recent history lacks.
    fn missing_trailers(&self, trailers: Vec<String>) -> Result<Vec<String>, Error> {
        Ok(self.base().base_lacks_trailers(&trailers, 1000)?)
    }

    /// A crash between a task's squash commit and its archive leaves the
    /// commit on the base and the task in `tasks.jsonl`: archive it now and
    /// commit the queue files, never squashing it a second time.
    fn recover_squashed_task(&mut self, id: &TaskId, queue: &Queue) -> Result<(), Error> {
        let landed = self.state.phase == Phase::Squash
            && (self.repo).base_has_trailer(&format!("Completes: {id}"), 1000)?;
        if !landed {
            return Ok(());
        }
        let title = queue.get(id.as_str()).map(|t| t.title.to_string());
        let title = title.unwrap_or_default();
        self.ui.line(&format!(
            "{id}: its squash commit landed before ralph stopped; archiving it"
        ));
        let branch = self.task_branch(id, &title)?;
        let _turn = self.seat.merge_turn();
        let tip = match &branch {
            Some(branch) => Some(self.repo.branch_tip(branch)?),
            None => None,
        };
        // Archived and committed before the worktree and the branch go: a
        // kill in between leaves an archived task with its worktree or
        // branch, which the next run finishes (`land_archived`); a task
        // left in tasks.jsonl without either would be worked again.
        let changes = self.archive(id, tip.map(|tip| tip.to_string()))?;
        // The parents that followed it complete with it: their trailers
        // were to join its squash commit.
        let mut message =
            format!("ralph: archive {id}\n\nIts squash commit landed before ralph stopped.\n");
        let trailers = self.missing_trailers(completes(&changes))?;
        if !trailers.is_empty() {
            message.push('\n');
            message.push_str(&trailers.join("\n"));
            message.push('\n');
        }
        let commit = self.base().commit_queue_files(&message)?;
        self.leave_worktree()?;
        if let Some(branch) = &branch {
            self.base().preserve_and_delete_branch(branch, id)?;
        }
        let detail = "its squash had landed; archived";
        self.merged_task(id, commit.map(|c| c.to_string()), detail)
    }

    /// The task became a container: merge its branch so far, go on with the children.
    pub(super) fn merge_split(&mut self, id: &TaskId) -> Result<(), Error> {
        let queue = self.store.load()?;
        let Some(task) = queue.get(id.as_str()).cloned() else {
            return Ok(());
        };
        let children: Vec<String> = queue
            .children(id.as_str())
            .into_iter()
            .filter_map(|index| queue.tasks.lines()[index].task.as_ref())
            .map(|task| task.id.to_string())
            .collect();
        let Some(branch) = self.state.progress(id.as_str()).branch else {
            return Ok(());
        };
        let trailers = vec![format!("Split-into: {}", children.join(", "))];
        let _turn = self.seat.merge_turn();
        self.catch_up()?;
        let mut tip = None;
        let mut commit = match self.squash(&branch, id, &task.title, &trailers)? {
            Squash::Merged(merged) => {
                tip = Some(merged.tip.to_string());
                Some(merged.commit.to_string())
            }
            Squash::Empty => {
                self.base().preserve_and_delete_branch(&branch, id)?;
                // Sharing the queue: the children reach the other
                // machines in a commit of their own.
                if self.remote.is_some() {
                    let message = format!("ralph: {id} split\n\n{}\n", trailers.join("\n"));
                    self.base().commit_queue_files(&message)?;
                }
                None
            }
            // No iteration works on a container: the task waits for a
            // person, and its children with it (they build on its work).
            Squash::Conflict(paths) => {
                let reason = format!(
                    "its branch {branch} conflicts with the base in {}; merge it into {} by hand (resolving the conflict) and delete it, then set the task pending again: its children wait for it",
                    paths.join(", "),
                    self.repo.base()
                );
                self.count_failure(FailureClass::MergeConflict);
                self.record(Some(id), "split", "merge_conflict", &reason, Map::new())?;
                return self.block(id, &reason);
            }
            Squash::Rejected(said) => {
                let reason = format!(
                    "a git hook refused the squash commit of its branch {branch} ({}); make the branch pass it, merge it into {} by hand and delete it, then set the task pending again: its children wait for it",
                    said.lines().last().unwrap_or_default(),
                    self.repo.base()
                );
                self.count_failure(FailureClass::HookRejected);
                self.record(Some(id), "split", "hook_rejected", &reason, Map::new())?;
                return self.block(id, &reason);
            }
        };
        // A landing kept as an orphan leaves the split's commit as it was.
        if let Landed::Here(landed) = self.after_landing(id, tip, commit.clone())? {
            commit = landed;
        }
        let detail = format!(
            "split into {}; {}",
            children.join(", "),
            if commit.is_some() {
                "its work so far is merged"
            } else {
                "nothing to merge yet"
            }
        );
        self.ui.log(&format!("{id} {detail}"));
        self.record(Some(id), "split", "ok", &detail, Map::new())?;
        self.state.tasks.remove(id.as_str());
        self.task_ended(id, TaskEnd::Split, commit, &detail)
    }

    /// The task's branch conflicts with the base: its `merge_conflict`
    /// failure, with the way out as evidence. A worker's agent cannot merge
    /// the base over its worktree's queue links: ralph starts that merge
    /// for it, leaving only the task's own conflicts.
    fn conflicted(&mut self, id: &TaskId, paths: &[String]) -> Result<(), Error> {
        let base = self.repo.base().to_owned();
        self.ui.log(&format!(
            "{id}: the squash into {base} conflicts in {}",
            crate::git::list_paths(paths)
        ));
        let summary = if self.seat.pooled().is_some() {
            let left = self
                .repo
                .merge_base_in(self.paths.project(), self.repo.workdir())?;
            if left.is_empty() {
                format!(
                    "the branch conflicted with the base in {}; ralph merged {base} into it in this worktree and the merge went through: check the result, then mark the task complete again",
                    paths.join(", ")
                )
            } else {
                format!(
                    "the branch conflicts with the base in {}; ralph started merging {base} into it in this worktree: resolve the conflicts in {}, `git add` them and `git commit` to finish the merge, then mark the task complete again",
                    paths.join(", "),
                    left.join(", ")
                )
            }
        } else {
            format!(
                "the branch conflicts with the base in {}; merge the base into the branch (`git merge {base}`), resolve the conflicts, commit the merge, then mark the task complete again",
                paths.join(", "),
            )
        };
        self.task_failed(id, FailureClass::MergeConflict, &summary, "")
    }

    /// A pooled worker's task is merged: its worktree goes (the branch
    /// cannot be deleted while checked out there). Alone there is none.
    fn leave_worktree(&self) -> Result<(), Error> {
        if self.seat.pooled().is_some() {
            self.remove_task_tree(self.repo.workdir())?;
        }
        Ok(())
    }

    /// A failure outside the agent (verification, conflict): evidence for
    /// the next iteration, the task active again, blocked at the limit.
    /// Counts a failure of `class` for `result.json`.
    fn count_failure(&mut self, class: FailureClass) {
        *self.state.failures.entry(class).or_default() += 1;
    }

    pub(super) fn task_failed(
        &mut self,
        id: &TaskId,
        class: FailureClass,
        summary: &str,
        tail: &str,
    ) -> Result<(), Error> {
        self.count_failure(class);
        let entry = self.state.tasks.entry(id.to_string()).or_default();
        entry.consecutive_failures += 1;
        entry.last_failed = true;
        let failures = entry.consecutive_failures;
        let evidence = Evidence {
            class,
            summary: summary.to_owned(),
            output_tail: Some(tail.to_owned()).filter(|t| !t.is_empty()),
        };
        self.keep_evidence(id, evidence)?;
        self.save_state()?;
        self.record(Some(id), "finish", class.as_str(), summary, Map::new())?;
        if let Some(reason) = super::decide::block_reason(failures, class, summary, &self.budgets) {
            return self.block(id, &reason);
        }
        self.store.apply(
            &Patch::SetStatus {
                id: id.clone(),
                status: Status::Active,
            },
            &now(),
        )?;
        Ok(())
    }

    pub(super) fn block(&mut self, id: &TaskId, reason: &str) -> Result<(), Error> {
        // The reason may quote the agent's output; it goes into tasks.jsonl
        // and a commit message, so secrets are masked first.
        let reason = &crate::redact::redact(reason).into_owned();
        self.store.apply(
            &Patch::Block {
                id: id.clone(),
                reason: reason.to_owned(),
            },
            &now(),
        )?;
        // Recorded before the bookkeeping commit, which a hook may refuse:
        // the task is blocked on disk either way.
        self.ui.log(&format!("{id} blocked: {reason}"));
        self.record(Some(id), "block", "blocked", reason, Map::new())?;
        self.commit_queue(id, &format!("ralph: {id} blocked\n\n{reason}\n"))?;
        // A person who sets the task going again starts a new count (its
        // last failure stays the next prompt's evidence).
        if let Some(entry) = self.state.tasks.get_mut(id.as_str()) {
            entry.consecutive_failures = 0;
            entry.no_progress = 0;
        }
        self.task_ended(id, TaskEnd::Blocked, None, reason)
    }

    /// Commits the queue files on the base for task `id`: on the shared
    /// remote's tip, and pushed there with the task's claim released, when
    /// the queue is shared.
    pub(super) fn commit_queue(&mut self, id: &TaskId, message: &str) -> Result<(), Error> {
        let _turn = self.seat.merge_turn();
        self.catch_up()?;
        self.base().commit_queue_files(message)?;
        let _ = self.publish(Some((id, None)), true)?;
        Ok(())
    }

    pub(super) fn merged_task(
        &mut self,
        id: &TaskId,
        commit: Option<String>,
        detail: &str,
    ) -> Result<(), Error> {
        self.merged += 1;
        self.ui.log(&format!(
            "{id} done: {detail}{}",
            commit
                .as_deref()
                .map(|c| format!(" ({})", &c[..c.len().min(10)]))
                .unwrap_or_default()
        ));
        let verified = self.state.progress(id.as_str()).checked > 0;
        let mut extra = fields(json!({"verified": verified}));
        self.record(Some(id), "merge", "ok", detail, extra.clone())?;
        if let Some(commit) = &commit {
            extra.insert("commit".to_owned(), commit.as_str().into());
        }
        self.notify(
            crate::notify::Kind::TaskMerged,
            Some(id),
            &format!("{id} done: {detail}"),
            extra,
        );
        self.state.tasks.remove(id.as_str());
        let squashed = commit.is_some();
        self.note_merged(id.as_str());
        self.end_task(TaskOutcome {
            task: id.to_string(),
            outcome: TaskEnd::Merged,
            commit,
            detail: detail.to_owned(),
            verified: Some(verified),
        })?;
        if squashed && self.options.settings.git.push == crate::config::Push::OnMerge {
            let _turn = self.seat.merge_turn();
            // The run stops before its next iteration (see `main_loop`).
            self.push_failure = self.push_base()?;
        }
        Ok(())
    }

    /// The task is done with for this run: its outcome goes into the
    /// result, and the state no longer has a current task.
    pub(super) fn task_ended(
        &mut self,
        id: &TaskId,
        outcome: TaskEnd,
        commit: Option<String>,
        detail: &str,
    ) -> Result<(), Error> {
        if outcome == TaskEnd::Blocked {
            let extra = json!({"reason": crate::redact::redact(detail)});
            let told = format!("{id} blocked: {detail}");
            self.notify(
                crate::notify::Kind::TaskBlocked,
                Some(id),
                &told,
                fields(extra),
            );
        }
        self.end_task(TaskOutcome {
            task: id.to_string(),
            outcome,
            commit,
            detail: detail.to_owned(),
            verified: None,
        })
    }

    fn end_task(&mut self, outcome: TaskOutcome) -> Result<(), Error> {
        self.outcomes.push(outcome);
        self.state.current_task = None;
        self.save_state()
    }
}

/// `Completes:` trailers for every task an archive moved.
fn completes(changes: &[Change]) -> Vec<String> {
    changes
        .iter()
        .filter_map(|change| match change {
            Change::Archived(id) | Change::AlreadyArchived(id) => Some(format!("Completes: {id}")),
            _ => None,
        })
        .collect()
}
