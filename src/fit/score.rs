//! Which feasible node a replica goes to: the sum kube-scheduler 1.37's
//! default profile makes of its score plugins and of kube-arbiter's
//! prioritize answer, as deployed with `manifests/scheduler-config.yaml`
//! (extender weight 5):
//!
//! | plugin | weight | here |
//! |---|---|---|
//! | TaintToleration | 3 | PreferNoSchedule taints not tolerated, fewest best |
//! | NodeAffinity | 2 | kube-arbiter's per-plugin score (the same rule) |
//! | NodeResourcesFit (LeastAllocated, cpu and memory 1:1) | 1 | non-zero requests, as upstream |
//! | PodTopologySpread | 2 | kube-arbiter's per-plugin score |
//! | InterPodAffinity | 2 | kube-arbiter's per-plugin score |
//! | NodeResourcesBalancedAllocation | 1 | 1.37's "improvement" form |
//! | ImageLocality | 1 | not modelled: the view keeps no images (0 everywhere) |
//! | the extender (kube-arbiter) | 5 × 10 | its 0..10 answer, from `scheduling.weights` |
//!
//! kube-scheduler breaks equal totals at random; here the node whose name
//! sorts first wins, so answers repeat.

use crate::policy::taint_toleration::Tolerates;
use serde::Serialize;

use crate::cluster::{NodeInfo, NodePods};
use crate::explain::Scores;
use crate::model::requests::{Requests, pod_requests};
use crate::model::{Node, Pod, Taint};

pub const TAINT_TOLERATION_WEIGHT: i64 = 3;
pub const NODE_AFFINITY_WEIGHT: i64 = 2;
pub const NODE_RESOURCES_FIT_WEIGHT: i64 = 1;
pub const POD_TOPOLOGY_SPREAD_WEIGHT: i64 = 2;
pub const INTER_POD_AFFINITY_WEIGHT: i64 = 2;
pub const BALANCED_ALLOCATION_WEIGHT: i64 = 1;
/// The extender entry's `weight` in the shipped scheduler configurations.
pub const EXTENDER_WEIGHT: i64 = 5;
/// kube-scheduler scales an extender's 0..10 by MaxNodeScore / MaxExtenderPriority.
const EXTENDER_SCALE: i64 = 10;

/// Upstream `DefaultMilliCPURequest` and `DefaultMemoryRequest`: what a
/// container without a request counts as when nodes are scored.
const DEFAULT_MILLI_CPU: i64 = 100;
const DEFAULT_MEMORY: i64 = 200 << 20;

/// One feasible node's scores: each plugin's normalized 0..100 (`None`:
/// it does not apply to the pod, upstream's Skip), the extender's 0..10,
/// and the weighted sum that picks the node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeScore {
    pub taint_toleration: i64,
    pub node_affinity: Option<i64>,
    pub least_allocated: i64,
    pub pod_topology_spread: Option<i64>,
    pub inter_pod_affinity: Option<i64>,
    pub balanced_allocation: Option<i64>,
    pub extender: i64,
    pub total: i64,
}

/// What the pod asks for, in the two ways the resource scores read it.
#[derive(Debug, Clone)]
pub struct PodAsk {
    requests: Requests,
    non_zero: (i64, i64),
    prefer_no_schedule_tolerations: Vec<crate::model::Toleration>,
}

impl PodAsk {
    pub fn of(pod: &Pod) -> Self {
        let requests = pod_requests(pod);
        Self {
            non_zero: non_zero(pod, &requests),
            requests,
            prefer_no_schedule_tolerations: pod
                .spec
                .tolerations
                .iter()
                .filter(|t| t.effect.is_empty() || t.effect == "PreferNoSchedule")
                .cloned()
                .collect(),
        }
    }

    /// The non-zero cpu and memory the pod adds to a node.
    pub fn non_zero(&self) -> (i64, i64) {
        self.non_zero
    }

