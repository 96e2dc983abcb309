//! Filter latency while watch events stream, at 5,000 nodes and 150,000
//! pods: the live source follows the in-process API server, and a request
//! thread times the filter handler (body to answer, NodeNames mode, every
//! node) on the view's current snapshot every 5 ms; first with no events,
//! then while pod events arrive at 200 per second. A third of the events
//! land in the incoming pod's namespace, and they move, delete and create
//! pods, so the label index of that namespace keeps changing.
//! Event-to-visible latency is measured alongside. Prints its numbers.

#[path = "../tests/support/fake_apiserver.rs"]
mod fake_apiserver;
#[path = "../tests/support/synthetic.rs"]
mod synthetic;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use fake_apiserver::FakeApiServer;
use kube_arbiter::api::extender::filter;
use kube_arbiter::cluster::{ClusterView, Snapshot, live};
use kube_arbiter::config::{LiveSettings, SchedulingSettings};
use kube_arbiter::model::RecentNodes;
use kube_arbiter::model::requests::RequestsRule;
use kube_arbiter::parallel::Splitter;
use serde_json::json;

const NODES: usize = 5_000;
const PODS: usize = 150_000;
const NAMESPACES: usize = 300;
const EVENTS: usize = 1_000;
const EVENT_EVERY: Duration = Duration::from_millis(5);
const REQUEST_EVERY: Duration = Duration::from_millis(5);
/// The incoming pod's namespace: pods `i` with `i % NAMESPACES == 7`.
const NS: usize = 7;

/// A request like kube-scheduler's for a pod of app-7 in ns-7 with a hard
/// zone spread, hostname anti-affinity and preferred zone affinity.
fn filter_body() -> Vec<u8> {
    let names: Vec<String> = (0..NODES).map(|i| format!("node-{i:05}")).collect();
    serde_json::to_vec(&json!({
        "Pod": {"metadata": {"name": "incoming", "namespace": format!("ns-{NS}"), "labels": {"app": "app-7"}},
                "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "100m"}}}],
                         "topologySpreadConstraints": [
                            {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
                             "labelSelector": {"matchLabels": {"app": "app-7"}}}],
                         "affinity": {
                            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                                {"labelSelector": {"matchLabels": {"app": "app-7"}}, "topologyKey": "kubernetes.io/hostname"}]},
                            "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                                {"weight": 50, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "app-107"}},
                                                                   "topologyKey": "topology.kubernetes.io/zone"}}]}}}},
        "NodeNames": names,
    }))
    .unwrap()
}

/// Event `k`: which pod, and the node it should be on afterwards (`None`:
/// deleted). No pod is touched twice, so an event cannot be hidden by a
/// later one published in the same batch. Every third event is in the
/// incoming pod's namespace, where pods are moved, deleted and created in
/// turn; the others move pods of other namespaces.
fn event(k: usize) -> (usize, Option<usize>) {
    let to = (k * 7_919) % NODES;
    if !k.is_multiple_of(3) {
        let i = (k * 149) % PODS;
        let i = if i % NAMESPACES == NS { i + 1 } else { i };
        return (i, Some(to));
    }
    let j = k / 3;
    match j % 3 {
        0 => (NS + NAMESPACES * j, Some(to)),
        1 => (NS + NAMESPACES * j, None),
        // A new pod: past the loaded ones, still in ns-7.
        _ => (PODS + NS + NAMESPACES * j, Some(to)),
    }
}

fn visible(s: &Snapshot, i: usize, node: Option<usize>) -> bool {
    let found = s.pod(&format!("ns-{}", i % NAMESPACES), &format!("pod-{i:06}"));
    match (found.and_then(|r| r.node), node) {
        (Some(n), Some(want)) => s.nodes()[n as usize].node.name() == format!("node-{want:05}"),
        (_, None) => found.is_none(),
        (None, Some(_)) => false,
    }
}

fn send(api: &FakeApiServer, i: usize, node: Option<usize>) {
    match node {
        Some(to) => {
            let mut pod = synthetic::pod(i, NODES, NAMESPACES);
            pod["spec"]["nodeName"] = format!("node-{to:05}").into();
            api.apply("Pod", pod);
        }
        None => api.delete(
            "Pod",
            &format!("ns-{}", i % NAMESPACES),
            &format!("pod-{i:06}"),
        ),
    }
}

