//! Adding a planned tree of tasks (`ralph plan`): each task is known by its
//! `source`, so planning the same document again adds only what is new.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::change::{Change, Planned};
use super::error::Result;
use super::id::TaskId;
use super::line::{TaskText, new_line};
use super::model::Status;
use super::queue::{Queue, numbered};

/// One task of a plan, as `ralph plan` compiled it from a document.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlannedTask {
    /// Where it comes from (`prds/auth.md#FR-3`); its identity across plans.
    pub source: String,
    /// The index of its parent in the plan, or `None` for the plan's root
    /// (placed under the patch's parent, or at the top level). Parents come
    /// before their children.
    pub parent: Option<usize>,
    /// Whether it is workable or only organises children.
    pub leaf: bool,
    /// One-line description.
    pub title: String,
    /// Details for the prompt.
    pub body: Option<String>,
    /// What must hold when it is done.
    pub acceptance: Vec<String>,
    /// The files to focus on.
    pub files: Vec<String>,
    /// Its own checks, run before its merge.
    pub verify: Vec<String>,
    /// Indexes of the planned tasks that must be done first.
    pub deps: Vec<usize>,
}

/// Where a source's task is.
enum Found {
    Live(usize),
    Archived(Map<String, Value>),
}

impl Queue {
    /// Adds the tasks of `plan` that no task of either file has the source
    /// of, under `parent` (or at the top level), and reports what became
    /// of each planned task. With `update`, a pending task whose text
    /// changed is rewritten.
    pub(super) fn plan(
        &mut self,
        parent: Option<&TaskId>,
        plan: &[PlannedTask],
        update: bool,
        now: &str,
    ) -> Result<Vec<Change>> {
        let mut changes = Vec::new();
        let found = self.sources(plan)?;
        // A container is needed when a task below it is new.
        let mut needed = vec![false; plan.len()];
        for (index, task) in plan.iter().enumerate().rev() {
            let new_leaf = task.leaf && !found.contains_key(&index);
            if new_leaf || needed[index] {
                needed[index] = true;
                if let Some(up) = task.parent {
                    needed[up] = true;
                }
            }
        }
        if let Some(parent) = parent {
            let index = self.live_position(parent)?;
            if needed.iter().any(|&n| n) && self.task_at(index).leaf {
                self.tasks.edit(index, |object| {
                    object.insert("leaf".into(), false.into());
                })?;
                changes.push(Change::BecameContainer(parent.clone()));
            }
        }
        // Ids first (a task may depend on one planned after it), then lines.
        let mut ids: Vec<Option<TaskId>> = vec![None; plan.len()];
        let mut new = vec![false; plan.len()];
        let mut allocated: HashMap<Option<TaskId>, u64> = HashMap::new();
        for (index, task) in plan.iter().enumerate() {
            match found.get(&index) {
                Some(Found::Live(line)) => {
                    let line = *line;
                    let task_id = self.task_at(line).id.clone();
                    if needed[index] && !task.leaf && self.task_at(line).leaf {
                        // Someone made the container a leaf; new tasks go below it.
                        self.tasks.edit(line, |object| {
                            object.insert("leaf".into(), false.into());
                        })?;
                        changes.push(Change::BecameContainer(task_id.clone()));
                    }
                    ids[index] = Some(task_id);
                }
                // An archived container gets a new one when something new
                // goes below it (children of an archived task are refused).
                Some(Found::Archived(record)) if task.leaf || !needed[index] => {
                    ids[index] = record
                        .get("id")
                        .and_then(Value::as_str)
                        .and_then(|id| TaskId::parse(id).ok());
                }
                _ if needed[index] => {
                    let under = match task.parent {
                        Some(up) => ids[up].clone(),
                        None => parent.cloned(),
                    };
                    ids[index] = Some(self.allocate(under, &mut allocated));
                    new[index] = true;
                }
                _ => {}
            }
        }
        let deps_of = |task: &PlannedTask| -> Vec<Value> {
            let mut deps: Vec<Value> = Vec::new();
            for dep in task.deps.iter().filter_map(|&dep| ids[dep].as_ref()) {
                let dep = Value::from(dep.as_str());
                if !deps.contains(&dep) {
                    deps.push(dep);
                }
            }
            deps
        };
        for (index, task) in plan.iter().enumerate() {
            let Some(id) = ids[index].clone() else {
                continue;
            };
            let deps = deps_of(task);
            if new[index] {
                let at = match id.parent() {
                    Some(up) => self.subtree_end(&up),
                    None => self.tasks.lines().len(),
                };
                self.tasks
                    .insert(at, planned_object(&id, task, deps, now))?;
                changes.push(Change::Planned {
                    index,
                    id,
                    outcome: Planned::Added,
                });
                continue;
            }
            let outcome = match &found[&index] {
                Found::Live(_) => {
                    let line = self
                        .tasks
                        .position(id.as_str())
                        .expect("a found task is in the file");
                    let object = self.tasks.object(line)?;
                    let status = self.task_at(line).status;
                    if same_text(&object, task, &deps) {
                        Planned::Unchanged
                    } else {
                        let rewritten = update && status == Status::Pending;
                        if rewritten {
                            self.tasks
                                .edit(line, |object| text_of(task, deps).write(object))?;
                        }
                        Planned::Changed { status, rewritten }
                    }
                }
                Found::Archived(record) => Planned::Archived {
                    changed: !same_text(record, task, &deps),
                },
            };
            changes.push(Change::Planned { index, id, outcome });
        }
        Ok(changes)
    }

