//! Deterministic synthetic clusters for benchmarks and load tests.
//!
//! [`generate_json`] writes what `kubectl get nodes,pods,pdb,priorityclasses,
//! namespaces,services,replicasets -A -o json` would print for a cluster of
//! the requested size: a `kind: List` of realistic objects. Nodes carry the
//! fields the policies never read (managedFields, images, annotations), so
//! parsing them costs what it costs on a real dump; pods carry them only with
//! [`SynthParams::verbose`]. 5,000 nodes and 150,000 pods come to about
//! 250 MB (verbose: about 520 MB). The same parameters and seed always give
//! the same bytes.
//!
//! The cluster is consistent: every bound pod fits its node's allocatable
//! resources, tolerates its node's taints, and pods with required
//! anti-affinity on the hostname never share a node. Pods that found no
//! room are left Pending without a node.

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::cluster::ClusterObjects;

pub mod flags;

/// The size and shape of a synthetic cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SynthParams {
    pub nodes: usize,
    /// Pods in Deployments; a few of them end up Pending or Succeeded.
    pub pods: usize,
    pub zones: usize,
    /// User namespaces, besides `default` and `kube-system`.
    pub namespaces: usize,
    pub seed: u64,
    /// Also write the pod fields kubectl prints that no policy reads
    /// (managedFields, more annotations, defaulted spec fields, IPs, all five
    /// conditions, container states): about 3.3 KB per pod instead of 1.5 KB.
    /// Nodes always carry their full detail.
    pub verbose: bool,
    /// Replicas of every Deployment (the last one takes what is left).
    /// `None`: 10 to 300 at random, anti-affinity apps at most a quarter of
    /// the nodes (and 60), GPU apps at most 12.
    pub app_size: Option<usize>,
    /// Which scheduling constraints the Deployments carry.
    pub mix: PlacementMix,
    /// Every `pdb_every`-th Deployment has a PodDisruptionBudget; 0: none.
    pub pdb_every: usize,
    /// Images in each node's status (the bulk of a node object a policy
    /// never reads). `None`: 6 to 12 at random.
    pub images_per_node: Option<usize>,
}

/// Percent of the Deployments with each kind of scheduling constraint; the
/// rest have none. Deployments take the kinds in a fixed rotation (see
/// [`PlacementMix::placement`]), so even a small cluster has every kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlacementMix {
    /// Hard zone spread (DoNotSchedule) plus soft hostname spread.
    pub spread: u8,
    /// Required anti-affinity to the own app on the hostname.
    pub anti_affinity: u8,
    /// Preferred affinity to another app of the namespace, by zone.
    pub prefer_affinity: u8,
    /// Required node affinity to one zone, preferred SSD nodes.
    pub node_affinity: u8,
    /// Tolerates the GPU taint and requests a GPU.
    pub gpu: u8,
}

impl PlacementMix {
    /// The bundled shape's mix: 30 % spread, 10 % each anti-affinity,
    /// preferred affinity and node affinity, 5 % GPU.
    pub const BUNDLED: Self = Self {
        spread: 30,
        anti_affinity: 10,
        prefer_affinity: 10,
        node_affinity: 10,
        gpu: 5,
    };

    /// The sum of the shares, at most 100 for a valid mix.
    fn total(&self) -> u32 {
        [
            self.spread,
            self.anti_affinity,
            self.prefer_affinity,
            self.node_affinity,
            self.gpu,
        ]
        .iter()
        .map(|&s| u32::from(s))
        .sum()
    }

    /// The kind of Deployment `index`. Each run of 20 Deployments gets
    /// the shares rounded down to 5 % in order (spread first, plain
    /// last), and five such runs make up the remaining whole percents, so
    /// any 100 consecutive Deployments match the mix exactly.
    fn placement(&self, index: usize) -> Placement {
        let point = (index % 20) * 5 + (index / 20) % 5;
        let mut bound = 0;
        for (share, placement) in [
            (self.spread, Placement::Spread),
            (self.anti_affinity, Placement::AntiAffinity),
            (self.prefer_affinity, Placement::PreferAffinity),
            (self.node_affinity, Placement::NodeAffinity),
            (self.gpu, Placement::Gpu),
        ] {
            bound += usize::from(share);
            if point < bound {
                return placement;
            }
        }
        Placement::Plain
    }
}

impl SynthParams {
    /// The bundled shape: `nodes` nodes over 3 zones, `pods` pods over 50
    /// namespaces in Deployments of 10 to 300 replicas, [`PlacementMix::BUNDLED`],
    /// a PDB on every second Deployment, 6 to 12 images per node.
    pub fn new(nodes: usize, pods: usize) -> Self {
        Self {
            nodes,
            pods,
            zones: 3,
            namespaces: 50,
            seed: 0x6b75_6265_6172_6269,
            verbose: false,
            app_size: None,
            mix: PlacementMix::BUNDLED,
            pdb_every: 2,
            images_per_node: None,
        }
    }

    /// The second shape, the load scripts' other cluster: nodes with 20
    /// images over 10 zones; Deployments of 100 replicas over 50
    /// namespaces, 30 % with a hard zone spread, 10 % with required
    /// hostname anti-affinity, the rest unconstrained; a PDB on every fifth
    /// Deployment.
    pub fn second_shape(nodes: usize, pods: usize) -> Self {
        Self {
            zones: 10,
            app_size: Some(100),
            mix: PlacementMix {
                spread: 30,
                anti_affinity: 10,
                prefer_affinity: 0,
                node_affinity: 0,
                gpu: 0,
            },
            pdb_every: 5,
            images_per_node: Some(20),
            ..Self::new(nodes, pods)
        }
    }
}

const REGION: &str = "eu-west-1";
/// 2026-09-01T00:00:00Z: every timestamp is an offset from here.
const EPOCH_SECONDS: i64 = 1_788_220_800;
const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

/// The four example PriorityClasses: name, value, globalDefault, preemptionPolicy.
const PRIORITY_CLASSES: [(&str, i32, bool, &str); 4] = [
    ("high-priority", 1_000_000, false, "PreemptLowerPriority"),
    ("default-priority", 1_000, true, "PreemptLowerPriority"),
    ("batch-low", 100, false, "PreemptLowerPriority"),
    ("low-priority", -10, false, "Never"),
];

