//! The immutable, indexed cluster view every request reads.
//!
//! Built once per change by a source and never mutated afterwards. Indexes
//! answer the questions the policies ask without scanning all pods: pods by
//! node (with what preemption reads of each, side by side), pods by
//! namespace, pods that carry pod (anti-)affinity terms, pod by UID,
//! unbound pods by nominated node, namespace labels, the PDBs selecting
//! each bound pod, PriorityClasses by name, the extended resources
//! DeviceClasses map, the owners that define default spread selectors, and
//! topology domains per label key. Collections are
//! `Arc`-shared so a source can publish a new snapshot that reuses every
//! part an update did not touch.

use std::collections::BTreeMap;
use std::sync::Arc;

use foldhash::HashMapExt;

use self::uid_index::UidIndex;
use super::Kind;
use crate::model::requests::RequestsRule;
use crate::model::{
    DeviceClass, LabelSelector, Labels, MapSelectorOwner, Namespace, Node, Pod,
    PodDisruptionBudget, PriorityClass, SelectorOwner,
};

mod chunked;
mod device_classes;
mod indexes;
mod label_index;
mod label_twins;
mod name_index;
mod node_pods;
mod node_sets;
mod nominated_index;
mod pdb_index;
mod term_holders;
mod topology;
mod uid_index;
mod update;

pub use self::chunked::{Chunked, NodeList};
pub use self::device_classes::ExtendedResourceClasses;
use self::indexes::{namespaces_by_name, node_of, owners_by_namespace, priority_classes_by_name};
pub use self::label_index::Candidates;
use self::label_index::{LabelIndex, ListEdit};
use self::label_twins::LabelTwins;
pub use self::name_index::NameIndex;
pub use self::node_pods::{NodePods, PodSummary, pod_importance};
pub use self::node_sets::{NodeSet, NodeSets};
use self::nominated_index::NominatedIndex;
pub use self::pdb_index::{PdbIndex, PodPdbs};
pub use self::term_holders::HolderGroup;
use self::term_holders::TermHolders;
pub use self::topology::{ByNode, DomainId, KeyDomains, TopologyIndex};
pub use self::update::PodChange;

type Map<K, V> = foldhash::HashMap<K, V>;

/// Every object a source hands over; the snapshot takes what it needs.
/// With them, how the snapshot counts what its bound pods hold.
#[derive(Debug, Clone, Default)]
pub struct ClusterObjects {
    /// The followed release's rule (`Upstream::requests_rule`), chosen by
    /// whoever starts the source.
    pub requests_rule: RequestsRule,
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
    pub namespaces: Vec<Namespace>,
    pub pdbs: Vec<PodDisruptionBudget>,
    pub priority_classes: Vec<PriorityClass>,
    pub device_classes: Vec<DeviceClass>,
    pub services: Vec<MapSelectorOwner>,
    pub replica_sets: Vec<SelectorOwner>,
    pub stateful_sets: Vec<SelectorOwner>,
    pub replication_controllers: Vec<MapSelectorOwner>,
}

/// Index of a node in [`Snapshot::nodes`]; stable within one snapshot.
pub type NodeIdx = u32;

/// A node with the pods bound to it.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    pub node: Arc<Node>,
    /// Shared so that a change on another node copies nothing of these.
    pub pods: NodePods,
    /// The PodDisruptionBudgets selecting each of `pods` (positions in
    /// [`Snapshot::pdbs`]).
    pub pdbs: PodPdbs,
}

/// A pod and the index of its node (`None` when unassigned or bound to a
/// node the view does not know).
#[derive(Debug, Clone)]
pub struct PodRef {
    pub node: Option<NodeIdx>,
    pub pod: Arc<Pod>,
}

/// A pod named by where the view lists it: the list (a namespace's pods,
/// or a group of term holders) and its place there. Holding a pod this way
/// takes no reference count on it; counting a few hundred pods took one
/// apiece, each a cache miss of a served request.
#[derive(Debug, Clone, Copy)]
pub struct ListedPod<'a> {
    pub list: &'a Arc<[PodRef]>,
    pub at: u32,
}

impl<'a> ListedPod<'a> {
    pub fn pod_ref(&self) -> &'a PodRef {
        &self.list[self.at as usize]
    }
}

