//! `ralph report`: one self-contained HTML page of a run, checked as text
//! and rendered by a real headless Chromium.

use crate::support::{TestProject, Tool, by_iteration, finish, skip_without};

fn pending(id: &str) -> String {
    format!(r#"{{"id":"{id}","title":"task {id}","status":"pending","leaf":true}}"#)
}

/// A scripted run: A fails once then is merged, B is blocked by its
/// agent; `report: on_exit` writes the page.
fn reported_run() -> (TestProject, crate::support::Run) {
    let p = TestProject::new()
        .task(&pending("A"))
        .task(&pending("B"))
        .git_init()
        .agent(&by_iteration(
            "RALPH_ITERATION",
            r#"1) echo 'the <parser> failed' >&2; exit 1 ;;
2) work A.txt done; ralph task complete A > /dev/null ;;
*) ralph task block B --reason 'needs the payment key' > /dev/null ;;"#,
        ));
    let mut command = p.run_command(&[]);
    command.env("RALPH_REPORT", "on_exit");
    let run = finish(command, 60);
    (p, run)
}

#[test]
fn a_run_with_report_on_exit_writes_one_self_contained_page() {
    let (p, run) = reported_run();
    assert_eq!(run.code, 10, "{run:#?}");
    let path = p.path().join(".ralph/report.html");
    assert!(
        run.stderr
            .contains(&format!("  report: {}\n", path.display())),
        "{run:#?}"
    );
    let page = p.read(".ralph/report.html");
    let run_id = p.json(".ralph/result.json")["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        page.contains(&format!("<h1>ralph run {run_id}</h1>")),
        "{page}"
    );
    assert!(
        page.contains("<tr class=\"task merged\" data-task=\"A\"><td><b>A</b> task A</td>"),
        "{page}"
    );
    assert!(
        page.contains("<tr class=\"task blocked\" data-task=\"B\"><td><b>B</b> task B</td>"),
        "{page}"
    );
    assert!(page.contains("<td>exit ×1</td>"), "{page}");
    assert!(page.contains("<dt>failures</dt><dd>exit ×1</dd>"), "{page}");
    // The failure's evidence, folded and escaped.
    assert!(
        page.contains("<details class=\"evidence\"><summary>A — "),
        "{page}"
    );
    assert!(page.contains("the &lt;parser&gt; failed"), "{page}");
    assert!(!page.contains("the <parser>"), "{page}");
    // A bar per iteration on the timeline, a mark per merge.
    assert_eq!(
        page.matches("<rect class=\"iteration ").count(),
        3,
        "{page}"
    );
    assert_eq!(page.matches("<path class=\"merge\"").count(), 1, "{page}");
    // A time axis from the run's start, each iteration's task on its bar
    // where the bar can hold it.
    assert!(page.contains("<line class=\"axis\""), "{page}");
    assert!(page.contains(">0s</text>"), "{page}");
    // Nothing to fetch: no script, no link, no address.
    for outside in ["<script", "<link", "http://", "https://", "src=", "url("] {
        assert!(!page.contains(outside), "{outside}: {page}");
    }
    assert!(
        p.ralph(&["status"])
            .success()
            .stdout
            .contains("report: .ralph/report.html"),
    );
}

