//! The worker contract (`ralph plan --input`): its files, checked against
//! the schemas shipped in docs/contract/.

use serde_json::Value;

use crate::support::TestProject;

const EXAMPLE: &str = include_str!("../../examples/plan/prds/auth.md");

/// Validates `value` against `docs/contract/<name>.schema.json`.
#[track_caller]
pub(crate) fn assert_valid(name: &str, value: &Value) {
    let path = format!(
        "{}/docs/contract/{name}.schema.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let problems: Vec<String> = validator
        .iter_errors(value)
        .map(|error| format!("{} at {}", error, error.instance_path()))
        .collect();
    assert!(problems.is_empty(), "{name}: {problems:#?}\n{value:#}");
}

fn input(repo: &std::path::Path, change: impl Fn(&mut Value)) -> String {
    let mut value = serde_json::json!({
        "contract_version": 1,
        "run_id": "run_20260213_abc123",
        "repo_path": repo.display().to_string(),
        "prd_path": "prds/auth.md",
        "base_branch": "main",
        "working_branch": "feature/example",
        "limits": {"story_max_attempts": 4, "run_max_attempts": 20, "story_timeout_minutes": 20, "run_timeout_minutes": 180},
        "verification": {"story_commands": ["npm test -- tests/auth.test.ts"], "run_commands": ["npm run lint", "npm test"]},
        "agent": {"mode": "ralph_fresh", "model_hint": "opencode"}
    });
    change(&mut value);
    value.to_string()
}

fn project() -> TestProject {
    TestProject::new().file("prds/auth.md", EXAMPLE)
}

#[test]
fn a_prd_is_planned_into_plan_json_byte_for_byte_the_same_twice() {
    let p = project();
    let text = input(p.path(), |_| {});
    assert_valid("run-input", &serde_json::from_str(&text).unwrap());
    let p = p.file("run-input.json", &text);
    p.ralph(&["plan", "--input", "run-input.json", "--out-dir", "out"])
        .ok("out/plan.json: 6 stories from prds/auth.md\n");
    p.ralph(&["plan", "--input", "run-input.json", "--out-dir", "again"])
        .success();
    let plan = p.read("out/plan.json");
    assert_eq!(plan, p.read("again/plan.json"));
    let value: Value = serde_json::from_str(&plan).unwrap();
    assert_valid("plan", &value);
    let stories = value["stories"].as_array().unwrap();
    let ids: Vec<&str> = stories.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["S1", "S2", "S3", "S4", "S5", "S6"]);
    assert_eq!(stories[1]["title"], "FR-2: Sign in");
    assert_eq!(stories[1]["deps"], serde_json::json!(["S1"]));
    assert_eq!(
        stories[0]["verification_commands"],
        serde_json::json!(["npm test -- signup", "npm test -- tests/auth.test.ts"])
    );
    assert_eq!(
        value["prd"]["sha256"],
        ralph::contract::sha256_hex(EXAMPLE.as_bytes())
    );
    // The repository's own queue is untouched.
    assert!(!p.path().join("tasks.jsonl").exists());
    let progress = p.json_lines("out/progress.ndjson");
    assert_eq!(progress.len(), 1);
    assert_eq!(progress[0]["phase"], "plan");
    assert_eq!(progress[0]["status"], "ok");
    assert_valid("progress", &progress[0]);
}

