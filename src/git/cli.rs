//! Questions put to the user's own `git` command, where the answer
//! depends on more than libgit2 reports (docs/GIT.md).

use std::process::{Command, Stdio};

use super::Repo;

impl Repo {
    /// The queue files git ignores (untracked, and matched by an ignore
    /// rule), each with the rule that matches it, as `.gitignore:3: *.jsonl`.
    /// Such a file never reaches the base's history. Best effort: without a
    /// `git` command, none.
    pub fn ignored_queue_files(&self) -> Vec<(String, String)> {
        let mut command = Command::new("git");
        command
            .arg("-C")
            .arg(self.workdir())
            .args(["check-ignore", "--verbose", "--"])
            .args(self.queue.iter().map(|file| file.rel.as_str()))
            .stdin(Stdio::null())
            .stderr(Stdio::null());
        // Exit 1: nothing ignored.
        let Ok(output) = command.output() else {
            return Vec::new();
        };
        String::from_utf8_lossy(&output.stdout)
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
