//! One builder for the objects tests need, after upstream's
//! `pkg/scheduler/testing/wrappers.go` (`MakeNode().Name("n1").Label(..).Obj()`,
//! `MakePod().Namespace("ns").Name("p").Node("n1").Obj()`): a new case is one
//! line, and every test reads the same way.
//!
//! Each builder writes the object's Kubernetes JSON and decodes it in
//! `obj()`, so a test object goes through the decoder a served one does
//! (defaults, `null` lists, shared parts). `json()` gives the JSON itself,
//! for tests that send it: integration tests load it into the fake API
//! server, write it to a cluster-state file or post it to the server.

use serde_json::{Value, json};

use crate::cluster::{ClusterObjects, Snapshot};
use crate::model::{Namespace, Node, Pod};

pub const HOSTNAME: &str = "kubernetes.io/hostname";
pub const ZONE: &str = "topology.kubernetes.io/zone";

/// A Node named `name`, with no labels yet.
pub fn make_node(name: &str) -> MakeNode {
    MakeNode(json!({"metadata": {"name": name, "labels": {}}}))
}

/// A Node under construction.
#[derive(Debug, Clone)]
pub struct MakeNode(Value);

impl MakeNode {
    pub fn uid(mut self, uid: &str) -> Self {
        self.0["metadata"]["uid"] = uid.into();
        self
    }

    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.0["metadata"]["labels"][key] = value.into();
        self
    }

    pub fn labels(self, pairs: &[(&str, &str)]) -> Self {
        pairs.iter().fold(self, |n, (k, v)| n.label(k, v))
    }

    /// `kubernetes.io/hostname` set to the node's name.
    pub fn hostname(self) -> Self {
        let name = self.0["metadata"]["name"].as_str().unwrap_or_default();
        let name = name.to_string();
        self.label(HOSTNAME, &name)
    }

    /// `topology.kubernetes.io/zone`.
    pub fn zone(self, zone: &str) -> Self {
        self.label(ZONE, zone)
    }

    /// Allocatable `cpu` millicores and `memory` bytes, and 110 pods.
    pub fn capacity(self, cpu_milli: i64, memory: i64) -> Self {
        let (cpu, memory) = (format!("{cpu_milli}m"), memory.to_string());
        self.allocatable(&[("cpu", &cpu), ("memory", &memory), ("pods", "110")])
    }

    /// `status.allocatable`: these resources and quantities, as written
    /// (`("memory", "8Gi")`, `("example.com/gpu", "2")`).
    pub fn allocatable(mut self, resources: &[(&str, &str)]) -> Self {
        self.0["status"]["allocatable"] = string_map(resources);
        self
    }

    /// A taint `key=value:effect`, after the ones already there.
    pub fn taint(mut self, key: &str, value: &str, effect: &str) -> Self {
        let taint = json!({"key": key, "value": value, "effect": effect});
        match self.0["spec"]["taints"].as_array_mut() {
            Some(taints) => taints.push(taint),
            None => self.0["spec"]["taints"] = json!([taint]),
        }
        self
    }

    /// `apiVersion` and `kind` set, as in a `List` of mixed kinds or a
    /// manifest file.
    pub fn typed(mut self) -> Self {
        self.0["apiVersion"] = "v1".into();
        self.0["kind"] = "Node".into();
        self
    }

    pub fn json(self) -> Value {
        self.0
    }

    pub fn obj(self) -> Node {
        serde_json::from_value(self.0).unwrap()
    }
}

/// A Pod `namespace/name` with uid `uid-<namespace>-<name>`, not bound to
/// a node.
pub fn make_pod(namespace: &str, name: &str) -> MakePod {
    MakePod(json!({"metadata": {"name": name, "namespace": namespace,
                                "uid": format!("uid-{namespace}-{name}"), "labels": {}}}))
}

/// A Pod under construction.
#[derive(Debug, Clone)]
pub struct MakePod(Value);

