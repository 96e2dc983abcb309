//! PodEligibleToPreemptOthers: may this pod evict anything at all?
//!
//! No when its preemptionPolicy is `Never`; no while a lower-priority pod on
//! the node it is already nominated to is still terminating because the
//! scheduler preempted it (the earlier preemption is still under way),
//! unless that node has since become hopeless for the pod.

use crate::model::Pod;
use crate::policy::Code;

use super::{NodeFilters, Preemptor};

impl<F: NodeFilters> Preemptor<'_, F> {
    /// `Err` says why the pod may not preempt.
    pub fn eligibility(&self) -> Result<(), String> {
        if self.pod.spec.preemption_policy.as_deref() == Some("Never") {
            return Err("not eligible due to preemptionPolicy=Never.".into());
        }
        let nominated = &self.pod.status.nominated_node_name;
        if nominated.is_empty() {
            return Ok(());
        }
        let Some(info) = self.snapshot.node(nominated) else {
            return Ok(());
        };
        if let Err(f) = self.status_on(info)
            && f.code == Code::UnschedulableAndUnresolvable
        {
            return Ok(());
        }
        let priority = self.priority();
        if info
            .pods
            .iter()
            .any(|p| p.priority() < priority && terminating_by_preemption(p))
        {
            return Err("not eligible due to a terminating pod on the nominated node.".into());
        }
        Ok(())
    }
}

/// Being deleted with a first `DisruptionTarget` condition that says the
/// scheduler preempted it.
fn terminating_by_preemption(pod: &Pod) -> bool {
    pod.is_terminating()
        && pod
            .condition("DisruptionTarget")
            .is_some_and(|c| c.status == "True" && c.reason == "PreemptionByScheduler")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{ClusterObjects, Snapshot};
    use crate::model::pod::PodCondition;
    use crate::policy::preemption::testing::*;

    fn terminating(mut p: Pod, condition: Option<(&str, &str)>) -> Pod {
        p.metadata.deletion_timestamp = Some(now());
        if let Some((status, reason)) = condition {
            p.status.conditions.push(PodCondition {
                type_: "DisruptionTarget".into(),
                status: status.into(),
                reason: reason.into(),
                ..Default::default()
            });
        }
        p
    }

    fn nominated(mut p: Pod, node: &str) -> Pod {
        p.status.nominated_node_name = node.into();
        p
    }

    fn check(preemptor: &Pod, on_node: Vec<Pod>, node_cpu: i64) -> Result<(), String> {
        let s = Snapshot::build(ClusterObjects {
            nodes: vec![node("n1", node_cpu, 1000)],
            pods: on_node,
            ..Default::default()
        });
        Preemptor::new(&s, preemptor, NoFilters, now()).eligibility()
    }

    #[test]
    fn eligibility_table() {
        let by_scheduler = Some(("True", "PreemptionByScheduler"));
        let cases: Vec<(&str, Pod, Vec<Pod>, i64, bool)> = vec![
            (
                "pod with no nominated node is eligible",
                pod("p", "", 100, 100, 0, None),
                vec![],
                1000,
                true,
            ),
            (
                "preemptionPolicy Never is not eligible",
                {
                    let mut p = pod("p", "", 100, 100, 0, None);
                    p.spec.preemption_policy = Some("Never".into());
                    p
                },
                vec![],
                1000,
                false,
            ),
            (
                "nominated node with a lower-priority pod terminating by preemption is not eligible",
                nominated(pod("p", "", 100, 500, 0, None), "n1"),
                vec![terminating(
                    pod("v", "n1", 10, 800, 0, Some(1)),
                    by_scheduler,
                )],
                1000,
                false,
            ),
            (
                "a terminating pod without the DisruptionTarget condition does not block",
                nominated(pod("p", "", 100, 500, 0, None), "n1"),
                vec![terminating(pod("v", "n1", 10, 800, 0, Some(1)), None)],
                1000,
                true,
            ),
            (
                "a DisruptionTarget for another reason does not block",
                nominated(pod("p", "", 100, 500, 0, None), "n1"),
                vec![terminating(
                    pod("v", "n1", 10, 800, 0, Some(1)),
                    Some(("True", "EvictionByEvictionAPI")),
                )],
                1000,
                true,
            ),
            (
                "a terminating pod of equal priority does not block",
                nominated(pod("p", "", 100, 500, 0, None), "n1"),
                vec![terminating(
                    pod("v", "n1", 100, 800, 0, Some(1)),
                    by_scheduler,
                )],
                1000,
                true,
            ),
            (
                "an unresolvable nominated node makes the pod eligible again",
                nominated(pod("p", "", 100, 5000, 0, None), "n1"),
                vec![terminating(
                    pod("v", "n1", 10, 800, 0, Some(1)),
                    by_scheduler,
                )],
                1000,
                true,
            ),
            (
                "a nominated node the view does not know does not block",
                nominated(pod("p", "", 100, 500, 0, None), "elsewhere"),
                vec![terminating(
                    pod("v", "n1", 10, 800, 0, Some(1)),
                    by_scheduler,
                )],
                1000,
                true,
            ),
        ];
        for (name, preemptor, pods, cpu, want) in cases {
            assert_eq!(check(&preemptor, pods, cpu).is_ok(), want, "{name}");
        }
    }
}
