//! A pull request per PRD (`delivery: pr` with `watch.prds`): the run
//! works one delivery unit at a time, the tasks of one watched PRD's
//! container or the tasks of no PRD, each on its own branch made from the
//! base (`ralph/<prd-slug>`, or the run's `ralph/<name>` as without
//! watching), and each stretch ends with that unit's pull request, a
//! draft when its tasks end blocked or out of budget.

use std::collections::BTreeMap;

use super::worker::{Scope, Worker, first_complete};
use crate::error::Error;
use crate::state::PullRequestPlan;

impl Worker<'_> {
    /// Whether each watched PRD gets its own pull request.
    pub(super) fn pull_request_per_prd(&self) -> bool {
        let settings = &self.options.settings;
        settings.delivery == crate::config::Delivery::Pr && !settings.watch.prds.is_empty()
    }

    /// Before a stretch: the unit of the next workable task becomes the
    /// scope, and its branch (made from the base when missing) the base
    /// the stretch's tasks branch from and merge into. Nothing workable:
    /// the stretch stays on the base.
    pub(super) fn enter_unit(&mut self) -> Result<(), Error> {
        if !self.pull_request_per_prd() {
            return Ok(());
        }
        let queue = self.store.load()?;
        let Some(next) = first_complete(&queue).or_else(|| queue.next()) else {
            return Ok(());
        };
        let root = next
            .id
            .as_str()
            .split('.')
            .next()
            .unwrap_or_default()
            .to_owned();
        let mut title = queue
            .get(&root)
            .map_or_else(|| next.title.clone(), |task| task.title.clone());
        // A prd.json's title is its `project`; what it is about, the first
        // line of its `description` (the container's body).
        let described = (queue.object(&root))
            .and_then(|line| {
                line.get("body")?
                    .as_str()?
                    .lines()
                    .next()
                    .map(str::to_owned)
            })
            .filter(|line| !line.trim().is_empty());
        drop(queue);
        let seen = super::watch::Watched::load(&self.paths)?;
        let prds: BTreeMap<String, (String, String)> = (seen.prds.iter())
            .filter_map(|(path, prd)| {
                Some((prd.container.clone()?, (path.clone(), prd.commit.clone())))
            })
            .collect();
        let (scope, name, source) = match prds.get(&root) {
            Some((path, commit)) => {
                let stem = |path: &str| {
                    let path = std::path::Path::new(path);
                    path.file_stem()
                        .map(|stem| stem.to_string_lossy().into_owned())
                };
                // `ralph/<file name>`, or the whole path when two watched
                // PRDs share a file name (`prds/a/auth.md`, `prds/b/auth.md`).
                let shared = (seen.prds.keys())
                    .filter(|other| stem(other) == stem(path))
                    .count()
                    > 1;
                let name = match (shared, stem(path)) {
                    (false, Some(stem)) => stem,
                    _ => path
                        .rsplit_once('.')
                        .map_or(path.as_str(), |(rest, _)| rest)
                        .to_owned(),
                };
                if let Some(described) = described.filter(|_| path.ends_with(".json")) {
                    title = crate::text::one_line(&described, crate::text::TITLE_CHARS);
                }
                (
                    Scope::Within(root),
                    crate::git::slug(&name),
                    Some((path.clone(), commit.clone())),
                )
            }
            None => (
                Scope::Outside(prds.into_keys().collect()),
                (self.options.pr_branch.clone()).unwrap_or_else(|| crate::git::slug(&title)),
                None,
            ),
        };
        let branch = format!("ralph/{}", name.trim_start_matches("ralph/"));
        let target = self.unit.base.clone();
        self.repo.make_branch(&branch, &target)?;
        self.repo.set_base(&branch);
        self.repo.checkout_base()?;
        self.clean = None;
        self.state.base = Some(branch.clone());
        self.state.pull_request = Some(PullRequestPlan {
            branch,
            target,
            title,
        });
        self.unit.scope = scope;
        self.unit.prd = source;
        self.save_state()
    }

    /// After a stretch: back on the base, every task in scope again.
    /// Whether a task is workable now (another unit's).
    pub(super) fn leave_unit(&mut self) -> Result<bool, Error> {
        if !self.pull_request_per_prd() || self.unit.scope.is_all() {
            return Ok(false);
        }
        let base = self.unit.base.clone();
        self.repo.set_base(&base);
        self.repo.checkout_base()?;
        self.clean = None;
        self.state.base = Some(base);
        self.state.pull_request = None;
        self.unit.scope = Scope::All;
        self.unit.prd = None;
        self.save_state()?;
        let queue = self.store.load()?;
        Ok(first_complete(&queue).is_some() || queue.next().is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_holds_the_tasks_under_its_top_level_task() {
        let within = Scope::Within("B".into());
        assert!(within.holds("B") && within.holds("B.1.2"));
        assert!(!within.holds("A.1") && !within.holds("BA.1"));
        let outside = Scope::Outside(vec!["B".into(), "C".into()]);
        assert!(outside.holds("A.1") && outside.holds("BA"));
        assert!(!outside.holds("B.2") && !outside.holds("C"));
        assert!(Scope::All.holds("Z.9"));
    }
}