/// Instance types: name, vCPUs, memory GiB, GPUs.
const INSTANCE_TYPES: [(&str, u64, u64, u64); 6] = [
    ("m6i.2xlarge", 8, 32, 0),
    ("m6i.4xlarge", 16, 64, 0),
    ("c6i.4xlarge", 16, 32, 0),
    ("r6i.2xlarge", 8, 64, 0),
    ("m6i.8xlarge", 32, 128, 0),
    ("g5.4xlarge", 16, 64, 1),
];

const APP_WORDS: [&str; 16] = [
    "web", "api", "checkout", "cart", "search", "catalog", "auth", "billing", "ledger", "orders",
    "worker", "gateway", "render", "notify", "ingest", "report",
];
const TEAM_WORDS: [&str; 10] = [
    "shop", "payments", "batch", "growth", "platform", "data", "identity", "media", "risk", "ops",
];
const TIERS: [&str; 3] = ["frontend", "backend", "worker"];
const ENVS: [&str; 3] = ["prod", "staging", "dev"];
/// The alphabet Kubernetes uses for generated name suffixes and hashes.
const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// SplitMix64: tiny, fast, and good enough for synthetic data.
struct Rng(u64);

impl Rng {
    /// An independent stream per (seed, purpose, index), so each object's
    /// cosmetic details do not depend on the order objects are written in.
    fn stream(seed: u64, purpose: u64, index: u64) -> Self {
        let mut r = Rng(seed ^ purpose.wrapping_mul(0xA076_1D64_78BD_642F));
        r.0 ^= r.next_u64() ^ index.wrapping_mul(0xE703_7ED1_A0B4_28DB);
        r
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0).
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    fn percent(&mut self, p: u64) -> bool {
        self.below(100) < p
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }

    fn uid(&mut self) -> String {
        let a = self.next_u64();
        let b = self.next_u64();
        format!(
            "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            0x8000 | (b >> 48 & 0x3fff),
            b & 0xffff_ffff_ffff
        )
    }

    fn suffix(&mut self, len: usize) -> String {
        (0..len)
            .map(|_| char::from(self.pick(NAME_ALPHABET)))
            .collect()
    }

    fn digest(&mut self) -> String {
        let mut s = String::with_capacity(71);
        s.push_str("sha256:");
        for _ in 0..4 {
            let _ = write!(s, "{:016x}", self.next_u64());
        }
        s
    }
}

