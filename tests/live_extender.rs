//! The built server in live mode, pointed at the in-process API server:
//! watch events change what `/scheduler/filter` and `/scheduler/prioritize`
//! answer over real HTTPS, without a restart.

mod common;
#[path = "support/fake_apiserver.rs"]
mod fake_apiserver;

use common::{Arbiter, Launch, eventually};
use fake_apiserver::{FakeApiServer, api_node, running_pod};
use kube_arbiter::testing::{HOSTNAME, MakePod, label_term, make_pod, namespace_json};
use serde_json::{Value, json};

struct Live {
    api: FakeApiServer,
    server: Arbiter,
}

/// Two nodes, a namespace, no pods; the server synced and ready.
async fn start() -> Live {
    let api = FakeApiServer::start().await;
    api.load(
        "Node",
        [
            api_node("n1").zone("z1").json(),
            api_node("n2").zone("z1").json(),
        ],
    );
    api.load("Namespace", [namespace_json("shop", &[])]);
    let server = Launch::live(api.kubeconfig()).ready().await;
    Live { api, server }
}

/// Poll `path` with `body` until `holds` accepts the answer.
async fn answer_until(
    server: &Arbiter,
    what: &str,
    path: &str,
    body: &Value,
    holds: impl Fn(&Value) -> bool,
) {
    eventually(what, || async {
        let got = server.post_ok(path, body).await;
        holds(&got).then_some(())
    })
    .await;
}

fn pod(name: &str, app: &str, node: &str) -> Value {
    running_pod(name, app, node).json()
}

/// An `app=web` pod to place, its one container asking for nothing.
fn incoming() -> MakePod {
    make_pod("shop", "incoming")
        .uid("")
        .label("app", "web")
        .requests(&[])
}

fn args(pod: MakePod) -> Value {
    json!({"Pod": pod.json(), "NodeNames": ["n1", "n2"]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filter_follows_pods_added_and_deleted_by_the_watch() {
    let live = start().await;
    let away_from_db = label_term(&[("app", "db")], HOSTNAME);
    let request = args(incoming().required_anti_affinity(away_from_db));
    let got = live.server.post_ok("/scheduler/filter", &request).await;
    assert_eq!(got["NodeNames"], json!(["n1", "n2"]), "{got}");

    live.api.apply("Pod", pod("db-0", "db", "n1"));
    answer_until(
        &live.server,
        "filter to fail n1 for db-0",
        "/scheduler/filter",
        &request,
        |got| got["NodeNames"] == json!(["n2"]),
    )
    .await;
    let got = live.server.post_ok("/scheduler/filter", &request).await;
    let reason = got["FailedNodes"]["n1"].as_str().unwrap_or_default();
    assert!(
        reason.contains("anti-affinity") && reason.contains("shop/db-0"),
        "{got}"
    );

    live.api.delete("Pod", "shop", "db-0");
    answer_until(
        &live.server,
        "filter to pass n1 again",
        "/scheduler/filter",
        &request,
        |got| got["NodeNames"] == json!(["n1", "n2"]),
    )
    .await;
}

/// The scores of n1 and n2; a host the answer leaves out scores 0, as
/// kube-scheduler counts it (-1 when the answer is not a list).
fn scores(got: &Value) -> (i64, i64) {
    let of = |host: &str| match got.as_array() {
        Some(list) => list
            .iter()
            .find(|h| h["Host"] == host)
            .map_or(0, |h| h["Score"].as_i64().unwrap_or(-1)),
        None => -1,
    };
    (of("n1"), of("n2"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prioritize_follows_pods_added_and_deleted_by_the_watch() {
    let live = start().await;
    let near_cache = label_term(&[("app", "cache")], HOSTNAME);
    let request = args(incoming().preferred_affinity(100, near_cache));
    let (n1, n2) = scores(&live.server.post_ok("/scheduler/prioritize", &request).await);
    assert_eq!(n1, n2, "no cache pod anywhere: nothing to prefer");

    live.api.apply("Pod", pod("cache-0", "cache", "n2"));
    answer_until(
        &live.server,
        "n2 to score above n1",
        "/scheduler/prioritize",
        &request,
        |got| {
            let (n1, n2) = scores(got);
            n2 > n1 && n1 >= 0
        },
    )
    .await;

    live.api.delete("Pod", "shop", "cache-0");
    answer_until(
        &live.server,
        "the scores to be equal again",
        "/scheduler/prioritize",
        &request,
        |got| {
            let (n1, n2) = scores(got);
            n1 == n2 && n1 >= 0
        },
    )
    .await;
}