    /// Upstream BalancedAllocation's PreScore skips a pod requesting
    /// nothing it scores.
    fn best_effort(&self) -> bool {
        self.requests.cpu == 0 && self.requests.memory == 0
    }

    fn intolerable_prefer_no_schedule(&self, taints: &[Taint]) -> i64 {
        taints
            .iter()
            .filter(|t| t.effect == "PreferNoSchedule")
            .filter(|t| {
                !self
                    .prefer_no_schedule_tolerations
                    .iter()
                    .any(|tol| tol.tolerates(t))
            })
            .count() as i64
    }
}

/// cpu and memory a pod counts for when nodes are scored: its requests,
/// with upstream's defaults for each container that names none (upstream
/// `NonMissingContainerRequests`; pod-level resources replace them).
pub fn non_zero(pod: &Pod, requests: &Requests) -> (i64, i64) {
    let (mut cpu, mut memory) = (requests.cpu, requests.memory);
    if pod.spec.resources.is_none() {
        for c in pod.spec.containers.iter() {
            let asks = |name: &str| c.resources.requests.contains_key(name);
            cpu += if asks("cpu") { 0 } else { DEFAULT_MILLI_CPU };
            memory += if asks("memory") { 0 } else { DEFAULT_MEMORY };
        }
    }
    (cpu, memory)
}

/// The non-zero cpu and memory of every pod on a node.
pub fn node_non_zero(pods: &NodePods) -> (i64, i64) {
    pods.iter()
        .zip(pods.summaries())
        .map(|(pod, s)| non_zero(pod, &s.requests))
        .fold((0, 0), |(c, m), (pc, pm)| (c + pc, m + pm))
}

fn allocatable(node: &Node, name: &str) -> i64 {
    node.status.allocatable.get(name).copied().unwrap_or(0)
}

/// LeastAllocated on cpu and memory, weight 1 each.
fn least_allocated(node: &Node, used_non_zero: (i64, i64), ask: &PodAsk) -> i64 {
    let resources = [
        (allocatable(node, "cpu"), used_non_zero.0 + ask.non_zero.0),
        (
            allocatable(node, "memory"),
            used_non_zero.1 + ask.non_zero.1,
        ),
    ];
    let (mut sum, mut weights) = (0, 0);
    for (capacity, requested) in resources {
        if capacity == 0 {
            continue;
        }
        sum += if requested > capacity {
            0
        } else {
            (capacity - requested) * 100 / capacity
        };
        weights += 1;
    }
    if weights == 0 { 0 } else { sum / weights }
}

/// 1.37's BalancedAllocation: 50 + (50 + balance with the pod − balance
/// without it) / 2, on the node's requests as they are (no defaults).
fn balanced_allocation(node: &Node, used: &Requests, ask: &PodAsk) -> Option<i64> {
    if ask.best_effort() {
        return None;
    }
    let capacity = [allocatable(node, "cpu"), allocatable(node, "memory")];
    let before = [used.cpu, used.memory];
    let after = [
        used.cpu + ask.requests.cpu,
        used.memory + ask.requests.memory,
    ];
    let balance = |requested: [i64; 2]| -> i64 {
        let fractions: Vec<f64> = capacity
            .iter()
            .zip(requested)
            .filter(|(c, _)| **c != 0)
            .map(|(c, r)| (r as f64 / *c as f64).min(1.0))
            .collect();
        let std = match fractions[..] {
            [a, b] => ((a - b) / 2.0).abs(),
            _ => 0.0,
        };
        ((1.0 - std) * 100.0) as i64
    };
    Some(50 + (50 + balance(after) - balance(before)) / 2)
}

