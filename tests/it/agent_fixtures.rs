//! What the real agent CLIs print, recorded by `scripts/agents-e2e/` (and,
//! where marked, quoted from a report), judged as a run would judge it:
//! each `tests/fixtures/agents/<preset>/<case>.log` with its `.json`
//! (`status`, `expected_class`, and optionally `expected_retry_after_s` and
//! `expected_usage`). A new CLI version's output is a new pair of files.

use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{TimeZone, Utc};
use ralph::agent::{Preset, Status, judge, usage};
use serde_json::Value;

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agents");
    let mut found = Vec::new();
    for tool in std::fs::read_dir(&root).expect("tests/fixtures/agents") {
        let tool = tool.expect("entry").path();
        for case in std::fs::read_dir(&tool).expect("a tool's folder") {
            let case = case.expect("entry").path();
            if case.extension().is_some_and(|ext| ext == "json") {
                found.push(case);
            }
        }
    }
    found.sort();
    found
}

/// `exit 1`, `signal 9` or `timeout` (stopped at a 60 s limit).
fn ending(text: &str) -> (Status, Option<Duration>) {
    match text.split_once(' ') {
        Some(("exit", code)) => (Status::Exited(code.parse().expect("exit code")), None),
        Some(("signal", signal)) => (Status::Signaled(signal.parse().expect("signal")), None),
        _ if text == "timeout" => (Status::Signaled(15), Some(Duration::from_secs(60))),
        _ => panic!("unknown status {text:?}"),
    }
}

#[test]
fn every_recorded_output_is_judged_as_documented() {
    let now = Utc.with_ymd_and_hms(2026, 11, 24, 12, 0, 0).unwrap();
    let cases = fixtures();
    assert!(cases.len() >= 8, "{} fixtures", cases.len());
    let mut wrong = Vec::new();
    for case in &cases {
        let meta: Value = serde_json::from_str(&std::fs::read_to_string(case).expect("read"))
            .unwrap_or_else(|e| panic!("{}: {e}", case.display()));
        let tool = case
            .parent()
            .and_then(Path::file_name)
            .expect("tool folder");
        let preset = Preset::from_name(&tool.to_string_lossy()).expect("a preset's folder");
        let output =
            std::fs::read_to_string(case.with_extension("log")).expect("the .log beside it");
        let (status, timed_out) = ending(meta["status"].as_str().expect("status"));
        let failure = judge(Some(preset), status, timed_out, &output, now);
        let class = failure.as_ref().map(|f| f.class.as_str());
        let name = case
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap_or(case)
            .display();
        if class != meta["expected_class"].as_str() {
            wrong.push(format!(
                "{name}: {class:?}, expected {} ({:?})",
                meta["expected_class"],
                failure.as_ref().map(|f| &f.reason)
            ));
        }
        if let Some(seconds) = meta["expected_retry_after_s"].as_i64() {
            let resets_at = failure.as_ref().and_then(|f| f.resets_at);
            if resets_at != Some(now + chrono::Duration::seconds(seconds)) {
                wrong.push(format!(
                    "{name}: resets at {resets_at:?}, expected in {seconds}s"
                ));
            }
        }
        if let Some(expected) = meta.get("expected_usage").filter(|u| u.is_object()) {
            let got = usage(Some(preset), &output).unwrap_or_default();
            let got = (got.input_tokens, got.cached_input_tokens, got.output_tokens);
            let want = (
                expected["input_tokens"].as_u64().unwrap_or(0),
                expected["cached_input_tokens"].as_u64().unwrap_or(0),
                expected["output_tokens"].as_u64().unwrap_or(0),
            );
            if got != want {
                wrong.push(format!("{name}: usage {got:?}, expected {want:?}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
