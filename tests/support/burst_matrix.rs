//! The burst matrix both `tests/burst.rs` (the CI-sized bars) and
//! `benches/burst_reports.rs` (the reports a person runs) use: a
//! kube-arbiter per role against its own fake API server, the cells of
//! the matrix, and what their outcomes print and must satisfy.
#![allow(dead_code)] // each binary uses its own subset

use std::time::Duration;

use crate::burst_driver::{Binding, Burst, Driver, HOST, Outcome, Rules, TieBreak, Topology, ZONE};
use crate::common::{Arbiter, Launch, metric};
use crate::fake_apiserver::{FakeApiServer, METRICS_TOKEN};
use kube_arbiter::testing::{label_term, make_pod};

/// kube-arbiter serving from the fake API server's cluster of `topology`.
pub struct Bench {
    pub api: FakeApiServer,
    pub server: Arbiter,
    pub topology: Topology,
}

impl Bench {
    /// `config`: kube-arbiter's `--config` YAML ("" for the defaults).
    pub async fn start(topology: Topology, config: &str) -> Self {
        let api = FakeApiServer::start().await;
        api.load("Node", topology.nodes());
        let server = Launch::live(api.kubeconfig())
            .config(config)
            // Quiet (a bind verb call logs a line), but the address and
            // the in-flight warnings are needed.
            .log(Some("warn,kube_arbiter::server::serve=info"))
            .ready()
            .await;
        Self {
            api,
            server,
            topology,
        }
    }

    pub fn driver(&self) -> Driver<'_> {
        Driver {
            api: &self.api,
            extender: self.server.client.clone(),
            extender_url: self.server.url("/scheduler"),
            topology: self.topology,
        }
    }
}

/// `scheduling.role` (docs/burst-safety.md): next to kube-scheduler's
/// in-tree plugins (the default, spelled out) or as the enforcer.
pub const NEXT_TO: &str = "scheduling:\n  role: nextToInTreePlugins\n";
pub const ENFORCER: &str = "scheduling:\n  role: enforcer\n";

/// The role's YAML followed by `rest` (which must not have `scheduling:`).
pub fn with_role(role: &str, rest: &str) -> String {
    format!("{role}{rest}")
}

/// One kube-arbiter per role, each with its own fake API server: a cell
/// whose driver enforces the rules itself (kube-scheduler's in-tree
/// plugins on) runs next to them, the others against the enforcer.
pub struct Pair {
    pub next_to: Bench,
    pub enforcer: Bench,
}

impl Pair {
    /// `rest`: the rest of kube-arbiter's `--config` YAML for both.
    pub async fn start(topology: Topology, rest: &str) -> Self {
        Pair {
            next_to: Bench::start(topology, &with_role(NEXT_TO, rest)).await,
            enforcer: Bench::start(topology, &with_role(ENFORCER, rest)).await,
        }
    }

    pub fn for_case(&self, case: &Case) -> &Bench {
        if case.enforce {
            &self.next_to
        } else {
            &self.enforcer
        }
    }

    pub async fn print_waits(&self) {
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
    pub async fn assert_waits(&self) {
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
pub struct Case {
    pub replicas: usize,
    pub rules: Rules,
    pub binding: Binding,
    pub enforce: bool,
}

impl Case {
    pub fn all(replicas: usize) -> Vec<Case> {
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

    pub fn label(&self) -> String {
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
pub struct Row {
    pub case: Case,
    pub outcomes: Vec<Outcome>,
}

impl Row {
    pub fn stranded_runs(&self) -> usize {
        self.outcomes
            .iter()
            .filter(|o| !o.stranded.is_empty())
            .count()
    }

    pub fn violating_runs(&self) -> usize {
        self.outcomes
            .iter()
            .filter(|o| !o.violations.is_empty())
            .count()
    }

    pub fn print(&self) {
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
pub struct Stress {
    pub bind_call_delay_ms: (u64, u64),
    pub refuse_every: u64,
}

impl Stress {
    /// `BURST_BIND_CALL_DELAY_MS` ("lo-hi") and `BURST_REFUSE_EVERY`.
    pub fn from_env() -> Self {
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
pub async fn run_matrix(
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

pub fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The cluster a burst of `replicas` needs: 3 zones with enough nodes for
/// one replica per node.
pub fn topology_for(replicas: usize) -> Topology {
    Topology {
        zones: 3,
        nodes_per_zone: replicas.div_ceil(3) + 10,
    }
}

/// Generous for a loaded 2-core machine: a burst's bindings complete in
/// 1–50 ms, so a wait this long only ends early, never by timing out.
pub const PATIENT: &str = "live:\n  inFlightWaitMillis: 20000\n";

/// The server's /metrics text, read with the token the fake API server
/// knows for Prometheus.
pub async fn metrics_text(bench: &Bench) -> String {
    let request = bench.server.client.get(bench.server.url("/metrics"));
    let response = request.bearer_auth(METRICS_TOKEN).send();
    response.await.unwrap().text().await.unwrap()
}

pub async fn scrape(bench: &Bench, name: &str) -> f64 {
    let text = metrics_text(bench).await;
    metric(&text, name).unwrap_or_else(|| panic!("no {name} in\n{text}"))
}

pub fn assert_clean(rows: &[Row], replicas: usize) {
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

/// How long the in-flight waits took, bucket by bucket (cumulative).
pub async fn print_wait_histogram(bench: &Bench) {
    let text = metrics_text(bench).await;
    for line in text
        .lines()
        .filter(|l| l.starts_with("kube_arbiter_in_flight_wait_seconds"))
    {
        println!("{line}");
    }
}

/// A pod of `namespace` labelled `app`, spread over zones against pods
/// labelled `counts`, and anti-affine to them per host.
pub fn lone_pod(namespace: &str, name: &str, app: &str, counts: &str) -> serde_json::Value {
    make_pod(namespace, name)
        .label("app", app)
        .requests(&[])
        .spread(1, ZONE, "DoNotSchedule", &[("app", counts)])
        .required_anti_affinity(label_term(&[("app", counts)], HOST))
        .json()
}
