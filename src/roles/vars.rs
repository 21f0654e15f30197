//! The variables and functions trigger conditions can use, and the context
//! they are evaluated against.

use std::collections::BTreeMap;

use evalexpr::{
    Context, ContextWithMutableFunctions, ContextWithMutableVariables, EvalexprError, Function,
    HashMapContext, Value,
};

/// The type of a trigger variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VarType {
    /// Text.
    String,
    /// A whole number.
    Int,
    /// true or false.
    Bool,
}

impl VarType {
    /// How the type is named in messages.
    pub fn name(self) -> &'static str {
        match self {
            VarType::String => "a string",
            VarType::Int => "a number",
            VarType::Bool => "true or false",
        }
    }
}

/// Every variable a condition may read, with its type and meaning.
pub const VARIABLES: &[(&str, VarType, &str)] = &[
    ("task_id", VarType::String, "the current task's id"),
    ("task_title", VarType::String, "the current task's title"),
    ("task_status", VarType::String, "the current task's status"),
    (
        "task_kind",
        VarType::String,
        "the current task's kind (empty when it has none)",
    ),
    ("task_depth", VarType::Int, "1 for A, 2 for A.1, ..."),
    ("iteration", VarType::Int, "iterations in this run so far"),
    (
        "task_iteration",
        VarType::Int,
        "iterations spent on the current task",
    ),
    (
        "branch_commits",
        VarType::Int,
        "commits on the task branch since it left the base",
    ),
    (
        "files_changed",
        VarType::Int,
        "files changed on the branch against the base",
    ),
    (
        "last_iteration_failed",
        VarType::Bool,
        "the last agent run failed, timed out or failed verification",
    ),
    (
        "consecutive_failures",
        VarType::Int,
        "failed iterations in a row on this task",
    ),
    (
        "task_marked_ready_to_complete",
        VarType::Bool,
        "the task's status is ready",
    ),
    (
        "elapsed_minutes",
        VarType::Int,
        "minutes since the task was claimed",
    ),
    (
        "last_review",
        VarType::String,
        "the task's last review verdict: \"\", \"passed\" or \"rejected\" (`ralph task review`)",
    ),
    (
        "review_rejections",
        VarType::Int,
        "reviews that rejected the task so far",
    ),
    (
        "task_notes",
        VarType::Int,
        "notes on the task so far (`ralph task note`, and each verdict's notes)",
    ),
    (
        "iterations_since_review",
        VarType::Int,
        "iterations on the task since its last verdict (all of them when it has none)",
    ),
];

/// Every function a condition may call.
pub const FUNCTIONS: &[(&str, &str)] = &[
    (
        "iterations_since_role",
        "iterations_since_role(name): iterations since that role last ran (since the run started if never)",
    ),
    ("contains", "contains(a, b): whether text a contains b"),
    (
        "starts_with",
        "starts_with(a, b): whether text a starts with b",
    ),
    (
        "matches",
        "matches(a, regex): whether text a matches the regular expression",
    ),
];

/// The type of variable `name`, if it is one.
pub(super) fn var_type(name: &str) -> Option<VarType> {
    VARIABLES
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, t, _)| *t)
}

/// What the triggers see before an iteration: the values of the variables
/// and the role history behind `iterations_since_role`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TriggerContext {
    /// The current task's id.
    pub task_id: String,
    /// The current task's title.
    pub task_title: String,
    /// The current task's status.
    pub task_status: String,
    /// The current task's `kind` field, empty when it has none
    /// (`final_review` for the run's final review).
    pub task_kind: String,
    /// Depth of the task id.
    pub task_depth: i64,
    /// Iterations in this run so far.
    pub iteration: i64,
    /// Iterations spent on the current task.
    pub task_iteration: i64,
    /// Commits on the task branch since it left the base.
    pub branch_commits: i64,
    /// Files changed on the branch against the base.
    pub files_changed: i64,
    /// Whether the last iteration failed.
    pub last_iteration_failed: bool,
    /// Failed iterations in a row on this task.
    pub consecutive_failures: i64,
    /// Whether the task's status is `ready`.
    pub task_marked_ready_to_complete: bool,
    /// Minutes since the task was claimed.
    pub elapsed_minutes: i64,
    /// The last review verdict: empty, `passed` or `rejected`.
    pub last_review: String,
    /// Reviews that rejected the task so far.
    pub review_rejections: i64,
    /// Notes on the task so far.
    pub task_notes: i64,
    /// Iterations on the task since its last verdict.
    pub iterations_since_review: i64,
    /// Iterations since each role last ran; a role missing here has not run
    /// in this run, and counts `iteration` (iterations since the start).
    pub iterations_since_role: BTreeMap<String, i64>,
}

