#!/usr/bin/env python3
"""A scripted model server for the agent CLIs' end-to-end test.

Python standard library only. Binds 127.0.0.1:PORT and speaks just enough of

  * Anthropic Messages      POST /v1/messages (SSE or JSON), /v1/messages/count_tokens
  * OpenAI Responses        POST /v1/responses (SSE or JSON)
  * OpenAI Chat Completions POST /v1/chat/completions (SSE or JSON)
  * Gemini                  POST /v1beta/models/M:generateContent,
                            :streamGenerateContent?alt=sse, :countTokens
  * model lists             GET /v1/models, /v1beta/models, /models

for claude, codex, qwen, gemini, opencode and aider to run one turn.

The scenario is read for every request from the file named by --scenario-file
(when it exists and is not empty), else from $MOCK_SCENARIO, else `success`:

  success       the first turn that offers a shell tool gets one shell tool
                call running COMMAND below; once the request carries that
                call's result, a final text answer "done". Requests without a
                shell tool (titles, summaries, routing) get a short text (or a
                JSON object built from the requested schema). Token usage is
                realistic, with cached tokens (see USAGE).
  auth          401 with the API's error body
  rate_limit    429, `retry-after: 40`, with the API's rate-limit body
  server_error  500 with the API's error body
  hang          accept the request, never answer
  three_tasks   as success, with a command naming its file after the task:
                e2e-$RALPH_TASK_ID.txt (a run of several tasks, each with a
                file of its own)
  session_fix   as success, but the command depends on the thread's turn
                (OpenAI Responses only: the turn starts at the request's last
                user message, and the tool results before it are earlier
                turns'): a thread's first turn writes `broken` to e2e.txt and
                completes the task, a later turn writes `fixed` and completes
                it again. A fresh thread in the second iteration therefore
                writes `broken` again.

  hang_command  the first request offering a shell tool gets a call of
                HANG_COMMAND (sleeps, one of them in the background, one in
                a session of its own); every later request hangs. What a
                runner leaves running when it stops a turn mid-command.

The commands of three_tasks and session_fix go on when `git add`/`git commit`
fail (a sandbox whose .git is read-only): the task is completed anyway and
its runner commits the file.

Every request is appended to --log (JSON lines: time, method, path, a few
headers, the body's top-level keys, the tool names offered, what was
answered); every usage object sent is appended to --usage-log.

    python3 mock_server.py 8765 --log requests.jsonl --usage-log usage.jsonl
"""

import argparse
import gzip
import json
import os
import re
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMMAND = (
    "printf 'done\\n' > e2e.txt && git add e2e.txt && git commit -q -m e2e"
    ' && "$RALPH_BIN" task complete "$RALPH_TASK_ID"'
)
# $MOCK_COMMAND replaces it (debugging: `env > env.txt`).
COMMAND = os.environ.get("MOCK_COMMAND") or COMMAND


def task_command(content, path, message):
    """Writes `content` to `path`, commits it if git lets it, completes the task."""
    return (
        "printf '%s\\n' > %s && { git add %s && git commit -q -m \"%s\""
        " || echo 'git add/commit failed: the runner commits the file'; }"
        ' && "$RALPH_BIN" task complete "$RALPH_TASK_ID"' % (content, path, path, message)
    )


# Runs for five minutes, leaving children that no process group signal
# reaches: a background job, one in a new session, one under nohup.
HANG_COMMAND = ("echo started; sleep 301 & setsid sleep 302 & nohup sleep 303 >/dev/null 2>&1 & sleep 300")

# The shell command of each scenario that succeeds, per turn of its thread
# (the last one repeats). Only session_fix looks at the turn.
COMMANDS = {
    "success": [COMMAND],
    "three_tasks": [task_command("done", '"e2e-$RALPH_TASK_ID.txt"', "e2e $RALPH_TASK_ID")],
    "session_fix": [task_command("broken", "e2e.txt", "e2e: first try"),
                    task_command("fixed", "e2e.txt", "e2e: fix")],
    "hang_command": [HANG_COMMAND],
}
DESCRIPTION = "Write e2e.txt, commit it and mark the task complete"
FINAL_TEXT = "done"