#[test]
fn an_invalid_contract_exits_30_and_says_so_in_result_json() {
    let p = project();
    for (change, message) in [
        (
            Box::new(|v: &mut Value| v["agent"]["mode"] = "chat".into()) as Box<dyn Fn(&mut Value)>,
            "$.agent.mode: \"chat\" is not a mode; the modes are ralph_fresh, session_loop, single_pass",
        ),
        (
            Box::new(|v: &mut Value| v["limits"]["run_max_attempts"] = 0.into()),
            "$.limits.run_max_attempts: must be a whole number above 0, not 0",
        ),
        (
            Box::new(|v: &mut Value| v["contract_version"] = 2.into()),
            "$.contract_version: must be 1 (the version this ralph reads), not 2",
        ),
    ] {
        let text = input(p.path(), change);
        let value: Value = serde_json::from_str(&text).unwrap();
        let schema_path = format!(
            "{}/docs/contract/run-input.schema.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let schema: Value =
            serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
        assert!(
            !jsonschema::is_valid(&schema, &value),
            "the schema refuses it too: {message}"
        );
        std::fs::write(p.path().join("bad.json"), &text).unwrap();
        let _ = std::fs::remove_dir_all(p.path().join("out"));
        p.ralph(&["plan", "--input", "bad.json", "--out-dir", "out"]).fails(
            30,
            &format!("error: bad.json: {message}\nhint: docs/contract/ holds the schema of every file of the worker contract\n"),
        );
        let result = p.json("out/result.json");
        assert_valid("result", &result);
        assert_eq!(result["status"], "failed");
        assert_eq!(result["reason"], "plan_generation_failed");
        assert_eq!(result["next_action"], "human_input");
        assert_eq!(result["error"], format!("bad.json: {message}"));
        assert!(!p.path().join("out/plan.json").exists());
    }
}

#[test]
fn a_prd_that_cannot_be_planned_fails_naming_its_line() {
    let p = TestProject::new().file("prds/auth.md", "# X\n\n- FR-1: a\n  Depends on: FR-7\n");
    let text = input(p.path(), |_| {});
    let p = p.file("in.json", text);
    p.ralph(&["plan", "--input", "in.json", "--out-dir", "out"]).fails(
        30,
        "error: prds/auth.md:4: FR-1 depends on FR-7, which this document does not define; define FR-7 or remove it from \"Depends on\"\nhint: docs/contract/ holds the schema of every file of the worker contract\n",
    );
    let result = p.json("out/result.json");
    assert_valid("result", &result);
    assert_eq!(result["run_id"], "run_20260213_abc123");
    let text = input(p.path(), |v| v["prd_path"] = "prds/none.md".into());
    let p = p.file("in.json", text);
    let run = p.ralph(&["plan", "--input", "in.json", "--out-dir", "out"]);
    assert_eq!(run.code, 30, "{run:#?}");
    assert!(
        run.stderr
            .starts_with("error: in.json: $.prd_path: cannot read "),
        "{run:#?}"
    );
}

/// An out-dir holding another run's files is refused, and keeps them:
/// planning run B where run A was planned writes nothing there, and an
/// execute of run B, even one refused for its input, leaves run A's
/// result as it is. A document whose every requirement is done plans no
/// story, which execute would refuse: so does plan, at once.
#[test]
fn an_out_dir_of_another_run_keeps_its_files_and_an_empty_plan_is_refused() {
    let p = project();
    let (a, b) = (
        input(p.path(), |v| v["run_id"] = "run_a".into()),
        input(p.path(), |v| v["run_id"] = "run_b".into()),
    );
    let p = p.file("a.json", a).file("b.json", b);
    p.ralph(&["plan", "--input", "a.json", "--out-dir", "out"])
        .success();
    let before = (p.read("out/plan.json"), p.read("out/progress.ndjson"));
    let refused = |dir: &str| {
        format!(
            "error: {dir}: holds the files of run \"run_a\", not \"run_b\"; give this run a fresh --out-dir\nhint: docs/contract/ holds the schema of every file of the worker contract\n"
        )
    };
    p.ralph(&["plan", "--input", "b.json", "--out-dir", "out"])
        .fails(30, &refused("out"));
    assert_eq!(
        (p.read("out/plan.json"), p.read("out/progress.ndjson")),
        before
    );
    assert!(!p.path().join("out/result.json").exists());
    let theirs = "{\"run_id\":\"run_a\",\"status\":\"success\"}";
    std::fs::write(p.path().join("out/result.json"), theirs).unwrap();
    let plan = p.path().join("out/plan.json");
    let execute = |input: &str| {
        p.ralph(&[
            "execute",
            "--input",
            input,
            "--plan",
            plan.to_str().unwrap(),
            "--out-dir",
            "out",
        ])
    };
    execute("b.json").fails(30, &refused(&p.path().join("out").display().to_string()));
    assert_eq!(execute("missing.json").code, 30);
    assert_eq!(p.read("out/result.json"), theirs);

    std::fs::write(p.path().join("a-file"), "x").unwrap();
    p.ralph(&["plan", "--input", "a.json", "--out-dir", "a-file"]).fails(
        30,
        "error: a-file: a file, where ralph needs a folder (--out-dir)\nhint: move or rename it, then run the command again; nothing was written\n",
    );

    let p = p.file("prds/auth.md", "# Done\n\n- [x] FR-1: all done\n");
    p.ralph(&["plan", "--input", "a.json", "--out-dir", "empty"]).fails(
        30,
        "error: prds/auth.md: no story to plan: every requirement is ticked done, or the document has none (docs/PLANNING.md)\nhint: docs/contract/ holds the schema of every file of the worker contract\n",
    );
    assert_eq!(
        p.json("empty/result.json")["reason"],
        "plan_generation_failed"
    );
}
