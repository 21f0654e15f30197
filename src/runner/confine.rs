//! Whether a run's agents are confined, and what each may write: its
//! checkout, the git folder, the queue and `.ralph/`, a private temporary
//! folder, the agents' own state, the user's caches and
//! `sandbox.writable`; `~/.ssh` and the other keys hidden (docs/AGENT.md).

use std::path::{Path, PathBuf};

use crate::config::{SandboxMode, SandboxSettings};
use crate::paths::Paths;
use crate::platform::sandbox::{Mount, Policy, Tool};

/// The agents' state folders and files under the home folder, every
/// preset's: an agent writes its sessions, settings and logs there.
pub(crate) const AGENT_STATE: &[&str] = &[
    ".claude",
    ".claude.json",
    ".codex",
    ".config/opencode",
    ".local/share/opencode",
    ".local/state/opencode",
    ".config/amp",
    ".local/share/amp",
    ".gemini",
    ".qwen",
    ".cursor",
    ".config/cursor",
    ".aider",
];

/// The state folders each preset's agent makes on its first run, which
/// a confined agent could not make in a read-only home: ralph makes the
/// ones the run's preset needs, and `~/.cache`, before confining it.
pub(crate) fn state_folders(preset: Option<&str>) -> &'static [&'static str] {
    match preset {
        Some("claude") => &[".claude"],
        Some("codex" | "codex-app-server") => &[".codex"],
        Some("opencode") => &[
            ".config/opencode",
            ".local/share/opencode",
            ".local/state/opencode",
        ],
        Some("amp") => &[".config/amp", ".local/share/amp"],
        Some("gemini") => &[".gemini"],
        Some("qwen") => &[".qwen"],
        Some("cursor") => &[".cursor", ".config/cursor"],
        _ => &[],
    }
}

/// The preset that runs, when no command of one's own replaces it.
pub(crate) fn preset_of<'s>(
    settings: &'s crate::config::Settings,
    agent_cmd: Option<&str>,
) -> Option<&'s str> {
    let own = agent_cmd.is_some() || settings.agent.command.is_some();
    (!own).then_some(settings.agent.preset.as_deref()).flatten()
}

/// Makes `~/.cache` and the state folders of `preset` that are missing,
/// so the confinement can open them for writing.
pub(crate) fn prepare_home(home: &Path, preset: Option<&str>) {
    for rel in std::iter::once(&".cache").chain(state_folders(preset)) {
        // A home ralph cannot write to stays as it is; the agent says so.
        let _ = std::fs::create_dir_all(home.join(rel));
    }
}

/// The user's caches under the home folder, writable so builds and
/// installs inside the agent use them.
pub(crate) const CACHES: &[&str] = &[
    ".cache",
    ".cargo/registry",
    ".cargo/git",
    ".cargo/.package-cache",
    ".npm",
    ".pnpm-store",
    ".yarn",
    ".m2",
    ".gradle",
    "go/pkg/mod",
    "Library/Caches",
];

/// What agents never see under the home folder.
pub(crate) const HIDDEN: &[&str] = &[".ssh", ".aws", ".gnupg", ".config/gh", ".netrc", ".docker"];

/// Whether this run's agents are confined.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Sandbox {
    /// `sandbox.mode: off`.
    Off,
    /// `auto`, and the tool cannot confine here: why.
    Unavailable(String),
    /// Confined by this tool.
    On {
        /// bubblewrap or sandbox-exec.
        tool: Tool,
        /// What its trial said of it (its version).
        version: String,
        /// The user's home folder, for the lists above.
        home: Option<PathBuf>,
    },
}

/// Decides at a run's start, from the settings and a trial of the tool
/// found on `path`: `Err` is `sandbox.mode: on` without a working tool,
/// the message saying what to install.
pub(crate) fn decide(
    settings: &SandboxSettings,
    path: &std::ffi::OsStr,
    home: Option<PathBuf>,
) -> Result<Sandbox, String> {
    if settings.mode == SandboxMode::Off {
        return Ok(Sandbox::Off);
    }
    let tried = Tool::find(path).and_then(|tool| Ok((tool.trial()?, tool)));
    match (tried, settings.mode) {
        (Ok((version, tool)), _) => Ok(Sandbox::On {
            tool,
            version,
            home,
        }),
        (Err(why), SandboxMode::On) => Err(why),
        (Err(why), _) => Ok(Sandbox::Unavailable(why)),
    }
}

/// [`decide`] with this process's `PATH` and `HOME`, for a command that
/// runs agents: `sandbox.mode: on` without a working tool refused with
/// what to install.
pub(crate) fn decide_here(settings: &SandboxSettings) -> Result<Sandbox, crate::Error> {
    decide(
        settings,
        &std::env::var_os("PATH").unwrap_or_default(),
        std::env::var_os("HOME").map(PathBuf::from),
    )
    .map_err(|why| {
        crate::task::Error::Refused {
            message: format!("sandbox.mode is on and agents cannot be confined: {why}"),
            hint: Some(
                "install it, or set sandbox.mode to auto (run unconfined when it cannot) in config/ralph.yaml".to_owned(),
            ),
        }
        .into()
    })
}

