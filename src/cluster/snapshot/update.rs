//! Incremental updates: a new snapshot from an old one and a few changes,
//! sharing every part the changes did not touch. One pod change copies its
//! namespace's pod list (and fixes that list's label index), the pod lists
//! of its old and new node, one UID shard, and (only for pods with affinity
//! terms) the affinity lists; the PDBs selecting each pod are matched again
//! only on the touched nodes.

use std::sync::Arc;

use foldhash::HashSet;

use super::indexes::{namespaces_by_name, node_of, owners_by_namespace, priority_classes_by_name};
use super::label_index::ListEdit;
use super::{
    ExtendedResourceClasses, Map, NamespacePods, NodeInfo, NodeList, PdbIndex, PodRef, Snapshot,
    TopologyIndex,
};
use crate::model::{
    DeviceClass, MapSelectorOwner, Namespace, Node, Pod, PodDisruptionBudget, PriorityClass,
    SelectorOwner,
};

/// A pod to put into the view (`pod: Some`) or take out of it (`None`),
/// named by namespace and name. A terminal pod is taken out.
#[derive(Debug, Clone)]
pub struct PodChange {
    pub namespace: String,
    pub name: String,
    pub pod: Option<Arc<Pod>>,
}

impl PodChange {
    pub fn upsert(pod: Arc<Pod>) -> Self {
        Self {
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            pod: Some(pod),
        }
    }

    pub fn delete(namespace: &str, name: &str) -> Self {
        Self {
            namespace: namespace.to_string(),
            name: name.to_string(),
            pod: None,
        }
    }
}

pub(super) fn ptr(pod: &Arc<Pod>) -> usize {
    Arc::as_ptr(pod) as usize
}

impl Snapshot {
    /// This snapshot with `changes` applied (the last change of a pod wins).
    pub fn with_pod_changes(&self, changes: &[PodChange]) -> Snapshot {
        // namespace → name → new version (None: gone).
        let mut wanted: Map<&str, Map<&str, Option<&Arc<Pod>>>> = Map::default();
        for c in changes {
            let pod = c.pod.as_ref().filter(|p| !p.is_terminal());
            wanted
                .entry(c.namespace.as_str())
                .or_default()
                .insert(c.name.as_str(), pod);
        }

        let mut removed: Vec<PodRef> = Vec::new();
        let mut added: Vec<PodRef> = Vec::new();
        let mut by_namespace = (*self.pods_by_namespace).clone();
        for (ns, mut names) in wanted {
            let old = self.pods_by_namespace.get(ns);
            let old_pods = old.map_or(&[][..], |o| &o.pods[..]);
            let mut list: Vec<PodRef> = Vec::with_capacity(old_pods.len() + names.len());
            let mut edit = ListEdit::default();
            for (r, at) in old_pods.iter().zip(0u32..) {
                match names.remove(r.pod.metadata.name.as_str()) {
                    None => list.push(r.clone()),
                    Some(new) => {
                        removed.push(r.clone());
                        match new {
                            Some(pod) => {
                                edit.replaced.push((at, list.len() as u32));
                                let nr = self.pod_ref(pod);
                                added.push(nr.clone());
                                list.push(nr);
                            }
                            None => edit.dropped.push(at),
                        }
                    }
                }
            }
            for pod in names.into_values().flatten() {
                let nr = self.pod_ref(pod);
                added.push(nr.clone());
                list.push(nr);
            }
            if list.is_empty() {
                by_namespace.remove(ns);
            } else {
                let pods = match old {
                    Some(o) => o.edited(list.into(), &edit),
                    None => NamespacePods::new(list.into()),
                };
                by_namespace.insert(ns.to_string(), pods);
            }
        }

        let with_affinity =
            self.pods_with_affinity
                .with_changes(&removed, &added, Pod::has_pod_affinity_terms);
        let with_required_anti = self.pods_with_required_anti_affinity.with_changes(
            &removed,
            &added,
            Pod::has_required_anti_affinity,
        );

        Snapshot {
            nodes: self.nodes_with_pods_moved(&removed, &added),
            pods_by_namespace: Arc::new(by_namespace),
            pods_with_affinity: with_affinity,
            pods_with_required_anti_affinity: with_required_anti,
            pod_by_uid: self
                .pod_by_uid
                .with_changes(removed.iter().map(|r| r.pod.metadata.uid.as_str()), &added),
            nominated: self.nominated.with_changes(&removed, &added),
            pod_count: self.pod_count + added.len() - removed.len(),
            ..self.clone()
        }
    }

