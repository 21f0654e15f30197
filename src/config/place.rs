//! Where in the settings text a refused value is written, so an error
//! names its line and key rather than the line serde_yaml gives.

/// The line (1-based) of `command` in the `verify.<key>` list of `yaml`,
/// or of the key itself, for an error message.
pub(super) fn line_of_check(yaml: &str, key: &str, command: &str) -> Option<usize> {
    let lines: Vec<&str> = yaml.lines().collect();
    let section = lines.iter().position(|line| line.trim_end() == "verify:")?;
    let key_line = (section + 1..lines.len()).find(|&index| {
        let line = lines[index].trim_start();
        line.starts_with(&format!("{key}:"))
    })?;
    let wanted = command.trim();
    let holds = |line: &str| {
        let line = line.split(" #").next().unwrap_or_default();
        if wanted.is_empty() {
            line.contains("\"\"") || line.contains("''") || line.trim() == "-"
        } else {
            line.contains(wanted)
        }
    };
    let item = std::iter::once(key_line)
        .chain((key_line + 1..lines.len()).take_while(|&index| {
            let line = lines[index];
            line.trim().is_empty() || line.trim_start().starts_with(['-', '#'])
        }))
        .find(|&index| {
            let line = lines[index];
            let value = if index == key_line {
                line.split_once(':').map_or("", |(_, value)| value)
            } else {
                line
            };
            holds(value)
        });
    Some(item.unwrap_or(key_line) + 1)
}

/// The line (1-based) that starts with `start`: a top-level key's.
pub(super) fn line_starting(yaml: &str, start: &str) -> Option<usize> {
    let index = yaml.lines().position(|line| line.starts_with(start))?;
    Some(index + 1)
}

/// Where a value's own check failed: serde_yaml places such an error at
/// the start of the mapping holding it (the file's first key, or
/// `agent:`), and names the section at most. The one line that holds the
/// value `message` quotes first is the place, and its key, with the
/// section's, names it: `(line, "agent.timeout: ...")`. `None` when no
/// single line holds it.
pub(super) fn value_line(yaml: &str, message: &str) -> Option<(usize, String)> {
    if let Some(key) = message
        .strip_prefix("duplicate field `")
        .and_then(|rest| rest.split('`').next())
    {
        // The second time the key is written is the one to remove.
        let line = (yaml.lines().enumerate())
            .filter(|(_, line)| {
                line.split_once(':')
                    .is_some_and(|(written, _)| written == key)
            })
            .nth(1)?
            .0;
        return Some((line + 1, format!("{key}: written twice; keep one")));
    }
    let quoted = message.split('"').nth(1)?;
    let mut section = "";
    let mut found = None;
    for (index, line) in yaml.lines().enumerate() {
        let content = line.split(" #").next().unwrap_or(line).trim_end();
        let Some((key, value)) = content.trim_start().split_once(':') else {
            continue;
        };
        let nested = line.starts_with([' ', '\t']);
        if !nested {
            section = key;
        }
        let value = value.trim().trim_start_matches("- ");
        let bare = value.trim_matches('"').trim_matches('\'');
        if key.starts_with('#') || (bare != quoted && value != quoted) {
            continue;
        }
        if found.is_some() {
            return None;
        }
        let path = if nested {
            format!("{section}.{key}")
        } else {
            key.to_owned()
        };
        found = Some((index + 1, path));
    }
    let (line, path) = found?;
    if message.starts_with(&format!("{path}: ")) {
        return Some((line, message.to_owned()));
    }
    // serde_yaml's own prefix is the section alone (`agent: ...`).
    let said = match path.split_once('.') {
        Some((section, _)) => message
            .strip_prefix(&format!("{section}: "))
            .unwrap_or(message),
        None => message,
    };
    Some((line, format!("{path}: {said}")))
}
