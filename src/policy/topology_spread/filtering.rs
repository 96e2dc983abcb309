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
use crate::model::{Node, Pod, Toleration};
use crate::policy::node_affinity::RequiredNodeAffinity;
use crate::policy::{Failure, Verdict};

use super::common::{
    Constraint, DO_NOT_SCHEDULE, DomainCounts, constraints_for, count_cluster, has_all_keys,
};

pub const REASON: &str = "node(s) didn't match pod topology spread constraints";

/// What does not change while preemption adds and removes pods.
#[derive(Debug)]
struct Incoming {
    constraints: Vec<Constraint>,
    self_match: Vec<bool>,
    namespace: String,
    required: RequiredNodeAffinity,
    tolerations: Vec<Toleration>,
}

#[derive(Debug, Clone)]
pub struct SpreadFilter {
    incoming: Arc<Incoming>,
    domains: Vec<DomainCounts>,
    /// Per constraint, how many domains hold each count: the smallest key is
    /// the global minimum, kept exact under add/remove.
    histogram: Vec<BTreeMap<i64, u32>>,
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
    let mut domains = vec![DomainCounts::default(); constraints.len()];
    count_cluster(
        snapshot,
        pod,
        &constraints,
        |node| has_all_keys(node, &constraints),
        |c, node, d| node.label(&c.topology_key).map(|v| d.register(v)),
        &mut domains,
    );
    let histogram = domains
        .iter()
        .map(|d| {
            let mut h = BTreeMap::new();
            for &c in &d.counts {
                *h.entry(c).or_insert(0) += 1;
            }
            h
        })
        .collect();
    Ok(Some(SpreadFilter {
        incoming: Arc::new(Incoming {
            self_match: constraints.iter().map(|c| c.selects(pod)).collect(),
            constraints,
            namespace: pod.metadata.namespace.clone(),
            required: RequiredNodeAffinity::of(pod),
            tolerations: pod.spec.tolerations.clone(),
        }),
        domains,
        histogram,
    }))
}

impl SpreadFilter {
    pub fn filter(&self, node: &Node) -> Verdict {
        let incoming = &self.incoming;
        for (i, c) in incoming.constraints.iter().enumerate() {
            let Some(value) = node.label(&c.topology_key) else {
                return Err(Failure::unresolvable(format!(
                    "{REASON} (missing required label {})",
                    c.topology_key
                )));
            };
            let count = self.domains[i].count(value).unwrap_or(0);
            let min = self.global_min(i);
            let skew = count + i64::from(incoming.self_match[i]) - min;
            if skew > i64::from(c.max_skew) {
                return Err(Failure::unschedulable(format!(
                    "{REASON}: {}={value} would have skew {skew} > maxSkew {} \
                     ({count} matching pods there, global minimum {min})",
                    c.topology_key, c.max_skew
                )));
            }
        }
        Ok(())
    }

    /// Smallest count among registered domains; 0 while there are fewer
    /// domains than minDomains.
    fn global_min(&self, i: usize) -> i64 {
        let c = &self.incoming.constraints[i];
        if self.domains[i].domain_count() < c.min_domains.max(0) as usize {
            return 0;
        }
        self.histogram[i].keys().next().copied().unwrap_or(0)
    }

    /// An existing pod is now on `node` (preemption's what-if).
    pub fn add_pod(&mut self, existing: &Pod, node: &Node) {
        self.update(existing, node, 1);
    }

    /// An existing pod left `node` (a preemption victim).
    pub fn remove_pod(&mut self, existing: &Pod, node: &Node) {
        self.update(existing, node, -1);
    }

    /// Counts the pod exactly as preparation would have: same namespace,
    /// node with every key and passing the inclusion policies, selected.
    fn update(&mut self, existing: &Pod, node: &Node, delta: i64) {
        let incoming = Arc::clone(&self.incoming);
        if existing.metadata.namespace != incoming.namespace
            || !has_all_keys(node, &incoming.constraints)
        {
            return;
        }
        for (i, c) in incoming.constraints.iter().enumerate() {
            let Some(value) = node.label(&c.topology_key) else {
                continue;
            };
            if !c.includes_node(node, &incoming.tolerations, &incoming.required)
                || !c.counts(existing, &incoming.namespace)
            {
                continue;
            }
            let is_new = self.domains[i].id(value).is_none();
            let id = self.domains[i].register(value) as usize;
            let old = self.domains[i].counts[id];
            let new = old + delta;
            self.domains[i].counts[id] = new;
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
