//! SelectVictimsOnNode: the fewest, least important pods whose eviction
//! lets the preemptor fit on one node.
//!
//! All strictly lower-priority pods are removed; if the preemptor then fits,
//! they are given back one by one — first those whose eviction would break
//! a PodDisruptionBudget, then the rest, each group most important first —
//! and every pod whose return still lets the preemptor fit stays.

use std::sync::Arc;

use crate::cluster::{NodeIdx, NodeInfo, NodePods};
use crate::model::Pod;
use crate::model::requests::{Requests, RequestsRule, assigned_pod_requests};
use crate::policy::domains::NodeAt;
use crate::policy::resources::NodeResources;
use crate::policy::{Failure, Verdict};

use super::nominated::nominated_against;
use super::{NodeFilters, Preemptor, Victim, Victims};
use crate::policy::pdb::violations;

impl<F: NodeFilters> Preemptor<'_, F> {
    /// The victims on the view's node at `idx`, or why preemption cannot
    /// help there.
    ///
    /// Works on the one prepared filter state: pods are removed and re-added
    /// as upstream does on its per-node clone, and every pod still removed
    /// at the end is added back, so the state is unchanged afterwards (the
    /// rules count pods exactly). Cloning it per node would copy per-domain
    /// counts of the whole cluster for each candidate.
    pub fn select_victims(&mut self, idx: NodeIdx) -> Result<Victims, Failure> {
        let victims = self.select_victims_on_node(idx)?;
        // Upstream DryRunPreemption before PR 135486 (kube-scheduler up to
        // 1.35): a node where nothing need go is no candidate.
        if victims.pods.is_empty() {
            return Err(Failure::unresolvable(
                "the pod fits without evicting anything",
            ));
        }
        Ok(victims)
    }

    /// SelectVictimsOnNode itself: like [`Self::select_victims`], but a
    /// node where the preemptor fits once every pod given back stays is
    /// `Ok` with no victims, as upstream's answer is (success, zero pods).
    pub fn select_victims_on_node(&mut self, idx: NodeIdx) -> Result<Victims, Failure> {
        let snapshot = self.snapshot;
        let info = &snapshot.nodes()[idx as usize];
        let node = &*info.node;
        let potential = self.potential_victims(info);
        if potential.is_empty() {
            return Err(Failure::unresolvable(
                "No preemption victims found for incoming pod",
            ));
        }
        let nominated = nominated_against(self.snapshot, self.pod, node.name());
        let counts_pods = self.filters.counts_pods();
        let request = self.request.on_node(&node.status.allocatable);
        let mut state = NodeState {
            resources: NodeResources::new(
                &node.status.allocatable,
                info.pods.requested(),
                info.pods.len(),
            ),
            filters: &mut self.filters,
            counts_pods,
            request: &request,
            at: NodeAt::indexed(node, idx),
            pods: &info.pods,
            nominated: &nominated,
            removed: vec![true; potential.len()],
        };
        state.add_nominated(snapshot.requests_rule());
        for v in &potential {
            state.take_away(v);
        }
        let budgets = self.snapshot.pdbs();
        let outcome = state.fits().map(|()| {
            let ordered: Vec<(&Pod, &[u32])> = potential
                .iter()
                .map(|v| {
                    let i = v.position as usize;
                    (&*info.pods[i], info.pdbs.of(i))
                })
                .collect();
            let violating = violations(budgets, &ordered);
            reprieve(&mut state, &potential, &violating)
        });
        state.restore(&potential);
        outcome
    }

    /// The node's pods of lower priority than the preemptor, most
    /// important first, equal pods in the node's order (deterministic
    /// answers). Read from the node's importance order, where they are the
    /// tail; sorted here only when that order does not hold at `now`.
    fn potential_victims(&self, info: &NodeInfo) -> Vec<Victim> {
        let priority = self.priority();
        let summaries = info.pods.summaries();
        let victim = |i: u32| {
            let s = &summaries[i as usize];
            Victim {
                position: i,
                priority: s.priority,
                start_time: s.start_time.unwrap_or(self.now),
                breaks_pdb: false,
            }
        };
        match info.pods.by_importance(self.now) {
            Some(order) => {
                let first = order.partition_point(|&i| summaries[i as usize].priority >= priority);
                order[first..].iter().map(|&i| victim(i)).collect()
            }
            None => self.potential_victims_sorted_here(info),
        }
    }

    /// [`Self::potential_victims`] sorting the node's pods on the spot.
    fn potential_victims_sorted_here(&self, info: &NodeInfo) -> Vec<Victim> {
        let priority = self.priority();
        let mut potential: Vec<Victim> = info
            .pods
            .summaries()
            .iter()
            .enumerate()
            .filter(|(_, s)| s.priority < priority)
            .map(|(i, s)| Victim {
                position: i as u32,
                priority: s.priority,
                start_time: s.start_time.unwrap_or(self.now),
                breaks_pdb: false,
            })
            .collect();
        // Stable: equal keys keep the node's pod order.
        potential.sort_by_cached_key(Victim::importance);
        potential
    }

    /// The preemptor's status on a node as it is now (nothing evicted).
    pub fn status_on(&self, info: &NodeInfo) -> Verdict {
        let resources = NodeResources::new(
            &info.node.status.allocatable,
            info.pods.requested(),
            info.pods.len(),
        );
        resources.fits(&self.request.on_node(&info.node.status.allocatable))?;
        self.filters.check(NodeAt::unindexed(&info.node))
    }
}

