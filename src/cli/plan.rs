//! `ralph plan PRD`: compile a requirements document into tasks.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::{Value, json};

use super::text::safe;
use super::{Context, Outcome, to_json};
use crate::error::Error;
use crate::plan::{self, Plan};
use crate::task::{Change, Patch, Planned, Queue, Store, TaskId};

/// Arguments of `ralph plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The document: Markdown (docs/PLANNING.md), or the prd.json of snarktank/ralph or ralph-tui
    #[arg(
        value_name = "PRD",
        required_unless_present = "input",
        conflicts_with = "input"
    )]
    pub prd: Option<PathBuf>,
    /// The worker contract: plan the PRD a run-input.json names into DIR/plan.json (docs/contract/)
    #[arg(long, value_name = "FILE", requires = "out_dir", conflicts_with_all = ["agent", "parent", "update", "dry_run"])]
    pub input: Option<PathBuf>,
    /// Where the worker contract writes plan.json, progress.ndjson and result.json
    #[arg(long, value_name = "DIR", requires = "input")]
    pub out_dir: Option<PathBuf>,
    /// Print the tasks it would add and write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Plan under this task [default: top level]
    #[arg(long, value_name = "ID")]
    pub parent: Option<TaskId>,
    /// Rewrite the pending tasks whose requirement changed in the document
    #[arg(long)]
    pub update: bool,
    /// Let the agent plan a free-form document: one iteration with the planner role, no branch
    #[arg(long, conflicts_with_all = ["update", "parent", "dry_run"])]
    pub agent: bool,
    /// Custom agent command for --agent [default: the agent of config/ralph.yaml]
    #[arg(long, value_name = "CMD", requires = "agent")]
    pub agent_cmd: Option<String>,
    /// Echo the planner agent's output to the terminal
    #[arg(long, requires = "agent")]
    pub stream: bool,
    /// With --agent: N rounds of a plan reviewer's notes on the tasks, each followed by the planner's revision
    #[arg(long, value_name = "N", default_value_t = 0, requires = "agent")]
    pub review_rounds: usize,
}

/// Runs `ralph plan`.
pub(super) fn run(args: &PlanArgs, context: &Context) -> Result<Outcome, Error> {
    let (Some(prd), None) = (&args.prd, &args.input) else {
        let input = args.input.as_deref().expect("clap requires PRD or --input");
        let out_dir = args.out_dir.as_deref().expect("clap requires --out-dir");
        return contract_plan(input, out_dir, context);
    };
    let path = context.cwd.join(prd);
    let document = document_name(&path, &context.paths);
    let shown = prd.display().to_string();
    let bytes = std::fs::read(&path).map_err(|err| plan::Error {
        file: shown.clone(),
        line: None,
        message: format!("cannot read the document: {err}"),
    })?;
    if args.agent {
        return with_agent(args, context, &document, &bytes);
    }
    let plan = plan::read(&document, &shown, &bytes)?;
    let patch = Patch::Plan {
        parent: args.parent.clone(),
        tasks: plan.tasks.clone(),
        update: args.update,
    };
    let store = Store::open(&context.paths);
    let (changes, queue) = if args.dry_run {
        let mut queue = store.load()?;
        let changes = queue.apply(&patch, &context.now)?;
        queue.validate()?;
        (changes, queue)
    } else {
        let changes = store.apply(&patch, &context.now)?;
        (changes, store.load()?)
    };
    let report = Report::new(&plan, &changes);
    if context.json {
        return Ok(Outcome::print(to_json(&report.json(
            &plan,
            &queue,
            args.dry_run,
        ))));
    }
    Ok(Outcome::print(report.text(&plan, args, &shown)))
}

