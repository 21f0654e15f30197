//! The user's own `git` command: what the repository's configuration
//! governs (filters, LFS, sparse checkouts, submodules, hooks, signing)
//! goes through it, and questions whose answer depends on more than
//! libgit2 reports (docs/GIT.md has the table).

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::error::{Context, Error, Result};
use super::{COMMIT_HOOKS, CommitId, Repo};

/// How long a lock another git process holds (an IDE's `git status`) is
/// waited for before the run stops.
pub(super) const LOCK_WAIT: Duration = Duration::from_secs(10);
/// The longest pause between two looks at a git lock: the locks in the
/// way are mostly an editor's `git status`, held for milliseconds, and a
/// look costs one `stat`.
const LOCK_POLL: Duration = Duration::from_millis(50);

/// What a `git` command that ran to its end printed.
pub(super) struct Ran {
    /// Whether it exited 0.
    pub success: bool,
    /// Its standard output.
    pub stdout: Vec<u8>,
    /// Its standard error and output together, as a person would see them
    /// (hooks print to either).
    pub said: String,
}

impl Repo {
    /// `git` in the working tree, committing as ralph's identity, never
    /// asking for a password on a terminal, and aimed at this repository
    /// whatever `GIT_DIR` the caller's environment has. It never runs a
    /// file-system monitor (`core.fsmonitor` names a program to run), and
    /// runs the hooks confined when they are guarded (`hooks.rs`).
    pub(super) fn git_command(&self) -> Result<Command> {
        let mut command = Command::new("git");
        command.arg("-C").arg(self.workdir());
        command.args(["-c", "core.fsmonitor=false"]);
        if let Some(hooks) = self.guarded_hooks()? {
            let mut setting = OsString::from("core.hooksPath=");
            setting.push(hooks.as_os_str());
            command.arg("-c").arg(setting);
        }
        for name in ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX"] {
            command.env_remove(name);
        }
        let identity = &self.identity;
        for role in ["AUTHOR", "COMMITTER"] {
            command.env(format!("GIT_{role}_NAME"), &identity.name);
            command.env(format!("GIT_{role}_EMAIL"), &identity.email);
            if let Some(time) = identity.time {
                let offset = time.offset_minutes.unsigned_abs();
                let sign = if time.offset_minutes < 0 { '-' } else { '+' };
                let date = format!(
                    "@{} {sign}{:02}{:02}",
                    time.seconds,
                    offset / 60,
                    offset % 60
                );
                command.env(format!("GIT_{role}_DATE"), date);
            }
        }
        command.env("GIT_TERMINAL_PROMPT", "0");
        Ok(command)
    }

    /// Runs `git args` with `input` on its standard input, waiting out a
    /// lock file another git process holds (backing off, up to
    /// [`LOCK_WAIT`]). A command that fails otherwise is handed back as it
    /// ran: the caller decides (a hook's rejection is a task's failure).
    pub(super) fn run_git(&self, args: &[&str], input: &[u8], action: &str) -> Result<Ran> {
        wait_out_lock(|| {
            let ran = self.run_git_once(args, input, action)?;
            Ok(match held_lock(&ran) {
                Some(lock) if !ran.success => Err(lock),
                _ => Ok(ran),
            })
        })
    }

    /// Sets `merge.<name>.driver` (and its `name`) in this clone's git
    /// config: the command git runs to merge the files `.gitattributes`
    /// gives to `merge=<name>`.
    pub fn set_merge_driver(&self, name: &str, what: &str, driver: &str) -> Result<()> {
        let key = format!("merge.{name}.name");
        self.git_ok(&["config", &key, what], b"", "set the merge driver's name")?;
        let key = format!("merge.{name}.driver");
        self.git_ok(&["config", &key, driver], b"", "set the merge driver")?;
        Ok(())
    }

    /// [`Repo::run_git`] for a command that must succeed.
    pub(super) fn git_ok(&self, args: &[&str], input: &[u8], action: &str) -> Result<Vec<u8>> {
        let ran = self.run_git(args, input, action)?;
        if ran.success {
            Ok(ran.stdout)
        } else {
            Err(Error::Command {
                action: action.to_owned(),
                said: ran.said,
            })
        }
    }

    fn run_git_once(&self, args: &[&str], input: &[u8], action: &str) -> Result<Ran> {
        let failed = |source: std::io::Error| Error::Command {
            action: action.to_owned(),
            said: format!("cannot run git: {source}"),
        };
        let started = Instant::now();
        let mut child = self
            .git_command()?
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(failed)?;
        let mut stdin = child.stdin.take().expect("stdin is piped");
        let input = input.to_vec();
        // Fed from a thread: a hook may print more than a pipe holds
        // before git reads all of its input.
        let feeder = std::thread::spawn(move || stdin.write_all(&input));
        let output = child.wait_with_output().map_err(failed)?;
        let _ = feeder.join();
        super::timing::log_command(args, output.status.success(), output.status.code(), started);
        let mut said = String::from_utf8_lossy(&output.stderr).into_owned();
        let stdout = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() && !stdout.trim().is_empty() {
            said.push_str(&stdout);
        }
        Ok(Ran {
            success: output.status.success(),
            stdout: output.stdout,
            said: said.trim_end().to_owned(),
        })
    }

    /// Whether a commit must be made by the user's `git commit`: git
    /// signs it (`commit.gpgsign`), or it `runs_hooks` and the repository
    /// has a commit hook (in `core.hooksPath` or the git folder's
    /// `hooks/`). Otherwise `git commit` would write the very commit libgit2
    /// writes (the same tree, parents, identity, time and message), and
    /// libgit2 writes it in-process: a `git commit` refreshes the whole
    /// index, 40 ms on 10,000 files (docs/BENCHMARKS.md). Asked at each
    /// commit: an agent may add a hook during a run.
    pub(super) fn commits_through_git(&self, runs_hooks: bool) -> bool {
        self.signs() || (runs_hooks && self.has_commit_hooks())
    }

    /// Whether git signs commits here (`commit.gpgsign`).
    fn signs(&self) -> bool {
        self.config()
            .is_some_and(|config| config.get_bool("commit.gpgsign").unwrap_or(false))
    }

    /// Whether a `git commit` here runs a hook of the repository's (which
    /// may refuse it, or write files).
    pub(super) fn has_commit_hooks(&self) -> bool {
        let hooks = self.hooks_folder();
        COMMIT_HOOKS
            .iter()
            .any(|name| crate::files::is_executable(&hooks.join(name)))
    }

    /// git's configuration as it is now (read afresh: a person or an agent
    /// may change it during a run).
    pub(super) fn config(&self) -> Option<git2::Config> {
        self.git
            .config()
            .and_then(|mut config| config.snapshot())
            .ok()
    }

    /// Commits the index on HEAD with `message` (taken verbatim): by the
    /// user's `git commit` when [`Repo::commits_through_git`] says so
    /// (signed when configured, with the hooks when `runs_hooks`), else by
    /// libgit2. The commit made, or what git and its hooks printed when it
    /// refused.
    pub(super) fn commit_index(
        &self,
        message: &str,
        runs_hooks: bool,
    ) -> Result<std::result::Result<CommitId, String>> {
        let _timed = super::timing::timed("commit", message.lines().next().unwrap_or_default());
        if !self.commits_through_git(runs_hooks) {
            let tree = self.index()?.write_tree().doing("write the index's tree")?;
            let tree = self.git.find_tree(tree).doing("read the index's tree")?;
            let head = self.head_commit("read HEAD's commit")?;
            let signature = self.identity.signature()?;
            self.wait_for_head_locks()?;
            let commit = self
                .git
                .commit(
                    Some("HEAD"),
                    &signature,
                    &signature,
                    message,
                    &tree,
                    &[&head],
                )
                .doing("commit")?;
            return Ok(Ok(commit.into()));
        }
        let options: &[&str] = if runs_hooks { &[] } else { &["--no-verify"] };
        self.git_commit(options, &[], message)
    }

    /// Waits for the locks a commit on HEAD takes: HEAD's and its branch's.
    pub(super) fn wait_for_head_locks(&self) -> Result<()> {
        let branch = self
            .git
            .head()
            .ok()
            .and_then(|head| head.name().ok().map(str::to_owned));
        match branch {
            Some(branch) => self.wait_for_ref_locks(&["HEAD", &branch]),
            None => self.wait_for_ref_locks(&["HEAD"]),
        }
    }

    /// `git commit` with `options`, of the index or, with `paths`, of
    /// those files only (`--only`), with `message` taken verbatim: the
    /// commit HEAD names afterwards, or what git and its hooks printed.
    pub(super) fn git_commit(
        &self,
        options: &[&str],
        paths: &[String],
        message: &str,
    ) -> Result<std::result::Result<CommitId, String>> {
        let mut args = vec!["commit", "--quiet", "--cleanup=verbatim", "--file=-"];
        args.extend_from_slice(options);
        if !paths.is_empty() {
            args.extend(["--only", "--"]);
            args.extend(paths.iter().map(String::as_str));
        }
        let ran = self.run_git(&args, message.as_bytes(), "commit")?;
        if !ran.success {
            return Ok(Err(ran.said));
        }
        let head = self.head_commit("read the new commit")?;
        Ok(Ok(head.id().into()))
    }

    /// Waits while git's index lock exists (another git process is
    /// changing the index), backing off, up to [`LOCK_WAIT`]; libgit2
    /// fails at once on a lock. A lock older than any git command left by
    /// a dead process is removed by [`Repo::clear_stale_locks`] at the
    /// start of a run.
    pub(super) fn wait_for_index_lock(&self) -> Result<()> {
        wait_while_locked(&[self.git.path().join("index.lock")])
    }

    /// [`Repo::wait_for_index_lock`] for the lock files of the refs
    /// `names` (`HEAD` is the working tree's; a branch is
    /// `refs/heads/<name>`, in the repository's shared folder), and of
    /// `packed-refs`, which a deletion rewrites.
    pub(super) fn wait_for_ref_locks(&self, names: &[&str]) -> Result<()> {
        let mut locks = vec![self.git.commondir().join("packed-refs.lock")];
        for name in names {
            locks.push(match *name {
                "HEAD" => self.git.path().join("HEAD.lock"),
                name => self.git.commondir().join(format!("{name}.lock")),
            });
        }
        wait_while_locked(&locks)
    }

    /// `git args` in the working tree: its standard output, or `None`
    /// when there is no `git` command or it fails.
    fn git_output(&self, args: &[&str]) -> Option<String> {
        let mut command = self.git_command().ok()?;
        command.args(args);
        let started = Instant::now();
        let output = crate::platform::stdout_of(&mut command);
        super::timing::log_command(args, output.is_some(), None, started);
        output
    }

    /// Fails when the repository asks for signed commits
    /// (`commit.gpgsign`) and git cannot sign one: a trial signature of
    /// HEAD's tree with the user's own settings (`user.signingkey`,
    /// `gpg.format`, `gpg.program`), so the run stops before any agent
    /// works rather than at its first commit. The trial commit is left
    /// unreferenced, for git's garbage collection.
    pub(super) fn check_signing(&self) -> Result<()> {
        let args = ["config", "--type=bool", "commit.gpgsign"];
        let ran = self.run_git(&args, b"", "read commit.gpgsign")?;
        if String::from_utf8_lossy(&ran.stdout).trim() != "true" {
            return Ok(());
        }
        let args = [
            "commit-tree",
            "-S",
            "-m",
            "ralph: signing check",
            "HEAD^{tree}",
        ];
        let ran = self.run_git(&args, b"", "sign a trial commit")?;
        if ran.success {
            Ok(())
        } else {
            Err(Error::Signing { said: ran.said })
        }
    }

    /// Fails when the base branch is checked out in another worktree of
    /// the repository: a commit onto it would leave that worktree's files
    /// behind its branch (git itself refuses to check a branch out twice).
    pub(super) fn check_base_free(&self) -> Result<()> {
        let Some(list) = self.git_output(&["worktree", "list", "--porcelain"]) else {
            return Ok(());
        };
        let here = self.workdir().canonicalize().ok();
        let common = self.git.commondir().canonicalize().ok();
        let base = format!("refs/heads/{}", self.base);
        for block in list.split("\n\n") {
            let mut path = None;
            let mut branch = None;
            for line in block.lines() {
                if let Some(rest) = line.strip_prefix("worktree ") {
                    path = Some(PathBuf::from(rest));
                } else if let Some(rest) = line.strip_prefix("branch ") {
                    branch = Some(rest);
                }
            }
            // A submodule's main worktree is listed by its git folder (its
            // working tree is set with core.worktree): find that tree.
            let path = path.map(|path| match path.canonicalize().ok() {
                Some(listed) if Some(&listed) == common.as_ref() => git2::Repository::open(&listed)
                    .ok()
                    .and_then(|repo| repo.workdir().and_then(|dir| dir.canonicalize().ok()))
                    .unwrap_or(path),
                _ => path,
            });
            if let (Some(path), Some(branch)) = (path, branch)
                && branch == base
                && path.canonicalize().ok() != here
            {
                return Err(Error::BaseInOtherWorktree {
                    base: self.base.clone(),
                    worktree: path,
                });
            }
        }
        Ok(())
    }

    /// The queue files git ignores (untracked, and matched by an ignore
    /// rule), each with the rule that matches it, as `.gitignore:3: *.jsonl`.
    /// Such a file never reaches the base's history. Best effort: without a
    /// `git` command, none.
    pub fn ignored_queue_files(&self) -> Vec<(String, String)> {
        if self.queue.is_empty() {
            return Vec::new();
        }
        let mut args = vec!["check-ignore", "--verbose", "--"];
        args.extend(self.queue.iter().map(|file| file.rel.as_str()));
        // Exit 1 (no output): nothing ignored.
        let output = self.git_output(&args).unwrap_or_default();
        output
            .lines()
            .filter_map(|line| {
                // `<source>:<line>:<pattern>\t<path>`
                let (rule, path) = line.split_once('\t')?;
                let (place, pattern) = rule.rsplit_once(':')?;
                Some((path.to_owned(), format!("{place}: {pattern}")))
            })
            .collect()
    }
}