/// Give pods back, those whose eviction would break a budget first, then
/// the rest, each group most important first; a pod that no longer lets
/// the preemptor fit is evicted again and becomes a victim. The victims
/// come most important first, equal ones of the first group before those
/// of the second.
fn reprieve<F: NodeFilters>(
    state: &mut NodeState<'_, F>,
    potential: &[Victim],
    violating: &[bool],
) -> Victims {
    let mut victims = Victims {
        pods: Vec::with_capacity(potential.len()),
        num_pdb_violations: 0,
    };
    for breaks_pdb in [true, false] {
        for (i, v) in potential.iter().enumerate() {
            if violating[i] != breaks_pdb {
                continue;
            }
            state.add_back(i, v);
            if !state.still_fits() {
                state.remove_again(i, v);
                victims.pods.push(Victim { breaks_pdb, ..*v });
                victims.num_pdb_violations += usize::from(breaks_pdb);
            }
        }
    }
    // Each group is already in order; only two of them need merging
    // (upstream sorts only then too). Stable: the first group's go first.
    if (1..victims.pods.len()).contains(&victims.num_pdb_violations) {
        victims.pods.sort_by_key(Victim::importance);
    }
    victims
}

/// One node while its pods are taken away and given back.
struct NodeState<'s, F: NodeFilters> {
    /// With the nominated pods counted.
    resources: NodeResources<'s>,
    /// With the nominated pods added while the node is worked on.
    filters: &'s mut F,
    /// `filters.counts_pods()`: when false, taking pods away and giving
    /// them back cannot change the filters' verdict, which [`Self::fits`]
    /// has already asked, so they are neither told nor asked again.
    counts_pods: bool,
    request: &'s Requests,
    at: NodeAt<'s>,
    pods: &'s NodePods,
    nominated: &'s [&'s Arc<Pod>],
    /// Which potential victims (by their place in the potential list) are
    /// currently removed.
    removed: Vec<bool>,
}

