//! The prompt: `working.md`, the chosen role's file, and the task context
//! rendered from a minijinja template.

use crate::agent::FailureClass;
use crate::paths::Paths;
use std::path::PathBuf;

use minijinja::{Environment, UndefinedBehavior};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::exit::Exit;
use crate::files;
use crate::roles::{self, Decision};
use crate::task::{KNOWN_FIELDS, Queue, Task, TaskId, string_list};

use crate::paths::CONTEXT_TEMPLATE;
use crate::paths::WORKING_FILE;
/// The shipped task-context template.
pub const DEFAULT_CONTEXT_TEMPLATE: &str = include_str!("../templates/context.md.j2");
/// Separator between the parts of the prompt (the seed's composition).
pub const SEPARATOR: &str = "\n\n---\n\n";
/// Most bytes of failure output a prompt carries (the tail is kept).
pub const EVIDENCE_TAIL_BYTES: usize = 4000;

/// What went wrong in the last iteration, for the next one's prompt.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// The failure class (`exit`, `timeout`, `verify_failed`, ...).
    pub class: FailureClass,
    /// One or two sentences saying what happened.
    pub summary: String,
    /// The end of the relevant output, if any.
    pub output_tail: Option<String>,
}

/// The variables of the task-context template.
#[derive(Clone, Debug, Serialize)]
pub struct PromptContext {
    /// The task.
    pub task: TaskView,
    /// Its ancestors, outermost first.
    pub ancestors: Vec<AncestorView>,
    /// The number of the iteration this prompt is for, in this run (1-based).
    pub iteration: u64,
    /// The number of this iteration on the task (1-based, across runs).
    pub task_iteration: u64,
    /// The role, when a trigger chose one.
    pub role: Option<String>,
    /// The trigger that chose it.
    pub trigger: Option<TriggerView>,
    /// The last failure's evidence.
    pub evidence: Option<Evidence>,
    /// The failed attempts before the last, from the task's critique file
    /// (`.ralph/critique/<id>.md`): Markdown, newest last, bounded.
    pub critique: Option<String>,
    /// The run's whole work, for a task of kind `final_review`.
    pub review: Option<ReviewView>,
    /// The task's notes (`ralph task note`, verdicts' notes), newest
    /// first, bounded.
    pub notes: Option<String>,
    /// The reasons of the last review, when it rejected the task.
    pub rejection: Option<String>,
}

/// What a final review looks at: the work since the run began, as the
/// template sees it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReviewView {
    /// The base branch.
    pub base: String,
    /// The base's commit when the run began (full id).
    pub since: String,
    /// Its first seven hex digits.
    pub since_short: String,
    /// Which review this is: 1, then 2 at most.
    pub number: usize,
    /// The tasks merged in the run, in order (earlier reviews included).
    pub tasks: Vec<AncestorView>,
    /// The base's commits since, oldest first (`short` id and `subject`);
    /// at most [`REVIEW_LIST_MAX`].
    pub commits: Vec<ReviewCommit>,
    /// The files changed, as `git diff --stat` counts them; at most
    /// [`REVIEW_LIST_MAX`].
    pub files: Vec<ReviewFile>,
    /// Commits left out of `commits`.
    pub more_commits: usize,
    /// Files left out of `files`.
    pub more_files: usize,
    /// Files changed in all.
    pub files_changed: usize,
    /// Lines added in all.
    pub insertions: usize,
    /// Lines removed in all.
    pub deletions: usize,
}

/// One commit of the run, as the template sees it.
#[derive(Clone, Debug, Serialize)]
pub struct ReviewCommit {
    /// The first seven hex digits of its id.
    pub short: String,
    /// Its subject line.
    pub subject: String,
}

/// One file the run changed, as the template sees it.
#[derive(Clone, Debug, Serialize)]
pub struct ReviewFile {
    /// Its path.
    pub path: String,
    /// Lines added.
    pub insertions: usize,
    /// Lines removed.
    pub deletions: usize,
    /// Whether git sees it as binary (no line counts).
    pub binary: bool,
}

/// Most commits, and most files, a final review's prompt lists (the rest
/// are counted).
pub const REVIEW_LIST_MAX: usize = 200;