    fn pod_ref(&self, pod: &Arc<Pod>) -> PodRef {
        PodRef {
            node: node_of(&self.node_index, pod),
            pod: pod.clone(),
        }
    }

    /// The node list with `removed` pods taken off their nodes and `added`
    /// ones put on theirs; untouched nodes share their pod lists, and only
    /// the chunks of touched nodes are copied.
    fn nodes_with_pods_moved(&self, removed: &[PodRef], added: &[PodRef]) -> NodeList {
        let mut touched: Map<usize, (HashSet<usize>, Vec<Arc<Pod>>)> = Map::default();
        for r in removed {
            if let Some(i) = r.node {
                touched.entry(i as usize).or_default().0.insert(ptr(&r.pod));
            }
        }
        for r in added {
            if let Some(i) = r.node {
                touched.entry(i as usize).or_default().1.push(r.pod.clone());
            }
        }
        if touched.is_empty() {
            return self.nodes.clone();
        }
        let positions: Vec<usize> = touched.keys().copied().collect();
        self.nodes.edited(&positions, |i, info| {
            let Some((gone, new)) = touched.remove(&i) else {
                return;
            };
            info.pods = info
                .pods
                .changed(|p| gone.contains(&ptr(p)), new, self.requests_rule);
            info.pdbs = self.pdbs.of_pods(&info.pods);
        })
    }

    /// This snapshot with some nodes' objects replaced, when every one of
    /// them is already in the view; `None` when a node is new (indexes of
    /// all nodes shift, so the caller rebuilds).
    pub fn with_node_changes(&self, changed: &[Arc<Node>]) -> Option<Snapshot> {
        let mut by_position: Map<usize, &Arc<Node>> = Map::default();
        for node in changed {
            let i = self.node_idx(&node.metadata.name)?;
            by_position.insert(i as usize, node);
        }
        let mut labels_changed = false;
        let positions: Vec<usize> = by_position.keys().copied().collect();
        let nodes = self.nodes.edited(&positions, |i, info| {
            if let Some(node) = by_position.get(&i) {
                labels_changed |= info.node.metadata.labels != node.metadata.labels;
                info.node = Arc::clone(node);
            }
        });
        let mut plain_nodes = self.plain_nodes.to_vec();
        for &i in &positions {
            plain_nodes[i] = super::is_plain(&nodes[i].node);
        }
        let topology = if labels_changed {
            let all: Vec<Arc<Node>> = nodes.iter().map(|n| n.node.clone()).collect();
            Arc::new(TopologyIndex::of(&all))
        } else {
            self.topology.clone()
        };
        Some(Snapshot {
            nodes,
            plain_nodes: plain_nodes.into(),
            topology,
            ..self.clone()
        })
    }

    pub fn with_namespaces(&self, namespaces: Vec<Arc<Namespace>>) -> Snapshot {
        Snapshot {
            namespaces: Arc::new(namespaces_by_name(namespaces)),
            ..self.clone()
        }
    }

    /// New budgets; pods are matched again only when a budget was added,
    /// removed or got another selector (status updates are the common case).
    pub fn with_pdbs(&self, pdbs: Vec<Arc<PodDisruptionBudget>>) -> Snapshot {
        let pdbs = PdbIndex::new(pdbs);
        let nodes = if pdbs.selects_like(&self.pdbs) {
            self.nodes.clone()
        } else {
            self.nodes
                .iter()
                .map(|info| NodeInfo {
                    pdbs: pdbs.of_pods(&info.pods),
                    ..info.clone()
                })
                .collect()
        };
        Snapshot {
            nodes,
            pdbs,
            ..self.clone()
        }
    }

    pub fn with_priority_classes(&self, classes: Vec<Arc<PriorityClass>>) -> Snapshot {
        Snapshot {
            priority_classes: Arc::new(priority_classes_by_name(classes)),
            ..self.clone()
        }
    }

