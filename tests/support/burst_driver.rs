//! A driver that schedules a burst of replicas the way kube-scheduler does
//! with an extender, against the built kube-arbiter in live mode and the
//! in-process fake API server:
//!
//! - one scheduling cycle at a time: the driver's own feasibility check
//!   (with `enforce`, zone spread and hostname anti-affinity counted over
//!   its own cache of bound AND assumed pods, like the in-tree
//!   PodTopologySpread / InterPodAffinity plugins; without, every node
//!   passes), then the extender's `filter` (NodeNames mode) and
//!   `prioritize` over HTTPS, then the best node (sum of scores; ties
//!   broken by node order or at random) is assumed in the cache;
//! - the binding completes asynchronously after a random delay, through
//!   the extender's `bind` verb or as a Binding POSTed to the fake API
//!   server (whose watch then reports it), while the next cycle starts;
//! - a pod the extender rejects everywhere goes to an "unschedulable"
//!   list and is tried again once the burst's bindings are done (what
//!   kube-scheduler's periodic flush does, minutes later).
//!
//! The driver's cache is the truth: it is the only scheduler, so whether
//! a pod had a feasible node is decided against it.
#![allow(dead_code)] // each test binary uses its own subset

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::task::JoinSet;

use crate::fake_apiserver::FakeApiServer;

pub const ZONE: &str = "topology.kubernetes.io/zone";
pub const HOST: &str = "kubernetes.io/hostname";
const APP: &str = "web";

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

    pub fn nodes(&self) -> Vec<Value> {
        self.node_names()
            .into_iter()
            .map(|name| {
                json!({"metadata": {"name": name, "uid": format!("uid-{name}"),
                       "labels": {HOST: name, ZONE: zone_of(&name)}},
                       "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "500"}}})
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
    /// Binding delay, uniformly random in this range (ms, inclusive).
    pub bind_delay_ms: (u64, u64),
}

impl Burst {
    pub fn pod(&self, i: usize) -> Value {
        let name = format!("{APP}-{i:03}");
        let selector = json!({"matchLabels": {"app": APP}});
        let mut spec = json!({
            "schedulerName": "default-scheduler",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "10m"}}}],
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector}],
        });
        if self.rules == Rules::SpreadAndAntiAffinity {
            spec["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": selector, "topologyKey": HOST}]}});
        }
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": self.namespace,
                            "uid": format!("uid-{}-{name}", self.namespace), "labels": {"app": APP}},
               "spec": spec, "status": {"phase": "Pending"}})
    }
}

/// What one burst did.
#[derive(Debug, Default, Clone)]
pub struct Outcome {
    /// Pods on a node at the end (in the API server).
    pub placed: usize,
    /// Pods the extender rejected on every candidate while the driver's
    /// truth had a feasible node: "stranded", the pod would wait for
    /// kube-scheduler's flush. One entry per rejection, with the reasons.
    pub stranded: Vec<String>,
    /// Rejections where no node was feasible at all (none expected here).
    pub truly_unschedulable: usize,
    pub bind_failures: usize,
    /// Broken rules in the final state (skew, two replicas on a node,
    /// a pod left without a node).
    pub violations: Vec<String>,
    /// Scheduling cycles of the first pass, and how long they took from
    /// the first cycle's start to the last one's end.
    pub cycles: usize,
    pub cycles_took: Duration,
    /// Per cycle: the extender's filter + prioritize round trips.
    pub extender_latency: Vec<Duration>,
}

impl Outcome {
    pub fn pods_per_second(&self) -> f64 {
        self.cycles as f64 / self.cycles_took.as_secs_f64().max(1e-9)
    }
}

/// Where the driver sends its calls.
pub struct Driver<'a> {
    pub api: &'a FakeApiServer,
    /// HTTPS client that trusts kube-arbiter's certificate.
    pub extender: reqwest::Client,
    /// e.g. `https://localhost:PORT/scheduler`
    pub extender_url: String,
    pub topology: Topology,
}

/// Bound and assumed pods: pod name → node.
type Cache = Arc<Mutex<BTreeMap<String, String>>>;

enum Cycle {
    Placed(String),
    /// Rejected everywhere; whether the truth had a node, and why.
    Unschedulable {
        truth_had_node: bool,
        why: String,
    },
}

