//! `ralph task ...`: read and change the queue.

use std::fmt::Write;

use clap::{Args, Subcommand};
use serde_json::{Map, Value, json};

use super::text::safe;
use super::{Context, Outcome, to_json};
use crate::error::Error;
use crate::exit::Exit;
use crate::task::{Change, Counts, NewTask, Patch, Queue, Status, Store, TaskId, TreeNode};

/// The `ralph task` subcommands.
#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Add a pending leaf task and print its id
    Add(AddArgs),
    /// List the tasks of tasks.jsonl in file order
    List(ListArgs),
    /// Draw the hierarchy with a status mark per task, and counts
    Tree,
    /// Print the task the loop works on next (exit 1 when there is none)
    Next,
    /// Show one task, live or archived
    Show(IdArg),
    /// Mark a leaf task active
    Start(IdArg),
    /// Mark a leaf task ready for review
    Ready(IdArg),
    /// Mark a leaf task complete
    Complete(IdArg),
    /// Mark a task blocked, with the reason
    Block(BlockArgs),
    /// Turn a leaf task into a container with new leaf children
    Split(SplitArgs),
    /// Move a task to tasks-done.jsonl (its parents follow once empty)
    Archive(ArchiveArgs),
    /// Check both task files and print counts
    Validate,
    /// Give a ready task the reviewer's verdict: --pass completes it, --reject sends it back with the reasons
    Review(ReviewArgs),
    /// Add a dated note to a task, shown in every later prompt for it
    Note(NoteArgs),
    /// Let a blocked task's change to protected paths (config/, roles/, ...) through, as it is now
    Approve(IdArg),
}

/// Arguments of `task review`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("verdict").required(true).args(["pass", "reject"])))]
pub struct ReviewArgs {
    /// The ready task
    pub id: TaskId,
    /// The work is done: the task becomes complete (its checks and squash follow)
    #[arg(long)]
    pub pass: bool,
    /// Not yet: the task goes back to active, with the notes as the reasons
    #[arg(long, requires = "notes_given")]
    pub reject: bool,
    /// The reasons, or what the next iteration should know
    #[arg(
        long,
        allow_hyphen_values = true,
        value_name = "TEXT",
        group = "notes_given"
    )]
    pub notes: Option<String>,
    /// Read the notes from this file (`-`: standard input)
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "notes",
        group = "notes_given"
    )]
    pub notes_file: Option<std::path::PathBuf>,
}

/// Arguments of `task note`.
#[derive(Debug, Args)]
pub struct NoteArgs {
    /// The task's id
    pub id: TaskId,
    /// What was learned, what is left, what failed
    #[arg(allow_hyphen_values = true)]
    pub text: String,
}

/// Arguments of `task add`.
#[derive(Debug, Args)]
pub struct AddArgs {
    /// One-line description
    pub title: String,
    /// Add under this task [default: top level]
    #[arg(long, value_name = "ID")]
    pub parent: Option<TaskId>,
    /// Use this id [default: the next free one]
    #[arg(long, value_name = "ID")]
    pub id: Option<TaskId>,
    /// Details for the agent's prompt
    #[arg(long, allow_hyphen_values = true, value_name = "TEXT")]
    pub body: Option<String>,
    /// A task that must be done first (repeatable)
    #[arg(long = "dep", value_name = "ID")]
    pub deps: Vec<TaskId>,
    /// An acceptance criterion, shown to the agent as a checklist (repeatable)
    #[arg(long, allow_hyphen_values = true, value_name = "TEXT")]
    pub acceptance: Vec<String>,
    /// A file to focus on, shown to the agent (repeatable)
    #[arg(long, allow_hyphen_values = true, value_name = "PATH")]
    pub files: Vec<String>,
    /// A command that must pass before the task is merged (repeatable)
    #[arg(long, allow_hyphen_values = true, value_name = "CMD")]
    pub verify: Vec<String>,
}

/// Arguments of `task list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only tasks with this status (pending, active, ready, complete, blocked)
    #[arg(long, value_name = "S")]
    pub status: Option<Status>,
    /// Only leaf tasks
    #[arg(long)]
    pub leaf: bool,
}

/// A task id argument.
#[derive(Debug, Args)]
pub struct IdArg {
    /// The task's id, e.g. A.1.2
    pub id: TaskId,
}

