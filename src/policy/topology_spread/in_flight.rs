//! Spread's global minimum with pods in flight (docs/burst-safety.md, next
//! to kube-scheduler's in-tree plugins).
//!
//! A pod in flight is somewhere kube-arbiter does not know yet: on one of
//! the nodes it was answered feasible on, or nowhere (kube-scheduler gave
//! up on it). Left out of the counts, it can only make a domain's count
//! smaller (more permissive) but also the global minimum smaller (stricter).
//! So the permissive filter takes the HIGHEST minimum any placement reaches:
//! a node passes when `max(count − highest, 0) + selfMatch ≤ maxSkew`, which
//! is exactly "some placement of the pods in flight lets this constraint
//! admit the node" (the proof is in docs/burst-safety.md).

use std::collections::BTreeMap;

use crate::cluster::DomainId;

/// The largest `t` such that the pods can be placed (each on one of the
/// domains it `reach`es, or nowhere) so that every registered domain holds
/// at least `t` pods. `histogram`: how many registered domains hold each
/// count (its smallest key is today's minimum); `count`: a reachable
/// domain's count. Raising the minimum by one needs a pod for every unit
/// a domain is short of it, each pod on a domain it reaches: a bipartite
/// matching, small because it can need at most one slot per pod.
pub fn highest_minimum(
    histogram: &BTreeMap<i64, u32>,
    count: impl Fn(DomainId) -> i64,
    reach: &[Vec<DomainId>],
) -> i64 {
    let Some(&min) = histogram.keys().next() else {
        return 0;
    };
    let pods = reach.iter().filter(|r| !r.is_empty()).count();
    let mut reachable: Vec<DomainId> = reach.iter().flatten().copied().collect();
    reachable.sort_unstable();
    reachable.dedup();
    let mut reached = min;
    loop {
        let t = reached + 1;
        let short: u64 = histogram.range(..t).map(|(_, &n)| u64::from(n)).sum();
        if short > pods as u64 {
            return reached;
        }
        let mut slots = Vec::new();
        let mut short_reachable = 0;
        for &d in &reachable {
            let c = count(d);
            if c < t {
                short_reachable += 1;
                slots.extend(std::iter::repeat_n(d, (t - c) as usize).take(pods + 1));
            }
        }
        // A short domain no pod reaches, or more units short than pods.
        if short_reachable < short || slots.len() > pods || !fills(&slots, reach) {
            return reached;
        }
        reached = t;
    }
}

/// Whether every slot (a domain) gets its own pod, each pod on a domain it
/// reaches (Kuhn's augmenting paths).
fn fills(slots: &[DomainId], reach: &[Vec<DomainId>]) -> bool {
    let mut slot_of_pod: Vec<Option<usize>> = vec![None; reach.len()];
    for slot in 0..slots.len() {
        let mut tried = vec![false; reach.len()];
        if !augment(slot, slots, reach, &mut slot_of_pod, &mut tried) {
            return false;
        }
    }
    true
}

fn augment(
    slot: usize,
    slots: &[DomainId],
    reach: &[Vec<DomainId>],
    slot_of_pod: &mut [Option<usize>],
    tried: &mut [bool],
) -> bool {
    for (pod, domains) in reach.iter().enumerate() {
        if tried[pod] || domains.binary_search(&slots[slot]).is_err() {
            continue;
        }
        tried[pod] = true;
        let free = match slot_of_pod[pod] {
            None => true,
            Some(other) => augment(other, slots, reach, slot_of_pod, tried),
        };
        if free {
            slot_of_pod[pod] = Some(slot);
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Domains 0.. with these counts; `reach` per pod (sorted).
    fn highest(counts: &[i64], reach: &[&[DomainId]]) -> i64 {
        let mut histogram = BTreeMap::new();
        for &c in counts {
            *histogram.entry(c).or_insert(0) += 1;
        }
        let reach: Vec<Vec<DomainId>> = reach.iter().map(|r| r.to_vec()).collect();
        highest_minimum(&histogram, |d| counts[d as usize], &reach)
    }

    /// (rule, counts per domain, domains per pod in flight, highest minimum)
    type Case = (
        &'static str,
        &'static [i64],
        &'static [&'static [DomainId]],
        i64,
    );

    #[test]
    fn the_highest_minimum_a_placement_of_the_pods_in_flight_reaches() {
        let cases: [Case; 9] = [
            ("no pod in flight: today's minimum", &[2, 1, 3], &[], 1),
            (
                "one pod on the only smallest domain",
                &[2, 1, 3],
                &[&[1]],
                2,
            ),
            (
                "one pod that cannot reach the smallest domain",
                &[2, 1, 3],
                &[&[0, 2]],
                1,
            ),
            (
                "two smallest domains, one pod: no rise",
                &[1, 1, 3],
                &[&[0, 1]],
                1,
            ),
            (
                "two smallest domains, two pods each reaching both",
                &[1, 1, 3],
                &[&[0, 1], &[0, 1]],
                2,
            ),
            (
                "two pods that can only reach the same domain",
                &[1, 1, 3],
                &[&[0], &[0]],
                1,
            ),
            (
                "a matching has to move the first pod aside",
                &[0, 0, 5],
                &[&[0, 1], &[0]],
                1,
            ),
            (
                "several pods lift one domain twice, then stop at the next",
                &[0, 2, 2],
                &[&[0], &[0], &[0]],
                2,
            ),
            (
                "a pod that reaches nothing counts for nothing",
                &[0, 2],
                &[&[]],
                0,
            ),
        ];
        for (rule, counts, reach, want) in cases {
            assert_eq!(highest(counts, reach), want, "{rule}");
        }
    }

    #[test]
    fn no_registered_domain_has_minimum_zero() {
        assert_eq!(highest_minimum(&BTreeMap::new(), |_| 0, &[vec![0]]), 0);
    }
}
