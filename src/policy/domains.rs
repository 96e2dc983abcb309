//! Finding a node's topology domain fast, and per-domain tables.
//!
//! A node judged by a rule is either the view's own node object (its
//! [`NodeIdx`] is known: its domain for any key is an array lookup in the
//! snapshot's [`TopologyIndex`]) or a node only the request knows (Nodes
//! mode): then its label value is looked up by string, and may be a value
//! no node of the view carries.

use std::sync::Arc;

use crate::cluster::{ByNode, DomainId, KeyDomains, NodeIdx, NodeList, Snapshot, TopologyIndex};
use crate::model::Node;

/// A node being judged, with its index when it is the view's node object
/// (same labels); `idx: None` makes every lookup go by label value.
#[derive(Debug, Clone, Copy)]
pub struct NodeAt<'a> {
    object: Object<'a>,
    pub idx: Option<NodeIdx>,
    /// Known to be neither cordoned nor tainted NoSchedule or NoExecute
    /// (see [`Snapshot::node_is_plain`]); `false` when not known.
    pub plain: bool,
}

/// Where a [`NodeAt`]'s node object is. A view node's is read from the
/// view's list only when a rule asks for it: the rules judge a plain
/// indexed node by array lookups, and reading its object first was a
/// cache miss per candidate of a served filter.
#[derive(Debug, Clone, Copy)]
enum Object<'a> {
    Given(&'a Node),
    InView(&'a NodeList, NodeIdx),
}

impl<'a> NodeAt<'a> {
    /// A node of the view, at its index.
    #[inline]
    pub fn indexed(node: &'a Node, idx: NodeIdx) -> Self {
        Self {
            object: Object::Given(node),
            idx: Some(idx),
            plain: false,
        }
    }

    /// The view's node at `idx`, with what the view knows of it; its
    /// object is read when first asked for.
    #[inline]
    pub fn in_view(snapshot: &'a Snapshot, idx: NodeIdx) -> Self {
        Self {
            object: Object::InView(snapshot.nodes(), idx),
            idx: Some(idx),
            plain: snapshot.node_is_plain(idx),
        }
    }

    /// A node judged by its labels only.
    pub fn unindexed(node: &'a Node) -> Self {
        Self {
            object: Object::Given(node),
            idx: None,
            plain: false,
        }
    }

    /// The node object.
    #[inline]
    pub fn node(&self) -> &'a Node {
        match self.object {
            Object::Given(node) => node,
            Object::InView(nodes, idx) => &nodes[idx as usize].node,
        }
    }
}

impl<'a> NodeAt<'a> {
    /// A node object from a request: indexed when the view has a node of
    /// that name with the same labels (topology lookups depend only on
    /// labels), else judged by its own labels.
    pub fn resolve(snapshot: &Snapshot, node: &'a Arc<Node>) -> Self {
        let idx = snapshot
            .node_idx(node.name())
            .filter(|&i| snapshot.same_labels(i, node));
        Self {
            object: Object::Given(node),
            idx,
            plain: false,
        }
    }
}

impl<'a> From<&'a Node> for NodeAt<'a> {
    fn from(node: &'a Node) -> Self {
        Self::unindexed(node)
    }
}

/// Where a node falls for one topology key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Domain<'a> {
    /// The node has no label with the key.
    Missing,
    /// A value some node of the view carries.
    Known(DomainId),
    /// A value no node of the view carries (a request-only node).
    Unknown(&'a str),
}

/// One topology key, resolved against the view once per prepared pod.
#[derive(Debug, Clone)]
pub struct KeyLookup {
    pub key: String,
    domains: Option<Arc<KeyDomains>>,
}

impl KeyLookup {
    pub fn new(topology: &TopologyIndex, key: &str) -> Self {
        Self {
            key: key.to_string(),
            domains: topology.key(key).cloned(),
        }
    }

