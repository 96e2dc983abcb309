//! Pods of one namespace by label: a selector's equality requirements
//! (`matchLabels`, `In` with one value) narrow the namespace's pods to one
//! posting list before the full selector is checked. Spread and affinity
//! preparation would otherwise match every pod of the namespace (thousands)
//! against the selector on each request.
//!
//! An index belongs to one pod list and is filled per label key on first
//! use. When a watch event changes the list, the publisher derives the new
//! list's index from the old one ([`LabelIndex::after`]): every key already
//! built is carried over with only the changed positions fixed, so the
//! first request after an event finds the index as warm as before it.

use std::sync::{Arc, Mutex, PoisonError};

use super::{Map, PodRef};
use crate::model::LabelSelector;
use crate::model::selector::SelectorOperator;

/// One label key's values → positions in the pod list, ascending.
type Postings = Map<String, Arc<[u32]>>;

#[derive(Debug, Default)]
pub(super) struct LabelIndex {
    by_key: Mutex<Map<String, Arc<Postings>>>,
}

/// How a namespace's new pod list was made from its old one: the old
/// positions dropped, the pods replaced in place (old position, new
/// position), and the new pods appended after every kept one.
#[derive(Debug, Default)]
pub(super) struct ListEdit {
    pub dropped: Vec<u32>,
    pub replaced: Vec<(u32, u32)>,
}

impl LabelIndex {
    /// The pods of `pods` (the list this index belongs to) that carry every
    /// equality requirement of `selector`: a superset of the pods it
    /// selects, in list order. Without such a requirement, all of them.
    pub(super) fn candidates<'a>(
        &self,
        pods: &'a [PodRef],
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
            return Candidates::All { pods, next: 0 };
        }
        // The shortest posting list.
        let mut best: Option<Arc<[u32]>> = None;
        for (k, v) in equalities {
            let list = self
                .postings(k, pods)
                .get(v)
                .cloned()
                .unwrap_or_else(|| Arc::from([]));
            if best.as_ref().is_none_or(|b| list.len() < b.len()) {
                best = Some(list);
            }
        }
        Candidates::Listed {
            pods,
            positions: best.unwrap_or_else(|| Arc::from([])),
            next: 0,
            // The list is of the selector's only requirement: exact.
            exact: selector.match_labels.len() + selector.match_expressions.len() == 1,
        }
    }

    fn postings(&self, key: &str, pods: &[PodRef]) -> Arc<Postings> {
        let mut by_key = self.by_key.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(p) = by_key.get(key) {
            return Arc::clone(p);
        }
        let postings = Arc::new(build_postings(key, pods));
        by_key.insert(key.to_string(), Arc::clone(&postings));
        postings
    }

    /// The index of `new`, made from `old` (the list this index belongs
    /// to) by `edit`: each key built here is carried over, shared whole
    /// when the edit moved none of its positions.
    pub(super) fn after(&self, old: &[PodRef], new: &[PodRef], edit: &ListEdit) -> LabelIndex {
        let built = self
            .by_key
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let by_key = built
            .into_iter()
            .map(|(key, postings)| {
                let derived = postings_after(&key, &postings, old, new, edit);
                (key, derived)
            })
            .collect();
        LabelIndex {
            by_key: Mutex::new(by_key),
        }
    }
}

fn build_postings(key: &str, pods: &[PodRef]) -> Postings {
    let mut lists: Map<&str, Vec<u32>> = Map::default();
    for (i, r) in pods.iter().enumerate() {
        if let Some(v) = r.pod.metadata.labels.get(key) {
            lists.entry(v.as_str()).or_default().push(i as u32);
        }
    }
    lists
        .into_iter()
        .map(|(v, list)| (v.to_string(), Arc::from(list)))
        .collect()
}

