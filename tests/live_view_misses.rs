//! A miss in the watch-fed view is asked of the API server before it
//! becomes a refusal (docs/live-source.md, "When the view has not seen it
//! yet"): the built server in live mode against the in-process API server,
//! whose watch events are held back while it answers GETs, as a lagging
//! watch leaves kube-arbiter behind kube-scheduler and kube-apiserver.

mod common;
#[path = "support/fake_apiserver.rs"]
mod fake_apiserver;

use std::time::{Duration, Instant};

use base64::Engine;
use common::{Arbiter, Launch, metric};
use fake_apiserver::{FakeApiServer, METRICS_TOKEN, api_node};
use kube_arbiter::testing::{HOSTNAME, MakePod, label_term, make_pod, namespace_json};
use serde_json::{Value, json};

struct Live {
    api: FakeApiServer,
    server: Arbiter,
}

/// Two nodes, the namespace `shop`, the classes `classes`; ready.
async fn start(classes: &[Value], config: Option<&str>) -> Live {
    let api = FakeApiServer::start().await;
    api.load("Node", [api_node("n1").json(), api_node("n2").json()]);
    api.load("Namespace", [namespace_json("shop", &[])]);
    api.load("PriorityClass", classes.iter().cloned());
    let mut launch = Launch::live(api.kubeconfig());
    if let Some(yaml) = config {
        launch = launch.config(yaml);
    }
    let server = launch.ready().await;
    Live { api, server }
}

/// A pending pod of the default scheduler, labelled app=web.
fn pending(name: &str) -> MakePod {
    make_pod("shop", name)
        .uid(&format!("uid-{name}"))
        .label("app", "web")
        .spec("schedulerName", "default-scheduler".into())
        .requests(&[])
        .phase("Pending")
}

fn class(name: &str, value: i64, global_default: bool) -> Value {
    json!({"metadata": {"name": name}, "value": value, "globalDefault": global_default,
           "preemptionPolicy": "PreemptLowerPriority"})
}

fn binding(name: &str, uid: &str, node: &str) -> Value {
    json!({"PodName": name, "PodNamespace": "shop", "PodUID": uid, "Node": node})
}

impl Live {
    /// The bind verb's `Error` ("" when bound).
    async fn bind(&self, body: &Value) -> String {
        let answer = self.server.post_ok("/scheduler/bind", body).await;
        answer["Error"].as_str().unwrap_or_default().to_string()
    }

    async fn metrics(&self) -> String {
        let response = (self.server.anonymous())
            .get(self.server.url("/metrics"))
            .bearer_auth(METRICS_TOKEN)
            .send()
            .await
            .unwrap();
        response.text().await.unwrap()
    }

    async fn reads(&self, kind: &str, outcome: &str) -> f64 {
        let name = format!(
            "kube_arbiter_view_read_through_total{{kind=\"{kind}\",outcome=\"{outcome}\"}}"
        );
        metric(&self.metrics().await, &name).unwrap_or(0.0)
    }

    /// The webhook's HTTP status and the review's `response`.
    async fn review(&self, path: &str, request: Value) -> (u16, Value) {
        let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                            "request": request});
        let (status, answer) = self
            .server
            .post(path, serde_json::to_vec(&review).unwrap())
            .await;
        (status, answer["response"].clone())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bind_of_a_pod_the_watch_has_not_brought_is_made() {
    let live = start(&[], None).await;
    live.api.pause_events();
    live.api.apply("Pod", pending("web-0").json());
    let error = live.bind(&binding("web-0", "uid-web-0", "n1")).await;
    assert_eq!(error, "", "the pod exists; the view only lags");
    let sent = live.api.bindings();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["target"]["name"], "n1");
    assert_eq!(live.reads("Pod", "found").await, 1.0);
    assert!(!live.server.log().contains("binding refused"));
}

/// A pod bound before the watch brought it is assumed in the view like
/// any other: as the enforcer, the next related pod neither waits for it
/// nor misses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_bound_before_the_watch_brought_it_counts_at_once() {
    let live = start(&[], Some("scheduling:\n  role: enforcer\n")).await;
    live.api.pause_events();
    live.api.apply("Pod", pending("web-x").json());
    let copy = live.api.get("Pod", "shop", "web-x").unwrap();
    let filter = |pod: &Value| json!({"Pod": pod, "NodeNames": ["n1", "n2"]});
    live.server
        .post_ok("/scheduler/filter", &filter(&copy))
        .await;
    assert_eq!(live.bind(&binding("web-x", "uid-web-x", "n1")).await, "");

    let apart = pending("web-y")
        .required_anti_affinity(label_term(&[("app", "web")], HOSTNAME))
        .json();
    let started = Instant::now();
    let answer = live
        .server
        .post_ok("/scheduler/filter", &filter(&apart))
        .await;
    let took = started.elapsed();
    assert_eq!(answer["NodeNames"], json!(["n2"]), "{answer}");
    let text = live.metrics().await;
    assert_eq!(
        metric(&text, "kube_arbiter_in_flight_wait_timeouts_total"),
        Some(0.0),
        "waited {took:?}"
    );
    assert!(took < Duration::from_millis(900), "waited {took:?}");
}

