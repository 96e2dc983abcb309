//! Rank for scale-in: how many active related pods share a pod's node.
//!
//! Pods of a ReplicaSet (or ReplicationController) the view knows are
//! ranked as the ReplicaSet controller ranks them
//! (`pkg/controller/replicaset/replica_set.go`, `getIndirectlyRelatedPods`
//! and `getPodsRankedByRelatedPodsOnSameNode`): related pods are those
//! selected by any ReplicaSet with the same controller UID (a Deployment's
//! old and new ReplicaSets count together), and a ReplicaSet without a
//! controller has none (`getReplicaSetsWithSameController` returns
//! nothing), so every rank is 0. Pods of other owners, of a ReplicaSet the
//! view does not hold, or without a controller, are related to the pods
//! with the same owner, and to each other.

use std::borrow::Cow;

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

use crate::cluster::{Owners, Snapshot};
use crate::model::meta::ObjectMeta;
use crate::model::selector::LabelSelector;
use crate::model::{Pod, meta::OwnerReference};

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

/// Whose pods count as related to a ranked pod.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Related {
    /// Pods selected by the ReplicaSets (or ReplicationControllers) of the
    /// namespace with this controller.
    SameController {
        namespace: String,
        controller: Controller,
    },
    /// A ReplicaSet without a controller: no related pods, rank 0.
    Nothing,
    /// Pods with the same controller owner, and the other ranked pods
    /// resolved this way (what the view cannot resolve upstream's way).
    SameOwner,
}

/// A workload's controller: upstream compares UIDs; objects written by
/// hand without one are compared by kind and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Controller {
    uid: String,
    kind: String,
    name: String,
}

impl Controller {
    fn of(owner: &OwnerReference) -> Self {
        Self {
            uid: owner.uid.clone(),
            kind: owner.kind.clone(),
            name: owner.name.clone(),
        }
    }

    fn is(&self, owner: &OwnerReference) -> bool {
        if self.uid.is_empty() || owner.uid.is_empty() {
            owner.kind == self.kind && owner.name == self.name
        } else {
            owner.uid == self.uid
        }
    }
}

/// A ReplicaSet or ReplicationController of the view: its metadata and its
/// selector (a map selector as a LabelSelector, as the RC controller
/// converts it).
struct Workload<'s> {
    metadata: &'s ObjectMeta,
    selector: Cow<'s, Option<LabelSelector>>,
}

