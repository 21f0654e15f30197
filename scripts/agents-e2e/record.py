#!/usr/bin/env python3
"""Record one e2e case (summary, fixture, sidecar) and write RESULTS.md.

    record.py case WORK --tool T --scenario S --version V --expected C --root ROOT --fixtures 1
    record.py results OUT --output RESULTS.md
"""

import argparse
import datetime
import glob
import json
import os
import re
import shutil
import subprocess
import sys

ARGV_ERRORS = re.compile(
    r"unknown (option|argument|flag)|unrecognized (option|argument)|unexpected argument|"
    r"error: invalid value|Unknown arguments?:|did you mean", re.I)


# What a fixture alone does not say. Keyed by (tool, scenario).
NOTES = {
    ("codex", "no_credentials"): "ralph's preflight (`codex login status`) refused to start (exit 20, not logged in); "
        "the log is `codex exec` run directly by run.sh: without credentials it reconnects until stopped.",
    ("opencode", "no_credentials"): "with no provider configured opencode uses its own free `opencode` provider "
        "(model big-pickle), which needs no key: not an auth failure. Offline it retries silently; the log is empty.",
    ("opencode", "rate_limit"): "opencode retries a 429 silently (every retry-after, without end); nothing is printed.",
    ("qwen", "rate_limit"): "qwen retries a 429 silently, 40 s apart (model.generationConfig.maxRetries=1 only "
        "limits the SDK's own retry); nothing is printed before the time limit.",
    ("gemini", "rate_limit"): "gemini retries a 429 up to 10 times, printing 'Attempt N failed: ... Retrying after Nms'.",
    ("gemini", "server_error"): "gemini retries a 500 with backoff for minutes (up to 10 attempts) before giving up.",
    ("aider", "server_error"): "aider gives up after its backoff reaches 32 s and exits 0.",
    ("aider", "no_credentials"): "aider starts the OpenRouter OAuth login and waits 5 minutes for the browser.",
    ("amp", "auth"): "amp cannot use a model API: AMP_URL points amp's own server API at the mock, which "
        "answers 401 to /api/internal?getUserInfo.",
    ("amp", "no_credentials"): "amp starts its login flow and waits for a code on stdin.",
}


# Where the default expectation is wrong for what the tool did.
EXPECTED = {
    # The log has nothing of credentials: opencode fell back to its free
    # provider and, offline, kept reconnecting.
    ("opencode", "no_credentials"): "timeout",
    # The log is codex exec run by hand past ralph's login check (which gives
    # the auth verdict, exit 20); offline it only says it is reconnecting.
    ("codex", "no_credentials"): "timeout",
}


