//! Required inter-pod affinity and anti-affinity (upstream InterPodAffinity
//! PreFilter / Filter / PreFilterExtensions).
//!
//! [`prepare_filter`] counts, once per incoming pod and over every node of
//! the view, three tables of (topologyKey, value) → matches:
//! - affinity: existing pods matching ALL the pod's required affinity terms;
//! - anti-affinity: existing pods matching each required anti-affinity term;
//! - existing anti-affinity: existing pods' required anti-affinity terms
//!   that select the incoming pod (symmetry).
//!
//! [`AffinityFilter::filter`] then judges a node with a few lookups, in
//! upstream order: affinity, anti-affinity, existing anti-affinity.
//!
//! Next to kube-scheduler's in-tree plugins, [`AffinityFilter::admit_in_flight`]
//! lets a pod in flight satisfy required affinity in any domain it may be
//! in; the anti-affinity checks leave such pods out, which can only admit
//! more (docs/burst-safety.md).

use std::fmt::{self, Write as _};
use std::sync::Arc;

use super::counts::{DomainCounts, LiveCounts, Witness};
use super::terms::{
    Namespaces, PodTerms, Term, for_each_bound_pod, for_each_judged_holder, terms_selecting,
};
use crate::cluster::{InFlightPod, Snapshot};
use crate::model::pod::PodAffinityTerm;
use crate::model::{Labels, Node, ObjectMeta, Pod};
use crate::policy::domains::{Domain, KeyLookup, NodeAt};
use crate::policy::reason_cache::ReasonCache;
use crate::policy::{Failure, Verdict};

/// Upstream `ErrReasonAffinityRulesNotMatch` (UnschedulableAndUnresolvable).
pub const REASON_AFFINITY: &str = "node(s) didn't match pod affinity rules";
/// Upstream `ErrReasonAntiAffinityRulesNotMatch` (Unschedulable).
pub const REASON_ANTI_AFFINITY: &str = "node(s) didn't match pod anti-affinity rules";
/// Upstream `ErrReasonExistingAntiAffinityRulesNotMatch` (Unschedulable).
pub const REASON_EXISTING_ANTI_AFFINITY: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";

/// What never changes after preparation.
#[derive(Debug)]
struct Prepared {
    pod: Pod,
    terms: PodTerms,
    namespace_labels: Labels,
    /// The pod matches all of its own required affinity terms (needed by
    /// the "first pod of a group" exception).
    matches_own_affinity: bool,
    /// The topology key of each required affinity term.
    affinity_keys: Vec<KeyLookup>,
}

/// The per-pod filter state. Cloning shares the prepared tables; only
/// pods added or removed since preparation are copied.
#[derive(Debug, Clone)]
pub struct AffinityFilter {
    prepared: Arc<Prepared>,
    affinity: LiveCounts,
    anti_affinity: LiveCounts,
    existing_anti_affinity: LiveCounts,
    /// Pods in flight matching every required affinity term, counted in
    /// the domain of each node they may be on (see `admit_in_flight`).
    in_flight_affinity: Option<Arc<DomainCounts>>,
    /// Failure texts per (term or key, domain); see [`ReasonCache`].
    reasons: ReasonCache,
}

