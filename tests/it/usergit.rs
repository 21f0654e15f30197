//! ralph's commits made the way the user's own git makes them: hooks,
//! signing, clean/smudge filters, LFS, sparse checkouts, submodules, locks
//! and an agent's unfinished merge, each in a real repository with the real
//! tool (docs/GIT.md).

use std::path::Path;

use crate::support::{TestProject, Tool, skip_without};

/// Writes an executable hook `name` into the project's `.git/hooks/`.
fn hook(project: &TestProject, name: &str, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    let path = project.path().join(".git/hooks").join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn one_task(title: &str) -> TestProject {
    TestProject::new()
        .task(&format!(
            r#"{{"id":"A","title":"{title}","status":"pending","leaf":true}}"#
        ))
        .git_init()
}

/// `ralph run` with the fake agent and `name=value` in its environment.
fn run_with(
    project: &TestProject,
    name: &str,
    value: impl AsRef<std::ffi::OsStr>,
) -> crate::support::Run {
    let mut command = project.run_command(&[]);
    command.env(name, value);
    crate::support::finish(command, 60)
}

/// An agent that leaves its work, completes the task, and takes `lock`
/// (relative to the project) on its way out, as another git process
/// would: released 1.5 s later by a holder in a session of its own
/// (ralph stops the agent's group), started before the agent ends.
fn agent_leaving_a_lock_held(project: &TestProject, work: &str, lock: &str) {
    project.script(
        "agent.sh",
        &format!(
            "{work}\nralph task complete A > /dev/null\ntouch {lock}\nsetsid sh -c 'touch .git/held; sleep 1.5; rm -f {lock}' > /dev/null 2>&1 &\nuntil [ -f .git/held ]; do sleep 0.01; done\n"
        ),
    );
}

/// git-lfs set up in the project, tracking `*.bin`.
fn with_lfs(project: &TestProject) {
    project.git(&["lfs", "install", "--local"]);
    project.git(&["lfs", "track", "*.bin"]);
    project.git(&["add", ".gitattributes"]);
    project.git(&["commit", "-q", "-m", "track binaries with LFS"]);
}

/// An agent that leaves 100 kB in big.bin uncommitted and completes.
const AGENT_WRITING_BIG_BIN: &str =
    "head -c 100000 /dev/zero | tr '\\0' x > big.bin\nralph task complete A > /dev/null\n";

/// `phase/status` of each event about task A that is not `ok`.
fn failure_classes(project: &TestProject) -> Vec<String> {
    let mut phases = crate::support::phases(project, "A");
    // The failures, not what went well nor the waits before each retry.
    phases.retain(|phase| !phase.ends_with("/ok") && !phase.starts_with("wait/"));
    phases
}

#[test]
fn a_pre_commit_hook_that_refuses_the_squash_fails_the_task_with_its_output() {
    let project = one_task("feature");
    // The team's lint: no file named bad.txt reaches a commit.
    hook(
        &project,
        "pre-commit",
        "if git diff --cached --name-only | grep -q '^bad.txt$'; then\n  echo 'lint: bad.txt is not allowed' >&2\n  exit 1\nfi\n",
    );
    project.script(
        "agent.sh",
        r#"case "$RALPH_TASK_ITERATION" in
1) work bad.txt oops ;;
*) git rm -q bad.txt && work good.txt fine ;;
esac
ralph task complete A > /dev/null
"#,
    );
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.calls().len(), 2);
    // The second iteration was told why, in the hook's own words.
    let prompt = project.read(".ralph/prompts/2-A.md");
    assert!(prompt.contains("lint: bad.txt is not allowed"), "{prompt}");
    assert!(prompt.contains("hook_rejected"), "{prompt}");
    assert_eq!(failure_classes(&project), ["finish/hook_rejected"]);
    // The base never had bad.txt; one squash landed, with the archive.
    assert_eq!(
        project.git(&["log", "main", "--format=%s"]),
        "[A] feature\ninitial commit"
    );
    let files = project.git(&["ls-tree", "--name-only", "main"]);
    assert!(
        files.contains("good.txt") && !files.contains("bad.txt"),
        "{files}"
    );
    assert!(
        project
            .git(&["show", "main:tasks-done.jsonl"])
            .contains(r#""id":"A""#)
    );
    assert_eq!(project.git(&["status", "--porcelain"]), "");
}

