//! For a pod that fits nowhere: could DefaultPreemption make room, and
//! where? The same policy as `/scheduler/preempt` ([`Preemptor`]): the pod
//! must be eligible, only nodes that failed a rule eviction can fix
//! (`Unschedulable`) are tried, and on each the fewest, least important
//! lower-priority pods are chosen. When no node helps, the message is
//! upstream's PostFilter text ("preemption: 0/N nodes are available: …");
//! when some do, it names the node kube-scheduler would nominate.

use jiff::Timestamp;
use serde::Serialize;

use super::summary::{PREEMPTION_NOT_HELPFUL, nodes_available};
use crate::cluster::{NodeIdx, Snapshot};
use crate::model::Pod;
use crate::policy::filter::PodFilters;
use crate::policy::preemption::{Preemptor, Victims, pick_one_node};

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
}

/// Try preemption on the nodes at `unschedulable` (those whose failure
/// eviction might fix); every other node counts as "not helpful".
pub fn outlook(
    snapshot: &Snapshot,
    pod: &Pod,
    filters: PodFilters,
    unschedulable: &[NodeIdx],
    now: Timestamp,
) -> PreemptionOutlook {
    let total = snapshot.nodes().len();
    let mut preemptor = Preemptor::new(snapshot, pod, filters, now);
    if let Err(why) = preemptor.eligibility() {
        return PreemptionOutlook {
            message: format!("preemption: {why}"),
            candidates: Vec::new(),
            nominate: None,
        };
    }
    let mut found: Vec<(NodeIdx, Victims)> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    for &idx in unschedulable {
        match preemptor.select_victims(idx) {
            Ok(victims) => found.push((idx, victims)),
            Err(f) => failures.push(f.reason.to_string()),
        }
    }
    let nodes = snapshot.nodes();
    let candidates: Vec<PreemptionCandidate> = found
        .iter()
        .map(|(idx, victims)| {
            let info = &nodes[*idx as usize];
            PreemptionCandidate {
                node: info.node.name().to_string(),
                victims: victims
                    .pods
                    .iter()
                    .map(|v| info.pods[v.position as usize].metadata.key())
                    .collect(),
                pdb_violations: victims.num_pdb_violations,
            }
        })
        .collect();
    let all_victims: Vec<&Victims> = found.iter().map(|(_, v)| v).collect();
    let nominate = pick_one_node(&all_victims).map(|i| candidates[i].node.clone());
    let message = match &nominate {
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
