//! Property tests of the victim logic over generated clusters:
//! preemption never picks an equal-or-higher-priority pod, only pods of the
//! node, frees enough, and needs every victim; spread-preserving scale-in
//! never leaves a hard constraint above maxSkew when some choice would not.

use std::sync::Arc;

use jiff::Timestamp;
use proptest::prelude::*;
use serde_json::json;

use kube_arbiter::cluster::{ClusterObjects, Snapshot};
use kube_arbiter::config::SchedulingSettings;
use kube_arbiter::config::scheduling::DefaultSpreadConstraints;
use kube_arbiter::model::requests::{Requests, pod_requests};
use kube_arbiter::model::{Node, Pod};
use kube_arbiter::policy::filter::PodFilters;
use kube_arbiter::policy::preemption::Preemptor;
use kube_arbiter::policy::resources::NodeResources;
use kube_arbiter::policy::scale_in::{ScaleInRequest, scale_in};
use kube_arbiter::testing::{make_node, make_pod};

fn now() -> Timestamp {
    "2024-06-01T00:00:00Z".parse().unwrap()
}

fn node(name: &str, zone: &str, cpu: i64, mem: i64, pods: i64) -> Node {
    let (cpu, mem, pods) = (format!("{cpu}m"), mem.to_string(), pods.to_string());
    make_node(name)
        .hostname()
        .label("zone", zone)
        .allocatable(&[("cpu", &cpu), ("memory", &mem), ("pods", &pods)])
        .obj()
}

/// (priority, cpu m, memory, start offset or none)
type PodSpec = (i32, i64, i64, Option<i64>);

fn pod(name: &str, node: &str, (priority, cpu, mem, start): PodSpec) -> Pod {
    let start = start.map(|s| {
        Timestamp::from_second(1_700_000_000 + s)
            .unwrap()
            .to_string()
    });
    make_pod("ns", name)
        .uid(&format!("uid-{name}"))
        .label("app", "x")
        .node(node)
        .priority(priority)
        .req(cpu, mem)
        .phase("Running")
        .start(start.as_deref())
        .obj()
}

fn pod_spec() -> impl Strategy<Value = PodSpec> {
    (
        -3i32..4,
        0i64..600,
        0i64..600,
        proptest::option::of(0i64..50),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn preemption_victims_are_lower_priority_pods_of_the_node_that_make_room(
        existing in proptest::collection::vec(pod_spec(), 0..8),
        on_other_node in proptest::collection::vec(pod_spec(), 0..3),
        preemptor in pod_spec(),
        max_pods in 1i64..10,
    ) {
        let mut pods: Vec<Pod> = existing.iter().enumerate()
            .map(|(i, s)| pod(&format!("p{i}"), "n1", *s)).collect();
        pods.extend(on_other_node.iter().enumerate().map(|(i, s)| pod(&format!("o{i}"), "n2", *s)));
        let snapshot = Snapshot::build(ClusterObjects {
            nodes: vec![node("n1", "a", 1000, 1000, max_pods), node("n2", "b", 1000, 1000, 10)],
            pods,
            ..Default::default()
        });
        let incoming = pod("incoming", "", preemptor);
        let filters = PodFilters::prepare(&snapshot, &incoming, &SchedulingSettings::default()).unwrap();
        let info = snapshot.node("n1").unwrap();
        let mut p = Preemptor::new(&snapshot, &incoming, filters, now());
        let fits_with = |kept: &[&Arc<Pod>]| {
            let mut requested = Requests::default();
            for q in kept {
                requested.add(&pod_requests(q));
            }
            NodeResources::new(&info.node.status.allocatable, &requested, kept.len())
                .fits(&pod_requests(&incoming))
                .is_ok()
        };
        let lower: Vec<&Arc<Pod>> = info.pods.iter().filter(|q| q.priority() < incoming.priority()).collect();
        let higher: Vec<&Arc<Pod>> = info.pods.iter().filter(|q| q.priority() >= incoming.priority()).collect();
        match p.select_victims(snapshot.node_idx("n1").unwrap()) {
            Ok(v) => {
                prop_assert!(!v.pods.is_empty());
                let victims: Vec<&Arc<Pod>> = v.pods.iter().map(|x| &info.pods[x.position as usize]).collect();
                for (victim, picked) in victims.iter().zip(&v.pods) {
                    prop_assert!(victim.priority() < incoming.priority());
                    prop_assert_eq!(victim.priority(), picked.priority);
                    prop_assert_eq!(&victim.spec.node_name, "n1");
                }
                let kept: Vec<&Arc<Pod>> = info.pods.iter()
                    .filter(|q| !victims.iter().any(|x| x.metadata.uid == q.metadata.uid)).collect();
                prop_assert!(fits_with(&kept), "preemptor must fit once the victims are gone");
                for victim in victims {
                    let mut with_one_back = kept.clone();
                    with_one_back.push(victim);
                    prop_assert!(!fits_with(&with_one_back), "victim {} was not needed", victim.metadata.name);
                }
                for pair in v.pods.windows(2) {
                    prop_assert!(pair[0].priority >= pair[1].priority, "most important first");
                }
                prop_assert!(v.num_pdb_violations <= v.pods.len());
            }
            Err(_) => {
                let all: Vec<&Arc<Pod>> = info.pods.iter().collect();
                prop_assert!(lower.is_empty() || !fits_with(&higher) || fits_with(&all));
            }
        }
    }
}

/// A workload spread over zones with one hard zone constraint, plus pods of
/// other workloads that match the selector too.
fn spread_cluster(
    per_node: &[(usize, usize)],
    zones: usize,
    max_skew: i32,
) -> (Snapshot, Vec<Pod>) {
    let nodes: Vec<Node> = (0..per_node.len())
        .map(|i| {
            node(
                &format!("n{i}"),
                &format!("z{}", i % zones),
                10_000,
                10_000,
                100,
            )
        })
        .collect();
    let mut workload = Vec::new();
    let mut others = Vec::new();
    for (i, &(mine, theirs)) in per_node.iter().enumerate() {
        for k in 0..mine {
            let mut p = pod(
                &format!("w-{i}-{k}"),
                &format!("n{i}"),
                (0, 10, 10, Some((i * 7 + k) as i64)),
            );
            p.spec.topology_spread_constraints = serde_json::from_value(json!([{
                "maxSkew": max_skew, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "x"}}}]))
            .unwrap();
            p.metadata.owner_references = serde_json::from_value(json!([
                {"kind": "ReplicaSet", "name": "w", "controller": true}]))
            .unwrap();
            workload.push(p);
        }
        for k in 0..theirs {
            others.push(pod(
                &format!("other-{i}-{k}"),
                &format!("n{i}"),
                (0, 10, 10, Some(1)),
            ));
        }
    }
    let mut all = workload.clone();
    all.extend(others);
    let snapshot = Snapshot::build(ClusterObjects {
        nodes,
        pods: all,
        ..Default::default()
    });
    (snapshot, workload)
}