impl Driver<'_> {
    /// Create the burst's pods, schedule them, and check the final state.
    pub async fn run(&self, burst: &Burst) -> Outcome {
        let pods: Vec<Value> = (0..burst.replicas).map(|i| burst.pod(i)).collect();
        for pod in &pods {
            self.api.apply("Pod", pod.clone());
        }
        let cache: Cache = Arc::default();
        let mut rng = Rng(burst.seed);
        let mut out = Outcome::default();
        let mut retry = Vec::new();
        let mut bindings = JoinSet::new();
        let started = Instant::now();
        for (i, pod) in pods.iter().enumerate() {
            match self.cycle(burst, pod, &cache, &mut rng, &mut out).await {
                Cycle::Placed(node) => {
                    cache.lock().unwrap().insert(name(pod), node.clone());
                    let delay = rng.between(burst.bind_delay_ms);
                    bindings.spawn(self.bind_later(burst.binding, pod, node, delay, i));
                }
                Cycle::Unschedulable {
                    truth_had_node,
                    why,
                } => {
                    if truth_had_node {
                        out.stranded.push(format!("{}: {why}", name(pod)));
                    } else {
                        out.truly_unschedulable += 1;
                    }
                    retry.push(i);
                }
            }
        }
        out.cycles = pods.len();
        out.cycles_took = started.elapsed();
        while let Some(done) = bindings.join_next().await {
            let (i, ok) = done.unwrap();
            if !ok {
                out.bind_failures += 1;
                cache.lock().unwrap().remove(&name(&pods[i]));
                retry.push(i);
            }
        }
        self.flush(burst, &pods, retry, &cache, &mut rng).await;
        self.check_final_state(burst, &pods, &mut out);
        out
    }

    /// The unschedulable pods, tried again one at a time with the binding
    /// awaited, until placed (the view may need a moment to catch up).
    async fn flush(
        &self,
        burst: &Burst,
        pods: &[Value],
        retry: Vec<usize>,
        cache: &Cache,
        rng: &mut Rng,
    ) {
        for i in retry {
            let pod = &pods[i];
            for _ in 0..50 {
                let mut ignored = Outcome::default();
                if let Cycle::Placed(node) = self.cycle(burst, pod, cache, rng, &mut ignored).await
                {
                    cache.lock().unwrap().insert(name(pod), node.clone());
                    let (_, ok) = self.bind_later(burst.binding, pod, node, 0, i).await;
                    if ok {
                        break;
                    }
                    cache.lock().unwrap().remove(&name(pod));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }

    async fn cycle(
        &self,
        burst: &Burst,
        pod: &Value,
        cache: &Cache,
        rng: &mut Rng,
        out: &mut Outcome,
    ) -> Cycle {
        let truth = self.feasible(burst, cache);
        let candidates = if burst.enforce {
            truth.clone()
        } else {
            self.topology.node_names()
        };
        if candidates.is_empty() {
            return Cycle::Unschedulable {
                truth_had_node: !truth.is_empty(),
                why: "driver: no node passes its own filters".into(),
            };
        }
        if !burst.extender {
            return Cycle::Placed(pick(&candidates, &[], burst.tie_break, rng));
        }
        let asked = Instant::now();
        let filtered = self
            .call("filter", &json!({"Pod": pod, "NodeNames": candidates}))
            .await;
        let error = filtered["Error"].as_str().unwrap_or_default();
        assert!(error.is_empty(), "extender filter error: {error}");
        let feasible: Vec<String> = serde_json::from_value(filtered["NodeNames"].clone())
            .expect("filter answers NodeNames");
        if feasible.is_empty() {
            out.extender_latency.push(asked.elapsed());
            return Cycle::Unschedulable {
                truth_had_node: !truth.is_empty(),
                why: summary(&filtered),
            };
        }
        let scored = self
            .call("prioritize", &json!({"Pod": pod, "NodeNames": feasible}))
            .await;
        out.extender_latency.push(asked.elapsed());
        let scores: Vec<i64> = feasible
            .iter()
            .map(|n| {
                scored
                    .as_array()
                    .and_then(|a| a.iter().find(|h| h["Host"] == n.as_str()))
                    .and_then(|h| h["Score"].as_i64())
                    .unwrap_or_else(|| panic!("no score for {n} in {scored}"))
            })
            .collect();
        Cycle::Placed(pick(&feasible, &scores, burst.tie_break, rng))
    }

    /// Nodes that pass the burst's rules given every bound and assumed pod.
    fn feasible(&self, burst: &Burst, cache: &Cache) -> Vec<String> {
        let placed = cache.lock().unwrap().clone();
        let mut per_zone: BTreeMap<String, usize> = self
            .topology
            .zone_names()
            .into_iter()
            .map(|z| (z, 0))
            .collect();
        for node in placed.values() {
            *per_zone.entry(zone_of(node).to_string()).or_default() += 1;
        }
        let min = per_zone.values().copied().min().unwrap_or(0);
        let taken: std::collections::BTreeSet<&String> = placed.values().collect();
        self.topology
            .node_names()
            .into_iter()
            .filter(|n| per_zone[zone_of(n)] < min + 1)
            .filter(|n| burst.rules == Rules::SpreadOnly || !taken.contains(n))
            .collect()
    }

    /// Sleep `delay_ms`, then bind; `(i, succeeded)`.
    fn bind_later(
        &self,
        binding: Binding,
        pod: &Value,
        node: String,
        delay_ms: u64,
        i: usize,
    ) -> impl std::future::Future<Output = (usize, bool)> + Send + 'static {
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
        async move {
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            let ok = match binding {
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
                    r["Error"].as_str() == Some("")
                }
                Binding::ApiServer => {
                    let binding = json!({"apiVersion": "v1", "kind": "Binding",
                        "metadata": {"name": name, "namespace": ns, "uid": uid},
                        "target": {"apiVersion": "v1", "kind": "Node", "name": node}});
                    let r = reqwest::Client::new()
                        .post(api_url)
                        .json(&binding)
                        .send()
                        .await
                        .unwrap();
                    r.status().is_success()
                }
            };
            (i, ok)
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

/// splitmix64: reproducible random choices from a seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    pub fn between(&mut self, (lo, hi): (u64, u64)) -> u64 {
        lo + self.below(hi - lo + 1)
    }
}
