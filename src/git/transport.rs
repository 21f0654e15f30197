//! Talking to a remote through the user's own `git` (their credentials,
//! SSH keys and hooks, the run's `git.ssh_key`): where the base is pushed,
//! and the one fetch and the one push of every caller, each stopped at a
//! deadline, what it came to read from git's porcelain lines. Only a ref
//! of ralph's own that asks for it is forced ([`Lease::Replace`]).

use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use super::Repo;
use super::error::{Error, Result};

/// Longest a push, or a fetch of the shared queue, may take before it is
/// stopped and counted as a failure that may pass (a hung connection).
pub const DEADLINE: Duration = Duration::from_secs(120);

/// Where the base is pushed: its upstream, or `<remote>/<base>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The remote's name.
    pub remote: String,
    /// The branch on the remote (`main` for `refs/heads/main`).
    pub branch: String,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.remote, self.branch)
    }
}

/// How a fetch went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fetched {
    /// The remote-tracking refs are up to date.
    Ok,
    /// It failed; what git said (a timeout says so).
    Failed {
        /// What git printed, or that it did not finish.
        said: String,
        /// Whether it ran out of time (worth one more try).
        timed_out: bool,
    },
}

/// What a push may expect of a remote ref before it changes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lease {
    /// Nothing: a plain update.
    None,
    /// The ref must not exist.
    Absent,
    /// The ref must hold this commit.
    At(String),
    /// Whatever it holds, it is replaced (a ref of ralph's own, never a
    /// branch).
    Replace,
}

/// One ref a push changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefUpdate {
    /// The remote ref (`refs/heads/main`, `refs/ralph/claims/A`).
    pub name: String,
    /// What it gets, a commit or a local ref; `None` deletes it.
    pub to: Option<String>,
    /// What it must hold first.
    pub lease: Lease,
}

impl RefUpdate {
    /// Ref `name` set to `to` (`None` deletes it) if it holds `lease`.
    pub fn new(name: impl Into<String>, to: Option<String>, lease: Lease) -> RefUpdate {
        RefUpdate {
            name: name.into(),
            to,
            lease,
        }
    }
}

/// Which of git's guarantees and hooks a push asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Push {
    /// As `git push` pushes a branch of the user's (`git.push`).
    Plain,
    /// All refs or none (`--atomic`), `pre-push` run: a shared landing.
    Atomic,
    /// All or none without `pre-push` (`--no-verify`): ralph's own refs.
    AtomicUnverified,
}

/// How a push went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pushed {
    /// Every ref was changed, or held its value already (`up_to_date`).
    Accepted {
        /// Whether the remote had every ref as pushed already.
        up_to_date: bool,
    },
    /// The remote refused: nothing was changed (by an atomic push).
    Rejected {
        /// The refs it refused for their own sake (a lease, a hook, not a
        /// fast-forward), each with git's reason.
        refs: Vec<(String, String)>,
        /// All git printed.
        said: String,
    },
    /// The remote could not be reached, or git did not finish: all it said.
    Unreachable(String),
}

impl Repo {
    /// `branch`'s upstream (`branch.<name>.remote` and `.merge`), if it
    /// has one on a remote.
    pub fn upstream(&self, branch: &str) -> Option<Target> {
        let config = self.git.config().ok()?;
        let remote = config.get_string(&format!("branch.{branch}.remote")).ok()?;
        let merge = config.get_string(&format!("branch.{branch}.merge")).ok()?;
        let branch = merge.strip_prefix("refs/heads/")?.to_owned();
        (remote != ".").then_some(Target { remote, branch })
    }

    /// Where `branch` is pushed: its [`Repo::upstream`] when it has one,
    /// otherwise `remote` (the setting `git.remote`, `origin` when unset)
    /// under the same name.
    pub fn push_target(&self, branch: &str, remote: Option<&str>) -> Target {
        match (remote, self.upstream(branch)) {
            (None, Some(upstream)) => upstream,
            (remote, _) => Target {
                remote: remote.unwrap_or("origin").to_owned(),
                branch: branch.to_owned(),
            },
        }
    }

