//! Matched-term counts per topology domain (upstream
//! `topologyToMatchedTermCount`), remembering which pod put each count
//! there so a failure can name it.
//!
//! A [`DomainCounts`] is built once per incoming pod and then shared
//! (`Arc`); what preemption adds or removes afterwards lives in a small
//! [`Change`] list next to it, so cloning the filter state per node stays
//! cheap. Domains are the snapshot's interned ones, so judging a node of
//! the view is an array lookup per topology key.

use std::sync::Arc;

use crate::cluster::{ListedPod, PodRef, TopologyIndex};
use crate::model::{Node, Pod};
use crate::policy::domains::{Domain, DomainTable, KeyLookup, NodeAt};

/// The pod behind a count and the index of the term it matched (the
/// incoming pod's term, or the existing pod's own term for symmetry).
#[derive(Debug, Clone)]
pub struct Witness {
    pub pod: Arc<Pod>,
    pub term: usize,
}

/// A [`Witness`] counted at preparation: the pod by its place in one of
/// the [`DomainCounts`]' lists, so counting it takes no reference count.
#[derive(Debug, Clone, Copy)]
struct Listed {
    list: u32,
    at: u32,
    term: u32,
}

#[derive(Debug, Clone, Default)]
struct DomainEntry {
    count: i64,
    /// The pods counted here, in order. The first is kept inline: most
    /// hostname domains hold one pod, and a list each cost an allocation.
    first_witness: Option<Listed>,
    more_witnesses: Vec<Listed>,
}

impl DomainEntry {
    fn witness(&mut self, w: Listed) {
        if self.first_witness.is_none() {
            self.first_witness = Some(w);
        } else {
            self.more_witnesses.push(w);
        }
    }

    fn witnesses(&self) -> impl Iterator<Item = &Listed> {
        self.first_witness.iter().chain(&self.more_witnesses)
    }
}

#[derive(Debug, Clone)]
struct KeyCounts {
    lookup: KeyLookup,
    domains: DomainTable<DomainEntry>,
}

/// (topologyKey → domain → count) built during preparation.
#[derive(Debug, Clone)]
pub struct DomainCounts {
    topology: Arc<TopologyIndex>,
    by_key: Vec<KeyCounts>,
    /// The lists the witnesses' pods are in ([`Listed::list`]).
    lists: Vec<Arc<[PodRef]>>,
}

impl DomainCounts {
    pub fn new(topology: &Arc<TopologyIndex>) -> Self {
        Self {
            topology: Arc::clone(topology),
            by_key: Vec::new(),
            lists: Vec::new(),
        }
    }

    fn key(&self, key: &str) -> Option<&KeyCounts> {
        self.by_key.iter().find(|k| k.lookup.key == key)
    }

    /// The table of `key`, made when first asked for.
    fn table(&mut self, key: &str) -> &mut KeyCounts {
        let i = match self.by_key.iter().position(|k| k.lookup.key == key) {
            Some(i) => i,
            None => {
                let lookup = KeyLookup::new(&self.topology, key);
                let domains = DomainTable::sparse(&lookup);
                self.by_key.push(KeyCounts { lookup, domains });
                self.by_key.len() - 1
            }
        };
        &mut self.by_key[i]
    }

    /// +`n` on the node's domain for `key`; a node without the key adds
    /// nothing.
    pub fn add(&mut self, at: NodeAt<'_>, key: &str, n: i64) {
        let k = self.table(key);
        if let Some(entry) = k.domains.entry(k.lookup.of(at), DomainEntry::default) {
            entry.count += n;
        }
    }

    /// +1 on the node's domain for `key`, naming `pod` and the `term` it
    /// matched for reasons; a node without the key adds nothing.
    pub fn add_witnessed(&mut self, at: NodeAt<'_>, key: &str, pod: ListedPod<'_>, term: usize) {
        // Pods come list by list: only a new list is kept (one reference
        // count per list, not per pod).
        let list = match self.lists.last() {
            Some(last) if Arc::ptr_eq(last, pod.list) => self.lists.len() - 1,
            _ => {
                self.lists.push(Arc::clone(pod.list));
                self.lists.len() - 1
            }
        };
        let witness = Listed {
            list: list as u32,
            at: pod.at,
            term: term as u32,
        };
        let k = self.table(key);
        if let Some(entry) = k.domains.entry(k.lookup.of(at), DomainEntry::default) {
            entry.count += 1;
            entry.witness(witness);
        }
    }

