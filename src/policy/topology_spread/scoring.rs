//! PodTopologySpread score: soft (`ScheduleAnyway`) constraints.
//!
//! Domains come from the candidates; their counts come from every cluster
//! node in them (inclusion policies applied). The hostname key is counted
//! per node. Each constraint weighs `ln(domains + 2)`; fewer matching pods
//! score higher after normalisation.

use std::sync::Arc;

use crate::cluster::Snapshot;
use crate::config::scheduling::DefaultSpreadConstraints;
use crate::model::Pod;
use crate::policy::domains::{Domain, DomainTable, KeyLookup, NodeAt};

use super::common::{
    Constraint, HOSTNAME_KEY, SCHEDULE_ANYWAY, constraints_for, count_cluster, has_all_keys_at,
};

#[derive(Debug, Clone)]
pub struct SpreadScore {
    constraints: Vec<Constraint>,
    keys: Vec<KeyLookup>,
    /// Nodes must carry every key (explicit or List-default constraints);
    /// those that do not score 0.
    require_all_keys: bool,
    counts: Vec<DomainTable<i64>>,
    weights: Vec<f64>,
    /// Per hostname-key constraint, matching pods per node of the view
    /// (empty for the other constraints). Two bytes a node: a kubelet runs
    /// a few hundred pods at most, and 5,000 nodes then take 10 KB, which
    /// jemalloc hands out from its per-thread cache, where 40 KB of `i64`
    /// took its large-allocation path on every prioritize.
    per_node: Vec<Vec<u16>>,
    /// Node name → index in the view, for request-only node objects.
    node_index: Arc<crate::cluster::NameIndex>,
}

/// `None` when the pod has no soft constraints (explicit or default);
/// `Err` when one of its selectors is invalid.
pub fn prepare_score(
    snapshot: &Snapshot,
    pod: &Pod,
    candidates: &[NodeAt<'_>],
    defaults: &DefaultSpreadConstraints,
) -> Result<Option<SpreadScore>, String> {
    if snapshot.nodes().is_empty() {
        return Ok(None);
    }
    let found = constraints_for(snapshot, pod, SCHEDULE_ANYWAY, defaults)?;
    let constraints = found.constraints;
    if constraints.is_empty() {
        return Ok(None);
    }
    let keys: Vec<KeyLookup> = constraints
        .iter()
        .map(|c| KeyLookup::new(snapshot.topology(), &c.topology_key))
        .collect();
    let require_all_keys = !found.system_defaulted;
    let takes_part = |at: NodeAt<'_>| !require_all_keys || has_all_keys_at(at, &keys);

    let mut counts: Vec<DomainTable<i64>> = keys.iter().map(DomainTable::new).collect();
    let mut scored = 0usize;
    for &at in candidates.iter().filter(|&&at| takes_part(at)) {
        scored += 1;
        for ((c, key), table) in constraints.iter().zip(&keys).zip(counts.iter_mut()) {
            if c.topology_key != HOSTNAME_KEY {
                // A node without the key registers the "" domain (it
                // counts towards the constraint's weight), as upstream.
                let domain = match key.of(at) {
                    Domain::Missing => key.empty_value(),
                    d => d,
                };
                table.entry(domain, || 0);
            }
        }
    }
    let weights = constraints
        .iter()
        .zip(&counts)
        .map(|(c, d)| {
            let size = if c.topology_key == HOSTNAME_KEY {
                scored
            } else {
                d.len()
            };
            ((size + 2) as f64).ln()
        })
        .collect();

    count_cluster(
        snapshot,
        pod,
        &constraints,
        &keys,
        require_all_keys,
        false,
        &mut counts,
    );
    let per_node = hostname_counts(snapshot, pod, &constraints);
    Ok(Some(SpreadScore {
        constraints,
        keys,
        require_all_keys,
        counts,
        weights,
        per_node,
        node_index: snapshot.node_index(),
    }))
}

/// Per constraint on the hostname key, matching pods on each node of the
/// view (empty for the other constraints).
fn hostname_counts(snapshot: &Snapshot, pod: &Pod, constraints: &[Constraint]) -> Vec<Vec<u16>> {
    let namespace = &pod.metadata.namespace;
    constraints
        .iter()
        .map(|c| {
            if c.topology_key != HOSTNAME_KEY {
                return Vec::new();
            }
            let mut per_idx = vec![0u16; snapshot.nodes().len()];
            for r in c.selected(snapshot, namespace) {
                if let Some(idx) = r.node
                    && Constraint::counts_selected(&r.pod)
                {
                    per_idx[idx as usize] = per_idx[idx as usize].saturating_add(1);
                }
            }
            per_idx
        })
        .collect()
}

impl SpreadScore {
    /// Candidates lacking a key when all keys are required score 0.
    pub fn is_ignored(&self, at: NodeAt<'_>) -> bool {
        self.require_all_keys && !has_all_keys_at(at, &self.keys)
    }

    /// Raw score: Σ count × weight + (maxSkew − 1) over the constraints whose
    /// key the node has, rounded. Lower is better.
    pub fn score(&self, at: NodeAt<'_>) -> i64 {
        if self.is_ignored(at) {
            return 0;
        }
        let mut total = 0.0;
        for (i, c) in self.constraints.iter().enumerate() {
            let domain = self.keys[i].of(at);
            if domain == Domain::Missing {
                continue;
            }
            let count = if !self.per_node[i].is_empty() {
                let idx = at.idx.or_else(|| self.node_index.get(at.node().name()));
                idx.and_then(|n| self.per_node[i].get(n as usize))
                    .map_or(0, |&n| i64::from(n))
            } else {
                self.counts[i].get(domain).copied().unwrap_or(0)
            };
            total += count as f64 * self.weights[i] + f64::from(c.max_skew - 1);
        }
        total.round() as i64
    }

    /// Upstream's NormalizeScore: ignored nodes 0; else
    /// `100 × (max + min − raw) / max`, or 100 everywhere when max is 0.
    pub fn normalize(&self, candidates: &[NodeAt<'_>], raw: &[i64]) -> Vec<i64> {
        let ignored: Vec<bool> = candidates.iter().map(|&n| self.is_ignored(n)).collect();
        let kept = || {
            raw.iter()
                .zip(&ignored)
                .filter(|(_, i)| !**i)
                .map(|(&r, _)| r)
        };
        let min = kept().min().unwrap_or(0);
        let max = kept().max().unwrap_or(0).max(0);
        raw.iter()
            .zip(ignored)
            .map(|(&r, ignored)| {
                if ignored {
                    0
                } else if max == 0 {
                    100
                } else {
                    100 * (max + min - r) / max
                }
            })
            .collect()
    }
}
