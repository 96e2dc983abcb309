//! Filter reasons as kube-scheduler counts them and as kube-arbiter
//! words them, brought to the same words for comparison.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// kube-scheduler's message for a pod no node fits (upstream
/// `FitError.Error` in `pkg/scheduler/framework/types.go`):
/// `0/N nodes are available: 3 REASON, 2 REASON.` and, when PostFilter
/// said something, ` preemption: ...` after it. The node count N and
/// each reason's count; `Err` for any other text (a PreFilter plugin's
/// single reason, say), with the text.
pub fn parse_fit_error(message: &str) -> Result<(usize, BTreeMap<String, usize>), String> {
    let bad = || format!("not a per-node count of reasons: {message:?}");
    let rest = message.strip_prefix("0/").ok_or_else(bad)?;
    let (total, rest) = rest.split_once(" nodes are available: ").ok_or_else(bad)?;
    let total: usize = total.parse().map_err(|_| bad())?;
    let histogram = match rest.split_once(". ") {
        Some((histogram, _post_filter)) => histogram,
        None => rest.strip_suffix('.').ok_or_else(bad)?,
    };
    let mut reasons = BTreeMap::new();
    for entry in histogram.split(", ") {
        let (count, reason) = entry.split_once(' ').ok_or_else(bad)?;
        let count: usize = count.parse().map_err(|_| bad())?;
        *reasons.entry(reason.to_string()).or_default() += count;
    }
    Ok((total, reasons))
}

/// The reasons of the in-tree filter plugins kube-arbiter's filter ports,
/// as kube-scheduler 1.37 words them (`nodeunschedulable`,
/// `tainttoleration`, `nodeaffinity`, `podtopologyspread`,
/// `interpodaffinity` under `pkg/scheduler/framework/plugins/`).
pub const UPSTREAM: [&str; 8] = [
    "node(s) were unschedulable",
    "node(s) had untolerated taint(s)",
    "node(s) didn't match Pod's node affinity/selector",
    "node(s) didn't match pod topology spread constraints",
    "node(s) didn't match pod topology spread constraints (missing required label)",
    "node(s) didn't match pod affinity rules",
    "node(s) didn't match pod anti-affinity rules",
    "node(s) didn't satisfy existing pods anti-affinity rules",
];

/// A kube-arbiter reason in upstream's words: kube-arbiter writes the
/// upstream plugin's reason and may add what it found after `": "` (the
/// domain, the pod in the way), or name the key a node lacks in
/// `(missing required label KEY)`; either detail is dropped. Any other
/// text is kept as it is, and then differs from every upstream reason.
pub fn upstream_words(reason: &str) -> String {
    let missing_label =
        "node(s) didn't match pod topology spread constraints (missing required label";
    if reason.starts_with(&format!("{missing_label} ")) {
        return format!("{missing_label})");
    }
    UPSTREAM
        .iter()
        .find(|words| {
            reason == **words
                || reason
                    .strip_prefix(**words)
                    .is_some_and(|detail| detail.starts_with(": "))
        })
        .map_or(reason, |words| words)
        .to_string()
}

/// kube-scheduler's reason for the nodes its NodeAffinity PreFilter left
/// out (`findNodesThatFitPod` in upstream
/// `pkg/scheduler/schedule_one.go`): no filter runs on them, so they get
/// this reason whatever their taints or labels. kube-arbiter's filter
/// judges them as it does every node, and fails each one for its node
/// affinity or an earlier rule.
pub const NOT_IN_PRE_FILTER_RESULT: &str = "node(s) didn't satisfy plugin(s) [NodeAffinity]";

/// The only nodes kube-scheduler filters for `pod` (upstream
/// `NodeAffinity.PreFilter` in
/// `pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go`): when
/// every required node selector term names nodes (`matchFields`
/// `metadata.name In`), the union over the terms of the names each term
/// requires; `None` when some term names none (every node is filtered).
pub fn pre_filter_nodes(pod: &Value) -> Option<BTreeSet<String>> {
    let terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"]
        .as_array()
        .filter(|terms| !terms.is_empty())?;
    let mut union = BTreeSet::new();
    for term in terms {
        let mut names: Option<BTreeSet<String>> = None;
        let by_name = term["matchFields"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["key"] == "metadata.name" && r["operator"] == "In");
        for requirement in by_name {
            let values: BTreeSet<String> = requirement["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect();
            names = Some(match names {
                Some(names) => names.intersection(&values).cloned().collect(),
                None => values,
            });
        }
        union.extend(names?);
    }
    Some(union)
}
