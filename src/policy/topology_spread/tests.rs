//! Situations from upstream's TestSingleConstraint, TestMultipleConstraints
//! and TestPodTopologySpreadScore, plus the semantics' pitfalls.

use serde_json::{Value, json};

use crate::cluster::{ClusterObjects, NodeIdx, Snapshot};
use crate::config::scheduling::{DefaultSpreadConstraints, DefaultingType};
use crate::model::{MapSelectorOwner, Node, Pod, SelectorOwner};
use crate::policy::Code;
use crate::policy::domains::NodeAt;
use crate::testing::{MakePod, make_node, make_pod, snapshot};

use super::{prepare_filter, prepare_score};

/// name, nodes, existing pods, incoming pod, verdict per node.
type FilterCase = (&'static str, Vec<Node>, Vec<Pod>, Pod, [&'static str; 4]);
/// name, nodes, existing pods, incoming pod, candidates, normalized scores.
type ScoreCase = (
    &'static str,
    Vec<Node>,
    Vec<Pod>,
    Pod,
    Vec<&'static str>,
    Vec<i64>,
);

const ZONE: &str = "zone";
const HOST: &str = "kubernetes.io/hostname";

/// Four nodes: a, b in zone1; x, y in zone2.
fn four_nodes() -> Vec<Node> {
    vec![
        make_node("node-a").hostname().label(ZONE, "zone1").obj(),
        make_node("node-b").hostname().label(ZONE, "zone1").obj(),
        make_node("node-x").hostname().label(ZONE, "zone2").obj(),
        make_node("node-y").hostname().label(ZONE, "zone2").obj(),
    ]
}

/// A pod in `default` bound to `node` (unbound if empty), with `labels`.
pub fn existing(name: &str, node: &str, labels: Value) -> Pod {
    with_labels(make_pod("default", name), &labels)
        .node(node)
        .obj()
}

/// `n` pods labelled foo="" on each named node.
fn spread_pods(placement: &[(&str, usize)]) -> Vec<Pod> {
    placement
        .iter()
        .flat_map(|(n, count)| {
            (0..*count).map(move |i| existing(&format!("{n}-p{i}"), n, json!({"foo": ""})))
        })
        .collect()
}

/// The pod `default/incoming` with `labels`, these spread `constraints`
/// and any other `extra_spec` fields.
pub fn incoming(labels: Value, constraints: Value, extra_spec: Value) -> Pod {
    let pod = with_labels(make_pod("default", "incoming"), &labels)
        .spec("topologySpreadConstraints", constraints);
    extra_spec
        .as_object()
        .into_iter()
        .flatten()
        .fold(pod, |p, (field, value)| p.spec(field, value.clone()))
        .obj()
}

/// The labels of a JSON object (`{"foo": ""}`), the way these tables write them.
fn with_labels(pod: MakePod, labels: &Value) -> MakePod {
    labels
        .as_object()
        .into_iter()
        .flatten()
        .fold(pod, |p, (k, v)| p.label(k, v.as_str().unwrap_or_default()))
}