/// Workload owners of one namespace, for default spread selectors.
#[derive(Debug, Clone, Default)]
pub struct Owners {
    pub services: Vec<Arc<MapSelectorOwner>>,
    pub replica_sets: Vec<Arc<SelectorOwner>>,
    pub stateful_sets: Vec<Arc<SelectorOwner>>,
    pub replication_controllers: Vec<Arc<MapSelectorOwner>>,
}

#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    nodes: NodeList,
    node_index: Arc<NameIndex>,
    /// Per node: neither cordoned nor tainted NoSchedule or NoExecute
    /// ([`Self::node_is_plain`]).
    plain_nodes: Arc<[bool]>,
    /// Request node objects found to carry a view node's labels; shared by
    /// every snapshot made from this one (see [`Self::same_labels`]).
    label_twins: Arc<LabelTwins>,
    pods_by_namespace: Arc<Map<String, NamespacePods>>,
    pods_with_affinity: TermHolders,
    pods_with_required_anti_affinity: TermHolders,
    pod_by_uid: UidIndex,
    nominated: NominatedIndex,
    namespaces: Arc<Map<String, Arc<Namespace>>>,
    pdbs: PdbIndex,
    priority_classes: Arc<BTreeMap<String, Arc<PriorityClass>>>,
    extended_resource_classes: Arc<ExtendedResourceClasses>,
    owners_by_namespace: Arc<Map<String, Owners>>,
    topology: Arc<TopologyIndex>,
    pod_count: usize,
    /// The pod resourceVersion the view has caught up with (live source):
    /// a pod that existed at this version or before and is not in the view
    /// has been deleted. 0 when unknown (a state file).
    pods_as_of: u64,
    /// How the bound pods' requests were counted, and how pods a change
    /// brings are counted.
    requests_rule: RequestsRule,
}

/// The pods of one namespace and the label index over exactly that list;
/// both are replaced together when the list changes.
#[derive(Debug, Clone)]
struct NamespacePods {
    pods: Arc<[PodRef]>,
    labels: Arc<LabelIndex>,
}

impl NamespacePods {
    fn new(pods: Arc<[PodRef]>) -> Self {
        Self {
            pods,
            labels: Arc::default(),
        }
    }

    /// The new list `pods`, made from this one by `edit`, with the label
    /// index carried over.
    fn edited(&self, pods: Arc<[PodRef]>, edit: &ListEdit) -> Self {
        let labels = Arc::new(self.labels.after(&self.pods, &pods, edit));
        Self { pods, labels }
    }
}

/// Objects in the view by kind, for metrics and logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ObjectCounts {
    pub nodes: usize,
    pub pods: usize,
    pub namespaces: usize,
    pub pdbs: usize,
    pub priority_classes: usize,
    pub device_classes: usize,
    pub services: usize,
    pub replica_sets: usize,
    pub stateful_sets: usize,
    pub replication_controllers: usize,
}

impl ObjectCounts {
    pub fn by_kind(&self) -> [(&'static str, usize); Kind::ALL.len()] {
        [
            ("Node", self.nodes),
            ("Pod", self.pods),
            ("Namespace", self.namespaces),
            ("PodDisruptionBudget", self.pdbs),
            ("PriorityClass", self.priority_classes),
            ("DeviceClass", self.device_classes),
            ("Service", self.services),
            ("ReplicaSet", self.replica_sets),
            ("StatefulSet", self.stateful_sets),
            ("ReplicationController", self.replication_controllers),
        ]
    }
}

static NO_PODS: [PodRef; 0] = [];

/// The objects of a snapshot, already shared; what a full rebuild starts from.
#[derive(Debug, Clone, Default)]
pub struct SharedObjects {
    /// As [`ClusterObjects::requests_rule`].
    pub requests_rule: RequestsRule,
    pub nodes: Vec<Arc<Node>>,
    pub pods: Vec<Arc<Pod>>,
    pub namespaces: Vec<Arc<Namespace>>,
    pub pdbs: Vec<Arc<PodDisruptionBudget>>,
    pub priority_classes: Vec<Arc<PriorityClass>>,
    pub device_classes: Vec<Arc<DeviceClass>>,
    pub services: Vec<Arc<MapSelectorOwner>>,
    pub replica_sets: Vec<Arc<SelectorOwner>>,
    pub stateful_sets: Vec<Arc<SelectorOwner>>,
    pub replication_controllers: Vec<Arc<MapSelectorOwner>>,
}

impl From<ClusterObjects> for SharedObjects {
    fn from(o: ClusterObjects) -> Self {
        fn share<T>(v: Vec<T>) -> Vec<Arc<T>> {
            v.into_iter().map(Arc::new).collect()
        }
        SharedObjects {
            requests_rule: o.requests_rule,
            nodes: share(o.nodes),
            pods: share(o.pods),
            namespaces: share(o.namespaces),
            pdbs: share(o.pdbs),
            priority_classes: share(o.priority_classes),
            device_classes: share(o.device_classes),
            services: share(o.services),
            replica_sets: share(o.replica_sets),
            stateful_sets: share(o.stateful_sets),
            replication_controllers: share(o.replication_controllers),
        }
    }
}

/// See [`Snapshot::node_is_plain`]. A PreferNoSchedule taint only
/// weighs in scoring, so a node with only such taints is plain for the
/// filters (948 of the synthetic cluster's 5,000 nodes).
fn is_plain(node: &Node) -> bool {
    !node.spec.unschedulable && !node.spec.taints.iter().any(|t| t.blocks_scheduling())
}

impl Snapshot {
    /// Index `objects`. Succeeded and Failed pods are dropped here.
    pub fn build(objects: ClusterObjects) -> Self {
        Self::build_shared(objects.into())
    }

