//! The three-way merge of the queue files, as docs/SCALE.md designs it
//! ("The queue files across machines"): `O` the files both sides last
//! agreed on, `A` this machine's, `B` the other's (the fetched tip).
//! Pure: bytes in, bytes out, nothing read or written.
//!
//! `tasks-done.jsonl` is a union by id that only grows at its end: `B`'s
//! bytes, then `A`'s records `B` lacks; a record of `O` that `B` dropped
//! or changed is put back. `tasks.jsonl` is merged per id: an archived id
//! leaves it, a side's change wins over no change, both changed merge
//! field by field (`status` by precedence, `deps` united, other fields
//! `B`'s), new tasks are never dropped, and an id both sides added
//! differently is a collision, both lines kept.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

/// The two queue files of one side.
#[derive(Clone, Copy, Debug)]
pub struct Sides<'a> {
    /// `tasks.jsonl`.
    pub tasks: &'a [u8],
    /// `tasks-done.jsonl`.
    pub done: &'a [u8],
}

/// What the merge made.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Merged {
    /// The merged `tasks.jsonl`.
    pub tasks: Vec<u8>,
    /// The merged `tasks-done.jsonl`.
    pub done: Vec<u8>,
    /// What a person should know (a field both sides set, a hand edit of
    /// the archive undone, a deleted task kept), one sentence each.
    pub warnings: Vec<String>,
    /// Ids both sides added as different tasks: both lines are kept.
    pub collisions: Vec<String>,
}

/// One line of a queue file: its bytes (line end included) and, when it
/// is a task object, its id and object.
#[derive(Clone, Debug)]
struct Line<'a> {
    bytes: &'a [u8],
    task: Option<(String, Map<String, Value>)>,
}

fn lines(bytes: &[u8]) -> Vec<Line<'_>> {
    bytes
        .split_inclusive(|&b| b == b'\n')
        .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
        .map(|bytes| {
            let task = serde_json::from_slice::<Map<String, Value>>(bytes)
                .ok()
                .and_then(|object| {
                    let id = object.get("id")?.as_str()?.to_owned();
                    Some((id, object))
                });
            Line { bytes, task }
        })
        .collect()
}

/// The ids of the task lines in a queue file's bytes, another machine's
/// perhaps: a line that is no task object is passed over.
pub fn ids(bytes: &[u8]) -> HashSet<String> {
    let tasks = lines(bytes).into_iter().filter_map(|line| line.task);
    tasks.map(|(id, _)| id).collect()
}

/// `bytes` ending in a line end (a file's last line may lack one).
fn terminated(bytes: &[u8]) -> Vec<u8> {
    let mut bytes = bytes.to_vec();
    if !bytes.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    bytes
}

/// Merges `a` (this side) and `b` (the other) from `o`.
pub fn merge(o: Sides<'_>, a: Sides<'_>, b: Sides<'_>) -> Merged {
    let mut merged = Merged::default();
    let archived = merge_done(o.done, a.done, b.done, &mut merged);
    merge_tasks(o.tasks, a.tasks, b.tasks, &archived, &mut merged);
    merged
}

/// Which queue file git asks the driver to merge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum File {
    /// `tasks.jsonl`.
    Tasks,
    /// `tasks-done.jsonl`.
    Done,
}

/// Git's merge driver (`ralph merge-queue %O %A %B %P`): one file's
/// three versions merged; for `tasks.jsonl`, `archive` is the archive
/// whose ids leave the queue.
pub fn merge_file(file: File, o: &[u8], a: &[u8], b: &[u8], archive: &[u8]) -> Merged {
    let side = |bytes| match file {
        File::Tasks => Sides {
            tasks: bytes,
            done: archive,
        },
        File::Done => Sides {
            tasks: b"",
            done: bytes,
        },
    };
    merge(side(o), side(a), side(b))
}

