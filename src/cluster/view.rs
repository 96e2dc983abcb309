//! The published cluster view: one immutable [`Snapshot`] swapped atomically.
//!
//! Sources (file, live API) are the only writers of the base snapshot; the
//! bind verb adds assumed bindings on top of it (see [`super::assume`]).
//! Request handlers call [`ClusterView::current`] and work on that one
//! consistent snapshot without locks. Reload outcomes and sync statistics
//! are counted here so the metrics endpoint can read them at scrape time
//! without the sources knowing about Prometheus.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use tokio::sync::Notify;
use tokio::sync::futures::Notified;

use super::Snapshot;
use super::assume::{AssumeError, Assumptions, placed, placed_read};
use super::sync_stats::SyncStats;
use crate::model::Pod;

#[derive(Default)]
pub struct ClusterView {
    current: ArcSwapOption<Snapshot>,
    overlay: Mutex<Overlay>,
    /// Woken on every publish (source or assumption), for decisions that
    /// wait for the view to catch up (see [`super::in_flight`]).
    published: Notify,
    reloads: AtomicU64,
    reload_failures: AtomicU64,
    stale: AtomicBool,
    sync: SyncStats,
}

/// What the source published, and the bindings assumed on top of it.
#[derive(Default)]
struct Overlay {
    base: Option<Arc<Snapshot>>,
    assumptions: Assumptions,
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

    /// Completes at the next publish after it was created (and enabled).
    pub fn published(&self) -> Notified<'_> {
        self.published.notified()
    }

    /// A snapshot is published and its source is not known to be stale.
    pub fn is_ready(&self) -> bool {
        self.current.load().is_some() && !self.is_stale()
    }

    /// Make `snapshot` (plus the bindings still assumed) the view every
    /// following request sees.
    pub fn publish(&self, snapshot: Snapshot) {
        let mut overlay = self.overlay();
        overlay.base = Some(Arc::new(snapshot));
        self.republish(&mut overlay);
        self.reloads.fetch_add(1, Ordering::Relaxed);
    }

    /// Place a pod that was just bound on `node` in the view at once, until
    /// the source shows it bound or `ttl` passes.
    pub fn assume_binding(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
        node: &str,
        ttl: Duration,
    ) -> Result<(), AssumeError> {
        let mut overlay = self.overlay();
        let base = overlay.base.clone().ok_or(AssumeError::NotReady)?;
        let pod = placed(&base, namespace, name, uid, node)?;
        overlay.assumptions.insert(pod, Instant::now() + ttl, false);
        self.republish(&mut overlay);
        Ok(())
    }

    /// [`Self::assume_binding`] of a pod the view has not shown yet, as
    /// the API server had it (`read`).
    pub fn assume_read_binding(&self, read: &Pod, node: &str, ttl: Duration) {
        let mut overlay = self.overlay();
        let pod = placed_read(read, node);
        overlay.assumptions.insert(pod, Instant::now() + ttl, true);
        self.republish(&mut overlay);
    }

    /// Take back the assumption of a binding that failed.
    pub fn forget_assumption(&self, namespace: &str, name: &str) {
        let mut overlay = self.overlay();
        if overlay.assumptions.remove(namespace, name) {
            self.republish(&mut overlay);
        }
    }

    /// Drop assumptions whose time is up; sources that publish rarely (a
    /// file) rely on a timer calling this.
    pub fn expire_assumptions(&self) {
        let mut overlay = self.overlay();
        let before = overlay.assumptions.len();
        if let Some(base) = overlay.base.clone() {
            overlay.assumptions.reconcile(&base, Instant::now());
        }
        if overlay.assumptions.len() != before {
            self.republish(&mut overlay);
        }
    }

    /// Bindings assumed and not yet confirmed by the source.
    pub fn assumed_bindings(&self) -> usize {
        self.overlay().assumptions.len()
    }

    /// The source says whether it has been out of step with the cluster for
    /// longer than it may be; a stale view fails readiness but still answers.
    pub fn set_stale(&self, stale: bool) {
        self.stale.store(stale, Ordering::Relaxed);
    }

    pub fn is_stale(&self) -> bool {
        self.stale.load(Ordering::Relaxed)
    }

    pub fn sync_stats(&self) -> &SyncStats {
        &self.sync
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

    fn overlay(&self) -> MutexGuard<'_, Overlay> {
        // A panic elsewhere cannot leave the overlay half-updated: every
        // mutation is a single insert or retain.
        self.overlay.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn republish(&self, overlay: &mut Overlay) {
        let Some(base) = overlay.base.clone() else {
            return;
        };
        let changes = overlay.assumptions.reconcile(&base, Instant::now());
        let published = if changes.is_empty() {
            base
        } else {
            Arc::new(base.with_pod_changes(&changes))
        };
        self.current.store(Some(published));
        self.published.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ClusterObjects;

    fn objects(node_name: &str) -> ClusterObjects {
        ClusterObjects {
            nodes: vec![serde_json::from_str(r#"{"metadata":{"name":"n1"}}"#).unwrap()],
            pods: vec![
                serde_json::from_value(serde_json::json!({
                    "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
                    "spec": {"nodeName": node_name}
                }))
                .unwrap(),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn an_assumed_binding_is_visible_at_once_and_survives_a_republish() {
        let view = ClusterView::new();
        view.publish(Snapshot::build(objects("")));
        view.assume_binding("ns", "p", "u1", "n1", Duration::from_secs(60))
            .unwrap();
        let on_node = |v: &ClusterView| v.current().unwrap().node("n1").unwrap().pods.len();
        assert_eq!(on_node(&view), 1);
        view.publish(Snapshot::build(objects("")));
        assert_eq!(on_node(&view), 1, "source still shows it pending");
        view.publish(Snapshot::build(objects("n1")));
        assert_eq!(on_node(&view), 1);
        assert_eq!(view.assumed_bindings(), 0, "source confirmed it");
    }

    #[test]
    fn a_forgotten_assumption_leaves_the_view_at_once() {
        let view = ClusterView::new();
        view.publish(Snapshot::build(objects("")));
        view.assume_binding("ns", "p", "u1", "n1", Duration::from_secs(60))
            .unwrap();
        view.forget_assumption("ns", "p");
        assert_eq!(view.current().unwrap().node("n1").unwrap().pods.len(), 0);
        assert_eq!(view.assumed_bindings(), 0);
    }

    #[tokio::test]
    async fn a_publish_wakes_those_waiting_for_one() {
        let view = ClusterView::new();
        let published = view.published();
        tokio::pin!(published);
        published.as_mut().enable();
        view.publish(Snapshot::default());
        published.await;
    }

    #[test]
    fn an_expired_assumption_leaves_the_view() {
        let view = ClusterView::new();
        view.publish(Snapshot::build(objects("")));
        view.assume_binding("ns", "p", "u1", "n1", Duration::ZERO)
            .unwrap();
        view.expire_assumptions();
        assert_eq!(view.current().unwrap().node("n1").unwrap().pods.len(), 0);
        assert_eq!(view.assumed_bindings(), 0);
    }

    #[test]
    fn a_stale_view_answers_but_is_not_ready() {
        let view = ClusterView::new();
        assert!(!view.is_ready());
        view.publish(Snapshot::default());
        assert!(view.is_ready());
        view.set_stale(true);
        assert!(!view.is_ready());
        assert!(view.current().is_some());
    }
}
