//! `PodFilters::admit_in_flight`: next to kube-scheduler's in-tree plugins
//! a pod in flight (placed by kube-scheduler, not yet seen bound) can only
//! make the filter more permissive, rule by rule (docs/burst-safety.md).

use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::cluster::{CandidateNodes, ClusterObjects, InFlightPod};
use crate::policy::topology_spread::tests::{existing, hard, incoming};
use crate::testing::make_node;

/// Zones z1 (nodes z1-a, z1-b), z2 (z2-a), z3 (z3-a).
fn nodes() -> Vec<Node> {
    ["z1-a", "z1-b", "z2-a", "z3-a"]
        .iter()
        .map(|n| make_node(n).hostname().label("zone", &n[..2]).obj())
        .collect()
}

/// A pod in flight (unbound in the view) with `labels`, that may be on
/// any of `candidates`.
fn in_flight(s: &Snapshot, name: &str, labels: Value, candidates: &[&str]) -> InFlightPod {
    let mut pod = existing(name, "", labels);
    if name.starts_with("other-ns") {
        pod.metadata.namespace = "other".into();
    }
    InFlightPod {
        pod: Arc::new(pod),
        candidates: CandidateNodes::named(s, candidates.iter().copied()),
    }
}

fn anti_affinity(key: &str) -> Value {
    json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"foo": ""}}, "topologyKey": key}]}}})
}

fn affinity(key: &str, app: &str) -> Value {
    json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}]}}})
}

/// The nodes that pass, in order.
fn passing(filters: &PodFilters, s: &Snapshot) -> Vec<String> {
    s.nodes()
        .iter()
        .filter(|n| filters.check(&n.node).is_ok())
        .map(|n| n.node.name().to_string())
        .collect()
}

