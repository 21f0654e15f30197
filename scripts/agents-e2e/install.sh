#!/usr/bin/env bash
# Install pinned versions of the agent CLIs into scripts/agents-e2e/.tools/
# (npm --prefix for the Node tools, a Python venv for aider). Nothing global.
#
#   scripts/agents-e2e/install.sh            # every tool
#   scripts/agents-e2e/install.sh claude aider
#
# Change a version here (or with CLAUDE_VERSION=... etc.), re-run, then
# re-record fixtures with run.sh.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
tools="$here/.tools"
mkdir -p "$tools"

CLAUDE_VERSION="${CLAUDE_VERSION:-2.1.331}"
CODEX_VERSION="${CODEX_VERSION:-0.169.0}"
QWEN_VERSION="${QWEN_VERSION:-0.24.4}"
GEMINI_VERSION="${GEMINI_VERSION:-0.61.0}"
OPENCODE_VERSION="${OPENCODE_VERSION:-1.18.33}"
AMP_VERSION="${AMP_VERSION:-0.0.1790142911-g7618fb}"
AIDER_VERSION="${AIDER_VERSION:-0.86.2}"

npm_pkg() {
    case "$1" in
        claude) echo "@anthropic-ai/claude-code@$CLAUDE_VERSION" ;;
        codex) echo "@openai/codex@$CODEX_VERSION" ;;
        qwen) echo "@qwen-code/qwen-code@$QWEN_VERSION" ;;
        gemini) echo "@google/gemini-cli@$GEMINI_VERSION" ;;
        opencode) echo "opencode-ai@$OPENCODE_VERSION" ;;
        amp) echo "@sourcegraph/amp@$AMP_VERSION" ;;
    esac
}

want=("$@")
[ ${#want[@]} -eq 0 ] && want=(claude codex qwen gemini opencode aider amp)

status=0
for tool in "${want[@]}"; do
    log="$tools/install-$tool.log"
    if [ "$tool" = aider ]; then
        echo "== aider-chat==$AIDER_VERSION -> $tools/aider-venv"
        {
            python3 -m venv "$tools/aider-venv" &&
                "$tools/aider-venv/bin/pip" install -q --upgrade pip &&
                "$tools/aider-venv/bin/pip" install -q "aider-chat==$AIDER_VERSION"
        } >"$log" 2>&1
        rc=$?
        mkdir -p "$tools/bin"
        ln -sf "$tools/aider-venv/bin/aider" "$tools/bin/aider"
    else
        pkg="$(npm_pkg "$tool")"
        if [ -z "$pkg" ]; then echo "unknown tool: $tool" >&2; status=1; continue; fi
        # One prefix per tool: their dependency trees never fight.
        echo "== $pkg -> $tools/$tool"
        npm install --prefix "$tools/$tool" --no-audit --no-fund --loglevel=error "$pkg" >"$log" 2>&1
        rc=$?
        mkdir -p "$tools/bin"
        ln -sf "$tools/$tool/node_modules/.bin/$tool" "$tools/bin/$tool"
    fi
    if [ $rc -ne 0 ]; then
        echo "   FAILED (exit $rc), see $log"; tail -5 "$log"; status=1
    else
        v="$(timeout 60 "$tools/bin/$tool" --version 2>&1 | tail -1)"
        echo "   ok: $tool --version -> $v"
        echo "$v" >"$tools/$tool.version"
    fi
done
exit $status
