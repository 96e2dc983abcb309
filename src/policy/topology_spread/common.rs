//! What filtering and scoring share: the pod's constraints (its own, or the
//! cluster defaults with a selector from the Services and controllers that
//! select it), which nodes take part, which pods are counted, and the
//! per-node domain assignment over the whole cluster.

use crate::cluster::{ByNode, PodRef, Snapshot};
use crate::config::scheduling::DefaultSpreadConstraints;
use crate::model::pod::TopologySpreadConstraint;
use crate::model::selector::{LabelSelectorRequirement, SelectorOperator};
use crate::model::{LabelSelector, Node, Pod, Toleration};
use crate::policy::domains::{Domain, DomainTable, KeyLookup, NodeAt};
use crate::policy::node_affinity::RequiredNodeAffinity;
use crate::policy::taint_toleration::untolerated_taint;

pub const HOSTNAME_KEY: &str = "kubernetes.io/hostname";
pub const DO_NOT_SCHEDULE: &str = "DoNotSchedule";
pub const SCHEDULE_ANYWAY: &str = "ScheduleAnyway";

/// A constraint with its selector resolved (matchLabelKeys merged, or the
/// default selector) and its defaults applied.
#[derive(Debug, Clone)]
pub struct Constraint {
    pub max_skew: i32,
    pub topology_key: String,
    /// `None` selects nothing (a missing labelSelector).
    pub selector: Option<LabelSelector>,
    pub min_domains: i32,
    pub honor_node_affinity: bool,
    pub honor_node_taints: bool,
}

/// The constraints of one kind (`DoNotSchedule` or `ScheduleAnyway`) that
/// apply to a pod.
#[derive(Debug, Clone)]
pub struct PodConstraints {
    pub constraints: Vec<Constraint>,
    /// They are the System defaults: nodes need not carry every key to be
    /// scored.
    pub system_defaulted: bool,
}

/// The pod's own constraints of `action`, or else the defaults of `action`
/// with the default selector; empty when none apply. `Err` when a selector
/// of the pod is invalid.
pub fn constraints_for(
    snapshot: &Snapshot,
    pod: &Pod,
    action: &str,
    defaults: &DefaultSpreadConstraints,
) -> Result<PodConstraints, String> {
    let own = &pod.spec.topology_spread_constraints;
    if !own.is_empty() {
        return Ok(PodConstraints {
            constraints: resolve(own, pod, action)?,
            system_defaulted: false,
        });
    }
    let (list, system_defaulted) = defaults.constraints();
    let mut constraints = resolve(&list, pod, action)?;
    if !constraints.is_empty() {
        let selector = default_selector(snapshot, pod);
        if selector.is_empty() {
            constraints.clear();
        }
        for c in &mut constraints {
            c.selector = Some(selector.clone());
        }
    }
    Ok(PodConstraints {
        constraints,
        system_defaulted,
    })
}

fn resolve(
    list: &[TopologySpreadConstraint],
    pod: &Pod,
    action: &str,
) -> Result<Vec<Constraint>, String> {
    let mut out = Vec::new();
    for c in list.iter().filter(|c| c.when_unsatisfiable == action) {
        if let Some(s) = &c.label_selector {
            s.validate()
                .map_err(|e| format!("topology spread constraint on {:?}: {e}", c.topology_key))?;
        }
        out.push(Constraint {
            max_skew: c.max_skew,
            topology_key: c.topology_key.clone(),
            selector: merge_match_label_keys(c, &pod.metadata.labels),
            min_domains: c.min_domains.unwrap_or(1),
            honor_node_affinity: c.node_affinity_policy.as_deref() != Some("Ignore"),
            honor_node_taints: c.node_taints_policy.as_deref() == Some("Honor"),
        });
    }
    Ok(out)
}

/// `key = <incoming pod's value>` for every matchLabelKeys key the pod has,
/// ANDed with the selector. A missing selector stays "selects nothing".
fn merge_match_label_keys(
    c: &TopologySpreadConstraint,
    labels: &crate::model::Labels,
) -> Option<LabelSelector> {
    let mut selector = c.label_selector.clone()?;
    for key in &c.match_label_keys {
        if let Some(value) = labels.get(key) {
            selector = selector.with_requirement(key, SelectorOperator::In, value);
        }
    }
    Some(selector)
}

