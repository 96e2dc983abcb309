//! Preempt and scale-in costs.
//!
//! - `preempt/answer_200_nodes`: the whole `/scheduler/preempt` answer
//!   (decode, PodFilters prepared once, victims on 200 candidate nodes,
//!   the answer's JSON) on a synthetic 5,000-node / 150,000-pod cluster,
//!   in process. Pods' priorities, requests and UIDs come from the
//!   snapshot's per-node summaries, built with the snapshot.
//! - `preempt/https_200_nodes`: the same request over HTTPS (rustls, h1,
//!   keep-alive) through the real router: the end-to-end number.
//! - `scale_in/*`: a 1,000-pod Deployment over 300 nodes in 3 zones, the
//!   controller's order and the spread-preserving choice.

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use jiff::Timestamp;
use serde_json::{Value, json};

use kube_arbiter::api;
use kube_arbiter::api::AppState;
use kube_arbiter::api::preempt::answer;
use kube_arbiter::cluster::{ClusterObjects, ClusterView, Snapshot};
use kube_arbiter::config::Config;
use kube_arbiter::config::scheduling::DefaultSpreadConstraints;
use kube_arbiter::model::{Node, Pod};
use kube_arbiter::policy::Code;
use kube_arbiter::policy::filter::PodFilters;
use kube_arbiter::policy::preemption::Preemptor;
use kube_arbiter::policy::scale_in::{ScaleInRequest, scale_in};
use kube_arbiter::server::router;
use kube_arbiter::synth::{SynthParams, generate_objects};

