//! `config/roles.yaml`: triggers compiled and checked at load, and the
//! choice of a role before each iteration.

use evalexpr::{EvalexprError, Node, Operator, Value};
use serde::Deserialize;

use super::error::Error;
use super::normalize::normalize;
use super::vars::{
    FUNCTIONS, TriggerContext, VARIABLES, VarType, known_variables, type_name, var_type,
};

/// One trigger as written in the file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TriggerSpec {
    condition: String,
    role: String,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RolesFile {
    #[serde(default)]
    triggers: Option<Vec<TriggerSpec>>,
}

/// A checked trigger, ready to evaluate.
#[derive(Clone, Debug)]
pub struct Trigger {
    /// 1-based position in the file.
    pub number: usize,
    /// The condition as written.
    pub condition: String,
    /// The condition in evalexpr syntax.
    pub normalized: String,
    /// The role it picks.
    pub role: String,
    /// A model override for that role's iterations.
    pub model: Option<String>,
    /// What the trigger is for.
    pub description: Option<String>,
    node: Node,
}

/// The triggers of a project, in file order.
#[derive(Clone, Debug, Default)]
pub struct Triggers {
    /// The triggers, first match wins.
    pub list: Vec<Trigger>,
}

/// The trigger that fired.
#[derive(Clone, Debug, PartialEq)]
pub struct Fired {
    /// 1-based position in the file.
    pub number: usize,
    /// The role it picked.
    pub role: String,
    /// The role's model override.
    pub model: Option<String>,
    /// The condition as written.
    pub condition: String,
    /// The trigger's description.
    pub description: Option<String>,
}

/// The outcome of evaluating the triggers against a context.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The first trigger that was true; `None` means no role.
    pub fired: Option<Fired>,
    /// Each trigger evaluated, in order, with its result.
    pub evaluated: Vec<(usize, bool)>,
    /// Every variable (and `iterations_since_role(...)` call) the evaluated
    /// conditions read, with its value, in first-read order.
    pub reads: Vec<(String, Value)>,
}

impl Triggers {
    /// Parses and checks `config/roles.yaml` text. `role_exists` says
    /// whether `roles/<name>.md` exists.
    pub fn parse(yaml: &str, role_exists: impl Fn(&str) -> bool) -> Result<Triggers, Error> {
        if yaml.trim().is_empty() {
            return Ok(Triggers::default());
        }
        let file: RolesFile = serde_yaml::from_str(yaml).map_err(|err| Error::Yaml {
            line: err.location().map(|l| l.line()),
            message: crate::text::yaml_message(&err.to_string()),
        })?;
        let mut list = Vec::new();
        for (index, spec) in file.triggers.unwrap_or_default().into_iter().enumerate() {
            let number = index + 1;
            let fail = |message: String| Error::Trigger {
                number,
                condition: spec.condition.clone(),
                message,
            };
            let (normalized, node) = compile(&spec.condition).map_err(fail)?;
            check_role_name(&spec.role).map_err(fail)?;
            if !role_exists(&spec.role) {
                return Err(fail(format!(
                    "role {:?} has no file roles/{}.md; create it or fix the role name",
                    spec.role, spec.role
                )));
            }
            list.push(Trigger {
                number,
                condition: spec.condition,
                normalized,
                role: spec.role,
                model: spec.model,
                description: spec.description,
                node,
            });
        }
        Ok(Triggers { list })
    }

    /// Whether any condition reads variable `name` (the loop asks whether a
    /// trigger reviews `ready` tasks).
    pub fn read_variable(&self, name: &str) -> bool {
        self.list.iter().any(|trigger| {
            trigger
                .node
                .iter_read_variable_identifiers()
                .any(|read| read == name)
        })
    }

    /// Evaluates the triggers in order; the first true one picks the role.
    pub fn choose(&self, context: &TriggerContext) -> Result<Decision, Error> {
        let env = context.to_evalexpr();
        let mut decision = Decision {
            fired: None,
            evaluated: Vec::new(),
            reads: Vec::new(),
        };
        for trigger in &self.list {
            collect_reads(&trigger.node, context, &mut decision.reads);
            let result = trigger
                .node
                .eval_boolean_with_context(&env)
                .map_err(|err| Error::Trigger {
                    number: trigger.number,
                    condition: trigger.condition.clone(),
                    message: describe(&err),
                })?;
            decision.evaluated.push((trigger.number, result));
            if result {
                decision.fired = Some(Fired {
                    number: trigger.number,
                    role: trigger.role.clone(),
                    model: trigger.model.clone(),
                    condition: trigger.condition.clone(),
                    description: trigger.description.clone(),
                });
                break;
            }
        }
        Ok(decision)
    }
}

