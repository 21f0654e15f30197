//! Property tests of `ralph plan`'s reader: any text is read without a
//! panic, the same text always gives the same plan, and whatever plan it
//! gives goes into a queue that stays valid, again and again.

use proptest::prelude::*;
use ralph::task::{Patch, Queue};

/// Lines from the grammar's vocabulary, and some that only look like it.
fn line() -> impl Strategy<Value = String> {
    let id = prop_oneof![
        Just("FR-1"),
        Just("FR-2"),
        Just("FR-10"),
        Just("US-003"),
        Just("R1"),
        Just("R1.2")
    ];
    prop_oneof![
        (1..4usize, "[A-Za-z ]{0,12}")
            .prop_map(|(level, text)| format!("{} {text}", "#".repeat(level))),
        (1..5usize, id.clone(), "[a-z ]{0,12}")
            .prop_map(|(level, id, text)| format!("{} {id}: {text}", "#".repeat(level))),
        (0..6usize, id.clone(), "[a-z ]{0,12}")
            .prop_map(|(indent, id, text)| format!("{}- {id}: {text}", " ".repeat(indent))),
        (0..6usize, any::<bool>(), "[a-z ]{1,12}").prop_map(|(indent, ticked, text)| format!(
            "{}- [{}] {text}",
            " ".repeat(indent),
            if ticked { "x" } else { " " }
        )),
        (0..4usize, id.clone())
            .prop_map(|(indent, id)| format!("{}Depends on: {id}", " ".repeat(indent))),
        (0..4usize).prop_map(|indent| format!("{}Acceptance criteria:", " ".repeat(indent))),
        (0..4usize, "[a-z`/* ]{0,16}")
            .prop_map(|(indent, files)| format!("{}Files: {files}", " ".repeat(indent))),
        (0..4usize, "[a-z ]{0,10}")
            .prop_map(|(indent, command)| format!("{}Verify: `{command}`", " ".repeat(indent))),
        Just("```".to_owned()),
        Just(String::new()),
        Just("\u{3000}wide space".to_owned()),
        "\\PC{0,20}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn any_text_reads_without_panic_and_the_same_way_twice(text in "\\PC{0,300}") {
        let first = ralph::plan::read("prd.md", "prd.md", text.as_bytes());
        let second = ralph::plan::read("prd.md", "prd.md", text.as_bytes());
        prop_assert_eq!(first, second);
    }

    #[test]
    fn a_plan_always_makes_a_valid_queue_and_planning_again_adds_nothing(
        lines in proptest::collection::vec(line(), 0..40)
    ) {
        let text = lines.join("\n");
        let Ok(plan) = ralph::plan::read("prd.md", "prd.md", text.as_bytes()) else {
            return Ok(());
        };
        let patch = Patch::Plan { parent: None, tasks: plan.tasks.clone(), update: false };
        let mut queue = Queue::empty();
        queue.apply(&patch, "2026-01-01T00:00:00Z").unwrap();
        queue.validate().unwrap();
        let once = queue.tasks.render();
        let again = queue.apply(&patch, "2026-01-01T00:00:00Z").unwrap();
        queue.validate().unwrap();
        prop_assert_eq!(queue.tasks.render(), once);
        let added = again.iter().any(|change| matches!(
            change,
            ralph::task::Change::Planned { outcome: ralph::task::Planned::Added, .. }
        ));
        prop_assert!(!added, "planning again added tasks");
    }
}
