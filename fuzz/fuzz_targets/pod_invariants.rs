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

use std::collections::{BTreeSet, HashSet};
use std::sync::LazyLock;

use arbitrary::Arbitrary;
use jiff::Timestamp;
use kube_arbiter::api::extender::{filter, prioritize_body};
use kube_arbiter::api::preempt::answer;
use kube_arbiter::cluster::Snapshot;
use kube_arbiter::config::{Config, PreemptionAnswer};
use kube_arbiter_fuzz::{assert_json, load};
use libfuzzer_sys::fuzz_target;
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

fn labels(pairs: &[(u8, u8)], keys: &[&str], values: &[&str]) -> Value {
    pairs
        .iter()
        .map(|&(k, v)| (pick(keys, k).to_string(), json!(pick(values, v))))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

fn node_term(reqs: &[NodeReq]) -> Value {
    let exprs: Vec<Value> = reqs
        .iter()
        .map(|r| {
            json!({"key": pick(&NODE_KEYS, r.key), "operator": pick(&NODE_OPS, r.op),
                   "values": r.values.iter().map(|&v| pick(&NODE_VALUES, v)).collect::<Vec<_>>()})
        })
        .collect();
    json!({"matchExpressions": exprs})
}

fn selector(s: &Selector) -> Value {
    let exprs: Vec<Value> = s
        .expressions
        .iter()
        .map(|(k, op, values)| {
            json!({"key": pick(&POD_KEYS, *k), "operator": pick(&LABEL_OPS, *op),
                   "values": values.iter().map(|&v| pick(&POD_VALUES, v)).collect::<Vec<_>>()})
        })
        .collect();
    json!({"matchLabels": labels(&s.match_labels, &POD_KEYS, &POD_VALUES), "matchExpressions": exprs})
}

fn keys(picks: &[u8]) -> Vec<&'static str> {
    picks.iter().map(|&k| pick(&POD_KEYS, k)).collect()
}

fn pod_term(t: &PodTerm) -> Value {
    let mut term = json!({
        "topologyKey": pick(&TOPOLOGY_KEYS, t.topology_key),
        "namespaces": t.namespaces.iter().map(|&n| pick(&NAMESPACES, n)).collect::<Vec<_>>(),
        "matchLabelKeys": keys(&t.match_label_keys),
        "mismatchLabelKeys": keys(&t.mismatch_label_keys),
    });
    if let Some(s) = &t.selector {
        term["labelSelector"] = selector(s);
    }
    if let Some(s) = &t.namespace_selector {
        term["namespaceSelector"] = selector(s);
    }
    term
}

fn weighted(terms: &[(u8, PodTerm)]) -> Vec<Value> {
    terms
        .iter()
        .map(|(w, t)| json!({"weight": w, "podAffinityTerm": pod_term(t)}))
        .collect()
}

fn spread(s: &Spread) -> Value {
    let mut c = json!({
        "maxSkew": s.max_skew,
        "topologyKey": pick(&TOPOLOGY_KEYS, s.topology_key),
        "whenUnsatisfiable": if s.do_not_schedule { "DoNotSchedule" } else { "ScheduleAnyway" },
        "matchLabelKeys": keys(&s.match_label_keys),
    });
    if let Some(sel) = &s.selector {
        c["labelSelector"] = selector(sel);
    }
    if let Some(m) = s.min_domains {
        c["minDomains"] = json!(m);
    }
    if let Some(p) = pick(&POLICIES, s.node_affinity_policy) {
        c["nodeAffinityPolicy"] = json!(p);
    }
    if let Some(p) = pick(&POLICIES, s.node_taints_policy) {
        c["nodeTaintsPolicy"] = json!(p);
    }
    c
}

fn toleration(t: &Toleration) -> Value {
    let mut tol = json!({"key": pick(&TAINT_KEYS, t.key), "effect": pick(&EFFECTS, t.effect)});
    if t.exists {
        tol["operator"] = json!("Exists");
    } else {
        tol["operator"] = json!("Equal");
        tol["value"] = json!(if t.value { "gpu" } else { "" });
    }
    tol
}

