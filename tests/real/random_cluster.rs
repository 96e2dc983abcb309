//! Random clusters and pods from a seed, for the differential test of the
//! filter (tests/real_differential.rs): nodes with zones, racks and other
//! labels (some missing, some not numbers), taints of every effect, some
//! cordoned; pods bound to them with labels and (anti-)affinity or spread
//! of their own, most Running, some Pending, finished or terminating; and
//! candidate pods with node selectors, node affinity (every operator,
//! `matchFields` on the node name), tolerations, required pod
//! (anti-)affinity with namespaces, namespace selectors, empty or absent
//! selectors and match/mismatchLabelKeys, and topology spread
//! (DoNotSchedule and ScheduleAnyway, minDomains, nodeAffinityPolicy,
//! nodeTaintsPolicy, matchLabelKeys).
//! Values come from small vocabularies so that selectors match, pods
//! select themselves and domains fill up. Resources are left out: every
//! node has room for every pod. The same seed and size give the same
//! objects.

use serde_json::{Value, json};

use super::rng::Rng;

pub const HOST: &str = "kubernetes.io/hostname";
pub const ZONE: &str = "topology.kubernetes.io/zone";
pub const RACK: &str = "example.com/rack";
const DISK: &str = "example.com/disk";
const GEN: &str = "example.com/generation";
const TOPOLOGY_KEYS: [&str; 3] = [HOST, ZONE, RACK];
const APPS: [&str; 4] = ["web", "api", "db", "cache"];

/// The namespaces and their `team` label (namespace selectors pick by it).
pub const NAMESPACES: [(&str, &str); 3] = [("diff-a", "a"), ("diff-b", "b"), ("diff-c", "a")];

/// The label that names each bound pod (`e0`, `e1`, ...), for finding
/// out whether a view has shown the last one yet.
pub const EXISTING_ID: &str = "example.com/existing";

/// Shipped in manifests/priorityclasses.yaml: `preemptionPolicy: Never`,
/// so a candidate kube-scheduler cannot place nominates no node.
const CANDIDATE_CLASS: &str = "low-priority";

const TAINTS: [(&str, &str, &str); 6] = [
    ("dedicated", "gpu", "NoSchedule"),
    ("dedicated", "infra", "NoExecute"),
    ("spot", "true", "PreferNoSchedule"),
    ("maintenance", "", "NoExecute"),
    ("flaky", "yes", "NoSchedule"),
    ("example.com/pool", "batch", "NoSchedule"),
];

#[derive(Debug, Clone, Copy)]
pub struct Size {
    pub nodes: usize,
    pub existing: usize,
    pub candidates: usize,
}

/// Objects to create, in this order.
pub struct RandomCluster {
    pub nodes: Vec<Value>,
    /// Pods with `spec.nodeName` set. The last one is Running and not
    /// terminating.
    pub existing: Vec<Bound>,
    /// Pods for kube-scheduler to place, none bound.
    pub candidates: Vec<Value>,
}

/// A pod on a node and what became of it.
pub struct Bound {
    pub pod: Value,
    /// The phase the kubelet would report (`None`: Pending, never started).
    pub phase: Option<&'static str>,
    /// Deleted once created, held by a finalizer ([`FINALIZER`]).
    pub terminating: bool,
}

/// Holds a terminating pod.
pub const FINALIZER: &str = "example.com/hold";

pub fn generate(seed: u64, size: Size) -> RandomCluster {
    let mut rng = Rng(seed);
    let nodes: Vec<Value> = (0..size.nodes).map(|i| node(&mut rng, i)).collect();
    let names: Vec<&str> = nodes
        .iter()
        .map(|n| n["metadata"]["name"].as_str().unwrap())
        .collect();
    let existing = (0..size.existing)
        .map(|i| existing(&mut rng, i, &names, i + 1 == size.existing))
        .collect();
    let candidates = (0..size.candidates)
        .map(|i| candidate(&mut rng, i, &names))
        .collect();
    RandomCluster {
        nodes,
        existing,
        candidates,
    }
}