/// The union of the archives; returns the ids in it.
fn merge_done(o: &[u8], a: &[u8], b: &[u8], merged: &mut Merged) -> HashSet<String> {
    let (o, a, b) = (lines(o), lines(a), lines(b));
    let id = |line: &Line| line.task.as_ref().map(|(id, _)| id.clone());
    let mut out: Vec<u8> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let originals: HashMap<String, &Line> = o.iter().filter_map(|l| Some((id(l)?, l))).collect();
    for line in &b {
        match id(line) {
            Some(id) => {
                // A record both agreed on, changed on the other side by
                // hand: the agreed one stands.
                let record = match originals.get(&id) {
                    Some(original) if original.task != line.task => {
                        merged.warnings.push(format!(
                            "the archive record of {id} was changed on the other side; the one both sides had is kept"
                        ));
                        *original
                    }
                    _ => line,
                };
                if seen.insert(id) {
                    out.extend(terminated(record.bytes));
                }
            }
            None => out.extend(terminated(line.bytes)),
        }
    }
    for line in o.iter().chain(&a) {
        let Some(id) = id(line) else { continue };
        if seen.insert(id.clone()) {
            if originals.contains_key(&id)
                && !b
                    .iter()
                    .any(|l| l.task.as_ref().is_some_and(|(i, _)| *i == id))
            {
                merged.warnings.push(format!(
                    "the archive record of {id} was dropped on the other side; it is put back"
                ));
            }
            out.extend(terminated(line.bytes));
        }
    }
    merged.done = out;
    seen
}

/// The precedence of a status when both sides changed it: finished work
/// beats a hold, a person's block beats an agent's claim.
fn rank(status: Option<&Value>) -> u8 {
    match status.and_then(Value::as_str) {
        Some("complete" | "done") => 5,
        Some("ready") => 4,
        Some("blocked") => 3,
        Some("active" | "in_progress") => 2,
        Some("pending") => 1,
        _ => 0,
    }
}

