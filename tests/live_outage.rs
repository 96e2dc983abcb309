//! The built server in live mode when the API server is not there: started
//! before it, and through a restart while serving. What the probes and the
//! answers say, and what the log says: its JSON lines are parsed and the
//! warnings and errors counted.

mod common;
#[path = "support/fake_apiserver.rs"]
mod fake_apiserver;

use std::time::Duration;

use common::{Arbiter, Launch, eventually};
use fake_apiserver::{FakeApiServer, api_node, running_pod};
use kube_arbiter::testing::{HOSTNAME, label_term, make_pod, namespace_json};
use serde_json::{Value, json};

fn cluster(api: &FakeApiServer) {
    api.load("Node", [api_node("n1").json(), api_node("n2").json()]);
    api.load("Namespace", [namespace_json("shop", &[])]);
}

fn pod(name: &str, app: &str, node: &str) -> Value {
    running_pod(name, app, node).json()
}

/// A pod that must not share a node with an `app=db` pod.
fn filter_args() -> Value {
    let incoming = make_pod("shop", "incoming")
        .uid("")
        .requests(&[])
        .required_anti_affinity(label_term(&[("app", "db")], HOSTNAME));
    json!({"Pod": incoming.json(), "NodeNames": ["n1", "n2"]})
}

struct Served {
    server: Arbiter,
}

/// `serve --kubeconfig` with JSON logs; `filter` is RUST_LOG (None: the
/// program's default).
fn serve(api: &FakeApiServer, live: &str, filter: Option<&str>) -> Served {
    let server = Launch::live(api.kubeconfig())
        .config(&format!("live: {live}\n"))
        .args(&["--log-format", "json"])
        .log(filter)
        .start();
    Served { server }
}

impl Served {
    async fn status(&self, path: &str) -> u16 {
        self.server.status(path).await
    }

    async fn ready_is(&self, want: u16) {
        self.server.wait_for_status("/readyz", want).await;
    }

    async fn filter(&self) -> Value {
        self.server
            .post_ok("/scheduler/filter", &filter_args())
            .await
    }

    async fn filter_passes(&self, what: &str, nodes: Value) {
        eventually(what, || async {
            (self.filter().await["NodeNames"] == nodes).then_some(())
        })
        .await;
    }

    /// The log lines from byte `from` on, parsed.
    fn lines(&self, from: usize) -> Vec<Value> {
        self.server.log()[from..]
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    }
}

fn level(line: &Value) -> &str {
    line["level"].as_str().unwrap_or_default()
}

fn message(line: &Value) -> &str {
    line["fields"]["message"].as_str().unwrap_or_default()
}

fn loud(lines: &[Value]) -> Vec<&Value> {
    lines
        .iter()
        .filter(|l| matches!(level(l), "WARN" | "ERROR"))
        .collect()
}

