//! The closing line of an explanation, worded as kube-scheduler words its
//! FailedScheduling event (`FitError.Error()` in
//! pkg/scheduler/framework/types.go): "0/N nodes are available: " and the
//! failure reasons counted per node, each as "COUNT REASON", sorted as
//! strings (upstream's `sort.Strings`, so "10 …" sorts before "2 …"),
//! joined by ", " and closed by ".". Reasons are counted by upstream's own
//! text: the detail a row carries after it (which pod, which domain) is
//! left out, or 4,500 nodes failing one anti-affinity rule would be 4,500
//! groups.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::policy::{node_affinity, pod_affinity, topology_spread};

/// Upstream's status for nodes DefaultPreemption did not try because they
/// failed a rule no eviction can fix.
pub const PREEMPTION_NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";

/// The rules whose reasons carry a detail after upstream's text and ": ".
const DETAILED: [&str; 5] = [
    pod_affinity::REASON_AFFINITY,
    pod_affinity::REASON_ANTI_AFFINITY,
    pod_affinity::REASON_EXISTING_ANTI_AFFINITY,
    topology_spread::filtering::REASON,
    node_affinity::REASON,
];

/// Upstream's texts of a row's reason: the rule's reason without our
/// detail, and each resource shortage on its own without the amounts
/// ("Insufficient cpu", "Insufficient memory"), as upstream counts them.
pub fn upstream_reasons(reason: &str) -> Vec<Cow<'_, str>> {
    for prefix in DETAILED {
        if reason
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(": "))
        {
            return vec![prefix.into()];
        }
    }
    let resources = reason.starts_with("Insufficient ") || reason.starts_with("Too many pods");
    if !resources || !reason.contains(" (") {
        return vec![reason.into()];
    }
    let mut plain = String::with_capacity(reason.len());
    let mut depth = 0usize;
    for c in reason.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => plain.push(c),
            _ => {}
        }
    }
    plain
        .split(',')
        .map(|r| Cow::<str>::Owned(r.trim().to_string()))
        .filter(|r| !r.is_empty())
        .collect()
}

/// "AVAILABLE/TOTAL nodes are available: 2 reason a, 1 reason b." — with
/// no failures, just "AVAILABLE/TOTAL nodes are available.".
pub fn nodes_available<'a>(
    available: usize,
    total: usize,
    reasons: impl IntoIterator<Item = &'a str>,
) -> String {
    let mut counts: BTreeMap<Cow<'_, str>, usize> = BTreeMap::new();
    for reason in reasons {
        for r in upstream_reasons(reason) {
            *counts.entry(r).or_default() += 1;
        }
    }
    let mut histogram: Vec<String> = counts
        .into_iter()
        .map(|(reason, n)| format!("{n} {reason}"))
        .collect();
    histogram.sort();
    let head = format!("{available}/{total} nodes are available");
    if histogram.is_empty() {
        format!("{head}.")
    } else {
        format!("{head}: {}.", histogram.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_reasons_and_sorts_them_as_upstream_does() {
        let cases: Vec<(&str, usize, usize, Vec<&str>, &str)> = vec![
            (
                "one reason on every node",
                0,
                3,
                vec!["node(s) didn't match Pod's node affinity/selector"; 3],
                "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
            ),
            (
                "groups sorted by their text, count first",
                0,
                5,
                vec!["b", "a", "b", "c", "b"],
                "0/5 nodes are available: 1 a, 1 c, 3 b.",
            ),
            (
                "string order puts 10 before 2, as sort.Strings does",
                0,
                12,
                [vec!["x"; 10], vec!["y"; 2]].concat(),
                "0/12 nodes are available: 10 x, 2 y.",
            ),
            ("no failures", 2, 2, vec![], "2/2 nodes are available."),
            (
                "some nodes feasible",
                1,
                2,
                vec!["node(s) were unschedulable"],
                "1/2 nodes are available: 1 node(s) were unschedulable.",
            ),
        ];
        for (name, available, total, reasons, want) in cases {
            assert_eq!(nodes_available(available, total, reasons), want, "{name}");
        }
    }

    #[test]
    fn rows_are_counted_by_upstream_reason_without_their_detail() {
        let cases = [
            (
                "node(s) didn't match pod anti-affinity rules: pod shop/b1 (app=b) in kubernetes.io/hostname=n1",
                "node(s) didn't match pod anti-affinity rules",
            ),
            (
                "node(s) didn't match pod topology spread constraints: zone=z1 would have skew 4 > maxSkew 1 (3 matching pods there, global minimum 0)",
                "node(s) didn't match pod topology spread constraints",
            ),
            (
                "node(s) didn't match pod affinity rules: node has no label zone",
                "node(s) didn't match pod affinity rules",
            ),
            (
                // 1.33's text names the taint itself.
                "node(s) had untolerated taint {dedicated: gpu}",
                "node(s) had untolerated taint {dedicated: gpu}",
            ),
            (
                "Too many pods (110 of 110 allowed already on the node)",
                "Too many pods",
            ),
            (
                "node(s) didn't match pod anti-affinity rulesX",
                "node(s) didn't match pod anti-affinity rulesX",
            ),
        ];
        for (row, want) in cases {
            assert_eq!(upstream_reasons(row), [want], "{row}");
        }
        let both = "Insufficient cpu (requests 1000m, 0m of 500m free), Insufficient memory (requests 2, 1 of 1 free)";
        assert_eq!(
            upstream_reasons(both),
            ["Insufficient cpu", "Insufficient memory"]
        );
        assert_eq!(
            nodes_available(
                0,
                2,
                [both, "Insufficient memory (requests 2, 1 of 1 free)"]
            ),
            "0/2 nodes are available: 1 Insufficient cpu, 2 Insufficient memory."
        );
        let rows = [
            cases[0].0,
            "node(s) didn't match pod anti-affinity rules: pod shop/b2 (app=b) in kubernetes.io/hostname=n2",
        ];
        assert_eq!(
            nodes_available(0, 2, rows),
            "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules."
        );
    }
}
