//! Score tables: the situations and expectations of upstream's
//! TestPreferredAffinity and TestPreferredAffinityWithHardPodAffinitySymmetricWeight
//! (normalised scores), re-expressed with our builders.

use serde_json::json;

use super::*;
use crate::model::{Namespace, Node, Pod};
use crate::policy::domains::NodeAt;
use crate::testing::{
    HOSTNAME, MakePod, make_node, make_pod, namespace, snapshot_with_namespaces, term,
};

const NS: &str = "default";

struct Case {
    name: &'static str,
    pod: Pod,
    pods: Vec<Pod>,
    nodes: Vec<Node>,
    hard_weight: i32,
    /// Normalised scores per node; `None` when the plugin is skipped.
    want: Option<Vec<i64>>,
}

fn namespaces() -> Vec<Namespace> {
    vec![
        namespace("subteam1.team1", &[("team", "team1")]),
        namespace("subteam2.team1", &[("team", "team1")]),
        namespace("subteam1.team2", &[("team", "team2")]),
        namespace("subteam2.team2", &[("team", "team2")]),
    ]
}

fn run(cases: Vec<Case>) {
    for c in cases {
        let s = snapshot_with_namespaces(c.nodes.clone(), c.pods, namespaces());
        let prepared =
            prepare_score(&s, &c.pod, c.hard_weight).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let got = prepared.map(|sc| {
            let raw: Vec<i64> = c
                .nodes
                .iter()
                .map(|n| {
                    let idx = s.node_idx(n.name()).unwrap();
                    let indexed = sc.score(NodeAt::indexed(&s.nodes()[idx as usize].node, idx));
                    let by_labels = sc.score(n.into());
                    assert_eq!(indexed, by_labels, "{}: {}", c.name, n.name());
                    by_labels
                })
                .collect();
            normalize(&raw)
        });
        assert_eq!(got, c.want, "{}", c.name);
    }
}

fn p(name: &str) -> MakePod {
    make_pod(NS, name)
}

const S1: &[(&str, &str)] = &[("security", "S1")];
const S2: &[(&str, &str)] = &[("security", "S2")];
const CHINA: &[(&str, &str)] = &[("region", "China")];
const INDIA: &[(&str, &str)] = &[("region", "India")];
const AZ1: &[(&str, &str)] = &[("az", "az1")];
const AZ2: &[(&str, &str)] = &[("az", "az2")];
const CHINA_AZ1: &[(&str, &str)] = &[("region", "China"), ("az", "az1")];

fn nodes(labels: &[&[(&str, &str)]]) -> Vec<Node> {
    labels
        .iter()
        .enumerate()
        .map(|(i, l)| make_node(&format!("node{}", i + 1)).labels(l).obj())
        .collect()
}

fn stay_with_s1_in_region(b: MakePod) -> MakePod {
    b.preferred_affinity(5, term("security", "In", &["S1"], "region"))
}

fn stay_with_s2_in_region(b: MakePod) -> MakePod {
    b.preferred_affinity(6, term("security", "In", &["S2"], "region"))
}

fn away_from_s1_in_az(b: MakePod) -> MakePod {
    b.preferred_anti_affinity(5, term("security", "In", &["S1"], "az"))
}

fn away_from_s2_in_az(b: MakePod) -> MakePod {
    b.preferred_anti_affinity(5, term("security", "In", &["S2"], "az"))
}

fn stay_with_s1_away_from_s2(b: MakePod) -> MakePod {
    b.preferred_affinity(8, term("security", "In", &["S1"], "region"))
        .preferred_anti_affinity(5, term("security", "In", &["S2"], "az"))
}

fn team1_or_subteam2_team2() -> serde_json::Value {
    json!({
        "labelSelector": {"matchExpressions": [{"key": "security", "operator": "In", "values": ["S1"]}]},
        "namespaces": ["subteam2.team2"],
        "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "In", "values": ["team1"]}]},
        "topologyKey": "region",
    })
}

