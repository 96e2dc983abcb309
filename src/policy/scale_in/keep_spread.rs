//! Deletion costs that keep topology spread whenever the ReplicaSet
//! controller scales a workload in by any count up to N.
//!
//! The spread-preserving pick ([`super::scale_in`] with `preserve_spread`)
//! chooses N victims greedily, one removal at a time, each leaving the least
//! excess over maxSkew: its order is the plan, and every prefix of it is the
//! greedy pick for that smaller count. The victims get increasing costs
//! below the cheapest kept pod, so the controller's own order deletes them
//! first and in that order. The result is checked by re-running the
//! controller's order with those costs: the skews per count are what the
//! costs guarantee, not what was hoped for.
//!
//! A cost already present on an input pod is the user's (the caller strips
//! the costs kube-arbiter set itself): it is never planned over, and it
//! takes part in the order as the controller reads it.

use jiff::Timestamp;

use super::order::{self, Ranked, deletion_cost};
use super::spread::{SpreadCounts, hard_constraints};
use super::{ScaleInRequest, rank, scale_in};
use crate::config::scheduling::DefaultSpreadConstraints;
use crate::model::Pod;
use crate::model::meta::POD_DELETION_COST;

use crate::cluster::Snapshot;

/// The costs to keep on a workload's pods and what they guarantee.
#[derive(Debug, Clone, PartialEq)]
pub struct CostPlan<'a> {
    /// Pods that should carry a cost set by kube-arbiter; every other pod
    /// should carry none from it.
    pub costs: Vec<(&'a Pod, i32)>,
    /// The first N pods the controller deletes with those costs, in order.
    pub deletion_order: Vec<&'a Pod>,
    /// Each hard constraint with its skew now and after each count.
    pub constraints: Vec<GuaranteedSkew>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuaranteedSkew {
    pub topology_key: String,
    pub max_skew: i64,
    pub now: i64,
    /// `after[k - 1]`: the skew once the controller has deleted k pods.
    pub after: Vec<i64>,
}

impl GuaranteedSkew {
    /// The largest skew any scale-in by 1..=N leaves (`now` when N is 0).
    pub fn worst(&self) -> i64 {
        self.after.iter().copied().max().unwrap_or(self.now)
    }
}

impl CostPlan<'_> {
    /// Whether every scale-in by 1..=N keeps every hard constraint within
    /// its maxSkew.
    pub fn keeps_spread(&self) -> bool {
        self.constraints.iter().all(|c| c.worst() <= c.max_skew)
    }
}

/// The plan for `pods` (one workload's pods, without costs kube-arbiter
/// set) scaled in by up to `max` pods.
pub fn plan_deletion_costs<'a>(
    snapshot: &Snapshot,
    pods: &[&'a Pod],
    max: usize,
    defaults: &DefaultSpreadConstraints,
    now: Timestamp,
) -> CostPlan<'a> {
    let request = |preserve_spread| ScaleInRequest {
        count: max,
        preserve_spread,
        now,
    };
    let spread = scale_in(snapshot, pods, request(Some(defaults)));
    let upstream = scale_in(snapshot, pods, request(None));
    let has_constraints = spread
        .spread
        .as_ref()
        .is_some_and(|p| !p.constraints.is_empty());
    let same = |a: &super::Victim, b: &super::Victim| std::ptr::eq(a.pod, b.pod);
    let needed = has_constraints
        && !(spread.victims.len() == upstream.victims.len()
            && spread
                .victims
                .iter()
                .zip(&upstream.victims)
                .all(|(a, b)| same(a, b)));
    let costs = if needed {
        increasing_costs(pods, &spread.victims)
    } else {
        Vec::new()
    };
    let (deletion_order, constraints) = check(snapshot, pods, &costs, max, defaults, now);
    CostPlan {
        costs,
        deletion_order,
        constraints,
    }
}

