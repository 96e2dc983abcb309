//! A driver that schedules a burst of replicas the way kube-scheduler does
//! with an extender, against the built kube-arbiter in live mode and the
//! in-process fake API server:
//!
//! - one scheduling cycle at a time: the driver's own filter, walking the
//!   nodes in kube-scheduler's order (zones round-robin, as its node tree
//!   lists them) from where the previous cycle stopped, until it found
//!   `numFeasibleNodesToFind` feasible nodes (upstream
//!   `pkg/scheduler/schedule_one.go`: all nodes below 100, else the
//!   adaptive percentage `50 - nodes/125`, at least 5 % and at least 100
//!   nodes); with `enforce` its filter counts zone spread and hostname
//!   anti-affinity over its own cache of bound AND assumed pods, like the
//!   in-tree PodTopologySpread / InterPodAffinity plugins; without, only
//!   the resource fit (every node passes here). Then the extender's
//!   `filter` (NodeNames mode) for the nodes found, `prioritize` when more
//!   than one is left, and the best node (scores summed; ties broken by
//!   node order or at random) is assumed in the cache;
//! - the binding cycle starts at once, concurrently with the next cycle:
//!   the extender's `bind` verb, or a Binding POSTed to the fake API
//!   server (optionally after a "slow bind call" delay, a Permit or
//!   PreBind step). The API server holds each Binding for a random time
//!   (a real one takes tens of ms) before it commits it and its watch
//!   reports it — for kube-arbiter's Binding (bind verb) and the driver's
//!   own alike;
//! - a failed cycle or binding is recorded as kube-scheduler's failure
//!   handler does (the assumed pod forgotten, `PodScheduled=False` with
//!   reason `Unschedulable` or `SchedulerError` written to the pod), and
//!   the pod is tried again once the burst's bindings are done (what
//!   kube-scheduler's backoff or periodic flush does, later).
//!
//! The driver's cache is the truth: it is the only scheduler, so whether
//! a pod had a feasible node is decided against it.
#![allow(dead_code)] // each test binary uses its own subset

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::task::JoinSet;

use crate::fake_apiserver::FakeApiServer;
use kube_arbiter::testing::{label_term, make_node, make_pod};

#[path = "rng.rs"]
mod rng;
pub use rng::Rng;

pub const ZONE: &str = "topology.kubernetes.io/zone";
pub const HOST: &str = "kubernetes.io/hostname";
const APP: &str = "web";
/// Every replica requests this much CPU (millicores); nodes have 64 cores
/// and room for 500 pods.
const POD_MILLICPU: u64 = 10;
const NODE_MILLICPU: u64 = 64_000;
const NODE_PODS: usize = 500;

/// Zones × nodes per zone, every node labelled with both keys.
#[derive(Debug, Clone, Copy)]
pub struct Topology {
    pub zones: usize,
    pub nodes_per_zone: usize,
}

impl Topology {
    pub fn node_names(&self) -> Vec<String> {
        (0..self.zones)
            .flat_map(|z| (0..self.nodes_per_zone).map(move |i| format!("z{z}-n{i:03}")))
            .collect()
    }

    /// The nodes as kube-scheduler's node tree lists them: one node of
    /// each zone in turn.
    pub fn tree_order(&self) -> Vec<String> {
        (0..self.nodes_per_zone)
            .flat_map(|i| (0..self.zones).map(move |z| format!("z{z}-n{i:03}")))
            .collect()
    }

    pub fn nodes(&self) -> Vec<Value> {
        self.node_names()
            .into_iter()
            .map(|name| {
                make_node(&name)
                    .uid(&format!("uid-{name}"))
                    .hostname()
                    .zone(zone_of(&name))
                    .allocatable(&[("cpu", "64"), ("memory", "256Gi"), ("pods", "500")])
                    .json()
            })
            .collect()
    }

    fn zone_names(&self) -> Vec<String> {
        (0..self.zones).map(|z| format!("z{z}")).collect()
    }
}

fn zone_of(node: &str) -> &str {
    node.split('-').next().unwrap_or(node)
}

