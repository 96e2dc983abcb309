//! NodeResourcesFit: does a pod's request fit in what a node has left?
//!
//! A pod's request comes from [`crate::model::requests`]. A node fits when,
//! for every requested resource, request + already requested ≤ allocatable,
//! and one more pod is allowed. A request larger than the whole allocatable
//! cannot be helped by evicting pods (UnschedulableAndUnresolvable).
//! Extended resources the configuration ignores are not checked, nor, on
//! a node that does not list it, one a DeviceClass maps ([`PodRequest`]).

use std::borrow::Cow;

use crate::cluster::ExtendedResourceClasses;
use crate::config::SchedulingSettings;
use crate::model::quantity::{CPU, EPHEMERAL_STORAGE, MEMORY, PODS, ResourceList};
use crate::model::requests::Requests;

use super::{Failure, Verdict};

/// A node's allocatable and what its pods already request.
#[derive(Debug, Clone)]
pub struct NodeResources<'a> {
    /// Allocatable cpu, memory and ephemeral storage; extended resources
    /// are read from `allocatable_list` when a request has any. Copying
    /// them (hugepages on most nodes) took allocations for every node
    /// preemption looks at.
    allocatable: Requests,
    allocatable_list: &'a ResourceList,
    allowed_pods: i64,
    requested: Requests,
    pods: i64,
}

impl<'a> NodeResources<'a> {
    /// A node with `pods` pods that together request `requested`.
    pub fn new(allocatable: &'a ResourceList, requested: &Requests, pods: usize) -> Self {
        let (mut fixed, mut allowed_pods) = (Requests::default(), 0);
        for (name, &amount) in allocatable {
            match name.as_str() {
                CPU => fixed.cpu = amount,
                MEMORY => fixed.memory = amount,
                EPHEMERAL_STORAGE => fixed.ephemeral_storage = amount,
                PODS => allowed_pods = amount,
                _ => {}
            }
        }
        Self {
            allocatable: fixed,
            allocatable_list: allocatable,
            allowed_pods,
            requested: requested.clone(),
            pods: pods as i64,
        }
    }

    #[inline]
    pub fn add_pod(&mut self, requests: &Requests) {
        self.requested.add(requests);
        self.pods += 1;
    }

    #[inline]
    pub fn remove_pod(&mut self, requests: &Requests) {
        self.requested.subtract(requests);
        self.pods -= 1;
    }

    /// Whether `request` fits, without saying why not: the cheap question
    /// victim selection asks for every pod it tries to give back.
    /// Inlined (with [`Self::add_pod`] and [`Self::remove_pod`]) into that
    /// loop, another module's.
    /// Asked field by field: [`Self::shortfalls`]' iterator chain cost
    /// several times as much.
    #[inline]
    pub fn has_room(&self, request: &Requests) -> bool {
        let (used, capacity) = (&self.requested, &self.allocatable);
        self.pods < self.allowed_pods
            && !short(request.cpu, used.cpu, capacity.cpu)
            && !short(request.memory, used.memory, capacity.memory)
            && !short(
                request.ephemeral_storage,
                used.ephemeral_storage,
                capacity.ephemeral_storage,
            )
            && request
                .scalar
                .iter()
                .all(|(name, want)| !short(*want, used.scalar(name), self.scalar(name)))
    }

    /// Allocatable of the extended resource `name`.
    fn scalar(&self, name: &str) -> i64 {
        self.allocatable_list.get(name).copied().unwrap_or(0)
    }

    /// Every shortfall, in upstream's order (pods, cpu, memory,
    /// ephemeral-storage, extended), one reason each.
    pub fn fits(&self, request: &Requests) -> Verdict {
        let mut reasons = Vec::new();
        let mut unresolvable = false;
        if self.pods + 1 > self.allowed_pods {
            reasons.push(format!(
                "Too many pods ({} of {} allowed already on the node)",
                self.pods, self.allowed_pods
            ));
        }
        for (name, want, used, capacity) in self.shortfalls(request) {
            unresolvable |= want > capacity;
            reasons.push(format!(
                "Insufficient {name} (requests {}, {} of {} free)",
                amount(name, want),
                amount(name, capacity.saturating_sub(used).max(0)),
                amount(name, capacity)
            ));
        }
        match (reasons.is_empty(), unresolvable) {
            (true, _) => Ok(()),
            (false, true) => Err(Failure::unresolvable(reasons.join(", "))),
            (false, false) => Err(Failure::unschedulable(reasons.join(", "))),
        }
    }