/// Scores for the feasible nodes `nodes` (each with its pods' non-zero
/// cpu and memory, and kube-arbiter's scores there), in their order.
pub fn score_nodes(nodes: &[(&NodeInfo, (i64, i64), &Scores)], ask: &PodAsk) -> Vec<NodeScore> {
    let intolerable: Vec<i64> = nodes
        .iter()
        .map(|(info, _, _)| ask.intolerable_prefer_no_schedule(&info.node.spec.taints))
        .collect();
    let most = intolerable.iter().copied().max().unwrap_or(0);
    nodes
        .iter()
        .zip(intolerable)
        .map(|((info, used_non_zero, ours), count)| {
            let taint_toleration = if most == 0 {
                100
            } else {
                100 - 100 * count / most
            };
            let node = &info.node;
            let least = least_allocated(node, *used_non_zero, ask);
            let balanced = balanced_allocation(node, info.pods.requested(), ask);
            let total = TAINT_TOLERATION_WEIGHT * taint_toleration
                + NODE_AFFINITY_WEIGHT * ours.node_affinity.unwrap_or(0)
                + NODE_RESOURCES_FIT_WEIGHT * least
                + POD_TOPOLOGY_SPREAD_WEIGHT * ours.pod_topology_spread.unwrap_or(0)
                + INTER_POD_AFFINITY_WEIGHT * ours.inter_pod_affinity.unwrap_or(0)
                + BALANCED_ALLOCATION_WEIGHT * balanced.unwrap_or(0)
                + EXTENDER_WEIGHT * EXTENDER_SCALE * ours.total;
            NodeScore {
                taint_toleration,
                node_affinity: ours.node_affinity,
                least_allocated: least,
                pod_topology_spread: ours.pod_topology_spread,
                inter_pod_affinity: ours.inter_pod_affinity,
                balanced_allocation: balanced,
                extender: ours.total,
                total,
            }
        })
        .collect()
}

