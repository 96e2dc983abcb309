//! The extended resource names DeviceClasses map (DRA extended resources):
//! NodeResourcesFit leaves such a resource to the DRA plugin on a node
//! that does not list it ([`crate::policy::resources::PodRequest`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::model::DeviceClass;

/// Extended resource name → the DeviceClass that maps it, as upstream's
/// `ExtendedResourceCache` (k8s.io/dynamic-resource-allocation
/// `deviceclass/extendedresourcecache`) holds it.
#[derive(Debug, Clone, Default)]
pub struct ExtendedResourceClasses {
    by_resource: BTreeMap<String, Arc<DeviceClass>>,
    classes: usize,
}

impl ExtendedResourceClasses {
    /// Index `classes`. Two classes naming the same
    /// `extendedResourceName` (while one replaces the other): the newer
    /// one maps it, the lower name on equal creation times
    /// (`updateResourceName2class`). Built from every class at once, so
    /// deleting the winner hands the name to the other; upstream's cache,
    /// fed event by event, forgets the name until the other class changes.
    pub(super) fn of(classes: Vec<Arc<DeviceClass>>) -> Self {
        let mut by_resource: BTreeMap<String, Arc<DeviceClass>> = BTreeMap::new();
        let count = classes.len();
        for class in classes {
            for name in class.extended_resource_names() {
                match by_resource.get(&name) {
                    Some(held) if !preferred(&class, held) => {}
                    _ => {
                        by_resource.insert(name, class.clone());
                    }
                }
            }
        }
        Self {
            by_resource,
            classes: count,
        }
    }

    /// The DeviceClass mapping the extended resource `name`, if any
    /// (upstream `DeviceClassResolver.GetDeviceClass`).
    pub fn class_of(&self, name: &str) -> Option<&DeviceClass> {
        self.by_resource.get(name).map(|c| &**c)
    }

    /// How many DeviceClasses the view holds.
    pub fn classes(&self) -> usize {
        self.classes
    }
}

/// Whether `class` takes a name `held` maps too: it is newer, or as old
/// with a lower name.
fn preferred(class: &DeviceClass, held: &DeviceClass) -> bool {
    let created = |c: &DeviceClass| c.metadata.creation_timestamp;
    match created(class).cmp(&created(held)) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => class.metadata.name < held.metadata.name,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn class(name: &str, resource: Option<&str>, created: &str) -> Arc<DeviceClass> {
        let mut v = json!({"metadata": {"name": name, "creationTimestamp": created}});
        if let Some(r) = resource {
            v["spec"] = json!({"extendedResourceName": r});
        }
        Arc::new(serde_json::from_value(v).unwrap())
    }

    fn owner<'a>(index: &'a ExtendedResourceClasses, name: &str) -> Option<&'a str> {
        index.class_of(name).map(|c| c.metadata.name.as_str())
    }

    #[test]
    fn a_class_maps_its_extended_resource_name_and_its_implicit_one() {
        let index = ExtendedResourceClasses::of(vec![
            class("gpu", Some("example.com/gpu"), "2026-01-01T00:00:00Z"),
            class("fpga", None, "2026-01-01T00:00:00Z"),
        ]);
        assert_eq!(index.classes(), 2);
        assert_eq!(owner(&index, "example.com/gpu"), Some("gpu"));
        assert_eq!(
            owner(&index, "deviceclass.resource.kubernetes.io/gpu"),
            Some("gpu"),
            "the implicit name stays mapped next to the explicit one"
        );
        assert_eq!(
            owner(&index, "deviceclass.resource.kubernetes.io/fpga"),
            Some("fpga")
        );
        assert_eq!(owner(&index, "example.com/fpga"), None);
        assert_eq!(owner(&index, "nvidia.com/gpu"), None);
    }

    #[test]
    fn a_name_two_classes_map_goes_to_the_newer_then_the_lower_name() {
        let old = class("gpu-old", Some("example.com/gpu"), "2026-01-01T00:00:00Z");
        let new = class("gpu-new", Some("example.com/gpu"), "2026-02-01T00:00:00Z");
        for order in [
            vec![old.clone(), new.clone()],
            vec![new.clone(), old.clone()],
        ] {
            let index = ExtendedResourceClasses::of(order);
            assert_eq!(owner(&index, "example.com/gpu"), Some("gpu-new"));
        }
        let b = class("b", Some("example.com/gpu"), "2026-01-01T00:00:00Z");
        let a = class("a", Some("example.com/gpu"), "2026-01-01T00:00:00Z");
        let index = ExtendedResourceClasses::of(vec![b, a]);
        assert_eq!(owner(&index, "example.com/gpu"), Some("a"));
    }
}