/// What the agent of a task working in `work_dir` may write and see.
pub(crate) fn policy(
    settings: &SandboxSettings,
    paths: &Paths,
    work_dir: &Path,
    git_dir: &Path,
    home: Option<&Path>,
    tmp: &Path,
) -> Policy {
    let project = paths.project();
    let mut mounts = vec![Mount::Write(project.to_owned())];
    if work_dir != project {
        // A worker: the project's checkout is closed but for the queue
        // files (replaced in the folder, which stays writable) and
        // `.ralph/`; the other workers' trees are closed, its own open.
        let open = [
            ".git",
            ".ralph",
            crate::paths::TASKS_FILE,
            crate::paths::DONE_FILE,
        ];
        if let Ok(entries) = std::fs::read_dir(project) {
            let mut closed: Vec<PathBuf> = (entries.filter_map(Result::ok))
                .filter(|entry| !open.iter().any(|name| entry.file_name() == *name))
                .map(|entry| entry.path())
                .collect();
            closed.sort();
            mounts.extend(closed.into_iter().map(Mount::Read));
        }
        mounts.push(Mount::Read(paths.worktrees()));
        mounts.push(Mount::Write(work_dir.to_owned()));
    }
    mounts.push(Mount::Write(git_dir.to_owned()));
    mounts.push(Mount::Write(tmp.to_owned()));
    let place = |text: &str| -> Option<PathBuf> {
        match text.strip_prefix("~/") {
            Some(rest) => home.map(|home| home.join(rest)),
            None => Some(project.join(text)),
        }
    };
    if let Some(home) = home {
        for rel in AGENT_STATE.iter().chain(CACHES) {
            mounts.push(Mount::Write(home.join(rel)));
        }
    }
    mounts.extend(
        settings
            .writable
            .iter()
            .filter_map(|p| place(p))
            .map(Mount::Write),
    );
    let mut hidden: Vec<PathBuf> = home
        .map(|home| HIDDEN.iter().map(|rel| home.join(rel)).collect())
        .unwrap_or_default();
    hidden.extend(settings.hidden.iter().filter_map(|p| place(p)));
    Policy {
        mounts,
        hidden,
        network: settings.network,
    }
}

/// The confinement of an agent working in `work_dir` when `sandbox` is
/// on, its private temporary folder (named by `tag`) made.
pub(crate) fn confinement(
    sandbox: &Sandbox,
    settings: &SandboxSettings,
    paths: &Paths,
    work_dir: &Path,
    git_dir: &Path,
    tag: &str,
    preset: Option<&str>,
) -> Result<Option<crate::agent::Confinement>, crate::Error> {
    let Sandbox::On { tool, home, .. } = sandbox else {
        return Ok(None);
    };
    if let Some(home) = home {
        prepare_home(home, preset);
    }
    let tmp = std::env::temp_dir().join(format!("ralph-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(crate::files::at::<crate::Error>(&tmp))?;
    let policy = policy(settings, paths, work_dir, git_dir, home.as_deref(), &tmp);
    let (program, args) = crate::platform::sandbox::prefix(tool, &policy);
    Ok(Some(crate::agent::Confinement { program, args, tmp }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_writes_its_own_tree_and_no_other_and_the_keys_are_hidden() {
        let paths = Paths::new("/p");
        let settings = SandboxSettings {
            writable: vec!["~/.local/share/mise".into(), "build-cache".into()],
            hidden: vec!["~/.kube".into()],
            network: false,
            ..SandboxSettings::default()
        };
        let policy = policy(
            &settings,
            &paths,
            Path::new("/p/.ralph/worktrees/A"),
            Path::new("/p/.git"),
            Some(Path::new("/home/me")),
            Path::new("/tmp/ralph-1"),
        );
        assert_eq!(
            policy.mounts[..5],
            [
                Mount::Write("/p".into()),
                Mount::Read("/p/.ralph/worktrees".into()),
                Mount::Write("/p/.ralph/worktrees/A".into()),
                Mount::Write("/p/.git".into()),
                Mount::Write("/tmp/ralph-1".into()),
            ]
        );
        assert!(
            policy
                .mounts
                .contains(&Mount::Write("/home/me/.claude".into()))
        );
        assert!(
            policy
                .mounts
                .contains(&Mount::Write("/home/me/.cargo/registry".into()))
        );
        assert!(policy.mounts.ends_with(&[
            Mount::Write("/home/me/.local/share/mise".into()),
            Mount::Write("/p/build-cache".into()),
        ]));
        assert!(policy.hidden.contains(&PathBuf::from("/home/me/.ssh")));
        assert_eq!(policy.hidden.last(), Some(&PathBuf::from("/home/me/.kube")));
        assert!(!policy.network);
    }

    #[test]
    fn a_fresh_home_gets_the_cache_and_the_presets_state_folders() {
        let home = assert_fs::TempDir::new().unwrap();
        prepare_home(home.path(), Some("opencode"));
        for made in [
            ".cache",
            ".config/opencode",
            ".local/share/opencode",
            ".local/state/opencode",
        ] {
            assert!(home.path().join(made).is_dir(), "{made}");
        }
        // Another agent's folders are not made.
        assert!(!home.path().join(".claude").exists());
        prepare_home(home.path(), None);
        assert_eq!(std::fs::read_dir(home.path()).unwrap().count(), 3);
    }

    #[test]
    fn off_is_off_and_on_without_the_tool_says_what_to_install() {
        let off = SandboxSettings {
            mode: SandboxMode::Off,
            ..SandboxSettings::default()
        };
        assert_eq!(decide(&off, "".as_ref(), None), Ok(Sandbox::Off));
        let on = SandboxSettings {
            mode: SandboxMode::On,
            ..SandboxSettings::default()
        };
        let refused = decide(&on, "/nowhere".as_ref(), None).unwrap_err();
        assert!(
            refused.starts_with("no bwrap on PATH: install bubblewrap"),
            "{refused}"
        );
        let auto = SandboxSettings::default();
        assert!(matches!(
            decide(&auto, "/nowhere".as_ref(), None),
            Ok(Sandbox::Unavailable(_))
        ));
    }
}