/// `ralph plan --agent`: the planner role writes the tasks.
fn with_agent(
    args: &PlanArgs,
    context: &Context,
    document: &str,
    bytes: &[u8],
) -> Result<Outcome, Error> {
    let settings = crate::config::Settings::load_with_env(&context.paths)?;
    let text = String::from_utf8_lossy(bytes);
    let sandbox = crate::runner::confine::decide_here(&settings.sandbox)?;
    let request = crate::runner::planner::PlannerRequest {
        document,
        text: &text,
        settings: &settings,
        agent_cmd: args.agent_cmd.as_deref(),
        stream: args.stream,
        kill_grace: super::run::kill_grace(),
        review_rounds: args.review_rounds,
        sandbox: &sandbox,
    };
    let planned = crate::runner::planner::plan_with_agent(
        &context.paths,
        &request,
        super::run::interrupt_flag(),
    )?;
    let queue = &planned.queue;
    if context.json {
        let tasks: Vec<Value> = planned
            .added
            .iter()
            .filter_map(|id| queue.object(id))
            .map(Value::Object)
            .collect();
        return Ok(Outcome::print(to_json(&json!({
            "document": document,
            "tasks": tasks,
            "prompt_file": planned.prompt_file,
            "log_file": planned.log_file,
        }))));
    }
    let mut out = format!(
        "{}: the planner added {}\n",
        args.prd.as_deref().unwrap_or(Path::new("")).display(),
        crate::text::count(planned.added.len(), "task")
    );
    let top = planned
        .added
        .iter()
        .map(|id| id.split('.').count())
        .min()
        .unwrap_or(1);
    for id in &planned.added {
        let title = queue.get(id).map_or("", |task| task.title.as_str());
        let depth = id.split('.').count() - top;
        let _ = writeln!(out, "+ {}{id}  {}", "  ".repeat(depth), safe(title));
    }
    let _ = writeln!(
        out,
        "its prompt: {}; its output: {}",
        planned.prompt_file.display(),
        planned.log_file.display()
    );
    Ok(Outcome::print(out))
}

/// `ralph plan --input run-input.json --out-dir DIR`: the worker contract's
/// plan (`crate::contract::plan`).
fn contract_plan(input_path: &Path, out_dir: &Path, context: &Context) -> Result<Outcome, Error> {
    let file = crate::contract::plan(input_path, out_dir, &context.now)?;
    if context.json {
        return Ok(Outcome::print(file.to_text()));
    }
    let stories = match file.stories.len() {
        1 => "1 story".to_owned(),
        n => format!("{n} stories"),
    };
    Ok(Outcome::print(format!(
        "{}: {stories} from {}\n",
        out_dir.join(crate::contract::output::PLAN_FILE).display(),
        file.prd.path
    )))
}

