//! InterPodAffinity on a synthetic cluster at Kubernetes' published limits:
//! 5,000 nodes, 150,000 pods in 50 namespaces. 10% of the pods carry
//! required hostname anti-affinity against their own app, 10% preferred
//! zone affinity to another app of their namespace.
//!
//! Times the per-pod preparation plus the per-node work over every node,
//! as one extender request does.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use kube_arbiter::cluster::{ClusterObjects, Snapshot};
use kube_arbiter::model::pod::{Affinity, PodAffinity, PodAffinityTerm, WeightedPodAffinityTerm};
use kube_arbiter::model::{LabelSelector, Namespace, Node, Pod};
use kube_arbiter::policy::pod_affinity::{normalize, prepare_filter, prepare_score};

const NODES: usize = 5_000;
const PODS: usize = 150_000;
const NAMESPACES: usize = 50;
const APPS_PER_NAMESPACE: usize = 100;
const ZONES: usize = 10;
const HOSTNAME: &str = "kubernetes.io/hostname";
const ZONE: &str = "topology.kubernetes.io/zone";

fn labels(pairs: &[(&str, String)]) -> std::collections::BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn app_term(app: &str, topology_key: &str) -> PodAffinityTerm {
    PodAffinityTerm {
        label_selector: Some(LabelSelector::from_map(&labels(&[(
            "app",
            app.to_string(),
        )]))),
        topology_key: topology_key.to_string(),
        ..Default::default()
    }
}

fn node(i: usize) -> Node {
    let mut n = Node::default();
    n.metadata.name = format!("node-{i:05}");
    n.metadata.labels = labels(&[
        (HOSTNAME, n.metadata.name.clone()),
        (ZONE, format!("zone-{}", i % ZONES)),
        ("topology.kubernetes.io/region", "region-1".to_string()),
        (
            "node.kubernetes.io/instance-type",
            format!("type-{}", i % 7),
        ),
        ("kubernetes.io/os", "linux".to_string()),
    ])
    .into();
    n
}

fn pod(i: usize) -> Pod {
    let ns = i % NAMESPACES;
    let app = (i / NAMESPACES) % APPS_PER_NAMESPACE;
    let mut p = Pod::default();
    p.metadata.name = format!("pod-{i:06}");
    p.metadata.namespace = format!("ns-{ns:02}");
    p.metadata.uid = format!("uid-{i}");
    p.metadata.labels = labels(&[
        ("app", format!("app-{app:03}")),
        ("pod-template-hash", format!("h{}", app % 13)),
        ("tier", ["web", "api", "db"][app % 3].to_string()),
    ])
    .into();
    p.spec.node_name = format!("node-{:05}", (i * 7919) % NODES);
    p.status.phase = "Running".to_string();
    match i % 10 {
        0 => {
            p.spec.affinity = Some(
                Affinity {
                    pod_anti_affinity: Some(PodAffinity {
                        required_during_scheduling_ignored_during_execution: vec![app_term(
                            &format!("app-{app:03}"),
                            HOSTNAME,
                        )],
                        ..Default::default()
                    }),
                    ..Default::default()
                }
                .into(),
            )
        }
        1 => {
            p.spec.affinity = Some(
                Affinity {
                    pod_affinity: Some(PodAffinity {
                        preferred_during_scheduling_ignored_during_execution: vec![
                            WeightedPodAffinityTerm {
                                weight: 50,
                                pod_affinity_term: app_term(
                                    &format!("app-{:03}", (app + 1) % APPS_PER_NAMESPACE),
                                    ZONE,
                                ),
                            },
                        ],
                        ..Default::default()
                    }),
                    ..Default::default()
                }
                .into(),
            )
        }
        _ => {}
    }
    p
}

fn cluster() -> Snapshot {
    Snapshot::build(ClusterObjects {
        nodes: (0..NODES).map(node).collect(),
        pods: (0..PODS).map(pod).collect(),
        namespaces: (0..NAMESPACES)
            .map(|i| {
                let mut n = Namespace::default();
                n.metadata.name = format!("ns-{i:02}");
                n.metadata.labels = labels(&[("team", format!("team-{}", i % 5))]).into();
                n
            })
            .collect(),
        ..Default::default()
    })
}

