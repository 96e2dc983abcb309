//! Which names of a preempt request the view does not know: candidate
//! nodes, and victim UIDs on nodes it knows. One it does not know is a
//! sign the view lags kube-scheduler's cache; the handler leaves it out of
//! the answer, logs and counts it.

use std::borrow::Cow;

use crate::cluster::{NodeIdx, Snapshot};
use crate::wire::preempt_args::NamedNodes;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Unknown {
    pub nodes: Vec<String>,
    /// Victim UIDs on nodes the view knows (a node it does not know is
    /// counted once, not once per pod on it).
    pub victims: Vec<String>,
}

impl Unknown {
    /// Every unknown name of `named`, in its order.
    pub fn find(snapshot: &Snapshot, named: &NamedNodes) -> Self {
        let mut unknown = Self::default();
        for (node, uids) in named {
            unknown.look_up(snapshot, node, uids);
        }
        unknown
    }

    /// Node `node`'s place in the view, noting it when the view does not
    /// know it, and otherwise each of `uids` no pod of the view has. A
    /// victim is looked for among its node's pods first, where
    /// kube-scheduler saw it: their UIDs lie side by side, while the
    /// cluster-wide index costs a few cache misses per UID.
    pub fn look_up(
        &mut self,
        snapshot: &Snapshot,
        node: &str,
        uids: &[Cow<'_, str>],
    ) -> Option<NodeIdx> {
        let Some(idx) = snapshot.node_idx(node) else {
            self.nodes.push(node.to_string());
            return None;
        };
        let pods = &snapshot.nodes()[idx as usize].pods;
        self.victims.extend(
            uids.iter()
                .filter(|uid| !pods.has_pod_with_uid(uid) && snapshot.pod_by_uid(uid).is_none())
                .map(|uid| uid.to_string()),
        );
        Some(idx)
    }

    /// `other`'s names after these.
    pub fn append(&mut self, other: Unknown) {
        self.nodes.extend(other.nodes);
        self.victims.extend(other.victims);
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.victims.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ClusterObjects;
    use crate::policy::preemption::testing::{node, pod};
    use crate::wire::preempt_args::testing::nodes;

    #[test]
    fn unknown_nodes_and_unknown_victims_on_known_nodes_are_found() {
        let s = Snapshot::build(ClusterObjects {
            nodes: vec![node("n1", 1, 1)],
            pods: vec![pod("a", "n1", 0, 0, 0, None)],
            ..Default::default()
        });
        let named = nodes(&[("n1", &["uid-a", "gone"]), ("ghost", &["uid-x"])]);
        let unknown = Unknown::find(&s, &named);
        assert_eq!(unknown.nodes, ["ghost"]);
        assert_eq!(unknown.victims, ["gone"]);
        assert!(!unknown.is_empty());
        assert!(Unknown::find(&s, &nodes(&[("n1", &["uid-a"])])).is_empty());
    }

    /// Looking for victims among their node's pods first must find exactly
    /// what the cluster-wide UID index finds, whatever the UIDs hold and
    /// wherever the pods are (another node, no node).
    mod unknown_as_by_index {
        use proptest::prelude::*;

        use super::*;

        const UIDS: [&str; 8] = ["a", "b\"", "c\\", "d\u{1}", "é", "", "b\\\"", "\"a\""];

        proptest! {
            #[test]
            fn node_first_finds_what_the_index_finds(
                placed in prop::collection::vec(
                    (prop::sample::select(UIDS.to_vec()), prop::sample::select(vec!["n1", "n2", ""])),
                    0..8),
                asked in prop::collection::vec(
                    (prop::sample::select(vec!["n1", "n2", "n9"]),
                     prop::collection::vec(prop::sample::select(UIDS.to_vec()), 0..5)),
                    0..4),
            ) {
                let pods = placed
                    .iter()
                    .enumerate()
                    .map(|(i, (uid, node))| {
                        let mut p = pod(&format!("p{i}"), node, 0, 0, 0, None);
                        p.metadata.uid = uid.to_string();
                        p
                    })
                    .collect();
                let s = Snapshot::build(ClusterObjects {
                    nodes: vec![node("n1", 1, 1), node("n2", 1, 1)],
                    pods,
                    ..Default::default()
                });
                let asked: Vec<(&str, &[&str])> =
                    asked.iter().map(|(n, u)| (*n, u.as_slice())).collect();
                let named = nodes(&asked);
                let by_index: Vec<String> = named
                    .iter()
                    .filter(|(n, _)| s.node_idx(n).is_some())
                    .flat_map(|(_, uids)| uids)
                    .filter(|u| s.pod_by_uid(u).is_none())
                    .map(|u| u.to_string())
                    .collect();
                prop_assert_eq!(Unknown::find(&s, &named).victims, by_index);
            }
        }
    }
}