/// Upstream `numFeasibleNodesToFind` with the default
/// `percentageOfNodesToScore` (0: adaptive).
pub fn num_feasible_nodes_to_find(all: usize) -> usize {
    const MIN_NODES: usize = 100;
    const MIN_PERCENT: usize = 5;
    if all < MIN_NODES {
        return all;
    }
    let percent = 50usize.saturating_sub(all / 125).max(MIN_PERCENT);
    (all * percent / 100).max(MIN_NODES)
}

/// The constraints every replica of the burst carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rules {
    /// Zone spread maxSkew 1 (DoNotSchedule) and required hostname
    /// anti-affinity against its own replicas.
    SpreadAndAntiAffinity,
    /// Zone spread maxSkew 1 alone.
    SpreadOnly,
}

/// How a chosen node becomes a binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    /// The extender's `bind` verb (`bindVerb: bind`).
    Verb,
    /// A Binding POSTed to the API server by the scheduler itself.
    ApiServer,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TieBreak {
    /// The first best node in candidate order.
    First,
    /// A uniformly random best node, as kube-scheduler's selectHost.
    Random,
}

/// One burst: `replicas` pods of one app in `namespace`.
#[derive(Debug, Clone)]
pub struct Burst {
    pub namespace: String,
    pub replicas: usize,
    pub rules: Rules,
    pub binding: Binding,
    /// The driver enforces the rules itself (in-tree plugins on).
    pub enforce: bool,
    /// Ask the extender; without, the driver schedules alone (cost baseline).
    pub extender: bool,
    pub tie_break: TieBreak,
    pub seed: u64,
    /// The API server holds each Binding this long before committing it
    /// (ms, uniformly random in the range, inclusive).
    pub api_latency_ms: (u64, u64),
    /// The binding cycle waits this long before its bind call or POST (ms,
    /// random): a Permit or PreBind step. (0, 0): at once, as with the
    /// default plugins.
    pub bind_call_delay_ms: (u64, u64),
    /// The API server refuses every n-th Binding (0: none).
    pub refuse_every: u64,
}

impl Burst {
    /// A burst with the realistic defaults: Bindings committed after 1–50
    /// ms, the bind call sent at once, none refused.
    pub fn new(namespace: String, replicas: usize, rules: Rules, binding: Binding) -> Self {
        Burst {
            namespace,
            replicas,
            rules,
            binding,
            enforce: true,
            extender: true,
            tie_break: TieBreak::Random,
            seed: 0,
            api_latency_ms: (1, 50),
            bind_call_delay_ms: (0, 0),
            refuse_every: 0,
        }
    }

    /// Who binds: without the extender the scheduler POSTs the Binding.
    fn binder(&self) -> Binding {
        if self.extender {
            self.binding
        } else {
            Binding::ApiServer
        }
    }

    /// Remove the burst's pods from the API server (and so from the views).
    pub fn delete_pods(&self, api: &FakeApiServer) {
        for i in 0..self.replicas {
            api.delete("Pod", &self.namespace, &format!("{APP}-{i:03}"));
        }
    }

    pub fn pod(&self, i: usize) -> Value {
        let name = format!("{APP}-{i:03}");
        let pod = make_pod(&self.namespace, &name)
            .typed()
            .label("app", APP)
            .spec("schedulerName", "default-scheduler".into())
            .requests(&[("cpu", &format!("{POD_MILLICPU}m"))])
            .spread(1, ZONE, "DoNotSchedule", &[("app", APP)])
            .phase("Pending");
        let pod = if self.rules == Rules::SpreadAndAntiAffinity {
            pod.required_anti_affinity(label_term(&[("app", APP)], HOST))
        } else {
            pod
        };
        pod.json()
    }
}