/// The name in `source` of the document at `path` (absolute): its path
/// from the project root with `/` separators, or its absolute path when
/// it lies outside the project.
fn document_name(path: &Path, paths: &crate::paths::Paths) -> String {
    let absolute = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let root =
        std::fs::canonicalize(paths.project()).unwrap_or_else(|_| paths.project().to_owned());
    match absolute.strip_prefix(&root) {
        Ok(relative) => relative
            .components()
            .map(|part| part.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
        Err(_) => absolute.to_string_lossy().into_owned(),
    }
}

/// What became of each planned task.
struct Report {
    /// Per planned task: its id and outcome, when it has a task.
    outcomes: Vec<Option<(TaskId, Planned)>>,
    /// Tasks that became containers to hold the plan.
    containers: Vec<TaskId>,
}

impl Report {
    fn new(plan: &Plan, changes: &[Change]) -> Report {
        let mut outcomes = vec![None; plan.tasks.len()];
        let mut containers = Vec::new();
        for change in changes {
            match change {
                Change::Planned { index, id, outcome } => {
                    outcomes[*index] = Some((id.clone(), *outcome));
                }
                Change::BecameContainer(id) => containers.push(id.clone()),
                _ => {}
            }
        }
        Report {
            outcomes,
            containers,
        }
    }

    fn count(&self, wanted: impl Fn(&Planned) -> bool) -> usize {
        self.outcomes
            .iter()
            .flatten()
            .filter(|(_, outcome)| wanted(outcome))
            .count()
    }

    fn text(&self, plan: &Plan, args: &PlanArgs, shown: &str) -> String {
        let mut out = String::new();
        let added = self.count(|o| *o == Planned::Added);
        let before = self.count(|o| *o != Planned::Added);
        let verb = if args.dry_run { "would add" } else { "added" };
        let _ = write!(out, "{shown}: {verb} {}", crate::text::count(added, "task"));
        if before > 0 {
            let _ = write!(out, " ({before} planned before)");
        }
        out.push('\n');
        let width = self
            .outcomes
            .iter()
            .flatten()
            .map(|(id, _)| id.len())
            .max()
            .unwrap_or(0);
        let mut depth = vec![0; plan.tasks.len()];
        for (index, task) in plan.tasks.iter().enumerate() {
            depth[index] = task.parent.map_or(0, |parent| depth[parent] + 1);
            let Some((id, outcome)) = &self.outcomes[index] else {
                continue;
            };
            let mark = match outcome {
                Planned::Added => "+",
                Planned::Unchanged => " ",
                Planned::Changed { .. } => "~",
                Planned::Archived { .. } => "=",
            };
            let _ = writeln!(
                out,
                "{mark} {}{id:width$}  {}",
                "  ".repeat(depth[index]),
                safe(&plan.tasks[index].title),
            );
        }
        for id in &self.containers {
            let _ = writeln!(out, "note: {id} is now a container (\"leaf\": false)");
        }
        let changed: Vec<(usize, &TaskId, &Planned)> = self
            .outcomes
            .iter()
            .enumerate()
            .filter_map(|(index, o)| o.as_ref().map(|(id, outcome)| (index, id, outcome)))
            .filter(|(_, _, outcome)| {
                matches!(
                    outcome,
                    Planned::Changed { .. } | Planned::Archived { changed: true }
                )
            })
            .collect();
        if !changed.is_empty() {
            let _ = writeln!(out, "changed in the document since they were planned:");
            let mut pending = false;
            for (index, id, outcome) in changed {
                let state = match outcome {
                    Planned::Changed {
                        rewritten: true, ..
                    } => "rewritten".to_owned(),
                    Planned::Changed { status, .. } => {
                        pending |= *status == crate::task::Status::Pending;
                        match status {
                            crate::task::Status::Pending => "pending".to_owned(),
                            other => format!("{other}, left as it is"),
                        }
                    }
                    _ => "archived, left as it is".to_owned(),
                };
                let _ = writeln!(out, "  {id}  {} ({state})", safe(&plan.tasks[index].source));
            }
            if pending && !args.update {
                let _ = writeln!(
                    out,
                    "hint: `ralph plan {shown} --update` rewrites the pending ones"
                );
            }
        }
        for skipped in &plan.skipped {
            let _ = writeln!(
                out,
                "skipped {}: {}",
                safe(&skipped.title),
                safe(&skipped.reason)
            );
        }
        out
    }

    fn json(&self, plan: &Plan, queue: &Queue, dry_run: bool) -> Value {
        let object = |id: &TaskId| {
            queue
                .object(id.as_str())
                .map(Value::Object)
                .unwrap_or(Value::Null)
        };
        let mut added = Vec::new();
        let mut unchanged = Vec::new();
        let mut changed = Vec::new();
        let mut archived = Vec::new();
        for (index, (id, outcome)) in self
            .outcomes
            .iter()
            .enumerate()
            .filter_map(|(index, o)| o.as_ref().map(|o| (index, o)))
        {
            let source = plan.tasks[index].source.as_str();
            match outcome {
                Planned::Added => added.push(object(id)),
                Planned::Unchanged => {
                    unchanged.push(json!({ "id": id.as_str(), "source": source }))
                }
                Planned::Changed { status, rewritten } => changed.push(json!({
                    "id": id.as_str(),
                    "source": source,
                    "status": status.as_str(),
                    "rewritten": rewritten,
                })),
                Planned::Archived { changed } => archived.push(json!({
                    "id": id.as_str(),
                    "source": source,
                    "changed": changed,
                })),
            }
        }
        let skipped: Vec<Value> = plan
            .skipped
            .iter()
            .map(|s| json!({ "source": s.source, "title": s.title, "reason": s.reason }))
            .collect();
        json!({
            "document": plan.document,
            "dry_run": dry_run,
            "tasks": added,
            "unchanged": unchanged,
            "changed": changed,
            "archived": archived,
            "skipped": skipped,
        })
    }
}
