//! Prometheus metrics. Request metrics are recorded by middleware; view
//! gauges are read from the [`ClusterView`] at scrape time so sources need
//! not know about Prometheus.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::cluster::ClusterView;

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
    pub result: String,
}

pub struct Metrics {
    registry: Registry,
    pub requests: Family<RouteStatus, Counter>,
    pub request_seconds: Family<RouteLabel, Histogram>,
    /// Pod priority admission decisions by result.
    pub pod_admissions: Family<ResultLabel, Counter>,
    /// PriorityClass validation decisions by result.
    pub priority_class_admissions: Family<ResultLabel, Counter>,
    view_objects: Family<KindLabel, Gauge>,
    view_reloads: Counter<u64, AtomicU64>,
    view_reload_failures: Counter<u64, AtomicU64>,
    view_ready: Gauge,
    /// notAfter of the certificate being served, unix seconds.
    pub tls_cert_not_after: Gauge,
    pub tls_reloads: Counter<u64, AtomicU64>,
    pub tls_reload_failures: Counter<u64, AtomicU64>,
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
        let priority_class_admissions = Family::<ResultLabel, Counter>::default();
        let view_reloads = Counter::default();
        let view_reload_failures = Counter::default();
        let view_ready = Gauge::default();
        let tls_cert_not_after = Gauge::default();
        let tls_reloads = Counter::default();
        let tls_reload_failures = Counter::default();
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
            "admission_priorityclass_decisions",
            "PriorityClass validation decisions by result (allowed, denied, ignored)",
            priority_class_admissions.clone(),
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
            "1 once a cluster view is published",
            view_ready.clone(),
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
        Self {
            registry,
            requests,
            request_seconds,
            pod_admissions,
            priority_class_admissions,
            view_objects,
            view_reloads,
            view_reload_failures,
            view_ready,
            tls_cert_not_after,
            tls_reloads,
            tls_reload_failures,
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
        match view.current() {
            Some(snapshot) => {
                self.view_ready.set(1);
                for (kind, n) in snapshot.counts().by_kind() {
                    self.view_objects
                        .get_or_create(&KindLabel { kind: kind.into() })
                        .set(n as i64);
                }
            }
            None => {
                self.view_ready.set(0);
            }
        }
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
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