/// A hook that refuses every commit: the task fails until it is blocked,
/// and the blocked task's bookkeeping commit, refused too, stops the run
/// with the hook's words; nothing reached the base.
#[test]
fn a_hook_that_refuses_every_commit_blocks_the_task_and_stops_the_run() {
    let project = one_task("feature");
    hook(
        &project,
        "pre-commit",
        "echo 'frozen: no commits this week' >&2\nexit 1\n",
    );
    // Uncommitted work: ralph's wip commits skip the hook.
    project.script(
        "agent.sh",
        "echo w >> w.txt\nralph task complete A > /dev/null\n",
    );
    let main_before = project.git(&["rev-parse", "main"]);
    let run = project.run(&[]);
    assert_eq!(run.code, 20, "{run:#?}");
    assert_eq!(project.calls().len(), 3);
    assert!(
        run.stderr.contains(
            "error: a git hook rejected the commit \"ralph: A blocked\": frozen: no commits this week\nhint: ralph's bookkeeping commits carry only tasks.jsonl and tasks-done.jsonl"
        ),
        "{run:#?}"
    );
    assert_eq!(project.git(&["rev-parse", "main"]), main_before);
    assert_eq!(project.json_lines("tasks.jsonl")[0]["status"], "blocked");
    assert_eq!(
        failure_classes(&project),
        [
            "finish/hook_rejected",
            "finish/hook_rejected",
            "finish/hook_rejected",
            "block/blocked"
        ]
    );
}

/// A hook that writes a file the repository does not ignore, here a
/// post-commit log: the squash it ran in lands, and the run stops before
/// the next task with the files and the way out (nothing claimed).
#[test]
fn a_hook_that_writes_files_into_the_tree_stops_the_run_naming_them() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"one","status":"pending","leaf":true}"#)
        .task(r#"{"id":"B","title":"two","status":"pending","leaf":true}"#)
        .git_init()
        .agent(
            "work \"$RALPH_TASK_ID.txt\" x\nralph task complete \"$RALPH_TASK_ID\" > /dev/null\n",
        );
    hook(&project, "post-commit", "date >> post-commit.log\n");
    let run = project.run(&[]);
    assert_eq!(run.code, 30, "{run:#?}");
    assert!(
        run.stderr.ends_with(
            "error: a git hook wrote post-commit.log while git committed the squash of A; the next task needs a clean tree\nhint: A is merged and archived; commit those files, or keep them out of commits (`git rm --cached` them if a commit took them, and list them in .gitignore), then run again\n"
        ),
        "{run:#?}"
    );
    assert_eq!(
        project.git(&["log", "-1", "--format=%s", "main"]),
        "[A] one"
    );
    assert_eq!(project.json_lines("tasks-done.jsonl")[0]["id"], "A");
    assert_eq!(project.json_lines("tasks.jsonl")[0]["status"], "pending");
    assert_eq!(project.git(&["branch", "--list", "task/B*"]), "");
    assert_eq!(project.calls(), ["1 A 1 none"]);
    // The agent's own commit ran the hook too, so A's work holds the log:
    // untracked and ignored, as the hint says, and the next run goes on.
    std::fs::write(
        project.path().join(".git/info/exclude"),
        "post-commit.log\n",
    )
    .unwrap();
    project.git(&["rm", "-q", "--cached", "post-commit.log"]);
    project.git(&["commit", "-q", "-m", "untrack the hook's log"]);
    let again = project.run(&[]);
    assert_eq!(again.code, 0, "{again:#?}");
    assert_eq!(
        project.git(&["log", "-1", "--format=%s", "main"]),
        "[B] two"
    );
}

