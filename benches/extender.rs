//! Extender filter and prioritize at Kubernetes' published limits: 5,000
//! nodes, 150,000 pods (100 namespaces, 20 apps each), built in memory.
//!
//! The pod has two spread constraints (zone DoNotSchedule, hostname
//! ScheduleAnyway), required anti-affinity on the hostname and preferred
//! affinity and anti-affinity on the zone. Timed: PodFilters::prepare + a
//! check of all 5,000 nodes looked up by name (NodeNames mode), prioritize
//! over 5,000 candidates, the filter handler's body-to-answer path, and
//! filter then prioritize for the pod with required node affinity too.
//! Also `explain` for that pod: the same rules plus resources on every
//! node, and prioritize on the feasible ones.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use kube_arbiter::api::extender::filter;
use kube_arbiter::cluster::{ClusterObjects, PodChange, Snapshot};
use kube_arbiter::config::{Config, SchedulingSettings};
use kube_arbiter::explain::explain;
use kube_arbiter::model::RecentNodes;
use kube_arbiter::model::{Node, Pod};
use kube_arbiter::parallel::Splitter;
use kube_arbiter::policy::domains::NodeAt;
use kube_arbiter::policy::filter::PodFilters;
use kube_arbiter::policy::prioritize::prioritize;
use kube_arbiter::policy::{pod_affinity, topology_spread};
use serde_json::json;

const NODES: usize = 5_000;
const PODS: usize = 150_000;
const NAMESPACES: usize = 100;
const APPS: usize = 20;
const ZONES: usize = 3;

fn labels(pairs: &[(&str, String)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn node(i: usize) -> Node {
    let mut n = Node::default();
    n.metadata.name = format!("node-{i:05}");
    n.metadata.labels = labels(&[
        ("kubernetes.io/hostname", n.metadata.name.clone()),
        (
            "topology.kubernetes.io/zone",
            format!("eu-west-1{}", ['a', 'b', 'c'][i % ZONES]),
        ),
        ("topology.kubernetes.io/region", "eu-west-1".into()),
        ("kubernetes.io/arch", "amd64".into()),
        ("kubernetes.io/os", "linux".into()),
        (
            "node.kubernetes.io/instance-type",
            format!("m6i.{}xlarge", 1 + i % 4),
        ),
        (
            "karpenter.sh/capacity-type",
            if i.is_multiple_of(5) {
                "spot"
            } else {
                "on-demand"
            }
            .into(),
        ),
        ("team", format!("team-{}", i % 12)),
        ("pool", format!("pool-{}", i % 7)),
    ])
    .into();
    n.status.allocatable = [
        ("cpu".to_string(), 3_920),
        ("memory".to_string(), 15 << 30),
        ("pods".to_string(), 110),
    ]
    .into();
    n
}

fn pod(i: usize) -> Pod {
    let ns = i % NAMESPACES;
    let app = (i / NAMESPACES) % APPS;
    let value: serde_json::Value = json!({
        "metadata": {"name": format!("pod-{i}"), "namespace": format!("ns-{ns}"), "uid": format!("uid-{i}"),
                     "labels": {"app": format!("app-{app}"), "pod-template-hash": format!("h{}", app % 3), "tier": "backend"}},
        "spec": {"nodeName": format!("node-{:05}", i % NODES)},
        "status": {"phase": "Running"}
    });
    let mut p: Pod = serde_json::from_value(value).unwrap();
    // Some pods carry terms, so the affinity indexes are not empty.
    if i.is_multiple_of(40) {
        p.spec.affinity = Some(serde_json::from_value(json!({"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {"matchLabels": {"app": format!("app-{app}")}},
                                                                 "topologyKey": "kubernetes.io/hostname"}]}})).unwrap());
    } else if i % 40 == 1 {
        p.spec.affinity = Some(
            serde_json::from_value(json!({"podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "podAffinityTerm": {
                "labelSelector": {"matchLabels": {"app": format!("app-{}", (app + 1) % APPS)}},
                "topologyKey": "topology.kubernetes.io/zone"}}]}}))
            .unwrap(),
        );
    }
    p
}

