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

impl Toleration {
    /// `v1.Toleration.ToleratesTaint`: effect and key empty-or-equal, then
    /// `Exists` tolerates any value and `Equal` (or empty) needs the same
    /// value. Other operators (1.35's alpha Gt/Lt, gated off) tolerate nothing.
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if !self.effect.is_empty() && self.effect != taint.effect {
            return false;
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        match self.operator.as_str() {
            "Exists" => true,
            "" | "Equal" => self.value == taint.value,
            _ => false,
        }
    }
}

impl Taint {
    /// Only NoSchedule and NoExecute taints keep pods off a node in the
    /// filter phase; PreferNoSchedule only affects scoring.
    pub fn blocks_scheduling(&self) -> bool {
        matches!(self.effect.as_str(), "NoSchedule" | "NoExecute")
    }
}

/// The first NoSchedule/NoExecute taint none of `tolerations` tolerates.
pub fn untolerated_taint<'a>(taints: &'a [Taint], tolerations: &[Toleration]) -> Option<&'a Taint> {
    taints
        .iter()
        .filter(|t| t.blocks_scheduling())
        .find(|t| !tolerations.iter().any(|tol| tol.tolerates(t)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, value: &str, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            value: value.into(),
            effect: effect.into(),
        }
    }

    fn tol(key: &str, op: &str, value: &str, effect: &str) -> Toleration {
        Toleration {
            key: key.into(),
            operator: op.into(),
            value: value.into(),
            effect: effect.into(),
            toleration_seconds: None,
        }
    }

    #[test]
    fn empty_key_exists_tolerates_every_taint() {
        assert!(tol("", "Exists", "", "").tolerates(&taint("a", "b", "NoSchedule")));
    }

    #[test]
    fn equal_needs_same_value_and_empty_operator_means_equal() {
        let t = taint("k", "v", "NoSchedule");
        assert!(tol("k", "Equal", "v", "NoSchedule").tolerates(&t));
        assert!(tol("k", "", "v", "").tolerates(&t));
        assert!(!tol("k", "Equal", "w", "NoSchedule").tolerates(&t));
    }

    #[test]
    fn effect_must_match_when_set() {
        assert!(!tol("k", "Exists", "", "NoExecute").tolerates(&taint("k", "", "NoSchedule")));
    }

    #[test]
    fn gated_operators_tolerate_nothing() {
        assert!(!tol("k", "Gt", "1", "").tolerates(&taint("k", "2", "NoSchedule")));
    }

    #[test]
    fn prefer_no_schedule_never_blocks() {
        let taints = [
            taint("k", "", "PreferNoSchedule"),
            taint("x", "", "NoExecute"),
        ];
        assert_eq!(untolerated_taint(&taints, &[]).unwrap().key, "x");
        assert!(untolerated_taint(&taints[..1], &[]).is_none());
    }
}
