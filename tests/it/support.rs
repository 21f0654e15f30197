//! The test project builder every integration test uses: a temporary
//! folder, a pinned environment, and the real `ralph` binary.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

use assert_fs::TempDir;

/// The binary under test.
pub const RALPH: &str = env!("CARGO_BIN_EXE_ralph");

/// A temporary project folder.
pub struct TestProject {
    dir: TempDir,
}

impl TestProject {
    /// An empty project folder.
    pub fn new() -> TestProject {
        TestProject {
            dir: TempDir::new().expect("temp dir"),
        }
    }

    /// Writes `contents` to `path` (folders created as needed).
    pub fn file(self, path: &str, contents: impl AsRef<[u8]>) -> TestProject {
        let full = self.path().join(path);
        std::fs::create_dir_all(full.parent().expect("a file has a folder"))
            .expect("create folders");
        std::fs::write(full, contents).expect("write file");
        self
    }

    /// Appends one task line (JSON, newline added) to `tasks.jsonl`.
    pub fn task(self, line: &str) -> TestProject {
        let mut text = self.read_or_empty("tasks.jsonl");
        text.push_str(line);
        text.push('\n');
        self.file("tasks.jsonl", text)
    }

    /// The project folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Reads a project file as text.
    pub fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.path().join(path))
            .unwrap_or_else(|e| panic!("read {path}: {e}"))
    }

    /// Reads a project file as bytes, empty when missing.
    pub fn bytes(&self, path: &str) -> Vec<u8> {
        std::fs::read(self.path().join(path)).unwrap_or_default()
    }

    /// Reads a project file, empty when missing.
    pub fn read_or_empty(&self, path: &str) -> String {
        std::fs::read_to_string(self.path().join(path)).unwrap_or_default()
    }

    /// Runs `ralph ARGS` in the project folder.
    pub fn ralph(&self, args: &[&str]) -> Run {
        self.ralph_in(".", args)
    }

    /// Runs `ralph ARGS` in a folder of the project.
    pub fn ralph_in(&self, folder: &str, args: &[&str]) -> Run {
        let output = pinned_command(RALPH, self.path())
            .current_dir(self.path().join(folder))
            .args(args)
            .output()
            .expect("run ralph");
        Run::from(output)
    }

    /// A command for `program` in the project with the pinned environment.
    pub fn command(&self, program: &str) -> Command {
        let mut command = pinned_command(program, self.path());
        command.current_dir(self.path());
        command
    }
}

/// A command with a cleared environment: PATH kept, HOME in the project,
/// git's global and system config neutralised, author and dates pinned.
pub fn pinned_command(program: &str, home: &Path) -> Command {
    let mut command = Command::new(program);
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("LC_ALL", "C")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Test Author")
        .env("GIT_AUTHOR_EMAIL", "author@example.com")
        .env("GIT_COMMITTER_NAME", "Test Author")
        .env("GIT_COMMITTER_EMAIL", "author@example.com")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z");
    command
}

/// The result of one run of the binary.
#[derive(Debug)]
pub struct Run {
    /// Exit code (-1 when killed by a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(output: Output) -> Run {
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl Run {
    /// Asserts success with exactly this stdout and nothing on stderr.
    #[track_caller]
    pub fn ok(self, stdout: &str) -> Run {
        assert_eq!(
            (self.code, self.stdout.as_str(), self.stderr.as_str()),
            (0, stdout, ""),
            "{self:#?}"
        );
        self
    }

    /// Asserts success with exactly this stdout and this stderr.
    #[track_caller]
    pub fn ok_noting(self, stdout: &str, stderr: &str) -> Run {
        assert_eq!(
            (self.code, self.stdout.as_str(), self.stderr.as_str()),
            (0, stdout, stderr),
            "{self:#?}"
        );
        self
    }

    /// Asserts success and returns the run for further checks.
    #[track_caller]
    pub fn success(self) -> Run {
        assert_eq!(self.code, 0, "{self:#?}");
        self
    }

    /// Asserts exit `code`, exactly this stderr, and nothing on stdout.
    #[track_caller]
    pub fn fails(self, code: i32, stderr: &str) -> Run {
        assert_eq!(
            (self.code, self.stdout.as_str(), self.stderr.as_str()),
            (code, "", stderr),
            "{self:#?}"
        );
        self
    }

    /// Parses stdout as JSON.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:#?}"))
    }
}