fn on(b: MakePod, node: &str) -> Pod {
    b.node(node).obj()
}

fn case(
    name: &'static str,
    pod: MakePod,
    pods: Vec<Pod>,
    nodes: Vec<Node>,
    want: Option<Vec<i64>>,
) -> Case {
    Case {
        name,
        pod: pod.obj(),
        pods,
        nodes,
        hard_weight: 1,
        want,
    }
}

#[test]
fn preferred_affinity() {
    let affinity3 = |b: MakePod| {
        b.preferred_affinity(
            8,
            json!({"labelSelector": {"matchExpressions": [
                {"key": "security", "operator": "NotIn", "values": ["S1"]},
                {"key": "security", "operator": "In", "values": ["S2"]}]}, "topologyKey": "region"}),
        )
        .preferred_affinity(
            2,
            json!({"labelSelector": {"matchExpressions": [
                {"key": "security", "operator": "Exists"},
                {"key": "wrongkey", "operator": "DoesNotExist"}]}, "topologyKey": "region"}),
        )
    };
    let hard = |b: MakePod| {
        b.required_affinity(term("security", "In", &["S1", "value2"], "region")).required_affinity(json!({
            "labelSelector": {"matchExpressions": [
                {"key": "security", "operator": "Exists"}, {"key": "wrongkey", "operator": "DoesNotExist"}]},
            "topologyKey": "region"}))
    };
    run(vec![
        case(
            "no terms anywhere: skipped",
            p("in").labels(S1),
            vec![],
            nodes(&[CHINA, INDIA, AZ1]),
            None,
        ),
        case(
            "the domain holding a matching pod scores highest",
            stay_with_s1_in_region(p("in").labels(S1)),
            vec![
                on(p("a").labels(S1), "node1"),
                on(p("b").labels(S2), "node2"),
                on(p("c").labels(S1), "node3"),
            ],
            nodes(&[CHINA, INDIA, AZ1]),
            Some(vec![100, 0, 0]),
        ),
        case(
            "every node of the matching domain shares the score",
            stay_with_s1_in_region(p("in")),
            vec![on(p("a").labels(S1), "node1")],
            nodes(&[CHINA, CHINA_AZ1, INDIA]),
            Some(vec![100, 100, 0]),
        ),
        case(
            "the region with more matching pods scores higher",
            stay_with_s2_in_region(p("in").labels(S1)),
            ["node1", "node1", "node2", "node3", "node4", "node5"]
                .iter()
                .enumerate()
                .map(|(i, n)| on(p(&format!("p{i}")).labels(S2), n))
                .collect(),
            nodes(&[CHINA, INDIA, CHINA, CHINA, INDIA]),
            Some(vec![100, 0, 100, 100, 0]),
        ),
        case(
            "operators and weights add up per domain",
            affinity3(p("in").labels(S1)),
            vec![
                on(p("a").labels(S1), "node1"),
                on(p("b").labels(S2), "node2"),
                on(p("c").labels(S1), "node3"),
            ],
            nodes(&[CHINA, INDIA, AZ1]),
            Some(vec![20, 100, 0]),
        ),
        case(
            "symmetry: existing pods' preferred affinity selecting the pod",
            p("in").labels(S2),
            vec![
                on(stay_with_s1_in_region(p("a").labels(S1)), "node1"),
                on(stay_with_s2_in_region(p("b").labels(S2)), "node2"),
            ],
            nodes(&[CHINA, INDIA, AZ1]),
            Some(vec![0, 100, 0]),
        ),
        case(
            "symmetry: existing preferred affinity with a namespaceSelector on the pod's namespace",
            make_pod("subteam1.team1", "in").labels(S1),
            vec![
                on(
                    p("a")
                        .labels(S1)
                        .preferred_affinity(5, team1_or_subteam2_team2()),
                    "node1",
                ),
                on(stay_with_s2_in_region(p("b").labels(S2)), "node2"),
            ],
            nodes(&[CHINA, INDIA, AZ1]),
            Some(vec![100, 0, 0]),
        ),
        case(
            "symmetry: existing preferred anti-affinity with a namespaceSelector on the pod's namespace",
            make_pod("subteam1.team1", "in").labels(S1),
            vec![
                on(
                    p("a")
                        .labels(S1)
                        .preferred_anti_affinity(5, team1_or_subteam2_team2()),
                    "node1",
                ),
                on(stay_with_s2_in_region(p("b").labels(S2)), "node2"),
            ],
            nodes(&[CHINA, INDIA, AZ1]),
            Some(vec![0, 100, 100]),
        ),
        case(
            "symmetry: existing pods' required affinity counts with the hard weight",
            p("in").labels(S1),
            vec![
                on(hard(p("a").labels(S1)), "node1"),
                on(hard(p("b").labels(S2)), "node2"),
            ],
            nodes(&[CHINA, INDIA, AZ1]),
            Some(vec![100, 100, 0]),
        ),
        case(
            "anti-affinity: the node without matching pods scores highest",
            away_from_s1_in_az(p("in").labels(S1)),
            vec![
                on(p("a").labels(S1), "node1"),
                on(p("b").labels(S2), "node2"),
            ],
            nodes(&[AZ1, CHINA]),
            Some(vec![0, 100]),
        ),
        case(
            "anti-affinity: a node without the topology key is not penalised",
            away_from_s1_in_az(p("in").labels(S1)),
            vec![
                on(p("a").labels(S1), "node1"),
                on(p("b").labels(S1), "node2"),
            ],
            nodes(&[AZ1, CHINA]),
            Some(vec![0, 100]),
        ),
        case(
            "anti-affinity: more matching pods score lower",
            away_from_s1_in_az(p("in").labels(S1)),
            vec![
                on(p("a").labels(S1), "node1"),
                on(p("b").labels(S1), "node1"),
                on(p("c").labels(S2), "node2"),
            ],
            nodes(&[AZ1, INDIA]),
            Some(vec![0, 100]),
        ),
        case(
            "anti-affinity symmetry: existing pods' preferred anti-affinity selecting the pod",
            p("in").labels(S2),
            vec![
                on(away_from_s2_in_az(p("a").labels(S1)), "node1"),
                on(away_from_s1_in_az(p("b").labels(S2)), "node2"),
            ],
            nodes(&[AZ1, AZ2]),
            Some(vec![0, 100]),
        ),
        case(
            "affinity and anti-affinity together",
            stay_with_s1_away_from_s2(p("in").labels(S1)),
            vec![
                on(p("a").labels(S1), "node1"),
                on(p("b").labels(S1), "node2"),
            ],
            nodes(&[CHINA, AZ1]),
            Some(vec![100, 0]),
        ),
        case(
            "same-labelled pods: together in the region, apart on the node",
            stay_with_s1_away_from_s2(p("in").labels(S1)),
            [
                "node1", "node1", "node2", "node3", "node3", "node4", "node5",
            ]
            .iter()
            .enumerate()
            .map(|(i, n)| on(p(&format!("p{i}")).labels(S1), n))
            .collect(),
            nodes(&[CHINA_AZ1, INDIA, CHINA, CHINA, INDIA]),
            Some(vec![100, 0, 100, 100, 0]),
        ),
        case(
            "affinity, anti-affinity and both symmetries together",
            stay_with_s1_away_from_s2(p("in").labels(S1)),
            vec![
                on(p("a").labels(S1), "node1"),
                on(p("b").labels(S2), "node2"),
                on(stay_with_s1_away_from_s2(p("c")), "node3"),
                on(away_from_s1_in_az(p("d")), "node4"),
            ],
            nodes(&[CHINA, AZ1, INDIA, AZ2]),
            Some(vec![100, 0, 100, 0]),
        ),
        case(
            "a topology where only some nodes hold pods with affinity",
            p("in").labels(S1),
            vec![
                on(p("a").labels(S1), "node1"),
                on(stay_with_s1_away_from_s2(p("b")), "node2"),
            ],
            nodes(&[CHINA, CHINA]),
            Some(vec![0, 0]),
        ),
        case(
            "incoming namespaceSelector counts pods of the selected namespaces only",
            make_pod("subteam1.team1", "in")
                .labels(S1)
                .preferred_affinity(5, team1_or_subteam2_team2()),
            vec![
                on(make_pod("subteam1.team1", "a").labels(S1), "node1"),
                on(make_pod("subteam1.team1", "b").labels(S1), "node1"),
                on(make_pod("subteam1.team2", "c").labels(S1), "node1"),
                on(make_pod("subteam2.team1", "d").labels(S1), "node2"),
            ],
            nodes(&[CHINA, INDIA]),
            Some(vec![100, 0]),
        ),
        case(
            "incoming namespaces list and namespaceSelector are ORed",
            make_pod("subteam1.team1", "in")
                .labels(S1)
                .preferred_affinity(5, team1_or_subteam2_team2()),
            vec![
                on(make_pod("subteam1.team1", "a").labels(S1), "node1"),
                on(make_pod("subteam1.team1", "b").labels(S1), "node1"),
                on(make_pod("subteam2.team2", "c").labels(S1), "node1"),
                on(make_pod("subteam2.team1", "d").labels(S1), "node2"),
            ],
            nodes(&[CHINA, INDIA]),
            Some(vec![100, 0]),
        ),
        case(
            "incoming anti-affinity with namespaceSelector",
            make_pod("subteam1.team1", "in")
                .labels(S1)
                .preferred_anti_affinity(5, team1_or_subteam2_team2()),
            vec![
                on(make_pod("subteam1.team1", "a").labels(S1), "node1"),
                on(make_pod("subteam1.team1", "b").labels(S1), "node1"),
                on(make_pod("subteam1.team2", "c").labels(S1), "node1"),
                on(make_pod("subteam2.team1", "d").labels(S1), "node2"),
            ],
            nodes(&[CHINA, INDIA]),
            Some(vec![0, 100]),
        ),
        case(
            "existing pods' preferred terms count by default",
            p("in").labels(S2),
            vec![
                on(stay_with_s1_away_from_s2(p("a").labels(S1)), "node1"),
                on(stay_with_s2_in_region(p("b").labels(S2)), "node2"),
            ],
            nodes(&[CHINA, INDIA]),
            Some(vec![0, 100]),
        ),
        case("no nodes", p("in").labels(S2), vec![], vec![], None),
    ]);
}