fn check_role_name(role: &str) -> Result<(), String> {
    let ok = !role.is_empty()
        && role
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "role name {role:?} must be letters, digits, - or _ (it names roles/<role>.md)"
        ))
    }
}

/// Normalizes, parses and checks one condition: known names only, no
/// assignment, no string compared with a number, a true/false result.
fn compile(condition: &str) -> Result<(String, Node), String> {
    let normalized = normalize(condition)?;
    if normalized.is_empty() {
        return Err("empty condition".to_owned());
    }
    let node = evalexpr::build_operator_tree(&normalized).map_err(|err| match describe(&err) {
        message if message.starts_with("syntax error") => message,
        message => format!("syntax error: {message}"),
    })?;
    if let Some(name) = node.iter_write_variable_identifiers().next() {
        return Err(format!("`{name} =` assigns; compare with `==`"));
    }
    for name in node.iter_read_variable_identifiers() {
        if var_type(name).is_none() {
            return Err(format!(
                "unknown variable `{name}`{}; known: {}",
                suggest(name),
                known_variables()
            ));
        }
    }
    // `task_title contans 'x'` reads as calls of `task_title` and `contans`:
    // the misspelt operator is the one to name.
    let unknown: Vec<&str> = (node.iter_function_identifiers())
        .filter(|name| !FUNCTIONS.iter().any(|(f, _)| f == name))
        .collect();
    if let Some(name) = (unknown.iter())
        .find(|name| var_type(name).is_none())
        .or(unknown.first())
    {
        if var_type(name).is_some() {
            return Err(format!(
                "`{name}` is followed by a word that is not an operator; {OPERATORS}"
            ));
        }
        let known: Vec<&str> = FUNCTIONS.iter().map(|(f, _)| *f).collect();
        return Err(format!(
            "unknown function `{name}`{}; known: {}",
            suggest(name),
            known.join(", ")
        ));
    }
    infer(&node)?;
    // Evaluate against two opposite contexts so every operator meets values
    // of its operands' real types.
    let mut on = TriggerContext {
        task_id: "A.1".into(),
        task_title: "x".into(),
        task_status: "active".into(),
        ..TriggerContext::default()
    };
    for (name, kind, _) in VARIABLES {
        match kind {
            VarType::Int => on.set(&format!("{name}=1")).expect("ints parse"),
            VarType::Bool => on.set(&format!("{name}=true")).expect("bools parse"),
            VarType::String => {}
        }
    }
    for context in [TriggerContext::default(), on] {
        match node.eval_with_context(&context.to_evalexpr()) {
            Ok(Value::Boolean(_)) => {}
            Ok(other) => {
                return Err(format!(
                    "the condition gives {}, not true or false",
                    type_name(&other)
                ));
            }
            Err(err) => return Err(describe(&err)),
        }
    }
    Ok((normalized, node))
}

/// A "did you mean" for a misspelt name.
fn suggest(name: &str) -> String {
    let names = (VARIABLES.iter().map(|(n, _, _)| *n)).chain(FUNCTIONS.iter().map(|(f, _)| *f));
    crate::text::did_you_mean(name, names)
}

/// Infers the type of `node` where it is known without evaluating (a
/// float counts as [`VarType::Int`]), refusing comparisons of different
/// types (evalexpr would quietly answer `false` for `task_title == 5`).
fn infer(node: &Node) -> Result<Option<VarType>, String> {
    let children = node.children();
    let types = children.iter().map(infer).collect::<Result<Vec<_>, _>>()?;
    Ok(match node.operator() {
        Operator::Const { value } => match value {
            Value::String(_) => Some(VarType::String),
            Value::Int(_) | Value::Float(_) => Some(VarType::Int),
            Value::Boolean(_) => Some(VarType::Bool),
            _ => None,
        },
        Operator::VariableIdentifierRead { identifier } => var_type(identifier),
        Operator::FunctionIdentifier { identifier } => Some(match identifier.as_str() {
            "iterations_since_role" => VarType::Int,
            _ => VarType::Bool,
        }),
        Operator::Eq
        | Operator::Neq
        | Operator::Gt
        | Operator::Lt
        | Operator::Geq
        | Operator::Leq => {
            if let [Some(left), Some(right)] = types[..]
                && left != right
            {
                return Err(format!(
                    "compares {} with {}; both sides must be the same type",
                    left.name(),
                    right.name()
                ));
            }
            Some(VarType::Bool)
        }
        Operator::And | Operator::Or | Operator::Not => Some(VarType::Bool),
        Operator::Add
        | Operator::Sub
        | Operator::Neg
        | Operator::Mul
        | Operator::Div
        | Operator::Mod
        | Operator::Exp => Some(match types.contains(&Some(VarType::String)) {
            true => VarType::String,
            false => VarType::Int,
        }),
        Operator::RootNode => types.first().copied().flatten(),
        _ => None,
    })
}