/// Arguments of `task block`.
#[derive(Debug, Args)]
pub struct BlockArgs {
    /// The task's id
    pub id: TaskId,
    /// Why the task cannot go on (shown to people and the agent)
    #[arg(long, allow_hyphen_values = true, value_name = "TEXT")]
    pub reason: String,
}

/// Arguments of `task split`.
#[derive(Debug, Args)]
pub struct SplitArgs {
    /// The leaf task to split
    pub id: TaskId,
    /// A title for each new child, in order
    #[arg(required = true)]
    pub titles: Vec<String>,
}

/// Arguments of `task archive`.
#[derive(Debug, Args)]
pub struct ArchiveArgs {
    /// The task's id
    pub id: TaskId,
    /// The commit that completed the task
    #[arg(long, value_name = "SHA")]
    pub commit: Option<String>,
}

/// Runs one `ralph task` command.
pub(super) fn run(command: TaskCommand, context: &Context) -> Result<Outcome, Error> {
    let store = Store::open(&context.paths);
    let json = context.json;
    // Warnings about the files themselves go to stderr ahead of the output.
    let warnings = std::cell::RefCell::new(String::new());
    let apply = |patch: Patch| -> Result<Vec<Change>, Error> {
        let changes = store.apply(&patch, &context.now)?;
        for change in &changes {
            match change {
                Change::TornLineMoved { line, to } => {
                    let _ = writeln!(
                        warnings.borrow_mut(),
                        "warning: tasks-done.jsonl:{line}: a torn last line (a crash during an append?) was moved to {}",
                        to.display()
                    );
                }
                Change::OnKnownQueue(id) => {
                    let _ = writeln!(
                        warnings.borrow_mut(),
                        "warning: tasks.jsonl lacks {id} (git reverted the file, or a hand edit removed the task): the change was made to the queue as ralph last knew it, which the run puts back after this iteration if git reverted the file; never let git revert tasks.jsonl"
                    );
                }
                _ => {}
            }
        }
        Ok(changes)
    };
    let load = || -> Result<Queue, Error> {
        let queue = store.load()?;
        if let Some(torn) = queue.done.torn() {
            let _ = writeln!(
                warnings.borrow_mut(),
                "{}",
                crate::task::Torn::ignored_warning(torn.line)
            );
        }
        Ok(queue)
    };
    // What an agent writes into the queue is committed to the base: its
    // secrets are masked there as in ralph.log and the events.
    let mask = |text: String| -> String {
        if context.in_run {
            crate::redact::redact(&text).into_owned()
        } else {
            text
        }
    };
    let outcome = (|| -> Result<Outcome, Error> {
        Ok(match command {
            TaskCommand::Add(args) => {
                for (flag, value, items) in [
                    ("--acceptance", "TEXT", &args.acceptance),
                    ("--files", "PATH", &args.files),
                    ("--verify", "CMD", &args.verify),
                ] {
                    if items.iter().any(|item| item.trim().is_empty()) {
                        return Err(crate::task::Error::refused(format!(
                            "{flag} cannot be empty; pass a non-empty {value} or leave the flag out"
                        ))
                        .into());
                    }
                }
                let masked = |items: Vec<String>| items.into_iter().map(mask).collect();
                // `--dep A --dep A` names one dependency.
                let mut deps = args.deps;
                let mut named = std::collections::HashSet::new();
                deps.retain(|dep| named.insert(dep.clone()));
                let changes = apply(Patch::Add(NewTask {
                    title: mask(args.title),
                    parent: args.parent,
                    id: args.id,
                    body: args.body.map(mask),
                    deps,
                    acceptance: masked(args.acceptance),
                    files: masked(args.files),
                    verify: masked(args.verify),
                    ..NewTask::default()
                }))?;
                added(&store, &changes, json)?
            }
            TaskCommand::List(args) => list(&load()?, &args, json)?,
            TaskCommand::Tree => tree(&load()?, json),
            TaskCommand::Next => next(&load()?, json)?,
            TaskCommand::Show(args) => show(&load()?, &args.id, json, || {
                squash_commit(context, &args.id)
            })?,
            TaskCommand::Start(args) => status_changed(&apply(set(args.id, Status::Active))?, json),
            TaskCommand::Ready(args) => status_changed(&apply(set(args.id, Status::Ready))?, json),
            TaskCommand::Complete(args) => {
                status_changed(&apply(set(args.id, Status::Complete))?, json)
            }
            TaskCommand::Block(args) => status_changed(
                &apply(Patch::Block {
                    id: args.id,
                    reason: mask(args.reason),
                })?,
                json,
            ),
            TaskCommand::Split(args) => split(
                &apply(Patch::Split {
                    id: args.id,
                    titles: args.titles.into_iter().map(mask).collect(),
                })?,
                json,
            ),
            TaskCommand::Archive(args) => archived(
                &apply(Patch::Archive {
                    id: args.id,
                    commit: args.commit,
                })?,
                json,
            ),
            TaskCommand::Validate => validate(&load()?, json),
            TaskCommand::Review(args) => {
                let notes = review_notes(&args, context)?;
                review(&args, mask(notes), &load()?, &apply, context, json)?
            }
            TaskCommand::Note(args) => note(&args.id, &mask(args.text), &load()?, context, json)?,
            TaskCommand::Approve(args) => approve(&args.id, &load()?, &apply, context, json)?,
        })
    })();
    let mut outcome = outcome?;
    outcome.stderr.insert_str(0, &warnings.into_inner());
    Ok(outcome)
}