#[test]
fn a_hook_under_core_hooks_path_is_run_and_leftover_commits_skip_it() {
    let project = one_task("feature");
    std::fs::create_dir_all(project.path().join("hooks")).unwrap();
    let hook_file = project.path().join("hooks/pre-commit");
    std::fs::write(
        &hook_file,
        "#!/bin/sh\necho \"pre-commit ran on $(git symbolic-ref --short HEAD)\" >> \"$HOOK_LOG\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook_file, std::fs::Permissions::from_mode(0o755)).unwrap();
    project.git(&["add", "hooks"]);
    project.git(&["commit", "-q", "-m", "hooks"]);
    project.git(&["config", "core.hooksPath", "hooks"]);
    // The agent leaves its work uncommitted: ralph's wip commit takes it.
    project.script(
        "agent.sh",
        "echo work > work.txt\nralph task complete A > /dev/null\n",
    );
    let log = project.aux().join("hook.log");
    let run = run_with(&project, "HOOK_LOG", &log);
    assert_eq!(run.code, 0, "{run:#?}");
    // Run once, for the squash on main; never for the wip commit.
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "pre-commit ran on main\n"
    );
    assert_eq!(
        project.git(&["log", "--format=%s", "refs/ralph/tasks/A", "-1"]),
        "ralph: wip A iteration 1"
    );
}

#[test]
fn a_commit_msg_hook_rewrites_the_squash_message_and_the_archive_joins_it() {
    let project = one_task("feature");
    hook(
        &project,
        "commit-msg",
        "printf '\\nChange-Id: I0123456789\\n' >> \"$1\"\n",
    );
    project.script(
        "agent.sh",
        "work x.txt x\nralph task complete A > /dev/null\n",
    );
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    let message = project.git(&["log", "-1", "--format=%B", "main"]);
    assert!(message.starts_with("[A] feature\n"), "{message}");
    assert!(message.contains("Change-Id: I0123456789"), "{message}");
    assert_eq!(message.matches("Completes: A").count(), 1, "{message}");
    // One commit for the task, holding its archive record.
    assert_eq!(
        project.git(&["log", "main", "--format=%s"]),
        "[A] feature\ninitial commit"
    );
    assert!(
        project
            .git(&["show", "main:tasks-done.jsonl"])
            .contains(r#""id":"A""#)
    );
    assert_eq!(project.git(&["status", "--porcelain"]), "");
}

/// A rot13 clean/smudge filter, as git-crypt sets one up: the repository
/// holds the filtered bytes, the working tree the plain ones.
fn with_rot13(project: &TestProject) {
    let rot13 = "tr A-Za-z N-ZA-Mn-za-m";
    project.git(&["config", "filter.rot13.clean", rot13]);
    project.git(&["config", "filter.rot13.smudge", rot13]);
    project.git(&["config", "filter.rot13.required", "true"]);
    std::fs::write(
        project.path().join(".gitattributes"),
        "secret/** filter=rot13\n",
    )
    .unwrap();
    project.git(&["add", ".gitattributes"]);
    project.git(&["commit", "-q", "-m", "filter secrets"]);
}

#[test]
fn a_clean_filter_applies_to_what_ralph_commits() {
    let project = one_task("secrets");
    with_rot13(&project);
    // One secret committed by the agent, one left for ralph's wip commit.
    project.script("agent.sh", 
        "mkdir -p secret\nwork secret/agent.txt Hello\necho Attack > secret/left.txt\nralph task complete A > /dev/null\n",
    );
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    // The objects hold the filtered text, on the branch and on main.
    let blob = |rev: &str| project.git(&["cat-file", "-p", rev]);
    assert_eq!(blob("main:secret/agent.txt"), "Uryyb");
    assert_eq!(blob("main:secret/left.txt"), "Nggnpx");
    assert_eq!(blob("refs/ralph/tasks/A:secret/left.txt"), "Nggnpx");
    assert_eq!(project.read("secret/left.txt"), "Attack\n");
    assert_eq!(project.git(&["status", "--porcelain"]), "");
}

#[test]
fn a_missing_filter_driver_stops_the_run_with_gits_message_and_commits_nothing_raw() {
    let project = one_task("secrets");
    with_rot13(&project);
    // The filter is required, and this clone has no driver for it.
    project.git(&["config", "--unset", "filter.rot13.clean"]);
    project.git(&["config", "--unset", "filter.rot13.smudge"]);
    project.script(
        "agent.sh",
        "mkdir -p secret\necho Attack > secret/left.txt\n",
    );
    let main_before = project.git(&["rev-parse", "main"]);
    let run = project.run(&[]);
    assert_eq!(run.code, 20, "{run:#?}");
    assert!(run.stderr.contains("rot13"), "{run:#?}");
    assert_eq!(project.git(&["rev-parse", "main"]), main_before);
    let branch = project.git(&["log", "--format=%s", "task/A-secrets"]);
    assert!(!branch.contains("wip"), "{branch}");
    // The plaintext is still on disk, uncommitted.
    assert_eq!(project.read("secret/left.txt"), "Attack\n");
}

#[test]
fn an_agents_submodule_commit_is_recorded_as_the_gitlink_change() {
    let project = one_task("bump lib");
    // A library repository, added as a submodule at libs/sub.
    let lib = project.aux().join("lib");
    let git_in = |dir: &Path, args: &[&str]| {
        let out = project
            .command("git")
            .current_dir(dir)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    std::fs::create_dir_all(&lib).unwrap();
    git_in(&lib, &["init", "-q", "-b", "main"]);
    std::fs::write(lib.join("lib.txt"), "v1\n").unwrap();
    git_in(&lib, &["add", "lib.txt"]);
    git_in(&lib, &["commit", "-q", "-m", "v1"]);
    let lib_url = lib.to_str().unwrap();
    project.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        lib_url,
        "libs/sub",
    ]);
    project.git(&["commit", "-q", "-m", "add the submodule"]);
    // The agent commits inside the submodule and leaves the gitlink
    // change, and a stray file inside the submodule, uncommitted.
    project.script("agent.sh", 
        "cd libs/sub && echo v2 > lib.txt && git commit -q -am v2 && echo scratch > scratch.txt && cd ../..\nralph task complete A > /dev/null\n",
    );
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    let inside = git_in(&project.path().join("libs/sub"), &["rev-parse", "HEAD"]);
    assert_eq!(
        project.git(&["rev-parse", "main:libs/sub"]),
        inside,
        "the squash records the submodule's new commit"
    );
    assert_eq!(
        project.git(&["diff", "--name-only", "main~1", "main"]),
        "libs/sub\ntasks-done.jsonl\ntasks.jsonl"
    );
}

