//! `ralph report`: one self-contained HTML page of what a run did, made
//! from the files ralph already writes (`.ralph/result.json`,
//! `.ralph/events.ndjson`, the critique files): the summary, a timeline
//! of the iterations per worker, a table per task, each failure's
//! evidence folded, the pull request. No script, no network, no external
//! asset; every text escaped and its secrets masked.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::events::Event;
use crate::paths::Paths;
use crate::result::{RunResult, RunStatus};

/// Most bytes of a task's failure evidence the page quotes.
const EVIDENCE_BYTES: usize = 8 * 1024;

/// What the page is made from.
pub(crate) struct Source {
    /// The run's result, when it is the run `result.json` holds.
    pub result: Option<RunResult>,
    /// The run's events, in order.
    pub events: Vec<Event>,
    /// The run's id.
    pub run_id: String,
    /// The queue's open tasks (id, title, status) when the page is of the
    /// last run: those it never reached are rows too.
    pub open: Vec<(String, String, String)>,
}

/// Writes the page of run `run` (default: the last) to `out`; `None`
/// when there is no such run.
pub(crate) fn write(
    paths: &Paths,
    run: Option<&str>,
    out: &std::path::Path,
) -> Result<Option<String>, crate::Error> {
    let Some(mut source) =
        source(paths, run).map_err(crate::files::at::<crate::Error>(paths.events()))?
    else {
        return Ok(None);
    };
    let queue = crate::task::Store::open(paths).load().ok();
    if (run.is_none() || source.result.is_some())
        && let Some(queue) = &queue
    {
        source.open = (queue.live_tasks())
            .filter(|(_, task)| task.leaf)
            .map(|(_, task)| {
                let status = task.status.as_str().to_owned();
                (task.id.to_string(), task.title.clone(), status)
            })
            .collect();
    }
    let title = |id: &str| -> Option<String> {
        let queue = queue.as_ref()?;
        match queue.get(id) {
            Some(task) => Some(task.title.clone()),
            None => queue
                .done
                .record(id)?
                .get("title")?
                .as_str()
                .map(str::to_owned),
        }
    };
    let root = paths.project();
    let critique = |id: &str| crate::files::own::read_text(root, &paths.critique(id)).ok()?;
    let page = html(&source, title, critique);
    // The page's default place is ralph's own (`.ralph/report.html`); one
    // a person names is theirs.
    let written = if out == paths.report() {
        crate::files::own::replace(root, out, page.as_bytes())
    } else {
        if let Some(dir) = out.parent() {
            std::fs::create_dir_all(dir).map_err(crate::files::at::<crate::Error>(dir))?;
        }
        crate::files::write_atomic(out, page.as_bytes())
    };
    written.map_err(crate::files::at::<crate::Error>(out))?;
    Ok(Some(source.run_id))
}

/// Reads what the page of run `run` (default: the last one) is made of;
/// `None` when the project has no run of that id.
pub(crate) fn source(paths: &Paths, run: Option<&str>) -> std::io::Result<Option<Source>> {
    // The one view of a run `ralph status` and `ralph top` read too.
    let mut view = crate::view::Run::new(paths.to_owned());
    view.read();
    let result = view.result.take();
    let events = view.events()?.events;
    let run_id = match (run, &result) {
        (Some(run), _) => run.to_owned(),
        (None, Some(result)) => result.run_id.clone(),
        (None, None) => match events.iter().rev().find(|e| !e.run_id.is_empty()) {
            Some(event) => event.run_id.clone(),
            None => return Ok(None),
        },
    };
    let events: Vec<Event> = events.into_iter().filter(|e| e.run_id == run_id).collect();
    if events.is_empty() {
        return Ok(None);
    }
    let result = result.filter(|result| result.run_id == run_id);
    Ok(Some(Source {
        result,
        events,
        run_id,
        open: Vec::new(),
    }))
}

/// What the page says of one task.
#[derive(Default)]
struct TaskRow {
    title: String,
    iterations: u64,
    failures: BTreeMap<String, u64>,
    checks: Vec<(String, bool, u64)>,
    input_tokens: u64,
    output_tokens: u64,
    /// Whether an iteration's agent reported its tokens (one that reports
    /// nothing is unknown, not 0).
    tokens_known: bool,
    cost_usd: f64,
    millis: u64,
    outcome: String,
    commit: Option<String>,
}

