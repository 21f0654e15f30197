//! The fuzz targets' saved corpora (`fuzz/corpus/`), run as ordinary tests:
//! every input the fuzzer kept must still hold the properties.

use std::path::Path;

fn each_input(target: &str, check: fn(&[u8])) {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut count = 0;
    for entry in std::fs::read_dir(&folder).unwrap_or_else(|e| panic!("{}: {e}", folder.display()))
    {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        let outcome = std::panic::catch_unwind(|| check(&data));
        assert!(outcome.is_ok(), "{} fails its property", path.display());
        count += 1;
    }
    assert!(count > 0, "{} holds no inputs", folder.display());
}

#[test]
fn task_file_corpus_round_trips() {
    each_input("task_file", ralph::fuzzing::task_file);
}

#[test]
fn trigger_corpus_compiles_without_panics() {
    each_input("trigger", ralph::fuzzing::trigger);
}
