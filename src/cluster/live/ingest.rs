//! Decoding watched objects straight into the lean model. kube's watcher
//! needs a `Resource` with Kubernetes metadata; [`Ingested`] carries only
//! the name, namespace and resourceVersion it reads, next to the lean
//! object, so managedFields and every other unused field are dropped while
//! the JSON is parsed and never held in memory.

use std::borrow::Cow;
use std::fmt::Debug;

use kube::core::{ApiResource, DynamicResourceScope, ObjectMeta, Resource};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};

use crate::model::{
    self, DeviceClass, MapSelectorOwner, Namespace, Node, Pod, PodDisruptionBudget, PriorityClass,
    SelectorOwner,
};

/// A lean model type the live source watches.
pub trait LeanObject: DeserializeOwned + Clone + Debug + Send + Sync + 'static {
    fn lean_meta(&self) -> &model::ObjectMeta;
}

macro_rules! lean_object {
    ($($t:ty),*) => {$(
        impl LeanObject for $t {
            fn lean_meta(&self) -> &model::ObjectMeta {
                &self.metadata
            }
        }
    )*};
}
lean_object!(
    Node,
    Pod,
    Namespace,
    PodDisruptionBudget,
    PriorityClass,
    DeviceClass,
    MapSelectorOwner,
    SelectorOwner
);

/// A watched object: the lean model plus the metadata kube's watcher reads.
#[derive(Debug, Clone)]
pub struct Ingested<T> {
    meta: ObjectMeta,
    pub object: T,
}

impl<'de, T: LeanObject> Deserialize<'de> for Ingested<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let object = T::deserialize(d)?;
        let m = object.lean_meta();
        let meta = ObjectMeta {
            name: Some(m.name.clone()),
            namespace: (!m.namespace.is_empty()).then(|| m.namespace.clone()),
            resource_version: Some(m.resource_version.clone()),
            ..ObjectMeta::default()
        };
        Ok(Self { meta, object })
    }
}

impl<T> Resource for Ingested<T> {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.meta
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.meta
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_what_the_watcher_reads_and_drops_managed_fields() {
        let i: Ingested<Pod> = serde_json::from_str(
            r#"{"metadata":{"name":"p","namespace":"ns","resourceVersion":"42",
                "managedFields":[{"manager":"kubectl","fieldsV1":{"f:spec":{}}}]},
                "spec":{"nodeName":"n1"}}"#,
        )
        .unwrap();
        assert_eq!(i.meta().resource_version.as_deref(), Some("42"));
        assert_eq!(i.meta().namespace.as_deref(), Some("ns"));
        assert_eq!(i.object.spec.node_name, "n1");
        assert!(i.meta().managed_fields.is_none());
    }

    #[test]
    fn urls_come_from_the_api_resource() {
        let ar = ApiResource::erase::<k8s_openapi::api::policy::v1::PodDisruptionBudget>(&());
        assert_eq!(
            Ingested::<PodDisruptionBudget>::url_path(&ar, Some("ns")),
            "/apis/policy/v1/namespaces/ns/poddisruptionbudgets"
        );
    }
}
