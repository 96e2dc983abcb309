//! Object metadata: the parts of `metadata` the policies read.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::{Deserialize, Deserializer};

use super::shared::{Shared, shared_list, shared_or_default};

/// Annotations we act on; every other annotation (often large, such as
/// kubectl's last-applied configuration) is dropped while decoding so that
/// 150,000 pods stay small in memory.
pub const POD_DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";
/// On a Deployment or ReplicaSet: `preserve-spread` opts its pods into
/// deletion costs kube-arbiter keeps (docs/scale-in-controller.md).
pub const SCALE_IN: &str = "kube-arbiter.io/scale-in";
/// On the same workload: the largest scale-down the costs plan for.
pub const SCALE_IN_MAX: &str = "kube-arbiter.io/scale-in-max";
/// On a pod: its deletion cost was set by kube-arbiter (and is its to change).
pub const DELETION_COST_MANAGED: &str = "kube-arbiter.io/deletion-cost-managed";
const KEPT_ANNOTATIONS: &[&str] = &[
    POD_DELETION_COST,
    SCALE_IN,
    SCALE_IN_MAX,
    DELETION_COST_MANAGED,
];

pub type Labels = BTreeMap<String, String>;

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub uid: String,
    #[serde(default, deserialize_with = "shared_or_default")]
    pub labels: Shared<Labels>,
    #[serde(default, deserialize_with = "kept_annotations")]
    pub annotations: Labels,
    #[serde(default, deserialize_with = "shared_list")]
    pub owner_references: Shared<Vec<OwnerReference>>,
    #[serde(default)]
    pub creation_timestamp: Option<Timestamp>,
    #[serde(default)]
    pub deletion_timestamp: Option<Timestamp>,
    #[serde(default)]
    pub resource_version: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerReference {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub uid: String,
    #[serde(default)]
    pub controller: Option<bool>,
}

impl ObjectMeta {
    /// The owner reference marked `controller: true`, if any.
    pub fn controller(&self) -> Option<&OwnerReference> {
        self.owner_references
            .iter()
            .find(|o| o.controller == Some(true))
    }

    /// `namespace/name`, the way people name objects in messages.
    pub fn key(&self) -> String {
        if self.namespace.is_empty() {
            self.name.clone()
        } else {
            let mut key = String::with_capacity(self.namespace.len() + 1 + self.name.len());
            key.push_str(&self.namespace);
            key.push('/');
            key.push_str(&self.name);
            key
        }
    }

    /// `resourceVersion` as a number, which orders the changes of one
    /// resource (upstream `resourceversion.CompareResourceVersion`: a
    /// positive integer without leading zeros); `None` when it is not one.
    pub fn version(&self) -> Option<u64> {
        let rv = self.resource_version.as_str();
        if rv.starts_with('0') || !rv.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        rv.parse().ok()
    }
}

fn kept_annotations<'de, D: Deserializer<'de>>(d: D) -> Result<Labels, D::Error> {
    let all: Option<BTreeMap<String, String>> = Option::deserialize(d)?;
    Ok(all
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| KEPT_ANNOTATIONS.contains(&k.as_str()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_version_is_a_number_only_when_well_formed() {
        let version = |rv: &str| {
            ObjectMeta {
                resource_version: rv.into(),
                ..Default::default()
            }
            .version()
        };
        assert_eq!(version("42"), Some(42));
        for odd in ["", "0", "042", "4a", "-1", "99999999999999999999999"] {
            assert_eq!(version(odd), None, "{odd:?}");
        }
    }

    #[test]
    fn drops_annotations_the_policies_do_not_read() {
        let meta: ObjectMeta = serde_json::from_str(
            r#"{"name":"a","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{..}",
                "controller.kubernetes.io/pod-deletion-cost":"5"}}"#,
        )
        .unwrap();
        assert_eq!(meta.annotations.len(), 1);
        assert_eq!(meta.annotations[POD_DELETION_COST], "5");
    }

    #[test]
    fn lists_keep_no_spare_capacity() {
        let meta: ObjectMeta =
            serde_json::from_str(r#"{"ownerReferences":[{"kind":"ReplicaSet","name":"rs"}]}"#)
                .unwrap();
        assert_eq!(meta.owner_references.capacity(), 1);
        let meta: ObjectMeta = serde_json::from_str(r#"{"ownerReferences":null}"#).unwrap();
        assert!(meta.owner_references.is_empty());
    }

    #[test]
    fn null_labels_are_empty() {
        let meta: ObjectMeta = serde_json::from_str(r#"{"name":"a","labels":null}"#).unwrap();
        assert!(meta.labels.is_empty());
    }

    #[test]
    fn controller_owner_is_the_one_marked_controller() {
        let meta: ObjectMeta = serde_json::from_str(
            r#"{"ownerReferences":[{"kind":"X","name":"x"},{"kind":"ReplicaSet","name":"rs","controller":true}]}"#,
        )
        .unwrap();
        assert_eq!(meta.controller().unwrap().name, "rs");
    }
}
