//! Pods scheduled per second by the real kube-scheduler 1.37, alone and
//! with an extender, on the real-cluster harness (tests/real/): 5,000
//! nodes (three zones, every tenth tainted), pods created by this client
//! as fast as kube-apiserver takes them, the bind times read from a watch,
//! and each process's CPU from /proc. Workloads after upstream's
//! scheduler_perf (test/integration/scheduler_perf, v1.37.2 templates):
//!
//!   plain         pod-default.yaml (100m CPU, 500Mi)
//!   anti-affinity pod-with-pod-anti-affinity.yaml (required, hostname)
//!   affinity      pod-with-preferred-pod-affinity.yaml (preferred, hostname)
//!   spread        pod-with-topology-spreading.yaml (zone, maxSkew 5, hard)
//!
//! Variants, alternated within each round: kube-scheduler alone (the
//! shipped scheduler-config.yaml without its extender), with the
//! do-nothing extender (e2e/cluster/v1.37/noop-extender: every node
//! feasible, every score 0, same mTLS), with kube-arbiter next to the
//! in-tree plugins (shipped config) and as the enforcer (shipped enforcer
//! config).
//!
//!   scripts/throughput.sh [--nodes N] [--pods P] [--rounds R] [--client-qps Q] [WORKLOAD...]
//!
//! kube-scheduler's API client is rate-limited: the shipped configuration
//! leaves `clientConnection.qps` at its default, 50 (burst 100), and every
//! Binding kube-scheduler posts itself counts against it. With the default
//! the bench measures the deployed path; `--client-qps 5000` sets qps and
//! burst as upstream's scheduler_perf does, so that the decisions, not the
//! client, set the pace.
//!
//! Prints one row per workload and variant: median pods/s with the range
//! over rounds, CPU seconds per 1,000 pods of kube-scheduler and of the
//! extender, and the median as a multiple of kube-scheduler alone and of
//! the do-nothing extender. Numbers only: nothing here passes or fails.

#[path = "../tests/common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "../tests/real/mod.rs"]
mod real;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::runtime::watcher;
use real::control_plane::ControlPlane;
use real::install::{Installed, Role, Setup, install, scheduler_config};
use real::process::{Process, cpu_seconds, free_port};
use serde_json::{Value, json};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Variant {
    Alone,
    Noop,
    NextTo,
    Enforcer,
}

const VARIANTS: [Variant; 4] = [
    Variant::Alone,
    Variant::Noop,
    Variant::NextTo,
    Variant::Enforcer,
];

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Alone => "kube-scheduler alone",
            Variant::Noop => "do-nothing extender",
            Variant::NextTo => "kube-arbiter next to in-tree",
            Variant::Enforcer => "kube-arbiter as enforcer",
        }
    }
}

struct Options {
    nodes: usize,
    pods: usize,
    rounds: usize,
    /// kube-scheduler's `clientConnection.qps` and `burst`; `None` keeps
    /// the shipped configuration's default.
    client_qps: Option<usize>,
    workloads: Vec<String>,
}

fn options() -> Options {
    let mut o = Options {
        nodes: 5000,
        pods: 1000,
        rounds: 3,
        client_qps: None,
        workloads: Vec::new(),
    };
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    while let Some(arg) = args.next() {
        let mut number = |what: &str| -> usize {
            args.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{what} needs a number"))
        };
        match arg.as_str() {
            "--nodes" => o.nodes = number("--nodes"),
            "--pods" => o.pods = number("--pods"),
            "--rounds" => o.rounds = number("--rounds"),
            "--client-qps" => o.client_qps = Some(number("--client-qps")),
            w @ ("plain" | "anti-affinity" | "affinity" | "spread") => o.workloads.push(w.into()),
            other => panic!("unknown argument {other:?}: see scripts/throughput.sh"),
        }
    }
    if o.workloads.is_empty() {
        o.workloads = ["plain", "anti-affinity", "affinity", "spread"]
            .map(String::from)
            .to_vec();
    }
    o
}