def load_json(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def load_lines(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        pass
    except OSError:
        pass
    return out


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def tokens_sent(usage_log):
    turns = load_lines(usage_log)
    total = {"input": 0, "cached_input": 0, "cache_write": 0, "output": 0, "reasoning": 0}
    main = dict(total)
    for t in turns:
        n = t["neutral"]
        for acc in ([total, main] if t["turn"] != "side" else [total]):
            acc["input"] += n["fresh"] + n["cache_write"] + n["cache_read"]
            acc["cached_input"] += n["cache_read"]
            acc["cache_write"] += n["cache_write"]
            acc["output"] += n["output"]
            acc["reasoning"] += n["reasoning"]
    if not turns:
        return None
    return {
        "note": "input includes cached_input and cache_write; output includes reasoning",
        "turns": [{"api": t["api"], "turn": t["turn"], "model": t.get("model"), "sent": t["usage"]} for t in turns],
        "total": total,
        "total_tool_turns": main,
    }


def status_of(event, timeout_s=None):
    if not event:
        return None
    text = " ".join(str(event.get(k) or "") for k in ("detail", "exit", "reason"))
    if "timed out" in text or event.get("status") == "timeout":
        return "timeout"
    # Stopped at the time limit but classified by its output (a rate limit
    # it was still retrying); gemini exits 0 on SIGTERM, claude 143.
    if timeout_s and (event.get("duration_ms") or 0) >= timeout_s * 1000 - 200:
        return "timeout"
    m = re.search(r"exit code (-?\d+)", str(event.get("exit") or ""))
    if m:
        return "exit %s" % m.group(1)
    m = re.search(r"signal (\d+)", str(event.get("exit") or ""))
    if m:
        return "signal %s" % m.group(1)
    return event.get("exit")


def case_timeout(work):
    m = re.search(r"^TIMEOUT_S=(\d+)", read(os.path.join(work, "case.env")), re.M)
    return int(m.group(1)) if m else None


def ralph_said(path):
    """ralph's verdict line: the failed/stopped line, or error: + hint:."""
    lines = [l for l in read(path).splitlines()
             if l.startswith(("error:", "hint:", "ralph: failed", "A: ", "#1 "))]
    return "\n".join(lines) or None


def read_lines(path):
    return [l for l in read(path).splitlines() if l.strip()]


def git(proj, *args):
    try:
        return subprocess.run(["git", "-C", proj] + list(args), stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True).stdout
    except OSError:
        return ""


def base_history(proj):
    """The base branch's commits after the first (ralph init), oldest first:
    subject, the tasks its `Completes:` trailers name, the files it touched."""
    branch = git(proj, "symbolic-ref", "--short", "HEAD").strip() or "main"
    out = []
    for sha in git(proj, "rev-list", "--reverse", branch).split()[1:]:
        subject = git(proj, "log", "-1", "--format=%s", sha).strip()
        body = git(proj, "log", "-1", "--format=%b", sha)
        files = [f for f in git(proj, "show", "--name-only", "--format=", sha).splitlines() if f]
        out.append({"commit": sha[:10], "subject": subject,
                    "completes": re.findall(r"^Completes: (\S+)", body, re.M), "files": files})
    return branch, out


def iteration_rows(events, proj):
    """Every iteration event, with the thread its log names."""
    rows = []
    for e in events:
        if e.get("phase") != "iteration":
            continue
        threads = re.findall(r"^ralph: thread (\S+)", read(os.path.join(proj, e.get("log") or "-")), re.M)
        # What became of the task's work after the iteration: its checks, its merge.
        after = []
        for x in events:
            if x.get("iteration") == e.get("iteration") and x.get("task_id") == e.get("task_id"):
                if x.get("phase") == "verify" and x.get("status") != "ok":
                    after.append(x.get("status"))
                elif x.get("phase") == "merge":
                    after.append("merged" if x.get("status") == "ok" else "merge " + str(x.get("status")))
        rows.append({
            "iteration": e.get("iteration"), "task": e.get("task_id"), "role": e.get("role"),
            "task_iteration": e.get("task_iteration"), "status": e.get("status"), "class": e.get("class"),
            "exit": e.get("exit"), "detail": e.get("detail"), "duration_ms": e.get("duration_ms"),
            "tokens": [e.get("input_tokens"), e.get("cached_input_tokens"), e.get("output_tokens")],
            "thread_event": e.get("thread"), "threads_in_log": threads, "log": e.get("log"), "after": after,
        })
    return rows


def appserver_checks(s, work, proj, events, requests):
    """What each codex-app-server case must show (README.md), each check true
    or false."""
    scen = s["scenario"]
    its = s["iterations"]
    c = {"nothing left running": not s["left_running"]}
    if scen == "three_tasks":
        ids = ["A", "B", "C"]
        hist = s["base_history"]
        c["3 merged"] = s["merged"] == 3
        for t in ids:
            commits = [h for h in hist if t in h["completes"]]
            c["%s merged once with e2e-%s.txt" % (t, t)] = (
                len(commits) == 1 and "e2e-%s.txt" % t in commits[0]["files"]
                and sum(1 for h in hist if "e2e-%s.txt" % t in h["files"]) == 1)
        c["files on the base"] = all(git(proj, "show", "HEAD:e2e-%s.txt" % t).strip() == "done" for t in ids)
        c["3 iterations, all ok"] = [i["status"] for i in its] == ["ok"] * 3
        c["a new thread per iteration"] = len({i["thread_event"] for i in its}) == len(its)
    elif scen == "session_fix":
        verifies = [e.get("status") for e in events if e.get("phase") == "verify"]
        c["2 iterations of A"] = [i["task"] for i in its] == ["A", "A"]
        c["verify failed, then passed"] = verifies == ["verify_failed", "ok"]
        threads = [tuple(i["threads_in_log"]) for i in its]
        c["one thread in 1-A.log and 2-A.log"] = (
            len(threads) == 2 and len(threads[0]) == 1 and threads[0] == threads[1]
            and its[0]["thread_event"] == its[1]["thread_event"] == threads[0][0])
        calls = [r for r in requests if str(r.get("answer", "")).startswith("tool_call")]
        c["turn 2 request carries turn 1"] = (
            len(calls) == 2 and (calls[1].get("turn") or {}).get("earlier_tool_results", 0) >= 1
            and "fixed" in (calls[1].get("command") or ""))
        c["merged, fixed on the base"] = (s["merged"] == 1
                                         and git(proj, "show", "HEAD:e2e.txt").strip() == "fixed")
    elif scen == "session_timeout":
        c["timeout, then verify failed, then merged"] = (
            [i["status"] for i in its] == ["timeout", "ok", "ok"]
            and [i["after"] for i in its] == [[], ["verify_failed"], ["merged"]])
        threads = [tuple(i["threads_in_log"]) for i in its]
        c["one thread in all 3 logs"] = len(threads) == 3 and len(set(threads)) == 1 and len(threads[0]) == 1
        calls = [r for r in requests if str(r.get("answer", "")).startswith("tool_call")]
        c["the fix's request carries the earlier turns"] = (
            len(calls) == 2 and (calls[1].get("turn") or {}).get("earlier_tool_results", 0) >= 1
            and (calls[0].get("turn") or {}).get("user_messages", 0) >= 3)
        c["merged, fixed on the base"] = (s["merged"] == 1
                                         and git(proj, "show", "HEAD:e2e.txt").strip() == "fixed")
    elif scen in ("hang", "hang_command", "hang_command_full"):
        limit = case_timeout(work) or 0
        first = its[0] if its else {}
        c["timeout"] = s["ralph_class"] == "timeout" and first.get("status") == "timeout"
        c["stopped within the limit"] = (first.get("duration_ms") or 10 ** 9) < (limit + 5) * 1000 and \
            (s["seconds"] or 10 ** 9) <= limit + 15
        seen = " ".join(s["procs_seen"])
        c["codex was seen running"] = "codex" in seen
        if scen != "hang":
            c["the command was seen running"] = "sleep 300" in seen
    elif scen == "no_credentials":
        # ralph's preflight (`codex login status`) refuses before any server starts.
        c["preflight refused: not logged in, exit 20"] = (
            s["ralph_exit"] == 20 and not its and "not logged in" in (s["ralph_stderr_tail"] or ""))
    else:
        c["class as expected"] = s["ralph_class"] == s["expected_class"]
        if scen == "rate_limit":
            c["exit 20"] = s["ralph_exit"] == 20
            c["iteration event usage_limit"] = bool(its) and its[0]["status"] == "usage_limit"
        if scen == "success":
            c["merged"] = s["merged"] == 1
    return c


def cmd_case(a):
    work = a.work
    proj = os.path.join(work, "project")
    rc = read(os.path.join(work, "ralph.rc")).strip()
    seconds = read(os.path.join(work, "seconds")).strip()
    result = load_json(os.path.join(proj, ".ralph", "result.json"), {})
    events = load_lines(os.path.join(proj, ".ralph", "events.ndjson"))
    # The first iteration: the harness asks for one (a usage limit does not
    # count as an iteration for --once, so ralph may have started more).
    iteration = next((e for e in events if e.get("phase") == "iteration"), None)
    iterations = sum(1 for e in events if e.get("phase") == "iteration")
    log = os.path.join(proj, iteration["log"]) if iteration and iteration.get("log") else None
    if not log or not os.path.exists(log):
        logs = sorted(glob.glob(os.path.join(proj, ".ralph", "logs", "*.log")))
        log = logs[0] if logs else None
    log_text = read(log) if log else ""
    direct = None
    if not log and os.path.exists(os.path.join(work, "direct.log")):
        # ralph refused before running the agent; run.sh ran the tool itself.
        log = os.path.join(work, "direct.log")
        drc = read(os.path.join(work, "direct.rc")).strip()
        direct = {"124": "timeout", "137": "signal 9"}.get(drc, "exit " + drc)
        log_text = read(log)
    requests = load_lines(os.path.join(work, "mock", "requests.jsonl"))
    ralph_class = iteration.get("class") if iteration else None
    if iteration and ralph_class is None and iteration.get("status") not in ("ok", "success", "complete", "done"):
        ralph_class = None
    merged = result.get("merged") if isinstance(result, dict) else None
    expected = None if a.expected == "null" else a.expected
    expected = EXPECTED.get((a.tool, a.scenario), expected)
    argv_ok = not ARGV_ERRORS.search(log_text[:20000]) if log_text else None
    e2e_file = os.path.exists(os.path.join(proj, "e2e.txt"))
    a.version = re.sub(r"\s*\(released .*\)$", "", a.version)
    summary = {
        "tool": a.tool,
        "version": a.version,
        "scenario": a.scenario,
        "ralph_exit": int(rc) if rc.lstrip("-").isdigit() else rc,
        "seconds": int(seconds) if seconds.isdigit() else None,
        "status": status_of(iteration, case_timeout(work)) or direct,
        "agent_run_by": "ralph" if iteration else ("run.sh, after ralph refused" if direct else ""),
        "ralph_class": ralph_class,
        "expected_class": expected,
        "reason": (iteration or {}).get("detail"),
        "merged": merged,
        "agent_runs": iterations,
        "e2e_txt_on_base": e2e_file,
        "argv_accepted": argv_ok,
        "requests": [r["method"] + " " + r["path"] + " -> " + str(r.get("answer")) for r in requests],
        "ralph_usage": {k: v for k, v in (iteration or {}).items()
                        if k.endswith("_tokens") or k == "cost_usd"} or None,
        "resets_at": (iteration or {}).get("resets_at"),
        "iteration_event": iteration,
        "iterations": iteration_rows(events, proj),
        "left_running": read_lines(os.path.join(work, "left_running.txt")),
        "procs_seen": read_lines(os.path.join(work, "procs_seen.txt")),
        "system_tmp_new": read_lines(os.path.join(work, "system_tmp.txt")),
        "ralph_stderr_tail": read(os.path.join(work, "ralph.err"))[-1500:],
        "ralph_stdout_tail": read(os.path.join(work, "ralph.out"))[-1500:],
        "log": log,
    }
    summary["base_branch"], summary["base_history"] = base_history(proj)
    if a.tool == "codex-app-server":
        checks = appserver_checks(summary, work, proj, events, requests)
        summary["checks"] = checks
        failed = [k for k, v in checks.items() if not v]
        summary["verdict"] = "FAIL: " + "; ".join(failed) if failed else "pass"
    tokens = tokens_sent(os.path.join(work, "mock", "usage.jsonl"))
    with open(os.path.join(work, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    if "verdict" in summary:
        print("exit %-3s %-14s %s %ss%s -> %s" % (
            summary["ralph_exit"], ",".join("%s%s" % (i["status"], "/" + i["class"] if i["class"] else "")
                                            for i in summary["iterations"]) or "-",
            "class %s" % ralph_class, seconds, " merged %s" % merged if merged else "", summary["verdict"]))
        if a.fixtures != "1":
            return
    mark = "ok" if ralph_class == expected else "DIFF"
    print("exit %-3s %-8s class %-12s expected %-12s %s %ss%s" % (
        summary["ralph_exit"], summary["status"], ralph_class, expected, mark, seconds,
        " merged" if merged else ""))
    if a.fixtures != "1" or not log:
        return
    dest = os.path.join(a.root, "tests", "fixtures", "agents", a.tool)
    os.makedirs(dest, exist_ok=True)
    shutil.copyfile(log, os.path.join(dest, a.scenario + ".log"))
    sidecar = {
        "tool": a.tool,
        "version": a.version,
        "scenario": a.scenario,
        "status": summary["status"],
        "ralph_class": ralph_class,
        "ralph_exit": summary["ralph_exit"],
        "expected_class": expected,
        "ralph_said": ralph_said(os.path.join(work, "ralph.err")),
        "mock_retry_after_s": 40 if a.scenario == "rate_limit" else None,
        "tokens": tokens,
        "recorded": datetime.date.today().isoformat(),
    }
    if (a.tool, a.scenario) in NOTES:
        sidecar["note"] = NOTES[(a.tool, a.scenario)]
    # What a person decided on reading the output stays: the class the
    # fixture test expects, the wait it expects, and why.
    path = os.path.join(dest, a.scenario + ".json")
    old = load_json(path) or {}
    for key in ("expected_class", "expected_retry_after_s", "note"):
        if key in old and old.get("version") == sidecar["version"]:
            sidecar[key] = old[key]
    with open(path, "w") as f:
        json.dump(sidecar, f, indent=2)
        f.write("\n")


MARK = "<!-- generated above this line by record.py; written by hand below -->"


def cmd_results(a):
    rows = []
    server_rows = []
    for path in sorted(glob.glob(os.path.join(a.out, "*", "*", "summary.json"))):
        s = load_json(path)
        if s:
            (server_rows if s["tool"] == "codex-app-server" else rows).append(s)
    order = ["claude", "codex", "qwen", "gemini", "opencode", "aider", "amp"]
    scen_order = ["success", "auth", "rate_limit", "server_error", "hang", "no_credentials"]
    rows.sort(key=lambda s: (order.index(s["tool"]) if s["tool"] in order else 99,
                             scen_order.index(s["scenario"]) if s["scenario"] in scen_order else 99))
    lines = [
        "# Agent CLI end-to-end results",
        "",
        "Written by `scripts/agents-e2e/run.sh` (%s) from `out/*/*/summary.json`; ralph: %s." % (
            datetime.date.today().isoformat(), a.ralph or "?"),
        "`class today` is what this ralph build classified; `expected` is the class issue 17 says is",
        "right (`-`: success). `status` is how the agent's process ended. See README.md.",
        "",
        "| tool | version | argv accepted | scenario | status | class today | expected | match | ralph exit | merged | seconds |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    old = read(a.output)
    # Rows of cases not run this time (no summary in out/) stay as they were.
    ran = {(s["tool"], s["scenario"]) for s in rows}
    kept = []
    for line in old.split(MARK, 1)[0].splitlines():
        cells = [x.strip() for x in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 11 and cells[0] not in ("tool",) \
                and (cells[0], cells[3]) not in ran:
            kept.append((cells[0], cells[3], line))
    table = []
    for s in rows:
        cls = s.get("ralph_class") or "-"
        if s.get("agent_run_by", "").startswith("run.sh"):
            err = next((l for l in (s.get("ralph_stderr_tail") or "").splitlines() if l.startswith("error:")), "")
            cls = "preflight refused" + (" (%s)" % err[len("error: "):] if err else "")
        exp = s.get("expected_class") or "-"
        table.append((s["tool"], s["scenario"], "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            s["tool"], s.get("version") or "?",
            {True: "yes", False: "NO", None: "?"}[s.get("argv_accepted")],
            s["scenario"], s.get("status") or "-", cls, exp,
            "n/a" if cls.startswith("preflight") else ("yes" if cls == exp else "**no**"), s.get("ralph_exit"),
            "yes" if s.get("merged") else "no", s.get("seconds"))))
    table += kept
    table.sort(key=lambda r: (order.index(r[0]) if r[0] in order else 99,
                              scen_order.index(r[1]) if r[1] in scen_order else 99))
    lines += [r[2] for r in table]
    if kept:
        # Where they came from: the previous table's own note, else its header.
        m = re.search(r"^Rows of \d+ case\(s\) not run this time are kept from (.*)$", old, re.M)
        h = re.search(r"^Written by `scripts/agents-e2e/run.sh` \(([^)]*)\) from `out/\*/\*/summary.json`; "
                      r"ralph: (.*)\.$", old, re.M)
        origin = m.group(1) if m else ("the run of %s (ralph: %s)." % (h.group(1), h.group(2)) if h
                                       else "the previous table.")
        lines += ["", "Rows of %d case(s) not run this time are kept from %s" % (len(kept), origin)]
    shown = {(r[0], r[1]) for r in table}
    notes = ["", "Notes:", ""]
    for (tool, scen), note in NOTES.items():
        if (tool, scen) in shown:
            notes.append("- %s %s: %s" % (tool, scen, note))
    lines += notes
    lines += appserver_table(server_rows)
    lines += ["", MARK]
    if MARK in old:  # keep what was written by hand after the table
        lines.append(old.split(MARK, 1)[1].strip("\n"))
    with open(a.output, "w") as f:
        f.write("\n".join(lines) + "\n")


APPSERVER_ORDER = ["success", "three_tasks", "session_fix", "session_timeout", "auth", "rate_limit", "server_error", "hang",
                   "hang_command", "hang_command_full", "no_credentials"]


def appserver_table(rows):
    """The codex-app-server cases: several iterations per case, so a table of
    their own (README.md, "The codex-app-server cases")."""
    if not rows:
        return []
    rows.sort(key=lambda s: APPSERVER_ORDER.index(s["scenario"]) if s["scenario"] in APPSERVER_ORDER else 99)
    out = [
        "",
        "## codex-app-server (%s)" % (rows[0].get("version") or "?"),
        "",
        "`ralph run --agent codex-app-server` against the real `codex app-server`. `iterations`: each",
        "iteration event's task, status and class; `usage`: input (cached) / output tokens ralph recorded,",
        "summed over the iterations; `left running`: processes with the case's environment 1 s after",
        "ralph ended (`ps`); `new in /tmp`: entries of the system's /tmp created or changed during the",
        "case; `verdict`: the case's checks (summary.json `checks`).",
        "",
        "| case | ralph exit | merged | iterations | usage | seconds | left running | new in /tmp | verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in rows:
        its = s.get("iterations") or []
        tok = [sum((i["tokens"][k] or 0) for i in its) for k in range(3)]
        merged_tasks = [t for h in s.get("base_history") or [] for t in h["completes"]]
        if s.get("agent_run_by", "").startswith("run.sh") or (not its and s.get("ralph_exit") not in (0, None)):
            err = next((l for l in (s.get("ralph_stderr_tail") or "").splitlines() if l.startswith("error:")), "")
            iters = "none: " + (err[len("error: "):] if err else "ralph ran no agent")
        else:
            iters = ", ".join("%s %s%s%s" % (
                i["task"], i["status"], "/" + i["class"] if i["class"] and i["class"] != i["status"] else "",
                " → " + ", ".join(i.get("after") or []) if i.get("after") else "") for i in its) or "-"
        tmp_new = " ".join("`%s`" % os.path.basename(x) for x in s.get("system_tmp_new") or []) or "-"
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            s["scenario"], s.get("ralph_exit"),
            "%s (%s)" % (len(merged_tasks), " ".join(merged_tasks)) if merged_tasks else "0",
            iters, "%d (%d) / %d" % tuple(tok) if any(tok) else "-", s.get("seconds"),
            len(s.get("left_running") or []), tmp_new, s.get("verdict") or "-"))
    return out


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("case")
    c.add_argument("work")
    c.add_argument("--tool", required=True)
    c.add_argument("--scenario", required=True)
    c.add_argument("--version", default="")
    c.add_argument("--expected", default="null")
    c.add_argument("--root", required=True)
    c.add_argument("--fixtures", default="1")
    r = sub.add_parser("results")
    r.add_argument("out")
    r.add_argument("--output", required=True)
    r.add_argument("--ralph", default="")
    a = p.parse_args()
    {"case": cmd_case, "results": cmd_results}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
