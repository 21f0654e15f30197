#!/usr/bin/env python3
"""Record `codex app-server` sessions against the mock model server (issue 33).

    python3 scripts/agents-e2e/record_appserver.py [scenario...] [--keep] [--no-fixtures]

Scenarios: success decline file_change auth rate_limit hang retry_then_ok
sandbox_retry sandbox_denied (default: all). Python 3 standard library only.

For each scenario, in a new network namespace with only loopback up
(`unshare -n`, or `unshare -rn` when not root; this script re-executes itself
inside it with --inner), it starts mock_server.py on 127.0.0.1:PORT, makes a
scratch git repository (identity, one commit), a fresh CODEX_HOME whose
config.toml points a `mock` provider at the mock, its own HOME and TMPDIR,
and drives the real `codex app-server` (.tools/bin/codex) over stdio the way
ralph does:

    initialize (clientInfo ralph) -> initialized -> thread/start -> turn/start
    -> answer server requests (approvals per scenario, anything else: a
    JSON-RPC error) -> turn/completed of our turn (own deadline; `hang`
    interrupts after 3 s) -> close stdin -> wait for exit.

Every stdout line and every line written to stdin is logged in order. The
fixtures, tests/fixtures/appserver/<scenario>.jsonl, hold one object per line:

    {"dir": "out", "msg": {...}}   client -> server (what we wrote to stdin)
    {"dir": "in",  "msg": {...}}   server -> client (a stdout line)
    {"dir": "in",  "raw": "..."}   a stdout line that is not JSON

with the scratch paths replaced in every string: the repository by `$CWD`,
CODEX_HOME by `$CODEX_HOME`, TMPDIR by `$TMPDIR`, HOME by `$HOME`, the rest of
the work folder by `$WORK`, this repository by `$ROOT`, and the mock's address
by `http://127.0.0.1:$PORT`. stderr is drained to a file in the work folder
and kept out of the fixtures. tests/fixtures/appserver/meta.json records the
version, the date, the parameters sent and a summary per scenario (turn
status, items, approvals and decisions, token totals, the mock's requests,
the repository afterwards, and `command_attempts`: the lines the commands
appended to $TMPDIR/attempts.log, which show a refused attempt inside the
sandbox that the item notifications do not).

sandbox_retry and sandbox_denied record the two outcomes of one race in codex
(an accepted command refused by the sandbox is, or is not, run again outside
it): each is re-run until its outcome is seen (at most 8 / 12 runs) and its
fixture is left alone when it is not.

Work folders are removed unless --keep (then their path is printed).
"""

import argparse
import datetime
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOOLS_BIN = os.path.join(HERE, ".tools", "bin")
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "appserver")
PORT = 8765

ALL = ["success", "decline", "file_change", "auth", "rate_limit", "hang", "retry_then_ok",
       "sandbox_retry", "sandbox_denied"]

PROMPT = (
    "Create e2e.txt containing the word done, commit it, then run: "
    '"$RALPH_BIN" task complete "$RALPH_TASK_ID"'
)

# An apply_patch heredoc run through the shell tool: codex intercepts it and
# turns it into a fileChange item (and an item/fileChange/requestApproval).
PATCH_COMMAND = """apply_patch <<'EOF'
*** Begin Patch
*** Add File: patched.txt
+hello from the patch
*** Update File: README.md
@@
-# scratch
+# scratch (patched)
*** End Patch
EOF"""

# Shows how an accepted command that the sandbox refused is run again: each
# attempt appends a line to $TMPDIR/attempts.log (read back into meta.json).
PROBE_COMMAND = (
    'if touch .git/ralph-probe; then echo "attempt: .git writable" | tee -a "$TMPDIR/attempts.log"; '
    'else echo "attempt: .git read-only" >> "$TMPDIR/attempts.log"; exit 1; fi'
)

