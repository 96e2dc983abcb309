//! Which request node objects carry a view node's labels, remembered.
//!
//! A Nodes-mode request judges each node object it sends by the view's
//! node of that name when both carry the same labels (topology domains
//! are then array lookups: `policy::domains::NodeAt::resolve`). Comparing
//! two label maps follows a pointer per key and value on both sides, about
//! a microsecond a node, for every node of every request. The request's
//! objects repeat: `model::RecentNodes` hands back the same `Arc` for the
//! same text. So each view node remembers the last request object found
//! equal, both held: two pointer comparisons then stand for the label
//! comparison, which can never go stale (neither object changes, and a
//! held `Arc`'s address is not reused).

use std::sync::{Arc, Mutex, PoisonError};

use crate::model::Node;

/// A view node's object and a request's object found to carry its labels.
type Twins = (Arc<Node>, Arc<Node>);

/// One slot per view node: the twins found last.
#[derive(Debug, Default)]
pub struct LabelTwins(Box<[Mutex<Option<Twins>>]>);

impl LabelTwins {
    pub fn new(nodes: usize) -> Self {
        Self((0..nodes).map(|_| Mutex::new(None)).collect())
    }

    /// Whether `request` carries the labels of `view`, the view's node at
    /// position `idx` (a position past the table is compared every time).
    pub fn same_labels(&self, idx: usize, view: &Arc<Node>, request: &Arc<Node>) -> bool {
        if Arc::ptr_eq(view, request) {
            return true;
        }
        let Some(slot) = self.0.get(idx) else {
            return view.metadata.labels == request.metadata.labels;
        };
        let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((v, r)) = &*slot
            && Arc::ptr_eq(v, view)
            && Arc::ptr_eq(r, request)
        {
            return true;
        }
        let same = view.metadata.labels == request.metadata.labels;
        if same {
            *slot = Some((Arc::clone(view), Arc::clone(request)));
        }
        same
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::make_node;

    fn node_with_zone(zone: &str) -> Arc<Node> {
        Arc::new(make_node("n").zone(zone).obj())
    }

    #[test]
    fn remembered_twins_answer_as_the_labels_do() {
        let twins = LabelTwins::new(1);
        let (view, same, moved) = (
            node_with_zone("a"),
            node_with_zone("a"),
            node_with_zone("b"),
        );
        for _ in 0..2 {
            assert!(twins.same_labels(0, &view, &same));
            assert!(!twins.same_labels(0, &view, &moved));
            assert!(twins.same_labels(0, &view, &view));
        }
        // The view's node replaced by one with other labels: the request
        // object remembered for the old one is compared again.
        let relabelled = node_with_zone("c");
        assert!(!twins.same_labels(0, &relabelled, &same));
        assert!(twins.same_labels(0, &moved, &moved.clone()));
        // Past the table: compared, not remembered.
        assert!(twins.same_labels(5, &view, &same));
        assert!(!twins.same_labels(5, &view, &moved));
    }
}
