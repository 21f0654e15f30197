#!/usr/bin/env bash
# Run `ralph run` with each agent preset against the mock model server, with
# no network but loopback (unshare -n), and record what happened.
#
#   scripts/agents-e2e/run.sh [tool...] [--scenario S]... [--no-fixtures] [--record-only]
#
# --record-only: rerun nothing; rewrite summaries, fixtures and RESULTS.md
# from what out/ holds (after a change to record.py).
# tools:     claude codex codex-app-server qwen gemini opencode aider amp
#            (default: all installed; codex-app-server is the codex install)
# scenarios: success auth rate_limit server_error hang no_credentials
#            (default: all), and for codex-app-server also three_tasks,
#            session_fix, session_timeout, hang_command and hang_command_full
#            (README.md, "The codex-app-server cases")
#
# Needs: the tools installed by install.sh, python3, git, ip, and `unshare -n`
# (root) or `unshare -rn` (user namespaces). ralph: $RALPH_BIN, else
# target/release/ralph, else `ralph` on PATH.
#
# Per case, out/<tool>/<scenario>/ keeps the project, HOME, the mock's
# request log, ralph's output and summary.json. Unless --no-fixtures, the
# agent's log is copied to tests/fixtures/agents/<preset>/<scenario>.log with
# a sidecar .json (not for codex-app-server), and RESULTS.md is rewritten from
# every summary in out/ (keeping the rows of cases not run).
# E2E_AGENT_ENV: more KEY=VALUE words for every case's environment.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tools_dir="$here/.tools"
out="$here/out"
port=8765

# The processes of case $1 still there (procs.py): everything started with
# the case's environment, whose HOME is the case's.
case_processes() {
    python3 "$here/procs.py" "$1"
}

