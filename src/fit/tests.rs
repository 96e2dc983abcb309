//! Placement tables: the order replicas take, ties, resources counted as
//! replicas land, and preemption.

use serde_json::{Value, json};

use super::*;
use crate::cluster::ClusterObjects;
use crate::model::{Node, PodDisruptionBudget};
use crate::testing::{make_node, make_pod};

const GI: i64 = 1 << 30;

/// A Deployment of `replicas` pods of app=web in namespace shop, each
/// requesting `cpu_milli`, with `extra` merged into the template's spec.
fn deployment(replicas: u32, cpu_milli: i64, extra: Value) -> Workload {
    let mut spec = json!({"containers": [{"name": "c", "resources": {"requests": {
        "cpu": format!("{cpu_milli}m"), "memory": "1Gi"}}}]});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    workload::workload(json!({"kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": spec}}}))
    .unwrap()
}

fn cluster(nodes: Vec<Node>, pods: Vec<Pod>, pdbs: Vec<PodDisruptionBudget>) -> Snapshot {
    Snapshot::build(ClusterObjects {
        nodes,
        pods,
        pdbs,
        ..Default::default()
    })
}

fn placed(snapshot: &Snapshot, mut w: Workload, options: FitOptions) -> FitAnswer {
    admit(&mut w, snapshot).unwrap();
    fit(snapshot, &w, options, &Config::default()).unwrap()
}

fn nodes_in_order(a: &FitAnswer) -> Vec<&str> {
    a.placements.iter().map(|p| p.node.as_str()).collect()
}

#[test]
fn placement_table() {
    struct Case {
        name: &'static str,
        nodes: Vec<Node>,
        workload: Workload,
        want_order: Vec<&'static str>,
        want_unplaced: u32,
    }
    let node = |name: &str, cpu: i64| make_node(name).hostname().capacity(cpu, 16 * GI).obj();
    let cases = vec![
        Case {
            name: "equal nodes: ties go to the first name, whatever the view's order",
            nodes: vec![node("c", 4000), node("a", 4000), node("b", 4000)],
            workload: deployment(1, 1000, json!({})),
            want_order: vec!["a"],
            want_unplaced: 0,
        },
        Case {
            name: "each replica counts for the next: least allocated alternates",
            nodes: vec![node("a", 4000), node("b", 4000)],
            workload: deployment(4, 1000, json!({})),
            want_order: vec!["a", "b", "a", "b"],
            want_unplaced: 0,
        },
        Case {
            name: "the node with more room is taken first",
            nodes: vec![node("small", 2000), node("large", 8000)],
            workload: deployment(1, 1000, json!({})),
            want_order: vec!["large"],
            want_unplaced: 0,
        },
        Case {
            name: "resources run out: the rest do not fit",
            nodes: vec![node("a", 2000), node("b", 1000)],
            workload: deployment(5, 1000, json!({})),
            want_order: vec!["a", "b", "a"],
            want_unplaced: 2,
        },
        Case {
            name: "required anti-affinity to itself: one per node",
            nodes: vec![node("a", 8000), node("b", 8000)],
            workload: deployment(
                3,
                100,
                json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}}),
            ),
            want_order: vec!["a", "b"],
            want_unplaced: 1,
        },
        Case {
            name: "preferred node affinity outweighs room (kube-arbiter's answer weighs 50 a step)",
            nodes: vec![
                node("big", 16000),
                make_node("ssd")
                    .hostname()
                    .label("disk", "ssd")
                    .capacity(2000, 16 * GI)
                    .obj(),
            ],
            workload: deployment(
                3,
                500,
                json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 10, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}}]}}}),
            ),
            want_order: vec!["ssd", "ssd", "ssd"],
            want_unplaced: 0,
        },
    ];
    for case in cases {
        let s = cluster(case.nodes, vec![], vec![]);
        let a = placed(&s, case.workload, FitOptions::default());
        assert_eq!(nodes_in_order(&a), case.want_order, "{}", case.name);
        assert_eq!(a.unplaced, case.want_unplaced, "{}", case.name);
        assert_eq!(
            a.placed + a.unplaced,
            a.replicas,
            "{}: every replica is counted once",
            case.name
        );
    }
}

#[test]
fn hard_zone_spread_fills_zones_evenly_and_counts_them() {
    let nodes: Vec<Node> = ["a1", "a2", "b1", "c1"]
        .iter()
        .map(|n| {
            make_node(n)
                .hostname()
                .zone(&format!("z-{}", &n[..1]))
                .capacity(8000, 16 * GI)
                .obj()
        })
        .collect();
    let s = cluster(nodes, vec![], vec![]);
    let spread = json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}}}]});
    let a = placed(&s, deployment(6, 100, spread), FitOptions::default());
    let zones: Vec<(&str, u32)> = a
        .zones
        .iter()
        .map(|c| (c.name.as_str(), c.replicas))
        .collect();
    assert_eq!(zones, [("z-a", 2), ("z-b", 2), ("z-c", 2)]);
    assert_eq!(a.nodes.iter().map(|c| c.replicas).sum::<u32>(), 6);
}

