//! Pods nominated to a node and not bound yet (`status.nominatedNodeName`
//! set, `spec.nodeName` empty), by the nominated node's name, so preemption
//! finds them per node instead of scanning every unbound pod per request.
//! The node need not be in the view.

use std::sync::Arc;

use foldhash::HashSet;

use super::update::ptr;
use super::{Map, PodRef};
use crate::model::Pod;

#[derive(Debug, Clone, Default)]
pub(super) struct NominatedIndex {
    by_node: Arc<Map<String, Arc<[Arc<Pod>]>>>,
}

/// The node `pod` is nominated to while it waits to be bound.
fn nominated_node(pod: &Pod) -> Option<&str> {
    let node = pod.status.nominated_node_name.as_str();
    (!node.is_empty() && pod.spec.node_name.is_empty()).then_some(node)
}

impl NominatedIndex {
    pub(super) fn build<'a>(refs: impl IntoIterator<Item = &'a PodRef>) -> Self {
        let mut by_node: Map<String, Vec<Arc<Pod>>> = Map::default();
        for r in refs {
            if let Some(node) = nominated_node(&r.pod) {
                by_node
                    .entry(node.to_string())
                    .or_default()
                    .push(r.pod.clone());
            }
        }
        Self {
            by_node: Arc::new(by_node.into_iter().map(|(k, v)| (k, v.into())).collect()),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.by_node.is_empty()
    }

    pub(super) fn on(&self, node: &str) -> &[Arc<Pod>] {
        self.by_node.get(node).map_or(&[], |v| &v[..])
    }

    /// A copy with `removed` pods gone and `added` ones in; only the lists
    /// of the nodes they are nominated to are copied.
    pub(super) fn with_changes(&self, removed: &[PodRef], added: &[PodRef]) -> Self {
        let mut touched: Map<&str, (HashSet<usize>, Vec<Arc<Pod>>)> = Map::default();
        for r in removed {
            if let Some(node) = nominated_node(&r.pod) {
                touched.entry(node).or_default().0.insert(ptr(&r.pod));
            }
        }
        for r in added {
            if let Some(node) = nominated_node(&r.pod) {
                touched.entry(node).or_default().1.push(r.pod.clone());
            }
        }
        if touched.is_empty() {
            return self.clone();
        }
        let mut by_node = (*self.by_node).clone();
        for (node, (gone, new)) in touched {
            let pods: Vec<Arc<Pod>> = self
                .on(node)
                .iter()
                .filter(|p| !gone.contains(&ptr(p)))
                .cloned()
                .chain(new)
                .collect();
            if pods.is_empty() {
                by_node.remove(node);
            } else {
                by_node.insert(node.to_string(), pods.into());
            }
        }
        Self {
            by_node: Arc::new(by_node),
        }
    }

    /// Every node's list, sorted, for comparing two indexes in tests.
    #[cfg(test)]
    pub(super) fn describe(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .by_node
            .iter()
            .map(|(node, pods)| {
                let mut keys: Vec<_> = pods.iter().map(|p| p.metadata.key()).collect();
                keys.sort();
                format!("nominated to {node}: {keys:?}")
            })
            .collect();
        out.sort();
        out
    }
}