# ---------------------------------------------------------------------------
# Inside the namespace: loopback up, mock started, ralph run.
if [ "${1:-}" = "--inner" ]; then
    work="$2"
    # shellcheck disable=SC1091
    . "$work/case.env"
    ip link set lo up
    if [ "$SCENARIO" != no_credentials ]; then
        echo "$MOCK_SCENARIO" >"$work/mock/scenario"
        python3 "$here/mock_server.py" "$port" --scenario-file "$work/mock/scenario" \
            --log "$work/mock/requests.jsonl" --usage-log "$work/mock/usage.jsonl" \
            --bodies "$work/mock/bodies" 2>"$work/mock/server.err" &
        mock=$!
        for _ in $(seq 50); do
            (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break
            sleep 0.1
        done
    fi
    mapfile -t agent_env <"$work/agent.env"
    # Anything the tool needs before the run (codex login) runs in the same
    # clean environment.
    if [ -s "$work/pre.sh" ]; then
        (cd "$work/project" && env -i "${agent_env[@]}" bash "$work/pre.sh") >"$work/pre.log" 2>&1
    fi
    # One agent run per case (unless the case runs several: ONCE=0): `--once`
    # does not count an iteration that hit a usage limit, so ralph would
    # retry it; `.stop` ends the run after the first iteration whatever its
    # outcome.
    once_arg=""
    watcher=""
    # A case whose model changes after the first iteration (session_timeout:
    # the first turn hangs, the next ones work).
    if [ -n "${SWITCH_TO:-}" ]; then
        (
            while sleep 0.2; do
                if grep -q '"phase":"iteration"' "$work/project/.ralph/events.ndjson" 2>/dev/null; then
                    echo "$SWITCH_TO" >"$work/mock/scenario"
                    break
                fi
            done
        ) &
        switcher=$!
    fi
    if [ "${ONCE:-1}" = 1 ]; then
        once_arg="--once"
        (
            while sleep 0.3; do
                if grep -q '"phase":"iteration"' "$work/project/.ralph/events.ndjson" 2>/dev/null; then
                    touch "$work/project/.stop"
                    break
                fi
            done
        ) &
        watcher=$!
    fi
    # Every process started with the case's clean environment (HOME is the
    # case's), sampled while ralph runs (procs_seen.txt) and after it ended
    # (left_running.txt): nothing of the agent may outlive ralph.
    (while sleep 0.5; do case_processes "$work" >>"$work/procs_seen.txt"; done) &
    sampler=$!
    # What appears in the system's temporary folder meanwhile (system_tmp.txt;
    # another program's files may be among them).
    touch "$work/.started"
    start=$(date +%s)
    # shellcheck disable=SC2086 # RALPH_ARGS is words (--model M)
    (
        cd "$work/project" &&
            env -i "${agent_env[@]}" timeout -k 10 "${OUTER_S:-$((TIMEOUT_S + 90))}" \
                "$RALPH" run --agent "$PRESET" $RALPH_ARGS $once_arg --timeout "${TIMEOUT_S}s"
    ) >"$work/ralph.out" 2>"$work/ralph.err"
    echo $? >"$work/ralph.rc"
    echo $(($(date +%s) - start)) >"$work/seconds"
    kill "$sampler" 2>/dev/null
    wait "$sampler" 2>/dev/null
    sleep 1
    case_processes "$work" >"$work/left_running.txt"
    # Created (not only changed) since the start: birth time, where the file
    # system keeps one (%W is 0 where it does not).
    find /tmp -mindepth 1 -maxdepth 1 -newer "$work/.started" -print0 2>/dev/null |
        xargs -0 -r stat -c '%W %n' 2>/dev/null |
        awk -v t="$(stat -c %Y "$work/.started")" '$1 == 0 || $1 >= t { sub(/^[0-9]+ /, ""); print }' |
        sort >"$work/system_tmp.txt"
    if [ -s "$work/procs_seen.txt" ]; then
        sort -u -o "$work/procs_seen.txt" "$work/procs_seen.txt"
    fi
    # ralph refused before running the agent (codex's login check): run the
    # preset's command line directly, to record what the tool itself says.
    if [ -n "$DIRECT_ARGV" ] && ! ls "$work/project/.ralph/logs/"*.log >/dev/null 2>&1; then
        (cd "$work/project" && env -i "${agent_env[@]}" "$RALPH" prompt) >"$work/direct.prompt" 2>/dev/null
        # shellcheck disable=SC2086
        (
            cd "$work/project" &&
                env -i "${agent_env[@]}" RALPH_BIN="$RALPH" RALPH_TASK_ID=A \
                    timeout -k 5 "$TIMEOUT_S" $DIRECT_ARGV <"$work/direct.prompt"
        ) >"$work/direct.log" 2>&1
        echo $? >"$work/direct.rc"
    fi
    [ -n "$watcher" ] && kill "$watcher" 2>/dev/null
    [ -n "${switcher:-}" ] && kill "$switcher" 2>/dev/null
    [ -n "${mock:-}" ] && kill "$mock" 2>/dev/null
    exit 0
fi

# ---------------------------------------------------------------------------
# Arguments.
all_tools=(claude codex codex-app-server qwen gemini opencode aider amp)
all_scenarios=(success auth rate_limit server_error hang no_credentials)
# codex-app-server's own: several tasks in one run, a task fixed in its thread.
# hang_command(_full): the turn stopped while a command (and children that
# no group signal reaches) runs, in the workspace-write sandbox and without it.
# session_timeout: the task's thread resumed after a turn stopped at the deadline.
appserver_scenarios=(success three_tasks session_fix session_timeout auth rate_limit server_error hang
    hang_command hang_command_full no_credentials)
want_tools=()
want_scen=()
fixtures=1
record_only=0
while [ $# -gt 0 ]; do
    case "$1" in
        --scenario) want_scen+=("$2"); shift 2 ;;
        --scenario=*) want_scen+=("${1#*=}"); shift ;;
        --no-fixtures) fixtures=0; shift ;;
        --record-only) record_only=1; shift ;;
        -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
        *) want_tools+=("$1"); shift ;;
    esac