#[test]
fn preferred_affinity_with_hard_pod_affinity_symmetric_weight() {
    let hard = |b: MakePod| {
        b.required_affinity(json!({
            "labelSelector": {"matchExpressions": [{"key": "service", "operator": "In", "values": ["S1"]}]},
            "namespaces": [NS, "subteam2.team2"],
            "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "In", "values": ["team1"]}]},
            "topologyKey": "region",
        }))
    };
    let service_s1 = &[("service", "S1")];
    let existing = || vec![on(hard(p("a")), "node1"), on(hard(p("b")), "node2")];
    let with = |name, ns: &str, weight, want| Case {
        name,
        pod: make_pod(ns, "in").labels(service_s1).obj(),
        pods: existing(),
        nodes: nodes(&[CHINA, INDIA, AZ1]),
        hard_weight: weight,
        want,
    };
    run(vec![
        with("default weight", NS, 1, Some(vec![100, 100, 0])),
        with("zero weight: skipped", NS, 0, None),
        with(
            "namespace matches neither list nor selector: skipped",
            "subteam1.team2",
            1,
            None,
        ),
        with(
            "namespace selected by namespaceSelector",
            "subteam1.team1",
            1,
            Some(vec![100, 100, 0]),
        ),
        with(
            "namespace in the namespaces list",
            "subteam2.team2",
            1,
            Some(vec![100, 100, 0]),
        ),
    ]);
}

