//! Replica bursts scheduled by a kube-scheduler-like driver
//! (tests/support/burst_driver.rs) through the built server in live mode,
//! against the in-process fake API server, over real HTTPS.

#[path = "support/burst_driver.rs"]
mod burst_driver;
mod common;
#[path = "support/fake_apiserver.rs"]
mod fake_apiserver;

use std::time::Duration;

use burst_driver::{Binding, Burst, Driver, Outcome, Rules, TieBreak, Topology};
use common::{ServerProcess, TestCa, client, eventually, install_provider, live_serve_args};
use fake_apiserver::FakeApiServer;

/// kube-arbiter serving from the fake API server's cluster of `topology`.
struct Bench {
    api: FakeApiServer,
    server: ServerProcess,
    client: reqwest::Client,
    topology: Topology,
    _dir: tempfile::TempDir,
}

impl Bench {
    /// `config`: kube-arbiter's `--config` YAML ("" for the defaults).
    async fn start(topology: Topology, config: &str) -> Self {
        install_provider();
        let api = FakeApiServer::start().await;
        api.load("Node", topology.nodes());
        let dir = tempfile::tempdir().unwrap();
        let ca = TestCa::new("burst-ca");
        let args = live_serve_args(&ca, dir.path(), api.kubeconfig(), Some(config));
        let server = ServerProcess::start_logging(
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
            // Quiet (a bind verb call logs a line), but the address and
            // the in-flight warnings are needed.
            "warn,kube_arbiter::server::serve=info",
        );
        let client = client(&ca.cert_pem, server.addr).build().unwrap();
        let bench = Self {
            api,
            server,
            client,
            topology,
            _dir: dir,
        };
        eventually("the live view to be ready", || async {
            let r = bench.client.get(bench.server.url("/readyz")).send().await;
            r.ok().filter(|r| r.status() == 200).map(|_| ())
        })
        .await;
        bench
    }

    fn driver(&self) -> Driver<'_> {
        Driver {
            api: &self.api,
            extender: self.client.clone(),
            extender_url: self.server.url("/scheduler"),
            topology: self.topology,
        }
    }
}

/// `scheduling.role` (docs/burst-safety.md): next to kube-scheduler's
/// in-tree plugins (the default, spelled out) or as the enforcer.
const NEXT_TO: &str = "scheduling:\n  role: nextToInTreePlugins\n";
const ENFORCER: &str = "scheduling:\n  role: enforcer\n";

/// The role's YAML followed by `rest` (which must not have `scheduling:`).
fn with_role(role: &str, rest: &str) -> String {
    format!("{role}{rest}")
}

/// One kube-arbiter per role, each with its own fake API server: a cell
/// whose driver enforces the rules itself (kube-scheduler's in-tree
/// plugins on) runs next to them, the others against the enforcer.
struct Pair {
    next_to: Bench,
    enforcer: Bench,
}

impl Pair {
    /// `rest`: the rest of kube-arbiter's `--config` YAML for both.
    async fn start(topology: Topology, rest: &str) -> Self {
        Pair {
            next_to: Bench::start(topology, &with_role(NEXT_TO, rest)).await,
            enforcer: Bench::start(topology, &with_role(ENFORCER, rest)).await,
        }
    }

    fn for_case(&self, case: &Case) -> &Bench {
        if case.enforce {
            &self.next_to
        } else {
            &self.enforcer
        }
    }

    async fn print_waits(&self) {
        for (role, bench) in [("next to", &self.next_to), ("enforcer", &self.enforcer)] {
            println!(
                "{role}: waits {}, wait timeouts {}",
                scrape(bench, "kube_arbiter_in_flight_waits_total").await,
                scrape(bench, "kube_arbiter_in_flight_wait_timeouts_total").await
            );
            print_wait_histogram(bench).await;
        }
    }

    /// Next to the in-tree plugins nothing ever waits; the enforcer's
    /// waits all ended before the bound.
    async fn assert_waits(&self) {
        let (waits, timeouts) = (
            "kube_arbiter_in_flight_waits_total",
            "kube_arbiter_in_flight_wait_timeouts_total",
        );
        assert_eq!(scrape(&self.next_to, waits).await, 0.0);
        assert_eq!(scrape(&self.next_to, timeouts).await, 0.0);
        assert_eq!(scrape(&self.enforcer, timeouts).await, 0.0);
    }
}

/// One cell of the matrix.
#[derive(Debug, Clone, Copy)]
struct Case {
    replicas: usize,
    rules: Rules,
    binding: Binding,
    enforce: bool,
}

