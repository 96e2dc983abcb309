//! What a preempt request names: the candidate nodes, each with the
//! victims kube-scheduler chose on it (full pods in `NodeNameToVictims`,
//! UIDs only in `NodeNameToMetaVictims`). The victims are recomputed from
//! our view; the names only tell whether the view knows what
//! kube-scheduler's cache knows. One it does not know is a sign the view
//! lags: it is left out of the answer, logged and counted.

use std::collections::{BTreeMap, HashMap};

use serde_json::value::RawValue;

use super::any_case::{AnyCase, field_of};
use crate::cluster::Snapshot;

/// Candidate node → the UIDs of the victims the request gives for it.
pub type NamedNodes = BTreeMap<String, Vec<String>>;

/// The candidate nodes of both maps with their victims' UIDs. A map that
/// is not an object is a bad request; victims in an unexpected shape only
/// go unchecked (their content never changes the answer).
pub fn named_nodes(args: &AnyCase<'_>) -> Result<NamedNodes, String> {
    let mut nodes = NamedNodes::new();
    for (field, meta) in [
        ("NodeNameToVictims", false),
        ("NodeNameToMetaVictims", true),
    ] {
        let map: Option<HashMap<String, &RawValue>> = args.get_borrowed(field)?;
        for (node, victims) in map.into_iter().flatten() {
            nodes
                .entry(node)
                .or_default()
                .extend(victim_uids(victims, meta));
        }
    }
    Ok(nodes)
}

/// `{"Pods": [...], "NumPDBViolations": n}` → the pods' UIDs.
fn victim_uids(victims: &RawValue, meta: bool) -> Vec<String> {
    let pods = field_of(victims.get(), "Pods")
        .and_then(|pods| serde_json::from_str::<Vec<&RawValue>>(pods.get()).ok());
    pods.into_iter()
        .flatten()
        .filter_map(|pod| uid_of(pod, meta))
        .collect()
}

fn uid_of(pod: &RawValue, meta: bool) -> Option<String> {
    let uid = if meta {
        field_of(pod.get(), "UID")?
    } else {
        field_of(field_of(pod.get(), "metadata")?.get(), "uid")?
    };
    let uid: String = serde_json::from_str(uid.get()).ok()?;
    (!uid.is_empty()).then_some(uid)
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Unknown {
    pub nodes: Vec<String>,
    /// Victim UIDs on nodes the view knows (a node it does not know is
    /// counted once, not once per pod on it).
    pub victims: Vec<String>,
}

impl Unknown {
    pub fn find(snapshot: &Snapshot, named: &NamedNodes) -> Self {
        let mut unknown = Self::default();
        for (node, uids) in named {
            if snapshot.node_idx(node).is_none() {
                unknown.nodes.push(node.clone());
                continue;
            }
            unknown.victims.extend(
                uids.iter()
                    .filter(|uid| snapshot.pod_by_uid(uid).is_none())
                    .cloned(),
            );
        }
        unknown
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

    fn named(body: &str) -> Result<NamedNodes, String> {
        named_nodes(&AnyCase::parse(body.as_bytes()).unwrap())
    }

    #[test]
    fn both_maps_name_nodes_and_victim_uids_in_any_case() {
        let got = named(
            r#"{"nodeNameToVictims": {"n1": {"pods": [{"metadata": {"UID": "a"}}, {"metadata": {}}]}},
                "NodeNameToMetaVictims": {"n2": {"Pods": [{"uid": "b"}, {"UID": ""}], "NumPDBViolations": 0},
                                          "n3": null}}"#,
        )
        .unwrap();
        let want: NamedNodes = [
            ("n1".to_string(), vec!["a".to_string()]),
            ("n2".to_string(), vec!["b".to_string()]),
            ("n3".to_string(), vec![]),
        ]
        .into();
        assert_eq!(got, want);
    }

    #[test]
    fn odd_victims_go_unchecked_but_a_map_that_is_no_object_is_refused() {
        let got = named(r#"{"NodeNameToMetaVictims": {"n1": {"Pods": 7}, "n2": [1]}}"#).unwrap();
        assert_eq!(got.len(), 2);
        assert!(got.values().all(Vec::is_empty));
        assert!(named(r#"{"NodeNameToVictims": ["n1"]}"#).is_err());
    }

    #[test]
    fn unknown_nodes_and_unknown_victims_on_known_nodes_are_found() {
        let s = Snapshot::build(ClusterObjects {
            nodes: vec![node("n1", 1, 1)],
            pods: vec![pod("a", "n1", 0, 0, 0, None)],
            ..Default::default()
        });
        let named: NamedNodes = [
            (
                "n1".to_string(),
                vec!["uid-a".to_string(), "gone".to_string()],
            ),
            ("ghost".to_string(), vec!["uid-x".to_string()]),
        ]
        .into();
        let unknown = Unknown::find(&s, &named);
        assert_eq!(unknown.nodes, ["ghost"]);
        assert_eq!(unknown.victims, ["gone"]);
        assert!(!unknown.is_empty());
        let known: NamedNodes = [("n1".to_string(), vec!["uid-a".to_string()])].into();
        assert!(Unknown::find(&s, &known).is_empty());
    }
}
