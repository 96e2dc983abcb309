//! Policy verdicts into the extender's filter answer: which map a failed
//! node lands in is decided by its [`Code`] (upstream's framework: only
//! `Unschedulable` nodes are preemption candidates). The answer's shape is
//! `wire::extender`'s; this is the one place that knows both.

use crate::policy::{Code, Failure};
use crate::wire::extender::{ExtenderFilterResult, NodeName};

/// Room for every failure among `verdicts` in its map: thousands of
/// failed nodes grew the lists (and copied them) a dozen times. The number
/// of failures. A verdict that passes may carry what its check found.
pub(super) fn reserve_failures<'v, X: 'v>(
    result: &mut ExtenderFilterResult<'_>,
    verdicts: impl Iterator<Item = &'v Result<X, Failure>>,
) -> usize {
    let (mut unschedulable, mut unresolvable) = (0, 0);
    for failure in verdicts.filter_map(|v| v.as_ref().err()) {
        match failure.code {
            Code::Unschedulable => unschedulable += 1,
            Code::UnschedulableAndUnresolvable => unresolvable += 1,
        }
    }
    result.failed_nodes.reserve(unschedulable);
    result.failed_and_unresolvable_nodes.reserve(unresolvable);
    unschedulable + unresolvable
}

/// `node` failed: Unschedulable goes to FailedNodes (preemption may help),
/// the rest to FailedAndUnresolvableNodes.
pub(super) fn record_failure<'a>(
    result: &mut ExtenderFilterResult<'a>,
    node: impl Into<NodeName<'a>>,
    failure: Failure,
) {
    let map = match failure.code {
        Code::Unschedulable => &mut result.failed_nodes,
        Code::UnschedulableAndUnresolvable => &mut result.failed_and_unresolvable_nodes,
    };
    map.insert(node.into(), failure.reason);
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn failures_go_to_their_map_and_shared_reasons_encode_once_per_node() {
        let zone: Arc<str> = "zone \"a\" is full\n".into();
        let mut r = ExtenderFilterResult::default();
        record_failure(&mut r, "n1", Failure::unschedulable(zone.clone()));
        record_failure(&mut r, "n2", Failure::unresolvable("tainted"));
        record_failure(&mut r, "n3", Failure::unschedulable(zone));
        record_failure(&mut r, "n\"4", Failure::unschedulable("other"));
        let v: serde_json::Value =
            serde_json::from_slice(&serde_json::to_vec(&r).unwrap()).unwrap();
        assert_eq!(
            v["FailedNodes"],
            serde_json::json!({"n1": "zone \"a\" is full\n", "n3": "zone \"a\" is full\n",
                               "n\"4": "other"})
        );
        assert_eq!(
            v["FailedAndUnresolvableNodes"],
            serde_json::json!({"n2": "tainted"})
        );
        assert_eq!(r.failed_nodes.get("n3"), Some("zone \"a\" is full\n"));
    }

    #[test]
    fn reserved_room_counts_only_the_failures() {
        let verdicts = [
            Ok(()),
            Err(Failure::unschedulable("full")),
            Err(Failure::unresolvable("tainted")),
            Err(Failure::unschedulable("full")),
        ];
        let mut r = ExtenderFilterResult::default();
        assert_eq!(reserve_failures(&mut r, verdicts.iter()), 3);
        assert!(r.failed_nodes.is_empty() && r.failed_and_unresolvable_nodes.is_empty());
    }
}
