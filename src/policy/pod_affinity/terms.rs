//! Pod (anti-)affinity terms as kube-scheduler sees them (`framework.AffinityTerm`):
//! which pods a term selects, by namespace and by labels.
//!
//! Two kinds of terms are evaluated:
//! - the incoming pod's own terms, parsed once per pod into [`Term`], with the
//!   namespaceSelector resolved against the Namespace objects of the view
//!   (upstream `mergeAffinityTermNamespacesIfNotEmpty`);
//! - existing pods' terms, evaluated in place against the incoming pod with
//!   the incoming pod's namespace labels ([`terms_selecting`]), so that
//!   thousands of existing pods cost no allocation.
//!
//! matchLabelKeys / mismatchLabelKeys: kube-apiserver merges them into
//! `labelSelector` when a pod is created (`key In [v]` / `key NotIn [v]` for
//! keys present in the pod's labels, only when labelSelector is set), and the
//! scheduler reads labelSelector only. Pods from a cluster-state file may
//! never have passed the apiserver, so we apply the same merge for every key
//! the selector does not already carry with that operator: for apiserver
//! pods it adds nothing (the merged requirement is found), for file pods it
//! gives what the apiserver would have stored.

use std::cell::OnceCell;
use std::fmt;

use crate::cluster::{HolderGroup, ListedPod, Snapshot};
use crate::model::pod::{PodAffinity, PodAffinityTerm, WeightedPodAffinityTerm};
use crate::model::selector::SelectorOperator;
use crate::model::{LabelSelector, Labels, Pod};
use crate::policy::domains::NodeAt;

/// The namespaces an incoming pod's term looks in, once its
/// namespaceSelector is resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Namespaces {
    /// `namespaceSelector: {}`: every namespace, known to the view or not.
    All,
    /// The listed namespaces, the ones whose labels matched a non-empty
    /// namespaceSelector, or (neither given) the owner's namespace.
    Listed(Vec<String>),
}

/// One of the incoming pod's terms, ready to match existing pods.
#[derive(Debug, Clone)]
pub struct Term {
    /// `None`: no labelSelector, which selects no pod.
    pub selector: Option<LabelSelector>,
    pub namespaces: Namespaces,
    pub topology_key: String,
}

/// A preferred term with its weight.
#[derive(Debug, Clone)]
pub struct WeightedTerm {
    pub term: Term,
    pub weight: i32,
}

/// The incoming pod's four groups of terms (upstream `PodInfo`).
#[derive(Debug, Clone, Default)]
pub struct PodTerms {
    pub required_affinity: Vec<Term>,
    pub required_anti_affinity: Vec<Term>,
    pub preferred_affinity: Vec<WeightedTerm>,
    pub preferred_anti_affinity: Vec<WeightedTerm>,
}

impl PodTerms {
    /// Parse and resolve every term of `pod`. Like upstream `NewPodInfo`, an
    /// invalid selector in any group fails the whole pod; the message names
    /// the group and the term.
    pub fn parse(snapshot: &Snapshot, pod: &Pod) -> Result<Self, String> {
        let affinity = pod.pod_affinity();
        let anti = pod.pod_anti_affinity();
        Ok(Self {
            required_affinity: required(snapshot, pod, affinity, "podAffinity")?,
            required_anti_affinity: required(snapshot, pod, anti, "podAntiAffinity")?,
            preferred_affinity: preferred(snapshot, pod, affinity, "podAffinity")?,
            preferred_anti_affinity: preferred(snapshot, pod, anti, "podAntiAffinity")?,
        })
    }
}

fn required(
    snapshot: &Snapshot,
    pod: &Pod,
    group: Option<&PodAffinity>,
    name: &str,
) -> Result<Vec<Term>, String> {
    let terms = group.map_or(&[][..], |g| {
        &g.required_during_scheduling_ignored_during_execution[..]
    });
    terms
        .iter()
        .enumerate()
        .map(|(i, t)| {
            Term::resolve(snapshot, pod, t).map_err(|e| {
                format!(
                    "pod {}: {name} requiredDuringScheduling term {i}: {e}",
                    pod.metadata.key()
                )
            })
        })
        .collect()
}