#[test]
fn a_replica_that_fits_nowhere_is_explained_as_failed_scheduling() {
    let s = cluster(
        vec![
            make_node("a").hostname().capacity(1000, 16 * GI).obj(),
            make_node("gpu")
                .hostname()
                .capacity(8000, 16 * GI)
                .taint("dedicated", "gpu", "NoSchedule")
                .obj(),
        ],
        vec![],
        vec![],
    );
    let a = placed(&s, deployment(3, 1000, json!({})), FitOptions::default());
    assert_eq!((a.placed, a.unplaced), (1, 2));
    let u = a.first_unschedulable.unwrap();
    assert_eq!(u.replica, 1);
    assert_eq!(
        u.summary,
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s)."
    );
    assert_eq!(u.nodes.len(), 2);
    assert_eq!(
        u.preemption.as_deref(),
        Some(
            "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, \
             1 Preemption is not helpful for scheduling."
        )
    );
}

/// n1 runs a low-priority batch pod that takes most of its cpu, guarded
/// by a budget that allows no disruption; n2 runs a pod that outranks the
/// workload.
fn crowded() -> Snapshot {
    let node = |name: &str| make_node(name).hostname().capacity(4000, 16 * GI).obj();
    let pod = |name: &str, node: &str, priority: i32| {
        make_pod("batch", name)
            .uid(&format!("uid-{name}"))
            .label("app", name)
            .node(node)
            .priority(priority)
            .req(3500, GI)
            .phase("Running")
            .obj()
    };
    let pdb: PodDisruptionBudget = serde_json::from_value(json!({
        "metadata": {"name": "low", "namespace": "batch"},
        "spec": {"selector": {"matchLabels": {"app": "low"}}},
        "status": {"disruptionsAllowed": 0}}))
    .unwrap();
    let classes = serde_json::from_value(json!([
        {"metadata": {"name": "urgent"}, "value": 1000},
        {"metadata": {"name": "urgent-never"}, "value": 1000, "preemptionPolicy": "Never"}]))
    .unwrap();
    Snapshot::build(ClusterObjects {
        nodes: vec![node("n1"), node("n2")],
        pods: vec![pod("low", "n1", 10), pod("high", "n2", 1_000_000)],
        pdbs: vec![pdb],
        priority_classes: classes,
        ..Default::default()
    })
}

#[test]
fn preemption_places_a_replica_evicting_lower_priority_pods_and_flags_budgets() {
    let s = crowded();
    let urgent = json!({"priorityClassName": "urgent"});
    let a = placed(
        &s,
        deployment(2, 2000, urgent.clone()),
        FitOptions::default(),
    );
    assert_eq!((a.placed, a.placed_by_preemption, a.unplaced), (2, 1, 0));
    assert_eq!(nodes_in_order(&a), ["n1", "n1"]);
    assert!(a.placements[0].preempted && !a.placements[1].preempted);
    assert_eq!(a.victims.len(), 1);
    let v = &a.victims[0];
    assert_eq!(
        (
            v.pod.as_str(),
            v.node.as_str(),
            v.priority,
            v.breaks_pdb,
            v.for_replica
        ),
        ("batch/low", "n1", 10, true, 0)
    );
    assert_eq!(a.first_unschedulable.as_ref().unwrap().replica, 0);
    assert!(a.first_unplaced.is_none());

    // A third replica: no room left and nothing lower to evict.
    let three = placed(
        &s,
        deployment(3, 2000, urgent.clone()),
        FitOptions::default(),
    );
    assert_eq!((three.placed, three.unplaced), (2, 1));
    let stopped = three.first_unplaced.unwrap();
    assert_eq!(stopped.replica, 2);
    assert_eq!(
        stopped.summary,
        "0/2 nodes are available: 2 Insufficient cpu."
    );
    assert_eq!(
        stopped.preemption.as_deref(),
        Some(
            "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
        )
    );

    let off = placed(
        &s,
        deployment(2, 2000, urgent),
        FitOptions {
            preempt: Some(false),
            ..Default::default()
        },
    );
    assert_eq!((off.placed, off.unplaced), (0, 2));
    assert!(off.victims.is_empty());
    assert!(off.first_unschedulable.unwrap().preemption.is_none());

    let never = placed(
        &s,
        deployment(1, 2000, json!({"priorityClassName": "urgent-never"})),
        FitOptions::default(),
    );
    assert!(!never.preempt, "preemptionPolicy Never turns it off");
    assert_eq!(never.unplaced, 1);
}

#[test]
fn replicas_default_to_the_manifests_and_can_be_asked_for() {
    let s = cluster(
        vec![make_node("a").hostname().capacity(8000, 16 * GI).obj()],
        vec![],
        vec![],
    );
    assert_eq!(
        placed(&s, deployment(3, 100, json!({})), FitOptions::default()).placed,
        3
    );
    let asked = FitOptions {
        replicas: Some(5),
        ..Default::default()
    };
    let a = placed(&s, deployment(3, 100, json!({})), asked);
    assert_eq!((a.replicas, a.placed), (5, 5));
    let none = FitOptions {
        replicas: Some(0),
        ..Default::default()
    };
    let a = placed(&s, deployment(3, 100, json!({})), none);
    assert_eq!((a.replicas, a.placed, a.unplaced), (0, 0, 0));
}

#[test]
fn an_invalid_template_is_an_error_naming_the_rule() {
    let s = cluster(vec![make_node("a").hostname().obj()], vec![], vec![]);
    let bad = json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}}]});
    let mut w = deployment(1, 100, bad);
    admit(&mut w, &s).unwrap();
    let err = fit(&s, &w, FitOptions::default(), &Config::default()).unwrap_err();
    assert!(
        err.starts_with("Deployment shop/web: PodTopologySpread:"),
        "{err}"
    );
}
