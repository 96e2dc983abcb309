//! The extender's prioritize: each score plugin's upstream 0..100
//! normalized score, a weighted sum, scaled to the extender's 0..10.
//!
//! Scaling rule. kube-scheduler multiplies an extender score by
//! `100 / MaxExtenderPriority` and by the extender's weight, so 0..10 is all
//! the resolution we have. Let `total = Σ weight × score` over the plugins
//! that apply to the pod and `max = Σ weight × 100` over the same plugins.
//! Each node's ideal score is `10 × total / max` (its absolute standing, so
//! equally good nodes stay equal and a perfect node gets 10). Rounding can
//! give two different totals the same integer; to keep distinct preferences
//! distinct, the distinct totals, in ascending order, get the nearest
//! strictly increasing integers in 0..=10: each is raised to one above its
//! predecessor if needed, then capped so the ones above it still fit. This
//! only ever moves a score by the minimum needed, keeps the order of all
//! nodes, and is exact whenever rounding already separates them. With more
//! than 11 distinct totals collisions are unavoidable and plain rounding
//! is used.

use crate::cluster::Snapshot;
use crate::config::SchedulingSettings;
use crate::model::Pod;

use super::domains::NodeAt;
use super::node_affinity;
use super::pod_affinity;
use super::topology_spread;

/// The extender protocol's MaxExtenderPriority.
pub const MAX_EXTENDER_PRIORITY: i64 = 10;

/// One candidate's scores: each plugin's normalized 0..100 score (`None`
/// when the plugin does not apply to the pod) and the final 0..10.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeScores {
    pub node_affinity: Option<i64>,
    pub pod_affinity: Option<i64>,
    pub topology_spread: Option<i64>,
    pub total: i64,
}