fn set(id: TaskId, status: Status) -> Patch {
    Patch::SetStatus { id, status }
}

/// A live task's stored object, with the status written canonically.
fn object_of(queue: &Queue, id: &str) -> Result<Map<String, Value>, Error> {
    let index = queue.tasks.position(id).expect("caller found the task");
    let mut object = queue.tasks.object(index)?;
    if let Some(task) = &queue.tasks.lines()[index].task {
        object.insert("status".into(), task.status.as_str().into());
    }
    Ok(object)
}

fn added(store: &Store, changes: &[Change], json: bool) -> Result<Outcome, Error> {
    let mut outcome = Outcome::default();
    for change in changes {
        match change {
            Change::BecameContainer(parent) => {
                let _ = writeln!(
                    outcome.stderr,
                    "note: {parent} is now a container (\"leaf\": false)"
                );
            }
            Change::Added(id) if json => {
                // Read back what was written (a fresh load is the truth).
                let queue = store.load()?;
                outcome.stdout = to_json(&object_of(&queue, id.as_str())?);
            }
            Change::Added(id) => outcome.stdout = format!("{id}\n"),
            _ => {}
        }
    }
    Ok(outcome)
}

fn list(queue: &Queue, args: &ListArgs, json: bool) -> Result<Outcome, Error> {
    let tasks: Vec<_> = queue
        .live_tasks()
        .map(|(_, task)| task)
        .filter(|task| args.status.is_none_or(|status| task.status == status))
        .filter(|task| !args.leaf || task.leaf)
        .collect();
    if json {
        let objects = tasks
            .iter()
            .map(|task| object_of(queue, task.id.as_str()))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(Outcome::print(to_json(&objects)));
    }
    let width = tasks
        .iter()
        .map(|task| task.id.as_str().len())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for task in tasks {
        let kind = if task.leaf { "" } else { "  (container)" };
        let _ = writeln!(
            out,
            "{:width$}  {:8}  {}{kind}",
            task.id.as_str(),
            task.status.as_str(),
            safe(&task.title)
        );
    }
    Ok(Outcome::print(out))
}

fn mark(status: Option<Status>) -> &'static str {
    match status {
        Some(Status::Pending) => "[ ]",
        Some(Status::Active) => "[>]",
        Some(Status::Ready) => "[?]",
        Some(Status::Complete) => "[x]",
        Some(Status::Blocked) => "[!]",
        None => "[✓]",
    }
}

pub(super) fn counts_json(counts: &Counts) -> Value {
    let mut object = Map::new();
    for status in Status::ALL {
        object.insert(status.as_str().into(), counts.with(status).into());
    }
    object.insert("archived".into(), counts.archived.into());
    Value::Object(object)
}