#[test]
fn raw_scores_sum_weights_over_the_keys_a_node_carries() {
    let s = snapshot_with_namespaces(
        vec![
            make_node("n1")
                .labels(&[("zone", "z1"), (HOSTNAME, "n1")])
                .obj(),
            make_node("n2")
                .labels(&[("zone", "z1"), (HOSTNAME, "n2")])
                .obj(),
        ],
        vec![
            p("db").labels(&[("app", "db")]).node("n1").obj(),
            p("peer")
                .node("n2")
                .required_affinity(term("app", "In", &["web"], "zone"))
                .obj(),
        ],
        vec![],
    );
    let incoming = p("web")
        .labels(&[("app", "web")])
        .preferred_affinity(10, term("app", "In", &["db"], HOSTNAME))
        .preferred_affinity(3, term("app", "In", &["db"], "zone"))
        .obj();
    let sc = prepare_score(&s, &incoming, 7).unwrap().unwrap();
    // n1: 10 (hostname) + 3 (zone) + 7 (peer's required term, zone); n2: 3 + 7.
    assert_eq!(sc.score(NodeAt::indexed(&s.nodes()[0].node, 0)), 20);
    assert_eq!(sc.score(NodeAt::indexed(&s.nodes()[1].node, 1)), 10);
}

#[test]
fn existing_required_anti_affinity_does_not_score() {
    let s = snapshot_with_namespaces(
        vec![make_node("n1").labels(&[("zone", "z1")]).obj()],
        vec![
            p("guard")
                .node("n1")
                .required_anti_affinity(term("app", "In", &["web"], "zone"))
                .obj(),
        ],
        vec![],
    );
    let incoming = p("web").labels(&[("app", "web")]).obj();
    assert!(prepare_score(&s, &incoming, 1).unwrap().is_none());
}

