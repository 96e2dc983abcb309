//! `/scheduler/filter` and `/scheduler/prioritize` over real HTTPS against
//! the built server, with a small cluster-state file and request bodies made
//! for it (in `tests/fixtures/`, and the `examples/requests/` bodies that are
//! not about the demo cluster). The README's flagship requests against the
//! demo cluster are pinned by tests/demo_cluster.rs.

mod common;

use kube_arbiter::testing::{make_node, make_pod};
use serde_json::{Value, json};

use common::Launch;

const CLUSTER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/extender-cluster.json"
);

fn example(name: &str) -> Vec<u8> {
    let path = format!("{}/examples/requests/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[tokio::test]
async fn filter_in_node_names_mode_splits_candidates_by_rule() {
    let server = Launch::file(CLUSTER).start();
    let (status, got) = server
        .post("/scheduler/filter", fixture("filter-web-node-names.json"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(got["Error"], "");
    assert_eq!(got["NodeNames"], json!(["node-c1", "node-c2"]));
    assert_eq!(
        got["FailedNodes"]["node-b1"],
        "node(s) didn't match pod topology spread constraints: topology.kubernetes.io/zone=eu-west-1b would have skew 2 > maxSkew 1 (1 matching pods there, global minimum 0)"
    );
    assert!(got["FailedNodes"]["node-a1"].is_string());
    assert!(got["FailedNodes"]["node-a2"].is_string());
    assert_eq!(
        got["FailedAndUnresolvableNodes"],
        json!({"node-b2": "node(s) had untolerated taint(s)"})
    );
}

#[tokio::test]
async fn filter_in_nodes_mode_returns_the_request_objects() {
    let server = Launch::file(CLUSTER).start();
    let request: Value = serde_json::from_slice(&example("filter-nodes.json")).unwrap();
    let (status, got) = server
        .post("/scheduler/filter", example("filter-nodes.json"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(got["NodeNames"], Value::Null);
    let node_c2 = request["Nodes"]["items"][2].clone();
    assert_eq!(got["Nodes"]["items"], json!([node_c2]));
    assert!(got["FailedNodes"]["node-a1"].is_string());
    assert!(got["FailedAndUnresolvableNodes"]["node-b2"].is_string());
}

#[tokio::test]
async fn filter_accepts_lower_case_keys_and_reports_unknown_nodes() {
    let server = Launch::file(CLUSTER).start();
    let (_, got) = server
        .post("/scheduler/filter", example("filter-lowercase-keys.json"))
        .await;
    assert_eq!(got["NodeNames"], json!(["node-c1", "node-c2"]));
    assert_eq!(
        got["FailedAndUnresolvableNodes"]["node-x9"],
        "node not found in kube-arbiter's cluster view"
    );
}

#[tokio::test]
async fn filter_errors_are_http_200_with_error_set() {
    let server = Launch::file(CLUSTER).start();
    let (status, got) = server
        .post(
            "/scheduler/filter",
            br#"{"NodeNames":["node-a1"]}"#.to_vec(),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(got["Error"], "ExtenderArgs has no Pod");
    let (status, got) = server.post("/scheduler/filter", b"{".to_vec()).await;
    assert_eq!(status, 200);
    assert!(
        got["Error"]
            .as_str()
            .unwrap()
            .starts_with("cannot decode ExtenderArgs")
    );
}

#[tokio::test]
async fn prioritize_scores_every_candidate_from_0_to_10() {
    let server = Launch::file(CLUSTER).start();
    let (status, got) = server
        .post(
            "/scheduler/prioritize",
            fixture("prioritize-cart-node-names.json"),
        )
        .await;
    assert_eq!(status, 200);
    let scores: Vec<(String, i64)> = got
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["Host"].as_str().unwrap().to_string(),
                h["Score"].as_i64().unwrap(),
            )
        })
        .collect();
    let names: Vec<&str> = scores.iter().map(|(h, _)| h.as_str()).collect();
    assert_eq!(
        names,
        ["node-a1", "node-a2", "node-b1", "node-c1", "node-c2"]
    );
    assert!(scores.iter().all(|(_, s)| (0..=10).contains(s)));
    // node-c1 already runs a cart pod: spreading puts it last.
    let c1 = scores[3].1;
    assert!(scores.iter().all(|(_, s)| *s >= c1), "{scores:?}");
}

#[tokio::test]
async fn prioritize_errors_are_json_errors() {
    let server = Launch::file(CLUSTER).start();
    let (status, got) = server
        .post("/scheduler/prioritize", br#"{"NodeNames":[]}"#.to_vec())
        .await;
    assert_eq!(status, 400);
    assert_eq!(got["error"], "ExtenderArgs has no Pod");
}

/// `body` with `count` names the view does not know added after its own.
fn with_unknown_names(body: &[u8], count: usize) -> Vec<u8> {
    let mut request: Value = serde_json::from_slice(body).unwrap();
    let names = request["NodeNames"].as_array_mut().unwrap();
    names.extend((0..count).map(|i| json!(format!("ghost-{i:05}.eu-west-1.compute.internal"))));
    serde_json::to_vec(&request).unwrap()
}

#[tokio::test]
async fn large_bodies_are_answered_as_small_ones() {
    // Thousands of names: read by the split reader (wire::extender_read),
    // unlike the small bodies above.
    let server = Launch::file(CLUSTER).start();
    let small = fixture("filter-web-node-names.json");
    let large = with_unknown_names(&small, 3_000);
    assert!(large.len() > 100 << 10, "{}", large.len());
    let (_, want) = server.post("/scheduler/filter", small).await;
    // Checked on two cores, each writing its failures: the answer is sent
    // in chunks, with its exact length declared as for a one-piece answer.
    let response = server
        .client
        .post(server.url("/scheduler/filter"))
        .header("content-type", "application/json")
        .body(large.clone())
        .send()
        .await
        .unwrap();
    assert!(response.headers().get("transfer-encoding").is_none());
    let declared: usize = response.headers()["content-length"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let bytes = response.bytes().await.unwrap();
    assert_eq!(declared, bytes.len());
    let (status, got) = server.post("/scheduler/filter", large).await;
    assert_eq!(status, 200);
    assert_eq!(serde_json::from_slice::<Value>(&bytes).unwrap(), got);
    assert_eq!(got["Error"], "");
    assert_eq!(got["NodeNames"], want["NodeNames"]);
    assert_eq!(got["FailedNodes"], want["FailedNodes"]);
    let unresolvable = got["FailedAndUnresolvableNodes"].as_object().unwrap();
    assert_eq!(unresolvable.len(), 3_000 + 1);
    assert_eq!(
        unresolvable["ghost-02999.eu-west-1.compute.internal"],
        "node not found in kube-arbiter's cluster view"
    );
    assert_eq!(
        unresolvable["node-b2"],
        want["FailedAndUnresolvableNodes"]["node-b2"]
    );

    let small = fixture("prioritize-cart-node-names.json");
    let large = with_unknown_names(&small, 3_000);
    let (_, want) = server.post("/scheduler/prioritize", small).await;
    let (status, got) = server.post("/scheduler/prioritize", large).await;
    assert_eq!(status, 200);
    let got = got.as_array().unwrap();
    assert_eq!(got.len(), 5 + 3_000);
    assert_eq!(got[..5], want.as_array().unwrap()[..]);
    assert!(got[5..].iter().all(|h| h["Score"] == 0));
}

/// `scheduling.kubernetesVersion` picks the release whose wording the
/// filter follows: 1.33's TaintToleration named the taint, later ones do not.
#[tokio::test]
async fn the_taint_reason_follows_the_configured_kubernetes_version() {
    let server = Launch::file(CLUSTER)
        .config("scheduling:\n  kubernetesVersion: \"1.33\"\n")
        .start();
    let (status, got) = server
        .post("/scheduler/filter", fixture("filter-web-node-names.json"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        got["FailedAndUnresolvableNodes"],
        json!({"node-b2": "node(s) had untolerated taint {nvidia.com/gpu: present}"})
    );
}

/// Tolerations with `Gt`/`Lt` compare integers only with
/// `scheduling.featureGates.TaintTolerationComparisonOperators` on, as
/// kube-scheduler with the gate; off (the default) they tolerate nothing.
#[tokio::test]
async fn comparison_operator_tolerations_follow_the_feature_gate() {
    let dir = tempfile::tempdir().unwrap();
    let node = |name: &str, sla: &str| {
        make_node(name)
            .typed()
            .hostname()
            .taint("example.com/sla", sla, "NoSchedule")
            .allocatable(&[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")])
            .json()
    };
    let state = dir.path().join("cluster.json");
    let list = json!({"apiVersion": "v1", "kind": "List",
                      "items": [node("sla-950", "950"), node("sla-800", "800")]});
    std::fs::write(&state, list.to_string()).unwrap();
    let tolerations = json!([{"key": "example.com/sla", "operator": "Gt", "value": "900", "effect": "NoSchedule"}]);
    let pod = make_pod("default", "p")
        .uid("")
        .requests(&[])
        .spec("tolerations", tolerations);
    let body = json!({"Pod": pod.json(), "NodeNames": ["sla-950", "sla-800"]});
    let untolerated = "node(s) had untolerated taint(s)";
    let off = Launch::file(&state).start();
    let got = off.post_ok("/scheduler/filter", &body).await;
    assert_eq!(got["NodeNames"], json!([]), "{got}");
    assert_eq!(
        got["FailedAndUnresolvableNodes"],
        json!({"sla-950": untolerated, "sla-800": untolerated})
    );
    let on = Launch::file(&state)
        .config("scheduling:\n  featureGates:\n    TaintTolerationComparisonOperators: true\n")
        .start();
    let got = on.post_ok("/scheduler/filter", &body).await;
    assert_eq!(got["NodeNames"], json!(["sla-950"]), "{got}");
    assert_eq!(
        got["FailedAndUnresolvableNodes"],
        json!({"sla-800": untolerated})
    );
}
