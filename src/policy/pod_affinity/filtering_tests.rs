//! Filter tables. The situations and expectations of upstream's
//! TestRequiredAffinitySingleNode / TestRequiredAffinityMultipleNodes /
//! TestPreFilterStateAddRemovePod, re-expressed with our builders, plus
//! cases for what upstream leaves to other layers (reasons, skipping).

use super::*;
use crate::model::{Namespace, Node, Pod};
use crate::policy::domains::NodeAt;
use crate::policy::{Code, Verdict};
use crate::testing::{
    HOSTNAME, MakePod, ZONE, make_node, make_pod, namespace, snapshot_with_namespaces, term,
};

const NS: &str = "default";

/// What a node gets: which of the three rules failed, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    Pass,
    Affinity,
    AntiAffinity,
    ExistingAntiAffinity,
}
use Want::*;

fn outcome(v: Verdict) -> Want {
    let Err(f) = v else { return Pass };
    let rule = if f.reason.starts_with(REASON_AFFINITY) {
        Affinity
    } else if f.reason.starts_with(REASON_ANTI_AFFINITY) {
        AntiAffinity
    } else if f.reason.starts_with(REASON_EXISTING_ANTI_AFFINITY) {
        ExistingAntiAffinity
    } else {
        panic!("unexpected reason {:?}", f.reason)
    };
    let code = match rule {
        Affinity => Code::UnschedulableAndUnresolvable,
        _ => Code::Unschedulable,
    };
    assert_eq!(f.code, code, "{}", f.reason);
    rule
}

struct Case {
    name: &'static str,
    pod: Pod,
    pods: Vec<Pod>,
    nodes: Vec<Node>,
    namespaces: Vec<Namespace>,
    want: Vec<Want>,
}

fn run(cases: Vec<Case>) {
    for c in cases {
        let s = snapshot_with_namespaces(c.nodes.clone(), c.pods, c.namespaces);
        let filter = prepare_filter(&s, &c.pod).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let got: Vec<Want> = c
            .nodes
            .iter()
            .map(|n| {
                filter.as_ref().map_or(Pass, |f| {
                    // The view's node by index and the request's object by
                    // labels must give the same verdict.
                    let idx = s.node_idx(n.name()).unwrap();
                    let indexed = f.filter_at(NodeAt::indexed(&s.nodes()[idx as usize].node, idx));
                    let by_labels = f.filter(n);
                    assert_eq!(indexed, by_labels, "{}: {}", c.name, n.name());
                    outcome(by_labels)
                })
            })
            .collect();
        assert_eq!(got, c.want, "{}", c.name);
    }
}

fn exists(key: &str, topology_key: &str) -> serde_json::Value {
    term(key, "Exists", &[], topology_key)
}

fn p(name: &str) -> MakePod {
    make_pod(NS, name)
}

const SERVICE_SCAN: &[(&str, &str)] = &[("service", "securityscan")];
const SECURITY_S1: &[(&str, &str)] = &[("security", "S1")];

fn machine1() -> Vec<Node> {
    vec![
        make_node("machine1")
            .labels(&[("region", "r1"), ("zone", "z11")])
            .obj(),
    ]
}

fn single(name: &'static str, pod: MakePod, pods: Vec<MakePod>, want: Want) -> Case {
    Case {
        name,
        pod: pod.obj(),
        pods: pods.into_iter().map(|b| b.node("machine1").obj()).collect(),
        nodes: machine1(),
        namespaces: vec![],
        want: vec![want],
    }
}