/// A stable number for a name, to seed its object's stream.
fn fnv1a(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn timestamp(offset_seconds: u64) -> String {
    let secs = EPOCH_SECONDS.saturating_add(offset_seconds as i64);
    jiff::Timestamp::from_second(secs)
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
        .to_string()
}

fn zone_name(zone: usize) -> String {
    match u8::try_from(zone) {
        Ok(z) if z < 26 => format!("{REGION}{}", char::from(b'a' + z)),
        _ => format!("{REGION}-z{zone}"),
    }
}

fn namespace_name(ns: usize) -> String {
    format!("{}-{ns:02}", TEAM_WORDS[ns % TEAM_WORDS.len()])
}

/// What placement needs to know about a node.
struct NodeShape {
    name: String,
    /// Index into [`INSTANCE_TYPES`].
    instance_type: usize,
    zone: usize,
    free_cpu_m: u64,
    free_mem: u64,
    free_pods: u64,
    /// Only pods tolerating `dedicated=gpu:NoSchedule` may land here.
    gpu: bool,
    /// A NoExecute maintenance taint: nothing lands here.
    drained: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Placement {
    Plain,
    /// Zone spread (DoNotSchedule) plus hostname spread (ScheduleAnyway).
    Spread,
    /// Required anti-affinity on the hostname: one replica per node.
    AntiAffinity,
    /// Preferred affinity to another app of the namespace, by zone.
    PreferAffinity,
    /// Required node affinity to one zone, preferred SSD nodes.
    NodeAffinity,
    /// Tolerates and requests GPUs.
    Gpu,
}

struct Container {
    name: &'static str,
    image: String,
    cpu_m: u64,
    mem_mi: u64,
}

struct Deployment {
    index: usize,
    namespace: usize,
    app: String,
    hash: String,
    uid: String,
    rs_uid: String,
    class: usize,
    tier: &'static str,
    version: u64,
    containers: Vec<Container>,
    placement: Placement,
    /// The app this one prefers to be near (PreferAffinity).
    near_app: String,
    zone: usize,
    /// One entry per replica: its node, or `None` when Pending.
    nodes: Vec<Option<usize>>,
    /// Replica index of the one pod that already Succeeded, if any.
    succeeded: Option<usize>,
    /// Replicas whose Ready condition is False.
    unready: Vec<bool>,
    created: u64,
}

impl Deployment {
    fn cpu_m(&self) -> u64 {
        self.containers.iter().map(|c| c.cpu_m).sum()
    }
    fn mem(&self) -> u64 {
        self.containers.iter().map(|c| c.mem_mi * MIB).sum()
    }
    fn rs_name(&self) -> String {
        format!("{}-{}", self.app, self.hash)
    }
    fn healthy(&self) -> usize {
        self.nodes
            .iter()
            .zip(&self.unready)
            .enumerate()
            .filter(|(i, (n, unready))| n.is_some() && !**unready && self.succeeded != Some(*i))
            .count()
    }
}

/// Write the cluster as one kubectl-style `kind: List` JSON document.
pub fn generate_json(p: &SynthParams) -> String {
    let zones = p.zones.max(1);
    let mut shapes = plan_nodes(p, zones);
    let deployments = plan_deployments(p, zones, &mut shapes);

    // Measured: about 1.5 KB (verbose 3.3 KB) per pod, 5.6 KB per node.
    let per_pod = if p.verbose { 3_300 } else { 1_500 };
    let mut out = String::with_capacity(p.pods * per_pod + p.nodes * 5_600 + 4_096);
    out.push_str(r#"{"apiVersion":"v1","kind":"List","metadata":{"resourceVersion":""},"items":["#);
    let mut first = true;
    let mut push = |v: Value| {
        if !first {
            out.push(',');
        }
        first = false;
        out.push_str(&v.to_string());
    };

    for (i, shape) in shapes.iter().enumerate() {
        push(node_json(p, i, shape, zones));
    }
    for d in &deployments {
        for replica in 0..d.nodes.len() {
            push(pod_json(p, zones, d, replica, &shapes));
        }
    }
    let with_pdb = |d: &&Deployment| p.pdb_every > 0 && d.index.is_multiple_of(p.pdb_every);
    for d in deployments.iter().filter(with_pdb) {
        push(pdb_json(p.seed, d));
    }
    for (name, value, global_default, policy) in PRIORITY_CLASSES {
        push(json!({
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name, "uid": Rng::stream(p.seed, 7, value as u64).uid(),
                         "resourceVersion": "310", "creationTimestamp": timestamp(3600)},
            "value": value, "globalDefault": global_default, "preemptionPolicy": policy,
            "description": format!("{name} workloads"),
        }));
    }
    for ns in namespace_names(p.namespaces.max(1)) {
        push(namespace_json(p.seed, &ns));
    }
    for d in &deployments {
        push(service_json(p.seed, d));
    }
    for d in &deployments {
        push(replica_set_json(d));
    }
    out.push_str("]}");
    out
}

/// The generated cluster decoded into the model, as a source would hand it
/// to [`crate::cluster::Snapshot::build`].
pub fn generate_objects(p: &SynthParams) -> Result<ClusterObjects, serde_json::Error> {
    #[derive(serde::Deserialize)]
    struct Items {
        items: Vec<Box<serde_json::value::RawValue>>,
    }
    #[derive(serde::Deserialize)]
    struct Kind<'a> {
        kind: &'a str,
    }
    let text = generate_json(p);
    let list: Items = serde_json::from_str(&text)?;
    let mut objects = ClusterObjects::default();
    for raw in list.items {
        let raw = raw.get();
        match serde_json::from_str::<Kind>(raw)?.kind {
            "Node" => objects.nodes.push(serde_json::from_str(raw)?),
            "Pod" => objects.pods.push(serde_json::from_str(raw)?),
            "Namespace" => objects.namespaces.push(serde_json::from_str(raw)?),
            "PodDisruptionBudget" => objects.pdbs.push(serde_json::from_str(raw)?),
            "PriorityClass" => objects.priority_classes.push(serde_json::from_str(raw)?),
            "Service" => objects.services.push(serde_json::from_str(raw)?),
            "ReplicaSet" => objects.replica_sets.push(serde_json::from_str(raw)?),
            _ => {}
        }
    }
    Ok(objects)
}

fn namespace_names(count: usize) -> Vec<String> {
    let mut names = vec!["default".to_string(), "kube-system".to_string()];
    names.extend((0..count).map(namespace_name));
    names
}

fn plan_nodes(p: &SynthParams, zones: usize) -> Vec<NodeShape> {
    (0..p.nodes)
        .map(|i| {
            let mut r = Rng::stream(p.seed, 1, i as u64);
            // One node in 50 has GPUs; the rest get a general-purpose type.
            let instance_type = if r.percent(2) { 5 } else { r.below(5) as usize };
            let ty = INSTANCE_TYPES[instance_type];
            let (cpu_m, mem) = allocatable(ty.1, ty.2);
            NodeShape {
                name: node_name(i, i % zones),
                instance_type,
                zone: i % zones,
                free_cpu_m: cpu_m,
                free_mem: mem,
                free_pods: 110,
                gpu: ty.3 > 0,
                drained: r.percent(1),
            }
        })
        .collect()
}

fn node_name(i: usize, zone: usize) -> String {
    format!(
        "ip-10-{}-{}-{}.{REGION}.compute.internal",
        zone * 32 + i / 65_536,
        (i / 256) % 256,
        i % 256
    )
}

/// Allocatable CPU (millicores) and memory (bytes) after system reservations.
fn allocatable(cpus: u64, mem_gib: u64) -> (u64, u64) {
    (
        cpus * 1000 - 90 - cpus * 10,
        mem_gib * GIB - GIB - 100 * MIB,
    )
}

fn plan_deployments(p: &SynthParams, zones: usize, shapes: &mut [NodeShape]) -> Vec<Deployment> {
    let mut deployments = Vec::new();
    let mut remaining = p.pods;
    let mut r = Rng::stream(p.seed, 2, 0);
    while remaining > 0 {
        let index = deployments.len();
        let namespace = r.below(p.namespaces.max(1) as u64) as usize;
        let placement = p.mix.placement(index);
        let replicas = match p.app_size {
            Some(size) => size.max(1),
            None => {
                // One replica per node caps anti-affinity deployments well
                // below the node count.
                let max = match placement {
                    Placement::AntiAffinity => (p.nodes / 4).clamp(1, 60) as u64,
                    Placement::Gpu => 12,
                    _ => 300,
                };
                r.range(10.min(max), max) as usize
            }
        }
        .min(remaining);
        remaining -= replicas;
        let app = format!("{}-{index}", r.pick(&APP_WORDS));
        // Most pods run one container; some add a proxy or a log shipper.
        let container_count = match r.below(10) {
            0..=5 => 1,
            6..=8 => 2,
            _ => 3,
        };
        let containers = (0..container_count)
            .map(|c| {
                let name = ["app", "proxy", "log-shipper"][c as usize];
                Container {
                    name,
                    image: format!(
                        "registry.example.com/{}/{name}:1.{}.{}",
                        app,
                        r.below(30),
                        r.below(10)
                    ),
                    cpu_m: r.pick(&[50, 100, 100, 200, 250, 500]) / (c + 1),
                    mem_mi: r.pick(&[64, 128, 256, 256, 512, 1024]) / (c + 1),
                }
            })
            .collect();
        let class = match r.below(10) {
            0..=1 => 0,
            2..=7 => 1,
            8 => 2,
            _ => 3,
        };
        let near_app = deployments
            .iter()
            .rev()
            .find(|d: &&Deployment| d.namespace == namespace)
            .map_or_else(|| app.clone(), |d| d.app.clone());
        let mut d = Deployment {
            index,
            namespace,
            hash: r.suffix(10),
            uid: r.uid(),
            rs_uid: r.uid(),
            class,
            tier: r.pick(&TIERS),
            version: r.range(1, 40),
            containers,
            placement,
            near_app,
            zone: r.below(zones as u64) as usize,
            nodes: Vec::with_capacity(replicas),
            succeeded: None,
            unready: Vec::with_capacity(replicas),
            created: r.range(86_400, 40 * 86_400),
            app,
        };
        place(&mut d, replicas, zones, shapes, &mut r);
        deployments.push(d);
    }
    deployments
}

/// Bind each replica to a random node with room that its constraints allow,
/// probing a bounded number of nodes; the rest stay Pending.
fn place(d: &mut Deployment, replicas: usize, zones: usize, shapes: &mut [NodeShape], r: &mut Rng) {
    let (cpu, mem) = (d.cpu_m(), d.mem());
    let mut used = Vec::new();
    for replica in 0..replicas {
        let mut chosen = None;
        // Node i is in zone i % zones. Zone-spread replicas go round-robin
        // over the zones, zone-bound ones to their zone, others anywhere.
        let zone = match d.placement {
            Placement::Spread => Some(replica % zones),
            Placement::NodeAffinity => Some(d.zone),
            _ => None,
        };
        let in_zone = |z: usize| shapes.len().saturating_sub(z).div_ceil(zones);
        // About 1 % of replicas are Pending on purpose (just created).
        if zone.map_or(!shapes.is_empty(), |z| in_zone(z) > 0) && !r.percent(1) {
            for _ in 0..32 {
                let n = match zone {
                    Some(z) => r.below(in_zone(z) as u64) as usize * zones + z,
                    None => r.below(shapes.len() as u64) as usize,
                };
                let s = &shapes[n];
                let allowed = !s.drained
                    && s.gpu == (d.placement == Placement::Gpu)
                    && (d.placement != Placement::AntiAffinity || !used.contains(&n));
                if allowed && s.free_cpu_m >= cpu && s.free_mem >= mem && s.free_pods > 0 {
                    chosen = Some(n);
                    break;
                }
            }
        }
        if let Some(n) = chosen {
            let s = &mut shapes[n];
            s.free_cpu_m -= cpu;
            s.free_mem -= mem;
            s.free_pods -= 1;
            used.push(n);
        }
        d.nodes.push(chosen);
        d.unready.push(chosen.is_some() && r.percent(2));
    }
    // A finished pod of the previous rollout, kept until garbage collection.
    if d.index % 7 == 3 {
        d.succeeded = d.nodes.iter().position(Option::is_some);
    }
}

fn node_json(p: &SynthParams, i: usize, s: &NodeShape, zones: usize) -> Value {
    let mut r = Rng::stream(p.seed, 3, i as u64);
    let ty = INSTANCE_TYPES[s.instance_type];
    let (cpu_m, mem) = allocatable(ty.1, ty.2);
    let zone = zone_name(s.zone % zones);
    let created = timestamp(r.below(20 * 86_400));
    let heartbeat = timestamp(60 * 86_400 + r.below(60));
    let pool = format!("{}-{}", ty.0.replace('.', "-"), zone);
    let mut labels = json!({
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/instance-type": ty.0,
        "beta.kubernetes.io/os": "linux",
        "failure-domain.beta.kubernetes.io/region": REGION,
        "failure-domain.beta.kubernetes.io/zone": zone,
        "k8s.io/cloud-provider-aws": "3f1c9e0a5b7d2e4f6a8c0b1d3e5f7a9c",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": s.name,
        "kubernetes.io/os": "linux",
        "node-role.kubernetes.io/worker": "",
        "node.kubernetes.io/instance-type": ty.0,
        "node.kubernetes.io/lifecycle": if r.percent(20) { "spot" } else { "normal" },
        "nodepool": pool,
        "topology.ebs.csi.aws.com/zone": zone,
        "topology.k8s.aws/zone-id": format!("euw1-az{}", s.zone % zones + 1),
        "topology.kubernetes.io/region": REGION,
        "topology.kubernetes.io/zone": zone,
        "vpc.amazonaws.com/has-trunk-attached": "true",
    });
    if r.percent(30) {
        labels["disktype"] = json!("ssd");
    }
    if r.percent(50) {
        labels["team"] = json!(r.pick(&TEAM_WORDS));
    }
    let mut taints = Vec::new();
    if s.gpu {
        taints.push(json!({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}));
    }
    if s.drained {
        taints.push(
            json!({"key": "maintenance", "value": "true", "effect": "NoExecute",
                           "timeAdded": heartbeat}),
        );
    }
    if labels["node.kubernetes.io/lifecycle"] == "spot" {
        taints.push(
            json!({"key": "node.kubernetes.io/lifecycle", "value": "spot",
                           "effect": "PreferNoSchedule"}),
        );
    }
    let image_count = match p.images_per_node {
        Some(count) => count as u64,
        None => r.range(6, 12),
    };
    let images: Vec<Value> = (0..image_count)
        .map(|k| {
            let name = format!(
                "registry.example.com/base/layer-{}",
                (k * 7 + r.below(40)) % 97
            );
            json!({"names": [format!("{name}@{}", r.digest()), format!("{name}:v{}", r.below(20))],
                   "sizeBytes": r.range(5_000_000, 900_000_000)})
        })
        .collect();
    let condition = |ty: &str, status: &str, reason: &str, message: &str| {
        json!({"type": ty, "status": status, "lastHeartbeatTime": heartbeat,
               "lastTransitionTime": created, "reason": reason, "message": message})
    };
    let ip = format!(
        "10.{}.{}.{}",
        s.zone * 32 + i / 65_536,
        (i / 256) % 256,
        i % 256
    );
    let mut allocatable = json!({
        "cpu": format!("{cpu_m}m"), "memory": format!("{}Ki", mem / 1024),
        "pods": "110", "ephemeral-storage": "95491281146", "hugepages-1Gi": "0", "hugepages-2Mi": "0",
    });
    let mut capacity = json!({
        "cpu": ty.1.to_string(), "memory": format!("{}Ki", ty.2 * GIB / 1024),
        "pods": "110", "ephemeral-storage": "104845292Ki", "hugepages-1Gi": "0", "hugepages-2Mi": "0",
    });
    if ty.3 > 0 {
        allocatable["nvidia.com/gpu"] = json!(ty.3.to_string());
        capacity["nvidia.com/gpu"] = json!(ty.3.to_string());
    }
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": s.name, "uid": r.uid(), "resourceVersion": (100_000 + r.below(900_000)).to_string(),
            "creationTimestamp": created, "labels": labels,
            "annotations": {
                "alpha.kubernetes.io/provided-node-ip": ip,
                "csi.volume.kubernetes.io/nodeid": format!("{{\"ebs.csi.aws.com\":\"i-{:017x}\"}}", r.next_u64() >> 4),
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
            "managedFields": [
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": created,
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:annotations": {".": {},
                 "f:alpha.kubernetes.io/provided-node-ip": {}, "f:volumes.kubernetes.io/controller-managed-attach-detach": {}},
                 "f:labels": {".": {}, "f:kubernetes.io/arch": {}, "f:kubernetes.io/hostname": {}, "f:kubernetes.io/os": {},
                 "f:node.kubernetes.io/instance-type": {}, "f:topology.kubernetes.io/region": {}, "f:topology.kubernetes.io/zone": {}}}}},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": heartbeat,
                 "fieldsType": "FieldsV1", "subresource": "status", "fieldsV1": {"f:status": {"f:allocatable": {}, "f:capacity": {},
                 "f:conditions": {}, "f:images": {}, "f:nodeInfo": {}}}},
            ],
        },
        "spec": {"providerID": format!("aws:///{zone}/i-{:017x}", r.next_u64() >> 4), "taints": taints},
        "status": {
            "capacity": capacity, "allocatable": allocatable,
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": s.name},
                          {"type": "InternalDNS", "address": s.name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"machineID": format!("{:016x}{:016x}", r.next_u64(), r.next_u64()),
                         "systemUUID": r.uid(), "bootID": r.uid(), "kernelVersion": "6.1.112-124.190.amzn2023.x86_64",
                         "osImage": "Amazon Linux 2023.6.20241121", "containerRuntimeVersion": "containerd://1.7.23",
                         "kubeletVersion": "v1.34.2", "kubeProxyVersion": "v1.34.2", "operatingSystem": "linux",
                         "architecture": "amd64"},
            "images": images,
        },
    })
}