impl TriggerContext {
    /// A context for `task` with every counter at zero.
    pub fn for_task(task: &crate::task::Task) -> TriggerContext {
        TriggerContext {
            task_id: task.id.to_string(),
            task_title: task.title.to_string(),
            task_status: task.status.to_string(),
            task_depth: task.id.depth() as i64,
            task_marked_ready_to_complete: task.status == crate::task::Status::Ready,
            ..TriggerContext::default()
        }
    }

    /// The value of variable `name`.
    pub fn get(&self, name: &str) -> Option<Value> {
        Some(match name {
            "task_id" => Value::String(self.task_id.clone()),
            "task_title" => Value::String(self.task_title.clone()),
            "task_status" => Value::String(self.task_status.clone()),
            "task_kind" => Value::String(self.task_kind.clone()),
            "task_depth" => Value::Int(self.task_depth),
            "iteration" => Value::Int(self.iteration),
            "task_iteration" => Value::Int(self.task_iteration),
            "branch_commits" => Value::Int(self.branch_commits),
            "files_changed" => Value::Int(self.files_changed),
            "last_iteration_failed" => Value::Boolean(self.last_iteration_failed),
            "consecutive_failures" => Value::Int(self.consecutive_failures),
            "task_marked_ready_to_complete" => Value::Boolean(self.task_marked_ready_to_complete),
            "elapsed_minutes" => Value::Int(self.elapsed_minutes),
            "last_review" => Value::String(self.last_review.clone()),
            "review_rejections" => Value::Int(self.review_rejections),
            "task_notes" => Value::Int(self.task_notes),
            "iterations_since_review" => Value::Int(self.iterations_since_review),
            _ => return None,
        })
    }

    /// Iterations since `role` last ran.
    pub fn since_role(&self, role: &str) -> i64 {
        self.iterations_since_role
            .get(role)
            .copied()
            .unwrap_or(self.iteration)
    }

    /// Overrides a value from `NAME=VALUE` text (`ralph roles which --var`).
    /// `iterations_since_role(NAME)=N` sets one role's count.
    pub fn set(&mut self, assignment: &str) -> Result<(), String> {
        let (name, value) = assignment
            .split_once('=')
            .ok_or_else(|| format!("--var {assignment:?}: write NAME=VALUE"))?;
        let name = name.trim();
        let value = value.trim();
        if let Some(role) = name
            .strip_prefix("iterations_since_role(")
            .and_then(|r| r.strip_suffix(')'))
        {
            let role = role.trim().trim_matches(|c| c == '\'' || c == '"');
            let count = value
                .parse()
                .map_err(|_| format!("--var {name}: {value:?} is not a whole number"))?;
            self.iterations_since_role.insert(role.to_owned(), count);
            return Ok(());
        }
        let Some(kind) = var_type(name) else {
            return Err(format!(
                "--var {name}: unknown variable; known: {}",
                known_variables()
            ));
        };
        let int = || {
            value
                .parse::<i64>()
                .map_err(|_| format!("--var {name}: {value:?} is not a whole number"))
        };
        let boolean = || match value {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(format!("--var {name}: {value:?} is not true or false")),
        };
        match name {
            "task_id" => self.task_id = value.to_owned(),
            "task_title" => self.task_title = value.to_owned(),
            "task_status" => self.task_status = value.to_owned(),
            "task_kind" => self.task_kind = value.to_owned(),
            "task_depth" => self.task_depth = int()?,
            "iteration" => self.iteration = int()?,
            "task_iteration" => self.task_iteration = int()?,
            "branch_commits" => self.branch_commits = int()?,
            "files_changed" => self.files_changed = int()?,
            "last_iteration_failed" => self.last_iteration_failed = boolean()?,
            "consecutive_failures" => self.consecutive_failures = int()?,
            "task_marked_ready_to_complete" => self.task_marked_ready_to_complete = boolean()?,
            "elapsed_minutes" => self.elapsed_minutes = int()?,
            "last_review" => self.last_review = value.to_owned(),
            "review_rejections" => self.review_rejections = int()?,
            "task_notes" => self.task_notes = int()?,
            "iterations_since_review" => self.iterations_since_review = int()?,
            _ => unreachable!("var_type({name}) is {kind:?} but set() does not handle it"),
        }
        Ok(())
    }