#[test]
fn a_pod_in_flight_only_makes_the_filter_more_permissive() {
    let foo = || json!({"foo": ""});
    let spread = || incoming(foo(), json!([hard("zone", 1)]), json!({}));
    // (rule, bound pods, incoming pod, in flight: (name, labels, candidates),
    //  passing without them, passing with them)
    type Case = (
        &'static str,
        Vec<Pod>,
        Pod,
        Vec<(&'static str, Value, Vec<&'static str>)>,
        Vec<&'static str>,
        Vec<&'static str>,
    );
    let cases: Vec<Case> = vec![
        (
            "spread: a pod that may fill the only emptier zone raises the minimum",
            vec![existing("p1", "z1-a", foo()), existing("p2", "z2-a", foo())],
            spread(),
            vec![("f", foo(), vec!["z3-a"])],
            vec!["z3-a"],
            vec!["z1-a", "z1-b", "z2-a", "z3-a"],
        ),
        (
            "spread: a pod that can only go to a fuller zone raises nothing",
            vec![existing("p1", "z1-a", foo()), existing("p2", "z2-a", foo())],
            spread(),
            vec![("f", foo(), vec!["z1-a", "z2-a"])],
            vec!["z3-a"],
            vec!["z3-a"],
        ),
        (
            "spread: a pod is never counted in its candidates' zone",
            vec![],
            spread(),
            vec![("f", foo(), vec!["z1-a"])],
            vec!["z1-a", "z1-b", "z2-a", "z3-a"],
            vec!["z1-a", "z1-b", "z2-a", "z3-a"],
        ),
        (
            "spread: two empty zones need two pods to raise the minimum",
            vec![existing("p1", "z1-a", foo())],
            spread(),
            vec![("f", foo(), vec!["z2-a", "z3-a"])],
            vec!["z2-a", "z3-a"],
            vec!["z2-a", "z3-a"],
        ),
        (
            "spread: a pod its selector does not match raises nothing",
            vec![existing("p1", "z1-a", foo()), existing("p2", "z2-a", foo())],
            spread(),
            vec![("f", json!({"bar": ""}), vec!["z3-a"])],
            vec!["z3-a"],
            vec!["z3-a"],
        ),
        (
            "spread: a pod of another namespace raises nothing",
            vec![existing("p1", "z1-a", foo()), existing("p2", "z2-a", foo())],
            spread(),
            vec![("other-ns", foo(), vec!["z3-a"])],
            vec!["z3-a"],
            vec!["z3-a"],
        ),
        (
            "anti-affinity: a pod that may be on a node does not reject it",
            vec![existing("p1", "z1-a", foo())],
            incoming(foo(), json!([]), anti_affinity("kubernetes.io/hostname")),
            vec![("f", foo(), vec!["z1-b"])],
            vec!["z1-b", "z2-a", "z3-a"],
            vec!["z1-b", "z2-a", "z3-a"],
        ),
        (
            "affinity: a matching pod that may be in the zone satisfies it there",
            vec![existing("db1", "z2-a", json!({"app": "db"}))],
            incoming(foo(), json!([]), affinity("zone", "db")),
            vec![("f", json!({"app": "db"}), vec!["z1-b"])],
            vec!["z2-a"],
            vec!["z1-a", "z1-b", "z2-a"],
        ),
        (
            "affinity: a pod that does not match the term satisfies nothing",
            vec![existing("db1", "z2-a", json!({"app": "db"}))],
            incoming(foo(), json!([]), affinity("zone", "db")),
            vec![("f", json!({"app": "web"}), vec!["z1-b"])],
            vec!["z2-a"],
            vec!["z2-a"],
        ),
        (
            "affinity: the first pod of a group may still start anywhere",
            vec![],
            incoming(json!({"app": "db"}), json!([]), affinity("zone", "db")),
            vec![("f", json!({"app": "db"}), vec!["z1-b"])],
            vec!["z1-a", "z1-b", "z2-a", "z3-a"],
            vec!["z1-a", "z1-b", "z2-a", "z3-a"],
        ),
    ];
    for (rule, bound, pod, flying, before, after) in cases {
        let mut pods = bound;
        pods.extend(flying.iter().map(|(name, labels, _)| {
            let mut p = existing(name, "", labels.clone());
            if name.starts_with("other-ns") {
                p.metadata.namespace = "other".into();
            }
            p
        }));
        let s = Snapshot::build(ClusterObjects {
            nodes: nodes(),
            pods,
            ..Default::default()
        });
        let mut filters = PodFilters::prepare(&s, &pod, &SchedulingSettings::default()).unwrap();
        assert_eq!(passing(&filters, &s), before, "{rule}: without");
        let flying: Vec<InFlightPod> = flying
            .iter()
            .map(|(name, labels, candidates)| in_flight(&s, name, labels.clone(), candidates))
            .collect();
        filters.admit_in_flight(&s, &flying);
        assert_eq!(passing(&filters, &s), after, "{rule}: with");
    }
}

#[test]
fn a_nominated_pod_added_later_keeps_the_raised_minimum_exact() {
    let foo = json!({"foo": ""});
    let s = Snapshot::build(ClusterObjects {
        nodes: nodes(),
        pods: vec![
            existing("p1", "z1-a", foo.clone()),
            existing("f", "", foo.clone()),
        ],
        ..Default::default()
    });
    let pod = incoming(foo.clone(), json!([hard("zone", 1)]), json!({}));
    let mut filters = PodFilters::prepare(&s, &pod, &SchedulingSettings::default()).unwrap();
    filters.admit_in_flight(&s, &[in_flight(&s, "f", foo.clone(), &["z2-a"])]);
    // z1 1, z2 0 (+1 in flight), z3 0: the minimum stays 0.
    assert_eq!(passing(&filters, &s), ["z2-a", "z3-a"]);
    // A pod added in z3 (a nominated one): now the pod in flight may
    // lift the minimum to 1, and z1 passes.
    let z3 = &s.node("z3-a").unwrap().node;
    filters.add_pod(&existing("nominated", "z3-a", foo), &**z3);
    assert_eq!(passing(&filters, &s), ["z1-a", "z1-b", "z2-a", "z3-a"]);
}