/// What one burst did.
#[derive(Debug, Default, Clone)]
pub struct Outcome {
    /// Pods on a node at the end (in the API server).
    pub placed: usize,
    /// Pods the extender rejected on every candidate while the driver's
    /// truth had a feasible node among them: "stranded", the pod would wait
    /// for kube-scheduler's flush. One entry per rejection, with the reasons.
    pub stranded: Vec<String>,
    /// Rejections where no node was feasible at all (none expected here).
    pub truly_unschedulable: usize,
    /// Rejections where the nodes kube-scheduler sent (its
    /// percentageOfNodesToScore window, chosen without the extender's
    /// rules) had no feasible node while others did: kube-scheduler's
    /// retry moves the window; not kube-arbiter's doing.
    pub window_misses: usize,
    pub bind_failures: usize,
    /// Broken rules in the final state (skew, two replicas on a node,
    /// a pod left without a node).
    pub violations: Vec<String>,
    /// Scheduling cycles of the first pass, and how long they took from
    /// the first cycle's start to the last one's end.
    pub cycles: usize,
    pub cycles_took: Duration,
    /// The burst's duration: from the first cycle's start until the last
    /// binding of the first pass was committed (or refused).
    pub took: Duration,
    /// Per cycle: the extender's filter + prioritize round trips.
    pub extender_latency: Vec<Duration>,
    /// First pass, summed over its cycles: the driver's own filter, the
    /// extender's filter and prioritize round trips.
    pub own_filter: Duration,
    pub extender_filter: Duration,
    pub prioritize: Duration,
    /// First pass: each binding cycle, from its start to the bind call's
    /// (or the POST's) answer.
    pub bind_calls: Vec<Duration>,
}

impl Outcome {
    pub fn pods_per_second(&self) -> f64 {
        self.cycles as f64 / self.cycles_took.as_secs_f64().max(1e-9)
    }

    /// Pods over the burst's duration, bindings included.
    pub fn bound_per_second(&self) -> f64 {
        self.cycles as f64 / self.took.as_secs_f64().max(1e-9)
    }
}

/// Where the driver sends its calls.
pub struct Driver<'a> {
    pub api: &'a FakeApiServer,
    /// HTTPS client that trusts kube-arbiter's certificate (also used for
    /// the fake API server's plain HTTP).
    pub extender: reqwest::Client,
    /// e.g. `https://localhost:PORT/scheduler`
    pub extender_url: String,
    pub topology: Topology,
}

/// Bound and assumed pods: pod name → node.
type Cache = Arc<Mutex<BTreeMap<String, String>>>;

enum Cycle {
    Placed(String),
    /// Rejected everywhere, and why.
    Unschedulable(Rejection),
}

enum Rejection {
    /// The extender rejected candidates the truth found feasible.
    Stranded(String),
    /// The candidates had no feasible node, other nodes did.
    WindowMiss,
    /// No node was feasible.
    NoNode,
}

/// What one run of the driver's own filter found, and where the next
/// cycle's walk starts (upstream `nextStartNodeIndex`).
struct Walk {
    order: Vec<String>,
    next_start: usize,
}

/// The cluster as the driver's filter sees it at the start of a cycle (its
/// PreFilter state): replicas per zone, pods per node.
struct Counts {
    per_zone: BTreeMap<String, usize>,
    min_zone: usize,
    per_node: HashMap<String, usize>,
}

impl Counts {
    fn of(topology: &Topology, cache: &Cache) -> Self {
        let placed = cache.lock().unwrap();
        let mut per_zone: BTreeMap<String, usize> =
            topology.zone_names().into_iter().map(|z| (z, 0)).collect();
        let mut per_node: HashMap<String, usize> = HashMap::new();
        for node in placed.values() {
            *per_zone.entry(zone_of(node).to_string()).or_default() += 1;
            *per_node.entry(node.clone()).or_default() += 1;
        }
        let min_zone = per_zone.values().copied().min().unwrap_or(0);
        Counts {
            per_zone,
            min_zone,
            per_node,
        }
    }

    /// NodeResourcesFit: room for one more replica.
    fn fits(&self, node: &str) -> bool {
        let pods = self.per_node.get(node).copied().unwrap_or(0);
        pods < NODE_PODS && (pods as u64 + 1) * POD_MILLICPU <= NODE_MILLICPU
    }

    /// PodTopologySpread (zone, maxSkew 1) and, with anti-affinity,
    /// InterPodAffinity (hostname) for one more replica on `node`.
    fn allows(&self, rules: Rules, node: &str) -> bool {
        self.per_zone[zone_of(node)] < self.min_zone + 1
            && (rules == Rules::SpreadOnly || !self.per_node.contains_key(node))
    }
}