impl Case {
    fn all(replicas: usize) -> Vec<Case> {
        let mut cases = Vec::new();
        for rules in [Rules::SpreadAndAntiAffinity, Rules::SpreadOnly] {
            for binding in [Binding::Verb, Binding::ApiServer] {
                for enforce in [true, false] {
                    cases.push(Case {
                        replicas,
                        rules,
                        binding,
                        enforce,
                    });
                }
            }
        }
        cases
    }

    fn label(&self) -> String {
        format!(
            "{:>3} {:<11} {:<9} {:<7}",
            self.replicas,
            match self.rules {
                Rules::SpreadAndAntiAffinity => "spread+anti",
                Rules::SpreadOnly => "spread",
            },
            match self.binding {
                Binding::Verb => "bind verb",
                Binding::ApiServer => "Binding",
            },
            if self.enforce { "enforce" } else { "ext-only" },
        )
    }
}

/// The outcomes of `reps` bursts of `case`.
struct Row {
    case: Case,
    outcomes: Vec<Outcome>,
}

impl Row {
    fn stranded_runs(&self) -> usize {
        self.outcomes
            .iter()
            .filter(|o| !o.stranded.is_empty())
            .count()
    }

    fn violating_runs(&self) -> usize {
        self.outcomes
            .iter()
            .filter(|o| !o.violations.is_empty())
            .count()
    }

    fn print(&self) {
        let stranded: usize = self.outcomes.iter().map(|o| o.stranded.len()).sum();
        let violations: usize = self.outcomes.iter().map(|o| o.violations.len()).sum();
        let pps: f64 = self
            .outcomes
            .iter()
            .map(Outcome::pods_per_second)
            .sum::<f64>()
            / self.outcomes.len() as f64;
        let mut lat: Vec<Duration> = self
            .outcomes
            .iter()
            .flat_map(|o| o.extender_latency.iter().copied())
            .collect();
        lat.sort();
        let q = |p: f64| {
            lat.get(((lat.len() as f64 - 1.0) * p) as usize)
                .map_or(0.0, |d| d.as_secs_f64() * 1e3)
        };
        let window_misses: usize = self.outcomes.iter().map(|o| o.window_misses).sum();
        let bind_failures: usize = self.outcomes.iter().map(|o| o.bind_failures).sum();
        println!(
            "{} | runs {:>2} | stranded runs {:>2} (pods {:>3}) | violating runs {:>2} ({:>3}) | {:>6.1} pods/s | cycle p50 {:>5.1} ms p99 {:>6.1} ms | window misses {window_misses} | bind failures {bind_failures}",
            self.case.label(),
            self.outcomes.len(),
            self.stranded_runs(),
            stranded,
            self.violating_runs(),
            violations,
            pps,
            q(0.5),
            q(0.99),
        );
    }
}

/// Harder than the realistic defaults: a slow binding cycle (a Permit or
/// PreBind step before the bind call) and Bindings the API server refuses.
#[derive(Debug, Clone, Copy, Default)]
struct Stress {
    bind_call_delay_ms: (u64, u64),
    refuse_every: u64,
}

impl Stress {
    /// `BURST_BIND_CALL_DELAY_MS` ("lo-hi") and `BURST_REFUSE_EVERY`.
    fn from_env() -> Self {
        let delay = std::env::var("BURST_BIND_CALL_DELAY_MS").unwrap_or_default();
        let (lo, hi) = delay.split_once('-').unwrap_or((&delay, &delay));
        Stress {
            bind_call_delay_ms: (lo.parse().unwrap_or(0), hi.parse().unwrap_or(0)),
            refuse_every: env_or("BURST_REFUSE_EVERY", 0) as u64,
        }
    }
}

/// Every case `reps` times, each burst in its own namespace, against the
/// kube-arbiter of the case's role.
async fn run_matrix(
    pair: &Pair,
    cases: &[Case],
    reps: usize,
    seed: u64,
    stress: Stress,
) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut n = 0;
    for case in cases {
        let driver = pair.for_case(case).driver();
        let mut outcomes = Vec::new();
        for rep in 0..reps {
            n += 1;
            let mut burst = Burst::new(
                format!("burst-{seed}-{n}"),
                case.replicas,
                case.rules,
                case.binding,
            );
            burst.enforce = case.enforce;
            burst.tie_break = if rep % 2 == 0 {
                TieBreak::Random
            } else {
                TieBreak::First
            };
            burst.seed = seed.wrapping_mul(1000).wrapping_add(n);
            burst.bind_call_delay_ms = stress.bind_call_delay_ms;
            burst.refuse_every = stress.refuse_every;
            outcomes.push(driver.run(&burst).await);
        }
        let row = Row {
            case: *case,
            outcomes,
        };
        row.print();
        rows.push(row);
    }
    rows
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The cluster a burst of `replicas` needs: 3 zones with enough nodes for
/// one replica per node.
fn topology_for(replicas: usize) -> Topology {
    Topology {
        zones: 3,
        nodes_per_zone: replicas.div_ceil(3) + 10,
    }
}