    /// Index objects that are already shared (a source's store); nothing is
    /// copied but the indexes.
    pub fn build_shared(objects: SharedObjects) -> Self {
        let mut nodes = objects.nodes;
        nodes.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        nodes.dedup_by(|a, b| a.metadata.name == b.metadata.name);

        let node_index = NameIndex::new(nodes.iter().map(|n| n.metadata.name.as_str()));
        let topology = TopologyIndex::of(&nodes);
        let pdbs = PdbIndex::new(objects.pdbs);
        let mut node_pods: Vec<Vec<Arc<Pod>>> = vec![Vec::new(); nodes.len()];

        let mut by_namespace: Map<String, Vec<PodRef>> = Map::new();
        let mut by_uid = UidIndex::builder();
        let mut pod_count = 0;
        for pod in objects.pods {
            if pod.is_terminal() {
                continue;
            }
            pod_count += 1;
            let r = PodRef {
                node: node_of(&node_index, &pod),
                pod,
            };
            if let Some(i) = r.node {
                node_pods[i as usize].push(r.pod.clone());
            }
            by_uid.insert(&r);
            by_namespace
                .entry(r.pod.metadata.namespace.clone())
                .or_default()
                .push(r);
        }
        let infos: Vec<NodeInfo> = nodes
            .into_iter()
            .zip(node_pods)
            .map(|(node, pods)| NodeInfo {
                node,
                pdbs: pdbs.of_pods(&pods),
                pods: NodePods::new(pods, objects.requests_rule),
            })
            .collect();

        let all_pods = || by_namespace.values().flatten();
        let with_affinity = TermHolders::build(all_pods(), Pod::has_pod_affinity_terms);
        let with_required_anti = TermHolders::build(all_pods(), Pod::has_required_anti_affinity);
        let nominated = NominatedIndex::build(all_pods());
        Snapshot {
            plain_nodes: infos.iter().map(|i| is_plain(&i.node)).collect(),
            label_twins: Arc::new(LabelTwins::new(infos.len())),
            nodes: infos.into_iter().collect(),
            node_index: Arc::new(node_index),
            pods_by_namespace: Arc::new(
                by_namespace
                    .into_iter()
                    .map(|(k, v)| (k, NamespacePods::new(v.into())))
                    .collect(),
            ),
            pods_with_affinity: with_affinity,
            pods_with_required_anti_affinity: with_required_anti,
            pod_by_uid: by_uid.finish(),
            nominated,
            namespaces: Arc::new(namespaces_by_name(objects.namespaces)),
            pdbs,
            priority_classes: Arc::new(priority_classes_by_name(objects.priority_classes)),
            extended_resource_classes: Arc::new(ExtendedResourceClasses::of(
                objects.device_classes,
            )),
            owners_by_namespace: Arc::new(owners_by_namespace(
                objects.services,
                objects.replica_sets,
                objects.stateful_sets,
                objects.replication_controllers,
            )),
            topology: Arc::new(topology),
            pod_count,
            pods_as_of: 0,
            requests_rule: objects.requests_rule,
        }
    }