/// The incoming pod as kube-scheduler sends it.
fn incoming_json() -> serde_json::Value {
    json!({
        "metadata": {"name": "new", "namespace": "ns-7", "labels": {"app": "app-3", "tier": "backend"}},
        "spec": {
            "topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
                 "labelSelector": {"matchLabels": {"app": "app-3"}}},
                {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
                 "labelSelector": {"matchLabels": {"app": "app-3"}}}
            ],
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": "app-3"}}, "topologyKey": "kubernetes.io/hostname"}],
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 50, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "app-4"}},
                                                           "topologyKey": "topology.kubernetes.io/zone"}}]
                },
                "podAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 80, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "app-5"}},
                                                           "topologyKey": "topology.kubernetes.io/zone"}}]
                }
            }
        }
    })
}

fn bench(c: &mut Criterion) {
    let snapshot = Snapshot::build(ClusterObjects {
        nodes: (0..NODES).map(node).collect(),
        pods: (0..PODS).map(pod).collect(),
        ..Default::default()
    });
    let settings = SchedulingSettings::default();
    let pod: Pod = serde_json::from_value(incoming_json()).unwrap();
    let names: Vec<String> = snapshot
        .nodes()
        .iter()
        .map(|n| n.node.name().to_string())
        .collect();
    let candidates: Vec<NodeAt<'_>> = snapshot
        .nodes()
        .iter()
        .enumerate()
        .map(|(i, n)| NodeAt::indexed(&n.node, i as u32))
        .collect();

    let mut group = c.benchmark_group("extender_5000_nodes_150000_pods");
    group.sample_size(30);
    group.bench_function("filter_prepare_and_check_all", |b| {
        b.iter(|| {
            let filters = PodFilters::prepare(&snapshot, &pod, &settings).unwrap();
            let feasible = names
                .iter()
                .filter(|n| {
                    snapshot.node_idx(n).is_some_and(|i| {
                        let node = &snapshot.nodes()[i as usize].node;
                        filters.check_at(NodeAt::indexed(node, i)).is_ok()
                    })
                })
                .count();
            black_box(feasible)
        })
    });
    // A watch event in the pod's namespace just before the request: the
    // request reads the new snapshot, whose label index for that namespace
    // was carried over from the old one (live mode's "latency does not
    // move"). The snapshot is returned, so freeing it (its copied node
    // list) is not timed: in live mode the writer frees retired snapshots.
    let mut moved = self::pod(7);
    moved
        .metadata
        .labels
        .insert("tier".into(), "frontend".into());
    let event = [PodChange::upsert(Arc::new(moved))];
    group.bench_function("filter_prepare_and_check_all_after_a_pod_event", |b| {
        b.iter_batched(
            || snapshot.with_pod_changes(&event),
            |fresh| {
                let filters = PodFilters::prepare(&fresh, &pod, &settings).unwrap();
                let nodes = fresh.nodes();
                let feasible = names
                    .iter()
                    .filter(|n| {
                        fresh.node_idx(n).is_some_and(|i| {
                            let at = NodeAt::indexed(&nodes[i as usize].node, i);
                            filters.check_at(at).is_ok()
                        })
                    })
                    .count();
                (feasible, fresh)
            },
            BatchSize::SmallInput,
        )
    });
    // The same pod restricted to three of the seven pools by required node
    // affinity: the spread rules must know which nodes take part, which is
    // the affinity decided for every node of the view.
    let mut pinned_json = incoming_json();
    pinned_json["spec"]["affinity"]["nodeAffinity"] = json!({
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "pool", "operator": "In", "values": ["pool-1", "pool-3", "pool-5"]}]}]}});
    let pinned: Pod = serde_json::from_value(pinned_json).unwrap();
    group.bench_function("filter_and_prioritize_with_required_node_affinity", |b| {
        b.iter(|| {
            let filters = PodFilters::prepare(&snapshot, &pinned, &settings).unwrap();
            let feasible: Vec<NodeAt<'_>> = candidates
                .iter()
                .copied()
                .filter(|&at| filters.check_at(at).is_ok())
                .collect();
            black_box(prioritize(&snapshot, &pinned, &feasible, &settings).unwrap())
        })
    });
    group.bench_function("filter_prepare_only", |b| {
        b.iter(|| black_box(PodFilters::prepare(&snapshot, &pod, &settings).unwrap()))
    });
    group.bench_function("prepare_spread_filter_only", |b| {
        b.iter(|| {
            black_box(
                topology_spread::prepare_filter(
                    &snapshot,
                    &pod,
                    &settings.default_spread_constraints,
                )
                .unwrap(),
            )
        })
    });
    group.bench_function("prepare_pod_affinity_filter_only", |b| {
        b.iter(|| black_box(pod_affinity::prepare_filter(&snapshot, &pod).unwrap()))
    });
    group.bench_function("prioritize_all", |b| {
        b.iter(|| black_box(prioritize(&snapshot, &pod, &candidates, &settings).unwrap()))
    });
    let config = Config::default();
    group.bench_function("explain_judge_all_and_prioritize_feasible", |b| {
        b.iter(|| black_box(explain(&snapshot, &pod, &config)))
    });
    // One server's cache of Nodes-mode texts, as AppState holds it.
    let recent = RecentNodes::default();
    let splitter = Splitter::default();
    let body = serde_json::to_vec(&json!({"Pod": incoming_json(), "NodeNames": names})).unwrap();
    group.bench_function("filter_handler_node_names_body_to_answer", |b| {
        b.iter(|| {
            let answer = filter(Some(&snapshot), &settings, &body, &recent, &splitter);
            black_box(serde_json::to_vec(&answer).unwrap())
        })
    });
    // Full Nodes mode: a NodeList of ~5 KB per node (labels, conditions,
    // images), about 25 MB for 5,000 nodes.
    let node_json = |i: usize| {
        let images: Vec<serde_json::Value> = (0..12)
            .map(|k| json!({"names": [format!("registry.example.com/team-{}/service-{k}@sha256:{:064x}", i % 12, i * 31 + k)],
                            "sizeBytes": 123_456_789 + k}))
            .collect();
        json!({"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": format!("node-{i:05}"), "labels": snapshot.nodes()[i].node.metadata.labels,
                            "annotations": {"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
               "spec": {"providerID": format!("aws:///eu-west-1a/i-{i:017x}")},
               "status": {"allocatable": {"cpu": "3920m", "memory": "15Gi", "pods": "110", "ephemeral-storage": "95Gi"},
                          "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"},
                          "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
                                          "lastHeartbeatTime": "2026-11-23T08:00:00Z", "lastTransitionTime": "2026-11-01T08:00:00Z"}],
                          "images": images,
                          "nodeInfo": {"kubeletVersion": "v1.34.1", "osImage": "Bottlerocket OS 1.30", "containerRuntimeVersion": "containerd://2.0.5"}}})
    };
    let nodes_body = serde_json::to_vec(&json!({"Pod": incoming_json(),
        "Nodes": {"apiVersion": "v1", "kind": "NodeList", "items": (0..NODES).map(node_json).collect::<Vec<_>>()}})).unwrap();
    println!("Nodes-mode body: {:.1} MB", nodes_body.len() as f64 / 1e6);
    group.bench_function("filter_handler_nodes_mode_body_to_answer", |b| {
        b.iter(|| {
            let answer = filter(Some(&snapshot), &settings, &nodes_body, &recent, &splitter);
            black_box(serde_json::to_vec(&answer).unwrap())
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
