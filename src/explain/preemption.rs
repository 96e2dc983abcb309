//! For a pod that fits nowhere: could DefaultPreemption make room, and
//! where? The same policy as `/scheduler/preempt` ([`Preemptor`]): the pod
//! must be eligible, only nodes that failed a rule eviction can fix
//! (`Unschedulable`) are tried, and on each the fewest, least important
//! lower-priority pods are chosen. When no node helps, the message is
//! upstream's PostFilter text ("preemption: 0/N nodes are available: …");
//! when some do, it names the node kube-scheduler would nominate. Like
//! upstream's DryRunPreemption, the search stops once it has enough
//! candidates (10% of the nodes tried, at least 100, one of them breaking
//! no PodDisruptionBudget), so a pod that fits nowhere in a 5,000-node
//! cluster costs a few hundred victim searches, not 5,000.

use jiff::Timestamp;
use serde::Serialize;

use super::summary::{PREEMPTION_NOT_HELPFUL, nodes_available};
use crate::cluster::{NodeIdx, Snapshot};
use crate::config::SchedulingSettings;
use crate::model::Pod;
use crate::policy::filter::PodFilters;
use crate::policy::preemption::{Preemptor, Victim, Victims, pick_one_node};

/// DefaultPreemption's defaults (`minCandidateNodesPercentage`,
/// `minCandidateNodesAbsolute`): how many candidates are enough.
const MIN_CANDIDATE_NODES_PERCENTAGE: usize = 10;
const MIN_CANDIDATE_NODES_ABSOLUTE: usize = 100;

/// Upstream's `calculateNumCandidates` for `potential` nodes.
fn enough_candidates(potential: usize) -> usize {
    (potential * MIN_CANDIDATE_NODES_PERCENTAGE / 100)
        .max(MIN_CANDIDATE_NODES_ABSOLUTE)
        .min(potential)
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreemptionOutlook {
    /// One line, as the tail of kube-scheduler's FailedScheduling event.
    pub message: String,
    /// Nodes where evicting lower-priority pods makes room, in view order.
    pub candidates: Vec<PreemptionCandidate>,
    /// The candidate kube-scheduler's rules would nominate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nominate: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreemptionCandidate {
    pub node: String,
    /// `namespace/name` of each pod to evict, most important first.
    pub victims: Vec<String>,
    pub pdb_violations: usize,
    /// The victims whose eviction breaks a PodDisruptionBudget.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pdb_violating: Vec<String>,
}

/// Try preemption on the nodes at `unschedulable` (those whose failure
/// eviction might fix); every other node counts as "not helpful".
pub fn outlook(
    snapshot: &Snapshot,
    pod: &Pod,
    filters: PodFilters,
    unschedulable: &[NodeIdx],
    settings: &SchedulingSettings,
    now: Timestamp,
) -> PreemptionOutlook {
    let total = snapshot.nodes().len();
    let mut preemptor = Preemptor::new(snapshot, pod, filters, now).ignoring(settings);
    if let Err(why) = preemptor.eligibility() {
        return PreemptionOutlook {
            message: format!("preemption: {why}"),
            candidates: Vec::new(),
            nominate: None,
        };
    }
    let enough = enough_candidates(unschedulable.len());
    let mut found: Vec<(NodeIdx, Victims)> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    let mut breaking_none = 0;
    for &idx in unschedulable {
        match preemptor.select_victims(idx) {
            Ok(victims) => {
                breaking_none += usize::from(victims.num_pdb_violations == 0);
                found.push((idx, victims));
            }
            Err(f) => failures.push(f.reason.to_string()),
        }
        if breaking_none > 0 && found.len() >= enough {
            break;
        }
    }
    let stopped_early = found.len() + failures.len() < unschedulable.len();
    let nodes = snapshot.nodes();
    let candidates: Vec<PreemptionCandidate> = found
        .iter()
        .map(|(idx, victims)| {
            let info = &nodes[*idx as usize];
            let key = |v: &Victim| info.pods[v.position as usize].metadata.key();
            PreemptionCandidate {
                node: info.node.name().to_string(),
                victims: victims.pods.iter().map(key).collect(),
                pdb_violations: victims.num_pdb_violations,
                pdb_violating: victims
                    .pods
                    .iter()
                    .filter(|v| v.breaks_pdb)
                    .map(key)
                    .collect(),
            }
        })
        .collect();
    let all_victims: Vec<&Victims> = found.iter().map(|(_, v)| v).collect();
    let nominate = pick_one_node(&all_victims).map(|i| candidates[i].node.clone());
    let message = match &nominate {
        Some(node) if stopped_early => format!(
            "preemption: evicting lower-priority pods makes room on {} nodes (the search \
             stops there, as kube-scheduler's does); among them kube-scheduler would \
             nominate {node}.",
            candidates.len()
        ),
        Some(node) => format!(
            "preemption: evicting lower-priority pods makes room on {}/{total} nodes; \
             kube-scheduler would nominate {node}.",
            candidates.len()
        ),
        None => {
            let not_tried = total - unschedulable.len();
            let reasons = failures
                .iter()
                .map(String::as_str)
                .chain(std::iter::repeat_n(PREEMPTION_NOT_HELPFUL, not_tried));
            format!("preemption: {}", nodes_available(0, total, reasons))
        }
    };
    PreemptionOutlook {
        message,
        candidates,
        nominate,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::cluster::ClusterObjects;
    use crate::config::SchedulingSettings;
    use crate::model::Node;

    #[test]
    fn enough_candidates_follows_upstreams_defaults() {
        let cases = [(0, 0), (50, 50), (150, 100), (1_000, 100), (5_000, 500)];
        for (potential, want) in cases {
            assert_eq!(enough_candidates(potential), want, "{potential} nodes");
        }
    }

    #[test]
    fn the_search_stops_at_enough_candidates() {
        let nodes: Vec<Node> = (0..150)
            .map(|i| {
                serde_json::from_value(json!({"metadata": {"name": format!("n{i:03}"),
                    "labels": {"kubernetes.io/hostname": format!("n{i:03}")}},
                    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}))
                .unwrap()
            })
            .collect();
        let pods: Vec<Pod> = (0..150)
            .map(|i| {
                serde_json::from_value(json!({"metadata": {"name": format!("b{i:03}"),
                    "namespace": "shop", "uid": format!("uid-{i}"), "labels": {"app": "batch"}},
                    "spec": {"nodeName": format!("n{i:03}"), "priority": 1}}))
                .unwrap()
            })
            .collect();
        let s = Snapshot::build(ClusterObjects {
            nodes,
            pods,
            ..Default::default()
        });
        let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "api", "namespace": "shop"},
            "spec": {"priority": 100, "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "batch"}}, "topologyKey": "kubernetes.io/hostname"}]}}}}))
        .unwrap();
        let filters = PodFilters::prepare(&s, &pod, &SchedulingSettings::default()).unwrap();
        let all: Vec<NodeIdx> = (0..150).collect();
        let got = outlook(
            &s,
            &pod,
            filters,
            &all,
            &Default::default(),
            Timestamp::UNIX_EPOCH,
        );
        assert_eq!(got.candidates.len(), 100);
        assert_eq!(got.candidates[99].node, "n099");
        assert_eq!(
            got.message,
            "preemption: evicting lower-priority pods makes room on 100 nodes (the search stops \
             there, as kube-scheduler's does); among them kube-scheduler would nominate n000."
        );
    }
}