    /// An evalexpr context holding these values and ralph's functions.
    pub fn to_evalexpr(&self) -> HashMapContext {
        let mut context = HashMapContext::new();
        context
            .set_builtin_functions_disabled(true)
            .expect("a HashMapContext can disable builtins");
        for (name, _, _) in VARIABLES {
            let value = self.get(name).expect("VARIABLES lists known names");
            context
                .set_value((*name).to_owned(), value)
                .expect("a HashMapContext takes values");
        }
        let history = self.iterations_since_role.clone();
        let since_start = self.iteration;
        let functions: [(&str, Function); 4] = [
            (
                "iterations_since_role",
                Function::new(move |argument| {
                    let role = argument.as_string()?;
                    Ok(Value::Int(
                        history.get(&role).copied().unwrap_or(since_start),
                    ))
                }),
            ),
            (
                "contains",
                text_predicate("contains", |a, b| Ok(a.contains(b))),
            ),
            (
                "starts_with",
                text_predicate("starts_with", |a, b| Ok(a.starts_with(b))),
            ),
            (
                "matches",
                text_predicate("matches", |a, pattern| {
                    regex::Regex::new(pattern)
                        .map(|re| re.is_match(a))
                        .map_err(|err| format!("matches: invalid regex {pattern:?}: {err}"))
                }),
            ),
        ];
        for (name, function) in functions {
            context
                .set_function(name.to_owned(), function)
                .expect("a HashMapContext takes functions");
        }
        context
    }
}

/// A two-string function returning a boolean.
fn text_predicate(
    name: &'static str,
    test: impl Fn(&str, &str) -> Result<bool, String> + Send + Sync + Clone + 'static,
) -> Function {
    Function::new(move |argument| {
        let arguments = argument.as_fixed_len_tuple(2).map_err(|_| {
            EvalexprError::CustomMessage(format!(
                "{name} takes two arguments: {name}(text, pattern)"
            ))
        })?;
        let (Value::String(a), Value::String(b)) = (&arguments[0], &arguments[1]) else {
            return Err(EvalexprError::CustomMessage(format!(
                "{name} compares text, but got {} and {}",
                type_name(&arguments[0]),
                type_name(&arguments[1])
            )));
        };
        test(a, b)
            .map(Value::Boolean)
            .map_err(EvalexprError::CustomMessage)
    })
}

/// How a value's type is named in messages.
pub(super) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "a string",
        Value::Int(_) | Value::Float(_) => "a number",
        Value::Boolean(_) => "true or false",
        Value::Tuple(_) => "a tuple",
        Value::Empty => "nothing",
    }
}

/// The variable names, for "known:" lists in messages.
pub(super) fn known_variables() -> String {
    VARIABLES
        .iter()
        .map(|(n, _, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variable_has_a_value_of_its_type() {
        let context = TriggerContext::default();
        for (name, kind, _) in VARIABLES {
            let value = context.get(name).unwrap();
            assert_eq!(type_name(&value), kind.name(), "{name}");
        }
    }

    #[test]
    fn overrides_parse_by_type() {
        let mut context = TriggerContext::default();
        context.set("branch_commits=7").unwrap();
        context.set("task_title = refactor the parser").unwrap();
        context.set("last_iteration_failed=true").unwrap();
        context
            .set("iterations_since_role('documenter')=12")
            .unwrap();
        assert_eq!(context.branch_commits, 7);
        assert_eq!(context.task_title, "refactor the parser");
        assert!(context.last_iteration_failed);
        assert_eq!(context.since_role("documenter"), 12);
        assert_eq!(
            context.set("branch_commits=x").unwrap_err(),
            "--var branch_commits: \"x\" is not a whole number"
        );
        assert_eq!(
            context.set("last_iteration_failed=yes").unwrap_err(),
            "--var last_iteration_failed: \"yes\" is not true or false"
        );
        assert!(
            context
                .set("brnach_commits=1")
                .unwrap_err()
                .starts_with("--var brnach_commits: unknown variable; known: task_id, ")
        );
        assert_eq!(
            context.set("nothing").unwrap_err(),
            "--var \"nothing\": write NAME=VALUE"
        );
    }
}
