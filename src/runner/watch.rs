//! Watching a branch for PRDs (`watch.prds`, docs/UNATTENDED.md): at each
//! look, the commits on the watched branch since the last one seen are
//! walked oldest first, each PRD file they added or changed becomes a
//! candidate (ties by path in byte order), and each candidate is checked
//! and planned into the queue as `ralph plan` plans a document, or
//! refused with its reason. What was seen lives in `.ralph/watch.json`,
//! written atomically after each step: a kill at any point loses no
//! candidate, and planning one again adds nothing (`ralph plan` adds only
//! requirements the queue lacks).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::RunError;
use super::worker::{Worker, now};
use crate::error::Error;
use crate::events::fields;
use crate::files::own;
use crate::git::{FastForward, Fetched};
use crate::notify::Kind;
use crate::paths::Paths;
use crate::task::merge::Sides;
use crate::task::{Change, Patch, Planned};

/// How long a fetch of the watched branch may take (tried twice when it
/// runs out of time).
const FETCH_TIMEOUT: Duration = Duration::from_secs(60);

/// The way out of a problem that may pass by itself.
const LOOK_AGAIN: &str = "ralph looks again at the next look";

/// What watching has seen, kept in `.ralph/watch.json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Watched {
    /// The reference watched (`refs/remotes/origin/main`): another one
    /// starts afresh from its head.
    pub watching: String,
    /// The last commit of it looked at.
    pub last_commit: Option<String>,
    /// PRDs found and not planned yet, in the order found.
    pub candidates: Vec<Candidate>,
    /// Keys of the candidates planned or refused: never enqueued again.
    pub keys: BTreeSet<String>,
    /// Each PRD seen, by path.
    pub prds: BTreeMap<String, Prd>,
    /// Why the checkout cannot take the watched branch now, until a look
    /// that can: `ralph status` and `ralph doctor` say it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stuck: Option<Stuck>,
}

/// What stops the base from taking the watched branch, and the way out.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Stuck {
    /// Since when (the first look that found it).
    pub since: String,
    /// What stands in the way.
    pub problem: String,
    /// What a person does about it.
    pub fix: String,
}

/// A PRD file a commit added or changed, to plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Candidate {
    /// sha256 of its path, the commit and the head when it was seen.
    pub key: String,
    /// Its path in the repository.
    pub path: String,
    /// The commit that brought it.
    pub commit: String,
    /// Its blob at that commit.
    pub blob: String,
    /// The watched branch's head when it was seen.
    pub head: String,
}

/// What became of one PRD.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Prd {
    /// When it was first seen.
    pub first_seen: String,
    /// When it was last planned or refused.
    pub last_run: String,
    /// `planned` or `refused`.
    pub status: String,
    /// Why it was refused: `prd_file_too_large`, `prd_validation_failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What was wrong, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The commit it was last planned or refused at.
    pub commit: String,
    /// Its blob then: the same blob is not planned or refused again.
    pub blob: String,
    /// The task holding its plan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// Its pull request, as last opened or updated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<PrdPullRequest>,
}

/// A PRD's pull request as `ralph status` shows it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct PrdPullRequest {
    /// Its branch.
    pub branch: String,
    /// Its address; none when it could not be opened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Its number on the host, once known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number: Option<u64>,
    /// `draft`, `ready`, `failed` (not opened or updated), or, once the
    /// host says so, `merged` or `closed`.
    pub state: String,
    /// When ralph last opened or updated it.
    pub updated: String,
    /// The feedback taken from it (`review:<id>`, `check:<head>:<name>`):
    /// never planned twice.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub feedback: Vec<String>,
    /// The rounds of feedback worked (`watch.feedback_rounds` bounds them).
    #[serde(skip_serializing_if = "is_zero")]
    pub rounds: u64,
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

impl Watched {
    /// Loads `.ralph/watch.json`; nothing seen when it is missing.
    pub(crate) fn load(paths: &Paths) -> Result<Watched, Error> {
        let path = paths.watch();
        match own::read_text(paths.project(), &path) {
            Ok(Some(text)) => serde_json::from_str(&text).map_err(|err| {
                RunError::Watch(format!("{}: {err}", crate::paths::WATCH_FILE)).into()
            }),
            Ok(None) => Ok(Watched::default()),
            Err(err) => Err(crate::files::PathError::new(path, err).into()),
        }
    }

