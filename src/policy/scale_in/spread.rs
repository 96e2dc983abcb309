//! Topology spread as seen by a scale-in: how many matching pods each
//! domain holds over the whole cluster, and what removing one does to the
//! skew. Counting follows the PodTopologySpread filter: pods in the
//! constraint's namespace matching its selector (plus matchLabelKeys), not
//! terminating, on nodes that have the topology key and — with the default
//! nodeAffinityPolicy Honor — match the pod's node selector and required
//! node affinity (nodeTaintsPolicy Honor also needs tolerated taints).
//! Skew is the largest domain count minus the smallest, the smallest being
//! 0 when fewer domains than minDomains exist.

use std::collections::BTreeMap;

use foldhash::{HashMap, HashSet};

use crate::cluster::Snapshot;
use crate::model::node::untolerated_taint;
use crate::model::pod::{NodeSelectorOperator, NodeSelectorRequirement, TopologySpreadConstraint};
use crate::model::selector::SelectorOperator;
use crate::model::{Node, Pod};

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
pub fn hard_constraints(snapshot: &Snapshot, pods: &[&Pod]) -> Vec<SpreadCounts> {
    let mut seen: Vec<(&str, &TopologySpreadConstraint)> = Vec::new();
    let mut out = Vec::new();
    for pod in pods {
        for c in &pod.spec.topology_spread_constraints {
            if c.when_unsatisfiable != "DoNotSchedule"
                || c.topology_key.is_empty()
                || seen.contains(&(pod.metadata.namespace.as_str(), c))
            {
                continue;
            }
            seen.push((pod.metadata.namespace.as_str(), c));
            out.push(count(snapshot, pods, pod, c));
        }
    }
    out
}

fn count(
    snapshot: &Snapshot,
    pods: &[&Pod],
    owner: &Pod,
    c: &TopologySpreadConstraint,
) -> SpreadCounts {
    let selector = c.label_selector.as_ref().map(|s| {
        c.match_label_keys
            .iter()
            .fold(s.clone(), |s, key| match owner.metadata.labels.get(key) {
                Some(v) => s.with_requirement(key, SelectorOperator::In, v),
                None => s,
            })
    });
    let honor_affinity = c.node_affinity_policy.as_deref() != Some("Ignore");
    let honor_taints = c.node_taints_policy.as_deref() == Some("Honor");

    let mut domain_index: HashMap<&str, usize> = HashMap::default();
    let mut node_domain: HashMap<&str, usize> = HashMap::default();
    for info in snapshot.nodes() {
        let node = &*info.node;
        let Some(value) = node.label(&c.topology_key) else {
            continue;
        };
        if honor_affinity && !matches_required_placement(owner, node) {
            continue;
        }
        if honor_taints && untolerated_taint(&node.spec.taints, &owner.spec.tolerations).is_some() {
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

    let counted = |p: &Pod| -> Option<usize> {
        let selects = selector
            .as_ref()
            .is_some_and(|s| s.matches(&p.metadata.labels));
        if !selects || p.is_terminating() || p.metadata.namespace != owner.metadata.namespace {
            return None;
        }
        node_domain.get(p.spec.node_name.as_str()).copied()
    };
    let mut counts = vec![0i64; domain_names.len()];
    let candidate_uids: HashSet<&str> = pods.iter().map(|p| p.metadata.uid.as_str()).collect();
    for r in snapshot.pods_in_namespace(&owner.metadata.namespace) {
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
        min_domains: c.min_domains.unwrap_or(1).max(1) as usize,
        counts,
        histogram,
        domain_of,
        domain_names,
    }
}

/// nodeSelector and required node affinity, as node eligibility for
/// spreading needs them.
fn matches_required_placement(pod: &Pod, node: &Node) -> bool {
    let labels = &node.metadata.labels;
    if !pod
        .spec
        .node_selector
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v))
    {
        return false;
    }
    let Some(required) = pod.node_affinity().and_then(|a| {
        a.required_during_scheduling_ignored_during_execution
            .as_ref()
    }) else {
        return true;
    };
    required.node_selector_terms.iter().any(|term| {
        (!term.match_expressions.is_empty() || !term.match_fields.is_empty())
            && term
                .match_expressions
                .iter()
                .all(|r| requirement_matches(r, labels.get(&r.key).map(String::as_str)))
            && term.match_fields.iter().all(|r| {
                r.key == "metadata.name"
                    && matches!(
                        r.operator,
                        NodeSelectorOperator::In | NodeSelectorOperator::NotIn
                    )
                    && requirement_matches(r, Some(node.name()))
            })
    })
}

fn requirement_matches(r: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let number = |s: &str| s.parse::<i64>().ok();
    match r.operator {
        NodeSelectorOperator::In => value.is_some_and(|v| r.values.iter().any(|x| x == v)),
        NodeSelectorOperator::NotIn => value.is_none_or(|v| !r.values.iter().any(|x| x == v)),
        NodeSelectorOperator::Exists => value.is_some(),
        NodeSelectorOperator::DoesNotExist => value.is_none(),
        NodeSelectorOperator::Gt | NodeSelectorOperator::Lt => {
            let (Some(v), [bound]) = (value.and_then(number), r.values.as_slice()) else {
                return false;
            };
            match (number(bound), r.operator) {
                (Some(b), NodeSelectorOperator::Gt) => v > b,
                (Some(b), _) => v < b,
                (None, _) => false,
            }
        }
        NodeSelectorOperator::Invalid => false,
    }
}
