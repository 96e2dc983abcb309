//! PodTopologySpread filter: hard (`DoNotSchedule`) constraints.
//!
//! Prepared once per pod over the whole cluster: every node carrying all
//! hard topology keys and passing a constraint's inclusion policies
//! registers its domain and adds its matching pods. A candidate then passes
//! when, for every constraint, `count(domain) + selfMatch − globalMin ≤
//! maxSkew`, where globalMin is 0 while fewer than minDomains domains exist.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::cluster::Snapshot;
use crate::config::scheduling::DefaultSpreadConstraints;
use crate::model::{Node, Pod, Shared, Toleration};
use crate::policy::domains::{Domain, DomainTable, KeyLookup, NodeAt, ReasonCache};
use crate::policy::node_affinity::RequiredNodeAffinity;
use crate::policy::{Failure, Verdict};

use super::common::{Constraint, DO_NOT_SCHEDULE, constraints_for, count_cluster, has_all_keys_at};

pub const REASON: &str = "node(s) didn't match pod topology spread constraints";

/// What does not change while preemption adds and removes pods.
#[derive(Debug)]
struct Incoming {
    constraints: Vec<Constraint>,
    keys: Vec<KeyLookup>,
    self_match: Vec<bool>,
    namespace: String,
    required: RequiredNodeAffinity,
    tolerations: Shared<Vec<Toleration>>,
}

#[derive(Debug, Clone)]
pub struct SpreadFilter {
    incoming: Arc<Incoming>,
    /// Per constraint, matching pods per registered domain.
    counts: Vec<DomainTable<i64>>,
    /// Per constraint, how many domains hold each count: the smallest key is
    /// the global minimum, kept exact under add/remove.
    histogram: Vec<BTreeMap<i64, u32>>,
    /// Per constraint, how many domains are registered (for minDomains).
    domains: Vec<usize>,
    reasons: ReasonCache,
}

/// `None` when the pod has no hard constraints (explicit or default);
/// `Err` when one of its selectors is invalid.
pub fn prepare_filter(
    snapshot: &Snapshot,
    pod: &Pod,
    defaults: &DefaultSpreadConstraints,
) -> Result<Option<SpreadFilter>, String> {
    let constraints = constraints_for(snapshot, pod, DO_NOT_SCHEDULE, defaults)?.constraints;
    if constraints.is_empty() {
        return Ok(None);
    }
    let keys: Vec<KeyLookup> = constraints
        .iter()
        .map(|c| KeyLookup::new(snapshot.topology(), &c.topology_key))
        .collect();
    let mut counts: Vec<DomainTable<i64>> = keys.iter().map(DomainTable::new).collect();
    count_cluster(snapshot, pod, &constraints, &keys, true, true, &mut counts);
    let histogram = counts
        .iter()
        .map(|d| {
            let mut h = BTreeMap::new();
            for &c in d.values() {
                *h.entry(c).or_insert(0) += 1;
            }
            h
        })
        .collect();
    Ok(Some(SpreadFilter {
        incoming: Arc::new(Incoming {
            self_match: constraints.iter().map(|c| c.selects(pod)).collect(),
            constraints,
            keys,
            namespace: pod.metadata.namespace.clone(),
            required: RequiredNodeAffinity::of(pod),
            tolerations: pod.spec.tolerations.clone(),
        }),
        domains: counts.iter().map(DomainTable::len).collect(),
        counts,
        histogram,
        reasons: ReasonCache::default(),
    }))
}

impl SpreadFilter {
    pub fn filter(&self, node: &Node) -> Verdict {
        self.filter_at(NodeAt::unindexed(node))
    }

    pub fn filter_at(&self, at: NodeAt<'_>) -> Verdict {
        let incoming = &self.incoming;
        for (i, c) in incoming.constraints.iter().enumerate() {
            let key = &incoming.keys[i];
            let domain = key.of(at);
            if domain == Domain::Missing {
                return Err(Failure::unresolvable(format!(
                    "{REASON} (missing required label {})",
                    c.topology_key
                )));
            }
            let count = self.counts[i].get(domain).copied().unwrap_or(0);
            let min = self.global_min(i);
            let skew = count + i64::from(incoming.self_match[i]) - min;
            if skew > i64::from(c.max_skew) {
                return Err(Failure::unschedulable(self.reasons.get_or(
                    i,
                    domain,
                    || {
                        format!(
                            "{REASON}: {}={} would have skew {skew} > maxSkew {} \
                         ({count} matching pods there, global minimum {min})",
                            c.topology_key,
                            key.value(domain),
                            c.max_skew
                        )
                    },
                )));
            }
        }
        Ok(())
    }

    /// Smallest count among registered domains; 0 while there are fewer
    /// domains than minDomains.
    fn global_min(&self, i: usize) -> i64 {
        let c = &self.incoming.constraints[i];
        if self.domains[i] < c.min_domains.max(0) as usize {
            return 0;
        }
        self.histogram[i].keys().next().copied().unwrap_or(0)
    }

    /// An existing pod is now on `node` (preemption's what-if).
    pub fn add_pod<'n>(&mut self, existing: &Pod, node: impl Into<NodeAt<'n>>) {
        self.update(existing, node.into(), 1);
    }

    /// An existing pod left `node` (a preemption victim).
    pub fn remove_pod<'n>(&mut self, existing: &Pod, node: impl Into<NodeAt<'n>>) {
        self.update(existing, node.into(), -1);
    }

    /// Counts the pod exactly as preparation would have: same namespace,
    /// node with every key and passing the inclusion policies, selected.
    /// An indexed node finds its domains by array lookups, which is what
    /// preemption passes for each of the many pods it moves on one node.
    fn update(&mut self, existing: &Pod, at: NodeAt<'_>, delta: i64) {
        let incoming = Arc::clone(&self.incoming);
        self.reasons.clear();
        if existing.metadata.namespace != incoming.namespace || !has_all_keys_at(at, &incoming.keys)
        {
            return;
        }
        let node = at.node;
        for (i, c) in incoming.constraints.iter().enumerate() {
            if !c.includes_node(node, &incoming.tolerations, &incoming.required)
                || !c.counts(existing, &incoming.namespace)
            {
                continue;
            }
            let mut is_new = false;
            let Some(count) = self.counts[i].entry(incoming.keys[i].of(at), || {
                is_new = true;
                0
            }) else {
                continue;
            };
            let old = *count;
            let new = old + delta;
            *count = new;
            if is_new {
                self.domains[i] += 1;
            }
            let h = &mut self.histogram[i];
            if !is_new && let Some(n) = h.get_mut(&old) {
                *n -= 1;
                if *n == 0 {
                    h.remove(&old);
                }
            }
            *h.entry(new).or_insert(0) += 1;
        }
    }
}
