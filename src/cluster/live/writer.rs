//! The single writer of the live view: applies watch reports to the store,
//! publishes a new snapshot at most every `publish_interval`, gates the
//! first publish on every kind's initial list, and marks the view stale
//! while a kind stays out of step longer than `stale_after`. What it logs
//! about the watches is decided in [`super::health`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{Notify, mpsc};
use tokio::time::{MissedTickBehavior, timeout_at};

use super::health::{Health, Note};
use super::store::{Phase, Store};
use super::watch::Report;
use crate::cluster::{ClusterView, Snapshot};
use crate::model::requests::RequestsRule;

#[derive(Debug, Clone)]
pub struct WriterSettings {
    pub publish_interval: Duration,
    pub stale_after: Duration,
    /// The API server's address, for log lines.
    pub url: String,
    /// How the published snapshots count what a pod on a node holds.
    pub requests_rule: RequestsRule,
}

struct Writer {
    view: Arc<ClusterView>,
    settings: WriterSettings,
    store: Store,
    base: Option<Snapshot>,
    /// The base before `base`, kept one publish longer: a request still
    /// reading it then drops only its handle, and the writer, not the
    /// request, frees the parts no newer snapshot shares.
    retired: Option<Snapshot>,
    health: Health,
    /// Wakes the watches backing off when the API server is back.
    retry_now: Arc<Notify>,
}

pub async fn run(
    view: Arc<ClusterView>,
    settings: WriterSettings,
    mut rx: mpsc::Receiver<Report>,
    retry_now: Arc<Notify>,
) {
    let publish_interval = settings.publish_interval;
    let mut tick = tokio::time::interval(check_every(settings.stale_after));
    let mut w = Writer {
        view,
        health: Health::new(settings.stale_after, Instant::now()),
        store: Store::new(settings.requests_rule),
        settings,
        base: None,
        retired: None,
        retry_now,
    };
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            report = rx.recv() => {
                let Some(report) = report else { return };
                w.handle(report);
                // Batch whatever arrives within one publish interval.
                let deadline = tokio::time::Instant::now() + publish_interval;
                while let Ok(Some(report)) = timeout_at(deadline, rx.recv()).await {
                    w.handle(report);
                }
                w.publish();
            }
            _ = tick.tick() => {
                let notes = w.health.tick(Instant::now());
                w.note(&notes);
                w.view.expire_assumptions();
            }
        }
    }
}

/// Staleness is checked often enough to notice it within a quarter of the
/// bound, and at least every second.
fn check_every(stale_after: Duration) -> Duration {
    (stale_after / 4).clamp(Duration::from_millis(10), Duration::from_secs(1))
}

impl Writer {
    fn handle(&mut self, report: Report) {
        match report {
            Report::Event(update) => {
                let kind = update.kind();
                let phase = self.store.apply(update);
                let stats = self.view.sync_stats();
                // A list counts once complete: a relist that fails while
                // the API server is down is a retry, not a list.
                match phase {
                    Phase::Listed => stats.record_relist(kind),
                    Phase::Changed => stats.record_event(kind),
                    Phase::Relisting | Phase::Listing => {}
                }
                // A relist starts before its list request; anything else
                // is the server answering.
                if phase != Phase::Relisting {
                    let (notes, wake) = self.health.answered(Instant::now());
                    self.emit(&notes);
                    if wake {
                        self.retry_now.notify_waiters();
                    }
                }
                if phase == Phase::Listed {
                    let notes = self.health.listed(kind, Instant::now());
                    self.note(&notes);
                }
            }
            Report::Failed {
                kind,
                failure,
                error,
                retry_in,
            } => {
                let notes = self
                    .health
                    .failed(kind, failure, error, retry_in, Instant::now());
                self.note(&notes);
            }
        }
    }

    fn emit(&self, notes: &[Note]) {
        for n in notes {
            n.emit(&self.settings.url);
        }
    }

    /// Log what the health policy decided, and show the view's state.
    fn note(&self, notes: &[Note]) {
        self.emit(notes);
        self.view
            .sync_stats()
            .set_lagging_since(self.health.lagging_since());
        self.view.set_stale(self.health.is_stale());
    }

    fn publish(&mut self) {
        if !self.store.is_dirty() || !self.health.all_listed() {
            return;
        }
        let started = Instant::now();
        let first = self.base.is_none();
        let next = self.store.snapshot(self.base.as_ref());
        self.view.publish(next.clone());
        self.retired = self.base.replace(next);
        self.view.sync_stats().record_publish(started.elapsed());
        if first {
            tracing::info!(
                pods = self.store.pod_count(),
                took_ms = started.elapsed().as_millis() as u64,
                "live cluster view synced; ready"
            );
        }
    }
}