#[test]
fn invalid_preferred_terms_fail_preparation() {
    let s = snapshot_with_namespaces(vec![make_node("n1").labels(&[]).obj()], vec![], vec![]);
    let bad = json!({
        "labelSelector": {"matchExpressions": [{"key": "security", "operator": "NotIn"}]},
        "topologyKey": "az",
    });
    let err = prepare_score(&s, &p("in").preferred_anti_affinity(5, bad).obj(), 1).unwrap_err();
    assert!(
        err.contains("podAntiAffinity preferredDuringScheduling term 0"),
        "{err}"
    );
}

#[test]
fn normalize_spreads_between_min_and_max() {
    assert_eq!(normalize(&[-5, 0, 5]), vec![0, 50, 100]);
    assert_eq!(normalize(&[2, 10, 0]), vec![20, 100, 0]);
    // Same float arithmetic as upstream: 100 * (1/3) truncates to 33.
    assert_eq!(normalize(&[0, 1, 3]), vec![0, 33, 100]);
    assert_eq!(normalize(&[3, 3]), vec![0, 0]);
    assert!(normalize(&[]).is_empty());
}

#[test]
fn existing_pod_preferred_group_with_an_unparsable_term_is_dropped() {
    let bad = json!({
        "labelSelector": {"matchExpressions": [{"key": "x", "operator": "In"}]},
        "topologyKey": "region",
    });
    let s = snapshot_with_namespaces(
        nodes(&[CHINA, INDIA]),
        vec![
            on(
                stay_with_s1_in_region(p("a")).preferred_affinity(1, bad),
                "node1",
            ),
            on(stay_with_s1_in_region(p("b")), "node2"),
        ],
        vec![],
    );
    let sc = prepare_score(&s, &p("in").labels(S1).obj(), 1)
        .unwrap()
        .unwrap();
    assert_eq!(sc.score(NodeAt::indexed(&s.nodes()[0].node, 0)), 0);
    assert_eq!(sc.score(NodeAt::indexed(&s.nodes()[1].node, 1)), 5);
}
