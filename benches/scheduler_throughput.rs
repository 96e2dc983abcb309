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
//!   preemption    PreemptionAsync (default_preemption/performance-config.yaml):
//!                 every node holds four low-priority 900m pods (3.6 of 4
//!                 CPUs); while the measured pods (pod-default.yaml) are
//!                 created, a high-priority 3970m pod arrives every 200 ms
//!                 and must preempt a node's four
//!
//! Variants, alternated within each round: kube-scheduler alone (the
//! shipped scheduler-config.yaml without its extender), with the
//! do-nothing extender (e2e/cluster/v1.37/noop-extender: every node
//! feasible, every score 0, same mTLS), with kube-arbiter next to the
//! in-tree plugins (shipped config), as the enforcer (shipped enforcer
//! config), and as the enforcer with kube-scheduler's own NodeAffinity,
//! InterPodAffinity and PodTopologySpread scores off as well ([`lean`]:
//! kube-arbiter's `prioritize` computes the same three).
//!
//!   scripts/throughput.sh [--nodes N] [--pods P] [--rounds R] [--client-qps Q] [--profile] [WORKLOAD...]
//!
//! kube-scheduler's API client is rate-limited: the shipped configuration
//! leaves `clientConnection.qps` at its default, 50 (burst 100), and every
//! Binding kube-scheduler posts itself counts against it. With the default
//! the bench measures the deployed path; `--client-qps 5000` sets qps and
//! burst as upstream's scheduler_perf does, so that the decisions, not the
//! client, set the pace.
//!
//! Prints one row per workload and variant: median pods/s with the range
//! over rounds; CPU seconds per 1,000 pods of kube-scheduler, of the
//! extender, of kube-apiserver and etcd together, and of the whole machine
//! (`/proc/stat`, this client included), with how busy the machine's
//! cores were; and the median as a multiple of kube-scheduler alone and of
//! the do-nothing extender. Numbers only: nothing here passes or fails.
//!
//! `--profile` adds one run per variant, after the rounds and not counted
//! in them, of three times as many pods, during which kube-scheduler's own
//! CPU profile (`/debug/pprof/profile`, [`PROFILE_SECONDS`]) is written to
//! `target/tmp/throughput-profiles/`; read it with
//! `go tool pprof -top target/k8s/v1.37.2/kube-scheduler FILE`. Only then
//! is kube-scheduler started with `/debug/pprof` open to loopback callers
//! without authentication.

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
    EnforcerLean,
}

const VARIANTS: [Variant; 5] = [
    Variant::Alone,
    Variant::Noop,
    Variant::NextTo,
    Variant::Enforcer,
    Variant::EnforcerLean,
];

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Alone => "kube-scheduler alone",
            Variant::Noop => "do-nothing extender",
            Variant::NextTo => "kube-arbiter next to in-tree",
            Variant::Enforcer => "kube-arbiter as enforcer",
            Variant::EnforcerLean => "enforcer, in-tree scores off",
        }
    }
}

const WORKLOADS: [&str; 5] = ["plain", "anti-affinity", "affinity", "spread", "preemption"];

/// How long kube-scheduler's CPU profile runs, from the first pod created.
const PROFILE_SECONDS: u32 = 6;

struct Options {
    nodes: usize,
    pods: usize,
    rounds: usize,
    /// kube-scheduler's `clientConnection.qps` and `burst`; `None` keeps
    /// the shipped configuration's default.
    client_qps: Option<usize>,
    profile: bool,
    workloads: Vec<String>,
}

fn options() -> Options {
    let mut o = Options {
        nodes: 5000,
        pods: 1000,
        rounds: 3,
        client_qps: None,
        profile: false,
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
            "--profile" => o.profile = true,
            w if WORKLOADS.contains(&w) => o.workloads.push(w.into()),
            other => panic!("unknown argument {other:?}: see scripts/throughput.sh"),
        }
    }
    if o.workloads.is_empty() {
        o.workloads = WORKLOADS.map(String::from).to_vec();
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
        "plain" | "preemption" => ("none", json!({})),
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

/// A pod of the preemption workload's classes, as scheduler_perf's
/// pod-low-priority.yaml (900m) and pod-high-priority.yaml (3970m), with
/// terminationGracePeriodSeconds 0 so that a victim is gone at once (no
/// kubelet here).
fn priority_pod(name: &str, class: &str, cpu: &str) -> Pod {
    let resources = json!({"limits": {"cpu": cpu, "memory": "500Mi"},
                           "requests": {"cpu": cpu, "memory": "500Mi"}});
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"priorityClassName": class, "terminationGracePeriodSeconds": 0,
                 "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10.2",
                                 "resources": resources}]},
    }))
    .unwrap()
}

const FILL_NAMESPACE: &str = "fill";
const LOW_CLASS: &str = "throughput-low";
const HIGH_CLASS: &str = "throughput-high";