#[test]
fn ralph_report_writes_a_run_by_id_and_refuses_one_it_does_not_know() {
    let (p, _) = reported_run();
    let run_id = p.json(".ralph/result.json")["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = p
        .ralph(&["report", "--run", &run_id, "--out", "page.html"])
        .success();
    assert_eq!(
        out.stdout,
        format!(
            "wrote {} (run {run_id})\n",
            p.path().join("page.html").display()
        )
    );
    assert_eq!(p.read("page.html"), p.read(".ralph/report.html"));
    p.ralph(&["report", "--run", "nope"]).fails(
        30,
        "error: no run nope in .ralph/events.ndjson\nhint: `ralph run` first; `ralph status` names the last run\n",
    );
    let fresh = TestProject::new().git_init();
    fresh.ralph(&["report"]).fails(
        30,
        "error: no run yet: .ralph/events.ndjson has no events\nhint: `ralph run` first; `ralph status` names the last run\n",
    );
}

#[test]
fn headless_chromium_renders_the_page_with_a_row_per_task_and_the_timeline() {
    if skip_without(Tool::Chromium) {
        return;
    }
    let (p, _) = reported_run();
    let page = p.path().join(".ralph/report.html");
    let output = crate::support::chromium(&page, &["--dump-dom"]);
    let dom = String::from_utf8_lossy(&output.stdout);
    assert!(dom.contains("data-task=\"A\""), "{dom}");
    assert!(dom.contains("data-task=\"B\""), "{dom}");
    assert!(dom.contains("<svg id=\"timeline\""), "{dom}");
    assert_eq!(dom.matches("class=\"iteration ").count(), 3, "{dom}");
    // The page asks for nothing: no address in it, and its policy lets the
    // browser load nothing but its own inline style.
    let text = p.read(".ralph/report.html");
    for address in ["http:", "https:", "src=", "href=", "url(", "@import"] {
        assert!(!text.contains(address), "{address} in the page");
    }
    assert!(text.contains("content=\"default-src 'none'; style-src 'unsafe-inline'\""));
    // And Chromium's network log shows none: a page that does ask for
    // something shows it there.
    assert_eq!(
        crate::support::chromium_requests(&page),
        Vec::<String>::new()
    );
    let asking = p.aux().join("asking.html");
    std::fs::write(&asking, "<img src=\"http://example.test/x.png\">").unwrap();
    assert_eq!(
        crate::support::chromium_requests(&asking),
        ["http://example.test/x.png"]
    );
    let shot = p.aux().join("report.png");
    crate::support::chromium_screenshot(&page, &shot, (1000, 900));
    assert!(
        std::fs::metadata(&shot).unwrap().len() > 10_000,
        "an empty picture"
    );
}

#[test]
fn a_parallel_run_has_a_lane_per_worker() {
    let p = TestProject::new()
        .task(&pending("A"))
        .task(&pending("B"))
        .git_init()
        .agent(
            r#"work "$RALPH_TASK_ID.txt" done; ralph task complete "$RALPH_TASK_ID" > /dev/null"#,
        );
    let run = p.run(&["--workers", "2"]);
    assert_eq!(run.code, 0, "{run:#?}");
    p.ralph(&["report"]).success();
    let page = p.read(".ralph/report.html");
    assert!(page.contains(">worker 1</text>"), "{page}");
    assert!(page.contains(">worker 2</text>"), "{page}");
    assert_eq!(
        page.matches("<tr class=\"task merged\"").count(),
        2,
        "{page}"
    );
    assert_eq!(page.matches("<path class=\"merge\"").count(), 2, "{page}");
}

/// What the page says where a newcomer misread it: a task the run never
/// reached is a row; an agent that reports no tokens spent an unknown
/// number, not 0; an earlier run's page says how it ended.
#[test]
fn the_page_lists_unreached_tasks_says_unknown_tokens_and_an_earlier_runs_end() {
    let p = TestProject::new()
        .task(&pending("A"))
        .task(&pending("B"))
        .git_init()
        .agent(&by_iteration(
            "RALPH_TASK_ID",
            r#"A) work A.txt done; ralph task complete A > /dev/null; touch .stop ;;
*) work B.txt done; ralph task complete B > /dev/null ;;"#,
        ));
    let first = p.run(&[]);
    assert_eq!(first.code, 0, "{first:#?}");
    let first_id = p.json(".ralph/result.json")["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    p.ralph(&["report"]).success();
    let page = p.read(".ralph/report.html");
    assert!(
        page.contains("<tr class=\"task pending\" data-task=\"B\"><td><b>B</b> task B</td><td class=\"outcome\">pending</td>"),
        "{page}"
    );
    assert!(page.contains("<td>unknown</td>"), "{page}");
    assert!(
        page.contains("<dt>tokens</dt><dd>unknown (the agent reports none)</dd>"),
        "{page}"
    );
    // A second run; the first one's page says it was stopped.
    let second = p.run(&[]);
    assert_eq!(second.code, 0, "{second:#?}");
    p.ralph(&["report", "--run", &first_id, "--out", "first.html"])
        .success();
    let page = p.read("first.html");
    assert!(
        page.contains("<dt>status</dt><dd><b>stopped</b> — .stop asked the run to stop</dd>"),
        "{page}"
    );
    // An earlier run's page lists the tasks it reached only.
    assert!(!page.contains("data-task=\"B\""), "{page}");
}
