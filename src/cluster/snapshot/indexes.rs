//! The small per-kind indexes, built whole: a full build and an incremental
//! update of one kind both use these.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{Map, NameIndex, NodeIdx, Owners};
use crate::model::{MapSelectorOwner, Namespace, Pod, PriorityClass, SelectorOwner};

/// The node a pod runs on, when it is bound to a node the view knows.
pub(super) fn node_of(node_index: &NameIndex, pod: &Pod) -> Option<NodeIdx> {
    if pod.spec.node_name.is_empty() {
        return None;
    }
    node_index.get(&pod.spec.node_name)
}

pub(super) fn namespaces_by_name(namespaces: Vec<Arc<Namespace>>) -> Map<String, Arc<Namespace>> {
    namespaces
        .into_iter()
        .map(|n| (n.metadata.name.clone(), n))
        .collect()
}

pub(super) fn priority_classes_by_name(
    classes: Vec<Arc<PriorityClass>>,
) -> BTreeMap<String, Arc<PriorityClass>> {
    classes
        .into_iter()
        .map(|pc| (pc.metadata.name.clone(), pc))
        .collect()
}

pub(super) fn owners_by_namespace(
    services: Vec<Arc<MapSelectorOwner>>,
    replica_sets: Vec<Arc<SelectorOwner>>,
    stateful_sets: Vec<Arc<SelectorOwner>>,
    replication_controllers: Vec<Arc<MapSelectorOwner>>,
) -> Map<String, Owners> {
    let mut owners: Map<String, Owners> = Map::default();
    fn slot<'a>(owners: &'a mut Map<String, Owners>, ns: &str) -> &'a mut Owners {
        owners.entry(ns.to_string()).or_default()
    }
    for s in services {
        slot(&mut owners, &s.metadata.namespace).services.push(s);
    }
    for rs in replica_sets {
        slot(&mut owners, &rs.metadata.namespace)
            .replica_sets
            .push(rs);
    }
    for ss in stateful_sets {
        slot(&mut owners, &ss.metadata.namespace)
            .stateful_sets
            .push(ss);
    }
    for rc in replication_controllers {
        slot(&mut owners, &rc.metadata.namespace)
            .replication_controllers
            .push(rc);
    }
    owners
}