done
[ ${#want_tools[@]} -eq 0 ] && want_tools=("${all_tools[@]}")
scen_given=1
[ ${#want_scen[@]} -eq 0 ] && { want_scen=("${all_scenarios[@]}"); scen_given=0; }

RALPH="${RALPH_BIN:-}"
[ -z "$RALPH" ] && [ -x "$root/target/release/ralph" ] && RALPH="$root/target/release/ralph"
[ -z "$RALPH" ] && RALPH="$(command -v ralph || true)"
[ -x "$RALPH" ] || { echo "no ralph binary: set RALPH_BIN or build target/release/ralph" >&2; exit 2; }
RALPH="$(cd "$(dirname "$RALPH")" && pwd)/$(basename "$RALPH")"

if [ "$(id -u)" = 0 ]; then unshare=(unshare -n); else unshare=(unshare -rn); fi
"${unshare[@]}" true || { echo "cannot create a network namespace (${unshare[*]})" >&2; exit 2; }

# The installed program a tool runs.
tool_bin() {
    case "$1" in
        codex-app-server) echo codex ;;
        *) echo "$1" ;;
    esac
}

# Time limits (seconds) given to `ralph run --timeout`; $2 the tool.
timeout_for() {
    case "$1" in
        success|three_tasks|session_fix) echo "${E2E_TIMEOUT_SUCCESS:-180}" ;;
        # ralph owns the app-server's deadline: a short one shows it is kept.
        hang|hang_command|hang_command_full|session_timeout)
            if [ "${2:-}" = codex-app-server ]; then echo "${E2E_TIMEOUT_HANG_APPSERVER:-10}"
            else echo "${E2E_TIMEOUT_HANG:-30}"; fi ;;
        no_credentials) echo "${E2E_TIMEOUT_NO_CREDENTIALS:-45}" ;;
        # retry-after is 40 s: a tool that retries once waits 40-90 s.
        rate_limit) echo "${E2E_TIMEOUT_RATE_LIMIT:-200}" ;;
        *) echo "${E2E_TIMEOUT_ERROR:-120}" ;;
    esac
}

# The class the issue says is right for each scenario (null: success).
expected_for() {
    case "$1" in
        success|three_tasks|session_fix) echo null ;;
        auth|no_credentials) echo auth ;;
        rate_limit) echo usage_limit ;;
        server_error) echo exit ;;
        # session_timeout: its first iteration's; the case's checks say the rest.
        hang|hang_command|hang_command_full|session_timeout) echo timeout ;;
    esac
}

# ---------------------------------------------------------------------------
# Per tool: HOME contents, environment, and ralph arguments.
# $1 tool, $2 scenario, $3 work dir. Writes agent.env (KEY=VALUE lines),
# pre.sh, and prints extra `ralph run` arguments.
setup_tool() {
    local tool="$1" scen="$2" work="$3" home="$3/home" base="http://127.0.0.1:$port"
    local creds=1
    [ "$scen" = no_credentials ] && creds=0
    {
        echo "HOME=$home"
        echo "PATH=$tools_dir/bin:/usr/local/bin:/usr/bin:/bin"
        echo "LANG=C.UTF-8"
        echo "TERM=dumb"
        echo "USER=$(id -un)"
        echo "TMPDIR=$work/tmp"
        echo "NO_UPDATE_NOTIFIER=1"
        echo "RALPH_RETRY_BACKOFF=1s"
        echo "RALPH_PAUSE_BETWEEN_ITERATIONS=0s"
        # More variables for every case, KEY=VALUE words (a control run:
        # E2E_AGENT_ENV=RALPH_AGENT_MODE=ralph_fresh).
        local kv
        for kv in ${E2E_AGENT_ENV:-}; do echo "$kv"; done
    } >"$work/agent.env"
    : >"$work/pre.sh"
    local args=""
    case "$tool" in
        claude)
            {
                echo "DISABLE_AUTOUPDATER=1"
                echo "DISABLE_TELEMETRY=1"
                echo "DISABLE_ERROR_REPORTING=1"
                echo "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"
                # One retry, not ten: the final error is the same, the wait is not.
                echo "CLAUDE_CODE_MAX_RETRIES=1"
                if [ $creds = 1 ]; then
                    echo "ANTHROPIC_BASE_URL=$base"
                    echo "ANTHROPIC_API_KEY=sk-ant-api03-mock"
                fi
            } >>"$work/agent.env"
            ;;
        codex|codex-app-server)
            if [ $creds = 1 ]; then
                # codex exec: one retry, not the default four/five (the final
                # error is the same). The app-server: none, so a 429 ends the
                # turn at once instead of after the 40 s retry-after.
                local retries=1
                [ "$tool" = codex-app-server ] && retries=0
                mkdir -p "$home/.codex"
                cat >"$home/.codex/config.toml" <<EOF
