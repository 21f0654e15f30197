//! The GitHub CLI `gh`, the tool people already authenticate: finding,
//! opening and updating a pull request. It runs in the repository, so it
//! finds the GitHub repository from its remotes.
//!
//! A call that fails is sorted by what `gh` printed ([`Kind`]): a server
//! error or a network one passes, and so does a call stopped at its
//! 2-minute deadline, so [`retrying`] runs it again after 2 s, 4 s and
//! 8 s; a body GitHub refuses for its length may pass cut shorter;
//! anything else (not logged in, a validation error) will not.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::config::ShowDuration;

/// Longest a `gh` call may take before it is stopped and counted as a
/// failure that may pass (a hung connection).
const DEADLINE: Duration = Duration::from_secs(120);

/// How many times a transiently failed call is tried again, after
/// [`crate::retry::NETWORK`]'s 2 s, 4 s and 8 s.
pub(crate) const RETRIES: usize = 3;

/// Why a `gh` call failed, as far as trying it again is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A server error (HTTP 5xx) or a network one: it may pass.
    Transient,
    /// GitHub refused the body for its length: a shorter one may pass.
    BodyTooLong,
    /// Anything else (no `gh`, not logged in, a validation error, output
    /// that is not what was asked for): trying again will not help.
    Lasting,
}

/// A `gh` call that failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Failure {
    /// What went wrong, with what `gh` printed, for a person.
    pub said: String,
    /// Whether trying again may help.
    pub kind: Kind,
}

impl Failure {
    fn lasting(said: String) -> Failure {
        Failure {
            said,
            kind: Kind::Lasting,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.said)
    }
}

/// What a failed `gh` call's message says of trying again. A client error
/// (`HTTP 4xx`) is lasting whatever else the message holds (it may quote a
/// branch or title naming a timeout); a server error (`HTTP 5xx`, `502 Bad
/// Gateway`) and a network error (a refused or reset connection, a
/// timeout, a host that does not resolve, a failed TLS handshake, a
/// connection cut short: `EOF`) are transient.
pub(crate) fn kind(said: &str) -> Kind {
    let lower = said.to_ascii_lowercase();
    if lower.contains("body is too long") || lower.contains("body too long") {
        return Kind::BodyTooLong;
    }
    if status_after(&lower, "http ", b'4') {
        return Kind::Lasting;
    }
    const NETWORK: [&str; 14] = [
        "500 internal",
        "502 bad gateway",
        "503 service unavailable",
        "504 gateway time",
        "bad gateway",
        "service unavailable",
        "connection refused",
        "connection reset",
        "timeout",
        "timed out",
        "could not resolve host",
        "no such host",
        "tls handshake",
        "unexpected eof",
    ];
    let server = ["http ", "status code: ", "status code "]
        .iter()
        .any(|before| status_after(&lower, before, b'5'));
    if server || NETWORK.iter().any(|words| lower.contains(words)) || has_word(said, "EOF") {
        Kind::Transient
    } else {
        Kind::Lasting
    }
}

/// Whether `text` holds `before` followed by a three-digit status whose
/// first digit is `class`, standing alone (`http 502`, not `http 5021`).
fn status_after(text: &str, before: &str, class: u8) -> bool {
    text.match_indices(before).any(|(at, _)| {
        let rest = &text.as_bytes()[at + before.len()..];
        rest.len() >= 3
            && rest[0] == class
            && rest[1..3].iter().all(u8::is_ascii_digit)
            && rest.get(3).is_none_or(|c| !c.is_ascii_alphanumeric())
    })
}

/// Whether `word` stands in `text` as a word of its own.
fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        before.is_none_or(|c| !c.is_alphanumeric()) && after.is_none_or(|c| !c.is_alphanumeric())
    })
}