/// `paths` for a git command's `-z --stdin`: each followed by a NUL.
pub(super) fn nul_separated<'a>(paths: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut list = Vec::new();
    for path in paths {
        list.extend_from_slice(path);
        list.push(0);
    }
    list
}

/// Waits while any of `locks` exists, backing off, up to [`LOCK_WAIT`].
fn wait_while_locked(locks: &[PathBuf]) -> Result<()> {
    wait_out_lock(|| {
        Ok(locks
            .iter()
            .find(|lock| lock.exists())
            .cloned()
            .map_or(Ok(()), Err))
    })
}

/// Calls `attempt` until it finds no lock file in its way (`Ok(Ok(_))`),
/// backing off from 10 ms to [`LOCK_POLL`]; a lock still in the way after
/// [`LOCK_WAIT`] is [`Error::Locked`].
pub(super) fn wait_out_lock<T>(
    mut attempt: impl FnMut() -> Result<std::result::Result<T, PathBuf>>,
) -> Result<T> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(10);
    let mut waited_for = None;
    loop {
        match attempt()? {
            Ok(done) => {
                if let Some(lock) = waited_for {
                    let waited_ms = crate::trace::ms(started.elapsed());
                    tracing::debug!(?lock, waited_ms, "git lock released");
                }
                return Ok(done);
            }
            Err(lock) if started.elapsed() >= LOCK_WAIT => {
                let waited_ms = crate::trace::ms(started.elapsed());
                tracing::debug!(?lock, waited_ms, "git lock still held; giving up");
                return Err(locked(lock));
            }
            Err(lock) => {
                if waited_for.is_none() {
                    tracing::debug!(?lock, "waiting for a git lock");
                }
                waited_for = Some(lock);
                std::thread::sleep(pause);
                pause = (pause * 2).min(LOCK_POLL);
            }
        }
    }
}

