//! Tasks: the model, dotted ids, the queue's rules, patches and the store
//! that alone writes the task files.

mod bounds;
mod change;
mod done;
mod error;
mod file;
pub mod id;
mod idle;
mod line;
pub mod merge;
mod model;
mod patch;
mod planned;
mod queue;
mod store;
mod sync;
mod watch;

pub use bounds::{MAX_BODY_BYTES, MAX_TITLE_BYTES, MAX_VERIFY_BYTES, Oversized};
pub use change::{Change, Planned};
pub use done::{DoneLog, Torn};
pub use error::{Error, Result};
pub use file::{Line, LineEnd, TaskFile};
pub use id::TaskId;
pub use idle::{childless_message, emptied_message};
pub use model::{KNOWN_FIELDS, Status, Task, string_list};
pub use patch::{NewTask, Patch};
pub use planned::PlannedTask;
pub use queue::{Counts, Queue, TreeNode, find_cycle};
pub use store::Store;
pub use watch::{ArchiveRestored, Known, Restored, TasksRestored};