#[test]
fn required_affinity_single_node() {
    let scan = || p("existing").labels(SERVICE_SCAN);
    let incoming = || p("incoming").labels(SECURITY_S1);
    run(vec![
        single("no required terms fit a node without pods", p("plain"), vec![], Pass),
        single(
            "affinity In matches the existing pod",
            incoming().required_affinity(term("service", "In", &["securityscan", "value2"], "region")),
            vec![scan()],
            Pass,
        ),
        single(
            "affinity NotIn matches the existing pod",
            incoming().required_affinity(term("service", "NotIn", &["securityscan3", "value3"], "region")),
            vec![scan()],
            Pass,
        ),
        single(
            "affinity term in another namespace does not see the pod",
            incoming().required_affinity(serde_json::json!({
                "labelSelector": {"matchExpressions": [{"key": "service", "operator": "In", "values": ["securityscan", "value2"]}]},
                "namespaces": ["DiffNameSpace"],
                "topologyKey": "region",
            })),
            vec![make_pod("ns", "existing").labels(SERVICE_SCAN)],
            Affinity,
        ),
        single(
            "affinity selector matching no existing pod fails",
            p("incoming").labels(SERVICE_SCAN).required_affinity(term("service", "In", &["antivirusscan", "value2"], "region")),
            vec![scan()],
            Affinity,
        ),
        single(
            "several affinity terms with different operators all matched by one pod",
            incoming()
                .required_affinity(serde_json::json!({
                    "labelSelector": {"matchExpressions": [
                        {"key": "service", "operator": "Exists"}, {"key": "wrongkey", "operator": "DoesNotExist"}]},
                    "topologyKey": "region"}))
                .required_affinity(serde_json::json!({
                    "labelSelector": {"matchExpressions": [
                        {"key": "service", "operator": "In", "values": ["securityscan"]},
                        {"key": "service", "operator": "NotIn", "values": ["WrongValue"]}]},
                    "topologyKey": "region"})),
            vec![scan()],
            Pass,
        ),
        single(
            "match expressions are ANDed: one unmatched expression fails the term",
            incoming()
                .required_affinity(exists("service", "region"))
                .required_affinity(term("service", "In", &["securityscan2"], "region")),
            vec![scan()],
            Affinity,
        ),
        single(
            "affinity and anti-affinity both satisfied",
            incoming()
                .required_affinity(term("service", "In", &["securityscan", "value2"], "region"))
                .required_anti_affinity(term("service", "In", &["antivirusscan", "value2"], "node")),
            vec![scan()],
            Pass,
        ),
        single(
            "affinity, anti-affinity and the existing pod's anti-affinity all satisfied",
            incoming()
                .required_affinity(term("service", "In", &["securityscan", "value2"], "region"))
                .required_anti_affinity(term("service", "In", &["antivirusscan", "value2"], "node")),
            vec![scan().required_anti_affinity(term("service", "In", &["antivirusscan", "value2"], "node"))],
            Pass,
        ),
        single(
            "affinity satisfied but anti-affinity violated",
            incoming()
                .required_affinity(term("service", "In", &["securityscan", "value2"], "region"))
                .required_anti_affinity(term("service", "In", &["securityscan", "value2"], "zone")),
            vec![scan()],
            AntiAffinity,
        ),
        single(
            "own terms satisfied but the existing pod's anti-affinity selects the pod",
            p("incoming")
                .labels(SERVICE_SCAN)
                .required_affinity(term("service", "In", &["securityscan", "value2"], "region"))
                .required_anti_affinity(term("service", "In", &["antivirusscan", "value2"], "node")),
            vec![scan().required_anti_affinity(term("service", "In", &["securityscan", "value2"], "zone"))],
            ExistingAntiAffinity,
        ),
        single(
            "existing anti-affinity blocks a pod that has no terms of its own",
            p("incoming").labels(SERVICE_SCAN),
            vec![scan().required_anti_affinity(term("service", "In", &["securityscan", "value2"], "zone"))],
            ExistingAntiAffinity,
        ),
        single(
            "existing anti-affinity NotIn does not select the pod",
            p("incoming").labels(SERVICE_SCAN),
            vec![scan().required_anti_affinity(term("service", "NotIn", &["securityscan", "value2"], "zone"))],
            Pass,
        ),
        single(
            "incoming anti-affinity matches the existing pod before symmetry is checked",
            p("incoming")
                .labels(SERVICE_SCAN)
                .required_anti_affinity(exists("service", "region"))
                .required_anti_affinity(exists("security", "region")),
            vec![p("existing").labels(SECURITY_S1).required_anti_affinity(exists("security", "zone"))],
            AntiAffinity,
        ),
        single(
            "symmetry a1: incoming anti-affinity term matches the existing pod",
            p("incoming")
                .labels(SERVICE_SCAN)
                .required_anti_affinity(exists("service", "zone"))
                .required_anti_affinity(exists("security", "zone")),
            vec![p("existing").labels(SECURITY_S1).required_anti_affinity(exists("security", "zone"))],
            AntiAffinity,
        ),
        single(
            "symmetry a2: only the existing pod's term matches",
            p("incoming").labels(SECURITY_S1).required_anti_affinity(exists("security", "zone")),
            vec![p("existing")
                .labels(SERVICE_SCAN)
                .required_anti_affinity(exists("service", "zone"))
                .required_anti_affinity(exists("security", "zone"))],
            ExistingAntiAffinity,
        ),
        single(
            "symmetry b1: both match each other, the incoming rule is reported first",
            p("incoming")
                .labels(&[("abc", ""), ("xyz", "")])
                .required_anti_affinity(exists("abc", "zone"))
                .required_anti_affinity(exists("def", "zone")),
            vec![p("existing")
                .labels(&[("def", ""), ("xyz", "")])
                .required_anti_affinity(exists("abc", "zone"))
                .required_anti_affinity(exists("def", "zone"))],
            AntiAffinity,
        ),
        single(
            "symmetry b2: both match each other the other way round",
            p("incoming")
                .labels(&[("def", ""), ("xyz", "")])
                .required_anti_affinity(exists("abc", "zone"))
                .required_anti_affinity(exists("def", "zone")),
            vec![p("existing")
                .labels(&[("abc", ""), ("xyz", "")])
                .required_anti_affinity(exists("abc", "zone"))
                .required_anti_affinity(exists("def", "zone"))],
            AntiAffinity,
        ),
    ]);
}

#[test]
fn pod_not_matching_its_own_affinity_is_not_the_first_of_a_group() {
    // The only matching pod runs on a node the view does not know.
    run(vec![Case {
        name: "pod matches none of its own terms and no pod matches anywhere",
        pod: p("incoming")
            .labels(SERVICE_SCAN)
            .required_affinity(term(
                "service",
                "NotIn",
                &["securityscan", "value2"],
                "region",
            ))
            .obj(),
        pods: vec![p("existing").labels(SERVICE_SCAN).node("machine2").obj()],
        nodes: machine1(),
        namespaces: vec![],
        want: vec![Affinity],
    }]);
}

fn teams() -> Vec<Namespace> {
    vec![
        namespace("subteam1.team1", &[("team", "team1")]),
        namespace("subteam2.team1", &[("team", "team1")]),
        namespace("subteam1.team2", &[("team", "team2")]),
    ]
}

fn team_term(namespace_selector: serde_json::Value, topology_key: &str) -> serde_json::Value {
    serde_json::json!({
        "labelSelector": {"matchExpressions": [{"key": "service", "operator": "In", "values": ["securityscan", "value2"]}]},
        "namespaceSelector": namespace_selector,
        "topologyKey": topology_key,
    })
}

