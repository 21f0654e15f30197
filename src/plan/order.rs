//! The order of a plan: each level of the tree sorted by dependency first,
//! then priority (`prd.json`), then requirement id (numeric-aware, so FR-2
//! comes before FR-10), then text order.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};

use super::{Draft, Node, Plan};
use crate::task::PlannedTask;

/// Sorts the draft's nodes into the plan, parents before children.
pub(super) fn arrange(document: &str, draft: Draft) -> Plan {
    let nodes = draft.nodes;
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (index, node) in nodes.iter().enumerate().skip(1) {
        children[node.parent.expect("only the document has no parent")].push(index);
    }
    let after = sibling_deps(&nodes);
    let mut order = Vec::with_capacity(nodes.len());
    let mut stack = vec![0];
    while let Some(index) = stack.pop() {
        order.push(index);
        let sorted = sort(&children[index], &after, &nodes);
        stack.extend(sorted.into_iter().rev());
    }
    let mut position = vec![0; nodes.len()];
    for (at, &index) in order.iter().enumerate() {
        position[index] = at;
    }
    let mut plan = Plan {
        document: document.to_owned(),
        tasks: Vec::with_capacity(order.len()),
        skipped: draft.skipped,
    };
    for index in order {
        let node = &nodes[index];
        plan.tasks.push(PlannedTask {
            source: if node.key.is_empty() {
                document.to_owned()
            } else {
                format!("{document}#{}", node.key)
            },
            parent: node.parent.map(|parent| position[parent]),
            leaf: node.leaf,
            title: node.title.clone(),
            body: node.body.clone(),
            acceptance: node.acceptance.clone(),
            files: node.files.clone(),
            verify: node.verify.clone(),
            deps: node.deps.iter().map(|&dep| position[dep]).collect(),
        });
    }
    plan
}

/// For each node, the siblings it must come after: those holding a
/// requirement that one of its requirements depends on.
fn sibling_deps(nodes: &[Node]) -> HashMap<usize, BTreeSet<usize>> {
    let path = |mut index: usize| {
        let mut path = vec![index];
        while let Some(parent) = nodes[index].parent {
            path.push(parent);
            index = parent;
        }
        path.reverse();
        path
    };
    let mut after: HashMap<usize, BTreeSet<usize>> = HashMap::new();
    for (index, node) in nodes.iter().enumerate() {
        let from = path(index);
        for &dep in &node.deps {
            let to = path(dep);
            // Leaves are never ancestors, so the paths part somewhere.
            if let Some(at) = (0..from.len().min(to.len())).find(|&at| from[at] != to[at]) {
                after.entry(from[at]).or_default().insert(to[at]);
            }
        }
    }
    after
}

/// `siblings` in dependency order; among those free to go next, the one
/// with the smallest key. Siblings that wait on each other (two sections
/// each holding a requirement the other needs) go by key.
fn sort(siblings: &[usize], after: &HashMap<usize, BTreeSet<usize>>, nodes: &[Node]) -> Vec<usize> {
    let mut left: Vec<usize> = siblings.to_vec();
    left.sort_by(|&a, &b| key_cmp(&nodes[a], &nodes[b]));
    let mut sorted = Vec::with_capacity(left.len());
    while !left.is_empty() {
        let free = |index: &usize| {
            after.get(index).is_none_or(|needs| {
                needs
                    .iter()
                    .all(|need| !left.contains(need) || need == index)
            })
        };
        let at = left.iter().position(free).unwrap_or(0);
        sorted.push(left.remove(at));
    }
    sorted
}

/// Priority (none last), then requirement id (none last), then line.
fn key_cmp(a: &Node, b: &Node) -> Ordering {
    let last_if_none = |a: Option<Ordering>, a_some: bool, b_some: bool| match (a_some, b_some) {
        (true, true) => a.unwrap_or(Ordering::Equal),
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (false, false) => Ordering::Equal,
    };
    last_if_none(
        a.priority.zip(b.priority).map(|(a, b)| a.cmp(&b)),
        a.priority.is_some(),
        b.priority.is_some(),
    )
    .then_with(|| {
        last_if_none(
            a.requirement
                .as_deref()
                .zip(b.requirement.as_deref())
                .map(|(a, b)| natural_cmp(a, b)),
            a.requirement.is_some(),
            b.requirement.is_some(),
        )
    })
    .then(a.line.cmp(&b.line))
}

/// Compares runs of digits by value and everything else as text:
/// `FR-2` < `FR-10`, `US-003` = `US-3` (the line decides then).
pub(super) fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut a, mut b) = (a, b);
    loop {
        match (a.is_empty(), b.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            _ => {}
        }
        let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
        let (da, db) = (digits(a), digits(b));
        let ordering = if da > 0 && db > 0 {
            let (na, nb) = (
                a[..da].trim_start_matches('0'),
                b[..db].trim_start_matches('0'),
            );
            let ordering = na.len().cmp(&nb.len()).then_with(|| na.cmp(nb));
            (a, b) = (&a[da..], &b[db..]);
            ordering
        } else {
            let (ca, cb) = (a.chars().next(), b.chars().next());
            let (la, lb) = (ca.map_or(0, char::len_utf8), cb.map_or(0, char::len_utf8));
            // A digit sorts before a letter, as in plain text.
            let ordering = ca.cmp(&cb);
            (a, b) = (&a[la..], &b[lb..]);
            ordering
        };
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_compare_by_value() {
        assert_eq!(natural_cmp("FR-2", "FR-10"), Ordering::Less);
        assert_eq!(natural_cmp("FR-10", "FR-9"), Ordering::Greater);
        assert_eq!(natural_cmp("US-003", "US-3"), Ordering::Equal);
        assert_eq!(natural_cmp("FR-1", "NFR-1"), Ordering::Less);
        assert_eq!(natural_cmp("R1.2", "R1.10"), Ordering::Less);
        assert_eq!(natural_cmp("R1", "R1.1"), Ordering::Less);
    }

    fn node(parent: usize, requirement: &str, line: usize, deps: &[usize]) -> Node {
        Node {
            parent: Some(parent),
            leaf: true,
            requirement: Some(requirement.to_owned()),
            title: requirement.to_owned(),
            line,
            deps: deps.to_vec(),
            ..Node::default()
        }
    }

    #[test]
    fn dependencies_come_first_then_ids_then_lines() {
        let nodes = vec![
            Node::default(),
            node(0, "FR-10", 1, &[]),
            node(0, "FR-2", 2, &[3]),
            node(0, "FR-3", 3, &[]),
            node(0, "FR-1", 4, &[1]),
        ];
        let plan = arrange(
            "prd.md",
            Draft {
                nodes,
                skipped: Vec::new(),
            },
        );
        let order: Vec<&str> = plan.tasks[1..].iter().map(|t| t.title.as_str()).collect();
        assert_eq!(order, ["FR-3", "FR-2", "FR-10", "FR-1"]);
    }
}
