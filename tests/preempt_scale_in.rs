//! `/scheduler/preempt` and `/scale-in` over real HTTPS against the demo
//! cluster, with the request bodies the README's curl examples send.

mod common;

use std::path::Path;

use common::{Arbiter, Launch};
use kube_arbiter::testing::make_pod;
use serde_json::{Value, json};

const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/demo-cluster.yaml");

/// The server on the demo cluster, with `config` as its settings file, ready.
async fn start_demo(config: &str) -> Arbiter {
    Launch::file(DEMO).config(config).ready().await
}

async fn post_example(demo: &Arbiter, path: &str, example: &str) -> (u16, Value) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/requests")
        .join(example);
    demo.post(path, std::fs::read(file).unwrap()).await
}

fn victims(answer: &Value, node: &str) -> Vec<String> {
    answer["NodeNameToMetaVictims"][node]["Pods"]
        .as_array()
        .unwrap_or_else(|| panic!("no {node} in {answer}"))
        .iter()
        .map(|p| p["UID"].as_str().unwrap().to_string())
        .collect()
}

fn names(answer: &Value) -> Vec<&str> {
    answer["victims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn preempt_and_scale_in_over_https() {
    let demo = start_demo("").await;

    // nodeCacheCapable form: the GPU trainer (priority 100) makes room.
    let (status, answer) = post_example(&demo, "/scheduler/preempt", "preempt-gpu.json").await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer,
        json!({"NodeNameToMetaVictims": {"node-b2": {
            "Pods": [{"UID": "83cde093-d4e0-42ca-ada0-e7e1f4363206"}], "NumPDBViolations": 0}}})
    );

    // Full-pods form whose hints are wrong: an equal-priority web pod is not
    // a victim; node-a1 cannot fit 7300m even without its cart pod; node-c2
    // is too small altogether.
    let (status, answer) =
        post_example(&demo, "/scheduler/preempt", "preempt-full-pods.json").await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer,
        json!({"NodeNameToMetaVictims": {"node-b1": {
            "Pods": [{"UID": "6c5ac941-b61f-4151-a7a9-4b622669da01"}], "NumPDBViolations": 0}}})
    );

    // preemptionPolicy Never, lower-case keys: nothing may be evicted.
    let (status, answer) = post_example(&demo, "/scheduler/preempt", "preempt-never.json").await;
    assert_eq!(
        (status, answer),
        (200, json!({"NodeNameToMetaVictims": {}}))
    );

    // The controller's order: both web pods of node-b1 (rank 2) go first.
    let (status, answer) = post_example(&demo, "/scale-in", "scale-in-web.json").await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        names(&answer),
        ["web-6d4cf56db6-hv2nc", "web-6d4cf56db6-m4tqz"]
    );
    assert!(
        answer["victims"][0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("readyTime")
    );
    assert!(answer.get("spread").is_none());

    // Spread-preserving: zone b keeps a pod; the answer says how to get there.
    let (status, answer) = post_example(&demo, "/scale-in", "scale-in-web-spread.json").await;
    assert_eq!(status, 200, "{answer}");
    let picked = names(&answer);
    assert_eq!(picked.len(), 2);
    assert!(!picked.contains(&"web-6d4cf56db6-m4tqz"), "{answer}");
    let zone = &answer["spread"]["constraints"][0];
    assert_eq!(zone["topologyKey"], "topology.kubernetes.io/zone");
    assert_eq!(
        (
            zone["skewBefore"].as_i64(),
            zone["skewAfterUpstream"].as_i64(),
            zone["skewAfter"].as_i64()
        ),
        (Some(0), Some(2), Some(1))
    );
    assert_eq!(answer["spread"]["deletionCostsSufficient"], true);
    let costs = answer["spread"]["deletionCosts"].as_array().unwrap();
    assert_eq!(costs.len(), 2, "{answer}");
    assert!(
        costs[0]["command"]
            .as_str()
            .unwrap()
            .starts_with("kubectl annotate pod -n shop ")
    );

    // Pods in the body: the annotated deletion cost decides.
    let (status, answer) = post_example(&demo, "/scale-in", "scale-in-pods.json").await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(names(&answer), ["ledger-5f8d9c7b64-w2rnq"]);
    assert_eq!(answer["victims"][0]["reason"], "podDeletionCost: -100 < 0");
}

