//! PodTopologySpread score: soft (`ScheduleAnyway`) constraints.
//!
//! Domains come from the candidates; their counts come from every cluster
//! node in them (inclusion policies applied). The hostname key is counted
//! per node. Each constraint weighs `ln(domains + 2)`; fewer matching pods
//! score higher after normalisation.

use crate::cluster::Snapshot;
use crate::config::scheduling::DefaultSpreadConstraints;
use crate::model::{Node, Pod};

use super::common::{
    Constraint, DomainCounts, HOSTNAME_KEY, SCHEDULE_ANYWAY, constraints_for, count_cluster,
    has_all_keys,
};

#[derive(Debug, Clone)]
pub struct SpreadScore {
    constraints: Vec<Constraint>,
    /// Nodes must carry every key (explicit or List-default constraints);
    /// those that do not score 0.
    require_all_keys: bool,
    domains: Vec<DomainCounts>,
    weights: Vec<f64>,
    /// Per constraint, matching pods per candidate node name (hostname key).
    per_node: Vec<foldhash::HashMap<String, i64>>,
}

/// `None` when the pod has no soft constraints (explicit or default);
/// `Err` when one of its selectors is invalid.
pub fn prepare_score(
    snapshot: &Snapshot,
    pod: &Pod,
    candidates: &[&Node],
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
    let require_all_keys = !found.system_defaulted;
    let takes_part = |n: &Node| !require_all_keys || has_all_keys(n, &constraints);

    let mut domains = vec![DomainCounts::default(); constraints.len()];
    let mut scored = 0usize;
    for node in candidates.iter().filter(|n| takes_part(n)) {
        scored += 1;
        for (c, d) in constraints.iter().zip(domains.iter_mut()) {
            if c.topology_key != HOSTNAME_KEY {
                d.register(node.label(&c.topology_key).unwrap_or(""));
            }
        }
    }
    let weights = constraints
        .iter()
        .zip(&domains)
        .map(|(c, d)| {
            let size = if c.topology_key == HOSTNAME_KEY {
                scored
            } else {
                d.domain_count()
            };
            ((size + 2) as f64).ln()
        })
        .collect();

    count_cluster(
        snapshot,
        pod,
        &constraints,
        takes_part,
        |c, node, d| {
            if c.topology_key == HOSTNAME_KEY {
                None
            } else {
                d.id(node.label(&c.topology_key).unwrap_or(""))
            }
        },
        &mut domains,
    );
    let per_node = hostname_counts(snapshot, pod, &constraints, candidates);
    Ok(Some(SpreadScore {
        constraints,
        require_all_keys,
        domains,
        weights,
        per_node,
    }))
}

/// Per constraint, matching pods on each candidate node (only filled for
/// constraints on the hostname key, which count per node).
fn hostname_counts(
    snapshot: &Snapshot,
    pod: &Pod,
    constraints: &[Constraint],
    candidates: &[&Node],
) -> Vec<foldhash::HashMap<String, i64>> {
    let namespace = &pod.metadata.namespace;
    constraints
        .iter()
        .map(|c| {
            let mut out = foldhash::HashMap::default();
            if c.topology_key != HOSTNAME_KEY {
                return out;
            }
            let mut per_idx = vec![0i64; snapshot.nodes().len()];
            for r in snapshot.pods_in_namespace(namespace) {
                if let Some(idx) = r.node
                    && c.counts(&r.pod, namespace)
                {
                    per_idx[idx as usize] += 1;
                }
            }
            for node in candidates {
                if let Some(idx) = snapshot.node_idx(node.name())
                    && per_idx[idx as usize] > 0
                {
                    out.insert(node.name().to_string(), per_idx[idx as usize]);
                }
            }
            out
        })
        .collect()
}

impl SpreadScore {
    /// Candidates lacking a key when all keys are required score 0.
    pub fn is_ignored(&self, node: &Node) -> bool {
        self.require_all_keys && !has_all_keys(node, &self.constraints)
    }

    /// Raw score: Σ count × weight + (maxSkew − 1) over the constraints whose
    /// key the node has, rounded. Lower is better.
    pub fn score(&self, node: &Node) -> i64 {
        if self.is_ignored(node) {
            return 0;
        }
        let mut total = 0.0;
        for (i, c) in self.constraints.iter().enumerate() {
            let Some(value) = node.label(&c.topology_key) else {
                continue;
            };
            let count = if c.topology_key == HOSTNAME_KEY {
                self.per_node[i].get(node.name()).copied().unwrap_or(0)
            } else {
                self.domains[i].count(value).unwrap_or(0)
            };
            total += count as f64 * self.weights[i] + f64::from(c.max_skew - 1);
        }
        total.round() as i64
    }

    /// Upstream's NormalizeScore: ignored nodes 0; else
    /// `100 × (max + min − raw) / max`, or 100 everywhere when max is 0.
    pub fn normalize(&self, candidates: &[&Node], raw: &[i64]) -> Vec<i64> {
        let kept = || {
            candidates
                .iter()
                .zip(raw)
                .filter(|(n, _)| !self.is_ignored(n))
                .map(|(_, &r)| r)
        };
        let min = kept().min().unwrap_or(0);
        let max = kept().max().unwrap_or(0).max(0);
        candidates
            .iter()
            .zip(raw)
            .map(|(n, &r)| {
                if self.is_ignored(n) {
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
