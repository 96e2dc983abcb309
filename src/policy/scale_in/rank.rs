//! Rank for scale-in: how many active related pods share a pod's node.
//!
//! Related pods are those with the same controller owner; for a
//! ReplicaSet owned by a Deployment, the pods of every ReplicaSet of that
//! Deployment (so a rollout's old and new pods count together). Pods
//! without a controller are related to the other pods being ranked.

use std::borrow::Cow;

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

use crate::cluster::Snapshot;
use crate::model::Pod;

/// Deleting, Succeeded and Failed pods are neither candidates nor counted.
pub fn is_active(pod: &Pod) -> bool {
    !pod.is_terminal() && !pod.is_terminating()
}

/// `(kind, name)` of the pod's controller owner.
fn controller_of(pod: &Pod) -> Option<(&str, &str)> {
    pod.metadata
        .controller()
        .map(|o| (o.kind.as_str(), o.name.as_str()))
}

/// The owners whose pods are related to pods owned by `(kind, name)`.
fn related_owners(
    snapshot: &Snapshot,
    namespace: &str,
    kind: &str,
    name: &str,
) -> Vec<(String, String)> {
    let own = vec![(kind.to_string(), name.to_string())];
    if kind != "ReplicaSet" {
        return own;
    }
    let Some(owners) = snapshot.owners_in_namespace(namespace) else {
        return own;
    };
    let deployment = owners
        .replica_sets
        .iter()
        .find(|rs| rs.metadata.name == name)
        .and_then(|rs| rs.metadata.controller());
    match deployment {
        Some(d) => owners
            .replica_sets
            .iter()
            .filter(|rs| {
                rs.metadata
                    .controller()
                    .is_some_and(|c| c.kind == d.kind && c.name == d.name)
            })
            .map(|rs| ("ReplicaSet".to_string(), rs.metadata.name.clone()))
            .collect(),
        None => own,
    }
}

/// Rank of each of `pods` (same order).
pub fn ranks(snapshot: &Snapshot, pods: &[&Pod]) -> Vec<usize> {
    // The pods of one workload share a controller: resolve each once.
    let controllers: HashSet<(&str, &str, &str)> = pods
        .iter()
        .filter_map(|p| controller_of(p).map(|(k, n)| (p.metadata.namespace.as_str(), k, n)))
        .collect();
    let owned: Vec<(&str, String, String)> = controllers
        .into_iter()
        .flat_map(|(ns, kind, name)| {
            related_owners(snapshot, ns, kind, name)
                .into_iter()
                .map(move |(k, n)| (ns, k, n))
        })
        .collect();
    let owners: HashSet<(&str, &str, &str)> = owned
        .iter()
        .map(|(ns, k, n)| (*ns, k.as_str(), n.as_str()))
        .collect();
    let namespaces: HashSet<&str> = pods.iter().map(|p| p.metadata.namespace.as_str()).collect();

    let mut counter = NodeCounter {
        seen: HashSet::with_capacity(2 * pods.len()),
        per_node: HashMap::with_capacity(pods.len()),
    };
    for pod in pods {
        counter.count(pod);
    }
    for ns in namespaces {
        for r in snapshot.pods_in_namespace(ns) {
            if controller_of(&r.pod).is_some_and(|(k, n)| owners.contains(&(ns, k, n))) {
                counter.count(&r.pod);
            }
        }
    }
    pods.iter()
        .map(|p| {
            counter
                .per_node
                .get(p.spec.node_name.as_str())
                .copied()
                .unwrap_or(0)
        })
        .collect()
}

/// Active pods per node, each pod counted once (by UID, else by name).
/// Borrows names from the pods: a workload has a thousand of them.
struct NodeCounter<'p> {
    seen: HashSet<Cow<'p, str>>,
    per_node: HashMap<&'p str, usize>,
}

impl<'p> NodeCounter<'p> {
    fn count(&mut self, pod: &'p Pod) {
        let id = if pod.metadata.uid.is_empty() {
            Cow::Owned(pod.metadata.key())
        } else {
            Cow::Borrowed(pod.metadata.uid.as_str())
        };
        if is_active(pod) && self.seen.insert(id) {
            *self.per_node.entry(&pod.spec.node_name).or_insert(0) += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ClusterObjects;
    use crate::model::SelectorOwner;
    use serde_json::json;

    fn pod(name: &str, node: &str, owner: Option<&str>) -> Pod {
        let owners = owner.map_or(json!([]), |o| {
            json!([{"kind": "ReplicaSet", "name": o, "uid": format!("uid-{o}"), "controller": true}])
        });
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "shop", "uid": format!("uid-{name}"), "ownerReferences": owners},
            "spec": {"nodeName": node},
            "status": {"phase": "Running"}
        }))
        .unwrap()
    }

    fn rs(name: &str, deployment: Option<&str>) -> SelectorOwner {
        let owners = deployment.map_or(
            json!([]),
            |d| json!([{"kind": "Deployment", "name": d, "controller": true}]),
        );
        serde_json::from_value(
            json!({"metadata": {"name": name, "namespace": "shop", "ownerReferences": owners}}),
        )
        .unwrap()
    }

    fn view(pods: Vec<Pod>, replica_sets: Vec<SelectorOwner>) -> Snapshot {
        Snapshot::build(ClusterObjects {
            pods,
            replica_sets,
            ..Default::default()
        })
    }

    #[test]
    fn rank_counts_related_pods_on_the_same_node() {
        let s = view(
            vec![
                pod("other-rs", "n1", Some("rs-x")),
                pod("unowned", "n1", None),
            ],
            vec![],
        );
        let (a, b, c) = (
            pod("a", "n1", Some("rs-1")),
            pod("b", "n1", Some("rs-1")),
            pod("c", "n2", Some("rs-1")),
        );
        assert_eq!(ranks(&s, &[&a, &b, &c]), [2, 2, 1]);
    }

    #[test]
    fn pods_of_every_replica_set_of_the_deployment_are_related() {
        let s = view(
            vec![
                pod("old-1", "n1", Some("web-old")),
                pod("old-2", "n1", Some("web-old")),
                pod("alien", "n1", Some("api")),
            ],
            vec![
                rs("web-old", Some("web")),
                rs("web-new", Some("web")),
                rs("api", Some("api")),
            ],
        );
        let new = pod("new-1", "n1", Some("web-new"));
        assert_eq!(ranks(&s, &[&new]), [3]);
    }

    #[test]
    fn inactive_pods_do_not_count() {
        let mut deleting = pod("deleting", "n1", Some("rs-1"));
        deleting.metadata.deletion_timestamp = Some("2024-01-01T00:00:00Z".parse().unwrap());
        let s = view(vec![deleting], vec![]);
        let a = pod("a", "n1", Some("rs-1"));
        assert_eq!(ranks(&s, &[&a]), [1]);
    }

    #[test]
    fn a_pod_in_the_request_and_the_view_counts_once() {
        let a = pod("a", "n1", Some("rs-1"));
        let s = view(vec![a.clone()], vec![]);
        assert_eq!(ranks(&s, &[&a]), [1]);
    }
}