/// Time filter requests every `REQUEST_EVERY` until `stop`.
fn time_requests(view: &ClusterView, stop: &AtomicBool) -> Vec<Duration> {
    let settings = SchedulingSettings::default();
    let recent = RecentNodes::default();
    let splitter = Splitter::default();
    let body = filter_body();
    let mut took = Vec::new();
    let mut next = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        let snapshot = view.current().unwrap();
        let answer = filter(Some(&snapshot), &settings, &body, &recent, &splitter);
        let bytes = serde_json::to_vec(&answer).unwrap();
        drop(snapshot);
        took.push(started.elapsed());
        assert!(bytes.len() > 2);
        next += REQUEST_EVERY;
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    took
}

/// Stream the events, each once its time comes, and note when each
/// becomes visible (events are published in order).
fn stream_events(api: &FakeApiServer, view: &ClusterView) -> Vec<Duration> {
    let started = Instant::now();
    let mut sent_at = Vec::with_capacity(EVENTS);
    let mut seen = Vec::with_capacity(EVENTS);
    while seen.len() < EVENTS {
        if sent_at.len() < EVENTS && started.elapsed() >= EVENT_EVERY * sent_at.len() as u32 {
            let (i, node) = event(sent_at.len());
            send(api, i, node);
            sent_at.push(Instant::now());
        }
        let s = view.current().unwrap();
        while seen.len() < sent_at.len() {
            let (i, node) = event(seen.len());
            if !visible(&s, i, node) {
                let waited = sent_at[seen.len()].elapsed();
                assert!(
                    waited < Duration::from_secs(10),
                    "event {} (pod {i} to {node:?}) not visible after {waited:?}",
                    seen.len()
                );
                break;
            }
            seen.push(sent_at[seen.len()].elapsed());
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    seen
}

fn percentiles(what: &str, mut d: Vec<Duration>) {
    d.sort();
    let at = |p: f64| d[((d.len() - 1) as f64 * p) as usize].as_secs_f64() * 1e3;
    println!(
        "{what}: n {}, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        d.len(),
        at(0.5),
        at(0.99),
        at(1.0)
    );
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// Requests on one thread for as long as `during` runs on another.
fn with_requests<T: Send>(
    view: &ClusterView,
    during: impl FnOnce() -> T + Send,
) -> (T, Vec<Duration>) {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let requests = s.spawn(|| time_requests(view, &stop));
        let out = during();
        stop.store(true, Ordering::Relaxed);
        (out, requests.join().unwrap())
    })
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let api = runtime.block_on(FakeApiServer::start());
    api.load("Node", (0..NODES).map(synthetic::node));
    api.load(
        "Pod",
        (0..PODS).map(|i| synthetic::pod(i, NODES, NAMESPACES)),
    );
    api.load("Namespace", (0..NAMESPACES).map(synthetic::namespace));
    let view = Arc::new(ClusterView::new());
    let settings = LiveSettings::default();
    let _source = runtime
        .block_on(live::start(
            Some(api.kubeconfig().to_path_buf()),
            view.clone(),
            &settings,
            RequestsRule::default(),
        ))
        .unwrap();
    while !view.is_ready() {
        std::thread::sleep(Duration::from_millis(5));
    }
    let quiet_for = EVENT_EVERY * EVENTS as u32;
    println!("synced; load average before: {}", load_average());
    let ((), quiet) = with_requests(&view, || std::thread::sleep(quiet_for));
    println!("load average after the quiet phase: {}", load_average());
    let (visible, streaming) = with_requests(&view, || stream_events(&api, &view));
    println!("load average after the streaming phase: {}", load_average());
    percentiles("filter, no events", quiet);
    percentiles(
        &format!("filter, {} events/s", 1_000 / EVENT_EVERY.as_millis()),
        streaming,
    );
    percentiles("event to visible", visible);
    println!("publishes: {}", view.stats().reloads);
}