fn resources_limit_memory(container: &mut Value, mem_mi: u64) {
    container["resources"]["limits"]["memory"] = json!(format!("{mem_mi}Mi"));
}

fn pod_labels(d: &Deployment) -> Value {
    let team = namespace_name(d.namespace);
    json!({
        "app": d.app, "pod-template-hash": d.hash,
        "app.kubernetes.io/name": d.app, "app.kubernetes.io/part-of": team,
        "app.kubernetes.io/version": format!("v{}", d.version),
        "tier": d.tier, "env": ENVS[d.namespace % ENVS.len()], "team": team,
    })
}

fn containers_json(d: &Deployment, verbose: bool) -> Vec<Value> {
    d.containers
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let mut resources = json!({"requests": {"cpu": format!("{}m", c.cpu_m), "memory": format!("{}Mi", c.mem_mi)}});
            if d.placement == Placement::Gpu && k == 0 {
                resources["requests"]["nvidia.com/gpu"] = json!("1");
                resources["limits"] = json!({"nvidia.com/gpu": "1"});
            }
            let mut container = json!({"name": c.name, "image": c.image, "resources": resources});
            if verbose {
                container["imagePullPolicy"] = json!("IfNotPresent");
                resources_limit_memory(&mut container, c.mem_mi * 2);
                if k == 0 {
                    container["ports"] = json!([{"name": "http", "containerPort": 8080, "protocol": "TCP"}]);
                }
            }
            container
        })
        .collect()
}