/// The task as the template sees it.
#[derive(Clone, Debug, Serialize)]
pub struct TaskView {
    /// Dotted id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Status.
    pub status: String,
    /// Details, if any.
    pub body: Option<String>,
    /// 1 for `A`, 2 for `A.1`, ...
    pub depth: usize,
    /// The task's branch, when known.
    pub branch: Option<String>,
    /// Acceptance criteria (empty when the task has none).
    pub acceptance: Vec<String>,
    /// Files to focus on (empty when the task names none).
    pub files: Vec<String>,
    /// The task's own checks, run before its merge (empty when none).
    pub verify: Vec<String>,
    /// Where the task came from (`path#requirement` from `ralph plan`).
    pub source: Option<String>,
    /// What sort of task it is.
    pub kind: Option<String>,
    /// Every other field of the task's line, as written (a user's own
    /// `"priority": 2` is `task.extra.priority`).
    pub extra: Map<String, Value>,
}

/// An ancestor as the template sees it.
#[derive(Clone, Debug, Serialize)]
pub struct AncestorView {
    /// Dotted id.
    pub id: String,
    /// Title (empty when the ancestor is not in `tasks.jsonl`).
    pub title: String,
}

/// The trigger that chose the role, as the template sees it.
#[derive(Clone, Debug, Serialize)]
pub struct TriggerView {
    /// 1-based position in `config/roles.yaml`.
    pub number: usize,
    /// The condition as written.
    pub condition: String,
    /// The trigger's description, if any.
    pub description: Option<String>,
}

/// What can go wrong composing a prompt.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `working.md` does not exist.
    #[error("{WORKING_FILE} is missing in {}", .0.display())]
    NoWorkingFile(PathBuf),
    /// The template does not render.
    #[error("{file}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    Template {
        /// The template's name.
        file: String,
        /// 1-based line, when known.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// The roles configuration is wrong.
    #[error(transparent)]
    Roles(#[from] roles::Error),
    /// Reading or writing a file failed.
    #[error(transparent)]
    Io(#[from] crate::files::PathError),
}

impl crate::exit::Reportable for Error {
    /// The exit code for this error.
    fn exit(&self) -> Exit {
        match self {
            Error::Roles(err) => err.exit(),
            Error::Io(err) => err.exit(),
            _ => Exit::InvalidInput,
        }
    }

    /// What the person can do about it.
    fn hint(&self) -> Option<String> {
        match self {
            Error::NoWorkingFile(_) => {
                Some("run `ralph init` to create the default working.md".to_owned())
            }
            Error::Template { file, .. } if file == WORKING_FILE => Some(
                "fix working.md, or move it aside and run `ralph init` to write the default"
                    .to_owned(),
            ),
            Error::Template { file, .. } => Some(format!(
                "fix {file} (variables: task, ancestors, iteration, task_iteration, role, trigger, evidence, critique, review, notes, rejection) or delete it to use the default"
            )),
            Error::Roles(err) => err.hint(),
            Error::Io(err) => err.hint(),
        }
    }
}

/// Joins the parts: working.md, then `---` and the role's text when there
/// is a role, then `---` and the task context.
pub fn compose(working: &str, role_text: Option<&str>, context: &str) -> String {
    let mut prompt = String::with_capacity(working.len() + context.len() + 256);
    prompt.push_str(working);
    if let Some(role_text) = role_text {
        prompt.push_str(SEPARATOR);
        prompt.push_str(role_text);
    }
    prompt.push_str(SEPARATOR);
    prompt.push_str(context);
    prompt
}

/// Renders the task context from `template` (named `name` in errors), with
/// strict undefined variables.
pub fn render_context(
    name: &str,
    template: &str,
    context: &PromptContext,
) -> Result<String, Error> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    let to_error = |err: minijinja::Error| Error::Template {
        file: name.to_owned(),
        line: err.line(),
        message: match err.detail() {
            Some(detail) => format!("{}: {detail}", err.kind()),
            None => err.kind().to_string(),
        },
    };
    env.add_template(name, template).map_err(to_error)?;
    let mut bounded = context.clone();
    if let Some(evidence) = &mut bounded.evidence {
        evidence.output_tail = evidence
            .output_tail
            .as_deref()
            .map(|tail| bounded_tail(tail, EVIDENCE_TAIL_BYTES).to_owned());
    }
    env.get_template(name)
        .and_then(|template| template.render(minijinja::value::Serde(&bounded)))
        .map_err(to_error)
}