    pub fn with_device_classes(&self, classes: Vec<Arc<DeviceClass>>) -> Snapshot {
        Snapshot {
            extended_resource_classes: Arc::new(ExtendedResourceClasses::of(classes)),
            ..self.clone()
        }
    }

    /// This snapshot with one more ReplicaSet or StatefulSet among its
    /// namespace's owners: the controller of a workload not created yet
    /// (`fit`), whose selector default spread constraints read.
    pub fn with_selector_owner(&self, stateful_set: bool, owner: SelectorOwner) -> Snapshot {
        let mut owners = (*self.owners_by_namespace).clone();
        let of_namespace = owners.entry(owner.metadata.namespace.clone()).or_default();
        let list = if stateful_set {
            &mut of_namespace.stateful_sets
        } else {
            &mut of_namespace.replica_sets
        };
        list.push(Arc::new(owner));
        Snapshot {
            owners_by_namespace: Arc::new(owners),
            ..self.clone()
        }
    }

    pub fn with_owners(
        &self,
        services: Vec<Arc<MapSelectorOwner>>,
        replica_sets: Vec<Arc<SelectorOwner>>,
        stateful_sets: Vec<Arc<SelectorOwner>>,
        replication_controllers: Vec<Arc<MapSelectorOwner>>,
    ) -> Snapshot {
        Snapshot {
            owners_by_namespace: Arc::new(owners_by_namespace(
                services,
                replica_sets,
                stateful_sets,
                replication_controllers,
            )),
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ClusterObjects;
    use crate::testing::{make_node, make_pod};

    /// Labelled `app=<name up to the first dash>`, running on `node`; with
    /// `anti`, a required anti-affinity to `app=x` across `zone`.
    fn pod(ns: &str, name: &str, node: &str, anti: bool) -> Pod {
        let app = name.split('-').next().unwrap();
        let pod = make_pod(ns, name)
            .label("app", app)
            .node(node)
            .phase("Running");
        if !anti {
            return pod.obj();
        }
        // Pods of namespace "new" look across namespaces: both groups of
        // the term-holder index are exercised.
        let namespaces: Vec<&str> = if ns == "new" { vec!["shop"] } else { vec![] };
        pod.required_anti_affinity(serde_json::json!(
            {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone",
             "namespaces": namespaces}))
            .obj()
    }

    /// Everything a policy can ask, in a comparable form.
    fn answers(s: &Snapshot) -> String {
        let mut out = Vec::new();
        for n in s.nodes() {
            let mut pods: Vec<_> = n
                .pods
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let pdbs: Vec<_> = n.pdbs.of(i).iter().map(|&b| s.pdbs().pdb(b)).collect();
                    let pdbs: Vec<_> = pdbs.iter().map(|b| b.metadata.key()).collect();
                    format!("{} pdbs {}", p.metadata.key(), pdbs.join(","))
                })
                .collect();
            pods.sort();
            out.push(format!("node {} {:?}", n.node.name(), pods));
        }
        let mut nss: Vec<_> = s
            .namespaces_with_pods()
            .map(|(ns, pods)| {
                let mut v: Vec<_> = pods
                    .iter()
                    .map(|r| (r.pod.metadata.name.clone(), r.node))
                    .collect();
                v.sort();
                format!("ns {ns} {v:?}")
            })
            .collect();
        nss.sort();
        out.extend(nss);
        for holders in [&s.pods_with_affinity, &s.pods_with_required_anti_affinity] {
            out.extend(holders.describe());
        }
        out.extend(s.nominated.describe());
        for (_, pods) in s.namespaces_with_pods() {
            for r in pods {
                let by_uid = s.pod_by_uid(&r.pod.metadata.uid).unwrap();
                assert!(Arc::ptr_eq(&by_uid.pod, &r.pod));
                assert_eq!(by_uid.node, r.node);
            }
        }
        out.push(format!("{:?}", s.counts()));
        let zones = s
            .topology_domains("zone")
            .map(|d| d.iter().collect::<std::collections::BTreeMap<_, _>>());
        out.push(format!("{zones:?}"));
        out.join("\n")
    }