/// One key's postings for `new`, from its postings for `old`.
fn postings_after(
    key: &str,
    postings: &Arc<Postings>,
    old: &[PodRef],
    new: &[PodRef],
    edit: &ListEdit,
) -> Arc<Postings> {
    fn value<'a>(r: &'a PodRef, key: &str) -> Option<&'a String> {
        r.pod.metadata.labels.get(key)
    }
    let kept = old.len() - edit.dropped.len();
    // (value before, value after, new position) of each pod whose value
    // of `key` changed: replaced in place with another value, or appended.
    let moves: Vec<(Option<&String>, Option<&String>, u32)> = edit
        .replaced
        .iter()
        .filter_map(|&(o, n)| {
            let (before, after) = (value(&old[o as usize], key), value(&new[n as usize], key));
            (before != after).then_some((before, after, n))
        })
        .chain(
            new[kept..]
                .iter()
                .zip(kept as u32..)
                .filter_map(|(r, n)| value(r, key).map(|v| (None, Some(v), n))),
        )
        .collect();
    if edit.dropped.is_empty() && moves.is_empty() {
        return Arc::clone(postings);
    }
    let mut postings = if edit.dropped.is_empty() {
        (**postings).clone()
    } else {
        without_positions(postings, &edit.dropped)
    };
    let mut touched: Map<&str, Vec<u32>> = Map::default();
    for (before, after, n) in moves {
        let list = |v: &'_ String| -> Vec<u32> {
            postings
                .get(v.as_str())
                .map_or_else(Vec::new, |l| l.to_vec())
        };
        if let Some(v) = before {
            let l = touched.entry(v).or_insert_with(|| list(v));
            if let Ok(at) = l.binary_search(&n) {
                l.remove(at);
            }
        }
        if let Some(v) = after {
            let l = touched.entry(v).or_insert_with(|| list(v));
            if let Err(at) = l.binary_search(&n) {
                l.insert(at, n);
            }
        }
    }
    for (v, list) in touched {
        if list.is_empty() {
            postings.remove(v);
        } else {
            postings.insert(v.to_string(), Arc::from(list));
        }
    }
    Arc::new(postings)
}

/// `postings` with the `dropped` positions (ascending) taken out and the
/// positions after them shifted down; lists ending before the first
/// dropped position are shared.
fn without_positions(postings: &Postings, dropped: &[u32]) -> Postings {
    let first = dropped.first().copied().unwrap_or(u32::MAX);
    postings
        .iter()
        .filter_map(|(v, list)| {
            if list.last().is_some_and(|&p| p < first) {
                return Some((v.clone(), Arc::clone(list)));
            }
            let mut d = 0;
            let shifted: Vec<u32> = list
                .iter()
                .filter_map(|&p| {
                    while dropped.get(d).is_some_and(|&x| x < p) {
                        d += 1;
                    }
                    (dropped.get(d) != Some(&p)).then_some(p - d as u32)
                })
                .collect();
            (!shifted.is_empty()).then(|| (v.clone(), Arc::from(shifted)))
        })
        .collect()
}

/// Namespaces with fewer pods are scanned whole: building postings would
/// cost more than it saves.
const MIN_INDEXED: usize = 64;

/// Iterator over the candidate pods of [`LabelIndex::candidates`].
pub enum Candidates<'a> {
    All {
        pods: &'a [PodRef],
        next: usize,
    },
    Listed {
        pods: &'a [PodRef],
        positions: Arc<[u32]>,
        next: usize,
        exact: bool,
    },
}

impl Candidates<'_> {
    /// Every candidate is selected: the selector is the one equality the
    /// posting list was read for, so checking it again is redundant.
    pub fn all_selected(&self) -> bool {
        matches!(self, Candidates::Listed { exact: true, .. })
    }
}

impl<'a> Candidates<'a> {
    /// The next candidate and its place in the namespace's list.
    pub fn next_placed(&mut self) -> Option<(u32, &'a PodRef)> {
        match self {
            Candidates::All { pods, next } => {
                let at = *next;
                let r = pods.get(at)?;
                *next += 1;
                Some((at as u32, r))
            }
            Candidates::Listed {
                pods,
                positions,
                next,
                ..
            } => {
                let at = *positions.get(*next)?;
                *next += 1;
                Some((at, pods.get(at as usize)?))
            }
        }
    }
}

impl<'a> Iterator for Candidates<'a> {
    type Item = &'a PodRef;

    fn next(&mut self) -> Option<&'a PodRef> {
        self.next_placed().map(|(_, r)| r)
    }
}

#[cfg(test)]
mod tests;
