//! Which ReplicaSets opted in to scale-in that keeps spread, and the
//! pod-deletion-cost each of their pods should carry. Pure: the
//! deletion-cost writer and `/debug/scale-in` both call it on a snapshot.
//!
//! A ReplicaSet controlled by a Deployment follows the Deployment's
//! annotations when the Deployments are known (live mode): the Deployment
//! controller copies annotations onto its ReplicaSets but never removes
//! one, so a ReplicaSet keeps `kube-arbiter.io/scale-in` after its
//! Deployment dropped it. Without Deployments (file mode) the ReplicaSet's
//! own, copied annotations are read.

use std::collections::BTreeMap;

use jiff::Timestamp;

use crate::cluster::Snapshot;
use crate::config::scheduling::DefaultSpreadConstraints;
use crate::model::meta::{DELETION_COST_MANAGED, POD_DELETION_COST, SCALE_IN, SCALE_IN_MAX};
use crate::model::{Pod, SelectorOwner};

use super::keep_spread::plan_deletion_costs;

/// The value of `kube-arbiter.io/scale-in` that opts a workload in.
pub const PRESERVE_SPREAD: &str = "preserve-spread";

/// The annotations of Deployments, by namespace and name.
pub trait DeploymentAnnotations {
    /// `None` when there is no such Deployment.
    fn annotations(&self, namespace: &str, name: &str) -> Option<BTreeMap<String, String>>;
}

/// What one opted-in ReplicaSet's pods should carry, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadPlan {
    pub namespace: String,
    pub replica_set: String,
    /// The Deployment that controls the ReplicaSet, if any.
    pub deployment: Option<String>,
    /// The object whose annotation opted in ("Deployment shop/web").
    pub opted_in_by: String,
    pub max_scale_in: usize,
    /// A `kube-arbiter.io/scale-in-max` that could not be read.
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