fn workloads<'s>(owners: &'s Owners, kind: &str) -> Vec<Workload<'s>> {
    match kind {
        "ReplicaSet" => owners
            .replica_sets
            .iter()
            .map(|rs| Workload {
                metadata: &rs.metadata,
                selector: Cow::Borrowed(&rs.spec.selector),
            })
            .collect(),
        "ReplicationController" => owners
            .replication_controllers
            .iter()
            .map(|rc| Workload {
                metadata: &rc.metadata,
                selector: Cow::Owned(Some(LabelSelector::from_map(&rc.spec.selector))),
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether `owner` names `object` (by UID when both have one).
fn names(owner: &OwnerReference, object: &ObjectMeta) -> bool {
    owner.name == object.name
        && (owner.uid.is_empty() || object.uid.is_empty() || owner.uid == object.uid)
}

/// How a pod owned by `owner` in `namespace` is ranked.
fn related_for(snapshot: &Snapshot, namespace: &str, owner: &OwnerReference) -> Related {
    let Some(owners) = snapshot.owners_in_namespace(namespace) else {
        return Related::SameOwner;
    };
    let Some(workload) = workloads(owners, &owner.kind)
        .into_iter()
        .find(|w| names(owner, w.metadata))
    else {
        return Related::SameOwner;
    };
    match workload.metadata.controller() {
        Some(controller) => Related::SameController {
            namespace: namespace.to_string(),
            controller: Controller::of(controller),
        },
        None => Related::Nothing,
    }
}

/// The selectors of the `kind` workloads of `namespace` with `controller`
/// (upstream `getReplicaSetsWithSameController`); an invalid or missing
/// selector selects nothing.
fn selectors_with_controller(
    snapshot: &Snapshot,
    namespace: &str,
    kind: &str,
    controller: &Controller,
) -> Vec<LabelSelector> {
    let Some(owners) = snapshot.owners_in_namespace(namespace) else {
        return Vec::new();
    };
    workloads(owners, kind)
        .into_iter()
        .filter(|w| w.metadata.controller().is_some_and(|c| controller.is(c)))
        .filter_map(|w| w.selector.into_owned())
        .filter(|s| s.validate().is_ok())
        .collect()
}

/// Rank of each of `pods` (same order).
pub fn ranks(snapshot: &Snapshot, pods: &[&Pod]) -> Vec<usize> {
    // The pods of one workload share a controller: resolve each once.
    let mut resolved: HashMap<(&str, &str, &str), Related> = HashMap::new();
    let related: Vec<Related> = pods
        .iter()
        .map(|p| {
            let Some(owner) = p.metadata.controller() else {
                return Related::SameOwner;
            };
            let ns = p.metadata.namespace.as_str();
            resolved
                .entry((ns, owner.kind.as_str(), owner.name.as_str()))
                .or_insert_with(|| related_for(snapshot, ns, owner))
                .clone()
        })
        .collect();
    let mut per_group: HashMap<&Related, HashMap<&str, usize>> = HashMap::new();
    for group in related.iter().collect::<HashSet<_>>() {
        let counts = match group {
            Related::Nothing => HashMap::new(),
            Related::SameOwner => same_owner_counts(snapshot, pods, &related),
            Related::SameController {
                namespace,
                controller,
            } => {
                let kinds: HashSet<&str> = pods
                    .iter()
                    .zip(&related)
                    .filter(|(_, r)| *r == group)
                    .filter_map(|(p, _)| controller_of(p).map(|(k, _)| k))
                    .collect();
                selected_counts(snapshot, namespace, controller, &kinds, pods)
            }
        };
        per_group.insert(group, counts);
    }
    pods.iter()
        .zip(&related)
        .map(|(p, group)| {
            per_group
                .get(group)
                .and_then(|counts| counts.get(p.spec.node_name.as_str()))
                .copied()
                .unwrap_or(0)
        })
        .collect()
}

/// Active pods per node among those the ReplicaSets (of each of `kinds`)
/// with `controller` select (upstream `getIndirectlyRelatedPods`): the
/// view's, and any of `ranked` not in it.
fn selected_counts<'p>(
    snapshot: &'p Snapshot,
    namespace: &str,
    controller: &Controller,
    kinds: &HashSet<&str>,
    ranked: &[&'p Pod],
) -> HashMap<&'p str, usize> {
    let selectors: Vec<LabelSelector> = kinds
        .iter()
        .flat_map(|kind| selectors_with_controller(snapshot, namespace, kind, controller))
        .collect();
    let selected = |p: &Pod| {
        p.metadata.namespace == namespace && selectors.iter().any(|s| s.matches(&p.metadata.labels))
    };
    let mut counter = NodeCounter::with_capacity(ranked.len());
    for r in snapshot.pods_in_namespace(namespace) {
        if selected(&r.pod) {
            counter.count(&r.pod);
        }
    }
    for pod in ranked {
        if selected(pod) {
            counter.count(pod);
        }
    }
    counter.per_node
}

/// The approximation for what the view cannot resolve: the ranked pods of
/// the [`Related::SameOwner`] group and the view's pods with the same
/// controller owners (by kind and name).
fn same_owner_counts<'p>(
    snapshot: &'p Snapshot,
    pods: &[&'p Pod],
    related: &[Related],
) -> HashMap<&'p str, usize> {
    let members: Vec<&Pod> = pods
        .iter()
        .zip(related)
        .filter(|(_, r)| **r == Related::SameOwner)
        .map(|(p, _)| *p)
        .collect();
    let owners: HashSet<(&str, &str, &str)> = members
        .iter()
        .filter_map(|p| controller_of(p).map(|(k, n)| (p.metadata.namespace.as_str(), k, n)))
        .collect();
    let namespaces: HashSet<&str> = members
        .iter()
        .map(|p| p.metadata.namespace.as_str())
        .collect();
    let mut counter = NodeCounter::with_capacity(pods.len());
    for pod in &members {
        counter.count(pod);
    }
    for ns in namespaces {
        for r in snapshot.pods_in_namespace(ns) {
            if controller_of(&r.pod).is_some_and(|(k, n)| owners.contains(&(ns, k, n))) {
                counter.count(&r.pod);
            }
        }
    }
    counter.per_node
}

/// Active pods per node, each pod counted once (by UID, else by name).
/// Borrows names from the pods: a workload has a thousand of them.
struct NodeCounter<'p> {
    seen: HashSet<Cow<'p, str>>,
    per_node: HashMap<&'p str, usize>,
}

impl<'p> NodeCounter<'p> {
    fn with_capacity(pods: usize) -> Self {
        Self {
            seen: HashSet::with_capacity(2 * pods),
            per_node: HashMap::with_capacity(pods),
        }
    }

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
    use crate::model::{MapSelectorOwner, SelectorOwner};
    use serde_json::json;

    /// A running pod of `shop` labelled `app=web`, controlled by the
    /// ReplicaSet `owner` (uid `uid-<owner>`).
    fn pod(name: &str, node: &str, owner: Option<&str>) -> Pod {
        owned_by(
            name,
            node,
            owner.map(|o| ("ReplicaSet", o)),
            json!({"app": "web"}),
        )
    }