/// Each status some tasks have, with their count: `2 pending`.
pub(super) fn statuses(counts: &Counts) -> Vec<String> {
    (Status::ALL.iter())
        .filter(|status| counts.with(**status) > 0)
        .map(|status| format!("{} {status}", counts.with(*status)))
        .collect()
}

fn counts_line(counts: &Counts) -> String {
    let statuses: Vec<String> = Status::ALL
        .iter()
        .map(|status| format!("{} {status}", counts.with(*status)))
        .collect();
    format!(
        "{}: {}; {} archived",
        crate::text::count(counts.active_total(), "task"),
        statuses.join(", "),
        counts.archived
    )
}

fn tree(queue: &Queue, json: bool) -> Outcome {
    let roots = queue.tree();
    let counts = queue.counts();
    if json {
        fn node_json(node: &TreeNode) -> Value {
            json!({
                "id": node.id,
                "title": node.title,
                "status": node.status.map_or("archived", Status::as_str),
                "leaf": node.leaf,
                "done": node.done,
                "total": node.total,
                "children": node.children.iter().map(node_json).collect::<Vec<_>>(),
            })
        }
        let tasks: Vec<Value> = roots.iter().map(node_json).collect();
        return Outcome::print(to_json(
            &json!({ "tasks": tasks, "counts": counts_json(&counts) }),
        ));
    }
    fn draw(out: &mut String, node: &TreeNode, prefix: &str, branch: &str, rest: &str) {
        let progress = if node.children.is_empty() {
            String::new()
        } else {
            format!("  ({}/{} done)", node.done, node.total)
        };
        let _ = writeln!(
            out,
            "{prefix}{branch}{} {} {}{progress}",
            mark(node.status),
            node.id,
            safe(&node.title)
        );
        let inner = format!("{prefix}{rest}");
        for (i, child) in node.children.iter().enumerate() {
            let last = i + 1 == node.children.len();
            let (branch, rest) = if last {
                ("└── ", "    ")
            } else {
                ("├── ", "│   ")
            };
            draw(out, child, &inner, branch, rest);
        }
    }
    let mut out = String::new();
    for root in &roots {
        draw(&mut out, root, "", "", "");
    }
    if !roots.is_empty() {
        out.push('\n');
    }
    let _ = writeln!(out, "{}", counts_line(&counts));
    Outcome::print(out)
}

fn next(queue: &Queue, json: bool) -> Result<Outcome, Error> {
    match queue.next() {
        Some(task) if json => Ok(Outcome::print(to_json(&object_of(
            queue,
            task.id.as_str(),
        )?))),
        Some(task) => Ok(Outcome::print(format!(
            "{} {}\n",
            task.id,
            safe(&task.title)
        ))),
        None => {
            let counts = queue.counts();
            let why = if counts.active_total() == 0 {
                "tasks.jsonl has no tasks".to_owned()
            } else {
                let mut why = vec![statuses(&counts).join(", ")];
                why.extend(idle_reasons(queue, &counts));
                why.join("; ")
            };
            Ok(Outcome {
                stderr: format!("no workable task ({why})\n"),
                exit: Some(Exit::NothingToDo),
                ..Outcome::default()
            })
        }
    }
}

/// Why the tasks of `queue` (with `counts`) wait, when none is workable:
/// containers with nothing open under them, each sort with what becomes
/// of it, then the others.
fn idle_reasons(queue: &Queue, counts: &Counts) -> Vec<String> {
    let mut reasons = Vec::new();
    let emptied = queue.emptied_containers();
    if !emptied.is_empty() {
        reasons.push(crate::task::emptied_message(&emptied));
    }
    let childless = queue.childless_containers();
    if !childless.is_empty() {
        let (what, fix) = crate::task::childless_message(&childless);
        reasons.push(format!("{what}: {fix}"));
    }
    if counts.active_total() > emptied.len() + childless.len() {
        reasons.push("pending ones wait on deps or a blocked parent".to_owned());
    }
    reasons
}

/// How far back on the base `ralph task show` looks for a task's squash
/// commit.
const SQUASH_LOOK: usize = 10_000;

