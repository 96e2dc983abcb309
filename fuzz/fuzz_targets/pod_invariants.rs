//! Structure-aware: random pods built from small vocabularies (labels,
//! node selector, node and pod (anti-)affinity, spread constraints,
//! tolerations, requests, priority), sent as request bodies through filter,
//! prioritize and preempt on a small fixed cluster. The answers must keep
//! their contract whatever the pod:
//! - filter: every candidate exactly once among feasible / failed /
//!   unresolvable, or an `Error` and nothing else;
//! - prioritize: one score per candidate, in request order, each 0..10;
//! - preempt: only asked-for nodes, each victim a pod bound to the node it
//!   is listed under, listed once, of strictly lower priority, most
//!   important first; PDB violations at most the victims; nothing for
//!   `preemptionPolicy: Never`; one node at most with `answer: best`.
#![no_main]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::LazyLock;

use arbitrary::Arbitrary;
use jiff::Timestamp;
use kube_arbiter::api::extender::{filter, prioritize_body};
use kube_arbiter::api::preempt::answer;
use kube_arbiter::cluster::Snapshot;
use kube_arbiter::config::{Config, PreemptionAnswer};
use kube_arbiter::model::RecentNodes;
use kube_arbiter::parallel::Splitter;
use kube_arbiter_fuzz::load;
use libfuzzer_sys::fuzz_target;
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

const ZONE: &str = "topology.kubernetes.io/zone";
const HOST: &str = "kubernetes.io/hostname";

/// Candidate names: the cluster's five nodes and one it does not know.
const NODES: [&str; 6] = ["n0", "n1", "n2", "n3", "n4", "ghost"];
const NAMESPACES: [&str; 3] = ["ns-a", "ns-b", "ns-c"];
const POD_KEYS: [&str; 3] = ["app", "tier", "track"];
const POD_VALUES: [&str; 4] = ["web", "db", "cache", "canary"];
const NODE_KEYS: [&str; 5] = [ZONE, HOST, "disk", "gpu", "cores"];
const NODE_VALUES: [&str; 8] = ["z0", "z1", "n0", "n3", "ssd", "true", "4", "-1"];
const TOPOLOGY_KEYS: [&str; 5] = [ZONE, HOST, "disk", "missing", ""];
const NODE_OPS: [&str; 7] = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Near"];
const LABEL_OPS: [&str; 5] = ["In", "NotIn", "Exists", "DoesNotExist", "Like"];
const TAINT_KEYS: [&str; 3] = ["dedicated", "maintenance", ""];
const EFFECTS: [&str; 4] = ["NoSchedule", "PreferNoSchedule", "NoExecute", ""];
const PRIORITIES: [i32; 6] = [0, 100, 1000, 1_000_000, -5, i32::MAX];
const POLICIES: [Option<&str>; 3] = [None, Some("Honor"), Some("Ignore")];
const PREEMPTION: [Option<&str>; 3] = [None, Some("PreemptLowerPriority"), Some("Never")];

fn pick<T: Copy>(vocabulary: &[T], i: u8) -> T {
    vocabulary[usize::from(i) % vocabulary.len()]
}

#[derive(Debug, Arbitrary)]
struct Input {
    pod: PodIn,
    candidates: Vec<u8>,
    nodes_mode: bool,
    meta_victims: bool,
    best_only: bool,
}

#[derive(Debug, Arbitrary)]
struct PodIn {
    namespace: u8,
    labels: Vec<(u8, u8)>,
    node_selector: Vec<(u8, u8)>,
    required_node_terms: Option<Vec<Vec<NodeReq>>>,
    preferred_node_terms: Vec<(u8, Vec<NodeReq>)>,
    affinity: Vec<PodTerm>,
    anti_affinity: Vec<PodTerm>,
    preferred_affinity: Vec<(u8, PodTerm)>,
    preferred_anti_affinity: Vec<(u8, PodTerm)>,
    spread: Vec<Spread>,
    tolerations: Vec<Toleration>,
    cpu_milli: u16,
    memory_mi: u16,
    priority: Option<u8>,
    preemption_policy: u8,
}

#[derive(Debug, Arbitrary)]
struct NodeReq {
    key: u8,
    op: u8,
    values: Vec<u8>,
}

