//! The queue: both task files read together, validated as a whole, and the
//! questions the loop and the commands ask of them.

use std::collections::HashMap;

use super::done::DoneLog;
use super::error::{Error, Result};
use super::file::TaskFile;
use super::id::{self, TaskId};
use super::model::{Status, Task};

use crate::paths::DONE_FILE;
use crate::paths::TASKS_FILE;

/// `tasks.jsonl` and `tasks-done.jsonl`, parsed and checked.
#[derive(Clone, Debug)]
pub struct Queue {
    /// The active tasks.
    pub tasks: TaskFile,
    /// The archive.
    pub done: DoneLog,
}

/// How many tasks of `tasks.jsonl` have each status, and how many are archived.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Tasks per status, indexed like `Status::ALL`.
    pub by_status: [usize; 5],
    /// Distinct archived ids.
    pub archived: usize,
}

impl Counts {
    /// Tasks in `tasks.jsonl`.
    pub fn active_total(&self) -> usize {
        self.by_status.iter().sum()
    }

    /// Tasks with `status`.
    pub fn with(&self, status: Status) -> usize {
        self.by_status[status_index(status)]
    }
}

fn status_index(status: Status) -> usize {
    Status::ALL
        .iter()
        .position(|s| *s == status)
        .expect("ALL lists every status")
}

/// A task of the tree view: one in `tasks.jsonl`, or an archived child of one.
#[derive(Clone, Debug, PartialEq)]
pub struct TreeNode {
    /// The task's id.
    pub id: String,
    /// Its title (archived records may lack one: empty then).
    pub title: String,
    /// Its status; `None` when archived.
    pub status: Option<Status>,
    /// Whether it is a leaf.
    pub leaf: bool,
    /// Descendants done (archived or complete).
    pub done: usize,
    /// All descendants, archived ones included.
    pub total: usize,
    /// Direct children in file order, archived ones first.
    pub children: Vec<TreeNode>,
}

impl Queue {
    /// Parses and validates both files' bytes.
    pub fn parse(tasks: &[u8], done: &[u8]) -> Result<Queue> {
        Queue::parse_owned(tasks.to_vec(), done)
    }

    /// `parse`, keeping the bytes of `tasks.jsonl` rather than a copy.
    pub fn parse_owned(tasks: Vec<u8>, done: &[u8]) -> Result<Queue> {
        let queue = Queue {
            tasks: TaskFile::parse_owned(TASKS_FILE, tasks)?,
            done: DoneLog::parse(DONE_FILE, done)?,
        };
        queue.validate()?;
        Ok(queue)
    }

    /// An empty queue (no files yet).
    pub fn empty() -> Queue {
        Queue::parse(b"", b"").expect("empty files are valid")
    }

    /// Checks the rules that span lines: unique ids, existing parents, no
    /// leaf with children, known deps, no dependency cycle.
    pub fn validate(&self) -> Result<()> {
        if let Some((index, first)) = self.tasks.first_duplicate() {
            return Err(self.malformed(
                index,
                format!(
                    "duplicate id {:?} (first on line {}); give one of them a new id",
                    self.task_at(index).id.as_str(),
                    first + 1
                ),
            ));
        }
        self.check_lines()?;
        self.check_cycles()
    }

    /// Checks each task's parent and deps.
    fn check_lines(&self) -> Result<()> {
        for (index, task) in self.tasks.tasks() {
            let id = task.id.as_str();
            if let Some(parent) = id::parent_of(id) {
                match self.tasks.position(parent) {
                    Some(parent_index) => {
                        let parent_task = self.task_at(parent_index);
                        if parent_task.leaf {
                            return Err(self.malformed(
                                parent_index,
                                format!(
                                    "task {parent:?} has \"leaf\": true but has children ({id} on line {}); set \"leaf\": false",
                                    index + 1
                                ),
                            ));
                        }
                    }
                    None if self.done.contains(parent) => {
                        return Err(self.malformed(
                            index,
                            format!("parent {parent:?} of task {id:?} is archived; give the task a new id (`ralph task add` picks one)"),
                        ));
                    }
                    None => {
                        return Err(self.malformed(
                            index,
                            format!("parent {parent:?} of task {id:?} does not exist; add the parent or fix the id"),
                        ));
                    }
                }
            }
            for dep_id in &task.deps {
                let dep = dep_id.as_str();
                if self.tasks.position(dep).is_none() && !self.done.contains(dep) {
                    return Err(self.malformed(
                        index,
                        format!("task {id:?} depends on {dep:?}, which is in neither {TASKS_FILE} nor {DONE_FILE}; fix or remove it in \"deps\""),
                    ));
                }
                if dep_id.is_ancestor_of(id) {
                    return Err(self.malformed(
                        index,
                        format!("task {id:?} depends on its own ancestor {dep:?}, which is done only after it; remove it from \"deps\""),
                    ));
                }
            }
        }
        Ok(())
    }