/// Scores for `candidates`, in their order. `Err` when the pod's preferred
/// terms or selectors are invalid; the message names the rule.
pub fn prioritize(
    snapshot: &Snapshot,
    pod: &Pod,
    candidates: &[NodeAt<'_>],
    settings: &SchedulingSettings,
) -> Result<Vec<NodeScores>, String> {
    let node_affinity = node_affinity::prepare_score(pod)
        .map_err(|e| format!("NodeAffinity: {e}"))?
        .map(|s| {
            let raw: Vec<i64> = candidates.iter().map(|n| s.score(n.node())).collect();
            node_affinity::NodeAffinityScore::normalize(&raw)
        });
    let pod_affinity =
        pod_affinity::prepare_score(snapshot, pod, settings.hard_pod_affinity_weight.0)
            .map_err(|e| format!("InterPodAffinity: {e}"))?
            .map(|s| {
                let raw: Vec<i64> = candidates.iter().map(|&n| s.score(n)).collect();
                pod_affinity::normalize(&raw)
            });
    let spread = topology_spread::prepare_score(
        snapshot,
        pod,
        candidates,
        &settings.default_spread_constraints,
    )
    .map_err(|e| format!("PodTopologySpread: {e}"))?
    .map(|s| {
        let raw: Vec<i64> = candidates.iter().map(|&n| s.score(n)).collect();
        s.normalize(candidates, &raw)
    });

    let w = &settings.weights;
    let plugins = [
        (w.node_affinity, node_affinity.as_deref()),
        (w.inter_pod_affinity, pod_affinity.as_deref()),
        (w.pod_topology_spread, spread.as_deref()),
    ];
    let max: i64 = plugins
        .iter()
        .filter(|(_, s)| s.is_some())
        .map(|(w, _)| w * 100)
        .sum();
    let totals: Vec<i64> = (0..candidates.len())
        .map(|i| {
            plugins
                .iter()
                .filter_map(|(w, s)| s.map(|s| w * s[i]))
                .sum()
        })
        .collect();
    let finals = scale_to_extender(&totals, max);
    let at = |s: &Option<Vec<i64>>, i: usize| s.as_ref().map(|s| s[i]);
    Ok((0..candidates.len())
        .map(|i| NodeScores {
            node_affinity: at(&node_affinity, i),
            pod_affinity: at(&pod_affinity, i),
            topology_spread: at(&spread, i),
            total: finals[i],
        })
        .collect())
}

/// Weighted totals (each in 0..=max) to 0..=10, as the module doc says.
pub fn scale_to_extender(totals: &[i64], max: i64) -> Vec<i64> {
    if max <= 0 {
        return vec![0; totals.len()];
    }
    let ideal = |t: i64| ((MAX_EXTENDER_PRIORITY * t) as f64 / max as f64).round() as i64;
    let mut distinct: Vec<i64> = totals.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    let k = distinct.len() as i64;
    let mut scaled: Vec<i64> = distinct.iter().map(|&t| ideal(t)).collect();
    if k <= MAX_EXTENDER_PRIORITY + 1 {
        let mut floor = -1;
        for s in scaled.iter_mut() {
            *s = (*s).max(floor + 1);
            floor = *s;
        }
        for (j, s) in scaled.iter_mut().enumerate() {
            *s = (*s).min(MAX_EXTENDER_PRIORITY - (k - 1 - j as i64));
        }
    }
    totals
        .iter()
        .map(|t| {
            let j = distinct.binary_search(t).unwrap_or(0);
            scaled[j].clamp(0, MAX_EXTENDER_PRIORITY)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::cluster::ClusterObjects;
    use crate::policy::topology_spread::tests::existing;
    use crate::testing::make_node;

    #[test]
    fn equal_totals_keep_their_absolute_standing() {
        assert_eq!(scale_to_extender(&[600, 600], 600), [10, 10]);
        assert_eq!(scale_to_extender(&[300, 300], 600), [5, 5]);
        assert_eq!(scale_to_extender(&[0, 0], 0), [0, 0]);
    }

    #[test]
    fn distinct_totals_that_round_alike_are_kept_apart() {
        // 95% and 100% both round to 10: the lower one moves down by one.
        assert_eq!(scale_to_extender(&[570, 600], 600), [9, 10]);
        // 1% and 2% both round to 0: the higher one moves up by one.
        assert_eq!(scale_to_extender(&[6, 12, 600], 600), [0, 1, 10]);
    }

    #[test]
    fn more_than_eleven_distinct_totals_round_plainly() {
        let totals: Vec<i64> = (0..=20).map(|i| i * 5).collect();
        let got = scale_to_extender(&totals, 100);
        assert_eq!(got[0], 0);
        assert_eq!(got[20], 10);
        assert!(got.windows(2).all(|w| w[0] <= w[1]));
    }

    proptest! {
        #[test]
        fn scaling_keeps_order_range_and_distinctness(totals in prop::collection::vec(0i64..=600, 1..30)) {
            let got = scale_to_extender(&totals, 600);
            let distinct: std::collections::BTreeSet<_> = totals.iter().collect();
            for (i, a) in totals.iter().enumerate() {
                prop_assert!((0..=10).contains(&got[i]));
                for (j, b) in totals.iter().enumerate() {
                    if a < b {
                        prop_assert!(got[i] <= got[j]);
                        if distinct.len() <= 11 {
                            prop_assert!(got[i] < got[j]);
                        }
                    }
                    if a == b {
                        prop_assert_eq!(got[i], got[j]);
                    }
                }
            }
        }
    }

    #[test]
    fn weighted_sum_of_plugins_that_apply() {
        let nodes = vec![
            make_node("a")
                .hostname()
                .labels(&[("zone", "z1"), ("ssd", "yes")])
                .obj(),
            make_node("b").hostname().label("zone", "z2").obj(),
        ];
        let s = Snapshot::build(ClusterObjects {
            nodes: nodes.clone(),
            pods: vec![existing("e1", "a", json!({"app": "web"}))],
            ..Default::default()
        });
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "default", "labels": {"app": "web"}},
            "spec": {
                "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 10, "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}}]}},
                "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                    "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "web"}}}]
            }
        }))
        .unwrap();
        let refs: Vec<NodeAt<'_>> = nodes.iter().map(NodeAt::from).collect();
        let got = prioritize(&s, &pod, &refs, &SchedulingSettings::default()).unwrap();
        // a: affinity 100, spread 0 (one pod there); b: affinity 0, spread 100.
        assert_eq!(got[0].node_affinity, Some(100));
        assert_eq!(got[1].topology_spread, Some(100));
        assert_eq!(got[0].topology_spread, Some(0));
        assert_eq!(got[0].pod_affinity, None);
        assert_eq!(got[0].total, 5);
        assert_eq!(got[1].total, 5);

        let mut heavier = SchedulingSettings::default();
        heavier.weights.node_affinity = 6;
        let got = prioritize(&s, &pod, &refs, &heavier).unwrap();
        assert!(got[0].total > got[1].total, "{got:?}");
    }

    #[test]
    fn invalid_preferred_term_is_an_error_naming_the_rule() {
        let pod: Pod = serde_json::from_value(json!({"spec": {"affinity": {"nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["x"]}]}}]}}}}))
        .unwrap();
        let err = prioritize(
            &Snapshot::default(),
            &pod,
            &[],
            &SchedulingSettings::default(),
        )
        .unwrap_err();
        assert!(err.starts_with("NodeAffinity:"), "{err}");
    }
}
