//! When an API server's refusal is worth a WARN. A missing RBAC rule
//! refuses every try; a kube-apiserver that just restarted refuses for a
//! moment too (403 until its RBAC caches are filled), and that belongs to
//! the outage the live source already reports once. So a refusal is
//! logged at WARN from the second in a row, at most once a minute.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::log_every::LogEvery;

pub struct Refusals {
    in_a_row: AtomicU32,
    log: LogEvery,
}

impl Default for Refusals {
    fn default() -> Self {
        Self {
            in_a_row: AtomicU32::new(0),
            log: LogEvery::new(Duration::from_secs(60)),
        }
    }
}

impl Refusals {
    /// A refused call: `Some(held_back)` when it is to be logged at WARN
    /// (with how many were held back since the last one).
    pub fn refused(&self, now: Instant) -> Option<u64> {
        if self.in_a_row.fetch_add(1, Ordering::Relaxed) == 0 {
            return None;
        }
        self.log.admit(now)
    }

    /// A call that went through.
    pub fn answered(&self) {
        self.in_a_row.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_refusal_is_quiet_and_a_persistent_one_is_warned_once_a_minute() {
        let refusals = Refusals::default();
        let t0 = Instant::now();
        assert_eq!(refusals.refused(t0), None, "the first refusal");
        assert_eq!(refusals.refused(t0), Some(0), "the second in a row");
        assert_eq!(refusals.refused(t0 + Duration::from_secs(1)), None);
        assert!(refusals.refused(t0 + Duration::from_secs(61)).is_some());
        refusals.answered();
        assert_eq!(
            refusals.refused(t0 + Duration::from_secs(200)),
            None,
            "a refusal after an answer starts again"
        );
    }
}
