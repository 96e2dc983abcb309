//! Preferred inter-pod affinity (upstream InterPodAffinity PreScore / Score
//! / NormalizeScore).
//!
//! [`prepare_score`] sums, per (topologyKey, value) of the EXISTING pod's
//! node: the incoming pod's preferred affinity (+weight) and anti-affinity
//! (−weight) terms that existing pods match, and the existing pods' required
//! affinity (+hardPodAffinityWeight), preferred affinity (+weight) and
//! preferred anti-affinity (−weight) terms that the incoming pod matches.
//! Existing pods' required anti-affinity plays no part in scoring.
//! A node's raw score is the sum over the keys it carries.

use std::sync::Arc;

use super::terms::{
    PodTerms, WeightedTerm, for_each_bound_pod, for_each_judged_holder, terms_selecting,
};
use crate::cluster::{Snapshot, TopologyIndex};
use crate::model::pod::{PodAffinityTerm, WeightedPodAffinityTerm};
use crate::model::{Labels, Pod};
use crate::policy::domains::{Domain, DomainTable, KeyLookup, NodeAt};

/// Upstream `framework.MaxNodeScore`.
const MAX_NODE_SCORE: f64 = 100.0;

/// The per-pod score state: topologyKey → domain → summed weight.
#[derive(Debug, Clone)]
pub struct AffinityScore {
    topology: Arc<TopologyIndex>,
    by_key: Vec<(KeyLookup, DomainTable<i64>)>,
}

/// Prepare scoring for `pod`. `Ok(None)`: nothing to prefer anywhere
/// (upstream skips the plugin; every node scores 0). `Err`: one of the
/// pod's terms is invalid.
pub fn prepare_score(
    snapshot: &Snapshot,
    pod: &Pod,
    hard_pod_affinity_weight: i32,
) -> Result<Option<AffinityScore>, String> {
    let terms = PodTerms::parse(snapshot, pod)?;
    let namespace_labels = snapshot
        .namespace_labels(&pod.metadata.namespace)
        .cloned()
        .unwrap_or_default();
    let mut score = AffinityScore {
        topology: Arc::clone(snapshot.topology()),
        by_key: Vec::new(),
    };
    for (group, sign) in [
        (&terms.preferred_affinity, 1),
        (&terms.preferred_anti_affinity, -1),
    ] {
        for WeightedTerm { term, weight } in group {
            // The term's table, found (or made) once rather than per pod.
            let mut table = None;
            for_each_bound_pod(
                snapshot,
                &term.namespaces,
                term.selector.as_ref(),
                |at, _| {
                    let i = match table {
                        Some(i) => i,
                        None => match score.table_for(at, &term.topology_key) {
                            Some(i) => *table.insert(i),
                            None => return,
                        },
                    };
                    score.add_to(i, at, i64::from(*weight) * sign);
                },
            );
        }
    }
    let groups = snapshot.pod_groups_with_affinity_for(&pod.metadata.namespace);
    let judge =
        |existing| existing_pod_weights(existing, pod, &namespace_labels, hard_pod_affinity_weight);
    for_each_judged_holder(snapshot, groups, judge, |at, _, &(key, weight)| {
        score.add(at, key, weight);
    });
    Ok((!score.by_key.is_empty()).then_some(score))
}

impl AffinityScore {
    fn add(&mut self, at: NodeAt<'_>, key: &str, weight: i64) {
        if let Some(i) = self.table_for(at, key) {
            self.add_to(i, at, weight);
        }
    }

    /// The position of `key`'s table, made when a node carrying the key
    /// first counts; `None` while no table exists and `at` lacks the key.
    fn table_for(&mut self, at: NodeAt<'_>, key: &str) -> Option<usize> {
        if let Some(i) = self.by_key.iter().position(|(k, _)| k.key == key) {
            return Some(i);
        }
        let lookup = KeyLookup::new(&self.topology, key);
        if lookup.of(at) == Domain::Missing {
            return None;
        }
        let table = DomainTable::sparse(&lookup);
        self.by_key.push((lookup, table));
        Some(self.by_key.len() - 1)
    }

    fn add_to(&mut self, i: usize, at: NodeAt<'_>, weight: i64) {
        let (lookup, table) = &mut self.by_key[i];
        if let Some(w) = table.entry(lookup.of(at), || 0) {
            *w += weight;
        }
    }

    /// The raw score of `node`: the summed weights of the domains it is in.
    pub fn score(&self, at: NodeAt<'_>) -> i64 {
        self.by_key
            .iter()
            .filter_map(|(lookup, table)| table.get(lookup.of(at)))
            .sum()
    }
}

/// Upstream `processExistingPod`, the existing pod's side: the weight each
/// of its terms that select the incoming pod adds on its topology key, in
/// upstream's order (required affinity, preferred affinity, preferred
/// anti-affinity).
fn existing_pod_weights<'a>(
    existing: &'a Pod,
    incoming: &'a Pod,
    incoming_ns_labels: &'a Labels,
    hard_pod_affinity_weight: i32,
) -> Vec<(&'a str, i64)> {
    let mut weights = Vec::new();
    let affinity = existing.pod_affinity();
    if let Some(a) = affinity
        && hard_pod_affinity_weight > 0
    {
        let required = &a.required_during_scheduling_ignored_during_execution;
        for (_, t) in terms_selecting(required, |t| t, existing, incoming, incoming_ns_labels) {
            weights.push((t.topology_key.as_str(), i64::from(hard_pod_affinity_weight)));
        }
    }
    for (a, sign) in [(affinity, 1), (existing.pod_anti_affinity(), -1)] {
        let Some(a) = a else { continue };
        let preferred = &a.preferred_during_scheduling_ignored_during_execution;
        let selecting = terms_selecting(
            preferred,
            weighted_term,
            existing,
            incoming,
            incoming_ns_labels,
        );
        for (_, w) in selecting {
            let key = w.pod_affinity_term.topology_key.as_str();
            weights.push((key, sign * i64::from(w.weight)));
        }
    }
    weights
}

fn weighted_term(w: &WeightedPodAffinityTerm) -> &PodAffinityTerm {
    &w.pod_affinity_term
}

/// Upstream NormalizeScore: scale raw scores to 0..=100 between their
/// minimum and maximum (all 0 when they are equal), with the same float
/// arithmetic and truncation.
pub fn normalize(raw: &[i64]) -> Vec<i64> {
    let (Some(&min), Some(&max)) = (raw.iter().min(), raw.iter().max()) else {
        return Vec::new();
    };
    let spread = max - min;
    raw.iter()
        .map(|&s| {
            if spread > 0 {
                (MAX_NODE_SCORE * ((s - min) as f64 / spread as f64)) as i64
            } else {
                0
            }
        })
        .collect()
}