impl Driver<'_> {
    /// Create the burst's pods, schedule them, and check the final state.
    pub async fn run(&self, burst: &Burst) -> Outcome {
        self.api
            .set_binding_latency(burst.api_latency_ms, burst.refuse_every, burst.seed);
        let pods: Vec<Value> = (0..burst.replicas).map(|i| burst.pod(i)).collect();
        for pod in &pods {
            self.api.apply("Pod", pod.clone());
        }
        let cache: Cache = Arc::default();
        let mut walk = Walk {
            order: self.topology.tree_order(),
            next_start: 0,
        };
        let mut rng = Rng(burst.seed);
        let mut out = Outcome::default();
        let mut retry = Vec::new();
        let mut bindings = JoinSet::new();
        let started = Instant::now();
        for (i, pod) in pods.iter().enumerate() {
            match self
                .cycle(burst, pod, &cache, &mut walk, &mut rng, &mut out)
                .await
            {
                Cycle::Placed(node) => {
                    cache.lock().unwrap().insert(name(pod), node.clone());
                    let delay = rng.between(burst.bind_call_delay_ms);
                    bindings.spawn(self.binding_cycle(burst.binder(), pod, node, delay, &cache, i));
                }
                Cycle::Unschedulable(why) => {
                    self.record_rejection(pod, why, &mut out);
                    retry.push(i);
                }
            }
        }
        out.cycles = pods.len();
        out.cycles_took = started.elapsed();
        while let Some(done) = bindings.join_next().await {
            let (i, ok, took) = done.unwrap();
            out.bind_calls.push(took);
            if !ok {
                out.bind_failures += 1;
                retry.push(i);
            }
        }
        out.took = started.elapsed();
        self.flush(burst, &pods, retry, &cache, &mut walk, &mut rng)
            .await;
        self.check_final_state(burst, &pods, &mut out);
        out
    }

    fn record_rejection(&self, pod: &Value, why: Rejection, out: &mut Outcome) {
        let message = match why {
            Rejection::Stranded(why) => {
                out.stranded.push(format!("{}: {why}", name(pod)));
                why
            }
            Rejection::WindowMiss => {
                out.window_misses += 1;
                "no feasible node among the nodes sent".to_string()
            }
            Rejection::NoNode => {
                out.truly_unschedulable += 1;
                "no feasible node".to_string()
            }
        };
        let meta = &pod["metadata"];
        self.api.handle().record_scheduling_failure(
            meta["namespace"].as_str().unwrap(),
            meta["name"].as_str().unwrap(),
            "Unschedulable",
            &message,
        );
    }

    /// The unschedulable pods, tried again one at a time with the binding
    /// awaited, until placed (the view may need a moment to catch up).
    async fn flush(
        &self,
        burst: &Burst,
        pods: &[Value],
        retry: Vec<usize>,
        cache: &Cache,
        walk: &mut Walk,
        rng: &mut Rng,
    ) {
        for i in retry {
            let pod = &pods[i];
            for _ in 0..50 {
                let mut ignored = Outcome::default();
                match self.cycle(burst, pod, cache, walk, rng, &mut ignored).await {
                    Cycle::Placed(node) => {
                        cache.lock().unwrap().insert(name(pod), node.clone());
                        let bound = self.binding_cycle(burst.binder(), pod, node, 0, cache, i);
                        if bound.await.1 {
                            break;
                        }
                    }
                    Cycle::Unschedulable(why) => self.record_rejection(pod, why, &mut ignored),
                }
                // kube-scheduler's backoff before it retries a pod,
                // emulated: part of the burst being driven, not a pause
                // that orders the test.
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }

    async fn cycle(
        &self,
        burst: &Burst,
        pod: &Value,
        cache: &Cache,
        walk: &mut Walk,
        rng: &mut Rng,
        out: &mut Outcome,
    ) -> Cycle {
        let own = Instant::now();
        let counts = Counts::of(&self.topology, cache);
        let candidates = own_filter(burst, &counts, walk);
        out.own_filter += own.elapsed();
        if candidates.is_empty() {
            // With enforcement the walk saw every node; without, every
            // node fits.
            return Cycle::Unschedulable(Rejection::NoNode);
        }
        if !burst.extender {
            return Cycle::Placed(pick(&candidates, &[], burst.tie_break, rng));
        }
        let asked = Instant::now();
        let filtered = self
            .call("filter", &json!({"Pod": pod, "NodeNames": candidates}))
            .await;
        out.extender_filter += asked.elapsed();
        let error = filtered["Error"].as_str().unwrap_or_default();
        assert!(error.is_empty(), "extender filter error: {error}");
        let feasible: Vec<String> = serde_json::from_value(filtered["NodeNames"].clone())
            .expect("filter answers NodeNames");
        if feasible.is_empty() {
            out.extender_latency.push(asked.elapsed());
            return Cycle::Unschedulable(self.classify(burst, cache, &candidates, &filtered));
        }
        if feasible.len() == 1 {
            // Upstream schedulePod: one feasible node is taken unscored.
            out.extender_latency.push(asked.elapsed());
            return Cycle::Placed(feasible[0].clone());
        }
        let scoring = Instant::now();
        let scored = self
            .call("prioritize", &json!({"Pod": pod, "NodeNames": feasible}))
            .await;
        out.prioritize += scoring.elapsed();
        out.extender_latency.push(asked.elapsed());
        let by_host: HashMap<&str, i64> = scored
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|h| Some((h["Host"].as_str()?, h["Score"].as_i64()?)))
            .collect();
        // A node the answer leaves out gains nothing, as in kube-scheduler's
        // prioritizeNodes (kube-arbiter answers [] when every score is 0).
        assert!(scored.is_array(), "prioritize answered {scored}");
        let scores: Vec<i64> = feasible
            .iter()
            .map(|n| by_host.get(n.as_str()).copied().unwrap_or(0))
            .collect();
        Cycle::Placed(pick(&feasible, &scores, burst.tie_break, rng))
    }

    /// Why the extender's rejection of every candidate happened, judged
    /// against the driver's truth (its rules over bound and assumed pods).
    fn classify(
        &self,
        burst: &Burst,
        cache: &Cache,
        candidates: &[String],
        filtered: &Value,
    ) -> Rejection {
        let counts = Counts::of(&self.topology, cache);
        let feasible = |n: &&String| counts.fits(n) && counts.allows(burst.rules, n);
        if candidates.iter().any(|n| feasible(&n)) {
            Rejection::Stranded(summary(filtered))
        } else if self.topology.node_names().iter().any(|n| feasible(&n)) {
            Rejection::WindowMiss
        } else {
            Rejection::NoNode
        }
    }

    /// The binding cycle: after `delay_ms` (Permit/PreBind), bind through
    /// the extender's verb or POST the Binding; on failure forget the
    /// assumed pod and record the failure on it, as kube-scheduler's
    /// handleBindingCycleError does. `(i, succeeded, how long)`.
    fn binding_cycle(
        &self,
        binding: Binding,
        pod: &Value,
        node: String,
        delay_ms: u64,
        cache: &Cache,
        i: usize,
    ) -> impl std::future::Future<Output = (usize, bool, Duration)> + Send + 'static {
        let meta = &pod["metadata"];
        let (ns, name, uid) = (
            meta["namespace"].as_str().unwrap().to_string(),
            meta["name"].as_str().unwrap().to_string(),
            meta["uid"].as_str().unwrap().to_string(),
        );
        let client = self.extender.clone();
        let bind_url = format!("{}/bind", self.extender_url);
        let api_url = format!(
            "http://{}/api/v1/namespaces/{ns}/pods/{name}/binding",
            self.api.addr
        );
        let api = self.api.handle();
        let cache = Arc::clone(cache);
        async move {
            let started = Instant::now();
            if delay_ms > 0 {
                tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            }
            let outcome = match binding {
                Binding::Verb => {
                    let args =
                        json!({"PodName": name, "PodNamespace": ns, "PodUID": uid, "Node": node});
                    let r: Value = client
                        .post(bind_url)
                        .json(&args)
                        .send()
                        .await
                        .unwrap()
                        .json()
                        .await
                        .unwrap();
                    match r["Error"].as_str() {
                        Some("") => Ok(()),
                        other => Err(other.unwrap_or("no Error field").to_string()),
                    }
                }
                Binding::ApiServer => {
                    let binding = json!({"apiVersion": "v1", "kind": "Binding",
                        "metadata": {"name": name, "namespace": ns, "uid": uid},
                        "target": {"apiVersion": "v1", "kind": "Node", "name": node}});
                    let r = client.post(api_url).json(&binding).send().await.unwrap();
                    if r.status().is_success() {
                        Ok(())
                    } else {
                        Err(r.text().await.unwrap_or_default())
                    }
                }
            };
            let took = started.elapsed();
            if let Err(e) = &outcome {
                cache.lock().unwrap().remove(&name);
                api.record_scheduling_failure(&ns, &name, "SchedulerError", e);
            }
            (i, outcome.is_ok(), took)
        }
    }

    async fn call(&self, verb: &str, body: &Value) -> Value {
        let r = self
            .extender
            .post(format!("{}/{verb}", self.extender_url))
            .json(body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("extender {verb}: {e}"));
        assert_eq!(r.status(), 200, "extender {verb}");
        r.json().await.unwrap()
    }

    /// Every pod on a node, zone skew within 1, and (with anti-affinity)
    /// no two replicas on one node — read from the API server.
    fn check_final_state(&self, burst: &Burst, pods: &[Value], out: &mut Outcome) {
        let mut per_zone: BTreeMap<String, usize> = self
            .topology
            .zone_names()
            .into_iter()
            .map(|z| (z, 0))
            .collect();
        let mut per_node: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for pod in pods {
            let name = name(pod);
            let stored = self.api.get("Pod", &burst.namespace, &name).unwrap();
            let node = stored["spec"]["nodeName"].as_str().unwrap_or_default();
            if node.is_empty() {
                out.violations.push(format!("{name} has no node"));
                continue;
            }
            out.placed += 1;
            *per_zone.entry(zone_of(node).to_string()).or_default() += 1;
            per_node.entry(node.to_string()).or_default().push(name);
        }
        let (min, max) = (
            per_zone.values().min().copied().unwrap_or(0),
            per_zone.values().max().copied().unwrap_or(0),
        );
        if max > min + 1 {
            out.violations
                .push(format!("zone skew {} > maxSkew 1: {per_zone:?}", max - min));
        }
        if burst.rules == Rules::SpreadAndAntiAffinity {
            for (node, names) in per_node.iter().filter(|(_, p)| p.len() > 1) {
                out.violations
                    .push(format!("anti-affinity broken on {node}: {names:?}"));
            }
        }
    }
}

