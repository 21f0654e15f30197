//! Deterministic task files for benchmarks (`ralph bench-gen`, `benches/`).
//!
//! The shape mimics a long-lived queue: containers (`leaf: false`) of nine
//! leaves each, every leaf `blocked` (so nothing else is workable), with
//! titles, bodies, deps, timestamps and an unknown field.
//! The same seed always gives the same bytes.

use std::fmt::Write;

use crate::task::id;

/// Where the workable (`pending`) leaves go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PendingAt {
    /// The only pending leaf is the file's last line: the worst case for a scan.
    Last,
    /// The only pending leaf is (near) the middle line.
    Middle,
    /// Every task is a pending top-level leaf without deps (a loop's work list).
    All,
}

impl std::str::FromStr for PendingAt {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "last" => Ok(PendingAt::Last),
            "middle" => Ok(PendingAt::Middle),
            "all" => Ok(PendingAt::All),
            _ => Err(format!("unknown place {text:?} (use last, middle or all)")),
        }
    }
}

/// What to generate.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// Lines of `tasks.jsonl`.
    pub tasks: usize,
    /// Seed of the generator.
    pub seed: u64,
    /// Where the pending leaves go.
    pub pending_at: PendingAt,
}

/// Leaves per container.
const GROUP: usize = 9;

const WORDS: [&str; 32] = [
    "parse", "config", "session", "cache", "index", "render", "report", "queue", "retry", "token",
    "schema", "migrate", "login", "export", "import", "search", "upload", "audit", "limit",
    "backup", "policy", "billing", "invoice", "webhook", "metrics", "alerts", "layout", "theme",
    "locale", "storage", "refactor", "docs",
];

/// splitmix64: small, fast, and good enough to vary the text.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Appends `least` to `least + spread - 1` random words.
    fn words(&mut self, out: &mut String, least: u64, spread: u64) {
        let count = least + self.below(spread);
        for i in 0..count {
            if i > 0 {
                out.push(' ');
            }
            out.push_str(WORDS[self.below(WORDS.len() as u64) as usize]);
        }
    }
}

/// The bytes of `tasks.jsonl` for `spec`.
pub fn tasks_jsonl(spec: &Spec) -> String {
    let mut rng = Rng(spec.seed);
    let mut out = String::with_capacity(spec.tasks * 170);
    if spec.pending_at == PendingAt::All {
        for n in 0..spec.tasks {
            let id = id::letters_name(n as u64 + 1);
            let mut title = String::new();
            rng.words(&mut title, 3, 1);
            let _ = writeln!(
                out,
                r#"{{"id":"{id}","title":"{title}","status":"pending","leaf":true,"created":"2026-01-01T00:00:00Z"}}"#
            );
        }
        return out;
    }
    // The line (0-based) that holds the one pending leaf. Lines 0, 10, 20...
    // open a group (a container); a pending line there becomes a top-level
    // leaf, which only the file's last line may be (it has no children).
    let last = spec.tasks.saturating_sub(1);
    let mut pending_line = match spec.pending_at {
        PendingAt::Middle => spec.tasks / 2,
        _ => last,
    };
    if pending_line % (GROUP + 1) == 0 && pending_line != last {
        pending_line += 1;
    }
    let mut title = String::new();
    let mut body = String::new();
    let mut parent = String::new();
    for line in 0..spec.tasks {
        let child = line % (GROUP + 1);
        title.clear();
        if child == 0 {
            parent = id::letters_name((line / (GROUP + 1)) as u64 + 1);
            rng.words(&mut title, 2, 3);
            let (status, leaf) = if line == pending_line {
                ("pending", true)
            } else {
                ("pending", false)
            };
            let _ = writeln!(
                out,
                r#"{{"id":"{parent}","title":"{title}","status":"{status}","leaf":{leaf},"created":"2026-01-01T00:00:00Z"}}"#
            );
            continue;
        }
        rng.words(&mut title, 3, 4);
        body.clear();
        rng.words(&mut body, 4, 12);
        let _ = write!(out, r#"{{"id":"{parent}.{child}","title":"{title}","#);
        if line == pending_line {
            let _ = write!(out, r#""status":"pending","leaf":true"#);
        } else if rng.below(10) < 7 {
            // Blocked after some work (a complete task would be archived
            // by the loop first, so a steady queue holds none).
            let _ = write!(
                out,
                r#""status":"blocked","leaf":true,"blocked_reason":"needs review","branch":"task/{parent}.{child}","commit":"{:016x}""#,
                rng.next()
            );
        } else {
            let _ = write!(
                out,
                r#""status":"blocked","leaf":true,"blocked_reason":"waiting on {}""#,
                WORDS[rng.below(WORDS.len() as u64) as usize]
            );
        }
        if child > 1 && line != pending_line && rng.below(4) == 0 {
            let _ = write!(out, r#","deps":["{parent}.{}"]"#, child - 1);
        }
        let _ = write!(out, r#","body":"{body}","created":"2026-01-01T00:00:00Z""#);
        if rng.below(8) == 0 {
            let _ = write!(out, r#","estimate":{{"hours":{}}}"#, rng.below(40));
        }
        out.push_str("}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::Queue;

    #[test]
    fn generated_files_are_valid_and_have_one_workable_leaf_where_asked() {
        for (tasks, at) in [
            (1, PendingAt::Last),
            (2, PendingAt::Last),
            (10, PendingAt::Last),
            (11, PendingAt::Last),
            (123, PendingAt::Last),
            (123, PendingAt::Middle),
            (100, PendingAt::Middle),
        ] {
            let spec = Spec {
                tasks,
                seed: 7,
                pending_at: at,
            };
            let text = tasks_jsonl(&spec);
            assert_eq!(text.lines().count(), tasks, "{tasks} {at:?}");
            let queue = Queue::parse(text.as_bytes(), b"").unwrap();
            let next = queue.next().unwrap();
            let line = queue.tasks.position(next.id.as_str()).unwrap();
            let pending = text
                .lines()
                .filter(|l| l.contains(r#""status":"pending","leaf":true"#));
            assert_eq!(pending.count(), 1, "{tasks} {at:?}");
            match at {
                PendingAt::Last if tasks > 1 => assert_eq!(line, tasks - 1),
                PendingAt::Middle => assert!(line.abs_diff(tasks / 2) <= 1),
                _ => {}
            }
        }
        let spec = Spec {
            tasks: 50,
            seed: 1,
            pending_at: PendingAt::All,
        };
        let queue = Queue::parse(tasks_jsonl(&spec).as_bytes(), b"").unwrap();
        assert_eq!(queue.next().unwrap().id.as_str(), "A");
        assert_eq!(tasks_jsonl(&spec), tasks_jsonl(&spec));
    }
}