/// A new replica of app-007 in ns-03: required hostname anti-affinity
/// against its app, preferred zone affinity to app-008, preferred hostname
/// anti-affinity against its tier.
fn incoming(all_namespaces: bool) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = "incoming".to_string();
    p.metadata.namespace = "ns-03".to_string();
    p.metadata.labels =
        labels(&[("app", "app-007".to_string()), ("tier", "api".to_string())]).into();
    let mut anti = app_term("app-007", HOSTNAME);
    if all_namespaces {
        anti.namespace_selector = Some(LabelSelector::default());
    }
    let mut tier = app_term("ignored", HOSTNAME);
    tier.label_selector = Some(LabelSelector::from_map(&labels(&[(
        "tier",
        "api".to_string(),
    )])));
    p.spec.affinity = Some(
        Affinity {
            pod_affinity: Some(PodAffinity {
                preferred_during_scheduling_ignored_during_execution: vec![
                    WeightedPodAffinityTerm {
                        weight: 80,
                        pod_affinity_term: app_term("app-008", ZONE),
                    },
                ],
                ..Default::default()
            }),
            pod_anti_affinity: Some(PodAffinity {
                required_during_scheduling_ignored_during_execution: vec![anti],
                preferred_during_scheduling_ignored_during_execution: vec![
                    WeightedPodAffinityTerm {
                        weight: 20,
                        pod_affinity_term: tier,
                    },
                ],
            }),
            ..Default::default()
        }
        .into(),
    );
    p
}

fn bench(c: &mut Criterion) {
    let snapshot = cluster();
    let nodes: Vec<&Node> = snapshot.nodes().iter().map(|n| &*n.node).collect();
    let mut g = c.benchmark_group("pod_affinity_5000_nodes_150000_pods");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));

    for (name, all) in [("own_namespace", false), ("all_namespaces", true)] {
        let pod = incoming(all);
        g.bench_function(format!("filter/{name}/prepare"), |b| {
            b.iter(|| prepare_filter(black_box(&snapshot), black_box(&pod)).unwrap())
        });
        let f = prepare_filter(&snapshot, &pod).unwrap().unwrap();
        let feasible = nodes.iter().filter(|n| f.filter(n).is_ok()).count();
        println!(
            "filter/{name}: {feasible} of {} nodes feasible",
            nodes.len()
        );
        g.bench_function(format!("filter/{name}/prepare_and_all_nodes"), |b| {
            b.iter(|| {
                let f = prepare_filter(&snapshot, black_box(&pod)).unwrap().unwrap();
                nodes.iter().filter(|n| f.filter(n).is_ok()).count()
            })
        });
    }
    let pod = incoming(false);
    let f = prepare_filter(&snapshot, &pod).unwrap().unwrap();
    g.bench_function("filter/all_nodes_only", |b| {
        b.iter(|| nodes.iter().filter(|n| f.filter(n).is_ok()).count())
    });
    g.bench_function("filter/clone_remove_one_pod_and_filter_one_node", |b| {
        let victim = &snapshot.nodes()[0].pods[0];
        let node = &snapshot.nodes()[0].node;
        b.iter(|| {
            let mut c = f.clone();
            c.remove_pod(victim, node);
            c.filter(node).is_ok()
        })
    });
    g.bench_function("score/prepare", |b| {
        b.iter(|| prepare_score(black_box(&snapshot), black_box(&pod), 1).unwrap())
    });
    g.bench_function("score/prepare_all_nodes_and_normalize", |b| {
        b.iter(|| {
            let s = prepare_score(&snapshot, black_box(&pod), 1)
                .unwrap()
                .unwrap();
            let raw: Vec<i64> = nodes.iter().map(|&n| s.score(n.into())).collect();
            normalize(&raw)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
