//! The published cluster view: one immutable [`Snapshot`] swapped atomically.
//!
//! Sources (file, live API) are the only writers; request handlers call
//! [`ClusterView::current`] and work on that one consistent snapshot without
//! locks. Reload outcomes are counted here so the metrics endpoint can read
//! them at scrape time without the sources knowing about Prometheus.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arc_swap::ArcSwapOption;

use super::Snapshot;

#[derive(Default)]
pub struct ClusterView {
    current: ArcSwapOption<Snapshot>,
    reloads: AtomicU64,
    reload_failures: AtomicU64,
}

/// Counters a scrape reads; monotonic for the life of the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ViewStats {
    pub reloads: u64,
    pub reload_failures: u64,
}

impl ClusterView {
    pub fn new() -> Self {
        Self::default()
    }

    /// The latest published snapshot, or `None` before the first publish.
    pub fn current(&self) -> Option<Arc<Snapshot>> {
        self.current.load_full()
    }

    pub fn is_ready(&self) -> bool {
        self.current.load().is_some()
    }

    /// Make `snapshot` the view every following request sees.
    pub fn publish(&self, snapshot: Snapshot) {
        self.current.store(Some(Arc::new(snapshot)));
        self.reloads.fetch_add(1, Ordering::Relaxed);
    }

    /// A source tried to produce a new view and failed; the old one stays.
    pub fn record_failure(&self) {
        self.reload_failures.fetch_add(1, Ordering::Relaxed);
    }

    pub fn stats(&self) -> ViewStats {
        ViewStats {
            reloads: self.reloads.load(Ordering::Relaxed),
            reload_failures: self.reload_failures.load(Ordering::Relaxed),
        }
    }
}
