//! Matched-term counts per topology domain (upstream
//! `topologyToMatchedTermCount`), remembering which pod put each count
//! there so a failure can name it.
//!
//! A [`DomainCounts`] is built once per incoming pod and then shared
//! (`Arc`); what preemption adds or removes afterwards lives in a small
//! [`Changes`] list next to it, so cloning the filter state per node stays
//! cheap.

use std::sync::Arc;

use crate::model::{Node, Pod};

type Map<K, V> = foldhash::HashMap<K, V>;

/// The pod behind a count and the index of the term it matched (the
/// incoming pod's term, or the existing pod's own term for symmetry).
#[derive(Debug, Clone)]
pub struct Witness {
    pub pod: Arc<Pod>,
    pub term: usize,
}

#[derive(Debug, Clone, Default)]
struct Domain {
    count: i64,
    witnesses: Vec<Witness>,
}

/// (topologyKey → value → count) built during preparation.
#[derive(Debug, Clone, Default)]
pub struct DomainCounts {
    by_key: Map<String, Map<String, Domain>>,
}

impl DomainCounts {
    /// +`n` on (`key`, the node's value for `key`); a node without the key
    /// adds nothing. `witness` is kept when the caller wants names in reasons.
    pub fn add(&mut self, node: &Node, key: &str, n: i64, witness: Option<Witness>) {
        let Some(value) = node.label(key) else {
            return;
        };
        let values = match self.by_key.get_mut(key) {
            Some(v) => v,
            None => self.by_key.entry(key.to_string()).or_default(),
        };
        let domain = match values.get_mut(value) {
            Some(d) => d,
            None => values.entry(value.to_string()).or_default(),
        };
        domain.count += n;
        domain.witnesses.extend(witness);
    }

    fn count(&self, key: &str, value: &str) -> i64 {
        self.by_key
            .get(key)
            .and_then(|v| v.get(value))
            .map_or(0, |d| d.count)
    }

    fn witnesses(&self, key: &str, value: &str) -> &[Witness] {
        self.by_key
            .get(key)
            .and_then(|v| v.get(value))
            .map_or(&[][..], |d| &d.witnesses[..])
    }

    fn nonzero_domains(&self) -> usize {
        self.by_key
            .values()
            .flat_map(|v| v.values())
            .filter(|d| d.count != 0)
            .count()
    }

    fn keys(&self) -> impl Iterator<Item = &str> {
        self.by_key.keys().map(String::as_str)
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
#[derive(Debug, Clone, Default)]
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
            self.changes.push(Change {
                key: key.to_string(),
                value: value.to_string(),
                delta,
                witness,
            });
        }
    }

    pub fn count(&self, key: &str, value: &str) -> i64 {
        self.base.count(key, value)
            + self
                .changes
                .iter()
                .filter(|c| c.key == key && c.value == value)
                .map(|c| c.delta)
                .sum::<i64>()
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
            let before = self.base.count(&c.key, &c.value);
            let after = self.count(&c.key, &c.value);
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

    /// A pod still counted on (`key`, `value`): a prepared one not removed
    /// since, else one added since.
    pub fn witness(&self, key: &str, value: &str) -> Option<&Witness> {
        let here = |c: &&Change| c.key == key && c.value == value;
        let removed = |w: &Witness| {
            self.changes
                .iter()
                .filter(here)
                .any(|c| c.delta < 0 && same_pod(&c.witness.pod, &w.pod))
        };
        self.base
            .witnesses(key, value)
            .iter()
            .find(|w| !removed(w))
            .or_else(|| {
                self.changes
                    .iter()
                    .filter(here)
                    .find(|c| c.delta > 0)
                    .map(|c| &c.witness)
            })
    }
}

fn same_pod(a: &Pod, b: &Pod) -> bool {
    a.metadata.namespace == b.metadata.namespace && a.metadata.name == b.metadata.name
}