# Per scenario: what the mock does, the provider's retry knobs, the
# MOCK_COMMAND, the decision for each kind of approval, and the deadlines.
#   mock:        the mock's scenario at the start
#   switch_to:   the mock's scenario once `switch_after` requests were answered
#   retries:     (request_max_retries, stream_max_retries) of the provider
#   interrupt_s: send turn/interrupt this long after turn/start's answer
#   want_attempts, max_runs: codex's re-run of a sandbox-refused command is
#                nondeterministic; run up to max_runs times until the command
#                ran want_attempts times, else write no fixture
SCENARIOS = {
    "success": {"mock": "success", "retries": (1, 1), "command_decision": "accept",
                "file_decision": "accept"},
    "decline": {"mock": "success", "retries": (1, 1), "command_decision": "decline",
                "file_decision": "decline"},
    "file_change": {"mock": "success", "retries": (1, 1), "mock_command": PATCH_COMMAND,
                    "command_decision": "accept", "file_decision": "accept"},
    "auth": {"mock": "auth", "retries": (0, 0), "command_decision": "accept", "file_decision": "accept"},
    "rate_limit": {"mock": "rate_limit", "retries": (0, 0), "command_decision": "accept",
                   "file_decision": "accept"},
    "hang": {"mock": "hang", "retries": (1, 1), "command_decision": "accept", "file_decision": "accept",
             "interrupt_s": 3},
    "retry_then_ok": {"mock": "server_error", "switch_to": "success", "switch_after": 1,
                      "retries": (0, 1), "command_decision": "accept", "file_decision": "accept"},
    "sandbox_retry": {"mock": "success", "retries": (1, 1), "mock_command": PROBE_COMMAND,
                      "command_decision": "accept", "file_decision": "accept",
                      # Run again (at most max_runs times) until codex re-ran the command.
                      "want_attempts": 2, "max_runs": 8},
    "sandbox_denied": {"mock": "success", "retries": (1, 1), "mock_command": PROBE_COMMAND,
                       "command_decision": "accept", "file_decision": "accept",
                       # ... until codex did not re-run it (the item fails).
                       "want_attempts": 1, "max_runs": 12},
}

# Kept in meta.json with the scenario: what the fixture alone does not say.
NOTES = {
    "success": "Nondeterministic in codex-cli 0.169.0: the accepted command runs in the workspace-write "
               "sandbox, where .git is read-only, so `git add` fails (index.lock: Read-only file system). "
               "Then either the item completes `failed` with exitCode 128 and that output, or codex "
               "silently runs the command again outside the sandbox (no second approval request, one item, "
               "the second run's output and exit code, status `completed`). command_attempts and "
               "repo_after say which happened in this recording. See sandbox_retry.",
    "sandbox_retry": "The command appends a line to $TMPDIR/attempts.log per run and fails with the sandbox's "
                     "'Read-only file system' when .git is not writable. Recorded until codex re-ran it "
                     "outside the sandbox (runs_needed); `runs` lists every run's outcome. The protocol shows "
                     "one approval and one item either way: only command_attempts shows the refused first run.",
    "sandbox_denied": "The same command as sandbox_retry, recorded until codex did not re-run it: the item "
                      "completes `failed` with the sandbox's error as output and exitCode 1, and the turn goes on.",
    "retry_then_ok": "The mock answers the first model request 500 and then switches to success; provider "
                     "request_max_retries 0, stream_max_retries 1. The command then behaves as in success.",
    "hang": "The mock reads the request and never answers; the client sends turn/interrupt 3 s after "
            "turn/start's answer. No error notification and no token usage before the interrupt.",
}

TURN_DEADLINE_S = 90        # any scenario: interrupt when the turn has not ended by then
AFTER_INTERRUPT_S = 10      # then wait this long for turn/completed
INIT_DEADLINE_S = 30        # for each of our requests' answers
GRACE_S = 0.5               # keep reading after turn/completed before closing stdin
EXIT_DEADLINE_S = 5         # after closing stdin, then SIGKILL the process group

CLIENT_INFO = {"name": "ralph", "title": "ralph", "version": "0.0.0-recording"}


def codex_config(port, retries):
    req, stream = retries
    return (
        'model = "mock-model"\n'
        'model_provider = "mock"\n'
        "\n"
        "[model_providers.mock]\n"
        'name = "mock"\n'
        'base_url = "http://127.0.0.1:%d/v1"\n'
        'env_key = "MOCK_API_KEY"\n'
        'wire_api = "responses"\n'
        "request_max_retries = %d\n"
        "stream_max_retries = %d\n" % (port, req, stream)
    )


