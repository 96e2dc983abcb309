//! Preemption as kube-scheduler's DefaultPreemption does it, for the
//! extender's `preempt` verb: is the pod allowed to preempt at all
//! ([`eligibility`]), which pods must go on a node so it fits
//! ([`victims`]), and which node upstream would then choose ([`pick`]).
//!
//! The preemptor's state is prepared once per request ([`Preemptor::new`]);
//! the pods nominated to each node ([`nominated`]) and the budgets
//! selecting each pod come indexed with the snapshot. Each node then removes and re-adds pods on that state
//! and restores it, never re-preparing and never copying it.

pub mod eligibility;
pub mod nominated;
pub mod pick;
pub mod victims;

use jiff::Timestamp;

use crate::cluster::{NodeInfo, Snapshot, pod_importance};
use crate::model::Pod;

use super::Verdict;
use super::domains::NodeAt;
use super::filter::PodFilters;
use crate::config::SchedulingSettings;
use crate::model::requests::pod_requests;
use crate::policy::resources::PodRequest;

pub use pick::pick_one_node;

/// The preemptor's filter rules other than resources (node affinity,
/// topology spread, inter-pod affinity), prepared for one pod. Victim
/// selection removes and re-adds existing pods and asks again, always on
/// the view's own node at its index (topology lookups by array).
pub trait NodeFilters: Clone {
    fn check(&self, node: NodeAt<'_>) -> Verdict;
    fn add_pod(&mut self, existing: &Pod, node: NodeAt<'_>);
    fn remove_pod(&mut self, existing: &Pod, node: NodeAt<'_>);

    /// Whether any rule counts the pods on nodes. When none does, removing
    /// and re-adding pods cannot change [`Self::check`], so victim
    /// selection asks it once per node instead of once per pod.
    fn counts_pods(&self) -> bool {
        true
    }
}

impl NodeFilters for PodFilters {
    fn check(&self, node: NodeAt<'_>) -> Verdict {
        PodFilters::check_at(self, node)
    }
    fn counts_pods(&self) -> bool {
        PodFilters::counts_pods(self)
    }
    fn add_pod(&mut self, existing: &Pod, node: NodeAt<'_>) {
        PodFilters::add_pod(self, existing, node);
    }
    fn remove_pod(&mut self, existing: &Pod, node: NodeAt<'_>) {
        PodFilters::remove_pod(self, existing, node);
    }
}

/// The pod that wants to preempt in one snapshot, with everything computed
/// once per request.
#[derive(Clone)]
pub struct Preemptor<'a, F> {
    snapshot: &'a Snapshot,
    pub pod: &'a Pod,
    request: PodRequest,
    filters: F,
    /// Stands in for a missing `status.startTime` (upstream uses "now").
    now: Timestamp,
}

impl<'a, F: NodeFilters> Preemptor<'a, F> {
    pub fn new(snapshot: &'a Snapshot, pod: &'a Pod, filters: F, now: Timestamp) -> Self {
        Self {
            snapshot,
            pod,
            request: PodRequest::plain(pod_requests(pod)),
            filters,
            now,
        }
    }

    /// Check resources as NodeResourcesFit configured by `settings` does
    /// in the scheduler's dry run ([`PodRequest::new`]): without the
    /// extended resources it ignores, and leaving those DeviceClasses map
    /// to the DRA plugin on nodes that do not list them.
    pub fn ignoring(mut self, settings: &SchedulingSettings) -> Self {
        self.request = PodRequest::new(
            pod_requests(self.pod),
            settings,
            self.snapshot.extended_resource_classes(),
        );
        self
    }

    pub fn priority(&self) -> i32 {
        self.pod.priority()
    }
}

/// Pods to evict on one node, most important first, and how many of them
/// break a PodDisruptionBudget.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Victims {
    pub pods: Vec<Victim>,
    pub num_pdb_violations: usize,
}

/// One pod to evict: where it is among its node's pods, and what orders it
/// among the victims (copied from the node's pod summaries, so ordering
/// and choosing a node read no pod).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Victim {
    /// Position in the node's [`NodeInfo::pods`].
    pub position: u32,
    pub priority: i32,
    /// `status.startTime`, or the request's "now" when the pod has not
    /// started (upstream uses the current time).
    pub start_time: Timestamp,
    /// Whether its eviction counts in `num_pdb_violations`.
    pub breaks_pdb: bool,
}

