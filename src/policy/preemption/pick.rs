//! pickOneNodeForPreemption: the node kube-scheduler would choose among
//! candidates. Each criterion keeps only the best-scoring candidates; the
//! first one left alone wins, else the first remaining one.

use jiff::Timestamp;

use super::{Candidate, start_time};

/// Index of the chosen candidate, `None` when there are none.
pub fn pick_one_node(candidates: &[Candidate], now: Timestamp) -> Option<usize> {
    let mut left: Vec<usize> = (0..candidates.len()).collect();
    // Higher score is better for every criterion.
    let criteria: [&dyn Fn(&Candidate) -> i128; 5] = [
        &|c| -(c.victims.num_pdb_violations as i128),
        &|c| -i128::from(highest_priority(c)),
        // Shift every priority by 2^31 so all terms are positive: more
        // victims always cost more, even at negative priorities.
        &|c| {
            -c.victims
                .pods
                .iter()
                .map(|p| i128::from(p.priority()) + (1i128 << 31))
                .sum::<i128>()
        },
        &|c| -(c.victims.pods.len() as i128),
        &|c| earliest_start_of_most_important(c, now).as_nanosecond(),
    ];
    for score in criteria {
        if left.len() <= 1 {
            break;
        }
        let best = left.iter().map(|&i| score(&candidates[i])).max()?;
        left.retain(|&i| score(&candidates[i]) == best);
    }
    left.first().copied()
}

/// Priority of the most important victim (victims are sorted).
fn highest_priority(c: &Candidate) -> i32 {
    c.victims.pods.first().map_or(i32::MIN, |p| p.priority())
}

/// Earliest start among the victims that have the highest priority.
fn earliest_start_of_most_important(c: &Candidate, now: Timestamp) -> Timestamp {
    let top = highest_priority(c);
    c.victims
        .pods
        .iter()
        .filter(|p| p.priority() == top)
        .map(|p| start_time(p, now))
        .min()
        .unwrap_or(now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::preemption::Victims;
    use crate::policy::preemption::testing::*;
    use std::sync::Arc;

    /// Victims as (priority, start seconds).
    fn cand(node: &str, victims: &[(i32, Option<i64>)], pdb: usize) -> Candidate {
        Candidate {
            node: node.into(),
            victims: Victims {
                pods: victims
                    .iter()
                    .enumerate()
                    .map(|(i, (prio, start))| {
                        Arc::new(pod(&format!("{node}-{i}"), node, *prio, 0, 0, *start))
                    })
                    .collect(),
                num_pdb_violations: pdb,
            },
        }
    }

    fn pick(cands: &[Candidate]) -> &str {
        &cands[pick_one_node(cands, now()).unwrap()].node
    }

    #[test]
    fn no_candidates_means_no_node() {
        assert_eq!(pick_one_node(&[], now()), None);
    }

    #[test]
    fn fewest_pdb_violations_wins_first() {
        let c = [
            cand("a", &[(0, Some(1))], 1),
            cand("b", &[(10, Some(1)), (10, Some(1))], 0),
        ];
        assert_eq!(pick(&c), "b");
    }

    #[test]
    fn node_with_min_highest_priority_pod_is_picked() {
        let c = [
            cand("a", &[(100, Some(1)), (0, Some(1))], 0),
            cand("b", &[(50, Some(1)), (50, Some(1)), (50, Some(1))], 0),
        ];
        assert_eq!(pick(&c), "b");
    }

    #[test]
    fn when_highest_priorities_are_the_same_minimum_sum_of_priorities_is_picked() {
        let c = [
            cand("a", &[(100, Some(1)), (50, Some(1))], 0),
            cand("b", &[(100, Some(1)), (10, Some(1))], 0),
        ];
        assert_eq!(pick(&c), "b");
    }

    #[test]
    fn sum_of_adjusted_priorities_counts_more_negative_victims_as_more() {
        // Raw sums: a = -10 + -10 = -20 < b = -10; shifted, two victims cost more.
        let c = [
            cand("a", &[(-10, Some(1)), (-10, Some(1))], 0),
            cand("b", &[(-10, Some(1))], 0),
        ];
        assert_eq!(pick(&c), "b");
    }

    #[test]
    fn more_victims_cost_more_in_the_shifted_sum() {
        let c = [
            cand("a", &[(0, Some(1)), (0, Some(1))], 0),
            cand("b", &[(0, Some(1))], 0),
        ];
        assert_eq!(pick(&c), "b");
    }

    #[test]
    fn fewest_victims_when_shifted_sums_tie() {
        // A victim at i32::MIN adds nothing to the shifted sum.
        let c = [
            cand("a", &[(10, Some(1)), (i32::MIN, Some(1))], 0),
            cand("b", &[(10, Some(1))], 0),
        ];
        assert_eq!(pick(&c), "b");
    }

    #[test]
    fn same_priority_same_victims_latest_start_of_top_victims_wins() {
        let c = [
            cand("a", &[(10, Some(100)), (5, Some(1))], 0),
            cand("b", &[(10, Some(200)), (5, Some(1))], 0),
            cand("c", &[(10, Some(50)), (5, Some(300))], 0),
        ];
        assert_eq!(pick(&c), "b");
    }

    #[test]
    fn a_victim_without_start_time_counts_as_now() {
        let c = [cand("a", &[(10, None)], 0), cand("b", &[(10, Some(1))], 0)];
        assert_eq!(pick(&c), "a");
    }

    #[test]
    fn complete_tie_keeps_the_first() {
        let c = [
            cand("a", &[(10, Some(1))], 0),
            cand("b", &[(10, Some(1))], 0),
        ];
        assert_eq!(pick(&c), "a");
    }
}