# Token usage per turn, in one neutral form; each API gets its own shape.
#   fresh:       input tokens neither read from nor written to the cache
#   cache_write: input tokens written to the cache (Anthropic only)
#   cache_read:  input tokens read from the cache
#   output:      output tokens, reasoning included
#   reasoning:   of which reasoning
USAGE = {
    "tool_call": {"fresh": 1000, "cache_write": 200, "cache_read": 3000, "output": 40, "reasoning": 8},
    "final": {"fresh": 100, "cache_write": 0, "cache_read": 4200, "output": 5, "reasoning": 0},
    "side": {"fresh": 50, "cache_write": 0, "cache_read": 0, "output": 3, "reasoning": 0},
}

SHELL_NAMES = [
    "Bash", "bash", "shell", "shell_command", "exec_command", "local_shell",
    "run_shell_command", "run_terminal_cmd", "execute_command",
]

ARGS = None
LOCK = threading.Lock()
COUNTER = [0]


def next_id():
    with LOCK:
        COUNTER[0] += 1
        return COUNTER[0]


def scenario():
    path = ARGS.scenario_file if ARGS else None
    if path and os.path.exists(path):
        with open(path) as f:
            value = f.read().strip()
        if value:
            return value
    return os.environ.get("MOCK_SCENARIO", "success")


def append(path, record):
    if not path:
        return
    with LOCK:
        with open(path, "a") as f:
            f.write(json.dumps(record) + "\n")


# ----------------------------------------------------------------------------
# Tools offered by a request: find the shell one, build its arguments.


def tool_list(api, body):
    """(name, json schema or None, kind) of each tool the request offers."""
    out = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if api == "gemini":
            for decl in tool.get("functionDeclarations") or tool.get("function_declarations") or []:
                schema = decl.get("parametersJsonSchema") or decl.get("parameters")
                out.append((decl.get("name"), schema, "function"))
            continue
        if "function" in tool and isinstance(tool["function"], dict):  # chat completions
            fn = tool["function"]
            out.append((fn.get("name"), fn.get("parameters"), "function"))
        elif tool.get("type") == "local_shell":
            out.append(("local_shell", None, "local_shell"))
        else:  # anthropic, responses
            schema = tool.get("input_schema") or tool.get("parameters")
            out.append((tool.get("name") or tool.get("type"), schema, tool.get("type") or "function"))
    return out


def shell_tool(api, body):
    tools = tool_list(api, body)
    by_name = {t[0]: t for t in tools}
    for name in SHELL_NAMES:
        if name in by_name:
            return by_name[name]
    for t in tools:  # anything that looks like a shell
        if t[0] and re.search(r"shell|bash|exec|command|terminal", t[0], re.I):
            return t
    return None


def fill_schema(schema, depth=0):
    """A minimal value matching a JSON schema (required fields only)."""
    if not isinstance(schema, dict) or depth > 6:
        return None
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), t[0] if t else None)
    t = (t or "").lower()
    if t == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        out = {}
        for key in schema.get("required") or []:
            out[key] = fill_schema(props.get(key, {}), depth + 1)
        return out
    if t == "array":
        return []
    if t in ("integer", "number"):
        return 0
    if t == "boolean":
        return False
    return ""


def shell_arguments(tool, command=COMMAND):
    name, schema, kind = tool
    if kind == "local_shell":
        return {"command": ["bash", "-lc", command]}
    props = (schema or {}).get("properties") or {}
    args = fill_schema(schema or {}) or {}
    key = next((k for k in ("command", "cmd", "commands", "script") if k in props), "command")
    ptype = (props.get(key) or {}).get("type")
    if isinstance(ptype, list):
        ptype = next((x for x in ptype if x != "null"), None)
    args[key] = ["bash", "-lc", command] if str(ptype).lower() == "array" else command
    if "description" in props:
        args["description"] = DESCRIPTION
    for k in ("is_background", "run_in_background", "background"):
        if k in props:
            args[k] = False
    return args