/// Adds the variables and role counts `node` reads, with their values,
/// to `found`, each once.
fn collect_reads(node: &Node, context: &TriggerContext, found: &mut Vec<(String, Value)>) {
    let read = match node.operator() {
        Operator::VariableIdentifierRead { identifier } => context
            .get(identifier)
            .map(|value| (identifier.clone(), value)),
        Operator::FunctionIdentifier { identifier } if identifier == "iterations_since_role" => {
            let argument = node.children().first().and_then(constant_text);
            argument.map(|role| {
                let value = Value::Int(context.since_role(&role));
                (format!("iterations_since_role('{role}')"), value)
            })
        }
        _ => None,
    };
    if let Some((name, value)) = read
        && !found.iter().any(|(seen, _)| *seen == name)
    {
        found.push((name, value));
    }
    for child in node.children() {
        collect_reads(child, context, found);
    }
}

fn constant_text(node: &Node) -> Option<String> {
    match node.operator() {
        Operator::Const {
            value: Value::String(text),
        } => Some(text.clone()),
        Operator::RootNode => node.children().first().and_then(constant_text),
        _ => None,
    }
}

/// The operators a condition may use, for messages.
const OPERATORS: &str = "the operators are ==, !=, <, <=, >, >=, contains, starts_with, matches, and, or, not (lowercase)";

