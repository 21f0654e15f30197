//! The pull request's body, written from a run's records: what was left
//! unfinished (for a run that did not finish), the task checklist, the
//! verification evidence, the commits and the totals. Pure: plain data in,
//! Markdown out.
//!
//! Every line is passed through [`crate::redact::redact`] before it is
//! measured, and text from the run (titles, reasons, commands, subjects) is
//! kept to one line, so it can never start a heading, a list or a code
//! fence, nor open an HTML comment that hides the rest of the body.
//!
//! # Fitting the limit
//!
//! A body longer than the limit (GitHub's [`LIMIT`], counted in `char`s) is
//! cut by whole lines from the end of one section at a time, in this order,
//! each only as far as needed:
//!
//! 1. Commits (the branch itself lists them),
//! 2. Verification,
//! 3. Totals,
//! 4. the task checklist, then the "Not finished" summary: kept whole unless
//!    they alone exceed the limit.
//!
//! A section that lost lines ends with `_… N more lines cut to fit GitHub's
//! limit._`. Should even the headings and those markers not fit (a limit of
//! a few hundred characters), the body is the longest run of whole lines
//! from its start that fits. The same report always gives the same body,
//! and the body never exceeds the limit.
//!
//! # Cut shorter
//!
//! Should GitHub refuse a body for its length all the same (it may count
//! otherwise than by `char`), [`shorter`] cuts the same way to
//! [`SHORTER_LIMIT`] *bytes*, which no count of characters exceeds, and
//! each cut's line also says where the full body is.

use crate::redact::redact;
use crate::text::count;

/// GitHub's limit on a pull request's body, in characters.
pub(crate) const LIMIT: usize = 65_536;

/// The limit of a body cut shorter after GitHub refused one for its
/// length, in bytes: in characters, UTF-16 units and bytes alike, well
/// under [`LIMIT`].
pub(crate) const SHORTER_LIMIT: usize = 60_000;

/// What the body is written from: a run's records, as plain data.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Report {
    /// The pull request's title (for `gh`; the body does not repeat it).
    pub title: String,
    /// The branch the pull request merges into.
    pub base: String,
    /// The branch holding the run's work.
    pub branch: String,
    /// How the run ended.
    pub ended: Ending,
    /// The run's tasks, in order.
    pub tasks: Vec<TaskLine>,
    /// The verification commands that ran, in order.
    pub checks: Vec<Check>,
    /// The branch's commits as (short sha, subject), in order.
    pub commits: Vec<(String, String)>,
    /// What the run spent.
    pub totals: Totals,
    /// The PRD the work comes from, when it is one watched
    /// (`prds/notes.md` and the commit that brought it).
    pub source: Option<(String, String)>,
    /// Where the run's records are: its id.
    pub run_id: Option<String>,
    /// How the run ended, as its reason code (`blocked`).
    pub code: Option<String>,
    /// The last lines of what the agent printed, for each unfinished
    /// task: (what, the lines).
    pub tails: Vec<(String, String)>,
}

/// How a run ended, as the pull request tells it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Ending {
    /// Every task is done and the checks passed.
    Done,
    /// Blocked or out of budget: the pull request is a draft.
    Failed {
        /// Why the run stopped, in a sentence.
        reason: String,
        /// What a person should do next, in a sentence.
        next_step: String,
    },
}

/// One task in the checklist.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TaskLine {
    /// The task's id (`A.1`).
    pub id: String,
    /// The task's title.
    pub title: String,
    /// Where the task stands.
    pub state: TaskState,
    /// What the records add: verified or not, its attempts.
    pub note: Option<String>,
}

/// Where a task stands at the end of the run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum TaskState {
    /// Done, with the short sha of its commit when known.
    Done {
        /// The short sha of the commit that landed it.
        commit: Option<String>,
    },
    /// Blocked, for this reason.
    Blocked {
        /// Why it is blocked, in a sentence.
        reason: String,
    },
    /// Not finished.
    Open,
}

