//! Prometheus metrics. Request metrics are recorded by middleware; view
//! gauges are read from the [`ClusterView`] at scrape time so sources need
//! not know about Prometheus.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::cluster::ClusterView;
use crate::cluster::live::ReadThroughMetrics;
use crate::deletion_cost::DeletionCostMetrics;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteStatus {
    pub route: String,
    pub status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabel {
    pub route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabel {
    pub kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabel {
    pub result: &'static str,
}

/// review: token (TokenReview) or access (SubjectAccessReview); result:
/// authenticated, unauthenticated, allowed, denied or unavailable.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReviewLabel {
    pub review: &'static str,
    pub result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WhatLabel {
    pub what: &'static str,
}

pub struct Metrics {
    registry: Registry,
    pub requests: Family<RouteStatus, Counter>,
    pub request_seconds: Family<RouteLabel, Histogram>,
    /// Pod priority admission decisions by result.
    pub pod_admissions: Family<ResultLabel, Counter>,
    /// PodGroup priority admission decisions by result.
    pub pod_group_admissions: Family<ResultLabel, Counter>,
    /// PriorityClass validation decisions by result.
    pub priority_class_admissions: Family<ResultLabel, Counter>,
    /// Reviews sent to the API server, by review and result.
    pub auth_reviews: Family<ReviewLabel, Counter>,
    /// Review answers reused from the delegated auth caches.
    pub auth_cache_hits: Family<ReviewLabel, Counter>,
    view_objects: Family<KindLabel, Gauge>,
    view_reloads: Counter<u64, AtomicU64>,
    view_reload_failures: Counter<u64, AtomicU64>,
    view_ready: Gauge,
    view_stale: Gauge,
    view_events: Family<KindLabel, Counter<u64, AtomicU64>>,
    view_relists: Family<KindLabel, Counter<u64, AtomicU64>>,
    view_publish_seconds: Counter<f64, AtomicU64>,
    view_age_seconds: Gauge<f64, AtomicU64>,
    view_assumed_bindings: Gauge,
    /// Pods answered with a feasible node and not yet seen bound.
    pub in_flight_pods: Gauge,
    /// Decisions that waited for related in-flight pods, and how long.
    pub in_flight_waits: Counter,
    pub in_flight_wait_seconds: Histogram,
    /// Waits that gave up with related pods still in flight.
    pub in_flight_wait_timeouts: Counter,
    /// notAfter of the certificate being served, unix seconds.
    pub tls_cert_not_after: Gauge,
    pub tls_reloads: Counter<u64, AtomicU64>,
    pub tls_reload_failures: Counter<u64, AtomicU64>,
    /// Bindings refused before reaching the API server (bind_guard).
    pub bindings_refused: Counter<u64, AtomicU64>,
    /// Names in preempt requests the view did not know, by what they name.
    preempt_unknown: Family<WhatLabel, Counter>,
    /// The deletion-cost writer (docs/scale-in-controller.md).
    pub deletion_cost: Arc<DeletionCostMetrics>,
    /// Reads from the API server of what the view had not shown yet.
    pub read_through: ReadThroughMetrics,
}

fn latency_histogram() -> Histogram {
    // 50 µs … ~1.6 s: the extender's answers live at the low end.
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        0.00005, 2.0, 16,
    ))
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("kube_arbiter");
        let requests = Family::<RouteStatus, Counter>::default();
        let request_seconds =
            Family::<RouteLabel, Histogram>::new_with_constructor(latency_histogram as fn() -> _);
        let view_objects = Family::<KindLabel, Gauge>::default();
        let pod_admissions = Family::<ResultLabel, Counter>::default();
        let pod_group_admissions = Family::<ResultLabel, Counter>::default();
        let priority_class_admissions = Family::<ResultLabel, Counter>::default();
        let auth_reviews = Family::<ReviewLabel, Counter>::default();
        let auth_cache_hits = Family::<ReviewLabel, Counter>::default();
        let view_reloads = Counter::default();
        let view_reload_failures = Counter::default();
        let view_ready = Gauge::default();
        let view_stale = Gauge::default();
        let view_events = Family::<KindLabel, Counter<u64, AtomicU64>>::default();
        let view_relists = Family::<KindLabel, Counter<u64, AtomicU64>>::default();
        let view_publish_seconds = Counter::<f64, AtomicU64>::default();
        let view_age_seconds = Gauge::<f64, AtomicU64>::default();
        let view_assumed_bindings = Gauge::default();
        let in_flight_pods = Gauge::default();
        let in_flight_waits = Counter::default();
        let in_flight_wait_seconds = latency_histogram();
        let in_flight_wait_timeouts = Counter::default();
        let tls_cert_not_after = Gauge::default();
        let tls_reloads = Counter::default();
        let tls_reload_failures = Counter::default();
        let preempt_unknown = Family::<WhatLabel, Counter>::default();
        let bindings_refused = Counter::default();
        let deletion_cost = Arc::new(DeletionCostMetrics::default());
        deletion_cost.register(&mut registry);
        let read_through = ReadThroughMetrics::default();
        read_through.register(&mut registry);
        registry.register(
            "bindings_refused",
            "Bind calls refused before reaching the API server (pod unknown, already bound, \
             UID mismatch, schedulerName not served, node unknown)",
            bindings_refused.clone(),
        );
        registry.register(
            "http_requests",
            "HTTP requests by route and status code",
            requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "HTTP request latency by route",
            request_seconds.clone(),
        );
        registry.register(
            "admission_pod_decisions",
            "Pod priority admission decisions by result (patched, allowed, denied, ignored)",
            pod_admissions.clone(),
        );
        registry.register(
            "admission_podgroup_decisions",
            "PodGroup priority admission decisions by result (patched, allowed, denied, ignored)",
            pod_group_admissions.clone(),
        );
        registry.register(
            "admission_priorityclass_decisions",
            "PriorityClass validation decisions by result (allowed, denied, ignored)",
            priority_class_admissions.clone(),
        );
        registry.register(
            "auth_reviews",
            "TokenReviews (review=token) and SubjectAccessReviews (review=access) sent to the \
             API server, by result (authenticated, unauthenticated, allowed, denied, unavailable)",
            auth_reviews.clone(),
        );
        registry.register(
            "auth_cache_hits",
            "Review answers reused from the delegated auth caches, by review and result",
            auth_cache_hits.clone(),
        );
        registry.register(
            "view_objects",
            "Objects in the published cluster view, by kind",
            view_objects.clone(),
        );
        registry.register(
            "view_reloads",
            "Cluster views published",
            view_reloads.clone(),
        );
        registry.register(
            "view_reload_failures",
            "Attempts to publish a cluster view that failed (the last good view stays)",
            view_reload_failures.clone(),
        );
        registry.register(
            "view_ready",
            "1 once a cluster view is published and its source is in step",
            view_ready.clone(),
        );
        registry.register(
            "view_stale",
            "1 while a watch has been out of step for longer than live.staleAfterSeconds",
            view_stale.clone(),
        );
        registry.register(
            "view_events",
            "Watch events applied to the cluster view, by kind",
            view_events.clone(),
        );
        registry.register(
            "view_relists",
            "Completed full lists of a kind (initial sync, 410 Gone, reconnect after an error)",
            view_relists.clone(),
        );
        registry.register(
            "view_publish_seconds",
            "Time spent building and publishing views (divide by view_reloads for the mean)",
            view_publish_seconds.clone(),
        );
        registry.register(
            "view_age_seconds",
            "How long the view may have been behind the cluster (0 while every watch is in step)",
            view_age_seconds.clone(),
        );
        registry.register(
            "view_assumed_bindings",
            "Pods bound by kube-arbiter and not yet confirmed by the cluster source",
            view_assumed_bindings.clone(),
        );
        registry.register(
            "in_flight_pods",
            "Pods answered by filter/prioritize with a feasible node and not yet seen bound",
            in_flight_pods.clone(),
        );
        registry.register(
            "in_flight_waits",
            "Filter/prioritize decisions that waited for related pods in flight",
            in_flight_waits.clone(),
        );
        registry.register(
            "in_flight_wait_seconds",
            "How long decisions waited for related pods in flight",
            in_flight_wait_seconds.clone(),
        );
        registry.register(
            "in_flight_wait_timeouts",
            "Waits that ended at live.inFlightWaitMillis with related pods still in flight",
            in_flight_wait_timeouts.clone(),
        );
        registry.register(
            "tls_cert_not_after_seconds",
            "notAfter of the serving certificate, unix seconds",
            tls_cert_not_after.clone(),
        );
        registry.register(
            "tls_reloads",
            "Certificate/key pairs loaded from disk after a change",
            tls_reloads.clone(),
        );
        registry.register(
            "tls_reload_failures",
            "Changed certificate/key pairs refused (the old pair keeps serving)",
            tls_reload_failures.clone(),
        );
        registry.register(
            "preempt_unknown",
            "Candidate nodes (what=node) and victim pods (what=victim) named by preempt \
             requests that the cluster view did not know; left out of the answer",
            preempt_unknown.clone(),
        );
        for what in ["node", "victim"] {
            // Present at 0 from the start, so a rate() over it is defined.
            let _ = preempt_unknown.get_or_create(&WhatLabel { what });
        }
        Self {
            registry,
            requests,
            request_seconds,
            pod_admissions,
            pod_group_admissions,
            priority_class_admissions,
            auth_reviews,
            auth_cache_hits,
            view_objects,
            view_reloads,
            view_reload_failures,
            view_ready,
            view_stale,
            view_events,
            view_relists,
            view_publish_seconds,
            view_age_seconds,
            view_assumed_bindings,
            in_flight_pods,
            in_flight_waits,
            in_flight_wait_seconds,
            in_flight_wait_timeouts,
            tls_cert_not_after,
            tls_reloads,
            tls_reload_failures,
            bindings_refused,
            preempt_unknown,
            deletion_cost,
            read_through,
        }
    }

    /// Count names a preempt request gave that the view does not know.
    pub fn count_preempt_unknown(&self, nodes: usize, victims: usize) {
        for (what, n) in [("node", nodes), ("victim", victims)] {
            self.preempt_unknown
                .get_or_create(&WhatLabel { what })
                .inc_by(n as u64);
        }
    }

    /// Register another instrument (admission decisions, TLS reloads...).
    pub fn registry_mut(&mut self) -> &mut Registry {
        &mut self.registry
    }

    /// The Prometheus text exposition, with view metrics read now.
    pub fn render(&self, view: &ClusterView) -> String {
        let stats = view.stats();
        sync_counter(&self.view_reloads, stats.reloads);
        sync_counter(&self.view_reload_failures, stats.reload_failures);
        self.render_sync(view);
        self.view_ready.set(i64::from(view.is_ready()));
        if let Some(snapshot) = view.current() {
            for (kind, n) in snapshot.counts().by_kind() {
                self.view_objects
                    .get_or_create(&KindLabel { kind: kind.into() })
                    .set(n as i64);
            }
        }
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

impl Metrics {
    fn render_sync(&self, view: &ClusterView) {
        let sync = view.sync_stats().read();
        for (kind, n) in sync.events {
            let label = KindLabel {
                kind: kind.name().into(),
            };
            sync_counter(&self.view_events.get_or_create(&label), n);
        }
        for (kind, n) in sync.relists {
            let label = KindLabel {
                kind: kind.name().into(),
            };
            sync_counter(&self.view_relists.get_or_create(&label), n);
        }
        let behind = sync.publish_seconds - self.view_publish_seconds.get();
        if behind > 0.0 {
            self.view_publish_seconds.inc_by(behind);
        }
        self.view_age_seconds.set(sync.age.as_secs_f64());
        self.view_stale.set(i64::from(view.is_stale()));
        self.view_assumed_bindings
            .set(view.assumed_bindings() as i64);
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

/// Bring a Prometheus counter up to a monotonic total kept elsewhere.
fn sync_counter(counter: &Counter<u64, AtomicU64>, total: u64) {
    let current = counter.get();
    if total > current {
        counter.inc_by(total - current);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::cluster::{Kind, Snapshot};

    #[test]
    fn reads_through_are_counted_from_zero() {
        let text = Metrics::new().render(&ClusterView::new());
        for line in [
            "kube_arbiter_view_read_through_total{kind=\"Pod\",outcome=\"found\"} 0",
            "kube_arbiter_view_read_through_total{kind=\"Node\",outcome=\"timeout\"} 0",
            "kube_arbiter_view_read_through_total{kind=\"PriorityClass\",outcome=\"listed\"} 0",
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
    }

    #[test]
    fn sync_statistics_are_read_at_scrape_time() {
        let view = ClusterView::new();
        view.publish(Snapshot::default());
        let stats = view.sync_stats();
        stats.record_event(Kind::Pod);
        stats.record_event(Kind::Pod);
        stats.record_relist(Kind::Node);
        stats.record_publish(Duration::from_millis(3));
        view.set_stale(true);
        let text = Metrics::new().render(&view);
        for line in [
            "kube_arbiter_view_events_total{kind=\"Pod\"} 2",
            "kube_arbiter_view_relists_total{kind=\"Node\"} 1",
            "kube_arbiter_view_publish_seconds_total 0.003",
            "kube_arbiter_view_stale 1",
            "kube_arbiter_view_ready 0",
            "kube_arbiter_view_age_seconds 0.0",
            "kube_arbiter_view_assumed_bindings 0",
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
    }
}
