//! Tasks: the model, dotted ids, the queue's rules, patches and the store
//! that alone writes the task files.

mod error;
mod file;
pub mod id;
mod model;
mod patch;
mod queue;
mod store;

pub use error::{Error, Result};
pub use file::{DoneLog, Line, LineEnd, TaskFile, Torn};
pub use id::TaskId;
pub use model::{Status, Task};
pub use patch::{Change, NewTask, Patch};
pub use queue::{Counts, DONE_FILE, Queue, TASKS_FILE, TreeNode};
pub use store::{LOCK_FILE, QUARANTINE_DIR, RUNTIME_DIR, Store};
