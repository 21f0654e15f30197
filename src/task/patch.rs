//! Changes to the queue, expressed by task id so they apply to whatever the
//! files hold when the lock is taken (a hand edit made meanwhile is kept).

use super::change::Change;
use super::error::{Error, Result};
use super::id::TaskId;
use super::line::{TaskText, new_line};
use super::model::Status;
use super::planned::PlannedTask;
use super::queue::Queue;
use crate::paths::{DONE_FILE, TASKS_FILE};

/// A new task for `Patch::Add`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NewTask {
    /// One-line description.
    pub title: String,
    /// Put the task under this parent (allocating the next child number).
    pub parent: Option<TaskId>,
    /// Use this id instead of allocating one.
    pub id: Option<TaskId>,
    /// Details for the prompt.
    pub body: Option<String>,
    /// Tasks that must be done first.
    pub deps: Vec<TaskId>,
    /// Acceptance criteria, shown to the agent as a checklist.
    pub acceptance: Vec<String>,
    /// Files the work is expected to touch, shown to the agent.
    pub files: Vec<String>,
    /// The task's own checks, run before its merge after `verify.task`.
    pub verify: Vec<String>,
    /// Where the task came from (`ralph plan` writes `path#requirement`).
    pub source: Option<String>,
    /// What sort of task it is (free text, such as `feature` or `bug`).
    pub kind: Option<String>,
}

/// One change to the queue.
#[derive(Clone, Debug, PartialEq)]
pub enum Patch {
    /// Add a pending leaf task.
    Add(NewTask),
    /// Set a leaf task's status (`start`, `ready`, `complete`, back to `pending`).
    SetStatus {
        /// The task.
        id: TaskId,
        /// Its new status.
        status: Status,
    },
    /// Mark a task blocked, with the reason.
    Block {
        /// The task.
        id: TaskId,
        /// Why it cannot go on.
        reason: String,
    },
    /// Turn a leaf into a container with new leaf children.
    Split {
        /// The leaf to split.
        id: TaskId,
        /// The children's titles, in order.
        titles: Vec<String>,
    },
    /// Add the tasks of a plan whose source no task has yet (`ralph plan`).
    Plan {
        /// Put the plan's root under this task [default: top level].
        parent: Option<TaskId>,
        /// The planned tasks, parents first.
        tasks: Vec<PlannedTask>,
        /// Rewrite pending tasks whose planned text changed.
        update: bool,
    },
    /// Move a finished task to the archive (and its parents, once empty).
    Archive {
        /// The task.
        id: TaskId,
        /// The commit that completed it.
        commit: Option<String>,
    },
}

impl Patch {
    /// Whether applying the patch to a valid queue always leaves it valid,
    /// so the store need not check every line again: a status or a block
    /// reason takes part in no rule; archiving removes only tasks without
    /// open children, recording them as archived (no id repeated or
    /// orphaned, every dep still known, no cycle added); and an added task
    /// gets a free id under a live parent (made a container), with deps it
    /// checked, none its ancestor, while no line can depend on it yet (a
    /// valid queue's deps are all known), so it closes no cycle.
    pub(crate) fn keeps_valid(&self) -> bool {
        matches!(
            self,
            Patch::Add(_) | Patch::SetStatus { .. } | Patch::Block { .. } | Patch::Archive { .. }
        )
    }
}

impl Queue {
    /// Applies `patch` to a valid queue (as every load and parse leaves
    /// it); `now` is the RFC 3339 time stamped on new records. On error the
    /// queue may be half-changed and must be dropped.
    pub fn apply(&mut self, patch: &Patch, now: &str) -> Result<Vec<Change>> {
        match patch {
            Patch::Add(new) => self.add(new, now),
            Patch::SetStatus { id, status } => self.set_status(id, *status),
            Patch::Block { id, reason } => self.block(id, reason),
            Patch::Split { id, titles } => self.split(id, titles, now),
            Patch::Plan {
                parent,
                tasks,
                update,
            } => self.plan(parent.as_ref(), tasks, *update, now),
            Patch::Archive { id, commit } => self.archive(id, commit.as_deref(), now),
        }
    }

