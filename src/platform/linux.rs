//! Linux: `/proc`.

// Built only where these calls exist (see `mod.rs`).
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};

pub(super) fn processes() -> Option<Vec<u32>> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let live = entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| !zombie(*pid))
        .collect();
    Some(live)
}

pub(super) fn group_members(group: i32) -> Option<Vec<u32>> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let group = group.to_string();
    let members = entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // `pid (comm) state ppid pgrp ...`; comm may hold spaces and parens.
            let (_, fields) = stat.rsplit_once(')')?;
            let mut fields = fields.split_whitespace();
            let state = fields.next().unwrap_or("Z");
            let pgrp = fields.nth(1).unwrap_or("");
            (pgrp == group && state != "Z" && state != "X").then_some(pid)
        })
        .collect();
    Some(members)
}

/// The state letter of process `pid` (`/proc/<pid>/stat`).
fn state(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ...`; comm may hold spaces and parens.
    let (_, fields) = stat.rsplit_once(')')?;
    fields.split_whitespace().next().map(str::to_owned)
}

pub(super) fn zombie(pid: u32) -> bool {
    state(pid).is_some_and(|state| state == "Z" || state == "X")
}

pub(super) fn environment_has(pid: u32, entry: &[u8]) -> Option<bool> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    Some(environ.split(|&byte| byte == 0).any(|var| var == entry))
}

pub(super) fn git_at_work_in(places: &[&Path]) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    let places: Vec<PathBuf> = places
        .iter()
        .filter_map(|place| place.canonicalize().ok())
        .collect();
    entries.flatten().any(|entry| {
        let dir = entry.path();
        std::fs::read_to_string(dir.join("comm")).is_ok_and(|comm| comm.trim_end() == "git")
            && std::fs::read_link(dir.join("cwd"))
                .is_ok_and(|cwd| places.iter().any(|place| cwd.starts_with(place)))
    })
}