/// Prepare the filter for `pod`. `Ok(None)`: the rule does not apply (the
/// pod has no required terms and no existing pod's required anti-affinity
/// selects it), every node passes. `Err`: one of the pod's terms is invalid.
pub fn prepare_filter(snapshot: &Snapshot, pod: &Pod) -> Result<Option<AffinityFilter>, String> {
    let terms = PodTerms::parse(snapshot, pod)?;
    let namespace_labels = snapshot
        .namespace_labels(&pod.metadata.namespace)
        .cloned()
        .unwrap_or_default();
    let existing = existing_anti_affinity_counts(snapshot, pod, &namespace_labels);
    let existing = LiveCounts::new(existing);
    if existing.is_empty()
        && terms.required_affinity.is_empty()
        && terms.required_anti_affinity.is_empty()
    {
        return Ok(None);
    }
    let affinity = affinity_counts(snapshot, &terms.required_affinity);
    let anti_affinity = anti_affinity_counts(snapshot, &terms.required_anti_affinity);
    let matches_own_affinity = matches_all(&terms.required_affinity, pod);
    let affinity_keys: Vec<KeyLookup> = terms
        .required_affinity
        .iter()
        .map(|t| KeyLookup::new(snapshot.topology(), &t.topology_key))
        .collect();
    let slots = affinity_keys.len() + terms.required_anti_affinity.len() + existing.keys().count();
    Ok(Some(AffinityFilter {
        prepared: Arc::new(Prepared {
            pod: pod.clone(),
            terms,
            namespace_labels,
            matches_own_affinity,
            affinity_keys,
        }),
        affinity: LiveCounts::new(affinity),
        anti_affinity: LiveCounts::new(anti_affinity),
        existing_anti_affinity: existing,
        in_flight_affinity: None,
        reasons: ReasonCache::new(slots),
    }))
}

/// Upstream `podMatchesAllAffinityTerms`: an empty list matches nothing.
fn matches_all(terms: &[Term], pod: &Pod) -> bool {
    !terms.is_empty() && terms.iter().all(|t| t.matches(pod))
}

fn affinity_counts(snapshot: &Snapshot, terms: &[Term]) -> DomainCounts {
    let mut counts = DomainCounts::new(snapshot.topology());
    if terms.is_empty() {
        return counts;
    }
    // A counted pod must match every term, so the pods the narrowest term
    // may select are enough to look at.
    let pods_in = |t: &Term| match &t.namespaces {
        Namespaces::Listed(n) => n
            .iter()
            .map(|ns| snapshot.pods_in_namespace(ns).len())
            .sum::<usize>(),
        Namespaces::All => usize::MAX,
    };
    let Some(narrowest) = terms.iter().min_by_key(|t| pods_in(t)) else {
        return counts;
    };
    let (scope, selector) = (&narrowest.namespaces, narrowest.selector.as_ref());
    for_each_bound_pod(snapshot, scope, selector, |at, pod| {
        if matches_all(terms, &pod.pod_ref().pod) {
            for t in terms {
                counts.add(at, &t.topology_key, 1);
            }
        }
    });
    counts
}

fn anti_affinity_counts(snapshot: &Snapshot, terms: &[Term]) -> DomainCounts {
    let mut counts = DomainCounts::new(snapshot.topology());
    for (i, t) in terms.iter().enumerate() {
        for_each_bound_pod(snapshot, &t.namespaces, t.selector.as_ref(), |at, pod| {
            counts.add_witnessed(at, &t.topology_key, pod, i);
        });
    }
    counts
}

fn required_anti_terms(pod: &Pod) -> &[PodAffinityTerm] {
    pod.pod_anti_affinity().map_or(&[][..], |a| {
        &a.required_during_scheduling_ignored_during_execution[..]
    })
}