/// The position of the best of `candidates` (name, total): the highest
/// total, equal totals to the name that sorts first.
pub fn pick<'a>(candidates: impl IntoIterator<Item = (&'a str, i64)>) -> Option<usize> {
    candidates
        .into_iter()
        .enumerate()
        .min_by(|(_, (a_name, a)), (_, (b_name, b))| b.cmp(a).then(a_name.cmp(b_name)))
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::cluster::NodePods;
    use crate::model::Node;

    fn node(cpu: &str, memory: &str, taints: serde_json::Value) -> Node {
        serde_json::from_value(
            json!({"metadata": {"name": "n"}, "spec": {"taints": taints},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}}),
        )
        .unwrap()
    }

    fn pod(requests: serde_json::Value, tolerations: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "d"},
            "spec": {"tolerations": tolerations,
                     "containers": [{"name": "c", "resources": {"requests": requests}}]}}))
        .unwrap()
    }

    #[test]
    fn containers_without_requests_count_upstreams_defaults() {
        let cases = [
            (
                "both given",
                json!({"cpu": "1", "memory": "1Gi"}),
                (1000, 1 << 30),
            ),
            ("cpu missing", json!({"memory": "1Gi"}), (100, 1 << 30)),
            ("nothing given", json!({}), (100, 200 << 20)),
        ];
        for (name, requests, want) in cases {
            let p = pod(requests, json!([]));
            assert_eq!(non_zero(&p, &pod_requests(&p)), want, "{name}");
        }
    }

    /// Upstream least_allocated_test.go: "nothing scheduled, resources
    /// requested, differently sized nodes" and the like, on one resource
    /// pair.
    #[test]
    fn least_allocated_table() {
        let cases = [
            (
                "empty node, small pod",
                ("4", "10000"),
                (0, 0),
                (1000, 2000),
                (75 + 80) / 2,
            ),
            (
                "request over capacity scores 0 there",
                ("4", "10000"),
                (3500, 0),
                (1000, 0),
                50,
            ),
            ("no capacity at all", ("0", "0"), (0, 0), (1, 1), 0),
        ];
        for (name, (cpu, memory), used, asked, want) in cases {
            let n = node(cpu, memory, json!([]));
            let ask = PodAsk {
                requests: Requests::default(),
                non_zero: asked,
                prefer_no_schedule_tolerations: vec![],
            };
            assert_eq!(least_allocated(&n, used, &ask), want, "{name}");
        }
    }

    #[test]
    fn balanced_allocation_rewards_what_evens_the_node_out() {
        let n = node("4", "4Gi", json!([]));
        let used = Requests {
            cpu: 2000,
            ..Default::default()
        };
        let memory_heavy = PodAsk::of(&pod(json!({"memory": "2Gi"}), json!([])));
        let cpu_heavy = PodAsk::of(&pod(json!({"cpu": "2"}), json!([])));
        let evens = balanced_allocation(&n, &used, &memory_heavy).unwrap();
        let worsens = balanced_allocation(&n, &used, &cpu_heavy).unwrap();
        assert_eq!(evens, 87, "from 75 to 100: 50 + (50 + 25) / 2");
        assert_eq!(worsens, 62, "from 75 to 50: 50 + (50 - 25) / 2");
        let best_effort = PodAsk::of(&pod(json!({}), json!([])));
        assert_eq!(balanced_allocation(&n, &used, &best_effort), None);
    }

    #[test]
    fn taint_toleration_prefers_nodes_with_fewer_intolerable_soft_taints() {
        let plain = NodeInfo {
            node: node("4", "4Gi", json!([])).into(),
            pods: NodePods::default(),
            pdbs: Default::default(),
        };
        let soft = NodeInfo {
            node: node(
                "4",
                "4Gi",
                json!([{"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}]),
            )
            .into(),
            ..plain.clone()
        };
        let ours = Scores {
            node_affinity: None,
            inter_pod_affinity: None,
            pod_topology_spread: None,
            total: 0,
        };
        let ask = PodAsk::of(&pod(json!({"cpu": "1"}), json!([])));
        let got = score_nodes(&[(&plain, (0, 0), &ours), (&soft, (0, 0), &ours)], &ask);
        assert_eq!((got[0].taint_toleration, got[1].taint_toleration), (100, 0));
        assert_eq!(got[0].total - got[1].total, 300);
        let tolerating = PodAsk::of(&pod(
            json!({"cpu": "1"}),
            json!([{"key": "spot", "operator": "Exists"}]),
        ));
        let got = score_nodes(
            &[(&plain, (0, 0), &ours), (&soft, (0, 0), &ours)],
            &tolerating,
        );
        assert_eq!(got[0].total, got[1].total);
    }

    #[test]
    fn the_extender_answer_weighs_fifty_points_a_step() {
        let info = NodeInfo {
            node: node("4", "4Gi", json!([])).into(),
            pods: NodePods::default(),
            pdbs: Default::default(),
        };
        let with = |total| Scores {
            node_affinity: Some(100),
            inter_pod_affinity: None,
            pod_topology_spread: None,
            total,
        };
        let ask = PodAsk::of(&pod(json!({"cpu": "1"}), json!([])));
        let (a, b) = (with(10), with(9));
        let got = score_nodes(&[(&info, (0, 0), &a), (&info, (0, 0), &b)], &ask);
        assert_eq!(got[0].total - got[1].total, 50);
    }

    #[test]
    fn pick_takes_the_highest_total_and_the_first_name_on_ties() {
        type Case = (&'static str, Vec<(&'static str, i64)>, Option<usize>);
        let cases: [Case; 4] = [
            ("highest wins", vec![("a", 1), ("b", 3), ("c", 2)], Some(1)),
            (
                "tie: first name",
                vec![("n2", 5), ("n1", 5), ("n3", 4)],
                Some(1),
            ),
            (
                "order of input does not matter",
                vec![("n1", 5), ("n2", 5)],
                Some(0),
            ),
            ("nothing to pick", vec![], None),
        ];
        for (name, candidates, want) in cases {
            assert_eq!(pick(candidates), want, "{name}");
        }
    }
}
