//! The admission webhooks of the built binary over real HTTPS, as
//! kube-apiserver calls them, with the demo cluster:
//! the returned JSONPatch is applied to the submitted pod and checked field
//! by field, denials carry the upstream messages, and bad bodies get clear
//! errors while the server keeps serving.

mod common;

use base64::Engine;
use common::{Arbiter, Launch, eventually};
use serde_json::{Value, json};

const DEMO_CLUSTER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/demo-cluster.yaml");

/// `kube-arbiter serve` with the demo cluster (PriorityClasses
/// high-priority 1000000, default-priority 1000 globalDefault, batch-low
/// 100, low-priority -10 Never), ready.
async fn demo_server() -> Arbiter {
    Launch::file(DEMO_CLUSTER).ready().await
}

/// A 200 AdmissionReview answer's `response`, checked for the uid.
async fn reviewed(server: &Arbiter, path: &str, body: Value) -> Value {
    let uid = body["request"]["uid"].clone();
    let (status, answer) = server.post(path, serde_json::to_vec(&body).unwrap()).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(answer["kind"], "AdmissionReview");
    assert_eq!(answer["response"]["uid"], uid);
    answer["response"].clone()
}

fn pod_review(uid: &str, operation: &str, pod: Value) -> Value {
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "namespace": pod["metadata"]["namespace"],
            "operation": operation,
            "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller"},
            "object": pod,
            "oldObject": null,
            "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
        }
    })
}

fn web_pod(spec_extra: Value) -> Value {
    let mut pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "web-6f7c9d-", "namespace": "shop",
                     "labels": {"app": "web", "pod-template-hash": "6f7c9d"},
                     "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-01T10:00:00Z"}},
        "spec": {
            "containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}],
                            "resources": {"requests": {"cpu": "250m", "memory": "128Mi"}}}],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "schedulerName": "default-scheduler",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}]
        },
        "status": {}
    });
    pod["spec"]
        .as_object_mut()
        .unwrap()
        .extend(spec_extra.as_object().unwrap().clone());
    pod
}

fn apply_patch(object: &Value, response: &Value) -> Value {
    let mut object = object.clone();
    assert_eq!(response["patchType"], "JSONPatch", "{response}");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(response["patch"].as_str().unwrap())
        .unwrap();
    let patch: json_patch::Patch = serde_json::from_slice(&bytes).unwrap();
    json_patch::patch(&mut object, &patch).unwrap();
    object
}

/// Every field but the three admission sets must come back untouched.
fn assert_only_priority_fields_changed(before: &Value, after: &Value) {
    let strip = |v: &Value| {
        let mut v = v.clone();
        let spec = v["spec"].as_object_mut().unwrap();
        for key in ["priorityClassName", "priority", "preemptionPolicy"] {
            spec.remove(key);
        }
        v
    };
    assert_eq!(strip(before), strip(after));
}

#[tokio::test]
async fn pods_are_patched_with_their_class_fields() {
    let server = demo_server().await;
    let cases = [
        (
            "named class",
            json!({"priorityClassName": "high-priority"}),
            "high-priority",
            1_000_000,
            "PreemptLowerPriority",
        ),
        (
            "no class takes the default",
            json!({}),
            "default-priority",
            1000,
            "PreemptLowerPriority",
        ),
        (
            "Never comes from the class",
            json!({"priorityClassName": "low-priority"}),
            "low-priority",
            -10,
            "Never",
        ),
        (
            "built-in system class",
            json!({"priorityClassName": "system-cluster-critical"}),
            "system-cluster-critical",
            2_000_000_000,
            "PreemptLowerPriority",
        ),
        (
            "equal priority given",
            json!({"priorityClassName": "batch-low", "priority": 100}),
            "batch-low",
            100,
            "PreemptLowerPriority",
        ),
    ];
    for (i, (name, spec, class, priority, policy)) in cases.into_iter().enumerate() {
        let pod = web_pod(spec);
        let response = reviewed(
            &server,
            "/admission/priority",
            pod_review(&format!("uid-{i}"), "CREATE", pod.clone()),
        )
        .await;
        assert_eq!(response["allowed"], true, "{name}: {response}");
        let after = apply_patch(&pod, &response);
        assert_eq!(after["spec"]["priorityClassName"], class, "{name}");
        assert_eq!(after["spec"]["priority"], priority, "{name}");
        assert_eq!(after["spec"]["preemptionPolicy"], policy, "{name}");
        assert_only_priority_fields_changed(&pod, &after);
    }
}