    /// The pod and term a witness names.
    fn named(&self, w: &Listed) -> (&Pod, usize) {
        (
            &self.lists[w.list as usize][w.at as usize].pod,
            w.term as usize,
        )
    }

    /// The count on the node's domain for `key`; 0 when it lacks the key.
    pub fn count(&self, key: &str, at: NodeAt<'_>) -> i64 {
        self.entry(key, at).map_or(0, |d| d.count)
    }

    fn entry(&self, key: &str, at: NodeAt<'_>) -> Option<&DomainEntry> {
        let k = self.key(key)?;
        k.domains.get(k.lookup.of(at))
    }

    /// The count of a domain named by its value (for changes, which are few).
    fn count_value(&self, key: &str, value: &str) -> i64 {
        let Some(k) = self.key(key) else { return 0 };
        let domain = match k.lookup.id(value) {
            Some(id) => Domain::Known(id),
            None => Domain::Unknown(value),
        };
        k.domains.get(domain).map_or(0, |d| d.count)
    }

    fn nonzero_domains(&self) -> usize {
        self.by_key
            .iter()
            .flat_map(|k| k.domains.values())
            .filter(|d| d.count != 0)
            .count()
    }

    fn keys(&self) -> impl Iterator<Item = &str> {
        self.by_key.iter().map(|k| k.lookup.key.as_str())
    }
}

/// One pod added (+) or removed (−) after preparation, on one domain.
#[derive(Debug, Clone)]
struct Change {
    key: String,
    value: String,
    delta: i64,
    witness: Witness,
}

/// Prepared counts plus the changes made since; cheap to clone.
#[derive(Debug, Clone)]
pub struct LiveCounts {
    base: Arc<DomainCounts>,
    base_nonzero: usize,
    changes: Vec<Change>,
}

impl LiveCounts {
    pub fn new(base: DomainCounts) -> Self {
        Self {
            base_nonzero: base.nonzero_domains(),
            base: Arc::new(base),
            changes: Vec::new(),
        }
    }

    /// Record ±`delta` on the node's domain for `key` (nothing when the node
    /// lacks the key).
    pub fn change(&mut self, node: &Node, key: &str, delta: i64, witness: Witness) {
        if let Some(value) = node.label(key) {
            // A change that undoes an earlier one (a victim given back)
            // cancels it: victim selection removes and re-adds pods node
            // after node, and an ever-growing list made every count and
            // `is_empty` slower with each node tried.
            let undone = self.changes.iter().rposition(|c| {
                c.delta == -delta
                    && c.key == key
                    && c.value == value
                    && c.witness.term == witness.term
                    && c.witness.pod.metadata.namespace == witness.pod.metadata.namespace
                    && c.witness.pod.metadata.name == witness.pod.metadata.name
            });
            if let Some(i) = undone {
                self.changes.remove(i);
                return;
            }
            self.changes.push(Change {
                key: key.to_string(),
                value: value.to_string(),
                delta,
                witness,
            });
        }
    }

    /// The count on the node's domain for `key`; 0 when it lacks the key.
    pub fn count(&self, key: &str, at: NodeAt<'_>) -> i64 {
        let base = self.base.entry(key, at).map_or(0, |d| d.count);
        if self.changes.is_empty() {
            return base;
        }
        let Some(value) = at.node().label(key) else {
            return base;
        };
        base + self.changed(key, value)
    }

    fn changed(&self, key: &str, value: &str) -> i64 {
        self.changes
            .iter()
            .filter(|c| c.key == key && c.value == value)
            .map(|c| c.delta)
            .sum()
    }