    /// Fetches `branch` from `remote` into `refs/remotes/<remote>/<branch>`,
    /// and the refs of the refspecs `also`, pruning those the remote no
    /// longer has; stopped after `timeout`.
    pub fn fetch(
        &self,
        remote: &str,
        branch: &str,
        also: &[String],
        timeout: Duration,
    ) -> Result<Fetched> {
        let base = format!("+refs/heads/{branch}:refs/remotes/{remote}/{branch}");
        let mut args = vec!["fetch", "--prune", "--no-tags", "--quiet", remote, &base];
        args.extend(also.iter().map(String::as_str));
        Ok(match self.remote_git("fetch", &args, remote, timeout)? {
            Ok(output) if output.status.success() => Fetched::Ok,
            Ok(output) => Fetched::Failed {
                said: said(&output),
                timed_out: false,
            },
            Err(said) => Fetched::Failed {
                said,
                timed_out: true,
            },
        })
    }

    /// Pushes `updates` to `remote` as `how` asks, each with its lease,
    /// stopped after `timeout`.
    pub fn push(
        &self,
        remote: &str,
        updates: &[RefUpdate],
        how: Push,
        timeout: Duration,
    ) -> Result<Pushed> {
        let flags = match how {
            Push::Plain => "push --porcelain",
            Push::Atomic => "push --atomic --porcelain",
            Push::AtomicUnverified => "push --atomic --porcelain --no-verify",
        };
        let mut args: Vec<String> = flags.split(' ').map(str::to_owned).collect();
        for RefUpdate { name, lease, .. } in updates {
            match lease {
                Lease::None | Lease::Replace => {}
                Lease::Absent => args.push(format!("--force-with-lease={name}:")),
                Lease::At(commit) => args.push(format!("--force-with-lease={name}:{commit}")),
            }
        }
        args.push(remote.to_owned());
        for RefUpdate { name, to, lease } in updates {
            let force = if *lease == Lease::Replace { "+" } else { "" };
            args.push(format!("{force}{}:{name}", to.as_deref().unwrap_or("")));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Ok(match self.remote_git("push", &args, remote, timeout)? {
            Ok(output) => {
                let stdout = String::from_utf8_lossy(&output.stdout);
                read_porcelain(&stdout, output.status.success(), said(&output))
            }
            Err(said) => Pushed::Unreachable(said),
        })
    }

    /// The commit ref `name` holds on `remote`, by `git ls-remote`.
    pub fn remote_tip(&self, remote: &str, name: &str) -> Option<String> {
        let output = (self.remote_command().ok()?)
            .args(["ls-remote", remote, name])
            .stdin(Stdio::null())
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&output.stdout);
        text.split_whitespace().next().map(str::to_owned)
    }

