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

use super::terms::{
    PodTerms, WeightedTerm, existing_term_matches, for_each_bound_pod, group_is_valid,
};
use crate::cluster::Snapshot;
use crate::model::pod::{PodAffinityTerm, WeightedPodAffinityTerm};
use crate::model::{Labels, Node, Pod};

type Map<K, V> = foldhash::HashMap<K, V>;

/// Upstream `framework.MaxNodeScore`.
const MAX_NODE_SCORE: f64 = 100.0;

/// The per-pod score state: topologyKey → value → summed weight.
#[derive(Debug, Clone, Default)]
pub struct AffinityScore {
    by_key: Map<String, Map<String, i64>>,
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
    let mut score = AffinityScore::default();
    for (group, sign) in [
        (&terms.preferred_affinity, 1),
        (&terms.preferred_anti_affinity, -1),
    ] {
        for WeightedTerm { term, weight } in group {
            for_each_bound_pod(snapshot, &term.namespaces, |node, existing| {
                if term.matches(existing) {
                    score.add(node, &term.topology_key, i64::from(*weight) * sign);
                }
            });
        }
    }
    let nodes = snapshot.nodes();
    for r in snapshot.pods_with_affinity() {
        let Some(i) = r.node else { continue };
        score.add_existing_pod_terms(
            &nodes[i as usize].node,
            &r.pod,
            pod,
            &namespace_labels,
            hard_pod_affinity_weight,
        );
    }
    Ok((!score.by_key.is_empty()).then_some(score))
}

impl AffinityScore {
    fn add(&mut self, node: &Node, key: &str, weight: i64) {
        let Some(value) = node.label(key) else {
            return;
        };
        let values = match self.by_key.get_mut(key) {
            Some(v) => v,
            None => self.by_key.entry(key.to_string()).or_default(),
        };
        match values.get_mut(value) {
            Some(w) => *w += weight,
            None => {
                values.insert(value.to_string(), weight);
            }
        }
    }

    /// Upstream `processExistingPod`, the existing pod's side: its terms
    /// that select the incoming pod.
    fn add_existing_pod_terms(
        &mut self,
        node: &Node,
        existing: &Pod,
        incoming: &Pod,
        incoming_ns_labels: &Labels,
        hard_pod_affinity_weight: i32,
    ) {
        let selects =
            |t: &PodAffinityTerm| existing_term_matches(existing, t, incoming, incoming_ns_labels);
        if let Some(a) = existing.pod_affinity() {
            let required = &a.required_during_scheduling_ignored_during_execution;
            if hard_pod_affinity_weight > 0 && group_is_valid(required.iter()) {
                for t in required.iter().filter(|t| selects(t)) {
                    self.add(node, &t.topology_key, i64::from(hard_pod_affinity_weight));
                }
            }
            self.add_weighted(
                node,
                &a.preferred_during_scheduling_ignored_during_execution,
                1,
                &selects,
            );
        }
        if let Some(a) = existing.pod_anti_affinity() {
            self.add_weighted(
                node,
                &a.preferred_during_scheduling_ignored_during_execution,
                -1,
                &selects,
            );
        }
    }

    fn add_weighted(
        &mut self,
        node: &Node,
        terms: &[WeightedPodAffinityTerm],
        sign: i64,
        selects: &dyn Fn(&PodAffinityTerm) -> bool,
    ) {
        if !group_is_valid(terms.iter().map(|w| &w.pod_affinity_term)) {
            return;
        }
        for w in terms.iter().filter(|w| selects(&w.pod_affinity_term)) {
            self.add(
                node,
                &w.pod_affinity_term.topology_key,
                i64::from(w.weight) * sign,
            );
        }
    }

    /// The raw score of `node`: the summed weights of the domains it is in.
    pub fn score(&self, node: &Node) -> i64 {
        self.by_key
            .iter()
            .filter_map(|(key, values)| values.get(node.label(key)?))
            .sum()
    }
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
