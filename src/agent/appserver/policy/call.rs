//! The program a simple command runs, with what only sets it up taken
//! away (variables, `if`/`then`/`do`, `sudo`, `env`, `timeout 5`, ...),
//! and the options that point it at another folder (`make -C DIR`,
//! `git --git-dir=DIR`, `GIT_DIR=DIR`).

use super::shell::Word;

/// Programs that run the rest of their words as a command: the name,
/// its options that take the next word as their value, and how many
/// words it takes before the command (`timeout`'s duration).
const WRAPPERS: [(&str, &[&str], usize); 13] = [
    (
        "sudo",
        &[
            "-u",
            "-g",
            "-h",
            "-p",
            "-C",
            "-D",
            "-r",
            "-t",
            "-T",
            "-U",
            "--user",
            "--group",
            "--host",
            "--prompt",
            "--close-from",
            "--chdir",
            "--role",
            "--type",
            "--other-user",
        ],
        0,
    ),
    ("doas", &["-u", "-C"], 0),
    (
        "env",
        &["-u", "-C", "-S", "--unset", "--chdir", "--split-string"],
        0,
    ),
    ("command", &[], 0),
    ("builtin", &[], 0),
    ("exec", &["-a"], 0),
    ("nohup", &[], 0),
    ("time", &["-f", "-o", "--format", "--output"], 0),
    ("nice", &["-n", "--adjustment"], 0),
    ("timeout", &["-s", "-k", "--signal", "--kill-after"], 1),
    ("stdbuf", &["-i", "-o", "-e"], 0),
    ("setsid", &[], 0),
    (
        "xargs",
        &[
            "-I",
            "-n",
            "-P",
            "-L",
            "-s",
            "-d",
            "-E",
            "-a",
            "--max-args",
            "--max-procs",
            "--max-lines",
            "--max-chars",
            "--delimiter",
            "--arg-file",
            "--eof",
        ],
        0,
    ),
];

/// Options that run a program in another folder: the program and its
/// options (a short one may have its value attached: `make -Cdocs`).
const ELSEWHERE: [(&str, &[&str]); 10] = [
    ("make", &["-C", "--directory"]),
    ("gmake", &["-C", "--directory"]),
    ("ninja", &["-C"]),
    ("tar", &["-C", "--directory"]),
    ("cargo", &["-C"]),
    ("env", &["-C", "--chdir"]),
    ("sudo", &["-D", "--chdir"]),
    ("pnpm", &["-C", "--dir"]),
    ("npm", &["--prefix"]),
    ("yarn", &["--cwd"]),
];

/// Variables that point git at another folder.
const GIT_VARIABLES: [&str; 2] = ["GIT_DIR", "GIT_WORK_TREE"];

/// Words that only shape a command (`if`, `then`, `!`, `{`): they are
/// skipped, and the command after them is read.
const SHAPING: [&str; 15] = [
    "if", "then", "else", "elif", "fi", "while", "until", "do", "done", "esac", "!", "{", "}",
    "in", "coproc",
];

/// Words that start a line whose other words run nothing: the header of
/// a loop or a `case`.
const HEADERS: [&str; 3] = ["for", "select", "case"];

/// The program a simple command runs.
#[derive(Debug)]
pub(super) struct Call<'a> {
    /// The program's name without its folder: `git` of `/usr/bin/git`.
    pub name: &'a str,
    /// What it is given.
    pub args: &'a [Word],
    /// The folders it is pointed at, by its wrappers, its variables and
    /// its options, in the order they take effect.
    pub folders: Vec<Folder>,
}

/// A folder a command is pointed at.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Folder {
    /// What the command does with it, for the reason a decline gives:
    /// `runs make in`, `points GIT_DIR at`.
    pub does: String,
    /// The folder as written, unquoted.
    pub path: String,
    /// Whether the path means what it says (see `Word::literal`).
    pub literal: bool,
    /// Whether what comes after it runs there (`git -C`), or it is only
    /// where something is looked for (`--git-dir`).
    pub moves: bool,
}

impl Folder {
    fn new(does: String, word: &Word, path: &str, moves: bool) -> Folder {
        Folder {
            does,
            path: path.to_owned(),
            literal: word.literal,
            moves,
        }
    }
}