model = "mock-model"
model_provider = "mock"

[model_providers.mock]
name = "mock"
base_url = "$base/v1"
env_key = "MOCK_API_KEY"
wire_api = "responses"
request_max_retries = $retries
stream_max_retries = $retries
EOF
                echo "MOCK_API_KEY=sk-mock" >>"$work/agent.env"
                # ralph's preflight for the app-server is codex's login check too.
                echo 'printf sk-mock | codex login --with-api-key' >"$work/pre.sh"
            fi
            ;;
        qwen)
            mkdir -p "$home/.qwen"
            if [ $creds = 1 ]; then
                # maxRetries 1: qwen retries a 429 ten times, 40 s+ apart, silently.
                echo '{"security":{"auth":{"selectedType":"openai"}},"model":{"generationConfig":{"maxRetries":1}},"privacy":{"usageStatisticsEnabled":false}}' \
                    >"$home/.qwen/settings.json"
                {
                    echo "OPENAI_API_KEY=sk-mock"
                    echo "OPENAI_BASE_URL=$base/v1"
                    echo "OPENAI_MODEL=mock-model"
                } >>"$work/agent.env"
            else
                echo '{"privacy":{"usageStatisticsEnabled":false}}' >"$home/.qwen/settings.json"
            fi
            ;;
        gemini)
            mkdir -p "$home/.gemini"
            if [ $creds = 1 ]; then
                echo '{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false},"general":{"disableAutoUpdate":true}}' \
                    >"$home/.gemini/settings.json"
                {
                    echo "GEMINI_API_KEY=mock-key"
                    echo "GOOGLE_GEMINI_BASE_URL=$base"
                    echo "GEMINI_MODEL=gemini-2.5-pro"
                } >>"$work/agent.env"
            else
                echo '{"privacy":{"usageStatisticsEnabled":false},"general":{"disableAutoUpdate":true}}' \
                    >"$home/.gemini/settings.json"
            fi
            ;;
        opencode)
            mkdir -p "$home/.config/opencode"
            echo "OPENCODE_DISABLE_AUTOUPDATE=1" >>"$work/agent.env"
            echo "OPENCODE_DISABLE_MODELS_FETCH=1" >>"$work/agent.env"
            if [ $creds = 1 ]; then
                cat >"$home/.config/opencode/opencode.json" <<EOF
{
  "\$schema": "https://opencode.ai/config.json",
  "autoupdate": false,
  "share": "disabled",
  "model": "mock/mock-model",
  "provider": {
    "mock": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Mock",
      "options": { "baseURL": "$base/v1", "apiKey": "sk-mock" },
      "models": { "mock-model": { "name": "Mock model" } }
    }
  }
}
EOF
            fi
            ;;
        aider)
            if [ $creds = 1 ]; then
                {
                    echo "OPENAI_API_KEY=sk-mock"
                    echo "OPENAI_API_BASE=$base/v1"
                } >>"$work/agent.env"
                args="--model openai/mock-model"
            fi
            ;;
        amp)
            if [ $creds = 1 ]; then
                # amp talks to its own server, not to a model API: point it at
                # the mock anyway to see how it reports the answers it gets.
                {
                    echo "AMP_API_KEY=sgamp_mock"
                    echo "AMP_URL=$base"
                } >>"$work/agent.env"
            fi
            ;;
    esac
    echo "$args"
}