/// One verification command's result.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Check {
    /// The task it verified, or `None` for a run-level `verify.run` check.
    pub task: Option<String>,
    /// The command line.
    pub command: String,
    /// Whether it passed.
    pub passed: bool,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
    /// The end of its output, for a failed one.
    pub tail: Option<String>,
}

/// What the run spent.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Totals {
    /// Iterations run.
    pub iterations: u64,
    /// Input tokens, when the agent reported them.
    pub input_tokens: Option<u64>,
    /// Output tokens, when the agent reported them.
    pub output_tokens: Option<u64>,
    /// Cost in US dollars, when the agent reported it.
    pub cost_usd: Option<f64>,
}

/// The body for `report`, within GitHub's [`LIMIT`].
pub(crate) fn body(report: &Report) -> String {
    body_within(report, LIMIT)
}

/// The body for `report`, cut as the module documentation describes to at
/// most `limit` characters.
pub(crate) fn body_within(report: &Report, limit: usize) -> String {
    fitted(report, &Budget::chars(limit))
}

/// The body for `report` cut to [`SHORTER_LIMIT`] bytes, for when GitHub
/// refused [`body`]'s for its length; each cut says the full body is in
/// `full_body` (a path).
pub(crate) fn shorter(report: &Report, full_body: &str) -> String {
    fitted(
        report,
        &Budget {
            limit: SHORTER_LIMIT,
            len: str::len,
            full_body: Some(full_body),
        },
    )
}

/// What a body is cut to fit.
struct Budget<'a> {
    /// The longest the body may be.
    limit: usize,
    /// A text's length as the limit counts it.
    len: fn(&str) -> usize,
    /// Where the full body is, said in each cut's marker.
    full_body: Option<&'a str>,
}

impl Budget<'_> {
    /// `limit` characters, the markers naming no file.
    fn chars(limit: usize) -> Budget<'static> {
        Budget {
            limit,
            len: chars,
            full_body: None,
        }
    }

    /// The line that ends a section which lost `cut` lines.
    fn marker(&self, cut: usize) -> String {
        let lines = count(cut, "more line");
        match self.full_body {
            None => format!("_… {lines} cut to fit GitHub's limit._"),
            Some(file) => format!(
                "_… {lines} cut to fit GitHub's limit; the full body is in {}._",
                code(file)
            ),
        }
    }

    /// What the marker for `cut` lines adds, its newline included.
    fn marker_len(&self, cut: usize) -> usize {
        if cut == 0 {
            0
        } else {
            (self.len)(&self.marker(cut)) + 1
        }
    }
}

/// The body for `report`, cut as the module documentation describes to
/// fit `budget`.
fn fitted(report: &Report, budget: &Budget<'_>) -> String {
    let mut sections = sections(report);
    fit(&mut sections, budget);
    let text = render(&sections, budget);
    if (budget.len)(&text) <= budget.limit {
        text
    } else {
        whole_lines_within(&text, budget)
    }
}

const FOOTER: &str = "_Written by ralph from the run's records._";

/// One section of the body: a heading and the lines under it, which are cut
/// from the end when the body is too long.
struct Section {
    heading: &'static str,
    lines: Vec<String>,
    /// How many lines were cut from the end.
    cut: usize,
    /// Lower ranks are cut first.
    rank: u8,
}

impl Section {
    fn new(heading: &'static str, rank: u8, lines: Vec<String>) -> Section {
        // Redacted here, so that what is measured is what is written.
        let lines = lines
            .into_iter()
            .map(|line| redact(&line).into_owned())
            .collect();
        Section {
            heading,
            lines,
            cut: 0,
            rank,
        }
    }

