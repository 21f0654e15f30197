//! Questions put to the user's own `git` command, where the answer
//! depends on more than libgit2 reports (docs/GIT.md).

use std::path::PathBuf;
use std::process::Command;

use super::Repo;
use super::error::{Error, Result};

impl Repo {
    /// `git args` in the working tree: its standard output, or `None`
    /// when there is no `git` command or it fails.
    fn git_output(&self, args: &[&str]) -> Option<String> {
        let mut command = Command::new("git");
        command.arg("-C").arg(self.workdir()).args(args);
        crate::platform::stdout_of(&mut command)
    }

    /// Fails when the base branch is checked out in another worktree of
    /// the repository: a commit onto it would leave that worktree's files
    /// behind its branch (git itself refuses to check a branch out twice).
    pub(super) fn check_base_free(&self) -> Result<()> {
        let Some(list) = self.git_output(&["worktree", "list", "--porcelain"]) else {
            return Ok(());
        };
        let here = self.workdir().canonicalize().ok();
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
