//! Tests that need a program a machine may lack (`support::skip_without`):
//! where it is missing they are not run and named at the end of the run,
//! or fail with `RALPH_TEST_REQUIRE_TOOLS=1`.

use std::process::{Command, Stdio};

use assert_fs::TempDir;

use crate::support::{REQUIRE_TOOLS, Tool, path_without, summary};

/// The tests that need git-lfs, in name order.
const LFS_TESTS: [&str; 3] = [
    "usergit::an_lfs_path_without_git_lfs_stops_the_run_and_commits_no_raw_blob",
    "usergit::lfs_files_ralph_checks_out_are_their_contents_not_pointers",
    "usergit::lfs_tracked_files_reach_the_base_as_lfs_pointers",
];

/// This test binary run again on the LFS tests alone (so never on this
/// file's tests), with git-lfs hidden from PATH and `RALPH_TEST_REQUIRE_TOOLS`
/// as `require` has it: its exit code and its stdout and stderr as one
/// text, in the order written.
fn lfs_tests_without_git_lfs(require: Option<&str>) -> (i32, String) {
    let temp = TempDir::new().expect("a temp dir");
    let output = temp.path().join("output");
    let file = std::fs::File::create(&output).expect("create the output file");
    let mut command = Command::new(std::env::current_exe().expect("this test binary"));
    command
        .arg("--exact")
        .args(LFS_TESTS)
        .env("PATH", path_without("git-lfs", &temp.path().join("bin")))
        .env_remove(REQUIRE_TOOLS)
        .stdin(Stdio::null())
        .stdout(file.try_clone().expect("share the output file"))
        .stderr(file);
    if let Some(value) = require {
        command.env(REQUIRE_TOOLS, value);
    }
    let status = command.status().expect("run the test binary");
    let text = std::fs::read_to_string(&output).expect("read the output");
    (status.code().unwrap_or(-1), text)
}

#[test]
fn tests_whose_program_is_missing_are_named_after_the_run_and_pass() {
    let (code, output) = lfs_tests_without_git_lfs(None);
    assert_eq!(code, 0, "{output}");
    assert!(output.contains("test result: ok. 3 passed;"), "{output}");
    assert!(
        output.ends_with(&format!(
            "\nNot run, for want of a program (RALPH_TEST_REQUIRE_TOOLS=1 makes that a failure):\n\
             3 tests need git-lfs (apt install git-lfs / brew install git-lfs): not run: {}\n",
            LFS_TESTS.join(", ")
        )),
        "{output}"
    );
}

#[test]
fn with_require_tools_a_missing_program_fails_its_tests() {
    let (code, output) = lfs_tests_without_git_lfs(Some("1"));
    assert_eq!(code, 101, "{output}");
    assert!(
        output.contains("test result: FAILED. 0 passed; 3 failed;"),
        "{output}"
    );
    assert_eq!(
        output
            .matches(
                "this test needs git-lfs, which is missing (apt install git-lfs / brew install git-lfs); RALPH_TEST_REQUIRE_TOOLS=1 makes that a failure"
            )
            .count(),
        3,
        "{output}"
    );
    assert!(!output.contains("Not run"), "{output}");
}

#[test]
fn the_summary_has_a_line_per_program_with_its_tests_in_order() {
    let not_run = [
        (Tool::Lsof, "misbehave::b".to_owned()),
        (Tool::GitLfs, "usergit::x".to_owned()),
        (Tool::Lsof, "crash::a".to_owned()),
    ];
    assert_eq!(
        summary(&not_run),
        "\nNot run, for want of a program (RALPH_TEST_REQUIRE_TOOLS=1 makes that a failure):\n\
         1 test needs git-lfs (apt install git-lfs / brew install git-lfs): not run: usergit::x\n\
         2 tests need lsof (apt install lsof / part of macOS): not run: crash::a, misbehave::b\n"
    );
}