#[derive(Debug, Arbitrary)]
struct Selector {
    match_labels: Vec<(u8, u8)>,
    expressions: Vec<(u8, u8, Vec<u8>)>,
}

#[derive(Debug, Arbitrary)]
struct PodTerm {
    selector: Option<Selector>,
    namespaces: Vec<u8>,
    namespace_selector: Option<Selector>,
    topology_key: u8,
    match_label_keys: Vec<u8>,
    mismatch_label_keys: Vec<u8>,
}

#[derive(Debug, Arbitrary)]
struct Spread {
    max_skew: i8,
    topology_key: u8,
    do_not_schedule: bool,
    selector: Option<Selector>,
    min_domains: Option<i8>,
    node_affinity_policy: u8,
    node_taints_policy: u8,
    match_label_keys: Vec<u8>,
}

#[derive(Debug, Arbitrary)]
struct Toleration {
    key: u8,
    exists: bool,
    value: bool,
    effect: u8,
}

// The pod is written straight from these borrowed shapes into the request
// bodies: no `Value` tree is built, cloned or dropped per input.

type Labels = BTreeMap<&'static str, &'static str>;

/// A label map; a key picked twice keeps its last value, as a JSON object
/// built key by key would.
fn labels(pairs: &[(u8, u8)], keys: &[&'static str], values: &[&'static str]) -> Labels {
    pairs
        .iter()
        .map(|&(k, v)| (pick(keys, k), pick(values, v)))
        .collect()
}

#[derive(Serialize)]
struct Expression {
    key: &'static str,
    operator: &'static str,
    values: Vec<&'static str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct NodeTerm {
    match_expressions: Vec<Expression>,
}