#[test]
fn a_sparse_checkout_is_not_dirty_and_its_tasks_merge() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"work","status":"pending","leaf":true}"#)
        .file("drop/d.txt", "outside the cone\n")
        .file("keep/k.txt", "inside\n")
        .git_init();
    project.git(&["sparse-checkout", "set", "--no-cone", "/*", "!/drop/"]);
    assert!(!project.path().join("drop/d.txt").exists());
    project.script(
        "agent.sh",
        "echo more >> keep/k.txt\nralph task complete A > /dev/null\n",
    );
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.git(&["show", "main:keep/k.txt"]), "inside\nmore");
    // The file outside the checkout is kept in history, absent on disk.
    assert_eq!(
        project.git(&["show", "main:drop/d.txt"]),
        "outside the cone"
    );
    assert!(!project.path().join("drop/d.txt").exists());
    assert_eq!(project.git(&["status", "--porcelain"]), "");
}

#[test]
fn conflicts_an_agent_leaves_in_the_index_are_its_next_iterations_to_resolve() {
    let project = one_task("conflict");
    // A `git stash pop` that conflicts leaves c.txt unmerged, no merge
    // in progress; the second iteration resolves it.
    project.script(
        "agent.sh",
        r#"case "$RALPH_TASK_ITERATION" in
1) work c.txt one
   echo two > c.txt && git stash -q
   work c.txt three
   git stash pop -q 2> /dev/null || true ;;
*) echo resolved > c.txt && git add c.txt && git stash drop -q
   ralph task complete A > /dev/null ;;
esac
"#,
    );
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.calls().len(), 2);
    let prompt = project.read(".ralph/prompts/2-A.md");
    assert!(prompt.contains("unmerged_index"), "{prompt}");
    assert!(
        prompt.contains("the agent left conflicts in the index (c.txt)"),
        "{prompt}"
    );
    assert_eq!(failure_classes(&project), ["iteration/unmerged_index"]);
    assert_eq!(project.git(&["show", "main:c.txt"]), "resolved");
    assert_eq!(project.git(&["status", "--porcelain"]), "");
}