fn preferred(
    snapshot: &Snapshot,
    pod: &Pod,
    group: Option<&PodAffinity>,
    name: &str,
) -> Result<Vec<WeightedTerm>, String> {
    let terms: &[WeightedPodAffinityTerm] = group.map_or(&[][..], |g| {
        &g.preferred_during_scheduling_ignored_during_execution[..]
    });
    terms
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let term = Term::resolve(snapshot, pod, &w.pod_affinity_term).map_err(|e| {
                format!(
                    "pod {}: {name} preferredDuringScheduling term {i}: {e}",
                    pod.metadata.key()
                )
            })?;
            Ok(WeightedTerm {
                term,
                weight: w.weight,
            })
        })
        .collect()
}

impl Term {
    fn resolve(snapshot: &Snapshot, owner: &Pod, raw: &PodAffinityTerm) -> Result<Self, String> {
        validate(raw)?;
        let selector = raw.label_selector.as_ref().map(|s| {
            pending_label_key_requirements(raw, &owner.metadata.labels)
                .fold(s.clone(), |sel, (key, op, value)| {
                    sel.with_requirement(key, op, value)
                })
        });
        let namespaces = match &raw.namespace_selector {
            Some(ns) if ns.is_empty() => Namespaces::All,
            Some(ns) => {
                let mut names = raw.namespaces.clone();
                names.extend(
                    snapshot
                        .all_namespaces()
                        .filter(|n| ns.matches(&n.metadata.labels))
                        .map(|n| n.metadata.name.clone()),
                );
                names.sort_unstable();
                names.dedup();
                Namespaces::Listed(names)
            }
            None if raw.namespaces.is_empty() => {
                Namespaces::Listed(vec![owner.metadata.namespace.clone()])
            }
            None => {
                let mut names = raw.namespaces.clone();
                names.sort_unstable();
                names.dedup();
                Namespaces::Listed(names)
            }
        };
        Ok(Self {
            selector,
            namespaces,
            topology_key: raw.topology_key.clone(),
        })
    }

    /// Whether `pod` is one of the pods this term selects.
    pub fn matches(&self, pod: &Pod) -> bool {
        let in_namespace = match &self.namespaces {
            Namespaces::All => true,
            Namespaces::Listed(names) => names.contains(&pod.metadata.namespace),
        };
        in_namespace
            && self
                .selector
                .as_ref()
                .is_some_and(|s| s.matches(&pod.metadata.labels))
    }
}

/// For each group of pods holding terms (`groups`, whose members judge
/// alike): `judge` reads the group's first pod once, and `f` is called with
/// every member's node and pod (by its place in the group) and each
/// finding, in order; a group judged to have none is not walked.
pub fn for_each_judged_holder<'a, T>(
    snapshot: &'a Snapshot,
    groups: impl Iterator<Item = &'a HolderGroup>,
    judge: impl Fn(&'a Pod) -> Vec<T>,
    mut f: impl FnMut(NodeAt<'a>, ListedPod<'a>, &T),
) {
    for group in groups {
        let list = group.pod_list();
        let Some(first) = list.first() else { continue };
        let findings = judge(&first.pod);
        if findings.is_empty() {
            continue;
        }
        for (at, r) in list.iter().enumerate() {
            let Some(i) = r.node else { continue };
            let node = NodeAt::in_view(snapshot, i);
            let pod = ListedPod {
                list,
                at: at as u32,
            };
            for finding in &findings {
                f(node, pod, finding);
            }
        }
    }
}

/// Call `f` for every pod bound to a node of the view in `namespaces` that
/// `selector` selects (so the term with these namespaces and selector
/// matches it), with the pod by its place in its namespace's list; a
/// missing selector selects nothing.
pub fn for_each_bound_pod<'a>(
    snapshot: &'a Snapshot,
    namespaces: &Namespaces,
    selector: Option<&LabelSelector>,
    mut f: impl FnMut(NodeAt<'a>, ListedPod<'a>),
) {
    let Some(selector) = selector else { return };
    // The node object is read only if a rule asks for it: counting goes by
    // the node's index, and reading it was a cache miss per pod.
    let mut visit = |ns: &str| {
        for pod in snapshot.pods_selected_listed(ns, selector) {
            if let Some(i) = pod.pod_ref().node {
                f(NodeAt::in_view(snapshot, i), pod);
            }
        }
    };
    match namespaces {
        Namespaces::All => snapshot
            .namespaces_with_pods()
            .for_each(|(ns, _)| visit(ns)),
        Namespaces::Listed(names) => names.iter().for_each(|n| visit(n)),
    }
}

