//! Nodes, taints and tolerations.

use serde::Deserialize;

use super::meta::ObjectMeta;
use super::null_fields::compact_list;
use super::quantity::{ResourceList, resource_list};

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Node {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: NodeSpec,
    #[serde(default)]
    pub status: NodeStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSpec {
    #[serde(default, deserialize_with = "compact_list")]
    pub taints: Vec<Taint>,
    #[serde(default)]
    pub unschedulable: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStatus {
    #[serde(default, deserialize_with = "resource_list")]
    pub allocatable: ResourceList,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Taint {
    #[serde(default)]
    pub key: String,
    #[serde(default)]
    pub value: String,
    #[serde(default)]
    pub effect: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Toleration {
    #[serde(default)]
    pub key: String,
    #[serde(default)]
    pub operator: String,
    #[serde(default)]
    pub value: String,
    #[serde(default)]
    pub effect: String,
    #[serde(default)]
    pub toleration_seconds: Option<i64>,
}

impl Node {
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    pub fn label(&self, key: &str) -> Option<&str> {
        self.metadata.labels.get(key).map(String::as_str)
    }
}

impl Taint {
    /// Only NoSchedule and NoExecute taints keep pods off a node in the
    /// filter phase; PreferNoSchedule only affects scoring.
    pub fn blocks_scheduling(&self) -> bool {
        matches!(self.effect.as_str(), "NoSchedule" | "NoExecute")
    }
}
