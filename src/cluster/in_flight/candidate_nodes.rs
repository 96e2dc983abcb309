//! The nodes a pod in flight may be on, kept as the view listed them when
//! kube-arbiter answered for the pod.

use std::sync::Arc;

use crate::cluster::{NodeIdx, NodeList, Snapshot};
use crate::model::Node;

/// The answering snapshot's node list (shared in chunks, not copied) and
/// the candidates' places in it. Recording a pod's few hundred candidates
/// as node handles took a reference count on each node object, a cache
/// miss apiece, and gave each back when the entry went: on the served
/// path that was about a tenth of a live `prioritize`
/// (docs/extender-performance.md). Holding the list keeps that version's
/// changed chunks alive while the pod is in flight, a few KB per entry
/// (docs/memory.md).
#[derive(Debug, Clone)]
pub struct CandidateNodes {
    nodes: NodeList,
    idxs: Arc<[NodeIdx]>,
}

impl CandidateNodes {
    /// The nodes at `idxs` in `snapshot`'s list; places past its end are
    /// left out.
    pub fn new(snapshot: &Snapshot, mut idxs: Vec<NodeIdx>) -> Self {
        let nodes = snapshot.nodes();
        idxs.retain(|&i| (i as usize) < nodes.len());
        Self {
            nodes: nodes.clone(),
            idxs: idxs.into(),
        }
    }

    /// The view's nodes named `names` in `snapshot`, in that order; names
    /// it does not list are left out.
    #[cfg(test)]
    pub fn named<'n>(snapshot: &Snapshot, names: impl IntoIterator<Item = &'n str>) -> Self {
        let idxs = names.into_iter().filter_map(|n| snapshot.node_idx(n));
        Self::new(snapshot, idxs.collect())
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<Node>> {
        self.idxs.iter().map(|&i| &self.nodes[i as usize].node)
    }
}
