//! Which pods a scale-in removes, and why.
//!
//! [`scale_in`] ranks the active pods as a ReplicaSet controller does
//! ([`order`], ranks from [`rank`]) and answers the first `count`, each
//! with the rule that put it ahead of the next pod. With `preserve_spread`
//! it instead picks victims so that no hard topology spread constraint ends
//! above its maxSkew (and skews end as small as possible), greedily and,
//! where greedy ends above a maxSkew, by a bounded exhaustive search (a
//! choice the search cannot reach is reported with its skews), using the
//! controller's order only to break ties, and says which
//! pod-deletion-cost annotations would make the controller pick exactly
//! those pods.

pub mod keep_spread;
pub mod order;
pub mod plan;
pub mod rank;
pub mod spread;

use std::collections::VecDeque;

use foldhash::HashMap;
use jiff::Timestamp;

use crate::cluster::Snapshot;
use crate::config::scheduling::DefaultSpreadConstraints;
use crate::model::Pod;

use order::{Ranked, compare};
use spread::SpreadCounts;

/// A pod to delete and the rule that put it before the next pod.
#[derive(Debug, Clone, PartialEq)]
pub struct Victim<'a> {
    pub pod: &'a Pod,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ScaleIn<'a> {
    pub victims: Vec<Victim<'a>>,
    /// Present when spread preservation was asked for.
    pub spread: Option<SpreadPlan<'a>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SpreadPlan<'a> {
    pub constraints: Vec<SkewChange>,
    /// Annotations to set so the controller deletes exactly the victims.
    pub deletion_costs: Vec<CostChange<'a>>,
    /// False when no deletion cost can get there, because a kept pod comes
    /// first by a rule costs cannot override (unassigned, phase, readiness).
    pub costs_sufficient: bool,
}

/// A hard constraint's skew now, after the controller's own choice, and
/// after ours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkewChange {
    pub topology_key: String,
    pub max_skew: i64,
    pub before: i64,
    pub after_upstream: i64,
    pub after: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CostChange<'a> {
    pub pod: &'a Pod,
    pub cost: i32,
}

/// What to remove and how to choose.
#[derive(Debug, Clone, Copy)]
pub struct ScaleInRequest<'s> {
    pub count: usize,
    /// `None`: the controller's order. `Some(defaults)`: preserve topology
    /// spread, with the cluster's default constraints for pods without
    /// their own.
    pub preserve_spread: Option<&'s DefaultSpreadConstraints>,
    pub now: Timestamp,
}

/// The first `count` active pods of `pods` in deletion order (all of them,
/// still ordered, when `count` covers them).
pub fn scale_in<'a>(snapshot: &Snapshot, pods: &[&'a Pod], req: ScaleInRequest) -> ScaleIn<'a> {
    let now = req.now;
    let active: Vec<&Pod> = pods
        .iter()
        .copied()
        .filter(|p| rank::is_active(p))
        .collect();
    let ranks = rank::ranks(snapshot, &active);
    let mut ordered: Vec<Ranked<'a>> = active
        .iter()
        .zip(ranks)
        .map(|(p, r)| Ranked::new(p, r, now))
        .collect();
    order::sort(&mut ordered);
    let count = req.count.min(ordered.len());

    let Some(defaults) = req.preserve_spread else {
        let positions: Vec<usize> = (0..count).collect();
        return ScaleIn {
            victims: upstream_victims(&ordered, &positions),
            spread: None,
        };
    };
    let in_order: Vec<&Pod> = ordered.iter().map(|r| r.pod).collect();
    let mut constraints = spread::hard_constraints(snapshot, &in_order, defaults);
    let before: Vec<i64> = constraints.iter().map(SpreadCounts::skew).collect();
    let after_upstream: Vec<i64> = constraints
        .iter()
        .map(|c| {
            let mut c = c.clone();
            (0..count).for_each(|i| c.remove(i));
            c.skew()
        })
        .collect();
    let (picked, victims) = if constraints.is_empty() {
        let positions: Vec<usize> = (0..count).collect();
        let victims = upstream_victims(&ordered, &positions);
        (positions, victims)
    } else {
        pick_for_spread(&ordered, &mut constraints, count)
    };
    let (deletion_costs, costs_sufficient) = deletion_costs(&ordered, &picked);
    let constraints = constraints
        .iter()
        .enumerate()
        .map(|(i, c)| SkewChange {
            topology_key: c.topology_key.clone(),
            max_skew: c.max_skew,
            before: before[i],
            after_upstream: after_upstream[i],
            after: c.skew(),
        })
        .collect();
    ScaleIn {
        victims,
        spread: Some(SpreadPlan {
            constraints,
            deletion_costs,
            costs_sufficient,
        }),
    }
}

