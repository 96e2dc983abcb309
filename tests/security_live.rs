//! The attacks of docs/security.md, tried against the built server in live
//! mode (the way it is deployed) with the in-process API server: nothing
//! an unauthenticated or unauthorized caller sends reaches the API, and
//! kube-scheduler's own binds keep working.

mod common;
#[path = "support/fake_apiserver.rs"]
mod fake_apiserver;

use common::{Arbiter, Launch};
use fake_apiserver::{FakeApiServer, api_node, running_pod};
use kube_arbiter::testing::{MakePod, make_pod, namespace_json};
use serde_json::{Value, json};

/// A pending pod of app `app` in `namespace`, for `scheduler`.
fn pending(namespace: &str, name: &str, app: &str, scheduler: &str) -> MakePod {
    make_pod(namespace, name)
        .uid(&format!("uid-{name}"))
        .label("app", app)
        .spec("schedulerName", scheduler.into())
        .requests(&[])
        .phase("Pending")
}

const TENANT_A: &str = "system:serviceaccount:tenant-a:default";
const TENANT_A_TOKEN: &str = "tenant-a-token";

fn running_in(namespace: &str, name: &str, app: &str, node: &str) -> Value {
    make_pod(namespace, name)
        .uid(&format!("uid-{name}"))
        .label("app", app)
        .node(node)
        .requests(&[])
        .phase("Running")
        .json()
}

/// A tenant-a pod with required anti-affinity to tenant-b's database: its
/// explanation would name tenant-b's pod and node.
fn nosy_pending() -> Value {
    let away_from_db = json!({"labelSelector": {"matchLabels": {"app": "secret-db"}},
                              "namespaces": ["tenant-b"], "topologyKey": "kubernetes.io/hostname"});
    pending("tenant-a", "nosy", "nosy", "default-scheduler")
        .required_anti_affinity(away_from_db)
        .json()
}

struct Live {
    api: FakeApiServer,
    server: Arbiter,
}

async fn start() -> Live {
    let api = FakeApiServer::start().await;
    api.load("Node", [api_node("n1").json(), api_node("n2").json()]);
    api.load(
        "Namespace",
        [namespace_json("shop", &[]), namespace_json("tenant-b", &[])],
    );
    api.load(
        "Pod",
        [
            pending("tenant-b", "victim", "secret-db", "default-scheduler").json(),
            pending("tenant-b", "gpu-job", "secret-db", "gpu-scheduler").json(),
            running_pod("web-1", "web", "n1").json(),
            running_in("tenant-b", "ledger-primary-0", "secret-db", "n1"),
            running_in("tenant-a", "api-0", "api", "n2"),
            nosy_pending(),
        ],
    );
    api.add_token(TENANT_A_TOKEN, TENANT_A, &[]);
    api.allow(TENANT_A, "get", "pods", Some("tenant-a"));
    api.allow(TENANT_A, "list", "pods", Some("tenant-a"));
    let server = Launch::live(api.kubeconfig()).ready().await;
    Live { api, server }
}

impl Live {
    async fn bind(&self, as_scheduler: bool, body: Value) -> (u16, Value) {
        let http = if as_scheduler {
            self.server.client.clone()
        } else {
            self.server.anonymous()
        };
        let response = http
            .post(self.server.url("/scheduler/bind"))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap())
    }
}

fn binding(namespace: &str, name: &str, uid: &str, node: &str) -> Value {
    json!({"PodName": name, "PodNamespace": namespace, "PodUID": uid, "Node": node})
}

#[tokio::test]
async fn a_caller_without_certificate_cannot_bind_and_nothing_reaches_the_api() {
    let live = start().await;
    let (status, answer) = live
        .bind(false, binding("tenant-b", "victim", "uid-victim", "n2"))
        .await;
    assert_eq!(status, 401, "{answer}");
    assert!(live.api.bindings().is_empty());
}