impl MakePod {
    pub fn uid(mut self, uid: &str) -> Self {
        self.0["metadata"]["uid"] = uid.into();
        self
    }

    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.0["metadata"]["labels"][key] = value.into();
        self
    }

    pub fn labels(self, pairs: &[(&str, &str)]) -> Self {
        pairs.iter().fold(self, |p, (k, v)| p.label(k, v))
    }

    pub fn annotation(mut self, key: &str, value: &str) -> Self {
        self.0["metadata"]["annotations"][key] = value.into();
        self
    }

    /// An owner reference marked `controller: true` (the pod's ReplicaSet,
    /// StatefulSet, Job), after the ones already there.
    pub fn owner(mut self, api_version: &str, kind: &str, name: &str, uid: &str) -> Self {
        let owner = json!({"apiVersion": api_version, "kind": kind, "name": name,
                           "uid": uid, "controller": true});
        match self.0["metadata"]["ownerReferences"].as_array_mut() {
            Some(owners) => owners.push(owner),
            None => self.0["metadata"]["ownerReferences"] = json!([owner]),
        }
        self
    }

    /// Any other `metadata` field, as its JSON (`creationTimestamp`,
    /// `managedFields`, ...).
    pub fn meta(mut self, field: &str, value: Value) -> Self {
        self.0["metadata"][field] = value;
        self
    }

    /// `spec.nodeName`: the pod runs there.
    pub fn node(mut self, node: &str) -> Self {
        self.0["spec"]["nodeName"] = node.into();
        self
    }

    pub fn phase(mut self, phase: &str) -> Self {
        self.0["status"]["phase"] = phase.into();
        self
    }

    /// `status.conditions`: Ready since `since` (RFC 3339).
    pub fn ready_since(mut self, since: &str) -> Self {
        self.0["status"]["conditions"] =
            json!([{"type": "Ready", "status": "True", "lastTransitionTime": since}]);
        self
    }

    /// `status.nominatedNodeName`: preemption made room for it there.
    pub fn nominated(mut self, node: &str) -> Self {
        self.0["status"]["nominatedNodeName"] = node.into();
        self
    }

    /// `spec.priority`, as the Priority admission plugin resolved it.
    pub fn priority(mut self, priority: i32) -> Self {
        self.0["spec"]["priority"] = priority.into();
        self
    }

    /// One container, requesting `cpu_milli` millicores and `memory` bytes.
    pub fn req(self, cpu_milli: i64, memory: i64) -> Self {
        let (cpu, memory) = (format!("{cpu_milli}m"), memory.to_string());
        self.requests(&[("cpu", &cpu), ("memory", &memory)])
    }

    /// One container `c`, requesting these resources and quantities as
    /// written (`("cpu", "1")`); `&[]` for a container that asks for nothing,
    /// which the scheduler still scores as its non-zero default.
    pub fn requests(mut self, resources: &[(&str, &str)]) -> Self {
        self.0["spec"]["containers"] =
            json!([{"name": "c", "resources": {"requests": string_map(resources)}}]);
        self
    }

    /// `status.startTime` (RFC 3339), or none.
    pub fn start(mut self, at: Option<&str>) -> Self {
        self.0["status"]["startTime"] = at.into();
        self
    }

    /// `metadata.deletionTimestamp` set: the pod is being deleted.
    pub fn terminating(mut self) -> Self {
        self.0["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z".into();
        self
    }

    /// A required pod-affinity term (see [`term`]).
    pub fn required_affinity(self, term: Value) -> Self {
        self.push_affinity(
            "podAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
            term,
        )
    }

    /// A required pod-anti-affinity term.
    pub fn required_anti_affinity(self, term: Value) -> Self {
        self.push_affinity(
            "podAntiAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
            term,
        )
    }

    /// A preferred pod-affinity term with its weight.
    pub fn preferred_affinity(self, weight: i32, term: Value) -> Self {
        let weighted = json!({"weight": weight, "podAffinityTerm": term});
        self.push_affinity(
            "podAffinity",
            "preferredDuringSchedulingIgnoredDuringExecution",
            weighted,
        )
    }

    /// A preferred pod-anti-affinity term with its weight.
    pub fn preferred_anti_affinity(self, weight: i32, term: Value) -> Self {
        let weighted = json!({"weight": weight, "podAffinityTerm": term});
        self.push_affinity(
            "podAntiAffinity",
            "preferredDuringSchedulingIgnoredDuringExecution",
            weighted,
        )
    }

    /// Appends `entry` to `spec.affinity.<group>.<list>`, after the terms
    /// already there.
    fn push_affinity(mut self, group: &str, list: &str, entry: Value) -> Self {
        let terms = &mut self.0["spec"]["affinity"][group][list];
        match terms.as_array_mut() {
            Some(terms) => terms.push(entry),
            None => *terms = json!([entry]),
        }
        self
    }

    /// A topology spread constraint counting pods with these labels, after
    /// the ones already there.
    pub fn spread(
        mut self,
        max_skew: i32,
        topology_key: &str,
        when_unsatisfiable: &str,
        labels: &[(&str, &str)],
    ) -> Self {
        let constraint = json!({"maxSkew": max_skew, "topologyKey": topology_key,
            "whenUnsatisfiable": when_unsatisfiable,
            "labelSelector": {"matchLabels": string_map(labels)}});
        match self.0["spec"]["topologySpreadConstraints"].as_array_mut() {
            Some(constraints) => constraints.push(constraint),
            None => self.0["spec"]["topologySpreadConstraints"] = json!([constraint]),
        }
        self
    }

    /// Any other `spec` field, as its JSON (`affinity`,
    /// `topologySpreadConstraints`, `nodeSelector`, ...).
    pub fn spec(mut self, field: &str, value: Value) -> Self {
        self.0["spec"][field] = value;
        self
    }

    /// `apiVersion` and `kind` set, as in a `List` of mixed kinds or a
    /// manifest file.
    pub fn typed(mut self) -> Self {
        self.0["apiVersion"] = "v1".into();
        self.0["kind"] = "Pod".into();
        self
    }

    pub fn json(self) -> Value {
        self.0
    }

    pub fn obj(self) -> Pod {
        serde_json::from_value(self.0).unwrap()
    }
}

