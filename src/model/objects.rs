//! The smaller kinds: Namespace, PodDisruptionBudget, PriorityClass,
//! DeviceClass, and the workload owners whose selectors define default
//! spread constraints.

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

/// A DRA DeviceClass (`resource.k8s.io/v1`): only the extended resource
/// names it maps are read (docs/preemption-contract.md, "DRA extended
/// resources").
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct DeviceClass {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: DeviceClassSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceClassSpec {
    #[serde(default)]
    pub extended_resource_name: Option<String>,
}

/// The prefix of the extended resource name every DeviceClass maps
/// implicitly (upstream `resourceapi.ResourceDeviceClassPrefix`).
pub const DEVICE_CLASS_RESOURCE_PREFIX: &str = "deviceclass.resource.kubernetes.io/";

impl DeviceClass {
    /// The extended resource names this class maps: its
    /// `spec.extendedResourceName`, if any, and always
    /// `deviceclass.resource.kubernetes.io/<name>` (upstream
    /// `ExtendedResourceCache.updateResourceName2class`).
    pub fn extended_resource_names(&self) -> impl Iterator<Item = String> + '_ {
        self.spec
            .extended_resource_name
            .iter()
            .cloned()
            .chain(std::iter::once(format!(
                "{DEVICE_CLASS_RESOURCE_PREFIX}{}",
                self.metadata.name
            )))
    }
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