    fn check_cycles(&self) -> Result<()> {
        let (tasks, done) = (&self.tasks, &self.done);
        // The lines of a line's live deps: an archived dep is satisfied and
        // ends every path.
        let live_deps = |index: usize| {
            let deps = tasks.lines()[index].task.iter().flat_map(|task| &task.deps);
            deps.filter(|dep| !done.contains(dep.as_str()))
                .filter_map(|dep| tasks.position(dep.as_str()))
        };
        let Some(cycle) = find_cycle(tasks.lines().len(), live_deps) else {
            return Ok(());
        };
        let mut path: Vec<&str> = cycle.iter().map(|&n| self.task_at(n).id.as_str()).collect();
        path.push(path[0]);
        Err(self.malformed(
            cycle[0],
            format!(
                "dependency cycle {}; remove one of these deps",
                path.join(" -> ")
            ),
        ))
    }

    pub(super) fn task_at(&self, index: usize) -> &Task {
        self.tasks.lines()[index]
            .task
            .as_ref()
            .expect("indexed lines hold tasks")
    }

    fn malformed(&self, index: usize, message: String) -> Error {
        Error::Malformed {
            file: self.tasks.name().to_owned(),
            line: index + 1,
            message,
        }
    }

    /// The tasks of `tasks.jsonl` not archived, in file order, with their
    /// line indexes. A crash between an archive's two writes leaves a line
    /// whose id is in both files: it reads as archived in every view (the
    /// next archive or run removes it), so only the loop's clean-up and
    /// the writers look at `tasks` itself.
    pub fn live_tasks(&self) -> impl Iterator<Item = (usize, &Task)> {
        (self.tasks.tasks()).filter(|(_, task)| !self.done.contains(task.id.as_str()))
    }

    /// The live task `id`: in `tasks.jsonl` and not archived.
    pub fn get(&self, id: &str) -> Option<&Task> {
        self.tasks.get(id).filter(|_| !self.done.contains(id))
    }

    /// The whole line of live task `id` as a JSON object, every field kept.
    pub fn object(&self, id: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
        self.get(id)?;
        self.tasks.object(self.tasks.position(id)?).ok()
    }

    /// The items of live task `id`'s array-of-strings field `key`
    /// (`acceptance`, `files`, `verify`); empty when it has none.
    pub fn string_list(&self, id: &str, key: &str) -> Vec<String> {
        self.object(id)
            .map(|object| super::model::string_list(&object, key))
            .unwrap_or_default()
    }

    /// Whether `id` is done: archived, or marked complete.
    pub fn is_done(&self, id: &str) -> bool {
        self.done.contains(id)
            || self
                .get(id)
                .is_some_and(|task| task.status == Status::Complete)
    }

    /// The task the loop works on next: the first in-flight leaf (`active`,
    /// or `ready` awaiting review) in file order, else the first `pending`
    /// leaf whose deps, and its ancestors' deps, are all done. Tasks that are
    /// blocked or under a blocked ancestor, and ids already archived, are
    /// skipped.
    pub fn next(&self) -> Option<&Task> {
        self.next_except(|_| false)
    }

