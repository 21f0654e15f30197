//! Making a new repository with its first commit (`ralph demo`).

use std::path::Path;

use git2::{IndexAddOption, Repository, RepositoryInitOptions};

use super::CommitId;
use super::error::{Context, Result};
use super::identity::Identity;

/// Creates a repository in `dir` whose first branch is `branch`, and commits
/// every file there that is not ignored as its first commit.
pub fn init_with_commit(dir: &Path, branch: &str, message: &str) -> Result<CommitId> {
    let mut options = RepositoryInitOptions::new();
    options.initial_head(branch);
    let git = Repository::init_opts(dir, &options).doing("create the repository")?;
    let mut index = git.index().doing("open the index")?;
    index
        .add_all(["*"], IndexAddOption::DEFAULT, None)
        .doing("stage the files")?;
    index.write().doing("write the index")?;
    let tree_id = index.write_tree().doing("write the tree")?;
    let tree = git.find_tree(tree_id).doing("read the tree")?;
    let signature = Identity::from_config(&git).signature()?;
    let commit = git
        .commit(Some("HEAD"), &signature, &signature, message, &tree, &[])
        .doing("make the first commit")?;
    Ok(commit.into())
}
