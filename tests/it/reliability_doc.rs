//! `docs/RELIABILITY.md` is checked against the tests, so it cannot drift:
//! every test a row names exists where its path says, and every fault point
//! has a row.

use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The source file a test path points at: `a::b::name` is in
/// `tests/it/a/b.rs`, `a::name` in `tests/it/a.rs`, and a unit test
/// `ralph::module` in `src/module.rs` (or `src/module/mod.rs`).
fn file_of(path: &str) -> PathBuf {
    let parts: Vec<&str> = path.split("::").collect();
    if parts[0] == "ralph" {
        let module = parts[1..].join("/");
        let file = root().join(format!("src/{module}.rs"));
        return if file.exists() {
            file
        } else {
            root().join(format!("src/{module}/mod.rs"))
        };
    }
    let modules = &parts[..parts.len() - 1];
    root()
        .join("tests/it")
        .join(format!("{}.rs", modules.join("/")))
}

#[test]
fn every_row_names_a_test_that_exists() {
    let doc = std::fs::read_to_string(root().join("docs/RELIABILITY.md")).unwrap();
    let mut rows = 0;
    // The rows of the tables headed `| what | how often | outcome | test |`.
    let mut in_table = false;
    let table_rows: Vec<&str> = doc
        .lines()
        .filter(|line| {
            if line.starts_with("| what | how often | outcome | test |") {
                in_table = true;
                return false;
            }
            if !line.starts_with('|') {
                in_table = false;
            }
            in_table && !line.starts_with("|---")
        })
        .collect();
    for line in table_rows {
        let cell = line
            .trim_end_matches('|')
            .rsplit('|')
            .next()
            .unwrap()
            .trim();
        let names: Vec<&str> = cell.split('`').skip(1).step_by(2).collect();
        let (file, name) = match names.as_slice() {
            [path] => (file_of(path), path.rsplit("::").next().unwrap()),
            [module, name] => (file_of(module), *name),
            _ => panic!("a row without a test: {line}"),
        };
        let source = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("{}: {e} (row: {line})", file.display()));
        assert!(
            source.contains(&format!("fn {name}(")),
            "{} has no test {name} (row: {line})",
            file.display()
        );
        rows += 1;
    }
    assert!(rows >= 30, "only {rows} rows");
}

#[test]
fn every_fault_point_has_a_row() {
    let doc = std::fs::read_to_string(root().join("docs/RELIABILITY.md")).unwrap();
    for point in ralph::fault::POINTS {
        assert!(
            doc.contains(&format!("| fault `{point}`")),
            "no row for fault point {point}"
        );
    }
}

#[test]
fn every_promise_of_the_threat_model_names_tests_that_exist() {
    let doc = std::fs::read_to_string(root().join("docs/SECURITY.md")).unwrap();
    let mut tests = 0;
    // Every name like `module::test` (a unit test: `module::tests::test`)
    // anywhere in the page.
    for name in doc.split('`').skip(1).step_by(2) {
        if !name.contains("::") || name.contains(' ') || name.contains('/') {
            continue;
        }
        let (file, test) = match name.split_once("::tests::") {
            Some((module, test)) => (file_of(&format!("ralph::{module}")), test),
            None => (file_of(name), name.rsplit("::").next().unwrap()),
        };
        let source = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("{}: {e} (named: {name})", file.display()));
        assert!(
            source.contains(&format!("fn {test}(")),
            "{} has no test {test} (named: {name})",
            file.display()
        );
        tests += 1;
    }
    assert!(tests >= 20, "only {tests} tests named");
}
