//! What the writer must change: the plans compared with the pods'
//! annotations, as patches.

use crate::cluster::Snapshot;
use crate::policy::scale_in::plan::{PodCost, WorkloadPlan, is_managed};

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
            if needs_patch(p) {
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

/// Whether the pod's annotations differ from what kube-arbiter wants.
fn needs_patch(p: &PodCost) -> bool {
    if p.users_cost {
        return false;
    }
    match p.desired {
        Some(cost) => {
            let cost = cost.to_string();
            !p.managed || p.current.as_ref() != Some(&cost) || p.mark.as_ref() != Some(&cost)
        }
        None => p.managed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::meta::{DELETION_COST_MANAGED, POD_DELETION_COST, SCALE_IN, SCALE_IN_MAX};
    use crate::policy::scale_in::plan::tests::{OPT_IN, cluster, none, plans_of, replica_set, web};
    use serde_json::{Value, json};

    /// The annotations a pod carries once kube-arbiter's patch is applied.
    fn written(cost: Option<i32>) -> Value {
        crate::deletion_cost::patch::annotations(cost)
    }

    #[test]
    fn patches_only_what_differs_and_the_plan_ignores_its_own_costs() {
        let rs = replica_set(json!({SCALE_IN: OPT_IN, SCALE_IN_MAX: "2"}), false);
        let s = cluster(rs.clone(), web(none()));
        let plan = plans_of(&s, None);
        let first = patches(&s, &plan);
        assert_eq!(first.len(), 2, "{first:?}");
        // The pods now carry the plan: nothing more to do, and the plan is
        // the same as without the costs.
        let mut applied = none();
        for (i, p) in web(none()).iter().enumerate() {
            if let Some(patch) = first.iter().find(|x| x.name == p.metadata.name) {
                applied[i] = written(patch.cost);
            }
        }
        let s2 = cluster(rs, web(applied));
        let again = plans_of(&s2, None);
        assert!(patches(&s2, &again).is_empty());
        let desired = |p: &[WorkloadPlan]| -> Vec<Option<i32>> {
            p[0].pods.iter().map(|c| c.desired).collect()
        };
        assert_eq!(desired(&plan), desired(&again));
    }

    #[test]
    fn opting_out_removes_only_kube_arbiters_costs() {
        let rs = replica_set(json!({}), false);
        let managed = written(Some(-1));
        let users = json!({POD_DELETION_COST: "-1"});
        let s = cluster(rs, web([managed, users, json!({}), json!({}), json!({})]));
        let out = patches(&s, &plans_of(&s, None));
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].name.as_str(), out[0].cost), ("web-a1", None));
    }

    /// `kubectl annotate --overwrite` of the cost on a pod kube-arbiter had
    /// costed leaves kube-arbiter's companion as it was: the cost is the
    /// user's from then on, kept by the plan and never patched, even after
    /// the workload opts out.
    #[test]
    fn a_cost_the_user_changed_on_a_costed_pod_is_the_users() {
        let rs = replica_set(json!({SCALE_IN: OPT_IN, SCALE_IN_MAX: "2"}), false);
        let s = cluster(rs.clone(), web(none()));
        let first = patches(&s, &plans_of(&s, None));
        let victim = first[0].name.clone();
        let mut annotations = none();
        for (i, p) in web(none()).iter().enumerate() {
            if let Some(patch) = first.iter().find(|x| x.name == p.metadata.name) {
                annotations[i] = written(patch.cost);
                if patch.name == victim {
                    annotations[i][POD_DELETION_COST] = json!("100");
                }
            }
        }
        for rs in [rs, replica_set(json!({}), false)] {
            let s = cluster(rs, web(annotations.clone()));
            let plans = plans_of(&s, None);
            let out = patches(&s, &plans);
            assert!(out.iter().all(|p| p.name != victim), "{out:?}");
            if let Some(plan) = plans.first() {
                let pod = plan.pods.iter().find(|p| p.name == victim).unwrap();
                assert!(pod.users_cost && !pod.managed, "{pod:?}");
            }
        }
    }

    /// A companion `"true"` names no value: its cost is kube-arbiter's and
    /// is rewritten with the companion naming it.
    #[test]
    fn a_companion_naming_no_value_is_rewritten_with_the_value() {
        let rs = replica_set(json!({SCALE_IN: OPT_IN, SCALE_IN_MAX: "2"}), false);
        let s = cluster(rs.clone(), web(none()));
        let first = patches(&s, &plans_of(&s, None));
        let mut annotations = none();
        for (i, p) in web(none()).iter().enumerate() {
            if let Some(patch) = first.iter().find(|x| x.name == p.metadata.name) {
                let cost = patch.cost.unwrap().to_string();
                annotations[i] = json!({POD_DELETION_COST: cost, DELETION_COST_MANAGED: "true"});
            }
        }
        let s = cluster(rs, web(annotations));
        assert_eq!(patches(&s, &plans_of(&s, None)), first);
    }
}