/// The page for `source`: `title` gives a task's title, `critique` its
/// failure evidence.
pub(crate) fn html(
    source: &Source,
    title: impl Fn(&str) -> Option<String>,
    critique: impl Fn(&str) -> Option<String>,
) -> String {
    let mut rows: BTreeMap<String, TaskRow> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    fn row<'r>(
        rows: &'r mut BTreeMap<String, TaskRow>,
        order: &mut Vec<String>,
        id: &str,
    ) -> &'r mut TaskRow {
        if !order.iter().any(|o| o == id) {
            order.push(id.to_owned());
        }
        rows.entry(id.to_owned()).or_default()
    }
    for event in &source.events {
        let Some(id) = event.task_id.as_deref() else {
            continue;
        };
        let number = |key: &str| event.number(key).unwrap_or(0);
        match event.phase.as_str() {
            "iteration" => {
                let task = row(&mut rows, &mut order, id);
                task.iterations += 1;
                task.millis += number("duration_ms");
                task.tokens_known |= event.number("input_tokens").is_some();
                task.input_tokens += number("input_tokens");
                task.output_tokens += number("output_tokens");
                task.cost_usd += event.float("cost_usd").unwrap_or(0.0);
                if event.status != "ok" {
                    *task.failures.entry(event.status.clone()).or_default() += 1;
                }
            }
            "verify" => {
                let command = event.text("command").unwrap_or(&event.detail).to_owned();
                row(&mut rows, &mut order, id).checks.push((
                    command,
                    event.status == "ok",
                    number("duration_ms"),
                ));
            }
            "merge" if event.status == "ok" => {
                row(&mut rows, &mut order, id).outcome = "merged".to_owned()
            }
            "block" => row(&mut rows, &mut order, id).outcome = "blocked".to_owned(),
            _ => {}
        }
    }
    if let Some(result) = &source.result {
        for outcome in &result.outcomes {
            let task = row(&mut rows, &mut order, &outcome.task);
            task.outcome = outcome.outcome.as_str().to_owned();
            task.commit = outcome.commit.clone();
        }
    }
    for (id, text, status) in &source.open {
        if !rows.contains_key(id) {
            let task = row(&mut rows, &mut order, id);
            task.title.clone_from(text);
            task.outcome.clone_from(status);
        }
    }
    for id in &order {
        if let (Some(task), Some(text)) = (rows.get_mut(id), title(id)) {
            task.title = text;
        }
    }
    let mut page = String::new();
    page.push_str(HEAD);
    let _ = writeln!(page, "<h1>ralph run {}</h1>", esc(&source.run_id));
    page.push_str(&summary(source, &rows));
    page.push_str(&timeline(source));
    page.push_str("<h2>Tasks</h2>\n<table id=\"tasks\">\n<tr><th>task</th><th>outcome</th><th>iterations</th><th>failures</th><th>checks</th><th>tokens in / out</th><th>cost</th><th>time</th><th>commit</th></tr>\n");
    for id in &order {
        let task = &rows[id];
        let outcome = if task.outcome.is_empty() {
            "open"
        } else {
            &task.outcome
        };
        let checks: Vec<String> = (task.checks.iter())
            .map(|(command, passed, ms)| {
                format!(
                    "<span class=\"{}\">{} {}</span> ({:.1}s)",
                    if *passed { "ok" } else { "bad" },
                    if *passed { "✓" } else { "✗" },
                    esc(command),
                    *ms as f64 / 1000.0
                )
            })
            .collect();
        let _ = writeln!(
            page,
            "<tr class=\"task {outcome}\" data-task=\"{id}\"><td><b>{id}</b> {title}</td><td class=\"outcome\">{outcome}</td><td>{iterations}</td><td>{failures}</td><td>{checks}</td><td>{tokens}</td><td>{cost}</td><td>{time:.1}s</td><td><code>{commit}</code></td></tr>",
            id = esc(id),
            title = esc(&task.title),
            outcome = esc(outcome),
            iterations = task.iterations,
            failures = esc(&if task.failures.is_empty() {
                String::new()
            } else {
                crate::text::tally(&task.failures)
            }),
            checks = checks.join("<br>"),
            tokens = match task.tokens_known {
                true => format!("{} / {}", task.input_tokens, task.output_tokens),
                false => "unknown".to_owned(),
            },
            cost = if task.cost_usd > 0.0 {
                format!("{:.2} USD", task.cost_usd)
            } else {
                "-".to_owned()
            },
            time = task.millis as f64 / 1000.0,
            commit = esc(task
                .commit
                .as_deref()
                .map_or("", |c| c.get(..10).unwrap_or(c))),
        );
    }
    page.push_str("</table>\n");
    let evidence: Vec<(&String, String)> = (order.iter())
        .filter(|id| !rows[*id].failures.is_empty())
        .filter_map(|id| critique(id).map(|text| (id, text)))
        .collect();
    if !evidence.is_empty() {
        page.push_str("<h2>Failures</h2>\n");
        for (id, text) in evidence {
            let text = match text.len() > EVIDENCE_BYTES {
                true => format!("…\n{}", crate::prompt::bounded_tail(&text, EVIDENCE_BYTES)),
                false => text,
            };
            let _ = writeln!(
                page,
                "<details class=\"evidence\"><summary>{} — the evidence of its failed attempts</summary>\n{}</details>",
                esc(id),
                evidence_html(&text)
            );
        }
    }
    page.push_str("<p class=\"foot\">Written by <code>ralph report</code> from <code>.ralph/events.ndjson</code> and <code>.ralph/result.json</code>.</p>\n</body>\n</html>\n");
    page
}