    /// The task of each planned source in either file; a live task wins
    /// over an archived one with the same source.
    fn sources(&self, plan: &[PlannedTask]) -> Result<HashMap<usize, Found>> {
        let wanted: HashMap<&str, usize> = plan
            .iter()
            .enumerate()
            .map(|(index, task)| (task.source.as_str(), index))
            .collect();
        let mut found = HashMap::new();
        for id in self.done.ids() {
            if let Some(record) = self.done.record(id)
                && let Some(&index) = record
                    .get("source")
                    .and_then(Value::as_str)
                    .and_then(|source| wanted.get(source))
                && self.tasks.position(id).is_none()
            {
                found.insert(index, Found::Archived(record));
            }
        }
        for line in self.tasks.tasks().map(|(line, _)| line) {
            if self.done.contains(self.task_at(line).id.as_str()) {
                continue;
            }
            let object = self.tasks.object(line)?;
            if let Some(&index) = object
                .get("source")
                .and_then(Value::as_str)
                .and_then(|source| wanted.get(source))
                && !matches!(found.get(&index), Some(Found::Live(_)))
            {
                found.insert(index, Found::Live(line));
            }
        }
        Ok(found)
    }

    /// The next free id under `parent` (top level for `None`), counting the
    /// ids this plan allocated already (its lines are inserted later).
    fn allocate(
        &self,
        parent: Option<TaskId>,
        allocated: &mut HashMap<Option<TaskId>, u64>,
    ) -> TaskId {
        let taken = allocated.entry(parent.clone()).or_insert(0);
        *taken += 1;
        numbered(
            parent.as_ref(),
            self.highest_number(parent.as_ref()) + *taken,
        )
    }
}

/// The text a document gives a planned task.
fn text_of(task: &PlannedTask, deps: Vec<Value>) -> TaskText<'_> {
    TaskText {
        title: &task.title,
        body: task.body.as_deref(),
        acceptance: &task.acceptance,
        files: &task.files,
        verify: &task.verify,
        deps,
    }
}

/// The line of a new planned task.
fn planned_object(
    id: &TaskId,
    task: &PlannedTask,
    deps: Vec<Value>,
    now: &str,
) -> Map<String, Value> {
    let tags = [("source", Some(task.source.as_str()))];
    new_line(id, task.leaf, text_of(task, deps), &tags, now)
}

/// Whether `object` holds the text `task` would write.
fn same_text(object: &Map<String, Value>, task: &PlannedTask, deps: &[Value]) -> bool {
    let mut wanted = Map::new();
    text_of(task, deps.to_vec()).write(&mut wanted);
    ["title", "body", "acceptance", "files", "verify", "deps"]
        .iter()
        .all(|key| object.get(*key) == wanted.get(*key))
}