fn node(rng: &mut Rng, i: usize) -> Value {
    let name = format!("n{i:02}");
    let mut labels =
        json!({HOST: name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"});
    if !rng.chance(12) {
        labels[ZONE] = json!(format!("z{}", rng.below(3)));
    }
    if rng.chance(60) {
        labels[RACK] = json!(format!("r{}", rng.below(4)));
    }
    if rng.chance(50) {
        labels[DISK] = json!(rng.pick(&["ssd", "hdd"]));
    }
    if rng.chance(70) {
        labels[GEN] = json!(rng.between((1, 5)).to_string());
    } else if rng.chance(20) {
        // Gt and Lt match no label that is not an integer.
        labels[GEN] = json!("beta");
    }
    let mut taints: Vec<Value> = Vec::new();
    let count = match rng.below(20) {
        0..=10 => 0,
        11..=17 => 1,
        _ => 2,
    };
    while taints.len() < count {
        let (key, value, effect) = TAINTS[rng.below(TAINTS.len() as u64) as usize];
        // Taints are unique by key and effect.
        if !taints
            .iter()
            .any(|t| t["key"] == key && t["effect"] == effect)
        {
            taints.push(json!({"key": key, "value": value, "effect": effect}));
        }
    }
    let capacity = json!({"cpu": "32", "memory": "64Gi", "pods": "110"});
    let now = jiff::Timestamp::now().to_string();
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints, "unschedulable": rng.chance(8)},
        "status": {
            "capacity": capacity, "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True",
                            "lastHeartbeatTime": now, "lastTransitionTime": now}],
        },
    })
}

fn pod_labels(rng: &mut Rng, app: &str) -> Value {
    let mut labels = json!({"app": app});
    if rng.chance(50) {
        labels["tier"] = json!(rng.pick(&["front", "back"]));
    }
    labels
}

fn pod(name: &str, ns: &str, labels: Value, spec: Value) -> Value {
    let mut full = json!({
        "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}],
        "terminationGracePeriodSeconds": 0,
    });
    full.as_object_mut()
        .unwrap()
        .extend(spec.as_object().unwrap().clone());
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": full,
    })
}

/// A bound pod: it tolerates every taint (the node may be tainted
/// NoExecute), and a quarter carry required anti-affinity, some required
/// affinity or spread (which only their own placement was held to).
fn existing(rng: &mut Rng, i: usize, nodes: &[&str], last: bool) -> Bound {
    let (ns, _) = NAMESPACES[rng.below(3) as usize];
    let app = rng.pick(&APPS);
    let mut labels = pod_labels(rng, app);
    labels[EXISTING_ID] = json!(format!("e{i}"));
    let mut spec = json!({
        "nodeName": rng.pick(nodes),
        "tolerations": [{"operator": "Exists"}],
    });
    if rng.chance(25) {
        spec["affinity"]["podAntiAffinity"] =
            json!({"requiredDuringSchedulingIgnoredDuringExecution": [pod_term(rng, app)]});
    }
    if rng.chance(10) {
        spec["affinity"]["podAffinity"] =
            json!({"requiredDuringSchedulingIgnoredDuringExecution": [pod_term(rng, app)]});
    }
    if rng.chance(10) {
        spec["topologySpreadConstraints"] = json!([spread(rng, app, ZONE)]);
    }
    let mut pod = pod(&format!("e{i}"), ns, labels, spec);
    let (phase, terminating) = match rng.below(100) {
        _ if last => (Some("Running"), false),
        0..=4 => (None, false),
        5..=8 => (Some("Succeeded"), false),
        9..=10 => (Some("Failed"), false),
        11..=18 => (Some("Running"), true),
        _ => (Some("Running"), false),
    };
    if terminating {
        pod["metadata"]["finalizers"] = json!([FINALIZER]);
    }
    Bound {
        pod,
        phase,
        terminating,
    }
}

