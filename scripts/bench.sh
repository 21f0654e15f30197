#!/usr/bin/env bash
# Benchmarks of ralph against the jq recipes it replaces (targets of issue 14).
#
#   scripts/bench.sh                                  # cargo build --release, measure all parts
#   RALPH=target/release/ralph BEFORE=/tmp/ralph-old scripts/bench.sh   # two binaries, same turns
#   ONLY="next add" SIZES="1000 10000" RUNS=11 WORK=/tmp/bench scripts/bench.sh
#
# Parts (ONLY): next, add, complete (`ralph task ...` at each of SIZES tasks,
# against jq), archive (one task of ARCHIVE_TASKS, against the seed's
# grep/jq recipe), loop (ralph's own time per iteration of `ralph run`, on a
# repository of 1,000 commits and each of LOOP_FILES files, with each agent
# of LOOP_AGENT, next to the time of `git status --porcelain` there),
# parallel (`ralph run --workers N` on PAR_TASKS tasks whose agent sleeps
# PAR_SLEEP seconds, N in PAR_WORKERS: "1 2 4 8"), memory (ralph's peak
# memory while its agent leaves a MEM_SIZE file, "300M", of MEM_DATA bytes,
# "random" or "zero", in each case of MEM_CASES: "leave commit workers
# resume rename", with a final review unless MEM_REVIEW is false; reads
# /proc, so Linux only), top (`ralph top`: one frame, `--once`, of a live
# run with TOP_TASKS tasks, 10000, and TOP_EVENTS events, 5000, read and
# drawn; then `ralph top` in tmux: its CPU over TOP_IDLE seconds, 10, while
# nothing changes, and the time of each frame, from its debug trace, as
# events are appended and as tasks.jsonl is rewritten; needs tmux; reads
# /proc, so Linux only), shared (SHARED_TASKS tasks, 36, whose agent sleeps
# SHARED_SLEEP seconds, 2, worked by each count in SHARED_MACHINES, "1 3",
# of clones with 2 workers each sharing one local bare remote; wall time,
# speed-up, and each machine's time in git fetch and push per task).
# RALPH is the binary under test; BEFORE, when set, is timed too, in the same
# turns, with an after/before column. Other knobs: RUNS (11), LOOP_RUNS (3),
# LOOP_FILES ("1000 10000 100000"), LOOP_AGENT ("commit leave": the agent
# commits its work, or leaves it for ralph to commit), LOOP_TASKS (50, at
# every size: a run at 100,000 files takes 6-19 s), ARCHIVE_TASKS (10000),
# SEED (42), WORK (target/bench).
#
#   ONLY=loop LOOP_FILES="1000 10000" LOOP_AGENT=leave LOOP_RUNS=5 scripts/bench.sh
#
# Method: seeded data (`ralph bench-gen`, src/bench_data.rs). The commands
# compared take turns (cat, ralph, before, jq, cat, ralph, ...), a warm-up
# round then RUNS rounds, each run timed whole, process start to exit, with
# bash's $EPOCHREALTIME; the time to start bash (`bash -c :`, in the same
# turns) is subtracted and every cell is a median. Commands that change the
# file get a fresh copy before each run (untimed, ending in `sync`). Each
# command's outcome is checked once before it is timed. Needs bash, git, jq,
# coreutils and awk. Results go to stdout and to $WORK/results.md.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${RUNS:-11}
LOOP_RUNS=${LOOP_RUNS:-3}
LOOP_TASKS=${LOOP_TASKS:-50}
LOOP_FILES=${LOOP_FILES:-"1000 10000 100000"}
LOOP_AGENT=${LOOP_AGENT:-"commit leave"}
ARCHIVE_TASKS=${ARCHIVE_TASKS:-10000}
ONLY=${ONLY:-"next add complete archive loop parallel memory top shared history"}
SIZES=${SIZES:-"1000 10000 100000"}
SEED=${SEED:-42}
WORK=${WORK:-$ROOT/target/bench}
BEFORE=${BEFORE:-}
TITLE="bench task"
SHA=0123456789abcdef0123456789abcdef01234567
if [ -z "${RALPH:-}" ]; then
    (cd "$ROOT" && cargo build --release --quiet)
    RALPH=${CARGO_TARGET_DIR:-$ROOT/target}/release/ralph
fi
absolute() { printf '%s/%s\n' "$(cd "$(dirname "$1")" && pwd)" "$(basename "$1")"; }
RALPH=$(absolute "$RALPH")
BINS=("$RALPH")
if [ -n "$BEFORE" ]; then
    BEFORE=$(absolute "$BEFORE")
    BINS+=("$BEFORE")
fi

mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
RESULTS=$WORK/results.md
: > "$RESULTS"
say() { printf '%s\n' "$*" | tee -a "$RESULTS"; }
warn() { printf 'bench: %s\n' "$*" >&2; }

# Pinned git identity and no user config, so runs are comparable.
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com