/// The task both sides changed, field by field from `b`'s.
fn merge_task(
    id: &str,
    o: Option<&Map<String, Value>>,
    a: &Map<String, Value>,
    b: &Map<String, Value>,
    merged: &mut Merged,
) -> Map<String, Value> {
    let mut out = b.clone();
    let of = |side: Option<&Map<String, Value>>, key: &str| side.and_then(|s| s.get(key)).cloned();
    // `status` travels with `blocked_reason`: the side that changed them
    // wins; both changed, the precedence decides.
    let hold = |side: Option<&Map<String, Value>>| (of(side, "status"), of(side, "blocked_reason"));
    let winner = if hold(Some(a)) == hold(o) {
        b
    } else if hold(Some(b)) == hold(o) || rank(a.get("status")) > rank(b.get("status")) {
        a
    } else {
        b
    };
    for key in ["status", "blocked_reason"] {
        match winner.get(key) {
            Some(value) => out.insert(key.to_owned(), value.clone()),
            None => out.remove(key),
        };
    }
    let deps = |side: &Map<String, Value>| -> Vec<Value> {
        side.get("deps")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut union = deps(a);
    for dep in deps(b) {
        if !union.contains(&dep) {
            union.push(dep);
        }
    }
    if !union.is_empty() {
        out.insert("deps".to_owned(), Value::Array(union));
    }
    // Every other field: the side that changed it; both, differently:
    // the other side's, said.
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.extend(o.into_iter().flat_map(|o| o.keys()));
    let mut done = HashSet::new();
    for key in keys {
        if matches!(key.as_str(), "status" | "blocked_reason" | "deps") || !done.insert(key) {
            continue;
        }
        let (here, there, before) = (a.get(key), b.get(key), o.and_then(|o| o.get(key)));
        if here == there || here == before {
            continue;
        }
        if there == before {
            match here {
                Some(value) => out.insert(key.clone(), value.clone()),
                None => out.remove(key),
            };
            continue;
        }
        let shown = here.map_or("unset".to_owned(), Value::to_string);
        merged.warnings.push(format!(
            "{id}: both sides set `{key}`; the other side's value is kept, this side's was {shown}"
        ));
    }
    out
}

/// The per-id merge of `tasks.jsonl`.
fn merge_tasks(o: &[u8], a: &[u8], b: &[u8], archived: &HashSet<String>, merged: &mut Merged) {
    let (o, a, b) = (lines(o), lines(a), lines(b));
    let index = |lines: &[Line<'_>]| -> HashMap<String, usize> {
        (lines.iter().enumerate())
            .filter_map(|(at, line)| Some((line.task.as_ref()?.0.clone(), at)))
            .collect()
    };
    let (io, ia, ib) = (index(&o), index(&a), index(&b));
    fn object<'l>(lines: &'l [Line<'_>], at: Option<&usize>) -> Option<&'l Map<String, Value>> {
        let (_, task) = lines[*at?].task.as_ref()?;
        Some(task)
    }
    // What each id becomes: the line's bytes, or none (deleted).
    let mut result: HashMap<String, Option<Vec<u8>>> = HashMap::new();
    let ids: Vec<String> = (b.iter().chain(&a))
        .filter_map(|line| Some(line.task.as_ref()?.0.clone()))
        .collect();
    for id in &ids {
        if result.contains_key(id) {
            continue;
        }
        if archived.contains(id) {
            result.insert(id.clone(), None);
            continue;
        }
        let (to, ta, tb) = (
            object(&o, io.get(id)),
            object(&a, ia.get(id)),
            object(&b, ib.get(id)),
        );
        let bytes_of =
            |lines: &[Line<'_>], map: &HashMap<String, usize>| terminated(lines[map[id]].bytes);
        let line = match (to, ta, tb) {
            (_, Some(ta), Some(tb)) if ta == tb => Some(bytes_of(&b, &ib)),
            (Some(to), Some(ta), Some(_)) if ta == to => Some(bytes_of(&b, &ib)),
            (Some(to), Some(_), Some(tb)) if tb == to => Some(bytes_of(&a, &ia)),
            (Some(to), Some(ta), Some(tb)) => {
                let task = merge_task(id, Some(to), ta, tb, merged);
                let mut text = serde_json::to_vec(&task).expect("a task serializes");
                text.push(b'\n');
                Some(text)
            }
            (None, Some(_), Some(_)) => {
                merged.collisions.push(id.clone());
                let mut both = bytes_of(&b, &ib);
                both.extend(bytes_of(&a, &ia));
                Some(both)
            }
            // Deleted on one side: gone when the other left it alone.
            (Some(to), None, Some(tb)) if tb == to => None,
            (Some(to), Some(ta), None) if ta == to => None,
            (Some(_), None, Some(_)) => {
                merged.warnings.push(format!(
                    "{id} was deleted on this side and changed on the other; it is kept"
                ));
                Some(bytes_of(&b, &ib))
            }
            (Some(_), Some(_), None) => {
                merged.warnings.push(format!(
                    "{id} was deleted on the other side and changed on this one; it is kept"
                ));
                Some(bytes_of(&a, &ia))
            }
            (None, Some(_), None) => Some(bytes_of(&a, &ia)),
            (None, None, Some(_)) => Some(bytes_of(&b, &ib)),
            (_, None, None) => None,
        };
        result.insert(id.clone(), line);
    }
    // `B`'s order; a line only `A` has follows the line before it in `A`.
    let mut order: Vec<String> = (b.iter())
        .filter_map(|line| Some(line.task.as_ref()?.0.clone()))
        .collect();
    let mut placed: HashSet<String> = order.iter().cloned().collect();
    for (at, line) in a.iter().enumerate() {
        let Some((id, _)) = &line.task else { continue };
        if !placed.insert(id.clone()) {
            continue;
        }
        let before = (a[..at].iter().rev())
            .filter_map(|line| line.task.as_ref().map(|(id, _)| id))
            .find_map(|prior| order.iter().position(|id| id == prior));
        order.insert(before.map_or(0, |at| at + 1), id.clone());
    }
    let mut out = Vec::new();
    for id in &order {
        if let Some(Some(line)) = result.get(id) {
            out.extend(line);
        }
    }
    merged.tasks = out;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, status: &str) -> String {
        format!(
            "{{\"id\":\"{id}\",\"title\":\"task {id}\",\"status\":\"{status}\",\"leaf\":true}}\n"
        )
    }

    fn sides<'a>(tasks: &'a str, done: &'a str) -> Sides<'a> {
        Sides {
            tasks: tasks.as_bytes(),
            done: done.as_bytes(),
        }
    }

    #[test]
    fn ids_are_read_from_the_task_lines() {
        let ids = ids(b"{\"id\":\"A\",\"title\":\"a\"}\nnot json\n\n{\"id\":\"A.1\"}\n");
        assert_eq!(ids, HashSet::from(["A".to_owned(), "A.1".to_owned()]));
    }

    #[test]
    fn each_sides_change_is_kept_and_an_archived_task_leaves_the_queue() {
        let o = [
            task("A", "pending"),
            task("B", "pending"),
            task("C", "pending"),
        ]
        .concat();
        // This side finished A (archived) and added D; the other blocked C.
        let a = [
            task("B", "pending"),
            task("C", "pending"),
            task("D", "pending"),
        ]
        .concat();
        let a_done = task("A", "complete");
        let b = [
            task("A", "active"),
            task("B", "pending"),
            task("C", "blocked"),
        ]
        .concat();
        let merged = merge(sides(&o, ""), sides(&a, &a_done), sides(&b, ""));
        assert_eq!(
            String::from_utf8(merged.tasks).unwrap(),
            [
                task("B", "pending"),
                task("C", "blocked"),
                task("D", "pending")
            ]
            .concat()
        );
        assert_eq!(String::from_utf8(merged.done).unwrap(), a_done);
        assert!(merged.warnings.is_empty() && merged.collisions.is_empty());
    }

    #[test]
    fn a_status_both_changed_goes_by_precedence_and_deps_are_united() {
        let o = task("A", "pending");
        let a = "{\"id\":\"A\",\"title\":\"task A\",\"status\":\"complete\",\"leaf\":true,\"deps\":[\"X\"]}\n";
        let b = "{\"id\":\"A\",\"title\":\"renamed\",\"status\":\"blocked\",\"leaf\":true,\"blocked_reason\":\"a key\",\"deps\":[\"Y\"]}\n";
        let merged = merge(sides(&o, ""), sides(a, ""), sides(b, ""));
        assert_eq!(
            String::from_utf8(merged.tasks).unwrap(),
            "{\"id\":\"A\",\"title\":\"renamed\",\"status\":\"complete\",\"leaf\":true,\"deps\":[\"X\",\"Y\"]}\n"
        );
    }

    #[test]
    fn a_field_one_side_changed_is_that_sides_whatever_the_precedence() {
        // This side split A (leaf false) while the other published it
        // active; the other unblocked B, which this side left blocked.
        let o = "{\"id\":\"A\",\"status\":\"pending\",\"leaf\":true}\n{\"id\":\"B\",\"status\":\"blocked\",\"blocked_reason\":\"x\",\"leaf\":true}\n";
        let a = "{\"id\":\"A\",\"status\":\"pending\",\"leaf\":false}\n{\"id\":\"B\",\"status\":\"blocked\",\"blocked_reason\":\"x\",\"leaf\":true}\n";
        let b = "{\"id\":\"A\",\"status\":\"active\",\"leaf\":true}\n{\"id\":\"B\",\"status\":\"pending\",\"leaf\":true}\n";
        let merged = merge(sides(o, ""), sides(a, ""), sides(b, ""));
        assert_eq!(
            String::from_utf8(merged.tasks).unwrap(),
            "{\"id\":\"A\",\"status\":\"active\",\"leaf\":false}\n{\"id\":\"B\",\"status\":\"pending\",\"leaf\":true}\n"
        );
        assert!(merged.warnings.is_empty(), "{:?}", merged.warnings);
    }

    #[test]
    fn the_archive_only_grows_at_its_end_and_a_hand_edit_of_it_is_undone() {
        let o_done = task("A", "complete");
        let a_done = [task("A", "complete"), task("C", "complete")].concat();
        let b_done = [
            task("A", "complete").replace("task A", "edited"),
            task("B", "complete"),
        ]
        .concat();
        let merged = merge(sides("", &o_done), sides("", &a_done), sides("", &b_done));
        assert_eq!(
            String::from_utf8(merged.done).unwrap(),
            [
                task("A", "complete"),
                task("B", "complete"),
                task("C", "complete")
            ]
            .concat()
        );
        assert_eq!(merged.warnings.len(), 1, "{:?}", merged.warnings);
    }

    #[test]
    fn an_id_both_added_differently_is_a_collision_with_both_lines_kept() {
        let a = task("D", "pending");
        let b = task("D", "pending").replace("task D", "another D");
        let merged = merge(sides("", ""), sides(&a, ""), sides(&b, ""));
        assert_eq!(merged.collisions, ["D"]);
        assert_eq!(String::from_utf8(merged.tasks).unwrap(), [b, a].concat());
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        /// What one side does to its copy of the queue.
        #[derive(Clone, Debug)]
        enum Op {
            Add,
            Status(usize, &'static str),
            Title(usize),
            Delete(usize),
            Archive(usize),
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                Just(Op::Add),
                (
                    0..12usize,
                    prop::sample::select(vec!["pending", "active", "ready", "blocked", "complete"])
                )
                    .prop_map(|(at, s)| Op::Status(at, s)),
                (0..12usize).prop_map(Op::Title),
                (0..12usize).prop_map(Op::Delete),
                (0..12usize).prop_map(Op::Archive),
            ]
        }

        /// A queue as lines of tasks and of archive records.
        #[derive(Clone, Debug, Default)]
        struct Copy {
            tasks: Vec<String>,
            done: Vec<String>,
        }

        impl Copy {
            fn apply(&mut self, side: &str, ops: &[Op]) {
                for (n, op) in ops.iter().enumerate() {
                    let len = self.tasks.len();
                    match *op {
                        Op::Add => self.tasks.push(task(&format!("{side}{n}"), "pending")),
                        _ if len == 0 => {}
                        Op::Status(at, status) => {
                            let id = id_of(&self.tasks[at % len]);
                            self.tasks[at % len] = task(&id, status);
                        }
                        Op::Title(at) => {
                            let line = self.tasks[at % len]
                                .replace("\"title\":\"", &format!("\"title\":\"{side} "));
                            self.tasks[at % len] = line;
                        }
                        Op::Delete(at) => {
                            self.tasks.remove(at % len);
                        }
                        Op::Archive(at) => {
                            let line = self.tasks.remove(at % len);
                            self.done.push(task(&id_of(&line), "complete"));
                        }
                    }
                }
            }

            fn texts(&self) -> (String, String) {
                (self.tasks.concat(), self.done.concat())
            }
        }

        fn id_of(line: &str) -> String {
            let object: Map<String, Value> = serde_json::from_str(line).unwrap();
            object["id"].as_str().unwrap().to_owned()
        }

        fn ids(bytes: &[u8]) -> Vec<String> {
            lines(bytes)
                .iter()
                .filter_map(|l| Some(l.task.as_ref()?.0.clone()))
                .collect()
        }

        proptest! {
            #[test]
            fn merges_keep_every_task_and_record_and_settle(
                base in 0..8usize,
                ops_a in prop::collection::vec(op(), 0..8),
                ops_b in prop::collection::vec(op(), 0..8),
            ) {
                let o = Copy {
                    tasks: (0..base).map(|n| task(&format!("T{n}"), "pending")).collect(),
                    ..Copy::default()
                };
                let (mut a, mut b) = (o.clone(), o.clone());
                a.apply("A", &ops_a);
                b.apply("B", &ops_b);
                let ((ot, od), (at, ad), (bt, bd)) = (o.texts(), a.texts(), b.texts());
                let merged = merge(sides(&ot, &od), sides(&at, &ad), sides(&bt, &bd));
                // Valid: each id once, in the queue or the archive.
                let (tasks, done) = (ids(&merged.tasks), ids(&merged.done));
                let unique: HashSet<&String> = tasks.iter().chain(&done).collect();
                prop_assert_eq!(unique.len(), tasks.len() + done.len());
                // No archive record lost or changed; the other side's
                // archive is a prefix of the result.
                prop_assert!(merged.done.starts_with(bd.as_bytes()));
                for record in a.done.iter().chain(&b.done) {
                    prop_assert!(String::from_utf8_lossy(&merged.done).contains(record.as_str()));
                }
                // No added task lost.
                for id in ids(at.as_bytes()).into_iter().chain(ids(bt.as_bytes())) {
                    if !ids(ot.as_bytes()).contains(&id) {
                        prop_assert!(tasks.contains(&id), "{} lost", id);
                    }
                }
                // merge(O, A, A) = A and merge(O, O, B) = B.
                let same = merge(sides(&ot, &od), sides(&at, &ad), sides(&at, &ad));
                prop_assert_eq!(&same.tasks, &at.as_bytes().to_vec());
                prop_assert_eq!(&same.done, &ad.as_bytes().to_vec());
                let theirs = merge(sides(&ot, &od), sides(&ot, &od), sides(&bt, &bd));
                prop_assert_eq!(&theirs.tasks, &bt.as_bytes().to_vec());
                prop_assert_eq!(&theirs.done, &bd.as_bytes().to_vec());
                // Merging the same B again changes nothing.
                let again = merge(
                    sides(&ot, &od),
                    Sides { tasks: &merged.tasks, done: &merged.done },
                    sides(&bt, &bd),
                );
                prop_assert_eq!(&again.tasks, &merged.tasks);
                prop_assert_eq!(&again.done, &merged.done);
            }
        }
    }
}
