//! Builders for pods, nodes and namespaces in pod-affinity tests (and any
//! other policy test that needs pods with (anti-)affinity terms).

use serde_json::{Value, json};

use crate::cluster::{ClusterObjects, Snapshot};
use crate::model::pod::{Affinity, PodAffinity, PodAffinityTerm, WeightedPodAffinityTerm};
use crate::model::{Labels, Namespace, Node, Pod};

pub const HOSTNAME: &str = "kubernetes.io/hostname";
pub const ZONE: &str = "topology.kubernetes.io/zone";

pub fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub fn node(name: &str, pairs: &[(&str, &str)]) -> Node {
    let mut n = Node::default();
    n.metadata.name = name.to_string();
    n.metadata.labels = labels(pairs).into();
    n
}

pub fn namespace(name: &str, pairs: &[(&str, &str)]) -> Namespace {
    let mut n = Namespace::default();
    n.metadata.name = name.to_string();
    n.metadata.labels = labels(pairs).into();
    n
}

/// A term from its JSON form (`labelSelector`, `namespaces`,
/// `namespaceSelector`, `topologyKey`, `matchLabelKeys`...).
pub fn term_json(v: Value) -> PodAffinityTerm {
    serde_json::from_value(v).unwrap()
}

/// `labelSelector: {matchExpressions: [{key, operator, values}]}` on `topology_key`.
pub fn term(key: &str, op: &str, values: &[&str], topology_key: &str) -> PodAffinityTerm {
    term_json(json!({
        "labelSelector": {"matchExpressions": [{"key": key, "operator": op, "values": values}]},
        "topologyKey": topology_key,
    }))
}

/// A pod under construction.
#[derive(Debug, Clone)]
pub struct PodBuilder(Pod);

pub fn pod(namespace: &str, name: &str) -> PodBuilder {
    let mut p = Pod::default();
    p.metadata.namespace = namespace.to_string();
    p.metadata.name = name.to_string();
    p.metadata.uid = format!("uid-{namespace}-{name}");
    PodBuilder(p)
}

impl PodBuilder {
    pub fn labels(mut self, pairs: &[(&str, &str)]) -> Self {
        self.0.metadata.labels = labels(pairs).into();
        self
    }

    pub fn on(mut self, node: &str) -> Self {
        self.0.spec.node_name = node.to_string();
        self
    }

    pub fn phase(mut self, phase: &str) -> Self {
        self.0.status.phase = phase.to_string();
        self
    }

    pub fn terminating(mut self) -> Self {
        self.0.metadata.deletion_timestamp = Some("2026-01-01T00:00:00Z".parse().unwrap());
        self
    }

    fn group(&mut self, anti: bool) -> &mut PodAffinity {
        let a: &mut Affinity = self.0.spec.affinity.get_or_insert_with(Default::default);
        let g = if anti {
            &mut a.pod_anti_affinity
        } else {
            &mut a.pod_affinity
        };
        g.get_or_insert_with(Default::default)
    }

    pub fn required_affinity(mut self, t: PodAffinityTerm) -> Self {
        self.group(false)
            .required_during_scheduling_ignored_during_execution
            .push(t);
        self
    }

    pub fn required_anti_affinity(mut self, t: PodAffinityTerm) -> Self {
        self.group(true)
            .required_during_scheduling_ignored_during_execution
            .push(t);
        self
    }

    pub fn preferred_affinity(mut self, weight: i32, t: PodAffinityTerm) -> Self {
        self.group(false)
            .preferred_during_scheduling_ignored_during_execution
            .push(WeightedPodAffinityTerm {
                weight,
                pod_affinity_term: t,
            });
        self
    }

    pub fn preferred_anti_affinity(mut self, weight: i32, t: PodAffinityTerm) -> Self {
        self.group(true)
            .preferred_during_scheduling_ignored_during_execution
            .push(WeightedPodAffinityTerm {
                weight,
                pod_affinity_term: t,
            });
        self
    }

    pub fn build(self) -> Pod {
        self.0
    }
}

pub fn snapshot(nodes: Vec<Node>, pods: Vec<Pod>, namespaces: Vec<Namespace>) -> Snapshot {
    Snapshot::build(ClusterObjects {
        nodes,
        pods,
        namespaces,
        ..Default::default()
    })
}