    /// Resources `request` wants more of than is left: name, wanted, already
    /// requested, allocatable.
    fn shortfalls<'r>(
        &'r self,
        request: &'r Requests,
    ) -> impl Iterator<Item = (&'r str, i64, i64, i64)> + 'r {
        let fixed = [
            (CPU, request.cpu, self.requested.cpu, self.allocatable.cpu),
            (
                MEMORY,
                request.memory,
                self.requested.memory,
                self.allocatable.memory,
            ),
            (
                EPHEMERAL_STORAGE,
                request.ephemeral_storage,
                self.requested.ephemeral_storage,
                self.allocatable.ephemeral_storage,
            ),
        ];
        let scalar = request.scalar.iter().map(|(name, amount)| {
            (
                name.as_str(),
                *amount,
                self.requested.scalar(name),
                self.scalar(name),
            )
        });
        fixed
            .into_iter()
            .chain(scalar)
            .filter(|&(_, want, used, capacity)| short(want, used, capacity))
    }
}

/// A pod's request as NodeResourcesFit checks it, prepared once per pod:
/// without the ignored extended resources ([`without_ignored`]), and
/// knowing which of the rest a DeviceClass maps (DRA extended resources).
///
/// Upstream 1.37 `fitsRequest` skips a requested resource when
/// `shouldDelegateResourceToDRA` holds: the DRAExtendedResource gate is on,
/// the node's allocatable does not list the resource above 0, and the
/// DeviceClass cache maps its name (a class's `extendedResourceName`, or
/// `deviceclass.resource.kubernetes.io/<class>`). The DynamicResources
/// plugin then decides whether a device is free; kube-arbiter does not
/// look at devices. A node that lists the resource (a device plugin
/// serves it) is checked against its allocatable as before.
#[derive(Debug, Clone)]
pub struct PodRequest {
    requests: Requests,
    /// `requests` without the resources DeviceClasses map.
    without_dra: Requests,
    /// The requested resources DeviceClasses map, each with its class.
    dra: Vec<(String, String)>,
}

impl PodRequest {
    /// `requests` checked as they are: nothing ignored, nothing left to DRA.
    pub fn plain(requests: Requests) -> Self {
        Self {
            without_dra: requests.clone(),
            requests,
            dra: Vec::new(),
        }
    }

    /// `requests` as NodeResourcesFit configured by `settings` checks
    /// them, with `classes` the DeviceClasses of the view.
    pub fn new(
        requests: Requests,
        settings: &SchedulingSettings,
        classes: &ExtendedResourceClasses,
    ) -> Self {
        let requests = without_ignored(requests, settings);
        if !settings.dra_extended_resource() {
            return Self::plain(requests);
        }
        let dra: Vec<(String, String)> = requests
            .scalar
            .iter()
            .filter(|(_, amount)| *amount > 0)
            .filter_map(|(name, _)| {
                let class = classes.class_of(name)?;
                Some((name.clone(), class.metadata.name.clone()))
            })
            .collect();
        let mut without_dra = requests.clone();
        without_dra
            .scalar
            .retain(|(name, _)| !dra.iter().any(|(d, _)| d == name));
        Self {
            requests,
            without_dra,
            dra,
        }
    }

    /// The requested resources DeviceClasses map, with the class mapping
    /// each (name, class); NodeResourcesFit checks them only on nodes that
    /// list them.
    pub fn dra_backed(&self) -> &[(String, String)] {
        &self.dra
    }

    /// What NodeResourcesFit checks on a node with `allocatable`: every
    /// resource but those DeviceClasses map that the node does not list
    /// above 0. Borrowed unless the node lists some of them but not all.
    pub fn on_node(&self, allocatable: &ResourceList) -> Cow<'_, Requests> {
        if self.dra.is_empty() {
            return Cow::Borrowed(&self.requests);
        }
        let listed = |name: &str| allocatable.get(name).is_some_and(|&a| a > 0);
        let on_node = self.dra.iter().filter(|(name, _)| listed(name)).count();
        if on_node == 0 {
            return Cow::Borrowed(&self.without_dra);
        }
        if on_node == self.dra.len() {
            return Cow::Borrowed(&self.requests);
        }
        let mut requests = self.requests.clone();
        requests
            .scalar
            .retain(|(name, _)| listed(name) || !self.dra.iter().any(|(d, _)| d == name));
        Cow::Owned(requests)
    }
}

