//! Reading the `prd.json` of snarktank/ralph and ralph-tui: a `project`
//! (or `name`), a `description`, and `userStories`, each with `id`,
//! `title`, `description`, `acceptanceCriteria`, `priority`, `passes` and
//! `notes` (ralph-tui adds `dependsOn`).

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::{Draft, Node, Skipped};

/// A problem and the line it is on, when known.
type Failure = (Option<usize>, String);

/// Reads `text`, the document named `document`.
pub(super) fn read(document: &str, text: &str) -> Result<Draft, Failure> {
    let root: Map<String, Value> = serde_json::from_str(text).map_err(|err| {
        (
            Some(err.line()),
            format!(
                "invalid JSON: {}",
                crate::text::without_position(&err.to_string())
            ),
        )
    })?;
    // Past the syntax, no problem has a line of its own.
    read_object(document, &root).map_err(|message| (None, message))
}

/// Reads the document's object, `root`.
fn read_object(document: &str, root: &Map<String, Value>) -> Result<Draft, String> {
    let stem = document.rsplit('/').next().unwrap_or(document);
    let title = match string(root, "project", "")? {
        Some(title) if !title.is_empty() => title,
        _ => string(root, "name", "")?
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| stem.trim_end_matches(".json").to_owned()),
    };
    let mut nodes = vec![Node {
        title,
        body: string(root, "description", "")?.filter(|d| !d.is_empty()),
        line: 1,
        ..Node::default()
    }];
    let stories = match root.get("userStories") {
        Some(Value::Array(stories)) => stories,
        Some(other) => {
            return Err(format!(
                "\"userStories\" must be an array of stories, not {}",
                kind(other)
            ));
        }
        None => {
            return Ok(Draft {
                nodes,
                skipped: Vec::new(),
            });
        }
    };
    let mut skipped = Vec::new();
    let mut ids: super::Ids = HashMap::new();
    let mut wanted: Vec<(usize, Vec<String>, usize)> = Vec::new();
    for (position, story) in stories.iter().enumerate() {
        let at = format!("userStories[{position}]: ");
        let Value::Object(story) = story else {
            return Err(format!(
                "{at}a story must be an object, not {}",
                kind(story)
            ));
        };
        let id = string(story, "id", &at)?
            .filter(|id| !id.is_empty())
            .ok_or_else(|| format!("{at}a story needs an \"id\" (like \"US-001\")"))?;
        let heading = string(story, "title", &at)?
            .filter(|title| !title.is_empty())
            .ok_or_else(|| format!("{at}story {id} needs a \"title\""))?;
        if let Some((_, first)) = ids.get(&id) {
            return Err(format!(
                "{at}story id {id} is used twice (first by userStories[{first}]); give each story its own id"
            ));
        }
        let passes = match story.get("passes") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(passes)) => *passes,
            Some(other) => {
                return Err(format!("{at}\"passes\" must be true or false, not {other}"));
            }
        };
        let priority = match story.get("priority") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) if n.is_i64() => n.as_i64(),
            Some(other) => {
                return Err(format!(
                    "{at}\"priority\" must be a whole number, not {other}"
                ));
            }
        };
        let title = format!("{id}: {heading}");
        if passes {
            ids.insert(id.clone(), (None, position));
            skipped.push(Skipped {
                source: format!("{document}#{id}"),
                title,
                reason: "\"passes\": true".to_owned(),
            });
            continue;
        }
        let mut body = string(story, "description", &at)?.unwrap_or_default();
        if let Some(notes) = string(story, "notes", &at)?.filter(|n| !n.is_empty()) {
            if !body.is_empty() {
                body.push_str("\n\n");
            }
            body.push_str("Notes: ");
            body.push_str(&notes);
        }
        let mut deps = strings(story, "dependsOn", &at)?;
        deps.extend(strings(story, "dependencies", &at)?);
        let index = nodes.len();
        ids.insert(id.clone(), (Some(index), position));
        wanted.push((index, deps, position));
        nodes.push(Node {
            parent: Some(0),
            leaf: true,
            key: id.clone(),
            requirement: Some(id),
            title,
            body: (!body.is_empty()).then_some(body),
            acceptance: strings(story, "acceptanceCriteria", &at)?
                .into_iter()
                .filter(|c| !c.is_empty())
                .collect(),
            line: position + 1,
            priority,
            ..Node::default()
        });
    }
    for (index, deps, position) in wanted {
        for dep in deps {
            match super::depend(&mut nodes, &ids, index, &dep) {
                Ok(()) => {}
                Err(super::Unresolved::Itself) => {
                    return Err(format!(
                        "userStories[{position}]: story depends on itself ({dep}); remove it"
                    ));
                }
                Err(super::Unresolved::Unknown) => {
                    return Err(format!(
                        "userStories[{position}]: depends on {dep}, which no story has as its id; fix or remove it"
                    ));
                }
            }
        }
    }
    if let Some(cycle) = super::find_cycle(&nodes) {
        let names: Vec<&str> = cycle
            .iter()
            .filter_map(|&i| nodes[i].requirement.as_deref())
            .collect();
        return Err(format!(
            "stories depend on each other in a circle ({} -> {}); remove one of these dependencies",
            names.join(" -> "),
            names[0]
        ));
    }
    Ok(Draft { nodes, skipped })
}

