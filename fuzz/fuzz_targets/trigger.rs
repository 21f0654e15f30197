//! Trigger normalisation and compilation: never panics.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ralph::fuzzing::trigger(data));