    pub(super) fn save(&self, paths: &Paths) -> Result<(), Error> {
        let path = paths.watch();
        let mut text = serde_json::to_string_pretty(self).expect("plain data serialises");
        text.push('\n');
        own::replace(paths.project(), &path, text.as_bytes()).map_err(crate::files::at(&path))
    }
}

/// The key of the PRD at `path` brought by `commit`, seen at `head`: the
/// SHA-256 of the three, each ended by a NUL so they cannot run into
/// each other.
pub(crate) fn key(path: &str, commit: &str, head: &str) -> String {
    crate::files::sha256_hex(format!("{path}\0{commit}\0{head}\0").as_bytes())
}

/// Whether `path` matches the glob `pattern`: `*` is any run of
/// characters but `/`, `?` one such character, `**` any run of folders
/// (`prds/**/*.md` matches `prds/a.md` and `prds/x/y/a.md`).
pub(crate) fn glob_matches(pattern: &str, path: &str) -> bool {
    fn go(p: &[u8], s: &[u8]) -> bool {
        match p {
            [] => s.is_empty(),
            [b'*', b'*', b'/', rest @ ..] => {
                go(rest, s) || (0..s.len()).any(|i| s[i] == b'/' && go(rest, &s[i + 1..]))
            }
            [b'*', b'*', rest @ ..] => (0..=s.len()).any(|i| go(rest, &s[i..])),
            [b'*', rest @ ..] => (0..=s.len())
                .take_while(|&i| i == 0 || s[i - 1] != b'/')
                .any(|i| go(rest, &s[i..])),
            [b'?', rest @ ..] => s.first().is_some_and(|&c| c != b'/') && go(rest, &s[1..]),
            [c, rest @ ..] => s.first() == Some(c) && go(rest, &s[1..]),
        }
    }
    go(pattern.as_bytes(), path.as_bytes())
}