#[tokio::test]
async fn kube_scheduler_binds_only_what_it_may() {
    let live = start().await;
    let refused = [
        (
            binding("tenant-b", "victim", "uid-wrong", "n2"),
            "has UID uid-victim",
        ),
        (binding("tenant-b", "victim", "", "n2"), "names no PodUID"),
        (
            binding("tenant-b", "gpu-job", "uid-gpu-job", "n2"),
            "gpu-scheduler",
        ),
        (
            binding("shop", "web-1", "uid-web-1", "n2"),
            "already bound to n1",
        ),
        (
            binding("tenant-b", "ghost", "uid-ghost", "n2"),
            "pod tenant-b/ghost does not exist",
        ),
        (
            binding("tenant-b", "victim", "uid-victim", "n9"),
            "node n9 does not exist",
        ),
    ];
    for (body, reason) in refused {
        let (status, answer) = live.bind(true, body.clone()).await;
        assert_eq!(status, 200, "{body}");
        let error = answer["Error"].as_str().unwrap_or_default();
        assert!(error.contains(reason), "{body}: {answer}");
    }
    assert!(
        live.api.bindings().is_empty(),
        "no refused binding reached the API"
    );

    let (status, answer) = live
        .bind(true, binding("tenant-b", "victim", "uid-victim", "n2"))
        .await;
    assert_eq!((status, &answer), (200, &json!({"Error": ""})));
    let sent = live.api.bindings();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["target"]["name"], "n2");
    // Now bound (assumed at once): a second bind of the same pod is refused.
    let (_, again) = live
        .bind(true, binding("tenant-b", "victim", "uid-victim", "n1"))
        .await;
    assert!(
        again["Error"]
            .as_str()
            .unwrap_or_default()
            .contains("already bound to n2"),
        "{again}"
    );
    assert_eq!(live.api.bindings().len(), 1);
}

/// A pod the watch has not brought yet is read from the API server and
/// meets the same checks there: every refusal above holds for it.
#[tokio::test]
async fn pods_the_view_has_not_shown_yet_are_bound_only_within_the_same_checks() {
    let live = start().await;
    live.api.pause_events();
    for pod in [
        pending("tenant-b", "victim-new", "secret-db", "default-scheduler"),
        pending("tenant-b", "gpu-new", "secret-db", "gpu-scheduler"),
        pending("tenant-b", "bound-new", "secret-db", "default-scheduler").node("n1"),
    ] {
        live.api.apply("Pod", pod.json());
    }
    let refused = [
        (
            binding("tenant-b", "victim-new", "uid-wrong", "n2"),
            "has UID uid-victim-new",
        ),
        (
            binding("tenant-b", "victim-new", "", "n2"),
            "names no PodUID",
        ),
        (
            binding("tenant-b", "gpu-new", "uid-gpu-new", "n2"),
            "gpu-scheduler",
        ),
        (
            binding("tenant-b", "bound-new", "uid-bound-new", "n2"),
            "already bound to n1",
        ),
        (
            binding("tenant-b", "victim-new", "uid-victim-new", "n9"),
            "node n9 does not exist",
        ),
    ];
    for (body, reason) in refused {
        let (status, answer) = live.bind(true, body.clone()).await;
        assert_eq!(status, 200, "{body}");
        let error = answer["Error"].as_str().unwrap_or_default();
        assert!(error.contains(reason), "{body}: {answer}");
    }
    assert!(
        live.api.bindings().is_empty(),
        "no refused binding reached the API"
    );
    let reads = live.api.gets().len();
    let (status, answer) = live
        .bind(
            false,
            binding("tenant-b", "victim-new", "uid-victim-new", "n2"),
        )
        .await;
    assert_eq!(status, 401, "{answer}");
    assert_eq!(
        live.api.gets().len(),
        reads,
        "a caller without kube-scheduler's certificate makes kube-arbiter read nothing"
    );
    let (_, answer) = live
        .bind(
            true,
            binding("tenant-b", "victim-new", "uid-victim-new", "n2"),
        )
        .await;
    assert_eq!(answer, json!({"Error": ""}));
    assert_eq!(live.api.bindings().len(), 1);
}