    /// The node's domain for `key`, interned when preparation counted the
    /// key (only known domains can be cached by callers).
    pub fn domain<'a>(&self, key: &str, at: NodeAt<'a>) -> Domain<'a> {
        match self.base.key(key) {
            Some(k) => k.lookup.of(at),
            None => at
                .node()
                .label(key)
                .map_or(Domain::Missing, Domain::Unknown),
        }
    }

    /// The label value `domain` (of [`Self::domain`] for `key`) stands for,
    /// without reading the node's labels.
    pub fn value<'a>(&'a self, key: &str, domain: Domain<'a>) -> &'a str {
        match (self.base.key(key), domain) {
            (Some(k), domain) => k.lookup.value(domain),
            (None, Domain::Unknown(v)) => v,
            (None, _) => "",
        }
    }

    /// Upstream `len(map) == 0`: no domain holds a non-zero count.
    pub fn is_empty(&self) -> bool {
        let mut nonzero = self.base_nonzero;
        for (i, c) in self.changes.iter().enumerate() {
            let seen = self.changes[..i]
                .iter()
                .any(|p| p.key == c.key && p.value == c.value);
            if seen {
                continue;
            }
            let before = self.base.count_value(&c.key, &c.value);
            let after = before + self.changed(&c.key, &c.value);
            nonzero = nonzero + usize::from(after != 0) - usize::from(before != 0);
        }
        nonzero == 0
    }

    /// Topology keys that may hold counts, for checking a node's labels.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.base
            .keys()
            .chain(self.changes.iter().map(|c| c.key.as_str()))
    }

    /// A pod still counted on the node's domain for `key`, and the term it
    /// matched: a prepared one not removed since, else one added since.
    pub fn witness(&self, key: &str, at: NodeAt<'_>) -> Option<(&Pod, usize)> {
        // The node's label is read only when there are changes to match.
        let value = (!self.changes.is_empty())
            .then(|| at.node().label(key))
            .flatten();
        let here = |c: &&Change| c.key == key && Some(c.value.as_str()) == value;
        let removed = |pod: &Pod| {
            self.changes
                .iter()
                .filter(here)
                .any(|c| c.delta < 0 && same_pod(&c.witness.pod, pod))
        };
        let base = self.base.entry(key, at);
        let mut base =
            (base.into_iter().flat_map(DomainEntry::witnesses)).map(|w| self.base.named(w));
        base.find(|&(pod, _)| !removed(pod)).or_else(|| {
            self.changes
                .iter()
                .filter(here)
                .find(|c| c.delta > 0)
                .map(|c| (&*c.witness.pod, c.witness.term))
        })
    }
}

fn same_pod(a: &Pod, b: &Pod) -> bool {
    a.metadata.namespace == b.metadata.namespace && a.metadata.name == b.metadata.name
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn giving_a_pod_back_cancels_its_removal() {
        let node: Node = serde_json::from_value(
            json!({"metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}}}),
        )
        .unwrap();
        let pod = |name: &str| -> Arc<Pod> {
            Arc::new(
                serde_json::from_value(json!({"metadata": {"name": name, "namespace": "ns"}}))
                    .unwrap(),
            )
        };
        let witness = |name: &str| Witness {
            pod: pod(name),
            term: 0,
        };
        let at = NodeAt::unindexed(&node);
        let mut counts = LiveCounts::new(DomainCounts::new(&Arc::new(TopologyIndex::of(&[]))));
        let key = "kubernetes.io/hostname";
        for _ in 0..1_000 {
            counts.change(&node, key, -1, witness("a"));
            counts.change(&node, key, -1, witness("b"));
            counts.change(&node, key, 1, witness("a"));
            counts.change(&node, key, 1, witness("b"));
        }
        assert!(counts.changes.is_empty(), "{}", counts.changes.len());
        counts.change(&node, key, -1, witness("a"));
        counts.change(&node, key, 1, witness("b"));
        assert_eq!(counts.changes.len(), 2, "different pods do not cancel");
        assert_eq!(counts.count(key, at), 0);
    }
}