#[test]
fn required_affinity_with_namespace_selector() {
    let team1 = || serde_json::json!({"matchExpressions": [{"key": "team", "operator": "In", "values": ["team1"]}]});
    let case = |name, incoming: MakePod, existing_ns: &str, want| Case {
        name,
        pod: incoming.obj(),
        pods: vec![
            make_pod(existing_ns, "existing")
                .labels(SERVICE_SCAN)
                .node("machine1")
                .obj(),
        ],
        nodes: machine1(),
        namespaces: teams(),
        want: vec![want],
    };
    run(vec![
        case(
            "affinity namespaceSelector selects the existing pod's namespace",
            p("incoming")
                .labels(SECURITY_S1)
                .required_affinity(team_term(team1(), "region")),
            "subteam1.team1",
            Pass,
        ),
        case(
            "affinity namespaceSelector does not select the existing pod's namespace",
            p("incoming")
                .labels(SECURITY_S1)
                .required_affinity(team_term(team1(), "region")),
            "subteam1.team2",
            Affinity,
        ),
        case(
            "anti-affinity namespaceSelector selects the existing pod's namespace",
            make_pod("subteam1.team1", "incoming")
                .labels(SECURITY_S1)
                .required_anti_affinity(team_term(team1(), "zone")),
            "subteam2.team1",
            AntiAffinity,
        ),
        case(
            "anti-affinity empty namespaceSelector selects all namespaces",
            make_pod("subteam1.team1", "incoming")
                .labels(SECURITY_S1)
                .required_anti_affinity(team_term(serde_json::json!({}), "zone")),
            "subteam2.team1",
            AntiAffinity,
        ),
        case(
            "empty namespaceSelector also covers namespaces without a Namespace object",
            make_pod("subteam1.team1", "incoming")
                .labels(SECURITY_S1)
                .required_anti_affinity(team_term(serde_json::json!({}), "zone")),
            "unlisted",
            AntiAffinity,
        ),
        case(
            "anti-affinity namespaceSelector does not select the existing pod's namespace",
            make_pod("subteam1.team1", "incoming")
                .labels(SECURITY_S1)
                .required_anti_affinity(team_term(team1(), "zone")),
            "subteam1.team2",
            Pass,
        ),
    ]);
}

#[test]
fn existing_anti_affinity_namespace_selector_uses_the_incoming_pods_namespace_labels() {
    let team1 = serde_json::json!({"matchLabels": {"team": "team1"}});
    let existing = || {
        make_pod("subteam1.team2", "existing")
            .node("machine1")
            .required_anti_affinity(team_term(team1.clone(), "zone"))
            .obj()
    };
    let incoming = |ns: &str| make_pod(ns, "incoming").labels(SERVICE_SCAN).obj();
    let case = |name, ns: &str, want| Case {
        name,
        pod: incoming(ns),
        pods: vec![existing()],
        nodes: machine1(),
        namespaces: teams(),
        want: vec![want],
    };
    run(vec![
        case(
            "incoming namespace labelled team1 is selected",
            "subteam2.team1",
            ExistingAntiAffinity,
        ),
        case(
            "incoming namespace labelled team2 is not selected",
            "subteam1.team2",
            Pass,
        ),
        case(
            "incoming namespace unknown to the view has no labels",
            "nowhere",
            Pass,
        ),
    ]);
}

fn nodes(specs: &[(&str, &[(&str, &str)])]) -> Vec<Node> {
    specs
        .iter()
        .map(|(n, l)| make_node(n).labels(l).obj())
        .collect()
}

fn multi(
    name: &'static str,
    pod: MakePod,
    pods: Vec<MakePod>,
    nodes: Vec<Node>,
    want: Vec<Want>,
) -> Case {
    Case {
        name,
        pod: pod.obj(),
        pods: pods.into_iter().map(MakePod::obj).collect(),
        nodes,
        namespaces: vec![],
        want,
    }
}