# median NUMBER...: the middle value (mean of the two middle ones when even).
median() {
    printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
ms() { awk -v v="$1" 'BEGIN { printf "%.1f ms", v }'; }
# yes_if CONDITION A B: "yes" when A CONDITION B holds (awk syntax), else "no".
yes_if() { awk -v a="$2" -v b="$3" "BEGIN { print (a $1 b) ? \"yes\" : \"no\" }"; }
# join SEP WORD...: the words with SEP between them.
join() {
    local sep=$1 out=$2
    shift 2
    for word; do out+=$sep$word; done
    printf '%s' "$out"
}
mib() { awk -v b="$(wc -c < "$1")" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

# time_interleaved PREPARE COMMAND...: the median wall time in ms of each
# COMMAND (run by bash in the current folder, output discarded), one a line,
# in order. The commands take turns, run after run, so a machine whose speed
# drifts (a shared one) slows them alike and their ratios hold; the time to
# start bash (`bash -c :`, timed in the same turns) is subtracted from each.
# PREPARE runs untimed before every command; the first round is a warm-up.
time_interleaved() {
    local prepare=$1
    shift
    local commands=(":" "$@") times=() i k start end spawn
    for ((i = -1; i < RUNS; i++)); do
        for k in "${!commands[@]}"; do
            [ -z "$prepare" ] || bash -c "$prepare"
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

# dataset N: the path of a seeded tasks.jsonl of N tasks, one pending leaf
# (the last line), generated once per run.
dataset() {
    local dir=$WORK/data/$1
    if [ ! -f "$dir/tasks.jsonl" ]; then
        mkdir -p "$dir"
        "$RALPH" bench-gen --dir "$dir" --tasks "$1" --seed "$SEED" --pending-at last >&2
        # (To stderr: the caller reads the path from stdout.)
        say "data: $1 tasks, $(mib "$dir/tasks.jsonl"), cksum $(cksum < "$dir/tasks.jsonl" | cut -d' ' -f1)" >&2
        say "" >&2
    fi
    printf '%s\n' "$dir/tasks.jsonl"
}

# workdir NAME N: a fresh folder $WORK/NAME-N holding orig.jsonl (dataset N),
# tasks.jsonl and an empty tasks-done.jsonl; cd into it.
workdir() {
    local orig
    orig=$(dataset "$2")
    rm -rf "${WORK:?}/$1-$2" && mkdir -p "$WORK/$1-$2" && cd "$WORK/$1-$2"
    cp "$orig" orig.jsonl && cp orig.jsonl tasks.jsonl && : > tasks-done.jsonl
}

# The fresh copy before each run of a command that changes the file. `sync`:
# no command waits for the disk writes of the copy or of the command before
# it (an fsync in ordered mode can have to). .ralph/ (the lock, the spare of
# the last write) stays, as it does between two commands in use.
PREPARE="cp orig.jsonl tasks.jsonl && : > tasks-done.jsonl && sync"

# The jq recipes, as a person would write them. Each reads the variables set
# before it (title, id, sha).
next_recipe() {
    cat <<'EOF'
jq -c 'select(.leaf and .status=="pending")' tasks.jsonl | head -1
EOF
}
# Add: one pass of jq for the highest top-level id (letters, A..Z, AA..:
# bijective base 26) plus one, then append the new line. (ralph also counts
# the ids of tasks-done.jsonl, empty here, and validates the whole file.)
add_recipe() {
    cat <<'EOF'
id=$(jq -rn '[inputs | .id | select(contains(".") | not) | reduce explode[] as $c (0; . * 26 + $c - 64)]
    | (max // 0) + 1
    | [recurse(if . > 0 then (. - 1) / 26 | floor else empty end) | select(. > 0) | (. - 1) % 26 + 65]
    | reverse | implode' tasks.jsonl)
jq -nc --arg id "$id" --arg t "$title" '{id: $id, title: $t, status: "pending", leaf: true, created: (now | todate)}' >> tasks.jsonl
EOF
}
complete_recipe() {
    cat <<'EOF'
jq -c --arg id "$id" 'if .id == $id then .status = "complete" else . end' tasks.jsonl > tasks.jsonl.tmp && mv tasks.jsonl.tmp tasks.jsonl
EOF
}
# The seed's archive: grep the line, add fields with jq, append, grep -v, mv.
archive_recipe() {
    cat <<'EOF'
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
line=$(grep -F "\"id\":\"$id\"," tasks.jsonl)
printf '%s\n' "$line" | jq -c --arg t "$now" --arg c "$sha" '. + {status: "complete", completed: $t, commit: $c}' >> tasks-done.jsonl
# (grep -v exits 1 when no line is left: the last task was archived.)
{ grep -vF "\"id\":\"$id\"," tasks.jsonl || [ $? = 1 ]; } > tasks.jsonl.tmp && mv tasks.jsonl.tmp tasks.jsonl
EOF
}

# recipe NAME ID: the recipe's text with its variables set, for bash -c.
recipe() {
    printf "title='%s' id='%s' sha=%s\n" "$TITLE" "$2" "$SHA"
    "${1}_recipe"
}

# status_of ID: the status of ID in tasks.jsonl.
status_of() { jq -r --arg id "$1" 'select(.id == $id) | .status' tasks.jsonl; }

# targets N RALPH_MS JQ_MS: issue 14's targets for a task command at N tasks.
targets() {
    case $1 in
        1000) printf '≤ 10 ms: %s' "$(yes_if '<=' "$2" 10)" ;;
        10000) printf '≤ 25 ms: %s; ≥ 5x faster than jq: %s' "$(yes_if '<=' "$2" 25)" "$(yes_if '>=' "$3" "$(awk -v r="$2" 'BEGIN { print 5 * r }')")" ;;
        100000) printf 'faster than jq: %s' "$(yes_if '<' "$2" "$3")" ;;
        *) printf '(none at this size)' ;;
    esac
}

# header "| a | RALPH | b |": say the table's header, RALPH standing for the
# ralph column (with the before columns when BEFORE is set), and its rule.
header() {
    local cols=ralph line
    [ -z "$BEFORE" ] || cols="ralph | before | ralph/before"
    line=${1/RALPH/$cols}
    say "$line"
    say "$(printf '%s\n' "$line" | awk -F'|' '{ s = "|"; for (i = 2; i < NF; i++) s = s "---|"; print s }')"
}

# ralph_cells RALPH_MS [BEFORE_MS]: the ralph cells of a row.
ralph_cells() {
    if [ -n "$BEFORE" ]; then
        printf '%s | %s | %s' "$(ms "$1")" "$(ms "$2")" "$(ratio "$1" "$2")"
    else
        ms "$1"
    fi
}

# bench_task PART: `ralph task PART` against the jq recipe at each of SIZES.
bench_task() {
    local part=$1 n id bin got want notes=() ok
    for n in $SIZES; do dataset "$n" > /dev/null; done
    say "## ralph task $part, against jq"
    say ""
    case $part in
        next) say "ralph: \`ralph task next\`; jq: \`$(next_recipe)\`. The file is not changed: no fresh copy." ;;
        add) say "ralph: \`ralph task add '$TITLE'\`; jq: the highest top-level id plus one (one jq pass; bijective base 26 in jq), then \`jq -nc ... >> tasks.jsonl\` (see add_recipe in the script). A fresh copy of the file before each run." ;;
        complete) say "ralph: \`ralph task complete ID\` (ID: the one pending leaf, the last line); jq: \`jq -c --arg id ID 'if .id == \$id then .status = \"complete\" else . end' tasks.jsonl > tmp && mv tmp tasks.jsonl\`. A fresh copy of the file before each run." ;;
    esac
    say ""
    header "| tasks | file | cat (floor) | RALPH | jq | jq/ralph | targets (ralph) |"
    for n in $SIZES; do
        workdir "$part" "$n"
        # The one pending leaf: the file's last line.
        id=$(tail -1 orig.jsonl | jq -r .id)
        # Each command's outcome, checked once, with jq reading the result.
        ok=yes
        case $part in
            next)
                want=$(bash -c "$(recipe next "$id")" | jq -r .id)
                for bin in "${BINS[@]}"; do
                    got=$("$bin" task next | cut -d' ' -f1) || got="(failed)"
                    [ "$got" = "$want" ] || { ok=no; notes+=("$n tasks: $bin names $got, jq $want"); }
                done
                ;;
            add)
                bash -c "$PREPARE" && bash -c "$(recipe add "$id")"
                want=$(tail -1 tasks.jsonl | jq -r 'select(.title == "'"$TITLE"'") | .id')
                for bin in "${BINS[@]}"; do
                    bash -c "$PREPARE"
                    got=$("$bin" task add "$TITLE") || got="(failed)"
                    if [ "$got" != "$want" ] || [ "$(jq -r --arg id "$got" 'select(.id == $id) | .title' tasks.jsonl)" != "$TITLE" ] \
                        || [ "$(wc -l < tasks.jsonl)" != $(($(wc -l < orig.jsonl) + 1)) ]; then
                        ok=no
                        notes+=("$n tasks: $bin added $got, jq $want")
                    fi
                done
                ;;
            complete)
                bash -c "$PREPARE" && bash -c "$(recipe complete "$id")"
                [ "$(status_of "$id")" = complete ] || { ok=no; notes+=("$n tasks: jq left $id $(status_of "$id")"); }
                for bin in "${BINS[@]}"; do
                    bash -c "$PREPARE"
                    "$bin" task complete "$id" > /dev/null || true
                    if [ "$(status_of "$id")" != complete ] || [ "$(wc -l < tasks.jsonl)" != "$(wc -l < orig.jsonl)" ]; then
                        ok=no
                        notes+=("$n tasks: $bin left $id $(status_of "$id")")
                    fi
                done
                want=$id
                ;;
        esac
        [ "$ok" = no ] || notes+=("$n tasks: outcomes agree ($part: $want)")
        local prepare=$PREPARE commands=("cat tasks.jsonl > /dev/null")
        [ "$part" != next ] || prepare=""
        for bin in "${BINS[@]}"; do
            case $part in
                next) commands+=("'$bin' task next") ;;
                add) commands+=("'$bin' task add '$TITLE'") ;;
                complete) commands+=("'$bin' task complete '$id'") ;;
            esac
        done
        commands+=("$(recipe "$part" "$id")")
        local t=()
        mapfile -t t < <(time_interleaved "$prepare" "${commands[@]}")
        local cat=${t[0]} ralph=${t[1]} before="" jq=${t[-1]}
        [ -z "$BEFORE" ] || before=${t[2]}
        say "| $n | $(mib orig.jsonl) | $(ms "$cat") | $(ralph_cells "$ralph" "$before") | $(ms "$jq") | $(ratio "$jq" "$ralph")x | $(targets "$n" "$ralph" "$jq") |"
        cd "$ROOT"
    done
    say ""
    say "Checked once per size: $(join '; ' "${notes[@]}")."
    say ""
}

