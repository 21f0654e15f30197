//! Every `ralph ...` command that a message, a shipped file or a document
//! suggests exists. Each is read out of the sources (inline code spans,
//! command lines in fenced code blocks, indented examples in YAML
//! comments) and checked against the real binary: each word that stands
//! where a subcommand goes is one (`ralph <path> --help` exits 0), and each
//! flag is an option of that command. Values and positional arguments are
//! placeholders (`ID`, `{id}`, `$RALPH_TASK_ID`) and are not checked.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::support::RALPH;

/// One suggested command and where it was found.
#[derive(Debug, PartialEq)]
struct Mention {
    /// `file:line`, relative to the repository.
    place: String,
    /// The command, from `ralph` on.
    command: String,
}

/// The files that suggest commands: the messages in `src/`, the shipped
/// defaults, the README and the docs. docs/SCALE.md is left out: it
/// designs commands that are not built yet.
fn sources() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    for folder in ["src", "templates", "roles", "config", "docs"] {
        files_under(&root.join(folder), &mut files);
    }
    files.retain(|file| {
        let text_file = matches!(
            file.extension().and_then(|e| e.to_str()),
            Some("rs" | "md" | "j2" | "yaml")
        );
        text_file && !file.ends_with("docs/SCALE.md")
    });
    files.sort();
    files
}

fn files_under(folder: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(folder).expect("read a source folder") {
        let path = entry.expect("read a folder entry").path();
        if path.is_dir() {
            files_under(&path, files);
        } else {
            files.push(path);
        }
    }
}

/// Whether `text` starts with `ralph` and a word that may be a command.
fn names_a_command(text: &str) -> bool {
    text.strip_prefix("ralph ")
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_lowercase()))
}

/// The commands `text` (the file `name`) suggests.
fn mentions(name: &str, text: &str) -> Vec<Mention> {
    let lines: Vec<&str> = text.lines().collect();
    let rust = name.ends_with(".rs");
    let markdown = name.ends_with(".md") || name.ends_with(".md.j2");
    let yaml = name.ends_with(".yaml");
    let mut found = vec![];
    let mut push = |line: usize, command: &str| {
        // Inside a Rust string literal, quotes are escaped.
        let command = if rust {
            command.replace("\\\"", "\"")
        } else {
            command.to_owned()
        };
        found.push(Mention {
            place: format!("{name}:{}", line + 1),
            command,
        });
    };
    let mut fenced = false;
    for (at, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if markdown && trimmed.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            if names_a_command(trimmed) {
                // Continued by a trailing `\`, or by indented options
                // (the command reference's synopsis); shell comments left out.
                let code = |line: &str| {
                    line.split(" #")
                        .next()
                        .unwrap_or_default()
                        .trim()
                        .to_owned()
                };
                let mut command = code(trimmed);
                for next in &lines[at + 1..] {
                    let next = code(next);
                    if let Some(head) = command.strip_suffix('\\') {
                        command = format!("{} {next}", head.trim_end());
                    } else if next.starts_with(['[', '-']) {
                        command = format!("{command} {next}");
                    } else {
                        break;
                    }
                }
                for part in command.split([';', '&']) {
                    if names_a_command(part.trim()) {
                        push(at, part.trim());
                    }
                }
            }
            continue;
        }
        if yaml
            && let Some(comment) = trimmed.strip_prefix("#  ")
            && names_a_command(comment.trim_start())
        {
            push(at, comment.trim_start());
            continue;
        }
        // Inline code spans; the last may wrap onto the next line.
        // (A space after the line finds a span that wraps after `ralph`.)
        let padded = format!("{line} ");
        let mut rest = padded.as_str();
        while let Some(start) = rest.find("`ralph ") {
            let span = &rest[start + 1..];
            if let Some(end) = span.find('`') {
                if names_a_command(&span[..end]) {
                    push(at, &span[..end]);
                }
                rest = &span[end + 1..];
                continue;
            }
            let next = lines.get(at + 1).map_or("", |next| next.trim_start());
            if let Some(end) = next.find('`') {
                let span = format!("{} {}", span.trim_end(), &next[..end]);
                if names_a_command(&span) {
                    push(at, &span);
                }
            }
            break;
        }
    }
    found
}