/// Victims at `positions` of the controller's order, each explained
/// against the next pod that stays in that order after it.
fn upstream_victims<'a>(ordered: &[Ranked<'a>], positions: &[usize]) -> Vec<Victim<'a>> {
    positions
        .iter()
        .map(|&i| Victim {
            pod: ordered[i].pod,
            reason: upstream_reason(ordered, i, i + 1),
        })
        .collect()
}

fn upstream_reason(ordered: &[Ranked], i: usize, next: usize) -> String {
    match ordered.get(next) {
        None => "last: no other active pod".into(),
        Some(n) => match compare(&ordered[i], n) {
            Some((_, rule)) => rule.describe(),
            None => format!(
                "tie: no rule tells it from {} (order unspecified)",
                n.pod.metadata.name
            ),
        },
    }
}

/// Score of removing one candidate: smaller is better.
type Score = (i64, Class, i64, i64, usize);

/// Rules 1–3 of the controller's order (see [`Ranked::class`]).
type Class = (bool, u8, bool);

/// Candidates alike for spreading: their domains and their class.
type Signature = (Vec<Option<usize>>, Class);

/// Greedy: at each step remove the candidate that leaves the least excess
/// over maxSkew, then the controller's own classes (unassigned, phase,
/// readiness), then the smallest total skew, then the most crowded domains,
/// then the controller's order. Candidates alike in all but order are
/// grouped so each step looks at one pod per group.
///
/// Greedy can end above a maxSkew where another choice would not (it may
/// spend a removal evening out zones when two nodes both needed one). Then,
/// when the choice is small enough to search ([`SEARCH_LIMIT`]), how many
/// pods to take from each group is searched for exhaustively, and greedy
/// runs again among the pods of the best compliant choice (so order and
/// reasons come out as before).
fn pick_for_spread<'a>(
    ordered: &[Ranked<'a>],
    constraints: &mut [SpreadCounts],
    count: usize,
) -> (Vec<usize>, Vec<Victim<'a>>) {
    let mut groups: HashMap<Signature, VecDeque<usize>> = HashMap::default();
    for (i, r) in ordered.iter().enumerate() {
        let signature: Vec<Option<usize>> = constraints.iter().map(|c| c.domain_of[i]).collect();
        groups
            .entry((signature, r.class()))
            .or_default()
            .push_back(i);
    }
    let mut queues: Vec<VecDeque<usize>> = groups.into_values().collect();
    // Deterministic group order (the map's is not): by first candidate.
    queues.sort_by_key(|q| q.front().copied());
    let mut untouched = constraints.to_vec();
    let greedy = remove_greedily(ordered, constraints, queues.clone(), count);
    if excess(constraints) == 0 {
        return greedy;
    }
    // The search gives back every pod it takes away: `untouched` stays so.
    match compliant_choice(&queues, &mut untouched, count) {
        Some(takes) => {
            constraints.clone_from_slice(&untouched);
            let chosen = queues
                .iter()
                .zip(takes)
                .map(|(q, k)| q.iter().take(k).copied().collect())
                .collect();
            remove_greedily(ordered, constraints, chosen, count)
        }
        None => greedy,
    }
}

/// Choices (pods taken per group) an exhaustive search may look at.
const SEARCH_LIMIT: usize = 20_000;

/// Total skew above maxSkew.
fn excess(constraints: &[SpreadCounts]) -> i64 {
    constraints
        .iter()
        .map(|c| (c.skew() - c.max_skew).max(0))
        .sum()
}

