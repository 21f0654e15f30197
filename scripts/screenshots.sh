#!/usr/bin/env bash
# Makes docs/images/top.png and docs/images/report.png with the tests'
# own commands: `ralph top` in tmux beside a scripted run of three tasks,
# one failing once (the pane drawn by headless Chromium), then that run's
# `ralph report` page rendered by headless Chromium. Needs tmux and
# chromium, as .ci/run installs them.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p docs/images
export RALPH_SCREENSHOTS="$PWD/docs/images"
export RALPH_TEST_REQUIRE_TOOLS=1
cargo test --test it -- --exact \
    top::in_a_real_terminal_it_follows_a_run_and_q_restores_the_terminal
ls -l docs/images