#[test]
fn required_affinity_multiple_nodes() {
    let china_india = || {
        nodes(&[
            ("nodeA", &[("region", "China")]),
            ("nodeB", &[("region", "China"), ("az", "az1")]),
            ("nodeC", &[("region", "India")]),
        ])
    };
    let r1z1z1 = || {
        nodes(&[
            (
                "nodeA",
                &[("region", "r1"), ("zone", "z1"), ("hostname", "nodeA")],
            ),
            (
                "nodeB",
                &[("region", "r1"), ("zone", "z1"), ("hostname", "nodeB")],
            ),
        ])
    };
    let r1z1z2 = || {
        nodes(&[
            (
                "nodeA",
                &[("region", "r1"), ("zone", "z1"), ("hostname", "nodeA")],
            ),
            (
                "nodeB",
                &[("region", "r1"), ("zone", "z2"), ("hostname", "nodeB")],
            ),
        ])
    };
    run(vec![
        multi(
            "every node in the domain of the matching pod fits, others do not",
            p("incoming").required_affinity(term("foo", "In", &["bar"], "region")),
            vec![p("p1").labels(&[("foo", "bar")]).node("nodeA")],
            china_india(),
            vec![Pass, Pass, Affinity],
        ),
        multi(
            "the first pod of a group that selects itself may go anywhere",
            p("incoming")
                .labels(&[("foo", "bar"), ("service", "securityscan")])
                .required_affinity(term("foo", "In", &["bar"], "zone"))
                .required_affinity(term("service", "In", &["securityscan"], "zone")),
            vec![p("p1").labels(&[("foo", "bar")]).node("nodeA")],
            nodes(&[
                ("nodeA", &[("zone", "az1"), ("hostname", "h1")]),
                ("nodeB", &[("zone", "az2"), ("hostname", "h2")]),
            ]),
            vec![Pass, Pass],
        ),
        multi(
            "the first pod of a group still needs nodes carrying the topology keys",
            p("incoming")
                .labels(&[("foo", "bar"), ("service", "securityscan")])
                .required_affinity(term("foo", "In", &["bar"], "zone"))
                .required_affinity(term("service", "In", &["securityscan"], "zone")),
            vec![p("p1").labels(&[("foo", "bar")]).node("nodeA")],
            nodes(&[
                ("nodeA", &[("zoneLabel", "az1"), ("hostname", "h1")]),
                ("nodeB", &[("zoneLabel", "az2"), ("hostname", "h2")]),
            ]),
            vec![Affinity, Affinity],
        ),
        multi(
            "anti-affinity blocks every node of the matching pod's domain",
            p("incoming").required_anti_affinity(term("foo", "In", &["abc"], "region")),
            vec![p("p1").labels(&[("foo", "abc")]).node("nodeA")],
            nodes(&[
                ("nodeA", &[("region", "r1"), ("hostname", "nodeA")]),
                ("nodeB", &[("region", "r1"), ("hostname", "nodeB")]),
            ]),
            vec![AntiAffinity, AntiAffinity],
        ),
        multi(
            "anti-affinity blocks when any one of its terms matches",
            p("incoming")
                .required_anti_affinity(term("foo", "In", &["abc"], "region"))
                .required_anti_affinity(term("service", "In", &["securityscan"], "zone")),
            vec![
                p("p1")
                    .labels(&[("foo", "abc"), ("service", "securityscan")])
                    .node("nodeA"),
            ],
            r1z1z2(),
            vec![AntiAffinity, AntiAffinity],
        ),
        multi(
            "anti-affinity leaves other domains free",
            p("incoming").required_anti_affinity(term("foo", "In", &["abc"], "region")),
            vec![p("p1").labels(&[("foo", "abc")]).node("nodeA")],
            china_india(),
            vec![AntiAffinity, AntiAffinity, Pass],
        ),
        multi(
            "pods and terms in other namespaces do not interfere",
            make_pod("NS1", "incoming")
                .labels(&[("foo", "123")])
                .required_anti_affinity(term("foo", "In", &["bar"], "region")),
            vec![
                make_pod("NS1", "p1")
                    .labels(&[("foo", "bar")])
                    .node("nodeA"),
                make_pod("NS2", "p2")
                    .node("nodeC")
                    .required_anti_affinity(term("foo", "In", &["123"], "region")),
            ],
            china_india(),
            vec![AntiAffinity, AntiAffinity, Pass],
        ),
        multi(
            "existing anti-affinity on a key no node has blocks nothing",
            p("incoming").labels(&[("foo", "")]),
            vec![
                p("p1")
                    .node("nodeA")
                    .required_anti_affinity(exists("foo", "invalid-node-label")),
            ],
            r1z1z1(),
            vec![Pass, Pass],
        ),
        multi(
            "incoming anti-affinity on a key no node has blocks nothing",
            p("incoming").required_anti_affinity(exists("foo", "invalid-node-label")),
            vec![p("p1").labels(&[("foo", "")]).node("nodeA")],
            r1z1z1(),
            vec![Pass, Pass],
        ),
        multi(
            "existing pods' anti-affinity terms each block their domain",
            p("incoming").labels(&[("foo", ""), ("bar", "")]),
            vec![
                p("p1")
                    .node("nodeA")
                    .required_anti_affinity(exists("foo", "zone")),
                p("p2")
                    .node("nodeA")
                    .required_anti_affinity(exists("bar", "region")),
            ],
            r1z1z2(),
            vec![ExistingAntiAffinity, ExistingAntiAffinity],
        ),
        multi(
            "incoming anti-affinity terms each block their domain",
            p("incoming")
                .required_anti_affinity(exists("foo", "zone"))
                .required_anti_affinity(exists("bar", "region")),
            vec![
                p("p1").labels(&[("foo", "")]).node("nodeA"),
                p("p2").labels(&[("bar", "")]).node("nodeB"),
            ],
            r1z1z2(),
            vec![AntiAffinity, AntiAffinity],
        ),
        multi(
            "existing term counts only where selector and topology key both match",
            p("incoming").labels(&[("foo", ""), ("bar", "")]),
            vec![
                p("p1")
                    .node("nodeA")
                    .required_anti_affinity(exists("foo", "invalid-node-label"))
                    .required_anti_affinity(exists("bar", "zone")),
            ],
            r1z1z2(),
            vec![ExistingAntiAffinity, Pass],
        ),
        multi(
            "incoming term counts only where selector and topology key both match",
            p("incoming")
                .required_anti_affinity(exists("foo", "invalid-node-label"))
                .required_anti_affinity(exists("bar", "zone")),
            vec![p("podA").labels(&[("foo", ""), ("bar", "")]).node("nodeA")],
            r1z1z2(),
            vec![AntiAffinity, Pass],
        ),
        multi(
            "existing terms with valid keys block both domains",
            p("incoming").labels(&[("foo", ""), ("bar", "")]),
            vec![
                p("p1")
                    .node("nodeA")
                    .required_anti_affinity(exists("foo", "region"))
                    .required_anti_affinity(exists("bar", "zone")),
            ],
            r1z1z2(),
            vec![ExistingAntiAffinity, ExistingAntiAffinity],
        ),
        multi(
            "incoming terms with valid keys block both domains",
            p("incoming")
                .required_anti_affinity(exists("foo", "region"))
                .required_anti_affinity(exists("bar", "zone")),
            vec![p("p1").labels(&[("foo", ""), ("bar", "")]).node("nodeA")],
            r1z1z2(),
            vec![AntiAffinity, AntiAffinity],
        ),
        multi(
            "only a domain no existing term claims is left",
            p("incoming").labels(&[("foo", ""), ("bar", "")]),
            vec![
                p("p1")
                    .node("nodeA")
                    .required_anti_affinity(exists("foo", "zone"))
                    .required_anti_affinity(exists("labelA", "zone")),
                p("p2")
                    .node("nodeB")
                    .required_anti_affinity(exists("bar", "zone"))
                    .required_anti_affinity(exists("labelB", "zone")),
            ],
            nodes(&[
                (
                    "nodeA",
                    &[("region", "r1"), ("zone", "z1"), ("hostname", "nodeA")],
                ),
                (
                    "nodeB",
                    &[("region", "r1"), ("zone", "z2"), ("hostname", "nodeB")],
                ),
                (
                    "nodeC",
                    &[("region", "r1"), ("zone", "z3"), ("hostname", "nodeC")],
                ),
            ]),
            vec![ExistingAntiAffinity, ExistingAntiAffinity, Pass],
        ),
        multi(
            "one pod matching all affinity terms satisfies them in every domain it shares",
            p("incoming")
                .required_affinity(exists("foo", "region"))
                .required_affinity(exists("bar", "zone")),
            vec![p("pod1").labels(&[("foo", ""), ("bar", "")]).node("nodeA")],
            r1z1z1(),
            vec![Pass, Pass],
        ),
        multi(
            "affinity terms must all be matched by the same pod",
            p("incoming")
                .required_affinity(exists("foo", "region"))
                .required_affinity(exists("bar", "zone")),
            vec![
                p("pod1").labels(&[("foo", "")]).node("nodeA"),
                p("pod2").labels(&[("bar", "")]).node("nodeB"),
            ],
            r1z1z2(),
            vec![Affinity, Affinity],
        ),
    ]);
}