#[test]
fn a_merge_the_agent_left_in_progress_is_finished_by_the_next_iteration() {
    let project = one_task("merge");
    project.git(&["checkout", "-q", "-b", "other"]);
    std::fs::write(project.path().join("m.txt"), "theirs\n").unwrap();
    project.git(&["add", "m.txt"]);
    project.git(&["commit", "-q", "-m", "theirs"]);
    project.git(&["checkout", "-q", "main"]);
    project.script(
        "agent.sh",
        r#"case "$RALPH_TASK_ITERATION" in
1) work m.txt ours
   git merge -q other > /dev/null 2>&1 || true ;;
*) echo both > m.txt && git add m.txt && git commit -q --no-edit
   ralph task complete A > /dev/null ;;
esac
"#,
    );
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    let prompt = project.read(".ralph/prompts/2-A.md");
    assert!(prompt.contains("merge_in_progress"), "{prompt}");
    assert!(prompt.contains("git merge --abort"), "{prompt}");
    assert_eq!(failure_classes(&project), ["iteration/merge_in_progress"]);
    assert_eq!(project.git(&["show", "main:m.txt"]), "both");
}

#[test]
fn an_index_lock_held_for_a_moment_by_a_live_git_process_is_waited_for() {
    let project = one_task("locked");
    // As an IDE's `git status` would, with the agent's work left for
    // ralph to commit.
    agent_leaving_a_lock_held(&project, "echo work > w.txt", ".git/index.lock");
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.git(&["show", "main:w.txt"]), "work");
}

#[test]
fn a_ref_lock_held_for_a_moment_is_waited_for() {
    let project = one_task("locked");
    // Someone's `git fetch` or `git update-ref` holds main's lock as the
    // squash is about to land on main.
    agent_leaving_a_lock_held(&project, "work w.txt work", ".git/refs/heads/main.lock");
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.git(&["show", "main:w.txt"]), "work");
    assert_eq!(
        project.git(&["log", "-1", "--format=%s", "main"]),
        "[A] locked"
    );
}

#[test]
fn an_index_lock_that_stays_stops_the_run_naming_it() {
    if skip_without(Tool::Lsof) {
        return;
    }
    let project = one_task("locked");
    project.script(
        "agent.sh",
        "echo work > w.txt\nralph task complete A > /dev/null\ntouch .git/index.lock\n",
    );
    let run = project.run(&[]);
    assert_eq!(run.code, 20, "{run:#?}");
    assert!(
        run.stderr
            .contains(".git/index.lock is held by another git process (for "),
        "{run:#?}"
    );
    assert!(
        run.stderr.contains("hint: wait for that git command"),
        "{run:#?}"
    );
    // Nothing lost: the work is on disk, and the next run (the lock gone
    // stale, no git process at work) commits and merges it.
    assert_eq!(project.read("w.txt"), "work\n");
    let again = project.run(&[]);
    assert_eq!(again.code, 0, "{again:#?}");
    assert_eq!(project.git(&["show", "main:w.txt"]), "work");
}

/// A GnuPG home with a fresh key for the test author, no passphrase.
fn gpg_home(project: &TestProject) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let home = project.aux().join("gnupg");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
    let made = std::process::Command::new("gpg")
        .env("GNUPGHOME", &home)
        .args(["--batch", "--passphrase", "", "--quick-gen-key"])
        .args([
            "Test Author <author@example.com>",
            "default",
            "default",
            "never",
        ])
        .output()
        .expect("run gpg");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    home
}

#[test]
fn with_commit_gpgsign_ralphs_commits_are_signed_by_git() {
    if skip_without(Tool::Gpg) {
        return;
    }
    let project = one_task("signed");
    let home = gpg_home(&project);
    project.git(&["config", "commit.gpgsign", "true"]);
    project.git(&["config", "user.signingkey", "author@example.com"]);
    // Work left uncommitted: the wip commit is ralph's too.
    project.script(
        "agent.sh",
        "echo s > s.txt\nralph task complete A > /dev/null\n",
    );
    let run = run_with(&project, "GNUPGHOME", &home);
    assert_eq!(run.code, 0, "{run:#?}");
    let verify = |rev: &str| {
        project
            .command("git")
            .env("GNUPGHOME", &home)
            .args(["verify-commit", rev])
            .output()
            .unwrap()
            .status
            .success()
    };
    assert!(verify("main"), "the squash commit is not signed");
    assert!(verify("refs/ralph/tasks/A"), "the wip commit is not signed");
    assert!(
        !verify("main~1"),
        "the test's own commit should be unsigned"
    );
}