pub fn hard(key: &str, max_skew: i32) -> Value {
    json!({"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
           "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}})
}

fn soft(key: &str, max_skew: i32) -> Value {
    let mut c = hard(key, max_skew);
    c["whenUnsatisfiable"] = json!("ScheduleAnyway");
    c
}

/// "ok", "fail" (Unschedulable) or "unres" (UnschedulableAndUnresolvable)
/// per node of the snapshot, in name order.
fn verdicts(s: &Snapshot, pod: &Pod) -> Vec<&'static str> {
    let f = prepare_filter(s, pod, &DefaultSpreadConstraints::default()).unwrap();
    s.nodes()
        .iter()
        .enumerate()
        .map(|(i, n)| {
            f.as_ref().map(|f| {
                let by_labels = f.filter(&n.node);
                let indexed = f.filter_at(NodeAt::indexed(&n.node, i as NodeIdx));
                assert_eq!(indexed, by_labels, "{}", n.node.name());
                by_labels
            })
        })
        .map(|v| match v {
            None | Some(Ok(())) => "ok",
            Some(Err(e)) if e.code == Code::Unschedulable => "fail",
            Some(Err(_)) => "unres",
        })
        .collect()
}

#[test]
fn single_constraint_table() {
    let foo = json!({"foo": ""});
    let cases: Vec<FilterCase> = vec![
        (
            "no existing pods: every node fits",
            four_nodes(),
            vec![],
            incoming(foo.clone(), json!([hard(ZONE, 1)]), json!({})),
            ["ok", "ok", "ok", "ok"],
        ),
        (
            "pods in another namespace are not counted",
            four_nodes(),
            vec![make_pod("other", "o").label("foo", "").node("node-a").obj()],
            incoming(foo.clone(), json!([hard(HOST, 1)]), json!({})),
            ["ok", "ok", "ok", "ok"],
        ),
        (
            "zones spread 3/3: every node fits",
            four_nodes(),
            spread_pods(&[("node-a", 1), ("node-b", 2), ("node-x", 2), ("node-y", 1)]),
            incoming(foo.clone(), json!([hard(ZONE, 1)]), json!({})),
            ["ok", "ok", "ok", "ok"],
        ),
        (
            "zones spread 1/3 because node-b lacks the zone label",
            vec![
                make_node("node-a").hostname().label(ZONE, "zone1").obj(),
                make_node("node-b").hostname().obj(),
                make_node("node-x").hostname().label(ZONE, "zone2").obj(),
                make_node("node-y").hostname().label(ZONE, "zone2").obj(),
            ],
            spread_pods(&[("node-a", 1), ("node-b", 1), ("node-x", 1), ("node-y", 2)]),
            incoming(foo.clone(), json!([hard(ZONE, 1)]), json!({})),
            ["ok", "unres", "fail", "fail"],
        ),
        (
            "no node has the topology key: all unresolvable",
            four_nodes(),
            vec![],
            incoming(foo.clone(), json!([hard("rack", 1)]), json!({})),
            ["unres", "unres", "unres", "unres"],
        ),
        (
            "nodes spread 2/1/0/3: only node-x fits",
            four_nodes(),
            spread_pods(&[("node-a", 2), ("node-b", 1), ("node-y", 3)]),
            incoming(foo.clone(), json!([hard(HOST, 1)]), json!({})),
            ["fail", "fail", "ok", "fail"],
        ),
        (
            "nodes spread 2/1/0/3 with maxSkew 2: node-b and node-x fit",
            four_nodes(),
            spread_pods(&[("node-a", 2), ("node-b", 1), ("node-y", 3)]),
            incoming(foo.clone(), json!([hard(HOST, 2)]), json!({})),
            ["fail", "ok", "ok", "fail"],
        ),
        (
            "pod not matching its own selector adds no self count",
            four_nodes(),
            spread_pods(&[("node-a", 2), ("node-b", 1), ("node-y", 3)]),
            incoming(json!({"bar": ""}), json!([hard(HOST, 1)]), json!({})),
            ["fail", "ok", "ok", "fail"],
        ),
        (
            "node affinity (Honor): nodes outside it neither count nor set the minimum",
            four_nodes(),
            spread_pods(&[("node-a", 2), ("node-b", 1), ("node-y", 3)]),
            incoming(
                foo.clone(),
                json!([hard(HOST, 1)]),
                json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": HOST, "operator": "NotIn", "values": ["node-x"]}]}]}}}}),
            ),
            ["fail", "ok", "ok", "fail"],
        ),
        (
            "nodeAffinityPolicy Ignore: every node counts",
            four_nodes(),
            spread_pods(&[("node-a", 2), ("node-b", 1), ("node-y", 3)]),
            incoming(
                foo.clone(),
                json!([{"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule", "nodeAffinityPolicy": "Ignore",
                        "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}}]),
                json!({"nodeSelector": {"zone": "zone1"}}),
            ),
            ["fail", "fail", "ok", "fail"],
        ),
        (
            "terminating pods are not counted",
            four_nodes(),
            {
                let mut pods = spread_pods(&[("node-a", 1), ("node-b", 1), ("node-x", 1)]);
                let mut t = existing("gone", "node-y", json!({"foo": ""}));
                t.metadata.deletion_timestamp = Some("2024-01-01T00:00:00Z".parse().unwrap());
                pods.push(t);
                pods
            },
            incoming(foo.clone(), json!([hard(HOST, 1)]), json!({})),
            ["fail", "fail", "fail", "ok"],
        ),
        (
            "minDomains above the domain count forces a global minimum of 0",
            four_nodes(),
            spread_pods(&[("node-a", 1), ("node-b", 1), ("node-x", 1), ("node-y", 1)]),
            incoming(
                foo.clone(),
                json!([{"maxSkew": 2, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "minDomains": 3,
                        "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}}]),
                json!({}),
            ),
            ["fail", "fail", "fail", "fail"],
        ),
        (
            "minDomains met: the real global minimum applies",
            four_nodes(),
            spread_pods(&[("node-a", 1), ("node-b", 1), ("node-x", 1), ("node-y", 1)]),
            incoming(
                foo.clone(),
                json!([{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "minDomains": 2,
                        "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}}]),
                json!({}),
            ),
            ["ok", "ok", "ok", "ok"],
        ),
        (
            "matchLabelKeys narrows the selector to the incoming pod's value",
            four_nodes(),
            vec![
                existing("a1", "node-a", json!({"foo": "", "rev": "1"})),
                existing("a2", "node-a", json!({"foo": "", "rev": "1"})),
                existing("b1", "node-b", json!({"foo": "", "rev": "2"})),
                existing("x1", "node-x", json!({"foo": "", "rev": "2"})),
                existing("y1", "node-y", json!({"foo": "", "rev": "2"})),
            ],
            incoming(
                json!({"foo": "", "rev": "2"}),
                json!([{"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule", "matchLabelKeys": ["rev", "absent"],
                        "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}}]),
                json!({}),
            ),
            ["ok", "fail", "fail", "fail"],
        ),
        (
            "missing labelSelector counts nothing and never self-matches",
            four_nodes(),
            spread_pods(&[("node-a", 5)]),
            incoming(
                foo.clone(),
                json!([{"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule"}]),
                json!({}),
            ),
            ["ok", "ok", "ok", "ok"],
        ),
    ];
    for (name, nodes, pods, pod, want) in cases {
        let s = snapshot(nodes, pods);
        assert_eq!(verdicts(&s, &pod), want, "{name}");
    }
}

#[test]
fn node_taints_policy_honor_excludes_untolerated_nodes() {
    let mut nodes = four_nodes();
    nodes[2].spec.taints =
        serde_json::from_value(json!([{"key": "k", "effect": "NoSchedule"}])).unwrap();
    let pods = spread_pods(&[("node-a", 1), ("node-b", 1), ("node-y", 1)]);
    let constraint = |policy: &str| {
        json!([{"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule", "nodeTaintsPolicy": policy,
                "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}}])
    };
    let s = snapshot(nodes, pods);
    // Ignore (default): tainted node-x is an empty domain, minimum 0.
    let ignore = incoming(json!({"foo": ""}), constraint("Ignore"), json!({}));
    assert_eq!(verdicts(&s, &ignore), ["fail", "fail", "ok", "fail"]);
    // Honor: node-x is left out, the minimum is 1, everyone else fits.
    let honor = incoming(json!({"foo": ""}), constraint("Honor"), json!({}));
    assert_eq!(verdicts(&s, &honor), ["ok", "ok", "ok", "ok"]);
    // Honor with a toleration: node-x counts again.
    let tolerating = incoming(
        json!({"foo": ""}),
        constraint("Honor"),
        json!({"tolerations": [{"key": "k", "operator": "Exists"}]}),
    );
    assert_eq!(verdicts(&s, &tolerating), ["fail", "fail", "ok", "fail"]);
}

#[test]
fn multiple_constraints_table() {
    let foo = json!({"foo": ""});
    let cases: Vec<FilterCase> = vec![
        (
            "zone 3/3 and hostname 2/1/0/3: only node-x fits",
            four_nodes(),
            spread_pods(&[("node-a", 2), ("node-b", 1), ("node-y", 3)]),
            incoming(
                foo.clone(),
                json!([hard(ZONE, 1), hard(HOST, 1)]),
                json!({}),
            ),
            ["fail", "fail", "ok", "fail"],
        ),
        (
            "zone 3/4 and hostname 2/1/0/4: zone excludes zone2, hostname excludes a and b",
            four_nodes(),
            spread_pods(&[("node-a", 2), ("node-b", 1), ("node-y", 4)]),
            incoming(
                foo.clone(),
                json!([hard(ZONE, 1), hard(HOST, 1)]),
                json!({}),
            ),
            ["fail", "fail", "fail", "fail"],
        ),
        (
            "node-b lacks zone: its pods count for no constraint",
            vec![
                make_node("node-a").hostname().label(ZONE, "zone1").obj(),
                make_node("node-b").hostname().obj(),
                make_node("node-x").hostname().label(ZONE, "zone2").obj(),
                make_node("node-y").hostname().label(ZONE, "zone2").obj(),
            ],
            spread_pods(&[("node-a", 1), ("node-b", 4), ("node-x", 1), ("node-y", 1)]),
            incoming(
                foo.clone(),
                json!([hard(ZONE, 1), hard(HOST, 1)]),
                json!({}),
            ),
            ["ok", "unres", "fail", "fail"],
        ),
        (
            "different selectors: zone counts foo, hostname counts bar",
            four_nodes(),
            vec![
                existing("a1", "node-a", json!({"foo": ""})),
                existing("x1", "node-x", json!({"bar": ""})),
                existing("y1", "node-y", json!({"bar": ""})),
            ],
            incoming(
                json!({"foo": "", "bar": ""}),
                json!([hard(ZONE, 1), {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}}]),
                json!({}),
            ),
            ["fail", "fail", "fail", "fail"],
        ),
    ];
    for (name, nodes, pods, pod, want) in cases {
        let s = snapshot(nodes, pods);
        assert_eq!(verdicts(&s, &pod), want, "{name}");
    }
}

#[test]
fn skew_failure_names_the_domain_and_numbers() {
    let s = snapshot(four_nodes(), spread_pods(&[("node-a", 2), ("node-b", 1)]));
    let pod = incoming(json!({"foo": ""}), json!([hard(ZONE, 1)]), json!({}));
    let f = prepare_filter(&s, &pod, &DefaultSpreadConstraints::default())
        .unwrap()
        .unwrap();
    let err = f.filter(&s.node("node-a").unwrap().node).unwrap_err();
    assert_eq!(
        &*err.reason,
        "node(s) didn't match pod topology spread constraints: zone=zone1 would have skew 4 > maxSkew 1 (3 matching pods there, global minimum 0)"
    );
}

#[test]
fn invalid_selector_is_an_error_for_the_pod() {
    let s = snapshot(four_nodes(), vec![]);
    let pod = incoming(
        json!({}),
        json!([{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "In", "values": []}]}}]),
        json!({}),
    );
    assert!(prepare_filter(&s, &pod, &DefaultSpreadConstraints::default()).is_err());
}

#[test]
fn add_and_remove_pod_update_counts_like_preparation() {
    let s = snapshot(
        four_nodes(),
        spread_pods(&[("node-a", 1), ("node-b", 1), ("node-x", 1)]),
    );
    let pod = incoming(json!({"foo": ""}), json!([hard(HOST, 1)]), json!({}));
    let mut f = prepare_filter(&s, &pod, &DefaultSpreadConstraints::default())
        .unwrap()
        .unwrap();
    let n = |name: &str| s.node(name).unwrap().node.clone();
    assert!(f.filter(&n("node-a")).is_err());
    assert!(f.filter(&n("node-y")).is_ok());
    // Removing node-a's pod makes node-a the minimum; other nodes then fail
    // only if they would exceed 1 + 0.
    let victim = s.node("node-a").unwrap().pods[0].clone();
    let mut what_if = f.clone();
    what_if.remove_pod(&victim, &*n("node-a"));
    assert!(what_if.filter(&n("node-a")).is_ok());
    // The original state is untouched by the clone's changes.
    assert!(f.filter(&n("node-a")).is_err());
    // A pod added to node-y raises the minimum to 1: every node fits.
    f.add_pod(
        &existing("new", "node-y", json!({"foo": ""})),
        &*n("node-y"),
    );
    assert!(f.filter(&n("node-a")).is_ok());
    // Pods of another namespace or not selected change nothing.
    let mut other = existing("o", "node-y", json!({"foo": ""}));
    other.metadata.namespace = "other".into();
    f.remove_pod(&other, &*n("node-y"));
    f.remove_pod(&existing("nf", "node-y", json!({})), &*n("node-y"));
    assert!(f.filter(&n("node-a")).is_ok());

    // The same what-if on the view's node at its index (as preemption
    // passes it) counts into the same domains.
    let idx = s.node_idx("node-a").unwrap();
    let mut indexed = prepare_filter(&s, &pod, &DefaultSpreadConstraints::default())
        .unwrap()
        .unwrap();
    indexed.remove_pod(&victim, NodeAt::indexed(&n("node-a"), idx));
    for name in ["node-a", "node-b", "node-x", "node-y"] {
        assert_eq!(
            indexed.filter(&n(name)).is_ok(),
            what_if.filter(&n(name)).is_ok(),
            "{name}"
        );
    }
    assert!(f.filter(&n("node-a")).is_ok());
}

fn scores(
    s: &Snapshot,
    pod: &Pod,
    candidates: &[&str],
    defaults: &DefaultSpreadConstraints,
) -> Vec<i64> {
    let nodes: Vec<NodeAt<'_>> = candidates
        .iter()
        .map(|c| {
            let idx = s.node_idx(c).unwrap();
            NodeAt::indexed(&s.nodes()[idx as usize].node, idx)
        })
        .collect();
    let sc = prepare_score(s, pod, &nodes, defaults).unwrap().unwrap();
    let raw: Vec<i64> = nodes.iter().map(|&n| sc.score(n)).collect();
    let by_labels: Vec<i64> = nodes
        .iter()
        .map(|n| sc.score(NodeAt::unindexed(n.node())))
        .collect();
    assert_eq!(raw, by_labels, "indexed and by-label scores differ");
    sc.normalize(&nodes, &raw)
}

const ALL: [&str; 4] = ["node-a", "node-b", "node-x", "node-y"];

#[test]
fn score_table() {
    let d = DefaultSpreadConstraints::default();
    let foo = json!({"foo": ""});
    let cases: Vec<ScoreCase> = vec![
        (
            "no existing pods: every node scores 100",
            four_nodes(),
            vec![],
            incoming(foo.clone(), json!([soft(HOST, 1)]), json!({})),
            ALL.to_vec(),
            vec![100, 100, 100, 100],
        ),
        (
            "hostname counts 2/1/0/3 score 20/60/100/0",
            four_nodes(),
            spread_pods(&[("node-a", 2), ("node-b", 1), ("node-y", 3)]),
            incoming(foo.clone(), json!([soft(HOST, 1)]), json!({})),
            ALL.to_vec(),
            vec![20, 60, 100, 0],
        ),
        (
            "zone counts 3/1 over two domains score 25/25/100/100",
            four_nodes(),
            spread_pods(&[("node-a", 2), ("node-b", 1), ("node-y", 1)]),
            incoming(foo.clone(), json!([soft(ZONE, 1)]), json!({})),
            ALL.to_vec(),
            vec![25, 25, 100, 100],
        ),
        (
            "non-candidate nodes still count towards a candidate's domain",
            four_nodes(),
            spread_pods(&[("node-a", 3), ("node-y", 1)]),
            incoming(foo.clone(), json!([soft(ZONE, 1)]), json!({})),
            vec!["node-b", "node-x"],
            // weight ln 4: raw 4 and 1 → 100*(4+1-4)/4, 100*(4+1-1)/4
            vec![25, 100],
        ),
        (
            "a candidate lacking the key is ignored and scores 0",
            vec![
                make_node("node-a").hostname().label(ZONE, "zone1").obj(),
                make_node("node-b").hostname().obj(),
                make_node("node-x").hostname().label(ZONE, "zone2").obj(),
                make_node("node-y").hostname().label(ZONE, "zone2").obj(),
            ],
            spread_pods(&[("node-a", 1), ("node-x", 2)]),
            incoming(foo.clone(), json!([soft(ZONE, 1)]), json!({})),
            ALL.to_vec(),
            // weight ln 4 = 1.386: raw zone1 1, zone2 3
            vec![100, 0, 33, 33],
        ),
        (
            "maxSkew waters differences down",
            four_nodes(),
            spread_pods(&[("node-a", 2), ("node-b", 1), ("node-y", 3)]),
            incoming(foo.clone(), json!([soft(HOST, 3)]), json!({})),
            ALL.to_vec(),
            // ln 6 = 1.79: raw 6/4/2/7 → 100*(9-r)/7
            vec![42, 71, 100, 28],
        ),
    ];
    for (name, nodes, pods, pod, cands, want) in cases {
        let s = snapshot(nodes, pods);
        assert_eq!(scores(&s, &pod, &cands, &d), want, "{name}");
    }
}

#[test]
fn hard_constraints_do_not_score_and_soft_do_not_filter() {
    let s = snapshot(four_nodes(), spread_pods(&[("node-a", 5)]));
    let hard_only = incoming(json!({"foo": ""}), json!([hard(HOST, 1)]), json!({}));
    let nodes: Vec<NodeAt<'_>> = s.nodes().iter().map(|n| (&*n.node).into()).collect();
    assert!(
        prepare_score(&s, &hard_only, &nodes, &DefaultSpreadConstraints::default())
            .unwrap()
            .is_none()
    );
    let soft_only = incoming(json!({"foo": ""}), json!([soft(HOST, 1)]), json!({}));
    assert!(
        prepare_filter(&s, &soft_only, &DefaultSpreadConstraints::default())
            .unwrap()
            .is_none()
    );
}

fn with_owners(nodes: Vec<Node>, pods: Vec<Pod>) -> Snapshot {
    let svc: MapSelectorOwner = serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "default"}, "spec": {"selector": {"app": "web"}}}))
    .unwrap();
    let rs: SelectorOwner = serde_json::from_value(json!({
        "metadata": {"name": "web-rs", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"tier": "fe"}}}}))
    .unwrap();
    Snapshot::build(ClusterObjects {
        nodes,
        pods,
        services: vec![svc],
        replica_sets: vec![rs],
        ..Default::default()
    })
}

fn web_pod(name: &str, node: &str) -> Pod {
    existing(name, node, json!({"app": "web", "tier": "fe"}))
}

#[test]
fn system_defaults_spread_pods_selected_by_services_and_controllers() {
    let nodes = vec![
        make_node("node-a").hostname().label(ZONE, "zone1").obj(),
        make_node("node-b").hostname().zone("z1").obj(),
        make_node("node-x").hostname().zone("z2").obj(),
    ];
    let pods = vec![
        web_pod("w1", "node-b"),
        web_pod("w2", "node-b"),
        web_pod("w3", "node-a"),
    ];
    let s = with_owners(nodes, pods);
    let mut pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "w4", "namespace": "default", "labels": {"app": "web", "tier": "fe"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-rs", "controller": true}]}}))
    .unwrap();
    let defaults = DefaultSpreadConstraints::default();
    // node-a lacks the zone key but is still scored by hostname (and, as
    // upstream, escapes the zone term): weights ln 5, raw 4 / 12 / 6.
    let got = scores(&s, &pod, &["node-a", "node-b", "node-x"], &defaults);
    assert_eq!(got, [100, 33, 83]);

    // Without the service's labels and the controller, nothing selects the
    // pod: no defaults.
    pod.metadata.labels.clear();
    pod.metadata.owner_references.clear();
    let nodes: Vec<NodeAt<'_>> = s.nodes().iter().map(|n| (&*n.node).into()).collect();
    assert!(
        prepare_score(&s, &pod, &nodes, &defaults)
            .unwrap()
            .is_none()
    );
}

#[test]
fn default_selector_merges_services_and_the_replica_set() {
    let s = with_owners(vec![], vec![]);
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "w", "namespace": "default", "labels": {"app": "web", "tier": "fe"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-rs", "controller": true}]}}))
    .unwrap();
    let sel = super::common::default_selector(&s, &pod);
    assert_eq!(sel.to_string(), "app=web,tier in (fe)");
}

#[test]
fn list_defaults_require_every_key_and_can_filter() {
    let defaults: DefaultSpreadConstraints = DefaultSpreadConstraints {
        defaulting_type: DefaultingType::List,
        default_constraints: serde_json::from_value(json!([
            {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule"}
        ]))
        .unwrap(),
    };
    let s = with_owners(four_nodes(), vec![web_pod("w1", "node-a")]);
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "w2", "namespace": "default", "labels": {"app": "web"}}}))
    .unwrap();
    let f = prepare_filter(&s, &pod, &defaults).unwrap().unwrap();
    assert!(f.filter(&s.node("node-a").unwrap().node).is_err());
    assert!(f.filter(&s.node("node-b").unwrap().node).is_ok());
}

mod properties {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    /// A random cluster: nodes in up to 3 zones (some without a zone),
    /// pods labelled `app` a or b on random nodes.
    fn cluster() -> impl Strategy<Value = (Vec<Option<u8>>, Vec<(usize, bool)>)> {
        (1usize..8).prop_flat_map(|n| {
            (
                prop::collection::vec(prop::option::weighted(0.9, 0u8..3), n),
                prop::collection::vec((0..n, any::<bool>()), 0..20),
            )
        })
    }

    fn build(zones: &[Option<u8>], pods: &[(usize, bool)]) -> Snapshot {
        let nodes = zones
            .iter()
            .enumerate()
            .map(|(i, z)| {
                let zone = z.map(|z| format!("z{z}"));
                let labels: Vec<(&str, &str)> = zone.iter().map(|z| (ZONE, z.as_str())).collect();
                make_node(&format!("n{i}")).hostname().labels(&labels).obj()
            })
            .collect();
        let pods = pods
            .iter()
            .enumerate()
            .map(|(i, (n, a))| {
                existing(
                    &format!("p{i}"),
                    &format!("n{n}"),
                    json!({"app": if *a { "a" } else { "b" }}),
                )
            })
            .collect();
        snapshot(nodes, pods)
    }

    /// Brute force: matching pods per domain of `key` over nodes having it.
    fn domain_counts(s: &Snapshot, key: &str) -> BTreeMap<String, i64> {
        let mut counts = BTreeMap::new();
        for info in s.nodes() {
            if let Some(v) = info.node.label(key) {
                let n = info
                    .pods
                    .iter()
                    .filter(|p| p.metadata.labels["app"] == "a")
                    .count();
                *counts.entry(v.to_string()).or_insert(0) += n as i64;
            }
        }
        counts
    }

    proptest! {
        #[test]
        fn placement_allowed_by_filter_keeps_skew_within_max_skew(
            (zones, pods) in cluster(),
            max_skew in 1i32..3,
            by_zone in any::<bool>(),
        ) {
            let key = if by_zone { ZONE } else { HOST };
            let s = build(&zones, &pods);
            let constraint = json!([{"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
                                     "labelSelector": {"matchLabels": {"app": "a"}}}]);
            let pod = incoming(json!({"app": "a"}), constraint, json!({}));
            let f = prepare_filter(&s, &pod, &DefaultSpreadConstraints::default()).unwrap().unwrap();
            let before = domain_counts(&s, key);
            let balanced_before = before.values().max().zip(before.values().min())
                .is_none_or(|(max, min)| max - min <= i64::from(max_skew));
            for (i, info) in s.nodes().iter().enumerate() {
                let verdict = f.filter(&info.node);
                let Some(domain) = info.node.label(key) else {
                    prop_assert!(verdict.is_err());
                    continue;
                };
                if verdict.is_err() {
                    continue;
                }
                let mut placed = pods.clone();
                placed.push((i, true));
                let after = domain_counts(&build(&zones, &placed), key);
                let min = *after.values().min().unwrap();
                prop_assert!(after[domain] - min <= i64::from(max_skew), "{after:?} on {domain}");
                if balanced_before {
                    let max = *after.values().max().unwrap();
                    prop_assert!(max - min <= i64::from(max_skew), "{before:?} -> {after:?}");
                }
            }
        }
    }
}
