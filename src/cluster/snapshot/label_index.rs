//! Pods of a namespace by label, built lazily per namespace: a selector's
//! equality requirements (`matchLabels`, `In` with one value) narrow the
//! namespace's pods to one posting list before the full selector is
//! checked. Spread and affinity preparation would otherwise match every pod
//! of the namespace (thousands) against the selector on each request.
//!
//! The cache is shared by all snapshots derived incrementally from one
//! build; an entry is valid while it was built from the namespace's
//! current pod list (same allocation), and is rebuilt on first use after
//! that list changed, one label key at a time.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use super::{Map, PodRef};
use crate::model::LabelSelector;
use crate::model::selector::SelectorOperator;

/// One label key's values → positions in the namespace's pod list.
type Postings = Map<String, Vec<u32>>;

#[derive(Debug)]
struct Entry {
    built_from: Weak<[PodRef]>,
    /// Built per label key on first use: an event in the namespace makes
    /// the next request index only the keys its selectors ask about.
    by_key: Mutex<Map<String, Arc<Postings>>>,
}

impl Entry {
    fn postings(&self, key: &str, pods: &[PodRef]) -> Arc<Postings> {
        let mut by_key = self.by_key.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(p) = by_key.get(key) {
            return Arc::clone(p);
        }
        let mut postings = Postings::default();
        for (i, r) in pods.iter().enumerate() {
            if let Some(v) = r.pod.metadata.labels.get(key) {
                match postings.get_mut(v.as_str()) {
                    Some(list) => list.push(i as u32),
                    None => {
                        postings.insert(v.clone(), vec![i as u32]);
                    }
                }
            }
        }
        let postings = Arc::new(postings);
        by_key.insert(key.to_string(), Arc::clone(&postings));
        postings
    }
}

#[derive(Debug, Default)]
pub struct LabelIndex {
    by_namespace: Mutex<Map<String, Arc<Entry>>>,
}

impl LabelIndex {
    /// The pods of `pods` (the namespace's current list) that carry every
    /// equality requirement of `selector`: a superset of the pods it
    /// selects, in list order. Without such a requirement, all of them.
    pub fn candidates<'a>(
        &self,
        namespace: &str,
        pods: &'a Arc<[PodRef]>,
        selector: &LabelSelector,
    ) -> Candidates<'a> {
        let equalities = selector
            .match_labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .chain(selector.match_expressions.iter().filter_map(|r| {
                match (r.operator, r.values.as_slice()) {
                    (SelectorOperator::In, [v]) => Some((r.key.as_str(), v.as_str())),
                    _ => None,
                }
            }));
        let mut equalities = equalities.peekable();
        if equalities.peek().is_none() || pods.len() < MIN_INDEXED {
            return Candidates::All(pods.iter());
        }
        let entry = self.entry(namespace, pods);
        // The shortest posting list; copied once, not per requirement.
        let mut best: Option<(Arc<Postings>, &str, usize)> = None;
        for (k, v) in equalities {
            let postings = entry.postings(k, pods);
            let len = postings.get(v).map_or(0, Vec::len);
            if best.as_ref().is_none_or(|(_, _, b)| len < *b) {
                best = Some((postings, v, len));
            }
        }
        let positions: Arc<[u32]> = best
            .and_then(|(postings, v, _)| postings.get(v).map(|l| Arc::from(&l[..])))
            .unwrap_or_else(|| Arc::from([]));
        Candidates::Listed {
            pods,
            positions,
            next: 0,
        }
    }

    /// The namespace's entry for this pod list, a fresh one when the list
    /// changed since the entry was made.
    fn entry(&self, namespace: &str, pods: &Arc<[PodRef]>) -> Arc<Entry> {
        let mut by_namespace = self
            .by_namespace
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(e) = by_namespace.get(namespace)
            && std::ptr::addr_eq(e.built_from.as_ptr(), Arc::as_ptr(pods))
            && e.built_from.strong_count() > 0
        {
            return Arc::clone(e);
        }
        let entry = Arc::new(Entry {
            built_from: Arc::downgrade(pods),
            by_key: Mutex::default(),
        });
        by_namespace.insert(namespace.to_string(), Arc::clone(&entry));
        entry
    }
}