/// How many pods to take from the front of each group so that no
/// constraint ends above its maxSkew, with the smallest total skew (then
/// the earliest in the controller's order); `None` when there is no such
/// choice or more than [`SEARCH_LIMIT`] choices to look at.
fn compliant_choice(
    queues: &[VecDeque<usize>],
    counts: &mut [SpreadCounts],
    count: usize,
) -> Option<Vec<usize>> {
    struct Search<'q> {
        queues: &'q [VecDeque<usize>],
        takes: Vec<usize>,
        best: Option<((i64, usize), Vec<usize>)>,
        looked: usize,
    }
    impl Search<'_> {
        /// Choices for groups `g..` taking `left` pods; false when over
        /// the limit.
        fn walk(&mut self, counts: &mut [SpreadCounts], g: usize, left: usize) -> bool {
            if g == self.queues.len() {
                self.looked += 1;
                if left == 0 && excess(counts) == 0 {
                    let total: i64 = counts.iter().map(SpreadCounts::skew).sum();
                    let order: usize = (self.takes.iter().zip(self.queues))
                        .flat_map(|(&k, q)| q.iter().take(k))
                        .sum();
                    if self.best.as_ref().is_none_or(|(b, _)| (total, order) < *b) {
                        self.best = Some(((total, order), self.takes.clone()));
                    }
                }
                return self.looked <= SEARCH_LIMIT;
            }
            let queue = &self.queues[g];
            let mut within = true;
            let most = left.min(queue.len());
            for k in 0..=most {
                if k > 0 {
                    counts.iter_mut().for_each(|c| c.remove(queue[k - 1]));
                }
                self.takes[g] = k;
                within = self.walk(counts, g + 1, left - k);
                if !within {
                    break;
                }
            }
            for &i in queue.iter().take(self.takes[g]) {
                counts.iter_mut().for_each(|c| c.restore(i));
            }
            self.takes[g] = 0;
            within
        }
    }
    let mut search = Search {
        queues,
        takes: vec![0; queues.len()],
        best: None,
        looked: 0,
    };
    if !search.walk(counts, 0, count) {
        return None;
    }
    search.best.map(|(_, takes)| takes)
}

/// The greedy steps over `queues` (each in the controller's order).
fn remove_greedily<'a>(
    ordered: &[Ranked<'a>],
    constraints: &mut [SpreadCounts],
    mut queues: Vec<VecDeque<usize>>,
    count: usize,
) -> (Vec<usize>, Vec<Victim<'a>>) {
    let mut removed = vec![false; ordered.len()];
    let mut picked = Vec::with_capacity(count);
    let mut victims = Vec::with_capacity(count);
    for _ in 0..count {
        let mut best: Option<(Score, usize)> = None;
        for (q, queue) in queues.iter().enumerate() {
            let Some(&i) = queue.front() else { continue };
            let s = score(ordered, constraints, i);
            if best.as_ref().is_none_or(|(b, _)| s < *b) {
                best = Some((s, q));
            }
        }
        let Some((_, q)) = best else { break };
        let Some(i) = queues[q].pop_front() else {
            break;
        };
        let first = (0..ordered.len()).find(|&j| !removed[j]).unwrap_or(i);
        let reason = if i == first {
            let next = (i + 1..ordered.len())
                .find(|&j| !removed[j])
                .unwrap_or(ordered.len());
            upstream_reason(ordered, i, next)
        } else {
            spread_reason(ordered, constraints, i, first)
        };
        for c in constraints.iter_mut() {
            c.remove(i);
        }
        removed[i] = true;
        picked.push(i);
        victims.push(Victim {
            pod: ordered[i].pod,
            reason,
        });
    }
    (picked, victims)
}

fn score(ordered: &[Ranked], constraints: &mut [SpreadCounts], i: usize) -> Score {
    let (mut excess, mut total, mut crowd) = (0, 0, 0);
    for c in constraints.iter_mut() {
        let skew = c.skew_without(i);
        excess += (skew - c.max_skew).max(0);
        total += skew;
        crowd += c.domain_count(i);
    }
    (excess, ordered[i].class(), total, -crowd, i)
}