/// The squash commit on the base that completed archived task `id` (its
/// `Completes:` trailer), with the base's name, when the project's
/// repository has one.
fn squash_commit(context: &Context, id: &TaskId) -> Option<(crate::git::BranchCommit, String)> {
    let settings = crate::config::Settings::load_with_env(&context.paths).ok()?;
    let repo = crate::runner::worker::open_repo(&context.paths, &settings, None).ok()?;
    let trailer = format!("Completes: {id}");
    let commit = repo
        .base_commit_with_trailer(&trailer, SQUASH_LOOK)
        .ok()??;
    Some((commit, repo.base().to_owned()))
}

fn show(
    queue: &Queue,
    id: &TaskId,
    json: bool,
    squash: impl FnOnce() -> Option<(crate::git::BranchCommit, String)>,
) -> Result<Outcome, Error> {
    let id_str = id.as_str();
    let (object, archived_line) = if queue.get(id_str).is_some() {
        (object_of(queue, id_str)?, None)
    } else if let Some(record) = queue.done.record(id_str) {
        (record, queue.done.line_of(id_str))
    } else {
        return Err(crate::task::Error::NotFound {
            id: id.to_string(),
            place: "tasks.jsonl or tasks-done.jsonl",
        }
        .into());
    };
    let mut outcome = Outcome::default();
    if archived_line.is_some()
        && let Some(index) = queue.tasks.position(id_str)
    {
        let _ = writeln!(
            outcome.stderr,
            "note: tasks.jsonl line {} still holds {id}, left by an archive cut short; it reads as archived, and `ralph task archive {id}` (or the next run) removes the line",
            index + 1
        );
    }
    if json {
        outcome.stdout = to_json(&object);
        return Ok(outcome);
    }
    let mut out = String::new();
    let title = object.get("title").and_then(Value::as_str).unwrap_or("");
    let _ = write!(out, "{id}  {}", safe(title));
    match archived_line {
        Some(line) => {
            let _ = writeln!(out, "  (archived, tasks-done.jsonl line {line})");
        }
        None => out.push('\n'),
    }
    let ancestors: Vec<String> = std::iter::successors(id.parent(), TaskId::parent)
        .map(|ancestor| match queue.get(ancestor.as_str()) {
            Some(task) => format!("{ancestor} {}", safe(&task.title)),
            None => ancestor.to_string(),
        })
        .collect();
    if !ancestors.is_empty() {
        let path: Vec<&str> = ancestors.iter().rev().map(String::as_str).collect();
        let _ = writeln!(out, "parents:  {}", path.join(" > "));
    }
    for (key, value) in &object {
        if key == "id" || key == "title" {
            continue;
        }
        // An archive record's `commit` is the task branch's tip (kept
        // under refs/ralph/tasks/<id>); the base has the squash of it.
        if let (true, "commit", Value::String(tip)) = (archived_line.is_some(), key.as_str(), value)
        {
            let _ = writeln!(out, "branch tip: {} (refs/ralph/tasks/{id})", safe(tip));
            continue;
        }
        match value {
            // The richer fields read as lists: one criterion, file or
            // command a line.
            Value::Array(items)
                if ["acceptance", "files", "verify"].contains(&key.as_str())
                    && !items.is_empty()
                    && items.iter().all(Value::is_string) =>
            {
                let _ = writeln!(out, "{key}:");
                for item in items.iter().filter_map(Value::as_str) {
                    let _ = writeln!(out, "  - {}", safe(item));
                }
            }
            Value::String(text) if text.contains('\n') => {
                let _ = writeln!(out, "{key}:");
                for line in text.lines() {
                    let _ = writeln!(out, "  {}", safe(line));
                }
            }
            Value::String(text) => {
                let _ = writeln!(out, "{key}: {}", safe(text));
            }
            other => {
                let _ = writeln!(out, "{key}: {}", safe(&other.to_string()));
            }
        }
    }
    if archived_line.is_some()
        && let Some((commit, base)) = squash()
    {
        let _ = writeln!(
            out,
            "squash commit: {} on {base} ({})",
            commit.id.as_str(),
            safe(&commit.subject)
        );
    }
    let children: Vec<String> = queue
        .children(id_str)
        .into_iter()
        .filter_map(|index| queue.tasks.lines()[index].task.as_ref())
        .map(|task| format!("{} ({})", task.id, task.status))
        .collect();
    if !children.is_empty() {
        let _ = writeln!(out, "children: {}", children.join(", "));
    }
    outcome.stdout = out;
    Ok(outcome)
}

