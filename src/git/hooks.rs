//! The repository's hooks when ralph's own git runs them. A hook judges,
//! or runs, the agent's work (a `pre-commit` that runs the tests runs the
//! agent's code), so when agents are confined the hooks are too: git is
//! pointed (`core.hooksPath`) at a folder of ralph's, out of the agents'
//! reach, whose every hook runs the user's hook of the same name inside
//! the confinement, without the variables of ralph's environment an agent
//! does not get (docs/SECURITY.md). The hooks themselves are the user's:
//! the git folder's `hooks/` and a tracked hooks folder are read-only to
//! agents.

use std::cell::RefCell;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::Repo;
use super::error::{Result, io_error};

/// How the hooks run when ralph's git runs them.
#[derive(Debug)]
pub struct Guard {
    /// The confining program and its arguments, put before a hook's path.
    before: Vec<OsString>,
    /// Variables of ralph's environment a hook does not get.
    unset: Vec<OsString>,
    /// The hooks' private temporary folder (`TMPDIR`).
    tmp: PathBuf,
    /// The folder of wrappers, once made, and the hooks it stands for.
    made: RefCell<Option<Wrappers>>,
}

/// ralph's folder of hooks, removed when the repository handle goes.
#[derive(Debug)]
struct Wrappers {
    dir: PathBuf,
    /// The user's hooks folder, and the hooks in it, when the wrappers
    /// were written.
    for_hooks: (PathBuf, Vec<String>),
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.tmp);
    }
}

impl Drop for Wrappers {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Guard {
    /// Hooks run as `before HOOK ARGS` (a confinement's command line),
    /// without `unset`, with `tmp` as their temporary folder.
    pub fn new(before: Vec<OsString>, unset: Vec<OsString>, tmp: PathBuf) -> Guard {
        Guard {
            before,
            unset,
            tmp,
            made: RefCell::new(None),
        }
    }

    /// The script that stands for the hook at `hook`.
    fn wrapper(&self, hook: &Path) -> String {
        let quote = |arg: &std::ffi::OsStr| crate::text::shell_quoted(&arg.to_string_lossy());
        let mut line = String::from("exec env");
        for name in &self.unset {
            line.push_str(" -u ");
            line.push_str(&quote(name));
        }
        line.push_str(" TMPDIR=");
        line.push_str(&quote(self.tmp.as_os_str()));
        for arg in &self.before {
            line.push(' ');
            line.push_str(&quote(arg));
        }
        line.push(' ');
        line.push_str(&quote(hook.as_os_str()));
        format!("#!/bin/sh\n# Made by ralph: the hook below, confined.\n{line} \"$@\"\n")
    }
}

impl Repo {
    /// Runs the repository's hooks confined from now on, as `guard` says.
    pub fn guard_hooks(&mut self, guard: Guard) {
        self.guard = Some(guard);
    }

    /// The folder git takes the hooks from (`core.hooksPath`, relative to
    /// the working tree, or the git folder's `hooks/`).
    pub(super) fn hooks_folder(&self) -> PathBuf {
        let configured = self
            .config()
            .and_then(|c| c.get_path("core.hooksPath").ok());
        match configured {
            Some(dir) if dir.is_relative() => self.workdir().join(dir),
            Some(dir) => dir,
            None => self.git.commondir().join("hooks"),
        }
    }

    /// The hooks folder, relative to the working tree, when it is in the
    /// working tree (a tracked folder, husky's): protected from agents.
    pub fn tracked_hooks(&self) -> Option<String> {
        let folder = self.hooks_folder();
        let inside = folder.strip_prefix(self.workdir()).ok()?;
        let text = inside.to_str()?.replace('\\', "/");
        (!text.is_empty() && !text.starts_with(".git/") && text != ".git").then_some(text)
    }

    /// The `core.hooksPath` ralph's git runs with when hooks are guarded:
    /// a folder of wrappers, one per hook of the user's, written again
    /// when the user's hooks change.
    pub(super) fn guarded_hooks(&self) -> Result<Option<PathBuf>> {
        let Some(guard) = &self.guard else {
            return Ok(None);
        };
        let folder = self.hooks_folder();
        let names = hook_names(&folder);
        let wanted = (folder, names);
        let mut made = guard.made.borrow_mut();
        if let Some(wrappers) = made.as_ref()
            && wrappers.for_hooks == wanted
        {
            return Ok(Some(wrappers.dir.clone()));
        }
        *made = None;
        let dir = private_folder()?;
        let wrappers = Wrappers {
            dir: dir.clone(),
            for_hooks: wanted,
        };
        let (folder, names) = &wrappers.for_hooks;
        for name in names {
            let path = dir.join(name);
            let script = guard.wrapper(&folder.join(name));
            std::fs::write(&path, script).map_err(io_error(&path))?;
            set_mode(&path, 0o700)?;
        }
        *made = Some(wrappers);
        Ok(Some(dir))
    }
}

/// The hooks in `folder`: its executable files but git's samples, sorted.
pub(super) fn hook_names(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .into_iter()
        .flatten()
        .filter_map(std::result::Result::ok)
        .filter(|entry| crate::files::is_executable(&entry.path()))
        .filter_map(|entry| entry.file_name().to_str().map(str::to_owned))
        .filter(|name| !name.ends_with(".sample"))
        .collect();
    names.sort();
    names
}

/// A new folder of this process's own in the temporary folder, which
/// only its user may enter: agents, which may write only their own
/// temporary folders, cannot change what is in it.
fn private_folder() -> Result<PathBuf> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let temp = std::env::temp_dir();
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = temp.join(format!("ralph-{}-hooks-{n}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => {
                set_mode(&dir, 0o700)?;
                return Ok(dir);
            }
            // Someone else's: another name.
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(err) => return Err(io_error(&dir)(err)),
        }
    }
}

fn set_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(io_error(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrapper_runs_the_hook_confined_without_the_secrets() {
        let guard = Guard::new(
            vec![
                "/usr/bin/bwrap".into(),
                "--ro-bind".into(),
                "/".into(),
                "/".into(),
                "--".into(),
            ],
            vec!["GITHUB_TOKEN".into(), "SSH_AUTH_SOCK".into()],
            "/tmp/ralph-1-hooks".into(),
        );
        assert_eq!(
            guard.wrapper(Path::new("/p/.git/hooks/pre commit")),
            "#!/bin/sh\n# Made by ralph: the hook below, confined.\n\
             exec env -u GITHUB_TOKEN -u SSH_AUTH_SOCK TMPDIR=/tmp/ralph-1-hooks /usr/bin/bwrap --ro-bind / / -- '/p/.git/hooks/pre commit' \"$@\"\n"
        );
    }
}