def has_tool_result(api, body):
    """Did the request carry the result of a tool call (ours)?"""
    if api == "anthropic":
        for m in body.get("messages") or []:
            content = m.get("content")
            if isinstance(content, list) and any(
                isinstance(c, dict) and c.get("type") == "tool_result" for c in content
            ):
                return True
    elif api == "responses":
        items = body.get("input")
        if isinstance(items, list):
            for it in items:
                if isinstance(it, dict) and it.get("type") in (
                    "function_call_output", "local_shell_call_output", "custom_tool_call_output",
                ):
                    return True
    elif api == "chat":
        for m in body.get("messages") or []:
            if m.get("role") in ("tool", "function"):
                return True
    elif api == "gemini":
        for c in body.get("contents") or []:
            for p in c.get("parts") or []:
                if isinstance(p, dict) and ("functionResponse" in p or "function_response" in p):
                    return True
    return False


RESULT_TYPES = ("function_call_output", "local_shell_call_output", "custom_tool_call_output")


def responses_turn(body):
    """Where a Responses request stands in its thread: its turn starts at the
    last user message; tool results before it belong to earlier turns."""
    items = body.get("input") if isinstance(body.get("input"), list) else []
    users = [i for i, it in enumerate(items) if isinstance(it, dict)
             and it.get("type", "message") == "message" and it.get("role") == "user"]
    results = [i for i, it in enumerate(items) if isinstance(it, dict) and it.get("type") in RESULT_TYPES]
    last_user = users[-1] if users else -1
    return {
        "input_items": len(items),
        "user_messages": len(users),
        "earlier_tool_results": sum(1 for i in results if i < last_user),
        "tool_results_this_turn": sum(1 for i in results if i > last_user),
    }


def pick_command(api, body, scen, shell):
    """The shell command to call now, or None for a text answer."""
    if not shell:
        return None
    commands = COMMANDS.get(scen) or COMMANDS["success"]
    if scen == "session_fix" and api == "responses":
        turn = responses_turn(body)
        if turn["tool_results_this_turn"]:
            return None
        return commands[min(turn["earlier_tool_results"], len(commands) - 1)]
    if has_tool_result(api, body):
        return None
    return commands[0]


def text_for_toolless(api, body):
    """What to say to a request that offers no shell tool."""
    # aider: edits in text. The whole-file and SEARCH/REPLACE formats.
    system = json.dumps(body.get("messages") or body.get("system") or "")[:200000]
    if "SEARCH/REPLACE" in system:
        return "e2e.txt\n```\n<<<<<<< SEARCH\n=======\ndone\n>>>>>>> REPLACE\n```\n"
    if "file listing" in system:
        return "e2e.txt\n```\ndone\n```\n"
    return FINAL_TEXT


def json_reply_for_schema(api, body):
    """A JSON object for requests that ask for structured output, else None."""
    schema = None
    if api == "gemini":
        cfg = body.get("generationConfig") or {}
        if cfg.get("responseMimeType") == "application/json":
            schema = cfg.get("responseJsonSchema") or cfg.get("responseSchema") or {}
    elif api == "chat":
        rf = body.get("response_format") or {}
        if rf.get("type") == "json_schema":
            schema = (rf.get("json_schema") or {}).get("schema") or {}
    elif api == "responses":
        fmt = ((body.get("text") or {}).get("format")) or {}
        if fmt.get("type") == "json_schema":
            schema = fmt.get("schema") or {}
    if schema is None:
        return None
    value = fill_schema(schema) or {}
    props = schema.get("properties") or {}
    if "next_speaker" in props:
        value["next_speaker"] = "user"
    for k, v in props.items():
        if isinstance(v, dict) and v.get("type") == "string" and not v.get("enum") and k in value:
            value[k] = "mock"
    return json.dumps(value)


# ----------------------------------------------------------------------------
# Errors per API.

RETRY_AFTER = "40"


