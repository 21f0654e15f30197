//! The SSH key ralph's own pushes (and `ls-remote`) use when `git.ssh_key`
//! names one: a deploy key on a build machine, given to git through
//! `GIT_SSH_COMMAND`, which then wins over the caller's `GIT_SSH_COMMAND`
//! and `core.sshCommand`. ralph never reads the key, and never prints the
//! command it sets.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::Repo;
use super::error::{Error, Result};

impl Repo {
    /// `git` for a command that talks to a remote: [`Repo::git_command`],
    /// with the key of `git.ssh_key`, when set, as the only one ssh offers.
    pub(super) fn remote_command(&self) -> Result<Command> {
        let mut command = self.git_command()?;
        if let Some(key) = &self.ssh_key {
            command.env("GIT_SSH_COMMAND", ssh_command(key));
        }
        Ok(command)
    }
}

/// The `GIT_SSH_COMMAND` that makes ssh offer only `key`; git runs it
/// through a shell, so the path is quoted for one.
pub(super) fn ssh_command(key: &Path) -> String {
    let quoted = crate::text::shell_quoted(&key.to_string_lossy());
    format!("ssh -i {quoted} -o IdentitiesOnly=yes")
}

/// The key file `written` (the setting's text) names: `~/` is the home
/// folder `home`, and a relative path is taken from `project`.
pub fn key_path(written: &str, project: &Path, home: Option<&Path>) -> PathBuf {
    match (written.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => project.join(written),
    }
}

/// Fails unless the key at `path` is a file ralph's pushes can use: it
/// exists, can be read, and (owned by this user) no one else may read
/// it, as ssh requires of a private key.
pub fn check_key(path: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let problem = |problem: String| {
        Err(Error::SshKey {
            path: path.to_owned(),
            problem,
        })
    };
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return problem("there is no such file".to_owned());
        }
        Err(err) => return problem(format!("cannot be read ({err})")),
    };
    if meta.is_dir() {
        return problem("is a folder, not a key file".to_owned());
    }
    if let Err(err) = std::fs::File::open(path) {
        return problem(format!("cannot be read ({err})"));
    }
    if meta.uid() == nix::unistd::getuid().as_raw() && meta.mode() & 0o077 != 0 {
        return problem(format!(
            "others may read it (mode {:o}), and ssh ignores such a private key",
            meta.mode() & 0o777
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_quoted_for_the_shell_git_runs_it_through() {
        assert_eq!(
            ssh_command(Path::new("/keys/deploy")),
            "ssh -i /keys/deploy -o IdentitiesOnly=yes"
        );
        // A shell reads the path back whole, nothing in it expanded.
        let key = "/my keys/it's $HOME `x` \"q\"";
        let words = shlex::split(&ssh_command(Path::new(key))).unwrap();
        assert_eq!(words, ["ssh", "-i", key, "-o", "IdentitiesOnly=yes"]);
        let echoed = std::process::Command::new("sh")
            .args([
                "-c",
                &ssh_command(Path::new(key)).replacen("ssh", "printf %s", 1),
            ])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8(echoed.stdout).unwrap(),
            format!("-i{key}-oIdentitiesOnly=yes")
        );
    }

    #[test]
    fn a_key_path_is_from_home_or_the_project() {
        let project = Path::new("/work/p");
        let home = Some(Path::new("/home/me"));
        assert_eq!(
            key_path("~/.ssh/deploy", project, home),
            Path::new("/home/me/.ssh/deploy")
        );
        assert_eq!(
            key_path("keys/deploy", project, home),
            Path::new("/work/p/keys/deploy")
        );
        assert_eq!(key_path("/k", project, home), Path::new("/k"));
    }

    #[test]
    fn a_key_must_be_a_private_readable_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = assert_fs::TempDir::new().unwrap();
        let key = dir.path().join("deploy");
        let said = |path: &Path| check_key(path).map_err(|err| err.to_string());
        assert_eq!(
            said(&key).unwrap_err(),
            format!(
                "git.ssh_key: {}: there is no such file, so the push would fail after the work is done",
                key.display()
            )
        );
        std::fs::write(&key, "not really a key").unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(
            said(&key)
                .unwrap_err()
                .contains(": others may read it (mode 644), and ssh ignores such a private key,"),
            "{:?}",
            said(&key)
        );
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(said(&key), Ok(()));
        assert!(said(dir.path()).unwrap_err().contains("is a folder"));
    }
}