bench_next() { bench_task next; }
bench_add() { bench_task add; }
bench_complete() { bench_task complete; }

bench_archive() {
    local n=$ARCHIVE_TASKS id bin lines want ok=yes notes=()
    dataset "$n" > /dev/null
    say "## ralph task archive, one task of $n"
    say ""
    say "ralph: \`ralph task archive ID --commit SHA\` (ID: a leaf near the middle line); the seed's recipe: grep the line, add fields with jq and append it to tasks-done.jsonl, grep -v the rest into a new file, mv (see archive_recipe in the script). A fresh copy of the files before each run."
    say ""
    workdir archive "$n"
    # A leaf in the middle whose parent keeps other children.
    id=$(head -n $((n / 2 + 3)) orig.jsonl | tail -1 | jq -r .id)
    # Same outcome from all: one line fewer, one line archived.
    want=$(($(wc -l < orig.jsonl) - 1))
    for bin in "${BINS[@]}" recipe; do
        bash -c "$PREPARE"
        if [ "$bin" = recipe ]; then
            bash -c "$(recipe archive "$id")" || true
        else
            "$bin" task archive "$id" --commit "$SHA" > /dev/null || true
        fi
        lines=$(wc -l < tasks.jsonl)
        if [ "$lines" != "$want" ] || [ "$(wc -l < tasks-done.jsonl)" != 1 ] \
            || [ "$(jq -r .id tasks-done.jsonl)" != "$id" ]; then
            ok=no
            notes+=("$bin left $lines lines and $(wc -l < tasks-done.jsonl) archived")
        fi
    done
    [ "$ok" = no ] || notes+=("outcomes agree ($want lines left, $id archived)")
    local commands=("cat tasks.jsonl > /dev/null")
    for bin in "${BINS[@]}"; do
        commands+=("'$bin' task archive '$id' --commit $SHA")
    done
    commands+=("$(recipe archive "$id")")
    local t=()
    mapfile -t t < <(time_interleaved "$PREPARE" "${commands[@]}")
    local cat=${t[0]} ralph=${t[1]} before="" jq=${t[-1]}
    [ -z "$BEFORE" ] || before=${t[2]}
    header "| task | file | cat (floor) | RALPH | seed recipe (grep, jq, grep -v, mv) | recipe/ralph | target (ralph) |"
    say "| $id | $(mib orig.jsonl) | $(ms "$cat") | $(ralph_cells "$ralph" "$before") | $(ms "$jq") | $(ratio "$jq" "$ralph")x | ≤ 30 ms: $(yes_if '<=' "$ralph" 30) |"
    say ""
    say "Checked once: $(join '; ' "${notes[@]}"). ralph fsyncs the archive, the new tasks.jsonl and the folder; the recipe does not."
    say ""
    cd "$ROOT"
}

# make_repo REPO FILES TASKS: a repository of FILES files, 100 a folder
# (src/dNNN/fNNNNNN.txt: src/ holds 1,000 folders at 100,000 files), and
# 1,000 commits, each changing one file; one awk feeding one git
# fast-import, no process per file. Then `ralph init` and TASKS pending
# tasks (tasks.jsonl, ignored by git).
make_repo() {
    local repo=$1 files=$2 tasks=$3
    git init -q -b main "$repo"
    awk -v files="$files" -v commits=1000 'BEGIN {
        dirs = int((files + 99) / 100)
        printf "commit refs/heads/main\ncommitter bench <bench@example.com> 1700000000 +0000\ndata 5\nstart\n"
        for (i = 0; i < files; i++)
            printf "M 100644 inline src/d%03d/f%06d.txt\ndata 12\nfile %06d\n\n", i % dirs, i, i
        for (i = 1; i < commits; i++) {
            f = i * 7 % files
            printf "commit refs/heads/main\ncommitter bench <bench@example.com> %d +0000\ndata 11\nchange %04d\n", 1700000000 + i, i
            printf "M 100644 inline src/d%03d/f%06d.txt\ndata 15\nchanged %06d\n\n", f % dirs, f, i
        }
    }' | git -C "$repo" fast-import --quiet
    git -C "$repo" checkout -q -f main
    (
        cd "$repo"
        "$RALPH" init --agent claude > /dev/null 2>&1
        printf 'tasks.jsonl\ntasks-done.jsonl\n' >> .gitignore
        printf 'pause_between_iterations: 0ms\nretry_backoff: 0ms\n' > config/ralph.yaml
        printf 'notes\n' > notes.txt
        git add -A && git commit -q -m "ralph init"
        "$RALPH" bench-gen --tasks "$tasks" --seed "$SEED" --pending-at all
    )
}

# The second file the `leave` agent edits: in the tree at every size.
LEAVE_FILE=src/d000/f000000.txt