impl fmt::Display for Term {
    /// The selector, as `kubectl` prints it; used in failure reasons.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.selector {
            Some(s) => s.fmt(f),
            None => f.write_str("<none>"),
        }
    }
}

/// The checks `metav1.LabelSelectorAsSelector` makes on both selectors.
fn validate(raw: &PodAffinityTerm) -> Result<(), String> {
    if let Some(s) = &raw.label_selector {
        s.validate().map_err(|e| format!("labelSelector: {e}"))?;
    }
    if let Some(s) = &raw.namespace_selector {
        s.validate()
            .map_err(|e| format!("namespaceSelector: {e}"))?;
    }
    Ok(())
}

/// The matchLabelKeys (`In`) and mismatchLabelKeys (`NotIn`) requirements
/// the apiserver would have merged and the selector does not carry yet.
fn pending_label_key_requirements<'a>(
    raw: &'a PodAffinityTerm,
    owner_labels: &'a Labels,
) -> impl Iterator<Item = (&'a str, SelectorOperator, &'a str)> + 'a {
    let selector = raw.label_selector.as_ref();
    let keyed = |keys: &'a [String], op: SelectorOperator| {
        keys.iter().filter_map(move |key| {
            let value = owner_labels.get(key)?;
            let merged = selector?
                .match_expressions
                .iter()
                .any(|r| r.key == *key && r.operator == op);
            (!merged).then_some((key.as_str(), op, value.as_str()))
        })
    };
    keyed(&raw.match_label_keys, SelectorOperator::In)
        .chain(keyed(&raw.mismatch_label_keys, SelectorOperator::NotIn))
}

/// Whether an existing pod's term (`owner` holds it) selects the incoming
/// pod: namespace through the term's list / owner namespace /
/// namespaceSelector on the incoming pod's namespace labels, then labels.
fn existing_term_matches(
    owner: &Pod,
    term: &PodAffinityTerm,
    incoming: &Pod,
    incoming_ns_labels: &Labels,
) -> bool {
    let ns = &incoming.metadata.namespace;
    let in_namespace = if term.namespaces.is_empty() && term.namespace_selector.is_none() {
        owner.metadata.namespace == *ns
    } else {
        term.namespaces.contains(ns)
            || term
                .namespace_selector
                .as_ref()
                .is_some_and(|s| s.matches(incoming_ns_labels))
    };
    let Some(selector) = &term.label_selector else {
        return false;
    };
    let labels = &incoming.metadata.labels;
    in_namespace
        && selector.matches(labels)
        && pending_label_key_requirements(term, &owner.metadata.labels).all(|(key, op, value)| {
            let same = labels.get(key).is_some_and(|v| v == value);
            match op {
                SelectorOperator::In => same,
                _ => !same,
            }
        })
}

/// The terms of one of an existing pod's groups (e.g. its required
/// anti-affinity) that select the incoming pod, with their index. Upstream
/// drops a whole group when one of its terms does not parse, so such a group
/// selects nothing; validity is only checked once a term matches.
pub fn terms_selecting<'a, T>(
    group: &'a [T],
    term_of: fn(&T) -> &PodAffinityTerm,
    existing: &'a Pod,
    incoming: &'a Pod,
    incoming_ns_labels: &'a Labels,
) -> impl Iterator<Item = (usize, &'a T)> + 'a {
    let valid = OnceCell::new();
    group.iter().enumerate().filter(move |(_, g)| {
        existing_term_matches(existing, term_of(g), incoming, incoming_ns_labels)
            && *valid.get_or_init(|| group.iter().all(|g| validate(term_of(g)).is_ok()))
    })
}