/// What `git`'s words say before its subcommand.
#[derive(Debug)]
pub(super) struct Git<'a> {
    /// `-C`, `--git-dir` and `--work-tree`, in their order.
    pub folders: Vec<Folder>,
    /// The aliases it defines with `-c alias.NAME=VALUE`: name and value.
    pub aliases: Vec<(&'a str, &'a str)>,
    /// The subcommand and its words (`push origin main`), empty when it
    /// has none.
    pub command: &'a [Word],
}

/// The program `words` run, or `None` for a line that runs nothing (only
/// variables, a loop's header, `exec > log`).
pub(super) fn of(words: &[Word]) -> Option<Call<'_>> {
    let mut folders = Vec::new();
    let mut at = 0;
    loop {
        let word = words.get(at)?;
        let text = word.text.as_str();
        if let Some((variable, value)) = assignment(text) {
            if GIT_VARIABLES.contains(&variable) {
                let does = format!("points {variable} at");
                folders.push(Folder::new(does, word, value, false));
            }
            at += 1;
            continue;
        }
        if SHAPING.contains(&text) {
            at += 1;
            continue;
        }
        if HEADERS.contains(&text) {
            return None;
        }
        if text == "function" {
            at += 2;
            continue;
        }
        let name = text.rsplit('/').next().unwrap_or(text);
        let Some((_, valued, positional)) = WRAPPERS.iter().find(|(wrapper, ..)| *wrapper == name)
        else {
            let args = &words[at + 1..];
            folders.extend(elsewhere(name, args));
            return Some(Call {
                name,
                args,
                folders,
            });
        };
        let start = at + 1;
        at = start;
        while let Some(option) = words.get(at).map(|w| w.text.as_str()) {
            if option == "--" {
                at += 1;
                break;
            }
            if !option.starts_with('-') || option == "-" {
                break;
            }
            at += if valued.contains(&option) { 2 } else { 1 };
        }
        let own = &words[start..at.min(words.len())];
        folders.extend(elsewhere(name, own));
        at += positional;
    }
}