/// Prints the matrix for `BURST_REPLICAS` (30) × `BURST_REPS` (5) with
/// kube-arbiter's `--config` from `BURST_CONFIG` (YAML without
/// `scheduling:`, default none; each cell's role is added):
/// `cargo test --release --test burst -- --ignored --nocapture burst_report`.
/// It asserts only that every burst ran to the end (every pod placed,
/// after the flush); the numbers are the point.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a report: run by hand with --nocapture"]
async fn burst_report() {
    let replicas = env_or("BURST_REPLICAS", 30);
    let reps = env_or("BURST_REPS", 5);
    let config = std::env::var("BURST_CONFIG").unwrap_or_default();
    let pair = Pair::start(topology_for(replicas), &config).await;
    let rows = run_matrix(&pair, &Case::all(replicas), reps, 1, Stress::from_env()).await;
    pair.print_waits().await;
    for row in &rows {
        for o in &row.outcomes {
            assert_eq!(
                o.placed,
                replicas,
                "{}: {:?}",
                row.case.label(),
                o.violations
            );
        }
    }
}

/// Generous for a loaded 2-core machine: a burst's bindings complete in
/// 1–50 ms, so a wait this long only ends early, never by timing out.
const PATIENT: &str = "live:\n  inFlightWaitMillis: 20000\n";

/// The server's /metrics text, read with the token the fake API server
/// knows for Prometheus.
async fn metrics_text(bench: &Bench) -> String {
    let request = bench.client.get(bench.server.url("/metrics"));
    let response = request.bearer_auth(fake_apiserver::METRICS_TOKEN).send();
    response.await.unwrap().text().await.unwrap()
}

async fn scrape(bench: &Bench, name: &str) -> f64 {
    let text = metrics_text(bench).await;
    common::metric(&text, name).unwrap_or_else(|| panic!("no {name} in\n{text}"))
}

fn assert_clean(rows: &[Row], replicas: usize) {
    for row in rows {
        for (i, o) in row.outcomes.iter().enumerate() {
            let what = format!("{} run {i}", row.case.label());
            assert!(o.stranded.is_empty(), "{what}: stranded {:?}", o.stranded);
            assert!(o.violations.is_empty(), "{what}: {:?}", o.violations);
            assert_eq!(o.truly_unschedulable, 0, "{what}");
            assert_eq!(o.placed, replicas, "{what}");
        }
    }
}

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

/// How long the in-flight waits took, bucket by bucket (cumulative).
async fn print_wait_histogram(bench: &Bench) {
    let text = metrics_text(bench).await;
    for line in text
        .lines()
        .filter(|l| l.starts_with("kube_arbiter_in_flight_wait_seconds"))
    {
        println!("{line}");
    }
}

/// The full bar: bursts of 30 and 300, every combination, 20 times each,
/// with kube-arbiter's default settings or `BURST_CONFIG` (YAML without
/// `scheduling:`; each cell's role is added). Half an hour in release mode
/// on two cores:
/// `cargo test --release --test burst -- --ignored --nocapture full_bar`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "minutes long: run by hand in release mode"]
async fn full_bar() {
    let reps = env_or("BURST_REPS", 20);
    let config = std::env::var("BURST_CONFIG").unwrap_or_default();
    for replicas in [30, 300] {
        let pair = Pair::start(topology_for(replicas), &config).await;
        let rows = run_matrix(
            &pair,
            &Case::all(replicas),
            reps,
            replicas as u64,
            Stress::from_env(),
        )
        .await;
        pair.print_waits().await;
        assert_clean(&rows, replicas);
        pair.assert_waits().await;
    }
}

