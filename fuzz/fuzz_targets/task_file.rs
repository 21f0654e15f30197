//! tasks.jsonl parser and patcher: never panics; round-trips byte for byte.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ralph::fuzzing::task_file(data));
