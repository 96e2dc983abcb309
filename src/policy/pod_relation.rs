//! Whether one pod's placement can change what the rules decide for
//! another: the question the in-flight ledger asks before a decision
//! (see `cluster::in_flight`). A pod placed somewhere is counted by:
//!
//! - the incoming pod's topology spread constraints, hard or soft, its own
//!   or the cluster defaults: same namespace, selector matches its labels;
//! - the incoming pod's pod (anti-)affinity terms, required or preferred:
//!   term namespaces and selector;
//! - symmetrically, its OWN pod (anti-)affinity terms when they select the
//!   incoming pod (required anti-affinity filters; required affinity and
//!   preferred terms score).
//!
//! Anything else (another namespace, no matching selector) cannot change
//! the answer, so the incoming pod never waits for it.

use crate::cluster::Snapshot;
use crate::config::SchedulingSettings;
use crate::model::pod::{PodAffinity, WeightedPodAffinityTerm};
use crate::model::{Labels, Pod};

use super::pod_affinity::terms::{PodTerms, terms_selecting};
use super::topology_spread::common::{
    Constraint, DO_NOT_SCHEDULE, SCHEDULE_ANYWAY, constraints_for,
};

/// The incoming pod's rules, prepared once to test many other pods.
#[derive(Debug)]
pub struct PodRelation<'p> {
    incoming: &'p Pod,
    spread: Vec<Constraint>,
    terms: PodTerms,
    namespace_labels: Labels,
}

impl<'p> PodRelation<'p> {
    /// `Err` when one of the pod's selectors is invalid (its decision will
    /// fail with the same message).
    pub fn prepare(
        snapshot: &Snapshot,
        incoming: &'p Pod,
        settings: &SchedulingSettings,
    ) -> Result<Self, String> {
        let defaults = &settings.default_spread_constraints;
        let mut spread =
            constraints_for(snapshot, incoming, DO_NOT_SCHEDULE, defaults)?.constraints;
        spread.extend(constraints_for(snapshot, incoming, SCHEDULE_ANYWAY, defaults)?.constraints);
        Ok(Self {
            incoming,
            spread,
            terms: PodTerms::parse(snapshot, incoming)?,
            namespace_labels: snapshot
                .namespace_labels(&incoming.metadata.namespace)
                .cloned()
                .unwrap_or_default(),
        })
    }

    /// Whether `other`, once placed, could be counted by a rule deciding
    /// the incoming pod's placement.
    pub fn counts(&self, other: &Pod) -> bool {
        let namespace = &self.incoming.metadata.namespace;
        let t = &self.terms;
        self.spread.iter().any(|c| c.counts(other, namespace))
            || t.required_affinity
                .iter()
                .chain(&t.required_anti_affinity)
                .any(|term| term.matches(other))
            || t.preferred_affinity
                .iter()
                .chain(&t.preferred_anti_affinity)
                .any(|w| w.term.matches(other))
            || [other.pod_affinity(), other.pod_anti_affinity()]
                .into_iter()
                .flatten()
                .any(|group| self.group_selects_incoming(other, group))
    }

