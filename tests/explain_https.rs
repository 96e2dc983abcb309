//! `/debug/explain` over real HTTPS against the built server and a small
//! cluster-state file: a pending pod by name (JSON and the table), a pod
//! that does not exist yet (JSON and YAML bodies), unknown pods, missing
//! parameters, bad bodies and the admission body limit. Row reasons are
//! checked against what `/scheduler/filter` answers for the same pod.

mod common;

use kube_arbiter::testing::{HOSTNAME, MakePod, label_term, make_pod};
use serde_json::{Value, json};

use common::{Arbiter, Launch};

const CLUSTER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/explain-cluster.yaml"
);

async fn get(server: &Arbiter, path_and_query: &str, accept: &str) -> (u16, String, String) {
    let request = server.client.get(server.url(path_and_query));
    split(request.header("accept", accept).send().await.unwrap()).await
}

async fn post(
    server: &Arbiter,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, String, String) {
    let request = server.client.post(server.url(path));
    let request = request.header("content-type", content_type).body(body);
    split(request.send().await.unwrap()).await
}

/// Status, content type and body.
async fn split(response: reqwest::Response) -> (u16, String, String) {
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, content_type, response.text().await.unwrap())
}

fn parse(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// The fixture's pending pod, as a client would send it.
fn api_pod(name: &str, priority: i32) -> MakePod {
    make_pod("shop", name)
        .typed()
        .uid("")
        .label("app", "api")
        .priority(priority)
        .requests(&[])
        .required_anti_affinity(label_term(&[("app", "batch")], HOSTNAME))
}

/// What `/scheduler/filter` says of each node for `pod`.
async fn failed_nodes(server: &Arbiter, pod: &Value) -> Value {
    let body = json!({"Pod": pod, "NodeNames": ["n1", "n2", "n3"]});
    let (status, _, text) = post(
        server,
        "/scheduler/filter",
        "application/json",
        serde_json::to_vec(&body).unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let got = parse(&text);
    let mut all = got["FailedNodes"].as_object().cloned().unwrap_or_default();
    all.extend(
        got["FailedAndUnresolvableNodes"]
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    Value::Object(all)
}

#[tokio::test]
async fn a_pending_pod_by_name_gets_reasons_a_summary_and_where_preemption_helps() {
    let server = Launch::file(CLUSTER).start();
    let (status, content_type, body) =
        get(&server, "/debug/explain?namespace=shop&name=api", "*/*").await;
    assert_eq!(status, 200, "{body}");
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    let got = parse(&body);
    assert_eq!(got["pod"], "shop/api");
    assert_eq!(got["feasible"], 0);

    let filter = failed_nodes(&server, &api_pod("api", 100).json()).await;
    for row in got["nodes"].as_array().unwrap() {
        let node = row["node"].as_str().unwrap();
        assert_eq!(
            row["reason"], filter[node],
            "{node}: same text as the filter verb"
        );
    }
    for node in ["n1", "n2"] {
        let reason = filter[node].as_str().unwrap();
        assert!(
            reason.starts_with("node(s) didn't match pod anti-affinity rules: pod shop/batch-"),
            "{reason}"
        );
    }
    assert_eq!(
        got["summary"],
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), \
         2 node(s) didn't match pod anti-affinity rules."
    );
    assert_eq!(
        got["preemption"],
        json!({
            "message": "preemption: evicting lower-priority pods makes room on 1/3 nodes; kube-scheduler would nominate n1.",
            "candidates": [{"node": "n1", "victims": ["shop/batch-low"], "pdbViolations": 0}],
            "nominate": "n1",
        })
    );
}

#[tokio::test]
async fn accept_text_plain_gets_the_table() {
    let server = Launch::file(CLUSTER).start();
    let (status, content_type, table) = get(
        &server,
        "/debug/explain?namespace=shop&name=api",
        "text/plain",
    )
    .await;
    assert_eq!(status, 200, "{table}");
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines[0], "pod shop/api: 0 of 3 nodes feasible");
    assert!(lines[2].starts_with("NODE "), "{table}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("0/3 nodes are available: ")),
        "{table}"
    );
    assert!(
        lines.contains(&"* n1: evict 1 pod(s): shop/batch-low"),
        "{table}"
    );
}

#[tokio::test]
async fn unknown_pods_and_missing_parameters_are_json_errors() {
    let server = Launch::file(CLUSTER).start();
    let (status, _, body) = get(
        &server,
        "/debug/explain?namespace=shop&name=ghost",
        "text/plain",
    )
    .await;
    assert_eq!(status, 404, "{body}");
    let error = parse(&body)["error"].as_str().unwrap().to_string();
    assert!(error.contains("pod shop/ghost"), "{error}");
    for query in ["", "?namespace=shop", "?name=api", "?namespace=&name=api"] {
        let (status, _, body) = get(
            &server,
            &format!("/debug/explain{query}"),
            "application/json",
        )
        .await;
        assert_eq!(status, 400, "{query}: {body}");
        assert!(
            parse(&body)["error"]
                .as_str()
                .unwrap()
                .contains("namespace and name"),
            "{body}"
        );
    }
}

#[tokio::test]
async fn a_posted_pod_that_does_not_exist_yet_is_explained() {
    let server = Launch::file(CLUSTER).start();
    let (status, _, body) = post(
        &server,
        "/debug/explain",
        "application/json",
        serde_json::to_vec(&api_pod("api-low", 5).json()).unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let got = parse(&body);
    assert_eq!(got["pod"], "shop/api-low");
    assert_eq!(
        got["preemption"]["message"],
        "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, \
         2 No preemption victims found for incoming pod."
    );

    let yaml = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: trainer\n  namespace: shop\nspec:\n  \
                tolerations: [{key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}]\n  \
                nodeSelector: {topology.kubernetes.io/zone: z3}\n";
    let (status, _, table) = post(&server, "/debug/explain", "application/yaml", yaml.into()).await;
    assert_eq!(status, 200, "{table}");
    let got = parse(&table);
    assert_eq!(got["feasible"], 1);
    assert_eq!(
        got["summary"],
        "1/3 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
    );
    assert!(got.get("preemption").is_none(), "{got}");
}

#[tokio::test]
async fn bad_bodies_are_refused_and_nothing_changes() {
    let server = Launch::file(CLUSTER).start();
    let bad: [&[u8]; 3] = [b"{not json", br#"{"metadata": {}}"#, b"- just\n- a list\n"];
    for body in bad {
        let (status, _, text) =
            post(&server, "/debug/explain", "application/json", body.to_vec()).await;
        assert_eq!(status, 400, "{}: {text}", String::from_utf8_lossy(body));
        assert!(
            parse(&text)["error"]
                .as_str()
                .unwrap()
                .starts_with("request body is not a Pod"),
            "{text}"
        );
    }
    let (status, _, body) = get(
        &server,
        "/debug/explain?namespace=shop&name=api",
        "application/json",
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn posted_pods_get_the_admission_body_limit() {
    let server = Launch::file(CLUSTER)
        .config("server: {admissionBodyLimitBytes: 2048}\n")
        .start();
    let pod = api_pod("big", 100).annotation("filler", &"x".repeat(4096));
    let (status, _, body) = post(
        &server,
        "/debug/explain",
        "application/json",
        serde_json::to_vec(&pod.json()).unwrap(),
    )
    .await;
    assert_eq!(status, 413, "{body}");
    let (status, _, body) = post(
        &server,
        "/debug/explain",
        "application/json",
        serde_json::to_vec(&api_pod("small", 100).json()).unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

/// README's example pod against the demo cluster: only the shape is
/// pinned, the demo's exact answers belong to its own test.
#[tokio::test]
async fn the_readme_example_pod_is_explained_by_the_server_and_the_cli() {
    let root = env!("CARGO_MANIFEST_DIR");
    let demo = format!("{root}/examples/demo-cluster.yaml");
    let pod_file = format!("{root}/examples/pods/urgent-gpu-job.yaml");
    let server = Launch::file(&demo).start();
    let (status, _, body) = post(
        &server,
        "/debug/explain",
        "application/yaml",
        std::fs::read(&pod_file).unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let got = parse(&body);
    assert_eq!(got["pod"], "batch/urgent-render");
    let nodes = got["nodes"].as_array().unwrap().len();
    let head = format!("{}/{nodes} nodes are available", got["feasible"]);
    assert!(got["summary"].as_str().unwrap().starts_with(&head), "{got}");

    let out = common::run(&["explain", "--cluster-state", &demo, &pod_file]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(table.starts_with("pod batch/urgent-render: "), "{table}");
    assert!(table.contains(got["summary"].as_str().unwrap()), "{table}");
}

/// `scheduling.kubernetesVersion` decides what a resized pod on a node
/// holds (the view is built with that release's rule): its sidecar
/// reports 2 cpu in use and its plain init container 4, so 1.36 counts
/// app 1 + sidecar 2 = 3 of the node's 4 cpu and 1.37 counts the actuated
/// 4. A pod asking 1 cpu fits there under 1.36 only.
#[tokio::test]
async fn a_resized_pods_requests_follow_the_configured_kubernetes_version() {
    let dir = tempfile::tempdir().unwrap();
    let cpu = |n: &str| json!({"requests": {"cpu": n}});
    let items = json!([
        {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
         "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}},
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": "resized", "namespace": "default", "uid": "u-resized"},
         "spec": {"nodeName": "n1",
                  "containers": [{"name": "app", "resources": cpu("1")}],
                  "initContainers": [
                      {"name": "setup", "resources": cpu("500m")},
                      {"name": "proxy", "restartPolicy": "Always", "resources": cpu("500m")}]},
         "status": {"phase": "Running", "initContainerStatuses": [
             {"name": "setup", "resources": cpu("4")},
             {"name": "proxy", "resources": cpu("2"), "allocatedResources": {"cpu": "2"}}]}},
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": "new", "namespace": "default", "uid": "u-new"},
         "spec": {"containers": [{"name": "c", "resources": cpu("1")}]}}
    ]);
    let state = dir.path().join("cluster.json");
    std::fs::write(
        &state,
        json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string(),
    )
    .unwrap();
    for (version, feasible) in [("1.36", 1), ("1.37", 0)] {
        let server = Launch::file(&state)
            .config(&format!(
                "scheduling:\n  kubernetesVersion: \"{version}\"\n"
            ))
            .ready()
            .await;
        let (status, _, body) =
            get(&server, "/debug/explain?namespace=default&name=new", "*/*").await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(parse(&body)["feasible"], feasible, "{version}: {body}");
    }
}
