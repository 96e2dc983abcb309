//! Which ReplicaSets opted in, and the annotations each of their pods
//! should carry. Pure: the live loop and `/debug/scale-in` both call it on
//! a snapshot.
//!
//! A ReplicaSet controlled by a Deployment follows the Deployment's
//! annotations when the Deployments are known (live mode): the Deployment
//! controller copies annotations onto its ReplicaSets but never removes
//! one, so a ReplicaSet keeps `kube-arbiter.io/scale-in` after its
//! Deployment dropped it. Without Deployments (file mode) the ReplicaSet's
//! own, copied annotations are read.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::Serialize;

use crate::cluster::Snapshot;
use crate::config::scheduling::DefaultSpreadConstraints;
use crate::model::meta::{DELETION_COST_MANAGED, POD_DELETION_COST, SCALE_IN, SCALE_IN_MAX};
use crate::model::{Pod, SelectorOwner};
use crate::policy::scale_in::keep_spread::plan_deletion_costs;

/// The value of `kube-arbiter.io/scale-in` that opts a workload in.
pub const PRESERVE_SPREAD: &str = "preserve-spread";

/// The annotations of Deployments, by namespace and name.
pub trait DeploymentAnnotations {
    /// `None` when there is no such Deployment.
    fn annotations(&self, namespace: &str, name: &str) -> Option<BTreeMap<String, String>>;
}

