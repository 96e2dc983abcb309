//! SelectVictimsOnNode: the fewest, least important pods whose eviction
//! lets the preemptor fit on one node.
//!
//! All strictly lower-priority pods are removed; if the preemptor then fits,
//! they are given back one by one — first those whose eviction would break
//! a PodDisruptionBudget, then the rest, each group most important first —
//! and every pod whose return still lets the preemptor fit stays.

use std::sync::Arc;

use crate::cluster::{NodeInfo, Snapshot};
use crate::model::{Node, Pod};
use crate::policy::resources::{NodeResources, Requests, pod_requests};
use crate::policy::{Failure, Verdict, pdb};

use super::{NodeFilters, Preemptor, Victims, by_importance};

impl<F: NodeFilters> Preemptor<'_, F> {
    /// The victims on `info`'s node, or why preemption cannot help there.
    ///
    /// Works on the one prepared filter state: pods are removed and re-added
    /// as upstream does on its per-node clone, and every pod still removed
    /// at the end is added back, so the state is unchanged afterwards (the
    /// rules count pods exactly). Cloning it per node would copy per-domain
    /// counts of the whole cluster for each candidate.
    pub fn select_victims(
        &mut self,
        snapshot: &Snapshot,
        info: &NodeInfo,
    ) -> Result<Victims, Failure> {
        let node = &*info.node;
        let priority = self.priority();
        let requests: Vec<Requests> = info.pods.iter().map(|p| pod_requests(p)).collect();
        let mut potential: Vec<(&Arc<Pod>, &Requests)> = info
            .pods
            .iter()
            .zip(&requests)
            .filter(|(p, _)| p.priority() < priority)
            .collect();
        if potential.is_empty() {
            return Err(Failure::unresolvable(
                "No preemption victims found for incoming pod",
            ));
        }
        potential.sort_by(|a, b| by_importance(a.0, b.0, self.now));
        let mut state = NodeState {
            resources: NodeResources::new(&node.status.allocatable, requests.iter().cloned()),
            filters: &mut self.filters,
            request: &self.requests,
            node,
            gone: Vec::with_capacity(potential.len()),
        };
        for (pod, req) in &potential {
            state.remove(pod, req);
        }
        let outcome = state.fits().and_then(|()| {
            let ordered: Vec<&Pod> = potential.iter().map(|(p, _)| &***p).collect();
            let violating = pdb::violations(snapshot, &ordered);
            reprieve(&mut state, &potential, &violating)
        });
        state.restore();
        let mut victims = outcome?;
        if victims.pods.is_empty() {
            return Err(Failure::unresolvable(
                "the pod fits without evicting anything",
            ));
        }
        victims.pods.sort_by(|a, b| by_importance(a, b, self.now));
        Ok(victims)
    }

    /// The preemptor's status on a node as it is now (nothing evicted).
    pub fn status_on(&self, info: &NodeInfo) -> Verdict {
        let resources = NodeResources::new(
            &info.node.status.allocatable,
            info.pods.iter().map(|p| pod_requests(p)),
        );
        resources.fits(&self.requests)?;
        self.filters.check(&info.node)
    }
}

/// Give pods back, those whose eviction would break a budget first, then
/// the rest, each group most important first; a pod that no longer lets
/// the preemptor fit is evicted again and becomes a victim.
fn reprieve<F: NodeFilters>(
    state: &mut NodeState<'_, F>,
    potential: &[(&Arc<Pod>, &Requests)],
    violating: &[bool],
) -> Result<Victims, Failure> {
    let mut victims = Victims {
        pods: Vec::new(),
        num_pdb_violations: 0,
    };
    for breaks_pdb in [true, false] {
        for ((pod, req), _) in potential
            .iter()
            .zip(violating)
            .filter(|(_, v)| **v == breaks_pdb)
        {
            state.add_back(pod, req);
            if state.fits().is_err() {
                state.remove(pod, req);
                victims.pods.push(Arc::clone(pod));
                victims.num_pdb_violations += usize::from(breaks_pdb);
            }
        }
    }
    Ok(victims)
}

/// One node while its pods are taken away and given back.
struct NodeState<'s, F: NodeFilters> {
    resources: NodeResources,
    filters: &'s mut F,
    request: &'s Requests,
    node: &'s Node,
    /// Pods currently removed, to restore the filter state at the end.
    gone: Vec<Arc<Pod>>,
}

