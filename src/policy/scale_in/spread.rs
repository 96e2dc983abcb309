//! Topology spread as seen by a scale-in: how many matching pods each
//! domain holds over the whole cluster, and what removing one does to the
//! skew. Which constraints apply (the pods' own, else the cluster defaults),
//! which nodes take part and which pods count are the PodTopologySpread
//! filter's rules (`topology_spread::common`); the candidates are counted
//! from the request, so a pod sent in the body replaces its view copy.
//! Skew is the largest domain count minus the smallest, the smallest being
//! 0 when fewer domains than minDomains exist.

use std::collections::BTreeMap;

use foldhash::{HashMap, HashSet};

use crate::cluster::Snapshot;
use crate::config::scheduling::DefaultSpreadConstraints;
use crate::model::Pod;
use crate::policy::node_affinity::RequiredNodeAffinity;
use crate::policy::topology_spread::common::{Constraint, DO_NOT_SCHEDULE, constraints_for};

/// One hard (`DoNotSchedule`) constraint of the workload with its counts.
#[derive(Debug, Clone)]
pub struct SpreadCounts {
    pub topology_key: String,
    pub max_skew: i64,
    min_domains: usize,
    /// Pods per domain; the histogram maps a count to how many domains have it.
    counts: Vec<i64>,
    histogram: BTreeMap<i64, usize>,
    /// Domain of each candidate pod, `None` when it is not counted.
    pub domain_of: Vec<Option<usize>>,
    domain_names: Vec<String>,
}

impl SpreadCounts {
    /// Current skew.
    pub fn skew(&self) -> i64 {
        let Some((&max, _)) = self.histogram.last_key_value() else {
            return 0;
        };
        let min = if self.counts.len() < self.min_domains {
            0
        } else {
            self.histogram.first_key_value().map_or(0, |(k, _)| *k)
        };
        max - min
    }

    /// Skew if candidate `i` were removed.
    pub fn skew_without(&mut self, i: usize) -> i64 {
        let Some(d) = self.domain_of[i] else {
            return self.skew();
        };
        self.shift(d, -1);
        let skew = self.skew();
        self.shift(d, 1);
        skew
    }

    pub fn domain_count(&self, i: usize) -> i64 {
        self.domain_of[i].map_or(0, |d| self.counts[d])
    }

    pub fn domain_name(&self, i: usize) -> Option<&str> {
        self.domain_of[i].map(|d| self.domain_names[d].as_str())
    }

    pub fn remove(&mut self, i: usize) {
        if let Some(d) = self.domain_of[i] {
            self.shift(d, -1);
        }
    }

    /// Undoes [`Self::remove`] of candidate `i`.
    pub fn restore(&mut self, i: usize) {
        if let Some(d) = self.domain_of[i] {
            self.shift(d, 1);
        }
    }

    fn shift(&mut self, d: usize, by: i64) {
        let old = self.counts[d];
        if let Some(n) = self.histogram.get_mut(&old) {
            *n -= 1;
            if *n == 0 {
                self.histogram.remove(&old);
            }
        }
        self.counts[d] = old + by;
        *self.histogram.entry(old + by).or_insert(0) += 1;
    }
}

/// The distinct hard constraints of `pods`, counted over the cluster.
/// Pods whose constraints cannot be resolved (an invalid selector) add none:
/// the scheduler could not have placed them by those constraints either.
pub fn hard_constraints(
    snapshot: &Snapshot,
    pods: &[&Pod],
    defaults: &DefaultSpreadConstraints,
) -> Vec<SpreadCounts> {
    let mut seen: Vec<(&str, Constraint)> = Vec::new();
    let mut out = Vec::new();
    for pod in pods {
        let Ok(resolved) = constraints_for(snapshot, pod, DO_NOT_SCHEDULE, defaults) else {
            continue;
        };
        let ns = pod.metadata.namespace.as_str();
        for c in resolved.constraints {
            if c.topology_key.is_empty() || seen.iter().any(|(n, s)| *n == ns && same(s, &c)) {
                continue;
            }
            out.push(count(snapshot, pods, pod, &c));
            seen.push((ns, c));
        }
    }
    out
}

fn same(a: &Constraint, b: &Constraint) -> bool {
    a.topology_key == b.topology_key
        && a.max_skew == b.max_skew
        && a.selector == b.selector
        && a.min_domains == b.min_domains
        && a.honor_node_affinity == b.honor_node_affinity
        && a.honor_node_taints == b.honor_node_taints
}

fn count(snapshot: &Snapshot, pods: &[&Pod], owner: &Pod, c: &Constraint) -> SpreadCounts {
    let required = RequiredNodeAffinity::of(owner);
    let mut domain_index: HashMap<&str, usize> = HashMap::default();
    let mut node_domain: HashMap<&str, usize> = HashMap::default();
    for info in snapshot.nodes() {
        let node = &*info.node;
        let Some(value) = node.label(&c.topology_key) else {
            continue;
        };
        if !c.includes_node(node, &owner.spec.tolerations, &required) {
            continue;
        }
        let next = domain_index.len();
        let d = *domain_index.entry(value).or_insert(next);
        node_domain.insert(node.name(), d);
    }
    let mut domain_names = vec![String::new(); domain_index.len()];
    for (name, &d) in &domain_index {
        domain_names[d] = name.to_string();
    }

    let namespace = owner.metadata.namespace.as_str();
    let counted = |p: &Pod| -> Option<usize> {
        if !c.counts(p, namespace) {
            return None;
        }
        node_domain.get(p.spec.node_name.as_str()).copied()
    };
    let mut counts = vec![0i64; domain_names.len()];
    let candidate_uids: HashSet<&str> = pods.iter().map(|p| p.metadata.uid.as_str()).collect();
    for r in snapshot.pods_in_namespace(namespace) {
        let uid = r.pod.metadata.uid.as_str();
        if (uid.is_empty() || !candidate_uids.contains(uid))
            && let Some(d) = counted(&r.pod)
        {
            counts[d] += 1;
        }
    }
    let domain_of: Vec<Option<usize>> = pods.iter().map(|p| counted(p)).collect();
    for d in domain_of.iter().flatten() {
        counts[*d] += 1;
    }
    let mut histogram = BTreeMap::new();
    for &n in &counts {
        *histogram.entry(n).or_insert(0) += 1;
    }
    SpreadCounts {
        topology_key: c.topology_key.clone(),
        max_skew: i64::from(c.max_skew.max(1)),
        min_domains: c.min_domains.max(1) as usize,
        counts,
        histogram,
        domain_of,
        domain_names,
    }
}
