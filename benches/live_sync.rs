//! The live source against the in-process API server at 5,000 nodes and
//! 150,000 pods: time from start to a ready view (initial list of every
//! kind, paged 500 at a time), resident memory, and event-to-visible
//! latency while pod events stream at 200 per second. Prints its numbers.

#[path = "../tests/support/fake_apiserver.rs"]
mod fake_apiserver;
#[path = "../tests/support/synthetic.rs"]
mod synthetic;

use std::sync::Arc;
use std::time::{Duration, Instant};

use fake_apiserver::FakeApiServer;
use kube_arbiter::cluster::ClusterView;
use kube_arbiter::cluster::live;
use kube_arbiter::config::LiveSettings;
use kube_arbiter::model::requests::RequestsRule;

const NODES: usize = 5_000;
const PODS: usize = 150_000;
const NAMESPACES: usize = 300;
const EVENTS: usize = 1_000;
const EVENTS_PER_SECOND: u64 = 200;

fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p) as usize]
}

#[tokio::main]
async fn main() {
    let api = FakeApiServer::start().await;
    api.load("Node", (0..NODES).map(synthetic::node));
    api.load(
        "Pod",
        (0..PODS).map(|i| synthetic::pod(i, NODES, NAMESPACES)),
    );
    api.load("Namespace", (0..NAMESPACES).map(synthetic::namespace));
    let rss_server = rss_mib();

    let view = Arc::new(ClusterView::new());
    let settings = LiveSettings::default();
    let started = Instant::now();
    let _source = live::start(
        Some(api.kubeconfig().to_path_buf()),
        view.clone(),
        &settings,
        RequestsRule::default(),
    )
    .await
    .unwrap();
    while !view.is_ready() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let sync = started.elapsed();
    let counts = view.current().unwrap().counts();
    assert_eq!((counts.nodes, counts.pods), (NODES, PODS));
    let rss_synced = rss_mib();
    println!(
        "initial sync: {NODES} nodes, {PODS} pods in {:.2} s; RSS {:.0} MiB with the view \
         ({:.0} MiB of it the fake API server's objects)",
        sync.as_secs_f64(),
        rss_synced,
        rss_server
    );

    // 200 events/s: each moves a pod to another node; measure until the
    // published view shows it there.
    let mut latencies = Vec::with_capacity(EVENTS);
    let period = Duration::from_micros(1_000_000 / EVENTS_PER_SECOND);
    let mut next = Instant::now();
    for k in 0..EVENTS {
        let i = (k * 149) % PODS;
        let to = (i + 1 + k) % NODES;
        let mut pod = synthetic::pod(i, NODES, NAMESPACES);
        let node = format!("node-{to:05}");
        pod["spec"]["nodeName"] = node.clone().into();
        let ns = format!("ns-{}", i % NAMESPACES);
        let name = format!("pod-{i:06}");
        let sent = Instant::now();
        api.apply("Pod", pod);
        loop {
            let s = view.current().unwrap();
            let there = s
                .pod(&ns, &name)
                .and_then(|r| r.node)
                .is_some_and(|n| s.nodes()[n as usize].node.name() == node);
            if there {
                break;
            }
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        latencies.push(sent.elapsed());
        next += period;
        tokio::time::sleep_until(next.into()).await;
    }
    latencies.sort();
    let stats = view.sync_stats().read();
    println!(
        "event to visible at {EVENTS_PER_SECOND} events/s over {EVENTS} events: p50 {:.1} ms, \
         p99 {:.1} ms, max {:.1} ms; mean publish {:.2} ms over {} publishes",
        percentile(&latencies, 0.5).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
        latencies.last().unwrap().as_secs_f64() * 1e3,
        stats.publish_seconds * 1e3 / view.stats().reloads as f64,
        view.stats().reloads
    );
}
