//! The writer's side of the live view: every watched object by kind, as the
//! watches last reported them, and the changes not yet published. Publishing
//! turns the pending changes into a new snapshot incrementally; only a
//! relist or a node appearing or disappearing rebuilds everything.

use std::sync::Arc;

use super::ingest::LeanObject;
use crate::cluster::{Kind, PodChange, SharedObjects, Snapshot};
use crate::model::requests::RequestsRule;
use crate::model::{
    DeviceClass, MapSelectorOwner, Namespace, Node, Pod, PodDisruptionBudget, PriorityClass,
    SelectorOwner,
};

type Map<K, V> = foldhash::HashMap<K, V>;

/// What a watch reported, already decoded into the lean model (and shared,
/// as the snapshot will hold it).
#[derive(Debug, Clone)]
pub enum KindEvent<T> {
    /// A (re)list starts; the listed objects follow as `InitApply`.
    Init,
    InitApply(Arc<T>),
    /// The list is complete: it replaces everything known of the kind.
    InitDone,
    Apply(Arc<T>),
    Delete(Arc<T>),
}

/// One watch event of any kind.
#[derive(Debug, Clone)]
pub enum Update {
    Node(KindEvent<Node>),
    Pod(KindEvent<Pod>),
    Namespace(KindEvent<Namespace>),
    Pdb(KindEvent<PodDisruptionBudget>),
    PriorityClass(KindEvent<PriorityClass>),
    DeviceClass(KindEvent<DeviceClass>),
    Service(KindEvent<MapSelectorOwner>),
    ReplicaSet(KindEvent<SelectorOwner>),
    StatefulSet(KindEvent<SelectorOwner>),
    ReplicationController(KindEvent<MapSelectorOwner>),
}

/// How an event changed one kind's objects.
enum Applied<T> {
    Nothing,
    Upserted { object: Arc<T>, existed: bool },
    Deleted { namespace: String, name: String },
    Replaced,
}

struct KindStore<T> {
    objects: Map<String, Arc<T>>,
    relist: Option<Map<String, Arc<T>>>,
}

impl<T> Default for KindStore<T> {
    fn default() -> Self {
        Self {
            objects: Map::default(),
            relist: None,
        }
    }
}

fn key<T: LeanObject>(o: &T) -> String {
    o.lean_meta().key()
}

impl<T: LeanObject> KindStore<T> {
    fn apply(&mut self, event: KindEvent<T>) -> Applied<T> {
        match event {
            KindEvent::Init => {
                self.relist = Some(Map::default());
                Applied::Nothing
            }
            KindEvent::InitApply(o) => {
                self.relist
                    .get_or_insert_with(Map::default)
                    .insert(key(&*o), o);
                Applied::Nothing
            }
            KindEvent::InitDone => {
                self.objects = self.relist.take().unwrap_or_default();
                Applied::Replaced
            }
            KindEvent::Apply(object) => {
                let existed = self.objects.insert(key(&*object), object.clone()).is_some();
                Applied::Upserted { object, existed }
            }
            KindEvent::Delete(o) => {
                self.objects.remove(&key(&*o));
                let m = o.lean_meta();
                Applied::Deleted {
                    namespace: m.namespace.clone(),
                    name: m.name.clone(),
                }
            }
        }
    }

    fn all(&self) -> Vec<Arc<T>> {
        self.objects.values().cloned().collect()
    }

    fn len(&self) -> usize {
        self.objects.len()
    }
}

/// Changes since the last publish.
#[derive(Default)]
struct Pending {
    rebuild: bool,
    pods: Vec<PodChange>,
    nodes: Vec<Arc<Node>>,
    namespaces: bool,
    pdbs: bool,
    priority_classes: bool,
    device_classes: bool,
    owners: bool,
}

#[derive(Default)]
pub struct Store {
    nodes: KindStore<Node>,
    pods: KindStore<Pod>,
    namespaces: KindStore<Namespace>,
    pdbs: KindStore<PodDisruptionBudget>,
    priority_classes: KindStore<PriorityClass>,
    device_classes: KindStore<DeviceClass>,
    services: KindStore<MapSelectorOwner>,
    replica_sets: KindStore<SelectorOwner>,
    stateful_sets: KindStore<SelectorOwner>,
    replication_controllers: KindStore<MapSelectorOwner>,
    pending: Pending,
    dirty: bool,
    pods_as_of: PodsAsOf,
    /// How the snapshots count what a pod on a node holds.
    requests_rule: RequestsRule,
}

