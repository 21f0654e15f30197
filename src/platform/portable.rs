//! Any Unix, macOS among them: `ps` for processes and `lsof` for their
//! working folders; no tree watch.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// No watch: every scan of the working tree is a full one.
#[cfg(not(target_os = "linux"))]
pub(crate) struct Watch;

#[cfg(not(target_os = "linux"))]
impl Watch {
    pub(crate) fn start(_workdir: &Path, _ignored: &dyn Fn(&[u8]) -> bool) -> Option<Watch> {
        None
    }

    pub(crate) fn pending(
        &mut self,
        _workdir: &Path,
        _ignored: &dyn Fn(&[u8]) -> bool,
    ) -> Option<Vec<Vec<u8>>> {
        None
    }

    pub(crate) fn settled(&mut self) {}
}

/// `ps` with `args`, its output when it ran and succeeded.
fn ps(args: &[&str]) -> Option<String> {
    super::stdout_of(Command::new("ps").args(args))
}

pub(super) fn processes() -> Option<Vec<u32>> {
    let table = ps(&["-A", "-o", "pid=", "-o", "stat="])?;
    let live = table
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let pid: u32 = fields.next()?.parse().ok()?;
            let state = fields.next().unwrap_or("Z");
            (!state.starts_with(['Z', 'X'])).then_some(pid)
        })
        .collect();
    Some(live)
}

pub(super) fn group_members(group: i32) -> Option<Vec<u32>> {
    let table = ps(&["-A", "-o", "pid=", "-o", "pgid=", "-o", "stat="])?;
    let members = table
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let pid: u32 = fields.next()?.parse().ok()?;
            let pgid: i32 = fields.next()?.parse().ok()?;
            let state = fields.next().unwrap_or("Z");
            (pgid == group && !state.starts_with(['Z', 'X'])).then_some(pid)
        })
        .collect();
    Some(members)
}

pub(super) fn zombie(pid: u32) -> bool {
    ps(&["-o", "stat=", "-p", &pid.to_string()])
        .is_some_and(|state| state.trim_start().starts_with(['Z', 'X']))
}

pub(super) fn environment_has(pid: u32, entry: &[u8]) -> Option<bool> {
    // BSD-style `e`: the command line followed by the environment, split
    // by spaces (both procps and macOS's ps read it so).
    let pid = pid.to_string();
    let shown = ps(&["e", "-ww", "-o", "command=", "-p", &pid])?;
    let entry = String::from_utf8_lossy(entry);
    let line = shown.lines().next()?;
    Some(line.match_indices(entry.as_ref()).any(|(at, _)| {
        at > 0 && line[..at].ends_with(' ') && {
            let after = &line[at + entry.len()..];
            after.is_empty() || after.starts_with(' ')
        }
    }))
}

pub(super) fn git_at_work_in(places: &[&Path]) -> bool {
    // `lsof` (part of macOS) tells each git process's working folder.
    let output = Command::new("lsof")
        .args(["-a", "-c", "git", "-d", "cwd", "-Fn"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    let Ok(output) = output else {
        // No lsof: any running git counts (a stale lock then waits for a
        // run when no git runs).
        return ps(&["-A", "-o", "comm="]).is_none_or(|table| {
            table.lines().any(|comm| {
                Path::new(comm.trim())
                    .file_name()
                    .is_some_and(|name| name == "git")
            })
        });
    };
    let places: Vec<PathBuf> = places
        .iter()
        .filter_map(|place| place.canonicalize().ok())
        .collect();
    // Exit 1 with no output: no git process runs.
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.strip_prefix('n'))
        .any(|cwd| places.iter().any(|place| Path::new(cwd).starts_with(place)))
}