/// The run's summary: how it ended, its counts, its pull request.
fn summary(source: &Source, rows: &BTreeMap<String, TaskRow>) -> String {
    let mut out = String::from("<section id=\"summary\">\n<dl>\n");
    let mut item = |term: &str, value: String| {
        let _ = writeln!(out, "<dt>{}</dt><dd>{value}</dd>", esc(term));
    };
    let [first, last] = [source.events.first(), source.events.last()]
        .map(|event| event.map_or("", |event| event.timestamp.as_str()));
    item("time", format!("{} – {}", esc(first), esc(last)));
    match &source.result {
        Some(result) => {
            item(
                "status",
                format!(
                    "<b>{}</b> — {}",
                    esc(result.status.as_str()),
                    esc(&result.reason)
                ),
            );
            item("iterations", result.iterations.to_string());
            item("merged", result.merged.to_string());
            if let Some(blocked) = result.blocked {
                item("blocked", blocked.to_string());
            }
            if let Some(left) = result.remaining {
                item("left", left.to_string());
            }
            item("failures", esc(&crate::text::tally(&result.failures)));
            if let Some(pr) = &result.pull_request {
                let text = match (&pr.url, &pr.command) {
                    (Some(url), _) => format!(
                        "{} {}{}",
                        esc(pr.action.as_str()),
                        esc(url),
                        if pr.draft { " (draft)" } else { "" }
                    ),
                    (None, Some(command)) => format!("not opened: <code>{}</code>", esc(command)),
                    (None, None) => esc(pr.action.as_str()),
                };
                item("pull request", text);
            }
        }
        // An earlier run's end is its last `run` event's.
        None => match (source.events.iter().rev())
            .find(|e| e.phase == "run" && e.status.parse::<RunStatus>().is_ok())
        {
            Some(end) => item(
                "status",
                format!("<b>{}</b> — {}", esc(&end.status), esc(&end.detail)),
            ),
            None => item(
                "status",
                "under way, or ended without its result".to_owned(),
            ),
        },
    }
    let cost: f64 = rows.values().map(|r| r.cost_usd).sum();
    let tokens: u64 = rows
        .values()
        .map(|r| r.input_tokens + r.output_tokens)
        .sum();
    // An agent that reports no tokens spent an unknown number, not 0.
    match rows.values().any(|r| r.tokens_known) {
        true => item("tokens", tokens.to_string()),
        false => item("tokens", "unknown (the agent reports none)".to_owned()),
    }
    if cost > 0.0 {
        item("cost", format!("{cost:.2} USD"));
    }
    out.push_str("</dl>\n</section>\n");
    out
}

