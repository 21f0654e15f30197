#!/usr/bin/env bash
# ralph against the shell recipes it replaces, on the same files, in one run.
#
#   scripts/bench.sh            # build --release, generate data, measure all
#   RUNS=9 LOOP_RUNS=5 scripts/bench.sh
#   ONLY="next archive" scripts/bench.sh      # a subset: next archive loop memory
#
# Needs bash, git, jq, grep, /usr/bin/time. Every number is a median of
# RUNS runs (timed with bash's $EPOCHREALTIME, the commands compared taking
# turns); ratios are ralph / recipe from the same run.
# Results go to stdout and to target/bench/results.md.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${RUNS:-7}
LOOP_RUNS=${LOOP_RUNS:-5}
LOOP_TASKS=${LOOP_TASKS:-50}
ONLY=${ONLY:-"next archive loop memory"}
SEED=${SEED:-42}
WORK=${WORK:-$ROOT/target/bench}
if [ -z "${RALPH:-}" ]; then
    (cd "$ROOT" && cargo build --release --quiet)
    RALPH=${CARGO_TARGET_DIR:-$ROOT/target}/release/ralph
fi
RALPH=$(cd "$(dirname "$RALPH")" && pwd)/$(basename "$RALPH")

mkdir -p "$WORK"
RESULTS=$WORK/results.md
: > "$RESULTS"
say() { printf '%s\n' "$*" | tee -a "$RESULTS"; }

# Pinned git identity and no user config, so runs are comparable.
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com