impl Live {
    /// A request by a person or tool: no client certificate, `token` as the
    /// bearer token when given.
    async fn ask(&self, token: Option<&str>, path: &str, body: Option<Value>) -> (u16, String) {
        let http = self.server.anonymous();
        let mut request = match &body {
            Some(body) => http.post(self.server.url(path)).json(body),
            None => http.get(self.server.url(path)),
        };
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let challenge = response.headers().get("www-authenticate").cloned();
        let text = response.text().await.unwrap();
        if status == 401 {
            assert_eq!(challenge.unwrap(), "Bearer", "{path}");
        }
        (status, text)
    }
}

fn scale_in(namespace: &str, app: &str) -> Option<Value> {
    Some(json!({"namespace": namespace, "selector": {"matchLabels": {"app": app}}, "count": 1}))
}

#[tokio::test]
async fn people_routes_need_a_token_the_api_server_knows() {
    let live = start().await;
    let explain = "/debug/explain?namespace=tenant-b&name=victim";
    for (path, body) in [
        (explain, None),
        ("/scale-in", scale_in("tenant-b", "secret-db")),
        ("/metrics", None),
    ] {
        let (status, text) = live.ask(None, path, body.clone()).await;
        assert_eq!(status, 401, "{path}: {text}");
        assert!(!text.contains("ledger-primary-0"), "{text}");
        let (status, text) = live.ask(Some("forged"), path, body).await;
        assert_eq!(status, 401, "{path}: {text}");
    }
    // The scheduler's certificate is no token: it reads nothing here.
    let response = live
        .server
        .client
        .get(live.server.url(explain))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
}

#[tokio::test]
async fn a_token_reads_the_namespaces_its_user_may_read_and_no_other() {
    let live = start().await;
    let token = Some(TENANT_A_TOKEN);
    let (status, text) = live
        .ask(token, "/debug/explain?namespace=tenant-a&name=api-0", None)
        .await;
    assert_eq!(status, 200, "{text}");
    let (status, text) = live
        .ask(token, "/scale-in", scale_in("tenant-a", "api"))
        .await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("api-0"), "{text}");

    let (status, text) = live
        .ask(token, "/debug/explain?namespace=tenant-b&name=victim", None)
        .await;
    assert_eq!(status, 403, "{text}");
    assert!(
        text.contains(TENANT_A) && text.contains("tenant-b"),
        "{text}"
    );
    let (status, text) = live
        .ask(token, "/scale-in", scale_in("tenant-b", "secret-db"))
        .await;
    assert_eq!(status, 403, "{text}");
    assert!(!text.contains("ledger-primary-0"), "{text}");
    let posted = pending("tenant-b", "probe", "secret-db", "default-scheduler").node("");
    let (status, _) = live.ask(token, "/debug/explain", Some(posted.json())).await;
    assert_eq!(
        status, 403,
        "a posted pod of another namespace is refused too"
    );
}

#[tokio::test]
async fn an_explanation_naming_another_namespaces_pods_needs_leave_to_list_them() {
    let live = start().await;
    let token = Some(TENANT_A_TOKEN);
    let nosy = "/debug/explain?namespace=tenant-a&name=nosy";
    let (status, text) = live.ask(token, nosy, None).await;
    assert_eq!(status, 403, "{text}");
    assert!(
        text.contains("names pods in namespace \\\"tenant-b"),
        "{text}"
    );
    assert!(!text.contains("ledger-primary-0"), "{text}");

    // A refusal is remembered for up to 10 s: another user, with leave.
    let ops = "system:serviceaccount:tenant-a:ops";
    live.api.add_token("ops-token", ops, &[]);
    live.api.allow(ops, "get", "pods", Some("tenant-a"));
    live.api.allow(ops, "list", "pods", Some("tenant-b"));
    let (status, text) = live.ask(Some("ops-token"), nosy, None).await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("tenant-b/ledger-primary-0"), "{text}");
}