    /// One of `other`'s own affinity groups has a term selecting the
    /// incoming pod.
    fn group_selects_incoming(&self, other: &Pod, group: &PodAffinity) -> bool {
        let labels = &self.namespace_labels;
        terms_selecting(
            &group.required_during_scheduling_ignored_during_execution,
            |t| t,
            other,
            self.incoming,
            labels,
        )
        .next()
        .is_some()
            || terms_selecting(
                &group.preferred_during_scheduling_ignored_during_execution,
                |w: &WeightedPodAffinityTerm| &w.pod_affinity_term,
                other,
                self.incoming,
                labels,
            )
            .next()
            .is_some()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::cluster::ClusterObjects;

    fn pod(v: Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    fn snapshot() -> Snapshot {
        let ns = |name: &str, team: &str| {
            serde_json::from_value(json!({"metadata": {"name": name, "labels": {"team": team}}}))
                .unwrap()
        };
        Snapshot::build(ClusterObjects {
            namespaces: vec![ns("shop", "a"), ns("blog", "a"), ns("bank", "b")],
            ..Default::default()
        })
    }

    fn web(ns: &str) -> Value {
        json!({"metadata": {"name": "x", "namespace": ns, "labels": {"app": "web"}}})
    }

    fn spread(when: &str) -> Value {
        json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": when,
                "labelSelector": {"matchLabels": {"app": "web"}}}])
    }

    fn anti(term: Value) -> Value {
        json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})
    }

    fn term(extra: Value) -> Value {
        let mut t = json!({"labelSelector": {"matchLabels": {"app": "web"}},
                           "topologyKey": "kubernetes.io/hostname"});
        for (k, v) in extra.as_object().unwrap() {
            t[k] = v.clone();
        }
        t
    }

    #[test]
    fn which_pods_the_rules_of_an_incoming_pod_count() {
        let with = |mut p: Value, path: &str, v: Value| {
            p["spec"][path] = v;
            p
        };
        let cases: Vec<(&str, Value, Value, bool)> = vec![
            (
                "hard spread counts a same-namespace pod its selector matches",
                with(
                    web("shop"),
                    "topologySpreadConstraints",
                    spread("DoNotSchedule"),
                ),
                web("shop"),
                true,
            ),
            (
                "soft spread counts it too (it changes the scores)",
                with(
                    web("shop"),
                    "topologySpreadConstraints",
                    spread("ScheduleAnyway"),
                ),
                web("shop"),
                true,
            ),
            (
                "spread never counts another namespace",
                with(
                    web("shop"),
                    "topologySpreadConstraints",
                    spread("DoNotSchedule"),
                ),
                web("blog"),
                false,
            ),
            (
                "spread does not count a pod its selector does not match",
                with(
                    web("shop"),
                    "topologySpreadConstraints",
                    spread("DoNotSchedule"),
                ),
                json!({"metadata": {"name": "y", "namespace": "shop", "labels": {"app": "db"}}}),
                false,
            ),
            (
                "a pod without rules counts nothing",
                web("shop"),
                web("shop"),
                false,
            ),
            (
                "required anti-affinity counts a matching pod of its namespace",
                with(web("shop"), "affinity", anti(term(json!({})))),
                web("shop"),
                true,
            ),
            (
                "anti-affinity with a namespaceSelector counts the selected namespaces",
                with(
                    web("shop"),
                    "affinity",
                    anti(term(
                        json!({"namespaceSelector": {"matchLabels": {"team": "a"}}}),
                    )),
                ),
                web("blog"),
                true,
            ),
            (
                "anti-affinity with a namespaceSelector skips other namespaces",
                with(
                    web("shop"),
                    "affinity",
                    anti(term(
                        json!({"namespaceSelector": {"matchLabels": {"team": "a"}}}),
                    )),
                ),
                web("bank"),
                false,
            ),
            (
                "preferred affinity counts a matching pod",
                with(
                    web("shop"),
                    "affinity",
                    json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 5, "podAffinityTerm": term(json!({}))}]}}),
                ),
                web("shop"),
                true,
            ),
            (
                "symmetric: the other pod's required anti-affinity selecting the incoming pod",
                web("shop"),
                with(web("shop"), "affinity", anti(term(json!({})))),
                true,
            ),
            (
                "symmetric: the other pod's terms look in their own namespace only",
                web("blog"),
                with(web("shop"), "affinity", anti(term(json!({})))),
                false,
            ),
        ];
        let s = snapshot();
        let settings = SchedulingSettings::default();
        for (rule, incoming, other, want) in cases {
            let incoming = pod(incoming);
            let relation = PodRelation::prepare(&s, &incoming, &settings).unwrap();
            assert_eq!(relation.counts(&pod(other)), want, "{rule}");
        }
    }

    #[test]
    fn an_invalid_selector_is_an_error() {
        let incoming = pod(json!({"metadata": {"name": "x", "namespace": "shop"},
            "spec": {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}}]}}));
        assert!(
            PodRelation::prepare(&snapshot(), &incoming, &SchedulingSettings::default()).is_err()
        );
    }
}