/// A readable sentence for an evalexpr error.
fn describe(err: &EvalexprError) -> String {
    match err {
        EvalexprError::AppendedToLeafNode => {
            format!("syntax error: two values with no operator between them; {OPERATORS}")
        }
        EvalexprError::ExpectedNumber { actual }
        | EvalexprError::ExpectedInt { actual }
        | EvalexprError::ExpectedFloat { actual } => {
            format!("expected a number, got {}", type_name(actual))
        }
        EvalexprError::ExpectedBoolean { actual } => {
            format!("expected true or false, got {}", type_name(actual))
        }
        EvalexprError::ExpectedString { actual } => {
            format!("expected a string, got {}", type_name(actual))
        }
        EvalexprError::ExpectedNumberOrString { actual } => {
            format!("expected a number or a string, got {}", type_name(actual))
        }
        EvalexprError::WrongOperatorArgumentAmount { expected, actual } => {
            format!("syntax error: an operator needs {expected} operands, got {actual}")
        }
        EvalexprError::CustomMessage(message) => message.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str = r#"
triggers:
  - condition: "branch_commits >= 5"
    role: "reviewer"
  - condition: "task_title contains 'refactor'"
    role: "architect"
  - condition: "last_iteration_failed"
    role: "debugger"
  - condition: "iterations_since_role('documenter') >= 10"
    role: "documenter"
  - condition: "task_marked_ready_to_complete"
    role: "reviewer"
"#;

    fn seed() -> Triggers {
        Triggers::parse(SEED, |_| true).unwrap()
    }

    fn role(context: &TriggerContext) -> Option<(usize, String)> {
        seed()
            .choose(context)
            .unwrap()
            .fired
            .map(|f| (f.number, f.role))
    }

    fn check(condition: &str) -> String {
        let yaml = format!("triggers:\n  - condition: {condition:?}\n    role: r\n");
        Triggers::parse(&yaml, |_| true)
            .map(|_| "ok".to_owned())
            .unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn no_trigger_true_means_no_role() {
        let decision = seed().choose(&TriggerContext::default()).unwrap();
        assert_eq!(decision.fired, None);
        assert_eq!(
            decision.evaluated,
            [(1, false), (2, false), (3, false), (4, false), (5, false)]
        );
    }

    #[test]
    fn each_seed_trigger_fires_on_its_own() {
        let base = TriggerContext {
            iteration: 3,
            ..TriggerContext::default()
        };
        let with = |f: &dyn Fn(&mut TriggerContext)| {
            let mut context = base.clone();
            f(&mut context);
            role(&context)
        };
        assert_eq!(
            with(&|c| c.branch_commits = 5),
            Some((1, "reviewer".into()))
        );
        assert_eq!(with(&|c| c.branch_commits = 4), None);
        assert_eq!(
            with(&|c| c.task_title = "refactor the store".into()),
            Some((2, "architect".into()))
        );
        assert_eq!(
            with(&|c| c.task_title = "Refactor".into()),
            None,
            "contains is case-sensitive"
        );
        assert_eq!(
            with(&|c| c.last_iteration_failed = true),
            Some((3, "debugger".into()))
        );
        assert_eq!(
            with(&|c| c.iteration = 10),
            Some((4, "documenter".into())),
            "never ran: counts from the start"
        );
        assert_eq!(
            with(&|c| {
                c.iteration = 30;
                c.iterations_since_role.insert("documenter".into(), 2);
            }),
            None
        );
        assert_eq!(
            with(&|c| c.task_marked_ready_to_complete = true),
            Some((5, "reviewer".into()))
        );
    }

    #[test]
    fn the_first_true_trigger_wins() {
        let context = TriggerContext {
            branch_commits: 9,
            task_title: "refactor".into(),
            last_iteration_failed: true,
            ..TriggerContext::default()
        };
        assert_eq!(role(&context), Some((1, "reviewer".into())));
        let decision = seed().choose(&context).unwrap();
        assert_eq!(decision.evaluated, [(1, true)]);
        assert_eq!(
            decision.reads,
            [("branch_commits".to_owned(), Value::Int(9))]
        );
    }

    #[test]
    fn decisions_list_every_value_read() {
        let context = TriggerContext {
            iteration: 4,
            ..TriggerContext::default()
        };
        let decision = seed().choose(&context).unwrap();
        let names: Vec<&str> = decision.reads.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "branch_commits",
                "task_title",
                "last_iteration_failed",
                "iterations_since_role('documenter')",
                "task_marked_ready_to_complete"
            ]
        );
        assert_eq!(decision.reads[3].1, Value::Int(4));
    }

    #[test]
    fn every_variable_and_function_evaluates() {
        let context = TriggerContext {
            task_id: "A.2".into(),
            task_title: "fix login".into(),
            task_status: "ready".into(),
            task_kind: "final_review".into(),
            task_depth: 2,
            iteration: 7,
            task_iteration: 3,
            branch_commits: 2,
            files_changed: 4,
            last_iteration_failed: false,
            consecutive_failures: 1,
            task_marked_ready_to_complete: true,
            elapsed_minutes: 15,
            last_review: "rejected".into(),
            review_rejections: 2,
            task_notes: 3,
            iterations_since_review: 1,
            iterations_since_role: [("reviewer".to_owned(), 2)].into(),
        };
        let cases = [
            "task_id == 'A.2'",
            "task_title starts_with 'fix'",
            "starts_with(task_id, 'A.')",
            "task_title matches '^fix [a-z]+$'",
            "contains(task_title, 'log')",
            "task_status == \"ready\"",
            "task_kind == 'final_review'",
            "task_depth == 2 and iteration == 7 and task_iteration == 3",
            "branch_commits == 2 && files_changed == 4",
            "not last_iteration_failed",
            "consecutive_failures == 1 or false",
            "task_marked_ready_to_complete",
            "elapsed_minutes >= 15",
            "last_review == 'rejected' and review_rejections == 2 and task_notes == 3",
            "iterations_since_review == 1",
            "iterations_since_role('reviewer') == 2 and iterations_since_role(\"architect\") == 7",
            "branch_commits + files_changed > 5",
        ];
        for condition in cases {
            let yaml = format!("triggers:\n  - condition: {condition:?}\n    role: r\n");
            let triggers =
                Triggers::parse(&yaml, |_| true).unwrap_or_else(|e| panic!("{condition}: {e}"));
            let decision = triggers.choose(&context).unwrap();
            assert!(decision.fired.is_some(), "{condition} should be true");
        }
    }

    #[test]
    fn bad_conditions_are_refused_at_load_with_a_reason() {
        assert_eq!(
            check("brnch_commits >= 5"),
            format!(
                "config/roles.yaml: trigger 1 (condition \"brnch_commits >= 5\"): unknown variable `brnch_commits` (did you mean `branch_commits`?); known: {}",
                known_variables()
            )
        );
        assert_eq!(
            check("iterations_since('documenter') > 1"),
            "config/roles.yaml: trigger 1 (condition \"iterations_since('documenter') > 1\"): unknown function `iterations_since`; known: iterations_since_role, contains, starts_with, matches"
        );
        // A misspelt operator is named, not the variable before it.
        assert_eq!(
            check("task_title contans 'x'"),
            "config/roles.yaml: trigger 1 (condition \"task_title contans 'x'\"): unknown function `contans` (did you mean `contains`?); known: iterations_since_role, contains, starts_with, matches"
        );
        assert_eq!(
            check("task_title task_id"),
            "config/roles.yaml: trigger 1 (condition \"task_title task_id\"): `task_title` is followed by a word that is not an operator; the operators are ==, !=, <, <=, >, >=, contains, starts_with, matches, and, or, not (lowercase)"
        );
        assert_eq!(
            check("task_title == 'x' AND task_depth == 1"),
            "config/roles.yaml: trigger 1 (condition \"task_title == 'x' AND task_depth == 1\"): syntax error: two values with no operator between them; the operators are ==, !=, <, <=, >, >=, contains, starts_with, matches, and, or, not (lowercase)"
        );
        assert_eq!(
            check("branch_commits >="),
            "config/roles.yaml: trigger 1 (condition \"branch_commits >=\"): syntax error: an operator needs 2 operands, got 1"
        );
        assert_eq!(
            check("task_title >= 5"),
            "config/roles.yaml: trigger 1 (condition \"task_title >= 5\"): compares a string with a number; both sides must be the same type"
        );
        assert_eq!(
            check("task_title == 5"),
            "config/roles.yaml: trigger 1 (condition \"task_title == 5\"): compares a string with a number; both sides must be the same type"
        );
        assert_eq!(
            check("branch_commits + 1"),
            "config/roles.yaml: trigger 1 (condition \"branch_commits + 1\"): the condition gives a number, not true or false"
        );
        assert_eq!(
            check("branch_commits = 5"),
            "config/roles.yaml: trigger 1 (condition \"branch_commits = 5\"): `branch_commits =` assigns; compare with `==`"
        );
        assert_eq!(
            check("task_title contains 5"),
            "config/roles.yaml: trigger 1 (condition \"task_title contains 5\"): contains compares text, but got a string and a number"
        );
        assert_eq!(
            check("task_title matches '('"),
            "config/roles.yaml: trigger 1 (condition \"task_title matches '('\"): matches: invalid regex \"(\": regex parse error:\n    (\n    ^\nerror: unclosed group"
        );
        assert_eq!(
            check("''"),
            "config/roles.yaml: trigger 1 (condition \"''\"): the condition gives a string, not true or false"
        );
        assert_eq!(
            check(""),
            "config/roles.yaml: trigger 1 (condition \"\"): empty condition"
        );
    }

    #[test]
    fn file_shape_errors_name_the_line_and_key() {
        let err = |yaml: &str| Triggers::parse(yaml, |_| true).unwrap_err().to_string();
        assert_eq!(
            err("triggers:\n  - condition: \"x\"\n    rol: r\n"),
            "config/roles.yaml:3: triggers[0]: unknown field `rol`, expected one of `condition`, `role`, `model`, `description` (did you mean `role`?)"
        );
        assert_eq!(
            err("trigers: []\n"),
            "config/roles.yaml:1: unknown field `trigers`, expected `triggers`"
        );
        assert_eq!(
            err("triggers:\n  - role: r\n"),
            "config/roles.yaml:2: triggers[0]: missing field `condition`"
        );
        assert_eq!(
            Triggers::parse(
                "triggers:\n  - condition: \"last_iteration_failed\"\n    role: debuger\n",
                |r| r == "debugger"
            )
            .unwrap_err()
            .to_string(),
            "config/roles.yaml: trigger 1 (condition \"last_iteration_failed\"): role \"debuger\" has no file roles/debuger.md; create it or fix the role name"
        );
        assert_eq!(
            err("triggers:\n  - condition: \"true\"\n    role: ../x\n"),
            "config/roles.yaml: trigger 1 (condition \"true\"): role name \"../x\" must be letters, digits, - or _ (it names roles/<role>.md)"
        );
        assert!(Triggers::parse("", |_| true).unwrap().list.is_empty());
        assert!(
            Triggers::parse("triggers: []\n", |_| true)
                .unwrap()
                .list
                .is_empty()
        );
    }

    #[test]
    fn model_and_description_are_kept() {
        let yaml = "triggers:\n  - condition: \"true\"\n    role: r\n    model: opus\n    description: always\n";
        let fired = Triggers::parse(yaml, |_| true)
            .unwrap()
            .choose(&TriggerContext::default())
            .unwrap()
            .fired
            .unwrap();
        assert_eq!(fired.model.as_deref(), Some("opus"));
        assert_eq!(fired.description.as_deref(), Some("always"));
    }
}