fn pod(p: &PodIn) -> Value {
    let mut affinity = json!({
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": p.affinity.iter().map(pod_term).collect::<Vec<_>>(),
            "preferredDuringSchedulingIgnoredDuringExecution": weighted(&p.preferred_affinity),
        },
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": p.anti_affinity.iter().map(pod_term).collect::<Vec<_>>(),
            "preferredDuringSchedulingIgnoredDuringExecution": weighted(&p.preferred_anti_affinity),
        },
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": p.preferred_node_terms.iter()
                .map(|(w, reqs)| json!({"weight": w, "preference": node_term(reqs)}))
                .collect::<Vec<_>>(),
        },
    });
    if let Some(terms) = &p.required_node_terms {
        affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] =
            json!({"nodeSelectorTerms": terms.iter().map(|t| node_term(t)).collect::<Vec<_>>()});
    }
    let mut spec = json!({
        "nodeSelector": labels(&p.node_selector, &NODE_KEYS, &NODE_VALUES),
        "affinity": affinity,
        "topologySpreadConstraints": p.spread.iter().map(spread).collect::<Vec<_>>(),
        "tolerations": p.tolerations.iter().map(toleration).collect::<Vec<_>>(),
        "containers": [{"name": "main", "resources": {"requests": {
            "cpu": format!("{}m", p.cpu_milli), "memory": format!("{}Mi", p.memory_mi)}}}],
    });
    if let Some(i) = p.priority {
        spec["priority"] = json!(pick(&PRIORITIES, i));
    }
    if let Some(policy) = pick(&PREEMPTION, p.preemption_policy) {
        spec["preemptionPolicy"] = json!(policy);
    }
    json!({
        "metadata": {"name": "incoming", "namespace": pick(&NAMESPACES, p.namespace),
                     "uid": "uid-incoming", "labels": labels(&p.labels, &POD_KEYS, &POD_VALUES)},
        "spec": spec,
        "status": {"phase": "Pending"},
    })
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

fuzz_target!(|input: Input| check(&input));

fn check(input: &Input) {
    let mut seen = HashSet::new();
    let candidates: Vec<&str> = input
        .candidates
        .iter()
        .map(|&i| pick(&NODES, i))
        .filter(|n| seen.insert(*n))
        .collect();
    let pod = pod(&input.pod);
    let mut body = json!({"Pod": pod});
    if input.nodes_mode {
        body["Nodes"] =
            json!({"items": candidates.iter().map(|n| node_object(n)).collect::<Vec<_>>()});
    } else {
        body["NodeNames"] = json!(candidates);
    }
    let body = serde_json::to_vec(&body).expect("a JSON value encodes");
    let mut config = Config::default();
    if input.best_only {
        config.preemption.answer = PreemptionAnswer::Best;
    }
    check_filter(&body, &candidates, &config);
    check_prioritize(&body, &candidates, &config);
    check_preempt(&pod, &candidates, input.meta_victims, &config);
}

/// Judged on the answer as kube-scheduler reads it (the JSON), which is
/// the contract whatever the result type looks like inside.
fn check_filter(body: &[u8], candidates: &[&str], config: &Config) {
    let result = filter(Some(&CLUSTER), &config.scheduling, body);
    let answer = assert_json(&serde_json::to_vec(&result).expect("the filter answer encodes"));
    let failed = answer["FailedNodes"]
        .as_object()
        .expect("FailedNodes is a map");
    let unresolvable = answer["FailedAndUnresolvableNodes"]
        .as_object()
        .expect("FailedAndUnresolvableNodes is a map");
    if answer["Error"] != "" {
        assert!(
            answer["NodeNames"].is_null() && answer["Nodes"].is_null(),
            "{answer}"
        );
        assert!(failed.is_empty() && unresolvable.is_empty(), "{answer}");
        return;
    }
    let feasible: Vec<&str> = match (&answer["NodeNames"], &answer["Nodes"]) {
        (Value::Array(names), Value::Null) => names
            .iter()
            .map(|n| n.as_str().expect("a node name is a string"))
            .collect(),
        (Value::Null, Value::Object(list)) => list["items"]
            .as_array()
            .expect("Nodes.items is a list")
            .iter()
            .map(|n| n["metadata"]["name"].as_str().expect("a node has a name"))
            .collect(),
        _ => panic!("the answer is in neither mode: {answer}"),
    };
    for name in candidates {
        let places = feasible.iter().filter(|f| *f == name).count()
            + usize::from(failed.contains_key(*name))
            + usize::from(unresolvable.contains_key(*name));
        assert_eq!(places, 1, "{name} is not in exactly one place: {answer}");
    }
    let total = feasible.len() + failed.len() + unresolvable.len();
    assert_eq!(
        total,
        candidates.len(),
        "an answer names a node not asked about: {answer}"
    );
}