    /// The line index of live task `id`, or why it cannot be changed.
    pub(super) fn live_position(&self, id: &TaskId) -> Result<usize> {
        if let Some(index) = self.tasks.position(id.as_str())
            && !self.done.contains(id.as_str())
        {
            return Ok(index);
        }
        if let Some(line) = self.done.line_of(id.as_str()) {
            return Err(Error::refused(format!(
                "task {id} is archived ({DONE_FILE} line {line}); archived tasks do not change"
            )));
        }
        Err(Error::NotFound {
            id: id.to_string(),
            place: TASKS_FILE,
        })
    }

    fn add(&mut self, new: &NewTask, now: &str) -> Result<Vec<Change>> {
        let title = new.title.trim();
        if title.is_empty() {
            return Err(Error::refused(
                "a task needs a title; pass a non-empty TITLE",
            ));
        }
        super::bounds::check(title, new.body.as_deref(), &new.verify)?;
        let parent = match (&new.id, &new.parent) {
            (Some(id), Some(parent)) if id.parent().as_ref() != Some(parent) => {
                return Err(Error::refused(format!(
                    "id {id} is not a child of {parent}; drop --parent or pick an id like {parent}.N"
                )));
            }
            (Some(id), _) => id.parent(),
            (None, parent) => parent.clone(),
        };
        let mut changes = Vec::new();
        let parent_index = match &parent {
            Some(parent) => Some(self.live_position(parent)?),
            None => None,
        };
        let id = match &new.id {
            Some(id) => {
                self.check_free(id)?;
                id.clone()
            }
            None => match &parent {
                Some(parent) => self.next_child_id(parent),
                None => self.next_top_level_id(),
            },
        };
        for dep in &new.deps {
            if dep == &id {
                return Err(Error::refused(format!("task {id} cannot depend on itself")));
            }
            if dep.is_ancestor_of(id.as_str()) {
                return Err(Error::refused(format!(
                    "task {id} cannot depend on its own ancestor {dep}, which is done only after it; drop --dep {dep}"
                )));
            }
            if self.tasks.position(dep.as_str()).is_none() && !self.done.contains(dep.as_str()) {
                return Err(Error::NotFound {
                    id: dep.to_string(),
                    place: "tasks.jsonl or tasks-done.jsonl (given with --dep)",
                });
            }
        }
        let at = match (&parent, parent_index) {
            (Some(parent), Some(parent_index)) => {
                if self.tasks.lines()[parent_index]
                    .task
                    .as_ref()
                    .is_some_and(|t| t.leaf)
                {
                    self.tasks.edit(parent_index, |object| {
                        object.insert("leaf".into(), false.into());
                    })?;
                    changes.push(Change::BecameContainer(parent.clone()));
                }
                self.subtree_end(parent)
            }
            _ => self.tasks.lines().len(),
        };
        let deps = new.deps.iter().map(|dep| dep.as_str().into()).collect();
        let text = TaskText {
            title,
            body: new.body.as_deref(),
            acceptance: &new.acceptance,
            files: &new.files,
            verify: &new.verify,
            deps,
        };
        let tags = [
            ("source", new.source.as_deref()),
            ("kind", new.kind.as_deref()),
        ];
        let object = new_line(&id, true, text, &tags, now);
        self.tasks.insert(at, object)?;
        changes.push(Change::Added(id));
        Ok(changes)
    }

    /// Refuses an explicit id that either file already uses.
    fn check_free(&self, id: &TaskId) -> Result<()> {
        if let Some(index) = self.tasks.position(id.as_str()) {
            return Err(Error::refused(format!(
                "id {id} is taken ({TASKS_FILE} line {}); omit --id to get a free one",
                index + 1
            )));
        }
        if let Some(line) = self.done.line_of(id.as_str()) {
            return Err(Error::refused(format!(
                "id {id} was used by an archived task ({DONE_FILE} line {line}); archived ids are never reused"
            )));
        }
        Ok(())
    }

    /// Line indexes of every task below the task on line `index` of
    /// `tasks.jsonl`.
    fn descendants(&self, index: usize) -> Vec<usize> {
        let id = &self.task_at(index).id;
        self.tasks
            .tasks()
            .filter(|(_, task)| id.is_ancestor_of(task.id.as_str()))
            .map(|(index, _)| index)
            .collect()
    }

    /// Whether a task below `id` is still open.
    fn has_open_descendant(&self, id: &TaskId) -> bool {
        self.tasks.tasks().any(|(_, task)| {
            id.is_ancestor_of(task.id.as_str()) && !self.done.contains(task.id.as_str())
        })
    }