    /// What is written for this section as `budget` counts it, its
    /// trailing newline included.
    fn len(&self, budget: &Budget<'_>) -> usize {
        (budget.len)(self.heading)
            + 2
            + (self.lines.iter())
                .map(|line| (budget.len)(line) + 1)
                .sum::<usize>()
            + budget.marker_len(self.cut)
    }
}

fn sections(report: &Report) -> Vec<Section> {
    let mut sections = Vec::new();
    if let Some((path, commit)) = &report.source {
        sections.push(Section::new(
            "## PRD",
            5,
            vec![format!(
                "{} as of {}",
                code(path),
                code(commit.get(..12).unwrap_or(commit))
            )],
        ));
    }
    if let Ending::Failed { reason, next_step } = &report.ended {
        sections.push(Section::new(
            "## Not finished",
            4,
            not_finished(report, reason, next_step),
        ));
    }
    sections.push(Section::new("## Tasks", 3, tasks(&report.tasks)));
    sections.push(Section::new("## Verification", 1, checks(&report.checks)));
    sections.push(Section::new("## Commits", 0, commits(&report.commits)));
    sections.push(Section::new("## Totals", 2, totals(&report.totals)));
    if let Some(run_id) = &report.run_id {
        sections.push(Section::new(
            "## Records",
            2,
            vec![
                format!(
                    "Run {} in the repository ralph ran in: {} (every step), {} (a line per iteration), {} (how it ended), and each iteration's prompt and output under {} and {}.",
                    code(run_id),
                    code(crate::paths::EVENTS_FILE),
                    code("ralph.log"),
                    code(crate::paths::RESULT_FILE),
                    code(crate::paths::PROMPTS_DIR),
                    code(crate::paths::LOGS_DIR),
                ),
            ],
        ));
    }
    sections
}

fn not_finished(report: &Report, reason: &str, next_step: &str) -> Vec<String> {
    let (mut done, mut blocked, mut open) = (0, 0, 0);
    for task in &report.tasks {
        match task.state {
            TaskState::Done { .. } => done += 1,
            TaskState::Blocked { .. } => blocked += 1,
            TaskState::Open => open += 1,
        }
    }
    let failed: Vec<&Check> = report.checks.iter().filter(|c| !c.passed).collect();
    let mut lines = vec![
        match &report.code {
            Some(status) => format!("Reason: {} ({})", plain(reason), code(status)),
            None => format!("Reason: {}", plain(reason)),
        },
        String::new(),
        format!("- Tasks: {done} done, {blocked} blocked, {open} not finished"),
        format!(
            "- Checks: {} passed, {} failed",
            report.checks.len() - failed.len(),
            failed.len()
        ),
    ];
    for check in failed {
        lines.push(format!(
            "- Failed: {} ({})",
            code(&check.command),
            task_label(check)
        ));
        if let Some(tail) = &check.tail {
            fenced(&mut lines, tail);
        }
    }
    for (what, tail) in &report.tails {
        lines.push(format!("- Last output of {}:", plain(what)));
        fenced(&mut lines, tail);
    }
    lines.push(String::new());
    lines.push(format!("Next step: {}", plain(next_step)));
    lines
}

/// Most lines of an output's end the body quotes.
const TAIL_LINES: usize = 12;

/// Adds the last [`TAIL_LINES`] of `tail` as an indented code block
/// inside the list item above it (six spaces: the item's two, then four),
/// so nothing in it renders as Markdown or closes it early.
fn fenced(lines: &mut Vec<String>, tail: &str) {
    let all: Vec<&str> = tail.trim_end().lines().collect();
    let start = all.len().saturating_sub(TAIL_LINES);
    lines.push(String::new());
    for line in &all[start..] {
        lines.push(format!("      {line}"));
    }
    lines.push(String::new());
}