impl Victim {
    /// `MoreImportantPod` as a sort key, smallest first: higher priority
    /// first, then the pod that started earlier ([`pod_importance`]).
    pub fn importance(&self) -> u128 {
        pod_importance(self.priority, self.start_time)
    }
}

/// A node where preemption helps, with its victims.
#[derive(Debug, Clone)]
pub struct Candidate<'s> {
    pub node: &'s NodeInfo,
    pub victims: Victims,
}

#[cfg(test)]
pub(crate) mod testing {
    //! Pods and nodes for the preemption tables.

    use super::*;
    use crate::model::Node;
    use crate::policy::Failure;
    use crate::testing::{make_node, make_pod};

    /// Resources only: no other filter rule.
    #[derive(Debug, Clone, Default)]
    pub struct NoFilters;

    impl NodeFilters for NoFilters {
        fn check(&self, _: NodeAt<'_>) -> Verdict {
            Ok(())
        }
        fn add_pod(&mut self, _: &Pod, _: NodeAt<'_>) {}
        fn remove_pod(&mut self, _: &Pod, _: NodeAt<'_>) {}
        fn counts_pods(&self) -> bool {
            false
        }
    }

    /// Anti-affinity to pods labelled `app=<label>` on the same node,
    /// counted incrementally the way prepared filter state is.
    #[derive(Debug, Clone, Default)]
    pub struct AvoidLabel {
        pub label: String,
        pub on_node: std::collections::BTreeMap<String, usize>,
    }

    impl AvoidLabel {
        fn matches(&self, pod: &Pod) -> bool {
            pod.metadata.labels.get("app") == Some(&self.label)
        }
    }

    impl NodeFilters for AvoidLabel {
        fn check(&self, at: NodeAt<'_>) -> Verdict {
            match self.on_node.get(at.node().name()).copied().unwrap_or(0) {
                0 => Ok(()),
                n => Err(Failure::unschedulable(format!(
                    "{n} pods with app={} on the node",
                    self.label
                ))),
            }
        }
        fn add_pod(&mut self, pod: &Pod, at: NodeAt<'_>) {
            if self.matches(pod) {
                *self
                    .on_node
                    .entry(at.node().name().to_string())
                    .or_default() += 1;
            }
        }
        fn remove_pod(&mut self, pod: &Pod, at: NodeAt<'_>) {
            if self.matches(pod) {
                *self
                    .on_node
                    .entry(at.node().name().to_string())
                    .or_default() -= 1;
            }
        }
    }

    pub const NOW: &str = "2024-06-01T00:00:00Z";

    pub fn now() -> Timestamp {
        NOW.parse().unwrap()
    }

    /// A pod named `name` (uid `uid-<name>`) on `node` with `priority`,
    /// requesting `cpu` millicores and `mem` bytes, started at `start`
    /// (seconds after 2024-01-01, or not started when `None`).
    pub fn pod(
        name: &str,
        node: &str,
        priority: i32,
        cpu: i64,
        mem: i64,
        start: Option<i64>,
    ) -> Pod {
        let start = start.map(|s| (Timestamp::from_second(1_704_067_200 + s).unwrap()).to_string());
        make_pod("default", name)
            .uid(&format!("uid-{name}"))
            .node(node)
            .priority(priority)
            .req(cpu, mem)
            .phase("Running")
            .start(start.as_deref())
            .obj()
    }

    pub fn node(name: &str, cpu: i64, mem: i64) -> Node {
        make_node(name).hostname().capacity(cpu, mem).obj()
    }

    pub fn with_labels(mut pod: Pod, labels: &[(&str, &str)]) -> Pod {
        for (k, v) in labels {
            pod.metadata.labels.insert(k.to_string(), v.to_string());
        }
        pod
    }
}