#[test]
fn signing_that_cannot_work_is_refused_before_any_agent_runs() {
    if skip_without(Tool::Gpg) {
        return;
    }
    let project = one_task("signed");
    let home = gpg_home(&project);
    project.git(&["config", "commit.gpgsign", "true"]);
    project.git(&["config", "user.signingkey", "nobody@example.com"]);
    project.script(
        "agent.sh",
        "echo s > s.txt\nralph task complete A > /dev/null\n",
    );
    let run = run_with(&project, "GNUPGHOME", &home);
    assert_eq!(run.code, 20, "{run:#?}");
    assert!(
        run.stderr
            .contains("error: commit.gpgsign is set but git cannot sign a commit: "),
        "{run:#?}"
    );
    assert!(run.stderr.contains("No secret key"), "{run:#?}");
    assert!(run.stderr.contains("hint: make signing work"), "{run:#?}");
    assert!(project.calls().is_empty());
}

#[test]
fn lfs_tracked_files_reach_the_base_as_lfs_pointers() {
    if skip_without(Tool::GitLfs) {
        return;
    }
    let project = one_task("assets");
    with_lfs(&project);
    // 100 kB the agent leaves uncommitted for ralph's wip commit.
    project.script("agent.sh", AGENT_WRITING_BIG_BIN);
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    let stored = project.git(&["cat-file", "-p", "main:big.bin"]);
    assert!(
        stored.starts_with("version https://git-lfs.github.com/spec/v1"),
        "{stored}"
    );
    assert!(stored.contains("size 100000"), "{stored}");
    assert_eq!(project.read("big.bin").len(), 100_000);
    assert_eq!(project.git(&["status", "--porcelain"]), "");
}

/// A tracked LFS file the agent changes and leaves (the watch's fast
/// path: staged without `git status`) is committed as its pointer, its
/// content in the LFS store, as `git add` would have it.
#[test]
fn a_tracked_lfs_file_left_changed_reaches_the_base_as_its_pointer() {
    if skip_without(Tool::GitLfs) {
        return;
    }
    let project = one_task("assets");
    with_lfs(&project);
    std::fs::write(project.path().join("model.bin"), "old weights\n").unwrap();
    project.git(&["add", "model.bin"]);
    project.git(&["commit", "-q", "-m", "weights"]);
    project.script(
        "agent.sh",
        "echo new weights > model.bin\nralph task complete A > /dev/null\n",
    );
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    let stored = project.git(&["cat-file", "-p", "main:model.bin"]);
    assert!(
        stored.starts_with("version https://git-lfs.github.com/spec/v1"),
        "{stored}"
    );
    let oid = stored
        .lines()
        .find_map(|line| line.strip_prefix("oid sha256:"))
        .expect("an oid line")
        .to_owned();
    let object = project.path().join(format!(
        ".git/lfs/objects/{}/{}/{oid}",
        &oid[..2],
        &oid[2..4]
    ));
    assert_eq!(std::fs::read_to_string(object).unwrap(), "new weights\n");
    assert_eq!(project.read("model.bin"), "new weights\n");
    assert_eq!(project.git(&["status", "--porcelain"]), "");
}