/// The scheduling terms of a Deployment's pod template.
fn placement_json(d: &Deployment, zones: usize) -> (Option<Value>, Option<Value>, Vec<Value>) {
    let own = json!({"matchLabels": {"app": d.app}});
    match d.placement {
        Placement::Plain => (None, None, Vec::new()),
        Placement::Spread => (
            None,
            Some(json!([
                {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                 "whenUnsatisfiable": "DoNotSchedule", "labelSelector": own,
                 "matchLabelKeys": ["pod-template-hash"]},
                {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                 "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": own},
            ])),
            Vec::new(),
        ),
        Placement::AntiAffinity => (
            Some(
                json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": own, "topologyKey": "kubernetes.io/hostname"}]}}),
            ),
            None,
            Vec::new(),
        ),
        Placement::PreferAffinity => (
            Some(
                json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 50, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": d.near_app}},
                 "topologyKey": "topology.kubernetes.io/zone"}}]}}),
            ),
            None,
            Vec::new(),
        ),
        Placement::NodeAffinity => (
            Some(json!({"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone_name(d.zone % zones)]}]}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 20, "preference": {"matchExpressions": [
                    {"key": "disktype", "operator": "In", "values": ["ssd"]}]}}],
            }})),
            None,
            Vec::new(),
        ),
        Placement::Gpu => (
            None,
            None,
            vec![
                json!({"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}),
            ],
        ),
    }
}

