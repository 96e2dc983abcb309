//! Topology domains of every node label key, interned: each value of a key
//! gets a small id and each node the id of its value, so per-node rule
//! checks are array lookups instead of label-map and string-hash lookups.
//! Built whole from the node list (node changes are rare next to requests).

use std::sync::Arc;

use super::node_sets::NodeSets;
use super::{Map, NodeIdx};
use crate::model::Node;

/// Id of one value of a label key, dense from 0 within that key.
pub type DomainId = u32;

/// Marks a node without the key in [`KeyDomains::node_domains`].
const NO_DOMAIN: DomainId = DomainId::MAX;

/// The domain id of each view node for one key ([`KeyDomains::by_node`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct ByNode<'a>(&'a [DomainId]);

impl ByNode<'_> {
    /// The domain of node `idx`; `None` when it lacks the key.
    #[inline]
    pub fn get(&self, idx: usize) -> Option<DomainId> {
        match self.0.get(idx) {
            Some(&d) if d != NO_DOMAIN => Some(d),
            _ => None,
        }
    }
}

/// The domains of one label key.
#[derive(Debug, Clone, Default)]
pub struct KeyDomains {
    values: Vec<String>,
    ids: Map<String, DomainId>,
    /// Per [`NodeIdx`]: the id of the node's value, or `NO_DOMAIN`.
    node_domains: Vec<DomainId>,
    /// Per domain: how many nodes carry the value.
    node_counts: Vec<u32>,
    /// How many nodes carry the key.
    with_key: usize,
}

impl KeyDomains {
    /// Number of distinct values (domain ids are `0..len()`).
    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    pub fn id(&self, value: &str) -> Option<DomainId> {
        self.ids.get(value).copied()
    }

    pub fn value(&self, id: DomainId) -> &str {
        &self.values[id as usize]
    }

    /// The domain of the view's node `idx`; `None` when it lacks the key.
    #[inline]
    pub fn of_node(&self, idx: NodeIdx) -> Option<DomainId> {
        match self.node_domains.get(idx as usize) {
            Some(&d) if d != NO_DOMAIN => Some(d),
            _ => None,
        }
    }

    /// Every view node's domain id, by [`NodeIdx`], for tight loops.
    pub fn by_node(&self) -> ByNode<'_> {
        ByNode(&self.node_domains)
    }

    /// How many nodes of the view carry the value `id`.
    pub fn node_count(&self, id: DomainId) -> u32 {
        self.node_counts[id as usize]
    }

    /// How many nodes of the view carry the key at all.
    pub fn nodes_with_key(&self) -> usize {
        self.with_key
    }

    /// Values with their node counts, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u32)> {
        self.values
            .iter()
            .map(String::as_str)
            .zip(self.node_counts.iter().copied())
    }
}

/// Label key → its domains, for every key some node carries.
#[derive(Debug, Clone, Default)]
pub struct TopologyIndex {
    keys: Map<String, Arc<KeyDomains>>,
    /// Admitted-node sets decided on these nodes' labels.
    node_sets: NodeSets,
}

impl TopologyIndex {
    /// Index the labels of `nodes` (in [`NodeIdx`] order).
    pub fn of(nodes: &[Arc<Node>]) -> Self {
        let mut keys: Map<String, KeyDomains> = Map::default();
        for (idx, node) in nodes.iter().enumerate() {
            for (key, value) in &node.metadata.labels {
                let domains = match keys.get_mut(key.as_str()) {
                    Some(d) => d,
                    None => keys.entry(key.clone()).or_default(),
                };
                let id = match domains.ids.get(value.as_str()) {
                    Some(&id) => id,
                    None => {
                        let id = domains.values.len() as DomainId;
                        domains.values.push(value.clone());
                        domains.ids.insert(value.clone(), id);
                        domains.node_counts.push(0);
                        id
                    }
                };
                domains.node_counts[id as usize] += 1;
                domains.with_key += 1;
                if domains.node_domains.len() < nodes.len() {
                    domains.node_domains.resize(nodes.len(), NO_DOMAIN);
                }
                domains.node_domains[idx] = id;
            }
        }
        Self {
            keys: keys.into_iter().map(|(k, d)| (k, Arc::new(d))).collect(),
            node_sets: NodeSets::default(),
        }
    }

    /// The domains of `key`; `None` when no node carries it.
    pub fn key(&self, key: &str) -> Option<&Arc<KeyDomains>> {
        self.keys.get(key)
    }

    /// The node sets decided on this index's nodes (see [`NodeSets`]).
    pub fn node_sets(&self) -> &NodeSets {
        &self.node_sets
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::make_node;

    /// A nameless node with these labels: only the labels count here.
    fn node(labels: &[(&str, &str)]) -> Arc<Node> {
        Arc::new(make_node("").labels(labels).obj())
    }

    #[test]
    fn each_node_gets_the_id_of_its_value_and_nodes_without_the_key_none() {
        let nodes = [
            node(&[("zone", "a")]),
            node(&[("zone", "b"), ("gpu", "yes")]),
            node(&[("zone", "a")]),
            node(&[]),
        ];
        let index = TopologyIndex::of(&nodes);
        let zone = index.key("zone").unwrap();
        assert_eq!(zone.len(), 2);
        let a = zone.id("a").unwrap();
        assert_eq!(zone.of_node(0), Some(a));
        assert_eq!(zone.of_node(2), Some(a));
        assert_eq!(zone.value(zone.of_node(1).unwrap()), "b");
        assert_eq!(zone.of_node(3), None);
        assert_eq!(zone.node_count(a), 2);
        assert_eq!(zone.nodes_with_key(), 3);
        let gpu = index.key("gpu").unwrap();
        assert_eq!(gpu.of_node(0), None);
        assert_eq!(gpu.of_node(1), Some(0));
        assert_eq!(gpu.of_node(3), None, "trailing nodes without the key");
        assert!(index.key("rack").is_none());
    }
}