impl Worker<'_> {
    /// One look at the watched branch (when `watch.prds` is set): fetch
    /// it, bring the base forward to it, find the PRDs its new commits
    /// added or changed, and plan or refuse each.
    pub(super) fn look_for_prds(&mut self) -> Result<(), Error> {
        let watch = &self.options.settings.watch;
        if watch.prds.is_empty() {
            return Ok(());
        }
        // The base the run started from: a stretch on a PRD's pull
        // request branch is not what the team pushes to.
        let base = self.unit.base.clone();
        let branch = watch.branch.clone().unwrap_or_else(|| base.clone());
        let remote = watch.remote.clone();
        let reference = match &remote {
            Some(remote) => {
                let said = match self.fetch(remote, &branch) {
                    Ok(None) => None,
                    Ok(Some(said)) => Some(said),
                    Err(err) => Some(err.to_string()),
                };
                if let Some(said) = said {
                    self.watch_said(&format!(
                        "warning: watch: cannot fetch {branch} from {remote}: {said}; looking again at the next look"
                    ));
                    return Ok(());
                }
                format!("refs/remotes/{remote}/{branch}")
            }
            None => format!("refs/heads/{branch}"),
        };
        let Some(head) = self.repo.commit_of(&reference) else {
            self.watch_said(&format!(
                "warning: watch: {reference} does not exist; set watch.branch (and watch.remote) to the branch PRDs are pushed to"
            ));
            return Ok(());
        };
        if remote.is_some() && branch == base && self.repo.base() == base {
            let stuck = self.bring_base_forward(&reference, &head)?;
            if !self.note_stuck(stuck)? {
                return Ok(());
            }
        }
        let mut seen = Watched::load(&self.paths)?;
        let commits = match &seen.last_commit {
            _ if seen.watching != reference => None,
            Some(last) => self.repo.commits_since(last, &head)?,
            None => None,
        };
        let Some(commits) = commits else {
            // The first look, or history rewritten under the last commit
            // seen: PRDs already there are not new. Candidates found
            // before stay.
            self.ui.log(&format!(
                    "watch: watching {} from {}; PRDs already on it are not planned (`ralph plan` plans one by hand)",
                    short_ref(&reference),
                    head.get(..10).unwrap_or(&head)
                ),
            );
            seen.watching = reference;
            seen.last_commit = Some(head);
            return seen.save(&self.paths);
        };
        self.said.watch_problem = None;
        if seen.last_commit.as_deref() != Some(head.as_str()) {
            for commit in &commits {
                for touched in self.repo.files_touched(commit)? {
                    if !watch
                        .prds
                        .iter()
                        .any(|glob| glob_matches(glob, &touched.path))
                    {
                        continue;
                    }
                    let key = key(&touched.path, commit, &head);
                    if seen.keys.contains(&key) || seen.candidates.iter().any(|c| c.key == key) {
                        continue;
                    }
                    seen.candidates.push(Candidate {
                        key,
                        path: touched.path,
                        commit: commit.clone(),
                        blob: touched.blob,
                        head: head.clone(),
                    });
                }
            }
            seen.last_commit = Some(head);
            seen.save(&self.paths)?;
            crate::fault::crash_at("after_prd_found");
        }
        while let Some(candidate) = seen.candidates.first().cloned() {
            self.plan_candidate(&mut seen, &candidate)?;
            seen.candidates.remove(0);
            seen.keys.insert(candidate.key);
            seen.save(&self.paths)?;
        }
        Ok(())
    }

    /// Fetches the watched branch, once more when the first try ran out
    /// of time; what went wrong, if it failed.
    fn fetch(&self, remote: &str, branch: &str) -> Result<Option<String>, Error> {
        let fetch = || self.repo.fetch(remote, branch, &[], FETCH_TIMEOUT);
        let fetched = match fetch()? {
            Fetched::Failed {
                timed_out: true, ..
            } => fetch()?,
            fetched => fetched,
        };
        Ok(match fetched {
            Fetched::Ok => None,
            Fetched::Failed { said, .. } => Some(crate::redact::redact(said.trim()).into_owned()),
        })
    }

    /// Fast-forwards the base to the watched branch's `head`, so new PRDs
    /// and the team's other commits are in the checkout the next task
    /// starts from. What stops it, with the way out: ralph forces nothing.
    fn bring_base_forward(
        &mut self,
        reference: &str,
        head: &str,
    ) -> Result<Option<(String, String)>, Error> {
        let shown = short_ref(reference);
        let base = self.repo.base().to_owned();
        let cannot = |why: String| format!("{base} cannot be fast-forwarded to {shown}: {why}");
        let how_far = match self.repo.base_against(head) {
            Ok(how_far) => how_far,
            Err(err) => return Ok(Some((cannot(err.to_string()), LOOK_AGAIN.to_owned()))),
        };
        match how_far {
            FastForward::UpToDate => Ok(None),
            FastForward::Behind => {
                if let Some((why, fix)) = self.fast_forward(head)? {
                    return Ok(Some((cannot(why), fix)));
                }
                // The tree changed under ralph's scans.
                self.clean = None;
                self.ui.log(&format!(
                    "watch: {base} fast-forwarded to {shown} ({})",
                    &head[..head.len().min(10)]
                ));
                Ok(None)
            }
            FastForward::Diverged { ahead, behind } => Ok(Some((
                cannot(format!(
                    "{base} has {} {shown} lacks and {shown} has {behind} more",
                    crate::text::count(ahead, "commit"),
                )),
                format!(
                    "push {base} (git.push: on_merge does after each task), or merge {shown} into it yourself; ralph forces nothing and looks again at the next look"
                ),
            ))),
        }
    }

    /// Moves the base forward to `head`, which descends from it. The queue
    /// edits those commits bring are merged into the live queue first, as
    /// another machine's are (docs/SCALE.md); the queue files on disk are
    /// then left as they are, so ralph's own records never stand in the
    /// way of a person's merge. What stops it (why, and the way out).
    fn fast_forward(&mut self, head: &str) -> Result<Option<(String, String)>, Error> {
        let from = self.repo.branch_tip(self.repo.base())?.to_string();
        let (o_tasks, o_done) = self.repo.queue_files_at(&from)?;
        let (b_tasks, b_done) = self.repo.queue_files_at(head)?;
        if (&o_tasks, &o_done) != (&b_tasks, &b_done) {
            let side = |tasks, done| Sides { tasks, done };
            let merged = (self.store).merge_in(side(&o_tasks, &o_done), side(&b_tasks, &b_done))?;
            if !merged.collisions.is_empty() {
                return Ok(Some((
                    format!(
                        "its tasks.jsonl adds {} as other tasks than this queue's",
                        merged.collisions.join(", ")
                    ),
                    "give one side's tasks other ids (`ralph task show ID` shows this queue's), commit, and ralph looks again".to_owned(),
                )));
            }
            for warning in merged.warnings {
                self.ui.log(&format!("watch: {warning}"));
            }
        }
        Ok(match self.repo.move_base_to(head) {
            Ok(()) => None,
            Err(err) => Some((
                err.to_string(),
                "`git status` in the checkout shows what stands in the way: commit, stash or remove it; ralph forces nothing and looks again at the next look".to_owned(),
            )),
        })
    }

    /// Keeps what stops the base (or that nothing does now) in
    /// `.ralph/watch.json`; the first look that finds a problem says it
    /// and tells `notify`. Whether the look goes on.
    fn note_stuck(&mut self, stuck: Option<(String, String)>) -> Result<bool, Error> {
        let mut seen = Watched::load(&self.paths)?;
        let Some((problem, fix)) = stuck else {
            if let Some(was) = seen.stuck.take() {
                seen.save(&self.paths)?;
                self.ui.log(&format!(
                    "watch: {} takes the watched branch again (stuck since {})",
                    self.repo.base(),
                    was.since
                ));
            }
            return Ok(true);
        };
        if seen
            .stuck
            .as_ref()
            .is_some_and(|was| was.problem == problem)
        {
            return Ok(false);
        }
        seen.stuck = Some(Stuck {
            since: now(),
            problem: problem.clone(),
            fix: fix.clone(),
        });
        seen.save(&self.paths)?;
        let line = format!("warning: watch: {problem}; {fix}");
        self.watch_said(&line);
        let detail = format!("{problem}; {fix}");
        let extra = fields(json!({"problem": problem, "fix": fix}));
        self.record(None, "watch", "stuck", &detail, extra.clone())?;
        self.notify(Kind::WatchStuck, None, &detail, extra);
        Ok(false)
    }

    /// Plans `candidate` into the queue, or refuses it with its reason.
    fn plan_candidate(&mut self, seen: &mut Watched, candidate: &Candidate) -> Result<(), Error> {
        let stamp = now();
        let path = candidate.path.as_str();
        let entry = seen.prds.entry(path.to_owned()).or_insert_with(|| Prd {
            first_seen: stamp.clone(),
            ..Prd::default()
        });
        if entry.blob == candidate.blob {
            // The same text as last time: planned or refused already.
            return Ok(());
        }
        entry.last_run = stamp;
        entry.commit = candidate.commit.clone();
        entry.blob = candidate.blob.clone();
        let limit = self.options.settings.watch.max_prd_bytes;
        let bytes = match self.repo.blob_within(&candidate.blob, limit)? {
            Ok(bytes) => bytes,
            Err(size) => {
                let detail = format!(
                    "{path} is {size} bytes, over watch.max_prd_bytes ({limit}); split it, or raise the limit"
                );
                return self.refuse(entry, candidate, "prd_file_too_large", &detail);
            }
        };
        let plan = match crate::plan::read(path, path, &bytes) {
            Ok(plan) => plan,
            Err(err) => {
                let detail = format!(
                    "{err}; fix it and push it again (`ralph plan --dry-run {path}` checks it)"
                );
                return self.refuse(entry, candidate, "prd_validation_failed", &detail);
            }
        };
        let patch = Patch::Plan {
            parent: None,
            tasks: plan.tasks.clone(),
            update: false,
        };
        let changes = self.store.apply(&patch, &now())?;
        crate::fault::crash_at("after_prd_planned");
        let added = changes
            .iter()
            .filter(|change| {
                matches!(
                    change,
                    Change::Planned {
                        outcome: Planned::Added,
                        ..
                    }
                )
            })
            .count();
        let container = changes.iter().find_map(|change| match change {
            Change::Planned { index: 0, id, .. } => Some(id.to_string()),
            _ => None,
        });
        entry.status = "planned".to_owned();
        entry.reason = None;
        entry.detail = None;
        entry.container = container.clone();
        let under = container
            .as_deref()
            .map(|id| format!(" under {id}"))
            .unwrap_or_default();
        // Planned before a kill cut its noting short: nothing is new.
        let detail = match added {
            0 => format!("{path} planned: nothing new, its tasks are in the queue already{under}"),
            _ => format!(
                "{path} planned: {} added{under}",
                crate::text::count(added, "task")
            ),
        };
        self.ui.log(&format!("watch: {detail}"));
        let mut extra = fields(json!({"path": path, "commit": candidate.commit, "tasks": added}));
        if let Some(container) = &container {
            extra.insert("container".into(), container.as_str().into());
        }
        self.record(None, "prd", "planned", &detail, extra.clone())?;
        if added > 0 {
            self.clean = None;
        }
        self.notify(Kind::PrdPlanned, None, &detail, extra);
        Ok(())
    }

    /// Records `candidate` refused for `reason`: said, an event, a
    /// notification; not tried again until the file changes.
    fn refuse(
        &mut self,
        entry: &mut Prd,
        candidate: &Candidate,
        reason: &str,
        detail: &str,
    ) -> Result<(), Error> {
        entry.status = "refused".to_owned();
        entry.reason = Some(reason.to_owned());
        entry.detail = Some(detail.to_owned());
        entry.container = None;
        let line = format!("{} refused ({reason}): {detail}", candidate.path);
        self.ui.log(&format!("warning: watch: {line}"));
        let extra = fields(json!({
            "path": candidate.path,
            "commit": candidate.commit,
            "reason": reason,
        }));
        self.record(None, "prd", "refused", &line, extra.clone())?;
        self.notify(Kind::PrdRefused, None, &line, extra);
        Ok(())
    }

    /// Keeps what became of the current PRD's pull request with the PRD
    /// in `.ralph/watch.json`, for `ralph status`.
    pub(super) fn note_pull_request(
        &mut self,
        pull_request: &crate::result::PullRequest,
    ) -> Result<(), Error> {
        let Some(path) = &pull_request.prd else {
            return Ok(());
        };
        let mut seen = Watched::load(&self.paths)?;
        let Some(prd) = seen.prds.get_mut(path) else {
            return Ok(());
        };
        let state = match (pull_request.action, pull_request.draft) {
            (crate::result::PrAction::Failed, _) => "failed",
            (_, true) => "draft",
            (_, false) => "ready",
        };
        let known = prd.pull_request.take().unwrap_or_default();
        let url = (pull_request.url.clone()).or(known.url);
        let number = (url.as_deref())
            .and_then(|url| url.rsplit('/').next()?.parse().ok())
            .or(known.number);
        prd.pull_request = Some(PrdPullRequest {
            branch: pull_request.branch.clone(),
            url,
            number,
            state: state.to_owned(),
            updated: now(),
            ..known
        });
        seen.save(&self.paths)
    }

    /// A watch problem, said once until it changes (a look every 30
    /// seconds must not fill `ralph.log` with it).
    fn watch_said(&mut self, line: &str) {
        if self.said.watch_problem.as_deref() == Some(line) {
            return;
        }
        self.ui.log(line);
        self.said.watch_problem = Some(line.to_owned());
    }
}