fn pod_json(
    p: &SynthParams,
    zones: usize,
    d: &Deployment,
    replica: usize,
    shapes: &[NodeShape],
) -> Value {
    let mut r = Rng::stream(p.seed, 4, (d.index as u64) << 16 | replica as u64);
    let (class, priority, _, policy) = PRIORITY_CLASSES[d.class];
    let (affinity, spread, mut tolerations) = placement_json(d, zones);
    let created_at = d.created + r.below(3_600);
    let created = timestamp(created_at);
    let ready_at = timestamp(created_at + r.range(5, 90));
    let rs_name = d.rs_name();
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": format!("{rs_name}-{}", r.suffix(5)),
            "namespace": namespace_name(d.namespace), "uid": r.uid(),
            "resourceVersion": (1_000_000 + r.below(9_000_000)).to_string(), "creationTimestamp": created,
            "labels": pod_labels(d),
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs_name,
                                 "uid": d.rs_uid, "controller": true, "blockOwnerDeletion": true}],
        },
        "spec": {
            "containers": containers_json(d, p.verbose),
            "priorityClassName": class, "priority": priority, "preemptionPolicy": policy,
        },
    });
    if r.percent(10) {
        pod["metadata"]["annotations"] =
            json!({"controller.kubernetes.io/pod-deletion-cost": r.range(0, 1000).to_string()});
    }
    let spec = &mut pod["spec"];
    if let Some(affinity) = affinity {
        spec["affinity"] = affinity;
    }
    if let Some(spread) = spread {
        spec["topologySpreadConstraints"] = spread;
    }
    let condition = |ty: &str, ok: bool, reason: Option<&str>| {
        let mut c = json!({"type": ty, "status": if ok { "True" } else { "False" },
                           "lastTransitionTime": ready_at});
        if let Some(reason) = reason {
            c["reason"] = json!(reason);
        }
        c
    };
    let mut status = match d.nodes[replica] {
        None => json!({
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "lastTransitionTime": created,
                "reason": "Unschedulable",
                "message": format!("0/{} nodes are available: Insufficient cpu.", shapes.len())}],
        }),
        Some(n) => {
            spec["nodeName"] = json!(shapes[n].name);
            let done = d.succeeded == Some(replica);
            let ready = !done && !d.unready[replica];
            let restarts = if r.percent(5) { r.range(1, 5) } else { 0 };
            let not_ready = (!ready).then_some(if done {
                "PodCompleted"
            } else {
                "ContainersNotReady"
            });
            let mut status = json!({
                "phase": if done { "Succeeded" } else { "Running" }, "startTime": created,
                "conditions": [condition("Ready", ready, not_ready)],
                "containerStatuses": d.containers.iter()
                    .map(|c| json!({"name": c.name, "ready": ready, "restartCount": restarts}))
                    .collect::<Vec<_>>(),
            });
            if p.verbose {
                let i = n as u64 * 110 + replica as u64 % 110;
                status["hostIP"] = json!(format!(
                    "10.{}.{}.{}",
                    shapes[n].zone * 32,
                    (n / 256) % 256,
                    n % 256
                ));
                status["podIP"] = json!(format!(
                    "10.{}.{}.{}",
                    128 + i / 65_536 % 128,
                    i / 256 % 256,
                    i % 256
                ));
                add_container_states(&mut status, d, &created, &ready_at, done);
                status["conditions"] = json!([
                    condition("PodReadyToStartContainers", !done, None),
                    condition("Initialized", true, None),
                    condition("Ready", ready, not_ready),
                    condition("ContainersReady", ready, not_ready),
                    condition("PodScheduled", true, None),
                ]);
            }
            status
        }
    };
    if p.verbose {
        // DefaultTolerationSeconds adds these to every pod.
        for key in [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
        ] {
            tolerations.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
        }
        for (key, value) in [
            ("restartPolicy", json!("Always")),
            ("terminationGracePeriodSeconds", json!(30)),
            ("dnsPolicy", json!("ClusterFirst")),
            ("serviceAccountName", json!("default")),
            ("schedulerName", json!("default-scheduler")),
            ("enableServiceLinks", json!(true)),
        ] {
            spec[key] = value;
        }
        status["qosClass"] = json!("Burstable");
        let meta = &mut pod["metadata"];
        meta["generateName"] = json!(format!("{rs_name}-"));
        // Indexing a missing `annotations` creates it.
        meta["annotations"]["prometheus.io/scrape"] = json!("true");
        meta["annotations"]["prometheus.io/port"] = json!("8080");
        meta["managedFields"] = json!([
            {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": created,
             "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {}, "f:ownerReferences": {}},
             "f:spec": {"f:containers": {}, "f:priorityClassName": {}, "f:topologySpreadConstraints": {}}}},
            {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": ready_at,
             "fieldsType": "FieldsV1", "subresource": "status",
             "fieldsV1": {"f:status": {"f:conditions": {}, "f:containerStatuses": {}, "f:phase": {}, "f:startTime": {}}}},
        ]);
    }
    if !tolerations.is_empty() {
        pod["spec"]["tolerations"] = json!(tolerations);
    }
    pod["status"] = status;
    pod
}

/// What kubelet reports about each container beyond ready and restarts.
fn add_container_states(
    status: &mut Value,
    d: &Deployment,
    created: &str,
    ready_at: &str,
    done: bool,
) {
    let Some(statuses) = status["containerStatuses"].as_array_mut() else {
        return;
    };
    for (cs, c) in statuses.iter_mut().zip(&d.containers) {
        cs["image"] = json!(c.image);
        cs["started"] = json!(!done);
        cs["state"] = if done {
            json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": created, "finishedAt": ready_at}})
        } else {
            json!({"running": {"startedAt": created}})
        };
    }
}

fn pdb_json(seed: u64, d: &Deployment) -> Value {
    let replicas = d.nodes.len();
    let healthy = d.healthy();
    let (spec_key, spec_value, desired) = if d.index.is_multiple_of(4) {
        let min = (replicas * 2 / 3).max(1);
        ("minAvailable", min, min)
    } else {
        ("maxUnavailable", 1, replicas.saturating_sub(1))
    };
    let allowed = healthy.saturating_sub(desired);
    let created = timestamp(d.created);
    json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": d.app, "namespace": namespace_name(d.namespace),
                     "uid": Rng::stream(seed, 5, d.index as u64).uid(),
                     "resourceVersion": (500_000 + d.index).to_string(), "generation": 1,
                     "creationTimestamp": created, "labels": {"app": d.app}},
        "spec": {spec_key: spec_value, "selector": {"matchLabels": {"app": d.app}}},
        "status": {
            "observedGeneration": 1, "disruptionsAllowed": allowed, "currentHealthy": healthy,
            "desiredHealthy": desired, "expectedPods": replicas,
            "conditions": [{"type": "DisruptionAllowed", "status": if allowed > 0 { "True" } else { "False" },
                            "reason": if allowed > 0 { "SufficientPods" } else { "InsufficientPods" },
                            "message": "", "observedGeneration": 1, "lastTransitionTime": created}],
        },
    })
}