/// The iterations on a time axis, a lane per worker, coloured by
/// outcome, with the merges marked: inline SVG.
fn timeline(source: &Source) -> String {
    let parse = |stamp: &str| chrono::DateTime::parse_from_rfc3339(stamp).ok();
    let Some(start) = source.events.first().and_then(|e| parse(&e.timestamp)) else {
        return String::new();
    };
    let lane = |event: &Event| event.number("worker").unwrap_or(0);
    // Where each event goes, in ms from the start: the files stamp whole
    // seconds, so within a lane each mark starts no earlier than the one
    // before it ended, and an iteration ends no earlier than its start
    // plus what it took.
    let mut cursors: BTreeMap<u64, f64> = BTreeMap::new();
    let placed: Vec<Option<(f64, f64)>> = (source.events.iter())
        .map(|event| {
            let at = (parse(&event.timestamp)? - start).num_milliseconds() as f64;
            let cursor = cursors.entry(lane(event)).or_insert(0.0);
            let (from, to) = match event.phase.as_str() {
                "iteration" => {
                    let took = event.number("duration_ms").unwrap_or(0) as f64;
                    let to = at.max(*cursor + took);
                    (to - took, to)
                }
                "wait" => {
                    let took = (event.number("wait_ms"))
                        .unwrap_or(1000 * event.number("wait_seconds").unwrap_or(0))
                        as f64;
                    let from = at.max(*cursor);
                    (from, from + took)
                }
                _ => (at.max(*cursor), at.max(*cursor)),
            };
            *cursor = to;
            Some((from, to))
        })
        .collect();
    let end = (placed.iter().flatten()).fold(0.0_f64, |end, (_, to)| end.max(*to));
    let span = end.max(1.0);
    let lanes: Vec<u64> = {
        let mut lanes: Vec<u64> = source.events.iter().map(lane).collect();
        lanes.sort_unstable();
        lanes.dedup();
        lanes
    };
    // The lanes, then a time axis below them.
    let axis_y = 8.0 + 28.0 * lanes.len() as f64;
    let (width, height) = (960.0, axis_y + 24.0);
    let x = |ms: f64| 90.0 + (ms / span) * (width - 100.0);
    let mut svg = format!(
        "<h2>Timeline</h2>\n<svg id=\"timeline\" viewBox=\"0 0 {width} {height}\" width=\"{width}\" height=\"{height}\" role=\"img\">\n"
    );
    for (index, number) in lanes.iter().enumerate() {
        let y = 8.0 + 28.0 * index as f64;
        let name = if *number == 0 {
            "run".to_owned()
        } else {
            format!("worker {number}")
        };
        let _ = writeln!(
            svg,
            "<text x=\"4\" y=\"{}\" class=\"lane\">{}</text>",
            y + 14.0,
            esc(&name)
        );
    }
    let _ = writeln!(
        svg,
        "<line class=\"axis\" x1=\"{:.1}\" y1=\"{axis_y}\" x2=\"{:.1}\" y2=\"{axis_y}\"/>",
        x(0.0),
        x(span)
    );
    let step = tick_step(span);
    for tick in (0..).map(|n| n as f64 * step).take_while(|ms| *ms <= span) {
        let _ = writeln!(
            svg,
            "<text class=\"tick\" x=\"{:.1}\" y=\"{}\">{}</text>",
            x(tick),
            axis_y + 16.0,
            crate::text::minutes_seconds(tick / 1000.0)
        );
    }
    for (event, placed) in source.events.iter().zip(placed) {
        let Some((from_ms, to_ms)) = placed else {
            continue;
        };
        let y = 8.0 + 28.0 * lanes.iter().position(|l| *l == lane(event)).unwrap_or(0) as f64;
        let (from, to) = (x(from_ms), x(to_ms));
        match event.phase.as_str() {
            "iteration" => {
                let class = match event.status.as_str() {
                    "ok" => "ok",
                    "usage_limit" => "wait",
                    "interrupted" => "stop",
                    _ => "bad",
                };
                let _ = writeln!(
                    svg,
                    "<rect class=\"iteration {class}\" x=\"{from:.1}\" y=\"{y}\" width=\"{:.1}\" height=\"20\"><title>#{} {} {} — {}</title></rect>",
                    (to - from).max(2.0),
                    event.iteration,
                    esc(event.task_id.as_deref().unwrap_or("")),
                    esc(event.role.as_deref().unwrap_or("no role")),
                    esc(&event.status),
                );
                // The task's id on its bar, where the bar can hold it.
                let task = event.task_id.as_deref().unwrap_or("");
                if to - from >= 8.0 * task.chars().count() as f64 + 6.0 {
                    let _ = writeln!(
                        svg,
                        "<text class=\"task\" x=\"{:.1}\" y=\"{}\">{}</text>",
                        from + 3.0,
                        y + 14.0,
                        esc(task)
                    );
                }
            }
            "merge" if event.status == "ok" => {
                let cx = from;
                let _ = writeln!(
                    svg,
                    "<path class=\"merge\" d=\"M{cx:.1} {} l5 10 l-5 10 l-5 -10 z\"><title>{} merged</title></path>",
                    y,
                    esc(event.task_id.as_deref().unwrap_or("")),
                );
            }
            "wait" => {
                // From the wait's start to its planned end.
                let class = match event.status.as_str() {
                    "usage_limit" => "wait",
                    _ => "retry",
                };
                let _ = writeln!(
                    svg,
                    "<rect class=\"pause {class}\" x=\"{from:.1}\" y=\"{}\" width=\"{:.1}\" height=\"8\"><title>{} waits: {}</title></rect>",
                    y + 6.0,
                    (to - from).max(2.0),
                    esc(event.task_id.as_deref().unwrap_or("")),
                    esc(&event.detail),
                );
            }
            _ => {}
        }
    }
    svg.push_str("</svg>\n<p class=\"legend\"><span class=\"ok\">■ done</span> <span class=\"bad\">■ failed</span> <span class=\"wait\">■ usage limit</span> <span class=\"retry\">▬ waits before a retry</span> <span class=\"stop\">■ stopped</span> ◆ merge</p>\n");
    svg
}

