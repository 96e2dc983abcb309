//! What the deletion-cost writer reports on `/metrics`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabel {
    pub result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WhatLabel {
    pub what: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ConstraintLabel {
    pub namespace: String,
    pub replicaset: String,
    pub topology_key: String,
}

#[derive(Default)]
pub struct DeletionCostMetrics {
    /// 1 on the replica holding the Lease.
    pub leader: Gauge,
    /// Opted-in ReplicaSets.
    pub workloads: Gauge,
    /// Pods whose cost kube-arbiter wants set.
    pub pods_annotated: Gauge,
    /// PATCH requests by result: applied, conflict, failed.
    pub patches: Family<ResultLabel, Counter>,
    /// 409s, by what was written: pod or lease.
    pub conflicts: Family<WhatLabel, Counter>,
    /// The largest skew any scale-in by 1..=N leaves with the planned costs.
    pub guaranteed_skew: Family<ConstraintLabel, Gauge>,
}

impl DeletionCostMetrics {
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "scale_in_leader",
            "1 when this replica holds the scale-in Lease and may write deletion costs",
            self.leader.clone(),
        );
        registry.register(
            "scale_in_workloads_managed",
            "ReplicaSets opted in with kube-arbiter.io/scale-in: preserve-spread",
            self.workloads.clone(),
        );
        registry.register(
            "scale_in_pods_annotated",
            "Pods of opted-in ReplicaSets whose pod-deletion-cost kube-arbiter sets",
            self.pods_annotated.clone(),
        );
        registry.register(
            "scale_in_patches",
            "Pod annotation patches by result (applied, conflict, failed)",
            self.patches.clone(),
        );
        registry.register(
            "scale_in_conflicts",
            "409 Conflict answers by object written (pod, lease)",
            self.conflicts.clone(),
        );
        registry.register(
            "scale_in_guaranteed_skew",
            "Largest skew a scale-in by up to scale-in-max leaves with the planned costs",
            self.guaranteed_skew.clone(),
        );
    }
}
