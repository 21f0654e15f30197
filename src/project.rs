//! Finding the project a command works on.

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::paths::TASKS_FILE;

/// The project root: `dir` when given (it must exist); inside a task's
/// worktree (`<project>/.ralph/worktrees/<id>/...`) the project it belongs
/// to, whose queue is the live one; otherwise the nearest folder at or
/// above `cwd` holding `tasks.jsonl` or `.git`, otherwise `cwd`.
pub(crate) fn find_root(dir: Option<&Path>, cwd: &Path) -> Result<PathBuf, Error> {
    if let Some(dir) = dir {
        let dir = cwd.join(dir);
        if !dir.is_dir() {
            return Err(Error::NoSuchDir(dir));
        }
        return Ok(dir);
    }
    let worktrees = Path::new(crate::paths::WORKTREES_DIR);
    if let Some(project) = cwd
        .ancestors()
        .skip(1)
        .find(|dir| dir.ends_with(worktrees))
        .and_then(|dir| dir.parent()?.parent())
    {
        return Ok(project.to_owned());
    }
    Ok(cwd
        .ancestors()
        .find(|dir| dir.join(TASKS_FILE).is_file() || is_git(&dir.join(".git")))
        .unwrap_or(cwd)
        .to_owned())
}

/// Whether `root` is a project, or in one: a folder at or above it holds
/// `tasks.jsonl` or is a git repository. Commands that write the queue
/// or the run's files write nothing elsewhere.
pub(crate) fn is_project(root: &Path) -> bool {
    (root.ancestors()).any(|dir| dir.join(TASKS_FILE).is_file() || is_git(&dir.join(".git")))
}

/// Whether `path` is a repository's `.git`: a folder holding `HEAD`, or a
/// file (a linked worktree's or a submodule's). An empty `.git` folder is
/// none: Codex's sandbox leaves such stubs in the system's temporary
/// folder, which would make every project below it one project.
fn is_git(path: &Path) -> bool {
    path.is_file() || path.join("HEAD").is_file()
}

/// The home of a run working elsewhere when this command is its agent's:
/// `project_dir` (`RALPH_PROJECT_DIR` of the agent's environment) when it
/// names, in `.ralph/work-tree`, a checkout holding `cwd`. So an agent of
/// `ralph execute` changes the out-dir's queue with `ralph task`, while
/// anything it runs elsewhere (a test suite's own temporary projects) is
/// left alone.
pub(crate) fn home_of_agent(project_dir: Option<&Path>, cwd: &Path) -> Option<PathBuf> {
    let home = project_dir?;
    let text = std::fs::read_to_string(home.join(crate::paths::WORK_TREE_FILE)).ok()?;
    let work_tree = Path::new(text.trim_end_matches('\n'));
    let cwd = std::fs::canonicalize(cwd).ok()?;
    cwd.starts_with(work_tree).then(|| home.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_of_a_run_working_elsewhere_finds_its_home() {
        let temp = assert_fs::TempDir::new().unwrap();
        let root = std::fs::canonicalize(temp.path()).unwrap();
        let (repo, home, other) = (root.join("repo"), root.join("out"), root.join("other"));
        for dir in [repo.join("src"), home.join(".ralph"), other.clone()] {
            std::fs::create_dir_all(dir).unwrap();
        }
        // No marker: an ordinary project's agent.
        assert_eq!(home_of_agent(Some(&home), &repo), None);
        std::fs::write(
            home.join(crate::paths::WORK_TREE_FILE),
            repo.to_string_lossy().as_bytes(),
        )
        .unwrap();
        assert_eq!(
            home_of_agent(Some(&home), &repo.join("src")),
            Some(home.clone())
        );
        assert_eq!(home_of_agent(Some(&home), &other), None);
        assert_eq!(home_of_agent(None, &repo), None);
    }

    #[test]
    fn an_empty_git_folder_is_no_repository() {
        let temp = assert_fs::TempDir::new().unwrap();
        let root = temp.path();
        let project = root.join("tmp/project");
        std::fs::create_dir_all(&project).unwrap();
        // The stub a sandbox leaves above the project.
        std::fs::create_dir_all(root.join("tmp/.git")).unwrap();
        assert_eq!(find_root(None, &project).unwrap(), project);
        std::fs::write(root.join("tmp/.git/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert_eq!(find_root(None, &project).unwrap(), root.join("tmp"));
    }

    #[test]
    fn walks_up_to_the_folder_with_the_queue_or_git() {
        let temp = assert_fs::TempDir::new().unwrap();
        let root = temp.path();
        let deep = root.join("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(find_root(None, &deep).unwrap(), deep);
        std::fs::create_dir(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert_eq!(find_root(None, &deep).unwrap(), root);
        std::fs::write(root.join("a/tasks.jsonl"), "").unwrap();
        assert_eq!(find_root(None, &deep).unwrap(), root.join("a"));
        // In a task's worktree, its project.
        let worktree = root.join("a/.ralph/worktrees/A.1/src");
        std::fs::create_dir_all(&worktree).unwrap();
        std::fs::write(root.join("a/.ralph/worktrees/A.1/tasks.jsonl"), "").unwrap();
        assert_eq!(find_root(None, &worktree).unwrap(), root.join("a"));
        assert_eq!(
            find_root(Some(Path::new("a/b")), root).unwrap(),
            root.join("a/b")
        );
        assert_eq!(
            find_root(Some(Path::new("nope")), root)
                .unwrap_err()
                .to_string(),
            format!("--dir {}: no such folder", root.join("nope").display())
        );
    }
}
