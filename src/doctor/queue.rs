//! The queue, the triggers, and the task the next iteration works on.

use super::{Findings, NAMED};
use crate::config::Settings;
use crate::paths::{Paths, ROLES_FILE};
use crate::runner::{self, RunOptions};
use crate::task::{Queue, Status, Store};
use crate::text::{count, named};

/// Both task files, as every command reads them.
pub(super) fn queue(found: &mut Findings, paths: &Paths, watching: bool) -> Option<Queue> {
    let queue = found.check("queue", Store::open(paths).load())?;
    let counts = queue.counts();
    let statuses: Vec<String> = Status::ALL
        .iter()
        .filter(|status| counts.with(**status) > 0)
        .map(|status| format!("{} {status}", counts.with(*status)))
        .collect();
    let statuses = if statuses.is_empty() {
        String::new()
    } else {
        format!(" ({})", statuses.join(", "))
    };
    found.ok(
        "queue",
        &format!(
            "{}{statuses}; {} archived",
            count(counts.active_total(), "task"),
            counts.archived
        ),
    );
    for (message, fix) in Store::open(paths).displaced() {
        found.warning("queue", &message, &fix);
    }
    if let Some(torn) = queue.done.torn() {
        found.warning(
            "queue",
            &format!(
                "{}:{}: a torn last line (a crash during an append?) is ignored",
                crate::paths::DONE_FILE,
                torn.line
            ),
            &format!(
                "nothing to do: the next archive moves it to {}",
                crate::paths::QUARANTINE_DIR
            ),
        );
    }
    let blocked: Vec<String> = queue
        .live_tasks()
        .filter(|(_, task)| task.status == Status::Blocked)
        .map(|(_, task)| task.id.to_string())
        .collect();
    if !blocked.is_empty() {
        found.warning(
            "queue",
            &format!(
                "{}: {}; runs leave {} and {} subtasks alone",
                count(blocked.len(), "blocked task"),
                named(&blocked, NAMED),
                if blocked.len() == 1 { "it" } else { "them" },
                if blocked.len() == 1 { "its" } else { "their" },
            ),
            &format!(
                "read why with `ralph task show {}`; once dealt with, `ralph task start {}` lets the next run take it up",
                blocked[0], blocked[0]
            ),
        );
    }
    // Containers with nothing open under them: no run works on them.
    let emptied = queue.emptied_containers();
    if !emptied.is_empty() {
        found.ok("queue", &crate::task::emptied_message(&emptied));
    }
    let childless = queue.childless_containers();
    if !childless.is_empty() {
        let (what, fix) = crate::task::childless_message(&childless);
        found.warning("queue", &what, &fix);
    }
    if queue.next().is_none() && counts.with(Status::Complete) == 0 {
        if counts.active_total() == 0 && watching {
            found.ok(
                "queue",
                "no task yet: `ralph run --poll` plans the PRDs pushed to the watched branch (watch.prds)",
            );
        } else if counts.active_total() == 0 {
            found.warning(
                "queue",
                "no task: `ralph run` has nothing to do",
                "add one: `ralph task add TITLE`, or plan a document with `ralph plan PRD`",
            );
        } else if counts.active_total() > emptied.len() + childless.len() {
            found.warning(
                "queue",
                "no workable task: pending ones wait on deps or a blocked parent",
                "`ralph task tree` shows what waits on what",
            );
        }
    }
    Some(queue)
}

/// The triggers of `config/roles.yaml`, as `ralph roles check` reads
/// them. Whether they loaded.
pub(super) fn triggers(found: &mut Findings, paths: &Paths, settings: &Settings) -> bool {
    let Some(triggers) = found.check("triggers", crate::roles::load(paths)) else {
        return false;
    };
    if paths.roles_config().exists() {
        found.ok(
            "triggers",
            &format!(
                "{} in {ROLES_FILE}, each valid, with its role file",
                count(triggers.list.len(), "trigger")
            ),
        );
    } else {
        found.ok(
            "triggers",
            &format!("no {ROLES_FILE}, so no triggers: every iteration runs without a role (`ralph init` writes the defaults)"),
        );
    }
    if let Some((message, fix)) = runner::review::missing_role(settings.final_review, &triggers) {
        found.warning("triggers", &message, fix);
    }
    true
}

/// The task the next iteration works on, its branch and role, with its
/// prompt composed as the run composes it. Whether there is one.
pub(super) fn next(found: &mut Findings, paths: &Paths, options: &RunOptions) -> bool {
    let Some(plan) = found.check("next", runner::dry_run::plan(paths, options)) else {
        return false;
    };
    let Some(task) = &plan.task else {
        return false;
    };
    found.ok(
        "next",
        &format!(
            "{task} {}: branch {}, role {}",
            crate::text::safe(&plan.title),
            plan.branch.as_deref().unwrap_or("-"),
            plan.role_why
        ),
    );
    true
}
