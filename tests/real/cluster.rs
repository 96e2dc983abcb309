//! What the stories put into the real cluster and read back: nodes with
//! zones, workloads, and waits on conditions.

use std::collections::BTreeMap;
use std::fmt::Display;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};

use super::install::{apply, service_account_token};

/// How long a burst may take to bind on a loaded 2-core machine.
pub const BIND_PATIENCE: Duration = Duration::from_secs(180);

/// `per_zone` nodes in each zone, named `ZONE-nI`, each with 4 CPUs,
/// 16 GiB and room for 110 pods.
pub async fn nodes(client: &kube::Client, zones: &[&str], per_zone: usize) -> Vec<String> {
    let mut names = Vec::new();
    for zone in zones {
        for i in 0..per_zone {
            let name = format!("{zone}-n{i}");
            node(client, &name, zone, json!({})).await;
            names.push(name);
        }
    }
    names
}

/// One Ready node in `zone` with these extra labels.
pub async fn node(client: &kube::Client, name: &str, zone: &str, labels: Value) {
    let mut all = json!({
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "topology.kubernetes.io/zone": zone,
        "topology.kubernetes.io/region": "real",
    });
    all.as_object_mut()
        .unwrap()
        .extend(labels.as_object().unwrap().clone());
    let capacity = json!({"cpu": "4", "memory": "16Gi", "pods": "110"});
    let node: Node = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": all},
        "status": {
            "capacity": capacity, "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True",
                            "lastHeartbeatTime": jiff::Timestamp::now().to_string(),
                            "lastTransitionTime": jiff::Timestamp::now().to_string()}],
        },
    }))
    .unwrap();
    let api: Api<Node> = Api::all(client.clone());
    api.create(&PostParams::default(), &node).await.unwrap();
}

/// A Deployment of `replicas` pods labelled `app: NAME`, each asking for
/// 100m CPU, with `spec` merged into the pod template's spec.
pub async fn deployment(client: &kube::Client, ns: &str, name: &str, replicas: i32, spec: Value) {
    create_deployment(client, deployment_object(ns, name, replicas, spec)).await;
}

/// [`deployment`] with these annotations on the Deployment itself.
pub async fn deployment_annotated(
    client: &kube::Client,
    ns: &str,
    name: &str,
    replicas: i32,
    annotations: Value,
    spec: Value,
) {
    let mut object = deployment_object(ns, name, replicas, spec);
    object["metadata"]["annotations"] = annotations;
    create_deployment(client, object).await;
}

/// The Deployment [`deployment`] creates, as a manifest.
pub fn deployment_object(ns: &str, name: &str, replicas: i32, spec: Value) -> Value {
    let mut pod_spec = json!({
        "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
        "terminationGracePeriodSeconds": 0,
    });
    pod_spec
        .as_object_mut()
        .unwrap()
        .extend(spec.as_object().unwrap().clone());
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec},
        },
    })
}

/// Create the Deployment `object` (a manifest).
pub async fn create_deployment(client: &kube::Client, object: Value) {
    let ns = object["metadata"]["namespace"]
        .as_str()
        .unwrap()
        .to_string();
    let deployment: Deployment = serde_json::from_value(object).unwrap();
    let api: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    api.create(&PostParams::default(), &deployment)
        .await
        .unwrap();
}

/// Hard spread of `app: NAME` pods over `key`, maxSkew 1.
pub fn hard_spread(name: &str, key: &str) -> Value {
    json!({"topologySpreadConstraints": [{
        "maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": name}},
    }]})
}

/// Required anti-affinity of `app: NAME` pods over `key`.
pub fn required_anti_affinity(name: &str, key: &str) -> Value {
    json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "topologyKey": key, "labelSelector": {"matchLabels": {"app": name}},
    }]}}})
}

/// The pods of `app: NAME` in `ns`.
pub async fn pods(client: &kube::Client, ns: &str, app: &str) -> Vec<Pod> {
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    api.list(&ListParams::default().labels(&format!("app={app}")))
        .await
        .unwrap()
        .items
}

