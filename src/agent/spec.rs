//! Which agent runs and with what command line: a preset or a custom
//! command, the model, and the prompt's way in.

use std::ffi::{OsStr, OsString};
use std::path::Path;

use super::Error;
use super::preset::Preset;
use crate::config::AgentSettings;

/// How a command takes the prompt, as its placeholders say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromptPassing {
    /// Written to the agent's stdin, which is then closed.
    Stdin,
    /// Appended to the command line as the last argument.
    Argv,
    /// Named by a `{prompt_file}` argument of the command line.
    File,
}

/// The longest single argument Linux accepts is 131072 bytes including the
/// terminating NUL; a prompt argument must stay below this.
pub const MAX_ARG_BYTES: usize = 128 * 1024;

const PROMPT: &str = "{prompt}";
const PROMPT_FILE: &str = "{prompt_file}";

/// The agent to run: a preset or a custom command line, and the model.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    command: Command,
    model: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
enum Command {
    Preset(Preset),
    Custom { line: String, words: Vec<String> },
}

/// One concrete command line: the program, its arguments and how the
/// prompt travels.
#[derive(Clone, Debug, PartialEq)]
pub struct Invocation {
    /// The program as written (a bare name is looked up on `PATH`).
    pub program: String,
    /// The arguments, placeholders substituted.
    pub args: Vec<OsString>,
    /// How the prompt reaches the agent; stdin is null unless `Stdin`.
    pub passing: PromptPassing,
}

impl Spec {
    /// Chooses the agent: `custom_cmd` (the `--agent-cmd` flag) wins over
    /// `agent.command`, which wins over `agent.preset`; `role_model` (a
    /// role's model override) wins over `agent.model`.
    pub fn new(
        settings: &AgentSettings,
        custom_cmd: Option<&str>,
        role_model: Option<&str>,
    ) -> Result<Spec, Error> {
        let given = |model: Option<&str>| {
            model
                .map(str::trim)
                .filter(|model| !model.is_empty())
                .map(str::to_owned)
        };
        let model = given(role_model).or_else(|| given(settings.model.as_deref()));
        let command = match (custom_cmd.or(settings.command.as_deref()), &settings.preset) {
            (Some(line), _) => {
                let words = shlex::split(line).ok_or_else(|| Error::BadCommand {
                    command: line.to_owned(),
                    reason: "a quote is not closed",
                })?;
                if words.is_empty() {
                    return Err(Error::BadCommand {
                        command: line.to_owned(),
                        reason: "it is empty",
                    });
                }
                Command::Custom {
                    line: line.to_owned(),
                    words,
                }
            }
            (None, Some(name)) => Command::Preset(
                Preset::from_name(name).ok_or_else(|| Error::UnknownPreset(name.clone()))?,
            ),
            (None, None) => return Err(Error::NoAgent),
        };
        if let (Command::Preset(preset), Some(model)) = (&command, &model)
            && preset.model_flag().is_none()
        {
            return Err(Error::ModelUnsupported {
                preset: *preset,
                model: model.clone(),
            });
        }
        Ok(Spec { command, model })
    }

    /// A spec for a preset with an optional model, without settings.
    pub fn preset(preset: Preset, model: Option<&str>) -> Result<Spec, Error> {
        let settings = AgentSettings {
            preset: Some(preset.name().to_owned()),
            command: None,
            model: model.map(str::to_owned),
            ..AgentSettings::default()
        };
        Spec::new(&settings, None, None)
    }

    /// A spec for a custom command line.
    pub fn custom(line: &str) -> Result<Spec, Error> {
        let settings = AgentSettings {
            preset: None,
            command: Some(line.to_owned()),
            model: None,
            ..AgentSettings::default()
        };
        Spec::new(&settings, None, None)
    }