/// A pod of `namespace` labelled `app`, spread over zones against pods
/// labelled `counts`, and anti-affine to them per host.
fn lone_pod(namespace: &str, name: &str, app: &str, counts: &str) -> serde_json::Value {
    let selector = serde_json::json!({"matchLabels": {"app": counts}});
    serde_json::json!({"metadata": {"name": name, "namespace": namespace,
        "uid": format!("uid-{namespace}-{name}"), "labels": {"app": app}},
        "spec": {"containers": [{"name": "c"}],
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": burst_driver::ZONE,
                "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector}],
            "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": selector, "topologyKey": burst_driver::HOST}]}}}})
}

impl Bench {
    async fn filter(&self, pod: &serde_json::Value) -> serde_json::Value {
        let body = serde_json::json!({"Pod": pod, "NodeNames": self.topology.node_names()});
        let r = self
            .client
            .post(self.server.url("/scheduler/filter"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let answer: serde_json::Value = r.json().await.unwrap();
        assert_eq!(answer["Error"], "", "{answer}");
        answer
    }
}

impl Bench {
    async fn wait_for_pods_in_view(&self, n: usize) {
        let line = format!("kube_arbiter_view_objects{{kind=\"Pod\"}} {n}");
        eventually("the view to hold the pods", || async {
            let text = self
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
        let client = self.client.clone();
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
        let client = bench.client.clone();
        let url = bench.server.url("/scheduler/filter");
        let body = serde_json::json!({"Pod": b, "NodeNames": SMALL.node_names()});
        tokio::spawn(async move {
            let r = client.post(url).json(&body).send().await.unwrap();
            r.json::<serde_json::Value>().await.unwrap()
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
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
    let r = bench
        .client
        .post(bench.server.url("/scheduler/prioritize"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let b = feasible(bench.filter(&lone_pod("shop", "b", "web", "web")).await);
    assert_eq!(b, ["z2-n000", "z2-n001"]);
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
    tokio::time::sleep(Duration::from_millis(100)).await;
    (bench, waiting)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_deleted_while_in_flight_releases_its_waiters() {
    let (bench, waiting) = b_waiting_for_a_in_flight().await;
    bench.api.delete("Pod", "shop", "a");
    assert_eq!(waiting.await.unwrap().status(), 200);
    assert_eq!(
        scrape(&bench, "kube_arbiter_in_flight_wait_timeouts_total").await,
        0.0
    );
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
    let r = bench
        .client
        .post(bench.server.url("/scheduler/filter"))
        .json(&again)
        .send()
        .await
        .unwrap();
    let answer: serde_json::Value = r.json().await.unwrap();
    assert_eq!(answer["NodeNames"], serde_json::json!([]), "{answer}");
    bench.filter(&lone_pod("shop", "b", "web", "web")).await;
    assert_eq!(
        scrape(&bench, "kube_arbiter_in_flight_waits_total").await,
        0.0
    );
}

/// Filter round trips for a pod no burst pod can count (another
/// namespace, its own selector), one after another until `stop`.
async fn probe_unrelated(
    client: reqwest::Client,
    url: String,
    nodes: Vec<String>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Vec<Duration> {
    let pod = lone_pod("elsewhere", "probe", "probe", "probe");
    let body = serde_json::json!({"Pod": pod, "NodeNames": nodes});
    let mut took = Vec::new();
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let asked = std::time::Instant::now();
        let r = client.post(&url).json(&body).send().await.unwrap();
        assert_eq!(r.status(), 200);
        r.bytes().await.unwrap();
        took.push(asked.elapsed());
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    took
}

fn quantiles(mut d: Vec<Duration>) -> String {
    d.sort();
    let q = |p: f64| {
        d.get(((d.len().max(1) - 1) as f64 * p) as usize)
            .map_or(0.0, |d| d.as_secs_f64() * 1e3)
    };
    format!(
        "n {:>4} p50 {:>6.2} ms p99 {:>6.2} ms",
        d.len(),
        q(0.5),
        q(0.99)
    )
}

/// The cost, measured in one run: pods/s of the driver alone, with
/// kube-arbiter waiting for in-flight pods (as the enforcer) and with the
/// wait off; and the filter latency of an unrelated pod, idle and during
/// the burst. `cargo test --release --test burst -- --ignored --nocapture cost_report`
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a report: run by hand with --nocapture"]
async fn cost_report() {
    let reps = env_or("BURST_REPS", 5);
    for replicas in [30, 300] {
        let topology = topology_for(replicas);
        let waiting = Bench::start(topology, ENFORCER).await;
        let off = Bench::start(topology, "live:\n  inFlightWaitMillis: 0\n").await;
        let mut pps: [Vec<f64>; 3] = Default::default();
        for rep in 0..reps {
            for (k, (bench, extender)) in [(&waiting, false), (&waiting, true), (&off, true)]
                .into_iter()
                .enumerate()
            {
                let mut burst = Burst::new(
                    format!("cost-{replicas}-{rep}-{k}"),
                    replicas,
                    Rules::SpreadAndAntiAffinity,
                    Binding::Verb,
                );
                burst.extender = extender;
                burst.seed = rep as u64;
                pps[k].push(bench.driver().run(&burst).await.pods_per_second());
            }
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        println!(
            "{replicas:>3} replicas, spread+anti, bind verb, driver enforcing: driver alone {:.1} pods/s, \
             with kube-arbiter (wait on) {:.1} pods/s, with the wait off {:.1} pods/s",
            mean(&pps[0]),
            mean(&pps[1]),
            mean(&pps[2]),
        );
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let url = waiting.server.url("/scheduler/filter");
        let idle = {
            let probe = tokio::spawn(probe_unrelated(
                waiting.client.clone(),
                url.clone(),
                topology.node_names(),
                stop.clone(),
            ));
            tokio::time::sleep(Duration::from_secs(2)).await;
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            probe.await.unwrap()
        };
        stop.store(false, std::sync::atomic::Ordering::Relaxed);
        let probe = tokio::spawn(probe_unrelated(
            waiting.client.clone(),
            url,
            topology.node_names(),
            stop.clone(),
        ));
        let mut burst = Burst::new(
            format!("cost-{replicas}-probe"),
            replicas,
            Rules::SpreadAndAntiAffinity,
            Binding::ApiServer,
        );
        burst.enforce = false;
        burst.seed = 99;
        let outcome = waiting.driver().run(&burst).await;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let during = probe.await.unwrap();
        println!(
            "{replicas:>3} replicas: unrelated pod filter idle: {}; during a burst ({:.1} pods/s): {}",
            quantiles(idle),
            outcome.pods_per_second(),
            quantiles(during)
        );
    }
}

/// The histogram's (sum, count) from the metrics text.
async fn scrape_histogram(bench: &Bench, name: &str) -> (f64, f64) {
    (
        scrape(bench, &format!("{name}_sum")).await,
        scrape(bench, &format!("{name}_count")).await,
    )
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Issue 14's throughput goal: a burst of 1,000 replicas (zone spread and
/// hostname anti-affinity) on 1,000 and 5,000 nodes, kube-arbiter as the
/// enforcer's setup (bind verb, `role: enforcer`) with the driver's own
/// enforcement on: pods/s of the first pass with kube-arbiter (waiting,
/// and with the in-flight wait off) against the driver alone, and where a pod's
/// cycle time goes. `BURST_REPS` (3) bursts per variant, each cleaned up.
/// `cargo test --release --test burst -- --ignored --nocapture throughput_report`
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a report: run by hand with --nocapture"]
async fn throughput_report() {
    let reps = env_or("BURST_REPS", 3);
    let replicas = env_or("BURST_REPLICAS", 1000);
    let wait = "kube_arbiter_in_flight_wait_seconds";
    for nodes in [1000, 5000] {
        let topology = Topology {
            zones: 4,
            nodes_per_zone: nodes / 4,
        };
        let waiting = Bench::start(topology, ENFORCER).await;
        let off = Bench::start(topology, "live:\n  inFlightWaitMillis: 0\n").await;
        // (label, bench, ask the extender)
        let variants = [
            ("driver alone", &waiting, false),
            ("with kube-arbiter", &waiting, true),
            ("with kube-arbiter, wait off", &off, true),
        ];
        let mut pps = vec![Vec::new(); variants.len()];
        for rep in 0..reps {
            for (k, (label, bench, extender)) in variants.iter().enumerate() {
                let mut burst = Burst::new(
                    format!("tp-{nodes}-{rep}-{k}"),
                    replicas,
                    Rules::SpreadAndAntiAffinity,
                    Binding::Verb,
                );
                burst.extender = *extender;
                burst.seed = rep as u64;
                let before = scrape_histogram(bench, wait).await;
                let o = bench.driver().run(&burst).await;
                let after = scrape_histogram(bench, wait).await;
                assert!(o.violations.is_empty(), "{label}: {:?}", o.violations);
                pps[k].push(o.pods_per_second());
                let per_pod = |d: Duration| ms(d) / o.cycles as f64;
                let mut bind = o.bind_calls.clone();
                bind.sort();
                let (waited, waits) = (after.0 - before.0, after.1 - before.1);
                println!(
                    "{nodes} nodes, {label}: {:.1} pods/s | per pod: own filter {:.3} ms, extender filter {:.3} ms \
                     (of which in-flight waits {:.3} ms: {waits} waits), prioritize {:.3} ms, rest {:.3} ms | \
                     bind call p50 {:.1} ms (async) | stranded {} window misses {}",
                    o.pods_per_second(),
                    per_pod(o.own_filter),
                    per_pod(o.extender_filter),
                    waited * 1e3 / o.cycles as f64,
                    per_pod(o.prioritize),
                    per_pod(
                        o.cycles_took
                            .saturating_sub(o.own_filter + o.extender_filter + o.prioritize)
                    ),
                    bind.get(bind.len() / 2).map_or(0.0, |d| ms(*d)),
                    o.stranded.len(),
                    o.window_misses,
                );
                burst.delete_pods(&bench.api);
            }
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let alone = mean(&pps[0]);
        println!(
            "{nodes} nodes, {replicas} replicas: driver alone {alone:.1} pods/s; with kube-arbiter {:.1} pods/s \
             (ratio {:.3}); with the wait off {:.1} pods/s (ratio {:.3})",
            mean(&pps[1]),
            mean(&pps[1]) / alone,
            mean(&pps[2]),
            mean(&pps[2]) / alone,
        );
    }
}

/// Issue 26's bar: the API server takes 300 ms per Binding, kube-scheduler
/// binds itself (no bind verb: the shipped `scheduler-config.yaml`) and
/// its in-tree plugins enforce the rules (the driver's own filter). Each
/// burst's duration, from the first cycle to the last Binding committed,
/// for the driver alone, with kube-arbiter next to the in-tree plugins
/// (never waits) and with kube-arbiter as the enforcer (waits for each
/// related pod's Binding), interleaved in one run; `BURST_REPLICAS` (30)
/// per burst, `BURST_REPS` (3) bursts per variant and rule set.
/// `cargo test --test burst -- --ignored --nocapture slow_binding_report`
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a report: run by hand with --nocapture"]
async fn slow_binding_report() {
    let replicas = env_or("BURST_REPLICAS", 30);
    let reps = env_or("BURST_REPS", 3);
    let pair = Pair::start(topology_for(replicas), PATIENT).await;
    let waits = "kube_arbiter_in_flight_waits_total";
    for rules in [Rules::SpreadOnly, Rules::SpreadAndAntiAffinity] {
        // (label, bench, ask the extender)
        let variants = [
            ("driver alone", &pair.next_to, false),
            ("next to the in-tree plugins", &pair.next_to, true),
            ("as the enforcer (waits)", &pair.enforcer, true),
        ];
        let mut took = vec![Vec::new(); variants.len()];
        let mut waited = vec![0.0; variants.len()];
        for rep in 0..reps {
            for (k, (label, bench, extender)) in variants.iter().enumerate() {
                let mut burst = Burst::new(
                    format!("slow-{rules:?}-{rep}-{k}").to_lowercase(),
                    replicas,
                    rules,
                    Binding::ApiServer,
                );
                burst.extender = *extender;
                burst.api_latency_ms = (300, 300);
                burst.seed = rep as u64;
                let before = scrape(bench, waits).await;
                let o = bench.driver().run(&burst).await;
                waited[k] += scrape(bench, waits).await - before;
                assert!(o.violations.is_empty(), "{label}: {:?}", o.violations);
                assert!(o.stranded.is_empty(), "{label}: {:?}", o.stranded);
                let per_pod = |d: Duration| ms(d) / o.cycles as f64;
                println!(
                    "{rules:?} {label}: {:.2} s, {:.1} pods/s bound, cycles {:.1} pods/s \
                     (per pod: extender filter {:.2} ms, prioritize {:.2} ms)",
                    o.took.as_secs_f64(),
                    o.bound_per_second(),
                    o.pods_per_second(),
                    per_pod(o.extender_filter),
                    per_pod(o.prioritize),
                );
                took[k].push(o.took.as_secs_f64());
                burst.delete_pods(&bench.api);
            }
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let alone = mean(&took[0]);
        for (k, (label, _, _)) in variants.iter().enumerate() {
            println!(
                "{replicas} replicas, {rules:?}, Binding 300 ms, {label}: {:.2} s per burst \
                 ({:.2}x the driver alone), {:.1} pods/s, {} in-flight waits",
                mean(&took[k]),
                mean(&took[k]) / alone,
                replicas as f64 / mean(&took[k]),
                waited[k],
            );
        }
    }
}