/// What `ralph <path> --help` says: the help, or clap's refusal.
type Help = Result<String, String>;

/// Checks that `command` names a real subcommand path and only flags that
/// path has, asking the binary for each help once (kept in `helps`).
fn check(command: &str, helps: &mut HashMap<Vec<String>, Help>) -> Result<(), String> {
    let words = shlex::split(command)
        .unwrap_or_else(|| command.split_whitespace().map(str::to_owned).collect());
    for variant in alternatives(&words) {
        check_words(&variant[1..], helps)?;
    }
    Ok(())
}

/// `words` once for each alternative of a word written `a|b` or `a/b`
/// (`ralph roles check|which`).
fn alternatives(words: &[String]) -> Vec<Vec<String>> {
    let alternative = |word: &str| {
        word.contains(['|', '/'])
            && word.split(['|', '/']).all(|part| {
                !part.is_empty() && part.chars().all(|c| c.is_ascii_lowercase() || c == '-')
            })
    };
    match words.iter().position(|word| alternative(word)) {
        None => vec![words.to_vec()],
        Some(at) => words[at]
            .split(['|', '/'])
            .flat_map(|choice| {
                let mut variant = words.to_vec();
                variant[at] = choice.to_owned();
                alternatives(&variant)
            })
            .collect(),
    }
}

/// Checks the words after `ralph`: a word where the command so far has
/// subcommands must be one, an option must be one of the command's (its
/// value skipped), and anything else is a placeholder.
fn check_words(words: &[String], helps: &mut HashMap<Vec<String>, Help>) -> Result<(), String> {
    let mut path: Vec<String> = vec![];
    let mut help = help_of(&path, helps)?;
    let mut words = words
        .iter()
        .map(|word| {
            // Synopsis marks: `[--write]`, `TITLE...`, `[--var NAME=VALUE]...`.
            word.trim_start_matches('[')
                .trim_end_matches("...")
                .trim_end_matches(']')
        })
        .peekable();
    while let Some(word) = words.next() {
        if word.is_empty() || word == "|" {
            continue;
        }
        if is_option(word) {
            let (flag, inline_value) = match word.split_once('=') {
                Some((flag, _)) => (flag, true),
                None => (word, false),
            };
            match options(&help).get(flag) {
                None => return Err(format!("`{}` has no option {flag}", shown(&path))),
                // Its value, unless the text names the option alone.
                Some(true) if !inline_value => {
                    words.next_if(|next| !is_option(next));
                }
                Some(_) => {}
            }
        } else if help.lines().any(|line| line == "Commands:") {
            path.push(word.to_owned());
            help = help_of(&path, helps)?;
        }
        // Otherwise a positional argument: a placeholder, not checked.
    }
    if path.is_empty() {
        return Err("names no command".to_owned());
    }
    Ok(())
}

/// Whether `word` is an option (`-v`, `--dir`, `--var=X`), not a value
/// that starts with a dash (`"--verbose prints a line per file"`).
fn is_option(word: &str) -> bool {
    let name = word.split('=').next().unwrap_or_default();
    name.len() > 1
        && name.starts_with('-')
        && name.chars().all(|c| c == '-' || c.is_ascii_alphanumeric())
}