    fn pdb(ns: &str, app: &str, allowed: i32) -> PodDisruptionBudget {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": app, "namespace": ns},
            "spec": {"selector": {"matchLabels": {"app": app}}},
            "status": {"disruptionsAllowed": allowed}
        }))
        .unwrap()
    }

    fn nominated(mut p: Pod, node: &str) -> Pod {
        p.status.nominated_node_name = node.into();
        p
    }

    fn base_objects() -> ClusterObjects {
        ClusterObjects {
            nodes: vec![
                make_node("a").label("zone", "z1").obj(),
                make_node("b").label("zone", "z1").obj(),
                make_node("c").label("zone", "z2").obj(),
            ],
            pods: vec![
                pod("shop", "web-1", "a", true),
                pod("shop", "web-2", "b", false),
                pod("shop", "pending", "", false),
                pod("db", "pg-0", "c", false),
                nominated(pod("db", "pg-1", "", false), "c"),
            ],
            // "x" selects pods of namespace "new" only once one arrives.
            pdbs: vec![
                pdb("shop", "web", 1),
                pdb("db", "pg", 0),
                pdb("new", "x", 0),
            ],
            ..Default::default()
        }
    }

    /// Applying changes to a snapshot answers exactly like building the
    /// changed objects from scratch.
    fn check(changes: Vec<PodChange>, final_pods: Vec<Pod>) {
        let before = Snapshot::build(base_objects());
        let incremental = before.with_pod_changes(&changes);
        let rebuilt = Snapshot::build(ClusterObjects {
            pods: final_pods,
            ..base_objects()
        });
        assert_eq!(answers(&incremental), answers(&rebuilt));
        // The old snapshot is untouched.
        assert_eq!(answers(&before), answers(&Snapshot::build(base_objects())));
    }

    #[test]
    fn binding_a_pending_pod_moves_it_onto_its_node() {
        check(
            vec![PodChange::upsert(Arc::new(pod(
                "shop", "pending", "c", true,
            )))],
            vec![
                pod("shop", "web-1", "a", true),
                pod("shop", "web-2", "b", false),
                pod("shop", "pending", "c", true),
                pod("db", "pg-0", "c", false),
                nominated(pod("db", "pg-1", "", false), "c"),
            ],
        );
    }

    #[test]
    fn deleting_the_last_pod_of_a_namespace_drops_the_namespace() {
        check(
            vec![
                PodChange::delete("db", "pg-0"),
                PodChange::delete("db", "pg-1"),
            ],
            vec![
                pod("shop", "web-1", "a", true),
                pod("shop", "web-2", "b", false),
                pod("shop", "pending", "", false),
            ],
        );
    }

    #[test]
    fn a_new_pod_in_a_new_namespace_is_indexed_everywhere() {
        let mut pods = base_objects().pods;
        pods.push(pod("new", "x", "b", true));
        check(
            vec![PodChange::upsert(Arc::new(pod("new", "x", "b", true)))],
            pods,
        );
    }

    #[test]
    fn a_pod_that_finished_leaves_the_view() {
        let mut done = pod("shop", "web-2", "b", false);
        done.status.phase = "Succeeded".into();
        check(
            vec![PodChange::upsert(Arc::new(done))],
            vec![
                pod("shop", "web-1", "a", true),
                pod("shop", "pending", "", false),
                pod("db", "pg-0", "c", false),
                nominated(pod("db", "pg-1", "", false), "c"),
            ],
        );
    }

    #[test]
    fn the_last_change_of_a_pod_in_a_batch_wins() {
        check(
            vec![
                PodChange::delete("shop", "web-1"),
                PodChange::upsert(Arc::new(pod("shop", "web-1", "c", false))),
            ],
            vec![
                pod("shop", "web-1", "c", false),
                pod("shop", "web-2", "b", false),
                pod("shop", "pending", "", false),
                pod("db", "pg-0", "c", false),
                nominated(pod("db", "pg-1", "", false), "c"),
            ],
        );
    }

    #[test]
    fn binding_a_nominated_pod_takes_it_out_of_the_nominated_index() {
        let bound = nominated(pod("db", "pg-1", "c", false), "c");
        check(
            vec![PodChange::upsert(Arc::new(bound.clone()))],
            vec![
                pod("shop", "web-1", "a", true),
                pod("shop", "web-2", "b", false),
                pod("shop", "pending", "", false),
                pod("db", "pg-0", "c", false),
                bound,
            ],
        );
    }

    #[test]
    fn a_new_or_changed_nomination_moves_the_pod_in_the_nominated_index() {
        check(
            vec![
                PodChange::upsert(Arc::new(nominated(pod("shop", "pending", "", false), "a"))),
                PodChange::upsert(Arc::new(nominated(pod("db", "pg-1", "", false), "gone"))),
            ],
            vec![
                pod("shop", "web-1", "a", true),
                pod("shop", "web-2", "b", false),
                nominated(pod("shop", "pending", "", false), "a"),
                pod("db", "pg-0", "c", false),
                nominated(pod("db", "pg-1", "", false), "gone"),
            ],
        );
        let s = Snapshot::build(base_objects());
        assert_eq!(s.nominated_to("c").len(), 1);
        let s2 = s.with_pod_changes(&[PodChange::delete("db", "pg-1")]);
        assert!(s2.nominated_to("c").is_empty());
        assert_eq!(s.nominated_to("c").len(), 1, "the old snapshot keeps it");
    }

    #[test]
    fn a_pod_moving_to_another_node_takes_its_budgets_along() {
        check(
            vec![PodChange::upsert(Arc::new(pod("shop", "web-1", "c", true)))],
            vec![
                pod("shop", "web-1", "c", true),
                pod("shop", "web-2", "b", false),
                pod("shop", "pending", "", false),
                pod("db", "pg-0", "c", false),
                nominated(pod("db", "pg-1", "", false), "c"),
            ],
        );
    }

    #[test]
    fn a_status_update_of_the_budgets_keeps_the_matches_and_shows_the_status() {
        let s = Snapshot::build(base_objects());
        let s2 = s.with_pdbs(vec![
            Arc::new(pdb("shop", "web", 5)),
            Arc::new(pdb("db", "pg", 0)),
            Arc::new(pdb("new", "x", 0)),
        ]);
        assert!(s.nodes.shares_all(&s2.nodes), "no node is matched again");
        let a = s2.node("a").unwrap();
        assert_eq!(s2.pdbs().pdb(a.pdbs.of(0)[0]).status.disruptions_allowed, 5);
        assert_eq!(s2.pdbs().disruptions_allowed(a.pdbs.of(0)[0]), 5);
        assert_eq!(answers(&s2), answers(&s));
    }

    #[test]
    fn new_or_changed_budgets_match_the_pods_again() {
        let mut web_too = pdb("shop", "web", 0);
        web_too.metadata.name = "web-too".into();
        let mut pg_now_web = pdb("db", "pg", 0);
        pg_now_web.spec = pdb("db", "web", 0).spec;
        let pdbs = vec![pdb("shop", "web", 1), web_too, pg_now_web];
        let incremental =
            Snapshot::build(base_objects()).with_pdbs(pdbs.iter().cloned().map(Arc::new).collect());
        let rebuilt = Snapshot::build(ClusterObjects {
            pdbs,
            ..base_objects()
        });
        assert_eq!(answers(&incremental), answers(&rebuilt));
        let text = answers(&incremental);
        assert!(
            text.contains("shop/web-1 pdbs shop/web,shop/web-too"),
            "{text}"
        );
        assert!(text.contains(r#""db/pg-0 pdbs ""#), "{text}");
    }

    #[test]
    fn node_label_changes_update_topology_domains() {
        let s = Snapshot::build(base_objects());
        let s2 = s
            .with_node_changes(&[Arc::new(make_node("b").label("zone", "z2").obj())])
            .unwrap();
        let zones = s2.topology_domains("zone").unwrap();
        let count = |v| zones.node_count(zones.id(v).unwrap());
        assert_eq!((count("z1"), count("z2")), (1, 2));
        assert_eq!(s2.node("b").unwrap().pods.len(), 1);
        assert!(
            s.with_node_changes(&[Arc::new(make_node("new").label("zone", "z1").obj())])
                .is_none()
        );
    }
}
