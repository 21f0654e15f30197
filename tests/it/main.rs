//! Integration tests: the real `ralph` binary in temporary projects.

mod agent;
mod agent_fixtures;
mod budgets;
mod concurrency;
mod crash;
mod critique;
mod demo;
mod fuzz_corpus;
mod git;
mod hostile;
mod init;
mod messages;
mod misbehave;
mod plan;
mod reliability_doc;
mod revert;
mod richer_tasks;
mod roles;
mod run;
mod support;
mod task_commands;
mod task_files;
mod task_props;
mod trace;
mod usergit;
mod workers;