# write_agent PATH: the agent, run as `PATH KIND FILE`. Both kinds append
# to notes.txt and mark the task complete with jq; commit commits, leave
# appends to FILE too and commits nothing (ralph stages and commits the
# leftovers).
write_agent() {
    cat > "$1" <<'EOF'
#!/bin/sh
set -eu
cat > /dev/null
printf '%s\n' "$RALPH_TASK_ID" >> notes.txt
case $1 in
    commit) git add notes.txt && git commit -q -m "work on $RALPH_TASK_ID" ;;
    leave) printf '%s\n' "$RALPH_TASK_ID" >> "$2" ;;
esac
jq -c --arg id "$RALPH_TASK_ID" 'if .id == $id then .status = "complete" else . end' tasks.jsonl > tasks.jsonl.agent
mv tasks.jsonl.agent tasks.jsonl
EOF
    chmod +x "$1"
}

# fresh_copy FROM TO: TO as a fresh copy of the repository FROM (made by
# make_repo), then cd into it. The first time, a whole copy, its index's
# stat data refreshed (a copy has new inode numbers) so the run does not
# start by rehashing every file, and that index kept (TO.index). After that,
# only what a run can change is copied again: .git (with the kept index),
# the top-level entries but src/, and $LEAVE_FILE. Copying 100,000 files
# again takes a minute here, most of it the kernel getting fresh memory for
# the page cache; this takes a second. `git status` then checks the copy
# matches the tree (a whole copy again if not). Ends in `sync`, so the run
# does not wait for the copy's writes.
fresh_copy() {
    if [ -f "$2.index" ] && [ -d "$2/src" ]; then
        find "$2" -mindepth 1 -maxdepth 1 ! -name src -exec rm -rf {} +
        find "$1" -mindepth 1 -maxdepth 1 ! -name src -exec cp -a {} "$2/" \;
        cp -a "$1/$LEAVE_FILE" "$2/$LEAVE_FILE"
        cp -a "$2.index" "$2/.git/index"
        cd "$2"
        git update-index -q --refresh || true
        if [ -z "$(git status --porcelain)" ]; then
            sync
            return
        fi
        warn "$2 differs from $1 once copied again: a whole copy"
        cd /
    fi
    rm -rf "$2" && cp -a "$1" "$2"
    cd "$2"
    git update-index -q --refresh || true
    cp -a .git/index "$2.index"
    sync
}

# loop_target FILES OWN_MS STATUS_MS: the target for ralph's own time per
# iteration at FILES files (issue 32: 60 ms at 10,000 files, one warm
# `git status` at 100,000).
loop_target() {
    local limit
    case $1 in
        100000)
            printf '≤ 1.0 × status = %s ms: %s' "$3" "$(yes_if '<=' "$2" "$3")"
            ;;
        10000) printf '≤ 60 ms: %s' "$(yes_if '<=' "$2" 60)" ;;
        1000) printf '(reported only)' ;;
        *) printf '(none at this size)' ;;
    esac
}

# The loop: ralph's own time per iteration is the whole `ralph run` (process
# start to exit) minus the agent's time (the `duration_ms` of its iteration
# events: spawning the agent, feeding it the prompt and reading its output
# included), divided by the tasks (one iteration each). Per size of
# LOOP_FILES, a template repository; per run, per agent kind of LOOP_AGENT,
# each binary in turn on a fresh copy of it.
bench_loop() {
    local dir=$WORK/loop n=$LOOP_TASKS files kind i b start end wall agent iters t0 made status_ms
    local -a notes=() t=()
    local -A walls agents owns raw
    for kind in $LOOP_AGENT; do
        case $kind in
            commit | leave) ;;
            *) warn "unknown LOOP_AGENT $kind (use: commit leave)" && exit 2 ;;
        esac
    done
    local sizes=()
    read -ra sizes <<< "$LOOP_FILES"
    say "## Loop: ralph's own time per iteration, $n tasks, 1,000 commits, $(join ', ' "${sizes[@]}") files"
    say ""
    say "Own time: the whole \`ralph run\` minus its agent's time (\`duration_ms\` of the iteration events in .ralph/events.ndjson), divided by the $n tasks (one iteration each). Agents: \`commit\` appends to notes.txt, commits, and marks the task complete with jq; \`leave\` appends to notes.txt and $LEAVE_FILE and marks the task complete, committing nothing (ralph stages and commits the leftovers). Each run starts from a fresh copy of the repository (files 100 a folder, made with \`git fast-import\`); the kinds and binaries take turns. git status: \`git status --porcelain\` on a fresh copy, a warm-up then the median of $RUNS, bash start subtracted."
    say ""
    local head="| files | agent | binary | whole run | per task | agent per task | own time per iteration |" rule
    [ -z "$BEFORE" ] || head+=" own, ralph/before |"
    head+=" git status | target (own time) |"
    rule=$(printf '%s\n' "$head" | awk -F'|' '{ s = "|"; for (i = 2; i < NF; i++) s = s "---|"; print s }')
    say "$head"
    say "$rule"
    rm -rf "$dir" && mkdir -p "$dir"
    write_agent "$dir/agent.sh"
    for files in $LOOP_FILES; do
        t0=$EPOCHREALTIME
        make_repo "$dir/template-$files" "$files" "$n"
        made=$(awk -v s="$t0" -v e="$EPOCHREALTIME" 'BEGIN { printf "%.0f", e - s }')
        fresh_copy "$dir/template-$files" "$dir/run-$files"
        mapfile -t t < <(time_interleaved "" "git status --porcelain")
        status_ms=${t[0]}
        cd "$ROOT"
        walls=() agents=() owns=() raw=()
        for ((i = 0; i < LOOP_RUNS; i++)); do
            for kind in $LOOP_AGENT; do
                for b in "${!BINS[@]}"; do
                    fresh_copy "$dir/template-$files" "$dir/run-$files"
                    start=$EPOCHREALTIME
                    if ! "${BINS[b]}" run --quiet --max-iterations $((n + 5)) --agent-cmd "$dir/agent.sh $kind $LEAVE_FILE" > /dev/null 2>&1; then
                        warn "ralph run failed (${BINS[b]}, $files files, $kind): $(cat .ralph/result.json 2> /dev/null)"
                        exit 1
                    fi
                    end=$EPOCHREALTIME
                    # The outcome: every task archived in one iteration, the
                    # agent's lines merged into main.
                    [ "$(wc -l < tasks-done.jsonl)" = "$n" ] || { warn "${BINS[b]} ($files files, $kind) archived $(wc -l < tasks-done.jsonl) of $n tasks"; exit 1; }
                    [ "$(git show main:notes.txt | wc -l)" = $((n + 1)) ] || { warn "${BINS[b]} ($files files, $kind): notes.txt on main lacks lines"; exit 1; }
                    [ "$kind" != leave ] || [ "$(git show "main:$LEAVE_FILE" | wc -l)" = $((n + 1)) ] \
                        || { warn "${BINS[b]} ($files files, leave): $LEAVE_FILE on main lacks lines"; exit 1; }
                    iters=$(jq -s '[.[] | select(.phase == "iteration")] | length' .ralph/events.ndjson)
                    [ "$iters" = "$n" ] || warn "${BINS[b]} ($files files, $kind): $iters iterations for $n tasks"
                    wall=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f", (e - s) * 1000 }')
                    agent=$(jq -s '[.[] | select(.phase == "iteration") | .duration_ms] | add' .ralph/events.ndjson)
                    walls[$kind,$b]+="$wall " agents[$kind,$b]+="$agent "
                    owns[$kind,$b]+="$(awk -v w="$wall" -v a="$agent" -v n="$n" 'BEGIN { printf "%.3f", (w - a) / n }') "
                    raw[$kind,$b]+="$(printf %.0f "$wall") "
                    cd "$ROOT"
                done
            done
        done
        local w a name cells rest own=() raws=()
        for kind in $LOOP_AGENT; do
            for b in "${!BINS[@]}"; do
                # shellcheck disable=SC2086 # one number per word
                own[b]=$(median ${owns[$kind,$b]})
            done
            for b in "${!BINS[@]}"; do
                # shellcheck disable=SC2086
                w=$(median ${walls[$kind,$b]}) a=$(median ${agents[$kind,$b]})
                name=ralph rest=""
                ((b == 0)) || name=before
                cells="$(printf %.0f "$w") ms | $(ratio "$w" "$n") ms | $(ratio "$a" "$n") ms | $(printf %.1f "${own[b]}") ms |"
                if [ -n "$BEFORE" ]; then
                    if ((b == 0)); then rest=" $(ratio "${own[0]}" "${own[1]}") |"; else rest=" |"; fi
                fi
                say "| $files | $kind | $name | $cells$rest $(ms "$status_ms") | $(loop_target "$files" "${own[b]}" "$status_ms") |"
                raws+=("$kind $name ${raw[$kind,$b]% }")
            done
        done
        notes+=("$files files: repository made in ${made} s, the size measured in $(awk -v s="$t0" -v e="$EPOCHREALTIME" 'BEGIN { printf "%.0f", e - s }') s in all; raw whole runs, ms: $(join '; ' "${raws[@]}").")
    done
    say ""
    say "Medians of $LOOP_RUNS runs (own time: the median of each run's own time). $n tasks (LOOP_TASKS) at every size: a run at 100,000 files took 6-19 s when this was written, short enough to keep them all."
    say ""
    for i in "${notes[@]}"; do say "- $i"; done
    say ""
}