    /// The node's domain for this key.
    #[inline]
    pub fn of<'a>(&self, at: NodeAt<'a>) -> Domain<'a> {
        if let Some(idx) = at.idx {
            // The view's node: no view node has the key ⇒ neither has it.
            return match self.domains.as_ref().and_then(|d| d.of_node(idx)) {
                Some(id) => Domain::Known(id),
                None => Domain::Missing,
            };
        }
        match at.node().label(&self.key) {
            None => Domain::Missing,
            Some(value) => match self.domains.as_ref().and_then(|d| d.id(value)) {
                Some(id) => Domain::Known(id),
                None => Domain::Unknown(value),
            },
        }
    }

    /// Every view node's domain id for the key (all `None` when no node
    /// has it).
    pub fn by_node(&self) -> ByNode<'_> {
        self.domains
            .as_ref()
            .map_or_else(ByNode::default, |d| d.by_node())
    }

    /// The id of a value some view node carries for the key.
    pub fn id(&self, value: &str) -> Option<DomainId> {
        self.domains.as_ref().and_then(|d| d.id(value))
    }

    /// Whether every node of the view (`node_count` of them) has the key.
    pub fn on_every_node(&self, node_count: usize) -> bool {
        self.domains
            .as_ref()
            .is_some_and(|d| d.nodes_with_key() == node_count)
    }

    /// The domain of the empty value, where upstream files nodes that lack
    /// the key when it reads `node.Labels[key]`.
    pub fn empty_value(&self) -> Domain<'static> {
        self.id("").map_or(Domain::Unknown(""), Domain::Known)
    }

    /// Number of values the view knows for the key.
    pub fn known_len(&self) -> usize {
        self.domains.as_ref().map_or(0, |d| d.len())
    }

    /// The label value of a domain.
    pub fn value<'a>(&'a self, domain: Domain<'a>) -> &'a str {
        match domain {
            Domain::Known(id) => self.domains.as_ref().map_or("", |d| d.value(id)),
            Domain::Unknown(v) => v,
            Domain::Missing => "",
        }
    }
}

/// A value per domain of one key: dense (an array slot per value the view
/// knows) or sparse (a 4-byte position per known value, the values written
/// packed: for tables that hold a few of many domains, e.g. one entry per
/// host with a matching pod out of 5,000 hosts, where a `T` per host,
/// allocated and dropped per request, cost more than the lookups), plus a
/// short list for values only requests or what-if changes brought in.
#[derive(Debug, Clone)]
pub struct DomainTable<T> {
    known: Known<T>,
    unknown: Vec<(String, T)>,
}

#[derive(Debug, Clone)]
enum Known<T> {
    Dense(Vec<Option<T>>),
    /// A slot per known domain holding the position of its entry (or
    /// [`NO_ENTRY`]), the entries packed: a 4-byte slot per domain instead
    /// of a whole `T`, and no hashing on the per-node path.
    Sparse {
        slots: Vec<u32>,
        entries: Vec<T>,
    },
}

const NO_ENTRY: u32 = u32::MAX;

/// Room made for a sparse table's entries on its first one.
const SPARSE_FIRST_RESERVE: usize = 64;

impl<T> DomainTable<T> {
    pub fn new(lookup: &KeyLookup) -> Self {
        Self {
            known: Known::Dense(
                std::iter::repeat_with(|| None)
                    .take(lookup.known_len())
                    .collect(),
            ),
            unknown: Vec::new(),
        }
    }

    /// A table of `lookup`'s domains that stores only the ones written to.
    pub fn sparse(lookup: &KeyLookup) -> Self {
        Self {
            known: Known::Sparse {
                slots: vec![NO_ENTRY; lookup.known_len()],
                entries: Vec::new(),
            },
            unknown: Vec::new(),
        }
    }

    #[inline]
    pub fn get(&self, domain: Domain<'_>) -> Option<&T> {
        match domain {
            Domain::Known(id) => match &self.known {
                Known::Dense(slots) => slots.get(id as usize)?.as_ref(),
                Known::Sparse { slots, entries } => entries.get(*slots.get(id as usize)? as usize),
            },
            Domain::Unknown(v) => self.unknown.iter().find(|(k, _)| k == v).map(|(_, t)| t),
            Domain::Missing => None,
        }
    }

    #[inline]
    pub fn get_mut(&mut self, domain: Domain<'_>) -> Option<&mut T> {
        match domain {
            Domain::Known(id) => match &mut self.known {
                Known::Dense(slots) => slots.get_mut(id as usize)?.as_mut(),
                Known::Sparse { slots, entries } => {
                    entries.get_mut(*slots.get(id as usize)? as usize)
                }
            },
            Domain::Unknown(v) => self
                .unknown
                .iter_mut()
                .find(|(k, _)| k == v)
                .map(|(_, t)| t),
            Domain::Missing => None,
        }
    }

    /// The entry of `domain`, created with `init` when absent; `None` for a
    /// node without the key.
    #[inline]
    pub fn entry(&mut self, domain: Domain<'_>, init: impl FnOnce() -> T) -> Option<&mut T> {
        match domain {
            Domain::Known(id) => match &mut self.known {
                Known::Dense(slots) => Some(slots.get_mut(id as usize)?.get_or_insert_with(init)),
                Known::Sparse { slots, entries } => {
                    let known = slots.len();
                    let slot = slots.get_mut(id as usize)?;
                    if *slot == NO_ENTRY {
                        if entries.is_empty() {
                            // Hundreds of hostname domains grew the list
                            // from 4 by doubling, copying it each time.
                            entries.reserve(known.min(SPARSE_FIRST_RESERVE));
                        }
                        *slot = entries.len() as u32;
                        entries.push(init());
                    }
                    entries.get_mut(*slot as usize)
                }
            },
            Domain::Unknown(v) => {
                let i = match self.unknown.iter().position(|(k, _)| k == v) {
                    Some(i) => i,
                    None => {
                        self.unknown.push((v.to_string(), init()));
                        self.unknown.len() - 1
                    }
                };
                Some(&mut self.unknown[i].1)
            }
            Domain::Missing => None,
        }
    }

