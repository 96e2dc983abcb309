//! How well a source keeps the view in step with the cluster: events and
//! relists by kind, publish cost, and since when the view may lag. Sources
//! write plain atomics; the metrics endpoint reads them at scrape time.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The kinds a source watches, in the order of [`super::ObjectCounts::by_kind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Node,
    Pod,
    Namespace,
    PodDisruptionBudget,
    PriorityClass,
    Service,
    ReplicaSet,
    StatefulSet,
    ReplicationController,
}

impl Kind {
    pub const ALL: [Kind; 9] = [
        Kind::Node,
        Kind::Pod,
        Kind::Namespace,
        Kind::PodDisruptionBudget,
        Kind::PriorityClass,
        Kind::Service,
        Kind::ReplicaSet,
        Kind::StatefulSet,
        Kind::ReplicationController,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Node => "Node",
            Kind::Pod => "Pod",
            Kind::Namespace => "Namespace",
            Kind::PodDisruptionBudget => "PodDisruptionBudget",
            Kind::PriorityClass => "PriorityClass",
            Kind::Service => "Service",
            Kind::ReplicaSet => "ReplicaSet",
            Kind::StatefulSet => "StatefulSet",
            Kind::ReplicationController => "ReplicationController",
        }
    }
}

#[derive(Debug, Default)]
pub struct SyncStats {
    events: [AtomicU64; 9],
    relists: [AtomicU64; 9],
    publish_nanos: AtomicU64,
    lagging_since: Mutex<Option<Instant>>,
}

/// One scrape's reading of [`SyncStats`].
#[derive(Debug, Clone, PartialEq)]
pub struct SyncReading {
    pub events: [(Kind, u64); 9],
    pub relists: [(Kind, u64); 9],
    pub publish_seconds: f64,
    /// How long the view may have been behind the cluster; zero while every
    /// watch is in step.
    pub age: Duration,
}

impl SyncStats {
    pub fn record_event(&self, kind: Kind) {
        self.events[kind as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub fn record_relist(&self, kind: Kind) {
        self.relists[kind as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Time spent building and publishing one view.
    pub fn record_publish(&self, took: Duration) {
        self.publish_nanos
            .fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
    }

    /// Since when some watch has been out of step (`None`: all in step).
    pub fn set_lagging_since(&self, since: Option<Instant>) {
        if let Ok(mut l) = self.lagging_since.lock() {
            *l = since;
        }
    }

    pub fn read(&self) -> SyncReading {
        let by_kind =
            |a: &[AtomicU64; 9]| Kind::ALL.map(|k| (k, a[k as usize].load(Ordering::Relaxed)));
        let age = self
            .lagging_since
            .lock()
            .ok()
            .and_then(|l| *l)
            .map_or(Duration::ZERO, |since| since.elapsed());
        SyncReading {
            events: by_kind(&self.events),
            relists: by_kind(&self.relists),
            publish_seconds: self.publish_nanos.load(Ordering::Relaxed) as f64 / 1e9,
            age,
        }
    }
}