# The preset's command line (src/agent/preset.rs), for a direct run when
# ralph's preflight refuses to start the agent; the prompt goes to stdin.
direct_argv() {
    case "$1" in
        claude) echo "claude -p --output-format stream-json --verbose --dangerously-skip-permissions" ;;
        codex) echo "codex exec --json --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check -" ;;
        # A JSON-RPC server: a prompt on its stdin means nothing to it.
        codex-app-server) echo "" ;;
        opencode) echo "opencode run --format json --auto" ;;
        amp) echo "amp -x write_e2e.txt --stream-json --dangerously-allow-all" ;;
        gemini) echo "gemini -o stream-json --yolo --skip-trust" ;;
        qwen) echo "qwen -o stream-json --yolo" ;;
        aider) echo "aider --message-file /dev/stdin --yes-always --no-pretty --no-stream --no-check-update --analytics-disable --no-show-model-warnings --no-auto-commits" ;;
    esac
}

# ---------------------------------------------------------------------------
run_case() {
    local tool="$1" scen="$2"
    local work="$out/$tool/$scen"
    local t
    t="$(timeout_for "$scen" "$tool")"
    rm -rf "$work"
    mkdir -p "$work/home" "$work/tmp" "$work/mock" "$work/project"
    git config -f "$work/home/.gitconfig" user.name "ralph e2e"
    git config -f "$work/home/.gitconfig" user.email "e2e@example.invalid"
    git config -f "$work/home/.gitconfig" init.defaultBranch main
    local args
    args="$(setup_tool "$tool" "$scen" "$work")"
    (
        cd "$work/project" &&
            HOME="$work/home" git init -q &&
            # In the repository too: gemini runs its shell commands with
            # GIT_CONFIG_GLOBAL=/dev/null, so a global identity is not seen.
            git config user.name "ralph e2e" &&
            git config user.email "e2e@example.invalid" &&
            HOME="$work/home" "$RALPH" init --agent "$tool" >/dev/null &&
            # The mock provider's key (codex's env_key) is no preset's own:
            # a confined agent gets it only when named, as a user would.
            sed -i 's/^  pass_env: \[\]$/  pass_env: [MOCK_API_KEY]/' config/ralph.yaml &&
            grep -q '^  pass_env: \[MOCK_API_KEY\]$' config/ralph.yaml &&
            setup_scenario "$scen" &&
            HOME="$work/home" git add -A &&
            HOME="$work/home" git commit -q -m "ralph init" &&
            add_tasks "$scen" "$work"
    ) || { echo "  setup failed"; return; }
    local once=1 outer=$((t + 90))
    case "$scen" in
        # Several iterations in one run, each ending on its own.
        three_tasks) once=0 args="$args --max-iterations 6" outer=$((3 * t + 90)) ;;
        session_fix) once=0 args="$args --max-iterations 4" outer=$((2 * t + 90)) ;;
        session_timeout) once=0 args="$args --max-iterations 4" outer=$((3 * t + 90)) ;;
    esac
    local switch=""
    [ "$scen" = session_timeout ] && switch=session_fix
    cat >"$work/case.env" <<EOF
TOOL=$tool
PRESET=$tool
SCENARIO=$scen
MOCK_SCENARIO=$(mock_scenario_for "$scen")
TIMEOUT_S=$t
RALPH=$RALPH
RALPH_ARGS="$args"
ONCE=$once
SWITCH_TO=$switch
OUTER_S=$outer
DIRECT_ARGV="$(direct_argv "$tool")${args:+ $args}"
EOF
    printf '  %-16s %-15s ' "$tool" "$scen"
    "${unshare[@]}" "$0" --inner "$work"
    record_case "$tool" "$scen"
}

# The mock's scenario for a case's.
mock_scenario_for() {
    case "$1" in
        hang_command_full) echo hang_command ;;
        session_timeout) echo hang ;;
        *) echo "$1" ;;
    esac
}