fn tasks(tasks: &[TaskLine]) -> Vec<String> {
    if tasks.is_empty() {
        return vec!["No tasks.".to_owned()];
    }
    tasks
        .iter()
        .map(|task| {
            let name = format!("{} {}", plain(&task.id), plain(&task.title));
            let note = (task.note.as_deref())
                .map(|note| format!(" — {}", plain(note)))
                .unwrap_or_default();
            let line = match &task.state {
                TaskState::Done { commit: Some(sha) } => {
                    format!("- [x] {name} ({})", plain(sha))
                }
                TaskState::Done { commit: None } => format!("- [x] {name}"),
                TaskState::Blocked { reason } => {
                    format!("- [ ] {name} — blocked: {}", plain(reason))
                }
                TaskState::Open => format!("- [ ] {name} — not finished"),
            };
            format!("{line}{note}")
        })
        .collect()
}

fn checks(checks: &[Check]) -> Vec<String> {
    if checks.is_empty() {
        return vec!["No checks ran.".to_owned()];
    }
    checks
        .iter()
        .map(|check| {
            format!(
                "- {} {} ({}, {})",
                if check.passed { "✅" } else { "❌" },
                code(&check.command),
                task_label(check),
                seconds(check.duration_ms)
            )
        })
        .collect()
}

fn commits(commits: &[(String, String)]) -> Vec<String> {
    if commits.is_empty() {
        return vec!["No commits.".to_owned()];
    }
    commits
        .iter()
        .map(|(sha, subject)| format!("- {} {}", plain(sha), plain(subject)))
        .collect()
}

fn totals(totals: &Totals) -> Vec<String> {
    let mut lines = vec![format!("- Iterations: {}", totals.iterations)];
    if let Some(tokens) = totals.input_tokens {
        lines.push(format!("- Tokens in: {tokens}"));
    }
    if let Some(tokens) = totals.output_tokens {
        lines.push(format!("- Tokens out: {tokens}"));
    }
    // `$` is left out: two on a line start a formula on GitHub.
    if let Some(cost) = totals.cost_usd.filter(|cost| cost.is_finite()) {
        lines.push(format!("- Cost: {cost:.2} USD"));
    }
    lines
}

/// Cuts lines from the sections, lowest rank first, until the body fits
/// `budget` or nothing is left to cut.
fn fit(sections: &mut [Section], budget: &Budget<'_>) {
    let limit = budget.limit;
    let mut total = rendered_len(sections, budget);
    let mut order: Vec<usize> = (0..sections.len()).collect();
    order.sort_by_key(|&index| sections[index].rank);
    for index in order {
        if total <= limit {
            return;
        }
        let section = &mut sections[index];
        let mut rest = total - section.len(budget);
        let mut content = section.len(budget) - budget.marker_len(section.cut);
        while let Some(line) = section.lines.pop() {
            section.cut += 1;
            content -= (budget.len)(&line) + 1;
            if rest + content + budget.marker_len(section.cut) <= limit {
                break;
            }
        }
        rest += content + budget.marker_len(section.cut);
        total = rest;
    }
}

fn rendered_len(sections: &[Section], budget: &Budget<'_>) -> usize {
    // A blank line after each section, then the footer and its newline.
    (sections.iter()).map(|s| s.len(budget) + 1).sum::<usize>() + (budget.len)(FOOTER) + 1
}

fn render(sections: &[Section], budget: &Budget<'_>) -> String {
    let mut out = String::new();
    for section in sections {
        out.push_str(section.heading);
        out.push_str("\n\n");
        for line in &section.lines {
            out.push_str(line);
            out.push('\n');
        }
        if section.cut > 0 {
            out.push_str(&budget.marker(section.cut));
            out.push('\n');
        }
        out.push('\n');
    }
    out.push_str(FOOTER);
    out.push('\n');
    out
}

/// The longest run of whole lines from the start of `text` that fits.
fn whole_lines_within(text: &str, budget: &Budget<'_>) -> String {
    let mut out = String::new();
    let mut len = 0;
    for line in text.split_inclusive('\n') {
        len += (budget.len)(line);
        if len > budget.limit {
            break;
        }
        out.push_str(line);
    }
    out
}