/// Files ralph itself checks out go through the user's smudge filter: an
/// LFS file of a resumed task's branch, and one somebody else committed on
/// the base while the task worked, are their contents on disk, not their
/// pointers, for the agent and after the squash.
#[test]
fn lfs_files_ralph_checks_out_are_their_contents_not_pointers() {
    if skip_without(Tool::GitLfs) {
        return;
    }
    let project = one_task("weights");
    with_lfs(&project);
    project.script(
        "agent.sh",
        r#"if [ "$RALPH_TASK_ITERATION" = 1 ]; then
  echo "real weights" > model.bin
  git add model.bin && git commit -q -m "add the weights"
  ralph task block A --reason wait > /dev/null
  exit 0
fi
cat model.bin > "$REC/seen"
# Meanwhile somebody commits an LFS file on the base.
git worktree add -q "$REC/other" main
(cd "$REC/other" && echo "their asset" > asset.bin && git add asset.bin && git commit -q -m asset)
git worktree remove "$REC/other"
ralph task complete A > /dev/null
"#,
    );
    let run = project.run(&[]);
    assert_eq!(run.code, 10, "{run:#?}");
    assert!(!project.path().join("model.bin").exists());
    let tasks = project
        .read("tasks.jsonl")
        .replace("\"blocked\"", "\"pending\"");
    std::fs::write(project.path().join("tasks.jsonl"), tasks).unwrap();
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.rec("seen"), "real weights\n");
    assert_eq!(project.read("model.bin"), "real weights\n");
    assert_eq!(project.read("asset.bin"), "their asset\n");
    assert!(
        project
            .git(&["cat-file", "-p", "main:asset.bin"])
            .starts_with("version https://git-lfs.github.com/spec/v1")
    );
    assert_eq!(project.git(&["status", "--porcelain"]), "");
}

/// Files larger than ralph reads whole (`git::LARGE_BLOB`) go through the
/// user's git both ways: one an agent leaves uncommitted and one another
/// agent commits itself, two workers side by side, each merged and
/// checked out in the project's folder, reach the base and the disk intact.
#[test]
fn large_files_reach_the_base_and_the_checkout_intact() {
    let size = ralph::git::LARGE_BLOB + 1024;
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"one","status":"pending","leaf":true}"#)
        .task(r#"{"id":"B","title":"two","status":"pending","leaf":true}"#)
        .git_init()
        .agent(&format!(
            r#"head -c {size} /dev/zero | tr '\0' "$RALPH_TASK_ID" > "$RALPH_TASK_ID.bin"
if [ "$RALPH_TASK_ID" = B ]; then git add B.bin && git commit -q -m "B's data"; fi
ralph task complete "$RALPH_TASK_ID" > /dev/null
"#
        ));
    let run = crate::support::finish(project.run_command(&["--workers", "2"]), 120);
    assert_eq!(run.code, 0, "{run:#?}");
    for id in ["A", "B"] {
        let file = format!("{id}.bin");
        let bytes = project.bytes(&file);
        assert_eq!(bytes.len() as u64, size, "{file}");
        assert!(bytes.iter().all(|byte| *byte == id.as_bytes()[0]), "{file}");
        assert_eq!(
            project.git(&["rev-parse", &format!("main:{file}")]),
            project.git(&["hash-object", &file])
        );
    }
    assert_eq!(project.git(&["status", "--porcelain"]), "");
}

/// An agent that writes a `.gitignore` of its own, without ralph's lines,
/// and stages everything: ralph's runtime files stay out of its commits
/// and off the base, and the next task and the next run go on.
#[test]
fn an_agent_that_rewrites_gitignore_never_commits_ralphs_runtime_files() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"one","status":"pending","leaf":true}"#)
        .task(r#"{"id":"B","title":"two","status":"pending","leaf":true}"#)
        .git_init()
        .agent(
            r#"echo "node_modules/" > .gitignore
echo x > "$RALPH_TASK_ID.txt"
git add -A && git commit -q -m "$RALPH_TASK_ID"
ralph task complete "$RALPH_TASK_ID" > /dev/null
"#,
        );
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    let files = project.git(&["ls-tree", "-r", "--name-only", "main"]);
    assert!(files.contains("\nA.txt\nB.txt\n"), "{files}");
    assert!(
        !files
            .lines()
            .any(|file| file.starts_with(".ralph/") || file == "ralph.log"),
        "{files}"
    );
    assert!(
        project.read(".git/info/exclude").ends_with(
            "# ralph's runtime files (added by ralph run)\n/.ralph/\n/ralph.log\n/.stop\n"
        )
    );
    let again = project.run(&[]);
    assert_eq!(again.code, 0, "{again:#?}");
}

