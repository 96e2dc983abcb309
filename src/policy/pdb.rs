//! Which preemption victims would break a PodDisruptionBudget
//! (kube-scheduler's `filterPodsWithPDBViolation`).
//!
//! Budgets start at `status.disruptionsAllowed` and are spent by the pods in
//! the order given (most important first), so with one disruption left the
//! more important of two matching pods is fine and the other one violates.
//! Unlike eviction, an empty selector matches nothing here (the snapshot's
//! [`PdbIndex`] knows which budgets select each bound pod), and pods already
//! listed in `status.disruptedPods` do not spend the budget again.

use crate::cluster::PdbIndex;
use crate::model::Pod;

/// For each pod (same order), given with the positions of the budgets
/// selecting it, whether evicting it (after the ones before it) exceeds a
/// budget. Every call starts from the budgets' `disruptionsAllowed` (one
/// call per node, as upstream).
pub fn violations(budgets: &PdbIndex, pods: &[(&Pod, &[u32])]) -> Vec<bool> {
    // (position, disruptions left); a node's victims touch only a few.
    let mut left: Vec<(u32, i32)> = Vec::with_capacity(pods.len());
    pods.iter()
        .map(|&(pod, selecting)| {
            let mut violating = false;
            for &position in selecting {
                if budgets.counts_as_disrupted(position, pod) {
                    continue;
                }
                let i = match left.iter().position(|(p, _)| *p == position) {
                    Some(i) => i,
                    None => {
                        left.push((position, budgets.disruptions_allowed(position)));
                        left.len() - 1
                    }
                };
                left[i].1 -= 1;
                violating |= left[i].1 < 0;
            }
            violating
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{ClusterObjects, Snapshot};
    use crate::model::PodDisruptionBudget;
    use crate::testing::make_pod;
    use serde_json::json;

    fn pod(ns: &str, name: &str, labels: &[(&str, &str)]) -> Pod {
        make_pod(ns, name).node("n1").labels(labels).obj()
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

    /// The pods bound to one node, asked about in the order given.
    fn run(pdbs: Vec<PodDisruptionBudget>, pods: &[Pod]) -> Vec<bool> {
        let node = serde_json::from_value(json!({"metadata": {"name": "n1"}})).unwrap();
        let snapshot = Snapshot::build(ClusterObjects {
            nodes: vec![node],
            pods: pods.to_vec(),
            pdbs,
            ..Default::default()
        });
        let info = snapshot.node("n1").unwrap();
        let asked: Vec<(&Pod, &[u32])> = pods
            .iter()
            .map(|p| {
                let i = info
                    .pods
                    .iter()
                    .position(|q| q.metadata.key() == p.metadata.key());
                let i = i.unwrap();
                (&*info.pods[i], info.pdbs.of(i))
            })
            .collect();
        violations(snapshot.pdbs(), &asked)
    }

    #[test]
    fn the_less_important_of_two_matching_pods_violates_a_budget_of_one() {
        let pods = [
            pod("ns", "a", &[("app", "x")]),
            pod("ns", "b", &[("app", "x")]),
        ];
        let got = run(
            vec![pdb("ns", json!({"matchLabels": {"app": "x"}}), 1, &[])],
            &pods,
        );
        assert_eq!(got, [false, true]);
    }

    #[test]
    fn budgets_in_other_namespaces_do_not_apply() {
        let pods = [pod("ns", "a", &[("app", "x")])];
        let got = run(
            vec![pdb("other", json!({"matchLabels": {"app": "x"}}), 0, &[])],
            &pods,
        );
        assert_eq!(got, [false]);
    }

    #[test]
    fn an_empty_selector_matches_nothing_for_preemption() {
        let pods = [pod("ns", "a", &[("app", "x")])];
        assert_eq!(run(vec![pdb("ns", json!({}), 0, &[])], &pods), [false]);
    }

    #[test]
    fn a_pod_without_labels_matches_no_budget() {
        let pods = [pod("ns", "a", &[])];
        let sel = json!({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]});
        assert_eq!(run(vec![pdb("ns", sel, 0, &[])], &pods), [false]);
    }

    #[test]
    fn an_invalid_selector_is_skipped() {
        let pods = [pod("ns", "a", &[("app", "x")])];
        let sel = json!({"matchExpressions": [{"key": "app", "operator": "In"}]});
        assert_eq!(run(vec![pdb("ns", sel, 0, &[])], &pods), [false]);
    }

    #[test]
    fn already_disrupted_pods_do_not_spend_the_budget() {
        let pods = [
            pod("ns", "a", &[("app", "x")]),
            pod("ns", "b", &[("app", "x")]),
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
            pod("ns", "a", &[("app", "x"), ("tier", "fe")]),
            pod("ns", "b", &[("tier", "fe")]),
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
    fn a_budget_with_only_match_expressions_applies() {
        let pods = [
            pod("ns", "a", &[("app", "x")]),
            pod("ns", "b", &[("app", "y")]),
        ];
        let sel = json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["x"]}]});
        assert_eq!(run(vec![pdb("ns", sel, 0, &[])], &pods), [true, false]);
    }

    #[test]
    fn a_pod_must_carry_every_match_label_of_the_budget() {
        let pods = [
            pod("ns", "a", &[("app", "x"), ("tier", "be")]),
            pod("ns", "b", &[("app", "x"), ("tier", "fe")]),
        ];
        let sel = json!({"matchLabels": {"app": "x", "tier": "fe"}});
        assert_eq!(run(vec![pdb("ns", sel, 0, &[])], &pods), [false, true]);
    }

    #[test]
    fn zero_budget_makes_every_matching_pod_violate() {
        let pods = [pod("ns", "a", &[("app", "x")])];
        let got = run(
            vec![pdb("ns", json!({"matchLabels": {"app": "x"}}), 0, &[])],
            &pods,
        );
        assert_eq!(got, [true]);
    }
}
