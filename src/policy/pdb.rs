//! Which preemption victims would break a PodDisruptionBudget
//! (kube-scheduler's `filterPodsWithPDBViolation`).
//!
//! Budgets start at `status.disruptionsAllowed` and are spent by the pods in
//! the order given (most important first), so with one disruption left the
//! more important of two matching pods is fine and the other one violates.
//! Unlike eviction, an empty selector matches nothing here, and pods already
//! listed in `status.disruptedPods` do not spend the budget again.

use std::sync::Arc;

use foldhash::HashMap;

use crate::cluster::Snapshot;
use crate::model::{Pod, PodDisruptionBudget};

/// The snapshot's budgets, prepared once per preemption request: per
/// namespace (on first use) only the budgets whose selector can select a
/// pod, looked up by their first matchLabels pair so a pod is matched only
/// against budgets that could select it.
pub struct Budgets<'s> {
    snapshot: &'s Snapshot,
    namespaces: HashMap<String, NamespaceBudgets<'s>>,
}

type Budget<'s> = &'s Arc<PodDisruptionBudget>;

#[derive(Default)]
struct NamespaceBudgets<'s> {
    /// First matchLabels key → its value → budgets.
    by_first_label: Vec<(&'s str, HashMap<&'s str, Vec<Budget<'s>>>)>,
    /// Budgets with matchExpressions only.
    other: Vec<Budget<'s>>,
}

impl<'s> Budgets<'s> {
    pub fn new(snapshot: &'s Snapshot) -> Self {
        Self {
            snapshot,
            namespaces: HashMap::default(),
        }
    }

    fn namespace(&mut self, namespace: &str) -> &NamespaceBudgets<'s> {
        if !self.namespaces.contains_key(namespace) {
            let prepared = NamespaceBudgets::prepare(self.snapshot.pdbs_in_namespace(namespace));
            self.namespaces.insert(namespace.to_string(), prepared);
        }
        &self.namespaces[namespace]
    }

    /// For each pod (same order), whether evicting it (after the ones
    /// before it) exceeds a matching budget. Every call starts from the
    /// budgets' `disruptionsAllowed` (one call per node, as upstream).
    pub fn violations(&mut self, pods: &[&Pod]) -> Vec<bool> {
        let mut spent: Vec<(&Arc<PodDisruptionBudget>, i32)> = Vec::new();
        pods.iter()
            .map(|pod| {
                // A pod without labels matches no budget.
                if pod.metadata.labels.is_empty() {
                    return false;
                }
                let ns = self.namespace(&pod.metadata.namespace);
                let mut violating = false;
                for pdb in ns.candidates(pod) {
                    let selected = pdb
                        .spec
                        .selector
                        .as_ref()
                        .is_some_and(|s| s.matches(&pod.metadata.labels));
                    if !selected || pdb.status.disrupted_pods.contains_key(&pod.metadata.name) {
                        continue;
                    }
                    let i = match spent.iter().position(|(b, _)| Arc::ptr_eq(b, pdb)) {
                        Some(i) => i,
                        None => {
                            spent.push((pdb, pdb.status.disruptions_allowed));
                            spent.len() - 1
                        }
                    };
                    spent[i].1 -= 1;
                    violating |= spent[i].1 < 0;
                }
                violating
            })
            .collect()
    }
}

impl<'s> NamespaceBudgets<'s> {
    fn prepare(pdbs: &'s [Arc<PodDisruptionBudget>]) -> Self {
        let mut prepared = Self::default();
        for pdb in pdbs {
            // Unlike eviction, a missing or empty selector selects nothing
            // here; one that does not parse is skipped.
            let Some(selector) = &pdb.spec.selector else {
                continue;
            };
            if selector.is_empty() || selector.validate().is_err() {
                continue;
            }
            match selector.match_labels.iter().next() {
                Some((key, value)) => {
                    let i = match prepared.by_first_label.iter().position(|(k, _)| k == key) {
                        Some(i) => i,
                        None => {
                            prepared.by_first_label.push((key, HashMap::default()));
                            prepared.by_first_label.len() - 1
                        }
                    };
                    prepared.by_first_label[i]
                        .1
                        .entry(value.as_str())
                        .or_default()
                        .push(pdb);
                }
                None => prepared.other.push(pdb),
            }
        }
        prepared
    }

    /// Budgets that may select `pod`; each budget at most once.
    fn candidates<'p>(
        &'p self,
        pod: &'p Pod,
    ) -> impl Iterator<Item = &'s Arc<PodDisruptionBudget>> + 'p {
        self.by_first_label
            .iter()
            .filter_map(|(key, by_value)| by_value.get(pod.metadata.labels.get(*key)?.as_str()))
            .flatten()
            .chain(&self.other)
            .copied()
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
        Budgets::new(&snapshot).violations(&refs)
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
    fn a_budget_with_only_match_expressions_applies() {
        let pods = [
            pod("ns", "a", json!({"app": "x"})),
            pod("ns", "b", json!({"app": "y"})),
        ];
        let sel = json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["x"]}]});
        assert_eq!(run(vec![pdb("ns", sel, 0, &[])], &pods), [true, false]);
    }

    #[test]
    fn a_pod_must_carry_every_match_label_of_the_budget() {
        let pods = [
            pod("ns", "a", json!({"app": "x", "tier": "be"})),
            pod("ns", "b", json!({"app": "x", "tier": "fe"})),
        ];
        let sel = json!({"matchLabels": {"app": "x", "tier": "fe"}});
        assert_eq!(run(vec![pdb("ns", sel, 0, &[])], &pods), [false, true]);
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