/// Upstream's DefaultSelector: the labels of every Service in the pod's
/// namespace selecting it, merged, plus the selector of its controlling
/// ReplicationController, ReplicaSet or StatefulSet.
pub fn default_selector(snapshot: &Snapshot, pod: &Pod) -> LabelSelector {
    let mut selector = LabelSelector::default();
    let Some(owners) = snapshot.owners_in_namespace(&pod.metadata.namespace) else {
        return selector;
    };
    let labels = &pod.metadata.labels;
    for svc in &owners.services {
        let s = &svc.spec.selector;
        if !s.is_empty() && s.iter().all(|(k, v)| labels.get(k) == Some(v)) {
            selector
                .match_labels
                .extend(s.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
    }
    let Some(controller) = pod.metadata.controller() else {
        return selector;
    };
    let named = |name: &str| name == controller.name;
    match (controller.api_version.as_str(), controller.kind.as_str()) {
        ("v1", "ReplicationController") => {
            if let Some(rc) = owners
                .replication_controllers
                .iter()
                .find(|rc| named(&rc.metadata.name))
            {
                selector
                    .match_labels
                    .extend(rc.spec.selector.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
        ("apps/v1", kind @ ("ReplicaSet" | "StatefulSet")) => {
            let list = if kind == "ReplicaSet" {
                &owners.replica_sets
            } else {
                &owners.stateful_sets
            };
            let found = list.iter().find(|o| named(&o.metadata.name));
            if let Some(s) = found.and_then(|o| o.spec.selector.as_ref())
                && s.validate().is_ok()
            {
                add_requirements(&mut selector, s);
            }
        }
        _ => {}
    }
    selector
}

/// AND every requirement of `other` into `selector`.
fn add_requirements(selector: &mut LabelSelector, other: &LabelSelector) {
    for (k, v) in &other.match_labels {
        selector.match_expressions.push(LabelSelectorRequirement {
            key: k.clone(),
            operator: SelectorOperator::In,
            values: vec![v.clone()],
        });
    }
    selector
        .match_expressions
        .extend(other.match_expressions.iter().cloned());
}

impl Constraint {
    /// Whether an existing pod counts for this constraint: same namespace,
    /// not terminating, selected. An empty selector counts no pod.
    pub fn counts(&self, pod: &Pod, namespace: &str) -> bool {
        match &self.selector {
            Some(s) => {
                !s.is_empty()
                    && !pod.is_terminating()
                    && pod.metadata.namespace == namespace
                    && s.matches(&pod.metadata.labels)
            }
            None => false,
        }
    }

    /// The pods of `namespace` this constraint's selector selects, bound or
    /// not, terminating or not (see [`Self::counts_selected`]); none
    /// without a selector or with an empty one.
    pub fn selected<'a>(
        &'a self,
        snapshot: &'a Snapshot,
        namespace: &str,
    ) -> impl Iterator<Item = &'a PodRef> + 'a {
        let selected = match &self.selector {
            Some(s) if !s.is_empty() => Some(snapshot.pods_selected(namespace, s)),
            _ => None,
        };
        selected.into_iter().flatten()
    }

    /// [`Self::counts`] for a pod [`Self::selected`] gave.
    pub fn counts_selected(pod: &Pod) -> bool {
        !pod.is_terminating()
    }

    /// Whether the incoming pod matches its own selector (adds 1 to skew).
    pub fn selects(&self, pod: &Pod) -> bool {
        self.selector
            .as_ref()
            .is_some_and(|s| s.matches(&pod.metadata.labels))
    }

    /// nodeAffinityPolicy / nodeTaintsPolicy: does the node take part?
    pub fn includes_node(
        &self,
        node: &Node,
        tolerations: &[Toleration],
        required: &RequiredNodeAffinity,
    ) -> bool {
        (!self.honor_node_affinity || required.matches(node))
            && (!self.honor_node_taints
                || untolerated_taint(&node.spec.taints, tolerations).is_none())
    }
}

/// A node carrying every topology key of `constraints`.
pub fn has_all_keys(node: &Node, constraints: &[Constraint]) -> bool {
    constraints
        .iter()
        .all(|c| node.metadata.labels.contains_key(&c.topology_key))
}

/// A node of the view carrying every topology key of `constraints`.
#[inline]
pub fn has_all_keys_at(at: NodeAt<'_>, keys: &[KeyLookup]) -> bool {
    for key in keys {
        if key.of(at) == Domain::Missing {
            return false;
        }
    }
    true
}

/// Counts matching pods into the domains of every cluster node that takes
/// part (with `require_all_keys`, only nodes carrying every key), for each
/// constraint whose inclusion policies the node passes. With `register`,
/// such a node's domain enters the table; without, pods count only in
/// domains already there (scoring registers the candidates' domains first).
pub fn count_cluster(
    snapshot: &Snapshot,
    pod: &Pod,
    constraints: &[Constraint],
    keys: &[KeyLookup],
    require_all_keys: bool,
    register: bool,
    counts: &mut [DomainTable<i64>],
) {
    let nodes = snapshot.nodes();
    let required = RequiredNodeAffinity::of(pod);
    let tolerations = &pod.spec.tolerations;
    let every_node_takes_part = keys.iter().all(|k| k.on_every_node(nodes.len()))
        && constraints
            .iter()
            .all(|c| !c.honor_node_taints && (!c.honor_node_affinity || !required.is_set()));
    if every_node_takes_part {
        count_every_node(snapshot, pod, constraints, keys, register, counts);
        return;
    }
    // Which nodes the pod's required node affinity admits, decided for all
    // nodes at once (per label value) rather than per node and constraint.
    let admitted = (required.is_set() && constraints.iter().any(|c| c.honor_node_affinity))
        .then(|| required.admitted_nodes(pod, snapshot));
    let by_node: Vec<ByNode<'_>> = keys.iter().map(KeyLookup::by_node).collect();
    // Whether a node takes part before the per-constraint inclusion
    // policies. Asked only of the nodes scanned for domains and of those
    // running selected pods, a few hundred, not of every node up front.
    let base = |idx: usize| !require_all_keys || by_node.iter().all(|ids| ids.get(idx).is_some());
    let namespace = &pod.metadata.namespace;
    for (c, constraint) in constraints.iter().enumerate() {
        let ids = by_node[c];
        let admitted = admitted
            .as_deref()
            .filter(|_| constraint.honor_node_affinity);
        let takes_part = |idx: usize| {
            base(idx)
                && admitted.is_none_or(|a| a.get(idx) == Some(true))
                && !(constraint.honor_node_taints
                    && untolerated_taint(&nodes[idx].node.spec.taints, tolerations).is_some())
        };
        let table = &mut counts[c];
        if register {
            // Every domain with a node that takes part enters the table;
            // a node of a domain already in is not looked at again, and
            // the scan ends once every known domain is in. Only admitted
            // nodes are looked at: a domain no admitted node is in would
            // otherwise make the scan read every node.
            let mut seen = vec![false; keys[c].known_len()];
            let mut missing = seen.len();
            let scan: &mut dyn Iterator<Item = usize> = match admitted {
                Some(a) => &mut a.members().iter().map(|&i| i as usize),
                None => &mut (0..nodes.len()),
            };
            for idx in scan {
                if missing == 0 {
                    break;
                }
                let Some(id) = ids.get(idx) else { continue };
                if !seen[id as usize] && takes_part(idx) {
                    seen[id as usize] = true;
                    missing -= 1;
                    table.entry(Domain::Known(id), || 0);
                }
            }
        }
        // Upstream reads `node.Labels[key]`: without `register` (scoring), a
        // node without the key counts in the "" domain if that is registered.
        let empty = keys[c].empty_value();
        for r in constraint.selected(snapshot, namespace) {
            let Some(idx) = r.node.map(|i| i as usize) else {
                continue;
            };
            let domain = match ids.get(idx) {
                Some(id) => Domain::Known(id),
                None if register => continue,
                None => empty,
            };
            if let Some(n) = table.get_mut(domain)
                && takes_part(idx)
                && Constraint::counts_selected(&r.pod)
            {
                *n += 1;
            }
        }
    }
}

/// [`count_cluster`] when every node carries every key and no inclusion
/// policy can exclude a node: each key's domains are all of the view's
/// values, and a pod's domain is read straight from the index.
fn count_every_node(
    snapshot: &Snapshot,
    pod: &Pod,
    constraints: &[Constraint],
    keys: &[KeyLookup],
    register: bool,
    counts: &mut [DomainTable<i64>],
) {
    if register {
        for (key, table) in keys.iter().zip(counts.iter_mut()) {
            for id in 0..key.known_len() {
                table.entry(Domain::Known(id as u32), || 0);
            }
        }
    }
    let namespace = &pod.metadata.namespace;
    for (c, constraint) in constraints.iter().enumerate() {
        for r in constraint.selected(snapshot, namespace) {
            let Some(idx) = r.node else { continue };
            // By index: the node object is not read.
            let domain = keys[c].of(NodeAt::in_view(snapshot, idx));
            if let Some(n) = counts[c].get_mut(domain)
                && Constraint::counts_selected(&r.pod)
            {
                *n += 1;
            }
        }
    }
}
