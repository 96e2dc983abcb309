//! Rate-limited logging: a condition that can repeat on every request
//! (a lagging view, an unreachable server) is logged at most once per
//! interval, and the line that gets through says how many were held back.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One log line per `interval`; the others are counted.
pub struct LogEvery {
    interval: Duration,
    state: Mutex<Gate>,
}

struct Gate {
    last: Option<Instant>,
    held_back: u64,
}

impl LogEvery {
    pub const fn new(interval: Duration) -> Self {
        Self {
            interval,
            state: Mutex::new(Gate {
                last: None,
                held_back: 0,
            }),
        }
    }

    /// `Some(lines held back since the last one)` when a line may be
    /// written at `now`; `None` when this one is held back.
    pub fn admit(&self, now: Instant) -> Option<u64> {
        // A panic elsewhere while holding the lock leaves a usable gate.
        let mut gate = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let due = gate
            .last
            .is_none_or(|last| now.saturating_duration_since(last) >= self.interval);
        if !due {
            gate.held_back += 1;
            return None;
        }
        gate.last = Some(now);
        Some(std::mem::take(&mut gate.held_back))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_interval_and_the_next_counts_the_held_back() {
        let gate = LogEvery::new(Duration::from_secs(10));
        let t0 = Instant::now();
        assert_eq!(gate.admit(t0), Some(0));
        assert_eq!(gate.admit(t0 + Duration::from_secs(1)), None);
        assert_eq!(gate.admit(t0 + Duration::from_secs(9)), None);
        assert_eq!(gate.admit(t0 + Duration::from_secs(10)), Some(2));
        assert_eq!(gate.admit(t0 + Duration::from_secs(11)), None);
        assert_eq!(gate.admit(t0 + Duration::from_secs(25)), Some(1));
    }
}