# parallel: PAR_TASKS independent tasks, an agent that sleeps PAR_SLEEP
# seconds, commits one file and marks its task complete with `ralph task`;
# `ralph run --workers N` for each N of PAR_WORKERS, on a fresh repository.
# Wall time, speed-up over one worker, and ralph's own CPU per task (user +
# system of ralph and everything it waited for, as /usr/bin/time counts it;
# the agents' shells are a small, equal share at every N).
bench_parallel() {
    local n=${PAR_TASKS:-16} pause=${PAR_SLEEP:-2} workers=${PAR_WORKERS:-"1 2 4 8"}
    local dir=$WORK/parallel agent=$WORK/parallel-agent.sh w i wall user sys cpu base_wall="" base_cpu=""
    printf '%s\n' '#!/bin/sh' 'set -eu' 'cat > /dev/null' "sleep $pause" \
        'printf "%s\n" "$RALPH_TASK_ID" > "$RALPH_TASK_ID.txt"' \
        'git add "$RALPH_TASK_ID.txt" && git commit -q -m "work on $RALPH_TASK_ID"' \
        '"$RALPH_BIN" task complete "$RALPH_TASK_ID" > /dev/null' > "$agent"
    chmod +x "$agent"
    say "## Parallel workers: $n independent tasks, an agent that sleeps ${pause} s and commits one file"
    say ""
    say "Target: speed-up at least 0.8 × N for N up to 8; ralph's own CPU per task at most 1.5 × the single worker's."
    say ""
    say "| workers | wall | speed-up | target | CPU per task | CPU vs 1 worker |"
    say "|---|---|---|---|---|---|"
    for w in $workers; do
        rm -rf "$dir" && mkdir -p "$dir" && cd "$dir"
        git init -q -b main && git config user.name bench && git config user.email bench@example.com
        "$RALPH" init > /dev/null
        for i in $(seq "$n"); do "$RALPH" task add "task $i" > /dev/null; done
        git add -A && git commit -q -m init
        /usr/bin/time -f '%e %U %S' -o "$WORK/parallel.time" \
            env RALPH_PAUSE_BETWEEN_ITERATIONS=0ms "$RALPH" run --quiet --workers "$w" --agent-cmd "$agent" 2> /dev/null \
            || { warn "parallel run with $w workers failed"; exit 1; }
        [ -z "$(jq -c . tasks.jsonl)" ] || { warn "tasks left after $w workers"; exit 1; }
        read -r wall user sys < "$WORK/parallel.time"
        cpu=$(awk -v u="$user" -v s="$sys" -v n="$n" 'BEGIN { printf "%.1f", (u + s) * 1000 / n }')
        [ -n "$base_wall" ] || { base_wall=$wall; base_cpu=$cpu; }
        say "| $w | ${wall} s | $(ratio "$base_wall" "$wall")× | $(yes_if '>=' "$(ratio "$base_wall" "$wall")" "$(awk -v w="$w" 'BEGIN { print 0.8 * w }')") | $cpu ms | $(ratio "$cpu" "$base_cpu")× |"
        cd "$WORK"
    done
    say ""
}

# peak LOG COMMAND...: runs COMMAND (output to LOG), and sets PEAK to its
# own peak resident memory in kB (VmHWM in /proc/PID/status, read every 10
# ms until it exits: a peak in its last 10 ms may be missed), TREE to the
# largest of it and each process it waited for (`/usr/bin/time`'s %M) and
# RC to its exit code. `sh` writes its pid and execs the command, so the
# pid read is the command's.
peak() {
    local log=$1 pid="" hwm
    shift
    rm -f "$log.pid"
    /usr/bin/time -f %M -o "$log.time" sh -c 'echo $$ > "$0.pid" && exec "$@"' "$log" "$@" > "$log" 2>&1 &
    local timer=$!
    PEAK=0
    until [ -s "$log.pid" ] || ! kill -0 "$timer" 2> /dev/null; do sleep 0.005; done
    pid=$(cat "$log.pid" 2> /dev/null || true)
    while [ -n "$pid" ]; do
        # (The status of a process that exited has no VmHWM line.)
        hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2> /dev/null || true)
        [ -n "$hwm" ] || break
        PEAK=$hwm
        sleep 0.01
    done
    RC=0
    wait "$timer" || RC=$?
    TREE=$(tail -1 "$log.time")
}