impl<F: NodeFilters> NodeState<'_, F> {
    fn remove(&mut self, pod: &Arc<Pod>, req: &Requests) {
        self.resources.remove_pod(req);
        self.filters.remove_pod(pod, self.node);
        self.gone.push(Arc::clone(pod));
    }

    fn add_back(&mut self, pod: &Arc<Pod>, req: &Requests) {
        self.resources.add_pod(req);
        self.filters.add_pod(pod, self.node);
        if let Some(i) = self.gone.iter().position(|p| Arc::ptr_eq(p, pod)) {
            self.gone.swap_remove(i);
        }
    }

    /// Resources first (kube-scheduler runs NodeResourcesFit before the
    /// affinity and spread plugins), then the other rules.
    fn fits(&self) -> Verdict {
        self.resources.fits(self.request)?;
        self.filters.check(self.node)
    }

    fn restore(mut self) {
        for pod in std::mem::take(&mut self.gone) {
            self.filters.add_pod(&pod, self.node);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ClusterObjects;
    use crate::model::PodDisruptionBudget;
    use crate::policy::Code;
    use crate::policy::preemption::testing::*;
    use serde_json::json;

    const HIGH: i32 = 1000;
    const MID: i32 = 100;
    const LOW: i32 = 0;
    const NEG: i32 = -5;

    fn snapshot(
        nodes: Vec<crate::model::Node>,
        pods: Vec<Pod>,
        pdbs: Vec<PodDisruptionBudget>,
    ) -> Snapshot {
        Snapshot::build(ClusterObjects {
            nodes,
            pods,
            pdbs,
            ..Default::default()
        })
    }

    fn names(v: &Victims) -> Vec<&str> {
        v.pods.iter().map(|p| p.metadata.name.as_str()).collect()
    }

    fn select(s: &Snapshot, preemptor: &Pod, node: &str) -> Result<Victims, Failure> {
        Preemptor::new(preemptor, NoFilters, now()).select_victims(s, s.node(node).unwrap())
    }

    #[test]
    fn the_prepared_filter_state_is_unchanged_after_each_node() {
        let s = snapshot(
            vec![node("n1", 1000, 1000), node("n2", 1000, 1000)],
            vec![
                with_labels(
                    pod("blocker-1", "n1", LOW, 100, 0, Some(1)),
                    &[("app", "web")],
                ),
                with_labels(
                    pod("blocker-2", "n2", LOW, 100, 0, Some(1)),
                    &[("app", "web")],
                ),
                pod("filler", "n1", LOW, 900, 0, Some(1)),
            ],
            vec![],
        );
        let mut filters = AvoidLabel {
            label: "web".into(),
            ..Default::default()
        };
        for info in s.nodes() {
            for p in info.pods.iter() {
                filters.add_pod(p, &info.node);
            }
        }
        let before = filters.on_node.clone();
        let preemptor = pod("p", "", HIGH, 100, 0, None);
        let mut p = Preemptor::new(&preemptor, filters, now());
        for _ in 0..2 {
            for name in ["n1", "n2"] {
                let v = p.select_victims(&s, s.node(name).unwrap()).unwrap();
                assert_eq!(v.pods.len(), 1, "{name}: {v:?}");
            }
        }
        // A node that cannot be helped also restores what it removed.
        let huge = pod("huge", "", HIGH, 5000, 0, None);
        let mut h = Preemptor::new(&huge, p.filters.clone(), now());
        assert!(h.select_victims(&s, s.node("n1").unwrap()).is_err());
        assert_eq!(h.filters.on_node, before);
        assert_eq!(p.filters.on_node, before);
    }

    #[test]
    fn a_node_without_lower_priority_pods_is_unresolvable() {
        let s = snapshot(
            vec![node("n1", 1000, 1000)],
            vec![
                pod("same", "n1", HIGH, 500, 0, Some(1)),
                pod("higher", "n1", HIGH + 1, 500, 0, Some(1)),
            ],
            vec![],
        );
        let err = select(&s, &pod("p", "", HIGH, 500, 0, None), "n1").unwrap_err();
        assert_eq!(err.code, Code::UnschedulableAndUnresolvable);
        assert_eq!(err.reason, "No preemption victims found for incoming pod");
    }

    #[test]
    fn equal_priority_pods_are_never_victims() {
        let s = snapshot(
            vec![node("n1", 1000, 1000)],
            vec![
                pod("equal", "n1", MID, 600, 0, Some(1)),
                pod("low", "n1", LOW, 400, 0, Some(1)),
            ],
            vec![],
        );
        // Evicting "low" frees 400m; the preemptor needs 500m.
        let err = select(&s, &pod("p", "", MID, 500, 0, None), "n1").unwrap_err();
        assert_eq!(err.code, Code::Unschedulable);
        assert!(err.reason.starts_with("Insufficient cpu"), "{}", err.reason);
    }

    #[test]
    fn a_pod_that_fits_without_evicting_needs_no_preemption() {
        let s = snapshot(
            vec![node("n1", 1000, 1000)],
            vec![pod("low", "n1", LOW, 100, 0, Some(1))],
            vec![],
        );
        assert!(select(&s, &pod("p", "", HIGH, 500, 0, None), "n1").is_err());
    }

    #[test]
    fn a_pod_that_does_not_fit_on_the_emptied_node_is_refused() {
        let s = snapshot(
            vec![node("n1", 1000, 1000)],
            vec![pod("low", "n1", LOW, 100, 0, Some(1))],
            vec![],
        );
        let err = select(&s, &pod("p", "", HIGH, 1500, 0, None), "n1").unwrap_err();
        assert_eq!(err.code, Code::UnschedulableAndUnresolvable);
    }

    #[test]
    fn the_most_important_pods_are_reprieved_first() {
        // Upstream "a pod that would fit on the node after all lower priority
        // pods are removed": the two mid pods each take half; keep the more
        // important one.
        let s = snapshot(
            vec![node("n1", 1000, 1000)],
            vec![
                pod("low", "n1", LOW, 500, 0, Some(1)),
                pod("mid", "n1", MID, 500, 0, Some(1)),
            ],
            vec![],
        );
        let v = select(&s, &pod("p", "", HIGH, 500, 0, None), "n1").unwrap();
        assert_eq!(names(&v), ["low"]);
        assert_eq!(v.num_pdb_violations, 0);
    }

    #[test]
    fn among_equal_priority_the_earlier_started_pod_stays() {
        let s = snapshot(
            vec![node("n1", 1000, 1000)],
            vec![
                pod("young", "n1", LOW, 500, 0, Some(100)),
                pod("old", "n1", LOW, 500, 0, Some(1)),
            ],
            vec![],
        );
        let v = select(&s, &pod("p", "", HIGH, 500, 0, None), "n1").unwrap();
        assert_eq!(names(&v), ["young"]);
    }

    #[test]
    fn a_pod_without_start_time_counts_as_youngest() {
        let s = snapshot(
            vec![node("n1", 1000, 1000)],
            vec![
                pod("unstarted", "n1", LOW, 500, 0, None),
                pod("started", "n1", LOW, 500, 0, Some(1)),
            ],
            vec![],
        );
        let v = select(&s, &pod("p", "", HIGH, 500, 0, None), "n1").unwrap();
        assert_eq!(names(&v), ["unstarted"]);
    }

    #[test]
    fn a_greedy_lowest_first_choice_is_not_what_upstream_does() {
        // mid (600m) is reprieved first and fits next to the preemptor (400m),
        // so both low pods go even though evicting only mid would suffice.
        let s = snapshot(
            vec![node("n1", 1000, 1000)],
            vec![
                pod("mid", "n1", MID, 600, 0, Some(1)),
                pod("low-a", "n1", LOW, 200, 0, Some(1)),
                pod("low-b", "n1", LOW, 200, 0, Some(2)),
            ],
            vec![],
        );
        let v = select(&s, &pod("p", "", HIGH, 400, 0, None), "n1").unwrap();
        assert_eq!(names(&v), ["low-a", "low-b"]);
    }

    #[test]
    fn victims_are_sorted_most_important_first_with_negative_priorities() {
        let s = snapshot(
            vec![node("n1", 1000, 1000)],
            vec![
                pod("neg", "n1", NEG, 300, 0, Some(1)),
                pod("low", "n1", LOW, 300, 0, Some(1)),
                pod("mid", "n1", MID, 300, 0, Some(1)),
            ],
            vec![],
        );
        let v = select(&s, &pod("p", "", HIGH, 1000, 0, None), "n1").unwrap();
        assert_eq!(names(&v), ["mid", "low", "neg"]);
    }

    #[test]
    fn memory_and_cpu_both_count() {
        let s = snapshot(
            vec![node("n1", 1000, 1000)],
            vec![
                pod("cpu-hog", "n1", LOW, 900, 0, Some(1)),
                pod("mem-hog", "n1", LOW, 0, 900, Some(2)),
            ],
            vec![],
        );
        let v = select(&s, &pod("p", "", HIGH, 0, 500, None), "n1").unwrap();
        assert_eq!(names(&v), ["mem-hog"]);
    }

    fn pdb(selector: serde_json::Value, allowed: i32) -> PodDisruptionBudget {
        serde_json::from_value(json!({
            "metadata": {"name": "pdb", "namespace": "default"},
            "spec": {"selector": selector},
            "status": {"disruptionsAllowed": allowed}
        }))
        .unwrap()
    }

    #[test]
    fn pdb_violating_pods_are_reprieved_before_the_others() {
        // Upstream "preemption with violation of the pdb with pod whose
        // eviction was processed": guarded pod goes back first and stays.
        let s = snapshot(
            vec![node("n1", 1000, 1000)],
            vec![
                with_labels(pod("guarded", "n1", LOW, 500, 0, Some(5)), &[("app", "db")]),
                pod("plain", "n1", LOW, 500, 0, Some(1)),
            ],
            vec![pdb(json!({"matchLabels": {"app": "db"}}), 0)],
        );
        let v = select(&s, &pod("p", "", HIGH, 500, 0, None), "n1").unwrap();
        assert_eq!(names(&v), ["plain"]);
        assert_eq!(v.num_pdb_violations, 0);
    }

    #[test]
    fn num_pdb_violations_counts_only_violating_pods_that_are_victims() {
        // Budget of one for two matching pods: the less important one
        // violates; the preemptor needs both gone.
        let s = snapshot(
            vec![node("n1", 1000, 1000)],
            vec![
                with_labels(pod("a", "n1", LOW, 500, 0, Some(1)), &[("app", "db")]),
                with_labels(pod("b", "n1", LOW, 500, 0, Some(2)), &[("app", "db")]),
            ],
            vec![pdb(json!({"matchLabels": {"app": "db"}}), 1)],
        );
        let v = select(&s, &pod("p", "", HIGH, 1000, 0, None), "n1").unwrap();
        assert_eq!(names(&v), ["a", "b"]);
        assert_eq!(v.num_pdb_violations, 1);

        let v = select(&s, &pod("p", "", HIGH, 500, 0, None), "n1").unwrap();
        assert_eq!(names(&v), ["a"], "b violates, is tried first and stays");
        assert_eq!(v.num_pdb_violations, 0);
    }

    #[test]
    fn victims_from_both_groups_are_resorted_by_importance() {
        let s = snapshot(
            vec![node("n1", 1000, 1000)],
            vec![
                with_labels(
                    pod("guarded-low", "n1", LOW, 400, 0, Some(1)),
                    &[("app", "db")],
                ),
                pod("plain-mid", "n1", MID, 400, 0, Some(1)),
                pod("plain-low", "n1", LOW, 200, 0, Some(1)),
            ],
            vec![pdb(json!({"matchLabels": {"app": "db"}}), 0)],
        );
        let v = select(&s, &pod("p", "", HIGH, 1000, 0, None), "n1").unwrap();
        assert_eq!(names(&v), ["plain-mid", "guarded-low", "plain-low"]);
        assert_eq!(v.num_pdb_violations, 1);
    }

    #[test]
    fn other_filter_rules_are_checked_with_the_victims_gone() {
        let s = snapshot(
            vec![node("n1", 1000, 1000)],
            vec![
                with_labels(
                    pod("blocker", "n1", LOW, 100, 0, Some(1)),
                    &[("app", "web")],
                ),
                pod("filler", "n1", LOW, 100, 0, Some(1)),
            ],
            vec![],
        );
        let mut filters = AvoidLabel {
            label: "web".into(),
            ..Default::default()
        };
        let info = s.node("n1").unwrap();
        for p in info.pods.iter() {
            filters.add_pod(p, &info.node);
        }
        let preemptor = pod("p", "", HIGH, 100, 0, None);
        let v = Preemptor::new(&preemptor, filters.clone(), now())
            .select_victims(&s, info)
            .unwrap();
        assert_eq!(
            names(&v),
            ["blocker"],
            "resources fit; only the blocker must go"
        );

        let higher_blocker = with_labels(
            pod("blocker", "n1", HIGH, 100, 0, Some(1)),
            &[("app", "web")],
        );
        let s = snapshot(vec![node("n1", 1000, 1000)], vec![higher_blocker], vec![]);
        let err = Preemptor::new(&preemptor, filters, now())
            .select_victims(&s, s.node("n1").unwrap())
            .unwrap_err();
        assert_eq!(
            err.code,
            Code::UnschedulableAndUnresolvable,
            "no lower-priority pod"
        );
    }

    #[test]
    fn terminating_pods_are_potential_victims() {
        let mut terminating = pod("terminating", "n1", LOW, 800, 0, Some(1));
        terminating.metadata.deletion_timestamp = Some(now());
        let s = snapshot(vec![node("n1", 1000, 1000)], vec![terminating], vec![]);
        let v = select(&s, &pod("p", "", HIGH, 500, 0, None), "n1").unwrap();
        assert_eq!(names(&v), ["terminating"]);
    }
}