/// Zone skew with `removed` gone (every zone has a node, so min counts 0).
fn skew_after(snapshot: &Snapshot, zones: usize, removed: &[&str]) -> i64 {
    let mut counts = vec![0i64; zones];
    for info in snapshot.nodes() {
        let z: usize = info.node.metadata.labels["zone"][1..].parse().unwrap();
        counts[z] += info
            .pods
            .iter()
            .filter(|p| !removed.contains(&p.metadata.name.as_str()))
            .count() as i64;
    }
    counts.iter().max().unwrap() - counts.iter().min().unwrap()
}

fn subsets(n: usize, k: usize) -> Vec<Vec<usize>> {
    (0u32..(1 << n))
        .filter(|m| m.count_ones() as usize == k)
        .map(|m| (0..n).filter(|i| m & (1 << i) != 0).collect())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn preserve_spread_reaches_the_smallest_possible_skew(
        per_node in proptest::collection::vec((0usize..4, 0usize..2), 2..6),
        zones in 2usize..4,
        max_skew in 1i32..3,
        count_seed in 0usize..100,
    ) {
        let zones = zones.min(per_node.len());
        let (snapshot, workload) = spread_cluster(&per_node, zones, max_skew);
        prop_assume!(!workload.is_empty() && workload.len() <= 12);
        let count = count_seed % (workload.len() + 1);
        let refs: Vec<&Pod> = workload.iter().collect();
        let defaults = DefaultSpreadConstraints::default();
        let out = scale_in(&snapshot, &refs, ScaleInRequest { count, preserve_spread: Some(&defaults), now: now() });
        prop_assert_eq!(out.victims.len(), count);
        let ours: Vec<&str> = out.victims.iter().map(|v| v.pod.metadata.name.as_str()).collect();
        let our_skew = skew_after(&snapshot, zones, &ours);
        let best = subsets(workload.len(), count).iter().map(|s| {
            let names: Vec<&str> = s.iter().map(|&i| workload[i].metadata.name.as_str()).collect();
            skew_after(&snapshot, zones, &names)
        }).min().unwrap();
        if best <= i64::from(max_skew) {
            prop_assert!(our_skew <= i64::from(max_skew), "compliant choice exists (skew {best}), ours {our_skew}");
        }
        prop_assert_eq!(our_skew, best);
        let plan = out.spread.unwrap();
        prop_assert_eq!(plan.constraints[0].after, our_skew);
    }
}

/// Node skew (hostname domains) with `removed` gone.
fn node_skew_after(snapshot: &Snapshot, removed: &[&str]) -> i64 {
    let counts: Vec<i64> = snapshot
        .nodes()
        .iter()
        .map(|info| {
            info.pods
                .iter()
                .filter(|p| !removed.contains(&p.metadata.name.as_str()))
                .count() as i64
        })
        .collect();
    counts.iter().max().unwrap() - counts.iter().min().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn preserve_spread_keeps_zone_and_node_constraints_when_possible(
        per_node in proptest::collection::vec((0usize..4, 0usize..2), 2..6),
        zones in 2usize..4,
        zone_skew in 1i32..3,
        node_skew in 1i32..3,
        count_seed in 0usize..100,
    ) {
        let zones = zones.min(per_node.len());
        let (snapshot, mut workload) = spread_cluster(&per_node, zones, zone_skew);
        prop_assume!(!workload.is_empty() && workload.len() <= 12);
        for p in &mut workload {
            p.spec.topology_spread_constraints.extend(serde_json::from_value::<Vec<_>>(json!([{
                "maxSkew": node_skew, "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "x"}}}]))
                .unwrap());
        }
        let count = count_seed % (workload.len() + 1);
        let refs: Vec<&Pod> = workload.iter().collect();
        let defaults = DefaultSpreadConstraints::default();
        let out = scale_in(&snapshot, &refs, ScaleInRequest { count, preserve_spread: Some(&defaults), now: now() });
        let ours: Vec<&str> = out.victims.iter().map(|v| v.pod.metadata.name.as_str()).collect();
        let ok = |names: &[&str]| {
            skew_after(&snapshot, zones, names) <= i64::from(zone_skew)
                && node_skew_after(&snapshot, names) <= i64::from(node_skew)
        };
        let possible = subsets(workload.len(), count).iter().any(|s| {
            let names: Vec<&str> = s.iter().map(|&i| workload[i].metadata.name.as_str()).collect();
            ok(&names)
        });
        if possible {
            prop_assert!(ok(&ours), "a compliant choice exists; ours {:?}", ours);
        }
    }
}