# mem_agent PATH: the agent of the memory part, run as `PATH CASE`. It
# leaves $RALPH_TASK_ID.bin, MEM_SIZE bytes of /dev/urandom (MEM_DATA
# random) or of /dev/zero, and completes its task; `commit` commits the
# file itself, `rename` deletes old.bin too, `resume` leaves the task
# unfinished and completes it once it finds its file checked out again.
# The final review passes.
mem_agent() {
    cat > "$1" <<'EOF'
#!/bin/sh
set -eu
cat > /dev/null
complete() { "$RALPH_BIN" task complete "$RALPH_TASK_ID" > /dev/null; }
if [ "${RALPH_ROLE:-}" = final-reviewer ]; then complete; exit 0; fi
if [ "$1" = resume ] && [ -e "$RALPH_TASK_ID.bin" ]; then complete; exit 0; fi
source=/dev/urandom
[ "$MEM_DATA" = random ] || source=/dev/zero
head -c "$MEM_SIZE" "$source" > "$RALPH_TASK_ID.bin"
case $1 in
    commit) git add "$RALPH_TASK_ID.bin" && git commit -q -m "data for $RALPH_TASK_ID" ;;
    rename) git rm -q old.bin ;;
    resume) exit 0 ;;
esac
complete
EOF
    chmod +x "$1"
}

# mem_case BIN CASE: one case of the memory part in a fresh project
# ($WORK/memory), checked, with PEAK and TREE (kB) and WALL (s) set; for
# `resume`, the higher peaks of its two runs and the time of both.
mem_case() {
    local bin=$1 kind=$2 dir=$WORK/memory tasks=1 id peaks=0 trees=0 start
    local args=(run --quiet --agent-cmd "$WORK/memory-agent.sh $kind")
    [ "$MEM_REVIEW" = false ] || args+=(--final-review)
    rm -rf "$dir" && mkdir -p "$dir" && cd "$dir"
    git init -q -b main && git config user.name bench && git config user.email bench@example.com
    "$RALPH" init > /dev/null
    [ "$kind" != workers ] || { tasks=2; args+=(--workers 2); }
    for id in $(seq "$tasks"); do "$RALPH" task add "data $id" > /dev/null; done
    [ "$kind" != rename ] || head -c "$MEM_SIZE" /dev/urandom > old.bin
    git add -A && git commit -q -m init
    start=$EPOCHREALTIME
    if [ "$kind" = resume ]; then
        # One iteration leaves the file on the task's branch, a person
        # checks out main, and the next run checks the branch out again.
        peak "$WORK/memory.log" "$bin" "${args[@]}" --max-iterations 1
        [ "$RC" = 10 ] || { warn "memory ($bin, resume): the first run ended $RC: $(cat "$WORK/memory.log")"; exit 1; }
        peaks=$PEAK trees=$TREE
        git checkout -q main
    fi
    peak "$WORK/memory.log" "$bin" "${args[@]}"
    WALL=$(awk -v s="$start" -v e="$EPOCHREALTIME" 'BEGIN { printf "%.1f", e - s }')
    ((PEAK > peaks)) || PEAK=$peaks
    ((TREE > trees)) || TREE=$trees
    [ "$RC" = 0 ] || { warn "memory ($bin, $kind): ralph run ended $RC: $(cat "$WORK/memory.log")"; exit 1; }
    # Every task archived, nothing left uncommitted, each file on main as
    # on disk (the tasks' ids: A, B).
    [ -z "$(jq -c . tasks.jsonl)" ] || { warn "memory ($bin, $kind): tasks left"; exit 1; }
    [ -z "$(git status --porcelain)" ] || { warn "memory ($bin, $kind): left uncommitted: $(git status --porcelain)"; exit 1; }
    for id in $(seq "$tasks" | tr 1-9 A-I); do
        [ "$(git rev-parse "main:$id.bin")" = "$(git hash-object "$id.bin")" ] \
            || { warn "memory ($bin, $kind): $id.bin differs from main's"; exit 1; }
    done
    cd "$ROOT"
}

# mib_of KB: kilobytes (KiB, as /proc and /usr/bin/time count them) as MiB.
mib_of() { awk -v k="$1" 'BEGIN { printf "%.1f MiB", k / 1024 }'; }

# memory: ralph's own peak memory while its agent leaves a large file
# (issue 31: under 50 MB, whatever the agent leaves), in each case of
# MEM_CASES, each binary in turn; and the largest process of the run.
bench_memory() {
    export MEM_SIZE=${MEM_SIZE:-300M} MEM_DATA=${MEM_DATA:-random} RALPH_PAUSE_BETWEEN_ITERATIONS=0ms
    MEM_REVIEW=${MEM_REVIEW:-true}
    local cases=${MEM_CASES:-"leave commit workers resume rename"} kind b what cells tree wall
    local -a peaks=()
    mem_agent "$WORK/memory-agent.sh"
    say "## Memory: ralph's peak with a $MEM_SIZE file ($MEM_DATA bytes) left by its agent"
    say ""
    say "Target: ralph's own peak under 50 MB (48,828 KiB). Own peak: VmHWM of ralph's process (/proc, read every 10 ms). Largest process: the highest peak of ralph and of each process it waited for (\`/usr/bin/time\`): git maps the whole file to hash it (\`update-index\`, the agent's \`git add\`), and the file's pages count as resident. Final review (the run's diff stat, \`--final-review\`): $MEM_REVIEW. Checked: every task archived, the tree clean, each file on main as on disk."
    say ""
    local head="| case | what ralph does with the file | own peak |"
    [ -z "$BEFORE" ] || head+=" before | before/ralph |"
    head+=" under 50 MB | largest process | wall |"
    say "$head"
    say "$(printf '%s\n' "$head" | awk -F'|' '{ s = "|"; for (i = 2; i < NF; i++) s = s "---|"; print s }')"
    for kind in $cases; do
        case $kind in
            leave) what="left uncommitted: staged by git, committed, squashed, archived" ;;
            commit) what="committed by the agent" ;;
            workers) what="two workers, a file each: merged and checked out in the project's folder, the second over a moved base" ;;
            resume) what="checked out again with its task's branch, after a person checked out main" ;;
            rename) what="left beside a tracked file of the same size the agent deletes: rename candidates" ;;
            *) warn "unknown MEM_CASES $kind (use: leave commit workers resume rename)" && exit 2 ;;
        esac
        peaks=() cells=""
        for b in "${!BINS[@]}"; do
            mem_case "${BINS[b]}" "$kind"
            peaks[b]=$PEAK
            cells+=" $(mib_of "$PEAK") |"
            ((b > 0)) || { tree=$TREE wall=$WALL; }
        done
        [ -z "$BEFORE" ] || cells+=" $(ratio "${peaks[1]}" "${peaks[0]}") |"
        say "| $kind | $what |$cells $(yes_if '<' "${peaks[0]}" 48828) | $(mib_of "$tree") | $wall s |"
    done
    say ""
}