fn chars(text: &str) -> usize {
    text.chars().count()
}

/// The task a check verified, or `run` for a run-level check.
fn task_label(check: &Check) -> String {
    check
        .task
        .as_deref()
        .map_or_else(|| "run".to_owned(), plain)
}

/// Milliseconds as seconds with one decimal, rounded half up: `12.3 s`.
fn seconds(ms: u64) -> String {
    let tenths = ms.saturating_add(50) / 100;
    format!("{}.{} s", tenths / 10, tenths % 10)
}

/// `text` redacted and on one line: each run of control characters
/// (newlines among them) becomes one space.
fn one_line(text: &str) -> String {
    let text = redact(text);
    let parts: Vec<&str> = text
        .split(char::is_control)
        .filter(|part| !part.is_empty())
        .collect();
    parts.join(" ").trim().to_owned()
}

/// `text` for running Markdown: one line, and `<` escaped so it cannot open
/// an HTML comment or tag.
fn plain(text: &str) -> String {
    one_line(text).replace('<', "&lt;")
}

/// `text` as an inline code span, fenced with more backticks than it holds.
fn code(text: &str) -> String {
    let text = one_line(text);
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, title: &str, state: TaskState) -> TaskLine {
        TaskLine {
            id: id.to_owned(),
            title: title.to_owned(),
            state,
            note: None,
        }
    }

    fn check(task: Option<&str>, command: &str, passed: bool, duration_ms: u64) -> Check {
        Check {
            task: task.map(str::to_owned),
            command: command.to_owned(),
            passed,
            duration_ms,
            tail: None,
        }
    }

    fn done_report() -> Report {
        Report {
            title: "Add a login page".to_owned(),
            base: "main".to_owned(),
            branch: "ralph/login".to_owned(),
            ended: Ending::Done,
            tasks: vec![
                task(
                    "A.1",
                    "Add the form",
                    TaskState::Done {
                        commit: Some("abc1234".to_owned()),
                    },
                ),
                task(
                    "A.2",
                    "Check the password",
                    TaskState::Done { commit: None },
                ),
            ],
            checks: vec![
                check(Some("A.1"), "cargo test", true, 12_345),
                check(None, "cargo clippy", true, 800),
            ],
            commits: vec![
                ("abc1234".to_owned(), "Add the login form".to_owned()),
                ("def5678".to_owned(), "Check the password".to_owned()),
            ],
            source: None,
            run_id: None,
            code: None,
            tails: Vec::new(),
            totals: Totals {
                iterations: 3,
                input_tokens: Some(12_000),
                output_tokens: Some(3_400),
                cost_usd: Some(0.4166),
            },
        }
    }

    fn failed_report() -> Report {
        let mut report = done_report();
        report.ended = Ending::Failed {
            reason: "A.3 is blocked\nand nothing else is workable".to_owned(),
            next_step: "Answer A.3's question, then run `ralph run` again".to_owned(),
        };
        report.tasks.push(task(
            "A.3",
            "Send the reset mail",
            TaskState::Blocked {
                reason: "which mail server?".to_owned(),
            },
        ));
        report
            .tasks
            .push(task("A.4", "Log failed logins", TaskState::Open));
        report
            .checks
            .push(check(Some("A.3"), "cargo test mail", false, 2_050));
        report
    }

    /// A report whose Verification and Commits sections are long.
    fn long_report() -> Report {
        let mut report = failed_report();
        for n in 0..200 {
            report
                .checks
                .push(check(Some("A.1"), &format!("check number {n}"), true, n));
            report
                .commits
                .push((format!("{n:07x}"), format!("Commit number {n}")));
        }
        report
    }

    fn section<'a>(body: &'a str, heading: &str) -> &'a str {
        let start = body.find(heading).expect("the section is there");
        let rest = &body[start..];
        let end = rest[2..].find("\n## ").map_or(rest.len(), |at| at + 3);
        &rest[..end]
    }

    #[test]
    fn a_done_report_reads_in_full() {
        assert_eq!(
            body(&done_report()),
            "\
## Tasks

- [x] A.1 Add the form (abc1234)
- [x] A.2 Check the password

## Verification

- ✅ `cargo test` (A.1, 12.3 s)
- ✅ `cargo clippy` (run, 0.8 s)

## Commits

- abc1234 Add the login form
- def5678 Check the password

## Totals

- Iterations: 3
- Tokens in: 12000
- Tokens out: 3400
- Cost: 0.42 USD

_Written by ralph from the run's records._
"
        );
    }

    #[test]
    fn a_failed_report_leads_with_what_is_not_finished() {
        let body = body(&failed_report());
        assert!(body.starts_with(
            "\
## Not finished

Reason: A.3 is blocked and nothing else is workable

- Tasks: 2 done, 1 blocked, 1 not finished
- Checks: 2 passed, 1 failed
- Failed: `cargo test mail` (A.3)

Next step: Answer A.3's question, then run `ralph run` again

## Tasks
"
        ));
        assert!(body.contains("- [ ] A.3 Send the reset mail — blocked: which mail server?\n"));
        assert!(body.contains("- [ ] A.4 Log failed logins — not finished\n"));
        assert!(body.contains("- ❌ `cargo test mail` (A.3, 2.1 s)\n"));
    }

    #[test]
    fn text_from_the_run_cannot_break_the_markdown() {
        let mut report = done_report();
        report.tasks[0].title = "Fix\n## Fake heading\r\n<!-- hide".to_owned();
        report.checks[0].command = "echo `date`".to_owned();
        let body = body(&report);
        assert!(body.contains("- [x] A.1 Fix ## Fake heading &lt;!-- hide (abc1234)\n"));
        assert!(
            body.contains("- ✅ `` echo `date` `` (A.1, 12.3 s)\n"),
            "{body}"
        );
        assert!(!body.contains("\n## Fake"));
    }

    #[test]
    fn a_draft_quotes_the_end_of_what_failed_with_its_reason_code() {
        let mut report = failed_report();
        report.code = Some("blocked".to_owned());
        let mut failed = check(Some("A.3"), "cargo test", false, 900);
        let lines: Vec<String> = (1..=30).map(|n| format!("line {n}")).collect();
        failed.tail = Some(lines.join("\n"));
        report.checks.push(failed);
        report.tails.push((
            "A.3's agent (.ralph/logs/7-A.3.log)".to_owned(),
            "which mail server?\n```\nexit 1".to_owned(),
        ));
        let body = body(&report);
        assert!(
            body.contains("Reason: A.3 is blocked and nothing else is workable (`blocked`)\n"),
            "{body}"
        );
        // The last 12 lines, indented so nothing in them closes the block.
        assert!(
            body.contains("- Failed: `cargo test` (A.3)\n\n      line 19\n"),
            "{body}"
        );
        assert!(body.contains("      line 30\n\n"), "{body}");
        assert!(!body.contains("line 18\n"), "{body}");
        assert!(
            body.contains(
                "- Last output of A.3's agent (.ralph/logs/7-A.3.log):\n\n      which mail server?\n      ```\n      exit 1\n"
            ),
            "{body}"
        );
    }

    #[test]
    fn secrets_are_redacted() {
        let token = format!("ghp_{}", "a1B2c3D4e5".repeat(4));
        let mut report = failed_report();
        report.tasks[0].title = format!("Use {token} to log in");
        report.checks[0].command = format!("curl -H 'Authorization: token {token}'");
        report.commits[0].1 = format!("Add {token}");
        report.ended = Ending::Failed {
            reason: format!("the remote refused {token}"),
            next_step: "Rotate the token".to_owned(),
        };
        let body = body(&report);
        assert!(!body.contains(&token), "{body}");
        assert!(!body.contains("ghp_"), "{body}");
        assert!(body.contains("- [x] A.1 Use [redacted] to log in (abc1234)\n"));
        assert!(body.contains("Reason: the remote refused [redacted]\n"));
    }

    #[test]
    fn a_long_body_cuts_commits_first_and_keeps_the_summary_and_checklist() {
        let report = long_report();
        let full = body(&report);
        let limit = chars(&full) - 500;
        let cut = body_within(&report, limit);
        assert!(chars(&cut) <= limit, "{} > {limit}", chars(&cut));
        assert_eq!(cut, body_within(&report, limit));
        assert_eq!(
            section(&cut, "## Not finished"),
            section(&full, "## Not finished")
        );
        assert_eq!(section(&cut, "## Tasks"), section(&full, "## Tasks"));
        assert_eq!(
            section(&cut, "## Verification"),
            section(&full, "## Verification")
        );
        assert_eq!(section(&cut, "## Totals"), section(&full, "## Totals"));
        let commits = section(&cut, "## Commits");
        assert!(commits.contains("- abc1234 Add the login form\n"));
        assert!(!commits.contains("Commit number 199"));
        assert!(
            commits.ends_with("more lines cut to fit GitHub's limit._\n\n"),
            "{commits}"
        );
    }

    #[test]
    fn verification_is_cut_once_the_commits_are_gone() {
        let report = long_report();
        let limit = 3_000;
        let cut = body_within(&report, limit);
        assert!(chars(&cut) <= limit, "{} > {limit}", chars(&cut));
        assert_eq!(cut, body_within(&report, limit));
        let full = body(&report);
        assert_eq!(
            section(&cut, "## Not finished"),
            section(&full, "## Not finished")
        );
        assert_eq!(section(&cut, "## Tasks"), section(&full, "## Tasks"));
        assert_eq!(
            section(&cut, "## Commits"),
            "## Commits\n\n_… 202 more lines cut to fit GitHub's limit._\n\n"
        );
        let checks = section(&cut, "## Verification");
        assert!(checks.starts_with("## Verification\n\n- ✅ `cargo test` (A.1, 12.3 s)\n"));
        assert!(checks.ends_with("more lines cut to fit GitHub's limit._\n\n"));
        assert_eq!(section(&cut, "## Totals"), section(&full, "## Totals"));
    }

    #[test]
    fn the_measure_matches_the_written_body_at_every_cut() {
        let report = long_report();
        for limit in (0..chars(&body(&report)) + 100).step_by(97) {
            let budget = Budget::chars(limit);
            let mut sections = sections(&report);
            fit(&mut sections, &budget);
            let text = render(&sections, &budget);
            assert_eq!(rendered_len(&sections, &budget), chars(&text), "{limit}");
            let body = body_within(&report, limit);
            assert!(chars(&body) <= limit, "{limit}");
            if limit >= 600 {
                assert_eq!(body, text, "{limit}");
                assert!(body.ends_with(&format!("{FOOTER}\n")), "{limit}");
            }
        }
    }

    #[test]
    fn a_checklist_over_the_limit_is_cut_too() {
        let mut report = failed_report();
        report.tasks = (0..5_000)
            .map(|n| task(&format!("A.{n}"), "A task with a title", TaskState::Open))
            .collect();
        let full = body_within(&report, usize::MAX);
        assert!(chars(&full) > LIMIT);
        let cut = body(&report);
        assert!(chars(&cut) <= LIMIT, "{}", chars(&cut));
        assert!(cut.starts_with("## Not finished\n\nReason: A.3 is blocked"));
        assert!(cut.contains("- [ ] A.0 A task with a title — not finished\n"));
        assert!(section(&cut, "## Tasks").ends_with("more lines cut to fit GitHub's limit._\n\n"));
        assert!(cut.ends_with("_Written by ralph from the run's records._\n"));
        for limit in [0, 1, 40, 200, 1_000] {
            assert!(chars(&body_within(&report, limit)) <= limit, "{limit}");
        }
    }

    /// The number in a cut's marker at the end of `section`.
    fn cut_lines(section: &str) -> usize {
        let (_, rest) = section.rsplit_once("_… ").expect("a marker");
        rest.split(' ').next().unwrap().parse().unwrap()
    }

    #[test]
    fn a_body_cut_shorter_fits_in_60000_bytes_and_says_where_the_full_one_is() {
        // Under GitHub's limit in characters, over it in bytes.
        let mut report = failed_report();
        for n in 0..1_200 {
            report
                .checks
                .push(check(Some("A.1"), &format!("prüfe Nummer {n}"), true, n));
        }
        for n in 0..600 {
            report
                .commits
                .push((format!("{n:07x}"), format!("Übersetze Überschrift {n} ✓")));
        }
        let full = body(&report);
        assert!(chars(&full) <= LIMIT, "{}", chars(&full));
        assert!(full.len() > LIMIT, "{}", full.len());
        let file = ".ralph/pull-request.md";
        let cut = shorter(&report, file);
        assert!(cut.len() <= SHORTER_LIMIT, "{}", cut.len());
        assert_eq!(cut, shorter(&report, file), "the same cut every time");
        // The head sections whole, the commits cut, and the cut says so.
        for heading in [
            "## Not finished",
            "## Tasks",
            "## Verification",
            "## Totals",
        ] {
            assert_eq!(section(&cut, heading), section(&full, heading), "{heading}");
        }
        let commits = section(&cut, "## Commits");
        assert!(
            commits.ends_with(
                " more lines cut to fit GitHub's limit; the full body is in `.ralph/pull-request.md`._\n\n"
            ),
            "{commits}"
        );
        let kept = commits.lines().filter(|l| l.starts_with("- ")).count();
        assert!(kept > 0);
        assert_eq!(kept + cut_lines(commits), report.commits.len());
        assert!(cut.ends_with(&format!("{FOOTER}\n")));
        // A body well within the limits is not cut at all.
        assert_eq!(shorter(&done_report(), file), body(&done_report()));
    }

    #[test]
    fn a_body_cut_shorter_never_passes_60000_bytes() {
        let mut report = failed_report();
        report.tasks = (0..3_000)
            .map(|n| {
                task(
                    &format!("A.{n}"),
                    "Überschrift ✓ übersetzen",
                    TaskState::Open,
                )
            })
            .collect();
        for n in 0..2_000 {
            report.commits.push((format!("{n:07x}"), "✓".repeat(30)));
        }
        let cut = shorter(&report, ".ralph/pull-request.md");
        assert!(cut.len() <= SHORTER_LIMIT, "{}", cut.len());
        assert!(cut.starts_with("## Not finished\n\nReason: A.3 is blocked"));
        let tasks = section(&cut, "## Tasks");
        assert!(tasks.contains("- [ ] A.0 Überschrift ✓ übersetzen — not finished\n"));
        assert!(tasks.ends_with("the full body is in `.ralph/pull-request.md`._\n\n"));
    }

    #[test]
    fn the_limit_counts_characters_not_bytes() {
        let mut report = done_report();
        report.commits = (0..100)
            .map(|n| (format!("{n:07x}"), "Übersetze die Überschrift ✓".repeat(3)))
            .collect();
        let full = body(&report);
        assert!(full.len() > chars(&full));
        // Fits by characters though not by bytes: nothing is cut.
        assert_eq!(body_within(&report, chars(&full)), full);
        let cut = body_within(&report, chars(&full) - 1);
        assert_ne!(cut, full);
        assert!(chars(&cut) < chars(&full));
        assert!(cut.contains("- [x] A.1 Add the form (abc1234)\n"));
    }
}
