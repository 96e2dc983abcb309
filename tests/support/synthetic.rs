//! A synthetic cluster as Kubernetes JSON, for benchmarks: nodes spread
//! over zones with realistic labels, pods spread over namespaces and nodes,
//! one in ten with a required anti-affinity term.
#![allow(dead_code)] // each bench uses a different part of it

use serde_json::{Value, json};

pub fn node(i: usize) -> Value {
    json!({"metadata": {"name": format!("node-{i:05}"), "uid": format!("node-uid-{i}"),
        "labels": {
            "kubernetes.io/hostname": format!("node-{i:05}"),
            "topology.kubernetes.io/zone": format!("zone-{}", i % 3),
            "topology.kubernetes.io/region": "region-1",
            "node.kubernetes.io/instance-type": "m5.2xlarge",
            "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
            "pool": format!("pool-{}", i % 7)},
        "managedFields": [{"manager": "kubelet", "operation": "Update", "fieldsV1": {"f:status": {}}}]},
        "spec": {"taints": if i.is_multiple_of(50) { json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]) } else { json!([]) }},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"},
                   "conditions": [{"type": "Ready", "status": "True"}],
                   "images": [{"names": ["registry.example/app@sha256:abc"], "sizeBytes": 12345}]}})
}

/// Pod `i` of `per_node * nodes` pods, on node `i / per_node`.
pub fn pod(i: usize, nodes: usize, namespaces: usize) -> Value {
    let app = format!("app-{}", i % 500);
    let mut p = json!({"metadata": {"name": format!("pod-{i:06}"), "namespace": format!("ns-{}", i % namespaces),
            "uid": format!("pod-uid-{i}"), "labels": {"app": app, "pod-template-hash": "5d8f7c9b6"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{app}-5d8f7c9b6"),
                                 "uid": "rs-uid", "controller": true}],
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"big\":\"blob\"}"},
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "fieldsV1": {"f:metadata": {}}}]},
        "spec": {"nodeName": format!("node-{:05}", i % nodes), "priority": 0,
                 "containers": [{"name": "app", "image": "registry.example/app:1",
                                 "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}],
                 "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                   "startTime": "2026-01-01T00:00:00Z"}});
    if i.is_multiple_of(10) {
        p["spec"]["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}]}});
    }
    p
}

pub fn namespace(i: usize) -> Value {
    json!({"metadata": {"name": format!("ns-{i}"), "labels": {"team": format!("team-{}", i % 10)}}})
}