fn candidate(rng: &mut Rng, i: usize, nodes: &[&str]) -> Value {
    let (ns, _) = NAMESPACES[rng.below(3) as usize];
    let app = rng.pick(&APPS);
    let labels = pod_labels(rng, app);
    let mut spec = json!({"priorityClassName": CANDIDATE_CLASS});
    if rng.chance(20) {
        let (key, value) = *rng.pick(&[&(DISK, "ssd"), &(ZONE, "z1"), &(RACK, "r0"), &(GEN, "3")]);
        spec["nodeSelector"] = json!({key: value});
    }
    if rng.chance(30) {
        // Every term naming nodes: kube-scheduler's PreFilter then looks
        // at those nodes only.
        let named = rng.chance(20);
        let terms: Vec<Value> = (0..rng.between((1, 2)))
            .map(|_| node_term(rng, nodes, named))
            .collect();
        spec["affinity"]["nodeAffinity"] = json!({
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms},
        });
    }
    if rng.chance(50) {
        let mut tolerations: Vec<Value> = Vec::new();
        for _ in 0..rng.between((1, 2)) {
            let t = toleration(rng);
            if !tolerations.contains(&t) {
                tolerations.push(t);
            }
        }
        spec["tolerations"] = json!(tolerations);
    }
    if rng.chance(20) {
        let terms: Vec<Value> = (0..rng.between((1, 2)))
            .map(|_| pod_term(rng, app))
            .collect();
        spec["affinity"]["podAffinity"] =
            json!({"requiredDuringSchedulingIgnoredDuringExecution": terms});
    }
    if rng.chance(30) {
        let terms: Vec<Value> = (0..rng.between((1, 2)))
            .map(|_| pod_term(rng, app))
            .collect();
        spec["affinity"]["podAntiAffinity"] =
            json!({"requiredDuringSchedulingIgnoredDuringExecution": terms});
    }
    if rng.chance(45) {
        // One constraint per topology key (the API refuses two with the
        // same key and whenUnsatisfiable).
        let first = rng.below(3) as usize;
        let mut keys = vec![TOPOLOGY_KEYS[first]];
        if rng.chance(35) {
            keys.push(TOPOLOGY_KEYS[(first + 1 + rng.below(2) as usize) % 3]);
        }
        let constraints: Vec<Value> = keys.iter().map(|k| spread(rng, app, k)).collect();
        spec["topologySpreadConstraints"] = json!(constraints);
    }
    pod(&format!("c{i:03}"), ns, labels, spec)
}

/// A node selector term: one or two requirements on labels, a
/// requirement on the node's name (always `In` when `named`), or nothing
/// at all (which matches no node).
fn node_term(rng: &mut Rng, nodes: &[&str], named: bool) -> Value {
    let mut term = json!({});
    if !named && rng.chance(3) {
        return term;
    }
    if named || rng.chance(70) {
        let requirements: Vec<Value> = (0..rng.between((1, 2)))
            .map(|_| node_requirement(rng))
            .collect();
        term["matchExpressions"] = json!(requirements);
    }
    if named || term.get("matchExpressions").is_none() || rng.chance(10) {
        // n99 is no node's name.
        let name = if rng.chance(10) {
            "n99"
        } else {
            rng.pick(nodes)
        };
        let operator = if named || rng.chance(60) {
            "In"
        } else {
            "NotIn"
        };
        term["matchFields"] =
            json!([{"key": "metadata.name", "operator": operator, "values": [name]}]);
    }
    term
}

/// One node selector requirement, every operator, on keys some nodes lack.
fn node_requirement(rng: &mut Rng) -> Value {
    match rng.below(6) {
        0 => {
            // z3 is no node's zone.
            let values = distinct(rng, &["z0", "z1", "z2", "z3"]);
            json!({"key": ZONE, "operator": "In", "values": values})
        }
        1 => {
            let values = distinct(rng, &["r0", "r1", "r2", "r3"]);
            json!({"key": RACK, "operator": "NotIn", "values": values})
        }
        2 => json!({"key": rng.pick(&[RACK, DISK, GEN, ZONE]), "operator": "Exists"}),
        3 => json!({"key": rng.pick(&[RACK, DISK, GEN]), "operator": "DoesNotExist"}),
        4 => json!({"key": GEN, "operator": "Gt", "values": [rng.between((1, 4)).to_string()]}),
        _ => json!({"key": GEN, "operator": "Lt", "values": [rng.between((2, 5)).to_string()]}),
    }
}