/// The preemption workload's PriorityClasses and its namespace of
/// low-priority pods.
async fn prepare_preemption(plane: &ControlPlane) {
    for (name, value) in [(LOW_CLASS, 0), (HIGH_CLASS, 9_999_999)] {
        real::install::create(
            &plane.admin,
            json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                   "metadata": {"name": name}, "value": value}),
        )
        .await;
    }
    plane.namespace(FILL_NAMESPACE).await;
}

/// Nodes without a taint among the first `nodes` ([`create_nodes`]).
fn untainted(nodes: usize) -> usize {
    nodes - nodes / 10
}

/// Tops the low-priority pods up to four an untainted node (the ones
/// preempted in the last run are gone) and waits until all are bound.
/// Returns how many it created: after a run, the pods preempted in it.
async fn fill_nodes(client: &kube::Client, nodes: usize, generation: usize) -> usize {
    let api: Api<Pod> = Api::namespaced(client.clone(), FILL_NAMESPACE);
    let have = api
        .list_metadata(&ListParams::default())
        .await
        .unwrap()
        .items
        .len();
    stream::iter(have..4 * untainted(nodes))
        .for_each_concurrent(16, |i| {
            let api = api.clone();
            async move {
                let pod = priority_pod(&format!("low-{generation}-{i}"), LOW_CLASS, "900m");
                api.create(&PostParams::default(), &pod).await.unwrap();
            }
        })
        .await;
    let unbound = ListParams::default().fields("spec.nodeName=");
    let start = Instant::now();
    while !api.list_metadata(&unbound).await.unwrap().items.is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(900),
            "low-priority pods not bound within 15 minutes"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    (4 * untainted(nodes)).saturating_sub(have)
}

/// CPU seconds used so far by each process of the run and by the whole
/// machine.
#[derive(Clone, Copy, Default)]
struct Cpu {
    scheduler: f64,
    extender: f64,
    /// kube-apiserver and etcd.
    api: f64,
    machine: f64,
}

impl Cpu {
    fn now(scheduler: u32, extender: Option<u32>, plane: &ControlPlane) -> Self {
        let api = plane
            .component_pids()
            .iter()
            .filter(|(name, _)| *name != "kube-controller-manager")
            .map(|(_, pid)| cpu_seconds(*pid))
            .sum();
        Self {
            scheduler: cpu_seconds(scheduler),
            extender: extender.map_or(0.0, cpu_seconds),
            api,
            machine: machine_busy_seconds(),
        }
    }

    fn since(self, before: Self) -> Self {
        Self {
            scheduler: self.scheduler - before.scheduler,
            extender: self.extender - before.extender,
            api: self.api - before.api,
            machine: self.machine - before.machine,
        }
    }
}

/// Seconds all cores have spent busy since boot (`/proc/stat`'s first
/// line: every field but idle and iowait, in ticks of 1/100 s).
fn machine_busy_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let ticks: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    let busy: u64 = ticks
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4)
        .map(|(_, t)| t)
        .sum();
    busy as f64 / 100.0
}

struct Run {
    pods_per_second: f64,
    created_per_second: f64,
    /// CPU seconds per 1,000 pods.
    cpu: Cpu,
    /// The machine's busy share of all its cores over the run.
    busy: f64,
}

/// Where a run's kube-scheduler can be reached, and whether to profile it.
struct Scheduler {
    pid: u32,
    /// The secure port, and the profile's file when this run is profiled.
    profile: Option<(u16, std::path::PathBuf)>,
}

