//! The extender's filter: every placement rule prepared once for a pod, then
//! a cheap check per node that reports the FIRST failing rule in upstream's
//! plugin order, whose code decides resolvability:
//!
//! NodeUnschedulable → TaintToleration → NodeAffinity → PodTopologySpread →
//! InterPodAffinity.
//!
//! NodeUnschedulable and TaintToleration are included on purpose although
//! kube-scheduler runs them itself before calling the extender: a node they
//! reject never reaches `/scheduler/filter`, so including them changes no
//! answer there, but `explain` and preemption's what-if need them to give
//! the true first reason ("why is my pod pending?" is most often a taint).
//! Both fail as UnschedulableAndUnresolvable, as upstream.

use crate::cluster::{InFlightPod, Snapshot};
use crate::config::{SchedulingSettings, Upstream};
use crate::model::node::Taint;
use crate::model::{Node, Pod, Shared, Toleration};

use super::domains::NodeAt;
use super::node_affinity::{self, NodeAffinityFilter};
use super::pod_affinity::{self, AffinityFilter};
use super::preemption::nominated::nominated_against;
use super::taint_toleration::{Tolerates, untolerated_taint, untolerated_taint_reason};
use super::topology_spread::{self, SpreadFilter};
use super::{Failure, Verdict};

pub const UNSCHEDULABLE_REASON: &str = "node(s) were unschedulable";

/// The prepared filter state of every rule for one pod. Clone it to try
/// "what if these pods were gone" without touching the original.
#[derive(Debug, Clone)]
pub struct PodFilters {
    tolerations: Shared<Vec<Toleration>>,
    upstream: Upstream,
    node_affinity: Option<NodeAffinityFilter>,
    spread: Option<SpreadFilter>,
    pod_affinity: Option<AffinityFilter>,
}

impl PodFilters {
    /// PreFilter of every rule. `Err` when the pod itself is invalid (a bad
    /// selector); the message names the rule.
    pub fn prepare(
        snapshot: &Snapshot,
        pod: &Pod,
        settings: &SchedulingSettings,
    ) -> Result<Self, String> {
        Ok(Self {
            tolerations: pod.spec.tolerations.clone(),
            upstream: settings.upstream(),
            node_affinity: node_affinity::prepare_filter(pod).map(|f| f.for_view(pod, snapshot)),
            spread: topology_spread::prepare_filter(
                snapshot,
                pod,
                &settings.default_spread_constraints,
            )
            .map_err(|e| format!("PodTopologySpread: {e}"))?,
            pod_affinity: pod_affinity::prepare_filter(snapshot, pod)
                .map_err(|e| format!("InterPodAffinity: {e}"))?,
        })
    }

    /// Next to kube-scheduler's in-tree plugins: judge as if each of the
    /// pods in flight were on any one of its candidate nodes or nowhere, and
    /// keep a node when some placement admits it, so a pod in flight can
    /// only make the answer more permissive (docs/burst-safety.md).
    pub fn admit_in_flight(&mut self, snapshot: &Snapshot, pods: &[InFlightPod]) {
        if pods.is_empty() {
            return;
        }
        if let Some(f) = &mut self.spread {
            f.admit_in_flight(snapshot, pods);
        }
        if let Some(f) = &mut self.pod_affinity {
            f.admit_in_flight(snapshot, pods);
        }
    }

    /// The first failing rule for `node`, in upstream's order.
    pub fn check(&self, node: &Node) -> Verdict {
        self.check_at(NodeAt::unindexed(node))
    }

    /// [`Self::check`] for a node whose index in the view may be known,
    /// which makes every topology lookup an array access.
    pub fn check_at(&self, at: NodeAt<'_>) -> Verdict {
        self.check_at_with_fit(at, || Ok(()))
    }

    /// [`Self::check_at`] with NodeResourcesFit's verdict `fit` asked where
    /// kube-scheduler runs it, after NodeAffinity and before the pod rules:
    /// `explain` gives the first reason kube-scheduler itself would give.
    pub fn check_at_with_fit(&self, at: NodeAt<'_>, fit: impl FnOnce() -> Verdict) -> Verdict {
        if !at.plain {
            let node = at.node();
            self.check_unschedulable(node)?;
            if let Some(taint) = untolerated_taint(&node.spec.taints, &self.tolerations) {
                return Err(Failure::unresolvable(untolerated_taint_reason(
                    self.upstream,
                    taint,
                )));
            }
        }
        if let Some(f) = &self.node_affinity {
            f.filter_at(at)?;
        }
        fit()?;
        if let Some(f) = &self.spread {
            f.filter_at(at)?;
        }
        if let Some(f) = &self.pod_affinity {
            f.filter_at(at)?;
        }
        Ok(())
    }

