//! The single writer of the live view: applies watch reports to the store,
//! publishes a new snapshot at most every `publish_interval`, gates the
//! first publish on every kind's initial list, and marks the view stale
//! while a kind stays out of step longer than `stale_after`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio::time::{MissedTickBehavior, timeout_at};

use super::store::{Phase, Store};
use super::watch::Report;
use crate::cluster::{ClusterView, Kind, Snapshot};

#[derive(Debug, Clone, Copy)]
pub struct WriterSettings {
    pub publish_interval: Duration,
    pub stale_after: Duration,
}

/// What the writer knows of one kind's watch.
#[derive(Debug, Default, Clone)]
struct KindSync {
    listed_once: bool,
    failing_since: Option<Instant>,
    last_error: String,
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
    kinds: [KindSync; 9],
    stale: bool,
}

pub async fn run(view: Arc<ClusterView>, settings: WriterSettings, mut rx: mpsc::Receiver<Report>) {
    let mut w = Writer {
        view,
        settings,
        store: Store::default(),
        base: None,
        retired: None,
        kinds: Default::default(),
        stale: false,
    };
    let mut tick = tokio::time::interval(check_every(settings.stale_after));
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            report = rx.recv() => {
                let Some(report) = report else { return };
                w.handle(report);
                // Batch whatever arrives within one publish interval.
                let deadline = tokio::time::Instant::now() + settings.publish_interval;
                while let Ok(Some(report)) = timeout_at(deadline, rx.recv()).await {
                    w.handle(report);
                }
                w.publish();
            }
            _ = tick.tick() => {
                w.check_staleness();
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
                let stats = self.view.sync_stats();
                match self.store.apply(update) {
                    Phase::Relisting => stats.record_relist(kind),
                    Phase::Listed => self.listed(kind),
                    Phase::Changed => stats.record_event(kind),
                    Phase::Listing => {}
                }
            }
            Report::Failed {
                kind,
                error,
                retry_in,
            } => {
                tracing::warn!(
                    kind = kind.name(),
                    %error,
                    retry_in_ms = retry_in.as_millis() as u64,
                    "watch failed; the kind will be relisted"
                );
                let k = &mut self.kinds[kind as usize];
                k.failing_since.get_or_insert_with(Instant::now);
                k.last_error = error;
                self.update_lag();
            }
        }
    }

    fn listed(&mut self, kind: Kind) {
        let k = &mut self.kinds[kind as usize];
        if k.failing_since.take().is_some() {
            tracing::info!(kind = kind.name(), "watch back in step after a relist");
        }
        if !k.listed_once {
            k.listed_once = true;
            tracing::info!(kind = kind.name(), "initial list complete");
        }
        self.update_lag();
        self.check_staleness();
    }

    fn update_lag(&self) {
        let since = self.kinds.iter().filter_map(|k| k.failing_since).min();
        self.view.sync_stats().set_lagging_since(since);
    }

    fn publish(&mut self) {
        if !self.store.is_dirty() || !self.kinds.iter().all(|k| k.listed_once) {
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

    fn check_staleness(&mut self) {
        let bound = self.settings.stale_after;
        let late: Vec<(Kind, &KindSync)> = Kind::ALL
            .into_iter()
            .zip(&self.kinds)
            .filter(|(_, k)| k.failing_since.is_some_and(|t| t.elapsed() > bound))
            .collect();
        let stale = !late.is_empty();
        if stale && !self.stale {
            for (kind, k) in &late {
                tracing::error!(
                    kind = kind.name(),
                    error = %k.last_error,
                    stale_after_s = bound.as_secs(),
                    "watch out of step for too long; view is stale, /readyz fails"
                );
            }
        } else if !stale && self.stale {
            tracing::info!("every watch in step again; view is fresh");
        }
        self.stale = stale;
        self.view.set_stale(stale);
    }
}