/// `request` without the extended resources NodeResourcesFit is told to
/// ignore (upstream `fitsRequest`: an extended resource named in
/// `ignoredResources`, or whose prefix before `/` is in
/// `ignoredResourceGroups`, is not checked). Native resources, hugepages
/// included, are always checked.
pub fn without_ignored(mut request: Requests, settings: &SchedulingSettings) -> Requests {
    if settings.ignored_resources.is_empty() && settings.ignored_resource_groups.is_empty() {
        return request;
    }
    request.scalar.retain(|(name, _)| {
        let ignored = is_extended_resource_name(name)
            && (settings.ignored_resources.iter().any(|r| r == name)
                || name.split_once('/').is_some_and(|(group, _)| {
                    settings.ignored_resource_groups.iter().any(|g| g == group)
                }));
        !ignored
    });
    request
}

/// Upstream `IsExtendedResourceName`: a name with a `/` outside the
/// `kubernetes.io/` namespace, not a quota `requests.` name.
fn is_extended_resource_name(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/") && !name.starts_with("requests.")
}

/// Whether `want` of a resource is more than is left of `capacity`.
fn short(want: i64, used: i64, capacity: i64) -> bool {
    want > 0 && want > capacity.saturating_sub(used)
}

fn amount(resource: &str, value: i64) -> String {
    if resource == CPU {
        format!("{value}m")
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::requests::pod_requests;
    use crate::model::requests::tests::{containers, pod};
    use crate::policy::Code;
    use serde_json::json;

    fn list(alloc: serde_json::Value) -> ResourceList {
        crate::model::quantity::resource_list(alloc).unwrap()
    }

    fn node<'a>(alloc: &'a ResourceList, used: &[serde_json::Value]) -> NodeResources<'a> {
        let mut requested = Requests::default();
        for r in used {
            requested.add(&pod_requests(&pod(
                json!({"containers": containers(std::slice::from_ref(r))}),
            )));
        }
        NodeResources::new(alloc, &requested, used.len())
    }

    struct FitCase {
        name: &'static str,
        request: serde_json::Value,
        used: Vec<serde_json::Value>,
        want: Option<(Code, &'static str)>,
    }

    #[test]
    fn fit_table() {
        let alloc = json!({"cpu": "10", "memory": "20", "pods": "32", "example.com/aaa": "5", "ephemeral-storage": "20"});
        let cases = [
            FitCase {
                name: "no resources requested always fits",
                request: json!({}),
                used: vec![json!({"cpu": "10", "memory": "20"})],
                want: None,
            },
            FitCase {
                name: "too many resources fails on cpu and memory",
                request: json!({"cpu": "1", "memory": "1"}),
                used: vec![json!({"cpu": "10", "memory": "20"})],
                want: Some((
                    Code::Unschedulable,
                    "Insufficient cpu (requests 1000m, 0m of 10000m free), Insufficient memory",
                )),
            },
            FitCase {
                name: "equal edge case fits",
                request: json!({"cpu": "5", "memory": "19"}),
                used: vec![json!({"cpu": "5", "memory": "1"})],
                want: None,
            },
            FitCase {
                name: "insufficient memory only",
                request: json!({"cpu": "1", "memory": "2"}),
                used: vec![json!({"cpu": "5", "memory": "19"})],
                want: Some((
                    Code::Unschedulable,
                    "Insufficient memory (requests 2, 1 of 20 free)",
                )),
            },
            FitCase {
                name: "extended resource over what is left",
                request: json!({"example.com/aaa": "3"}),
                used: vec![json!({"example.com/aaa": "3"})],
                want: Some((
                    Code::Unschedulable,
                    "Insufficient example.com/aaa (requests 3, 2 of 5 free)",
                )),
            },
            FitCase {
                name: "extended resource the node does not have at all is unresolvable",
                request: json!({"example.com/bbb": "1"}),
                used: vec![],
                want: Some((
                    Code::UnschedulableAndUnresolvable,
                    "Insufficient example.com/bbb (requests 1, 0 of 0 free)",
                )),
            },
            FitCase {
                name: "request above the whole allocatable is unresolvable",
                request: json!({"cpu": "11"}),
                used: vec![],
                want: Some((Code::UnschedulableAndUnresolvable, "Insufficient cpu")),
            },
            FitCase {
                name: "ephemeral storage over what is left",
                request: json!({"ephemeral-storage": "10"}),
                used: vec![json!({"ephemeral-storage": "15"})],
                want: Some((Code::Unschedulable, "Insufficient ephemeral-storage")),
            },
        ];
        for case in cases {
            let alloc = list(alloc.clone());
            let n = node(&alloc, &case.used);
            let req = pod_requests(&pod(json!({"containers": containers(&[case.request])})));
            match (n.fits(&req), case.want) {
                (Ok(()), None) => {}
                (Err(f), Some((code, prefix))) => {
                    assert_eq!(f.code, code, "{}", case.name);
                    assert!(f.reason.starts_with(prefix), "{}: {}", case.name, f.reason);
                }
                (got, want) => panic!("{}: got {got:?}, want {want:?}", case.name),
            }
        }
    }

    /// Upstream `fitsRequest` with NodeResourcesFitArgs `ignoredResources`
    /// and `ignoredResourceGroups`; rows name the case.
    #[test]
    fn ignored_resources_table() {
        let alloc = list(json!({"cpu": "4", "pods": "10", "hugepages-2Mi": "0"}));
        let n = node(&alloc, &[]);
        let settings = |resources: &[&str], groups: &[&str]| SchedulingSettings {
            ignored_resources: resources.iter().map(|s| s.to_string()).collect(),
            ignored_resource_groups: groups.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        let cases = [
            (
                "not ignored: the node lacks it",
                json!({"example.com/vgpu-mem": "1000"}),
                settings(&[], &[]),
                false,
            ),
            (
                "ignored by name",
                json!({"example.com/vgpu-mem": "1000"}),
                settings(&["example.com/vgpu-mem"], &[]),
                true,
            ),
            (
                "ignored by group",
                json!({"example.com/vgpu-mem": "1000"}),
                settings(&[], &["example.com"]),
                true,
            ),
            (
                "another group is still checked",
                json!({"example.com/vgpu-mem": "1000"}),
                settings(&[], &["hami.io"]),
                false,
            ),
            (
                "hugepages are native, never ignored",
                json!({"hugepages-2Mi": "2Mi"}),
                settings(&["hugepages-2Mi"], &[]),
                false,
            ),
            (
                "kubernetes.io/ names are native, never ignored",
                json!({"kubernetes.io/batteries": "1"}),
                settings(&[], &["kubernetes.io"]),
                false,
            ),
            (
                "ignoring does not lift cpu",
                json!({"cpu": "5", "example.com/vgpu-mem": "1"}),
                settings(&[], &["example.com"]),
                false,
            ),
        ];
        for (name, request, settings, fits) in cases {
            let req = pod_requests(&pod(json!({"containers": containers(&[request])})));
            let got = n.fits(&without_ignored(req, &settings));
            assert_eq!(got.is_ok(), fits, "{name}: {got:?}");
        }
    }

    /// Upstream 1.37 `fitsRequest` with `shouldDelegateResourceToDRA`
    /// (pkg/scheduler/framework/plugins/noderesources/fit.go) and the
    /// DeviceClass cache of `extendedresourcecache`; rows name the case,
    /// several as upstream's `TestEnoughRequests` does.
    #[test]
    fn dra_extended_resources_table() {
        use crate::cluster::{ClusterObjects, Snapshot};
        let classes: Vec<crate::model::DeviceClass> = vec![
            serde_json::from_value(json!({"metadata": {"name": "gpu.example.com"},
                "spec": {"extendedResourceName": "example.com/gpu"}}))
            .unwrap(),
            serde_json::from_value(json!({"metadata": {"name": "fpga"}})).unwrap(),
        ];
        let snapshot = Snapshot::build(ClusterObjects {
            device_classes: classes,
            ..Default::default()
        });
        let gate = |on: bool| SchedulingSettings {
            feature_gates: [("DRAExtendedResource".to_string(), on)].into(),
            kubernetes_version: crate::config::upstream::Minor(36),
            ..Default::default()
        };
        let fpga = "deviceclass.resource.kubernetes.io/fpga";
        let cases = [
            (
                "extended resource backed by DRA: a node that does not list it fits",
                json!({"cpu": "4", "pods": "10"}),
                json!({"cpu": "1", "example.com/gpu": "1"}),
                gate(true),
                None,
            ),
            (
                "the implicit deviceclass.resource.kubernetes.io/<class> name is backed too",
                json!({"cpu": "4", "pods": "10"}),
                json!({fpga: "1"}),
                gate(true),
                None,
            ),
            (
                "a node whose device plugin lists it is checked against its allocatable",
                json!({"cpu": "4", "pods": "10", "example.com/gpu": "1"}),
                json!({"example.com/gpu": "2"}),
                gate(true),
                Some((
                    Code::UnschedulableAndUnresolvable,
                    "Insufficient example.com/gpu",
                )),
            ),
            (
                "extended resource was backed by a device plugin (allocatable 0): left to DRA",
                json!({"cpu": "4", "pods": "10", "example.com/gpu": "0"}),
                json!({"example.com/gpu": "2"}),
                gate(true),
                None,
            ),
            (
                "extended resource NOT backed by DRA",
                json!({"cpu": "4", "pods": "10"}),
                json!({"example.com/bbb": "1"}),
                gate(true),
                Some((
                    Code::UnschedulableAndUnresolvable,
                    "Insufficient example.com/bbb",
                )),
            ),
            (
                "extended resource backed by DRA, gate off (1.34, 1.35): counted",
                json!({"cpu": "4", "pods": "10"}),
                json!({"example.com/gpu": "1"}),
                gate(false),
                Some((
                    Code::UnschedulableAndUnresolvable,
                    "Insufficient example.com/gpu",
                )),
            ),
            (
                "DRA does not lift cpu",
                json!({"cpu": "4", "pods": "10"}),
                json!({"cpu": "5", "example.com/gpu": "1"}),
                gate(true),
                Some((
                    Code::UnschedulableAndUnresolvable,
                    "Insufficient cpu (requests 5000m, 4000m of 4000m free)",
                )),
            ),
            (
                "two DRA-backed resources, the node lists one: only that one is counted",
                json!({"cpu": "4", "pods": "10", "example.com/gpu": "1"}),
                json!({"example.com/gpu": "2", fpga: "1"}),
                gate(true),
                Some((
                    Code::UnschedulableAndUnresolvable,
                    "Insufficient example.com/gpu (requests 2, 1 of 1 free)",
                )),
            ),
        ];
        for (name, alloc, request, settings, want) in cases {
            let alloc = list(alloc);
            let n = node(&alloc, &[]);
            let req = pod_requests(&pod(json!({"containers": containers(&[request])})));
            let req = PodRequest::new(req, &settings, snapshot.extended_resource_classes());
            match (n.fits(&req.on_node(&alloc)), want) {
                (Ok(()), None) => {}
                (Err(f), Some((code, reason))) => {
                    assert_eq!(f.code, code, "{name}");
                    assert!(f.reason.starts_with(reason), "{name}: {}", f.reason);
                    assert!(!f.reason.contains(fpga), "{name}: {}", f.reason);
                }
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn dra_backed_resources_are_named_with_their_class() {
        use crate::cluster::{ClusterObjects, Snapshot};
        let snapshot = Snapshot::build(ClusterObjects {
            device_classes: vec![
                serde_json::from_value(json!({"metadata": {"name": "gpu.example.com"},
                    "spec": {"extendedResourceName": "example.com/gpu"}}))
                .unwrap(),
            ],
            ..Default::default()
        });
        let req = pod_requests(&pod(json!({"containers": containers(&[
            json!({"cpu": "1", "example.com/gpu": "1", "example.com/other": "1"})
        ])})));
        let req = PodRequest::new(
            req,
            &SchedulingSettings::default(),
            snapshot.extended_resource_classes(),
        );
        assert_eq!(
            req.dra_backed(),
            [("example.com/gpu".to_string(), "gpu.example.com".to_string())]
        );
    }

    #[test]
    fn pod_count_limit_is_resolvable_by_eviction() {
        let alloc = list(json!({"cpu": "10", "pods": "1"}));
        let n = node(&alloc, &[json!({})]);
        let err = n.fits(&Requests::default()).unwrap_err();
        assert_eq!(err.code, Code::Unschedulable);
        assert!(err.reason.starts_with("Too many pods"), "{}", err.reason);
    }

    #[test]
    fn removing_a_pod_frees_its_resources() {
        let alloc = list(json!({"cpu": "2", "pods": "2"}));
        let mut n = node(&alloc, &[json!({"cpu": "2"})]);
        let big = Requests {
            cpu: 2000,
            ..Default::default()
        };
        assert!(n.fits(&big).is_err());
        n.remove_pod(&big);
        assert!(n.fits(&big).is_ok());
        n.add_pod(&big);
        assert!(n.fits(&big).is_err());
    }
}