#[test]
fn skipped_when_no_required_terms_and_no_existing_anti_affinity_selects_the_pod() {
    let s = snapshot_with_namespaces(
        vec![make_node("n1").labels(&[("zone", "z1")]).obj()],
        vec![
            p("a").labels(&[("app", "x")]).node("n1").obj(),
            p("b")
                .node("n1")
                .required_anti_affinity(exists("other", "zone"))
                .preferred_affinity(5, exists("app", "zone"))
                .obj(),
            // Selects the pod, but its node has no such key: no count, still skipped.
            p("c")
                .node("n1")
                .required_anti_affinity(exists("app", "rack"))
                .obj(),
        ],
        vec![],
    );
    let incoming = p("in")
        .labels(&[("app", "x")])
        .preferred_anti_affinity(3, exists("app", "zone"))
        .obj();
    assert!(prepare_filter(&s, &incoming).unwrap().is_none());
}

#[test]
fn invalid_selector_in_any_term_group_is_an_error_naming_the_term() {
    let s = snapshot_with_namespaces(vec![make_node("n1").labels(&[]).obj()], vec![], vec![]);
    let bad = serde_json::json!({
        "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": []}]},
        "topologyKey": "zone",
    });
    let required = p("in")
        .required_anti_affinity(exists("a", "zone"))
        .required_anti_affinity(bad.clone())
        .obj();
    let err = prepare_filter(&s, &required).unwrap_err();
    assert!(
        err.contains("default/in")
            && err.contains("podAntiAffinity requiredDuringScheduling term 1"),
        "{err}"
    );
    // Upstream parses every group up front, so a bad preferred term fails the filter too.
    let preferred = p("in").preferred_affinity(1, bad).obj();
    let err = prepare_filter(&s, &preferred).unwrap_err();
    assert!(
        err.contains("podAffinity preferredDuringScheduling term 0"),
        "{err}"
    );
}

#[test]
fn existing_pod_with_an_invalid_term_group_blocks_nothing() {
    let bad = serde_json::json!({
        "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]},
        "topologyKey": "zone",
    });
    run(vec![multi(
        "a group with one unparsable term is dropped whole",
        p("incoming").labels(&[("app", "web")]),
        vec![
            p("p1")
                .node("nodeA")
                .required_anti_affinity(exists("app", "zone"))
                .required_anti_affinity(bad),
        ],
        nodes(&[("nodeA", &[("zone", "z1")])]),
        vec![Pass],
    )]);
}

