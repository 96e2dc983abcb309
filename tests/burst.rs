//! Replica bursts scheduled by a kube-scheduler-like driver
//! (tests/support/burst_driver.rs) through the built server in live mode,
//! against the in-process fake API server, over real HTTPS. The matrix
//! is in tests/support/burst_matrix.rs; the reports that only print
//! numbers are `benches/burst_reports.rs`.

#[path = "support/burst_driver.rs"]
mod burst_driver;
#[path = "support/burst_matrix.rs"]
mod burst_matrix;
mod common;
#[path = "support/fake_apiserver.rs"]
mod fake_apiserver;

use std::time::Duration;

use burst_driver::{Binding, Burst, Rules, Topology};
use burst_matrix::{
    Bench, Case, ENFORCER, NEXT_TO, PATIENT, Pair, Row, Stress, assert_clean, lone_pod, run_matrix,
    scrape, topology_for, with_role,
};
use common::eventually;

/// The CI-sized bar: 30 replicas, both rule sets, bind verb and Binding,
/// the driver's own enforcement on (kube-arbiter next to it) and off
/// (kube-arbiter the enforcer), twice each (one random and one first-best
/// tie-break). Next to the in-tree plugins nothing waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_30_is_placed_without_stranding_or_breaking_a_rule() {
    let pair = Pair::start(topology_for(30), PATIENT).await;
    let rows = run_matrix(&pair, &Case::all(30), 2, 7, Stress::default()).await;
    assert_clean(&rows, 30);
    pair.assert_waits().await;
    assert!(scrape(&pair.enforcer, "kube_arbiter_in_flight_waits_total").await > 0.0);
}

/// Next to the in-tree plugins with the API server taking up to 300 ms per
/// Binding (kube-arbiter learns each placement that much later, and out of
/// order): a burst of 30 never waits, strands nothing and breaks no rule,
/// with the Binding by kube-scheduler (the shipped setup) and with the
/// bind verb. Answering exactly without waiting strands pods here (the
/// "ledger off" cells in docs/burst-safety.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_to_the_in_tree_plugins_a_burst_never_waits_even_for_slow_bindings() {
    let bench = Bench::start(topology_for(30), NEXT_TO).await;
    let mut rows = Vec::new();
    let mut n = 0;
    for rules in [Rules::SpreadAndAntiAffinity, Rules::SpreadOnly] {
        for binding in [Binding::ApiServer, Binding::Verb] {
            n += 1;
            let mut burst = Burst::new(format!("slow-{n}"), 30, rules, binding);
            burst.api_latency_ms = (1, 300);
            burst.seed = n;
            let case = Case {
                replicas: 30,
                rules,
                binding,
                enforce: true,
            };
            rows.push(Row {
                case,
                outcomes: vec![bench.driver().run(&burst).await],
            });
        }
    }
    assert_clean(&rows, 30);
    assert_eq!(
        scrape(&bench, "kube_arbiter_in_flight_waits_total").await,
        0.0
    );
}

impl Bench {
    async fn filter(&self, pod: &serde_json::Value) -> serde_json::Value {
        let body = serde_json::json!({"Pod": pod, "NodeNames": self.topology.node_names()});
        let answer = self.post("/scheduler/filter", &body).await;
        assert_eq!(answer["Error"], "", "{answer}");
        answer
    }

    /// `body` sent to the extender's `path`; the answer, which must be a 200.
    async fn post(&self, path: &str, body: &serde_json::Value) -> serde_json::Value {
        let r = self
            .server
            .client
            .post(self.server.url(path))
            .json(body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        r.json().await.unwrap()
    }
}

impl Bench {
    async fn wait_for_pods_in_view(&self, n: usize) {
        let line = format!("kube_arbiter_view_objects{{kind=\"Pod\"}} {n}");
        eventually("the view to hold the pods", || async {
            let text = self
                .server
                .client
                .get(self.server.url("/metrics"))
                .bearer_auth(fake_apiserver::METRICS_TOKEN)
                .send()
                .await
                .ok()?
                .text()
                .await
                .ok()?;
            text.contains(&line).then_some(())
        })
        .await;
    }

