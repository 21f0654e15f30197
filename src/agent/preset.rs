//! The agent tools ralph knows by name: their binary, non-interactive
//! command line, model flag and how to install them.

/// A coding agent ralph knows how to drive non-interactively.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::Display)]
#[strum(serialize_all = "lowercase")]
pub enum Preset {
    /// Anthropic's Claude Code (`claude`).
    Claude,
    /// OpenAI's Codex CLI (`codex`).
    Codex,
    /// sst's opencode (`opencode`).
    Opencode,
    /// Sourcegraph's Amp (`amp`).
    Amp,
    /// Google's Gemini CLI (`gemini`).
    Gemini,
    /// Alibaba's Qwen Code (`qwen`).
    Qwen,
    /// Aider (`aider`).
    Aider,
    /// Cursor's CLI agent (`cursor-agent`).
    Cursor,
}

impl Preset {
    /// What its output reports of its spending: (cost, tokens)
    /// (docs/AGENT.md, "Classification", its tokens and cost).
    pub fn reports(self) -> (bool, bool) {
        match self {
            Preset::Claude | Preset::Amp | Preset::Cursor | Preset::Opencode | Preset::Aider => {
                (true, true)
            }
            Preset::Codex | Preset::Gemini | Preset::Qwen => (false, true),
        }
    }

    /// Every preset, in the order the documentation lists them.
    pub const ALL: [Preset; 8] = [
        Preset::Claude,
        Preset::Codex,
        Preset::Opencode,
        Preset::Amp,
        Preset::Gemini,
        Preset::Qwen,
        Preset::Aider,
        Preset::Cursor,
    ];

    /// The preset called `name` in settings and on the command line.
    pub fn from_name(name: &str) -> Option<Preset> {
        Preset::ALL.into_iter().find(|preset| preset.name() == name)
    }

    /// The preset whose binary is `program` (a bare name or a path), used to
    /// read a custom command's output with the right conventions.
    pub fn from_program(program: &str) -> Option<Preset> {
        let name = program.rsplit('/').next().unwrap_or(program);
        Preset::ALL
            .into_iter()
            .find(|preset| preset.program() == name)
    }

    /// The name used in settings (`agent.preset`) and messages.
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// The executable looked up on `PATH`.
    pub fn program(self) -> &'static str {
        match self {
            Preset::Cursor => "cursor-agent",
            other => other.name(),
        }
    }

    /// The arguments of the non-interactive form, before the model flag;
    /// `{prompt_file}` is substituted like in a custom command. No preset
    /// takes `{prompt}`: a prompt holds what agents wrote, and never
    /// travels in a command line (it goes to stdin).
    pub fn base_args(self) -> &'static [&'static str] {
        match self {
            Preset::Claude => &[
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--dangerously-skip-permissions",
            ],
            Preset::Codex => &[
                "exec",
                "--json",
                "--dangerously-bypass-approvals-and-sandbox",
                "--skip-git-repo-check",
            ],
            Preset::Opencode => &["run", "--format", "json", "--auto"],
            Preset::Amp => &["-x", "--stream-json", "--dangerously-allow-all"],
            Preset::Gemini => &["-o", "stream-json", "--yolo", "--skip-trust"],
            Preset::Qwen => &["-o", "stream-json", "--yolo"],
            Preset::Aider => &[
                "--message-file",
                "{prompt_file}",
                "--yes-always",
                "--no-pretty",
                "--no-stream",
                "--no-check-update",
                "--analytics-disable",
                "--no-show-model-warnings",
                "--no-auto-commits",
            ],
            Preset::Cursor => &["-p", "--output-format", "stream-json", "--force", "--trust"],
        }
    }

    /// The flag that selects a model, `None` when the tool has none.
    pub fn model_flag(self) -> Option<&'static str> {
        match self {
            Preset::Claude | Preset::Aider | Preset::Cursor => Some("--model"),
            Preset::Codex | Preset::Opencode | Preset::Gemini | Preset::Qwen => Some("-m"),
            Preset::Amp => None,
        }
    }

    /// Arguments after the model flag: codex reads its prompt from `-`.
    pub fn trailing_args(self) -> &'static [&'static str] {
        match self {
            Preset::Codex => &["-"],
            _ => &[],
        }
    }

    /// How to install the tool, for the missing-binary hint.
    pub fn install_hint(self) -> &'static str {
        match self {
            Preset::Claude => "install Claude Code (npm i -g @anthropic-ai/claude-code)",
            Preset::Codex => "install the Codex CLI (npm i -g @openai/codex)",
            Preset::Opencode => "install opencode (npm i -g opencode-ai)",
            Preset::Amp => "install Amp (npm i -g @sourcegraph/amp)",
            Preset::Gemini => "install the Gemini CLI (npm i -g @google/gemini-cli)",
            Preset::Qwen => "install Qwen Code (npm i -g @qwen-code/qwen-code)",
            Preset::Aider => "install aider (python -m pip install aider-install && aider-install)",
            Preset::Cursor => {
                "install the Cursor CLI (curl https://cursor.com/install -fsS | bash)"
            }
        }
    }

    /// How to log the tool in, for authentication failures.
    pub fn login_hint(self) -> &'static str {
        match self {
            Preset::Claude => "run `claude` once and log in with /login, or set ANTHROPIC_API_KEY",
            Preset::Codex => "run `codex login`, or set OPENAI_API_KEY",
            Preset::Opencode => "run `opencode auth login`",
            Preset::Amp => "run `amp login`, or set AMP_API_KEY",
            Preset::Gemini => "run `gemini` once to log in, or set GEMINI_API_KEY",
            Preset::Qwen => "run `qwen` once to log in, or set OPENAI_API_KEY",
            Preset::Aider => "set the model provider's API key (e.g. ANTHROPIC_API_KEY)",
            Preset::Cursor => "run `cursor-agent login`, or set CURSOR_API_KEY",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_the_settings_list() {
        // Every preset but the app-server's, whose backend is not a
        // command-line program.
        let names: Vec<&str> = Preset::ALL.iter().map(|p| p.name()).collect();
        let settings: Vec<&str> = (crate::config::PRESETS.iter().copied())
            .filter(|name| *name != crate::agent::APP_SERVER)
            .collect();
        assert_eq!(names, settings);
        for preset in Preset::ALL {
            assert_eq!(Preset::from_name(preset.name()), Some(preset));
            assert_eq!(Preset::from_program(preset.program()), Some(preset));
        }
        assert_eq!(Preset::from_name("cursor-agent"), None);
        assert_eq!(
            Preset::from_program("/usr/local/bin/cursor-agent"),
            Some(Preset::Cursor)
        );
        assert_eq!(Preset::from_program("./my-agent"), None);
    }

    #[test]
    fn no_preset_takes_the_prompt_in_its_command_line() {
        for preset in Preset::ALL {
            let words = preset.base_args().iter().chain(preset.trailing_args());
            for word in words {
                assert!(!word.contains("{prompt}"), "{preset}: {word}");
            }
        }
    }
}
