//! The GitHub CLI `gh`, the tool people already authenticate: finding,
//! opening and updating a pull request. It runs in the repository, so it
//! finds the GitHub repository from its remotes.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A pull request to open or update.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Request<'a> {
    /// The branch it merges into.
    pub base: &'a str,
    /// The branch it carries.
    pub head: &'a str,
    /// Its title.
    pub title: &'a str,
    /// Its body.
    pub body: &'a str,
    /// Whether it is opened as a draft.
    pub draft: bool,
}

/// `gh` in the repository at `dir`.
pub(crate) struct Gh {
    dir: PathBuf,
}

impl Gh {
    /// `gh` working in `dir`.
    pub(crate) fn new(dir: &Path) -> Gh {
        Gh {
            dir: dir.to_owned(),
        }
    }

    fn run(&self, args: &[&str], input: Option<&str>) -> Result<String, String> {
        let mut child = Command::new("gh")
            .args(args)
            .current_dir(&self.dir)
            .env("GH_PROMPT_DISABLED", "1")
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|err| match err.kind() {
                std::io::ErrorKind::NotFound => {
                    "gh (the GitHub CLI) is not installed or not on PATH".to_owned()
                }
                _ => format!("cannot run gh: {err}"),
            })?;
        if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
            let _ = stdin.write_all(text.as_bytes());
        }
        let output = child
            .wait_with_output()
            .map_err(|err| format!("gh: {err}"))?;
        let stdout = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        if output.status.success() {
            Ok(stdout)
        } else {
            let said = String::from_utf8_lossy(&output.stderr).trim().to_owned();
            Err(format!(
                "gh {} failed ({}): {}",
                args.first().copied().unwrap_or_default(),
                output.status,
                if said.is_empty() { stdout } else { said }
            ))
        }
    }

    /// Checks `gh` is installed and logged in, before any agent runs.
    pub(crate) fn preflight(&self) -> Result<(), String> {
        self.run(&["--version"], None)?;
        self.run(&["auth", "status"], None)
            .map(|_| ())
            .map_err(|said| format!("gh is not logged in ({said}); run `gh auth login`"))
    }

    /// The open pull request from `head`: its number and address.
    pub(crate) fn find(&self, head: &str) -> Result<Option<(u64, String)>, String> {
        let listed = self.run(
            &[
                "pr",
                "list",
                "--head",
                head,
                "--state",
                "open",
                "--json",
                "number,url",
                "--limit",
                "1",
            ],
            None,
        )?;
        let value: serde_json::Value = serde_json::from_str(&listed)
            .map_err(|err| format!("gh pr list printed no JSON ({err}): {listed}"))?;
        Ok(value.get(0).and_then(|pr| {
            Some((
                pr["number"].as_u64()?,
                pr["url"].as_str().unwrap_or_default().to_owned(),
            ))
        }))
    }

    /// Opens the pull request; returns its address (what `gh` prints).
    pub(crate) fn create(&self, request: &Request<'_>) -> Result<String, String> {
        let args = create_args(request, "-");
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let printed = self.run(&args, Some(request.body))?;
        Ok(printed.lines().last().unwrap_or_default().to_owned())
    }

    /// Updates pull request `number`'s title and body.
    pub(crate) fn edit(&self, number: u64, request: &Request<'_>) -> Result<(), String> {
        let number = number.to_string();
        let args = [
            "pr",
            "edit",
            &number,
            "--title",
            request.title,
            "--body-file",
            "-",
        ];
        self.run(&args, Some(request.body)).map(|_| ())
    }
}

/// `gh pr create ...` with the body read from `body_file`.
pub(crate) fn create_args(request: &Request<'_>, body_file: &str) -> Vec<String> {
    let mut args: Vec<String> = [
        "pr",
        "create",
        "--base",
        request.base,
        "--head",
        request.head,
        "--title",
        request.title,
        "--body-file",
        body_file,
    ]
    .map(str::to_owned)
    .to_vec();
    if request.draft {
        args.push("--draft".to_owned());
    }
    args
}

/// The command line a person runs to open the pull request by hand.
pub(crate) fn by_hand(request: &Request<'_>, body_file: &str) -> String {
    let args = create_args(request, body_file);
    let quoted: Vec<String> = args
        .iter()
        .map(|arg| shlex::try_quote(arg).map_or_else(|_| arg.clone(), |q| q.into_owned()))
        .collect();
    format!("gh {}", quoted.join(" "))
}