fn status_changed(changes: &[Change], json: bool) -> Outcome {
    let mut out = String::new();
    for change in changes {
        if let Change::Status { id, from, to } = change {
            if json {
                out = to_json(
                    &json!({ "id": id.as_str(), "from": from.as_str(), "to": to.as_str() }),
                );
            } else if from == to {
                let _ = writeln!(out, "{id} is already {to}");
            } else {
                let _ = writeln!(out, "{id}: {from} -> {to}");
            }
        }
    }
    Outcome::print(out)
}

fn split(changes: &[Change], json: bool) -> Outcome {
    let mut out = String::new();
    for change in changes {
        if let Change::Split { id, children } = change {
            if json {
                let children: Vec<&str> = children.iter().map(TaskId::as_str).collect();
                out = to_json(&json!({ "id": id.as_str(), "children": children }));
            } else {
                for child in children {
                    let _ = writeln!(out, "{child}");
                }
            }
        }
    }
    Outcome::print(out)
}

fn archived(changes: &[Change], json: bool) -> Outcome {
    let mut archived = Vec::new();
    let mut already = Vec::new();
    for change in changes {
        match change {
            Change::Archived(id) => archived.push(id.as_str()),
            Change::AlreadyArchived(id) => already.push(id.as_str()),
            _ => {}
        }
    }
    if json {
        return Outcome::print(to_json(
            &json!({ "archived": archived, "already_archived": already }),
        ));
    }
    let mut out = String::new();
    for id in archived {
        let _ = writeln!(out, "archived {id}");
    }
    for id in already {
        let _ = writeln!(out, "{id} was archived already");
    }
    Outcome::print(out)
}

fn validate(queue: &Queue, json: bool) -> Outcome {
    let counts = queue.counts();
    if json {
        return Outcome::print(to_json(
            &json!({ "valid": true, "counts": counts_json(&counts) }),
        ));
    }
    Outcome::print(format!("ok: {}\n", counts_line(&counts)))
}

/// `task approve`: a person lets the change to protected paths a task
/// was blocked for through, as it is now; the task goes back to the
/// status it had. An agent cannot: the record is read-only to it when
/// confined, and an agent's environment says it is one.
fn approve(
    id: &TaskId,
    queue: &Queue,
    apply: &dyn Fn(Patch) -> Result<Vec<Change>, Error>,
    context: &Context,
    json: bool,
) -> Result<Outcome, Error> {
    use crate::protected::Approval;
    let task = super::live_task(queue, id)?;
    if std::env::var_os("RALPH_TASK_ID").is_some() {
        return Err(crate::task::Error::Refused {
            message: format!(
                "task {id}'s change to protected paths is a person's to approve, not an agent's"
            ),
            hint: Some("run `ralph task approve` yourself, outside the agent".to_owned()),
        }
        .into());
    }
    let paths = &context.paths;
    let waiting = Approval::load(paths, id.as_str()).filter(|a| a.approved.is_none());
    let Some(mut approval) = waiting else {
        return Err(crate::task::Error::Refused {
            message: format!("task {id} waits for no approval: its work changes no protected path, or it was approved"),
            hint: Some(format!("`ralph task show {id}` says why it is {}", task.status.as_str())),
        }
        .into());
    };
    approval.approved = Some(context.now.clone());
    let file = paths.approval(id.as_str());
    approval
        .save(paths, id.as_str())
        .map_err(crate::files::at::<Error>(file))?;
    let status = match approval.status.as_str() {
        "active" => Status::Active,
        _ => Status::Complete,
    };
    let changed: Vec<&str> = approval.changes.keys().map(String::as_str).collect();
    let changes = match task.status {
        Status::Blocked => apply(set(id.clone(), status))?,
        _ => Vec::new(),
    };
    if json {
        return Ok(Outcome::print(to_json(&json!({
            "id": id.as_str(),
            "approved": changed,
            "status": changes.iter().find_map(|c| match c {
                Change::Status { to, .. } => Some(to.as_str()),
                _ => None,
            }).unwrap_or(task.status.as_str()),
        }))));
    }
    let mut out = format!(
        "{id}: approved its change to {} on {}\n",
        crate::text::named(&changed, 10),
        approval.branch
    );
    out.push_str(&status_changed(&changes, false).stdout);
    Ok(Outcome::print(out))
}

