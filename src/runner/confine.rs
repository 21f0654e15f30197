//! Whether a run's agents (and checks, and the hooks ralph's git runs)
//! are confined, and what each may write: its checkout but the protected
//! paths, the git folder but its settings, the queue and what `ralph task`
//! writes, a private temporary folder, the agents' own state, the user's
//! caches and `sandbox.writable`; the keys, credentials and the sockets
//! that act for the user hidden (docs/AGENT.md, docs/SECURITY.md).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::config::{SandboxMode, SandboxSettings};
use crate::paths::Paths;
use crate::platform::sandbox::{Mount, Policy, Tool};
use crate::protected::Protected;

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

/// What agents never see under the home folder: keys, credentials and
/// the tokens of package registries and clouds.
pub(crate) const HIDDEN: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gh",
    ".netrc",
    ".docker",
    ".git-credentials",
    ".config/git/credentials",
    ".cache/git/credential",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".kube",
    ".azure",
    ".config/gcloud",
    ".vault-token",
    ".terraform.d",
    ".password-store",
    ".local/share/keyrings",
];

/// The system's sockets that act for the user or for root, hidden from
/// agents: the message buses, the container engines and systemd.
const SYSTEM_SOCKETS: &[&str] = &[
    "/run/dbus",
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/containerd",
    "/run/podman",
    "/run/systemd/private",
    "/tmp/.X11-unix",
];

/// The sockets and their folders through which a process of the user's
/// acts for them, hidden from agents: the user's runtime folder (its
/// session bus, keyring and GnuPG agent), tmux's (`tmux run-shell` runs
/// anything), the ssh agent's (it signs with the user's keys), and
/// [`SYSTEM_SOCKETS`]. Read from ralph's environment `var` once, at the
/// start, for the user `uid`.
pub(crate) fn sockets(var: &dyn Fn(&str) -> Option<OsString>, uid: u32) -> Vec<PathBuf> {
    let mut hidden: Vec<PathBuf> = vec![PathBuf::from(format!("/run/user/{uid}"))];
    hidden.extend(var("XDG_RUNTIME_DIR").map(PathBuf::from));
    let tmux_dir = var("TMUX_TMPDIR").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    hidden.push(tmux_dir.join(format!("tmux-{uid}")));
    // `$TMUX` is `socket,pid,session`; `$SSH_AUTH_SOCK` the socket.
    let tmux = var("TMUX").and_then(|value| {
        let value = value.to_string_lossy().into_owned();
        value.split(',').next().map(PathBuf::from)
    });
    let home = var("HOME").map(PathBuf::from);
    for socket in tmux
        .into_iter()
        .chain(var("SSH_AUTH_SOCK").map(PathBuf::from))
    {
        // The socket's own folder too, unless it is a folder of everyone's
        // (or the variable names a socket long gone).
        if let Some(folder) = socket.parent()
            && socket.exists()
            && !matches!(folder.to_str(), Some("/" | "/tmp" | "/var/tmp" | ""))
            && Some(folder) != home.as_deref()
        {
            hidden.push(folder.to_owned());
        }
        hidden.push(socket);
    }
    if let Ok(entries) = std::fs::read_dir("/tmp") {
        let mut agents: Vec<PathBuf> = (entries.filter_map(Result::ok))
            .filter(|entry| entry.file_name().to_string_lossy().starts_with("ssh-"))
            .map(|entry| entry.path())
            .collect();
        agents.sort();
        hidden.extend(agents);
    }
    hidden.extend(SYSTEM_SOCKETS.iter().map(PathBuf::from));
    hidden
}

/// Whether this run's agents are confined.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Sandbox {
    /// `sandbox.mode: off`.
    Off,
    /// `auto`, and the tool cannot confine here: why.
    Unavailable(String),
    /// Confined by this tool.
    On(Jail),
}

/// A confinement that works here, as the run's start found it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Jail {
    /// bubblewrap or sandbox-exec.
    pub tool: Tool,
    /// What its trial said of it (its version).
    pub version: String,
    /// The user's home folder, for the lists above.
    pub home: Option<PathBuf>,
    /// Whether the system forbids a private process space.
    pub host_processes: bool,
    /// The sockets hidden, [`sockets`].
    pub sockets: Vec<PathBuf>,
}