/// A Deployment for `/debug/fit` in `namespace`; with `avoid_db`, its pods
/// refuse nodes running tenant-b's database or one of their own, so its
/// second replica fits nowhere and the reasons name tenant-b's pod.
fn fit_manifest(namespace: &str, avoid_db: bool) -> Value {
    let mut spec = json!({"containers": [{"name": "c"}]});
    if avoid_db {
        let away = |app: &str, namespaces: &[&str]| {
            json!({"labelSelector": {"matchLabels": {"app": app}}, "namespaces": namespaces,
                   "topologyKey": "kubernetes.io/hostname"})
        };
        spec["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            away("secret-db", &["tenant-b"]), away("probe", &[])]}});
    }
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "probe", "namespace": namespace},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "probe"}},
                 "template": {"metadata": {"labels": {"app": "probe"}}, "spec": spec}}})
}

#[tokio::test]
async fn fit_needs_a_token_and_leave_to_create_pods_and_nothing_reaches_the_api_without_one() {
    let live = start().await;
    let reviews = live.api.review_count();
    let (status, text) = live
        .ask(None, "/debug/fit", Some(fit_manifest("tenant-a", true)))
        .await;
    assert_eq!(status, 401, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        answer.as_object().map(|o| o.keys().collect::<Vec<_>>()),
        Some(vec![&"error".to_string()]),
        "a 401 and nothing else: {text}"
    );
    assert_eq!(live.api.review_count(), reviews, "no review was asked");

    // tenant-a may read pods in tenant-a but not create them.
    let token = Some(TENANT_A_TOKEN);
    let (status, text) = live
        .ask(token, "/debug/fit", Some(fit_manifest("tenant-a", false)))
        .await;
    assert_eq!(status, 403, "{text}");
    assert!(text.contains("create pods"), "{text}");

    let creator = "system:serviceaccount:tenant-a:deployer";
    live.api.add_token("deployer-token", creator, &[]);
    live.api.allow(creator, "create", "pods", Some("tenant-a"));
    let deployer = Some("deployer-token");
    let (status, text) = live
        .ask(
            deployer,
            "/debug/fit",
            Some(fit_manifest("tenant-a", false)),
        )
        .await;
    assert_eq!(status, 200, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["placed"], 2, "{text}");

    // An answer naming tenant-b's pods needs leave to list pods everywhere.
    let (status, text) = live
        .ask(deployer, "/debug/fit", Some(fit_manifest("tenant-a", true)))
        .await;
    assert_eq!(status, 403, "{text}");
    assert!(
        text.contains("names pods in namespace \\\"tenant-b"),
        "{text}"
    );
    assert!(!text.contains("ledger-primary-0"), "{text}");
    let auditor = "system:serviceaccount:tenant-a:auditor";
    live.api.add_token("auditor-token", auditor, &[]);
    live.api.allow(auditor, "create", "pods", Some("tenant-a"));
    live.api.allow(auditor, "list", "pods", None);
    let (status, text) = live
        .ask(
            Some("auditor-token"),
            "/debug/fit",
            Some(fit_manifest("tenant-a", true)),
        )
        .await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("tenant-b/ledger-primary-0"), "{text}");
}

#[tokio::test]
async fn metrics_need_leave_to_get_the_metrics_url() {
    let live = start().await;
    let (status, text) = live.ask(Some(TENANT_A_TOKEN), "/metrics", None).await;
    assert_eq!(status, 403, "{text}");
    live.api.allow_non_resource(TENANT_A, "get", "/metrics");
    // The refusal above is remembered for up to 10 s; a new user is not.
    live.api.add_token(
        "prometheus-token",
        "system:serviceaccount:monitoring:prometheus",
        &[],
    );
    live.api.allow_non_resource(
        "system:serviceaccount:monitoring:prometheus",
        "get",
        "/metrics",
    );
    let (status, text) = live.ask(Some("prometheus-token"), "/metrics", None).await;
    assert_eq!(status, 200, "{text}");
    assert!(
        text.contains("kube_arbiter_bindings_refused_total"),
        "{text}"
    );
}