/// `NAME=value` split at its `=`.
fn assignment(text: &str) -> Option<(&str, &str)> {
    let (name, value) = text.split_once('=')?;
    let name = name.strip_suffix('+').unwrap_or(name);
    let mut chars = name.chars();
    let first = chars.next()?;
    ((first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then_some((name, value))
}

/// The folders `name`'s options among `words` point it at (up to `--`).
fn elsewhere(name: &str, words: &[Word]) -> Vec<Folder> {
    let Some((_, options)) = ELSEWHERE.iter().find(|(program, _)| *program == name) else {
        return Vec::new();
    };
    let mut folders = Vec::new();
    let mut at = 0;
    while let Some(word) = words.get(at) {
        let text = word.text.as_str();
        if text == "--" {
            break;
        }
        at += 1;
        let value = options.iter().find_map(|option| {
            if text == *option {
                return words.get(at).map(|next| (next, next.text.as_str()));
            }
            let attached = match option.starts_with("--") {
                true => text.strip_prefix(option)?.strip_prefix('=')?,
                false => text.strip_prefix(option).filter(|rest| !rest.is_empty())?,
            };
            Some((word, attached))
        });
        if let Some((word, path)) = value {
            folders.push(Folder::new(format!("runs {name} in"), word, path, true));
        }
    }
    folders
}

/// `git`'s words read up to its subcommand.
pub(super) fn git(args: &[Word]) -> Git<'_> {
    let mut git = Git {
        folders: Vec::new(),
        aliases: Vec::new(),
        command: &[],
    };
    let mut at = 0;
    while let Some(word) = args.get(at) {
        let text = word.text.as_str();
        at += 1;
        let (option, attached) = match text.split_once('=') {
            Some((option, value)) if option.starts_with("--") => (option, Some(value)),
            _ => (text, None),
        };
        match option {
            "-C" | "--git-dir" | "--work-tree" => {
                let value = match attached {
                    Some(path) => Some((word, path)),
                    None => args.get(at).map(|next| (next, next.text.as_str())),
                };
                let Some((word, path)) = value else { break };
                if attached.is_none() {
                    at += 1;
                }
                let does = match option {
                    "-C" => "runs git in".to_owned(),
                    other => format!("points git's {other} at"),
                };
                git.folders
                    .push(Folder::new(does, word, path, option == "-C"));
            }
            "-c" => {
                if let Some((name, value)) = (args.get(at))
                    .and_then(|setting| setting.text.split_once('='))
                    .and_then(|(key, value)| Some((alias_name(key)?, value)))
                {
                    git.aliases.push((name, value));
                }
                at += 1;
            }
            "--namespace" | "--config-env" | "--super-prefix" | "--attr-source"
                if attached.is_none() =>
            {
                at += 1;
            }
            option if option.starts_with('-') => {}
            _ => {
                git.command = &args[at - 1..];
                break;
            }
        }
    }
    git
}

/// `NAME` of a git setting `alias.NAME` (git's keys ignore case).
pub(super) fn alias_name(key: &str) -> Option<&str> {
    let (section, name) = key.split_once('.')?;
    section.eq_ignore_ascii_case("alias").then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::appserver::policy::shell::{Command, parse};

    fn words(line: &str) -> Vec<Word> {
        match &parse(line).unwrap().0[0].0[0] {
            Command::Simple(simple) => simple.words.clone(),
            other => panic!("{other:?}"),
        }
    }

    fn texts(words: &[Word]) -> Vec<&str> {
        words.iter().map(|word| word.text.as_str()).collect()
    }

    fn folders(folders: &[Folder]) -> Vec<(&str, &str, bool)> {
        (folders.iter())
            .map(|f| (f.does.as_str(), f.path.as_str(), f.moves))
            .collect()
    }

    #[test]
    fn wrappers_variables_and_shaping_words_are_taken_away() {
        for (line, name, args) in [
            ("git push", "git", vec!["push"]),
            (
                "sudo -u me env -i A=b timeout -s KILL 5 nice -n 3 /usr/bin/git push",
                "git",
                vec!["push"],
            ),
            (
                "LANG=C then ! command -- xargs -I {} sh -c x",
                "sh",
                vec!["-c", "x"],
            ),
            ("function f { git push", "git", vec!["push"]),
            ("stdbuf -oL time -p make", "make", vec![]),
        ] {
            let words = words(line);
            let call = of(&words).unwrap_or_else(|| panic!("{line}"));
            assert_eq!((call.name, texts(call.args)), (name, args), "{line}");
        }
        for nothing in ["A=b", "for x in a b", "case $x in", "exec", "sudo -i"] {
            assert!(of(&words(nothing)).is_none(), "{nothing}");
        }
    }

    #[test]
    fn folders_are_read_from_variables_wrappers_and_options() {
        let words = words("GIT_DIR=/x env -C a make -Cb --directory=c -C d -- -C e");
        let call = of(&words).unwrap();
        assert_eq!(
            folders(&call.folders),
            [
                ("points GIT_DIR at", "/x", false),
                ("runs env in", "a", true),
                ("runs make in", "b", true),
                ("runs make in", "c", true),
                ("runs make in", "d", true),
            ]
        );
        let words = super::tests::words("grep -C 3 x ../y");
        assert!(
            of(&words).unwrap().folders.is_empty(),
            "grep's -C is context"
        );
        let words = super::tests::words("make -C \"$OUT\"");
        assert!(!of(&words).unwrap().folders[0].literal);
    }

    #[test]
    fn git_is_read_up_to_its_subcommand() {
        let words = words(
            "git -C a --git-dir=b --work-tree c -c alias.p=push -c x.y=z --no-pager --namespace n p origin",
        );
        let git = git(&words[1..]);
        assert_eq!(
            folders(&git.folders),
            [
                ("runs git in", "a", true),
                ("points git's --git-dir at", "b", false),
                ("points git's --work-tree at", "c", false),
            ]
        );
        assert_eq!(git.aliases, [("p", "push")]);
        assert_eq!(texts(git.command), ["p", "origin"]);
        assert!(git_words_are_empty("git --version"));
        assert_eq!(alias_name("ALIAS.co"), Some("co"));
        assert_eq!(alias_name("user.name"), None);
    }

    fn git_words_are_empty(line: &str) -> bool {
        git(&words(line)[1..]).command.is_empty()
    }
}
