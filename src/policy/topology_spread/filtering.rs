//! PodTopologySpread filter: hard (`DoNotSchedule`) constraints.
//!
//! Prepared once per pod over the whole cluster: every node carrying all
//! hard topology keys and passing a constraint's inclusion policies
//! registers its domain and adds its matching pods. A candidate then passes
//! when, for every constraint, `count(domain) + selfMatch − globalMin ≤
//! maxSkew`, where globalMin is 0 while fewer than minDomains domains exist.
//!
//! Next to kube-scheduler's in-tree plugins, [`SpreadFilter::admit_in_flight`]
//! takes globalMin as the highest any placement of the pods in flight
//! reaches (see `in_flight`).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::cluster::{DomainId, InFlightPod, Snapshot};
use crate::config::scheduling::DefaultSpreadConstraints;
use crate::model::{Node, Pod, Shared, Toleration};
use crate::policy::domains::{Domain, DomainTable, KeyLookup, NodeAt};
use crate::policy::node_affinity::RequiredNodeAffinity;
use crate::policy::reason_cache::ReasonCache;
use crate::policy::{Failure, Verdict};

use super::common::{Constraint, DO_NOT_SCHEDULE, constraints_for, count_cluster, has_all_keys_at};
use super::in_flight::highest_minimum;

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
    /// Per constraint, per pod in flight it counts, the registered domains
    /// the pod may be in (sorted); empty unless admitted.
    in_flight: Arc<Vec<Vec<Vec<DomainId>>>>,
    /// Per constraint, the highest global minimum a placement of the pods
    /// in flight reaches; `None` without any.
    raised_min: Vec<Option<i64>>,
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
        in_flight: Arc::default(),
        raised_min: vec![None; counts.len()],
        reasons: ReasonCache::new(counts.len()),
        counts,
        histogram,
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
            // A minimum raised by pods in flight may pass this domain's
            // count; the pods that raised it could then have landed here.
            let skew = (count - min).max(0) + i64::from(incoming.self_match[i]);
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
        self.raised_min[i].unwrap_or_else(|| self.histogram[i].keys().next().copied().unwrap_or(0))
    }

    /// Count `pods` in flight as kube-scheduler's own plugins may: each on
    /// one of its candidate nodes, or nowhere. A node passes when some
    /// placement lets every constraint admit it (per constraint: the
    /// domain's count without them, against the highest minimum they can
    /// reach), so they can only make this filter more permissive.
    pub fn admit_in_flight(&mut self, snapshot: &Snapshot, pods: &[InFlightPod]) {
        let incoming = Arc::clone(&self.incoming);
        let mut reach = Vec::with_capacity(incoming.constraints.len());
        for (i, c) in incoming.constraints.iter().enumerate() {
            let mut seen = vec![false; incoming.keys[i].known_len()];
            reach.push(
                pods.iter()
                    .filter(|f| c.counts(&f.pod, &incoming.namespace))
                    .map(|f| self.domains_of(i, c, snapshot, f, &mut seen))
                    .filter(|domains| !domains.is_empty())
                    .collect(),
            );
        }
        self.in_flight = Arc::new(reach);
        for i in 0..incoming.constraints.len() {
            self.raise_min(i);
        }
    }

    /// The registered domains of constraint `i` (sorted) the pod in flight
    /// counts in on one of its candidates (a node without every key, or
    /// that the inclusion policies leave out, counts it nowhere). `seen`:
    /// all false, a slot per domain of the key; left all false.
    fn domains_of(
        &self,
        i: usize,
        c: &Constraint,
        snapshot: &Snapshot,
        f: &InFlightPod,
        seen: &mut [bool],
    ) -> Vec<DomainId> {
        let incoming = &self.incoming;
        let mut ids: Vec<DomainId> = Vec::new();
        for node in f.candidates.iter() {
            let at = NodeAt::resolve(snapshot, node);
            let Domain::Known(id) = incoming.keys[i].of(at) else {
                continue;
            };
            let Some(slot) = seen.get_mut(id as usize) else {
                continue;
            };
            if *slot
                || self.counts[i].get(Domain::Known(id)).is_none()
                || !has_all_keys_at(at, &incoming.keys)
                || !c.includes_node(node, &incoming.tolerations, &incoming.required)
            {
                continue;
            }
            *slot = true;
            ids.push(id);
            // A pod that may be in every domain: its other nodes add none
            // (with a zone key, the usual case, after a few nodes).
            if ids.len() == self.domains[i] {
                break;
            }
        }
        for &id in &ids {
            if let Some(slot) = seen.get_mut(id as usize) {
                *slot = false;
            }
        }
        ids.sort_unstable();
        ids
    }

    fn raise_min(&mut self, i: usize) {
        let reach = self.in_flight.get(i).map_or(&[][..], Vec::as_slice);
        self.raised_min[i] = (!reach.is_empty()).then(|| {
            let counts = &self.counts[i];
            let count = |id| counts.get(Domain::Known(id)).copied().unwrap_or(0);
            highest_minimum(&self.histogram[i], count, reach)
        });
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
        let node = at.node();
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
            self.raise_min(i);
        }
    }
}