fn node_term(reqs: &[NodeReq]) -> NodeTerm {
    NodeTerm {
        match_expressions: reqs
            .iter()
            .map(|r| Expression {
                key: pick(&NODE_KEYS, r.key),
                operator: pick(&NODE_OPS, r.op),
                values: r.values.iter().map(|&v| pick(&NODE_VALUES, v)).collect(),
            })
            .collect(),
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LabelSelector {
    match_labels: Labels,
    match_expressions: Vec<Expression>,
}

fn selector(s: &Selector) -> LabelSelector {
    LabelSelector {
        match_labels: labels(&s.match_labels, &POD_KEYS, &POD_VALUES),
        match_expressions: s
            .expressions
            .iter()
            .map(|(k, op, values)| Expression {
                key: pick(&POD_KEYS, *k),
                operator: pick(&LABEL_OPS, *op),
                values: values.iter().map(|&v| pick(&POD_VALUES, v)).collect(),
            })
            .collect(),
    }
}

fn keys(picks: &[u8]) -> Vec<&'static str> {
    picks.iter().map(|&k| pick(&POD_KEYS, k)).collect()
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PodAffinityTerm {
    topology_key: &'static str,
    namespaces: Vec<&'static str>,
    match_label_keys: Vec<&'static str>,
    mismatch_label_keys: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    label_selector: Option<LabelSelector>,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace_selector: Option<LabelSelector>,
}

fn pod_term(t: &PodTerm) -> PodAffinityTerm {
    PodAffinityTerm {
        topology_key: pick(&TOPOLOGY_KEYS, t.topology_key),
        namespaces: t.namespaces.iter().map(|&n| pick(&NAMESPACES, n)).collect(),
        match_label_keys: keys(&t.match_label_keys),
        mismatch_label_keys: keys(&t.mismatch_label_keys),
        label_selector: t.selector.as_ref().map(selector),
        namespace_selector: t.namespace_selector.as_ref().map(selector),
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WeightedTerm {
    weight: u8,
    pod_affinity_term: PodAffinityTerm,
}

fn weighted(terms: &[(u8, PodTerm)]) -> Vec<WeightedTerm> {
    terms
        .iter()
        .map(|(w, t)| WeightedTerm {
            weight: *w,
            pod_affinity_term: pod_term(t),
        })
        .collect()
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SpreadConstraint {
    max_skew: i8,
    topology_key: &'static str,
    when_unsatisfiable: &'static str,
    match_label_keys: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    label_selector: Option<LabelSelector>,
    #[serde(skip_serializing_if = "Option::is_none")]
    min_domains: Option<i8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    node_affinity_policy: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    node_taints_policy: Option<&'static str>,
}

fn spread(s: &Spread) -> SpreadConstraint {
    SpreadConstraint {
        max_skew: s.max_skew,
        topology_key: pick(&TOPOLOGY_KEYS, s.topology_key),
        when_unsatisfiable: if s.do_not_schedule {
            "DoNotSchedule"
        } else {
            "ScheduleAnyway"
        },
        match_label_keys: keys(&s.match_label_keys),
        label_selector: s.selector.as_ref().map(selector),
        min_domains: s.min_domains,
        node_affinity_policy: pick(&POLICIES, s.node_affinity_policy),
        node_taints_policy: pick(&POLICIES, s.node_taints_policy),
    }
}

#[derive(Serialize)]
struct TolerationOut {
    key: &'static str,
    effect: &'static str,
    operator: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<&'static str>,
}

fn toleration(t: &Toleration) -> TolerationOut {
    TolerationOut {
        key: pick(&TAINT_KEYS, t.key),
        effect: pick(&EFFECTS, t.effect),
        operator: if t.exists { "Exists" } else { "Equal" },
        value: (!t.exists).then_some(if t.value { "gpu" } else { "" }),
    }
}

/// Required and preferred terms under one `pod(Anti)Affinity` or
/// `nodeAffinity` key.
#[derive(Serialize)]
struct Terms<R, P> {
    #[serde(
        rename = "requiredDuringSchedulingIgnoredDuringExecution",
        skip_serializing_if = "Option::is_none"
    )]
    required: Option<R>,
    #[serde(rename = "preferredDuringSchedulingIgnoredDuringExecution")]
    preferred: Vec<P>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct NodeSelector {
    node_selector_terms: Vec<NodeTerm>,
}

#[derive(Serialize)]
struct PreferredNodeTerm {
    weight: u8,
    preference: NodeTerm,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Affinity {
    pod_affinity: Terms<Vec<PodAffinityTerm>, WeightedTerm>,
    pod_anti_affinity: Terms<Vec<PodAffinityTerm>, WeightedTerm>,
    node_affinity: Terms<NodeSelector, PreferredNodeTerm>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Spec {
    node_selector: Labels,
    affinity: Affinity,
    topology_spread_constraints: Vec<SpreadConstraint>,
    tolerations: Vec<TolerationOut>,
    containers: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    priority: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    preemption_policy: Option<&'static str>,
}

#[derive(Serialize)]
struct Metadata {
    name: &'static str,
    namespace: &'static str,
    uid: &'static str,
    labels: Labels,
}

#[derive(Serialize)]
struct PodOut {
    metadata: Metadata,
    spec: Spec,
    status: Status,
}

#[derive(Serialize)]
struct Status {
    phase: &'static str,
}

fn pod(p: &PodIn) -> PodOut {
    let affinity = Affinity {
        pod_affinity: Terms {
            required: Some(p.affinity.iter().map(pod_term).collect()),
            preferred: weighted(&p.preferred_affinity),
        },
        pod_anti_affinity: Terms {
            required: Some(p.anti_affinity.iter().map(pod_term).collect()),
            preferred: weighted(&p.preferred_anti_affinity),
        },
        node_affinity: Terms {
            required: p.required_node_terms.as_ref().map(|terms| NodeSelector {
                node_selector_terms: terms.iter().map(|t| node_term(t)).collect(),
            }),
            preferred: p
                .preferred_node_terms
                .iter()
                .map(|(w, reqs)| PreferredNodeTerm {
                    weight: *w,
                    preference: node_term(reqs),
                })
                .collect(),
        },
    };
    PodOut {
        metadata: Metadata {
            name: "incoming",
            namespace: pick(&NAMESPACES, p.namespace),
            uid: "uid-incoming",
            labels: labels(&p.labels, &POD_KEYS, &POD_VALUES),
        },
        spec: Spec {
            node_selector: labels(&p.node_selector, &NODE_KEYS, &NODE_VALUES),
            affinity,
            topology_spread_constraints: p.spread.iter().map(spread).collect(),
            tolerations: p.tolerations.iter().map(toleration).collect(),
            containers: json!([{"name": "main", "resources": {"requests": {
                "cpu": format!("{}m", p.cpu_milli), "memory": format!("{}Mi", p.memory_mi)}}}]),
            priority: p.priority.map(|i| pick(&PRIORITIES, i)),
            preemption_policy: pick(&PREEMPTION, p.preemption_policy),
        },
        status: Status { phase: "Pending" },
    }
}

/// A node of the fixed cluster (or `ghost`, which only requests name).
fn node_object(name: &str) -> Value {
    let i: usize = name[1..].parse().unwrap_or(9);
    let mut labels = json!({HOST: name, "cores": (i + 1).to_string()});
    if i < 4 {
        labels[ZONE] = json!(format!("z{}", i / 2));
    }
    if i % 2 == 0 {
        labels["disk"] = json!("ssd");
    }
    let taints = match i {
        3 => json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
        1 => json!([{"key": "maintenance", "effect": "PreferNoSchedule"}]),
        _ => json!([]),
    };
    if i == 3 {
        labels["gpu"] = json!("true");
    }
    json!({"kind": "Node", "metadata": {"name": name, "labels": labels},
           "spec": {"taints": taints, "unschedulable": i == 4},
           "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "6"}}})
}

/// Five nodes in two zones (one without a zone, unschedulable), pods of
/// three apps at three priorities, a PDB, PriorityClasses and namespaces.
static CLUSTER: LazyLock<Snapshot> = LazyLock::new(|| {
    let mut items: Vec<Value> = NODES[..5].iter().map(|n| node_object(n)).collect();
    let running = [
        ("web-0", "ns-a", "web", "n0", 100),
        ("web-1", "ns-a", "web", "n1", 100),
        ("web-2", "ns-a", "web", "n2", 100),
        ("db-0", "ns-a", "db", "n0", 1000),
        ("db-1", "ns-a", "db", "n2", 1000),
        ("cache-0", "ns-b", "cache", "n1", 0),
        ("cache-1", "ns-b", "cache", "n3", 0),
        ("batch-0", "ns-c", "canary", "n2", 0),
        ("batch-1", "ns-c", "canary", "n4", 0),
    ];
    for (name, ns, app, node, priority) in running {
        let mut spec = json!({"nodeName": node, "priority": priority,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "600m", "memory": "1Gi"}}}]});
        if app == "db" {
            spec["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": HOST}]}});
        }
        items.push(json!({"kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{name}"),
                         "labels": {"app": app, "tier": if priority > 0 { "prod" } else { "dev" }}},
            "spec": spec,
            "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}}));
    }
    items.push(
        json!({"kind": "PodDisruptionBudget", "apiVersion": "policy/v1",
        "metadata": {"name": "web", "namespace": "ns-a"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
        "status": {"disruptionsAllowed": 1}}),
    );
    for (name, value) in [("low", 0), ("mid", 100), ("high", 1000)] {
        items.push(
            json!({"kind": "PriorityClass", "apiVersion": "scheduling.k8s.io/v1",
            "metadata": {"name": name}, "value": value}),
        );
    }
    for (ns, team) in [("ns-a", "shop"), ("ns-b", "shop"), ("ns-c", "batch")] {
        items.push(json!({"kind": "Namespace", "metadata": {"name": ns, "labels": {"app": team}}}));
    }
    load(&json!({"kind": "List", "items": items}).to_string())
});

/// The configurations asked with: every candidate, or the best one.
static ALL: LazyLock<Config> = LazyLock::new(Config::default);
static BEST: LazyLock<Config> = LazyLock::new(|| {
    let mut config = Config::default();
    config.preemption.answer = PreemptionAnswer::Best;
    config
});

/// Each candidate's Node object as a Nodes-mode request carries it,
/// encoded once per process.
static NODE_JSON: LazyLock<Vec<String>> =
    LazyLock::new(|| NODES.iter().map(|n| node_object(n).to_string()).collect());

/// kube-scheduler's own victims for each candidate: the node's pods, full
/// (`Victims`) or as UIDs (`MetaVictims`), encoded once per process. The
/// answer must not depend on them.
static VICTIMS: LazyLock<Vec<[String; 2]>> = LazyLock::new(|| {
    NODES
        .iter()
        .map(|node| {
            let pods: Vec<_> = NAMESPACES
                .iter()
                .flat_map(|ns| CLUSTER.pods_in_namespace(ns))
                .filter(|r| r.pod.spec.node_name == *node)
                .map(|r| &r.pod.metadata)
                .collect();
            let full: Vec<Value> = pods
                .iter()
                .map(|m| json!({"metadata": {"name": m.name, "namespace": m.namespace, "uid": m.uid}}))
                .collect();
            let meta: Vec<Value> = pods.iter().map(|m| json!({"UID": m.uid})).collect();
            [
                json!({"Pods": full, "NumPDBViolations": 0}).to_string(),
                json!({"Pods": meta, "NumPDBViolations": 0}).to_string(),
            ]
        })
        .collect()
});

fuzz_target!(|input: Input| check(&input));

fn check(input: &Input) {
    // Candidates as indexes into NODES, first occurrence kept.
    let mut picked = Vec::new();
    for &i in &input.candidates {
        let index = usize::from(i) % NODES.len();
        if !picked.contains(&index) {
            picked.push(index);
        }
    }
    let candidates: Vec<&str> = picked.iter().map(|&i| NODES[i]).collect();
    let pod = pod(&input.pod);
    // The pod is encoded once; the bodies are spliced around it.
    let pod_json = serde_json::to_string(&pod).expect("a pod encodes");
    let body = if input.nodes_mode {
        let items: Vec<&str> = picked.iter().map(|&i| NODE_JSON[i].as_str()).collect();
        format!(
            r#"{{"Pod":{pod_json},"Nodes":{{"items":[{}]}}}}"#,
            items.join(",")
        )
    } else {
        let names = serde_json::to_string(&candidates).expect("names encode");
        format!(r#"{{"Pod":{pod_json},"NodeNames":{names}}}"#)
    };
    let config = if input.best_only { &*BEST } else { &*ALL };
    check_filter(body.as_bytes(), &candidates, config);
    check_prioritize(body.as_bytes(), &candidates, config);
    let form = usize::from(input.meta_victims);
    let victims: Vec<String> = picked
        .iter()
        .map(|&i| format!(r#""{}":{}"#, NODES[i], VICTIMS[i][form]))
        .collect();
    let field = if input.meta_victims {
        "NodeNameToMetaVictims"
    } else {
        "NodeNameToVictims"
    };
    let body = format!(
        r#"{{"Pod":{pod_json},"{field}":{{{}}}}}"#,
        victims.join(",")
    );
    check_preempt(&pod, body.as_bytes(), &candidates, config);
}

/// The filter answer as kube-scheduler reads it: every field it reads,
/// with the types it expects (anything else fails to decode).
#[derive(Deserialize)]
struct FilterAnswer {
    #[serde(rename = "NodeNames", default)]
    node_names: Option<Vec<String>>,
    #[serde(rename = "Nodes", default)]
    nodes: Option<NodeList>,
    #[serde(rename = "FailedNodes")]
    failed: HashMap<String, IgnoredAny>,
    #[serde(rename = "FailedAndUnresolvableNodes")]
    unresolvable: HashMap<String, IgnoredAny>,
    #[serde(rename = "Error")]
    error: String,
}

#[derive(Deserialize)]
struct NodeList {
    items: Vec<NamedObject>,
}

#[derive(Deserialize)]
struct NamedObject {
    metadata: Name,
}

#[derive(Deserialize)]
struct Name {
    name: String,
}

/// An answer the server would send decodes as kube-scheduler reads it.
fn decode<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> T {
    match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => panic!(
            "the answer does not decode ({e}): {}",
            String::from_utf8_lossy(bytes)
        ),
    }
}

/// Judged on the answer as kube-scheduler reads it (the JSON), which is
/// the contract whatever the result type looks like inside.
fn check_filter(body: &[u8], candidates: &[&str], config: &Config) {
    let result = filter(
        Some(&CLUSTER),
        &config.scheduling,
        body,
        &RecentNodes::default(),
        &Splitter::default(),
    );
    let json = result
        .to_json(body.len())
        .expect("the filter answer encodes");
    let answer: FilterAnswer = decode(&json);
    let shown = || String::from_utf8_lossy(&json).into_owned();
    if !answer.error.is_empty() {
        assert!(
            answer.node_names.is_none() && answer.nodes.is_none(),
            "{}",
            shown()
        );
        assert!(
            answer.failed.is_empty() && answer.unresolvable.is_empty(),
            "{}",
            shown()
        );
        return;
    }
    let feasible: Vec<String> = match (answer.node_names, answer.nodes) {
        (Some(names), None) => names,
        (None, Some(list)) => list.items.into_iter().map(|n| n.metadata.name).collect(),
        _ => panic!("the answer is in neither mode: {}", shown()),
    };
    for name in candidates {
        let places = feasible.iter().filter(|f| f == name).count()
            + usize::from(answer.failed.contains_key(*name))
            + usize::from(answer.unresolvable.contains_key(*name));
        assert_eq!(places, 1, "{name} is not in exactly one place: {}", shown());
    }
    let total = feasible.len() + answer.failed.len() + answer.unresolvable.len();
    assert_eq!(
        total,
        candidates.len(),
        "an answer names a node not asked about: {}",
        shown()
    );
}

fn check_prioritize(body: &[u8], candidates: &[&str], config: &Config) {
    let Ok(scores) = prioritize_body(
        &CLUSTER,
        &config.scheduling,
        body,
        &RecentNodes::default(),
        &Splitter::default(),
    ) else {
        return;
    };
    let hosts: Vec<&str> = scores.iter().map(|h| &*h.host).collect();
    assert_eq!(
        hosts, candidates,
        "one score per candidate, in request order"
    );
    for h in &scores {
        assert!((0..=10).contains(&h.score), "score out of 0..10: {h:?}");
    }
}

/// The preempt answer as kube-scheduler reads it.
#[derive(Deserialize)]
struct PreemptAnswer {
    #[serde(rename = "NodeNameToMetaVictims")]
    nodes: BTreeMap<String, MetaVictims>,
}

#[derive(Deserialize)]
struct MetaVictims {
    #[serde(rename = "Pods")]
    pods: Vec<MetaPod>,
    #[serde(rename = "NumPDBViolations")]
    violations: u64,
}

#[derive(Deserialize)]
struct MetaPod {
    #[serde(rename = "UID")]
    uid: String,
}

fn check_preempt(pod: &PodOut, body: &[u8], candidates: &[&str], config: &Config) {
    let now = Timestamp::from_second(1_800_000_000).expect("a fixed valid instant");
    let Ok(result) = answer(&CLUSTER, config, body, now) else {
        return;
    };
    let json = result.to_json();
    let answer: PreemptAnswer = decode(&json);
    let shown = || String::from_utf8_lossy(&json).into_owned();
    if config.preemption.answer == PreemptionAnswer::Best {
        assert!(
            answer.nodes.len() <= 1,
            "best answers one node: {}",
            shown()
        );
    }
    let preemptor = i64::from(pod.spec.priority.unwrap_or(0));
    if pod.spec.preemption_policy == Some("Never") {
        assert!(
            answer.nodes.is_empty(),
            "preemptionPolicy Never preempts nothing: {}",
            shown()
        );
    }
    for (node, victims) in &answer.nodes {
        assert!(
            candidates.contains(&node.as_str()),
            "{node} was not asked about: {}",
            shown()
        );
        assert!(
            victims.violations as usize <= victims.pods.len(),
            "{}",
            shown()
        );
        let mut uids = BTreeSet::new();
        let mut last = i64::MAX;
        for v in &victims.pods {
            let uid = v.uid.as_str();
            assert!(uids.insert(uid), "victim {uid} listed twice: {}", shown());
            let victim = CLUSTER.pod_by_uid(uid).map(|r| &r.pod);
            assert_eq!(
                victim.map(|p| p.spec.node_name.as_str()),
                Some(node.as_str()),
                "victim {uid} is not a pod of {node}: {}",
                shown()
            );
            // Only strictly lower priorities, most important first (all
            // pods of the cluster started at the same time).
            let priority = i64::from(victim.map_or(0, |p| p.priority()));
            assert!(
                priority < preemptor,
                "victim {uid} is not of lower priority: {}",
                shown()
            );
            assert!(
                priority <= last,
                "victims are not most important first: {}",
                shown()
            );
            last = priority;
        }
    }
}