/// Waits until `count` pods of `app: NAME` are bound; their node names.
pub async fn wait_bound(client: &kube::Client, ns: &str, app: &str, count: usize) -> Vec<String> {
    let start = Instant::now();
    loop {
        let bound: Vec<String> = pods(client, ns, app)
            .await
            .into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter_map(|p| p.spec?.node_name)
            .collect();
        if bound.len() >= count {
            return bound;
        }
        assert!(
            start.elapsed() < BIND_PATIENCE,
            "{}/{count} pods of {ns}/{app} bound after {BIND_PATIENCE:?}; events: {:#?}",
            bound.len(),
            failed_scheduling(client, ns).await
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The messages of the FailedScheduling events in `ns`.
pub async fn failed_scheduling(client: &kube::Client, ns: &str) -> Vec<String> {
    let api: Api<Event> = Api::namespaced(client.clone(), ns);
    api.list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("FailedScheduling"))
        .filter_map(|e| e.message)
        .collect()
}

/// Waits until a FailedScheduling event in `ns` says `text`; its message.
pub async fn wait_failed_scheduling(client: &kube::Client, ns: &str, text: &str) -> String {
    let start = Instant::now();
    loop {
        if let Some(m) = failed_scheduling(client, ns)
            .await
            .into_iter()
            .find(|m| m.contains(text))
        {
            return m;
        }
        assert!(
            start.elapsed() < BIND_PATIENCE,
            "no FailedScheduling event in {ns} says {text:?}: {:#?}",
            failed_scheduling(client, ns).await
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// How many of `nodes` are in each zone (zone from the node's name,
/// `ZONE-nI`).
pub fn per_zone(nodes: &[String]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for node in nodes {
        let zone = node.rsplit_once("-n").map_or(node.as_str(), |(z, _)| z);
        *counts.entry(zone.to_string()).or_default() += 1;
    }
    counts
}

/// Loads `examples/demo-cluster.yaml` into the cluster as
/// `kubectl create` would recreate it: its Namespaces, PriorityClasses,
/// Nodes (with their status), PodDisruptionBudgets and the Pending and
/// running Pods (running ones created on their node; finished ones and
/// the workload owners left out, and the pods' owner references dropped,
/// or the garbage collector would delete pods whose owner is not there).
/// Returns the names of the pods that were Pending there, as `ns/name`.
pub async fn load_demo(plane: &super::control_plane::ControlPlane) -> Vec<String> {
    let client = &plane.admin;
    let path = format!("{}/examples/demo-cluster.yaml", env!("CARGO_MANIFEST_DIR"));
    let list: Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let items = list["items"].as_array().unwrap();
    let mut pending = Vec::new();
    for kind in [
        "Namespace",
        "PriorityClass",
        "Node",
        "PodDisruptionBudget",
        "Pod",
    ] {
        for item in items.iter().filter(|i| i["kind"] == kind) {
            let mut object = item.clone();
            let meta = object["metadata"].as_object_mut().unwrap();
            for field in [
                "uid",
                "resourceVersion",
                "creationTimestamp",
                "ownerReferences",
                "managedFields",
            ] {
                meta.remove(field);
            }
            if kind == "Pod" {
                let phase = object["status"]["phase"].as_str().unwrap_or("Pending");
                if phase == "Succeeded" || phase == "Failed" {
                    continue;
                }
                // Admission computes it from the class, and refuses a pod
                // that brings its own.
                object["spec"].as_object_mut().unwrap().remove("priority");
                if object["spec"]["nodeName"].is_null() {
                    pending.push(format!(
                        "{}/{}",
                        object["metadata"]["namespace"].as_str().unwrap(),
                        object["metadata"]["name"].as_str().unwrap()
                    ));
                }
            }
            if kind != "Node" {
                object.as_object_mut().unwrap().remove("status");
            }
            let name = item["metadata"]["name"].as_str().unwrap();
            if kind == "Namespace" {
                if ["default", "kube-system"].contains(&name) {
                    continue;
                }
                super::install::create(client, object).await;
                plane.wait_default_service_account(name).await;
                continue;
            }
            if kind == "PriorityClass" {
                // The shipped priorityclasses.yaml has the same classes.
                super::install::apply(client, object).await;
                continue;
            }
            super::install::create(client, object).await;
        }
    }
    pending
}

/// Polls `check` every 250 ms until it answers `Ok`, for at most
/// [`BIND_PATIENCE`]; the panic names `what` and `check`'s last `Err`.
pub async fn wait_for<T, E: Display>(
    what: &str,
    mut check: impl AsyncFnMut() -> Result<T, E>,
) -> T {
    let start = Instant::now();
    loop {
        match check().await {
            Ok(value) => return value,
            Err(last) => assert!(
                start.elapsed() < BIND_PATIENCE,
                "{what}: not after {BIND_PATIENCE:?}; last: {last}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Creates PriorityClass `name` with this value.
pub async fn priority_class(client: &kube::Client, name: &str, value: i32) {
    let class: PriorityClass =
        serde_json::from_value(json!({"metadata": {"name": name}, "value": value})).unwrap();
    Api::<PriorityClass>::all(client.clone())
        .create(&PostParams::default(), &class)
        .await
        .unwrap();
}

/// Where [`account_with_rules`] grants its rules.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Grant {
    /// A Role and RoleBinding in the account's namespace.
    InNamespace,
    /// A ClusterRole and ClusterRoleBinding.
    ClusterWide,
}

/// ServiceAccount `ns/name`, granted RBAC `rules` (a JSON array of
/// PolicyRules) as `grant` says; returns a TokenRequest token for it.
pub async fn account_with_rules(
    client: &kube::Client,
    ns: &str,
    name: &str,
    grant: Grant,
    rules: Value,
) -> String {
    apply(
        client,
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": name, "namespace": ns}}),
    )
    .await;
    let (role_kind, binding_kind, role_name, role_meta) = match grant {
        Grant::InNamespace => (
            "Role",
            "RoleBinding",
            name.to_string(),
            json!({"name": name, "namespace": ns}),
        ),
        Grant::ClusterWide => {
            let role_name = format!("{ns}-{name}");
            let meta = json!({"name": role_name});
            ("ClusterRole", "ClusterRoleBinding", role_name, meta)
        }
    };
    let rbac = "rbac.authorization.k8s.io/v1";
    apply(
        client,
        json!({"apiVersion": rbac, "kind": role_kind, "metadata": role_meta, "rules": rules}),
    )
    .await;
    apply(
        client,
        json!({"apiVersion": rbac, "kind": binding_kind, "metadata": role_meta,
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role_name},
               "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}]}),
    )
    .await;
    service_account_token(client, ns, name).await
}