impl<F: NodeFilters> NodeState<'_, F> {
    fn add_nominated(&mut self, rule: RequestsRule) {
        for pod in self.nominated {
            self.resources.add_pod(&assigned_pod_requests(pod, rule));
            if self.counts_pods {
                self.filters.add_pod(pod, self.at);
            }
        }
    }

    /// The pod of `v` no longer counts on the node. This and the other
    /// per-pod steps are inlined on purpose: a call per pod per node was
    /// measurable, and the compiler's choice flips with unrelated changes.
    #[inline(always)]
    fn take_away(&mut self, v: &Victim) {
        let i = v.position as usize;
        self.resources
            .remove_pod(&self.pods.summaries()[i].requests);
        if self.counts_pods {
            self.filters.remove_pod(&self.pods[i], self.at);
        }
    }

    #[inline(always)]
    fn add_back(&mut self, k: usize, v: &Victim) {
        let i = v.position as usize;
        self.resources.add_pod(&self.pods.summaries()[i].requests);
        if self.counts_pods {
            self.filters.add_pod(&self.pods[i], self.at);
        }
        self.removed[k] = false;
    }

    #[inline(always)]
    fn remove_again(&mut self, k: usize, v: &Victim) {
        self.take_away(v);
        self.removed[k] = true;
    }

    /// RunFilterPluginsWithNominatedPods: resources first (kube-scheduler
    /// runs NodeResourcesFit before the affinity and spread plugins), then
    /// the other rules, all with the nominated pods running here.
    fn fits(&mut self) -> Verdict {
        self.resources.fits(self.request)?;
        self.filters.check(self.at)?;
        self.fits_without_nominated()
    }

    /// [`Self::fits`] as a yes or no, without building reasons, after it
    /// said yes once for this node.
    #[inline(always)]
    fn still_fits(&mut self) -> bool {
        self.resources.has_room(self.request)
            && (!self.counts_pods
                || (self.filters.check(self.at).is_ok() && self.fits_without_nominated().is_ok()))
    }

    /// Upstream checks once more without the nominated pods, since they may
    /// still land elsewhere: what lets the preemptor fit (a pod it has
    /// affinity to, say) must not be one of them. Fewer pods never need
    /// more resources, so only the other rules are asked again.
    fn fits_without_nominated(&mut self) -> Verdict {
        if self.nominated.is_empty() || !self.counts_pods {
            return Ok(());
        }
        for pod in self.nominated {
            self.filters.remove_pod(pod, self.at);
        }
        let verdict = self.filters.check(self.at);
        for pod in self.nominated {
            self.filters.add_pod(pod, self.at);
        }
        verdict
    }

    /// Put the filter state back as it was before this node.
    fn restore(mut self, potential: &[Victim]) {
        if !self.counts_pods {
            return;
        }
        for (k, v) in potential.iter().enumerate() {
            if self.removed[k] {
                self.filters
                    .add_pod(&self.pods[v.position as usize], self.at);
            }
        }
        for pod in std::mem::take(&mut self.nominated) {
            self.filters.remove_pod(pod, self.at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{ClusterObjects, Snapshot};
    use crate::model::PodDisruptionBudget;
    use crate::policy::Code;
    use crate::policy::preemption::testing::*;
    use jiff::Timestamp;
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

    /// Victims by the names of their pods, for assertions.
    #[derive(Debug)]
    struct Named {
        names: Vec<String>,
        num_pdb_violations: usize,
    }

    fn named(info: &NodeInfo, v: Victims) -> Named {
        Named {
            names: v
                .pods
                .iter()
                .map(|v| info.pods[v.position as usize].metadata.name.clone())
                .collect(),
            num_pdb_violations: v.num_pdb_violations,
        }
    }

    fn names(v: &Named) -> Vec<&str> {
        v.names.iter().map(String::as_str).collect()
    }

    fn select(s: &Snapshot, preemptor: &Pod, node: &str) -> Result<Named, Failure> {
        let info = s.node(node).unwrap();
        Preemptor::new(s, preemptor, NoFilters, now())
            .select_victims(s.node_idx(node).unwrap())
            .map(|v| named(info, v))
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
                filters.add_pod(p, NodeAt::from(&*info.node));
            }
        }
        let before = filters.on_node.clone();
        let preemptor = pod("p", "", HIGH, 100, 0, None);
        let mut p = Preemptor::new(&s, &preemptor, filters, now());
        for _ in 0..2 {
            for name in ["n1", "n2"] {
                let v = p.select_victims(s.node_idx(name).unwrap()).unwrap();
                assert_eq!(v.pods.len(), 1, "{name}: {v:?}");
            }
        }
        // A node that cannot be helped also restores what it removed.
        let huge = pod("huge", "", HIGH, 5000, 0, None);
        let mut h = Preemptor::new(&s, &huge, p.filters.clone(), now());
        assert!(h.select_victims(s.node_idx("n1").unwrap()).is_err());
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
        assert_eq!(&*err.reason, "No preemption victims found for incoming pod");
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

    /// An unstarted and a started low pod, 500m each, on a 1000m node.
    fn one_unstarted_pod() -> Snapshot {
        snapshot(
            vec![node("n1", 1000, 1000)],
            vec![
                pod("unstarted", "n1", LOW, 500, 0, None),
                pod("started", "n1", LOW, 500, 0, Some(1)),
            ],
            vec![],
        )
    }

    #[test]
    fn a_pod_without_start_time_counts_as_youngest() {
        let s = one_unstarted_pod();
        let v = select(&s, &pod("p", "", HIGH, 500, 0, None), "n1").unwrap();
        assert_eq!(names(&v), ["unstarted"]);
    }

    #[test]
    fn a_victim_without_start_time_starts_now_for_choosing_a_node() {
        let s = one_unstarted_pod();
        let preemptor = pod("p", "", HIGH, 1000, 0, None);
        let v = Preemptor::new(&s, &preemptor, NoFilters, now())
            .select_victims(s.node_idx("n1").unwrap())
            .unwrap();
        let starts: Vec<Timestamp> = v.pods.iter().map(|v| v.start_time).collect();
        assert_eq!(
            starts,
            [Timestamp::from_second(1_704_067_201).unwrap(), now()]
        );
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

    /// `pod` with `patch` merged into it (one level deep per key).
    fn patched(pod: Pod, patch: serde_json::Value) -> Pod {
        let mut base = json!({
            "metadata": {"name": pod.metadata.name, "namespace": "default", "uid": pod.metadata.uid},
            "spec": {"nodeName": pod.spec.node_name, "priority": pod.priority(),
                     "containers": [{"name": "c", "resources": {"requests": {
                         "cpu": format!("{}m", pod.spec.containers[0].resources.requests.get("cpu").copied().unwrap_or(0))}}}]},
            "status": {"phase": "Running", "startTime": pod.status.start_time.map(|t| t.to_string())},
        });
        for (section, fields) in patch.as_object().unwrap() {
            for (k, v) in fields.as_object().unwrap() {
                base[section][k] = v.clone();
            }
        }
        serde_json::from_value(base).unwrap()
    }

    /// What Kubernetes 1.32-1.35 count as a pod's resources, seen through
    /// victim selection (SelectVictimsOnNode with NodeResourcesFit). Each
    /// row names the behaviour it pins; `want` is the victims, or `None` when
    /// preemption cannot help.
    #[test]
    fn resources_as_current_kubernetes_counts_them_table() {
        struct Case {
            name: &'static str,
            node: serde_json::Value,
            pods: Vec<Pod>,
            preemptor: Pod,
            settings: crate::config::SchedulingSettings,
            want: Option<Vec<&'static str>>,
        }
        let cpu4 = json!({"cpu": "4", "pods": "110"});
        let resized = |spec: i64, status: &str, conditions: serde_json::Value| {
            patched(
                pod("a", "n1", LOW, spec, 0, Some(1)),
                json!({"status": {"conditions": conditions, "containerStatuses": [
                    {"name": "c", "resources": {"requests": {"cpu": status}}, "allocatedResources": {"cpu": status}}]}}),
            )
        };
        let cases = [
            Case {
                // component-helpers PodRequests, UseStatusResources: A's
                // spec says 1 cpu but the node still gives it 3.
                name: "in-place resize: a running pod holds max(spec, status, allocated)",
                node: cpu4.clone(),
                pods: vec![
                    resized(1000, "3", json!([])),
                    pod("b", "n1", LOW, 1000, 0, Some(2)),
                ],
                preemptor: pod("h", "", MID, 2000, 0, None),
                settings: Default::default(),
                want: Some(vec!["a"]),
            },
            Case {
                name: "in-place resize: an Infeasible resize up counts the status, not the spec",
                node: cpu4.clone(),
                pods: vec![
                    resized(
                        5000,
                        "1",
                        json!([{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]),
                    ),
                    pod("b", "n1", LOW, 1000, 0, Some(2)),
                ],
                preemptor: pod("h", "", MID, 3000, 0, None),
                settings: Default::default(),
                want: Some(vec!["b"]),
            },
            Case {
                // IsSupportedPodLevelResource: hugepages-* too.
                name: "pod-level hugepages-2Mi 1Gi cannot fit in 512Mi, whatever is evicted",
                node: json!({"cpu": "4", "pods": "110", "hugepages-2Mi": "512Mi"}),
                pods: vec![patched(
                    pod("l", "n1", LOW, 0, 0, Some(1)),
                    json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"hugepages-2Mi": "512Mi"}}}]}}),
                )],
                preemptor: patched(
                    pod("h", "", HIGH, 0, 0, None),
                    json!({"spec": {
                        "containers": [{"name": "c", "resources": {"requests": {"hugepages-2Mi": "256Mi"}}}],
                        "resources": {"requests": {"hugepages-2Mi": "1Gi"}}}}),
                ),
                settings: Default::default(),
                want: None,
            },
            Case {
                // NodeResourcesFitArgs ignoredResources (kube-scheduler adds
                // managedResources[].ignoredByScheduler to it).
                name: "an ignored extended resource the node lacks does not block preemption",
                node: cpu4.clone(),
                pods: vec![pod("l", "n1", LOW, 3000, 0, Some(1))],
                preemptor: patched(
                    pod("h", "", HIGH, 0, 0, None),
                    json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {
                        "cpu": "2", "example.com/vgpu-mem": "1000"}}}]}}),
                ),
                settings: crate::config::SchedulingSettings {
                    ignored_resources: vec!["example.com/vgpu-mem".into()],
                    ..Default::default()
                },
                want: Some(vec!["l"]),
            },
            Case {
                name: "the same resource not ignored: no node has it, no victims",
                node: cpu4.clone(),
                pods: vec![pod("l", "n1", LOW, 3000, 0, Some(1))],
                preemptor: patched(
                    pod("h", "", HIGH, 0, 0, None),
                    json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {
                        "cpu": "2", "example.com/vgpu-mem": "1000"}}}]}}),
                ),
                settings: Default::default(),
                want: None,
            },
        ];
        for case in cases {
            let n1: crate::model::Node = serde_json::from_value(json!({
                "metadata": {"name": "n1"}, "status": {"allocatable": case.node}
            }))
            .unwrap();
            let s = snapshot(vec![n1], case.pods, vec![]);
            let info = s.node("n1").unwrap();
            let got = Preemptor::new(&s, &case.preemptor, NoFilters, now())
                .ignoring(&case.settings)
                .select_victims(0)
                .map(|v| named(info, v));
            match (&got, &case.want) {
                (Ok(v), Some(want)) => assert_eq!(names(v), *want, "{}", case.name),
                (Err(_), None) => {}
                _ => panic!("{}: got {got:?}, want {:?}", case.name, case.want),
            }
        }
    }

    /// DefaultPreemption's `SelectVictimsOnNode` runs NodeResourcesFit's
    /// filter, which in 1.37 leaves a resource a DeviceClass maps to the
    /// DRA plugin on a node that does not list it
    /// (`shouldDelegateResourceToDRA`): victims are chosen for cpu alone.
    #[test]
    fn a_dra_extended_resource_is_not_counted_where_the_node_does_not_list_it() {
        let gpu_class: crate::model::DeviceClass = serde_json::from_value(json!({
            "metadata": {"name": "gpu.example.com"},
            "spec": {"extendedResourceName": "example.com/gpu"}}))
        .unwrap();
        let node = |alloc: serde_json::Value| -> crate::model::Node {
            serde_json::from_value(
                json!({"metadata": {"name": "n1"}, "status": {"allocatable": alloc}}),
            )
            .unwrap()
        };
        let preemptor = patched(
            pod("h", "", HIGH, 0, 0, None),
            json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {
                "cpu": "2", "example.com/gpu": "1"}}}]}}),
        );
        let victims =
            |alloc: serde_json::Value, classes: Vec<crate::model::DeviceClass>, gate: bool| {
                let s = Snapshot::build(ClusterObjects {
                    nodes: vec![node(alloc)],
                    pods: vec![
                        pod("a", "n1", LOW, 2000, 0, Some(1)),
                        pod("b", "n1", NEG, 1000, 0, Some(2)),
                    ],
                    device_classes: classes,
                    ..Default::default()
                });
                let settings = crate::config::SchedulingSettings {
                    feature_gates: [("DRAExtendedResource".to_string(), gate)].into(),
                    kubernetes_version: crate::config::upstream::Minor(36),
                    ..Default::default()
                };
                let info = s.node("n1").unwrap();
                Preemptor::new(&s, &preemptor, NoFilters, now())
                    .ignoring(&settings)
                    .select_victims(0)
                    .map(|v| names(&named(info, v)).join(","))
                    .map_err(|f| (f.code, f.reason.to_string()))
            };
        let cpu4 = json!({"cpu": "4", "pods": "110"});
        assert_eq!(
            victims(cpu4.clone(), vec![gpu_class.clone()], true),
            Ok("b".to_string()),
            "the DeviceClass maps it and the node does not list it: cpu decides"
        );
        let unresolvable = |r: Result<String, (Code, String)>| {
            let (code, reason) = r.unwrap_err();
            assert_eq!(code, Code::UnschedulableAndUnresolvable);
            assert!(
                reason.starts_with("Insufficient example.com/gpu"),
                "{reason}"
            );
        };
        unresolvable(victims(cpu4.clone(), vec![], true));
        unresolvable(victims(cpu4, vec![gpu_class], false));
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
            filters.add_pod(p, NodeAt::from(&*info.node));
        }
        let preemptor = pod("p", "", HIGH, 100, 0, None);
        let v = Preemptor::new(&s, &preemptor, filters.clone(), now())
            .select_victims(s.node_idx("n1").unwrap())
            .unwrap();
        assert_eq!(
            names(&named(info, v)),
            ["blocker"],
            "resources fit; only the blocker must go"
        );

        let higher_blocker = with_labels(
            pod("blocker", "n1", HIGH, 100, 0, Some(1)),
            &[("app", "web")],
        );
        let s = snapshot(vec![node("n1", 1000, 1000)], vec![higher_blocker], vec![]);
        let err = Preemptor::new(&s, &preemptor, filters, now())
            .select_victims(s.node_idx("n1").unwrap())
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

    fn nominated(mut p: Pod, node: &str) -> Pod {
        p.status.nominated_node_name = node.into();
        p
    }

    /// Two 400m low pods on a 1000m node; the preemptor wants 400m, so one
    /// eviction is enough unless a nominated pod takes room too.
    fn with_nominated(extra: Vec<Pod>) -> Snapshot {
        let mut pods = vec![
            pod("low-a", "n1", LOW, 400, 0, Some(1)),
            pod("low-b", "n1", LOW, 400, 0, Some(2)),
        ];
        pods.extend(extra);
        snapshot(vec![node("n1", 1000, 1000)], pods, vec![])
    }

    #[test]
    fn without_nominated_pods_one_eviction_is_enough() {
        let s = with_nominated(vec![]);
        let v = select(&s, &pod("p", "", HIGH, 400, 0, None), "n1").unwrap();
        assert_eq!(names(&v), ["low-b"]);
    }

    #[test]
    fn a_higher_priority_nominated_pod_uses_the_room_so_more_pods_go() {
        let s = with_nominated(vec![nominated(
            pod("nom", "", HIGH + 1, 300, 0, None),
            "n1",
        )]);
        let v = select(&s, &pod("p", "", HIGH, 400, 0, None), "n1").unwrap();
        assert_eq!(names(&v), ["low-a", "low-b"]);
    }

    #[test]
    fn an_equal_priority_nominated_pod_counts_too() {
        let s = with_nominated(vec![nominated(pod("nom", "", HIGH, 300, 0, None), "n1")]);
        let v = select(&s, &pod("p", "", HIGH, 400, 0, None), "n1").unwrap();
        assert_eq!(names(&v), ["low-a", "low-b"]);
    }

    #[test]
    fn a_node_whose_room_a_nominated_pod_takes_is_not_helpful() {
        let s = with_nominated(vec![nominated(
            pod("nom", "", HIGH + 1, 700, 0, None),
            "n1",
        )]);
        let err = select(&s, &pod("p", "", HIGH, 400, 0, None), "n1").unwrap_err();
        assert_eq!(err.code, Code::Unschedulable);
        assert!(err.reason.starts_with("Insufficient cpu"), "{}", err.reason);
    }

    #[test]
    fn a_lower_priority_nominated_pod_is_ignored() {
        let s = with_nominated(vec![nominated(pod("nom", "", MID, 700, 0, None), "n1")]);
        let v = select(&s, &pod("p", "", HIGH, 400, 0, None), "n1").unwrap();
        assert_eq!(names(&v), ["low-b"]);
    }

    #[test]
    fn a_pod_nominated_to_another_node_is_ignored() {
        let s = with_nominated(vec![nominated(
            pod("nom", "", HIGH + 1, 700, 0, None),
            "n2",
        )]);
        let v = select(&s, &pod("p", "", HIGH, 400, 0, None), "n1").unwrap();
        assert_eq!(names(&v), ["low-b"]);
    }

    #[test]
    fn the_preemptor_itself_nominated_to_the_node_is_not_counted() {
        let preemptor = nominated(pod("p", "", HIGH, 400, 0, None), "n1");
        let s = with_nominated(vec![preemptor.clone()]);
        let v = select(&s, &preemptor, "n1").unwrap();
        assert_eq!(names(&v), ["low-b"]);
    }

    #[test]
    fn a_nominated_pod_counts_for_the_other_filter_rules() {
        let s = snapshot(
            vec![node("n1", 1000, 1000)],
            vec![
                pod("filler", "n1", LOW, 900, 0, Some(1)),
                nominated(
                    with_labels(pod("web", "", HIGH, 0, 0, None), &[("app", "web")]),
                    "n1",
                ),
            ],
            vec![],
        );
        let filters = AvoidLabel {
            label: "web".into(),
            ..Default::default()
        };
        let preemptor = pod("p", "", HIGH, 200, 0, None);
        let mut p = Preemptor::new(&s, &preemptor, filters, now());
        let err = p.select_victims(s.node_idx("n1").unwrap()).unwrap_err();
        assert_eq!(err.code, Code::Unschedulable);
        assert!(err.reason.contains("app=web"), "{}", err.reason);
        assert!(
            p.filters.on_node.values().all(|n| *n == 0),
            "the nominated pod is taken out of the filter state again: {:?}",
            p.filters.on_node
        );
    }

    /// Affinity to pods labelled `app=<label>` on the same node.
    #[derive(Debug, Clone, Default)]
    struct NeedLabel {
        label: String,
        on_node: std::collections::BTreeMap<String, usize>,
    }

    impl NodeFilters for NeedLabel {
        fn check(&self, at: NodeAt<'_>) -> Verdict {
            match self.on_node.get(at.node().name()).copied().unwrap_or(0) {
                0 => Err(Failure::unschedulable(format!("no app={} pod", self.label))),
                _ => Ok(()),
            }
        }
        fn add_pod(&mut self, pod: &Pod, at: NodeAt<'_>) {
            if pod.metadata.labels.get("app") == Some(&self.label) {
                *self
                    .on_node
                    .entry(at.node().name().to_string())
                    .or_default() += 1;
            }
        }
        fn remove_pod(&mut self, pod: &Pod, at: NodeAt<'_>) {
            if pod.metadata.labels.get("app") == Some(&self.label) {
                *self
                    .on_node
                    .entry(at.node().name().to_string())
                    .or_default() -= 1;
            }
        }
    }

    #[test]
    fn a_nominated_pod_cannot_be_what_lets_the_preemptor_fit() {
        let db = |node: &str| with_labels(pod("db", node, HIGH, 0, 0, None), &[("app", "db")]);
        let preemptor = pod("p", "", HIGH, 200, 0, None);
        let run = |db_pod: Pod| {
            let s = snapshot(
                vec![node("n1", 1000, 1000)],
                vec![pod("filler", "n1", LOW, 900, 0, Some(1)), db_pod],
                vec![],
            );
            let mut filters = NeedLabel {
                label: "db".into(),
                ..Default::default()
            };
            let info = s.node("n1").unwrap();
            for p in info.pods.iter() {
                filters.add_pod(p, NodeAt::from(&*info.node));
            }
            Preemptor::new(&s, &preemptor, filters, now())
                .select_victims(s.node_idx("n1").unwrap())
                .map(|v| names(&named(info, v)).join(","))
        };
        assert_eq!(
            run(db("n1")).unwrap(),
            "filler",
            "a bound db pod satisfies it"
        );
        let err = run(nominated(db(""), "n1")).unwrap_err();
        assert!(err.reason.contains("no app=db pod"), "{}", err.reason);
    }

    /// Filters that say they count pods, so victim selection tells and
    /// asks them about every pod: the long way, to compare with.
    #[derive(Debug, Clone)]
    struct Tracked<F>(F);

    impl<F: NodeFilters> NodeFilters for Tracked<F> {
        fn check(&self, at: NodeAt<'_>) -> Verdict {
            self.0.check(at)
        }
        fn add_pod(&mut self, pod: &Pod, at: NodeAt<'_>) {
            self.0.add_pod(pod, at);
        }
        fn remove_pod(&mut self, pod: &Pod, at: NodeAt<'_>) {
            self.0.remove_pod(pod, at);
        }
    }

    /// When no filter rule counts pods, victim selection asks the rules
    /// once per node; it must choose exactly what asking for every pod
    /// chooses.
    mod rules_asked_once {
        use proptest::prelude::*;

        use super::*;
        use crate::config::SchedulingSettings;
        use crate::policy::filter::PodFilters;

        prop_compose! {
            fn existing()(
                priority in prop::sample::select(vec![NEG, LOW, MID, HIGH]),
                cpu in 0..6i64,
                mem in 0..6i64,
                start in prop::option::weighted(0.8, 0..4i64),
                app in prop::sample::select(vec!["db", "web"]),
            ) -> (i32, i64, i64, Option<i64>, &'static str) {
                (priority, cpu * 100, mem * 100, start, app)
            }
        }

        prop_compose! {
            fn scene()(
                pods in prop::collection::vec(existing(), 0..12),
                budgets in prop::collection::vec(
                    (prop::sample::select(vec!["db", "web"]), 0..3i32), 0..3),
                nominated in prop::collection::vec(
                    (prop::sample::select(vec![LOW, HIGH, HIGH + 1]), 0..4i64), 0..3),
                unschedulable in prop::bool::weighted(0.1),
                cpu in 0..11i64,
                mem in 0..11i64,
            ) -> (Snapshot, Pod) {
                let mut n = node("n1", 1000, 1000);
                n.spec.unschedulable = unschedulable;
                let mut all: Vec<Pod> = pods
                    .into_iter()
                    .enumerate()
                    .map(|(i, (priority, cpu, mem, start, app))| {
                        with_labels(pod(&format!("p{i}"), "n1", priority, cpu, mem, start),
                            &[("app", app)])
                    })
                    .collect();
                for (i, (priority, cpu)) in nominated.into_iter().enumerate() {
                    let mut p = pod(&format!("nominated-{i}"), "", priority, cpu * 100, 0, None);
                    p.status.nominated_node_name = "n1".into();
                    all.push(p);
                }
                let pdbs = budgets
                    .into_iter()
                    .map(|(app, allowed)| pdb(json!({"matchLabels": {"app": app}}), allowed))
                    .collect();
                let s = snapshot(vec![n], all, pdbs);
                (s, pod("preemptor", "", HIGH, cpu * 100, mem * 100, None))
            }
        }

        proptest! {
            #[test]
            fn asking_once_chooses_what_asking_per_pod_chooses((s, preemptor) in scene()) {
                let idx = s.node_idx("n1").unwrap();
                let filters =
                    PodFilters::prepare(&s, &preemptor, &SchedulingSettings::default()).unwrap();
                prop_assert!(!filters.counts_pods());
                let once = Preemptor::new(&s, &preemptor, filters.clone(), now())
                    .select_victims(idx);
                let per_pod = Preemptor::new(&s, &preemptor, Tracked(filters), now())
                    .select_victims(idx);
                prop_assert_eq!(once, per_pod);
            }
        }
    }

    /// Victims read from the node's importance order (and merged only
    /// when both groups have some) must be exactly those of the plain
    /// way: sort the lower-priority pods here, give them back, sort the
    /// victims again. Start times around the request's "now", pods not
    /// started yet and equal pods probe the cases where the kept order
    /// cannot be used.
    mod as_plainly_selected {
        use proptest::prelude::*;

        use super::*;
        use crate::cluster::PodChange;

        /// SelectVictimsOnNode as upstream writes it, resources only.
        fn plainly(s: &Snapshot, preemptor: &Pod, idx: NodeIdx, now: Timestamp) -> Option<Victims> {
            let info = &s.nodes()[idx as usize];
            let priority = preemptor.priority();
            let mut potential: Vec<Victim> = info
                .pods
                .summaries()
                .iter()
                .enumerate()
                .filter(|(_, p)| p.priority < priority)
                .map(|(i, p)| Victim {
                    position: i as u32,
                    priority: p.priority,
                    start_time: p.start_time.unwrap_or(now),
                    breaks_pdb: false,
                })
                .collect();
            potential.sort_by_key(Victim::importance);
            let mut resources = NodeResources::new(
                &info.node.status.allocatable,
                info.pods.requested(),
                info.pods.len(),
            );
            for pod in nominated_against(s, preemptor, info.node.name()) {
                resources.add_pod(&assigned_pod_requests(pod, s.requests_rule()));
            }
            let summaries = info.pods.summaries();
            for v in &potential {
                resources.remove_pod(&summaries[v.position as usize].requests);
            }
            let request = crate::model::requests::pod_requests(preemptor);
            if potential.is_empty() || resources.fits(&request).is_err() {
                return None;
            }
            let ordered: Vec<(&Pod, &[u32])> = potential
                .iter()
                .map(|v| {
                    (
                        &*info.pods[v.position as usize],
                        info.pdbs.of(v.position as usize),
                    )
                })
                .collect();
            let violating = violations(s.pdbs(), &ordered);
            let mut victims = Victims::default();
            for breaks_pdb in [true, false] {
                for (v, _) in potential
                    .iter()
                    .zip(&violating)
                    .filter(|(_, b)| **b == breaks_pdb)
                {
                    let requests = &summaries[v.position as usize].requests;
                    resources.add_pod(requests);
                    if !resources.has_room(&request) {
                        resources.remove_pod(requests);
                        victims.pods.push(Victim { breaks_pdb, ..*v });
                        victims.num_pdb_violations += usize::from(breaks_pdb);
                    }
                }
            }
            victims.pods.sort_by_key(Victim::importance);
            (!victims.pods.is_empty()).then_some(victims)
        }

        /// Seconds from 2024-01-01 to [`now`], where the pods' start times
        /// are counted from.
        fn now_offset() -> i64 {
            now().as_second() - 1_704_067_200
        }

        prop_compose! {
            fn existing()(
                priority in prop::sample::select(vec![NEG, LOW, MID]),
                cpu in 0..6i64,
                start in prop::option::weighted(0.8, -3..3i64),
                app in prop::sample::select(vec!["db", "web", "other"]),
            ) -> (i32, i64, Option<i64>, &'static str) {
                (priority, cpu * 100, start, app)
            }
        }

        prop_compose! {
            fn scene()(
                pods in prop::collection::vec(existing(), 0..14),
                budgets in prop::collection::vec(
                    (prop::sample::select(vec!["db", "web"]), 0..3i32), 0..3),
                nominated in prop::collection::vec(0..4i64, 0..2),
                preemptor_priority in prop::sample::select(vec![LOW, MID, HIGH]),
                cpu in 0..11i64,
                removed in prop::collection::vec(any::<bool>(), 14),
                added in prop::collection::vec(existing(), 0..4),
            ) -> (Snapshot, Pod) {
                let at = |(i, (priority, cpu, start, app)): (usize, (i32, i64, Option<i64>, &str))| {
                    with_labels(
                        pod(&format!("p{i}"), "n1", priority, cpu, 0, start.map(|s| now_offset() + s)),
                        &[("app", app)],
                    )
                };
                let mut all: Vec<Pod> = pods.into_iter().enumerate().map(at).collect();
                for (i, cpu) in nominated.into_iter().enumerate() {
                    let mut p = pod(&format!("nominated-{i}"), "", HIGH + 1, cpu * 100, 0, None);
                    p.status.nominated_node_name = "n1".into();
                    all.push(p);
                }
                let pdbs = budgets
                    .into_iter()
                    .map(|(app, allowed)| pdb(json!({"matchLabels": {"app": app}}), allowed))
                    .collect();
                let mut s = snapshot(vec![node("n1", 1000, 1000)], all.clone(), pdbs);
                // Some pods gone and some new through a watch-like change,
                // so the kept order is also the one a change builds.
                let mut changes: Vec<PodChange> = all
                    .iter()
                    .zip(&removed)
                    .filter(|(p, r)| **r && !p.spec.node_name.is_empty())
                    .map(|(p, _)| PodChange::delete(&p.metadata.namespace, &p.metadata.name))
                    .collect();
                changes.extend(
                    added
                        .into_iter()
                        .enumerate()
                        .map(|(i, e)| PodChange::upsert(Arc::new(at((100 + i, e))))),
                );
                s = s.with_pod_changes(&changes);
                (s, pod("preemptor", "", preemptor_priority, cpu * 100, 0, None))
            }
        }

        proptest! {
            #[test]
            fn kept_order_chooses_what_sorting_here_chooses(
                (s, preemptor) in scene(),
                now_shift in -2..2i64,
            ) {
                let now = Timestamp::from_second(now().as_second() + now_shift).unwrap();
                let idx = s.node_idx("n1").unwrap();
                let kept = Preemptor::new(&s, &preemptor, NoFilters, now).select_victims(idx);
                prop_assert_eq!(kept.ok(), plainly(&s, &preemptor, idx, now));
            }

            #[test]
            fn kept_potential_victims_are_those_sorted_here(
                (s, preemptor) in scene(),
                now_shift in -2..2i64,
            ) {
                let now = Timestamp::from_second(now().as_second() + now_shift).unwrap();
                let info = s.node("n1").unwrap();
                let p = Preemptor::new(&s, &preemptor, NoFilters, now);
                prop_assert_eq!(p.potential_victims(info), p.potential_victims_sorted_here(info));
            }
        }
    }

    mod importance {
        use proptest::prelude::*;

        use super::*;

        fn victim() -> impl Strategy<Value = Victim> {
            let priority = prop_oneof![
                any::<i32>(),
                prop::sample::select(vec![i32::MIN, -1, 0, 1, i32::MAX]),
            ];
            let second = prop_oneof![
                Timestamp::MIN.as_second()..=Timestamp::MAX.as_second(),
                -2..2i64,
                1_704_067_200..1_704_067_203i64,
            ];
            let nano = prop_oneof![-999_999_999..1_000_000_000i32, Just(0)];
            (priority, second, nano).prop_map(|(priority, second, nano)| Victim {
                position: 0,
                priority,
                start_time: Timestamp::new(second, nano)
                    .unwrap_or(Timestamp::from_second(second).unwrap()),
                breaks_pdb: false,
            })
        }

        proptest! {
            #[test]
            fn one_number_orders_as_priority_then_start(a in victim(), b in victim()) {
                let upstream = |v: &Victim| (std::cmp::Reverse(v.priority), v.start_time);
                prop_assert_eq!(a.importance().cmp(&b.importance()), upstream(&a).cmp(&upstream(&b)));
            }
        }
    }
}
