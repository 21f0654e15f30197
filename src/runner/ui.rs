//! What a run shows a person: a live status line on a terminal (indicatif),
//! plain lines otherwise, and `ralph.log`, a line per iteration. Secrets
//! are masked in all of them.

use crate::paths::Paths;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use crate::redact::redact;

/// The run's output to a person.
pub(crate) struct Ui {
    bar: Option<ProgressBar>,
    quiet: bool,
    log: PathBuf,
    /// The project root, from which `ralph.log` is reached without a link.
    root: PathBuf,
    /// What each line starts with: `w2 ` for parallel worker 2.
    prefix: String,
}

impl Ui {
    /// Output for the project at `paths`; `quiet` keeps only the summary.
    pub(crate) fn new(paths: &Paths, quiet: bool) -> Ui {
        let live = !quiet && std::io::stderr().is_terminal();
        let bar = live.then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                    .expect("a valid template"),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Ui {
            bar,
            quiet,
            log: paths.log(),
            root: paths.project().to_owned(),
            prefix: String::new(),
        }
    }

    /// Output of parallel worker `number`: plain lines starting `w<number>`.
    pub(crate) fn worker(paths: &Paths, quiet: bool, number: u32) -> Ui {
        Ui {
            bar: None,
            quiet,
            log: paths.log(),
            root: paths.project().to_owned(),
            prefix: format!("w{number} "),
        }
    }

    /// A line for the person (stderr), kept above the status line.
    pub(crate) fn line(&self, text: &str) {
        self.show(&redact(&format!("{}{text}", self.prefix)));
    }

    fn show(&self, text: &str) {
        if self.quiet {
            return;
        }
        match &self.bar {
            Some(bar) => bar.println(text),
            None => say(text),
        }
    }

    /// The live status (iteration, task, role); shown on a terminal only.
    pub(crate) fn status(&self, text: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(redact(text).into_owned());
        }
    }

    /// A line for `ralph.log` (and the person), stamped with the time.
    pub(crate) fn log(&self, text: &str) {
        let text = format!("{}{text}", self.prefix);
        let text = &redact(&text);
        self.show(text);
        let line = format!("{} {text}\n", crate::clock::now());
        // The human log is best effort: a full disk must not stop the loop
        // (a link there does: see `runner::check_own_files`).
        let _ = crate::files::own::append(&self.root, &self.log, line.as_bytes());
    }

    /// The closing summary: always printed, even with `--quiet`.
    pub(crate) fn summary(&self, text: &str) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        say(&redact(text));
    }
}

/// Writes `text` and a newline to stderr, ignoring a reader that went
/// away (`ralph run 2>&1 | head`, a closed terminal): the run goes on
/// and ends as it would, where `eprintln!` would panic.
pub(crate) fn say(text: &str) {
    use std::io::Write;
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{text}").and_then(|()| stderr.flush());
}