/// Runs `call` until it succeeds, fails for a reason that is not
/// transient, or has failed transiently once more than there are `waits`.
/// Before each retry `pause` is told the failure, the retry's number and
/// the wait, and does the waiting; it returns `false` to give up (a stop
/// was asked for), and the last failure is then the answer.
pub(crate) fn retrying<T, E>(
    waits: impl IntoIterator<Item = Duration>,
    mut call: impl FnMut() -> Result<T, Failure>,
    mut pause: impl FnMut(&Failure, usize, Duration) -> Result<bool, E>,
) -> Result<Result<T, Failure>, E> {
    let mut waits = waits.into_iter().enumerate();
    loop {
        match call() {
            Err(failure) if failure.kind == Kind::Transient => {
                let Some((index, wait)) = waits.next() else {
                    return Ok(Err(failure));
                };
                if !pause(&failure, index + 1, wait)? {
                    return Ok(Err(failure));
                }
            }
            done => return Ok(done),
        }
    }
}

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
    /// Labels it is given (`delivery_labels`); they must exist in the
    /// repository.
    pub labels: &'a [String],
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

    fn run(&self, args: &[impl AsRef<str>], input: Option<&str>) -> Result<String, Failure> {
        let mut child = Command::new("gh")
            .args(args.iter().map(AsRef::as_ref))
            .current_dir(&self.dir)
            .env("GH_PROMPT_DISABLED", "1")
            .stdin(input.map_or_else(Stdio::null, |_| Stdio::piped()))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|err| {
                Failure::lasting(match err.kind() {
                    std::io::ErrorKind::NotFound => {
                        "gh (the GitHub CLI) is not installed or not on PATH".to_owned()
                    }
                    _ => format!("cannot run gh: {err}"),
                })
            })?;
        // Named by its command and subcommand: `gh pr create`.
        let named: Vec<&str> = (args.iter().take(2))
            .map(AsRef::as_ref)
            .take_while(|arg| !arg.starts_with('-'))
            .collect();
        let named = named.join(" ");
        // Fed and waited for by a thread of its own, so a `gh` that hangs
        // is stopped at the deadline whatever it does with its pipes (one
        // that ended just then is reaped: its id names no process).
        let (id, input) = (child.id(), input.map(str::to_owned));
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
                let _ = stdin.write_all(text.as_bytes());
            }
            let _ = sender.send(child.wait_with_output());
        });
        let deadline = crate::retry::shortened(DEADLINE);
        let Ok(output) = receiver.recv_timeout(deadline) else {
            let _ = kill(Pid::from_raw(id as i32), Signal::SIGKILL);
            return Err(Failure {
                said: format!("gh {named} did not finish in {}", ShowDuration(deadline)),
                kind: Kind::Transient,
            });
        };
        let output = output.map_err(|err| Failure::lasting(format!("gh: {err}")))?;
        let stdout = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        if output.status.success() {
            Ok(stdout)
        } else {
            let said = String::from_utf8_lossy(&output.stderr).trim().to_owned();
            let said = if said.is_empty() { stdout } else { said };
            Err(Failure {
                kind: kind(&said),
                said: format!("gh {named} failed ({}): {said}", output.status),
            })
        }
    }

    /// Checks `gh` is installed and logged in, before any agent runs, its
    /// failure sorted: `gh auth status` asks GitHub, so a server or network
    /// error there may pass.
    pub(crate) fn preflight_once(&self) -> Result<(), Failure> {
        self.run(&["--version"], None)?;
        self.run(&["auth", "status"], None)
            .map(|_| ())
            .map_err(|failure| Failure {
                said: match failure.kind {
                    Kind::Transient => format!("gh cannot reach GitHub ({failure})"),
                    _ => format!("gh is not logged in ({failure}); run `gh auth login`"),
                },
                kind: failure.kind,
            })
    }

    /// The open pull request from `head`.
    pub(crate) fn find(&self, head: &str) -> Result<Option<Open>, Failure> {
        let listed = self.run(
            &[
                "pr",
                "list",
                "--head",
                head,
                "--state",
                "open",
                "--json",
                "number,url,isDraft",
                "--limit",
                "1",
            ],
            None,
        )?;
        let value: serde_json::Value = serde_json::from_str(&listed).map_err(|err| {
            Failure::lasting(format!("gh pr list printed no JSON ({err}): {listed}"))
        })?;
        Ok(value.get(0).and_then(|pr| {
            Some(Open {
                number: pr["number"].as_u64()?,
                url: pr["url"].as_str().unwrap_or_default().to_owned(),
                draft: pr["isDraft"].as_bool().unwrap_or(false),
            })
        }))
    }

    /// What pull request `number` says now: its state, the reviews that
    /// request changes, and its failing checks.
    pub(crate) fn view(&self, number: u64) -> Result<View, Failure> {
        let fields = "state,headRefOid,reviews,statusCheckRollup";
        let printed = self.run(&["pr", "view", &number.to_string(), "--json", fields], None)?;
        let value: serde_json::Value = serde_json::from_str(&printed).map_err(|err| {
            Failure::lasting(format!("gh pr view printed no JSON ({err}): {printed}"))
        })?;
        Ok(View::of(&value))
    }

    /// The end of what the failed steps of a GitHub Actions job printed
    /// (`gh run view --job ID --log-failed`), at most `lines` lines.
    pub(crate) fn failed_log(&self, job: &str, lines: usize) -> Result<String, Failure> {
        let printed = self.run(&["run", "view", "--job", job, "--log-failed"], None)?;
        let all: Vec<&str> = printed.lines().collect();
        Ok(all[all.len().saturating_sub(lines)..].join("\n"))
    }

    /// Marks draft pull request `number` ready for review.
    pub(crate) fn ready(&self, number: u64) -> Result<(), Failure> {
        self.run(&["pr", "ready", &number.to_string()], None)
            .map(|_| ())
    }

    /// Opens the pull request; returns its address (what `gh` prints).
    pub(crate) fn create(&self, request: &Request<'_>) -> Result<String, Failure> {
        let printed = self.run(&create_args(request, "-"), Some(request.body))?;
        Ok(printed.lines().last().unwrap_or_default().to_owned())
    }

    /// Updates pull request `number`'s title and body, and adds its
    /// labels.
    pub(crate) fn edit(&self, number: u64, request: &Request<'_>) -> Result<(), Failure> {
        self.run(&edit_args(number, request, "-"), Some(request.body))
            .map(|_| ())
    }
}

