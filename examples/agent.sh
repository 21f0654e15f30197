#!/bin/sh
# A minimal agent for ralph, showing the contract an agent command follows.
#
# Use it with:   ralph run --agent-cmd "/absolute/path/to/examples/agent.sh"
# or in config/ralph.yaml:   agent: { command: "/absolute/path/to/examples/agent.sh" }
# (a relative path is taken from the project folder: copy the script into
# your project, or give its absolute path).
#
# ralph runs this once per iteration, in the project folder, in a fresh
# process of its own process group, on the task's branch. The prompt
# (working.md + the role's file + the task context) arrives on stdin,
# because the command line has neither {prompt} nor {prompt_file}; with
# "examples/agent.sh {prompt_file}" it would get the prompt's path instead.
#
# The environment tells it about the iteration:
#   RALPH_TASK_ID, RALPH_TASK_TITLE   the task
#   RALPH_ROLE                        the role a trigger chose ("" for none)
#   RALPH_ITERATION                   the iteration number in this run
#   RALPH_TASK_ITERATION              iterations on this task, this one included
#   RALPH_BRANCH                      the task branch (checked out; stay on it)
#   RALPH_PROMPT_FILE                 the prompt, saved under .ralph/prompts/
#   RALPH_PROJECT_DIR, RALPH_RUN_ID, RALPH_BIN (ralph itself, also first on PATH)
#
# What ralph looks at afterwards:
#   - the exit code (non-zero is a failed iteration: retried with evidence),
#   - the task's status, set with `ralph task ready|complete|split|block`,
#   - commits on the branch (anything left uncommitted is committed as
#     "ralph: wip <id> iteration <n>").
# Output goes to .ralph/logs/<n>-<task>.log (<n> counts iterations over all runs).
set -eu

prompt=$(cat)   # read the whole prompt; a real agent would act on it
echo "task $RALPH_TASK_ID: $RALPH_TASK_TITLE (role: ${RALPH_ROLE:-none}, ${#prompt} bytes of prompt)"

# Do the work and commit it on the task branch.
mkdir -p notes
printf '%s\n' "$RALPH_TASK_TITLE" > "notes/$RALPH_TASK_ID.md"
git add "notes/$RALPH_TASK_ID.md"
# A retry of the same task (a failed check, say) finds the note committed
# already: commit only what changed, so a second run is not an error.
git diff --cached --quiet || git commit -q -m "note for $RALPH_TASK_ID"

# Tell ralph the task is done: it runs verify.task, squash-merges the
# branch into the base and archives the task.
ralph task complete "$RALPH_TASK_ID"