/// Costs below the cheapest kept pod, increasing along `victims`, for the
/// victims without a cost of their own.
fn increasing_costs<'a>(pods: &[&'a Pod], victims: &[super::Victim<'a>]) -> Vec<(&'a Pod, i32)> {
    let is_victim = |p: &Pod| victims.iter().any(|v| std::ptr::eq(v.pod, p));
    let cheapest_kept = pods
        .iter()
        .filter(|p| rank::is_active(p) && !is_victim(p))
        .map(|p| i64::from(deletion_cost(p)))
        .min()
        .unwrap_or(0);
    let n = victims.len() as i64;
    victims
        .iter()
        .enumerate()
        .filter(|(_, v)| !v.pod.metadata.annotations.contains_key(POD_DELETION_COST))
        .map(|(i, v)| {
            let cost = (cheapest_kept - n + i as i64).max(i64::from(i32::MIN));
            (v.pod, cost as i32)
        })
        .collect()
}

/// The controller's order with `costs` applied: its first `max` pods, and
/// the skews each count of them leaves.
fn check<'a>(
    snapshot: &Snapshot,
    pods: &[&'a Pod],
    costs: &[(&'a Pod, i32)],
    max: usize,
    defaults: &DefaultSpreadConstraints,
    now: Timestamp,
) -> (Vec<&'a Pod>, Vec<GuaranteedSkew>) {
    let active: Vec<&Pod> = pods
        .iter()
        .copied()
        .filter(|p| rank::is_active(p))
        .collect();
    let mut ordered: Vec<Ranked<'a>> = active
        .iter()
        .zip(rank::ranks(snapshot, &active))
        .map(|(p, r)| {
            let mut ranked = Ranked::new(p, r, now);
            if let Some((_, c)) = costs.iter().find(|(c, _)| std::ptr::eq(*c, *p)) {
                ranked.cost = *c;
            }
            ranked
        })
        .collect();
    order::sort(&mut ordered);
    let in_order: Vec<&'a Pod> = ordered.iter().map(|r| r.pod).collect();
    let count = max.min(in_order.len());
    let mut counts = hard_constraints(snapshot, &in_order, defaults);
    let constraints = counts
        .iter_mut()
        .map(|c: &mut SpreadCounts| {
            let now = c.skew();
            let after = (0..count)
                .map(|i| {
                    c.remove(i);
                    c.skew()
                })
                .collect();
            GuaranteedSkew {
                topology_key: c.topology_key.clone(),
                max_skew: c.max_skew,
                now,
                after,
            }
        })
        .collect();
    (in_order[..count].to_vec(), constraints)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{node, now, web};
    use super::*;
    use crate::cluster::ClusterObjects;

    /// Zones a/b/c hold 4/3/2 pods, one per node; zone c's are the newest,
    /// so the controller alone deletes them first and empties zone c.
    fn uneven() -> (Snapshot, Vec<Pod>) {
        let mut nodes = Vec::new();
        let mut pods = Vec::new();
        for (zone, n, created) in [("a", 4, 10), ("b", 3, 1_000), ("c", 2, 9_000_000)] {
            for i in 0..n {
                let name = format!("{zone}{i}");
                nodes.push(node(&name, zone));
                pods.push(web(&format!("web-{name}"), &name, created + i));
            }
        }
        let snapshot = Snapshot::build(ClusterObjects {
            nodes,
            pods: pods.clone(),
            ..Default::default()
        });
        (snapshot, pods)
    }

    fn plan<'a>(s: &Snapshot, pods: &'a [Pod], max: usize) -> CostPlan<'a> {
        let refs: Vec<&Pod> = pods.iter().collect();
        plan_deletion_costs(s, &refs, max, &DefaultSpreadConstraints::default(), now())
    }

    #[test]
    fn every_scale_in_up_to_n_keeps_max_skew() {
        let (s, pods) = uneven();
        let p = plan(&s, &pods, 4);
        assert_eq!(p.constraints[0].now, 2);
        assert_eq!(p.constraints[0].after, [1, 1, 0, 1], "{p:?}");
        assert!(p.keeps_spread());
        // Increasing costs below the kept pods' 0, one per victim.
        let costs: Vec<i32> = p.costs.iter().map(|(_, c)| *c).collect();
        assert_eq!(costs, [-4, -3, -2, -1]);
        let order: Vec<&str> = p
            .costs
            .iter()
            .map(|(p, _)| p.metadata.name.as_str())
            .collect();
        let deleted: Vec<&str> = p
            .deletion_order
            .iter()
            .map(|p| p.metadata.name.as_str())
            .collect();
        assert_eq!(order, deleted);
    }

    #[test]
    fn no_costs_when_the_controller_order_already_keeps_spread() {
        let (s, mut pods) = uneven();
        // Zone a's pods become the newest: the controller takes them first.
        for (i, p) in pods.iter_mut().take(4).enumerate() {
            p.metadata.creation_timestamp =
                Some(Timestamp::from_second(1_704_067_200 + 20_000_000 + i as i64).unwrap());
        }
        let p = plan(&s, &pods, 1);
        assert!(p.costs.is_empty(), "{p:?}");
        assert!(p.keeps_spread());
    }

    #[test]
    fn a_users_cost_is_never_planned_over_and_is_read_as_the_controller_reads_it() {
        let (s, mut pods) = uneven();
        // The user protects one zone-a pod.
        pods[0]
            .metadata
            .annotations
            .insert(POD_DELETION_COST.into(), "100".into());
        let p = plan(&s, &pods, 2);
        assert!(p.costs.iter().all(|(c, _)| c.metadata.name != "web-a0"));
        assert!(!p.deletion_order.iter().any(|c| c.metadata.name == "web-a0"));
        assert!(p.keeps_spread(), "{p:?}");
    }

    /// The least skew removing `k` pods from zones holding `counts` can
    /// leave: take from the fullest zone each time.
    fn best_skew(mut counts: Vec<i64>, k: usize) -> i64 {
        for _ in 0..k {
            let max = counts.iter_mut().max().unwrap();
            *max -= 1;
        }
        counts.iter().max().unwrap() - counts.iter().min().unwrap()
    }

    /// Random placements and readiness times of ready pods (costs can
    /// then always decide): every count up to N leaves the least skew the
    /// placement allows, as the controller deletes with the planned costs.
    #[test]
    fn every_count_up_to_n_reaches_the_least_skew_the_placement_allows() {
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for case in 0..150 {
            let zones = 2 + next(3) as usize;
            let counts: Vec<i64> = (0..zones).map(|_| 1 + next(6) as i64).collect();
            let mut nodes = Vec::new();
            let mut pods = Vec::new();
            for (z, &n) in counts.iter().enumerate() {
                for i in 0..n {
                    let name = format!("z{z}n{i}");
                    nodes.push(node(&name, &format!("zone-{z}")));
                    let mut p = web(&format!("p-{name}"), &name, next(10_000_000) as i64);
                    p.status.conditions[0].last_transition_time =
                        Some(now() - jiff::SignedDuration::from_hours(1 + next(2_000) as i64));
                    pods.push(p);
                }
            }
            let s = Snapshot::build(ClusterObjects {
                nodes,
                pods: pods.clone(),
                ..Default::default()
            });
            let total = pods.len();
            let max = 1 + next(total as u64 - 1) as usize;
            let p = plan(&s, &pods, max);
            let want: Vec<i64> = (1..=max).map(|k| best_skew(counts.clone(), k)).collect();
            assert_eq!(
                p.constraints[0].after, want,
                "case {case}: zones {counts:?}, N {max}"
            );
        }
    }

    #[test]
    fn the_guarantee_is_checked_not_assumed() {
        // A not-ready pod in zone c goes first whatever the costs say.
        let (s, mut pods) = uneven();
        pods[8].status.conditions[0].status = "False".into();
        let p = plan(&s, &pods, 1);
        assert_eq!(p.deletion_order[0].metadata.name, "web-c1");
        assert_eq!(p.constraints[0].after, [3]);
        assert!(!p.keeps_spread());
    }
}