/// The highest pod resourceVersion applied ([`Snapshot::pods_as_of`]),
/// and during a relist the highest listed so far.
#[derive(Default)]
struct PodsAsOf {
    applied: u64,
    listing: u64,
}

impl PodsAsOf {
    /// How far the pods applied reach: a listed pod's version is below the
    /// list's own, so the highest of them is a version the view has caught
    /// up with once the list is in; an event's is its change's.
    fn note(&mut self, e: &KindEvent<Pod>) {
        let version = |p: &Pod| p.metadata.version().unwrap_or(0);
        match e {
            KindEvent::Init => self.listing = 0,
            KindEvent::InitApply(p) => self.listing = self.listing.max(version(p)),
            KindEvent::InitDone => self.applied = self.applied.max(self.listing),
            KindEvent::Apply(p) | KindEvent::Delete(p) => {
                self.applied = self.applied.max(version(p));
            }
        }
    }
}

impl Update {
    pub fn kind(&self) -> Kind {
        match self {
            Update::Node(_) => Kind::Node,
            Update::Pod(_) => Kind::Pod,
            Update::Namespace(_) => Kind::Namespace,
            Update::Pdb(_) => Kind::PodDisruptionBudget,
            Update::PriorityClass(_) => Kind::PriorityClass,
            Update::DeviceClass(_) => Kind::DeviceClass,
            Update::Service(_) => Kind::Service,
            Update::ReplicaSet(_) => Kind::ReplicaSet,
            Update::StatefulSet(_) => Kind::StatefulSet,
            Update::ReplicationController(_) => Kind::ReplicationController,
        }
    }
}

/// Whether an event was a plain change of one object, a relist start, or a
/// relist end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Relisting,
    Listed,
    Changed,
    Listing,
}

fn phase_of<T>(e: &KindEvent<T>) -> Phase {
    match e {
        KindEvent::Init => Phase::Relisting,
        KindEvent::InitApply(_) => Phase::Listing,
        KindEvent::InitDone => Phase::Listed,
        KindEvent::Apply(_) | KindEvent::Delete(_) => Phase::Changed,
    }
}

impl Store {
    /// An empty store whose snapshots count requests by `rule`.
    pub fn new(requests_rule: RequestsRule) -> Self {
        Self {
            requests_rule,
            ..Self::default()
        }
    }

    /// Record `update`; what it changed is published by [`Store::snapshot`].
    pub fn apply(&mut self, update: Update) -> Phase {
        let p = &mut self.pending;
        let phase;
        let changed = match update {
            Update::Node(e) => {
                phase = phase_of(&e);
                match self.nodes.apply(e) {
                    Applied::Nothing => false,
                    Applied::Upserted {
                        object,
                        existed: true,
                    } => {
                        p.nodes.push(object);
                        true
                    }
                    _ => {
                        p.rebuild = true;
                        true
                    }
                }
            }
            Update::Pod(e) => {
                phase = phase_of(&e);
                self.pods_as_of.note(&e);
                match self.pods.apply(e) {
                    Applied::Nothing => false,
                    Applied::Upserted { object, .. } => {
                        p.pods.push(PodChange::upsert(object));
                        true
                    }
                    Applied::Deleted { namespace, name } => {
                        p.pods.push(PodChange::delete(&namespace, &name));
                        true
                    }
                    Applied::Replaced => {
                        p.rebuild = true;
                        true
                    }
                }
            }
            Update::Namespace(e) => {
                phase = phase_of(&e);
                let c = !matches!(self.namespaces.apply(e), Applied::Nothing);
                p.namespaces |= c;
                c
            }
            Update::Pdb(e) => {
                phase = phase_of(&e);
                let c = !matches!(self.pdbs.apply(e), Applied::Nothing);
                p.pdbs |= c;
                c
            }
            Update::PriorityClass(e) => {
                phase = phase_of(&e);
                let c = !matches!(self.priority_classes.apply(e), Applied::Nothing);
                p.priority_classes |= c;
                c
            }
            Update::DeviceClass(e) => {
                phase = phase_of(&e);
                let c = !matches!(self.device_classes.apply(e), Applied::Nothing);
                p.device_classes |= c;
                c
            }
            Update::Service(e) => {
                phase = phase_of(&e);
                let c = !matches!(self.services.apply(e), Applied::Nothing);
                p.owners |= c;
                c
            }
            Update::ReplicaSet(e) => {
                phase = phase_of(&e);
                let c = !matches!(self.replica_sets.apply(e), Applied::Nothing);
                p.owners |= c;
                c
            }
            Update::StatefulSet(e) => {
                phase = phase_of(&e);
                let c = !matches!(self.stateful_sets.apply(e), Applied::Nothing);
                p.owners |= c;
                c
            }
            Update::ReplicationController(e) => {
                phase = phase_of(&e);
                let c = !matches!(self.replication_controllers.apply(e), Applied::Nothing);
                p.owners |= c;
                c
            }
        };
        self.dirty |= changed;
        phase
    }