#[test]
fn an_lfs_path_without_git_lfs_stops_the_run_and_commits_no_raw_blob() {
    if skip_without(Tool::GitLfs) {
        return;
    }
    let project = one_task("assets");
    with_lfs(&project);
    project.script("agent.sh", AGENT_WRITING_BIG_BIN);
    let main_before = project.git(&["rev-parse", "main"]);
    let without = crate::support::path_without("git-lfs", &project.aux().join("no-lfs-bin"));
    let run = run_with(&project, "PATH", without);
    assert_eq!(run.code, 20, "{run:#?}");
    assert!(run.stderr.contains("git-lfs"), "{run:#?}");
    assert_eq!(project.git(&["rev-parse", "main"]), main_before);
    let ours = project.git(&["log", "--format=%s", "task/A-assets"]);
    assert!(!ours.contains("wip"), "{ours}");
    assert_eq!(project.read("big.bin").len(), 100_000);
}

#[test]
fn a_shallow_clone_works() {
    let origin = one_task("shallow");
    for n in 1..=3 {
        std::fs::write(origin.path().join("history.txt"), format!("{n}\n")).unwrap();
        origin.git(&["add", "history.txt"]);
        origin.git(&["commit", "-q", "-m", &format!("history {n}")]);
    }
    let project = TestProject::new();
    let url = format!("file://{}", origin.path().display());
    let target = project.path().to_str().unwrap().to_owned();
    std::fs::remove_dir_all(project.path()).unwrap();
    origin.git(&["clone", "-q", "--depth", "1", &url, &target]);
    project.git(&["config", "user.name", "Test Author"]);
    project.git(&["config", "user.email", "author@example.com"]);
    assert_eq!(
        project.git(&["rev-parse", "--is-shallow-repository"]),
        "true"
    );
    project.script(
        "agent.sh",
        "work x.txt x\nralph task complete A > /dev/null\n",
    );
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        project.git(&["log", "--format=%s", "main"]),
        "[A] shallow\nhistory 3"
    );
    assert_eq!(project.git(&["status", "--porcelain"]), "");
}

#[test]
fn a_skip_worktree_file_changed_on_disk_is_not_ralphs_to_commit() {
    let project = TestProject::new()
        .task(r#"{"id":"A","title":"work","status":"pending","leaf":true}"#)
        .file("local.cfg", "shared\n")
        .git_init();
    // A person's local override git is told to ignore.
    project.git(&["update-index", "--skip-worktree", "local.cfg"]);
    std::fs::write(project.path().join("local.cfg"), "mine\n").unwrap();
    project.script(
        "agent.sh",
        "echo w > w.txt\nralph task complete A > /dev/null\n",
    );
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.git(&["show", "main:local.cfg"]), "shared");
    assert_eq!(project.git(&["show", "main:w.txt"]), "w");
    assert_eq!(project.read("local.cfg"), "mine\n");
}

#[test]
fn with_ssh_signing_ralphs_commits_carry_an_ssh_signature() {
    if skip_without(Tool::SshKeygen) {
        return;
    }
    let project = one_task("signed");
    let key = project.aux().join("id_ed25519");
    let made = std::process::Command::new("ssh-keygen")
        .args([
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            "author@example.com",
            "-f",
        ])
        .arg(&key)
        .output()
        .expect("run ssh-keygen");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    project.git(&["config", "gpg.format", "ssh"]);
    project.git(&["config", "commit.gpgsign", "true"]);
    project.git(&["config", "user.signingkey", key.to_str().unwrap()]);
    project.script(
        "agent.sh",
        "echo s > s.txt\nralph task complete A > /dev/null\n",
    );
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{run:#?}");
    // Verified against the key itself as the only allowed signer.
    let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
    let allowed = project.aux().join("allowed_signers");
    std::fs::write(&allowed, format!("author@example.com {public}")).unwrap();
    project.git(&[
        "config",
        "gpg.ssh.allowedSignersFile",
        allowed.to_str().unwrap(),
    ]);
    for rev in ["main", "refs/ralph/tasks/A"] {
        let verified = project
            .command("git")
            .args(["verify-commit", rev])
            .output()
            .unwrap();
        assert!(
            verified.status.success(),
            "{rev}: {}",
            String::from_utf8_lossy(&verified.stderr)
        );
    }
}