#[derive(Debug, Clone, PartialEq)]
pub struct PodCost {
    pub name: String,
    pub uid: String,
    /// The resourceVersion the plan was made on.
    pub resource_version: String,
    /// The pod-deletion-cost it carries now.
    pub current: Option<String>,
    /// Whether kube-arbiter set that cost ([`is_managed`]).
    pub managed: bool,
    /// The companion annotation kube-arbiter writes with its cost.
    pub mark: Option<String>,
    /// The cost kube-arbiter wants it to carry (`None`: none of its own).
    pub desired: Option<i32>,
    /// A cost the user set: never changed.
    pub users_cost: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ConstraintSkew {
    pub topology_key: String,
    pub max_skew: i64,
    pub skew_now: i64,
    /// The skew after the controller deletes 1, 2, ... pods.
    pub skew_after: Vec<i64>,
    /// The largest of those: what the costs guarantee.
    pub guaranteed_skew: i64,
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

/// Whether the pod's pod-deletion-cost is the one kube-arbiter wrote: its
/// companion annotation names that value. A user who changes the cost
/// (`kubectl annotate --overwrite` leaves the companion as it was) makes it
/// theirs. The companion `"true"`, which names no value, is read as
/// kube-arbiter's whatever the cost, and rewritten with the value.
pub fn is_managed(pod: &Pod) -> bool {
    let annotations = &pod.metadata.annotations;
    match annotations.get(DELETION_COST_MANAGED).map(String::as_str) {
        None => false,
        Some("true") => true,
        Some(mark) => annotations.get(POD_DELETION_COST).map(String::as_str) == Some(mark),
    }
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
                mark: p.metadata.annotations.get(DELETION_COST_MANAGED).cloned(),
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cluster::ClusterObjects;
    use crate::policy::scale_in::tests::{node, now, web_json};
    use serde_json::{Value, json};

    /// A `web-rs` pod (the scale-in tests' builder) with `annotations` and
    /// its owner's UID.
    fn pod(name: &str, node: &str, created: i64, annotations: Value) -> Pod {
        let mut pod = web_json(name, node, created);
        pod["metadata"]["annotations"] = annotations;
        pod["metadata"]["ownerReferences"][0]["uid"] = "uid-rs".into();
        serde_json::from_value(pod).unwrap()
    }

    pub(crate) fn replica_set(annotations: Value, deployment: bool) -> SelectorOwner {
        let owners = if deployment {
            json!([{"kind": "Deployment", "name": "web", "controller": true}])
        } else {
            json!([])
        };
        serde_json::from_value(json!({
            "metadata": {"name": "web-rs", "namespace": "shop", "uid": "uid-rs",
                "annotations": annotations, "ownerReferences": owners},
            "spec": {"replicas": 5, "selector": {"matchLabels": {"app": "web"}}}
        }))
        .unwrap()
    }

    pub(crate) const OPT_IN: &str = "preserve-spread";

    /// Zones a/b/c hold 3/1/1; the controller alone deletes c, then b.
    pub(crate) fn cluster(rs: SelectorOwner, pods: Vec<Pod>) -> Snapshot {
        Snapshot::build(ClusterObjects {
            nodes: vec![
                node("a1", "a"),
                node("a2", "a"),
                node("a3", "a"),
                node("b1", "b"),
                node("c1", "c"),
            ],
            pods,
            replica_sets: vec![rs],
            ..Default::default()
        })
    }

    /// The five pods of `web-rs`, zone c's the newest, with these
    /// annotations.
    pub(crate) fn web(annotations: [Value; 5]) -> Vec<Pod> {
        let [a, b, c, d, e] = annotations;
        vec![
            pod("web-a1", "a1", 10, a),
            pod("web-a2", "a2", 20, b),
            pod("web-a3", "a3", 30, c),
            pod("web-b1", "b1", 9_000_000, d),
            pod("web-c1", "c1", 9_000_001, e),
        ]
    }

    pub(crate) fn none() -> [Value; 5] {
        [json!({}), json!({}), json!({}), json!({}), json!({})]
    }

    struct Known(Option<BTreeMap<String, String>>);

    impl DeploymentAnnotations for Known {
        fn annotations(&self, _: &str, _: &str) -> Option<BTreeMap<String, String>> {
            self.0.clone()
        }
    }

    pub(crate) fn plans_of(
        s: &Snapshot,
        deployments: Option<&dyn DeploymentAnnotations>,
    ) -> Vec<WorkloadPlan> {
        plans(
            s,
            deployments,
            &DefaultSpreadConstraints::default(),
            now(),
            None,
        )
    }

    #[test]
    fn the_deployment_decides_when_deployments_are_known_else_the_replica_sets_copy() {
        let rs = replica_set(json!({SCALE_IN: OPT_IN}), true);
        let s = cluster(rs, web(none()));
        // File mode: the copied annotation.
        assert_eq!(plans_of(&s, None)[0].opted_in_by, "ReplicaSet shop/web-rs");
        // Live: the Deployment dropped it; the copy no longer counts.
        let opted_out = Known(Some(BTreeMap::new()));
        assert!(plans_of(&s, Some(&opted_out)).is_empty());
        let opted_in = Known(Some([(SCALE_IN.to_string(), OPT_IN.to_string())].into()));
        assert_eq!(
            plans_of(&s, Some(&opted_in))[0].opted_in_by,
            "Deployment shop/web"
        );
        assert!(
            plans_of(&s, Some(&Known(None))).is_empty(),
            "no such Deployment"
        );
    }

    #[test]
    fn scale_in_max_defaults_to_a_quarter_of_the_replicas_and_a_bad_value_is_reported() {
        assert_eq!(max_scale_in(None, 9), (2, None));
        assert_eq!(max_scale_in(None, 3), (1, None));
        assert_eq!(max_scale_in(Some("3"), 9), (3, None));
        let (n, problem) = max_scale_in(Some("lots"), 9);
        assert_eq!(n, 2);
        assert!(problem.unwrap().contains("\"lots\""));
        assert!(max_scale_in(Some("0"), 9).1.is_some());
    }

    #[test]
    fn the_plan_does_not_depend_on_the_order_pods_come_in() {
        let rs = replica_set(json!({SCALE_IN: OPT_IN, SCALE_IN_MAX: "2"}), false);
        let mut pods = web(none());
        // Two pods no rule tells apart: the plan must still be one.
        pods[1].metadata.creation_timestamp = pods[0].metadata.creation_timestamp;
        let forward = plans_of(&cluster(rs.clone(), pods.clone()), None);
        pods.reverse();
        let backward = plans_of(&cluster(rs, pods), None);
        let by_name = |p: &[WorkloadPlan]| -> BTreeMap<String, Option<i32>> {
            p[0].pods
                .iter()
                .map(|c| (c.name.clone(), c.desired))
                .collect()
        };
        assert_eq!(by_name(&forward), by_name(&backward));
    }
}