    /// [`Self::check_at`] as kube-scheduler runs its filters on a node
    /// (RunFilterPluginsWithNominatedPods): with the pods nominated to the
    /// node of at least `pod`'s priority counted as running there, so a
    /// preemptor waiting for its victims to go keeps its place; then, if
    /// there were any, once more without them, since they may still land
    /// elsewhere.
    pub fn check_with_nominated(&self, snapshot: &Snapshot, pod: &Pod, at: NodeAt<'_>) -> Verdict {
        if !snapshot.has_nominated_pods() {
            return self.check_at(at);
        }
        let nominated = nominated_against(snapshot, pod, at.node().name());
        if nominated.is_empty() {
            return self.check_at(at);
        }
        let mut with = self.clone();
        for p in nominated {
            with.add_pod(p, at);
        }
        with.check_at(at)?;
        self.check_at(at)
    }

    /// A cordoned node admits only pods tolerating its unschedulable taint.
    fn check_unschedulable(&self, node: &Node) -> Verdict {
        if !node.spec.unschedulable {
            return Ok(());
        }
        let taint = Taint {
            key: "node.kubernetes.io/unschedulable".into(),
            value: String::new(),
            effect: "NoSchedule".into(),
        };
        if self.tolerations.iter().any(|t| t.tolerates(&taint)) {
            Ok(())
        } else {
            Err(Failure::unresolvable(UNSCHEDULABLE_REASON))
        }
    }

    /// Whether a rule depends on the pods running on nodes (hard topology
    /// spread, required inter-pod (anti-)affinity, or existing pods'
    /// anti-affinity to this pod); without one, [`Self::add_pod`] and
    /// [`Self::remove_pod`] change nothing.
    pub fn counts_pods(&self) -> bool {
        self.spread.is_some() || self.pod_affinity.is_some()
    }