/// A critique file's Markdown as HTML: its `###` headings, its fenced
/// output as preformatted text, the rest as paragraphs; every text
/// escaped (nothing of it is markup of the page's).
fn evidence_html(markdown: &str) -> String {
    let mut out = String::new();
    let mut paragraph: Vec<&str> = Vec::new();
    let mut fence: Option<(&str, Vec<&str>)> = None;
    let flush = |out: &mut String, paragraph: &mut Vec<&str>| {
        if !paragraph.is_empty() {
            let _ = writeln!(out, "<p>{}</p>", esc(&paragraph.join("\n")));
            paragraph.clear();
        }
    };
    for line in markdown.lines() {
        if let Some((marks, body)) = &mut fence {
            if line.trim_end() == *marks {
                let _ = writeln!(out, "<pre>{}</pre>", esc(&body.join("\n")));
                fence = None;
            } else {
                body.push(line);
            }
            continue;
        }
        let ticks = line.len() - line.trim_start_matches('`').len();
        if ticks >= 3 {
            flush(&mut out, &mut paragraph);
            fence = Some((&line[..ticks], Vec::new()));
        } else if let Some(heading) = line.strip_prefix("### ") {
            flush(&mut out, &mut paragraph);
            let _ = writeln!(out, "<h4>{}</h4>", esc(heading));
        } else if line.trim().is_empty() {
            flush(&mut out, &mut paragraph);
        } else {
            paragraph.push(line);
        }
    }
    // Cut short (a bounded tail): what is open is shown as it is.
    if let Some((_, body)) = fence {
        let _ = writeln!(out, "<pre>{}</pre>", esc(&body.join("\n")));
    }
    flush(&mut out, &mut paragraph);
    out
}

/// The time axis's step for a timeline of `span` ms: a round length
/// giving at most eight ticks.
fn tick_step(span: f64) -> f64 {
    const STEPS: [f64; 12] = [
        1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0,
    ];
    let seconds = span / 1000.0;
    let step = (STEPS.iter().copied())
        .find(|step| seconds / step <= 8.0)
        .unwrap_or_else(|| (seconds / 8.0 / 3600.0).ceil() * 3600.0);
    step * 1000.0
}

