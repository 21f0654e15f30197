//! Waiting before trying again: the one back-off policy of every retry
//! (a push, a landing, a `gh` call, a failed task), each caller saying
//! its waits, and the testing hook that shortens them all.

use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A testing hook: how many milliseconds a second of a wait before a retry,
/// and of `gh`'s deadline, lasts (`5`: 2 s is 10 ms).
pub(crate) const TEST_SECOND_VAR: &str = "RALPH_TEST_SECOND_MS";

/// The waits before retrying a call over the network (a push of
/// `git.push`, a `gh` call): 2 s, doubling.
pub(crate) const NETWORK: Backoff = Backoff::doubling(Duration::from_secs(2));

/// Waits doubling from a first one, up to a longest one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Backoff {
    first: Duration,
    longest: Duration,
    jittered: bool,
}

impl Backoff {
    /// `first`, doubling for each retry after the first.
    pub(crate) const fn doubling(first: Duration) -> Backoff {
        Backoff {
            first,
            longest: Duration::MAX,
            jittered: false,
        }
    }

    /// These waits, none longer than `longest`.
    pub(crate) const fn at_most(self, longest: Duration) -> Backoff {
        Backoff { longest, ..self }
    }

    /// These waits, each taken at 0.5 to 1.5 of itself, so two machines
    /// that collided do not collide again in step.
    pub(crate) const fn jittered(mut self) -> Backoff {
        self.jittered = true;
        self
    }

    /// The wait before retry number `retry` (1 for the first; it doubles
    /// 16 times at most).
    pub(crate) fn wait(&self, retry: u64) -> Duration {
        let doublings = retry.saturating_sub(1).min(16) as u32;
        let wait = (self.first.saturating_mul(1 << doublings)).min(self.longest);
        if !self.jittered {
            return shortened(wait);
        }
        let now = SystemTime::now().duration_since(UNIX_EPOCH);
        // 0.5 to 1.5, from the clock's nanoseconds.
        let jitter = 0.5 + f64::from(now.unwrap_or_default().subsec_nanos() % 1000) / 1000.0;
        shortened(wait.mul_f64(jitter))
    }

    /// The waits before the first `retries` retries.
    pub(crate) fn waits(&self, retries: usize) -> impl Iterator<Item = Duration> {
        (1..=retries as u64).map(|retry| self.wait(retry))
    }
}

/// `wait` as it is waited: shortened by [`TEST_SECOND_VAR`] when set.
pub(crate) fn shortened(wait: Duration) -> Duration {
    static SECOND_MS: OnceLock<Option<u32>> = OnceLock::new();
    let second_ms = SECOND_MS.get_or_init(|| std::env::var(TEST_SECOND_VAR).ok()?.parse().ok());
    second_ms.map_or(wait, |ms| wait.saturating_mul(ms) / 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_longest() {
        let secs = |secs: &[u64]| -> Vec<Duration> {
            secs.iter().map(|s| Duration::from_secs(*s)).collect()
        };
        let twice = Backoff::doubling(Duration::from_secs(2));
        assert_eq!(twice.waits(3).collect::<Vec<_>>(), secs(&[2, 4, 8]));
        let capped = Backoff::doubling(Duration::from_secs(10)).at_most(Duration::from_secs(100));
        assert_eq!(
            capped.waits(6).collect::<Vec<_>>(),
            secs(&[10, 20, 40, 80, 100, 100])
        );
        assert_eq!(capped.wait(0), Duration::from_secs(10));
        // Sixteen doublings at most, and never an overflow.
        assert_eq!(twice.wait(40), Duration::from_secs(2 << 16));
        let huge = Backoff::doubling(Duration::MAX / 2);
        assert_eq!(huge.wait(3), Duration::MAX);
    }

    #[test]
    fn jittered_waits_stay_within_half_and_one_and_a_half() {
        let first = Duration::from_millis(100);
        let backoff = Backoff::doubling(first)
            .at_most(Duration::from_secs(30))
            .jittered();
        for n in 1..16 {
            let wait = backoff.wait(n).as_secs_f64();
            let base = (first.as_secs_f64() * f64::from(1u32 << (n - 1))).min(30.0);
            assert!(wait >= base * 0.5 && wait <= base * 1.5, "{n}: {wait}");
        }
    }
}
