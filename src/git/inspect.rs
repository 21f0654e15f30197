//! Read-only questions about the repository for `ralph doctor`: what the
//! preflight of a run would refuse, each check on its own, and the hooks,
//! signing, lock files and remotes in effect.

use std::path::PathBuf;

use super::error::{Context, Error, Result};
use super::{Head, Repo};

/// The hooks `git commit` runs: ralph's squash and bookkeeping commits on
/// the base go through it when one of them exists.
pub const COMMIT_HOOKS: [&str; 4] = [
    "pre-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
];

/// The hooks of the repository: the executable files of its hooks folder
/// that are not git's samples.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hooks {
    /// The folder, as `core.hooksPath` names it or relative to the working
    /// tree (`.git/hooks`).
    pub place: String,
    /// The hooks' names, sorted.
    pub names: Vec<String>,
}

/// How the repository signs commits, when `commit.gpgsign` asks for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signing {
    /// `gpg.format` (`openpgp` when unset).
    pub format: String,
    /// `user.signingkey`, when set.
    pub key: Option<String>,
}

impl Repo {
    /// What the preflight of a run ([`Repo::preflight`]) would refuse,
    /// every check made even when another failed, nothing changed: an
    /// operation in progress, a detached HEAD the run cannot leave for the
    /// base ([`Repo::leave_detached_head`] checks the base out when HEAD is
    /// at or behind its tip), the base checked out in another worktree, and
    /// uncommitted changes, unless HEAD is on `resumed`, the branch a
    /// stopped run left its task on (the next run commits them there
    /// first). Signing is [`Repo::signing`]'s.
    pub fn preflight_problems(&self, resumed: Option<&str>) -> Vec<Error> {
        let mut problems = Vec::new();
        if let Err(err) = self.check_no_operation() {
            problems.push(err);
        }
        let head = match self.head() {
            Ok(head) => head,
            Err(err) => {
                problems.push(err);
                return problems;
            }
        };
        if let Head::Detached(at) = &head {
            match self.is_behind_base(at.as_str()) {
                Ok(true) => {}
                Ok(false) => problems.push(Error::DetachedHead {
                    short: at.short().to_owned(),
                }),
                Err(err) => problems.push(err),
            }
        }
        if let Err(err) = self.check_base_free() {
            problems.push(err);
        }
        if let Err(err) = self.index() {
            problems.push(err);
        }
        let resuming = matches!((&head, resumed), (Head::Branch(on), Some(branch)) if on == branch);
        if !resuming && let Err(err) = self.check_clean() {
            problems.push(err);
        }
        problems
    }

    /// Whether commit `at` is the base's tip or one of its ancestors.
    pub(super) fn is_behind_base(&self, at: &str) -> Result<bool> {
        let head = git2::Oid::from_str(at).doing("read HEAD")?;
        let base = self.tip(&self.base)?.id();
        Ok(head == base
            || self
                .git
                .graph_descendant_of(base, head)
                .doing("compare HEAD with the base")?)
    }

    /// How commits are signed here, `None` when `commit.gpgsign` is off
    /// (read through the user's `git`, as the preflight reads it). With
    /// signing on, a trial signature must work ([`Error::Signing`] says
    /// what git said); its commit object is left unreferenced, as the
    /// preflight's is.
    pub fn signing(&self) -> Result<Option<Signing>> {
        if self
            .config_value(&["--type=bool", "commit.gpgsign"])?
            .as_deref()
            != Some("true")
        {
            return Ok(None);
        }
        self.check_signing()?;
        Ok(Some(Signing {
            format: self
                .config_value(&["gpg.format"])?
                .unwrap_or_else(|| "openpgp".to_owned()),
            key: self.config_value(&["user.signingkey"])?,
        }))
    }

    /// `git config <args>`: the value, `None` when unset.
    fn config_value(&self, args: &[&str]) -> Result<Option<String>> {
        let mut all = vec!["config", "--get"];
        all.extend_from_slice(args);
        let ran = self.run_git(&all, b"", &format!("read {}", args[args.len() - 1]))?;
        let value = String::from_utf8_lossy(&ran.stdout).trim().to_owned();
        Ok((ran.success && !value.is_empty()).then_some(value))
    }

    /// The hooks git runs here: the executable files of `core.hooksPath`,
    /// or of the git folder's `hooks/`, apart from `*.sample`.
    pub fn hooks(&self) -> Hooks {
        let configured = self
            .config()
            .and_then(|c| c.get_string("core.hooksPath").ok());
        let folder = match &configured {
            Some(dir) if std::path::Path::new(dir).is_relative() => self.workdir().join(dir),
            Some(dir) => PathBuf::from(dir),
            None => self.git.commondir().join("hooks"),
        };
        let place = configured.unwrap_or_else(|| {
            folder
                .strip_prefix(self.workdir())
                .unwrap_or(&folder)
                .display()
                .to_string()
        });
        let names = super::hooks::hook_names(&folder);
        Hooks { place, names }
    }

    /// The lock files git takes to change the index, HEAD or a ref that
    /// exist now: held by a git process at work, or left by one that died
    /// (the loop removes those at its start, [`Repo::clear_stale_locks`]).
    /// Relative to the working tree where they are inside it.
    pub fn lock_files(&self) -> Vec<PathBuf> {
        super::locks::lock_files(self.git.path(), self.git.commondir())
            .into_iter()
            .map(|lock| match lock.strip_prefix(self.workdir()) {
                Ok(inside) => inside.to_owned(),
                Err(_) => lock,
            })
            .collect()
    }

    /// Lists ralph's runtime files in the repository's own exclude file
    /// (`.git/info/exclude`, never committed), so an agent's `git add -A`
    /// never stages them even when it rewrites `.gitignore` without
    /// them: they would reach the base with its work. Returns whether it
    /// added a line.
    pub fn exclude_runtime_files(&self) -> Result<bool> {
        // Never through a link: the file is git's, and ralph writes it.
        let git_dir = self.git.commondir();
        let path = git_dir.join("info").join("exclude");
        let text = crate::files::own::read_text(git_dir, &path)
            .map_err(super::error::io_error(&path))?
            .unwrap_or_default();
        let missing: Vec<String> = self
            .runtime
            .iter()
            .map(|rel| format!("/{rel}"))
            .filter(|pattern| !text.lines().any(|line| line.trim_end() == pattern))
            .collect();
        if missing.is_empty() {
            return Ok(false);
        }
        let header = "ralph's runtime files (added by ralph run)";
        let text = crate::files::patterns_text(&text, header, &missing);
        crate::files::own::append(git_dir, &path, text.as_bytes())
            .map_err(super::error::io_error(&path))?;
        Ok(true)
    }

    /// Whether the repository has a remote called `name`.
    pub fn has_remote(&self, name: &str) -> bool {
        self.git.find_remote(name).is_ok()
    }

    /// Refuses a push of `branch` (to `remote`, else where
    /// [`Repo::push_target`] sends it) to a remote the repository lacks.
    pub fn check_push_remote(
        &self,
        branch: &str,
        remote: Option<&str>,
        pull_request: bool,
    ) -> Result<()> {
        let remote = self.push_target(branch, remote).remote;
        if self.has_remote(&remote) {
            return Ok(());
        }
        Err(super::Error::NoRemote {
            remote,
            pull_request,
        })
    }
}