    /// The tool whose conventions (output format, auth errors, environment)
    /// apply: the preset, or for a custom command the preset whose binary it
    /// runs (`/opt/bin/claude ...` reads like claude), if any.
    pub fn dialect(&self) -> Option<Preset> {
        match &self.command {
            Command::Preset(preset) => Some(*preset),
            Command::Custom { words, .. } => Preset::from_program(&words[0]),
        }
    }

    /// The preset chosen by name, `None` for a custom command.
    pub fn named_preset(&self) -> Option<Preset> {
        match &self.command {
            Command::Preset(preset) => Some(*preset),
            Command::Custom { .. } => None,
        }
    }

    /// The program to run, as written.
    pub fn program(&self) -> &str {
        match &self.command {
            Command::Preset(preset) => preset.program(),
            Command::Custom { words, .. } => &words[0],
        }
    }

    /// The model asked for (ignored by custom commands, which spell out
    /// their own flags).
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// How the agent is named in messages: the preset, or the custom line.
    pub fn label(&self) -> String {
        match &self.command {
            Command::Preset(preset) => format!("`{preset}`"),
            Command::Custom { line, .. } => format!("command `{line}`"),
        }
    }

    /// The words of the command line with placeholders left in.
    fn template(&self) -> Vec<String> {
        match &self.command {
            Command::Preset(preset) => {
                let mut words = vec![preset.program().to_owned()];
                words.extend(preset.base_args().iter().map(|&arg| arg.to_owned()));
                if let (Some(flag), Some(model)) = (preset.model_flag(), &self.model) {
                    words.push(flag.to_owned());
                    words.push(model.clone());
                }
                words.extend(preset.trailing_args().iter().map(|&arg| arg.to_owned()));
                words
            }
            Command::Custom { words, .. } => words.clone(),
        }
    }

    /// The command line for one prompt: `{prompt_file}` becomes the prompt
    /// file's path and `{prompt}` the prompt text; without either the prompt
    /// goes to stdin (as it always does for a preset, which has no
    /// `{prompt}`). A custom command's argument of `MAX_ARG_BYTES` or more
    /// is refused.
    pub fn invocation(&self, prompt_file: &Path, prompt: &str) -> Result<Invocation, Error> {
        let mut words = self.template();
        let program = words.remove(0);
        let mut passing = PromptPassing::Stdin;
        let mut args = Vec::with_capacity(words.len());
        for word in &words {
            if word.contains(PROMPT) {
                passing = PromptPassing::Argv;
            } else if word.contains(PROMPT_FILE) && passing == PromptPassing::Stdin {
                passing = PromptPassing::File;
            }
            let arg = substitute(word, prompt_file.as_os_str(), prompt);
            if arg.len() + 1 > MAX_ARG_BYTES {
                return Err(Error::PromptTooLong {
                    bytes: prompt.len(),
                    limit: MAX_ARG_BYTES - 1,
                });
            }
            args.push(arg);
        }
        Ok(Invocation {
            program,
            args,
            passing,
        })
    }
}

