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
    DeviceClass,
    Service,
    ReplicaSet,
    StatefulSet,
    ReplicationController,
}

/// How many kinds a source watches.
pub const KINDS: usize = 10;

impl Kind {
    pub const ALL: [Kind; KINDS] = [
        Kind::Node,
        Kind::Pod,
        Kind::Namespace,
        Kind::PodDisruptionBudget,
        Kind::PriorityClass,
        Kind::DeviceClass,
        Kind::Service,
        Kind::ReplicaSet,
        Kind::StatefulSet,
        Kind::ReplicationController,
    ];

    /// A kind an API server may not serve at all: DeviceClasses
    /// (`resource.k8s.io/v1`, served by default from 1.34). Where it is not
    /// served the view goes on without such objects.
    pub fn may_be_unserved(self) -> bool {
        matches!(self, Kind::DeviceClass)
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Node => "Node",
            Kind::Pod => "Pod",
            Kind::Namespace => "Namespace",
            Kind::PodDisruptionBudget => "PodDisruptionBudget",
            Kind::PriorityClass => "PriorityClass",
            Kind::DeviceClass => "DeviceClass",
            Kind::Service => "Service",
            Kind::ReplicaSet => "ReplicaSet",
            Kind::StatefulSet => "StatefulSet",
            Kind::ReplicationController => "ReplicationController",
        }
    }
}

#[derive(Debug, Default)]
pub struct SyncStats {
    events: [AtomicU64; KINDS],
    relists: [AtomicU64; KINDS],
    publish_nanos: AtomicU64,
    lagging_since: Mutex<Option<Instant>>,
}

/// One scrape's reading of [`SyncStats`].
#[derive(Debug, Clone, PartialEq)]
pub struct SyncReading {
    pub events: [(Kind, u64); KINDS],
    pub relists: [(Kind, u64); KINDS],
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
            |a: &[AtomicU64; KINDS]| Kind::ALL.map(|k| (k, a[k as usize].load(Ordering::Relaxed)));
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