    /// The line index just past the last line of `parent`'s subtree.
    pub(super) fn subtree_end(&self, parent: &TaskId) -> usize {
        let last = self
            .tasks
            .tasks()
            .filter(|(_, task)| task.id == *parent || parent.is_ancestor_of(task.id.as_str()))
            .map(|(index, _)| index)
            .max()
            .expect("the parent itself is in the file");
        last + 1
    }

    fn set_status(&mut self, id: &TaskId, status: Status) -> Result<Vec<Change>> {
        let index = self.live_position(id)?;
        let task = self.task_at(index);
        let (leaf, from) = (task.leaf, task.status);
        if !leaf && status != Status::Pending {
            return Err(Error::Refused {
                message: format!(
                    "task {id} is a container (\"leaf\": false); only leaf tasks are worked on"
                ),
                hint: Some(format!("`ralph task tree` shows the leaves under {id}")),
            });
        }
        self.tasks.edit(index, |object| {
            object.insert("status".into(), status.as_str().into());
            if status != Status::Blocked {
                object.shift_remove("blocked_reason");
            }
        })?;
        Ok(vec![Change::Status {
            id: id.clone(),
            from,
            to: status,
        }])
    }

    fn block(&mut self, id: &TaskId, reason: &str) -> Result<Vec<Change>> {
        let reason = reason.trim();
        if reason.is_empty() {
            return Err(Error::refused(
                "a blocked task needs a reason; pass --reason TEXT",
            ));
        }
        let index = self.live_position(id)?;
        let from = self.task_at(index).status;
        self.tasks.edit(index, |object| {
            object.insert("status".into(), Status::Blocked.as_str().into());
            object.insert("blocked_reason".into(), reason.into());
        })?;
        Ok(vec![Change::Status {
            id: id.clone(),
            from,
            to: Status::Blocked,
        }])
    }

    fn split(&mut self, id: &TaskId, titles: &[String], now: &str) -> Result<Vec<Change>> {
        let index = self.live_position(id)?;
        let task = self.task_at(index);
        let (leaf, status) = (task.leaf, task.status);
        if !leaf {
            return Err(Error::Refused {
                message: format!("task {id} is already a container"),
                hint: Some(format!(
                    "add children with `ralph task add TITLE --parent {id}`"
                )),
            });
        }
        if titles.is_empty() || titles.iter().any(|title| title.trim().is_empty()) {
            return Err(Error::refused("every child needs a non-empty title"));
        }
        for title in titles {
            super::bounds::check(title.trim(), None, &[])?;
        }
        self.tasks.edit(index, |object| {
            object.insert("leaf".into(), false.into());
        })?;
        // Work in flight carries on in the first child.
        let first_status = match status {
            Status::Active | Status::Ready => Status::Active,
            _ => Status::Pending,
        };
        let mut children = Vec::new();
        for (n, title) in titles.iter().enumerate() {
            let child = self.next_child_id(id);
            let text = TaskText {
                title: title.trim(),
                ..TaskText::default()
            };
            let mut object = new_line(&child, true, text, &[], now);
            if n == 0 {
                object.insert("status".into(), first_status.as_str().into());
            }
            self.tasks.insert(index + 1 + n, object)?;
            children.push(child);
        }
        Ok(vec![Change::Split {
            id: id.clone(),
            children,
        }])
    }