    /// [`Queue::next`] among the tasks `held` does not claim (a task
    /// another parallel worker holds): the first in-flight leaf not held,
    /// else the first workable `pending` one not held.
    pub fn next_except(&self, held: impl Fn(&str) -> bool) -> Option<&Task> {
        let lineage = |task: &'_ Task| {
            let mut chain = vec![];
            let mut current = Some(task.id.as_str());
            while let Some(id) = current {
                if let Some(found) = self.tasks.get(id) {
                    chain.push(found);
                }
                current = id::parent_of(id);
            }
            chain
        };
        let workable = |task: &Task| {
            task.leaf
                && !held(task.id.as_str())
                && !self.done.contains(task.id.as_str())
                && lineage(task).iter().all(|t| t.status != Status::Blocked)
        };
        let in_flight =
            self.tasks.tasks().map(|(_, task)| task).find(|task| {
                matches!(task.status, Status::Active | Status::Ready) && workable(task)
            });
        in_flight.or_else(|| {
            self.tasks.tasks().map(|(_, task)| task).find(|task| {
                task.status == Status::Pending
                    && workable(task)
                    && lineage(task)
                        .iter()
                        .all(|t| t.deps.iter().all(|dep| self.is_done(dep.as_str())))
            })
        })
    }

    /// The next free top-level id: one past the highest in either file.
    pub fn next_top_level_id(&self) -> TaskId {
        numbered(None, self.highest_number(None) + 1)
    }

    /// The next free child id under `parent`, counting both files.
    pub fn next_child_id(&self, parent: &TaskId) -> TaskId {
        numbered(Some(parent), self.highest_number(Some(parent)) + 1)
    }

    /// The highest number (letters at the top level) among the ids under
    /// `parent` in either file; 0 when there are none.
    pub(super) fn highest_number(&self, parent: Option<&TaskId>) -> u64 {
        let under = parent.map(TaskId::as_str);
        self.all_ids()
            .filter(|id| id::parent_of(id) == under)
            .filter_map(|id| match under {
                Some(_) => id::child_number(id::last_segment(id)),
                None => id::letters_number(id),
            })
            .max()
            .unwrap_or(0)
    }

    /// Every id in either file (an id may appear twice after a crash).
    pub fn all_ids(&self) -> impl Iterator<Item = &str> {
        self.tasks
            .tasks()
            .map(|(_, task)| task.id.as_str())
            .chain(self.done.ids())
    }

    /// Line indexes of the live direct children of `id` in `tasks.jsonl`.
    pub fn children(&self, id: &str) -> Vec<usize> {
        self.live_tasks()
            .filter(|(_, task)| id::parent_of(task.id.as_str()) == Some(id))
            .map(|(index, _)| index)
            .collect()
    }

    /// Status counts of the live tasks and the number archived.
    pub fn counts(&self) -> Counts {
        let mut counts = Counts {
            archived: self.done.len(),
            ..Counts::default()
        };
        for (_, task) in self.live_tasks() {
            counts.by_status[status_index(task.status)] += 1;
        }
        counts
    }

    /// The hierarchy of the live tasks, with the archived children of each.
    pub fn tree(&self) -> Vec<TreeNode> {
        let live: HashMap<&str, &Task> = self
            .live_tasks()
            .map(|(_, task)| (task.id.as_str(), task))
            .collect();
        // Descendant counts: every id adds to each live ancestor.
        let mut totals: HashMap<&str, (usize, usize)> = HashMap::new();
        for id in self.all_ids().collect::<std::collections::HashSet<_>>() {
            let done = self.is_done(id);
            let mut ancestor = id::parent_of(id);
            while let Some(parent) = ancestor {
                if live.contains_key(parent) {
                    let entry = totals.entry(parent).or_default();
                    entry.0 += usize::from(done);
                    entry.1 += 1;
                }
                ancestor = id::parent_of(parent);
            }
        }
        let mut children: HashMap<&str, Vec<TreeNode>> = HashMap::new();
        for id in self.done.ids() {
            match id::parent_of(id) {
                Some(parent) if live.contains_key(parent) => {
                    let record = self.done.record(id).unwrap_or_default();
                    children.entry(parent).or_default().push(TreeNode {
                        id: id.to_owned(),
                        title: record
                            .get("title")
                            .and_then(|t| t.as_str())
                            .unwrap_or_default()
                            .to_owned(),
                        status: None,
                        leaf: record.get("leaf").and_then(|l| l.as_bool()).unwrap_or(true),
                        done: 0,
                        total: 0,
                        children: Vec::new(),
                    });
                }
                _ => {}
            }
        }
        let mut live_children: HashMap<&str, Vec<&Task>> = HashMap::new();
        let mut roots = Vec::new();
        for (_, task) in self.live_tasks() {
            match id::parent_of(task.id.as_str()) {
                Some(parent) if live.contains_key(parent) => {
                    live_children.entry(parent).or_default().push(task)
                }
                // Top level, or under a parent that reads as archived (its
                // line left in both files): shown on top, never lost.
                _ => roots.push(task),
            }
        }
        // Depth is bounded by id::MAX_DEPTH, so recursion is shallow.
        fn build<'a>(
            task: &'a Task,
            archived: &mut HashMap<&str, Vec<TreeNode>>,
            live_children: &HashMap<&str, Vec<&'a Task>>,
            totals: &HashMap<&str, (usize, usize)>,
        ) -> TreeNode {
            let id = task.id.as_str();
            let mut children = archived.remove(id).unwrap_or_default();
            for child in live_children.get(id).into_iter().flatten() {
                children.push(build(child, archived, live_children, totals));
            }
            let (done, total) = totals.get(id).copied().unwrap_or_default();
            TreeNode {
                id: id.to_owned(),
                title: task.title.to_string(),
                status: Some(task.status),
                leaf: task.leaf,
                done,
                total,
                children,
            }
        }
        roots
            .into_iter()
            .map(|task| build(task, &mut children, &live_children, &totals))
            .collect()
    }
}