/// Replaces every `{prompt_file}` and `{prompt}` in `word`, in one pass, so
/// placeholder text inside the prompt itself stays as it is.
fn substitute(word: &str, prompt_file: &OsStr, prompt: &str) -> OsString {
    let mut out = OsString::new();
    let mut rest = word;
    loop {
        let next = [
            (PROMPT_FILE, rest.find(PROMPT_FILE)),
            (PROMPT, rest.find(PROMPT)),
        ]
        .into_iter()
        .filter_map(|(placeholder, at)| at.map(|at| (at, placeholder)))
        .min();
        let Some((at, placeholder)) = next else {
            out.push(rest);
            return out;
        };
        out.push(&rest[..at]);
        if placeholder == PROMPT_FILE {
            out.push(prompt_file);
        } else {
            out.push(prompt);
        }
        rest = &rest[at + placeholder.len()..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::Reportable;

    fn args(invocation: &Invocation) -> Vec<String> {
        invocation
            .args
            .iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect()
    }

    fn settings(preset: Option<&str>, command: Option<&str>, model: Option<&str>) -> AgentSettings {
        AgentSettings {
            preset: preset.map(str::to_owned),
            command: command.map(str::to_owned),
            model: model.map(str::to_owned),
            ..AgentSettings::default()
        }
    }

    #[test]
    fn every_preset_builds_its_documented_command_line() {
        let file = Path::new("/p/.ralph/prompts/1-A.md");
        let cases: [(Preset, &str, PromptPassing); 8] = [
            (
                Preset::Claude,
                "claude -p --output-format stream-json --verbose --dangerously-skip-permissions --model M",
                PromptPassing::Stdin,
            ),
            (
                Preset::Codex,
                "codex exec --json --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check -m M -",
                PromptPassing::Stdin,
            ),
            (
                Preset::Opencode,
                "opencode run --format json --auto -m M",
                PromptPassing::Stdin,
            ),
            (
                Preset::Amp,
                "amp -x --stream-json --dangerously-allow-all",
                PromptPassing::Stdin,
            ),
            (
                Preset::Gemini,
                "gemini -o stream-json --yolo --skip-trust -m M",
                PromptPassing::Stdin,
            ),
            (
                Preset::Qwen,
                "qwen -o stream-json --yolo -m M",
                PromptPassing::Stdin,
            ),
            (
                Preset::Aider,
                "aider --message-file /p/.ralph/prompts/1-A.md --yes-always --no-pretty --no-stream --no-check-update --analytics-disable --no-show-model-warnings --no-auto-commits --model M",
                PromptPassing::File,
            ),
            (
                Preset::Cursor,
                "cursor-agent -p --output-format stream-json --force --trust --model M",
                PromptPassing::Stdin,
            ),
        ];
        for (preset, line, passing) in cases {
            let model = (preset != Preset::Amp).then_some("M");
            let spec = Spec::preset(preset, model).unwrap();
            let invocation = spec.invocation(file, "PROMPT").unwrap();
            let mut words = vec![invocation.program.clone()];
            words.extend(args(&invocation));
            assert_eq!(words.join(" "), line, "{preset}");
            assert_eq!(invocation.passing, passing, "{preset}");
            assert_eq!(spec.dialect(), Some(preset));
        }
    }

    #[test]
    fn without_a_model_no_flag_is_passed() {
        let spec = Spec::preset(Preset::Gemini, None).unwrap();
        let invocation = spec.invocation(Path::new("f"), "p").unwrap();
        assert_eq!(
            args(&invocation),
            ["-o", "stream-json", "--yolo", "--skip-trust"]
        );
    }

    #[test]
    fn a_role_model_wins_over_the_settings_model() {
        let with_model = settings(Some("claude"), None, Some("sonnet"));
        let spec = Spec::new(&with_model, None, Some("opus")).unwrap();
        assert_eq!(spec.model(), Some("opus"));
        let spec = Spec::new(&with_model, None, None).unwrap();
        assert_eq!(spec.model(), Some("sonnet"));
        let spec = Spec::new(&with_model, None, Some(" ")).unwrap();
        assert_eq!(spec.model(), Some("sonnet"));
    }

    #[test]
    fn the_flag_wins_over_the_command_setting_which_wins_over_the_preset() {
        let both = settings(Some("claude"), Some("from-settings {prompt}"), None);
        let spec = Spec::new(&both, Some("from-flag"), None).unwrap();
        assert_eq!(spec.program(), "from-flag");
        let spec = Spec::new(&both, None, None).unwrap();
        assert_eq!(spec.program(), "from-settings");
        assert_eq!(spec.named_preset(), None);
        assert_eq!(spec.label(), "command `from-settings {prompt}`");
    }

    #[test]
    fn custom_commands_split_like_a_shell_and_substitute_anywhere() {
        let spec =
            Spec::custom(r#"./agent --file={prompt_file} -m "two words" 'x {prompt} y'"#).unwrap();
        let invocation = spec
            .invocation(Path::new("/p/prompt.md"), "it's {prompt_file}")
            .unwrap();
        assert_eq!(invocation.program, "./agent");
        assert_eq!(
            args(&invocation),
            [
                "--file=/p/prompt.md",
                "-m",
                "two words",
                "x it's {prompt_file} y"
            ]
        );
        assert_eq!(invocation.passing, PromptPassing::Argv);

        let spec = Spec::custom("agent --in {prompt_file}").unwrap();
        let invocation = spec.invocation(Path::new("/p/f.md"), "p").unwrap();
        assert_eq!(invocation.passing, PromptPassing::File);

        let spec = Spec::custom("agent --stdin").unwrap();
        let invocation = spec.invocation(Path::new("/p/f.md"), "p").unwrap();
        assert_eq!(invocation.passing, PromptPassing::Stdin);
        assert_eq!(args(&invocation), ["--stdin"]);
    }

    #[test]
    fn custom_commands_infer_their_dialect_from_the_program() {
        let spec = Spec::custom("/opt/bin/claude -p --model x").unwrap();
        assert_eq!(spec.dialect(), Some(Preset::Claude));
        assert_eq!(spec.named_preset(), None);
        assert_eq!(Spec::custom("my-agent").unwrap().dialect(), None);
    }

    #[test]
    fn custom_commands_ignore_the_model() {
        let with_model = settings(None, Some("agent {prompt}"), Some("m"));
        let spec = Spec::new(&with_model, None, None).unwrap();
        let invocation = spec.invocation(Path::new("f"), "p").unwrap();
        assert_eq!(args(&invocation), ["p"]);
    }

    #[test]
    fn presets_read_every_prompt_on_stdin_and_custom_arguments_are_bounded() {
        let long = "x".repeat(MAX_ARG_BYTES);
        let just_fits = "x".repeat(MAX_ARG_BYTES - 1);
        for preset in [Preset::Amp, Preset::Cursor] {
            let spec = Spec::preset(preset, None).unwrap();
            for prompt in ["short", "---\ntitle", &long] {
                let invocation = spec.invocation(Path::new("f"), prompt).unwrap();
                assert_eq!(invocation.passing, PromptPassing::Stdin, "{preset}");
                assert!(!args(&invocation).iter().any(|arg| arg == prompt));
            }
        }

        let spec = Spec::custom("agent {prompt}").unwrap();
        assert!(spec.invocation(Path::new("f"), &just_fits).is_ok());
        let err = spec.invocation(Path::new("f"), &long).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the prompt (131072 bytes) is too long for one command-line argument (the limit is 131071 bytes)"
        );
        assert_eq!(
            err.hint().unwrap(),
            "write {prompt_file} instead of {prompt} in the agent command, or drop both to pass the prompt on stdin"
        );
        let spec = Spec::custom("agent --prompt=x{prompt}").unwrap();
        assert!(spec.invocation(Path::new("f"), &just_fits).is_err());
    }

    #[test]
    fn bad_settings_are_refused_with_a_reason() {
        let cases: [(AgentSettings, Option<&str>, &str); 5] = [
            (
                settings(None, Some("agent 'open"), None),
                None,
                "agent command `agent 'open` cannot be used: a quote is not closed",
            ),
            (
                settings(None, None, None),
                Some("  "),
                "agent command `  ` cannot be used: it is empty",
            ),
            (
                settings(Some("claud"), None, None),
                None,
                "unknown agent preset `claud`",
            ),
            (settings(None, None, None), None, "no agent configured"),
            (
                settings(Some("amp"), None, Some("gpt")),
                None,
                "agent `amp` cannot choose a model, but model `gpt` was asked for",
            ),
        ];
        for (settings, flag, message) in cases {
            let err = Spec::new(&settings, flag, None).unwrap_err();
            assert_eq!(err.to_string(), message);
            assert_eq!(err.exit(), crate::Exit::InvalidInput);
        }
    }
}