    /// All nodes, sorted by name; a [`NodeIdx`] indexes this list.
    pub fn nodes(&self) -> &NodeList {
        &self.nodes
    }

    pub fn node_idx(&self, name: &str) -> Option<NodeIdx> {
        self.node_index.get(name)
    }

    /// [`Self::node_idx`] of every name, in order; for hundreds of names
    /// faster than one by one (`NameIndex::get_all`).
    pub fn node_idxs<S: AsRef<str>>(&self, names: &[S]) -> Vec<Option<NodeIdx>> {
        self.node_index.get_all(names)
    }

    /// Whether the node at `idx` is neither cordoned nor tainted NoSchedule
    /// or NoExecute, so that NodeUnschedulable and TaintToleration pass
    /// every pod there: a filter need not read the node object for them (a
    /// cache miss per candidate on a served request).
    pub fn node_is_plain(&self, idx: NodeIdx) -> bool {
        self.plain_nodes.get(idx as usize).copied().unwrap_or(false)
    }

    /// Whether the node object `node` carries the labels of the view's
    /// node at `idx`; remembered for the same pair of objects.
    pub fn same_labels(&self, idx: NodeIdx, node: &Arc<Node>) -> bool {
        let view = &self.nodes[idx as usize].node;
        self.label_twins.same_labels(idx as usize, view, node)
    }

    /// Node name → index, shared, for prepared state that outlives a borrow.
    pub fn node_index(&self) -> Arc<NameIndex> {
        Arc::clone(&self.node_index)
    }

    pub fn node(&self, name: &str) -> Option<&NodeInfo> {
        self.node_idx(name).map(|i| &self.nodes[i as usize])
    }

    /// Every non-terminal pod of `namespace`, bound or not.
    pub fn pods_in_namespace(&self, namespace: &str) -> &[PodRef] {
        self.pods_by_namespace
            .get(namespace)
            .map_or(&NO_PODS[..], |p| &p.pods[..])
    }

    /// The pods of `namespace` that may match `selector`: every pod it
    /// selects and possibly others (check the selector on each), found
    /// through a label index when the selector has an equality requirement.
    pub fn pods_maybe_selected(&self, namespace: &str, selector: &LabelSelector) -> Candidates<'_> {
        match self.pods_by_namespace.get(namespace) {
            Some(p) => p.labels.candidates(&p.pods, selector),
            None => Candidates::All {
                pods: &NO_PODS,
                next: 0,
            },
        }
    }