#[tokio::test]
async fn bad_requests_get_json_errors() {
    let demo = start_demo("").await;
    for (path, body, want) in [
        ("/scheduler/preempt", "{", "not a JSON object"),
        (
            "/scheduler/preempt",
            r#"{"NodeNameToMetaVictims": {}}"#,
            "no Pod",
        ),
        (
            "/scheduler/preempt",
            r#"{"Pod": {"spec": {"priority": "x"}}}"#,
            "field Pod",
        ),
        ("/scale-in", r#"{"count": 1}"#, "either"),
        (
            "/scale-in",
            r#"{"pods": [], "namespace": "shop", "count": 1}"#,
            "either",
        ),
        ("/scale-in", r#"{"pods": [], "count": -1}"#, "wrong shape"),
        (
            "/scale-in",
            r#"{"pods": [], "count": 1, "extra": true}"#,
            "extra",
        ),
    ] {
        let (status, answer) = demo.post(path, body.as_bytes().to_vec()).await;
        assert!(
            (400..500).contains(&status),
            "{path} {body}: {status} {answer}"
        );
        let message = answer["error"].as_str().unwrap_or_default();
        assert!(message.contains(want), "{path} {body}: {message}");
    }
}

#[tokio::test]
async fn best_answer_keeps_only_the_node_upstream_would_pick() {
    let demo = start_demo("preemption:\n  answer: best\n").await;
    // 7000m at top priority: node-b1 has room already, and came with a
    // victim (kube-scheduler refuses an empty list then: no candidate);
    // node-a1 and node-c1 each need their cart pod gone and tie on every
    // rule, so the first stays, as in kube-scheduler.
    let big = make_pod("shop", "big")
        .uid("big-1")
        .priority(1000000)
        .requests(&[("cpu", "7000m")]);
    let body = json!({
        "Pod": big.json(),
        "NodeNameToMetaVictims": {"node-a1": {"Pods": [], "NumPDBViolations": 0},
                                  "node-b1": {"Pods": [{"UID": "929cc37c-fd90-4ace-a497-8516c79f3d86"}], "NumPDBViolations": 0},
                                  "node-c1": {"Pods": [], "NumPDBViolations": 0}}
    });
    let (status, answer) = demo
        .post("/scheduler/preempt", serde_json::to_vec(&body).unwrap())
        .await;
    assert_eq!(status, 200, "{answer}");
    let nodes = answer["NodeNameToMetaVictims"].as_object().unwrap();
    assert_eq!(nodes.len(), 1, "{answer}");
    assert_eq!(victims(&answer, "node-a1").len(), 1, "{answer}");
}

/// A device extender's resource the nodes do not advertise (HAMi-style
/// `example.com/vgpu-mem`): without `scheduling.ignoredResources` no node
/// fits and nothing is preempted; ignored, as NodeResourcesFitArgs ignores
/// it, the cpu shortage is solved as for any pod.
#[tokio::test]
async fn ignored_extended_resources_do_not_block_preemption() {
    let gpu_job = make_pod("shop", "gpu-job")
        .uid("gpu-job-1")
        .priority(1000000)
        .requests(&[("cpu", "7000m"), ("example.com/vgpu-mem", "1000")]);
    let body = json!({
        "Pod": gpu_job.json(),
        "NodeNameToMetaVictims": {"node-a1": {"Pods": [], "NumPDBViolations": 0},
                                  "node-c1": {"Pods": [], "NumPDBViolations": 0}}
    });
    let body = serde_json::to_vec(&body).unwrap();
    for (config, want) in [
        ("", 0),
        (
            "scheduling:\n  ignoredResources: [example.com/vgpu-mem]\n",
            2,
        ),
        ("scheduling:\n  ignoredResourceGroups: [example.com]\n", 2),
    ] {
        let demo = start_demo(config).await;
        let (status, answer) = demo.post("/scheduler/preempt", body.clone()).await;
        assert_eq!(status, 200, "{config}: {answer}");
        let nodes = answer["NodeNameToMetaVictims"].as_object().unwrap();
        assert_eq!(nodes.len(), want, "{config}: {answer}");
        for victims in nodes.values() {
            assert_eq!(
                victims["Pods"].as_array().unwrap().len(),
                1,
                "{config}: {answer}"
            );
        }
    }
}

/// The victims' UIDs are read by a walk over the text unless a key or UID
/// has escapes; both readings must answer alike, and count the same
/// unknown names in /metrics.
#[tokio::test]
async fn victims_named_with_escapes_are_read_as_plain_ones() {
    let demo = start_demo("").await;
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/requests/preempt-gpu.json");
    let mut args: Value = serde_json::from_slice(&std::fs::read(example).unwrap()).unwrap();
    args["NodeNameToMetaVictims"]["node-b2"]["Pods"]
        .as_array_mut()
        .unwrap()
        .push(json!({"UID": "gone-1"}));
    args["NodeNameToMetaVictims"]["ghost-node"] = json!({"Pods": [{"UID": "gone-2"}]});
    let plain = args.to_string();
    let escaped = plain
        .replace(r#""UID""#, r#""U\u0049D""#)
        .replace("gone-1", r"gone\u002d1");
    assert_ne!(plain, escaped);

    let (status, plain_answer) = demo.post("/scheduler/preempt", plain.into_bytes()).await;
    assert_eq!(status, 200, "{plain_answer}");
    assert_eq!(
        victims(&plain_answer, "node-b2"),
        ["83cde093-d4e0-42ca-ada0-e7e1f4363206"]
    );
    let (status, escaped_answer) = demo.post("/scheduler/preempt", escaped.into_bytes()).await;
    assert_eq!((status, &escaped_answer), (200, &plain_answer));

    let metrics = demo.text("/metrics").await;
    for line in [
        "kube_arbiter_preempt_unknown_total{what=\"node\"} 2",
        "kube_arbiter_preempt_unknown_total{what=\"victim\"} 2",
    ] {
        assert!(metrics.contains(line), "missing {line} in\n{metrics}");
    }

    // A map that is not an object is refused as serde words it (as before).
    let (status, answer) = demo
        .post(
            "/scheduler/preempt",
            br#"{"Pod": {"metadata": {"name": "p"}}, "NodeNameToMetaVictims": ["node-b2"]}"#
                .to_vec(),
        )
        .await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(
        answer["error"],
        "field NodeNameToMetaVictims: invalid type: sequence, expected a map at line 1 column 0"
    );
}