    fn owned_by(
        name: &str,
        node: &str,
        owner: Option<(&str, &str)>,
        labels: serde_json::Value,
    ) -> Pod {
        let owners = owner.map_or(json!([]), |(kind, o)| {
            json!([{"kind": kind, "name": o, "uid": format!("uid-{o}"), "controller": true}])
        });
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "shop", "uid": format!("uid-{name}"),
                         "labels": labels, "ownerReferences": owners},
            "spec": {"nodeName": node},
            "status": {"phase": "Running"}
        }))
        .unwrap()
    }

    /// ReplicaSet `name` selecting `app=<app>`, controlled by Deployment
    /// `deployment` (uid `uid-<deployment>`), or standalone.
    fn rs(name: &str, app: &str, deployment: Option<&str>) -> SelectorOwner {
        let owners = deployment.map_or(json!([]), |d| {
            json!([{"kind": "Deployment", "name": d, "uid": format!("uid-{d}"), "controller": true}])
        });
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "shop", "uid": format!("uid-{name}"), "ownerReferences": owners},
            "spec": {"selector": {"matchLabels": {"app": app}}}
        }))
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

    /// Upstream `getReplicaSetsWithSameController` and
    /// `getIndirectlyRelatedPods` (pkg/controller/replicaset/replica_set.go):
    /// rows name the case; `ranked` are the pods asked about, all in the view.
    #[test]
    fn replica_set_controller_related_pods_table() {
        struct Case {
            name: &'static str,
            pods: Vec<Pod>,
            replica_sets: Vec<SelectorOwner>,
            ranked: &'static [&'static str],
            want: Vec<usize>,
        }
        let web = |name: &str, node: &str, rs: &str| pod(name, node, Some(rs));
        let cases = [
            Case {
                name: "a standalone ReplicaSet has no related pods: every rank is 0",
                pods: vec![
                    web("a", "n1", "web"),
                    web("b", "n1", "web"),
                    web("c", "n2", "web"),
                ],
                replica_sets: vec![rs("web", "web", None)],
                ranked: &["a", "b", "c"],
                want: vec![0, 0, 0],
            },
            Case {
                name: "every ReplicaSet of the Deployment counts, by its selector",
                pods: vec![
                    web("old-1", "n1", "web-old"),
                    web("new-1", "n1", "web-new"),
                    owned_by(
                        "api-1",
                        "n1",
                        Some(("ReplicaSet", "api")),
                        json!({"app": "api"}),
                    ),
                ],
                replica_sets: vec![
                    rs("web-old", "web", Some("web")),
                    rs("web-new", "web", Some("web")),
                    rs("api", "api", Some("api")),
                ],
                ranked: &["new-1"],
                want: vec![2],
            },
            Case {
                name: "a selected pod counts whoever owns it; an owned pod the selectors miss does not",
                pods: vec![
                    web("new-1", "n1", "web-new"),
                    owned_by("stray", "n1", None, json!({"app": "web"})),
                    owned_by(
                        "relabelled",
                        "n1",
                        Some(("ReplicaSet", "web-new")),
                        json!({"app": "debug"}),
                    ),
                ],
                replica_sets: vec![rs("web-new", "web", Some("web"))],
                ranked: &["new-1"],
                want: vec![2],
            },
            Case {
                name: "the pods of another Deployment's ReplicaSet are not related",
                pods: vec![
                    web("new-1", "n1", "web-new"),
                    owned_by(
                        "twin-1",
                        "n1",
                        Some(("ReplicaSet", "twin")),
                        json!({"app": "other"}),
                    ),
                ],
                replica_sets: vec![
                    rs("web-new", "web", Some("web")),
                    rs("twin", "other", Some("twin-deploy")),
                ],
                ranked: &["new-1"],
                want: vec![1],
            },
        ];
        for case in cases {
            let s = view(case.pods.clone(), case.replica_sets);
            let ranked: Vec<&Pod> = case
                .ranked
                .iter()
                .map(|n| case.pods.iter().find(|p| p.metadata.name == *n).unwrap())
                .collect();
            assert_eq!(ranks(&s, &ranked), case.want, "{}", case.name);
        }
    }

    #[test]
    fn a_standalone_replication_controller_has_no_related_pods() {
        let rc: MapSelectorOwner = serde_json::from_value(json!({
            "metadata": {"name": "legacy", "namespace": "shop", "uid": "uid-legacy"},
            "spec": {"selector": {"app": "web"}}
        }))
        .unwrap();
        let a = owned_by(
            "a",
            "n1",
            Some(("ReplicationController", "legacy")),
            json!({"app": "web"}),
        );
        let b = owned_by(
            "b",
            "n1",
            Some(("ReplicationController", "legacy")),
            json!({"app": "web"}),
        );
        let s = Snapshot::build(ClusterObjects {
            pods: vec![a.clone(), b.clone()],
            replication_controllers: vec![rc],
            ..Default::default()
        });
        assert_eq!(ranks(&s, &[&a, &b]), [0, 0]);
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