fn check_prioritize(body: &[u8], candidates: &[&str], config: &Config) {
    let Ok(scores) = prioritize_body(&CLUSTER, &config.scheduling, body) else {
        return;
    };
    let hosts: Vec<&str> = scores.iter().map(|h| h.host.as_str()).collect();
    assert_eq!(
        hosts, candidates,
        "one score per candidate, in request order"
    );
    for h in &scores {
        assert!((0..=10).contains(&h.score), "score out of 0..10: {h:?}");
    }
}

fn check_preempt(pod: &Value, candidates: &[&str], meta_victims: bool, config: &Config) {
    // kube-scheduler's own victims: the node's pods, full or as UIDs; the
    // answer must not depend on them.
    let victims = |node: &str| -> Value {
        let pods: Vec<Value> = NAMESPACES
            .iter()
            .flat_map(|ns| CLUSTER.pods_in_namespace(ns))
            .filter(|r| r.pod.spec.node_name == node)
            .map(|r| {
                let meta = &r.pod.metadata;
                if meta_victims {
                    json!({"UID": meta.uid})
                } else {
                    json!({"metadata": {"name": meta.name, "namespace": meta.namespace, "uid": meta.uid}})
                }
            })
            .collect();
        json!({"Pods": pods, "NumPDBViolations": 0})
    };
    let map: serde_json::Map<String, Value> = candidates
        .iter()
        .map(|n| (n.to_string(), victims(n)))
        .collect();
    let field = if meta_victims {
        "NodeNameToMetaVictims"
    } else {
        "NodeNameToVictims"
    };
    let body = serde_json::to_vec(&json!({"Pod": pod, field: map})).expect("a JSON value encodes");
    let now = Timestamp::from_second(1_800_000_000).expect("a fixed valid instant");
    let Ok(result) = answer(&CLUSTER, config, &body, now) else {
        return;
    };
    let answer = assert_json(&result.to_json());
    let nodes = answer["NodeNameToMetaVictims"]
        .as_object()
        .expect("a map of nodes");
    if config.preemption.answer == PreemptionAnswer::Best {
        assert!(nodes.len() <= 1, "best answers one node: {answer}");
    }
    let preemptor = pod["spec"]["priority"].as_i64().unwrap_or(0);
    if pod["spec"]["preemptionPolicy"] == "Never" {
        assert!(
            nodes.is_empty(),
            "preemptionPolicy Never preempts nothing: {answer}"
        );
    }
    for (node, victims) in nodes {
        assert!(
            candidates.contains(&node.as_str()),
            "{node} was not asked about: {answer}"
        );
        let victims = victims["Pods"].as_array().expect("Pods is a list");
        let violations = answer["NodeNameToMetaVictims"][node]["NumPDBViolations"]
            .as_u64()
            .expect("NumPDBViolations is a count");
        assert!(violations as usize <= victims.len(), "{answer}");
        let mut uids = BTreeSet::new();
        let mut last = i64::MAX;
        for v in victims {
            let uid = v["UID"].as_str().expect("a victim has a UID");
            assert!(uids.insert(uid), "victim {uid} listed twice: {answer}");
            let victim = CLUSTER.pod_by_uid(uid).map(|r| &r.pod);
            assert_eq!(
                victim.map(|p| p.spec.node_name.as_str()),
                Some(node.as_str()),
                "victim {uid} is not a pod of {node}: {answer}"
            );
            // Only strictly lower priorities, most important first (all
            // pods of the cluster started at the same time).
            let priority = i64::from(victim.map_or(0, |p| p.priority()));
            assert!(
                priority < preemptor,
                "victim {uid} is not of lower priority: {answer}"
            );
            assert!(
                priority <= last,
                "victims are not most important first: {answer}"
            );
            last = priority;
        }
    }
}