fn namespace_json(seed: u64, name: &str) -> Value {
    let mut r = Rng::stream(seed, 6, fnv1a(name));
    let mut labels = json!({"kubernetes.io/metadata.name": name});
    if let Some((team, _)) = name.split_once('-').filter(|_| name != "kube-system") {
        labels["team"] = json!(team);
        labels["env"] = json!(ENVS[name.len() % ENVS.len()]);
    }
    json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "uid": r.uid(), "resourceVersion": r.range(100, 9_000).to_string(),
                     "creationTimestamp": timestamp(r.below(86_400)), "labels": labels},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    })
}

fn service_json(seed: u64, d: &Deployment) -> Value {
    let mut r = Rng::stream(seed, 8, d.index as u64);
    let ip = format!("172.20.{}.{}", d.index / 256 % 256, d.index % 256);
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": d.app, "namespace": namespace_name(d.namespace), "uid": r.uid(),
                     "resourceVersion": (400_000 + d.index).to_string(),
                     "creationTimestamp": timestamp(d.created), "labels": {"app": d.app}},
        "spec": {
            "type": "ClusterIP", "clusterIP": ip, "clusterIPs": [ip], "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack", "internalTrafficPolicy": "Cluster", "sessionAffinity": "None",
            "selector": {"app": d.app},
            "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": "http"}],
        },
        "status": {"loadBalancer": {}},
    })
}