# top_project DIR: a project frozen mid-run for `ralph top`: TOP_TASKS
# tasks (bench-gen's), TOP_EVENTS events of one run, a worker's state on
# the first task and its agent's log, and .ralph/lock naming a live
# process (PID), so the frame is a live run's.
top_project() {
    local dir=$1 tasks=${TOP_TASKS:-10000} events=${TOP_EVENTS:-5000} first
    rm -rf "$dir" && mkdir -p "$dir/.ralph/logs"
    cp "$(dataset "$tasks")" "$dir/tasks.jsonl"
    : > "$dir/tasks-done.jsonl"
    first=$(jq -rn 'first(inputs | select(.leaf) | .id)' "$dir/tasks.jsonl")
    awk -v n="$events" -v t="$first" 'BEGIN {
        split("claim iteration verify merge wait", kinds, " ")
        for (i = 1; i <= n; i++) {
            k = kinds[i % 5 + 1]; s = (k == "wait") ? "retry" : "ok"
            printf "{\"timestamp\":\"2026-11-27T10:%02d:%02dZ\",\"run_id\":\"bench\",\"task_id\":\"T%d\",\"iteration\":%d,\"role\":null,\"phase\":\"%s\",\"status\":\"%s\",\"detail\":\"event %d of the bench\",\"duration_ms\":1200,\"input_tokens\":900,\"output_tokens\":80}\n", (i / 60) % 60, i % 60, i % 97, i, k, s, i
        }
    }' > "$dir/.ralph/events.ndjson"
    sleep 3600 &
    PID=$!
    printf '{"pid":%d,"since":"2026-11-27T10:00:00Z","run_id":"bench"}' "$PID" > "$dir/.ralph/lock"
    printf '{"run_id":"bench","current_task":"%s","role":"implementer","phase":"agent","tasks":{"%s":{"iterations":2,"iteration_started":"2026-11-27T10:59:00Z"}}}\n' "$first" "$first" > "$dir/.ralph/state.json"
    seq 1 2000 | sed 's/^/agent line /' > "$dir/.ralph/logs/7-$first.log"
}

# trace_ms FILE FROM TO FIELD...: the median over lines FROM..TO of FILE
# that say `changed=true` of the sum of the FIELDs (`read_ms=1.2`).
trace_ms() {
    local file=$1 from=$2 to=$3
    shift 3
    # shellcheck disable=SC2046 # one number per word
    median $(awk -v from="$from" -v to="$to" -v fields="$*" 'NR >= from && NR <= to && /changed=true/ {
        n = split(fields, want, " "); sum = 0
        for (i = 1; i <= NF; i++) for (k = 1; k <= n; k++)
            if (index($i, want[k] "=") == 1) { split($i, kv, "="); sum += kv[2] }
        print sum
    }' "$file")
}

bench_top() {
    local dir=$WORK/top trace=$WORK/top-trace.log ms pid before after hz idle=${TOP_IDLE:-10} cpu i mark events queue draw
    top_project "$dir"
    say "## ralph top: a live run of $(jq -c . "$dir/tasks.jsonl" | wc -l) tasks and $(wc -l < "$dir/.ralph/events.ndjson") events"
    say ""
    say "Targets: a frame under 20 ms; under 2% of a core while nothing changes."
    say ""
    ms=$(time_interleaved "" "cd '$dir' && '$RALPH' top --once")
    "$RALPH" --dir "$dir" top --once | grep -q "implementer" || { warn "top --once drew no worker"; exit 1; }
    say "| measure | value | target met |"
    say "|---|---|---|"
    say "| \`ralph top --once\`, process start to exit: read every file, make and draw an 80×24 frame | $(ms "$ms") | $(yes_if '<' "$ms" 20) |"
    if ! command -v tmux > /dev/null; then
        warn "no tmux: the live view is not measured"
        kill "$PID" 2> /dev/null || true
        return
    fi
    hz=$(getconf CLK_TCK)
    tmux -f /dev/null -L ralph-bench new-session -d -s top -x 100 -y 30 "cd '$dir' && RALPH_LOG=debug exec '$RALPH' top 2> '$trace'"
    sleep 3
    pid=$(tmux -L ralph-bench display-message -p -t top '#{pane_pid}')
    before=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
    sleep "$idle"
    after=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
    cpu=$(awk -v a="$after" -v b="$before" -v hz="$hz" -v s="$idle" 'BEGIN { printf "%.2f", (a - b) / hz / s * 100 }')
    # Then the run goes on: an event a second, then the queue rewritten.
    mark=$(wc -l < "$trace")
    for i in 1 2 3 4 5 6; do
        tail -1 "$dir/.ralph/events.ndjson" >> "$dir/.ralph/events.ndjson"
        sleep 1.1
    done
    events=$(wc -l < "$trace")
    for i in 1 2 3 4 5; do
        cp "$dir/tasks.jsonl" "$dir/tasks.new" && mv "$dir/tasks.new" "$dir/tasks.jsonl"
        sleep 1.1
    done
    queue=$(wc -l < "$trace")
    tmux -L ralph-bench kill-server
    draw=$(median $(grep -o 'draw_ms=[0-9.]*' "$trace" | cut -d= -f2))
    say "| CPU of \`ralph top\` over ${idle} s with nothing changing | ${cpu}% of a core | $(yes_if '<' "$cpu" 2) |"
    ms=$(trace_ms "$trace" "$mark" "$events" read_ms model_ms)
    say "| a frame after new events: read what was appended, make the frame | $(ms "$ms") | $(yes_if '<' "$ms" 20) |"
    ms=$(trace_ms "$trace" "$events" "$queue" read_ms model_ms)
    say "| a frame after \`tasks.jsonl\` changed: read and check the queue, make its tree and the frame | $(ms "$ms") | $(yes_if '<' "$ms" 20) |"
    say "| drawing a frame to the terminal (100×30, ratatui's diff) | $(ms "$draw") | $(yes_if '<' "$draw" 20) |"
    kill "$PID" 2> /dev/null || true
    say ""
}

# shared_fleet DIR N: a bare remote DIR/remote.git holding a project of
# SHARED_TASKS tasks, and N clones of it, DIR/m1 ... DIR/mN.
shared_fleet() {
    local dir=$1 n=$2 i
    rm -rf "$dir" && mkdir -p "$dir/origin" && cd "$dir/origin"
    git init -q -b main && git config user.name bench && git config user.email bench@example.com
    "$RALPH" init > /dev/null
    for i in $(seq "${SHARED_TASKS:-36}"); do "$RALPH" task add "task $i" > /dev/null; done
    git add -A && git commit -q -m init
    git clone -q --bare . "$dir/remote.git"
    for i in $(seq "$n"); do
        git clone -q "$dir/remote.git" "$dir/m$i"
        git -C "$dir/m$i" config user.name bench && git -C "$dir/m$i" config user.email bench@example.com
    done
    cd "$WORK"
}

