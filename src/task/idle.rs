//! Containers with no open task under them: no iteration works on a
//! container, so such a one is either done (its last child went to the
//! archive without it) or waits for a person (it never had a child).

use std::collections::HashSet;

use super::id;
use super::model::{Status, Task};
use super::queue::Queue;

/// How many ids a message names before it says "and N more".
const NAMED: usize = 5;

impl Queue {
    /// Containers with no open task under them and an archived child, in
    /// file order, outside blocked subtrees. ralph archives a parent with
    /// its last child; these lost it by hand (docs/TASKS.md's `jq` and `grep`
    /// recipe), so they are done too, and the run archives them.
    pub fn emptied_containers(&self) -> Vec<&Task> {
        self.idle_containers(true)
    }

    /// Containers with no task under them, open or archived, in file order,
    /// outside blocked subtrees: nothing works on them and nothing finishes
    /// them. They are not archived unasked (children may be meant to come),
    /// so they wait for a person; [`childless_message`] says what to do.
    pub fn childless_containers(&self) -> Vec<&Task> {
        self.idle_containers(false)
    }

    /// Containers without an open task below, with (`archived_child`) or
    /// without an archived child.
    fn idle_containers(&self, archived_child: bool) -> Vec<&Task> {
        // Every id with an open task somewhere below it.
        let mut busy: HashSet<&str> = HashSet::new();
        for (_, task) in self.live_tasks() {
            let mut ancestor = id::parent_of(task.id.as_str());
            // An ancestor seen before has its own ancestors in the set too.
            while let Some(parent) = ancestor.filter(|parent| busy.insert(parent)) {
                ancestor = id::parent_of(parent);
            }
        }
        let archived_parents: HashSet<&str> = self.done.ids().filter_map(id::parent_of).collect();
        self.live_tasks()
            .map(|(_, task)| task)
            .filter(|task| !task.leaf && !busy.contains(task.id.as_str()))
            .filter(|task| archived_parents.contains(task.id.as_str()) == archived_child)
            .filter(|task| !self.in_blocked_subtree(task))
            .collect()
    }

    /// Whether `task` or one of its ancestors is blocked: runs leave it alone.
    fn in_blocked_subtree(&self, task: &Task) -> bool {
        std::iter::successors(Some(task.id.as_str()), |id| id::parent_of(id))
            .filter_map(|id| self.get(id))
            .any(|task| task.status == Status::Blocked)
    }
}

/// What to tell a person about `childless` containers (at least one):
/// what they are, and the fix, for the first.
pub fn childless_message(childless: &[&Task]) -> (String, String) {
    let first = childless.first().map_or("", |task| task.id.as_str());
    let what = if childless.len() == 1 {
        format!("{first} is a container with no tasks under it")
    } else {
        format!(
            "{} are containers with no tasks under them",
            named(childless)
        )
    };
    let fix = format!(
        "add tasks under {first} with `ralph task add TITLE --parent {first}`, or archive it with `ralph task archive {first}`"
    );
    (what, fix)
}

/// What becomes of `emptied` containers (at least one), for a view that
/// leaves them be.
pub fn emptied_message(emptied: &[&Task]) -> String {
    if emptied.len() == 1 {
        format!(
            "{} has all its tasks archived: the next `ralph run` archives it",
            named(emptied)
        )
    } else {
        format!(
            "{} have all their tasks archived: the next `ralph run` archives them",
            named(emptied)
        )
    }
}

/// The ids of `tasks`, the first [`NAMED`], then how many more.
fn named(tasks: &[&Task]) -> String {
    let ids: Vec<&str> = tasks.iter().map(|task| task.id.as_str()).collect();
    crate::text::named(&ids, NAMED)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(id: &str, status: &str, leaf: bool) -> String {
        format!("{{\"id\":\"{id}\",\"title\":\"t\",\"status\":\"{status}\",\"leaf\":{leaf}}}\n")
    }

    fn ids(tasks: Vec<&Task>) -> Vec<&str> {
        tasks.into_iter().map(|task| task.id.as_str()).collect()
    }

    #[test]
    fn containers_with_nothing_open_below_are_emptied_or_childless() {
        let tasks = [
            line("A", "pending", false),
            line("B", "pending", false),
            line("B.2", "pending", true),
            line("C", "pending", false),
            line("D", "pending", false),
            line("D.1", "pending", false),
            line("D.1.1", "pending", true),
            line("E", "blocked", false),
            line("F", "pending", false),
            line("F.1", "pending", false),
        ]
        .concat();
        let done = "{\"id\":\"A.1\"}\n{\"id\":\"B.1\"}\n{\"id\":\"E.1\"}\n{\"id\":\"F.2\"}\n";
        let q = Queue::parse(tasks.as_bytes(), done.as_bytes()).unwrap();
        // B and D have open tasks below; E is blocked; F has a childless F.1.
        assert_eq!(ids(q.emptied_containers()), ["A"]);
        assert_eq!(ids(q.childless_containers()), ["C", "F.1"]);
    }

    #[test]
    fn the_message_names_them_and_fixes_the_first() {
        let q = Queue::parse(
            [line("A", "pending", false), line("B", "pending", false)]
                .concat()
                .as_bytes(),
            b"",
        )
        .unwrap();
        let childless = q.childless_containers();
        assert_eq!(
            childless_message(&childless[..1]),
            (
                "A is a container with no tasks under it".to_owned(),
                "add tasks under A with `ralph task add TITLE --parent A`, or archive it with `ralph task archive A`".to_owned()
            )
        );
        assert_eq!(
            childless_message(&childless).0,
            "A, B are containers with no tasks under them"
        );
        assert_eq!(
            emptied_message(&childless),
            "A, B have all their tasks archived: the next `ralph run` archives them"
        );
    }
}
