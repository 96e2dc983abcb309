//! Which PodDisruptionBudgets select each bound pod, kept per node beside
//! its pod list, so preemption's PDB accounting reads a few numbers per
//! victim instead of matching every victim's labels against the budgets of
//! its namespace on each request (label maps are scattered across the heap:
//! that matching dominated a 200-node preempt answer).
//!
//! Selection follows kube-scheduler's `filterPodsWithPDBViolation`, the only
//! reader: same namespace; a missing or empty selector selects nothing
//! (unlike eviction); a selector that does not parse is skipped; a pod
//! without labels is selected by none. Budget status (`disruptionsAllowed`,
//! `disruptedPods`) is read per request from the index, which keeps it
//! beside the budgets; a status-only update builds a new index and keeps
//! every node's matches.

use std::sync::Arc;

use super::Map;
use crate::model::{Pod, PodDisruptionBudget};

/// Every budget of the view, sorted by namespace and name (a budget's
/// position is what [`PodPdbs`] store), and a matcher over their selectors.
#[derive(Debug, Clone, Default)]
pub struct PdbIndex {
    pdbs: Arc<[Arc<PodDisruptionBudget>]>,
    /// What preemption reads of each budget's status, in the same order
    /// and side by side: reading it through each budget object cost a
    /// cache miss per budget on every candidate node.
    spending: Arc<[Spending]>,
    by_namespace: Arc<Map<String, NamespaceSelectors>>,
}

/// A budget's `status.disruptionsAllowed`, and whether it lists any
/// `status.disruptedPods`.
#[derive(Debug, Clone, Copy)]
struct Spending {
    allowed: i32,
    any_disrupted: bool,
}

/// One namespace's budgets that can select a pod, looked up by their first
/// matchLabels pair so a pod is checked only against budgets that could
/// select it.
#[derive(Debug, Default)]
struct NamespaceSelectors {
    /// First matchLabels key → its value → positions.
    by_first_label: Vec<(String, Map<String, Vec<u32>>)>,
    /// Budgets with matchExpressions only.
    other: Vec<u32>,
}

impl PdbIndex {
    pub(super) fn new(mut pdbs: Vec<Arc<PodDisruptionBudget>>) -> Self {
        pdbs.sort_by(|a, b| {
            (&a.metadata.namespace, &a.metadata.name)
                .cmp(&(&b.metadata.namespace, &b.metadata.name))
        });
        let mut by_namespace: Map<String, NamespaceSelectors> = Map::default();
        for (i, pdb) in pdbs.iter().enumerate() {
            let Some(selector) = &pdb.spec.selector else {
                continue;
            };
            if selector.is_empty() || selector.validate().is_err() {
                continue;
            }
            let ns = by_namespace
                .entry(pdb.metadata.namespace.clone())
                .or_default();
            let Some((key, value)) = selector.match_labels.iter().next() else {
                ns.other.push(i as u32);
                continue;
            };
            let slot = match ns.by_first_label.iter().position(|(k, _)| k == key) {
                Some(slot) => slot,
                None => {
                    ns.by_first_label.push((key.clone(), Map::default()));
                    ns.by_first_label.len() - 1
                }
            };
            ns.by_first_label[slot]
                .1
                .entry(value.clone())
                .or_default()
                .push(i as u32);
        }
        let spending = pdbs
            .iter()
            .map(|pdb| Spending {
                allowed: pdb.status.disruptions_allowed,
                any_disrupted: !pdb.status.disrupted_pods.is_empty(),
            })
            .collect();
        Self {
            pdbs: pdbs.into(),
            spending,
            by_namespace: Arc::new(by_namespace),
        }
    }

    /// `status.disruptionsAllowed` of the budget at `position`.
    pub fn disruptions_allowed(&self, position: u32) -> i32 {
        self.spending[position as usize].allowed
    }

    /// Whether the budget at `position` lists `pod` in
    /// `status.disruptedPods` (its namespace is the budget's). The pod's
    /// name is read only for a budget that lists any: preemption asks this
    /// of every pod it considers, and reading the name is a cache miss on
    /// the pod's object (7 % of a preempt request, perf).
    pub fn counts_as_disrupted(&self, position: u32, pod: &Pod) -> bool {
        if !self.spending[position as usize].any_disrupted {
            return false;
        }
        let disrupted = &self.pdbs[position as usize].status.disrupted_pods;
        disrupted.contains_key(&pod.metadata.name)
    }

    /// The budget at `position` (as stored in [`PodPdbs`]).
    pub fn pdb(&self, position: u32) -> &PodDisruptionBudget {
        &self.pdbs[position as usize]
    }

    pub(super) fn len(&self) -> usize {
        self.pdbs.len()
    }

    /// Whether every budget's position and selector are the same in both,
    /// so matches computed with one hold for the other.
    pub(super) fn selects_like(&self, other: &PdbIndex) -> bool {
        self.pdbs.len() == other.pdbs.len()
            && self.pdbs.iter().zip(other.pdbs.iter()).all(|(a, b)| {
                a.metadata.namespace == b.metadata.namespace
                    && a.metadata.name == b.metadata.name
                    && a.spec.selector == b.spec.selector
            })
    }

    /// Pushes the positions of the budgets selecting `pod`.
    fn selecting(&self, pod: &Pod, out: &mut Vec<u32>) {
        if pod.metadata.labels.is_empty() {
            return;
        }
        let Some(ns) = self.by_namespace.get(&pod.metadata.namespace) else {
            return;
        };
        let labels = &pod.metadata.labels;
        let first_label = ns
            .by_first_label
            .iter()
            .filter_map(|(key, by_value)| by_value.get(labels.get(key)?.as_str()))
            .flatten();
        for &i in first_label.chain(&ns.other) {
            let selector = self.pdbs[i as usize].spec.selector.as_ref();
            if selector.is_some_and(|s| s.matches(labels)) {
                out.push(i);
            }
        }
    }

    /// The budgets of each of `pods` (a node's list).
    pub(super) fn of_pods(&self, pods: &[Arc<Pod>]) -> PodPdbs {
        if self.by_namespace.is_empty() {
            return PodPdbs::default();
        }
        let mut ends = Vec::with_capacity(pods.len());
        let mut positions = Vec::new();
        for pod in pods {
            self.selecting(pod, &mut positions);
            ends.push(positions.len() as u32);
        }
        if positions.is_empty() {
            return PodPdbs::default();
        }
        PodPdbs {
            ends: ends.into(),
            positions: positions.into(),
        }
    }
}

/// For each pod of a node (same order as its pod list), the positions of
/// the budgets selecting it.
#[derive(Debug, Clone, Default)]
pub struct PodPdbs {
    /// End of each pod's run in `positions`; empty when no pod of the node
    /// is selected by any budget.
    ends: Arc<[u32]>,
    positions: Arc<[u32]>,
}

impl PodPdbs {
    /// Budgets selecting the node's `pod`-th pod.
    pub fn of(&self, pod: usize) -> &[u32] {
        if self.ends.is_empty() {
            return &[];
        }
        let start = pod.checked_sub(1).map_or(0, |p| self.ends[p] as usize);
        &self.positions[start..self.ends[pod] as usize]
    }
}
