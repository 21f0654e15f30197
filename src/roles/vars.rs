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

/// The Rust type of a variable's field: its [`VarType`], its value in a
/// condition and how `--var` text is read into it.
trait Variable: Sized {
    const TYPE: VarType;
    fn value(&self) -> Value;
    /// The field from `--var` text, or what the text is not.
    fn parse(text: &str) -> Result<Self, &'static str>;
}

impl Variable for String {
    const TYPE: VarType = VarType::String;
    fn value(&self) -> Value {
        Value::String(self.clone())
    }
    fn parse(text: &str) -> Result<Self, &'static str> {
        Ok(text.to_owned())
    }
}

impl Variable for i64 {
    const TYPE: VarType = VarType::Int;
    fn value(&self) -> Value {
        Value::Int(*self)
    }
    fn parse(text: &str) -> Result<Self, &'static str> {
        text.parse().map_err(|_| "is not a whole number")
    }
}

impl Variable for bool {
    const TYPE: VarType = VarType::Bool;
    fn value(&self) -> Value {
        Value::Boolean(*self)
    }
    fn parse(text: &str) -> Result<Self, &'static str> {
        match text {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err("is not true or false"),
        }
    }
}

/// The value of `--var name=text`, or a message saying why it is not one.
fn parse<T: Variable>(name: &str, text: &str) -> Result<T, String> {
    T::parse(text).map_err(|not| format!("--var {name}: {text:?} {not}"))
}

/// Declares every variable once, as `name: Type, "meaning";`: a field of
/// [`TriggerContext`] documented by its meaning (and any `///` lines before
/// it), a row of [`VARIABLES`], and its case in `get` and `assign`.
macro_rules! variables {
    ($($(#[$extra:meta])* $name:ident: $type:ty, $doc:literal;)*) => {
        /// Every variable a condition may read, with its type and meaning.
        pub const VARIABLES: &[(&str, VarType, &str)] =
            &[$((stringify!($name), <$type as Variable>::TYPE, $doc)),*];

        /// What the triggers see before an iteration: the values of the
        /// variables and the role history behind `iterations_since_role`.
        #[derive(Clone, Debug, Default, PartialEq)]
        pub struct TriggerContext {
            $(#[doc = $doc] $(#[$extra])* pub $name: $type,)*
            /// Iterations since each role last ran; a role missing here has
            /// not run in this run, and counts `iteration` (iterations since
            /// the start).
            pub iterations_since_role: BTreeMap<String, i64>,
        }

        impl TriggerContext {
            /// The value of variable `name`.
            pub fn get(&self, name: &str) -> Option<Value> {
                match name {
                    $(stringify!($name) => Some(self.$name.value()),)*
                    _ => None,
                }
            }

            /// Sets variable `name` from `--var` text.
            fn assign(&mut self, name: &str, text: &str) -> Result<(), String> {
                match name {
                    $(stringify!($name) => self.$name = parse(name, text)?,)*
                    _ => {
                        return Err(format!(
                            "--var {name}: unknown variable; known: {}",
                            known_variables()
                        ));
                    }
                }
                Ok(())
            }
        }
    };
}

variables! {
    task_id: String, "the current task's id";
    task_title: String, "the current task's title";
    task_status: String, "the current task's status";
    /// `final_review` marks the run's final review.
    task_kind: String, "the current task's kind (empty when it has none)";
    task_depth: i64, "1 for A, 2 for A.1, ...";
    iteration: i64, "iterations in this run so far";
    task_iteration: i64, "iterations spent on the current task";
    branch_commits: i64, "commits on the task branch since it left the base";
    files_changed: i64, "files changed on the branch against the base";
    last_iteration_failed: bool, "the last agent run failed, timed out or failed verification";
    consecutive_failures: i64, "failed iterations in a row on this task";
    task_marked_ready_to_complete: bool, "the task's status is ready";
    elapsed_minutes: i64, "minutes since the task was claimed";
    last_review: String,
        "the task's last review verdict: \"\", \"passed\" or \"rejected\" (`ralph task review`)";
    review_rejections: i64, "reviews that rejected the task so far";
    task_notes: i64, "notes on the task so far (`ralph task note`, and each verdict's notes)";
    iterations_since_review: i64,
        "iterations on the task since its last verdict (all of them when it has none)";
}

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
            let count = parse::<i64>(name, value)?;
            self.iterations_since_role.insert(role.to_owned(), count);
            return Ok(());
        }
        self.assign(name, value)
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