#[tokio::test]
async fn denials_carry_code_and_upstream_message() {
    let server = demo_server().await;
    let cases = [
        (
            json!({"priorityClassName": "gold"}),
            r#"pods "web-6f7c9d-" is forbidden: no PriorityClass with name gold was found"#,
        ),
        (
            json!({"priorityClassName": "high-priority", "priority": 7}),
            r#"pods "web-6f7c9d-" is forbidden: the integer value of priority (7) must not be provided in pod spec; priority admission controller computed 1000000 from the given PriorityClass name"#,
        ),
        (
            json!({"preemptionPolicy": "Never"}),
            r#"pods "web-6f7c9d-" is forbidden: the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission controller computed PreemptLowerPriority from the given PriorityClass name"#,
        ),
    ];
    for (spec, message) in cases {
        let response = reviewed(
            &server,
            "/admission/priority",
            pod_review("deny", "CREATE", web_pod(spec)),
        )
        .await;
        assert_eq!(response["allowed"], false);
        assert_eq!(response["status"]["code"], 403);
        assert_eq!(response["status"]["reason"], "Forbidden");
        assert_eq!(response["status"]["message"], message);
        assert!(response.get("patch").is_none());
    }
}

#[tokio::test]
async fn priority_class_rules_are_enforced() {
    let server = demo_server().await;
    let review = |op: &str, object: Value, old: Value| {
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
               "request": {"uid": "pc", "operation": op,
                   "kind": {"group": "scheduling.k8s.io", "version": "v1", "kind": "PriorityClass"},
                   "resource": {"group": "scheduling.k8s.io", "version": "v1", "resource": "priorityclasses"},
                   "name": object["metadata"]["name"], "object": object, "oldObject": old}})
    };
    let class = |name: &str, value: i64, default: bool| {
        json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
               "metadata": {"name": name}, "value": value, "globalDefault": default,
               "preemptionPolicy": "PreemptLowerPriority"})
    };
    let ok = reviewed(
        &server,
        "/admission/priorityclass",
        review("CREATE", class("nightly", 50, false), Value::Null),
    )
    .await;
    assert_eq!(ok["allowed"], true);
    let second_default = reviewed(
        &server,
        "/admission/priorityclass",
        review("CREATE", class("nightly", 50, true), Value::Null),
    )
    .await;
    assert_eq!(second_default["status"]["code"], 403);
    assert_eq!(
        second_default["status"]["message"],
        r#"priorityclasses.scheduling.k8s.io "nightly" is forbidden: PriorityClass default-priority is already marked as default. Only one default can exist"#
    );
    let immutable = reviewed(
        &server,
        "/admission/priorityclass",
        review(
            "UPDATE",
            class("batch-low", 101, false),
            class("batch-low", 100, false),
        ),
    )
    .await;
    assert_eq!(immutable["status"]["code"], 422);
    assert_eq!(
        immutable["status"]["message"],
        r#"PriorityClass.scheduling.k8s.io "batch-low" is invalid: value: Forbidden: may not be changed in an update."#
    );
}

/// The PodGroup webhook's two paths over HTTPS: a PodGroup naming
/// `low-priority` gets its `spec.priority`, and `spec.preemptionPolicy`
/// only on the path for kube-apiserver's `PodGroupPreemptionPolicy` gate
/// (upstream's `admitPodGroup`); an unknown class is refused.
#[tokio::test]
async fn pod_groups_get_their_class_priority_on_both_paths() {
    let server = demo_server().await;
    let review = |uid: &str, class: &str| {
        json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": uid,
                "kind": {"group": "scheduling.k8s.io", "version": "v1beta1", "kind": "PodGroup"},
                "resource": {"group": "scheduling.k8s.io", "version": "v1beta1",
                             "resource": "podgroups"},
                "namespace": "batch",
                "operation": "CREATE",
                "object": {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                           "metadata": {"name": "trainer", "namespace": "batch"},
                           "spec": {"schedulingPolicy": {"gang": {"minCount": 4}},
                                    "priorityClassName": class}},
                "oldObject": null,
            }
        })
    };
    for (path, policy) in [
        ("/admission/podgroup-priority", None),
        ("/admission/podgroup-priority-and-policy", Some("Never")),
    ] {
        let object = review("pg", "low-priority")["request"]["object"].clone();
        let response = reviewed(&server, path, review("pg", "low-priority")).await;
        assert_eq!(response["allowed"], true, "{response}");
        let spec = &apply_patch(&object, &response)["spec"];
        assert_eq!(spec["priority"], -10, "{path}");
        assert_eq!(spec["preemptionPolicy"].as_str(), policy, "{path}");
        let refused = reviewed(&server, path, review("gold", "gold")).await;
        assert_eq!(refused["allowed"], false);
        assert_eq!(
            refused["status"]["message"],
            r#"podgroups.scheduling.k8s.io "trainer" is forbidden: no PriorityClass with name gold was found"#
        );
    }
}