    fn archive(&mut self, id: &TaskId, commit: Option<&str>, now: &str) -> Result<Vec<Change>> {
        let Some(index) = self.tasks.position(id.as_str()) else {
            if self.done.contains(id.as_str()) {
                return Ok(vec![Change::AlreadyArchived(id.clone())]);
            }
            return Err(Error::NotFound {
                id: id.to_string(),
                place: TASKS_FILE,
            });
        };
        let open_children: Vec<String> = self
            .descendants(index)
            .into_iter()
            .filter_map(|i| self.tasks.lines()[i].task.as_ref())
            .map(|task| task.id.to_string())
            .filter(|child| !self.done.contains(child))
            .collect();
        if !open_children.is_empty() {
            return Err(Error::refused(format!(
                "task {id} still has children in {TASKS_FILE} ({}); archive them first",
                open_children.join(", ")
            )));
        }
        let mut changes = Vec::new();
        let mut current = Some((id.clone(), index));
        while let Some((id, index)) = current.take() {
            if self.done.contains(id.as_str()) {
                // Appended before a crash: only the removal is left to do.
                changes.push(Change::AlreadyArchived(id.clone()));
            } else {
                let mut record = self.tasks.object(index)?;
                record.insert("status".into(), Status::Complete.as_str().into());
                record.insert("completed".into(), now.into());
                if let Some(commit) = commit {
                    record.insert("commit".into(), commit.into());
                }
                self.done.append(id.as_str(), &record);
                changes.push(Change::Archived(id.clone()));
            }
            // Descendants left over from a crash are archived already.
            let mut remove = self.descendants(index);
            remove.push(index);
            remove.sort_unstable();
            for line in remove.into_iter().rev() {
                self.tasks.remove(line);
            }
            if let Some(parent) = id.parent()
                && let Some(parent_index) = self.tasks.position(parent.as_str())
                && !self.has_open_descendant(&parent)
            {
                current = Some((parent, parent_index));
            }
        }
        Ok(changes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: &str = "2026-01-02T03:04:05Z";

    fn queue(tasks: &str, done: &str) -> Queue {
        Queue::parse(tasks.as_bytes(), done.as_bytes()).unwrap()
    }

    fn id(text: &str) -> TaskId {
        TaskId::parse(text).unwrap()
    }

    fn add(q: &mut Queue, title: &str, parent: Option<&str>) -> Vec<Change> {
        q.apply(
            &Patch::Add(NewTask {
                title: title.into(),
                parent: parent.map(id),
                ..NewTask::default()
            }),
            NOW,
        )
        .unwrap()
    }

    #[test]
    fn add_allocates_ids_and_places_children_in_their_subtree() {
        let mut q = Queue::empty();
        assert_eq!(add(&mut q, "a", None), [Change::Added(id("A"))]);
        assert_eq!(add(&mut q, "b", None), [Change::Added(id("B"))]);
        assert_eq!(
            add(&mut q, "a1", Some("A")),
            [Change::BecameContainer(id("A")), Change::Added(id("A.1"))]
        );
        assert_eq!(add(&mut q, "a2", Some("A")), [Change::Added(id("A.2"))]);
        let order: Vec<&str> = q.tasks.tasks().map(|(_, t)| t.id.as_str()).collect();
        assert_eq!(order, ["A", "A.1", "A.2", "B"]);
        assert_eq!(
            q.tasks.line_text(1),
            r#"{"id":"A.1","title":"a1","status":"pending","leaf":true,"created":"2026-01-02T03:04:05Z"}"#
        );
        q.validate().unwrap();
    }

    #[test]
    fn add_writes_the_richer_fields_in_order_and_only_when_given() {
        let mut q = queue(
            "{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n",
            "",
        );
        let changes = q
            .apply(
                &Patch::Add(NewTask {
                    title: "b".into(),
                    body: Some("details".into()),
                    deps: vec![id("A")],
                    acceptance: vec!["returns 401".into(), "logs it".into()],
                    files: vec!["src/auth.rs".into()],
                    verify: vec!["cargo test auth".into()],
                    source: Some("prd.md#R2".into()),
                    kind: Some("feature".into()),
                    ..NewTask::default()
                }),
                NOW,
            )
            .unwrap();
        assert_eq!(changes, [Change::Added(id("B"))]);
        assert_eq!(
            q.tasks.line_text(1),
            concat!(
                r#"{"id":"B","title":"b","status":"pending","leaf":true,"body":"details","#,
                r#""acceptance":["returns 401","logs it"],"files":["src/auth.rs"],"#,
                r#""verify":["cargo test auth"],"deps":["A"],"source":"prd.md#R2","#,
                r#""kind":"feature","created":"2026-01-02T03:04:05Z"}"#
            )
        );
        // Empty lists and absent strings write nothing.
        add(&mut q, "c", None);
        assert_eq!(
            q.tasks.line_text(2),
            r#"{"id":"C","title":"c","status":"pending","leaf":true,"created":"2026-01-02T03:04:05Z"}"#
        );
        q.validate().unwrap();
    }

    #[test]
    fn add_refuses_taken_archived_and_unknown_ids() {
        let mut q = queue(
            "{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n",
            "{\"id\":\"B\"}\n",
        );
        let with_id = |text: &str| {
            Patch::Add(NewTask {
                title: "x".into(),
                id: Some(id(text)),
                ..NewTask::default()
            })
        };
        assert_eq!(
            q.apply(&with_id("A"), NOW).unwrap_err().to_string(),
            "id A is taken (tasks.jsonl line 1); omit --id to get a free one"
        );
        assert_eq!(
            q.apply(&with_id("B"), NOW).unwrap_err().to_string(),
            "id B was used by an archived task (tasks-done.jsonl line 1); archived ids are never reused"
        );
        assert_eq!(
            q.apply(&with_id("C.1"), NOW).unwrap_err().to_string(),
            "no task \"C\" in tasks.jsonl"
        );
        assert_eq!(
            q.apply(&with_id("B.1"), NOW).unwrap_err().to_string(),
            "task B is archived (tasks-done.jsonl line 1); archived tasks do not change"
        );
        let with_deps = |parent: &str, deps: &[&str]| {
            Patch::Add(NewTask {
                title: "x".into(),
                parent: Some(id(parent)),
                deps: deps.iter().map(|dep| id(dep)).collect(),
                ..NewTask::default()
            })
        };
        assert_eq!(
            q.apply(&with_deps("A", &["A"]), NOW)
                .unwrap_err()
                .to_string(),
            "task A.1 cannot depend on its own ancestor A, which is done only after it; drop --dep A"
        );
        assert_eq!(
            q.apply(&with_deps("A", &["C"]), NOW)
                .unwrap_err()
                .to_string(),
            "no task \"C\" in tasks.jsonl or tasks-done.jsonl (given with --dep)"
        );
        // Refused before anything changed: the queue is as it was.
        assert_eq!(
            q.tasks.render(),
            "{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n"
        );
    }

    #[test]
    fn split_makes_children_and_carries_work_in_flight() {
        let mut q = queue(
            "{\"id\":\"A\",\"title\":\"a\",\"status\":\"active\",\"leaf\":true}\n{\"id\":\"B\",\"title\":\"b\",\"status\":\"pending\",\"leaf\":true}\n",
            "",
        );
        let changes = q
            .apply(
                &Patch::Split {
                    id: id("A"),
                    titles: vec!["x".into(), "y".into()],
                },
                NOW,
            )
            .unwrap();
        assert_eq!(
            changes,
            [Change::Split {
                id: id("A"),
                children: vec![id("A.1"), id("A.2")]
            }]
        );
        assert_eq!(q.next().unwrap().id.as_str(), "A.1");
        assert!(!q.get("A").unwrap().leaf);
        q.validate().unwrap();
    }

    #[test]
    fn archiving_the_last_child_archives_the_parents() {
        let mut q = queue(
            concat!(
                "{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":false}\n",
                "{\"id\":\"A.1\",\"title\":\"a1\",\"status\":\"pending\",\"leaf\":false}\n",
                "{\"id\":\"A.1.1\",\"title\":\"a11\",\"status\":\"complete\",\"leaf\":true,\"x\":1}\n",
                "{\"id\":\"B\",\"title\":\"b\",\"status\":\"pending\",\"leaf\":true}\n",
            ),
            "",
        );
        let changes = q
            .apply(
                &Patch::Archive {
                    id: id("A.1.1"),
                    commit: Some("abc".into()),
                },
                NOW,
            )
            .unwrap();
        assert_eq!(
            changes,
            [
                Change::Archived(id("A.1.1")),
                Change::Archived(id("A.1")),
                Change::Archived(id("A"))
            ]
        );
        assert_eq!(
            q.tasks.render(),
            "{\"id\":\"B\",\"title\":\"b\",\"status\":\"pending\",\"leaf\":true}\n"
        );
        assert_eq!(
            q.done.pending_text(),
            concat!(
                "{\"id\":\"A.1.1\",\"title\":\"a11\",\"status\":\"complete\",\"leaf\":true,\"x\":1,\"completed\":\"2026-01-02T03:04:05Z\",\"commit\":\"abc\"}\n",
                "{\"id\":\"A.1\",\"title\":\"a1\",\"status\":\"complete\",\"leaf\":false,\"completed\":\"2026-01-02T03:04:05Z\",\"commit\":\"abc\"}\n",
                "{\"id\":\"A\",\"title\":\"a\",\"status\":\"complete\",\"leaf\":false,\"completed\":\"2026-01-02T03:04:05Z\",\"commit\":\"abc\"}\n",
            )
        );
    }

    #[test]
    fn archive_repeated_after_a_crash_appends_nothing() {
        // The record reached the archive, the removal did not.
        let mut q = queue(
            "{\"id\":\"A\",\"title\":\"a\",\"status\":\"complete\",\"leaf\":true}\n",
            "{\"id\":\"A\",\"title\":\"a\",\"completed\":\"x\"}\n",
        );
        let changes = q
            .apply(
                &Patch::Archive {
                    id: id("A"),
                    commit: None,
                },
                NOW,
            )
            .unwrap();
        assert_eq!(changes, [Change::AlreadyArchived(id("A"))]);
        assert_eq!(q.done.pending_text(), "");
        assert_eq!(q.tasks.render(), "");
        let again = q
            .apply(
                &Patch::Archive {
                    id: id("A"),
                    commit: None,
                },
                NOW,
            )
            .unwrap();
        assert_eq!(again, [Change::AlreadyArchived(id("A"))]);
    }

    /// Whether the parent follows a leaf into the archive depends on all
    /// its children, wherever they are: before the leaf, after it, or a
    /// grandchild.
    #[test]
    fn archiving_a_leaf_takes_its_parent_only_when_nothing_under_it_is_open() {
        let line = |id: &str, leaf: bool| {
            format!("{{\"id\":\"{id}\",\"title\":\"t\",\"status\":\"complete\",\"leaf\":{leaf}}}\n")
        };
        let archive = |lines: &[(&str, bool)], target: &str| {
            let text: String = lines.iter().map(|(id, leaf)| line(id, *leaf)).collect();
            let mut q = queue(&text, "");
            let changes = q
                .apply(
                    &Patch::Archive {
                        id: id(target),
                        commit: None,
                    },
                    NOW,
                )
                .unwrap();
            let left: Vec<String> = q.tasks.tasks().map(|(_, t)| t.id.to_string()).collect();
            (changes, left)
        };
        // An open sibling before the leaf (the search wraps around).
        let (changes, left) = archive(&[("A", false), ("A.1", true), ("A.2", true)], "A.2");
        assert_eq!(changes, [Change::Archived(id("A.2"))]);
        assert_eq!(left, ["A", "A.1"]);
        // An open grandchild before the leaf, under a sibling container.
        let (changes, left) = archive(
            &[("A", false), ("A.1", false), ("A.1.1", true), ("A.2", true)],
            "A.2",
        );
        assert_eq!(changes, [Change::Archived(id("A.2"))]);
        assert_eq!(left, ["A", "A.1", "A.1.1"]);
        // The last child, with another tree after it: A follows, B stays.
        let (changes, left) = archive(&[("A", false), ("A.1", true), ("B", true)], "A.1");
        assert_eq!(
            changes,
            [Change::Archived(id("A.1")), Change::Archived(id("A"))]
        );
        assert_eq!(left, ["B"]);
    }

    #[test]
    fn archive_refuses_a_parent_with_open_children() {
        let mut q = queue(
            "{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":false}\n{\"id\":\"A.1\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":true}\n",
            "",
        );
        assert_eq!(
            q.apply(
                &Patch::Archive {
                    id: id("A"),
                    commit: None
                },
                NOW
            )
            .unwrap_err()
            .to_string(),
            "task A still has children in tasks.jsonl (A.1); archive them first"
        );
    }

    #[test]
    fn status_changes_refuse_containers_and_clear_block_reasons() {
        let mut q = queue(
            "{\"id\":\"A\",\"title\":\"a\",\"status\":\"pending\",\"leaf\":false}\n{\"id\":\"A.1\",\"title\":\"a\",\"status\":\"blocked\",\"leaf\":true,\"blocked_reason\":\"why\"}\n",
            "",
        );
        assert_eq!(
            q.apply(
                &Patch::SetStatus {
                    id: id("A"),
                    status: Status::Active
                },
                NOW
            )
            .unwrap_err()
            .to_string(),
            "task A is a container (\"leaf\": false); only leaf tasks are worked on"
        );
        q.apply(
            &Patch::SetStatus {
                id: id("A.1"),
                status: Status::Active,
            },
            NOW,
        )
        .unwrap();
        assert_eq!(
            q.tasks.line_text(1),
            r#"{"id":"A.1","title":"a","status":"active","leaf":true}"#
        );
    }
}