/// The string at `key` of `object` (`at` names the object), trimmed.
fn string(object: &Map<String, Value>, key: &str, at: &str) -> Result<Option<String>, String> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.trim().to_owned())),
        Some(other) => Err(format!("{at}\"{key}\" must be a string, not {other}")),
    }
}

/// The strings at `key` of `object` (`at` names the object), trimmed.
fn strings(object: &Map<String, Value>, key: &str, at: &str) -> Result<Vec<String>, String> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(text) => Ok(text.trim().to_owned()),
                other => Err(format!("{at}\"{key}\" must hold strings, not {other}")),
            })
            .collect(),
        Some(other) => Err(format!(
            "{at}\"{key}\" must be an array of strings, not {other}"
        )),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(text: &str) -> String {
        read("prd.json", text).unwrap_err().1
    }

    #[test]
    fn each_problem_names_the_story_and_the_fix() {
        let story = |fields: &str| {
            format!(r#"{{"userStories": [{{"id": "US-1", "title": "t"{fields}}}]}}"#)
        };
        for (text, message) in [
            (r#"{"userStories": {}}"#.to_owned(), "\"userStories\" must be an array of stories, not an object"),
            (r#"{"userStories": [3]}"#.to_owned(), "userStories[0]: a story must be an object, not a number"),
            (r#"{"userStories": [{"title": "t"}]}"#.to_owned(), "userStories[0]: a story needs an \"id\" (like \"US-001\")"),
            (story(r#", "passes": "yes""#), "userStories[0]: \"passes\" must be true or false, not \"yes\""),
            (story(r#", "priority": 1.5"#), "userStories[0]: \"priority\" must be a whole number, not 1.5"),
            (story(r#", "acceptanceCriteria": "a""#), "userStories[0]: \"acceptanceCriteria\" must be an array of strings, not \"a\""),
            (story(r#", "dependsOn": ["US-9"]"#), "userStories[0]: depends on US-9, which no story has as its id; fix or remove it"),
            (story(r#", "dependsOn": ["US-1"]"#), "userStories[0]: story depends on itself (US-1); remove it"),
            (
                r#"{"userStories": [{"id": "A-1", "title": "a"}, {"id": "A-1", "title": "b"}]}"#.to_owned(),
                "userStories[1]: story id A-1 is used twice (first by userStories[0]); give each story its own id",
            ),
            (
                r#"{"userStories": [{"id": "A-1", "title": "a", "dependsOn": ["A-2"]}, {"id": "A-2", "title": "b", "dependsOn": ["A-1"]}]}"#.to_owned(),
                "stories depend on each other in a circle (A-1 -> A-2 -> A-1); remove one of these dependencies",
            ),
        ] {
            assert_eq!(problem(&text), message, "{text}");
        }
    }
}
