//! This clone among the machines sharing one queue (docs/SCALE.md): an
//! id made once and kept in `.ralph/machine`, with the host's name for
//! people. The shared queue names its claims by it; `ralph status` and
//! `ralph top` tell this machine's claims from the others'.

use serde_json::Value;

use crate::error::Error;
use crate::paths::Paths;

/// This clone among the machines sharing the queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Machine {
    /// 16 random bytes, hex, made once per clone.
    pub(crate) id: String,
    /// The host's name, for people.
    pub(crate) host: String,
}

impl Machine {
    /// This clone's machine, from `.ralph/machine`, made the first time.
    pub(crate) fn of(paths: &Paths) -> Result<Machine, Error> {
        if let Some(machine) = Machine::known(paths).filter(|machine| !machine.id.is_empty()) {
            return Ok(machine);
        }
        let path = paths.machine();
        let machine = Machine {
            id: random_id(),
            host: nix::unistd::gethostname()
                .ok()
                .and_then(|name| name.into_string().ok())
                .unwrap_or_default(),
        };
        let text = serde_json::json!({"id": machine.id, "host": machine.host}).to_string() + "\n";
        crate::files::own::replace(paths.project(), &path, text.as_bytes())
            .map_err(crate::files::at::<Error>(path.clone()))?;
        Ok(machine)
    }

    /// This clone's machine, if it ever shared a queue (read only).
    pub(crate) fn known(paths: &Paths) -> Option<Machine> {
        let bytes = crate::files::own::read(paths.project(), &paths.machine()).ok()?;
        let object = serde_json::from_slice::<Value>(&bytes).ok()?;
        Some(Machine {
            id: object["id"].as_str()?.to_owned(),
            host: object["host"].as_str().unwrap_or_default().to_owned(),
        })
    }

    /// How claims name it: `<id> (<host>)`.
    pub(crate) fn named(&self) -> String {
        format!("{} ({})", self.id, self.host)
    }
}

/// 16 bytes from the system's random source, as hex; the time and the
/// process where there is none.
fn random_id() -> String {
    let mut bytes = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom")
        .and_then(|mut file| std::io::Read::read_exact(&mut file, &mut bytes));
    if read.is_err() {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos()
            ^ u128::from(std::process::id()) << 64;
        bytes = seed.to_le_bytes();
    }
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}
