//! Pods nominated to a node and not yet bound there (`status.nominatedNodeName`
//! set, `spec.nodeName` empty). kube-scheduler checks whether the preemptor
//! fits with those of at least its priority counted as running on the node
//! (addGENominatedPods), so evicting pods for room a nominated pod will
//! take does not help.

use std::sync::Arc;

use crate::cluster::Snapshot;
use crate::model::Pod;

/// The pods nominated to `node` that count against `preemptor`: those of
/// lower priority are left out (they lose their nomination instead), and
/// so is the preemptor itself.
pub fn nominated_against<'s>(
    snapshot: &'s Snapshot,
    preemptor: &Pod,
    node: &str,
) -> Vec<&'s Arc<Pod>> {
    let priority = preemptor.priority();
    snapshot
        .nominated_to(node)
        .iter()
        .filter(|p| p.priority() >= priority && !is_same_pod(p, preemptor))
        .collect()
}

/// Upstream compares UIDs; a preemptor sent without one is recognised by
/// namespace and name.
fn is_same_pod(a: &Pod, b: &Pod) -> bool {
    if !a.metadata.uid.is_empty() && !b.metadata.uid.is_empty() {
        return a.metadata.uid == b.metadata.uid;
    }
    a.metadata.namespace == b.metadata.namespace && a.metadata.name == b.metadata.name
}