    /// `existing` now runs on `node`: update every pod-dependent rule.
    pub fn add_pod<'n>(&mut self, existing: &Pod, node: impl Into<NodeAt<'n>>) {
        let at = node.into();
        if let Some(f) = &mut self.spread {
            f.add_pod(existing, at);
        }
        if let Some(f) = &mut self.pod_affinity {
            f.add_pod(existing, at.node());
        }
    }

    /// `existing` no longer runs on `node` (a preemption victim).
    pub fn remove_pod<'n>(&mut self, existing: &Pod, node: impl Into<NodeAt<'n>>) {
        let at = node.into();
        if let Some(f) = &mut self.spread {
            f.remove_pod(existing, at);
        }
        if let Some(f) = &mut self.pod_affinity {
            f.remove_pod(existing, at.node());
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::cluster::ClusterObjects;
    use crate::policy::Code;
    use crate::policy::taint_toleration::UNTOLERATED_TAINT_REASON;
    use crate::policy::topology_spread::tests::{existing, hard, incoming};
    use crate::testing::make_node;

    fn prepared(pod: &Pod, s: &Snapshot) -> PodFilters {
        PodFilters::prepare(s, pod, &SchedulingSettings::default()).unwrap()
    }

    /// Only NoSchedule and NoExecute taints make a node not plain
    /// (`Snapshot::node_is_plain`); the filter skips reading a plain node
    /// for NodeUnschedulable and TaintToleration, and reading it gives
    /// the same verdicts.
    #[test]
    fn a_plain_node_gets_the_verdict_its_object_gives() {
        use crate::testing::make_pod;
        let s = crate::testing::snapshot(
            vec![
                make_node("bare").obj(),
                make_node("prefer")
                    .taint("spot", "yes", "PreferNoSchedule")
                    .obj(),
                make_node("no-schedule")
                    .taint("gpu", "yes", "NoSchedule")
                    .obj(),
                make_node("no-execute")
                    .taint("spot", "yes", "PreferNoSchedule")
                    .taint("maintenance", "true", "NoExecute")
                    .obj(),
            ],
            vec![],
        );
        let plain = |name: &str| s.node_is_plain(s.node_idx(name).unwrap());
        assert!(plain("bare") && plain("prefer"));
        assert!(!plain("no-schedule") && !plain("no-execute"));
        let plain_pod = make_pod("shop", "p").obj();
        let tolerating = make_pod("shop", "t")
            .spec("tolerations", json!([{"key": "gpu", "operator": "Exists"}]))
            .obj();
        for pod in [&plain_pod, &tolerating] {
            let filters = prepared(pod, &s);
            for (idx, info) in s.nodes().iter().enumerate() {
                let read = filters.check_at(NodeAt::unindexed(&info.node));
                let in_view = filters.check_at(NodeAt::in_view(&s, idx as u32));
                assert_eq!(
                    in_view,
                    read,
                    "{} on {}",
                    pod.metadata.name,
                    info.node.name()
                );
            }
        }
        let filters = prepared(&plain_pod, &s);
        let idx = s.node_idx("prefer").unwrap();
        assert_eq!(filters.check_at(NodeAt::in_view(&s, idx)), Ok(()));
    }

    #[test]
    fn first_failure_follows_upstream_plugin_order() {
        let mut n = make_node("n1")
            .hostname()
            .label("zone", "z1")
            .taint("k", "v", "NoExecute")
            .obj();
        n.spec.unschedulable = true;
        let s = Snapshot::build(ClusterObjects {
            nodes: vec![n.clone()],
            pods: vec![existing("e", "n1", json!({"foo": ""}))],
            ..Default::default()
        });
        let pod = incoming(
            json!({"foo": ""}),
            json!([hard("zone", 0)]),
            json!({"nodeSelector": {"zone": "z2"}}),
        );
        let f = prepared(&pod, &s);
        assert_eq!(&*f.check(&n).unwrap_err().reason, UNSCHEDULABLE_REASON);
        n.spec.unschedulable = false;
        let err = f.check(&n).unwrap_err();
        assert_eq!(&*err.reason, UNTOLERATED_TAINT_REASON);
        assert_eq!(err.code, Code::UnschedulableAndUnresolvable);
        n.spec.taints.clear();
        assert_eq!(&*f.check(&n).unwrap_err().reason, node_affinity::REASON);
        n.metadata.labels.insert("zone".into(), "z2".into());
        let err = f.check(&n).unwrap_err();
        assert_eq!(err.code, Code::Unschedulable, "{err}");
        assert!(err.reason.contains("topology spread"), "{err}");
    }

    /// Upstream `TaintToleration.Filter`: "node(s) had untolerated
    /// taint(s)" in 1.37.2 and 1.34.4 (since 1.34.2), the first untolerated
    /// taint `{key: value}` before.
    #[test]
    fn the_taint_reason_is_worded_as_the_followed_release_words_it() {
        let n = make_node("n1")
            .taint("dedicated", "gpu", "NoSchedule")
            .obj();
        let s = Snapshot::build(ClusterObjects::default());
        let pod = incoming(json!({}), json!([]), json!({}));
        for (version, want) in [
            ("1.37", "node(s) had untolerated taint(s)"),
            ("1.35", "node(s) had untolerated taint(s)"),
            ("1.34", "node(s) had untolerated taint(s)"),
            ("1.33", "node(s) had untolerated taint {dedicated: gpu}"),
        ] {
            let settings = crate::config::Config::parse(&format!(
                "scheduling:\n  kubernetesVersion: \"{version}\"\n"
            ))
            .unwrap()
            .scheduling;
            let f = PodFilters::prepare(&s, &pod, &settings).unwrap();
            let err = f.check(&n).unwrap_err();
            assert_eq!(&*err.reason, want, "{version}");
            assert_eq!(err.code, Code::UnschedulableAndUnresolvable, "{version}");
        }
    }

    #[test]
    fn tolerating_the_unschedulable_taint_admits_a_cordoned_node() {
        let mut n = make_node("n1").hostname().obj();
        n.spec.unschedulable = true;
        let s = Snapshot::build(ClusterObjects::default());
        let pod = incoming(
            json!({}),
            json!([]),
            json!({"tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]}),
        );
        assert!(prepared(&pod, &s).check(&n).is_ok());
    }

    #[test]
    fn invalid_spread_selector_names_the_rule() {
        let s = Snapshot::build(ClusterObjects::default());
        let pod = incoming(
            json!({}),
            json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}}]),
            json!({}),
        );
        let err = PodFilters::prepare(&s, &pod, &SchedulingSettings::default()).unwrap_err();
        assert!(err.starts_with("PodTopologySpread:"), "{err}");
    }

    #[test]
    fn add_and_remove_forward_to_the_spread_rule() {
        let nodes = vec![
            make_node("a").hostname().obj(),
            make_node("b").hostname().obj(),
        ];
        let s = Snapshot::build(ClusterObjects {
            nodes: nodes.clone(),
            pods: vec![existing("e", "a", json!({"foo": ""}))],
            ..Default::default()
        });
        let pod = incoming(
            json!({"foo": ""}),
            json!([hard("kubernetes.io/hostname", 1)]),
            json!({}),
        );
        let mut f = prepared(&pod, &s);
        assert!(f.check(&nodes[0]).is_err());
        let victim = existing("e", "a", json!({"foo": ""}));
        f.remove_pod(&victim, &nodes[0]);
        assert!(f.check(&nodes[0]).is_ok());
        f.add_pod(&victim, &nodes[0]);
        assert!(f.check(&nodes[0]).is_err());
    }
}

#[cfg(test)]
#[path = "filter_in_flight_tests.rs"]
mod in_flight_tests;