/// The existing pod's required anti-affinity terms that select `incoming`.
fn existing_terms_selecting<'a>(
    existing: &'a Pod,
    incoming: &'a Pod,
    incoming_ns_labels: &'a Labels,
) -> impl Iterator<Item = (usize, &'a PodAffinityTerm)> + 'a {
    let terms = required_anti_terms(existing);
    terms_selecting(terms, |t| t, existing, incoming, incoming_ns_labels)
}

fn existing_anti_affinity_counts(
    snapshot: &Snapshot,
    incoming: &Pod,
    incoming_ns_labels: &Labels,
) -> DomainCounts {
    let mut counts = DomainCounts::new(snapshot.topology());
    let groups = snapshot.pod_groups_with_required_anti_affinity_for(&incoming.metadata.namespace);
    let judge =
        |existing| existing_terms_selecting(existing, incoming, incoming_ns_labels).collect();
    for_each_judged_holder(snapshot, groups, judge, |at, pod, &(term, t)| {
        counts.add_witnessed(at, &t.topology_key, pod, term);
    });
    counts
}

/// `<reason>: pod <ns>/<name> (<selector>) in <key>=<value>`, the culprit
/// part only when one is known. Written into one buffer: a hostname term
/// fails each node with its own text. The value comes from the domain, not
/// the node's labels: reading those was a cache miss or more per failing
/// node of a served filter.
fn domain_reason(
    reason: &str,
    culprit: Option<(&ObjectMeta, &dyn fmt::Display)>,
    key: &str,
    value: &str,
) -> String {
    let mut text = String::with_capacity(reason.len() + key.len() + value.len() + 96);
    text.push_str(reason);
    text.push_str(": ");
    if let Some((meta, selector)) = culprit {
        text.push_str("pod ");
        if !meta.namespace.is_empty() {
            text.push_str(&meta.namespace);
            text.push('/');
        }
        text.push_str(&meta.name);
        // Writing into a String cannot fail.
        let _ = write!(text, " ({selector}) in ");
    }
    text.push_str(key);
    text.push('=');
    text.push_str(value);
    text
}

impl AffinityFilter {
    /// Whether the incoming pod may run on `node` as far as pod
    /// (anti-)affinity goes.
    pub fn filter(&self, node: &Node) -> Verdict {
        self.filter_at(NodeAt::unindexed(node))
    }

    /// [`Self::filter`] with the node's index in the view when known.
    pub fn filter_at(&self, at: NodeAt<'_>) -> Verdict {
        self.check_affinity(at)?;
        self.check_anti_affinity(at)?;
        self.check_existing_anti_affinity(at)
    }

    /// Upstream `satisfyPodAffinity`.
    fn check_affinity(&self, at: NodeAt<'_>) -> Verdict {
        let mut empty_domain = None;
        let prepared = &self.prepared;
        for (i, lookup) in prepared.affinity_keys.iter().enumerate() {
            let key = lookup.key.as_str();
            let domain = lookup.of(at);
            if domain == Domain::Missing {
                return Err(Failure::unresolvable(format!(
                    "{REASON_AFFINITY}: node has no label {key}"
                )));
            }
            if empty_domain.is_none() && self.affinity_count(key, at) <= 0 {
                empty_domain = Some((i, domain));
            }
        }
        let Some((i, domain)) = empty_domain else {
            return Ok(());
        };
        // The first pod of a group that selects itself may start anywhere
        // that has the keys, as long as no pod matches yet.
        if self.affinity.is_empty() && prepared.matches_own_affinity {
            return Ok(());
        }
        let lookup = &prepared.affinity_keys[i];
        Err(Failure::unresolvable(self.reasons.get_or(
            i,
            domain,
            || {
                format!(
                    "{REASON_AFFINITY}: no pod matching all affinity terms in {}={}",
                    lookup.key,
                    lookup.value(domain)
                )
            },
        )))
    }

    /// Pods matching every required affinity term in the node's domain for
    /// `key`, counting a pod in flight wherever it may be.
    fn affinity_count(&self, key: &str, at: NodeAt<'_>) -> i64 {
        let in_flight = self.in_flight_affinity.as_ref();
        self.affinity.count(key, at) + in_flight.map_or(0, |c| c.count(key, at))
    }

    /// Count `pods` in flight as kube-scheduler's own plugins may: each on
    /// one of its candidate nodes, or nowhere. Required affinity then holds
    /// in a domain where any pod in flight matching all its terms may be
    /// (per term; the "first pod of a group" exception still looks at the
    /// view alone, since a placed pod can only end it). Required
    /// anti-affinity, the incoming pod's and the existing pods', leaves
    /// them out: a pod counted there could only reject more nodes.
    pub fn admit_in_flight(&mut self, snapshot: &Snapshot, pods: &[InFlightPod]) {
        let terms = &self.prepared.terms.required_affinity;
        let mut counts = DomainCounts::new(snapshot.topology());
        let mut any = false;
        for f in pods.iter().filter(|f| matches_all(terms, &f.pod)) {
            for node in f.candidates.iter() {
                let at = NodeAt::resolve(snapshot, node);
                for t in terms {
                    counts.add(at, &t.topology_key, 1);
                }
                any = true;
            }
        }
        self.in_flight_affinity = any.then(|| Arc::new(counts));
        self.reasons.clear();
    }

    /// [`ReasonCache`] slots, one per term or key of a check: the required
    /// affinity keys first (slot = term), then the anti-affinity terms, then
    /// the existing pods' anti-affinity keys.
    fn anti_affinity_slot(&self, term: usize) -> usize {
        self.prepared.affinity_keys.len() + term
    }

    fn existing_slot(&self, key: usize) -> usize {
        self.anti_affinity_slot(self.prepared.terms.required_anti_affinity.len()) + key
    }

    /// Upstream `satisfyPodAntiAffinity`: per term; a node without the
    /// term's key passes it.
    fn check_anti_affinity(&self, at: NodeAt<'_>) -> Verdict {
        let terms = &self.prepared.terms.required_anti_affinity;
        for (i, t) in terms.iter().enumerate() {
            let key = t.topology_key.as_str();
            if self.anti_affinity.count(key, at) > 0 {
                let domain = self.anti_affinity.domain(key, at);
                let reason = self.reasons.get_or(self.anti_affinity_slot(i), domain, || {
                    let culprit = self.anti_affinity.witness(key, at).map(|(pod, term)| {
                        let selector = &terms[term];
                        (&pod.metadata, selector as &dyn fmt::Display)
                    });
                    domain_reason(
                        REASON_ANTI_AFFINITY,
                        culprit,
                        key,
                        self.anti_affinity.value(key, domain),
                    )
                });
                return Err(Failure::unschedulable(reason));
            }
        }
        Ok(())
    }

    /// Upstream `satisfyExistingPodsAntiAffinity`: any label pair of the
    /// node that an existing pod's anti-affinity term has claimed.
    fn check_existing_anti_affinity(&self, at: NodeAt<'_>) -> Verdict {
        let existing = &self.existing_anti_affinity;
        for (i, key) in existing.keys().enumerate() {
            if existing.count(key, at) > 0 {
                let domain = existing.domain(key, at);
                let reason = self.reasons.get_or(self.existing_slot(i), domain, || {
                    let culprit = existing.witness(key, at).map(|(pod, term)| {
                        let selector = required_anti_terms(pod)
                            .get(term)
                            .and_then(|t| t.label_selector.as_ref());
                        let selector: &dyn fmt::Display = match selector {
                            Some(s) => s,
                            None => &"<none>",
                        };
                        (&pod.metadata, selector)
                    });
                    domain_reason(
                        REASON_EXISTING_ANTI_AFFINITY,
                        culprit,
                        key,
                        existing.value(key, domain),
                    )
                });
                return Err(Failure::unschedulable(reason));
            }
        }
        Ok(())
    }

    /// Count `existing` as running on `node` (upstream AddPod), e.g. a
    /// nominated pod.
    pub fn add_pod(&mut self, existing: &Pod, node: &Node) {
        self.update(existing, node, 1);
    }

    /// Forget `existing` on `node` (upstream RemovePod), e.g. a victim.
    pub fn remove_pod(&mut self, existing: &Pod, node: &Node) {
        self.update(existing, node, -1);
    }

    fn update(&mut self, existing: &Pod, node: &Node, delta: i64) {
        let prepared = Arc::clone(&self.prepared);
        self.reasons.clear();
        let mut shared: Option<Arc<Pod>> = None;
        let mut witness = |term: usize| Witness {
            pod: shared
                .get_or_insert_with(|| Arc::new(existing.clone()))
                .clone(),
            term,
        };
        for (i, t) in existing_terms_selecting(existing, &prepared.pod, &prepared.namespace_labels)
        {
            self.existing_anti_affinity
                .change(node, &t.topology_key, delta, witness(i));
        }
        let affinity = &prepared.terms.required_affinity;
        if matches_all(affinity, existing) {
            for (i, t) in affinity.iter().enumerate() {
                self.affinity
                    .change(node, &t.topology_key, delta, witness(i));
            }
        }
        for (i, t) in prepared.terms.required_anti_affinity.iter().enumerate() {
            if t.matches(existing) {
                self.anti_affinity
                    .change(node, &t.topology_key, delta, witness(i));
            }
        }
    }
}
