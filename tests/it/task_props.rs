//! Property tests: random sequences of task operations keep the queue's
//! invariants (unique ids across both files, nothing lost or duplicated,
//! parents consistent), and a refused operation writes nothing.

use ralph::paths::Paths;
use std::collections::{BTreeSet, HashMap};

use proptest::prelude::*;
use ralph::task::{Change, NewTask, Patch, Status, Store, TaskId};

#[derive(Clone, Debug)]
enum Op {
    Add { parent: Option<usize> },
    Split { target: usize, children: usize },
    Start(usize),
    Complete(usize),
    Block(usize),
    Archive(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => proptest::option::of(0..50usize).prop_map(|parent| Op::Add { parent }),
        1 => (0..50usize, 1..4usize).prop_map(|(target, children)| Op::Split { target, children }),
        1 => (0..50usize).prop_map(Op::Start),
        2 => (0..50usize).prop_map(Op::Complete),
        1 => (0..50usize).prop_map(Op::Block),
        2 => (0..50usize).prop_map(Op::Archive),
    ]
}

fn pick(ids: &[TaskId], n: usize) -> Option<TaskId> {
    (!ids.is_empty()).then(|| ids[n % ids.len()].clone())
}

fn patch_for(op: &Op, live: &[TaskId], step: usize) -> Option<Patch> {
    Some(match op {
        Op::Add { parent } => Patch::Add(NewTask {
            title: format!("task {step}"),
            parent: parent.and_then(|n| pick(live, n)),
            ..NewTask::default()
        }),
        Op::Split { target, children } => Patch::Split {
            id: pick(live, *target)?,
            titles: (0..*children).map(|c| format!("part {step}.{c}")).collect(),
        },
        Op::Start(n) => Patch::SetStatus {
            id: pick(live, *n)?,
            status: Status::Active,
        },
        Op::Complete(n) => Patch::SetStatus {
            id: pick(live, *n)?,
            status: Status::Complete,
        },
        Op::Block(n) => Patch::Block {
            id: pick(live, *n)?,
            reason: "stuck".into(),
        },
        Op::Archive(n) => Patch::Archive {
            id: pick(live, *n)?,
            commit: Some(format!("c{step}")),
        },
    })
}

fn check_invariants(store: &Store, paths: &Paths, created: &BTreeSet<String>) {
    let queue = store.load().expect("the files stay valid");
    let live: Vec<&str> = queue.tasks.tasks().map(|(_, t)| t.id.as_str()).collect();
    let live_set: BTreeSet<&str> = live.iter().copied().collect();
    assert_eq!(live.len(), live_set.len(), "duplicate live id");
    let done_text = std::fs::read_to_string(paths.done()).unwrap_or_default();
    let done_lines = crate::support::ids(&done_text);
    let done_set: BTreeSet<&str> = done_lines.iter().map(String::as_str).collect();
    assert_eq!(done_lines.len(), done_set.len(), "an id archived twice");
    assert!(
        live_set.is_disjoint(&done_set),
        "an id both live and archived"
    );
    let all: BTreeSet<String> = live_set.union(&done_set).map(|s| s.to_string()).collect();
    assert_eq!(&all, created, "a task was lost or appeared from nowhere");
    let by_id: HashMap<&str, bool> = queue
        .tasks
        .tasks()
        .map(|(_, t)| (t.id.as_str(), t.leaf))
        .collect();
    for id in &live {
        if let Some(parent) = TaskId::parse(id).unwrap().parent() {
            assert_eq!(
                by_id.get(parent.as_str()),
                Some(&false),
                "{id}'s parent is not a live container"
            );
        }
    }
    for id in &done_set {
        for other in &live {
            assert!(
                !TaskId::parse(id).unwrap().is_ancestor_of(other),
                "archived {id} has live descendant {other}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_operations_keep_the_queue_consistent(ops in proptest::collection::vec(op(), 1..40)) {
        let dir = assert_fs::TempDir::new().unwrap();
        let paths = Paths::new(dir.path());
        let store = Store::open(&paths);
        let mut created = BTreeSet::new();
        for (step, op) in ops.iter().enumerate() {
            let queue = store.load().unwrap();
            let live: Vec<TaskId> = queue.tasks.tasks().map(|(_, t)| t.id.clone()).collect();
            let Some(patch) = patch_for(op, &live, step) else { continue };
            let before = (std::fs::read(paths.tasks()).ok(), std::fs::read(paths.done()).ok());
            match store.apply(&patch, "2026-01-01T00:00:00Z") {
                Ok(changes) => {
                    for change in changes {
                        match change {
                            Change::Added(id) => { created.insert(id.to_string()); }
                            Change::Split { children, .. } => created.extend(children.iter().map(|c| c.to_string())),
                            _ => {}
                        }
                    }
                }
                Err(_) => {
                    let after = (std::fs::read(paths.tasks()).ok(), std::fs::read(paths.done()).ok());
                    prop_assert_eq!(before, after, "a refused {:?} wrote something", patch);
                }
            }
            check_invariants(&store, &paths, &created);
        }
    }
}
