//! AdmissionReview `admission.k8s.io/v1` as kube-apiserver sends and reads
//! it, and the few Pod fields priority admission touches.
//!
//! A review is read in one pass ([`Review`]); only a body that pass refuses
//! is read again in two steps ([`ReviewEnvelope`], then the request) so that
//! a body of the wrong version is told so before its shape is judged. The
//! admitted object stays raw JSON until the handler knows it is ours, and
//! only the fields we act on are decoded from it.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;

use crate::model::null_fields::null_as_default;

pub const ADMISSION_V1: &str = "admission.k8s.io/v1";
pub const ADMISSION_REVIEW: &str = "AdmissionReview";

/// The whole review in one pass: what every well-formed review takes.
/// `O` is how the request carries the admitted objects (see
/// [`AdmissionRequest`]).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(bound(deserialize = "O: Deserialize<'de> + Default"))]
pub struct Review<'a, O> {
    #[serde(borrow, default)]
    pub api_version: Cow<'a, str>,
    #[serde(borrow, default)]
    pub kind: Cow<'a, str>,
    #[serde(default)]
    pub request: Option<AdmissionRequest<'a, O>>,
}

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

/// `O` holds `object` and `oldObject`: raw JSON by default (decoded by
/// the webhook once it knows they are its kind), or [`Decoded`] when the
/// one pass over a review decodes them too.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(bound(deserialize = "O: Deserialize<'de> + Default"))]
pub struct AdmissionRequest<'a, O = Option<&'a RawValue>> {
    #[serde(borrow)]
    pub uid: Cow<'a, str>,
    #[serde(borrow)]
    pub kind: GroupVersionKind<'a>,
    #[serde(borrow)]
    pub resource: GroupVersionResource<'a>,
    #[serde(borrow, default)]
    pub sub_resource: Cow<'a, str>,
    #[serde(borrow, default)]
    pub name: Cow<'a, str>,
    #[serde(borrow, default)]
    pub namespace: Cow<'a, str>,
    #[serde(borrow)]
    pub operation: Cow<'a, str>,
    #[serde(default)]
    pub object: O,
    #[serde(default)]
    pub old_object: O,
    #[serde(default)]
    pub dry_run: bool,
}

/// An admitted object decoded with its review; `null` or absent is `None`.
#[derive(Debug, Default, Deserialize)]
#[serde(transparent)]
pub struct Decoded<T>(pub Option<T>);

#[derive(Debug, Default, Deserialize)]
pub struct GroupVersionKind<'a> {
    #[serde(borrow, default)]
    pub group: Cow<'a, str>,
    #[serde(borrow, default)]
    pub version: Cow<'a, str>,
    #[serde(borrow, default)]
    pub kind: Cow<'a, str>,
}

#[derive(Debug, Default, Deserialize)]
pub struct GroupVersionResource<'a> {
    #[serde(borrow, default)]
    pub group: Cow<'a, str>,
    #[serde(borrow, default)]
    pub version: Cow<'a, str>,
    #[serde(borrow, default)]
    pub resource: Cow<'a, str>,
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