# median MS...: the middle value (mean of the two middle ones when even).
median() {
    printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# time_interleaved PREPARE COMMAND...: the median wall time in ms of each
# COMMAND (run by bash, output discarded), printed in order. The commands
# take turns, run after run, so a machine whose speed drifts (a shared one)
# slows them alike and their ratios hold; the time to start bash (`bash -c
# :`, timed in the same turns) is subtracted from each. PREPARE runs
# untimed before every command; the first round is a warm-up.
time_interleaved() {
    local prepare=$1
    shift
    local commands=(":" "$@") times=() i k start end spawn
    for ((i = -1; i < RUNS; i++)); do
        for k in "${!commands[@]}"; do
            [ -n "$prepare" ] && bash -c "$prepare"
            start=$EPOCHREALTIME
            bash -c "${commands[k]}" > /dev/null 2>&1 || true
            end=$EPOCHREALTIME
            # Microseconds: the clock's digits without its decimal point.
            ((i < 0)) || times[k]+="$((10#${end//[.,]/} - 10#${start//[.,]/})) "
        done
    done
    # shellcheck disable=SC2086 # one number per word
    spawn=$(median ${times[0]})
    for ((k = 1; k < ${#commands[@]}; k++)); do
        # shellcheck disable=SC2086
        awk -v m="$(median ${times[k]})" -v s="$spawn" 'BEGIN { printf "%.3f\n", (m - s) / 1000 }'
    done
}

# gen DIR N WHERE: a project folder with generated task files.
gen() {
    mkdir -p "$1"
    "$RALPH" bench-gen --dir "$1" --tasks "$2" --seed "$SEED" --pending-at "$3"
}

machine() {
    local cpu
    cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || echo unknown)
    say "machine: $cpu, $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo) RAM, $(uname -sr)"
    say "tools: $(git --version), jq $(jq --version), $(grep --version | head -1); commands timed in turns (see time_interleaved)"
    say "ralph: $("$RALPH" --version) ($RALPH); runs per measurement: $RUNS (loop: $LOOP_RUNS)"
    say ""
}

bench_next() {
    say "## 1. Next workable task, 100k tasks"
    say ""
    say "| pending leaf at | file | cat (floor) | ralph task next | grep pipeline | jq | ralph/grep | ralph/jq | ralph/cat |"
    say "|---|---|---|---|---|---|---|---|---|"
    local where dir cat ralph grep jq size
    for where in last middle; do
        dir=$WORK/next-$where
        gen "$dir" 100000 "$where"
        cd "$dir"
        # The three must agree on the task.
        local want got_grep got_jq
        want=$("$RALPH" task next | cut -d' ' -f1)
        got_grep=$(grep '"leaf":true' tasks.jsonl | grep '"status":"pending"' | head -1 | jq -r .id)
        got_jq=$(jq -c 'select(.leaf and .status=="pending")' tasks.jsonl | head -1 | jq -r .id)
        if [ "$want" != "$got_grep" ] || [ "$want" != "$got_jq" ]; then
            echo "disagreement: ralph $want, grep $got_grep, jq $got_jq" >&2
            exit 1
        fi
        size=$(($(wc -c < tasks.jsonl) / 1024 / 1024))
        { read -r cat; read -r ralph; read -r grep; read -r jq; } < <(time_interleaved "" \
            "cat tasks.jsonl > /dev/null" \
            "'$RALPH' task next > /dev/null" \
            "grep '\"leaf\":true' tasks.jsonl | grep '\"status\":\"pending\"' | head -1" \
            "jq -c 'select(.leaf and .status==\"pending\")' tasks.jsonl | head -1")
        say "| $where ($want) | ${size} MiB | $(printf %.1f "$cat") ms | $(printf %.1f "$ralph") ms | $(printf %.1f "$grep") ms | $(printf %.1f "$jq") ms | $(ratio "$ralph" "$grep") | $(ratio "$ralph" "$jq") | $(ratio "$ralph" "$cat") |"
        cd "$ROOT"
    done
    say ""
}

# The seed's archive: grep the line, add fields with jq, append, grep -v.
archive_recipe() {
    cat <<'EOF'
id=$1 sha=$2 now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
line=$(grep -F "\"id\":\"$id\"," tasks.jsonl)
printf '%s\n' "$line" | jq -c --arg t "$now" --arg c "$sha" '. + {status: "complete", completed: $t, commit: $c}' >> tasks-done.jsonl
# (grep -v exits 1 when no line is left: the last task was archived.)
{ grep -vF "\"id\":\"$id\"," tasks.jsonl || [ $? = 1 ]; } > tasks.jsonl.tmp && mv tasks.jsonl.tmp tasks.jsonl
EOF
}

bench_archive() {
    say "## 2. Archive one task out of 100k"
    say ""
    local dir=$WORK/archive
    gen "$dir/orig" 100000 last
    archive_recipe > "$WORK/archive.sh"
    cd "$dir"
    # A leaf in the middle whose parent keeps other children.
    local id sha=0123456789abcdef0123456789abcdef01234567
    id=$(head -n 50003 orig/tasks.jsonl | tail -1 | jq -r .id)
    # `sync`: no command waits for the disk writes of the copy or of the
    # command before it (an fsync in ordered mode can have to).
    local prepare="cp orig/tasks.jsonl tasks.jsonl && : > tasks-done.jsonl && sync"
    # Same outcome from both.
    bash -c "$prepare" && "$RALPH" task archive "$id" --commit "$sha" > /dev/null
    local ralph_lines recipe_lines
    ralph_lines=$(wc -l < tasks.jsonl)
    bash -c "$prepare" && bash "$WORK/archive.sh" "$id" "$sha"
    recipe_lines=$(wc -l < tasks.jsonl)
    if [ "$ralph_lines" != "$recipe_lines" ] || [ "$(wc -l < tasks-done.jsonl)" != 1 ]; then
        echo "archive outcomes differ: $ralph_lines vs $recipe_lines lines" >&2
        exit 1
    fi
    local ralph recipe
    { read -r ralph; read -r recipe; } < <(time_interleaved "$prepare" \
        "'$RALPH' task archive '$id' --commit $sha" \
        "bash '$WORK/archive.sh' '$id' $sha")
    say "| task | ralph task archive | seed recipe (grep, jq, grep -v, mv) | ralph/recipe |"
    say "|---|---|---|---|"
    say "| $id | $(printf %.1f "$ralph") ms | $(printf %.1f "$recipe") ms | $(ratio "$ralph" "$recipe") |"
    say ""
    say "ralph fsyncs the archive and the new tasks.jsonl (and the folder); the recipe does not."
    say ""
    cd "$ROOT"
}

# A repository with 10,000 files and 1,000 commits, made with fast-import.
make_repo() {
    local repo=$1 files=10000 commits=1000 i
    git init -q -b main "$repo"
    {
        printf 'commit refs/heads/main\ncommitter bench <bench@example.com> 1700000000 +0000\ndata 5\nstart\n'
        for ((i = 0; i < files; i++)); do
            printf 'M 100644 inline src/d%02d/f%05d.txt\ndata 12\nfile %05d\n\n' $((i % 100)) "$i" "$i"
        done
        for ((i = 1; i < commits; i++)); do
            printf 'commit refs/heads/main\ncommitter bench <bench@example.com> %d +0000\ndata 9\nchange %02d\n' $((1700000000 + i)) $((i % 100))
            printf 'M 100644 inline src/d%02d/f%05d.txt\ndata 14\nchanged %05d\n\n' $((i % 100)) $((i * 7 % files)) "$i"
        done
    } | git -C "$repo" fast-import --quiet
    git -C "$repo" checkout -q -f main
    (
        cd "$repo"
        "$RALPH" init --agent claude > /dev/null 2>&1
        printf 'tasks.jsonl\ntasks-done.jsonl\n' >> .gitignore
        printf 'pause_between_iterations: 0ms\nretry_backoff: 0ms\n' > config/ralph.yaml
        printf 'notes\n' > notes.txt
        git add -A && git commit -q -m "ralph init"
        "$RALPH" bench-gen --tasks "$LOOP_TASKS" --seed "$SEED" --pending-at all
    )
}

write_agent() {
    # The agent both loops run: edit one file, commit, mark the task complete.
    cat > "$1" <<'EOF'
#!/bin/sh
set -eu
cat > /dev/null
printf '%s\n' "$RALPH_TASK_ID" >> notes.txt
git add notes.txt
git commit -q -m "work on $RALPH_TASK_ID"
jq -c --arg id "$RALPH_TASK_ID" 'if .id == $id then .status = "complete" else . end' tasks.jsonl > tasks.jsonl.agent
mv tasks.jsonl.agent tasks.jsonl
EOF
    chmod +x "$1"
}

write_loop() {
    # The loop with the git CLI and the seed's recipes. Appends the time spent
    # in the agent (ms) to agent-ms.
    cat > "$1" <<'EOF'
#!/usr/bin/env bash
set -euo pipefail
agent=$1 archive=$2
while :; do
    # (grep -m1 ends the pipe early: not a failure.)
    line=$(grep '"leaf":true' tasks.jsonl | grep -m1 -E '"status":"(pending|active)"' || true)
    [ -n "$line" ] || break
    id=$(printf '%s' "$line" | jq -r .id)
    title=$(printf '%s' "$line" | jq -r .title)
    branch="task/$id"
    git checkout -q -b "$branch"
    jq -c --arg id "$id" 'if .id == $id then .status = "active" else . end' tasks.jsonl > tasks.jsonl.tmp
    mv tasks.jsonl.tmp tasks.jsonl
    start=$EPOCHREALTIME
    RALPH_TASK_ID=$id RALPH_TASK_TITLE=$title "$agent" < /dev/null > /dev/null
    end=$EPOCHREALTIME
    awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f\n", (e - s) * 1000 }' >> agent-ms
    status=$(grep -F "\"id\":\"$id\"," tasks.jsonl | jq -r .status)
    [ "$status" = complete ] || { echo "agent did not complete $id" >&2; exit 1; }
    git checkout -q main
    git merge -q --squash "$branch" > /dev/null
    git commit -q -m "[$id] $title" -m "Completes: $id"
    bash "$archive" "$id" "$(git rev-parse HEAD)"
    git branch -q -D "$branch"
done
EOF
    chmod +x "$1"
}

# fresh_copy FROM TO: a copy of the repository, with its index's stat data
# refreshed (a copy has new inode numbers) so neither loop starts by
# rehashing every file; then cd into it.
fresh_copy() {
    rm -rf "$2" && cp -a "$1" "$2"
    cd "$2"
    git update-index -q --refresh || true
}

bench_loop() {
    say "## 3. Loop overhead: $LOOP_TASKS tasks, 10,000 files, 1,000 commits"
    say ""
    local dir=$WORK/loop
    rm -rf "$dir" && mkdir -p "$dir"
    make_repo "$dir/template"
    write_agent "$dir/agent.sh"
    write_loop "$dir/loop.sh"
    archive_recipe > "$dir/archive.sh"
    local i start end walls_r=() walls_b=() agents_r=() agents_b=() wall agent
    for ((i = 0; i < LOOP_RUNS; i++)); do
        # ralph
        fresh_copy "$dir/template" "$dir/run"
        start=$EPOCHREALTIME
        "$RALPH" run --quiet --max-iterations $((LOOP_TASKS + 5)) --agent-cmd "$dir/agent.sh" > /dev/null 2>&1 \
            || { echo "ralph run failed: $(cat .ralph/result.json)" >&2; exit 1; }
        end=$EPOCHREALTIME
        [ "$(wc -l < tasks-done.jsonl)" = "$LOOP_TASKS" ] || { echo "ralph archived $(wc -l < tasks-done.jsonl) tasks" >&2; exit 1; }
        wall=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f", (e - s) * 1000 }')
        agent=$(jq -s '[.[] | select(.phase == "iteration") | .duration_ms] | add' .ralph/events.ndjson)
        walls_r+=("$wall") agents_r+=("$agent")
        # git CLI script
        fresh_copy "$dir/template" "$dir/run"
        start=$EPOCHREALTIME
        "$dir/loop.sh" "$dir/agent.sh" "$dir/archive.sh"
        end=$EPOCHREALTIME
        [ "$(wc -l < tasks-done.jsonl)" = "$LOOP_TASKS" ] || { echo "script archived $(wc -l < tasks-done.jsonl) tasks" >&2; exit 1; }
        wall=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f", (e - s) * 1000 }')
        agent=$(awk '{ s += $1 } END { printf "%.3f", s }' agent-ms)
        walls_b+=("$wall") agents_b+=("$agent")
        cd "$ROOT"
    done
    local wr wb ar ab n=$LOOP_TASKS
    wr=$(median "${walls_r[@]}") wb=$(median "${walls_b[@]}")
    ar=$(median "${agents_r[@]}") ab=$(median "${agents_b[@]}")
    say "| | whole run | per task | agent per task | own share per task |"
    say "|---|---|---|---|---|"
    say "| ralph run | $(printf %.0f "$wr") ms | $(ratio "$wr" "$n") ms | $(ratio "$ar" "$n") ms | $(awk -v w="$wr" -v a="$ar" -v n="$n" 'BEGIN { printf "%.2f", (w - a) / n }') ms |"
    say "| git CLI script | $(printf %.0f "$wb") ms | $(ratio "$wb" "$n") ms | $(ratio "$ab" "$n") ms | $(awk -v w="$wb" -v a="$ab" -v n="$n" 'BEGIN { printf "%.2f", (w - a) / n }') ms |"
    say ""
    say "ralph/script, whole run: $(ratio "$wr" "$wb") (raw ralph runs, ms: ${walls_r[*]}; script: ${walls_b[*]})"
    say ""
}

bench_memory() {
    say "## 4. Peak memory (max RSS)"
    say ""
    say "| tasks | tasks.jsonl | ralph task next | ratio | ralph run --once | ratio |"
    say "|---|---|---|---|---|---|"
    # This agent marks the task with `ralph task complete` ($RALPH_BIN), not
    # jq: /usr/bin/time reports the largest process of the tree, and jq
    # holds a large file in memory many times over.
    local n dir size next run agent=$WORK/mem-agent.sh
    cat > "$agent" <<'EOF'
#!/bin/sh
set -eu
cat > /dev/null
printf '%s\n' "$RALPH_TASK_ID" >> notes.txt
git add notes.txt
git commit -q -m "work on $RALPH_TASK_ID"
"$RALPH_BIN" task complete "$RALPH_TASK_ID" > /dev/null
EOF
    chmod +x "$agent"
    for n in 100000 1000000; do
        dir=$WORK/mem-$n
        rm -rf "$dir" && mkdir -p "$dir" && cd "$dir"
        git init -q -b main .
        "$RALPH" init --agent claude > /dev/null 2>&1
        printf 'tasks.jsonl\ntasks-done.jsonl\n' >> .gitignore
        printf 'pause_between_iterations: 0ms\nretry_backoff: 0ms\n' > config/ralph.yaml
        printf 'notes\n' > notes.txt
        git add -A && git commit -q -m init
        gen "$dir" "$n" last
        size=$(wc -c < tasks.jsonl)
        # (run exits 10 here: the other 99,999 tasks are blocked.)
        /usr/bin/time -f %M -o "$WORK/rss" "$RALPH" task next > /dev/null
        next=$(tail -1 "$WORK/rss")
        /usr/bin/time -f %M -o "$WORK/rss" "$RALPH" run --once --quiet --agent-cmd "$agent" > /dev/null 2>&1 || true
        run=$(tail -1 "$WORK/rss")
        say "| $n | $((size / 1048576)) MiB | $((next / 1024)) MiB | $(ratio $((next * 1024)) "$size") | $((run / 1024)) MiB | $(ratio $((run * 1024)) "$size") |"
        cd "$ROOT"
    done
    say ""
}

machine
for part in $ONLY; do
    "bench_$part"
done
echo "results: $RESULTS" >&2
