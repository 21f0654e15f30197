//! Pushing the base branch to its remote through the user's own `git`, so
//! their credentials, SSH keys and hooks apply. Never forced: a push the
//! remote refuses as not a fast-forward is reported, not overridden, and
//! no local commit is changed.

use std::process::Stdio;
use std::time::Duration;

use super::Repo;
use super::error::Result;

/// Longest a push may take before it is stopped and counted as a
/// transient failure (a hung connection).
pub const PUSH_TIMEOUT: Duration = Duration::from_secs(120);

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

/// How one push attempt went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pushed {
    /// The remote branch is now the local tip (or already was).
    Done {
        /// Whether the remote already had it.
        up_to_date: bool,
    },
    /// The remote has commits the local branch lacks (someone else
    /// pushed): pushing again will not help.
    Rejected {
        /// The remote branch's tip, when `git ls-remote` could tell.
        remote_tip: Option<String>,
    },
    /// Anything else: a timeout, a connection error, a hook that declined.
    /// Worth another try.
    Failed {
        /// What git printed.
        said: String,
    },
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

    /// Pushes local `branch` to `target` once: `git push --porcelain`,
    /// never forced, stopped after `timeout`.
    pub fn push_once(&self, branch: &str, target: &Target, timeout: Duration) -> Result<Pushed> {
        let refspec = format!("refs/heads/{branch}:refs/heads/{}", target.branch);
        let args = [
            "push",
            "--porcelain",
            target.remote.as_str(),
            refspec.as_str(),
        ];
        let action = format!("push {branch} to {target}");
        let Some(output) = self.remote_git("push", &args, &action, timeout)? else {
            return Ok(Pushed::Failed {
                said: format!("git push did not finish in {}s", timeout.as_secs()),
            });
        };
        let stdout = String::from_utf8_lossy(&output.stdout);
        let said = format!("{}{}", String::from_utf8_lossy(&output.stderr), stdout)
            .trim_end()
            .to_owned();
        // `<flag>\t<from>:<to>\t<summary>`: `!` refused, `=` up to date.
        let line = stdout
            .lines()
            .find(|line| line.contains(&format!(":refs/heads/{}\t", target.branch)));
        Ok(match line.and_then(|line| line.chars().next()) {
            Some('=') => Pushed::Done { up_to_date: true },
            Some(_) if output.status.success() => Pushed::Done { up_to_date: false },
            Some('!') if line.is_some_and(|l| l.contains("[rejected]")) => Pushed::Rejected {
                remote_tip: self.remote_tip(target),
            },
            _ => Pushed::Failed { said },
        })
    }

    /// The tip of `target` on the remote, by `git ls-remote`.
    fn remote_tip(&self, target: &Target) -> Option<String> {
        let name = format!("refs/heads/{}", target.branch);
        let output = self
            .remote_command()
            .ok()?
            .args(["ls-remote", target.remote.as_str(), name.as_str()])
            .stdin(Stdio::null())
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&output.stdout);
        text.split_whitespace().next().map(str::to_owned)
    }
}
