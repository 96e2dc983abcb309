//! The pod admission review read by [`Cursor`], without serde: the same
//! request serde's one pass makes of a well-formed v1 review, at a third of
//! its cost. `None` whenever the review is not plain — an escaped string, a
//! field of an unexpected type, a duplicate of a field the webhook reads, a
//! review of another version — and the caller reads it with serde, so every
//! answer and error stays serde's. A property test holds the two readers to
//! the same result on generated and mutated reviews.

use std::borrow::Cow;

use super::admission_types::{
    ADMISSION_REVIEW, ADMISSION_V1, AdmissionRequest, Decoded, Field, GroupVersionKind,
    GroupVersionResource, PodNames, PodPriorityFields, PodSpecPriority,
};
use super::strict_json::Cursor;

type PodRequest<'a> = AdmissionRequest<'a, Decoded<PodPriorityFields>>;

/// The request of a v1 AdmissionReview whose text is `text`, or `None` to
/// leave the body to serde.
pub fn pod_request(text: &str) -> Option<PodRequest<'_>> {
    let mut cursor = Cursor::new(text);
    let (mut api_version, mut kind, mut request) = (None, None, None);
    cursor.object(|cursor, key| match key {
        "apiVersion" => once(&mut api_version, cursor.string()?),
        "kind" => once(&mut kind, cursor.string()?),
        "request" => once(&mut request, read_request(cursor)?),
        _ => cursor.skip(),
    })?;
    cursor.end()?;
    (kind? == ADMISSION_REVIEW && api_version? == ADMISSION_V1).then_some(())?;
    request
}

/// Sets a field seen for the first time; a second one is serde's
/// "duplicate field" error, so `None`.
fn once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    slot.is_none().then(|| *slot = Some(value))
}

fn read_request<'a>(cursor: &mut Cursor<'a>) -> Option<PodRequest<'a>> {
    let mut uid = None;
    let mut kind = None;
    let mut resource = None;
    let mut sub_resource = None;
    let mut name = None;
    let mut namespace = None;
    let mut operation = None;
    let mut object = None;
    let mut old_object = None;
    let mut dry_run = None;
    cursor.object(|cursor, key| match key {
        "uid" => once(&mut uid, cursor.string()?),
        "kind" => once(&mut kind, read_kind(cursor)?),
        "resource" => once(&mut resource, read_resource(cursor)?),
        "subResource" => once(&mut sub_resource, cursor.string()?),
        "name" => once(&mut name, cursor.string()?),
        "namespace" => once(&mut namespace, cursor.string()?),
        "operation" => once(&mut operation, cursor.string()?),
        "object" => once(&mut object, read_pod(cursor)?),
        "oldObject" => once(&mut old_object, read_pod(cursor)?),
        "dryRun" => once(&mut dry_run, cursor.bool()?),
        _ => cursor.skip(),
    })?;
    let text = |field: Option<&'a str>| Cow::Borrowed(field.unwrap_or_default());
    Some(AdmissionRequest {
        uid: Cow::Borrowed(uid?),
        kind: kind?,
        resource: resource?,
        sub_resource: text(sub_resource),
        name: text(name),
        namespace: text(namespace),
        operation: Cow::Borrowed(operation?),
        object: object.unwrap_or_default(),
        old_object: old_object.unwrap_or_default(),
        dry_run: dry_run.unwrap_or_default(),
    })
}

/// Reads the three members of a group/version/kind or group/version/
/// resource object into `parts`, in that order.
fn read_triple<'a>(
    cursor: &mut Cursor<'a>,
    last: &str,
    parts: &mut [Option<&'a str>; 3],
) -> Option<()> {
    cursor.object(|cursor, key| {
        let slot = match key {
            "group" => 0,
            "version" => 1,
            _ if key == last => 2,
            _ => return cursor.skip(),
        };
        once(&mut parts[slot], cursor.string()?)
    })
}

fn read_kind<'a>(cursor: &mut Cursor<'a>) -> Option<GroupVersionKind<'a>> {
    let mut parts = [None; 3];
    read_triple(cursor, "kind", &mut parts)?;
    let [group, version, kind] = parts.map(|p| Cow::Borrowed(p.unwrap_or_default()));
    Some(GroupVersionKind {
        group,
        version,
        kind,
    })
}

fn read_resource<'a>(cursor: &mut Cursor<'a>) -> Option<GroupVersionResource<'a>> {
    let mut parts = [None; 3];
    read_triple(cursor, "resource", &mut parts)?;
    let [group, version, resource] = parts.map(|p| Cow::Borrowed(p.unwrap_or_default()));
    Some(GroupVersionResource {
        group,
        version,
        resource,
    })
}

/// An admitted pod: `null` is none, an object is read for the fields
/// priority admission uses.
fn read_pod(cursor: &mut Cursor<'_>) -> Option<Decoded<PodPriorityFields>> {
    if cursor.null()? {
        return Some(Decoded(None));
    }
    let (mut metadata, mut spec) = (None, None);
    cursor.object(|cursor, key| match key {
        "metadata" => once(&mut metadata, read_names(cursor)?),
        "spec" => once(&mut spec, read_spec(cursor)?),
        _ => cursor.skip(),
    })?;
    Some(Decoded(Some(PodPriorityFields {
        metadata: metadata.unwrap_or_default(),
        spec: spec.unwrap_or_default(),
    })))
}

/// `metadata`: `null` reads as empty, as serde's `null_as_default` has it.
fn read_names(cursor: &mut Cursor<'_>) -> Option<PodNames> {
    if cursor.null()? {
        return Some(PodNames::default());
    }
    let (mut name, mut generate_name, mut namespace) = (None, None, None);
    cursor.object(|cursor, key| match key {
        "name" => once(&mut name, cursor.string()?),
        "generateName" => once(&mut generate_name, cursor.string()?),
        "namespace" => once(&mut namespace, cursor.string()?),
        _ => cursor.skip(),
    })?;
    let owned = |field: Option<&str>| field.unwrap_or_default().to_string();
    Some(PodNames {
        name: owned(name),
        generate_name: owned(generate_name),
        namespace: owned(namespace),
    })
}

fn read_spec(cursor: &mut Cursor<'_>) -> Option<Field<PodSpecPriority>> {
    if cursor.null()? {
        return Some(Field::Null);
    }
    let (mut class_name, mut priority, mut policy) = (None, None, None);
    cursor.object(|cursor, key| match key {
        "priorityClassName" => once(&mut class_name, nullable(cursor, |c| c.string())?),
        "priority" => once(&mut priority, nullable(cursor, Cursor::i32)?),
        "preemptionPolicy" => once(&mut policy, nullable(cursor, |c| c.string())?),
        _ => cursor.skip(),
    })?;
    let owned = |field: Option<Field<&str>>| match field.unwrap_or_default() {
        Field::Set(text) => Field::Set(text.to_string()),
        Field::Null => Field::Null,
        Field::Absent => Field::Absent,
    };
    Some(Field::Set(PodSpecPriority {
        priority_class_name: owned(class_name),
        priority: priority.unwrap_or_default(),
        preemption_policy: owned(policy),
    }))
}

/// A member that may be `null`: [`Field::Null`], else what `read` makes of it.
fn nullable<'a, T>(
    cursor: &mut Cursor<'a>,
    read: impl FnOnce(&mut Cursor<'a>) -> Option<T>,
) -> Option<Field<T>> {
    if cursor.null()? {
        return Some(Field::Null);
    }
    read(cursor).map(Field::Set)
}

#[cfg(test)]
#[path = "pod_review_scan_tests.rs"]
mod tests;
