//! The API-server side of `MODE=live scripts/soak.sh`: the in-process fake
//! API server with a synthetic cluster, streaming pod events at a steady
//! rate for a bounded time while the script drives the release binary
//! against it. Not a test: it runs for minutes and only makes sense with
//! the script's load around it (`cargo run --release --example
//! soak_apiserver`; it fails if nobody watched).
//!
//! Environment: SOAK_SECONDS (60), SOAK_NODES (1000), SOAK_PODS (30000),
//! SOAK_EVENTS per second (200); SOAK_KUBECONFIG, where to copy the
//! kubeconfig once the server listens; SOAK_STATE, where to write the
//! initial cluster as a state file (the script derives its filter body
//! from it).

#[path = "../tests/support/fake_apiserver.rs"]
mod fake_apiserver;
#[path = "../tests/support/synthetic.rs"]
mod synthetic;

use std::time::{Duration, Instant};

use fake_apiserver::FakeApiServer;
use serde_json::{Value, json};

const NAMESPACES: usize = 100;
/// Events are sent in bursts this often, `rate / 20` at a time.
const TICK: Duration = Duration::from_millis(50);
/// Pods created (and later deleted) by the stream, so the pod set churns
/// as well as moves.
const CHURN_KEPT: usize = 1_000;

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .map(|v| v.parse().unwrap_or_else(|_| panic!("{name}={v:?}")))
        .unwrap_or(default)
}

fn with_kind(kind: &str, mut obj: Value) -> Value {
    obj["kind"] = kind.into();
    obj
}

fn churn_pod(k: usize, nodes: usize) -> Value {
    let mut pod = synthetic::pod(k, nodes, NAMESPACES);
    pod["metadata"]["name"] = format!("churn-{k:08}").into();
    pod["metadata"]["uid"] = format!("churn-uid-{k}").into();
    pod
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let seconds = env_number("SOAK_SECONDS", 60) as u64;
    let nodes = env_number("SOAK_NODES", 1_000);
    let pods = env_number("SOAK_PODS", 30_000);
    let rate = env_number("SOAK_EVENTS", 200);
    assert!(nodes > 0 && pods > 0 && rate >= 20, "SOAK_* out of range");

    let api = FakeApiServer::start().await;
    let node_objs: Vec<Value> = (0..nodes).map(synthetic::node).collect();
    let pod_objs: Vec<Value> = (0..pods)
        .map(|i| synthetic::pod(i, nodes, NAMESPACES))
        .collect();
    let ns_objs: Vec<Value> = (0..NAMESPACES).map(synthetic::namespace).collect();
    if let Ok(path) = std::env::var("SOAK_STATE") {
        let items: Vec<Value> = node_objs
            .iter()
            .map(|n| with_kind("Node", n.clone()))
            .chain(pod_objs.iter().map(|p| with_kind("Pod", p.clone())))
            .chain(ns_objs.iter().map(|n| with_kind("Namespace", n.clone())))
            .collect();
        let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
        std::fs::write(&path, list.to_string()).unwrap();
    }
    api.load("Node", node_objs);
    api.load("Pod", pod_objs);
    api.load("Namespace", ns_objs);
    if let Ok(path) = std::env::var("SOAK_KUBECONFIG") {
        // Written whole, then renamed: the script waits for the file.
        let partial = format!("{path}.partial");
        std::fs::copy(api.kubeconfig(), &partial).unwrap();
        std::fs::rename(&partial, &path).unwrap();
    }
    println!("fake API server: {nodes} nodes, {pods} pods, {rate} pod events/s for {seconds} s");

    let per_tick = rate / 20;
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let end = Instant::now() + Duration::from_secs(seconds);
    let mut k = 0usize;
    while Instant::now() < end {
        tick.tick().await;
        for _ in 0..per_tick {
            // Nine in ten events move a pod to another node; one in ten
            // creates a pod, deleting the one created CHURN_KEPT before.
            if k.is_multiple_of(10) {
                api.apply("Pod", churn_pod(k, nodes));
                if k >= CHURN_KEPT * 10 {
                    let old = churn_pod(k - CHURN_KEPT * 10, nodes);
                    let meta = &old["metadata"];
                    api.delete(
                        "Pod",
                        meta["namespace"].as_str().unwrap(),
                        meta["name"].as_str().unwrap(),
                    );
                }
            } else {
                let i = (k * 149) % pods;
                let mut pod = synthetic::pod(i, nodes, NAMESPACES);
                pod["spec"]["nodeName"] = format!("node-{:05}", (i + 1 + k) % nodes).into();
                api.apply("Pod", pod);
            }
            k += 1;
        }
    }
    let watched = api.requests().iter().any(|r| r.contains("watch=true"));
    println!("sent {k} pod events; a client watched: {watched}");
    assert!(
        watched,
        "nobody watched the fake API server during the soak"
    );
}