/// `ralph <path>`, as messages show it.
fn shown(path: &[String]) -> String {
    std::iter::once("ralph")
        .chain(path.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The help of `ralph <path>`, or why clap refused the path.
fn help_of(path: &[String], helps: &mut HashMap<Vec<String>, Help>) -> Result<String, String> {
    helps
        .entry(path.to_vec())
        .or_insert_with(|| {
            let output = std::process::Command::new(RALPH)
                .args(path)
                .arg("--help")
                .env_clear()
                .output()
                .expect("run ralph --help");
            if output.status.success() {
                Ok(String::from_utf8_lossy(&output.stdout).into_owned())
            } else {
                let stderr = String::from_utf8_lossy(&output.stderr);
                Err(format!(
                    "`{} --help` exits {}: {}",
                    shown(path),
                    output.status.code().unwrap_or(-1),
                    stderr.lines().next().unwrap_or_default()
                ))
            }
        })
        .clone()
}

/// The options a help lists (`-v`, `--verbose`, `--dir`), each with
/// whether it takes a value (`--dir <DIR>`).
fn options(help: &str) -> HashMap<String, bool> {
    let option = regex::Regex::new(r"^\s+(?:(-[A-Za-z]), )?(--[a-z0-9-]+)( <)?").expect("a regex");
    let mut options = HashMap::new();
    for line in help.lines() {
        if let Some(found) = option.captures(line) {
            let value = found.get(3).is_some();
            for name in [found.get(1), found.get(2)].into_iter().flatten() {
                options.insert(name.as_str().to_owned(), value);
            }
        }
    }
    options
}

/// Every mention in the sources, read once per test.
fn all_mentions() -> Vec<Mention> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    sources()
        .iter()
        .flat_map(|file| {
            let name = file.strip_prefix(root).expect("a source in the repository");
            let text = std::fs::read_to_string(file).expect("read a source file");
            mentions(&name.display().to_string(), &text)
        })
        .collect()
}

#[test]
fn every_command_the_sources_suggest_exists() {
    let mentions = all_mentions();
    // Enough that a broken extractor cannot pass by finding nothing.
    assert!(mentions.len() >= 300, "only {} found", mentions.len());
    for form in [
        "src/",
        "templates/",
        "roles/",
        "config/",
        "README.md",
        "docs/",
    ] {
        assert!(
            mentions.iter().any(|m| m.place.starts_with(form)),
            "no command found in {form}"
        );
    }
    let mut helps = HashMap::new();
    let wrong: Vec<String> = mentions
        .iter()
        .filter_map(|mention| {
            check(&mention.command, &mut helps)
                .err()
                .map(|why| format!("{}: `{}`: {why}", mention.place, mention.command))
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "commands suggested that ralph does not have:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_check_refuses_a_command_or_option_ralph_lacks() {
    let mut helps = HashMap::new();
    for (command, why) in [
        (
            "ralph task set-status ID pending",
            "`ralph task set-status --help` exits 2: error: unrecognized subcommand 'set-status'",
        ),
        (
            "ralph task add TITLE --parnet A",
            "`ralph task add` has no option --parnet",
        ),
        (
            "ralph roles check|wich",
            "`ralph roles wich --help` exits 2: error: unrecognized subcommand 'wich'",
        ),
    ] {
        assert_eq!(check(command, &mut helps), Err(why.to_owned()), "{command}");
    }
    for command in [
        "ralph --dir out task start ID",
        "ralph run [--workers N] [--agent PRESET | --agent-cmd CMD]",
        "ralph task ready/complete/split/add/block",
        "ralph roles which [--task ID] [--var NAME=VALUE]...",
    ] {
        assert_eq!(check(command, &mut helps), Ok(()), "{command}");
    }
}

#[test]
fn commands_are_read_from_code_spans_fences_and_yaml_comments() {
    let markdown = "Run `ralph task start ID` or `ralph\nrun`, `ralph plan\n--agent`.\n\
                    ```sh\nralph task add \"a\" \\\n  --dep A   # note\n\
                    ralph run [--once]\n          [--quiet]\nralph task show ID; ralph task tree\n```\n";
    let commands = |name: &str, text: &str| -> Vec<String> {
        mentions(name, text)
            .into_iter()
            .map(|m| format!("{} {}", m.place, m.command))
            .collect()
    };
    assert_eq!(
        commands("x.md", markdown),
        [
            "x.md:1 ralph task start ID",
            "x.md:1 ralph run",
            "x.md:2 ralph plan --agent",
            "x.md:5 ralph task add \"a\" --dep A",
            "x.md:7 ralph run [--once] [--quiet]",
            "x.md:9 ralph task show ID",
            "x.md:9 ralph task tree",
        ]
    );
    assert_eq!(
        commands(
            "x.rs",
            "\"hint: run `ralph task add \\\"t\\\"` (`ralph <ralph@localhost>`)\""
        ),
        ["x.rs:1 ralph task add \"t\""]
    );
    assert_eq!(
        commands(
            "x.yaml",
            "# ralph evaluates these\n#   ralph roles which   the role\n"
        ),
        ["x.yaml:2 ralph roles which   the role"]
    );
}