/// A top-priority pod asking for 6 cpu and 8 GiB; with `spread`, also
/// hard zone and hostname spread and hostname anti-affinity to its own app,
/// so every filter rule keeps per-domain state over the 5,000 nodes.
fn urgent_pod(spread: bool) -> Value {
    let mut pod = json!({
        "metadata": {"name": "urgent", "namespace": "default", "uid": "urgent-1", "labels": {"app": "urgent"}},
        "spec": {"priority": 2_000_000, "containers": [{"name": "c",
                 "resources": {"requests": {"cpu": "6", "memory": "8Gi"}}}]}
    });
    if spread {
        let selector = json!({"matchLabels": {"app": "urgent"}});
        pod["spec"]["topologySpreadConstraints"] = json!([
            {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
             "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector},
            {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
             "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector}]);
        pod["spec"]["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}]}});
    }
    pod
}

/// The request kube-scheduler would send: the first 200 nodes where the pod
/// does not fit now but eviction might help, in MetaVictims form.
fn preempt_body(snapshot: &Snapshot, config: &Config, spread: bool) -> Vec<u8> {
    let pod: Pod = serde_json::from_value(urgent_pod(spread)).unwrap();
    let filters = PodFilters::prepare(snapshot, &pod, &config.scheduling).unwrap();
    let p = Preemptor::new(snapshot, &pod, filters, Timestamp::now());
    let meta: serde_json::Map<String, Value> = snapshot
        .nodes()
        .iter()
        .filter(|info| matches!(p.status_on(info), Err(f) if f.code == Code::Unschedulable))
        .map(|info| {
            (
                info.node.name().to_string(),
                json!({"Pods": [], "NumPDBViolations": 0}),
            )
        })
        .take(200)
        .collect();
    assert_eq!(meta.len(), 200, "the synthetic cluster is too empty");
    serde_json::to_vec(&json!({
        "Pod": urgent_pod(spread),
        "NodeNameToVictims": null,
        "NodeNameToMetaVictims": meta,
    }))
    .unwrap()
}

fn bench_preempt(c: &mut Criterion) {
    let objects = generate_objects(&SynthParams::new(5_000, 150_000)).unwrap();
    let snapshot = Snapshot::build(objects);
    let config = Config::default();
    let body = preempt_body(&snapshot, &config, false);
    let with_spread = preempt_body(&snapshot, &config, true);
    let mut group = c.benchmark_group("preempt");
    for (name, body) in [
        ("answer_200_nodes", &body),
        (
            "answer_200_nodes_with_spread_and_anti_affinity",
            &with_spread,
        ),
    ] {
        let result = answer(&snapshot, &config, body, Timestamp::now()).unwrap();
        eprintln!(
            "{name}: {} of 200 candidate nodes helped, {} victims in all",
            result.candidates.len(),
            result
                .candidates
                .iter()
                .map(|c| c.victims.pods.len())
                .sum::<usize>()
        );
        group.bench_function(name, |b| {
            b.iter(|| {
                answer(&snapshot, &config, body, Timestamp::now())
                    .unwrap()
                    .to_json()
            })
        });
    }

    let rt = tokio::runtime::Runtime::new().unwrap();
    let (url, client) = rt.block_on(serve_https(snapshot.clone()));
    group.bench_function("https_200_nodes", |b| {
        b.iter(|| {
            rt.block_on(async {
                let r = client
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(body.clone())
                    .send()
                    .await
                    .unwrap();
                assert!(r.status().is_success());
                r.bytes().await.unwrap()
            })
        })
    });
    group.finish();
}

/// The real router over rustls on a loopback port; a client trusting it.
async fn serve_https(snapshot: Snapshot) -> (String, reqwest::Client) {
    kube_arbiter::server::tls::install_crypto_provider();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let cert_pem = cert.cert.pem();
    let key_pem = cert.signing_key.serialize_pem();
    let tls =
        axum_server::tls_rustls::RustlsConfig::from_pem(cert_pem.clone().into(), key_pem.into())
            .await
            .unwrap();
    let view = Arc::new(ClusterView::new());
    view.publish(snapshot);
    let app = router(AppState::new(view, Config::default()), api::routes(true));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    // Tokio needs a non-blocking socket: a blocking accept would stall the
    // worker the connection tasks are queued on (the bench hung in warm-up).
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    // TCP_NODELAY, as the service sets it.
    let server = axum_server::from_tcp_rustls(listener, tls)
        .unwrap()
        .map(|tls| tls.acceptor(axum_server::accept::NoDelayAcceptor::new()));
    tokio::spawn(server.serve(app.into_make_service()));
    let client = reqwest::Client::builder()
        .tls_backend_rustls()
        .tls_certs_only([reqwest::Certificate::from_pem(cert_pem.as_bytes()).unwrap()])
        .resolve("localhost", addr)
        .build()
        .unwrap();
    (
        format!("https://localhost:{}/scheduler/preempt", addr.port()),
        client,
    )
}

/// One Deployment of 1,000 pods over 300 nodes in 3 zones (zone a has
/// twice the nodes), hard zone spread with maxSkew 1.
fn workload() -> (Snapshot, Vec<Pod>) {
    let at = |s: i64| {
        Timestamp::from_second(1_700_000_000 + s)
            .unwrap()
            .to_string()
    };
    let nodes: Vec<Node> = (0..300)
        .map(|i| {
            let zone = ["a", "a", "b", "c"][i % 4];
            serde_json::from_value(json!({"metadata": {"name": format!("n{i}"), "labels": {
                "kubernetes.io/hostname": format!("n{i}"), "topology.kubernetes.io/zone": zone}}}))
            .unwrap()
        })
        .collect();
    let pods: Vec<Pod> = (0..1000i64)
        .map(|i| {
            serde_json::from_value(json!({
                "metadata": {"name": format!("web-{i}"), "namespace": "shop", "uid": format!("uid-{i:04}"),
                    "labels": {"app": "web"},
                    "creationTimestamp": at((i * 7919) % 100_000),
                    "ownerReferences": [{"kind": "ReplicaSet", "name": "web-rs", "controller": true}]},
                "spec": {"nodeName": format!("n{}", (i * 7) % 300), "topologySpreadConstraints": [{
                    "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}}}]},
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True",
                    "lastTransitionTime": at(100_000 + (i * 104_729) % 50_000)}],
                    "containerStatuses": [{"name": "c", "restartCount": i % 3}]}
            }))
            .unwrap()
        })
        .collect();
    let snapshot = Snapshot::build(ClusterObjects {
        nodes,
        pods: pods.clone(),
        ..Default::default()
    });
    (snapshot, pods)
}

fn bench_scale_in(c: &mut Criterion) {
    let (snapshot, pods) = workload();
    let refs: Vec<&Pod> = pods.iter().collect();
    let defaults = DefaultSpreadConstraints::default();
    let now: Timestamp = "2024-06-01T00:00:00Z".parse().unwrap();
    let mut group = c.benchmark_group("scale_in");
    for count in [100, 500] {
        let order = ScaleInRequest {
            count,
            preserve_spread: None,
            now,
        };
        let spread = ScaleInRequest {
            preserve_spread: Some(&defaults),
            ..order
        };
        group.bench_function(format!("order_1000_pods_remove_{count}"), |b| {
            b.iter(|| scale_in(&snapshot, &refs, order))
        });
        group.bench_function(format!("spread_1000_pods_remove_{count}"), |b| {
            b.iter(|| scale_in(&snapshot, &refs, spread))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_preempt, bench_scale_in);
criterion_main!(benches);