impl Jail {
    /// What this confinement holds back less than docs/SECURITY.md says,
    /// each said as what an agent can then do.
    pub(crate) fn weaker(&self) -> Vec<&'static str> {
        self.tool.weaker(self.host_processes)
    }

    /// The line a run and `ralph doctor` start with.
    pub(crate) fn said(&self) -> String {
        let mut line = format!("agents run confined: {} (docs/AGENT.md)", self.version);
        for weaker in self.weaker() {
            line.push_str(&format!("; weaker here: {weaker}"));
        }
        line
    }
}

/// Decides at a run's start, from the settings and a trial of the tool
/// found on `path`: `Err` is `sandbox.mode: on` without a working tool,
/// the message saying what to install.
pub(crate) fn decide(
    settings: &SandboxSettings,
    path: &std::ffi::OsStr,
    home: Option<PathBuf>,
    sockets: Vec<PathBuf>,
) -> Result<Sandbox, String> {
    if settings.mode == SandboxMode::Off {
        return Ok(Sandbox::Off);
    }
    let tried = Tool::find(path).and_then(|tool| Ok((tool.trial()?, tool)));
    match (tried, settings.mode) {
        (Ok(((version, host_processes), tool)), _) => Ok(Sandbox::On(Jail {
            tool,
            version,
            home,
            host_processes,
            sockets,
        })),
        (Err(why), SandboxMode::On) => Err(why),
        (Err(why), _) => Ok(Sandbox::Unavailable(why)),
    }
}