    /// Number of present entries.
    pub fn len(&self) -> usize {
        let known = match &self.known {
            Known::Dense(slots) => slots.iter().flatten().count(),
            Known::Sparse { entries, .. } => entries.len(),
        };
        known + self.unknown.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every present entry.
    pub fn values(&self) -> impl Iterator<Item = &T> {
        let (dense, sparse) = match &self.known {
            Known::Dense(slots) => (Some(slots.iter().flatten()), None),
            Known::Sparse { entries, .. } => (None, Some(entries.iter())),
        };
        dense
            .into_iter()
            .flatten()
            .chain(sparse.into_iter().flatten())
            .chain(self.unknown.iter().map(|(_, t)| t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::make_node;

    /// A view node's object, read when asked for, is the view's own, and
    /// the view's flags and index come with it.
    #[test]
    fn a_view_node_is_read_from_the_view_when_asked() {
        let s = crate::testing::snapshot(
            vec![
                make_node("a").obj(),
                make_node("b").taint("gpu", "yes", "NoSchedule").obj(),
            ],
            vec![],
        );
        for idx in 0..s.nodes().len() as NodeIdx {
            let at = NodeAt::in_view(&s, idx);
            assert!(std::ptr::eq(at.node(), &*s.nodes()[idx as usize].node));
            assert_eq!(at.idx, Some(idx));
            assert_eq!(at.plain, s.node_is_plain(idx));
        }
        let given = make_node("c").obj();
        assert!(std::ptr::eq(NodeAt::unindexed(&given).node(), &given));
    }

    fn node(labels: &[(&str, &str)]) -> Node {
        make_node("").labels(labels).obj()
    }

    #[test]
    fn indexed_and_label_lookups_agree_and_foreign_values_are_unknown() {
        let nodes = [node(&[("zone", "a")]), node(&[("zone", "b")]), node(&[])];
        let shared: Vec<_> = nodes.iter().cloned().map(Arc::new).collect();
        let zone = KeyLookup::new(&TopologyIndex::of(&shared), "zone");
        for (i, n) in nodes.iter().enumerate() {
            assert_eq!(
                zone.of(NodeAt::indexed(n, i as NodeIdx)),
                zone.of(NodeAt::unindexed(n))
            );
        }
        assert_eq!(zone.of(NodeAt::indexed(&nodes[2], 2)), Domain::Missing);
        let foreign = node(&[("zone", "z")]);
        let d = zone.of(NodeAt::unindexed(&foreign));
        assert_eq!(d, Domain::Unknown("z"));
        assert_eq!(zone.value(d), "z");
        let missing_key = KeyLookup::new(&TopologyIndex::of(&shared), "rack");
        assert_eq!(
            missing_key.of(NodeAt::indexed(&nodes[0], 0)),
            Domain::Missing
        );
        assert_eq!(missing_key.of(NodeAt::unindexed(&foreign)), Domain::Missing);
    }

    #[test]
    fn tables_hold_known_and_unknown_domains() {
        let shared = [
            Arc::new(node(&[("zone", "a")])),
            Arc::new(node(&[("zone", "b")])),
            Arc::new(node(&[("zone", "c")])),
        ];
        let zone = KeyLookup::new(&TopologyIndex::of(&shared), "zone");
        for mut t in [DomainTable::<i64>::new(&zone), DomainTable::sparse(&zone)] {
            assert_eq!(t.get(Domain::Known(0)), None);
            *t.entry(Domain::Known(2), || 0).unwrap() += 5;
            *t.entry(Domain::Known(0), || 0).unwrap() += 2;
            *t.entry(Domain::Unknown("x"), || 0).unwrap() += 1;
            *t.entry(Domain::Unknown("x"), || 0).unwrap() += 1;
            assert!(t.entry(Domain::Missing, || 0).is_none());
            assert!(t.entry(Domain::Known(3), || 0).is_none(), "beyond the view");
            assert_eq!(t.get(Domain::Known(0)), Some(&2));
            assert_eq!(t.get(Domain::Known(1)), None);
            assert_eq!(t.get(Domain::Known(2)), Some(&5));
            *t.get_mut(Domain::Known(2)).unwrap() -= 1;
            assert_eq!(t.get(Domain::Unknown("x")), Some(&2));
            assert_eq!(t.len(), 3);
            assert_eq!(t.values().sum::<i64>(), 8);
        }
    }
}