/// Creates `count` pods of `workload` in `ns` and waits until all are
/// bound; the bind rate from the first bind to the last. The preemption
/// workload also creates a high-priority pod every 200 ms in `NS-high`
/// until then.
async fn measure(
    plane: &ControlPlane,
    ns: &str,
    workload: &str,
    count: usize,
    scheduler: &Scheduler,
    extender: Option<u32>,
) -> Run {
    let client = &plane.admin;
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    let high_ns = format!("{ns}-high");
    if workload == "preemption" {
        plane.namespace(&high_ns).await;
    }
    let before = Cpu::now(scheduler.pid, extender, plane);
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
    let churn = (workload == "preemption").then(|| {
        let high: Api<Pod> = Api::namespaced(client.clone(), &high_ns);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(200));
            for i in 0.. {
                tick.tick().await;
                let pod = priority_pod(&format!("high-{i}"), HIGH_CLASS, "3970m");
                high.create(&PostParams::default(), &pod).await.unwrap();
            }
        })
    });
    let profile = scheduler.profile.as_ref().map(|(port, file)| {
        let url = format!("https://127.0.0.1:{port}/debug/pprof/profile?seconds={PROFILE_SECONDS}");
        let file = file.clone();
        tokio::task::spawn_blocking(move || {
            let status = std::process::Command::new("curl")
                .args(["-sSfk", "-o"])
                .arg(&file)
                .arg(&url)
                .status()
                .expect("cannot run curl");
            assert!(status.success(), "no profile from {url}");
            file
        })
    });
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
    let wall = start.elapsed().as_secs_f64();
    let used = Cpu::now(scheduler.pid, extender, plane).since(before);
    if let Some(churn) = churn {
        churn.abort();
    }
    if let Some(profile) = profile {
        println!(
            "kube-scheduler profile: {}",
            profile.await.unwrap().display()
        );
    }
    let first = bound.values().min().unwrap();
    let last = bound.values().max().unwrap();
    let per_1000 = |seconds: f64| seconds * 1000.0 / count as f64;
    let run = Run {
        pods_per_second: (count - 1) as f64 / last.duration_since(*first).as_secs_f64(),
        created_per_second: count as f64 / created.as_secs_f64(),
        cpu: Cpu {
            scheduler: per_1000(used.scheduler),
            extender: per_1000(used.extender),
            api: per_1000(used.api),
            machine: per_1000(used.machine),
        },
        busy: used.machine / (wall * cores() as f64),
    };
    let everything = DeleteParams::default().grace_period(0);
    api.delete_collection(&everything, &ListParams::default())
        .await
        .unwrap();
    if workload == "preemption" {
        let high: Api<Pod> = Api::namespaced(client.clone(), &high_ns);
        high.delete_collection(&everything, &ListParams::default())
            .await
            .unwrap();
    }
    run
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
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

