//! The modules' layering (docs/ARCHITECTURE.md): no import cycle between
//! `src/`'s top-level modules, nor between the files of one folder
//! module. Read from the sources as text: a module of one file, or a
//! folder's child, uses another when its code (comments and unit tests
//! left out) names `crate::<other>`, or for a folder's children
//! `super::<sibling>` or a name the folder's `mod.rs` re-exports from
//! that sibling (`super::Worker` is `worker`'s).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The `.rs` files at `path`, or below it when it is a folder.
fn rust_files(path: &Path) -> Vec<PathBuf> {
    if path.is_file() {
        return vec![path.to_path_buf()];
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
    files
}

/// A file's code: its unit tests and comment lines left out.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(tests) => &text[..tests],
        None => &text[..],
    };
    (text.lines())
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The names that follow `prefix` in `text`.
fn named_after(text: &str, prefix: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (at, _) in text.match_indices(prefix) {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let name: String = text[at + prefix.len()..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        if !name.is_empty() {
            names.insert(name);
        }
    }
    names
}

/// The modules directly in `folder`: each file's stem (but `mod`, `lib`
/// and `main`) and each sub-folder's name, with its path.
fn children(folder: &Path) -> BTreeMap<String, PathBuf> {
    let mut children = BTreeMap::new();
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        let name = if path.is_dir() {
            path.file_name().unwrap().to_string_lossy().into_owned()
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            path.file_stem().unwrap().to_string_lossy().into_owned()
        } else {
            continue;
        };
        if !["mod", "lib", "main", "snapshots"].contains(&name.as_str()) {
            children.insert(name, path);
        }
    }
    children
}

/// The names `folder`'s `mod.rs` re-exports from its children
/// (`pub use child::{A, b};`), each with its child.
fn reexports(folder: &Path) -> Vec<(String, String)> {
    let Ok(text) = std::fs::read_to_string(folder.join("mod.rs")) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for line in text.lines().map(str::trim) {
        let Some(used) = (line.strip_prefix("pub use "))
            .or_else(|| line.strip_prefix("pub(crate) use "))
            .or_else(|| line.strip_prefix("pub(super) use "))
        else {
            continue;
        };
        let Some((child, items)) = used.trim_end_matches(';').split_once("::") else {
            continue;
        };
        for item in items.trim_matches(|c| c == '{' || c == '}').split(',') {
            // `A as B` is named `B` outside.
            let item = item.split(" as ").last().unwrap_or_default().trim();
            if !item.is_empty() {
                found.push((item.to_owned(), child.to_owned()));
            }
        }
    }
    found
}

/// Which of `folder`'s children uses which: `crate::<module path>::<x>`
/// anywhere in a child, `super::<x>` in a child that is one file.
fn graph(folder: &Path) -> Graph {
    let module: Vec<String> = (folder.strip_prefix(src()).unwrap().components())
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    let prefix = if module.is_empty() {
        "crate::".to_owned()
    } else {
        format!("crate::{}::", module.join("::"))
    };
    let children = children(folder);
    let exported = reexports(folder);
    let mut graph = Graph::new();
    for (name, path) in &children {
        let uses = graph.entry(name.clone()).or_default();
        for file in rust_files(path) {
            let text = code(&file);
            let mut names = named_after(&text, &prefix);
            if path.is_file() && !module.is_empty() {
                names.extend(named_after(&text, "super::"));
            }
            // A name the folder re-exports stands for the child it is from.
            for (item, child) in &exported {
                let through = |via: &str| text.contains(&format!("{via}{item}"));
                if through(&prefix) || (path.is_file() && through("super::")) {
                    names.insert(child.clone());
                }
            }
            uses.extend(
                (names.into_iter()).filter(|other| other != name && children.contains_key(other)),
            );
        }
    }
    graph
}

/// A cycle in `graph`, as the modules along it, if there is one.
fn cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &Graph,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|on| on == node) {
            let mut found = path[start..].to_vec();
            found.push(node.to_owned());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in &graph[node] {
            if let Some(found) = visit(next, graph, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    (graph.keys()).find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

/// Every folder below `folder`, itself included.
fn folders(folder: &Path) -> Vec<PathBuf> {
    let mut all = vec![folder.to_path_buf()];
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            all.extend(folders(&path));
        }
    }
    all
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let mut cycles = Vec::new();
    for folder in folders(&src()) {
        let name = folder.strip_prefix(src()).unwrap().to_string_lossy();
        if let Some(found) = cycle(&graph(&folder)) {
            cycles.push(format!("src/{name}: {}", found.join(" -> ")));
        }
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_cycle_finder_finds_a_cycle_and_only_one() {
    let graph = |edges: &[(&str, &str)]| {
        let mut graph = Graph::new();
        for (from, to) in edges {
            graph
                .entry(from.to_string())
                .or_default()
                .insert(to.to_string());
            graph.entry(to.to_string()).or_default();
        }
        graph
    };
    let found = cycle(&graph(&[("a", "b"), ("b", "c"), ("c", "a")])).unwrap();
    assert_eq!(found, ["a", "b", "c", "a"]);
    assert_eq!(cycle(&graph(&[("a", "b"), ("a", "c"), ("b", "c")])), None);
    // The real sources are read: the crate root uses its modules.
    let top = self::graph(&src());
    assert!(top["runner"].contains("task"), "{top:?}");
    assert!(!top["task"].contains("runner"), "{top:?}");
    // A re-exported name is its child's: `runner`'s `Worker` is `worker`'s.
    let runner = reexports(&src().join("runner"));
    assert!(runner.contains(&("Worker".to_owned(), "worker".to_owned())));
}