    /// Something changed since the last [`Store::snapshot`].
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// The pods the store holds (for logs).
    pub fn pod_count(&self) -> usize {
        self.pods.len()
    }

    /// The next snapshot: `previous` with the pending changes applied, or a
    /// full build when there is no previous one or the changes need it.
    pub fn snapshot(&mut self, previous: Option<&Snapshot>) -> Snapshot {
        self.changed(previous)
            .with_pods_as_of(self.pods_as_of.applied)
    }

    fn changed(&mut self, previous: Option<&Snapshot>) -> Snapshot {
        let p = std::mem::take(&mut self.pending);
        self.dirty = false;
        let Some(mut s) = previous.filter(|_| !p.rebuild).cloned() else {
            return self.build();
        };
        if !p.nodes.is_empty() {
            match s.with_node_changes(&p.nodes) {
                Some(next) => s = next,
                None => return self.build(),
            }
        }
        if !p.pods.is_empty() {
            s = s.with_pod_changes(&p.pods);
        }
        if p.namespaces {
            s = s.with_namespaces(self.namespaces.all());
        }
        if p.pdbs {
            s = s.with_pdbs(self.pdbs.all());
        }
        if p.priority_classes {
            s = s.with_priority_classes(self.priority_classes.all());
        }
        if p.device_classes {
            s = s.with_device_classes(self.device_classes.all());
        }
        if p.owners {
            s = s.with_owners(
                self.services.all(),
                self.replica_sets.all(),
                self.stateful_sets.all(),
                self.replication_controllers.all(),
            );
        }
        s
    }

    fn build(&self) -> Snapshot {
        Snapshot::build_shared(SharedObjects {
            requests_rule: self.requests_rule,
            nodes: self.nodes.all(),
            pods: self.pods.all(),
            namespaces: self.namespaces.all(),
            pdbs: self.pdbs.all(),
            priority_classes: self.priority_classes.all(),
            device_classes: self.device_classes.all(),
            services: self.services.all(),
            replica_sets: self.replica_sets.all(),
            stateful_sets: self.stateful_sets.all(),
            replication_controllers: self.replication_controllers.all(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::make_pod;

    fn pod(name: &str, version: &str) -> Arc<Pod> {
        let mut p = make_pod("ns", name).obj();
        p.metadata.resource_version = version.into();
        Arc::new(p)
    }

    #[test]
    fn the_snapshot_says_how_far_its_pods_reach() {
        let mut store = Store::default();
        for e in [
            KindEvent::Init,
            KindEvent::InitApply(pod("a", "7")),
            KindEvent::InitApply(pod("b", "5")),
        ] {
            store.apply(Update::Pod(e));
        }
        assert_eq!(store.snapshot(None).pods_as_of(), 0, "the list is not in");
        store.apply(Update::Pod(KindEvent::InitDone));
        assert_eq!(store.snapshot(None).pods_as_of(), 7);
        store.apply(Update::Pod(KindEvent::Delete(pod("a", "12"))));
        let s = store.snapshot(None);
        assert_eq!(s.pods_as_of(), 12, "a deletion is a change too");
        store.apply(Update::Pod(KindEvent::Apply(pod("c", "not-a-number"))));
        let next = store.snapshot(Some(&s));
        assert_eq!(next.pods_as_of(), 12);
        assert!(next.pod("ns", "c").is_some());
    }
}
