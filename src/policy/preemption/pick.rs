//! pickOneNodeForPreemption: the node kube-scheduler would choose among
//! candidates. Each criterion keeps only the best-scoring candidates; the
//! first one left alone wins, else the first remaining one.

use jiff::Timestamp;

use super::Victims;

/// Index of the chosen node among the nodes' victims, `None` when there
/// are none.
pub fn pick_one_node(candidates: &[&Victims]) -> Option<usize> {
    let mut left: Vec<usize> = (0..candidates.len()).collect();
    // Higher score is better for every criterion.
    let criteria: [&dyn Fn(&Victims) -> i128; 5] = [
        &|v| -(v.num_pdb_violations as i128),
        &|v| -i128::from(highest_priority(v)),
        // Shift every priority by 2^31 so all terms are positive: more
        // victims always cost more, even at negative priorities.
        &|v| {
            -v.pods
                .iter()
                .map(|p| i128::from(p.priority) + (1i128 << 31))
                .sum::<i128>()
        },
        &|v| -(v.pods.len() as i128),
        &|v| earliest_start_of_most_important(v).map_or(i128::MIN, |t| t.as_nanosecond()),
    ];
    for score in criteria {
        if left.len() <= 1 {
            break;
        }
        let best = left.iter().map(|&i| score(candidates[i])).max()?;
        left.retain(|&i| score(candidates[i]) == best);
    }
    left.first().copied()
}

/// Priority of the most important victim (victims are sorted).
fn highest_priority(v: &Victims) -> i32 {
    v.pods.first().map_or(i32::MIN, |p| p.priority)
}

/// Earliest start among the victims that have the highest priority.
fn earliest_start_of_most_important(v: &Victims) -> Option<Timestamp> {
    let top = highest_priority(v);
    v.pods
        .iter()
        .filter(|p| p.priority == top)
        .map(|p| p.start_time)
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::preemption::Victim;

    /// A node's victims as (priority, start seconds after 2024-01-01).
    fn cand(node: &str, victims: &[(i32, i64)], pdb: usize) -> (String, Victims) {
        let victims = Victims {
            pods: victims
                .iter()
                .enumerate()
                .map(|(i, &(priority, start))| Victim {
                    position: i as u32,
                    priority,
                    start_time: Timestamp::from_second(1_704_067_200 + start).unwrap(),
                    breaks_pdb: false,
                })
                .collect(),
            num_pdb_violations: pdb,
        };
        (node.to_string(), victims)
    }

    fn pick(cands: &[(String, Victims)]) -> &str {
        let victims: Vec<&Victims> = cands.iter().map(|(_, v)| v).collect();
        &cands[pick_one_node(&victims).unwrap()].0
    }

    #[test]
    fn no_candidates_means_no_node() {
        assert_eq!(pick_one_node(&[]), None);
    }

    #[test]
    fn fewest_pdb_violations_wins_first() {
        let c = [cand("a", &[(0, 1)], 1), cand("b", &[(10, 1), (10, 1)], 0)];
        assert_eq!(pick(&c), "b");
    }

    #[test]
    fn node_with_min_highest_priority_pod_is_picked() {
        let c = [
            cand("a", &[(100, 1), (0, 1)], 0),
            cand("b", &[(50, 1), (50, 1), (50, 1)], 0),
        ];
        assert_eq!(pick(&c), "b");
    }

    #[test]
    fn when_highest_priorities_are_the_same_minimum_sum_of_priorities_is_picked() {
        let c = [
            cand("a", &[(100, 1), (50, 1)], 0),
            cand("b", &[(100, 1), (10, 1)], 0),
        ];
        assert_eq!(pick(&c), "b");
    }

    #[test]
    fn sum_of_adjusted_priorities_counts_more_negative_victims_as_more() {
        // Raw sums: a = -10 + -10 = -20 < b = -10; shifted, two victims cost more.
        let c = [
            cand("a", &[(-10, 1), (-10, 1)], 0),
            cand("b", &[(-10, 1)], 0),
        ];
        assert_eq!(pick(&c), "b");
    }

    #[test]
    fn more_victims_cost_more_in_the_shifted_sum() {
        let c = [cand("a", &[(0, 1), (0, 1)], 0), cand("b", &[(0, 1)], 0)];
        assert_eq!(pick(&c), "b");
    }

    #[test]
    fn fewest_victims_when_shifted_sums_tie() {
        // A victim at i32::MIN adds nothing to the shifted sum.
        let c = [
            cand("a", &[(10, 1), (i32::MIN, 1)], 0),
            cand("b", &[(10, 1)], 0),
        ];
        assert_eq!(pick(&c), "b");
    }

    #[test]
    fn same_priority_same_victims_latest_start_of_top_victims_wins() {
        let c = [
            cand("a", &[(10, 100), (5, 1)], 0),
            cand("b", &[(10, 200), (5, 1)], 0),
            cand("c", &[(10, 50), (5, 300)], 0),
        ];
        assert_eq!(pick(&c), "b");
    }

    #[test]
    fn complete_tie_keeps_the_first() {
        let c = [cand("a", &[(10, 1)], 0), cand("b", &[(10, 1)], 0)];
        assert_eq!(pick(&c), "a");
    }
}