/// What one opted-in ReplicaSet's pods should carry, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadPlan {
    pub namespace: String,
    pub replica_set: String,
    /// The Deployment that controls the ReplicaSet, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployment: Option<String>,
    /// The object whose annotation opted in ("Deployment shop/web").
    pub opted_in_by: String,
    pub max_scale_in: usize,
    /// A `kube-arbiter.io/scale-in-max` that could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    pub pods: Vec<PodCost>,
    /// The pods the ReplicaSet controller deletes first with the planned
    /// costs, in order.
    pub deletion_order: Vec<String>,
    pub constraints: Vec<ConstraintSkew>,
    /// Every scale-in by 1..=maxScaleIn keeps every hard constraint
    /// within its maxSkew.
    pub keeps_spread: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodCost {
    pub name: String,
    #[serde(skip)]
    pub uid: String,
    #[serde(skip)]
    pub resource_version: String,
    /// The pod-deletion-cost it carries now.
    pub current: Option<String>,
    /// Whether kube-arbiter set that cost.
    pub managed: bool,
    /// The cost kube-arbiter wants it to carry (`None`: none of its own).
    pub desired: Option<i32>,
    /// A cost the user set: never changed.
    pub users_cost: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConstraintSkew {
    pub topology_key: String,
    pub max_skew: i64,
    pub skew_now: i64,
    /// The skew after the controller deletes 1, 2, ... pods.
    pub skew_after: Vec<i64>,
    /// The largest of those: what the costs guarantee.
    pub guaranteed_skew: i64,
}

impl PodCost {
    /// Whether the pod's annotations differ from what kube-arbiter wants.
    pub fn needs_patch(&self) -> bool {
        if self.users_cost {
            return false;
        }
        match self.desired {
            Some(cost) => !self.managed || self.current.as_deref() != Some(&cost.to_string()),
            None => self.managed,
        }
    }
}

/// Why `rs` is opted in, and the `scale-in-max` value to read, or `None`.
fn opt_in(
    rs: &SelectorOwner,
    deployments: Option<&dyn DeploymentAnnotations>,
) -> Option<(String, Option<String>)> {
    let meta = &rs.metadata;
    let deployment = meta.controller().filter(|o| o.kind == "Deployment");
    let (by, annotations) = match (deployment, deployments) {
        (Some(d), Some(known)) => (
            format!("Deployment {}/{}", meta.namespace, d.name),
            known.annotations(&meta.namespace, &d.name)?,
        ),
        _ => (
            format!("ReplicaSet {}", meta.key()),
            meta.annotations.clone(),
        ),
    };
    (annotations.get(SCALE_IN).map(String::as_str) == Some(PRESERVE_SPREAD))
        .then(|| (by, annotations.get(SCALE_IN_MAX).cloned()))
}

/// `kube-arbiter.io/scale-in-max`, else a quarter of the replicas, at
/// least 1.
fn max_scale_in(given: Option<&str>, replicas: usize) -> (usize, Option<String>) {
    let default = (replicas / 4).max(1);
    match given.map(|v| (v, v.trim().parse::<usize>())) {
        None => (default, None),
        Some((_, Ok(n))) if n >= 1 => (n, None),
        Some((v, _)) => (
            default,
            Some(format!(
                "{SCALE_IN_MAX}: {v:?} is not a positive integer; planning for {default}"
            )),
        ),
    }
}

fn owned_by(pod: &Pod, rs: &SelectorOwner) -> bool {
    pod.metadata.controller().is_some_and(|o| {
        o.kind == "ReplicaSet"
            && o.name == rs.metadata.name
            && (o.uid.is_empty() || rs.metadata.uid.is_empty() || o.uid == rs.metadata.uid)
    })
}

fn is_managed(pod: &Pod) -> bool {
    pod.metadata
        .annotations
        .get(DELETION_COST_MANAGED)
        .map(String::as_str)
        == Some("true")
}

/// The plans of every opted-in ReplicaSet of the snapshot (of `only` that
/// namespace, when given).
pub fn plans(
    snapshot: &Snapshot,
    deployments: Option<&dyn DeploymentAnnotations>,
    defaults: &DefaultSpreadConstraints,
    now: Timestamp,
    only: Option<&str>,
) -> Vec<WorkloadPlan> {
    let mut out = Vec::new();
    for (namespace, pods) in snapshot.namespaces_with_pods() {
        if only.is_some_and(|ns| ns != namespace) {
            continue;
        }
        let Some(owners) = snapshot.owners_in_namespace(namespace) else {
            continue;
        };
        for rs in &owners.replica_sets {
            let Some((by, max)) = opt_in(rs, deployments) else {
                continue;
            };
            let mut mine: Vec<&Pod> = pods
                .iter()
                .map(|r| &*r.pod)
                .filter(|p| owned_by(p, rs) && p.metadata.deletion_timestamp.is_none())
                .collect();
            // Pods no rule of the controller tells apart keep their input
            // order in the plan: by UID, the plan is the same in every
            // replica and after every update of the view (which may move a
            // patched pod in the namespace's list).
            mine.sort_by(|a, b| a.metadata.uid.cmp(&b.metadata.uid));
            out.push(plan_one(
                snapshot,
                rs,
                by,
                max.as_deref(),
                &mine,
                defaults,
                now,
            ));
        }
    }
    out
}

fn plan_one(
    snapshot: &Snapshot,
    rs: &SelectorOwner,
    opted_in_by: String,
    max: Option<&str>,
    pods: &[&Pod],
    defaults: &DefaultSpreadConstraints,
    now: Timestamp,
) -> WorkloadPlan {
    let replicas = rs.spec.replicas.map_or(pods.len(), |r| r.max(0) as usize);
    let (max_scale_in, problem) = max_scale_in(max, replicas);
    // The planner sees the pods as they would be without kube-arbiter's
    // costs: a cost left on an input pod is the user's.
    let stripped: Vec<Pod> = pods
        .iter()
        .map(|p| {
            let mut p = (*p).clone();
            if is_managed(&p) {
                p.metadata.annotations.remove(POD_DELETION_COST);
            }
            p
        })
        .collect();
    let refs: Vec<&Pod> = stripped.iter().collect();
    let plan = plan_deletion_costs(snapshot, &refs, max_scale_in, defaults, now);
    let pods = pods
        .iter()
        .zip(&stripped)
        .map(|(p, s)| {
            let managed = is_managed(p);
            PodCost {
                name: p.metadata.name.clone(),
                uid: p.metadata.uid.clone(),
                resource_version: p.metadata.resource_version.clone(),
                current: p.metadata.annotations.get(POD_DELETION_COST).cloned(),
                managed,
                desired: plan
                    .costs
                    .iter()
                    .find(|(c, _)| std::ptr::eq(*c, s))
                    .map(|(_, cost)| *cost),
                users_cost: !managed && p.metadata.annotations.contains_key(POD_DELETION_COST),
            }
        })
        .collect();
    WorkloadPlan {
        namespace: rs.metadata.namespace.clone(),
        replica_set: rs.metadata.name.clone(),
        deployment: rs
            .metadata
            .controller()
            .filter(|o| o.kind == "Deployment")
            .map(|o| o.name.clone()),
        opted_in_by,
        max_scale_in,
        problem,
        pods,
        deletion_order: plan
            .deletion_order
            .iter()
            .map(|p| p.metadata.name.clone())
            .collect(),
        keeps_spread: plan.keeps_spread(),
        constraints: plan
            .constraints
            .iter()
            .map(|c| ConstraintSkew {
                topology_key: c.topology_key.clone(),
                max_skew: c.max_skew,
                skew_now: c.now,
                skew_after: c.after.clone(),
                guaranteed_skew: c.worst(),
            })
            .collect(),
    }
}

/// A pod whose annotations kube-arbiter must change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodPatch {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    /// The resourceVersion the decision was made on.
    pub resource_version: String,
    /// `None`: remove the cost and the companion annotation.
    pub cost: Option<i32>,
}

/// Every patch that brings the cluster to `plans`: the planned costs, and
/// the removal of kube-arbiter's costs from pods no plan covers (their
/// workload opted out, or the pod left it). Pods being deleted are left
/// alone.
pub fn patches(snapshot: &Snapshot, plans: &[WorkloadPlan]) -> Vec<PodPatch> {
    let mut covered: foldhash::HashSet<&str> = foldhash::HashSet::default();
    let mut out = Vec::new();
    for plan in plans {
        for p in &plan.pods {
            covered.insert(&p.uid);
            if p.needs_patch() {
                out.push(PodPatch {
                    namespace: plan.namespace.clone(),
                    name: p.name.clone(),
                    uid: p.uid.clone(),
                    resource_version: p.resource_version.clone(),
                    cost: p.desired,
                });
            }
        }
    }
    for (namespace, pods) in snapshot.namespaces_with_pods() {
        for r in pods {
            let meta = &r.pod.metadata;
            if is_managed(&r.pod)
                && meta.deletion_timestamp.is_none()
                && !covered.contains(meta.uid.as_str())
            {
                out.push(PodPatch {
                    namespace: namespace.to_string(),
                    name: meta.name.clone(),
                    uid: meta.uid.clone(),
                    resource_version: meta.resource_version.clone(),
                    cost: None,
                });
            }
        }
    }
    out
}