    /// The pods of `namespace` that `selector` selects, found through the
    /// label index, the selector checked only where the index cannot tell.
    pub fn pods_selected<'a, 's>(
        &'a self,
        namespace: &str,
        selector: &'s LabelSelector,
    ) -> impl Iterator<Item = &'a PodRef> + use<'a, 's> {
        self.pods_selected_listed(namespace, selector)
            .map(|p| p.pod_ref())
    }

    /// [`Self::pods_selected`], each pod with its place in the namespace's
    /// list.
    pub fn pods_selected_listed<'a, 's>(
        &'a self,
        namespace: &str,
        selector: &'s LabelSelector,
    ) -> impl Iterator<Item = ListedPod<'a>> + use<'a, 's> {
        let mut found = (self.pods_by_namespace.get(namespace))
            .map(|p| (&p.pods, p.labels.candidates(&p.pods, selector)));
        std::iter::from_fn(move || {
            let (list, candidates) = found.as_mut()?;
            let exact = candidates.all_selected();
            loop {
                let (at, r) = candidates.next_placed()?;
                if exact || selector.matches(&r.pod.metadata.labels) {
                    return Some(ListedPod { list, at });
                }
            }
        })
    }

    /// Namespaces that have at least one pod, with their pods.
    pub fn namespaces_with_pods(&self) -> impl Iterator<Item = (&str, &[PodRef])> {
        self.pods_by_namespace
            .iter()
            .map(|(k, v)| (k.as_str(), &v.pods[..]))
    }

    /// Bound pods with any pod affinity or anti-affinity term that could
    /// select a pod of `namespace` (their terms look there or anywhere), in
    /// groups that judge alike.
    pub fn pod_groups_with_affinity_for(
        &self,
        namespace: &str,
    ) -> impl Iterator<Item = &HolderGroup> {
        self.pods_with_affinity.selecting_in(namespace)
    }

    /// Bound pods with a required anti-affinity term (they can block
    /// others) that could select a pod of `namespace`, in groups that judge
    /// alike.
    pub fn pod_groups_with_required_anti_affinity_for(
        &self,
        namespace: &str,
    ) -> impl Iterator<Item = &HolderGroup> {
        self.pods_with_required_anti_affinity
            .selecting_in(namespace)
    }

    pub fn pod_by_uid(&self, uid: &str) -> Option<&PodRef> {
        self.pod_by_uid.get(uid)
    }

    /// Whether any unbound pod is nominated to a node.
    pub fn has_nominated_pods(&self) -> bool {
        !self.nominated.is_empty()
    }

    /// Unbound pods whose `status.nominatedNodeName` is `node`.
    pub fn nominated_to(&self, node: &str) -> &[Arc<Pod>] {
        self.nominated.on(node)
    }

    pub fn pod(&self, namespace: &str, name: &str) -> Option<&PodRef> {
        self.pods_in_namespace(namespace)
            .iter()
            .find(|r| r.pod.metadata.name == name)
    }

    pub fn namespace(&self, name: &str) -> Option<&Namespace> {
        self.namespaces.get(name).map(|n| &**n)
    }

    /// Labels of a namespace; empty when the view does not know it.
    pub fn namespace_labels(&self, name: &str) -> Option<&Labels> {
        self.namespace(name).map(|n| &*n.metadata.labels)
    }

    pub fn all_namespaces(&self) -> impl Iterator<Item = &Namespace> {
        self.namespaces.values().map(|n| &**n)
    }

    /// Every PodDisruptionBudget; [`NodeInfo::pdbs`] says which select
    /// each bound pod.
    pub fn pdbs(&self) -> &PdbIndex {
        &self.pdbs
    }

    pub fn priority_class(&self, name: &str) -> Option<&PriorityClass> {
        self.priority_classes.get(name).map(|p| &**p)
    }

    /// All PriorityClasses, by name.
    pub fn priority_classes(&self) -> impl Iterator<Item = &PriorityClass> {
        self.priority_classes.values().map(|p| &**p)
    }

    /// The extended resources DeviceClasses map.
    pub fn extended_resource_classes(&self) -> &ExtendedResourceClasses {
        &self.extended_resource_classes
    }

    pub fn owners_in_namespace(&self, namespace: &str) -> Option<&Owners> {
        self.owners_by_namespace.get(namespace)
    }

    /// Topology domains of a label key: its values, the nodes carrying
    /// each, and each node's value; `None` when no node has the key.
    pub fn topology_domains(&self, key: &str) -> Option<&Arc<KeyDomains>> {
        self.topology.key(key)
    }

    /// Every label key's domains, to share with prepared per-pod state.
    pub fn topology(&self) -> &Arc<TopologyIndex> {
        &self.topology
    }

    /// How this view counts what a pod on a node holds (given with its
    /// objects; kept by every snapshot made from this one).
    pub fn requests_rule(&self) -> RequestsRule {
        self.requests_rule
    }

    /// See [`Self::with_pods_as_of`]; 0 when unknown.
    pub fn pods_as_of(&self) -> u64 {
        self.pods_as_of
    }

    /// This snapshot, saying its pods are every pod that existed at pod
    /// resourceVersion `version` and still does ([`ObjectMeta::version`]).
    ///
    /// [`ObjectMeta::version`]: crate::model::ObjectMeta::version
    pub fn with_pods_as_of(mut self, version: u64) -> Self {
        self.pods_as_of = version;
        self
    }

    pub fn counts(&self) -> ObjectCounts {
        let owners = self.owners_by_namespace.values();
        let mut c = ObjectCounts {
            nodes: self.nodes.len(),
            pods: self.pod_count,
            namespaces: self.namespaces.len(),
            pdbs: self.pdbs.len(),
            priority_classes: self.priority_classes.len(),
            device_classes: self.extended_resource_classes.classes(),
            ..Default::default()
        };
        for o in owners {
            c.services += o.services.len();
            c.replica_sets += o.replica_sets.len();
            c.stateful_sets += o.stateful_sets.len();
            c.replication_controllers += o.replication_controllers.len();
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{make_node, make_pod};

    fn sample() -> Snapshot {
        // One row per pod; uids are `uid-<name>` (a test looks one up).
        let pod = |ns, name: &str, node, phase| {
            let uid = format!("uid-{name}");
            make_pod(ns, name).uid(&uid).node(node).phase(phase).obj()
        };
        Snapshot::build(ClusterObjects {
            nodes: vec![
                make_node("b").zone("z1").obj(),
                make_node("a").zone("z1").obj(),
                make_node("c").zone("z2").obj(),
            ],
            pods: vec![
                pod("shop", "p1", "a", "Running"),
                pod("shop", "p2", "b", "Pending"),
                pod("shop", "done", "a", "Succeeded"),
                pod("shop", "failed", "a", "Failed"),
                pod("other", "p3", "", "Pending"),
                pod("other", "ghost", "unknown-node", "Running"),
            ],
            ..Default::default()
        })
    }

    #[test]
    fn nodes_are_sorted_by_name_and_indexed() {
        let s = sample();
        let names: Vec<_> = s.nodes().iter().map(|n| n.node.name()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(s.node_idx("c"), Some(2));
        assert!(s.node("zz").is_none());
    }

    #[test]
    fn terminal_pods_are_not_part_of_the_view() {
        let s = sample();
        assert_eq!(s.counts().pods, 4);
        assert_eq!(s.node("a").unwrap().pods.len(), 1);
        assert!(s.pod_by_uid("uid-done").is_none());
    }

    #[test]
    fn pods_are_indexed_by_namespace_with_their_node() {
        let s = sample();
        let shop = s.pods_in_namespace("shop");
        assert_eq!(shop.len(), 2);
        assert_eq!(s.pod("other", "p3").unwrap().node, None);
        assert_eq!(s.pod("other", "ghost").unwrap().node, None);
        assert_eq!(s.pod("shop", "p2").unwrap().node, Some(1));
        assert!(s.pods_in_namespace("nope").is_empty());
    }

    #[test]
    fn topology_domains_count_nodes_per_value() {
        let s = sample();
        let zones = s.topology_domains("topology.kubernetes.io/zone").unwrap();
        assert_eq!(zones.node_count(zones.id("z1").unwrap()), 2);
        assert_eq!(zones.node_count(zones.id("z2").unwrap()), 1);
    }

    /// The rule given with the objects counts the bound pods, and the pods
    /// a change brings later: a pod whose sidecar reports 2 cpu in use and
    /// whose plain init container reports 4 holds 3 under 1.36's rule
    /// (app 1 + sidecar 2), 4 under 1.37's.
    #[test]
    fn the_requests_rule_given_with_the_objects_counts_every_bound_pod() {
        let resized = |name: &str| -> Pod {
            let cpu = |n: &str| serde_json::json!({"requests": {"cpu": n}});
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "namespace": "ns", "uid": format!("u-{name}")},
                "spec": {"nodeName": "n1",
                    "containers": [{"name": "app", "resources": cpu("1")}],
                    "initContainers": [
                        {"name": "setup", "resources": cpu("500m")},
                        {"name": "proxy", "restartPolicy": "Always", "resources": cpu("500m")}]},
                "status": {"phase": "Running", "initContainerStatuses": [
                    {"name": "setup", "resources": cpu("4")},
                    {"name": "proxy", "resources": cpu("2"), "allocatedResources": {"cpu": "2"}}]}
            }))
            .unwrap()
        };
        for (rule, cpu) in [
            (RequestsRule::PerContainerMax, 3000),
            (RequestsRule::MaxOfSums, 4000),
        ] {
            let s = Snapshot::build(ClusterObjects {
                requests_rule: rule,
                nodes: vec![make_node("n1").obj()],
                pods: vec![resized("a")],
                ..Default::default()
            });
            assert_eq!(s.nodes()[0].pods.requested().cpu, cpu, "{rule:?}");
            let later = s.with_pod_changes(&[PodChange::upsert(Arc::new(resized("b")))]);
            assert_eq!(later.requests_rule(), rule);
            assert_eq!(later.nodes()[0].pods.requested().cpu, 2 * cpu, "{rule:?}");
        }
    }
}