def thread_start_params(repo):
    return {"cwd": repo, "approvalPolicy": "untrusted", "sandbox": "workspace-write"}


def turn_start_params(thread_id, repo):
    return {
        "threadId": thread_id,
        "input": [{"type": "text", "text": PROMPT, "text_elements": []}],
        "sandboxPolicy": {"type": "workspaceWrite", "writableRoots": [repo], "networkAccess": True},
    }


# ---------------------------------------------------------------------------
# Inside the namespace: one scenario.


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw)


def setup(work, scen):
    spec = SCENARIOS[scen]
    paths = {k: os.path.join(work, k) for k in ("home", "codex_home", "tmp", "repo", "mock", "bin")}
    for p in paths.values():
        os.makedirs(p, exist_ok=True)
    home, repo = paths["home"], paths["repo"]
    genv = dict(os.environ, HOME=home, GIT_CONFIG_NOSYSTEM="1")
    run(["git", "config", "-f", os.path.join(home, ".gitconfig"), "user.name", "ralph e2e"])
    run(["git", "config", "-f", os.path.join(home, ".gitconfig"), "user.email", "e2e@example.invalid"])
    run(["git", "config", "-f", os.path.join(home, ".gitconfig"), "init.defaultBranch", "main"])
    run(["git", "init", "-q"], cwd=repo, env=genv)
    run(["git", "config", "user.name", "ralph e2e"], cwd=repo, env=genv)
    run(["git", "config", "user.email", "e2e@example.invalid"], cwd=repo, env=genv)
    with open(os.path.join(repo, "README.md"), "w") as f:
        f.write("# scratch\n")
    run(["git", "add", "-A"], cwd=repo, env=genv)
    run(["git", "commit", "-q", "-m", "scratch"], cwd=repo, env=genv)
    # A stand-in for ralph's `task complete`: says what it was asked, and
    # notes in $TMPDIR/attempts.log whether it ran where .git is writable.
    stub = os.path.join(paths["bin"], "ralph")
    with open(stub, "w") as f:
        f.write('#!/bin/sh\necho "ralph stub: $*"\n'
                'if [ -w .git ]; then w=writable; else w=read-only; fi\n'
                'echo "ralph stub: $* (.git $w)" >> "$TMPDIR/attempts.log"\n')
    os.chmod(stub, 0o755)
    with open(os.path.join(paths["codex_home"], "config.toml"), "w") as f:
        f.write(codex_config(PORT, spec["retries"]))
    env = {
        "HOME": home,
        "PATH": "%s:/usr/local/bin:/usr/bin:/bin" % TOOLS_BIN,
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "USER": os.environ.get("USER") or "root",
        "TMPDIR": paths["tmp"],
        "CODEX_HOME": paths["codex_home"],
        "MOCK_API_KEY": "sk-mock",
        "NO_UPDATE_NOTIFIER": "1",
        "RALPH_BIN": stub,
        "RALPH_TASK_ID": "A",
    }
    return paths, env


class Mock:
    def __init__(self, work, spec):
        self.dir = os.path.join(work, "mock")
        self.scen_file = os.path.join(self.dir, "scenario")
        self.log = os.path.join(self.dir, "requests.jsonl")
        with open(self.scen_file, "w") as f:
            f.write(spec["mock"] + "\n")
        env = dict(os.environ)
        env.pop("MOCK_COMMAND", None)
        if spec.get("mock_command"):
            env["MOCK_COMMAND"] = spec["mock_command"]
        self.err = open(os.path.join(self.dir, "server.err"), "w")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "mock_server.py"), str(PORT),
             "--scenario-file", self.scen_file, "--log", self.log,
             "--usage-log", os.path.join(self.dir, "usage.jsonl"),
             "--bodies", os.path.join(self.dir, "bodies")],
            stdin=subprocess.DEVNULL, stdout=self.err, stderr=self.err, env=env)
        import socket
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", PORT), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        self.switcher = None
        if spec.get("switch_to"):
            self.switcher = threading.Thread(
                target=self.switch, args=(spec["switch_after"], spec["switch_to"]), daemon=True)
            self.switcher.start()

    def requests(self):
        try:
            with open(self.log) as f:
                return [json.loads(line) for line in f if line.strip()]
        except OSError:
            return []

    def switch(self, after, to):
        """Change the mock's scenario once `after` model requests were answered."""
        while self.proc.poll() is None:
            if sum(1 for r in self.requests() if r.get("api") == "responses") >= after:
                with open(self.scen_file, "w") as f:
                    f.write(to + "\n")
                return
            time.sleep(0.005)

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        self.err.close()