/// The last `max` bytes of `text`, starting on a character boundary.
pub fn bounded_tail(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// The project's context template, or the shipped one: (name, text).
pub fn context_template(paths: &Paths) -> Result<(String, String), Error> {
    let text = files::read_text(&paths.context_template(), |line, message| Error::Template {
        file: CONTEXT_TEMPLATE.to_owned(),
        line: Some(line),
        message,
    })?;
    Ok(match text {
        Some(text) => (CONTEXT_TEMPLATE.to_owned(), text),
        None => (
            "the default context template".to_owned(),
            DEFAULT_CONTEXT_TEMPLATE.to_owned(),
        ),
    })
}

/// The template variables for `task`, its ancestors looked up in `queue`.
pub fn context_for(queue: &Queue, task: &Task, decision: &Decision) -> PromptContext {
    let ancestors = std::iter::successors(task.id.parent(), TaskId::parent)
        .map(|id| AncestorView {
            title: queue
                .get(id.as_str())
                .map(|t| t.title.to_string())
                .unwrap_or_default(),
            id: id.to_string(),
        })
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let object = queue.object(task.id.as_str()).unwrap_or_default();
    let text = |key: &str| object.get(key).and_then(Value::as_str).map(str::to_owned);
    let extra = (object.iter())
        .filter(|(key, _)| !KNOWN_FIELDS.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    PromptContext {
        task: TaskView {
            id: task.id.to_string(),
            title: task.title.to_string(),
            status: task.status.to_string(),
            body: text("body"),
            depth: task.id.depth(),
            branch: None,
            acceptance: string_list(&object, "acceptance"),
            files: string_list(&object, "files"),
            verify: string_list(&object, "verify"),
            source: text("source"),
            kind: text("kind"),
            extra,
        },
        ancestors,
        iteration: 1,
        task_iteration: 1,
        role: decision.fired.as_ref().map(|f| f.role.clone()),
        trigger: decision.fired.as_ref().map(|f| TriggerView {
            number: f.number,
            condition: f.condition.clone(),
            description: f.description.clone(),
        }),
        evidence: None,
        critique: None,
        review: None,
        notes: None,
        rejection: None,
    }
}

/// Builds the whole prompt for `context` in the project at `root`.
pub fn build(paths: &Paths, decision: &Decision, context: &PromptContext) -> Result<String, Error> {
    let working = files::read_text(&paths.working(), |line, message| Error::Template {
        file: WORKING_FILE.to_owned(),
        line: Some(line),
        message,
    })?
    .ok_or_else(|| Error::NoWorkingFile(paths.root().to_owned()))?;
    let role_text = match &decision.fired {
        Some(fired) => Some(roles::read_role(paths, &fired.role)?),
        None => None,
    };
    let (name, template) = context_template(paths)?;
    let rendered = render_context(&name, &template, context)?;
    Ok(compose(&working, role_text.as_deref(), &rendered))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context() -> PromptContext {
        PromptContext {
            task: TaskView {
                id: "A.1.2".into(),
                title: "implement middleware".into(),
                status: "active".into(),
                body: Some("Use the session store.".into()),
                depth: 3,
                branch: Some("task/A.1.2-implement-middleware".into()),
                acceptance: vec!["a request without a session gets 401".into()],
                files: vec!["src/auth.rs".into(), "src/session.rs".into()],
                verify: vec!["cargo test auth".into(), "test -f done.txt".into()],
                source: Some("prd.md#R2".into()),
                kind: Some("feature".into()),
                extra: Map::new(),
            },
            ancestors: vec![
                AncestorView {
                    id: "A".into(),
                    title: "implement auth".into(),
                },
                AncestorView {
                    id: "A.1".into(),
                    title: "setup session store".into(),
                },
            ],
            iteration: 4,
            task_iteration: 2,
            role: Some("debugger".into()),
            trigger: Some(TriggerView {
                number: 3,
                condition: "last_iteration_failed".into(),
                description: Some("Find and fix the cause of the last failure".into()),
            }),
            evidence: Some(Evidence {
                class: FailureClass::VerifyFailed,
                summary: "`cargo test` exited with 101.".into(),
                output_tail: Some("test parse ... FAILED".into()),
            }),
            critique: None,
            review: None,
            notes: None,
            rejection: None,
        }
    }

    #[test]
    fn composition_follows_the_seed() {
        assert_eq!(
            compose("W\n", Some("R\n"), "C\n"),
            "W\n\n\n---\n\nR\n\n\n---\n\nC\n"
        );
        assert_eq!(compose("W", None, "C"), "W\n\n---\n\nC");
    }

    #[test]
    fn the_default_template_renders_every_part() {
        let text = render_context("t", DEFAULT_CONTEXT_TEMPLATE, &context()).unwrap();
        assert_eq!(
            text,
            "# Current task\n\n\
             - Task: A.1.2 implement middleware\n\
             - Status: active\n\
             - Part of: A implement auth > A.1 setup session store\n\
             - Planned from: prd.md#R2 (read it there for the context around this task)\n\
             - Branch: task/A.1.2-implement-middleware\n\
             - Iteration: 4 of this run, 2 on this task\n\
             - Role: debugger, because trigger 3 (`last_iteration_failed`) is true: Find and fix the cause of the last failure\n\
             \n## Details\n\nUse the session store.\n\
             \n## Acceptance criteria\n\n\
             The task is done when all of these hold:\n\n\
             - [ ] a request without a session gets 401\n\
             \n## Files to focus on\n\n- src/auth.rs\n- src/session.rs\n\
             \n## Checks\n\n\
             These checks must pass before the task is merged; ralph runs them in order after you mark the task complete:\n\n\
             ```sh\ncargo test auth\ntest -f done.txt\n```\n\
             \n## The last iteration failed (verify_failed)\n\n\
             `cargo test` exited with 101.\n\n\
             The end of its output:\n\n```\ntest parse ... FAILED\n```\n"
        );
    }

    #[test]
    fn the_default_template_renders_a_bare_task() {
        let mut bare = context();
        bare.ancestors.clear();
        bare.task.body = None;
        bare.task.branch = None;
        bare.task.acceptance.clear();
        bare.task.files.clear();
        bare.task.verify.clear();
        bare.task.source = None;
        bare.role = None;
        bare.trigger = None;
        bare.evidence = None;
        let text = render_context("t", DEFAULT_CONTEXT_TEMPLATE, &bare).unwrap();
        assert_eq!(
            text,
            "# Current task\n\n- Task: A.1.2 implement middleware\n- Status: active\n- Iteration: 4 of this run, 2 on this task\n- Role: none (no trigger is true)\n"
        );
    }

    /// Each richer section stands on its own, whichever others are there.
    #[test]
    fn the_default_template_renders_each_list_alone() {
        let mut task = context();
        task.ancestors.clear();
        task.task.branch = None;
        task.role = None;
        task.trigger = None;
        task.evidence = None;
        task.task.body = None;
        task.task.acceptance.clear();
        task.task.files.clear();
        task.task.verify = vec!["make check".into()];
        task.task.source = None;
        let head = "# Current task\n\n- Task: A.1.2 implement middleware\n- Status: active\n- Iteration: 4 of this run, 2 on this task\n- Role: none (no trigger is true)\n";
        assert_eq!(
            render_context("t", DEFAULT_CONTEXT_TEMPLATE, &task).unwrap(),
            format!(
                "{head}\n## Checks\n\nThese checks must pass before the task is merged; ralph runs them in order after you mark the task complete:\n\n```sh\nmake check\n```\n"
            )
        );
        task.task.verify.clear();
        task.task.files = vec!["README.md".into()];
        assert_eq!(
            render_context("t", DEFAULT_CONTEXT_TEMPLATE, &task).unwrap(),
            format!("{head}\n## Files to focus on\n\n- README.md\n")
        );
        task.task.files.clear();
        task.task.acceptance = vec!["one".into(), "two".into()];
        assert_eq!(
            render_context("t", DEFAULT_CONTEXT_TEMPLATE, &task).unwrap(),
            format!(
                "{head}\n## Acceptance criteria\n\nThe task is done when all of these hold:\n\n- [ ] one\n- [ ] two\n"
            )
        );
    }

    /// The template sees every field of the task's line: the understood
    /// ones by name, the user's own under `task.extra`.
    #[test]
    fn context_for_reads_the_richer_fields_and_the_rest_as_extra() {
        let queue = Queue::parse(
            concat!(
                r#"{"id":"A","title":"t","status":"active","leaf":true,"body":"b","#,
                r#""acceptance":["works"],"files":["src/a.rs"],"verify":["make"],"#,
                r#""source":"prd.md#R1","kind":"bug","priority":2,"owner":{"name":"kim"},"notes":"n"}"#,
                "\n"
            )
            .as_bytes(),
            b"",
        )
        .unwrap();
        let task = queue.get("A").unwrap();
        let nothing = Decision {
            fired: None,
            evaluated: Vec::new(),
            reads: Vec::new(),
        };
        let view = context_for(&queue, task, &nothing).task;
        assert_eq!(view.body.as_deref(), Some("b"));
        assert_eq!(view.acceptance, ["works"]);
        assert_eq!(view.files, ["src/a.rs"]);
        assert_eq!(view.verify, ["make"]);
        assert_eq!(view.source.as_deref(), Some("prd.md#R1"));
        assert_eq!(view.kind.as_deref(), Some("bug"));
        assert_eq!(
            Value::Object(view.extra.clone()),
            serde_json::json!({"priority": 2, "owner": {"name": "kim"}})
        );
        let mut variables = context();
        variables.task = view;
        let text = render_context(
            "t",
            "{{ task.extra.priority }} {{ task.extra.owner.name }} {{ task.kind }} {{ task.source }}",
            &variables,
        )
        .unwrap();
        assert_eq!(text, "2 kim bug prd.md#R1");
    }

    #[test]
    fn earlier_attempts_come_before_the_last_failure() {
        let mut with = context();
        with.task.body = None;
        with.task.acceptance.clear();
        with.task.files.clear();
        with.task.verify.clear();
        with.critique =
            Some("### Iteration 1 · T · role none · exit\n\nexit code 1\n\n```\nfirst\n```".into());
        let text = render_context("t", DEFAULT_CONTEXT_TEMPLATE, &with).unwrap();
        assert!(
            text.ends_with(
                "the last failure\n\
                 \n## Earlier failed attempts (newest last)\n\n\
                 ### Iteration 1 · T · role none · exit\n\nexit code 1\n\n```\nfirst\n```\n\
                 \n## The last iteration failed (verify_failed)\n\n\
                 `cargo test` exited with 101.\n\n\
                 The end of its output:\n\n```\ntest parse ... FAILED\n```\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_final_review_sees_the_runs_tasks_commits_and_files() {
        let mut review = context();
        review.ancestors.clear();
        review.task.body = None;
        review.task.branch = None;
        review.task.acceptance.clear();
        review.task.files.clear();
        review.task.verify.clear();
        review.task.source = None;
        review.role = None;
        review.trigger = None;
        review.evidence = None;
        review.review = Some(ReviewView {
            base: "main".into(),
            since: "0123456789abcdef".into(),
            since_short: "0123456".into(),
            number: 1,
            tasks: vec![
                AncestorView {
                    id: "A".into(),
                    title: "parse".into(),
                },
                AncestorView {
                    id: "B".into(),
                    title: "print".into(),
                },
            ],
            commits: vec![ReviewCommit {
                short: "89abcde".into(),
                subject: "[A] parse".into(),
            }],
            files: vec![
                ReviewFile {
                    path: "src/a.rs".into(),
                    insertions: 12,
                    deletions: 3,
                    binary: false,
                },
                ReviewFile {
                    path: "logo.png".into(),
                    insertions: 0,
                    deletions: 0,
                    binary: true,
                },
            ],
            more_commits: 1,
            more_files: 0,
            files_changed: 2,
            insertions: 12,
            deletions: 3,
        });
        let text = render_context("t", DEFAULT_CONTEXT_TEMPLATE, &review).unwrap();
        assert_eq!(
            text,
            "# Current task\n\n\
             - Task: A.1.2 implement middleware\n\
             - Status: active\n\
             - Iteration: 4 of this run, 2 on this task\n\
             - Role: none (no trigger is true)\n\
             \n## The run under review (final review 1 of at most 2)\n\n\
             Everything below reached main since 0123456, where the run began: `git diff 0123456..main` shows the whole change, `git log 0123456..main` its history.\n\
             \n### Tasks done in this run\n\n- A parse\n- B print\n\
             \n### Commits (oldest first)\n\n- 89abcde [A] parse\n- and 1 more\n\
             \n### Files changed\n\n\
             ```\nsrc/a.rs | +12 -3\nlogo.png | binary\n2 files changed, 12 insertions(+), 3 deletions(-)\n```\n"
        );
    }

    #[test]
    fn evidence_is_bounded_to_its_tail() {
        let mut big = context();
        let output = format!("{}END", "é".repeat(5000));
        big.evidence.as_mut().unwrap().output_tail = Some(output);
        let text = render_context("t", DEFAULT_CONTEXT_TEMPLATE, &big).unwrap();
        assert!(text.contains("END\n```"));
        assert!(text.len() < EVIDENCE_TAIL_BYTES + 1000);
    }

    #[test]
    fn template_errors_name_the_file_and_line() {
        let err = render_context(
            "templates/context.md.j2",
            "line\n{{ task.nope }}",
            &context(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "templates/context.md.j2:2: undefined value: `task.nope` is undefined"
        );
        let err = render_context("templates/context.md.j2", "{% if %}", &context()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "templates/context.md.j2:1: syntax error: unexpected end of block"
        );
    }
}