/// `{"key": "value", ...}`: labels, or a resource list
/// (`{"cpu": "1", "memory": "8Gi"}`).
fn string_map(pairs: &[(&str, &str)]) -> Value {
    let map: serde_json::Map<String, Value> = pairs
        .iter()
        .map(|(key, value)| (key.to_string(), json!(value)))
        .collect();
    Value::Object(map)
}

/// `labelSelector: {matchExpressions: [{key, operator, values}]}` on
/// `topology_key`.
pub fn term(key: &str, op: &str, values: &[&str], topology_key: &str) -> Value {
    json!({
        "labelSelector": {"matchExpressions": [{"key": key, "operator": op, "values": values}]},
        "topologyKey": topology_key,
    })
}

/// `labelSelector: {matchLabels: labels}` on `topology_key`.
pub fn label_term(labels: &[(&str, &str)], topology_key: &str) -> Value {
    json!({"labelSelector": {"matchLabels": string_map(labels)}, "topologyKey": topology_key})
}

/// A Namespace with these labels.
pub fn namespace(name: &str, labels: &[(&str, &str)]) -> Namespace {
    serde_json::from_value(namespace_json(name, labels)).unwrap()
}

/// The JSON of [`namespace`], for tests that send it.
pub fn namespace_json(name: &str, labels: &[(&str, &str)]) -> Value {
    json!({"metadata": {"name": name, "labels": string_map(labels)}})
}

