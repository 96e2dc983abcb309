//! The admission webhooks over real HTTPS, as kube-apiserver calls them:
//! the returned JSONPatch is applied to the submitted pod and checked field
//! by field, denials carry the upstream messages, and bad bodies get clear
//! errors while the server keeps serving.

use std::net::SocketAddr;
use std::sync::Arc;

use axum_server::Handle;
use axum_server::tls_rustls::RustlsConfig;
use base64::Engine;
use kube_arbiter::cluster::{ClusterObjects, ClusterView, Snapshot};
use kube_arbiter::config::Config;
use kube_arbiter::model::PriorityClass;
use kube_arbiter::server::AppState;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};

/// A TLS server on a loopback port with the admission routes, and a client
/// that trusts only its self-signed certificate.
struct Server {
    base: String,
    client: reqwest::Client,
    handle: Handle<SocketAddr>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.handle.shutdown();
    }
}

fn demo_classes() -> Vec<PriorityClass> {
    [
        json!({"metadata":{"name":"high-priority"},"value":1_000_000,"preemptionPolicy":"PreemptLowerPriority"}),
        json!({"metadata":{"name":"default-priority"},"value":1000,"globalDefault":true,"preemptionPolicy":"PreemptLowerPriority"}),
        json!({"metadata":{"name":"low-priority"},"value":-10,"preemptionPolicy":"Never"}),
        json!({"metadata":{"name":"batch-low"},"value":100,"preemptionPolicy":"PreemptLowerPriority"}),
    ]
    .into_iter()
    .map(|v| serde_json::from_value(v).unwrap())
    .collect()
}

async fn start(view: Arc<ClusterView>) -> Server {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert_der = CertificateDer::from(certified.cert.der().to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        certified.signing_key.serialize_der(),
    ));
    let mut tls = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![cert_der], key)
        .unwrap();
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];

    let state = AppState::new(view, Config::default());
    let app = kube_arbiter::api::admission_routes().with_state(state);
    let handle = Handle::new();
    let server = axum_server::bind_rustls(
        "127.0.0.1:0".parse::<SocketAddr>().unwrap(),
        RustlsConfig::from_config(Arc::new(tls)),
    )
    .handle(handle.clone());
    tokio::spawn(async move { server.serve(app.into_make_service()).await });
    let addr = handle.listening().await.unwrap();

    let ca = reqwest::Certificate::from_pem(certified.cert.pem().as_bytes()).unwrap();
    let client = reqwest::Client::builder()
        .tls_backend_rustls()
        .tls_certs_only([ca])
        .build()
        .unwrap();
    Server {
        base: format!("https://localhost:{}", addr.port()),
        client,
        handle,
    }
}

async fn ready_server() -> Server {
    let view = Arc::new(ClusterView::new());
    view.publish(Snapshot::build(ClusterObjects {
        priority_classes: demo_classes(),
        ..Default::default()
    }));
    start(view).await
}

impl Server {
    async fn post(&self, path: &str, body: Vec<u8>) -> (u16, Value) {
        let res = self
            .client
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = res.status().as_u16();
        (status, res.json().await.unwrap())
    }

    /// A 200 AdmissionReview answer's `response`, checked for the uid.
    async fn review(&self, path: &str, body: Value) -> Value {
        let uid = body["request"]["uid"].clone();
        let (status, answer) = self.post(path, serde_json::to_vec(&body).unwrap()).await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(answer["kind"], "AdmissionReview");
        assert_eq!(answer["response"]["uid"], uid);
        answer["response"].clone()
    }
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
    let server = ready_server().await;
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
        let response = server
            .review(
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
    let server = ready_server().await;
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
        let response = server
            .review(
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
    let server = ready_server().await;
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
    let ok = server
        .review(
            "/admission/priorityclass",
            review("CREATE", class("nightly", 50, false), Value::Null),
        )
        .await;
    assert_eq!(ok["allowed"], true);
    let second_default = server
        .review(
            "/admission/priorityclass",
            review("CREATE", class("nightly", 50, true), Value::Null),
        )
        .await;
    assert_eq!(second_default["status"]["code"], 403);
    assert_eq!(
        second_default["status"]["message"],
        r#"priorityclasses.scheduling.k8s.io "nightly" is forbidden: PriorityClass default-priority is already marked as default. Only one default can exist"#
    );
    let immutable = server
        .review(
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

#[tokio::test]
async fn bad_bodies_get_clear_errors_and_the_server_keeps_serving() {
    let server = ready_server().await;
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
        for path in ["/admission/priority", "/admission/priorityclass"] {
            let (got, answer) = server.post(path, body.to_vec()).await;
            assert_eq!(got, status, "{answer}");
            let error = answer["error"].as_str().unwrap();
            assert!(error.starts_with(message), "{error}");
        }
    }
    // A readable review whose pod has a wrong field type: 200, denied 400.
    let response = server
        .review(
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
    let response = server
        .review(
            "/admission/priority",
            pod_review("after", "CREATE", web_pod(json!({}))),
        )
        .await;
    assert_eq!(response["allowed"], true);
}

#[tokio::test]
async fn not_ready_view_answers_503_so_failure_policy_decides() {
    let view = Arc::new(ClusterView::new());
    let server = start(view.clone()).await;
    let body = serde_json::to_vec(&pod_review("early", "CREATE", web_pod(json!({})))).unwrap();
    let (status, answer) = server.post("/admission/priority", body.clone()).await;
    assert_eq!(status, 503);
    assert_eq!(answer["error"], "cluster view is not ready yet");
    view.publish(Snapshot::build(ClusterObjects {
        priority_classes: demo_classes(),
        ..Default::default()
    }));
    let (status, answer) = server.post("/admission/priority", body).await;
    assert_eq!(status, 200);
    assert_eq!(answer["response"]["allowed"], true);
}

/// The bodies in examples/requests/ that README's curl commands send, with
/// the answers README shows.
#[tokio::test]
async fn example_requests_answer_as_documented() {
    let server = ready_server().await;
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
        let response = server.review(path, body.clone()).await;
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