#[test]
fn reasons_name_the_pod_and_the_domain() {
    let n = || {
        make_node("n3")
            .labels(&[(HOSTNAME, "n3"), (ZONE, "z1")])
            .obj()
    };
    let s = snapshot_with_namespaces(
        vec![n()],
        vec![
            make_pod("shop", "web-1")
                .labels(&[("app", "web")])
                .node("n3")
                .obj(),
            make_pod("shop", "db-1")
                .labels(&[("app", "db")])
                .node("n3")
                .required_anti_affinity(term("app", "In", &["cache"], ZONE))
                .obj(),
        ],
        vec![],
    );
    let anti = make_pod("shop", "web-2")
        .required_anti_affinity(term("app", "In", &["web"], HOSTNAME))
        .obj();
    let err = prepare_filter(&s, &anti)
        .unwrap()
        .unwrap()
        .filter(&n())
        .unwrap_err();
    assert_eq!(
        &*err.reason,
        "node(s) didn't match pod anti-affinity rules: pod shop/web-1 (app in (web)) in kubernetes.io/hostname=n3"
    );
    let cache = make_pod("shop", "cache-1")
        .labels(&[("app", "cache")])
        .obj();
    let err = prepare_filter(&s, &cache)
        .unwrap()
        .unwrap()
        .filter(&n())
        .unwrap_err();
    assert_eq!(
        &*err.reason,
        "node(s) didn't satisfy existing pods anti-affinity rules: pod shop/db-1 (app in (cache)) in topology.kubernetes.io/zone=z1"
    );
    let affinity = make_pod("shop", "x")
        .required_affinity(term("app", "In", &["queue"], ZONE))
        .obj();
    let err = prepare_filter(&s, &affinity)
        .unwrap()
        .unwrap()
        .filter(&n())
        .unwrap_err();
    assert_eq!(err.code, Code::UnschedulableAndUnresolvable);
    assert_eq!(
        &*err.reason,
        "node(s) didn't match pod affinity rules: no pod matching all affinity terms in topology.kubernetes.io/zone=z1"
    );
    let rack = make_pod("shop", "x")
        .required_affinity(term("app", "In", &["web"], "rack"))
        .obj();
    let err = prepare_filter(&s, &rack)
        .unwrap()
        .unwrap()
        .filter(&n())
        .unwrap_err();
    assert_eq!(
        &*err.reason,
        "node(s) didn't match pod affinity rules: node has no label rack"
    );
}

#[test]
fn match_label_keys_are_merged_for_pods_that_arrive_unmerged() {
    let versioned =
        |name: &str, version: &str| p(name).labels(&[("app", "web"), ("version", version)]);
    let with_keys = |keys: serde_json::Value| {
        serde_json::json!({
            "labelSelector": {"matchLabels": {"app": "web"}},
            "matchLabelKeys": keys["match"], "mismatchLabelKeys": keys["mismatch"],
            "topologyKey": "zone",
        })
    };
    let zones = || nodes(&[("nodeA", &[("zone", "z1")]), ("nodeB", &[("zone", "z2")])]);
    run(vec![
        multi(
            "matchLabelKeys restricts anti-affinity to pods with the same value",
            versioned("incoming", "v2")
                .required_anti_affinity(with_keys(serde_json::json!({"match": ["version"]}))),
            vec![
                versioned("old", "v1").node("nodeA"),
                versioned("new", "v2").node("nodeB"),
            ],
            zones(),
            vec![Pass, AntiAffinity],
        ),
        multi(
            "mismatchLabelKeys restricts anti-affinity to pods with another value",
            versioned("incoming", "v2")
                .required_anti_affinity(with_keys(serde_json::json!({"mismatch": ["version"]}))),
            vec![
                versioned("old", "v1").node("nodeA"),
                versioned("new", "v2").node("nodeB"),
            ],
            zones(),
            vec![AntiAffinity, Pass],
        ),
        multi(
            "a key the owner pod lacks is ignored",
            p("incoming")
                .labels(&[("app", "web")])
                .required_anti_affinity(with_keys(serde_json::json!({"match": ["version"]}))),
            vec![versioned("old", "v1").node("nodeA")],
            zones(),
            vec![AntiAffinity, Pass],
        ),
        multi(
            "an existing pod's matchLabelKeys use the existing pod's value",
            versioned("incoming", "v2"),
            vec![
                versioned("old", "v1")
                    .node("nodeA")
                    .required_anti_affinity(with_keys(serde_json::json!({"match": ["version"]}))),
                versioned("new", "v2")
                    .node("nodeB")
                    .required_anti_affinity(with_keys(serde_json::json!({"match": ["version"]}))),
            ],
            zones(),
            vec![Pass, ExistingAntiAffinity],
        ),
    ]);
}

#[test]
fn match_label_keys_already_merged_by_the_apiserver_are_not_merged_again() {
    // The apiserver merged version=v1 at creation; the label changed since.
    let merged = serde_json::json!({
        "labelSelector": {"matchLabels": {"app": "web"},
                          "matchExpressions": [{"key": "version", "operator": "In", "values": ["v1"]}]},
        "matchLabelKeys": ["version"],
        "topologyKey": "zone",
    });
    run(vec![multi(
        "the stored requirement wins over the current label",
        p("incoming")
            .labels(&[("app", "web"), ("version", "v2")])
            .required_anti_affinity(merged),
        vec![
            p("old")
                .labels(&[("app", "web"), ("version", "v1")])
                .node("nodeA"),
        ],
        nodes(&[("nodeA", &[("zone", "z1")])]),
        vec![AntiAffinity],
    )]);
}