/// The lock file a failed git command names (`Unable to create
/// '.../index.lock': File exists.`, the same for a ref's lock), if any.
fn held_lock(ran: &Ran) -> Option<PathBuf> {
    let said = &ran.said;
    let start = said.find("Unable to create '")? + "Unable to create '".len();
    let end = said[start..].find("': File exists")? + start;
    Some(PathBuf::from(&said[start..end]))
}

/// The error for `lock`, still held after [`LOCK_WAIT`].
fn locked(lock: PathBuf) -> Error {
    let age = std::fs::metadata(&lock)
        .and_then(|meta| meta.modified())
        .ok()
        .and_then(|modified| modified.elapsed().ok());
    Error::Locked { lock, age }
}

/// What is wrong, and the fix, when queue file `file` is ignored by git
/// through `rule` (see [`Repo::ignored_queue_files`]).
pub fn ignored_queue_file(file: &str, rule: &str) -> (String, String) {
    (
        format!(
            "{file} is ignored by git ({rule}), so ralph's commits leave it out and its changes never reach the base's history"
        ),
        format!("add `!{file}` to .gitignore to keep them"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(said: &str) -> Ran {
        Ran {
            success: false,
            stdout: Vec::new(),
            said: said.to_owned(),
        }
    }

    #[test]
    fn the_lock_a_failed_command_names_is_found() {
        let said = "fatal: Unable to create '/r/.git/index.lock': File exists.\n\nAnother git process seems to be running";
        assert_eq!(
            held_lock(&failed(said)),
            Some(PathBuf::from("/r/.git/index.lock"))
        );
        let said = "error: pre-commit hook said no";
        assert_eq!(held_lock(&failed(said)), None);
    }
}