/// [`decide`] with this process's `PATH`, `HOME` and sockets, for a
/// command that runs agents: `sandbox.mode: on` without a working tool
/// refused with what to install.
pub(crate) fn decide_here(settings: &SandboxSettings) -> Result<Sandbox, crate::Error> {
    let var = |name: &str| std::env::var_os(name);
    decide(
        settings,
        &var("PATH").unwrap_or_default(),
        var("HOME").map(PathBuf::from),
        sockets(&var, nix::unistd::getuid().as_raw()),
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

/// What `ralph task` writes under `.ralph/` from inside an agent: the
/// queue's lock and kept copies, notes, review verdicts, events, and the
/// app-server's temporary folder. The rest of `.ralph/` is read-only to
/// agents.
pub(crate) const TASK_WRITES: [&str; 5] = [
    crate::paths::QUEUE_DIR,
    crate::paths::NOTES_DIR,
    crate::paths::REVIEWS_DIR,
    crate::paths::EVENTS_FILE,
    crate::paths::TMP_DIR,
];

/// Where a confined command works.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Checkout<'a> {
    /// The working tree it may write (for a project in a subfolder, the
    /// repository's).
    pub dir: &'a Path,
    /// The repository's common git folder, when the command commits.
    pub git_dir: Option<&'a Path>,
    /// What of the working tree it may not change.
    pub protected: &'a Protected,
}

/// The parts of a git folder git reads code to run from (its settings,
/// hooks and attributes), and that of each submodule's and worktree's:
/// read-only to agents, so what ralph's git runs is what the user set up.
fn git_settings(git_dir: &Path) -> Vec<PathBuf> {
    let mut parts = Vec::new();
    let mut folders = vec![git_dir.to_owned()];
    while let Some(folder) = folders.pop() {
        for name in ["config", "config.worktree", "hooks", "info"] {
            parts.push(folder.join(name));
        }
        if let Ok(modules) = std::fs::read_dir(folder.join("modules")) {
            folders.extend(modules.filter_map(Result::ok).map(|entry| entry.path()));
        }
    }
    // A worktree's own settings, and where it says its repository is.
    if let Ok(trees) = std::fs::read_dir(git_dir.join("worktrees")) {
        for tree in trees.filter_map(Result::ok) {
            for name in ["config.worktree", "commondir", "gitdir"] {
                parts.push(tree.path().join(name));
            }
        }
    }
    parts.sort();
    parts
}

/// Makes what the confinement must find to close it: the git folder's
/// `hooks/` and `info/` (an agent would otherwise make them), and what
/// `ralph task` writes under `.ralph/`.
pub(crate) fn prepare(paths: &Paths, git_dir: Option<&Path>) {
    // A folder ralph cannot make stays as it is; the agent's writes there
    // fail as they would.
    for part in git_dir.map(git_settings).unwrap_or_default() {
        if matches!(
            part.file_name().and_then(|name| name.to_str()),
            Some("hooks" | "info")
        ) {
            let _ = std::fs::create_dir_all(part);
        }
    }
    let project = paths.project();
    for rel in TASK_WRITES {
        let path = project.join(rel);
        let _ = match rel {
            crate::paths::EVENTS_FILE => crate::files::own::append(project, &path, b""),
            _ => crate::files::own::create_dir(project, &path),
        };
    }
}

/// What a confined command working in `checkout` may write and see: the
/// checkout but its protected paths, the project's queue files and what
/// `ralph task` writes, the git folder but its settings, a private
/// temporary folder, the agents' own state, the user's caches and
/// `sandbox.writable`; never the keys, credentials and sockets.
pub(crate) fn policy(
    jail: &Jail,
    settings: &SandboxSettings,
    paths: &Paths,
    checkout: Checkout<'_>,
    tmp: &Path,
) -> Policy {
    let project = paths.project();
    let runtime = project.join(crate::paths::RUNTIME_DIR);
    // libgit2 says a working tree with a `/` at its end.
    let dir: PathBuf = checkout.dir.components().collect();
    let checkout = Checkout {
        dir: &dir,
        ..checkout
    };
    let protected = |dir: &Path| -> Vec<Mount> {
        (checkout.protected.paths().iter())
            .map(|rel| Mount::Read(dir.join(rel)))
            .collect()
    };
    let mut mounts = Vec::new();
    let alone = project.starts_with(checkout.dir);
    if alone {
        mounts.push(Mount::Write(checkout.dir.to_owned()));
        mounts.extend(protected(checkout.dir));
    } else {
        // A worker: the project's checkout is closed but for the queue
        // files (replaced in the folder, which stays writable) and
        // `.ralph/`; the other workers' trees are closed, its own open.
        mounts.push(Mount::Write(project.to_owned()));
        let open = [
            ".git",
            crate::paths::RUNTIME_DIR,
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
    }
    mounts.push(Mount::Read(runtime.clone()));
    mounts.extend(
        TASK_WRITES
            .iter()
            .map(|rel| Mount::Write(project.join(rel))),
    );
    if !alone {
        mounts.push(Mount::Write(checkout.dir.to_owned()));
        mounts.extend(protected(checkout.dir));
        // Where the worktree says its repository is.
        if checkout.dir.join(".git").is_file() {
            mounts.push(Mount::Read(checkout.dir.join(".git")));
        }
    }
    if let Some(git_dir) = checkout.git_dir {
        mounts.push(Mount::Write(git_dir.to_owned()));
        mounts.extend(git_settings(git_dir).into_iter().map(Mount::Read));
    }
    mounts.push(Mount::Write(tmp.to_owned()));
    let home = jail.home.as_deref();
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
    hidden.extend(jail.sockets.iter().cloned());
    hidden.extend(settings.hidden.iter().filter_map(|p| place(p)));
    // A mount made again later shadows everything the first one and those
    // between made at or below its path: the first is dropped (`.ralph/`
    // is both a protected path and the runtime folder).
    let mut kept: Vec<Mount> = Vec::with_capacity(mounts.len());
    for (at, mount) in mounts.iter().enumerate() {
        if !mounts[at + 1..].contains(mount) {
            kept.push(mount.clone());
        }
    }
    Policy {
        mounts: kept,
        hidden,
        network: settings.network,
        host_processes: jail.host_processes,
    }
}

/// Has the hooks `repo`'s git runs run confined as the agents working in
/// its checkout are, when they are (`git::Guard`).
pub(crate) fn guard_hooks(
    repo: &mut crate::git::Repo,
    sandbox: &Sandbox,
    settings: &SandboxSettings,
    paths: &Paths,
) -> Result<(), crate::Error> {
    let Sandbox::On(jail) = sandbox else {
        return Ok(());
    };
    let protected = Protected::new(
        settings,
        repo.project_inner(),
        repo.tracked_hooks().as_deref(),
    );
    let checkout = Checkout {
        dir: repo.workdir(),
        git_dir: Some(repo.common_dir()),
        protected: &protected,
    };
    prepare(paths, checkout.git_dir);
    let tmp = private_folder("hooks")?;
    let policy = policy(jail, settings, paths, checkout, &tmp);
    let (program, args) = crate::platform::sandbox::prefix(&jail.tool, &policy);
    let before = std::iter::once(program.into_os_string())
        .chain(args)
        .collect();
    let unset = (std::env::vars_os().map(|(name, _)| name))
        .filter(|name| {
            !name.to_str().is_some_and(|name| {
                crate::agent::kept_when_confined(name, None, &settings.pass_env)
            })
        })
        .collect();
    repo.guard_hooks(crate::git::Guard::new(before, unset, tmp));
    Ok(())
}

/// A new temporary folder of this run's, `ralph-<pid>-<what>-<n>`.
fn private_folder(what: &str) -> Result<PathBuf, crate::Error> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let tmp = std::env::temp_dir().join(format!("ralph-{}-{what}-{n}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(crate::files::at::<crate::Error>(&tmp))?;
    Ok(tmp)
}

/// The confinement of the project's checks when a person runs them
/// (`ralph doctor --run-checks`): as a run's would be, when a run would
/// confine its agents.
pub(crate) fn for_checks(
    settings: &crate::config::Settings,
    paths: &Paths,
) -> Result<Option<crate::agent::Confinement>, crate::Error> {
    let sandbox = decide_here(&settings.sandbox)?;
    let repo = crate::git::Repo::open_without_base(paths, &crate::git::Options::default()).ok();
    let protected = match &repo {
        Some(repo) => Protected::new(
            &settings.sandbox,
            repo.project_inner(),
            repo.tracked_hooks().as_deref(),
        ),
        None => Protected::new(&settings.sandbox, "", None),
    };
    let checkout = Checkout {
        dir: repo.as_ref().map_or(paths.root(), |repo| repo.workdir()),
        git_dir: repo.as_ref().map(|repo| repo.common_dir()),
        protected: &protected,
    };
    confinement(&sandbox, &settings.sandbox, paths, checkout, "doctor", None)
}

/// The confinement of a command working in `checkout` when `sandbox` is
/// on, its private temporary folder (named by `tag`) made.
pub(crate) fn confinement(
    sandbox: &Sandbox,
    settings: &SandboxSettings,
    paths: &Paths,
    checkout: Checkout<'_>,
    tag: &str,
    preset: Option<&str>,
) -> Result<Option<crate::agent::Confinement>, crate::Error> {
    let Sandbox::On(jail) = sandbox else {
        return Ok(None);
    };
    if let Some(home) = &jail.home {
        prepare_home(home, preset);
    }
    prepare(paths, checkout.git_dir);
    let tmp = std::env::temp_dir().join(format!("ralph-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(crate::files::at::<crate::Error>(&tmp))?;
    let policy = policy(jail, settings, paths, checkout, &tmp);
    let (program, args) = crate::platform::sandbox::prefix(&jail.tool, &policy);
    Ok(Some(crate::agent::Confinement {
        program,
        args,
        tmp,
        pass_env: settings.pass_env.clone(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jail() -> Jail {
        Jail {
            tool: Tool::Bwrap("/usr/bin/bwrap".into()),
            version: "bubblewrap 0.8.0".into(),
            home: Some("/home/me".into()),
            host_processes: false,
            sockets: vec!["/run/user/1000".into()],
        }
    }

    #[test]
    fn a_worker_writes_its_own_tree_but_not_what_is_protected_and_the_keys_are_hidden() {
        let paths = Paths::new("/p");
        let settings = SandboxSettings {
            writable: vec!["~/.local/share/mise".into(), "build-cache".into()],
            hidden: vec!["~/.extra".into()],
            network: false,
            ..SandboxSettings::default()
        };
        let protected = Protected::new(&settings, "", Some(".githooks"));
        let checkout = Checkout {
            dir: Path::new("/p/.ralph/worktrees/A/"),
            git_dir: Some(Path::new("/nowhere/.git")),
            protected: &protected,
        };
        let policy = policy(
            &jail(),
            &settings,
            &paths,
            checkout,
            Path::new("/tmp/ralph-1"),
        );
        let at = |mount: Mount| {
            (policy.mounts.iter().position(|m| *m == mount))
                .unwrap_or_else(|| panic!("{mount:?}: {:#?}", policy.mounts))
        };
        // The project's runtime folder is closed but for what `ralph
        // task` writes; the worker's own tree is open again, but for its
        // protected paths; the git folder's settings are closed.
        assert_eq!(at(Mount::Write("/p".into())), 0);
        assert!(at(Mount::Read("/p/.ralph".into())) < at(Mount::Write("/p/.ralph/queue".into())));
        assert!(
            at(Mount::Write("/p/.ralph/notes".into()))
                < at(Mount::Write("/p/.ralph/worktrees/A".into()))
        );
        for closed in [
            "config",
            "roles",
            "templates",
            "working.md",
            ".ralph",
            ".gitattributes",
            ".githooks",
        ] {
            assert!(
                at(Mount::Write("/p/.ralph/worktrees/A".into()))
                    < at(Mount::Read(Path::new("/p/.ralph/worktrees/A").join(closed))),
                "{closed}"
            );
        }
        for part in ["config", "hooks", "info", "config.worktree"] {
            assert!(
                at(Mount::Write("/nowhere/.git".into()))
                    < at(Mount::Read(Path::new("/nowhere/.git").join(part))),
                "{part}"
            );
        }
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
        for hidden in [
            "/home/me/.ssh",
            "/home/me/.git-credentials",
            "/home/me/.npmrc",
            "/run/user/1000",
        ] {
            assert!(policy.hidden.contains(&PathBuf::from(hidden)), "{hidden}");
        }
        assert_eq!(
            policy.hidden.last(),
            Some(&PathBuf::from("/home/me/.extra"))
        );
        assert!(!policy.network);
    }

    #[test]
    fn alone_in_a_subfolder_project_the_whole_working_tree_is_writable() {
        let paths = Paths::new("/repo/app");
        let settings = SandboxSettings::default();
        let protected = Protected::new(&settings, "app/", None);
        let checkout = Checkout {
            dir: Path::new("/repo/"),
            git_dir: Some(Path::new("/repo/.git")),
            protected: &protected,
        };
        let policy = policy(
            &jail(),
            &settings,
            &paths,
            checkout,
            Path::new("/tmp/ralph-1"),
        );
        assert_eq!(
            policy.mounts[..4],
            [
                Mount::Write("/repo".into()),
                Mount::Read("/repo/.gitattributes".into()),
                Mount::Read("/repo/app/config".into()),
                Mount::Read("/repo/app/roles".into()),
            ]
        );
        // `.ralph/`, protected and the runtime folder, is closed once,
        // before what `ralph task` writes in it is opened again.
        let ralph = Mount::Read("/repo/app/.ralph".into());
        assert_eq!(policy.mounts.iter().filter(|m| **m == ralph).count(), 1);
        let at = |mount: &Mount| policy.mounts.iter().position(|m| m == mount).unwrap();
        assert!(at(&ralph) < at(&Mount::Write("/repo/app/.ralph/queue".into())));
        // No mount is made twice.
        for (index, mount) in policy.mounts.iter().enumerate() {
            assert!(!policy.mounts[index + 1..].contains(mount), "{mount:?}");
        }
    }

    #[test]
    fn the_sockets_that_act_for_the_user_are_found_in_the_environment() {
        let home = assert_fs::TempDir::new().unwrap();
        let agent = home.path().join(".ssh-agent/agent.sock");
        std::fs::create_dir_all(agent.parent().unwrap()).unwrap();
        std::fs::write(&agent, "").unwrap();
        let env = |name: &str| -> Option<OsString> {
            match name {
                "TMUX" => Some("/tmp/tmux-1000/default,123,0".into()),
                "SSH_AUTH_SOCK" => Some(agent.clone().into()),
                "XDG_RUNTIME_DIR" => Some("/run/user/1000".into()),
                "HOME" => Some(home.path().into()),
                _ => None,
            }
        };
        let hidden = sockets(&env, 1000);
        for path in [
            Path::new("/run/user/1000"),
            Path::new("/tmp/tmux-1000"),
            Path::new("/tmp/tmux-1000/default"),
            agent.parent().unwrap(),
            &agent,
            Path::new("/run/docker.sock"),
            Path::new("/run/dbus"),
        ] {
            assert!(hidden.iter().any(|h| h == path), "{path:?}: {hidden:?}");
        }
        // A socket right in the home folder hides itself, not the home.
        let right_in = home.path().join("agent.sock");
        std::fs::write(&right_in, "").unwrap();
        let env = |name: &str| -> Option<OsString> {
            match name {
                "SSH_AUTH_SOCK" => Some(right_in.clone().into()),
                "HOME" => Some(home.path().into()),
                _ => None,
            }
        };
        let hidden = sockets(&env, 1000);
        assert!(hidden.contains(&right_in));
        assert!(!hidden.iter().any(|h| h == home.path()));
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
        assert_eq!(
            decide(&off, "".as_ref(), None, Vec::new()),
            Ok(Sandbox::Off)
        );
        let on = SandboxSettings {
            mode: SandboxMode::On,
            ..SandboxSettings::default()
        };
        let refused = decide(&on, "/nowhere".as_ref(), None, Vec::new()).unwrap_err();
        assert!(
            refused.starts_with("no bwrap on PATH: install bubblewrap"),
            "{refused}"
        );
        let auto = SandboxSettings::default();
        assert!(matches!(
            decide(&auto, "/nowhere".as_ref(), None, Vec::new()),
            Ok(Sandbox::Unavailable(_))
        ));
    }
}