/// `origin/main` for `refs/remotes/origin/main`, `main` for a branch.
fn short_ref(reference: &str) -> &str {
    reference
        .strip_prefix("refs/remotes/")
        .or_else(|| reference.strip_prefix("refs/heads/"))
        .unwrap_or(reference)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_as_a_shell_and_git_do() {
        assert!(glob_matches("prds/*.md", "prds/auth.md"));
        assert!(!glob_matches("prds/*.md", "prds/old/auth.md"));
        assert!(!glob_matches("prds/*.md", "prds/auth.json"));
        assert!(glob_matches("prds/**/*.md", "prds/auth.md"));
        assert!(glob_matches("prds/**/*.md", "prds/a/b/auth.md"));
        assert!(glob_matches("**/prd.json", "prd.json"));
        assert!(glob_matches("**/prd.json", "x/y/prd.json"));
        assert!(glob_matches("prds/prd-?.md", "prds/prd-1.md"));
        assert!(!glob_matches("prds/prd-?.md", "prds/prd-12.md"));
        assert!(!glob_matches("*.md", "docs/a.md"));
        assert!(glob_matches("docs/**", "docs/a/b.md"));
    }

    #[test]
    fn a_key_is_the_sha256_of_path_commit_and_head() {
        let one = key("prds/a.md", "c1", "h1");
        assert_eq!(one.len(), 64);
        assert_eq!(one, key("prds/a.md", "c1", "h1"));
        assert_ne!(one, key("prds/a.md", "c1", "h2"));
        assert_ne!(one, key("prds/b.md", "c1", "h1"));
        // The parts cannot run into each other.
        assert_ne!(key("ab", "c", "h"), key("a", "bc", "h"));
    }
}