/// A pull request as `gh pr view` shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct View {
    /// `OPEN`, `MERGED` or `CLOSED`.
    pub state: String,
    /// The commit at its head.
    pub head: String,
    /// The reviews that request changes, oldest first.
    pub reviews: Vec<Review>,
    /// The checks that failed on its head.
    pub failing: Vec<FailingCheck>,
}

/// A review requesting changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Review {
    /// The host's id of it.
    pub id: String,
    /// Who wrote it.
    pub author: String,
    /// What it says.
    pub body: String,
}

/// A check that failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FailingCheck {
    /// Its name.
    pub name: String,
    /// Where its details are.
    pub url: String,
}

impl View {
    /// Reads `gh pr view --json state,headRefOid,reviews,statusCheckRollup`.
    fn of(value: &serde_json::Value) -> View {
        let text = |value: &serde_json::Value, key: &str| {
            value[key].as_str().unwrap_or_default().to_owned()
        };
        let list = |key: &str| value[key].as_array().cloned().unwrap_or_default();
        let reviews = (list("reviews").iter())
            .filter(|review| review["state"] == "CHANGES_REQUESTED")
            .map(|review| Review {
                id: [text(review, "id"), text(review, "submittedAt")]
                    .into_iter()
                    .find(|id| !id.is_empty())
                    .unwrap_or_default(),
                author: text(&review["author"], "login"),
                body: text(review, "body"),
            })
            .collect();
        // A check run has a conclusion; a commit status, a state.
        let failed = |check: &serde_json::Value| {
            ["FAILURE", "TIMED_OUT", "STARTUP_FAILURE", "ERROR"]
                .iter()
                .any(|bad| check["conclusion"] == *bad || check["state"] == *bad)
        };
        let failing = (list("statusCheckRollup").iter())
            .filter(|check| failed(check))
            .map(|check| FailingCheck {
                name: [text(check, "name"), text(check, "context")]
                    .into_iter()
                    .find(|name| !name.is_empty())
                    .unwrap_or_else(|| "a check".to_owned()),
                url: [text(check, "detailsUrl"), text(check, "targetUrl")]
                    .into_iter()
                    .find(|url| !url.is_empty())
                    .unwrap_or_default(),
            })
            .collect();
        View {
            state: text(value, "state"),
            head: text(value, "headRefOid"),
            reviews,
            failing,
        }
    }
}

/// The job id of a GitHub Actions check's address
/// (`…/actions/runs/RUN/job/JOB`).
pub(crate) fn actions_job(url: &str) -> Option<&str> {
    let (_, job) = url.split_once("/actions/runs/")?.1.split_once("/job/")?;
    let job = job.split(['/', '?', '#']).next()?;
    (!job.is_empty() && job.bytes().all(|b| b.is_ascii_digit())).then_some(job)
}