/// Namespaces with fewer pods are scanned whole: building postings would
/// cost more than it saves.
const MIN_INDEXED: usize = 64;

/// Iterator over the candidate pods of [`LabelIndex::candidates`].
pub enum Candidates<'a> {
    All(std::slice::Iter<'a, PodRef>),
    Listed {
        pods: &'a [PodRef],
        positions: Arc<[u32]>,
        next: usize,
    },
}

impl<'a> Iterator for Candidates<'a> {
    type Item = &'a PodRef;

    fn next(&mut self) -> Option<&'a PodRef> {
        match self {
            Candidates::All(it) => it.next(),
            Candidates::Listed {
                pods,
                positions,
                next,
            } => {
                let i = *positions.get(*next)?;
                *next += 1;
                pods.get(i as usize)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{ClusterObjects, PodChange, Snapshot};
    use crate::model::Pod;

    fn pod(ns: &str, i: usize) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("p{i}"), "namespace": ns,
                         "labels": {"app": format!("a{}", i % 7), "tier": if i.is_multiple_of(2) { "web" } else { "db" }}},
        }))
        .unwrap()
    }

    fn selector(v: serde_json::Value) -> LabelSelector {
        serde_json::from_value(v).unwrap()
    }

    /// The names the index offers that the selector selects, and the names
    /// a full scan selects.
    fn both(s: &Snapshot, ns: &str, sel: &LabelSelector) -> (Vec<String>, Vec<String>) {
        let pick = |it: &mut dyn Iterator<Item = &PodRef>| -> Vec<String> {
            it.filter(|r| sel.matches(&r.pod.metadata.labels))
                .map(|r| r.pod.metadata.name.clone())
                .collect()
        };
        (
            pick(&mut s.pods_maybe_selected(ns, sel)),
            pick(&mut s.pods_in_namespace(ns).iter()),
        )
    }

    #[test]
    fn candidates_hold_every_selected_pod_for_each_selector_shape() {
        let s = Snapshot::build(ClusterObjects {
            pods: (0..200)
                .map(|i| pod("big", i))
                .chain((0..5).map(|i| pod("small", i)))
                .collect(),
            ..Default::default()
        });
        let shapes = [
            serde_json::json!({"matchLabels": {"app": "a3"}}),
            serde_json::json!({"matchLabels": {"app": "a3", "tier": "db"}}),
            serde_json::json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["a1"]}]}),
            serde_json::json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["a1", "a2"]}]}),
            serde_json::json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a1"]}]}),
            serde_json::json!({"matchLabels": {"app": "nope"}}),
            serde_json::json!({}),
        ];
        for shape in shapes {
            let sel = selector(shape.clone());
            for ns in ["big", "small", "none"] {
                let (indexed, scanned) = both(&s, ns, &sel);
                assert_eq!(indexed, scanned, "{ns} {shape}");
            }
        }
        let narrow = selector(serde_json::json!({"matchLabels": {"app": "a3", "tier": "db"}}));
        let offered = s.pods_maybe_selected("big", &narrow).count();
        assert!(
            offered < 40,
            "the app posting list, not the namespace: {offered}"
        );
    }

    #[test]
    fn a_changed_namespace_is_reindexed_and_old_snapshots_keep_their_answers() {
        let s1 = Snapshot::build(ClusterObjects {
            pods: (0..100).map(|i| pod("big", i)).collect(),
            ..Default::default()
        });
        let sel = selector(serde_json::json!({"matchLabels": {"app": "a0"}}));
        assert_eq!(both(&s1, "big", &sel).0.len(), 15);
        let mut moved = pod("big", 1);
        moved.metadata.labels.insert("app".into(), "a0".into());
        let s2 = s1.with_pod_changes(&[
            PodChange::upsert(Arc::new(moved)),
            PodChange::delete("big", "p7"),
        ]);
        let (indexed, scanned) = both(&s2, "big", &sel);
        assert_eq!(indexed, scanned);
        assert_eq!(indexed.len(), 15, "p1 joined, p7 left");
        let (old, old_scan) = both(&s1, "big", &sel);
        assert_eq!(
            old, old_scan,
            "the older snapshot still answers from its own list"
        );
    }
}