/// The enforcer configuration with kube-scheduler's scores of the rules
/// kube-arbiter scores (NodeAffinity, InterPodAffinity, PodTopologySpread)
/// off too.
fn lean(enforcer: &str) -> String {
    let scores_off = "    plugins:\n      preScore:\n        disabled:\n          - name: NodeAffinity\n          - name: InterPodAffinity\n          - name: PodTopologySpread\n      score:\n        disabled:\n          - name: NodeAffinity\n          - name: InterPodAffinity\n          - name: PodTopologySpread\n";
    assert!(enforcer.contains("    plugins:\n"), "{enforcer}");
    enforcer.replacen("    plugins:\n", scores_off, 1)
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

/// Everything a run needs that stays the same through a workload.
struct Bench {
    plane: ControlPlane,
    arbiter: Installed,
    noop: Process,
    noop_port: u16,
    next_to: String,
    enforcer: String,
    client_qps: Option<usize>,
    nodes: usize,
    /// Low-priority top-ups so far (their pods' names differ).
    fills: usize,
}

impl Bench {
    /// The scheduler configuration of `variant` and the role kube-arbiter
    /// must have for it.
    fn config(&self, variant: Variant) -> (String, Option<Role>) {
        let (config, role) = match variant {
            Variant::Alone => (alone_config(&self.next_to), None),
            Variant::Noop => (
                noop_config(&self.next_to, self.arbiter.port, self.noop_port),
                None,
            ),
            Variant::NextTo => (self.next_to.clone(), Some(Role::NextToInTreePlugins)),
            Variant::Enforcer => (self.enforcer.clone(), Some(Role::Enforcer)),
            Variant::EnforcerLean => (lean(&self.enforcer), Some(Role::Enforcer)),
        };
        (with_client_qps(&config, self.client_qps), role)
    }

    /// One run of `pods` pods of `workload` with `variant`, in namespace
    /// `ns`, kube-scheduler profiled into `profile` when given.
    async fn run(
        &mut self,
        variant: Variant,
        workload: &str,
        pods: usize,
        ns: &str,
        profile: Option<std::path::PathBuf>,
    ) -> Run {
        let (config, role) = self.config(variant);
        if let Some(role) = role
            && role != self.arbiter.setup.role
        {
            self.arbiter.switch_role(role).await;
        }
        self.plane.stop_scheduler().await;
        let port = free_port();
        let extra = match profile {
            Some(_) => vec![
                format!("--secure-port={port}"),
                "--authorization-always-allow-paths=/healthz,/readyz,/livez,/debug/pprof/*"
                    .to_string(),
            ],
            None => vec![],
        };
        self.plane.start_scheduler_with(&config, &extra).await;
        if workload == "preemption" {
            self.fills += 1;
            let preempted = fill_nodes(&self.plane.admin, self.nodes, self.fills).await;
            println!(
                "{workload}: {preempted} low-priority pods preempted in the last run, replaced"
            );
        }
        self.plane.namespace(ns).await;
        let extender = match variant {
            Variant::Alone => None,
            Variant::Noop => Some(self.noop.pid()),
            _ => self.arbiter.pid(),
        };
        let scheduler = Scheduler {
            pid: self.plane.scheduler_pid().unwrap(),
            profile: profile.map(|file| (port, file)),
        };
        let run = measure(&self.plane, ns, workload, pods, &scheduler, extender).await;
        println!(
            "{workload} {ns} {:<30} {:>7.1} pods/s (created {:.0}/s), CPU s per 1,000 pods: kube-scheduler {:.2}, extender {:.2}, kube-apiserver+etcd {:.2}, machine {:.2} ({:.0} % busy)",
            variant.name(),
            run.pods_per_second,
            run.created_per_second,
            run.cpu.scheduler,
            run.cpu.extender,
            run.cpu.api,
            run.cpu.machine,
            run.busy * 100.0
        );
        run
    }
}

/// Starts the control plane and kube-arbiter for `workload`, creates the
/// nodes (and the preemption workload's low-priority pods).
async fn set_up(workload: &str, o: &Options) -> Bench {
    let mut plane = ControlPlane::start(&format!("throughput-{workload}")).await;
    let arbiter: Installed = install(&mut plane, Setup::new(Role::NextToInTreePlugins)).await;
    let started = Instant::now();
    create_nodes(&plane.admin, o.nodes).await;
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
    if workload == "preemption" {
        // The first fill is the bulk of it (four pods a node): placed by
        // kube-scheduler alone at scheduler_perf's client rate, whatever
        // the variants' rate.
        prepare_preemption(&plane).await;
        plane
            .start_scheduler(&with_client_qps(&alone_config(&next_to), Some(5000)))
            .await;
        let started = Instant::now();
        fill_nodes(&plane.admin, o.nodes, 0).await;
        println!(
            "{workload}: {} low-priority pods bound in {:.0?}",
            4 * untainted(o.nodes),
            started.elapsed()
        );
    }
    Bench {
        plane,
        arbiter,
        noop,
        noop_port,
        next_to,
        enforcer,
        client_qps: o.client_qps,
        nodes: o.nodes,
        fills: 0,
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let o = options();
    println!(
        "kube-scheduler throughput, {} nodes, {} pods per run, {} rounds, client qps {}, {} cores",
        o.nodes,
        o.pods,
        o.rounds,
        o.client_qps
            .map_or("50 (the default)".to_string(), |q| q.to_string()),
        cores()
    );
    for workload in &o.workloads {
        let mut bench = set_up(workload, &o).await;
        let mut runs: BTreeMap<usize, Vec<Run>> = BTreeMap::new();
        for round in 0..o.rounds {
            for k in 0..VARIANTS.len() {
                // Each round starts with another variant.
                let index = (k + round) % VARIANTS.len();
                let ns = format!("run-{round}-{index}");
                let run = bench
                    .run(VARIANTS[index], workload, o.pods, &ns, None)
                    .await;
                runs.entry(index).or_default().push(run);
            }
        }
        print_table(workload, &o, &runs);
        if o.profile {
            let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("throughput-profiles");
            std::fs::create_dir_all(&dir).unwrap();
            for (index, variant) in VARIANTS.iter().enumerate() {
                let file = dir.join(format!(
                    "{workload}-{}-{}.pb.gz",
                    o.nodes,
                    variant.name().replace([' ', ','], "-")
                ));
                let ns = format!("profile-{index}");
                bench
                    .run(*variant, workload, 3 * o.pods, &ns, Some(file))
                    .await;
            }
        }
    }
}

fn print_table(workload: &str, o: &Options, runs: &BTreeMap<usize, Vec<Run>>) {
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
        "\n| {workload}, {} nodes | pods/s median (range) | kube-scheduler | extender | kube-apiserver + etcd | machine (busy) | × alone | × do-nothing |",
        o.nodes
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (i, variant) in VARIANTS.iter().enumerate() {
        let rs = &runs[&i];
        let rate: Vec<f64> = rs.iter().map(|r| r.pods_per_second).collect();
        let (lo, hi) = (
            rate.iter().cloned().fold(f64::MAX, f64::min),
            rate.iter().cloned().fold(0.0, f64::max),
        );
        let cpu = |f: fn(&Run) -> f64| median(&mut rs.iter().map(f).collect::<Vec<_>>());
        println!(
            "| {} | {:.1} ({lo:.1}–{hi:.1}) | {:.2} | {:.2} | {:.2} | {:.2} ({:.0} %) | {:.2}× | {:.2}× |",
            variant.name(),
            medians[i],
            cpu(|r| r.cpu.scheduler),
            cpu(|r| r.cpu.extender),
            cpu(|r| r.cpu.api),
            cpu(|r| r.cpu.machine),
            cpu(|r| r.busy) * 100.0,
            medians[i] / medians[0],
            medians[i] / medians[1]
        );
    }
    println!("CPU columns: seconds per 1,000 pods, medians over rounds.\n");
}