bench_shared() {
    local pause=${SHARED_SLEEP:-2} machines=${SHARED_MACHINES:-"1 3"} n=${SHARED_TASKS:-36}
    local heartbeat=${SHARED_HEARTBEAT:-60s}
    local dir=$WORK/shared agent=$WORK/shared-agent.sh m i start wall base_wall="" pids fetch push landed
    printf '%s\n' '#!/bin/sh' 'set -eu' 'cat > /dev/null' "sleep $pause" \
        'printf "%s\n" "$RALPH_TASK_ID" > "$RALPH_TASK_ID.txt"' \
        'git add "$RALPH_TASK_ID.txt" && git commit -q -m "work on $RALPH_TASK_ID"' \
        '"$RALPH_BIN" task complete "$RALPH_TASK_ID" > /dev/null' > "$agent"
    chmod +x "$agent"
    say "## Shared queue: $n tasks, an agent that sleeps ${pause} s, machines of 2 workers each sharing a local bare remote"
    say ""
    say "Target: three machines at least 2.4× one machine's speed (0.8 per machine). Each machine is a clone on this host running \`ralph run --remote --workers 2\` with remote.heartbeat $heartbeat (60s is the default); fetch and push are each machine's time in \`git fetch\` and \`git push\` (claims, beats, landings), per task it landed."
    say ""
    say "| machines | wall | speed-up | target | fetch per task | push per task |"
    say "|---|---|---|---|---|---|"
    for m in $machines; do
        shared_fleet "$dir" "$m"
        start=$EPOCHREALTIME
        pids=""
        for i in $(seq "$m"); do
            (cd "$dir/m$i" && RALPH_LOG=debug RALPH_PAUSE_BETWEEN_ITERATIONS=0ms RALPH_REMOTE_HEARTBEAT=$heartbeat \
                "$RALPH" run --quiet --remote --workers 2 --agent-cmd "$agent" 2> "$dir/m$i.trace") &
            pids="$pids $!"
        done
        for i in $pids; do wait "$i" || { warn "a machine of $m failed (see $dir/m*.trace)"; exit 1; }; done
        wall=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
        landed=$(git -C "$dir/remote.git" show main:tasks-done.jsonl | wc -l)
        [ "$landed" -eq "$n" ] || { warn "$landed of $n tasks landed with $m machines"; exit 1; }
        # Each machine's time in git fetch and push, per task it landed.
        fetch="" push=""
        for i in $(seq "$m"); do
            local tasks_here sum_fetch sum_push
            tasks_here=$(grep -c '"phase":"merge"' "$dir/m$i/.ralph/events.ndjson" || true)
            sum_fetch=$(awk '/op="fetch"/ && /done/ { for (i = 1; i <= NF; i++) if ($i ~ /^duration_ms=/) { split($i, kv, "="); sum += kv[2] } } END { print sum + 0 }' "$dir/m$i.trace")
            sum_push=$(awk '/op="push"/ && /done/ { for (i = 1; i <= NF; i++) if ($i ~ /^duration_ms=/) { split($i, kv, "="); sum += kv[2] } } END { print sum + 0 }' "$dir/m$i.trace")
            fetch="$fetch${fetch:+, }m$i $(awk -v s="$sum_fetch" -v n="$tasks_here" 'BEGIN { printf "%.0f ms", (n ? s / n : 0) }')"
            push="$push${push:+, }m$i $(awk -v s="$sum_push" -v n="$tasks_here" 'BEGIN { printf "%.0f ms", (n ? s / n : 0) }') ($tasks_here tasks)"
        done
        [ -n "$base_wall" ] || base_wall=$wall
        say "| $m | ${wall} s | $(ratio "$base_wall" "$wall")× | $(yes_if '>=' "$(ratio "$base_wall" "$wall")" "$(awk -v m="$m" 'BEGIN { print 0.8 * m }')") | $fetch | $push |"
    done
    say ""
}

# history_log N: N events of a week of looks, as a polling run writes them.
history_log() {
    awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "{\"timestamp\":\"2026-12-01T00:00:00Z\",\"run_id\":\"r\",\"task_id\":null,\"iteration\":%d,\"role\":null,\"phase\":\"run\",\"status\":\"idle\",\"detail\":\"no workable task left; looking again every 30s\"}\n", i }'
}

bench_history() {
    local n dir ms small=""
    say "## A long history: \`ralph status\` with 200 and 200,000 events"
    say ""
    say "Target: the same cost with 200,000 events (about 50 MiB of events.ndjson) as with 200: status reads the log's last 256 KiB only, and retention_days (30) keeps the log to weeks. Median of $RUNS."
    say ""
    say "| events | events.ndjson | ralph status | target |"
    say "|---|---|---|---|"
    for n in 200 200000; do
        dir=$WORK/history-$n
        rm -rf "$dir" && mkdir -p "$dir" && cd "$dir"
        git init -q -b main && git config user.name bench && git config user.email bench@example.com
        "$RALPH" init > /dev/null && git add -A && git commit -q -m init
        mkdir -p .ralph && history_log "$n" > .ralph/events.ndjson
        ms=$(time_interleaved "" "'$RALPH' status")
        [ -n "$small" ] || small=$ms
        say "| $n | $(mib .ralph/events.ndjson) | $(ms "$ms") | $(yes_if '<' "$ms" "$(awk -v s="$small" 'BEGIN { print s * 1.5 + 2 }')") |"
        cd "$WORK"
    done
    say ""
}

machine() {
    local cpu
    cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || echo unknown)
    say "# ralph benchmarks ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
    say ""
    say "machine: $cpu, $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo) RAM, $(uname -sr), load $(cut -d' ' -f1-3 /proc/loadavg)"
    say "tools: $(git --version), $(jq --version), $(bash --version | head -1 | sed 's/ (.*//')"
    say "ralph: $("$RALPH" --version) ($RALPH, cksum $(cksum < "$RALPH" | cut -d' ' -f1))"
    [ -z "$BEFORE" ] || say "before: $("$BEFORE" --version) ($BEFORE, cksum $(cksum < "$BEFORE" | cut -d' ' -f1))"
    say "runs per cell: median of $RUNS (loop: $LOOP_RUNS), commands timed in turns, bash start subtracted; seed $SEED"
    say ""
}

machine
for part in $ONLY; do
    case $part in
        next | add | complete | archive | loop | parallel | memory | top | shared | history) "bench_$part" ;;
        *) warn "unknown part $part (use: next add complete archive loop parallel memory top shared history)" && exit 2 ;;
    esac
done
echo "results: $RESULTS" >&2