fn toleration(rng: &mut Rng) -> Value {
    match rng.below(8) {
        0 => {
            json!({"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"})
        }
        1 => json!({"key": "dedicated", "operator": "Exists"}),
        2 => json!({"key": "maintenance", "operator": "Exists", "effect": "NoExecute",
                    "tolerationSeconds": 300}),
        3 => json!({"key": "flaky", "operator": "Equal", "value": "yes"}),
        4 => json!({"operator": "Exists"}),
        5 => {
            json!({"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"})
        }
        6 => {
            json!({"key": "example.com/pool", "operator": "Equal", "value": "batch", "effect": "NoSchedule"})
        }
        _ => {
            json!({"key": "spot", "operator": "Equal", "value": "true", "effect": "PreferNoSchedule"})
        }
    }
}

/// A required pod (anti-)affinity term: a selector that often names the
/// pod's own app (sometimes empty, matching every pod, or absent,
/// matching none; sometimes narrowed by the pod's own `tier` through
/// match/mismatchLabelKeys), a topology key, and the namespaces it looks
/// in (its own, a list, all, those of a team, or a list and a team).
fn pod_term(rng: &mut Rng, own_app: &str) -> Value {
    let mut term = json!({"topologyKey": rng.pick(&TOPOLOGY_KEYS)});
    match rng.below(20) {
        0 => term["labelSelector"] = json!({}),
        1 => {}
        _ => {
            let selector = pod_selector(rng, own_app);
            let names_tier = selector.to_string().contains("tier");
            term["labelSelector"] = selector;
            if !names_tier && rng.chance(15) {
                let keys = if rng.chance(50) {
                    "matchLabelKeys"
                } else {
                    "mismatchLabelKeys"
                };
                term[keys] = json!(["tier"]);
            }
        }
    }
    let names: Vec<&str> = NAMESPACES.iter().map(|(n, _)| *n).collect();
    match rng.below(6) {
        0 | 1 => {}
        2 => term["namespaces"] = json!(distinct(rng, &names)),
        3 => term["namespaceSelector"] = json!({}),
        4 => {
            term["namespaceSelector"] = json!({"matchLabels": {"team": rng.pick(&["a", "b"])}});
        }
        _ => {
            term["namespaces"] = json!([rng.pick(&names)]);
            term["namespaceSelector"] = json!({"matchExpressions": [
                {"key": "team", "operator": "NotIn", "values": [rng.pick(&["a", "b"])]},
            ]});
        }
    }
    term
}

fn pod_selector(rng: &mut Rng, own_app: &str) -> Value {
    let app = if rng.chance(50) {
        own_app
    } else {
        rng.pick(&APPS)
    };
    match rng.below(4) {
        0 | 1 => json!({"matchLabels": {"app": app}}),
        2 => {
            let mut values = vec![app, rng.pick(&APPS)];
            values.dedup();
            json!({"matchExpressions": [{"key": "app", "operator": "In", "values": values}]})
        }
        _ => json!({
            "matchLabels": {"app": app},
            "matchExpressions": [{"key": "tier", "operator": rng.pick(&["Exists", "DoesNotExist"])}],
        }),
    }
}

fn spread(rng: &mut Rng, own_app: &str, key: &str) -> Value {
    let hard = rng.chance(85);
    let mut constraint = json!({
        "maxSkew": *rng.pick(&[&1, &1, &1, &2, &3]),
        "topologyKey": key,
        "whenUnsatisfiable": if hard { "DoNotSchedule" } else { "ScheduleAnyway" },
    });
    // Absent, the selector counts no pod.
    if !rng.chance(5) {
        let selector = pod_selector(rng, own_app);
        if !selector.to_string().contains("tier") && rng.chance(15) {
            constraint["matchLabelKeys"] = json!(["tier"]);
        }
        constraint["labelSelector"] = selector;
    }
    if hard && rng.chance(30) {
        constraint["minDomains"] = json!(rng.between((1, 5)));
    }
    if rng.chance(50) {
        constraint["nodeAffinityPolicy"] = json!(rng.pick(&["Honor", "Ignore"]));
    }
    if rng.chance(50) {
        constraint["nodeTaintsPolicy"] = json!(rng.pick(&["Honor", "Ignore"]));
    }
    constraint
}

/// One or two different items.
fn distinct<'a>(rng: &mut Rng, items: &[&'a str]) -> Vec<&'a str> {
    let mut picked = vec![rng.pick(items)];
    if rng.chance(50) {
        let second = rng.pick(items);
        if !picked.contains(&second) {
            picked.push(second);
        }
    }
    picked
}