/// The pod of `workload`, as scheduler_perf's template has it.
fn pod(workload: &str, i: usize) -> Pod {
    let resources = json!({"limits": {"cpu": "100m", "memory": "500Mi"},
                           "requests": {"cpu": "100m", "memory": "500Mi"}});
    let container = json!([{"name": "pause", "image": "registry.k8s.io/pause:3.10.2",
                            "ports": [{"containerPort": 80}], "resources": resources}]);
    let hostname_term = |color: &str| {
        json!({"labelSelector": {"matchLabels": {"color": color}},
               "topologyKey": "kubernetes.io/hostname"})
    };
    let (color, extra): (&str, Value) = match workload {
        "plain" => ("none", json!({})),
        "anti-affinity" => (
            "green",
            json!({"affinity": {"podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [hostname_term("green")]}}}),
        ),
        "affinity" => (
            "red",
            json!({"affinity": {"podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "podAffinityTerm": hostname_term("red")}]}}}),
        ),
        "spread" => (
            "blue",
            json!({"topologySpreadConstraints": [{"maxSkew": 5,
                "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"color": "blue"}}}]}),
        ),
        other => panic!("no workload {other}"),
    };
    let mut spec = json!({"containers": container});
    spec.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    serde_json::from_value(json!({
        "metadata": {"name": format!("{workload}-{i}"), "labels": {"color": color}},
        "spec": spec,
    }))
    .unwrap()
}

/// 5,000-style nodes: three zones, every tenth node tainted
/// `dedicated=gpu:NoSchedule`, 4 CPUs and 32 GiB as scheduler_perf's
/// node-default.yaml.
async fn create_nodes(client: &kube::Client, count: usize) {
    let zones = ["moon-1", "moon-2", "moon-3"];
    stream::iter(0..count)
        .for_each_concurrent(16, |i| {
            let client = client.clone();
            async move {
                let name = format!("node-{i:05}");
                let capacity = json!({"pods": "110", "cpu": "4", "memory": "32Gi"});
                let taints = if i % 10 == 9 {
                    json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
                } else {
                    json!([])
                };
                let node = serde_json::from_value(json!({
                    "metadata": {"name": name, "labels": {
                        "kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zones[i % 3]}},
                    "spec": {"taints": taints},
                    "status": {"capacity": capacity, "allocatable": capacity,
                               "conditions": [{"type": "Ready", "status": "True"}]},
                }))
                .unwrap();
                let api: Api<k8s_openapi::api::core::v1::Node> = Api::all(client);
                api.create(&PostParams::default(), &node).await.unwrap();
            }
        })
        .await;
}

struct Run {
    pods_per_second: f64,
    created_per_second: f64,
    scheduler_cpu: f64,
    extender_cpu: f64,
}

/// Creates `count` pods of `workload` in `ns` and waits until all are
/// bound; the bind rate from the first bind to the last.
async fn measure(
    client: &kube::Client,
    ns: &str,
    workload: &str,
    count: usize,
    scheduler: u32,
    extender: Option<u32>,
) -> Run {
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    let cpu = |pid: Option<u32>| pid.map_or(0.0, cpu_seconds);
    let (scheduler_before, extender_before) = (cpu(Some(scheduler)), cpu(extender));
    let watch = {
        let api = api.clone();
        tokio::spawn(async move {
            let mut bound: BTreeMap<String, Instant> = BTreeMap::new();
            let mut events = watcher(api, watcher::Config::default()).boxed();
            while let Some(event) = events.try_next().await.unwrap() {
                let pods = match event {
                    watcher::Event::Apply(p) | watcher::Event::InitApply(p) => vec![p],
                    _ => vec![],
                };
                for p in pods {
                    if p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some() {
                        bound
                            .entry(p.metadata.name.unwrap())
                            .or_insert_with(Instant::now);
                    }
                }
                if bound.len() >= count {
                    return bound;
                }
            }
            bound
        })
    };
    let start = Instant::now();
    stream::iter(0..count)
        .for_each_concurrent(16, |i| {
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &pod(workload, i))
                    .await
                    .unwrap();
            }
        })
        .await;
    let created = start.elapsed();
    let bound = tokio::time::timeout(Duration::from_secs(600), watch)
        .await
        .expect("pods not bound within 10 minutes")
        .unwrap();
    let first = bound.values().min().unwrap();
    let last = bound.values().max().unwrap();
    let run = Run {
        pods_per_second: (count - 1) as f64 / last.duration_since(*first).as_secs_f64(),
        created_per_second: count as f64 / created.as_secs_f64(),
        scheduler_cpu: (cpu(Some(scheduler)) - scheduler_before) * 1000.0 / count as f64,
        extender_cpu: (cpu(extender) - extender_before) * 1000.0 / count as f64,
    };
    api.delete_collection(
        &DeleteParams::default().grace_period(0),
        &ListParams::default(),
    )
    .await
    .unwrap();
    run
}

/// `config` with kube-scheduler's client allowed `qps` requests a second
/// (and as large a burst), as scheduler_perf runs it.
fn with_client_qps(config: &str, qps: Option<usize>) -> String {
    match qps {
        None => config.to_string(),
        Some(q) => config.replacen(
            "clientConnection:\n",
            &format!("clientConnection:\n  qps: {q}\n  burst: {q}\n"),
            1,
        ),
    }
}

/// The shipped scheduler-config.yaml without its extenders entry.
fn alone_config(with_extender: &str) -> String {
    let (before, _) = with_extender.split_once("\nextenders:").unwrap();
    format!("{before}\n")
}

/// The shipped config's extender pointed at the do-nothing extender on
/// `port`, with only the verbs it answers.
fn noop_config(next_to: &str, arbiter_port: u16, port: u16) -> String {
    next_to
        .replace(
            &format!("127.0.0.1:{arbiter_port}"),
            &format!("127.0.0.1:{port}"),
        )
        .replace("    preemptVerb: preempt\n", "")
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let o = options();
    println!(
        "kube-scheduler throughput, {} nodes, {} pods per run, {} rounds, client qps {}",
        o.nodes,
        o.pods,
        o.rounds,
        o.client_qps
            .map_or("50 (the default)".to_string(), |q| q.to_string())
    );
    for workload in &o.workloads {
        let mut plane = ControlPlane::start(&format!("throughput-{workload}")).await;
        let mut arbiter: Installed =
            install(&mut plane, Setup::new(Role::NextToInTreePlugins)).await;
        let client = plane.admin.clone();
        let started = Instant::now();
        create_nodes(&client, o.nodes).await;
        println!(
            "{workload}: {} nodes created in {:.0?}",
            o.nodes,
            started.elapsed()
        );
        let noop_port = free_port();
        let certs = arbiter.certs.clone();
        let path = |f: &str| certs.join(f).to_string_lossy().to_string();
        let noop = Process::spawn(
            "noop-extender",
            &plane.bins.bin("noop-extender"),
            &[
                "-listen".into(),
                format!("127.0.0.1:{noop_port}"),
                "-cert".into(),
                path("tls.crt"),
                "-key".into(),
                path("tls.key"),
                "-client-ca".into(),
                path("ca.crt"),
            ],
            &plane.dir,
        );
        let next_to = scheduler_config(&arbiter, Setup::new(Role::NextToInTreePlugins));
        let enforcer = scheduler_config(&arbiter, Setup::new(Role::Enforcer));
        let mut runs: BTreeMap<usize, Vec<Run>> = BTreeMap::new();
        for round in 0..o.rounds {
            for k in 0..VARIANTS.len() {
                // Each round starts with another variant.
                let index = (k + round) % VARIANTS.len();
                let variant = VARIANTS[index];
                let (config, role) = match variant {
                    Variant::Alone => (alone_config(&next_to), None),
                    Variant::Noop => (noop_config(&next_to, arbiter.port, noop_port), None),
                    Variant::NextTo => (next_to.clone(), Some(Role::NextToInTreePlugins)),
                    Variant::Enforcer => (enforcer.clone(), Some(Role::Enforcer)),
                };
                if let Some(role) = role
                    && role != arbiter.setup.role
                {
                    arbiter.switch_role(role).await;
                }
                plane.stop_scheduler().await;
                plane
                    .start_scheduler(&with_client_qps(&config, o.client_qps))
                    .await;
                let ns = format!("run-{round}-{index}");
                plane.namespace(&ns).await;
                let extender = match variant {
                    Variant::Alone => None,
                    Variant::Noop => Some(noop.pid()),
                    _ => arbiter.pid(),
                };
                let run = measure(
                    &client,
                    &ns,
                    workload,
                    o.pods,
                    plane.scheduler_pid().unwrap(),
                    extender,
                )
                .await;
                println!(
                    "{workload} round {round} {:<30} {:>7.1} pods/s (created {:.0}/s), CPU per 1,000 pods: kube-scheduler {:.2} s, extender {:.2} s",
                    variant.name(),
                    run.pods_per_second,
                    run.created_per_second,
                    run.scheduler_cpu,
                    run.extender_cpu
                );
                runs.entry(index).or_default().push(run);
            }
        }
        let medians: Vec<f64> = (0..VARIANTS.len())
            .map(|i| {
                median(
                    &mut runs[&i]
                        .iter()
                        .map(|r| r.pods_per_second)
                        .collect::<Vec<_>>(),
                )
            })
            .collect();
        println!(
            "\n| {workload}, {} nodes | pods/s median (range) | kube-scheduler CPU s / 1,000 pods | extender CPU s / 1,000 pods | × alone | × do-nothing |",
            o.nodes
        );
        println!("|---|---|---|---|---|---|");
        for (i, variant) in VARIANTS.iter().enumerate() {
            let rs = &runs[&i];
            let rate: Vec<f64> = rs.iter().map(|r| r.pods_per_second).collect();
            let (lo, hi) = (
                rate.iter().cloned().fold(f64::MAX, f64::min),
                rate.iter().cloned().fold(0.0, f64::max),
            );
            let sched = median(&mut rs.iter().map(|r| r.scheduler_cpu).collect::<Vec<_>>());
            let ext = median(&mut rs.iter().map(|r| r.extender_cpu).collect::<Vec<_>>());
            println!(
                "| {} | {:.1} ({lo:.1}–{hi:.1}) | {sched:.2} | {ext:.2} | {:.2}× | {:.2}× |",
                variant.name(),
                medians[i],
                medians[i] / medians[0],
                medians[i] / medians[1]
            );
        }
        println!();
        drop(noop);
    }
}
