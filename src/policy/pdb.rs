//! Which preemption victims would break a PodDisruptionBudget
//! (kube-scheduler's `filterPodsWithPDBViolation`).
//!
//! Budgets start at `status.disruptionsAllowed` and are spent by the pods in
//! the order given (most important first), so with one disruption left the
//! more important of two matching pods is fine and the other one violates.
//! Unlike eviction, an empty selector matches nothing here, and pods already
//! listed in `status.disruptedPods` do not spend the budget again.

use std::sync::Arc;

use crate::cluster::Snapshot;
use crate::model::{Pod, PodDisruptionBudget};

/// For each pod (same order), whether evicting it (after the ones before
/// it) exceeds a matching budget.
pub fn violations(snapshot: &Snapshot, pods: &[&Pod]) -> Vec<bool> {
    let mut budgets: Vec<(&Arc<PodDisruptionBudget>, i32)> = Vec::new();
    pods.iter()
        .map(|pod| {
            // A pod without labels matches no budget.
            if pod.metadata.labels.is_empty() {
                return false;
            }
            let mut violating = false;
            for pdb in snapshot.pdbs_in_namespace(&pod.metadata.namespace) {
                if !selects_for_preemption(pdb, pod)
                    || pdb.status.disrupted_pods.contains_key(&pod.metadata.name)
                {
                    continue;
                }
                let i = match budgets.iter().position(|(b, _)| Arc::ptr_eq(b, pdb)) {
                    Some(i) => i,
                    None => {
                        budgets.push((pdb, pdb.status.disruptions_allowed));
                        budgets.len() - 1
                    }
                };
                budgets[i].1 -= 1;
                violating |= budgets[i].1 < 0;
            }
            violating
        })
        .collect()
}

fn selects_for_preemption(pdb: &PodDisruptionBudget, pod: &Pod) -> bool {
    match &pdb.spec.selector {
        Some(s) => !s.is_empty() && s.validate().is_ok() && s.matches(&pod.metadata.labels),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ClusterObjects;
    use serde_json::json;

    fn pod(ns: &str, name: &str, labels: serde_json::Value) -> Pod {
        serde_json::from_value(
            json!({"metadata": {"name": name, "namespace": ns, "labels": labels}}),
        )
        .unwrap()
    }

    fn pdb(
        ns: &str,
        selector: serde_json::Value,
        allowed: i32,
        disrupted: &[&str],
    ) -> PodDisruptionBudget {
        let disrupted: serde_json::Map<_, _> = disrupted
            .iter()
            .map(|n| (n.to_string(), json!("2024-01-01T00:00:00Z")))
            .collect();
        serde_json::from_value(json!({
            "metadata": {"name": "pdb", "namespace": ns},
            "spec": {"selector": selector},
            "status": {"disruptionsAllowed": allowed, "disruptedPods": disrupted}
        }))
        .unwrap()
    }

    fn run(pdbs: Vec<PodDisruptionBudget>, pods: &[Pod]) -> Vec<bool> {
        let snapshot = Snapshot::build(ClusterObjects {
            pdbs,
            ..Default::default()
        });
        let refs: Vec<&Pod> = pods.iter().collect();
        violations(&snapshot, &refs)
    }

    #[test]
    fn the_less_important_of_two_matching_pods_violates_a_budget_of_one() {
        let pods = [
            pod("ns", "a", json!({"app": "x"})),
            pod("ns", "b", json!({"app": "x"})),
        ];
        let got = run(
            vec![pdb("ns", json!({"matchLabels": {"app": "x"}}), 1, &[])],
            &pods,
        );
        assert_eq!(got, [false, true]);
    }

    #[test]
    fn budgets_in_other_namespaces_do_not_apply() {
        let pods = [pod("ns", "a", json!({"app": "x"}))];
        let got = run(
            vec![pdb("other", json!({"matchLabels": {"app": "x"}}), 0, &[])],
            &pods,
        );
        assert_eq!(got, [false]);
    }

    #[test]
    fn an_empty_selector_matches_nothing_for_preemption() {
        let pods = [pod("ns", "a", json!({"app": "x"}))];
        assert_eq!(run(vec![pdb("ns", json!({}), 0, &[])], &pods), [false]);
    }

    #[test]
    fn a_pod_without_labels_matches_no_budget() {
        let pods = [pod("ns", "a", json!({}))];
        let sel = json!({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]});
        assert_eq!(run(vec![pdb("ns", sel, 0, &[])], &pods), [false]);
    }

    #[test]
    fn an_invalid_selector_is_skipped() {
        let pods = [pod("ns", "a", json!({"app": "x"}))];
        let sel = json!({"matchExpressions": [{"key": "app", "operator": "In"}]});
        assert_eq!(run(vec![pdb("ns", sel, 0, &[])], &pods), [false]);
    }

    #[test]
    fn already_disrupted_pods_do_not_spend_the_budget() {
        let pods = [
            pod("ns", "a", json!({"app": "x"})),
            pod("ns", "b", json!({"app": "x"})),
        ];
        let got = run(
            vec![pdb("ns", json!({"matchLabels": {"app": "x"}}), 1, &["a"])],
            &pods,
        );
        assert_eq!(got, [false, false]);
    }

    #[test]
    fn every_matching_budget_is_spent() {
        let pods = [
            pod("ns", "a", json!({"app": "x", "tier": "fe"})),
            pod("ns", "b", json!({"tier": "fe"})),
        ];
        let got = run(
            vec![
                pdb("ns", json!({"matchLabels": {"app": "x"}}), 1, &[]),
                pdb("ns", json!({"matchLabels": {"tier": "fe"}}), 1, &[]),
            ],
            &pods,
        );
        assert_eq!(got, [false, true]);
    }

    #[test]
    fn zero_budget_makes_every_matching_pod_violate() {
        let pods = [pod("ns", "a", json!({"app": "x"}))];
        let got = run(
            vec![pdb("ns", json!({"matchLabels": {"app": "x"}}), 0, &[])],
            &pods,
        );
        assert_eq!(got, [true]);
    }
}