/// The notes of `task review`: `--notes`, or the file (`-`: stdin).
fn review_notes(args: &ReviewArgs, context: &Context) -> Result<String, Error> {
    let text = match (&args.notes, &args.notes_file) {
        (Some(text), _) => text.clone(),
        (None, Some(path)) if path.as_os_str() == "-" => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map_err(|err| {
                crate::task::Error::refused(format!("cannot read the notes from stdin: {err}"))
            })?;
            text
        }
        (None, Some(path)) => std::fs::read_to_string(context.cwd.join(path)).map_err(|err| {
            crate::task::Error::refused(format!(
                "cannot read the notes from {}: {err}",
                path.display()
            ))
        })?,
        (None, None) => String::new(),
    };
    if args.reject && text.trim().is_empty() {
        return Err(crate::task::Error::refused(
            "a rejection needs its reasons: the notes are empty; say what is missing with --notes TEXT",
        )
        .into());
    }
    Ok(text.trim_end().to_owned())
}

/// `task review`: the verdict on a `ready` task, its notes kept for the
/// task's next prompts, an event, and the status it leads to.
fn review(
    args: &ReviewArgs,
    notes: String,
    queue: &Queue,
    apply: &dyn Fn(Patch) -> Result<Vec<Change>, Error>,
    context: &Context,
    json: bool,
) -> Result<Outcome, Error> {
    use crate::notes::{Review, Verdict};
    let id = &args.id;
    let task = super::live_task(queue, id)?;
    if task.status != Status::Ready {
        return Err(crate::task::Error::Refused {
            message: format!(
                "task {id} is {}, not ready: a verdict is for work marked ready for review",
                task.status.as_str()
            ),
            hint: Some(format!(
                "the agent marks it with `ralph task ready {id}`; `ralph task note {id} TEXT` keeps a note without a verdict"
            )),
        }
        .into());
    }
    let verdict = if args.pass {
        Verdict::Passed
    } else {
        Verdict::Rejected
    };
    let paths = &context.paths;
    // Given in an iteration, its number (the agent's environment says);
    // by hand, the iterations the task had.
    let task_iteration = std::env::var("RALPH_TASK_ITERATION")
        .ok()
        .filter(|_| context.in_run)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| {
            let state = crate::state::StateFile::open(paths).peek();
            state.tasks.get(id.as_str()).map_or(0, |p| p.iterations)
        });
    let record = Review {
        time: context.now.clone(),
        verdict,
        notes,
        task_iteration,
    };
    let status = verdict.status();
    // The status first: a verdict is recorded only once it took effect.
    apply(set(id.clone(), status))?;
    crate::notes::record_review(paths, id.as_str(), &record)?;
    if json {
        return Ok(Outcome::print(to_json(&json!({
            "id": id.as_str(),
            "verdict": verdict.as_str(),
            "status": status.as_str(),
        }))));
    }
    Ok(Outcome::print(match verdict {
        Verdict::Passed => format!("{id}: review passed: ready -> complete\n"),
        Verdict::Rejected => {
            format!("{id}: review rejected: ready -> active; the reasons are in its next prompt\n")
        }
    }))
}

/// `task note`: a dated note, in every later prompt for the task.
fn note(
    id: &TaskId,
    text: &str,
    queue: &Queue,
    context: &Context,
    json: bool,
) -> Result<Outcome, Error> {
    super::live_task(queue, id)?;
    if text.trim().is_empty() {
        return Err(crate::task::Error::refused(
            "the note is empty; write what was learned, what is left or what failed",
        )
        .into());
    }
    let path = context.paths.notes(id.as_str());
    crate::notes::append_note(context.paths.project(), &path, &context.now, "note", text)
        .map_err(crate::files::at::<Error>(path.clone()))?;
    let count = crate::notes::count(context.paths.project(), &path);
    if json {
        return Ok(Outcome::print(to_json(
            &json!({ "id": id.as_str(), "notes": count }),
        )));
    }
    Ok(Outcome::print(format!(
        "{id}: note added ({})\n",
        crate::text::count(count, "note")
    )))
}