def error_response(api, kind):
    """(status, headers, body) of an error."""
    headers = {"Content-Type": "application/json"}
    if api == "anthropic":
        headers["request-id"] = "req_mock_%d" % next_id()
        if kind == "auth":
            return 401, headers, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
        if kind == "rate_limit":
            headers["retry-after"] = RETRY_AFTER
            headers["anthropic-ratelimit-requests-limit"] = "50"
            headers["anthropic-ratelimit-requests-remaining"] = "0"
            return 429, headers, {"type": "error", "error": {"type": "rate_limit_error", "message": "This request would exceed the rate limit for your organization of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits."}}
        return 500, headers, {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}
    if api == "gemini":
        if kind == "auth":
            return 401, headers, {"error": {"code": 401, "message": "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.", "status": "UNAUTHENTICATED"}}
        if kind == "rate_limit":
            headers["retry-after"] = RETRY_AFTER
            return 429, headers, {"error": {"code": 429, "message": "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. Please retry in 40s.", "status": "RESOURCE_EXHAUSTED", "details": [
                {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests", "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "quotaValue": "2"}]},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "40s"}]}}
        return 500, headers, {"error": {"code": 500, "message": "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting", "status": "INTERNAL"}}
    # OpenAI (responses, chat, models)
    headers["x-request-id"] = "req_mock_%d" % next_id()
    if kind == "auth":
        return 401, headers, {"error": {"message": "Incorrect API key provided: sk-mock***********. You can find your API key at https://platform.openai.com/account/api-keys.", "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}}
    if kind == "rate_limit":
        headers["retry-after"] = RETRY_AFTER
        headers["x-ratelimit-reset-requests"] = "40s"
        return 429, headers, {"error": {"message": "Rate limit reached for mock-model in organization org-mock on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 40s. Visit https://platform.openai.com/account/rate-limits to learn more.", "type": "requests", "param": None, "code": "rate_limit_exceeded"}}
    return 500, headers, {"error": {"message": "The server had an error while processing your request. Sorry about that!", "type": "server_error", "param": None, "code": None}}


# ----------------------------------------------------------------------------
# Usage shapes.


def usage_for(api, turn):
    u = USAGE[turn]
    total_in = u["fresh"] + u["cache_write"] + u["cache_read"]
    if api == "anthropic":
        return {"input_tokens": u["fresh"], "cache_creation_input_tokens": u["cache_write"],
                "cache_read_input_tokens": u["cache_read"], "output_tokens": u["output"],
                "service_tier": "standard"}
    if api == "responses":
        return {"input_tokens": total_in, "input_tokens_details": {"cached_tokens": u["cache_read"]},
                "output_tokens": u["output"], "output_tokens_details": {"reasoning_tokens": u["reasoning"]},
                "total_tokens": total_in + u["output"]}
    if api == "chat":
        return {"prompt_tokens": total_in, "completion_tokens": u["output"], "total_tokens": total_in + u["output"],
                "prompt_tokens_details": {"cached_tokens": u["cache_read"]},
                "completion_tokens_details": {"reasoning_tokens": u["reasoning"]}}
    if api == "gemini":
        return {"promptTokenCount": total_in, "cachedContentTokenCount": u["cache_read"],
                "candidatesTokenCount": u["output"] - u["reasoning"], "thoughtsTokenCount": u["reasoning"],
                "totalTokenCount": total_in + u["output"]}
    return {}


# ----------------------------------------------------------------------------
# The handler.


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "mock-model/1"

    def log_message(self, fmt, *args):  # quiet; we keep our own log
        pass

    # -- plumbing

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                line = self.rfile.readline().strip()
                size = int(line.split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    break
                data += self.rfile.read(size)
                self.rfile.readline()
        else:
            data = self.rfile.read(length) if length else b""
        enc = (self.headers.get("Content-Encoding") or "").lower()
        if enc == "gzip":
            data = gzip.decompress(data)
        elif enc == "deflate":
            data = zlib.decompress(data)
        elif enc == "zstd":
            try:
                import zstandard  # not stdlib; only if present

                data = zstandard.ZstdDecompressor().decompress(data, max_output_size=64 << 20)
            except Exception:
                pass
        return data

    def send_json(self, status, obj, headers=None):
        data = json.dumps(obj).encode()
        self.send_response(status)
        for k, v in (headers or {"Content-Type": "application/json"}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def start_sse(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def sse(self, data, event=None):
        chunk = ""
        if event:
            chunk += "event: %s\n" % event
        chunk += "data: %s\n\n" % (data if isinstance(data, str) else json.dumps(data))
        self.wfile.write(chunk.encode())
        self.wfile.flush()

    # -- dispatch

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_PUT(self):
        self.handle_any("PUT")

    def handle_any(self, method):
        raw = self.read_body() if method != "GET" else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {"_unparsed": raw[:2000].decode("utf-8", "replace")}
        if not isinstance(body, dict):
            body = {"_value": body}
        path = self.path
        bare = path.split("?")[0]
        api = None
        if re.search(r"/messages/count_tokens$", bare):
            api = "anthropic_count"
        elif re.search(r"/messages$", bare):
            api = "anthropic"
        elif re.search(r"/responses$", bare):
            api = "responses"
        elif re.search(r"/chat/completions$", bare):
            api = "chat"
        elif re.search(r":(stream)?[gG]enerateContent$", bare):
            api = "gemini"
        elif re.search(r":countTokens$", bare):
            api = "gemini_count"
        elif re.search(r"/models(/[^/:]+)?$", bare) and method == "GET":
            api = "models"
        scen = scenario()
        shell = shell_tool(api, body) if api in ("anthropic", "responses", "chat", "gemini") else None
        record = {
            "t": round(time.time(), 3), "method": method, "path": path, "api": api, "scenario": scen,
            "headers": {k: v for k, v in self.headers.items() if k.lower() in (
                "user-agent", "content-type", "accept", "anthropic-version", "anthropic-beta",
                "x-stainless-retry-count", "x-stainless-package-version", "openai-beta",
                "content-encoding", "originator", "version", "x-goog-api-client")},
            "auth_header": bool(self.headers.get("Authorization") or self.headers.get("x-api-key")
                                or self.headers.get("x-goog-api-key") or "key=" in path),
            "keys": sorted(body.keys()),
            "model": body.get("model"),
            "stream": body.get("stream"),
            "tools": [t[0] for t in tool_list(api, body)] if api in ("anthropic", "responses", "chat", "gemini") else None,
        }
        if api == "responses":
            record["turn"] = responses_turn(body)
        if ARGS.bodies:
            bdir = ARGS.bodies
            os.makedirs(bdir, exist_ok=True)
            n = next_id()
            record["body_file"] = "%04d.json" % n
            with open(os.path.join(bdir, record["body_file"]), "wb") as f:
                f.write(raw)
        try:
            answer = self.answer(method, api, body, scen, shell, record)
            record["answer"] = answer
        finally:
            append(ARGS.log, record)

    def answer(self, method, api, body, scen, shell, record):
        if api is None:
            # Anything else a CLI asks at start (settings, telemetry, feature flags).
            if scen == "auth":
                status, headers, err = error_response("openai", "auth")
                self.send_json(status, err, headers)
                return "401"
            self.send_json(200, {})
            return "200 {}"
        if api == "models":
            if scen in ("auth",):
                status, headers, err = error_response("gemini" if "v1beta" in self.path else "openai", "auth")
                self.send_json(status, err, headers)
                return str(status)
            ids = ["mock-model", "claude-sonnet-4-5", "gpt-5-codex", "gemini-2.5-pro", "qwen3-coder-plus"]
            self.send_json(200, {
                "object": "list", "has_more": False, "first_id": ids[0], "last_id": ids[-1],
                "data": [{"id": i, "object": "model", "type": "model", "display_name": i, "created": 0,
                          "created_at": "2025-01-01T00:00:00Z", "owned_by": "mock"} for i in ids],
                "models": [{"name": "models/" + i, "displayName": i, "supportedGenerationMethods": [
                    "generateContent", "countTokens"], "inputTokenLimit": 1000000, "outputTokenLimit": 65536}
                    for i in ids],
            })
            return "models"
        if api == "anthropic_count":
            self.send_json(200, {"input_tokens": 4200})
            return "count"
        if api == "gemini_count":
            self.send_json(200, {"totalTokens": 4200})
            return "count"

        if scen == "hang" or (scen == "hang_command" and not pick_command(api, body, scen, shell)):
            time.sleep(10 ** 6)
            return "hang"
        if scen in ("auth", "rate_limit", "server_error"):
            status, headers, err = error_response(api, scen)
            self.send_json(status, err, headers)
            return str(status)

        # success (and the scenarios like it: COMMANDS)
        stream = bool(body.get("stream")) or "streamGenerateContent" in self.path
        command = pick_command(api, body, scen, shell)
        if command:
            turn, call = "tool_call", (shell[0], shell_arguments(shell, command), shell[2])
            text = None
        else:
            turn = "final" if shell else "side"
            call = None
            text = json_reply_for_schema(api, body) or (FINAL_TEXT if shell else text_for_toolless(api, body))
            if text.startswith("e2e.txt"):  # aider's edit: its main turn
                turn = "tool_call"
        usage = usage_for(api, turn)
        append(ARGS.usage_log, {"api": api, "turn": turn, "model": body.get("model"), "usage": usage,
                                "neutral": USAGE[turn]})
        model = body.get("model") or (re.search(r"models/([^:]+):", self.path) or [None, "mock-model"])[1]
        getattr(self, "reply_" + api)(body, stream, model, call, text, usage)
        if call:
            record["command"] = command
        return "%s %s" % (turn, call[0] if call else repr((text or "")[:40]))

    # -- Anthropic Messages

    def reply_anthropic(self, body, stream, model, call, text, usage):
        mid = "msg_mock_%d" % next_id()
        if call:
            block = {"type": "tool_use", "id": "toolu_mock_%d" % next_id(), "name": call[0], "input": call[1]}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": text}
            stop = "end_turn"
        if not stream:
            self.send_json(200, {"id": mid, "type": "message", "role": "assistant", "model": model,
                                 "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage})
            return
        self.start_sse()
        start_usage = dict(usage, output_tokens=1)
        self.sse({"type": "message_start", "message": {"id": mid, "type": "message", "role": "assistant",
                  "model": model, "content": [], "stop_reason": None, "stop_sequence": None,
                  "usage": start_usage}}, "message_start")
        if call:
            self.sse({"type": "content_block_start", "index": 0,
                      "content_block": dict(block, input={})}, "content_block_start")
            args = json.dumps(block["input"])
            half = len(args) // 2
            for part in (args[:half], args[half:]):
                self.sse({"type": "content_block_delta", "index": 0,
                          "delta": {"type": "input_json_delta", "partial_json": part}}, "content_block_delta")
        else:
            self.sse({"type": "content_block_start", "index": 0,
                      "content_block": {"type": "text", "text": ""}}, "content_block_start")
            self.sse({"type": "content_block_delta", "index": 0,
                      "delta": {"type": "text_delta", "text": text}}, "content_block_delta")
        self.sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
        self.sse({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                  "usage": {"input_tokens": usage["input_tokens"],
                            "cache_creation_input_tokens": usage["cache_creation_input_tokens"],
                            "cache_read_input_tokens": usage["cache_read_input_tokens"],
                            "output_tokens": usage["output_tokens"]}}, "message_delta")
        self.sse({"type": "message_stop"}, "message_stop")

    # -- OpenAI Responses

    def reply_responses(self, body, stream, model, call, text, usage):
        rid = "resp_mock_%d" % next_id()
        created = int(time.time())
        if call:
            name, args, kind = call
            if kind == "local_shell":
                item = {"type": "local_shell_call", "id": "lsh_mock_%d" % next_id(), "call_id": "call_mock_%d" % next_id(),
                        "status": "completed", "action": {"type": "exec", "command": args["command"], "env": {}}}
            else:
                item = {"type": "function_call", "id": "fc_mock_%d" % next_id(), "call_id": "call_mock_%d" % next_id(),
                        "name": name, "arguments": json.dumps(args), "status": "completed"}
        else:
            item = {"type": "message", "id": "msg_mock_%d" % next_id(), "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}
        base = {"id": rid, "object": "response", "created_at": created, "model": model, "status": "in_progress",
                "output": [], "usage": None, "error": None, "incomplete_details": None}
        done = dict(base, status="completed", output=[item], usage=usage)
        if not stream:
            self.send_json(200, done)
            return
        self.start_sse()
        seq = [0]

        def ev(obj):
            obj["sequence_number"] = seq[0]
            seq[0] += 1
            self.sse(obj, obj["type"])

        ev({"type": "response.created", "response": base})
        ev({"type": "response.in_progress", "response": base})
        if item["type"] == "message":
            ev({"type": "response.output_item.added", "output_index": 0, "item": dict(item, status="in_progress", content=[])})
            ev({"type": "response.content_part.added", "item_id": item["id"], "output_index": 0, "content_index": 0,
                "part": {"type": "output_text", "text": "", "annotations": []}})
            ev({"type": "response.output_text.delta", "item_id": item["id"], "output_index": 0, "content_index": 0, "delta": text})
            ev({"type": "response.output_text.done", "item_id": item["id"], "output_index": 0, "content_index": 0, "text": text})
            ev({"type": "response.content_part.done", "item_id": item["id"], "output_index": 0, "content_index": 0,
                "part": item["content"][0]})
        elif item["type"] == "function_call":
            ev({"type": "response.output_item.added", "output_index": 0, "item": dict(item, arguments="", status="in_progress")})
            ev({"type": "response.function_call_arguments.delta", "item_id": item["id"], "output_index": 0, "delta": item["arguments"]})
            ev({"type": "response.function_call_arguments.done", "item_id": item["id"], "output_index": 0, "arguments": item["arguments"]})
        else:
            ev({"type": "response.output_item.added", "output_index": 0, "item": item})
        ev({"type": "response.output_item.done", "output_index": 0, "item": item})
        ev({"type": "response.completed", "response": done})

    # -- OpenAI Chat Completions

    def reply_chat(self, body, stream, model, call, text, usage):
        cid = "chatcmpl-mock-%d" % next_id()
        created = int(time.time())
        if call:
            tc = {"id": "call_mock_%d" % next_id(), "type": "function",
                  "function": {"name": call[0], "arguments": json.dumps(call[1])}}
            message = {"role": "assistant", "content": None, "tool_calls": [tc]}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": text}
            finish = "stop"
        if not stream:
            self.send_json(200, {"id": cid, "object": "chat.completion", "created": created, "model": model,
                                 "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                                 "usage": usage, "system_fingerprint": "fp_mock"})
            return
        self.start_sse()

        def chunk(delta, finish_reason=None, with_usage=False, choices=True):
            obj = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                   "system_fingerprint": "fp_mock",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}] if choices else []}
            if with_usage:
                obj["usage"] = usage
            self.sse(obj)

        chunk({"role": "assistant", "content": ""})
        if call:
            args = tc["function"]["arguments"]
            half = len(args) // 2
            chunk({"tool_calls": [{"index": 0, "id": tc["id"], "type": "function",
                                   "function": {"name": call[0], "arguments": args[:half]}}]})
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": args[half:]}}]})
        else:
            chunk({"content": text})
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        chunk({}, finish, with_usage=not include_usage)
        if include_usage:
            chunk(None, with_usage=True, choices=False)
        self.sse("[DONE]")

    # -- Gemini

    def reply_gemini(self, body, stream, model, call, text, usage):
        if call:
            part = {"functionCall": {"name": call[0], "args": call[1]}}
        else:
            part = {"text": text}
        resp = {"candidates": [{"content": {"parts": [part], "role": "model"}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": usage, "modelVersion": model, "responseId": "mock-%d" % next_id()}
        if not stream:
            self.send_json(200, resp)
            return
        self.start_sse()
        self.wfile.write(("data: %s\r\n\r\n" % json.dumps(resp)).encode())
        self.wfile.flush()


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("port", type=int)
    p.add_argument("--log", help="append one JSON line per request")
    p.add_argument("--usage-log", help="append each usage object sent")
    p.add_argument("--bodies", help="folder to save each request body in")
    p.add_argument("--scenario-file", help="file holding the scenario, re-read per request")
    ARGS = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    server.daemon_threads = True
    print("mock model server on 127.0.0.1:%d (scenario %s)" % (ARGS.port, scenario()), file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