/// Upstream TestPreFilterStateAddRemovePod: adding a pod gives the state a
/// fresh preparation with that pod would give; removing it restores the
/// original. Compared through the verdicts on every node.
#[test]
fn add_then_remove_pod_matches_fresh_preparations() {
    let region_zone = || {
        nodes(&[
            ("nodeA", &[("region", "r1"), ("zone", "z11")]),
            ("nodeB", &[("region", "r1"), ("zone", "z12")]),
            ("nodeC", &[("region", "r2"), ("zone", "z21")]),
        ])
    };
    let foo_bar = || term("foo", "In", &["bar"], "region");
    let complex = || {
        [
            term("foo", "In", &["bar", "buzz"], "region"),
            term("service", "NotIn", &["bar", "security", "test"], "zone"),
        ]
    };
    let anti_complex = |b: MakePod| {
        let [a, z] = complex();
        b.required_anti_affinity(a).required_anti_affinity(z)
    };
    let aff_complex = |b: MakePod| {
        let [a, z] = complex();
        b.required_affinity(a).required_affinity(z)
    };
    let sel = &[("foo", "bar")];
    let cases: Vec<(&str, Pod, Vec<Pod>, Pod)> = vec![
        (
            "no affinity anywhere",
            p("pending").labels(sel).obj(),
            vec![
                p("p1").labels(sel).node("nodeA").obj(),
                p("p2").node("nodeC").obj(),
            ],
            p("added").labels(sel).node("nodeB").obj(),
        ),
        (
            "anti-affinity counts follow an added and removed pod",
            p("pending")
                .labels(sel)
                .required_anti_affinity(foo_bar())
                .obj(),
            vec![
                p("p1").labels(sel).node("nodeA").obj(),
                p("p2")
                    .node("nodeC")
                    .required_anti_affinity(foo_bar())
                    .obj(),
            ],
            p("added")
                .labels(sel)
                .node("nodeB")
                .required_anti_affinity(foo_bar())
                .obj(),
        ),
        (
            "anti-affinity with two terms follows an added pod with its own anti-affinity",
            anti_complex(p("pending").labels(sel)).obj(),
            vec![
                p("p1").labels(sel).node("nodeA").obj(),
                p("p2")
                    .node("nodeC")
                    .required_anti_affinity(foo_bar())
                    .obj(),
            ],
            anti_complex(p("added").labels(sel).node("nodeA")).obj(),
        ),
        (
            "affinity counts follow an added pod matching all terms",
            aff_complex(p("pending").labels(sel)).obj(),
            vec![
                p("p1").labels(sel).node("nodeA").obj(),
                aff_complex(p("p2").node("nodeC").required_anti_affinity(foo_bar())).obj(),
            ],
            anti_complex(p("added").labels(sel).node("nodeA")).obj(),
        ),
    ];
    for (name, pending, existing, added) in cases {
        let verdicts = |f: &Option<AffinityFilter>| -> Vec<Want> {
            region_zone()
                .iter()
                .map(|n| f.as_ref().map_or(Pass, |f| outcome(f.filter(n))))
                .collect()
        };
        let before = snapshot_with_namespaces(region_zone(), existing.clone(), vec![]);
        let mut with_added = existing.clone();
        with_added.push(added.clone());
        let after = snapshot_with_namespaces(region_zone(), with_added, vec![]);
        let original = prepare_filter(&before, &pending).unwrap();
        let fresh = prepare_filter(&after, &pending).unwrap();
        let Some(original) = original else {
            assert!(fresh.is_none(), "{name}");
            continue;
        };
        let added_node = node_of(&after, &added);
        let mut changed = original.clone();
        changed.add_pod(&added, &added_node);
        assert_eq!(
            verdicts(&Some(changed.clone())),
            verdicts(&fresh),
            "{name}: after add"
        );
        changed.remove_pod(&added, &added_node);
        assert_eq!(
            verdicts(&Some(changed)),
            verdicts(&Some(original)),
            "{name}: after remove"
        );
    }
}

fn node_of(s: &crate::cluster::Snapshot, p: &Pod) -> Node {
    (*s.node(&p.spec.node_name).unwrap().node).clone()
}

#[test]
fn removing_the_only_matching_pod_frees_the_node_and_adding_it_back_blocks_it() {
    let n1 = make_node("n1").labels(&[(HOSTNAME, "n1")]).obj();
    let web = make_pod("shop", "web-1")
        .labels(&[("app", "web")])
        .node("n1")
        .obj();
    let s = snapshot_with_namespaces(vec![n1.clone()], vec![web.clone()], vec![]);
    let incoming = make_pod("shop", "web-2")
        .required_anti_affinity(term("app", "In", &["web"], HOSTNAME))
        .obj();
    let prepared = prepare_filter(&s, &incoming).unwrap().unwrap();
    assert_eq!(outcome(prepared.filter(&n1)), AntiAffinity);

    let mut without = prepared.clone();
    without.remove_pod(&web, &n1);
    assert_eq!(outcome(without.filter(&n1)), Pass);
    // The clone did not change the original.
    assert_eq!(outcome(prepared.filter(&n1)), AntiAffinity);

    let other = make_pod("shop", "web-3")
        .labels(&[("app", "web")])
        .node("n1")
        .obj();
    without.add_pod(&other, &n1);
    let err = without.filter(&n1).unwrap_err();
    assert!(err.reason.contains("pod shop/web-3"), "{}", err.reason);
}

#[test]
fn removing_an_existing_pod_with_anti_affinity_lifts_its_block() {
    let n1 = make_node("n1").labels(&[(ZONE, "z1")]).obj();
    let guard = make_pod("shop", "guard")
        .node("n1")
        .required_anti_affinity(term("app", "In", &["web"], ZONE))
        .obj();
    let s = snapshot_with_namespaces(vec![n1.clone()], vec![guard.clone()], vec![]);
    let incoming = make_pod("shop", "web").labels(&[("app", "web")]).obj();
    let mut f = prepare_filter(&s, &incoming).unwrap().unwrap();
    assert_eq!(outcome(f.filter(&n1)), ExistingAntiAffinity);
    f.remove_pod(&guard, &n1);
    assert_eq!(outcome(f.filter(&n1)), Pass);
    f.add_pod(&guard, &n1);
    assert_eq!(outcome(f.filter(&n1)), ExistingAntiAffinity);
}