    /// Runs `git args` (`op`: `fetch`, `push`) against `remote`, in C's
    /// locale (its porcelain lines are read), stopped after `timeout`:
    /// `Err` then, saying so.
    fn remote_git(
        &self,
        op: &'static str,
        args: &[&str],
        remote: &str,
        timeout: Duration,
    ) -> Result<std::result::Result<Output, String>> {
        let action = format!("{op} {remote}");
        let _timed = super::timing::timed(op, &action);
        let mut command = self.remote_command()?;
        // The porcelain lines are parsed: git's own words.
        command
            .env("LC_ALL", "C")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let failed = |source: std::io::Error| Error::Command {
            action: action.to_owned(),
            said: format!("cannot run git: {source}"),
        };
        let mut child = command.spawn().map_err(failed)?;
        let started = Instant::now();
        while child.try_wait().map_err(failed)?.is_none() {
            if started.elapsed() >= timeout {
                let _ = (child.kill(), child.wait());
                let secs = timeout.as_secs();
                return Ok(Err(format!("git {op} did not finish in {secs}s")));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        child.wait_with_output().map(Ok).map_err(failed)
    }
}

/// All git printed: its errors, then its porcelain lines.
fn said(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let text = format!("{stderr}{}", String::from_utf8_lossy(&output.stdout));
    text.trim_end().to_owned()
}

/// The first line of what git said: the one that says why (`ssh: connect
/// to host ...`, `fatal: ...`), without the advice git adds.
pub fn reason(said: &str) -> &str {
    let mut lines = said.lines().map(str::trim);
    lines.find(|line| !line.is_empty()).unwrap_or_default()
}

/// Whether a refused ref's summary says it failed only with the others
/// of an atomic push: the client's `(atomic push failed)`, the server's
/// `(atomic transaction failed)` when another ref's update lost its race.
fn collateral(summary: &str) -> bool {
    summary.contains("atomic push failed") || summary.contains("atomic transaction failed")
}

/// Reads `git push --porcelain` (`<flag>\t<from>:<to>\t<summary>` per
/// ref, `!` refused, `=` up to date). With `--atomic`, the refs that
/// failed only because another did say `(atomic push failed)`; the others
/// name their reason. No ref line at all: the remote was not reached.
fn read_porcelain(stdout: &str, success: bool, said: String) -> Pushed {
    let lines: Vec<(&str, &str, &str)> = stdout
        .lines()
        .filter_map(|line| {
            let mut fields = line.splitn(3, '\t');
            let flag = fields.next()?;
            let refs = fields.next()?;
            let summary = fields.next().unwrap_or("");
            (flag.len() == 1).then_some((flag, refs, summary))
        })
        .collect();
    if lines.is_empty() {
        return Pushed::Unreachable(said);
    }
    let refused: Vec<(String, String)> = lines
        .iter()
        .filter(|(flag, _, summary)| *flag == "!" && !collateral(summary))
        .map(|(_, refs, summary)| {
            let name = refs.rsplit(':').next().unwrap_or(refs);
            (name.to_owned(), (*summary).to_owned())
        })
        .collect();
    if success && refused.is_empty() && lines.iter().all(|(flag, _, _)| *flag != "!") {
        let up_to_date = lines.iter().all(|(flag, _, _)| *flag == "=");
        return Pushed::Accepted { up_to_date };
    }
    let refs = match refused.is_empty() {
        // Every ref "failed with the others": a hook refused the whole.
        true => vec![(String::new(), reason(&said).to_owned())],
        false => refused,
    };
    Pushed::Rejected { refs, said }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn porcelain_lines_say_which_ref_refused_and_why() {
        let accepted = "To ../remote.git\n*\tabc:refs/ralph/claims/A\t[new reference]\nDone\n";
        assert_eq!(
            read_porcelain(accepted, true, String::new()),
            Pushed::Accepted { up_to_date: false }
        );
        let same = "To x\n=\trefs/heads/main:refs/heads/main\t[up to date]\nDone\n";
        assert_eq!(
            read_porcelain(same, true, String::new()),
            Pushed::Accepted { up_to_date: true }
        );
        let raced = "To ../remote.git\n!\trefs/heads/main:refs/heads/main\t[rejected] (stale info)\n!\tabc:refs/ralph/tasks/A\t[rejected] (atomic push failed)\nDone\n";
        assert_eq!(
            read_porcelain(raced, false, "error".into()),
            Pushed::Rejected {
                refs: vec![("refs/heads/main".into(), "[rejected] (stale info)".into())],
                said: "error".into()
            }
        );
        let lost = "To x\n!\tabc:refs/ralph/claims/A\t[remote rejected] (cannot lock ref 'refs/ralph/claims/A': reference already exists)\nDone\n";
        assert!(matches!(
            read_porcelain(lost, false, String::new()),
            Pushed::Rejected { refs, .. } if refs[0].0 == "refs/ralph/claims/A"
        ));
        // The server's compare-and-swap lost: every ref says so alike.
        let raced = "To x\n!\tabc:refs/heads/main\t[remote rejected] (atomic transaction failed)\n!\tdef:refs/ralph/claims/A\t[remote rejected] (atomic transaction failed)\nDone\n";
        assert!(matches!(
            read_porcelain(raced, false, "\nerror: failed\nhint: x".into()),
            Pushed::Rejected { refs, .. } if refs == [(String::new(), "error: failed".to_owned())]
        ));
        let unreachable = "fatal: Could not read from remote repository.\n\nPlease make sure";
        assert_eq!(
            read_porcelain("", false, unreachable.into()),
            Pushed::Unreachable(unreachable.into())
        );
        assert_eq!(
            reason(unreachable),
            "fatal: Could not read from remote repository."
        );
    }
}
