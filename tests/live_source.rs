//! The live source against an in-process API server that speaks the real
//! protocol: initial sync gates readiness, watch events reach the view,
//! 410 Gone and cut connections recover without losing changes, a kind out
//! of step too long makes the view stale, and the bind verb assumes pods.

mod common;
#[path = "support/fake_apiserver.rs"]
mod fake_apiserver;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use common::until;
use fake_apiserver::FakeApiServer;
use kube_arbiter::api::AppState;
use kube_arbiter::cluster::live::{self, LiveSource};
use kube_arbiter::cluster::{ClusterView, Kind, Snapshot};
use kube_arbiter::config::{Config, LiveSettings};
use kube_arbiter::model::requests::RequestsRule;
use kube_arbiter::testing::{MakePod, make_node, make_pod, namespace_json};
use serde_json::{Value, json};
use tower::ServiceExt;

fn node(name: &str, zone: &str) -> Value {
    make_node(name)
        .uid(&format!("uid-{name}"))
        .zone(zone)
        .allocatable(&[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")])
        .json()
}

/// An `app=web` pod asking for 100m cpu, Running on `node` or Pending.
fn web_pod(ns: &str, name: &str, node: &str) -> MakePod {
    let written_by = json!([{"manager": "kube-controller-manager", "fieldsV1": {"f:spec": {}}}]);
    make_pod(ns, name)
        .label("app", "web")
        .meta("managedFields", written_by)
        .node(node)
        .requests(&[("cpu", "100m")])
        .phase(if node.is_empty() {
            "Pending"
        } else {
            "Running"
        })
}

fn pod(ns: &str, name: &str, node: &str) -> Value {
    web_pod(ns, name, node).json()
}

fn settings() -> LiveSettings {
    LiveSettings {
        assume_ttl_seconds: 30,
        stale_after_seconds: 1,
        publish_interval_millis: 2,
        ..LiveSettings::default()
    }
}

/// A server with two nodes, a namespace and pods on and off the nodes.
async fn cluster() -> FakeApiServer {
    let api = FakeApiServer::start().await;
    api.load("Node", [node("n1", "z1"), node("n2", "z2")]);
    api.load("Namespace", [namespace_json("shop", &[("team", "a")])]);
    api.load(
        "Pod",
        [
            pod("shop", "web-1", "n1"),
            pod("shop", "web-2", "n2"),
            pod("shop", "pending", ""),
        ],
    );
    api.load(
        "PriorityClass",
        [json!({"metadata": {"name": "high"}, "value": 1000})],
    );
    api.load(
        "PodDisruptionBudget",
        [json!({"metadata": {"name": "web", "namespace": "shop"},
                "spec": {"selector": {"matchLabels": {"app": "web"}}},
                "status": {"disruptionsAllowed": 1}})],
    );
    api.load(
        "Service",
        [json!({"metadata": {"name": "web", "namespace": "shop"}, "spec": {"selector": {"app": "web"}}})],
    );
    api.load(
        "ReplicaSet",
        [json!({"metadata": {"name": "web-abc", "namespace": "shop"},
                "spec": {"selector": {"matchLabels": {"app": "web"}}}})],
    );
    api
}

async fn start(api: &FakeApiServer, view: &Arc<ClusterView>, s: &LiveSettings) -> LiveSource {
    live::start(
        Some(api.kubeconfig().to_path_buf()),
        view.clone(),
        s,
        RequestsRule::default(),
    )
    .await
    .unwrap()
}

fn snap(view: &ClusterView) -> Arc<Snapshot> {
    view.current().expect("view is published")
}

fn node_of(view: &ClusterView, ns: &str, name: &str) -> Option<String> {
    let s = view.current()?;
    let r = s.pod(ns, name)?;
    r.node
        .map(|i| s.nodes()[i as usize].node.name().to_string())
}

async fn synced(api: &FakeApiServer, s: LiveSettings) -> (Arc<ClusterView>, LiveSource) {
    let view = Arc::new(ClusterView::new());
    let source = start(api, &view, &s).await;
    until("the view is ready", || view.is_ready()).await;
    (view, source)
}

#[tokio::test]
async fn readiness_waits_for_every_kinds_initial_list() {
    let api = cluster().await;
    api.set_unavailable("StatefulSet", true);
    let view = Arc::new(ClusterView::new());
    let _source = start(&api, &view, &settings()).await;
    let statefulset_lists = || {
        api.requests()
            .iter()
            .filter(|r| r.starts_with("GET /apis/apps/v1/statefulsets?") && !r.contains("watch="))
            .count()
    };
    until("StatefulSets were asked for twice", || {
        statefulset_lists() >= 2
    })
    .await;
    assert!(!view.is_ready(), "one kind is not listed yet");
    assert!(view.current().is_none());

    api.set_unavailable("StatefulSet", false);
    until("the view is ready", || view.is_ready()).await;
    let s = snap(&view);
    let c = s.counts();
    assert_eq!((c.nodes, c.pods, c.namespaces, c.pdbs), (2, 3, 1, 1));
    assert_eq!((c.priority_classes, c.services, c.replica_sets), (1, 1, 1));
    assert_eq!(node_of(&view, "shop", "web-1").as_deref(), Some("n1"));
    assert_eq!(s.namespace_labels("shop").unwrap()["team"], "a");
    assert_eq!(s.priority_class("high").unwrap().value, 1000);
}

#[tokio::test]
async fn watch_events_change_what_the_view_answers() {
    let api = cluster().await;
    let (view, _source) = synced(&api, settings()).await;

    api.apply("Pod", pod("shop", "web-3", "n2"));
    until("the added pod is on n2", || {
        node_of(&view, "shop", "web-3").as_deref() == Some("n2")
    })
    .await;
    assert_eq!(snap(&view).node("n2").unwrap().pods.len(), 2);

    api.apply("Pod", pod("shop", "pending", "n1"));
    until("the pending pod is bound to n1", || {
        node_of(&view, "shop", "pending").as_deref() == Some("n1")
    })
    .await;

    api.delete("Pod", "shop", "web-1");
    until("the deleted pod is gone", || {
        snap(&view).pod("shop", "web-1").is_none()
    })
    .await;
    assert!(snap(&view).pod_by_uid("uid-shop-web-1").is_none());

    let done = web_pod("shop", "web-2", "n2").phase("Succeeded");
    api.apply("Pod", done.json());
    until("the finished pod left the view", || {
        snap(&view).pod("shop", "web-2").is_none()
    })
    .await;

    api.apply("Node", node("n3", "z3"));
    until("the new node is in the view", || {
        snap(&view).node("n3").is_some()
    })
    .await;
    assert_eq!(
        snap(&view)
            .topology_domains("topology.kubernetes.io/zone")
            .unwrap()
            .len(),
        3
    );
    api.apply(
        "PriorityClass",
        json!({"metadata": {"name": "low"}, "value": 1}),
    );
    until("the new PriorityClass is in the view", || {
        snap(&view).priority_class("low").is_some()
    })
    .await;
    let events = view.sync_stats().read().events;
    assert!(events[Kind::Pod as usize].1 >= 4, "{events:?}");
}

fn gpu_class() -> Value {
    json!({"metadata": {"name": "gpu.example.com", "uid": "uid-gpu"},
           "spec": {"extendedResourceName": "example.com/gpu",
                    "selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}})
}

fn gpu_mapped(view: &ClusterView) -> bool {
    view.current().is_some_and(|s| {
        s.extended_resource_classes()
            .class_of("example.com/gpu")
            .is_some()
    })
}

#[tokio::test]
async fn device_class_events_change_which_resources_dra_backs() {
    let api = cluster().await;
    let (view, _source) = synced(&api, settings()).await;
    assert_eq!(snap(&view).counts().device_classes, 0);
    api.apply("DeviceClass", gpu_class());
    until("the DeviceClass maps example.com/gpu", || gpu_mapped(&view)).await;
    let s = snap(&view);
    assert!(
        s.extended_resource_classes()
            .class_of("deviceclass.resource.kubernetes.io/gpu.example.com")
            .is_some()
    );
    assert_eq!(s.counts().device_classes, 1);
    api.delete("DeviceClass", "", "gpu.example.com");
    until("the deleted DeviceClass maps nothing", || {
        !gpu_mapped(&view)
    })
    .await;
}

/// resource.k8s.io/v1 is served by default from 1.34; an older API server
/// (or one with the group turned off) answers 404, and the view goes on
/// without DeviceClasses: ready, never stale, asking again until served.
#[tokio::test]
async fn a_cluster_without_device_classes_is_ready_and_picks_them_up_once_served() {
    let api = cluster().await;
    api.set_served("DeviceClass", false);
    api.load("DeviceClass", [gpu_class()]);
    let (view, _source) = synced(&api, settings()).await;
    assert_eq!(snap(&view).counts().device_classes, 0);
    let asked = || {
        api.requests()
            .iter()
            .filter(|r| r.starts_with("GET /apis/resource.k8s.io/v1/deviceclasses?"))
            .count()
    };
    until("DeviceClasses were asked for three times", || asked() >= 3).await;
    // Past staleAfterSeconds (1 s here) since the first 404.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(
        view.is_ready() && !view.is_stale(),
        "a 404 is not a failure"
    );
    assert_eq!(view.sync_stats().read().age, Duration::ZERO);

    api.set_served("DeviceClass", true);
    until("the DeviceClass is in the view once served", || {
        gpu_mapped(&view)
    })
    .await;

    api.set_served("DeviceClass", false);
    until("a DeviceClass API turned off empties them", || {
        !gpu_mapped(&view)
    })
    .await;
    assert!(view.is_ready());
}

#[tokio::test]
async fn a_one_shot_list_goes_on_without_device_classes_where_not_served() {
    let api = cluster().await;
    api.set_served("DeviceClass", false);
    let s = live::list_once(Some(api.kubeconfig()), RequestsRule::default())
        .await
        .unwrap();
    assert_eq!((s.counts().nodes, s.counts().device_classes), (2, 0));

    api.set_served("DeviceClass", true);
    api.apply("DeviceClass", gpu_class());
    let s = live::list_once(Some(api.kubeconfig()), RequestsRule::default())
        .await
        .unwrap();
    assert_eq!(s.counts().device_classes, 1);
}

#[tokio::test]
async fn gone_410_relists_and_loses_no_change() {
    let api = cluster().await;
    let (view, _source) = synced(&api, settings()).await;
    let relists_before = view.sync_stats().read().relists[Kind::Pod as usize].1;

    // Changes no watch hears of, then history is compacted and the
    // connections drop: resuming from the old version must get 410.
    api.apply_unannounced("Pod", pod("shop", "pending", "n2"));
    api.delete_unannounced("Pod", "shop", "web-1");
    api.apply_unannounced("Pod", pod("shop", "web-9", "n1"));
    api.compact();
    api.cut_watches();

    until("the relisted view has every change", || {
        node_of(&view, "shop", "pending").as_deref() == Some("n2")
            && snap(&view).pod("shop", "web-1").is_none()
            && node_of(&view, "shop", "web-9").as_deref() == Some("n1")
    })
    .await;
    let relists = view.sync_stats().read().relists[Kind::Pod as usize].1;
    assert!(relists > relists_before, "pods were relisted");
    assert_eq!(snap(&view).counts().pods, 3);
}

#[tokio::test]
async fn a_cut_watch_reconnects_and_keeps_delivering() {
    let api = cluster().await;
    let (view, _source) = synced(&api, settings()).await;
    api.cut_watches();
    api.apply("Pod", pod("shop", "after-cut", "n1"));
    until("the change after the cut arrives", || {
        node_of(&view, "shop", "after-cut").as_deref() == Some("n1")
    })
    .await;
    assert!(view.is_ready());
}

#[tokio::test]
async fn a_kind_out_of_step_too_long_makes_the_view_stale() {
    let api = cluster().await;
    let (view, _source) = synced(&api, settings()).await;
    api.set_unavailable("Pod", true);
    until("the view is stale", || view.is_stale()).await;
    assert!(!view.is_ready(), "/readyz fails while stale");
    assert!(view.current().is_some(), "the last view still answers");
    assert!(view.sync_stats().read().age > Duration::ZERO);

    api.set_unavailable("Pod", false);
    api.apply("Pod", pod("shop", "back", "n2"));
    until("the view is fresh and has the change", || {
        view.is_ready() && node_of(&view, "shop", "back").is_some()
    })
    .await;
    assert_eq!(view.sync_stats().read().age, Duration::ZERO);
}

async fn bind(state: &AppState, body: Value) -> Value {
    let app = kube_arbiter::api::routes(true)
        .scheduler
        .with_state(state.clone());
    let response = app
        .oneshot(
            Request::post("/scheduler/bind")
                .header("content-type", "application/json")
                .body(Body::from(body.to_string()))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn app_state(view: &Arc<ClusterView>, source: &LiveSource, live: LiveSettings) -> AppState {
    let config = Config {
        live,
        ..Config::default()
    };
    AppState::new(view.clone(), config).with_binder(source.binder())
}

#[tokio::test]
async fn a_bound_pod_is_on_its_node_before_any_watch_event() {
    let api = cluster().await;
    let (view, source) = synced(&api, settings()).await;
    let state = app_state(&view, &source, settings());
    api.pause_events();

    let answer = bind(
        &state,
        json!({"PodName": "pending", "PodNamespace": "shop", "PodUID": "uid-shop-pending", "Node": "n2"}),
    )
    .await;
    assert_eq!(answer, json!({"Error": ""}));
    assert_eq!(node_of(&view, "shop", "pending").as_deref(), Some("n2"));
    assert_eq!(view.assumed_bindings(), 1);
    let sent = api.bindings();
    assert_eq!(sent[0]["target"]["name"], "n2");
    assert_eq!(sent[0]["metadata"]["uid"], "uid-shop-pending");

    api.resume_events();
    until("the watch confirmed the binding", || {
        view.assumed_bindings() == 0
    })
    .await;
    assert_eq!(node_of(&view, "shop", "pending").as_deref(), Some("n2"));
    assert_eq!(snap(&view).node("n2").unwrap().pods.len(), 2);
}

#[tokio::test]
async fn a_refused_binding_leaves_no_phantom_pod() {
    let api = cluster().await;
    let (view, source) = synced(&api, settings()).await;
    let state = app_state(&view, &source, settings());
    api.fail_bindings(Some((
        409,
        "pod pending is already assigned to node \"n1\"",
    )));

    let answer = bind(
        &state,
        json!({"podName": "pending", "podNamespace": "shop", "podUID": "uid-shop-pending", "node": "n2"}),
    )
    .await;
    assert_eq!(
        answer,
        json!({"Error": "pod pending is already assigned to node \"n1\""})
    );
    assert_eq!(node_of(&view, "shop", "pending"), None);
    assert_eq!(view.assumed_bindings(), 0);
    assert_eq!(snap(&view).node("n2").unwrap().pods.len(), 1);
}

/// The API server made the Binding but its answer was lost (here: a body
/// no client can read): the pod is read back, found on the node, and the
/// bind is a success, still assumed there.
#[tokio::test]
async fn a_binding_made_whose_answer_was_lost_is_a_binding() {
    let api = cluster().await;
    let (view, source) = synced(&api, settings()).await;
    let state = app_state(&view, &source, settings());
    api.pause_events();
    api.lose_binding_answers(true);

    let answer = bind(
        &state,
        json!({"podName": "pending", "podNamespace": "shop", "podUID": "uid-shop-pending", "node": "n2"}),
    )
    .await;
    assert_eq!(answer["Error"], "", "{answer}");
    assert_eq!(node_of(&view, "shop", "pending").as_deref(), Some("n2"));
    assert_eq!(view.assumed_bindings(), 1);
}

#[tokio::test]
async fn an_unconfirmed_assumption_expires() {
    let api = cluster().await;
    let live = LiveSettings {
        assume_ttl_seconds: 1,
        ..settings()
    };
    let (view, source) = synced(&api, live.clone()).await;
    let state = app_state(&view, &source, live);
    api.pause_events();

    let answer = bind(
        &state,
        json!({"PodName": "pending", "PodNamespace": "shop", "PodUID": "uid-shop-pending", "Node": "n1"}),
    )
    .await;
    assert_eq!(answer["Error"], "");
    assert_eq!(node_of(&view, "shop", "pending").as_deref(), Some("n1"));
    until("the assumption expired", || view.assumed_bindings() == 0).await;
    assert_eq!(node_of(&view, "shop", "pending"), None);
}

#[tokio::test]
async fn without_a_readable_kubeconfig_the_error_points_to_cluster_state() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let view = Arc::new(ClusterView::new());
    let err = live::start(
        Some(missing),
        view.clone(),
        &settings(),
        RequestsRule::default(),
    )
    .await
    .err()
    .unwrap();
    assert!(err.to_string().contains("--cluster-state"), "{err}");

    let broken = dir.path().join("broken");
    std::fs::write(&broken, "clusters: [this is not a kubeconfig").unwrap();
    let err = live::start(
        Some(broken.clone()),
        view,
        &settings(),
        RequestsRule::default(),
    )
    .await
    .err()
    .unwrap();
    let text = err.to_string();
    assert!(
        text.contains("cannot read kubeconfig") && text.contains(broken.to_str().unwrap()),
        "{text}"
    );
}

#[tokio::test]
async fn an_api_server_that_comes_up_later_is_waited_for() {
    let mut api = FakeApiServer::not_started();
    api.load("Node", [node("n1", "z1")]);
    api.load("Pod", [pod("shop", "web-1", "n1")]);
    let view = Arc::new(ClusterView::new());
    let _source = start(&api, &view, &settings()).await;
    until("a watch failed", || {
        view.sync_stats().read().age > Duration::ZERO
    })
    .await;
    assert!(!view.is_ready() && view.current().is_none());
    assert_eq!(view.sync_stats().read().relists[Kind::Pod as usize].1, 0);

    api.restart().await;
    until("the view is ready", || view.is_ready()).await;
    assert_eq!(node_of(&view, "shop", "web-1").as_deref(), Some("n1"));
}

#[tokio::test]
async fn an_api_server_restart_goes_stale_then_relists_every_change() {
    let mut api = cluster().await;
    let (view, _source) = synced(&api, settings()).await;
    api.stop().await;
    until("the view is stale", || view.is_stale()).await;
    assert!(!view.is_ready(), "/readyz fails while stale");
    assert_eq!(
        node_of(&view, "shop", "web-1").as_deref(),
        Some("n1"),
        "the last view still answers"
    );

    // Changes while it was down: the restarted server has them.
    api.apply("Pod", pod("shop", "pending", "n2"));
    api.delete("Pod", "shop", "web-1");
    api.restart().await;
    until("the view is fresh with every change", || {
        view.is_ready()
            && node_of(&view, "shop", "pending").as_deref() == Some("n2")
            && snap(&view).pod("shop", "web-1").is_none()
    })
    .await;
    api.apply("Pod", pod("shop", "after", "n1"));
    until("watches deliver again", || {
        node_of(&view, "shop", "after").as_deref() == Some("n1")
    })
    .await;
}