#[tokio::test]
async fn bad_bodies_get_clear_errors_and_the_server_keeps_serving() {
    let server = demo_server().await;
    let bad: [(&[u8], u16, &str); 4] = [
        (b"not json at all", 400, "request body is not valid JSON"),
        (
            br#"{"apiVersion":"v1","kind":"Pod"}"#,
            400,
            "request body is not an AdmissionReview",
        ),
        (
            br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{}}"#,
            400,
            r#"AdmissionReview apiVersion "admission.k8s.io/v1beta1" is not supported"#,
        ),
        (
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":7}}"#,
            400,
            "AdmissionReview request is malformed",
        ),
    ];
    for (body, status, message) in bad {
        for path in [
            "/admission/priority",
            "/admission/podgroup-priority",
            "/admission/podgroup-priority-and-policy",
            "/admission/priorityclass",
        ] {
            let (got, answer) = server.post(path, body.to_vec()).await;
            assert_eq!(got, status, "{answer}");
            let error = answer["error"].as_str().unwrap();
            assert!(error.starts_with(message), "{error}");
        }
    }
    // A readable review whose pod has a wrong field type: 200, denied 400.
    let response = reviewed(
        &server,
        "/admission/priority",
        pod_review("wrong-type", "CREATE", web_pod(json!({"priority": "high"}))),
    )
    .await;
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["code"], 400);
    assert!(response["status"]["message"].as_str().unwrap().starts_with(
        "request.object is not a valid Pod: invalid type: string \"high\", expected i32"
    ));
    // Still serving.
    let response = reviewed(
        &server,
        "/admission/priority",
        pod_review("after", "CREATE", web_pod(json!({}))),
    )
    .await;
    assert_eq!(response["allowed"], true);
}

/// The bodies in examples/requests/ that README's curl commands send, with
/// the answers README shows.
#[tokio::test]
async fn example_requests_answer_as_documented() {
    let server = demo_server().await;
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/requests");
    let allowed = |class: &'static str, priority: i64, policy: &'static str| {
        Ok::<_, (u16, &str)>((class, priority, policy))
    };
    let cases = [
        (
            "admit-create-named-class.json",
            "/admission/priority",
            allowed("high-priority", 1_000_000, "PreemptLowerPriority"),
        ),
        (
            "admit-create-default-class.json",
            "/admission/priority",
            allowed("default-priority", 1000, "PreemptLowerPriority"),
        ),
        (
            "admit-create-unknown-class.json",
            "/admission/priority",
            Err((
                403,
                r#"pods "report-7" is forbidden: no PriorityClass with name gold was found"#,
            )),
        ),
        (
            "admit-create-conflicting-priority.json",
            "/admission/priority",
            Err((
                403,
                r#"pods "etl-2" is forbidden: the integer value of priority (5000) must not be provided in pod spec; priority admission controller computed 100 from the given PriorityClass name"#,
            )),
        ),
        (
            "admit-priorityclass-reserved-name.json",
            "/admission/priorityclass",
            Err((
                422,
                r#"PriorityClass.scheduling.k8s.io "system-important" is invalid: metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-important is not a known system priority class"#,
            )),
        ),
        (
            "admit-priorityclass-second-default.json",
            "/admission/priorityclass",
            Err((
                403,
                r#"priorityclasses.scheduling.k8s.io "team-default" is forbidden: PriorityClass default-priority is already marked as default. Only one default can exist"#,
            )),
        ),
    ];
    for (file, path, want) in cases {
        let text = std::fs::read_to_string(format!("{dir}/{file}")).unwrap();
        let body: Value = serde_json::from_str(&text).unwrap();
        let response = reviewed(&server, path, body.clone()).await;
        match want {
            Ok((class, priority, policy)) => {
                assert_eq!(response["allowed"], true, "{file}: {response}");
                let pod = &body["request"]["object"];
                let after = apply_patch(pod, &response);
                assert_eq!(after["spec"]["priorityClassName"], class, "{file}");
                assert_eq!(after["spec"]["priority"], priority, "{file}");
                assert_eq!(after["spec"]["preemptionPolicy"], policy, "{file}");
                assert_only_priority_fields_changed(pod, &after);
            }
            Err((code, message)) => {
                assert_eq!(response["allowed"], false, "{file}");
                assert_eq!(response["status"]["code"], code, "{file}");
                assert_eq!(response["status"]["message"], message, "{file}");
            }
        }
    }
}

#[tokio::test]
async fn decisions_are_logged_and_counted() {
    let server = demo_server().await;
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/requests");
    for file in [
        "admit-create-default-class.json",
        "admit-create-unknown-class.json",
    ] {
        let body = std::fs::read(format!("{dir}/{file}")).unwrap();
        let (status, _) = server.post("/admission/priority", body).await;
        assert_eq!(status, 200);
    }
    let metrics = server.text("/metrics").await;
    assert!(
        metrics.contains(r#"kube_arbiter_admission_pod_decisions_total{result="patched"} 1"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"kube_arbiter_admission_pod_decisions_total{result="denied"} 1"#),
        "{metrics}"
    );
    let log = eventually("the denial in the log", || async {
        let log = server.log();
        log.contains("admission denied").then_some(log)
    })
    .await;
    let denial = log
        .lines()
        .find(|l| l.contains("admission denied"))
        .unwrap();
    assert!(denial.contains("object=batch/report-7"), "{denial}");
    assert!(denial.contains("class=gold"), "{denial}");
    let allowed = log
        .lines()
        .find(|l| l.contains("admission allowed"))
        .unwrap();
    assert!(allowed.contains("object=shop/web-1"), "{allowed}");
    assert!(allowed.contains("class=default-priority"), "{allowed}");
    assert!(allowed.contains("result=\"patched\""), "{allowed}");
}