/// Why spreading chose candidate `i` over `first`, the controller's choice.
fn spread_reason(
    ordered: &[Ranked],
    constraints: &mut [SpreadCounts],
    i: usize,
    first: usize,
) -> String {
    let mut better = Vec::new();
    for c in constraints.iter_mut() {
        let (mine, theirs) = (c.skew_without(i), c.skew_without(first));
        if mine < theirs {
            better.push(format!(
                "{} skew {mine} instead of {theirs} (maxSkew {})",
                c.topology_key, c.max_skew
            ));
        }
    }
    if better.is_empty() {
        let crowded: Vec<String> = constraints
            .iter()
            .filter_map(|c| {
                c.domain_name(i).map(|d| {
                    format!(
                        "{}={d} holds {} matching pods",
                        c.topology_key,
                        c.domain_count(i)
                    )
                })
            })
            .collect();
        return format!(
            "topologySpread: taken from the most crowded domain ({}) before {}",
            crowded.join(", "),
            ordered[first].pod.metadata.name
        );
    }
    format!(
        "topologySpread: leaves {} where removing {} would not",
        better.join(", "),
        ordered[first].pod.metadata.name
    )
}

/// Deletion costs that move `picked` ahead of every other pod: one below
/// the cheapest kept pod. Checked by re-running the controller's order.
fn deletion_costs<'a>(ordered: &[Ranked<'a>], picked: &[usize]) -> (Vec<CostChange<'a>>, bool) {
    let mut is_victim = vec![false; ordered.len()];
    picked.iter().for_each(|&i| is_victim[i] = true);
    if picked.iter().all(|&i| i < picked.len()) {
        return (Vec::new(), true);
    }
    let cheapest_kept = ordered
        .iter()
        .zip(&is_victim)
        .filter(|(_, v)| !**v)
        .map(|(r, _)| i64::from(r.cost))
        .min()
        .unwrap_or(0);
    let target = (cheapest_kept - 1).max(i64::from(i32::MIN)) as i32;
    let mut changes = Vec::new();
    let mut simulated: Vec<Ranked<'a>> = ordered.to_vec();
    for (r, &victim) in simulated.iter_mut().zip(&is_victim) {
        let want = if victim {
            target
        } else if r.cost <= target {
            // Only when the cheapest kept pod is already at i32::MIN.
            target + 1
        } else {
            r.cost
        };
        if want != r.cost {
            r.cost = want;
            changes.push(CostChange {
                pod: r.pod,
                cost: want,
            });
        }
    }
    let victims: Vec<&Pod> = picked.iter().map(|&i| ordered[i].pod).collect();
    order::sort(&mut simulated);
    let sufficient = simulated[..picked.len()]
        .iter()
        .all(|r| victims.iter().any(|v| std::ptr::eq(*v, r.pod)));
    (changes, sufficient)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cluster::ClusterObjects;
    use crate::model::Node;
    use crate::testing::make_node;
    use serde_json::json;

    pub(crate) fn now() -> Timestamp {
        "2024-06-01T00:00:00Z".parse().unwrap()
    }

    static DEFAULTS: std::sync::LazyLock<DefaultSpreadConstraints> =
        std::sync::LazyLock::new(DefaultSpreadConstraints::default);

    fn req(count: usize, preserve_spread: bool) -> ScaleInRequest<'static> {
        ScaleInRequest {
            count,
            preserve_spread: preserve_spread.then_some(&*DEFAULTS),
            now: now(),
        }
    }

    pub(crate) fn node(name: &str, zone: &str) -> Node {
        make_node(name).hostname().zone(zone).obj()
    }

    /// A ready running pod of ReplicaSet `web-rs`, spread by zone with
    /// maxSkew 1; `created` in seconds after 2024-01-01 (newer goes first).
    pub(crate) fn web(name: &str, node: &str, created: i64) -> Pod {
        serde_json::from_value(web_json(name, node, created)).unwrap()
    }

    /// [`web`] as the JSON object, for tests that add to it.
    pub(crate) fn web_json(name: &str, node: &str, created: i64) -> serde_json::Value {
        json!({
            "metadata": {"name": name, "namespace": "shop", "uid": format!("uid-{name}"),
                "labels": {"app": "web"},
                "creationTimestamp": Timestamp::from_second(1_704_067_200 + created).unwrap().to_string(),
                "ownerReferences": [{"kind": "ReplicaSet", "name": "web-rs", "controller": true}]},
            "spec": {"nodeName": node, "topologySpreadConstraints": [{
                "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}}}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True",
                "lastTransitionTime": "2020-01-01T00:00:00Z"}]}
        })
    }

    fn cluster(pods: &[Pod]) -> Snapshot {
        Snapshot::build(ClusterObjects {
            nodes: vec![
                node("a1", "a"),
                node("a2", "a"),
                node("b1", "b"),
                node("c1", "c"),
            ],
            pods: pods.to_vec(),
            ..Default::default()
        })
    }

    fn names<'a>(s: &'a ScaleIn) -> Vec<&'a str> {
        s.victims
            .iter()
            .map(|v| v.pod.metadata.name.as_str())
            .collect()
    }

    /// Zone a holds 3 pods (two crowded on a1), b and c one each. The
    /// controller deletes by rank (a1 first) then newest.
    fn workload() -> Vec<Pod> {
        vec![
            web("a-old", "a1", 10),
            web("a-new", "a1", 5_000_000),
            web("a2-pod", "a2", 20),
            web("b-newest", "b1", 9_000_000),
            web("c-newer", "c1", 8_000_000),
        ]
    }

    #[test]
    fn upstream_order_with_reasons() {
        let pods = workload();
        let s = cluster(&pods);
        let refs: Vec<&Pod> = pods.iter().collect();
        let out = scale_in(&s, &refs, req(3, false));
        assert_eq!(names(&out), ["a-new", "a-old", "b-newest"]);
        assert_eq!(out.victims[0].reason, "creationTime: created more recently");
        assert_eq!(
            out.victims[1].reason,
            "rank: 2 related pods on its node > 1"
        );
        assert!(out.spread.is_none());
    }

    /// A ReplicaSet no Deployment owns: its pods all rank 0
    /// (upstream `getReplicaSetsWithSameController` finds nothing), so the
    /// pod ready most recently goes, not one of the two sharing n1.
    #[test]
    fn a_standalone_replica_set_deletes_the_most_recently_ready_pod() {
        let ready_ago = |name: &str, node: &str, seconds: i64| -> Pod {
            let mut p = web(name, node, 0);
            p.metadata.owner_references[0].uid = "uid-web".into();
            p.status.conditions[0].last_transition_time =
                Some(now() - jiff::SignedDuration::from_secs(seconds));
            p
        };
        let pods = vec![
            ready_ago("a", "a1", 3_600),
            ready_ago("b", "a1", 7_200),
            ready_ago("c", "b1", 600),
        ];
        let web_rs: crate::model::SelectorOwner = serde_json::from_value(json!({
            "metadata": {"name": "web-rs", "namespace": "shop", "uid": "uid-web"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}}
        }))
        .unwrap();
        let s = Snapshot::build(ClusterObjects {
            nodes: vec![node("a1", "a"), node("b1", "b")],
            pods: pods.clone(),
            replica_sets: vec![web_rs],
            ..Default::default()
        });
        let refs: Vec<&Pod> = pods.iter().collect();
        let out = scale_in(&s, &refs, req(1, false));
        assert_eq!(names(&out), ["c"]);
        assert_eq!(out.victims[0].reason, "readyTime: ready more recently");
    }

    #[test]
    fn count_above_the_number_of_pods_returns_all_still_ordered() {
        let pods = workload();
        let s = cluster(&pods);
        let refs: Vec<&Pod> = pods.iter().collect();
        let out = scale_in(&s, &refs, req(99, false));
        assert_eq!(out.victims.len(), 5);
        assert_eq!(out.victims[4].reason, "last: no other active pod");
    }

    #[test]
    fn inactive_pods_are_not_candidates() {
        let mut pods = workload();
        pods[1].status.phase = "Succeeded".into();
        pods[2].metadata.deletion_timestamp = Some(now());
        let s = cluster(&pods);
        let refs: Vec<&Pod> = pods.iter().collect();
        let out = scale_in(&s, &refs, req(99, false));
        assert_eq!(out.victims.len(), 3);
    }

    #[test]
    fn preserve_spread_keeps_zone_skew_within_max_skew() {
        // Zones a=3, b=1, c=1 (skew 2); two victims can bring it to 0.
        let pods = workload();
        let s = cluster(&pods);
        let refs: Vec<&Pod> = pods.iter().collect();
        let out = scale_in(&s, &refs, req(2, true));
        let plan = out.spread.as_ref().unwrap();
        assert_eq!(plan.constraints[0].before, 2);
        assert_eq!(plan.constraints[0].after, 0, "{plan:?}");
        assert!(plan.costs_sufficient);
    }

    #[test]
    fn preserve_spread_beats_the_controller_order_when_it_would_break_spread() {
        // b and c pods are the newest and on crowded nodes: the controller
        // would delete them first and leave zone a with 3, b and c with 0.
        let pods = vec![
            web("a1-pod", "a1", 10),
            web("a2-pod", "a2", 20),
            web("a2-pod2", "a2", 30),
            web("b-1", "b1", 9_000_000),
            web("b-2", "b1", 9_000_001),
            web("c-1", "c1", 8_000_000),
            web("c-2", "c1", 8_000_001),
        ];
        let s = cluster(&pods);
        let refs: Vec<&Pod> = pods.iter().collect();
        let upstream = scale_in(&s, &refs, req(4, false));
        // b-1/b-2 were created a second apart: same age bucket, smaller UID first.
        assert_eq!(names(&upstream), ["b-1", "b-2", "c-1", "c-2"]);

        let out = scale_in(&s, &refs, req(4, true));
        let plan = out.spread.as_ref().unwrap();
        assert_eq!(plan.constraints[0].after_upstream, 3);
        assert_eq!(
            plan.constraints[0].after,
            0,
            "a=1, b=1, c=1: {:?}",
            names(&out)
        );
        assert!(
            out.victims
                .iter()
                .any(|v| v.reason.starts_with("topologySpread:"))
        );
        // Cheapest kept pod costs 0, so victims get -1 and nothing else changes.
        assert!(plan.costs_sufficient);
        assert_eq!(plan.deletion_costs.len(), 4);
        assert!(plan.deletion_costs.iter().all(|c| c.cost == -1));
    }

    #[test]
    fn deletion_costs_cannot_overcome_readiness() {
        // The controller deletes the not-ready pod in the sparse zone before
        // it reads any cost; spread wants a pod from the crowded zone.
        let mut pods = vec![
            web("a-1", "a1", 10),
            web("a-2", "a2", 20),
            web("b-1", "b1", 30),
            web("c-1", "c1", 40),
        ];
        pods[3].status.conditions[0].status = "False".into();
        let s = cluster(&pods);
        let refs: Vec<&Pod> = pods.iter().collect();
        let out = scale_in(&s, &refs, req(1, true));
        // Removing c-1 (not ready) leaves a=2, c=0: skew 2 > 1; spread wins.
        assert_ne!(names(&out), ["c-1"]);
        assert!(!out.spread.unwrap().costs_sufficient);
    }

    #[test]
    fn preserve_spread_without_constraints_is_the_controller_order() {
        let mut pods = workload();
        for p in &mut pods {
            p.spec.topology_spread_constraints.clear();
        }
        let s = cluster(&pods);
        let refs: Vec<&Pod> = pods.iter().collect();
        let plain = scale_in(&s, &refs, req(2, false));
        let spread = scale_in(&s, &refs, req(2, true));
        assert_eq!(plain.victims, spread.victims);
        let plan = spread.spread.unwrap();
        assert!(
            plan.constraints.is_empty() && plan.deletion_costs.is_empty() && plan.costs_sufficient
        );
    }
}
