//! The smaller kinds: Namespace, PodDisruptionBudget, PriorityClass, and the
//! workload owners whose selectors define default spread constraints.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::Deserialize;

use super::meta::{Labels, ObjectMeta};
use super::null_fields::null_as_default;
use super::selector::LabelSelector;

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Namespace {
    #[serde(default)]
    pub metadata: ObjectMeta,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct PodDisruptionBudget {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: PdbSpec,
    #[serde(default)]
    pub status: PdbStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct PdbSpec {
    #[serde(default)]
    pub selector: Option<LabelSelector>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PdbStatus {
    #[serde(default)]
    pub disruptions_allowed: i32,
    /// Pods already being evicted; they do not consume the budget again.
    #[serde(default, deserialize_with = "null_as_default")]
    pub disrupted_pods: BTreeMap<String, Timestamp>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PriorityClass {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub value: i32,
    #[serde(default)]
    pub global_default: bool,
    #[serde(default)]
    pub preemption_policy: Option<String>,
    #[serde(default)]
    pub description: String,
}

/// Service and ReplicationController: a plain map selector.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct MapSelectorOwner {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: MapSelectorSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct MapSelectorSpec {
    #[serde(default, deserialize_with = "null_as_default")]
    pub selector: Labels,
}

/// ReplicaSet and StatefulSet: a full label selector.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct SelectorOwner {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: SelectorOwnerSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SelectorOwnerSpec {
    #[serde(default)]
    pub selector: Option<LabelSelector>,
    /// Desired replicas (absent: 1, as the API server defaults it).
    #[serde(default)]
    pub replicas: Option<i32>,
}
