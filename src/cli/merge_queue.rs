//! `ralph merge-queue O A B PATH`: git's merge driver for the queue files
//! (docs/SCALE.md): the merge of `src/task/merge.rs`, written to `A`.

use std::path::{Path, PathBuf};

use clap::Args;

use super::{Context, Outcome};
use crate::error::{Error, Exit};
use crate::task::merge::{File, merge_file};

/// Arguments of `ralph merge-queue`, as git's `%O %A %B %P` give them.
#[derive(Debug, Args)]
pub struct MergeQueueArgs {
    /// The common ancestor's version (%O)
    pub base: PathBuf,
    /// This side's version, replaced by the result (%A)
    pub ours: PathBuf,
    /// The other side's version (%B)
    pub theirs: PathBuf,
    /// The file's path in the repository (%P): tasks.jsonl or tasks-done.jsonl
    pub path: PathBuf,
}

/// Merges, writes the result over `ours`; exit 1 when both sides added
/// an id as different tasks (both lines kept, for a person).
pub(super) fn run(args: &MergeQueueArgs, context: &Context) -> Result<Outcome, Error> {
    let name = args.path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let file = match name {
        crate::paths::TASKS_FILE => File::Tasks,
        crate::paths::DONE_FILE => File::Done,
        _ => {
            return Err(crate::task::Error::Refused {
                message: format!("{} is not a queue file", args.path.display()),
                hint: Some("merge-queue merges tasks.jsonl and tasks-done.jsonl; set it as their merge driver only (docs/SCALE.md)".to_owned()),
            }
            .into());
        }
    };
    let read = |path: &Path| std::fs::read(path).map_err(crate::files::at::<Error>(path));
    let archive = match file {
        // Git merges one file at a time: the working tree's archive.
        File::Tasks => {
            let path = context
                .cwd
                .join(args.path.with_file_name(crate::paths::DONE_FILE));
            crate::files::read_or_empty(&path).map_err(crate::files::at::<Error>(&path))?
        }
        File::Done => Vec::new(),
    };
    let merged = merge_file(
        file,
        &read(&args.base)?,
        &read(&args.ours)?,
        &read(&args.theirs)?,
        &archive,
    );
    let bytes = match file {
        File::Tasks => &merged.tasks,
        File::Done => &merged.done,
    };
    std::fs::write(&args.ours, bytes).map_err(crate::files::at::<Error>(&args.ours))?;
    let mut said = String::new();
    for warning in &merged.warnings {
        said.push_str(&format!("ralph merge-queue: {name}: {warning}\n"));
    }
    for id in &merged.collisions {
        said.push_str(&format!(
            "ralph merge-queue: {name}: both sides added {id} as different tasks; both lines are kept: renumber one (`ralph task validate` names them)\n"
        ));
    }
    Ok(Outcome {
        stdout: String::new(),
        stderr: said,
        // Git reads any exit but 0 as a conflict to resolve by hand.
        exit: (!merged.collisions.is_empty()).then_some(Exit::NothingToDo),
    })
}