/// The snapshot of these nodes, pods and namespaces.
pub fn snapshot_with_namespaces(
    nodes: Vec<Node>,
    pods: Vec<Pod>,
    namespaces: Vec<Namespace>,
) -> Snapshot {
    Snapshot::build(ClusterObjects {
        nodes,
        pods,
        namespaces,
        ..Default::default()
    })
}

/// The snapshot of these nodes and pods.
pub fn snapshot(nodes: Vec<Node>, pods: Vec<Pod>) -> Snapshot {
    Snapshot::build(ClusterObjects {
        nodes,
        pods,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_built_node_has_its_name_labels_and_room() {
        let node = make_node("n1")
            .hostname()
            .zone("z1")
            .capacity(2000, 1 << 30);
        let node = node.obj();
        assert_eq!(node.metadata.name, "n1");
        assert_eq!(
            node.metadata.labels.get(HOSTNAME).map(String::as_str),
            Some("n1")
        );
        assert_eq!(
            node.metadata.labels.get(ZONE).map(String::as_str),
            Some("z1")
        );
        assert!(!node.status.allocatable.is_empty());
    }

    #[test]
    fn a_built_pod_is_what_its_json_says() {
        let pod = make_pod("shop", "web-1")
            .label("app", "web")
            .node("n1")
            .priority(7)
            .phase("Running");
        let json = pod.clone().json();
        assert_eq!(json["spec"]["nodeName"], "n1");
        let pod = pod.obj();
        assert_eq!(pod.metadata.key(), "shop/web-1");
        assert_eq!(pod.metadata.uid, "uid-shop-web-1");
        assert_eq!(pod.spec.node_name, "n1");
        assert_eq!(pod.spec.priority, Some(7));
        assert_eq!(pod.status.phase, "Running");
        assert_eq!(
            pod.metadata.labels.get("app").map(String::as_str),
            Some("web")
        );
    }

    #[test]
    fn a_built_node_writes_the_json_a_hand_written_one_has() {
        let built = make_node("n1")
            .uid("uid-n1")
            .zone("z1")
            .allocatable(&[("cpu", "4"), ("memory", "8Gi")])
            .typed()
            .json();
        let written = json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n1", "uid": "uid-n1", "labels": {ZONE: "z1"}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}}});
        assert_eq!(built, written);
    }

    #[test]
    fn a_built_pod_writes_the_json_a_hand_written_one_has() {
        let built = make_pod("shop", "web-1")
            .label("app", "web")
            .annotation("note", "x")
            .owner("apps/v1", "ReplicaSet", "web-7d4", "uid-rs")
            .meta("creationTimestamp", json!("2024-01-01T00:00:00Z"))
            .requests(&[("cpu", "100m")])
            .required_anti_affinity(label_term(&[("app", "web")], HOSTNAME))
            .spread(1, ZONE, "DoNotSchedule", &[("app", "web")])
            .ready_since("2024-01-02T00:00:00Z")
            .typed()
            .json();
        let written = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-1", "namespace": "shop", "uid": "uid-shop-web-1",
                "labels": {"app": "web"}, "annotations": {"note": "x"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                     "name": "web-7d4", "uid": "uid-rs", "controller": true}],
                "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
                "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": HOSTNAME}]}},
                "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": ZONE,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "web"}}}]},
            "status": {"conditions": [{"type": "Ready", "status": "True",
                                       "lastTransitionTime": "2024-01-02T00:00:00Z"}]}});
        assert_eq!(built, written);
        let pod: Pod = serde_json::from_value(built).unwrap();
        assert_eq!(pod.metadata.controller().unwrap().name, "web-7d4");
    }

    #[test]
    fn a_snapshot_holds_what_it_was_built_from() {
        let s = snapshot(
            vec![make_node("n1").obj()],
            vec![make_pod("ns", "p").node("n1").obj()],
        );
        assert!(s.node("n1").is_some());
        assert!(s.pod("ns", "p").is_some());
    }
}