#[test]
fn removing_the_only_affinity_match_reopens_the_first_pod_exception() {
    let nodes = || nodes(&[("nodeA", &[(ZONE, "z1")]), ("nodeB", &[(ZONE, "z2")])]);
    let db = p("db").labels(&[("app", "db")]).node("nodeA").obj();
    let s = snapshot_with_namespaces(nodes(), vec![db.clone()], vec![]);
    let incoming = p("db-2")
        .labels(&[("app", "db")])
        .required_affinity(term("app", "In", &["db"], ZONE))
        .obj();
    let mut f = prepare_filter(&s, &incoming).unwrap().unwrap();
    let got = |f: &AffinityFilter| {
        nodes()
            .iter()
            .map(|n| outcome(f.filter(n)))
            .collect::<Vec<_>>()
    };
    assert_eq!(got(&f), vec![Pass, Affinity]);
    f.remove_pod(&db, &nodes()[0]);
    assert_eq!(got(&f), vec![Pass, Pass]);
}

#[test]
fn terminal_pods_do_not_count_but_terminating_pods_do() {
    let n1 = make_node("n1").labels(&[(HOSTNAME, "n1")]).obj();
    let incoming = p("new")
        .required_anti_affinity(term("app", "In", &["web"], HOSTNAME))
        .obj();
    let web = || p("web").labels(&[("app", "web")]).node("n1");
    let cases = [
        ("succeeded pod", web().phase("Succeeded").obj(), Pass),
        ("failed pod", web().phase("Failed").obj(), Pass),
        ("terminating pod", web().terminating().obj(), AntiAffinity),
        ("running pod", web().phase("Running").obj(), AntiAffinity),
    ];
    for (name, existing, want) in cases {
        let s = snapshot_with_namespaces(vec![n1.clone()], vec![existing], vec![]);
        let f = prepare_filter(&s, &incoming).unwrap().unwrap();
        assert_eq!(outcome(f.filter(&n1)), want, "{name}");
    }
}

#[test]
fn unbound_pods_and_pods_on_unknown_nodes_do_not_count() {
    let n1 = make_node("n1").labels(&[(ZONE, "z1")]).obj();
    let s = snapshot_with_namespaces(
        vec![n1.clone()],
        vec![
            p("pending").labels(&[("app", "web")]).obj(),
            p("elsewhere").labels(&[("app", "web")]).node("gone").obj(),
        ],
        vec![],
    );
    let incoming = p("new")
        .required_anti_affinity(term("app", "In", &["web"], ZONE))
        .obj();
    assert_eq!(
        outcome(prepare_filter(&s, &incoming).unwrap().unwrap().filter(&n1)),
        Pass
    );
}

/// Reasons name the pod counted on the node's own domain, found by its
/// place in its namespace's list: through the label index (a namespace of
/// more than 64 pods), across two namespaces, and past a pod removed since.
#[test]
fn reasons_name_the_right_pod_among_many() {
    let nodes: Vec<Node> = (0..11)
        .map(|i| {
            let name = format!("n{i}");
            make_node(&name).labels(&[(HOSTNAME, &name)]).obj()
        })
        .collect();
    let mut pods: Vec<Pod> = (0..100)
        .map(|i| {
            let (name, app, node) = match i % 10 {
                3 => (format!("web-{}", i / 10), "web", i / 10),
                _ => (format!("filler-{i}"), "filler", i % 10),
            };
            make_pod("shop", &name)
                .labels(&[("app", app)])
                .node(&format!("n{node}"))
                .obj()
        })
        .collect();
    let web_extra = make_pod("shop", "web-extra")
        .labels(&[("app", "web")])
        .node("n0")
        .obj();
    pods.push(web_extra);
    pods.push(
        make_pod("other", "web-o")
            .labels(&[("app", "web")])
            .node("n10")
            .obj(),
    );
    let s = snapshot_with_namespaces(nodes.clone(), pods.clone(), vec![]);
    let incoming = make_pod("shop", "new")
        .required_anti_affinity(serde_json::json!({
            "labelSelector": {"matchLabels": {"app": "web"}},
            "topologyKey": HOSTNAME,
            "namespaces": ["shop", "other"],
        }))
        .obj();
    let filter = prepare_filter(&s, &incoming).unwrap().unwrap();
    let named = |f: &AffinityFilter, node: &Node| -> String {
        let reason = f.filter(node).unwrap_err().reason;
        let at = reason.find(": pod ").expect("names a pod") + ": pod ".len();
        reason[at..].split(' ').next().unwrap().to_string()
    };
    for (k, node) in nodes.iter().enumerate().take(10).skip(1) {
        assert_eq!(named(&filter, node), format!("shop/web-{k}"));
    }
    assert_eq!(named(&filter, &nodes[10]), "other/web-o");
    assert_eq!(named(&filter, &nodes[0]), "shop/web-0");
    let web_0 = pods.iter().find(|p| p.metadata.name == "web-0").unwrap();
    let mut without = filter.clone();
    without.remove_pod(web_0, &nodes[0]);
    assert_eq!(named(&without, &nodes[0]), "shop/web-extra");
}
