//! In-process cost of one admission decision: decode the AdmissionReview,
//! resolve the class against the snapshot, encode the answer with its
//! base64 JSONPatch. No TLS or HTTP (scripts/load-admission.sh measures
//! those against the release binary). Without an API server a review never
//! waits: `block_on` polls it once.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::executor::block_on;
use kube_arbiter::api::AppState;
use kube_arbiter::api::admission::{review_pod, review_priority_class};
use kube_arbiter::cluster::{ClusterObjects, ClusterView, Snapshot};
use kube_arbiter::config::Config;
use kube_arbiter::model::PriorityClass;
use serde_json::{Value, json};

fn state() -> AppState {
    // The demo classes plus the many classes a large cluster may carry, so
    // the default-class lookup walks a realistic list.
    let mut classes: Vec<Value> = vec![
        json!({"metadata":{"name":"high-priority"},"value":1_000_000,"preemptionPolicy":"PreemptLowerPriority"}),
        json!({"metadata":{"name":"default-priority"},"value":1000,"globalDefault":true,"preemptionPolicy":"PreemptLowerPriority"}),
        json!({"metadata":{"name":"low-priority"},"value":-10,"preemptionPolicy":"Never"}),
        json!({"metadata":{"name":"batch-low"},"value":100,"preemptionPolicy":"PreemptLowerPriority"}),
    ];
    classes
        .extend((0..40).map(|i| json!({"metadata":{"name":format!("team-{i}")},"value":i * 10})));
    let view = Arc::new(ClusterView::new());
    view.publish(Snapshot::build(ClusterObjects {
        priority_classes: classes
            .into_iter()
            .map(|v| serde_json::from_value::<PriorityClass>(v).unwrap())
            .collect(),
        ..Default::default()
    }));
    AppState::new(view, Config::default())
}

fn example(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/examples/requests/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// A pod as a Deployment creates it, with managedFields, env, volumes and
/// probes: about 6 KB, the size kube-apiserver typically sends.
fn large_pod_review() -> Vec<u8> {
    let mut review: Value =
        serde_json::from_slice(&example("admit-create-default-class.json")).unwrap();
    let pod = &mut review["request"]["object"];
    pod["metadata"]["managedFields"] = json!([{"manager": "kube-controller-manager", "operation": "Update",
        "apiVersion": "v1", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}},
                     "f:ownerReferences": {".": {}, "k:{\"uid\":\"5a7c\"}": {}}},
                     "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {},
                     "f:resources": {".": {}, "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}}}}}}}}]);
    pod["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "name": "web-6f7c9d", "uid": "5a7c0b7e-1b1e-4c55-9b1a-2f9b8c1e0d11", "controller": true, "blockOwnerDeletion": true}]);
    let container = &mut pod["spec"]["containers"][0];
    container["env"] = Value::Array((0..20).map(|i| json!({"name": format!("SETTING_{i}"), "value": format!("value-{i}-{}", "x".repeat(40))})).collect());
    container["volumeMounts"] = Value::Array((0..6).map(|i| json!({"name": format!("vol-{i}"), "mountPath": format!("/data/{i}"), "readOnly": true})).collect());
    container["readinessProbe"] = json!({"httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 5, "failureThreshold": 3});
    container["livenessProbe"] =
        json!({"httpGet": {"path": "/live", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 10});
    pod["spec"]["volumes"] = Value::Array((0..6).map(|i| json!({"name": format!("vol-{i}"), "configMap": {"name": format!("cm-{i}"), "defaultMode": 420}})).collect());
    pod["spec"]["tolerations"] = json!([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]);
    serde_json::to_vec(&review).unwrap()
}

fn bench(c: &mut Criterion) {
    let state = state();
    let mut group = c.benchmark_group("admission");
    group.throughput(Throughput::Elements(1));
    let pods = [
        ("pod_named_class", example("admit-create-named-class.json")),
        (
            "pod_default_class",
            example("admit-create-default-class.json"),
        ),
        (
            "pod_unknown_class_denied",
            example("admit-create-unknown-class.json"),
        ),
        ("pod_default_class_6kb", large_pod_review()),
    ];
    for (name, body) in &pods {
        // Every body must decide, not fail, or the bench measures errors.
        block_on(review_pod(&state, body)).unwrap();
        group.bench_function(*name, |b| {
            b.iter(|| block_on(review_pod(&state, black_box(body))).unwrap())
        });
    }
    let class = example("admit-priorityclass-second-default.json");
    block_on(review_priority_class(&state, &class)).unwrap();
    group.bench_function("priorityclass_second_default", |b| {
        b.iter(|| block_on(review_priority_class(&state, black_box(&class))).unwrap())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