# The project's configuration for a scenario (in the project, after `ralph init`).
setup_scenario() {
    case "$1" in
        # The agent's commands run outside any sandbox: ralph alone must end them.
        hang_command_full) sed -i 's/^  server_sandbox: workspace-write$/  server_sandbox: danger-full-access/' config/ralph.yaml &&
            grep -q '^  server_sandbox: danger-full-access$' config/ralph.yaml ;;
        # One thread per task, resumed in the task's next iteration.
        session_fix|session_timeout) sed -i 's/^  mode: ralph_fresh$/  mode: session_loop/' config/ralph.yaml &&
            grep -q '^  mode: session_loop$' config/ralph.yaml ;;
    esac
}

# The queue of a scenario (in the project; $2 the case's folder).
add_tasks() {
    local scen="$1" work="$2" id
    case "$scen" in
        three_tasks)
            for id in A B C; do
                HOME="$work/home" "$RALPH" task add "write e2e-$id.txt" \
                    --body "Create e2e-$id.txt containing the word done, commit it, then run: \"\$RALPH_BIN\" task complete \"\$RALPH_TASK_ID\"" \
                    --verify "grep -qx done e2e-$id.txt" >/dev/null || return 1
            done
            ;;
        session_fix|session_timeout)
            # The mock's first turn writes `broken`: the check fails once.
            HOME="$work/home" "$RALPH" task add "write e2e.txt" \
                --body "Create e2e.txt containing the word fixed, commit it, then run: \"\$RALPH_BIN\" task complete \"\$RALPH_TASK_ID\"" \
                --verify "grep -qx fixed e2e.txt" >/dev/null
            ;;
        *)
            HOME="$work/home" "$RALPH" task add "write e2e.txt" \
                --body "Create e2e.txt containing the word done, commit it, then run: \"\$RALPH_BIN\" task complete \"\$RALPH_TASK_ID\"" >/dev/null
            ;;
    esac
}

# Summary, fixture and sidecar of a case that ran.
record_case() {
    local tool="$1" scen="$2" work="$out/$1/$2"
    local version="" bin fx="$fixtures"
    bin="$(tool_bin "$tool")"
    [ -f "$tools_dir/$bin.version" ] && version="$(cat "$tools_dir/$bin.version")"
    # The app-server's log is ralph's transcript of the protocol, not the
    # tool's own output: no classifier fixture (tests/fixtures/appserver/
    # holds the protocol, recorded by record_appserver.py).
    [ "$tool" = codex-app-server ] && fx=0
    python3 "$here/record.py" case "$work" --tool "$tool" --scenario "$scen" --version "$version" \
        --expected "$(expected_for "$scen")" --root "$root" --fixtures "$fx"
}

mkdir -p "$out"
echo "ralph: $RALPH"
for tool in "${want_tools[@]}"; do
    if [ ! -x "$tools_dir/bin/$(tool_bin "$tool")" ]; then
        echo "  $tool: not installed (scripts/agents-e2e/install.sh $(tool_bin "$tool"))"
        continue
    fi
    scens=("${want_scen[@]}")
    # amp cannot be pointed at a model API: only its auth failures can be seen.
    if [ "$tool" = amp ] && [ "$scen_given" = 0 ]; then scens=(auth no_credentials); fi
    if [ "$tool" = codex-app-server ] && [ "$scen_given" = 0 ]; then scens=("${appserver_scenarios[@]}"); fi
    for scen in "${scens[@]}"; do
        # agent.mode session_loop is the app-server's alone.
        if [[ "$scen" == session_* ]] && [ "$tool" != codex-app-server ]; then
            [ "$scen_given" = 1 ] && printf '  %-16s %-15s skipped: session_loop needs codex-app-server\n' "$tool" "$scen"
            continue
        fi
        if [ "$record_only" = 1 ]; then
            [ -d "$out/$tool/$scen" ] || continue
            printf '  %-16s %-15s ' "$tool" "$scen"
            record_case "$tool" "$scen"
        else
            run_case "$tool" "$scen"
        fi
    done
done
python3 "$here/record.py" results "$out" --output "$here/RESULTS.md" \
    --ralph "${E2E_RALPH_DESC:-$("$RALPH" --version 2>/dev/null | head -1) ($RALPH)}"
echo "wrote $here/RESULTS.md"