class Session:
    """The app-server process, a reader thread, and the transcript."""

    def __init__(self, argv, env, cwd, stderr_path):
        self.stderr = open(stderr_path, "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, env=env, cwd=cwd, start_new_session=True)
        self.lines = queue.Queue()
        self.transcript = []  # (t, dir, msg|None, raw|None)
        self.t0 = time.monotonic()
        self.next_id = 0
        self.stdin_open = True
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in iter(self.proc.stdout.readline, b""):
            self.lines.put(raw.decode("utf-8", "replace").rstrip("\r\n"))
        self.lines.put(None)

    def now(self):
        return round(time.monotonic() - self.t0, 3)

    def send(self, msg):
        self.transcript.append((self.now(), "out", msg, None))
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method, params):
        rid = self.next_id
        self.next_id += 1
        msg = {"id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return rid

    def notify(self, method, params=None):
        msg = {"method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def get(self, timeout):
        """The next stdout line as (msg, raw); (None, None) on timeout; EOF raises EOFError."""
        try:
            line = self.lines.get(timeout=max(timeout, 0))
        except queue.Empty:
            return None, None
        if line is None:
            raise EOFError
        try:
            msg = json.loads(line)
            if not isinstance(msg, dict):
                raise ValueError
        except ValueError:
            self.transcript.append((self.now(), "in", None, line))
            return None, line
        self.transcript.append((self.now(), "in", msg, None))
        return msg, None

    def close_stdin(self):
        if self.stdin_open:
            self.stdin_open = False
            try:
                self.proc.stdin.close()
            except OSError:
                pass


def kind_of(msg):
    if "method" in msg and "id" in msg:
        return "server_request"
    if "method" in msg:
        return "notification"
    if "id" in msg and ("result" in msg or "error" in msg):
        return "response"
    return "other"


def record_scenario(scen, work):
    spec = SCENARIOS[scen]
    paths, env = setup(work, scen)
    mock = Mock(work, spec)
    codex = os.path.join(TOOLS_BIN, "codex")
    sess = Session([codex, "app-server"], env, paths["repo"], os.path.join(work, "codex.stderr"))
    state = {
        "scenario": scen, "thread_id": None, "turn_id": None, "turn_status": None, "turn_error": None,
        "items": [], "approvals": [], "other_server_requests": [], "errors": [],
        "token_usage": None, "interrupt_sent_at_s": None, "deadline_hit": False, "responses": {},
        "turn_start_answer_at_s": None, "turn_completed_at_s": None,
    }
    pending = {}  # our request id -> method

    def handle(msg):
        """Answer server requests, remember what matters. Returns the message kind."""
        k = kind_of(msg)
        if k == "response":
            method = pending.pop(msg["id"], None)
            if method:
                state["responses"][method] = msg
        elif k == "server_request":
            method, params = msg["method"], msg.get("params") or {}
            if method in ("item/commandExecution/requestApproval", "item/fileChange/requestApproval",
                          "execCommandApproval", "applyPatchApproval"):
                command = method in ("item/commandExecution/requestApproval", "execCommandApproval")
                decision = spec["command_decision" if command else "file_decision"]
                if method in ("execCommandApproval", "applyPatchApproval"):  # v1 wording
                    decision = {"accept": "approved", "decline": "denied", "cancel": "abort"}[decision]
                sess.send({"id": msg["id"], "result": {"decision": decision}})
                state["approvals"].append({
                    "method": method, "id": msg["id"], "itemId": params.get("itemId") or params.get("callId"),
                    "command": params.get("command"), "reason": params.get("reason"),
                    "availableDecisions": params.get("availableDecisions"), "decision": decision})
            else:
                sess.send({"id": msg["id"], "error": {
                    "code": -32601, "message": "ralph does not handle %s" % method}})
                state["other_server_requests"].append(method)
        elif k == "notification":
            method, params = msg["method"], msg.get("params") or {}
            if method == "item/completed":
                item = params.get("item") or {}
                entry = {"type": item.get("type"), "id": item.get("id"), "status": item.get("status")}
                if item.get("type") == "commandExecution":
                    entry.update(command=item.get("command"), exitCode=item.get("exitCode"),
                                 aggregatedOutput=item.get("aggregatedOutput"))
                if item.get("type") == "fileChange":
                    entry["paths"] = [c.get("path") for c in item.get("changes") or []]
                if item.get("type") == "agentMessage":
                    entry["text"] = item.get("text")
                state["items"].append(entry)
            elif method == "thread/tokenUsage/updated":
                state["token_usage"] = params.get("tokenUsage")
            elif method == "error":
                state["errors"].append({"willRetry": params.get("willRetry"), "error": params.get("error")})
        return k

    def wait_response(rid, deadline):
        while time.monotonic() < deadline:
            msg, _ = sess.get(deadline - time.monotonic())
            if msg is None:
                continue
            handle(msg)
            if kind_of(msg) == "response" and msg.get("id") == rid:
                return msg
        return None

    exit_code = None
    exit_after_close_s = None
    failure = None
    try:
        rid = sess.request("initialize", {"clientInfo": CLIENT_INFO,
                                          "capabilities": {"experimentalApi": False}})
        pending[rid] = "initialize"
        if not wait_response(rid, time.monotonic() + INIT_DEADLINE_S):
            raise RuntimeError("no answer to initialize")
        sess.notify("initialized")
        rid = sess.request("thread/start", thread_start_params(paths["repo"]))
        pending[rid] = "thread/start"
        ans = wait_response(rid, time.monotonic() + INIT_DEADLINE_S)
        if not ans or "result" not in ans:
            raise RuntimeError("thread/start failed: %r" % (ans,))
        state["thread_id"] = ans["result"]["thread"]["id"]
        rid = sess.request("turn/start", turn_start_params(state["thread_id"], paths["repo"]))
        pending[rid] = "turn/start"
        ans = wait_response(rid, time.monotonic() + INIT_DEADLINE_S)
        if not ans or "result" not in ans:
            raise RuntimeError("turn/start failed: %r" % (ans,))
        state["turn_id"] = ans["result"]["turn"]["id"]
        state["turn_start_answer_at_s"] = sess.now()
        started = time.monotonic()
        deadline = started + TURN_DEADLINE_S
        interrupt_at = started + spec["interrupt_s"] if spec.get("interrupt_s") else None
        done = False
        while not done:
            now = time.monotonic()
            if state["interrupt_sent_at_s"] is None and (
                    (interrupt_at and now >= interrupt_at) or now >= deadline):
                if now >= deadline:
                    state["deadline_hit"] = True
                rid = sess.request("turn/interrupt", {"threadId": state["thread_id"],
                                                      "turnId": state["turn_id"]})
                pending[rid] = "turn/interrupt"
                state["interrupt_sent_at_s"] = sess.now()
                deadline = time.monotonic() + AFTER_INTERRUPT_S
                interrupt_at = None
                continue
            if state["interrupt_sent_at_s"] is not None and now >= deadline:
                failure = "no turn/completed within %d s of turn/interrupt" % AFTER_INTERRUPT_S
                break
            nxt = deadline if interrupt_at is None else min(deadline, interrupt_at)
            msg, _ = sess.get(min(nxt - now, 0.5))
            if msg is None:
                continue
            handle(msg)
            if msg.get("method") == "turn/completed":
                turn = (msg.get("params") or {}).get("turn") or {}
                if turn.get("id") == state["turn_id"]:
                    state["turn_status"] = turn.get("status")
                    state["turn_error"] = turn.get("error")
                    state["turn_completed_at_s"] = sess.now()
                    done = True
        # A little more, for anything sent right after turn/completed.
        end = time.monotonic() + GRACE_S
        while time.monotonic() < end:
            msg, _ = sess.get(end - time.monotonic())
            if msg is not None:
                handle(msg)
    except EOFError:
        failure = "app-server closed stdout before the turn ended"
    except (RuntimeError, BrokenPipeError) as e:
        failure = str(e)
    # Shut down: close stdin, read to EOF (still answering), wait for exit.
    closed_at = time.monotonic()
    sess.close_stdin()
    state["stdin_closed_at_s"] = sess.now()
    try:
        while time.monotonic() < closed_at + EXIT_DEADLINE_S:
            msg, _ = sess.get(closed_at + EXIT_DEADLINE_S - time.monotonic())
            if msg is not None:
                try:
                    handle(msg)
                except (BrokenPipeError, ValueError, OSError):
                    pass
    except EOFError:
        pass
    try:
        exit_code = sess.proc.wait(timeout=max(closed_at + EXIT_DEADLINE_S - time.monotonic(), 0.1))
        exit_after_close_s = round(time.monotonic() - closed_at, 3)
    except subprocess.TimeoutExpired:
        os.killpg(sess.proc.pid, signal.SIGKILL)
        exit_code = "killed"
        sess.proc.wait()
    sess.stderr.close()
    requests = mock.requests()
    mock.stop()
    bodies = os.path.join(mock.dir, "bodies")
    received = len(os.listdir(bodies)) if os.path.isdir(bodies) else 0
    try:
        with open(os.path.join(paths["tmp"], "attempts.log")) as f:
            attempts = f.read().splitlines()
    except OSError:
        attempts = []

    # What the repository looks like afterwards.
    genv = dict(os.environ, HOME=paths["home"])
    log = subprocess.run(["git", "log", "--format=%s"], cwd=paths["repo"], env=genv,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout.split("\n")
    status = subprocess.run(["git", "status", "--porcelain"], cwd=paths["repo"], env=genv,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
    state.update(
        failure=failure, exit_code=exit_code, exit_after_close_s=exit_after_close_s,
        mock_requests=[{"path": r.get("path"), "api": r.get("api"), "scenario": r.get("scenario"),
                        "answer": r.get("answer"), "tools": r.get("tools")} for r in requests],
        mock_requests_received=received,
        command_attempts=attempts,
        repo_after={"commits": [c for c in log if c], "status": status.splitlines()},
        config_toml=codex_config(PORT, spec["retries"]),
        env={k: v for k, v in env.items()},
        mock_scenario=spec["mock"], mock_command=spec.get("mock_command"),
    )
    with open(os.path.join(work, "transcript.jsonl"), "w") as f:
        for t, d, msg, raw in sess.transcript:
            rec = {"t": t, "dir": d}
            if msg is not None:
                rec["msg"] = msg
            else:
                rec["raw"] = raw
            f.write(json.dumps(rec) + "\n")
    with open(os.path.join(work, "state.json"), "w") as f:
        json.dump({"state": state, "paths": paths}, f, indent=1)


def inner(scen, work):
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    record_scenario(scen, work)


# ---------------------------------------------------------------------------
# Outside: namespaces, sanitising, fixtures, meta.json.


def sanitizer(paths, work):
    pairs = [
        (paths["repo"], "$CWD"),
        (paths["codex_home"], "$CODEX_HOME"),
        (paths["tmp"], "$TMPDIR"),
        (paths["home"], "$HOME"),
        (work, "$WORK"),
        (ROOT, "$ROOT"),
        ("http://127.0.0.1:%d" % PORT, "http://127.0.0.1:$PORT"),
        ("127.0.0.1:%d" % PORT, "127.0.0.1:$PORT"),
    ]
    # realpath variants too (a symlinked temporary folder).
    more = [(os.path.realpath(a), b) for a, b in pairs if a.startswith("/") and os.path.realpath(a) != a]
    pairs = sorted(pairs + more, key=lambda p: -len(p[0]))

    def s(v):
        if isinstance(v, str):
            for a, b in pairs:
                if a in v:
                    v = v.replace(a, b)
            return v
        if isinstance(v, list):
            return [s(x) for x in v]
        if isinstance(v, dict):
            return {s(k): s(x) for k, x in v.items()}
        return v
    return s


def summarize(state, transcript):
    """The per-scenario entry of meta.json (already sanitised)."""
    item_types, seen = [], set()
    notifications = []
    for rec in transcript:
        msg = rec.get("msg") or {}
        if rec["dir"] == "in" and "method" in msg and "id" not in msg:
            if msg["method"] not in notifications:
                notifications.append(msg["method"])
            if msg["method"] in ("item/started", "item/completed"):
                t = ((msg.get("params") or {}).get("item") or {}).get("type")
                if t and t not in seen:
                    seen.add(t)
                    item_types.append(t)
    usage = state.get("token_usage") or {}
    return {
        "turn_status": state.get("turn_status"),
        "turn_error": state.get("turn_error"),
        "failure": state.get("failure"),
        "item_types": item_types,
        "items_completed": state.get("items"),
        "approvals": state.get("approvals"),
        "other_server_requests": state.get("other_server_requests"),
        "error_notifications": state.get("errors"),
        "token_usage_total": usage.get("total"),
        "token_usage_last": usage.get("last"),
        "interrupt_sent_at_s": state.get("interrupt_sent_at_s"),
        "turn_completed_at_s": state.get("turn_completed_at_s"),
        "stdin_closed_at_s": state.get("stdin_closed_at_s"),
        "deadline_hit": state.get("deadline_hit"),
        "exit_code": state.get("exit_code"),
        "exit_after_stdin_close_s": state.get("exit_after_close_s"),
        "notification_methods": notifications,
        "mock_scenario": state.get("mock_scenario"),
        "mock_command": state.get("mock_command"),
        "mock_requests": state.get("mock_requests"),
        "mock_requests_received": state.get("mock_requests_received"),
        "command_attempts": state.get("command_attempts"),
        "repo_after": state.get("repo_after"),
        "config_toml": state.get("config_toml"),
        "lines": len(transcript),
    }


def outer(args):
    scens = args.scenarios or ALL
    for s in scens:
        if s not in SCENARIOS:
            sys.exit("unknown scenario %s (known: %s)" % (s, " ".join(ALL)))
    codex = os.path.join(TOOLS_BIN, "codex")
    if not os.access(codex, os.X_OK):
        sys.exit("no %s: scripts/agents-e2e/install.sh codex" % codex)
    version = subprocess.run([codex, "--version"], stdout=subprocess.PIPE, text=True).stdout.strip()
    unshare = ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-rn"]
    if subprocess.run(unshare + ["true"]).returncode != 0:
        sys.exit("cannot create a network namespace (%s)" % " ".join(unshare))
    base = tempfile.mkdtemp(prefix="ralph-appserver-")
    if not args.no_fixtures:
        os.makedirs(FIXTURES, exist_ok=True)
    meta_path = os.path.join(FIXTURES, "meta.json")
    meta = {}
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)
    if meta.get("codex_version") != version:
        meta = {"scenarios": {}}
    meta.setdefault("scenarios", {})
    print("codex: %s   work: %s" % (version, base))
    for scen in scens:
        spec = SCENARIOS[scen]
        print("  %-14s " % scen, end="", flush=True)
        t = time.monotonic()
        runs = []
        for n in range(spec.get("max_runs", 1)):
            work = os.path.join(base, scen if n == 0 else "%s.%d" % (scen, n))
            os.makedirs(work)
            rc = subprocess.run(unshare + [sys.executable, os.path.abspath(__file__), "--inner", scen, work]).returncode
            state_file = os.path.join(work, "state.json")
            if rc != 0 or not os.path.exists(state_file):
                break
            with open(state_file) as f:
                saved = json.load(f)
            st = saved["state"]
            runs.append({"turn_status": st.get("turn_status"), "command_attempts": len(st.get("command_attempts") or []),
                         "items": ["%s:%s" % (i["type"], i["status"]) for i in st["items"] if i["type"] != "userMessage"]})
            if "want_attempts" not in spec or len(st.get("command_attempts") or []) == spec["want_attempts"]:
                break
        if rc != 0 or not os.path.exists(state_file):
            print("failed (exit %s; see %s)" % (rc, work))
            continue
        if "want_attempts" in spec and runs[-1]["command_attempts"] != spec["want_attempts"]:
            print("not seen: %d command attempt(s) wanted, got %s in %d runs; fixture not written" % (
                spec["want_attempts"], [r["command_attempts"] for r in runs], len(runs)))
            continue
        s = sanitizer(saved["paths"], work)
        with open(os.path.join(work, "transcript.jsonl")) as f:
            transcript = [s(json.loads(line)) for line in f if line.strip()]
        state = s(saved["state"])
        entry = summarize(state, transcript)
        entry["recorded"] = datetime.date.today().isoformat()
        if spec.get("max_runs"):
            entry["runs"] = runs
            entry["runs_needed"] = len(runs)
        if scen in NOTES:
            entry["note"] = NOTES[scen]
        print("%s in %.1fs, items %s, approvals %s, exit %s" % (
            entry["turn_status"] or entry["failure"], time.monotonic() - t, ",".join(entry["item_types"]),
            ",".join("%s=%s" % (a["method"].split("/")[1] if "/" in a["method"] else a["method"],
                                a["decision"]) for a in entry["approvals"]) or "-",
            entry["exit_code"]))
        if args.no_fixtures:
            continue
        with open(os.path.join(FIXTURES, scen + ".jsonl"), "w") as f:
            for rec in transcript:
                out = {"dir": rec["dir"]}
                if "msg" in rec:
                    out["msg"] = rec["msg"]
                else:
                    out["raw"] = rec["raw"]
                f.write(json.dumps(out, ensure_ascii=False) + "\n")
        meta["scenarios"][scen] = entry
        env = dict(state["env"])
        meta.update({
            "codex_version": version,
            "recorded": datetime.date.today().isoformat(),
            "recorder": "scripts/agents-e2e/record_appserver.py",
            "format": '{"dir":"out"|"in","msg":{...}} per line, "out" = client to server (stdin), '
                      '"in" = server to client (stdout); {"dir":"in","raw":"..."} for a non-JSON stdout line. '
                      "stderr is not recorded.",
            "placeholders": {"$CWD": "the scratch git repository (thread cwd)",
                             "$CODEX_HOME": "CODEX_HOME", "$TMPDIR": "TMPDIR", "$HOME": "HOME",
                             "$WORK": "the per-scenario work folder",
                             "$ROOT": "this repository",
                             "$PORT": "the mock's port (%d)" % PORT},
            "command": ["codex", "app-server"],
            "env": env,
            "params": {
                "initialize": {"clientInfo": CLIENT_INFO, "capabilities": {"experimentalApi": False}},
                "thread/start": s(thread_start_params(saved["paths"]["repo"])),
                "turn/start": s(turn_start_params("<thread id>", saved["paths"]["repo"])),
                "turn/interrupt": {"threadId": "<thread id>", "turnId": "<turn id>"},
                "approval_answer": {"decision": "accept | decline (per scenario)"},
                "unknown_server_request_answer": {"error": {"code": -32601,
                                                            "message": "ralph does not handle <method>"}},
            },
            "scenario_settings": {k: {kk: vv for kk, vv in v.items() if kk != "mock_command"}
                                  for k, v in SCENARIOS.items()},
            "deadlines_s": {"turn": TURN_DEADLINE_S, "after_interrupt": AFTER_INTERRUPT_S,
                            "answer": INIT_DEADLINE_S, "grace_after_turn_completed": GRACE_S,
                            "exit_after_stdin_close": EXIT_DEADLINE_S},
        })
    if not args.no_fixtures:
        meta["scenarios"] = {k: meta["scenarios"][k] for k in ALL if k in meta["scenarios"]}
        with open(meta_path, "w") as f:
            json.dump(meta, f, indent=2, ensure_ascii=False)
            f.write("\n")
        print("wrote %s" % FIXTURES)
    if args.keep:
        print("kept %s" % base)
    else:
        shutil.rmtree(base, ignore_errors=True)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--inner":
        inner(sys.argv[2], sys.argv[3])
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenarios", nargs="*", help=" ".join(ALL))
    p.add_argument("--keep", action="store_true", help="keep the work folders (stderr, mock logs, repo)")
    p.add_argument("--no-fixtures", action="store_true", help="write nothing under tests/fixtures")
    outer(p.parse_args())


if __name__ == "__main__":
    main()