/// A pull request open on the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Open {
    /// Its number.
    pub number: u64,
    /// Its address.
    pub url: String,
    /// Whether it is a draft.
    pub draft: bool,
}

/// `gh pr edit NUMBER ...` with the body read from `body_file`: labels are
/// added, those it has already kept.
pub(crate) fn edit_args(number: u64, request: &Request<'_>, body_file: &str) -> Vec<String> {
    let mut args: Vec<String> = ["pr", "edit", &number.to_string(), "--title", request.title]
        .map(str::to_owned)
        .to_vec();
    args.extend(["--body-file".to_owned(), body_file.to_owned()]);
    for label in request.labels {
        args.extend(["--add-label".to_owned(), label.clone()]);
    }
    args
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
    for label in request.labels {
        args.extend(["--label".to_owned(), label.clone()]);
    }
    args
}

/// The command line a person runs to do by hand what ralph could not:
/// open the pull request, or update `open`, the one already open.
pub(crate) fn by_hand(request: &Request<'_>, body_file: &str, open: Option<u64>) -> String {
    let args = match open {
        None => create_args(request, body_file),
        Some(number) => edit_args(number, request, body_file),
    };
    let quoted: Vec<String> = args
        .iter()
        .map(|arg| crate::text::shell_quoted(arg))
        .collect();
    format!("gh {}", quoted.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_keeps_reviews_requesting_changes_and_failed_checks() {
        let value = serde_json::json!({
            "state": "OPEN",
            "headRefOid": "abc",
            "reviews": [
                {"id": "R1", "state": "APPROVED", "author": {"login": "ann"}, "body": "fine"},
                {"id": "R2", "state": "CHANGES_REQUESTED", "author": {"login": "bob"}, "body": "rename it"},
            ],
            "statusCheckRollup": [
                {"__typename": "CheckRun", "name": "test", "conclusion": "FAILURE",
                 "detailsUrl": "https://github.com/o/r/actions/runs/7/job/42"},
                {"__typename": "CheckRun", "name": "lint", "conclusion": "SUCCESS", "detailsUrl": ""},
                {"__typename": "StatusContext", "context": "ci/legacy", "state": "ERROR",
                 "targetUrl": "https://ci.example/1"},
            ],
        });
        let view = View::of(&value);
        assert_eq!((view.state.as_str(), view.head.as_str()), ("OPEN", "abc"));
        assert_eq!(
            view.reviews,
            [Review {
                id: "R2".into(),
                author: "bob".into(),
                body: "rename it".into()
            }]
        );
        let failing: Vec<(&str, &str)> = (view.failing.iter())
            .map(|check| (check.name.as_str(), check.url.as_str()))
            .collect();
        assert_eq!(
            failing,
            [
                ("test", "https://github.com/o/r/actions/runs/7/job/42"),
                ("ci/legacy", "https://ci.example/1")
            ]
        );
        assert_eq!(actions_job(&view.failing[0].url), Some("42"));
        assert_eq!(actions_job("https://ci.example/1"), None);
        assert_eq!(
            actions_job("https://github.com/o/r/actions/runs/7/job/x;rm"),
            None
        );
    }

    #[test]
    fn server_and_network_errors_are_transient_and_others_are_not() {
        for said in [
            "HTTP 502: Bad Gateway (https://api.github.com/graphql)",
            "HTTP 503",
            "non-200 OK status code: 504 Gateway Timeout body: \"\"",
            "HTTP 500: 500 Internal Server Error",
            "502 Bad Gateway",
            "error connecting to api.github.com: dial tcp: connect: connection refused",
            "read tcp 10.0.0.2:5123->140.82.112.6:443: read: connection reset by peer",
            "net/http: TLS handshake timeout",
            "Post \"https://api.github.com/graphql\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
            "the operation timed out",
            "Could not resolve host: api.github.com",
            "dial tcp: lookup api.github.com: no such host",
            "Post \"https://api.github.com/graphql\": EOF",
            "unexpected EOF",
        ] {
            assert_eq!(kind(said), Kind::Transient, "{said}");
        }
        for said in [
            "HTTP 401: Bad credentials (https://api.github.com/graphql)",
            "HTTP 422: Validation Failed (https://api.github.com/repos/o/r/pulls)",
            // A client error quoting a branch named after a network error.
            "HTTP 422: a pull request for ralph/fix-timeout already exists",
            "GraphQL: Resource not accessible by integration (createPullRequest)",
            "could not add label: 'ready' not found",
            "a pull request for branch \"ralph/x\" into branch \"main\" already exists:\nhttps://github.com/o/r/pull/503",
            "HTTP 5021",
            "EOFError in the hook",
            "",
        ] {
            assert_eq!(kind(said), Kind::Lasting, "{said}");
        }
        for said in [
            "GraphQL: Body is too long (maximum is 65536 characters) (createPullRequest)",
            "HTTP 422: Validation Failed\nbody is too long (maximum is 65536 characters)",
        ] {
            assert_eq!(kind(said), Kind::BodyTooLong, "{said}");
        }
    }

    fn failure(kind: Kind) -> Failure {
        Failure {
            said: format!("{kind:?}"),
            kind,
        }
    }

    /// Runs `retrying` over `answers` in turn, with `keep_going` as the
    /// pause's answer: what it returned, the calls made and the pauses.
    fn run(
        answers: Vec<Result<u32, Failure>>,
        keep_going: bool,
    ) -> (Result<u32, Failure>, usize, Vec<(usize, u64)>) {
        let waits = [1, 2, 4].map(Duration::from_secs);
        let mut answers = answers.into_iter();
        let mut calls = 0;
        let mut pauses = Vec::new();
        let result = retrying(
            waits,
            || {
                calls += 1;
                answers.next().expect("no more calls than answers")
            },
            |failure: &Failure, retry, wait| {
                assert_eq!(failure.kind, Kind::Transient);
                pauses.push((retry, wait.as_secs()));
                Ok::<bool, ()>(keep_going)
            },
        )
        .unwrap();
        (result, calls, pauses)
    }

    #[test]
    fn a_transient_failure_is_tried_again_three_times_with_longer_waits() {
        let transient = || Err(failure(Kind::Transient));
        assert_eq!(
            run(vec![transient(), transient(), Ok(7)], true),
            (Ok(7), 3, vec![(1, 1), (2, 2)])
        );
        assert_eq!(
            run(vec![transient(); 4], true),
            (transient(), 4, vec![(1, 1), (2, 2), (3, 4)])
        );
        // A stop asked for during the wait: no more tries.
        assert_eq!(
            run(vec![transient()], false),
            (transient(), 1, vec![(1, 1)])
        );
    }

    #[test]
    fn a_lasting_failure_or_a_long_body_is_not_tried_again() {
        for kind in [Kind::Lasting, Kind::BodyTooLong] {
            assert_eq!(
                run(vec![Err(failure(kind))], true),
                (Err(failure(kind)), 1, vec![])
            );
        }
        let transient = Err(failure(Kind::Transient));
        let lasting = Err(failure(Kind::Lasting));
        assert_eq!(
            run(vec![transient, lasting.clone()], true),
            (lasting, 2, vec![(1, 1)])
        );
    }

    #[test]
    fn labels_go_to_create_and_edit_and_the_command_by_hand() {
        let labels = ["ralph".to_owned(), "needs review".to_owned()];
        let request = Request {
            base: "main",
            head: "ralph/notes",
            title: "Add notes",
            body: "",
            draft: true,
            labels: &labels,
        };
        assert_eq!(
            by_hand(&request, ".ralph/pull-request.md", None),
            "gh pr create --base main --head ralph/notes --title 'Add notes' --body-file .ralph/pull-request.md --draft --label ralph --label 'needs review'"
        );
        assert_eq!(
            by_hand(&request, ".ralph/pull-request.md", Some(7)),
            "gh pr edit 7 --title 'Add notes' --body-file .ralph/pull-request.md --add-label ralph --add-label 'needs review'"
        );
        let none = Request {
            labels: &[],
            ..request
        };
        assert_eq!(
            create_args(&none, "-").join(" "),
            "pr create --base main --head ralph/notes --title Add notes --body-file - --draft"
        );
    }

    #[test]
    fn the_waits_double_from_two_seconds() {
        let waits: Vec<Duration> = crate::retry::NETWORK.waits(RETRIES).collect();
        assert_eq!(waits, [2, 4, 8].map(Duration::from_secs));
    }
}