/// The driver's own filter for one cycle: walk the nodes from
/// `walk.next_start` until `numFeasibleNodesToFind` pass (resource fit,
/// and with `enforce` the burst's rules), then move the start past every
/// node it looked at, as upstream findNodesThatFitPod does.
fn own_filter(burst: &Burst, counts: &Counts, walk: &mut Walk) -> Vec<String> {
    let all = walk.order.len();
    let wanted = num_feasible_nodes_to_find(all);
    let mut feasible = Vec::with_capacity(wanted);
    let mut looked = 0;
    for k in 0..all {
        let node = &walk.order[(walk.next_start + k) % all];
        looked += 1;
        if counts.fits(node) && (!burst.enforce || counts.allows(burst.rules, node)) {
            feasible.push(node.clone());
            if feasible.len() == wanted {
                break;
            }
        }
    }
    if all > 0 {
        walk.next_start = (walk.next_start + looked) % all;
    }
    feasible
}

fn name(pod: &Value) -> String {
    pod["metadata"]["name"].as_str().unwrap().to_string()
}

/// The best-scoring node (all equal when `scores` is empty).
fn pick(nodes: &[String], scores: &[i64], tie: TieBreak, rng: &mut Rng) -> String {
    let score = |i: usize| scores.get(i).copied().unwrap_or(0);
    let best = (0..nodes.len()).map(score).max().unwrap_or(0);
    let ties: Vec<usize> = (0..nodes.len()).filter(|&i| score(i) == best).collect();
    let chosen = match tie {
        TieBreak::First => ties[0],
        TieBreak::Random => ties[rng.below(ties.len() as u64) as usize],
    };
    nodes[chosen].clone()
}

/// The filter answer's failure reasons, counted.
fn summary(filtered: &Value) -> String {
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    for map in ["FailedNodes", "FailedAndUnresolvableNodes"] {
        for reason in filtered[map]
            .as_object()
            .into_iter()
            .flat_map(|m| m.values())
        {
            *reasons
                .entry(reason.as_str().unwrap_or_default().to_string())
                .or_default() += 1;
        }
    }
    reasons
        .iter()
        .map(|(r, n)| format!("{n} node(s): {r}"))
        .collect::<Vec<_>>()
        .join("; ")
}