/// The id numbered `n` under `parent`: `A.3`, or the letters of `n` at the
/// top level.
pub(super) fn numbered(parent: Option<&TaskId>, n: u64) -> TaskId {
    match parent {
        Some(parent) => parent.child(n),
        None => TaskId::parse(&id::letters_name(n)).expect("letter ids are valid"),
    }
}

/// The first dependency cycle among nodes `0..len`, where `deps(node)`
/// lists a node's dependencies: its nodes in dependency order, from the
/// first one met again. Nodes are started from in index order and deps
/// followed in the order `deps` gives them, so the same graph always
/// reports the same cycle. Depth-first with its own stack: a long chain
/// cannot overflow the thread's.
pub fn find_cycle<I: IntoIterator<Item = usize>>(
    len: usize,
    deps: impl Fn(usize) -> I,
) -> Option<Vec<usize>> {
    // 0 unvisited, 1 on the path, 2 done.
    let mut state = vec![0u8; len];
    let mut path = Vec::new();
    for start in 0..len {
        if state[start] != 0 {
            continue;
        }
        state[start] = 1;
        path.push((start, deps(start).into_iter()));
        while let Some((node, next)) = path.last_mut() {
            let Some(dep) = next.next() else {
                state[*node] = 2;
                path.pop();
                continue;
            };
            match state[dep] {
                0 => {
                    state[dep] = 1;
                    path.push((dep, deps(dep).into_iter()));
                }
                1 => {
                    let from = path
                        .iter()
                        .position(|(n, _)| *n == dep)
                        .expect("on the path");
                    return Some(path[from..].iter().map(|(n, _)| *n).collect());
                }
                _ => {}
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(tasks: &str, done: &str) -> Result<Queue> {
        Queue::parse(tasks.as_bytes(), done.as_bytes())
    }

    fn line(id: &str, status: &str, leaf: bool, extra: &str) -> String {
        format!(
            "{{\"id\":\"{id}\",\"title\":\"t {id}\",\"status\":\"{status}\",\"leaf\":{leaf}{extra}}}\n"
        )
    }

    fn err(tasks: &str, done: &str) -> String {
        queue(tasks, done).unwrap_err().to_string()
    }

    #[test]
    fn next_resumes_the_first_active_leaf() {
        let tasks = [
            line("A", "pending", true, ""),
            line("B", "active", true, ""),
            line("C", "in_progress", true, ""),
        ]
        .concat();
        assert_eq!(queue(&tasks, "").unwrap().next().unwrap().id.as_str(), "B");
    }

    #[test]
    fn next_resumes_a_ready_leaf_before_pending_ones() {
        let tasks = [line("A", "pending", true, ""), line("B", "ready", true, "")].concat();
        assert_eq!(queue(&tasks, "").unwrap().next().unwrap().id.as_str(), "B");
    }

    #[test]
    fn next_takes_the_first_pending_leaf_with_deps_done() {
        let tasks = [
            line("A", "pending", false, ""),
            line("A.1", "pending", true, ",\"deps\":[\"B\"]"),
            line("A.2", "pending", true, ""),
            line("B", "pending", true, ""),
        ]
        .concat();
        assert_eq!(
            queue(&tasks, "").unwrap().next().unwrap().id.as_str(),
            "A.2"
        );
        let archived = "{\"id\":\"B\"}\n";
        let tasks_b_done = tasks.replace(&line("B", "pending", true, ""), "");
        assert_eq!(
            queue(&tasks_b_done, archived)
                .unwrap()
                .next()
                .unwrap()
                .id
                .as_str(),
            "A.1"
        );
        let tasks_b_complete = tasks.replace(
            &line("B", "pending", true, ""),
            &line("B", "complete", true, ""),
        );
        assert_eq!(
            queue(&tasks_b_complete, "")
                .unwrap()
                .next()
                .unwrap()
                .id
                .as_str(),
            "A.1"
        );
    }

    #[test]
    fn next_skips_blocked_subtrees_containers_and_archived_ids() {
        let tasks = [
            line("A", "blocked", false, ""),
            line("A.1", "active", true, ""),
            line("A.2", "pending", true, ""),
            line("B", "pending", false, ""),
            line("B.1", "blocked", true, ""),
            line("B.2", "pending", true, ""),
            line("C", "pending", true, ""),
        ]
        .concat();
        let q = queue(&tasks, "").unwrap();
        assert_eq!(q.next().unwrap().id.as_str(), "B.2");
        let q = queue(&tasks, "{\"id\":\"B.2\"}\n").unwrap();
        assert_eq!(q.next().unwrap().id.as_str(), "C");
    }

    #[test]
    fn next_honours_an_ancestors_deps() {
        let tasks = [
            line("A", "pending", true, ""),
            line("B", "pending", false, ",\"deps\":[\"A\"]"),
            line("B.1", "pending", true, ""),
        ]
        .concat();
        let q = queue(
            &tasks.replace(
                &line("A", "pending", true, ""),
                &line("A", "blocked", true, ""),
            ),
            "",
        )
        .unwrap();
        assert_eq!(q.next(), None);
    }

    #[test]
    fn ids_continue_across_both_files() {
        let tasks = [
            line("A", "pending", false, ""),
            line("A.2", "pending", true, ""),
            line("C", "pending", true, ""),
        ]
        .concat();
        let q = queue(&tasks, "{\"id\":\"A.7\"}\n{\"id\":\"Z\"}\n").unwrap();
        assert_eq!(q.next_top_level_id().as_str(), "AA");
        assert_eq!(
            q.next_child_id(&TaskId::parse("A").unwrap()).as_str(),
            "A.8"
        );
        assert_eq!(
            q.next_child_id(&TaskId::parse("C").unwrap()).as_str(),
            "C.1"
        );
        assert_eq!(Queue::empty().next_top_level_id().as_str(), "A");
    }

    #[test]
    fn validation_errors_name_the_line_and_the_fix() {
        assert_eq!(
            err(
                &[
                    line("A", "pending", true, ""),
                    "\n".into(),
                    line("A", "pending", true, "")
                ]
                .concat(),
                ""
            ),
            "tasks.jsonl:3: duplicate id \"A\" (first on line 1); give one of them a new id"
        );
        assert_eq!(
            err(&line("A.1", "pending", true, ""), ""),
            "tasks.jsonl:1: parent \"A\" of task \"A.1\" does not exist; add the parent or fix the id"
        );
        assert_eq!(
            err(&line("A.1", "pending", true, ""), "{\"id\":\"A\"}\n"),
            "tasks.jsonl:1: parent \"A\" of task \"A.1\" is archived; give the task a new id (`ralph task add` picks one)"
        );
        assert_eq!(
            err(
                &[
                    line("A", "pending", true, ""),
                    line("A.1", "pending", true, "")
                ]
                .concat(),
                ""
            ),
            "tasks.jsonl:1: task \"A\" has \"leaf\": true but has children (A.1 on line 2); set \"leaf\": false"
        );
        assert_eq!(
            err(&line("A", "pending", true, ",\"deps\":[\"Q\"]"), ""),
            "tasks.jsonl:1: task \"A\" depends on \"Q\", which is in neither tasks.jsonl nor tasks-done.jsonl; fix or remove it in \"deps\""
        );
        assert_eq!(
            err(
                &[
                    line("A", "pending", false, ""),
                    line("A.1", "pending", true, ",\"deps\":[\"A\"]")
                ]
                .concat(),
                ""
            ),
            "tasks.jsonl:2: task \"A.1\" depends on its own ancestor \"A\", which is done only after it; remove it from \"deps\""
        );
        assert_eq!(
            err(
                &[
                    line("A", "pending", true, ",\"deps\":[\"B\"]"),
                    line("B", "pending", true, ",\"deps\":[\"C\"]"),
                    line("C", "pending", true, ",\"deps\":[\"A\"]"),
                ]
                .concat(),
                ""
            ),
            "tasks.jsonl:1: dependency cycle A -> B -> C -> A; remove one of these deps"
        );
        assert_eq!(
            err(&line("A", "pending", true, ",\"deps\":[\"A\"]"), ""),
            "tasks.jsonl:1: dependency cycle A -> A; remove one of these deps"
        );
    }

    /// Each line is checked before cycles are looked for: a bad line wins
    /// over a cycle earlier in the file, and a cycle alone is still found.
    #[test]
    fn a_bad_line_is_reported_before_a_cycle() {
        const FILLER: usize = 20;
        let filler: String = (0..FILLER)
            .map(|n| line(&format!("T{n}"), "pending", true, ""))
            .collect();
        let cycle = [
            line("A", "pending", true, ",\"deps\":[\"B\"]"),
            line("B", "pending", true, ",\"deps\":[\"A\"]"),
        ]
        .concat();
        let bad = line("Q.1", "pending", true, "");
        assert_eq!(
            err(&format!("{cycle}{filler}{bad}"), ""),
            format!(
                "tasks.jsonl:{}: parent \"Q\" of task \"Q.1\" does not exist; add the parent or fix the id",
                FILLER + 3
            )
        );
        assert_eq!(
            err(&format!("{filler}{cycle}"), ""),
            format!(
                "tasks.jsonl:{}: dependency cycle A -> B -> A; remove one of these deps",
                FILLER + 1
            )
        );
    }

    #[test]
    fn an_archived_dep_breaks_what_would_be_a_cycle() {
        // B archived (crash left its line behind): its deps no longer bind.
        let tasks = [
            line("A", "pending", true, ",\"deps\":[\"B\"]"),
            line("B", "pending", true, ",\"deps\":[\"A\"]"),
        ]
        .concat();
        assert!(queue(&tasks, "{\"id\":\"B\"}\n").is_ok());
    }

    #[test]
    fn a_line_left_in_both_files_reads_as_archived() {
        let tasks = [
            line("A", "pending", false, ""),
            line("A.1", "pending", true, ""),
            line("B", "pending", true, ""),
        ]
        .concat();
        let q = queue(&tasks, "{\"id\":\"A.1\",\"title\":\"one\"}\n").unwrap();
        assert!(q.get("A.1").is_none() && q.object("A.1").is_none());
        assert!(q.children("A").is_empty());
        assert_eq!((q.counts().active_total(), q.counts().archived), (2, 1));
        let tree = q.tree();
        assert_eq!(tree[0].children.len(), 1);
        assert_eq!(tree[0].children[0].status, None);
        assert_eq!((tree[0].done, tree[0].total), (1, 1));
    }

    #[test]
    fn tree_nests_children_and_counts_archived_ones() {
        let tasks = [
            line("A", "active", false, ""),
            line("A.2", "pending", false, ""),
            line("A.2.1", "complete", true, ""),
            line("A.3", "active", true, ""),
            line("B", "pending", true, ""),
        ]
        .concat();
        let q = queue(&tasks, "{\"id\":\"A.1\",\"title\":\"one\"}\n").unwrap();
        let tree = q.tree();
        assert_eq!(
            tree.iter().map(|n| n.id.as_str()).collect::<Vec<_>>(),
            ["A", "B"]
        );
        let a = &tree[0];
        assert_eq!((a.done, a.total), (2, 4));
        assert_eq!(
            a.children.iter().map(|n| n.id.as_str()).collect::<Vec<_>>(),
            ["A.1", "A.2", "A.3"]
        );
        assert_eq!(a.children[0].status, None);
        assert_eq!(a.children[0].title, "one");
        assert_eq!(a.children[1].children[0].id, "A.2.1");
    }
}
