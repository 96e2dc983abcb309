//! Which nodes a pod's nodeSelector and required node affinity admit,
//! remembered next to the node labels they were decided on.
//!
//! Deciding it reads every node of the view (5,000 array lookups per
//! requirement) and was about a tenth of a filter and of a prioritize. The
//! answer depends only on the nodes' labels and names, so it holds for as
//! long as the [`super::TopologyIndex`] it is stored in: pod changes share
//! that index, and a node change that touches labels (or adds a node)
//! builds a new, empty one. The replicas of one workload, and filter then
//! prioritize of one pod, ask with equal constraints and find it here.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use super::NodeIdx;
use crate::model::pod::NodeSelector;

/// How many distinct constraint sets are kept; the oldest goes first. Each
/// is one byte per node.
const CAPACITY: usize = 32;

/// A set of the view's nodes, both as a per-node mask and as a list.
#[derive(Debug)]
pub struct NodeSet {
    mask: Box<[bool]>,
    members: Box<[NodeIdx]>,
}

impl NodeSet {
    /// The set whose members are the `true` positions of `mask`.
    pub fn from_mask(mask: Vec<bool>) -> Self {
        let members = (0..mask.len() as NodeIdx)
            .filter(|&i| mask[i as usize])
            .collect();
        Self {
            mask: mask.into(),
            members,
        }
    }

    /// Node `idx` is in the set (`None`: no such node in the view).
    #[inline]
    pub fn get(&self, idx: usize) -> Option<bool> {
        self.mask.get(idx).copied()
    }

    /// The members, ascending.
    pub fn members(&self) -> &[NodeIdx] {
        &self.members
    }
}

#[derive(Debug)]
struct Entry {
    node_selector: BTreeMap<String, String>,
    required: Option<NodeSelector>,
    admitted: Arc<NodeSet>,
}

/// Admitted-node sets by (nodeSelector, required node affinity).
#[derive(Debug, Default)]
pub struct NodeSets(Mutex<Vec<Entry>>);

impl Clone for NodeSets {
    /// A copy starts empty: it may be used for other nodes.
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl NodeSets {
    /// The set remembered for these constraints, or `decide()`'s answer,
    /// now remembered. `decide` runs without the lock held.
    pub fn get_or(
        &self,
        node_selector: &BTreeMap<String, String>,
        required: Option<&NodeSelector>,
        decide: impl FnOnce() -> Vec<bool>,
    ) -> Arc<NodeSet> {
        let same = |e: &Entry| e.required.as_ref() == required && e.node_selector == *node_selector;
        if let Some(e) = self.entries().iter().find(|e| same(e)) {
            return Arc::clone(&e.admitted);
        }
        let admitted = Arc::new(NodeSet::from_mask(decide()));
        let mut entries = self.entries();
        if !entries.iter().any(same) {
            if entries.len() == CAPACITY {
                entries.remove(0);
            }
            entries.push(Entry {
                node_selector: node_selector.clone(),
                required: required.cloned(),
                admitted: Arc::clone(&admitted),
            });
        }
        admitted
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        // A panic while holding the lock cannot leave an entry half written.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries().len()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn selector(zone: &str) -> NodeSelector {
        serde_json::from_value(json!({"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "zone", "operator": "In", "values": [zone]}]}]}))
        .unwrap()
    }

    fn mask(set: &NodeSet) -> Vec<bool> {
        (0..).map_while(|i| set.get(i)).collect()
    }

    #[test]
    fn a_set_lists_its_members() {
        let set = NodeSet::from_mask(vec![false, true, true, false, true]);
        assert_eq!(set.members(), [1, 2, 4]);
        assert_eq!(mask(&set), [false, true, true, false, true]);
        assert_eq!(set.get(5), None);
    }

    #[test]
    fn equal_constraints_are_decided_once() {
        let sets = NodeSets::default();
        let none = BTreeMap::new();
        let a = selector("a");
        let mut decided = 0;
        let mut ask = |s: &NodeSelector, answer: bool| {
            sets.get_or(&none, Some(s), || {
                decided += 1;
                vec![answer]
            })
        };
        assert_eq!(mask(&ask(&a, true)), [true]);
        assert_eq!(mask(&ask(&selector("a"), false)), [true], "remembered");
        assert_eq!(
            mask(&ask(&selector("b"), false)),
            [false],
            "other constraints"
        );
        assert_eq!(decided, 2);
    }

    #[test]
    fn node_selector_and_affinity_both_tell_entries_apart() {
        let sets = NodeSets::default();
        let gpu: BTreeMap<String, String> = [("gpu".to_string(), "yes".to_string())].into();
        let none = BTreeMap::new();
        assert_eq!(mask(&sets.get_or(&none, None, || vec![true])), [true]);
        assert_eq!(mask(&sets.get_or(&gpu, None, || vec![false])), [false]);
        let a = selector("a");
        let both = sets.get_or(&gpu, Some(&a), || vec![true, false]);
        assert_eq!(mask(&both), [true, false]);
        assert_eq!(mask(&sets.get_or(&none, None, || unreachable!())), [true]);
        assert_eq!(sets.len(), 3);
    }

    #[test]
    fn the_oldest_entry_goes_when_full_and_a_clone_starts_empty() {
        let sets = NodeSets::default();
        let none = BTreeMap::new();
        let zones: Vec<NodeSelector> = (0..=CAPACITY).map(|i| selector(&i.to_string())).collect();
        for z in &zones {
            sets.get_or(&none, Some(z), || vec![true]);
        }
        assert_eq!(sets.len(), CAPACITY);
        let mut again = false;
        sets.get_or(&none, Some(&zones[0]), || {
            again = true;
            vec![true]
        });
        assert!(again, "the first entry was evicted");
        assert_eq!(sets.clone().len(), 0);
    }
}