fn with_message<'a>(lines: &'a [Value], text: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| message(l).contains(text)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starts_before_the_api_server_and_serves_once_it_is_up() {
    let mut api = FakeApiServer::not_started();
    cluster(&api);
    api.load("Pod", [pod("db-0", "db", "n1")]);
    let s = serve(&api, "{}", None);
    assert_eq!(s.status("/healthz").await, 200);
    assert_eq!(s.status("/readyz").await, 503);

    // The outage under test, not an ordering pause: the API server stays
    // away for 3 s while the server keeps retrying, and the log must then
    // say it waited at least that long, with one warning for all of it.
    tokio::time::sleep(Duration::from_secs(3)).await;
    eventually("the wait is logged", || async {
        s.server
            .log()
            .contains("cannot reach the API server yet")
            .then_some(())
    })
    .await;
    assert_eq!(s.status("/readyz").await, 503, "still waiting");
    api.restart().await;
    s.ready_is(200).await;
    assert_eq!(
        s.filter().await["NodeNames"],
        json!(["n2"]),
        "db-0 is on n1"
    );

    let lines = s.lines(0);
    let loud = loud(&lines);
    assert_eq!(loud.len(), 1, "{loud:#?}");
    assert_eq!(level(loud[0]), "WARN");
    assert!(message(loud[0]).contains("cannot reach the API server yet"));
    let url = loud[0]["fields"]["url"].as_str().unwrap();
    assert!(url.contains(&api.addr.to_string()), "{url}");
    let connected = with_message(&lines, "connected to the API server after");
    assert_eq!(connected.len(), 1, "{lines:#?}");
    let waited = connected[0]["fields"]["waited_s"].as_f64().unwrap();
    assert!(waited >= 3.0, "it waited through the 3 s sleep: {waited}");
    assert_eq!(with_message(&lines, "synced; ready").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_server_restart_is_one_warning_one_error_past_stale_and_one_recovery() {
    let mut api = FakeApiServer::start().await;
    cluster(&api);
    let s = serve(&api, "{staleAfterSeconds: 1}", None);
    s.ready_is(200).await;
    s.filter_passes("both nodes pass", json!(["n1", "n2"]))
        .await;

    // Routine: the server ends watches, and a compacted history makes the
    // resumed watches 410 Gone. Nothing to warn about.
    api.cut_watches();
    api.apply("Pod", pod("db-0", "db", "n1"));
    s.filter_passes("db-0 on n1 fails it", json!(["n2"])).await;
    api.compact();
    api.cut_watches();
    api.apply("Pod", pod("web-0", "web", "n2"));
    eventually("the relisted view has web-0", || async {
        let m = reqwest_metrics(&s).await;
        m.contains("kube_arbiter_view_objects{kind=\"Pod\"} 2")
            .then_some(())
    })
    .await;
    let before_stop = s.server.log().len();
    assert!(loud(&s.lines(0)).is_empty(), "{:#?}", s.lines(0));

    api.stop().await;
    s.ready_is(503).await;
    assert_eq!(s.status("/healthz").await, 200);
    assert_eq!(
        s.filter().await["NodeNames"],
        json!(["n2"]),
        "the last view still answers"
    );
    api.delete("Pod", "shop", "db-0");
    api.restart().await;
    s.ready_is(200).await;
    s.filter_passes("db-0 gone after the restart", json!(["n1", "n2"]))
        .await;

    let lines = s.lines(before_stop);
    let loud = loud(&lines);
    let warns: Vec<_> = loud.iter().filter(|l| level(l) == "WARN").collect();
    let errors: Vec<_> = loud.iter().filter(|l| level(l) == "ERROR").collect();
    assert_eq!((warns.len(), errors.len()), (1, 1), "{loud:#?}");
    assert!(message(warns[0]).contains("API server unreachable"));
    let kinds = warns[0]["fields"]["kinds"].as_str().unwrap();
    assert!(kinds.contains("Pod") && kinds.contains("Node"), "{kinds}");
    assert!(message(errors[0]).contains("view is stale"));
    let back = with_message(&lines, "API server reachable again after");
    assert_eq!(back.len(), 1, "{lines:#?}");
    assert_eq!(level(back[0]), "INFO");
    let down = back[0]["fields"]["down_s"].as_f64().unwrap();
    // Counted from the first failed contact, which can come a moment after
    // the stop (a watch notices the closed connection late under load), so
    // it may be under staleAfterSeconds even though /readyz failed.
    assert!(down > 0.0, "the outage lasted until the restart: {down}");
    assert_eq!(with_message(&lines, "view is fresh").len(), 1, "{lines:#?}");
    assert!(
        lines.iter().all(|l| !l["target"]
            .as_str()
            .unwrap_or_default()
            .starts_with("kube_client")),
        "{lines:#?}"
    );
}

async fn reqwest_metrics(s: &Served) -> String {
    let request = s.server.client.get(s.server.url("/metrics"));
    let r = request
        .bearer_auth(fake_apiserver::METRICS_TOKEN)
        .send()
        .await
        .unwrap();
    r.text().await.unwrap()
}

/// The lines the default filter removes are really there: with `RUST_LOG`
/// set, it replaces the default, and kube_client's ERROR per refused
/// request and WARN per broken watch connection show.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_log_replaces_the_default_filter() {
    let mut api = FakeApiServer::start().await;
    cluster(&api);
    let s = serve(&api, "{}", Some("info"));
    s.ready_is(200).await;
    api.stop().await;
    eventually(
        "kube_client logs the broken watches and refused connections",
        || async {
            let lines = s.lines(0);
            let logged = |target: &str, lvl: &str, text: &str| {
                lines
                    .iter()
                    .any(|l| l["target"] == target && level(l) == lvl && message(l).contains(text))
            };
            (logged("kube_client::client::builder", "ERROR", "failed with error")
                && logged("kube_client::client", "WARN", "eof in poll"))
            .then_some(())
        },
    )
    .await;
    api.restart().await;
    s.ready_is(200).await;
}

/// Over HTTPS, as a real API server serves: a restart drops every watch
/// connection without TLS close_notify. The default log says so once;
/// with `RUST_LOG=info`, kube_client's WARN per watch (`eof in poll: ...
/// close_notify`, the line operators saw) is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_tls_a_restart_is_one_warning_without_close_notify_lines() {
    for filter in [None, Some("info")] {
        let mut api = FakeApiServer::start_tls().await;
        cluster(&api);
        let s = serve(&api, "{}", filter);
        s.ready_is(200).await;
        s.filter_passes("both nodes pass", json!(["n1", "n2"]))
            .await;
        let before = s.server.log().len();
        api.stop().await;
        let logged = |text: &'static str| {
            let s = &s;
            move || async move { s.server.log()[before..].contains(text).then_some(()) }
        };
        eventually("the outage is logged", logged("API server unreachable")).await;
        api.apply("Pod", pod("db-0", "db", "n1"));
        api.restart().await;
        eventually("the return is logged", logged("reachable again")).await;
        s.filter_passes("db-0 on n1 fails it", json!(["n2"])).await;

        let lines = s.lines(before);
        let close_notify = lines
            .iter()
            .filter(|l| {
                l["target"] == "kube_client::client"
                    && level(l) == "WARN"
                    && message(l).contains("close_notify")
            })
            .count();
        if filter.is_none() {
            let loud = loud(&lines);
            assert_eq!(loud.len(), 1, "{loud:#?}");
            assert!(message(loud[0]).contains("API server unreachable"));
            assert_eq!(close_notify, 0);
        } else {
            assert!(close_notify >= 1, "{lines:#?}");
        }
    }
}