/// `text` safe in HTML text and attributes, its secrets masked first (an
/// escaped secret would no longer be recognised).
fn esc(text: &str) -> String {
    let text = crate::redact::redact(text);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

const HEAD: &str = "<!doctype html>
<html lang=\"en\">
<head>
<meta charset=\"utf-8\">
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">
<title>ralph report</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; } td, th { border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; }
tr.merged .outcome { color: #1a7f37; } tr.blocked .outcome { color: #cf222e; }
.ok { color: #1a7f37; fill: #2da44e; } .bad { color: #cf222e; fill: #cf222e; } .wait { color: #9a6700; fill: #d4a72c; } .stop { color: #57606a; fill: #8c959f; }
.retry { color: #8250df; fill: #a475f9; } .merge { fill: #0969da; } .lane { font-size: 12px; fill: #57606a; }
.axis { stroke: #8c959f; } .tick { font-size: 11px; fill: #57606a; } text.task { font-size: 11px; fill: #fff; pointer-events: none; }
dt { font-weight: bold; float: left; clear: left; width: 8em; } dd { margin-left: 9em; }
pre { background: #f6f8fa; padding: 8px; overflow: auto; } .foot { color: #57606a; }
</style>
</head>
<body>
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_everywhere() {
        assert_eq!(
            esc("<b>\"x\" & 'y'</b>"),
            "&lt;b&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/b&gt;"
        );
    }

    /// A bar wide enough holds its task's id; a narrow one only its
    /// tooltip.
    #[test]
    fn a_wide_iteration_bar_is_labelled_with_its_task() {
        let event = |at: &str, task: &str, ms: u64| Event {
            timestamp: at.to_owned(),
            run_id: "r".to_owned(),
            task_id: Some(task.to_owned()),
            iteration: 1,
            phase: "iteration".to_owned(),
            status: "ok".to_owned(),
            extra: crate::events::fields(serde_json::json!({"duration_ms": ms})),
            ..Event::default()
        };
        let source = Source {
            result: None,
            events: vec![
                event("2026-01-01T00:00:00Z", "start", 0),
                event("2026-01-01T00:01:00Z", "A.1", 59_000),
                event("2026-01-01T00:01:01Z", "B.2", 100),
            ],
            run_id: "r".to_owned(),
            open: Vec::new(),
        };
        let svg = timeline(&source);
        assert!(svg.contains(">A.1</text>"), "{svg}");
        assert!(!svg.contains(">B.2</text>"), "{svg}");
        assert!(svg.contains(">1m</text>"), "{svg}");
    }

    #[test]
    fn evidence_reads_as_headings_output_and_paragraphs_all_escaped() {
        let markdown = "### Iteration 3 · T · role debugger · exit\n\nthe <agent> failed\n\n````\n```\nboom & bust\n````\n\n### Iteration 4 · T\n\n```\ncut sh";
        assert_eq!(
            evidence_html(markdown),
            "<h4>Iteration 3 · T · role debugger · exit</h4>\n<p>the &lt;agent&gt; failed</p>\n<pre>```\nboom &amp; bust</pre>\n<h4>Iteration 4 · T</h4>\n<pre>cut sh</pre>\n"
        );
    }

    #[test]
    fn the_time_axis_has_round_steps_and_at_most_eight_ticks() {
        for (span_ms, step_ms) in [
            (500.0, 1000.0),
            (7_000.0, 1000.0),
            (9_000.0, 2000.0),
            (75_000.0, 10_000.0),
            (3_600_000.0, 600_000.0),
            (86_400_000.0, 3_600_000.0 * 3.0),
        ] {
            assert_eq!(tick_step(span_ms), step_ms, "{span_ms}");
            assert!(span_ms / tick_step(span_ms) <= 8.0, "{span_ms}");
        }
        let shown: Vec<String> = [0.0, 45.0, 120.0, 90.4]
            .map(crate::text::minutes_seconds)
            .into();
        assert_eq!(shown, ["0s", "45s", "2m", "1m30s"]);
    }
}
