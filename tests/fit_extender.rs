//! `fit` against the extender it models, step by step: for each replica
//! `fit` places, the served `/scheduler/filter` is asked about the same pod
//! on every node and `/scheduler/prioritize` about the feasible ones, and
//! the replica is then bound through `/scheduler/bind`, so the next step
//! sees it as kube-scheduler's next cycle would. Every step must agree:
//! the same feasible nodes, kube-arbiter's score on the chosen node equal
//! to prioritize's, and the chosen node one of prioritize's best (the
//! nodes are alike, so kube-scheduler's own resource scores differ by a
//! point or two where one prioritize step weighs 50).

mod common;

use std::collections::BTreeSet;

use kube_arbiter::testing::{HOSTNAME, MakePod, ZONE, label_term, make_node, make_pod};
use serde_json::{Value, json};

use common::Launch;

fn node(name: &str, zone: &str, extra: &[(&str, &str)], taint: bool) -> Value {
    let node = make_node(name)
        .typed()
        .hostname()
        .zone(zone)
        .label("kubernetes.io/arch", "amd64")
        .labels(extra)
        .allocatable(&[("cpu", "32"), ("memory", "128Gi"), ("pods", "110")]);
    let node = if taint {
        node.taint("dedicated", "gpu", "NoSchedule")
    } else {
        node
    };
    node.json()
}

fn running(name: &str, node: &str, app: &str) -> MakePod {
    make_pod("shop", name)
        .typed()
        .uid(&format!("uid-{name}"))
        .label("app", app)
        .node(node)
        .requests(&[("cpu", "1")])
        .phase("Running")
}

/// Seven nodes in three zones: one tainted, one arm64, two with SSDs;
/// a web pod on a1 and a2 that the workload would rather avoid, and one
/// on c1 whose required anti-affinity keeps the workload off its node.
fn cluster() -> Vec<Value> {
    let guard = running("guard", "c1", "guard")
        .required_anti_affinity(label_term(&[("app", "index")], HOSTNAME));
    vec![
        node("a1", "z-a", &[("disk", "ssd")], false),
        node("a2", "z-a", &[], false),
        node("b1", "z-b", &[("disk", "ssd")], false),
        node("b2", "z-b", &[], true),
        node("c1", "z-c", &[], false),
        node("c2", "z-c", &[], false),
        node("c3", "z-c", &[("kubernetes.io/arch", "arm64")], false),
        running("web-1", "a1", "web").json(),
        running("web-2", "a2", "web").json(),
        guard.json(),
    ]
}

/// The workload: a Job of 7 pods, spread hard over zones and softly over
/// hosts, amd64 only, preferring SSDs, avoiding web pods.
fn job_spec() -> Value {
    json!({
        "nodeSelector": {"kubernetes.io/arch": "amd64"},
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": "index"}}},
            {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": {"app": "index"}}}],
        "affinity": {
            "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 20, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}}]},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 50, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}},
                 "topologyKey": "kubernetes.io/hostname"}}]}},
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]
    })
}

fn list(items: Vec<Value>) -> String {
    json!({"kind": "List", "apiVersion": "v1", "items": items}).to_string()
}

/// Replica `name` as the API server would hold it once admitted.
fn replica(name: &str) -> Value {
    let mut pod = make_pod("shop", name)
        .typed()
        .uid(&format!("uid-{name}"))
        .label("app", "index");
    for (field, value) in job_spec().as_object().into_iter().flatten() {
        pod = pod.spec(field, value.clone());
    }
    pod.priority(0)
        .spec("preemptionPolicy", "PreemptLowerPriority".into())
        .spec("schedulerName", "default-scheduler".into())
        .phase("Pending")
        .json()
}

#[tokio::test]
async fn each_step_is_what_filter_and_prioritize_decide() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("cluster.json");
    std::fs::write(&state, list(cluster())).unwrap();
    let manifest = dir.path().join("job.json");
    let job = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "index", "namespace": "shop"},
        "spec": {"parallelism": 7, "template": {"metadata": {"labels": {"app": "index"}}, "spec": job_spec()}}});
    std::fs::write(&manifest, job.to_string()).unwrap();
    let out = common::run(&[
        "fit",
        "--cluster-state",
        state.to_str().unwrap(),
        "-o",
        "json",
        manifest.to_str().unwrap(),
    ]);
    let answer: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let placements = answer["placements"].as_array().unwrap().clone();
    assert!(placements.len() >= 3, "{answer}");

    // The server's view holds the replicas as pending pods, so that each
    // can be bound once it is placed.
    let names: Vec<String> = placements
        .iter()
        .map(|p| {
            p["pod"]
                .as_str()
                .unwrap()
                .split_once('/')
                .unwrap()
                .1
                .to_string()
        })
        .collect();
    let mut items = cluster();
    items.extend(names.iter().map(|n| replica(n)));
    let served_state = dir.path().join("served.json");
    std::fs::write(&served_state, list(items)).unwrap();
    let server = Launch::file(&served_state).ready().await;
    let all: Vec<&str> = ["a1", "a2", "b1", "b2", "c1", "c2", "c3"].to_vec();

    for (p, name) in placements.iter().zip(&names) {
        let pod = replica(name);
        let filtered = server
            .post_ok("/scheduler/filter", &json!({"Pod": pod, "NodeNames": all}))
            .await;
        let feasible: Vec<String> = serde_json::from_value(filtered["NodeNames"].clone()).unwrap();
        assert_eq!(p["feasible"], feasible.len(), "{name}: {filtered}");
        let node = p["node"].as_str().unwrap();
        assert!(
            feasible.iter().any(|f| f == node),
            "{name} on {node}: {filtered}"
        );

        let scores = server
            .post_ok(
                "/scheduler/prioritize",
                &json!({"Pod": pod, "NodeNames": feasible}),
            )
            .await;
        // A host the answer leaves out scores 0, as kube-scheduler counts it.
        let score_of = |host: &str| {
            scores
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["Host"] == host)
                .map_or(0, |s| s["Score"].as_i64().unwrap())
        };
        assert_eq!(
            p["score"]["extender"],
            score_of(node),
            "{name} on {node}: {scores}"
        );
        let best = feasible.iter().map(|f| score_of(f)).max().unwrap();
        let best_nodes: BTreeSet<&str> = feasible
            .iter()
            .filter(|f| score_of(f) == best)
            .map(String::as_str)
            .collect();
        assert!(
            best_nodes.contains(node),
            "{name} on {node}, best {best_nodes:?}: {scores}"
        );

        let bound = server
            .post_ok(
                "/scheduler/bind",
                &json!({"PodName": name, "PodNamespace": "shop", "PodUID": format!("uid-{name}"), "Node": node}),
            )
            .await;
        assert_eq!(bound["Error"], "", "{bound}");
    }

    // The step after the last placement is where fit says the rest fail.
    if let Some(failed) = answer["firstUnschedulable"].as_object() {
        let next = replica("index-next");
        let filtered = server
            .post_ok("/scheduler/filter", &json!({"Pod": next, "NodeNames": all}))
            .await;
        let none = filtered["NodeNames"].as_array().is_none_or(Vec::is_empty);
        assert!(none, "{filtered}");
        assert_eq!(failed["replica"], placements.len());
    }
}
