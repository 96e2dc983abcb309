//! AdmissionReview `admission.k8s.io/v1` as kube-apiserver sends and reads
//! it, and the few Pod fields priority admission touches.
//!
//! The review is decoded in two steps so that a body of the wrong version is
//! told so before its shape is judged; the admitted object stays raw JSON
//! until the handler knows it is ours, and only the fields we act on are
//! decoded from it.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;

use crate::model::null_fields::null_as_default;

pub const ADMISSION_V1: &str = "admission.k8s.io/v1";
pub const ADMISSION_REVIEW: &str = "AdmissionReview";

/// The outer object: version, kind and the still-undecoded request.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewEnvelope<'a> {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(borrow, default)]
    pub request: Option<&'a RawValue>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionRequest<'a> {
    pub uid: String,
    pub kind: GroupVersionKind,
    pub resource: GroupVersionResource,
    #[serde(default)]
    pub sub_resource: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
    pub operation: String,
    #[serde(borrow, default)]
    pub object: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub old_object: Option<&'a RawValue>,
    #[serde(default)]
    pub dry_run: bool,
}

#[derive(Debug, Default, Deserialize)]
pub struct GroupVersionKind {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
}

#[derive(Debug, Default, Deserialize)]
pub struct GroupVersionResource {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub resource: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewResponse<'a> {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub response: AdmissionResponse<'a>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse<'a> {
    pub uid: &'a str,
    pub allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<&'static str>,
    /// Base64 of the JSONPatch document.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
}

/// The `metav1.Status` of a denial; kube-apiserver answers the client with
/// this code and reason, the message prefixed with the webhook's name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Status {
    pub status: &'static str,
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
}

/// One JSONPatch (RFC 6902) operation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PatchOp {
    pub op: &'static str,
    pub path: &'static str,
    pub value: serde_json::Value,
}

/// A field as submitted: absent, explicitly `null`, or set. Absent fields
/// are patched with `add`, present ones with `replace`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Field<T> {
    #[default]
    Absent,
    Null,
    Set(T),
}

impl<T> Field<T> {
    pub fn value(&self) -> Option<&T> {
        match self {
            Self::Set(v) => Some(v),
            _ => None,
        }
    }

    pub fn is_present(&self) -> bool {
        !matches!(self, Self::Absent)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Field<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Option::<T>::deserialize(d)?.map_or(Self::Null, Self::Set))
    }
}

/// The Pod fields priority admission reads; everything else in the object
/// is skipped unparsed and never re-serialized.
#[derive(Debug, Default, Deserialize)]
pub struct PodPriorityFields {
    #[serde(default, deserialize_with = "null_as_default")]
    pub metadata: PodNames,
    #[serde(default)]
    pub spec: Field<PodSpecPriority>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodNames {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub generate_name: String,
    #[serde(default)]
    pub namespace: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSpecPriority {
    #[serde(default)]
    pub priority_class_name: Field<String>,
    #[serde(default)]
    pub priority: Field<i32>,
    #[serde(default)]
    pub preemption_policy: Field<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_tell_absent_from_null_from_set() {
        let spec: PodSpecPriority =
            serde_json::from_str(r#"{"priority":null,"preemptionPolicy":"Never"}"#).unwrap();
        assert_eq!(spec.priority_class_name, Field::Absent);
        assert_eq!(spec.priority, Field::Null);
        assert_eq!(spec.preemption_policy, Field::Set("Never".to_string()));
    }

    #[test]
    fn the_rest_of_the_pod_is_skipped() {
        let pod: PodPriorityFields = serde_json::from_str(
            r#"{"metadata":{"name":"a","labels":{"x":"y"}},
                "spec":{"containers":[{"name":"c","image":"nginx"}],"priority":5},
                "status":{}}"#,
        )
        .unwrap();
        assert_eq!(pod.metadata.name, "a");
        assert_eq!(pod.spec.value().unwrap().priority, Field::Set(5));
    }

    #[test]
    fn a_wrong_type_in_a_read_field_is_an_error() {
        let err = serde_json::from_str::<PodPriorityFields>(r#"{"spec":{"priority":"high"}}"#)
            .unwrap_err();
        assert!(err.to_string().contains("invalid type"), "{err}");
    }
}