/// The burst a real kube-scheduler sends with bindVerb: each pod bound a
/// few milliseconds after it was created, before the watch brought any.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_bound_before_the_watch_brings_it_is_refused_nothing() {
    let live = start(&[], None).await;
    live.api.pause_events();
    let names: Vec<String> = (0..30).map(|i| format!("burst-{i:02}")).collect();
    for name in &names {
        live.api.apply("Pod", pending(name).json());
    }
    let bodies: Vec<Value> = (names.iter().enumerate())
        .map(|(i, name)| binding(name, &format!("uid-{name}"), ["n1", "n2"][i % 2]))
        .collect();
    let errors = futures::future::join_all(bodies.iter().map(|b| live.bind(b))).await;
    assert!(errors.iter().all(String::is_empty), "{errors:?}");
    assert_eq!(live.api.bindings().len(), 30);
    assert_eq!(live.reads("Pod", "found").await, 30.0);
    let log = live.server.log();
    assert!(!log.contains(" WARN "), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bind_to_a_node_the_watch_has_not_brought_is_made() {
    let live = start(&[], None).await;
    live.api.apply("Pod", pending("web-1").json());
    live.api.pause_events();
    live.api.apply("Node", api_node("n3").json());
    // The pod came before the pause: poll until the view has it.
    common::eventually("the view to hold web-1", || async {
        let text = live.metrics().await;
        (metric(&text, "kube_arbiter_view_objects{kind=\"Pod\"}") == Some(1.0)).then_some(())
    })
    .await;
    let error = live.bind(&binding("web-1", "uid-web-1", "n3")).await;
    assert_eq!(error, "");
    assert_eq!(live.reads("Node", "found").await, 1.0);
    assert_eq!(
        live.reads("Pod", "found").await,
        0.0,
        "the view had the pod"
    );
}

/// However many binds ask about one pod the view lacks, one GET of it is
/// in flight at a time, and exactly one bind goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binds_of_one_unseen_pod_read_it_one_get_at_a_time() {
    let live = start(&[], None).await;
    live.api.pause_events();
    live.api.apply("Pod", pending("web-2").json());
    live.api.set_get_latency(Duration::from_millis(300));
    let body = binding("web-2", "uid-web-2", "n1");
    let binds = (0..6).map(|_| live.bind(&body));
    let errors = futures::future::join_all(binds).await;
    assert_eq!(
        errors.iter().filter(|e| e.is_empty()).count(),
        1,
        "{errors:?}"
    );
    assert_eq!(live.api.most_gets_at_once(), 1, "{:?}", live.api.gets());
    let gets = live.api.gets();
    assert!(gets.len() < 6, "{gets:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_server_that_does_not_answer_in_time_is_a_refusal_that_says_so() {
    let live = start(&[], Some("live:\n  readThroughTimeoutMillis: 200\n")).await;
    live.api.pause_events();
    live.api.apply("Pod", pending("web-3").json());
    live.api.set_get_latency(Duration::from_secs(3));
    let started = Instant::now();
    let error = live.bind(&binding("web-3", "uid-web-3", "n1")).await;
    assert!(started.elapsed() < Duration::from_secs(2), "bounded");
    assert!(
        error.contains("cannot confirm pod shop/web-3") && error.contains("did not answer"),
        "{error}"
    );
    assert!(live.api.bindings().is_empty());
    assert_eq!(live.reads("Pod", "timeout").await, 1.0);
}

fn pod_create(class_name: &str) -> Value {
    json!({"uid": "r-1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
           "resource": {"group": "", "version": "v1", "resource": "pods"},
           "namespace": "shop", "operation": "CREATE",
           "object": {"metadata": {"name": "p", "namespace": "shop"},
                      "spec": {"priorityClassName": class_name, "containers": [{"name": "c"}]}}})
}

fn class_create(object: Value) -> Value {
    json!({"uid": "r-2",
           "kind": {"group": "scheduling.k8s.io", "version": "v1", "kind": "PriorityClass"},
           "resource": {"group": "scheduling.k8s.io", "version": "v1", "resource": "priorityclasses"},
           "name": object["metadata"]["name"], "operation": "CREATE", "object": object})
}

fn patch_of(response: &Value) -> Value {
    let patch = response["patch"].as_str().unwrap_or_default();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(patch)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_naming_a_class_created_a_moment_ago_gets_its_priority() {
    let live = start(&[], None).await;
    live.api.pause_events();
    live.api
        .apply("PriorityClass", class("fresh-class", 700, false));
    let (status, response) = live
        .review("/admission/priority", pod_create("fresh-class"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(response["allowed"], true, "{response}");
    let patch = patch_of(&response);
    assert!(
        patch
            .as_array()
            .unwrap()
            .iter()
            .any(|op| op["path"] == "/spec/priority" && op["value"] == 700),
        "{patch}"
    );
    assert_eq!(live.reads("PriorityClass", "found").await, 1.0);

    // One the API server lacks too is refused, as upstream words it.
    let (status, response) = live
        .review("/admission/priority", pod_create("nowhere"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(response["allowed"], false);
    let message = response["status"]["message"].as_str().unwrap_or_default();
    assert!(
        message.ends_with("no PriorityClass with name nowhere was found"),
        "{message}"
    );
    assert_eq!(live.reads("PriorityClass", "absent").await, 1.0);
}

/// A read that fails is an error answer, so kube-apiserver applies the
/// webhook's failurePolicy; not a denial saying the class is missing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_class_read_that_fails_is_an_error_answer() {
    let live = start(&[], None).await;
    live.api.set_unavailable("PriorityClass", true);
    let (status, _) = live
        .review("/admission/priority", pod_create("fresh-class"))
        .await;
    assert_eq!(status, 503);
    assert_eq!(live.reads("PriorityClass", "error").await, 1.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_only_default_rule_sees_the_classes_the_api_server_has() {
    let live = start(&[class("old-default", 10, true)], None).await;
    live.api.pause_events();
    live.api
        .apply("PriorityClass", class("new-default", 20, true));
    live.api.delete("PriorityClass", "", "old-default");
    let (status, response) = live
        .review(
            "/admission/priorityclass",
            class_create(class("third-default", 30, true)),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(response["allowed"], false, "{response}");
    let message = response["status"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("PriorityClass new-default is already marked as default"),
        "the default created a moment ago counts, the one deleted does not: {message}"
    );
    assert_eq!(live.reads("PriorityClass", "listed").await, 1.0);
    let (_, response) = live
        .review(
            "/admission/priorityclass",
            class_create(class("plain", 5, false)),
        )
        .await;
    assert_eq!(response["allowed"], true);
    assert_eq!(
        live.reads("PriorityClass", "listed").await,
        1.0,
        "a class that is no default is not judged against the others"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_created_a_moment_ago_is_explained() {
    let live = start(&[], None).await;
    let reader = "system:serviceaccount:shop:reader";
    live.api.add_token("reader-token", reader, &[]);
    live.api.allow(reader, "get", "pods", Some("shop"));
    live.api.pause_events();
    live.api.apply("Pod", pending("web-9").json());
    let ask = |name: &str| {
        (live.server.anonymous())
            .get(
                live.server
                    .url(&format!("/debug/explain?namespace=shop&name={name}")),
            )
            .bearer_auth("reader-token")
            .send()
    };
    let response = ask("web-9").await.unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    assert!(text.contains("shop/web-9"), "{text}");
    let response = ask("ghost").await.unwrap();
    assert_eq!(response.status(), 404);
    let text = response.text().await.unwrap();
    assert!(text.contains("does not exist"), "{text}");
}

/// A pod created and deleted while the watch lagged (a ReplicaSet
/// scale-down deletes pending pods first) was never in the view; once the
/// view has caught up with the version kube-scheduler had of it, nobody
/// waits for it: as the enforcer, a related decision used to wait its full
/// second for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_deleted_before_the_view_showed_it_is_not_waited_for() {
    let live = start(&[], Some("scheduling:\n  role: enforcer\n")).await;
    live.api.pause_events();
    live.api.apply("Pod", pending("web-a").json());
    let copy = live.api.get("Pod", "shop", "web-a").unwrap();
    let answer = live
        .server
        .post_ok(
            "/scheduler/filter",
            &json!({"Pod": copy, "NodeNames": ["n1", "n2"]}),
        )
        .await;
    assert_eq!(answer["NodeNames"], json!(["n1", "n2"]), "{answer}");
    live.api.delete("Pod", "shop", "web-a");
    live.api.resume_events();
    // Both events come in one batch: the view never shows web-a.
    common::eventually("the view to apply both events", || async {
        let text = live.metrics().await;
        (metric(&text, "kube_arbiter_view_events_total{kind=\"Pod\"}") == Some(2.0)).then_some(())
    })
    .await;

    let spread = pending("web-b").spread(1, HOSTNAME, "DoNotSchedule", &[("app", "web")]);
    let started = Instant::now();
    live.server
        .post_ok(
            "/scheduler/filter",
            &json!({"Pod": spread.json(), "NodeNames": ["n1", "n2"]}),
        )
        .await;
    let took = started.elapsed();
    let text = live.metrics().await;
    assert_eq!(
        metric(&text, "kube_arbiter_in_flight_wait_timeouts_total"),
        Some(0.0),
        "waited {took:?}"
    );
    assert!(took < Duration::from_millis(900), "waited {took:?}");
}
