//! Pods nominated to a node and not yet bound there (`status.nominatedNodeName`
//! set, `spec.nodeName` empty). kube-scheduler checks whether the preemptor
//! fits with those of at least its priority counted as running on the node
//! (addGENominatedPods), so evicting pods for room a nominated pod will
//! take does not help.

use std::sync::Arc;

use foldhash::HashMap;

use crate::cluster::Snapshot;
use crate::model::Pod;

/// Nominated pods by node, those that count against `preemptor` only.
pub struct NominatedPods<'s> {
    by_node: HashMap<&'s str, Vec<&'s Arc<Pod>>>,
}

impl<'s> NominatedPods<'s> {
    /// One pass over the unbound pods of the view. Pods of lower priority
    /// than the preemptor are left out (they lose their nomination instead),
    /// and so is the preemptor itself.
    pub fn new(snapshot: &'s Snapshot, preemptor: &Pod) -> Self {
        let mut by_node: HashMap<&'s str, Vec<&'s Arc<Pod>>> = HashMap::default();
        let priority = preemptor.priority();
        for (_, pods) in snapshot.namespaces_with_pods() {
            for r in pods.iter().filter(|r| r.node.is_none()) {
                let pod = &r.pod;
                let node = pod.status.nominated_node_name.as_str();
                if node.is_empty()
                    || !pod.spec.node_name.is_empty()
                    || pod.priority() < priority
                    || is_same_pod(pod, preemptor)
                {
                    continue;
                }
                by_node.entry(node).or_default().push(pod);
            }
        }
        Self { by_node }
    }

    pub fn on(&self, node: &str) -> &[&'s Arc<Pod>] {
        self.by_node.get(node).map_or(&[], Vec::as_slice)
    }
}

/// Upstream compares UIDs; a preemptor sent without one is recognised by
/// namespace and name.
fn is_same_pod(a: &Pod, b: &Pod) -> bool {
    if !a.metadata.uid.is_empty() && !b.metadata.uid.is_empty() {
        return a.metadata.uid == b.metadata.uid;
    }
    a.metadata.namespace == b.metadata.namespace && a.metadata.name == b.metadata.name
}