    /// A filter for `pod` over every node, answered in a task.
    fn filter_in_background(
        &self,
        pod: serde_json::Value,
    ) -> tokio::task::JoinHandle<reqwest::Response> {
        let client = self.server.client.clone();
        let url = self.server.url("/scheduler/filter");
        let body = serde_json::json!({"Pod": pod, "NodeNames": self.topology.node_names()});
        tokio::spawn(async move { client.post(url).json(&body).send().await.unwrap() })
    }
}

const SMALL: Topology = Topology {
    zones: 3,
    nodes_per_zone: 2,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_pod_that_could_count_an_unbound_one_waits_for_it() {
    let config = with_role(ENFORCER, "live:\n  inFlightWaitMillis: 300\n");
    let bench = Bench::start(SMALL, &config).await;
    let waits = "kube_arbiter_in_flight_waits_total";
    let timeouts = "kube_arbiter_in_flight_wait_timeouts_total";
    // Answered with feasible nodes, never bound: in flight.
    bench.filter(&lone_pod("shop", "a", "web", "web")).await;
    assert_eq!(scrape(&bench, "kube_arbiter_in_flight_pods").await, 1.0);
    // Another namespace, or a selector that does not match a: no wait.
    bench.filter(&lone_pod("blog", "u", "web", "web")).await;
    bench.filter(&lone_pod("shop", "v", "db", "db")).await;
    assert_eq!(scrape(&bench, waits).await, 0.0);
    // Its own rules count a: waits, gives up, and names a.
    bench.filter(&lone_pod("shop", "b", "batch", "web")).await;
    assert_eq!(scrape(&bench, waits).await, 1.0);
    assert_eq!(scrape(&bench, timeouts).await, 1.0);
    eventually("the timeout warning", || async {
        bench.server.log().contains("shop/a").then_some(())
    })
    .await;
    // a was given up on: the next pod counting it does not wait again.
    bench.filter(&lone_pod("shop", "c", "other", "web")).await;
    assert_eq!(scrape(&bench, waits).await, 1.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_decision_counts_the_pod_once_the_watch_reports_it_bound() {
    let bench = Bench::start(SMALL, &with_role(ENFORCER, PATIENT)).await;
    let a = lone_pod("shop", "a", "web", "web");
    bench.api.apply("Pod", a.clone());
    bench.filter(&a).await;
    let b = lone_pod("shop", "b", "web", "web");
    let waiting = {
        let client = bench.server.client.clone();
        let url = bench.server.url("/scheduler/filter");
        let body = serde_json::json!({"Pod": b, "NodeNames": SMALL.node_names()});
        tokio::spawn(async move {
            let r = client.post(url).json(&body).send().await.unwrap();
            r.json::<serde_json::Value>().await.unwrap()
        })
    };
    let_the_request_arrive().await;
    // kube-scheduler's own Binding (no bind verb): only the watch tells.
    let binding = serde_json::json!({"apiVersion": "v1", "kind": "Binding",
        "metadata": {"name": "a", "namespace": "shop"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "z1-n001"}});
    let url = format!(
        "http://{}/api/v1/namespaces/shop/pods/a/binding",
        bench.api.addr
    );
    let r = reqwest::Client::new()
        .post(url)
        .json(&binding)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success());
    let answer = waiting.await.unwrap();
    let feasible: Vec<String> = serde_json::from_value(answer["NodeNames"].clone()).unwrap();
    assert!(
        feasible.iter().all(|n| !n.starts_with("z1-")),
        "zone z1 holds a now: {answer}"
    );
    assert_eq!(
        scrape(&bench, "kube_arbiter_in_flight_wait_timeouts_total").await,
        0.0
    );
    assert_eq!(
        scrape(&bench, "kube_arbiter_in_flight_waits_total").await,
        1.0,
        "b waited for a"
    );
}

/// Next to the in-tree plugins, a filter that counts a pod in flight is
/// answered at once, keeping every node some placement of that pod admits:
/// shop/a may only go to zone z2 (the only one without a replica), so
/// shop/b may also go to z0 and z1, where the exact answer without a
/// would not let it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_to_the_in_tree_plugins_a_related_pod_is_answered_at_once_and_permissively() {
    let bench = Bench::start(SMALL, NEXT_TO).await;
    for (name, node) in [("x0", "z0-n000"), ("x1", "z1-n000")] {
        let mut bound = lone_pod("shop", name, "web", "web");
        bound["spec"]["nodeName"] = serde_json::json!(node);
        bench.api.apply("Pod", bound);
    }
    bench.wait_for_pods_in_view(2).await;
    let feasible = |answer: serde_json::Value| -> Vec<String> {
        serde_json::from_value(answer["NodeNames"].clone()).unwrap()
    };
    let a = feasible(bench.filter(&lone_pod("shop", "a", "web", "web")).await);
    assert_eq!(a, ["z2-n000", "z2-n001"]);
    assert_eq!(scrape(&bench, "kube_arbiter_in_flight_pods").await, 1.0);
    let b = feasible(bench.filter(&lone_pod("shop", "b", "web", "web")).await);
    assert_eq!(b, ["z0-n001", "z1-n001", "z2-n000", "z2-n001"]);
    assert_eq!(
        scrape(&bench, "kube_arbiter_in_flight_waits_total").await,
        0.0
    );
    // The nodes a's prioritize is asked about are where a may go (they
    // passed every filter). Here, as no kube-scheduler would, one outside
    // z2: a can no longer fill z2, and b's answer is the exact one again.
    let body =
        serde_json::json!({"Pod": lone_pod("shop", "a", "web", "web"), "NodeNames": ["z0-n001"]});
    bench.post("/scheduler/prioritize", &body).await;
    let b = feasible(bench.filter(&lone_pod("shop", "b", "web", "web")).await);
    assert_eq!(b, ["z2-n000", "z2-n001"]);
}

/// The one pause left in these tests. No outside sign shows that a filter
/// has begun to wait (the waits counter moves when a wait ends), so this
/// lets the request sent in the background arrive and start waiting. The
/// tests that use it then check that the counter moved: if the pause was
/// too short they fail, rather than pass without testing the wake-up.
async fn let_the_request_arrive() {
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// Pod shop/a answered (in flight, in the view, unbound), then a filter for
/// shop/b, which counts a, sent and left waiting for it.
async fn b_waiting_for_a_in_flight() -> (Bench, tokio::task::JoinHandle<reqwest::Response>) {
    let bench = Bench::start(SMALL, &with_role(ENFORCER, PATIENT)).await;
    let a = lone_pod("shop", "a", "web", "web");
    bench.api.apply("Pod", a.clone());
    bench.wait_for_pods_in_view(1).await;
    bench.filter(&a).await;
    let waiting = bench.filter_in_background(lone_pod("shop", "b", "web", "web"));
    let_the_request_arrive().await;
    (bench, waiting)
}

/// b, waiting for a, was answered once a resolved: it waited, and did
/// not time out.
async fn b_was_released(bench: &Bench, waiting: tokio::task::JoinHandle<reqwest::Response>) {
    assert_eq!(waiting.await.unwrap().status(), 200);
    assert_eq!(
        scrape(bench, "kube_arbiter_in_flight_wait_timeouts_total").await,
        0.0
    );
    assert_eq!(
        scrape(bench, "kube_arbiter_in_flight_waits_total").await,
        1.0,
        "b waited for a"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_deleted_while_in_flight_releases_its_waiters() {
    let (bench, waiting) = b_waiting_for_a_in_flight().await;
    bench.api.delete("Pod", "shop", "a");
    b_was_released(&bench, waiting).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_kube_scheduler_gave_up_on_releases_its_waiters() {
    let (bench, waiting) = b_waiting_for_a_in_flight().await;
    // a's binding failed: kube-scheduler's failure handler writes this.
    let message = "Operation cannot be fulfilled on pods/binding";
    assert!(
        bench
            .api
            .handle()
            .record_scheduling_failure("shop", "a", "SchedulerError", message)
    );
    assert_eq!(waiting.await.unwrap().status(), 200);
    assert_eq!(
        scrape(&bench, "kube_arbiter_in_flight_wait_timeouts_total").await,
        0.0
    );
    assert_eq!(
        scrape(&bench, "kube_arbiter_in_flight_waits_total").await,
        1.0
    );
}

/// PodGroup members: kube-scheduler places the whole group in one cycle
/// and binds none of it before the last member is placed (1.37
/// `podGroupCycle`, pkg/scheduler/schedule_one_podgroup.go). As the
/// enforcer, a member therefore never waits for an earlier one (that
/// binding cannot come first); it sees it as next to the in-tree plugins,
/// on the nodes it may be on. A pod of no group still waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_the_enforcer_a_pod_group_member_never_waits_for_the_one_before() {
    let config = with_role(ENFORCER, "live:\n  inFlightWaitMillis: 300\n");
    let bench = Bench::start(SMALL, &config).await;
    let waits = "kube_arbiter_in_flight_waits_total";
    let member = |name: &str| {
        let mut pod = lone_pod("shop", name, "web", "web");
        pod["spec"]["schedulingGroup"] = serde_json::json!({"podGroupName": "gang"});
        pod
    };
    bench.filter(&member("a")).await;
    assert_eq!(scrape(&bench, "kube_arbiter_in_flight_pods").await, 1.0);
    let answer = bench.filter(&member("b")).await;
    assert!(
        !answer["NodeNames"].as_array().unwrap().is_empty(),
        "{answer}"
    );
    assert_eq!(
        scrape(&bench, waits).await,
        0.0,
        "b waited for a: {}",
        bench.server.log()
    );
    assert_eq!(scrape(&bench, "kube_arbiter_in_flight_pods").await, 2.0);
    // Another group's member, and a pod of none, wait as before.
    let mut other = lone_pod("shop", "c", "web", "web");
    other["spec"]["schedulingGroup"] = serde_json::json!({"podGroupName": "other"});
    bench.filter(&other).await;
    assert_eq!(scrape(&bench, waits).await, 1.0);
}

/// A binding kube-arbiter refuses (here: to a node the API server does not
/// have either) ends the attempt: kube-scheduler forgets the pod and
/// schedules it again, so nobody may wait for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_binding_releases_its_waiters() {
    let (bench, waiting) = b_waiting_for_a_in_flight().await;
    let bind = serde_json::json!({"PodName": "a", "PodNamespace": "shop",
        "PodUID": "uid-shop-a", "Node": "no-such-node"});
    let answer = bench.post("/scheduler/bind", &bind).await;
    assert!(
        answer["Error"]
            .as_str()
            .unwrap_or_default()
            .contains("no-such-node"),
        "{answer}"
    );
    b_was_released(&bench, waiting).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_filter_for_a_pod_in_flight_ends_its_earlier_attempt() {
    let bench = Bench::start(SMALL, &with_role(ENFORCER, PATIENT)).await;
    let a = lone_pod("shop", "a", "web", "web");
    bench.api.apply("Pod", a.clone());
    bench.wait_for_pods_in_view(1).await;
    bench.filter(&a).await;
    assert_eq!(scrape(&bench, "kube_arbiter_in_flight_pods").await, 1.0);
    // kube-scheduler tries a again (its binding did not happen), and this
    // time no node sent is feasible: a is not in flight any more.
    let again = serde_json::json!({"Pod": a, "NodeNames": ["no-such-node"]});
    let answer = bench.post("/scheduler/filter", &again).await;
    assert_eq!(answer["NodeNames"], serde_json::json!([]), "{answer}");
    bench.filter(&lone_pod("shop", "b", "web", "web")).await;
    assert_eq!(
        scrape(&bench, "kube_arbiter_in_flight_waits_total").await,
        0.0
    );
}