fn replica_set_json(d: &Deployment) -> Value {
    let replicas = d.nodes.len();
    let ready = d.healthy();
    json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {
            "name": d.rs_name(), "namespace": namespace_name(d.namespace), "uid": d.rs_uid,
            "resourceVersion": (600_000 + d.index).to_string(), "generation": 1,
            "creationTimestamp": timestamp(d.created),
            "labels": {"app": d.app, "pod-template-hash": d.hash},
            "annotations": {"deployment.kubernetes.io/desired-replicas": replicas.to_string(),
                            "deployment.kubernetes.io/max-replicas": (replicas + replicas.div_ceil(4)).to_string(),
                            "deployment.kubernetes.io/revision": "1"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": d.app, "uid": d.uid,
                                 "controller": true, "blockOwnerDeletion": true}],
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": d.app, "pod-template-hash": d.hash}},
            "template": {"metadata": {"labels": pod_labels(d)}, "spec": {"containers": containers_json(d, false)}},
        },
        "status": {"replicas": replicas, "fullyLabeledReplicas": replicas, "readyReplicas": ready,
                   "availableReplicas": ready, "observedGeneration": 1},
    })
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::sync::OnceLock;

    use super::*;
    use crate::cluster::Snapshot;
    use crate::model::quantity::{CPU, MEMORY};
    use crate::policy::taint_toleration::untolerated_taint;

    const NODES: usize = 80;
    const PODS: usize = 2_500;

    /// One cluster shared by the tests: generating is the slow part.
    fn cluster() -> &'static ClusterObjects {
        static CLUSTER: OnceLock<ClusterObjects> = OnceLock::new();
        CLUSTER.get_or_init(|| generate_objects(&SynthParams::new(NODES, PODS)).unwrap())
    }

    #[test]
    fn same_seed_gives_the_same_bytes_and_another_seed_does_not() {
        let p = SynthParams::new(10, 300);
        let text = generate_json(&p);
        assert_eq!(text, generate_json(&p));
        assert_ne!(text, generate_json(&SynthParams { seed: 7, ..p }));
        let list: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(list["apiVersion"], "v1");
        assert_eq!(list["kind"], "List");
    }

    #[test]
    fn the_bundled_shape_keeps_its_bytes() {
        // The load scripts' rounds are comparable only while the bundled
        // file stays the same: its length and hash before the shape became
        // parameters.
        let text = generate_json(&SynthParams::new(200, 6_000));
        assert_eq!(
            (text.len(), fnv1a(&text)),
            (9_974_214, 0x5eed_dcb1_da82_a524)
        );
    }

    #[test]
    fn the_rotation_gives_each_kind_its_share_of_any_100_deployments() {
        let bundled: Vec<Placement> = (0..20)
            .map(|i| PlacementMix::BUNDLED.placement(i))
            .collect();
        use Placement::*;
        let mut expected = vec![Spread; 6];
        expected.extend([AntiAffinity, AntiAffinity, PreferAffinity, PreferAffinity]);
        expected.extend([NodeAffinity, NodeAffinity, Gpu]);
        expected.extend([Plain; 7]);
        assert_eq!(bundled, expected, "the bundled rotation, every 20");
        let mix = PlacementMix {
            spread: 33,
            anti_affinity: 7,
            prefer_affinity: 0,
            node_affinity: 1,
            gpu: 59,
        };
        for start in [0, 37, 100] {
            let kinds: Vec<Placement> = (start..start + 100).map(|i| mix.placement(i)).collect();
            let count = |k: Placement| kinds.iter().filter(|&&p| p == k).count();
            assert_eq!(
                [count(Spread), count(AntiAffinity), count(PreferAffinity)],
                [33, 7, 0]
            );
            assert_eq!([count(NodeAffinity), count(Gpu), count(Plain)], [1, 59, 0]);
        }
    }

    #[test]
    fn the_second_shape_has_the_proportions_of_issue_27() {
        // 60 nodes for Deployments of 100: anti-affinity leaves 40 Pending.
        let objects = generate_objects(&SynthParams::second_shape(60, 4_000)).unwrap();
        assert_eq!(objects.replica_sets.len(), 40);
        assert!(
            objects
                .replica_sets
                .iter()
                .all(|rs| rs.spec.replicas == Some(100))
        );
        assert_eq!(objects.pdbs.len(), 8);
        assert_eq!(objects.namespaces.len(), 52);
        let pods = &objects.pods;
        let hard_spread = pods
            .iter()
            .filter(|p| {
                p.spec
                    .topology_spread_constraints
                    .iter()
                    .any(|c| c.when_unsatisfiable == "DoNotSchedule")
            })
            .count();
        let anti: Vec<_> = pods
            .iter()
            .filter(|p| p.has_required_anti_affinity())
            .collect();
        assert_eq!((hard_spread, anti.len()), (1_200, 400));
        assert!(
            pods.iter()
                .all(|p| p.pod_affinity().is_none() && p.node_affinity().is_none())
        );
        let mut seen = BTreeSet::new();
        for pod in anti.iter().filter(|p| !p.spec.node_name.is_empty()) {
            assert!(seen.insert((&pod.metadata.labels["app"], &pod.spec.node_name)));
        }
        assert!(anti.len() - seen.len() >= 4 * 40, "no room for them");
        let zones: BTreeSet<_> = objects
            .nodes
            .iter()
            .map(|n| &n.metadata.labels["topology.kubernetes.io/zone"])
            .collect();
        assert_eq!(zones.len(), 10);
        let list: Value =
            serde_json::from_str(&generate_json(&SynthParams::second_shape(3, 0))).unwrap();
        let items = list["items"].as_array().unwrap();
        for node in items.iter().filter(|o| o["kind"] == "Node") {
            assert_eq!(node["status"]["images"].as_array().unwrap().len(), 20);
        }
    }

    #[test]
    fn verbose_pods_carry_kubectl_detail_and_still_decode() {
        let p = SynthParams {
            verbose: true,
            ..SynthParams::new(10, 300)
        };
        let text = generate_json(&p);
        assert!(text.contains("managedFields") && text.contains("podIP"));
        // Every pod gains well over a kilobyte.
        let compact = generate_json(&SynthParams::new(10, 300));
        assert!(text.len() > compact.len() + 300 * 1_000);
        assert_eq!(generate_objects(&p).unwrap().pods.len(), 300);
    }

    #[test]
    fn every_kind_decodes_as_our_model_types_in_the_requested_counts() {
        let objects = cluster();
        assert_eq!(objects.nodes.len(), NODES);
        assert_eq!(objects.pods.len(), PODS);
        assert_eq!(objects.namespaces.len(), 52);
        assert_eq!(objects.priority_classes.len(), 4);
        assert_eq!(
            objects
                .priority_classes
                .iter()
                .filter(|c| c.global_default)
                .count(),
            1
        );
        assert_eq!(objects.services.len(), objects.replica_sets.len());
        assert_eq!(objects.pdbs.len(), objects.replica_sets.len().div_ceil(2));
        let snapshot = Snapshot::build(objects.clone());
        assert!(
            snapshot.counts().pods < PODS,
            "Succeeded pods are left out of the view"
        );
    }

    #[test]
    fn pods_belong_to_replica_sets_that_select_them() {
        let objects = cluster();
        let replica_sets: BTreeMap<&str, _> = objects
            .replica_sets
            .iter()
            .map(|rs| (rs.metadata.uid.as_str(), rs))
            .collect();
        for pod in &objects.pods {
            let rs = replica_sets[pod.metadata.controller().unwrap().uid.as_str()];
            assert!(
                rs.spec
                    .selector
                    .as_ref()
                    .unwrap()
                    .matches(&pod.metadata.labels)
            );
            assert!((1..=3).contains(&pod.spec.containers.len()));
        }
    }

    #[test]
    fn the_cluster_uses_every_kind_of_constraint() {
        let objects = cluster();
        let pods = &objects.pods;
        assert!(
            pods.iter()
                .any(|p| !p.spec.topology_spread_constraints.is_empty())
        );
        assert!(pods.iter().any(|p| p.has_required_anti_affinity()));
        assert!(pods.iter().any(|p| p.pod_affinity().is_some()));
        assert!(pods.iter().any(|p| p.node_affinity().is_some()));
        assert!(
            pods.iter()
                .any(|p| p.spec.node_name.is_empty() && p.status.phase == "Pending")
        );
        assert!(objects.nodes.iter().any(|n| !n.spec.taints.is_empty()));
        assert!(objects.nodes.iter().all(|n| n.metadata.labels.len() >= 18));
    }

    #[test]
    fn bound_pods_fit_their_nodes_and_tolerate_their_taints() {
        let objects = cluster();
        let nodes: BTreeMap<&str, _> = objects.nodes.iter().map(|n| (n.name(), n)).collect();
        let mut used: BTreeMap<&str, (i64, i64, i64)> = BTreeMap::new();
        for pod in objects.pods.iter().filter(|p| !p.spec.node_name.is_empty()) {
            let node = nodes[pod.spec.node_name.as_str()];
            assert_eq!(
                untolerated_taint(&node.spec.taints, &pod.spec.tolerations),
                None
            );
            let u = used.entry(node.name()).or_default();
            for c in &pod.spec.containers {
                u.0 += c.resources.requests[CPU];
                u.1 += c.resources.requests[MEMORY];
            }
            u.2 += 1;
        }
        for (name, (cpu, mem, count)) in used {
            let alloc = &nodes[name].status.allocatable;
            assert!(
                cpu <= alloc[CPU] && mem <= alloc[MEMORY] && count <= alloc["pods"],
                "{name}"
            );
        }
    }

    #[test]
    fn required_anti_affinity_replicas_never_share_a_node() {
        let mut seen = BTreeSet::new();
        for pod in cluster()
            .pods
            .iter()
            .filter(|p| p.has_required_anti_affinity())
        {
            if !pod.spec.node_name.is_empty() {
                let app = &pod.metadata.labels["app"];
                assert!(seen.insert((app, &pod.spec.node_name)), "{app}");
            }
        }
        assert!(!seen.is_empty());
    }

    #[test]
    fn priority_matches_the_named_class() {
        let objects = cluster();
        let classes: BTreeMap<&str, i32> = objects
            .priority_classes
            .iter()
            .map(|c| (c.metadata.name.as_str(), c.value))
            .collect();
        for pod in &objects.pods {
            assert_eq!(
                pod.spec.priority,
                Some(classes[pod.spec.priority_class_name.as_str()])
            );
        }
    }
}
