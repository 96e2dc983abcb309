//! The burst reports: numbers a person reads, not tests. Each runs the
//! matrix of tests/support/burst_matrix.rs against the built server in
//! release mode and prints what it measured (and still fails on a pod
//! stranded or a rule broken where the report checks it):
//!
//! ```text
//! cargo bench --bench burst_reports -- REPORT
//! ```
//!
//! with REPORT one of `burst_report`, `full_bar`, `cost_report`,
//! `throughput_report`, `slow_binding_report` (docs/burst-safety.md shows
//! their results). Without one it lists them, so a plain `cargo bench`
//! does not spend half an hour here.

#[path = "../tests/support/burst_driver.rs"]
mod burst_driver;
#[path = "../tests/support/burst_matrix.rs"]
mod burst_matrix;
#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/support/fake_apiserver.rs"]
mod fake_apiserver;

use std::time::Duration;

use burst_driver::{Binding, Burst, Rules, Topology};
use burst_matrix::{
    Bench, Case, ENFORCER, PATIENT, Pair, Stress, assert_clean, env_or, lone_pod, run_matrix,
    scrape, topology_for,
};

const REPORTS: [&str; 5] = [
    "burst_report",
    "full_bar",
    "cost_report",
    "throughput_report",
    "slow_binding_report",
];

fn main() {
    // `cargo bench` passes `--bench`; the report's name is the other word.
    let chosen: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if chosen.is_empty() {
        println!("burst reports (cargo bench --bench burst_reports -- NAME): {REPORTS:?}");
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for name in &chosen {
        match name.as_str() {
            "burst_report" => runtime.block_on(burst_report()),
            "full_bar" => runtime.block_on(full_bar()),
            "cost_report" => runtime.block_on(cost_report()),
            "throughput_report" => runtime.block_on(throughput_report()),
            "slow_binding_report" => runtime.block_on(slow_binding_report()),
            other => panic!("no report {other:?}; the reports are {REPORTS:?}"),
        }
    }
}

/// Prints the matrix for `BURST_REPLICAS` (30) × `BURST_REPS` (5) with
/// kube-arbiter's `--config` from `BURST_CONFIG` (YAML without
/// `scheduling:`, default none; each cell's role is added):
/// `cargo bench --bench burst_reports -- burst_report`.
/// It asserts only that every burst ran to the end (every pod placed,
/// after the flush); the numbers are the point.
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

/// The full bar: bursts of 30 and 300, every combination, 20 times each,
/// with kube-arbiter's default settings or `BURST_CONFIG` (YAML without
/// `scheduling:`; each cell's role is added). Half an hour in release mode
/// on two cores:
/// `cargo bench --bench burst_reports -- full_bar`.
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
/// the burst. `cargo bench --bench burst_reports -- cost_report`
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
                waiting.server.client.clone(),
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
            waiting.server.client.clone(),
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

/// Throughput as the enforcer (docs/burst-safety.md): a burst of 1,000
/// replicas (zone spread and hostname anti-affinity) on 1,000 and 5,000
/// nodes, kube-arbiter as the enforcer's setup (bind verb, `role:
/// enforcer`) with the driver's own enforcement on: pods/s of the first
/// pass with kube-arbiter (waiting, and with the in-flight wait off)
/// against the driver alone, and where a pod's cycle time goes.
/// `BURST_REPS` (3) bursts per variant, each cleaned up.
/// `cargo bench --bench burst_reports -- throughput_report`
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

/// The slow-binding bar: the API server takes 300 ms per Binding,
/// kube-scheduler binds itself (no bind verb: the shipped
/// `scheduler-config.yaml`) and its in-tree plugins enforce the rules (the
/// driver's own filter). Each burst's duration, from the first cycle to
/// the last Binding committed, for the driver alone, with kube-arbiter
/// next to the in-tree plugins (never waits) and with kube-arbiter as the
/// enforcer (waits for each related pod's Binding), interleaved in one run; `BURST_REPLICAS` (30)
/// per burst, `BURST_REPS` (3) bursts per variant and rule set.
/// `cargo bench --bench burst_reports -- slow_binding_report`
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
