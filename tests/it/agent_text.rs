//! Text from the agent is masked and bounded (issue 46, point 6): what an
//! agent writes (commit subjects, task titles, bodies, ids, notes, block
//! reasons) reaches git history and ralph's logs with secrets masked, never
//! travels unbounded in a command line or an environment, and cannot wedge
//! a run.

use crate::support::TestProject;

const FIX_THE_LINE: &str = "hint: fix that line by hand (or undo the last edit), then run `ralph task validate`; nothing was written\n";

#[test]
fn an_id_starting_with_a_dash_is_refused_on_the_command_line_and_in_the_queue() {
    let p = TestProject::new().task(r#"{"id":"A","title":"a","status":"pending","leaf":true}"#);
    let before = p.read("tasks.jsonl");
    p.ralph(&["task", "add", "x", "--id=-x"]).fails(
        2,
        "error: invalid value '-x' for '--id <ID>': id \"-x\" starts with '-', which a command line reads as an option; start it with a letter, digit or _\n\nFor more information, try '--help'.\n",
    );
    let run = p.ralph(&["task", "add", "x", "--id", "--help"]);
    assert_eq!((run.code, run.stdout.as_str()), (2, ""), "{run:#?}");
    assert_eq!(p.read("tasks.jsonl"), before);

    let p = p.task(r#"{"id":"--help","title":"b","status":"pending","leaf":true}"#);
    p.ralph(&["task", "validate"]).fails(
        30,
        &format!("error: tasks.jsonl:2: id \"--help\" starts with '-', which a command line reads as an option; start it with a letter, digit or _\n{FIX_THE_LINE}"),
    );
}
