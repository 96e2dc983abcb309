//! What a pod asks the scheduler to reserve, computed as kube-scheduler
//! does (component-helpers `resource.PodRequests`): the sum of the regular
//! containers plus running sidecars (restartable init containers), or the
//! largest init container if that is more (each init container also needs
//! the sidecars started before it); pod-level `spec.resources` replace the
//! container totals for cpu, memory and `hugepages-*`; the pod overhead is
//! added last.
//!
//! A pod already on a node counts what in-place resize says it holds
//! (`UseStatusResources`, which kube-scheduler turns on with
//! InPlacePodVerticalScaling, on by default since 1.33): per container, the
//! larger of the spec, `status.containerStatuses[].resources.requests` and
//! `allocatedResources`, without the spec when the resize is Infeasible.
//! The pod being scheduled counts its spec only.
//!
//! A model concern, not a policy: the snapshot keeps each bound pod's
//! requests next to it, and the fit and preemption policies compare them.

use super::Pod;
use super::pod::{Container, ContainerStatus};
use super::quantity::{CPU, EPHEMERAL_STORAGE, MEMORY, PODS, ResourceList};

/// Resources pod-level `spec.resources` may set (upstream
/// `IsSupportedPodLevelResource`): cpu, memory and every hugepages size.
pub fn is_supported_pod_level_resource(name: &str) -> bool {
    name == CPU || name == MEMORY || name.starts_with("hugepages-")
}

/// Resource amounts in scheduler units: cpu in millicores, the rest whole
/// units. `scalar` holds extended resources and hugepages, usually empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Requests {
    pub cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    pub scalar: Vec<(String, i64)>,
}

impl Requests {
    pub fn from_list(list: &ResourceList) -> Self {
        let mut r = Requests::default();
        for (name, &amount) in list {
            r.set(name, amount);
        }
        r
    }

    fn set(&mut self, name: &str, amount: i64) {
        match name {
            CPU => self.cpu = amount,
            MEMORY => self.memory = amount,
            EPHEMERAL_STORAGE => self.ephemeral_storage = amount,
            PODS => {}
            _ => match self.scalar.iter_mut().find(|(n, _)| n == name) {
                Some(entry) => entry.1 = amount,
                None => self.scalar.push((name.to_string(), amount)),
            },
        }
    }

    pub fn scalar(&self, name: &str) -> i64 {
        self.scalar
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |(_, v)| *v)
    }

    /// Small enough to inline (victim selection adds and subtracts every
    /// pod of every candidate node); extended resources, rare, apart.
    #[inline]
    pub fn add(&mut self, other: &Requests) {
        self.cpu = self.cpu.saturating_add(other.cpu);
        self.memory = self.memory.saturating_add(other.memory);
        self.ephemeral_storage = self
            .ephemeral_storage
            .saturating_add(other.ephemeral_storage);
        if !other.scalar.is_empty() {
            self.add_scalars(other);
        }
    }

    fn add_scalars(&mut self, other: &Requests) {
        for (name, amount) in &other.scalar {
            let sum = self.scalar(name).saturating_add(*amount);
            self.set(name, sum);
        }
    }

    /// See [`Self::add`].
    #[inline]
    pub fn subtract(&mut self, other: &Requests) {
        self.cpu = self.cpu.saturating_sub(other.cpu);
        self.memory = self.memory.saturating_sub(other.memory);
        self.ephemeral_storage = self
            .ephemeral_storage
            .saturating_sub(other.ephemeral_storage);
        if !other.scalar.is_empty() {
            self.subtract_scalars(other);
        }
    }

    fn subtract_scalars(&mut self, other: &Requests) {
        for (name, amount) in &other.scalar {
            let rest = self.scalar(name).saturating_sub(*amount);
            self.set(name, rest);
        }
    }

    /// Per resource, the larger of the two.
    fn max_with(&mut self, other: &Requests) {
        self.cpu = self.cpu.max(other.cpu);
        self.memory = self.memory.max(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.max(other.ephemeral_storage);
        for (name, amount) in &other.scalar {
            if *amount > self.scalar(name) {
                self.set(name, *amount);
            }
        }
    }
}

/// How a container's requests are read: from the spec alone (the pod
/// being scheduled), or with what an in-place resize reports (a pod on a
/// node).
#[derive(Clone, Copy)]
enum Source<'p> {
    Spec,
    Status { pod: &'p Pod, infeasible: bool },
}

impl<'p> Source<'p> {
    fn status_of(&self, name: &str) -> Option<(&'p ContainerStatus, bool)> {
        let Source::Status { pod, infeasible } = *self else {
            return None;
        };
        let status = pod
            .status
            .container_statuses
            .iter()
            .chain(&pod.status.init_container_statuses)
            .find(|s| s.name == name)?;
        Some((status, infeasible))
    }

    /// Upstream `determineContainerReqs` (1.33-1.34): once the kubelet
    /// reports the container's resources, the larger of spec, actual and
    /// allocated per resource; an Infeasible resize leaves the spec out.
    fn requests(&self, c: &Container) -> Requests {
        let spec = || Requests::from_list(&c.resources.requests);
        let Some((status, infeasible)) = self.status_of(&c.name) else {
            return spec();
        };
        let Some(actual) = &status.resources else {
            return spec();
        };
        let mut r = if infeasible {
            Requests::default()
        } else {
            spec()
        };
        r.max_with(&Requests::from_list(&actual.requests));
        r.max_with(&Requests::from_list(&status.allocated_resources));
        r
    }
}

fn is_sidecar(c: &Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

/// What the scheduler reserves for `pod`, the pod being scheduled: its
/// spec (upstream `computePodResourceRequest`).
pub fn pod_requests(pod: &Pod) -> Requests {
    requests_from(pod, Source::Spec)
}

/// What a pod already on a node (or nominated to it) holds there, as the
/// scheduler's NodeInfo counts it (upstream `calculateResource` with
/// `UseStatusResources`): an in-place resize's reported resources count.
pub fn assigned_pod_requests(pod: &Pod) -> Requests {
    requests_from(
        pod,
        Source::Status {
            pod,
            infeasible: pod.is_resize_infeasible(),
        },
    )
}

fn requests_from(pod: &Pod, source: Source<'_>) -> Requests {
    let mut total = Requests::default();
    for c in &pod.spec.containers {
        total.add(&source.requests(c));
    }
    // Sidecars keep running next to the regular containers; a plain init
    // container runs alone next to the sidecars started before it. Only
    // sidecars can be resized, so only they read the status.
    let mut sidecars = Requests::default();
    let mut largest_init = Requests::default();
    for c in &pod.spec.init_containers {
        let during = if is_sidecar(c) {
            let own = source.requests(c);
            total.add(&own);
            sidecars.add(&own);
            sidecars.clone()
        } else {
            let mut with_sidecars = Requests::from_list(&c.resources.requests);
            with_sidecars.add(&sidecars);
            with_sidecars
        };
        largest_init.max_with(&during);
    }
    total.max_with(&largest_init);
    if let Some(pod_level) = &pod.spec.resources {
        for (name, &amount) in &pod_level.requests {
            if is_supported_pod_level_resource(name) {
                total.set(name, amount);
            }
        }
    }
    total.add(&Requests::from_list(&pod.spec.overhead));
    total
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// A pod with `spec`; shared with the NodeResourcesFit tests.
    pub(crate) fn pod(spec: serde_json::Value) -> Pod {
        serde_json::from_value(json!({ "metadata": {"name": "p"}, "spec": spec })).unwrap()
    }

    /// One container per entry, each requesting that resource list.
    pub(crate) fn containers(reqs: &[serde_json::Value]) -> serde_json::Value {
        reqs.iter()
            .map(|r| json!({"name": "c", "resources": {"requests": r}}))
            .collect()
    }

    #[test]
    fn sum_of_containers_when_init_containers_are_smaller() {
        let p = pod(json!({
            "containers": containers(&[json!({"cpu": "1", "memory": "1Gi"}), json!({"cpu": "2", "memory": "1Gi"})]),
            "initContainers": containers(&[json!({"cpu": "2", "memory": "1Gi"})]),
        }));
        let r = pod_requests(&p);
        assert_eq!((r.cpu, r.memory), (3000, 2 << 30));
    }

    #[test]
    fn largest_init_container_wins_when_bigger_than_the_sum() {
        let p = pod(json!({
            "containers": containers(&[json!({"cpu": "1", "memory": "1Gi"})]),
            "initContainers": containers(&[json!({"cpu": "3", "memory": "1Gi"}), json!({"cpu": "2", "memory": "5Gi"})]),
        }));
        let r = pod_requests(&p);
        assert_eq!((r.cpu, r.memory), (3000, 5 << 30));
    }

    #[test]
    fn sidecars_add_to_the_regular_containers_and_to_later_init_containers() {
        let p = pod(json!({
            "containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}],
            "initContainers": [
                {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
                {"name": "migrate", "resources": {"requests": {"cpu": "2"}}}
            ],
        }));
        // regular 1 + sidecar 0.5 = 1.5; init "migrate" 2 + sidecar 0.5 = 2.5
        assert_eq!(pod_requests(&p).cpu, 2500);
    }

    #[test]
    fn overhead_is_added_after_the_max_rule() {
        let p = pod(json!({
            "containers": containers(&[json!({"cpu": "1"})]),
            "initContainers": containers(&[json!({"cpu": "2"})]),
            "overhead": {"cpu": "250m", "memory": "100"},
        }));
        let r = pod_requests(&p);
        assert_eq!((r.cpu, r.memory), (2250, 100));
    }

    /// Upstream `PodRequests` with `UseStatusResources` (component-helpers
    /// `resource/helpers.go`, `determineContainerReqs`, 1.33-1.34): rows
    /// name the case; cpu in millicores.
    #[test]
    fn in_place_resize_status_resources_table() {
        struct Case {
            name: &'static str,
            pod: serde_json::Value,
            assigned: i64,
            pending: i64,
        }
        /// A running pod whose container `app` requests `spec` cpu and
        /// reports `status`.
        fn running(
            spec: &str,
            mut status: serde_json::Value,
            conditions: serde_json::Value,
        ) -> serde_json::Value {
            status["name"] = json!("app");
            json!({
                "metadata": {"name": "p"},
                "spec": {"nodeName": "n1", "containers": [{"name": "app", "resources": {"requests": {"cpu": spec}}}]},
                "status": {"phase": "Running", "conditions": conditions, "containerStatuses": [status]},
            })
        }
        let infeasible =
            json!([{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]);
        let deferred =
            json!([{"type": "PodResizePending", "status": "True", "reason": "Deferred"}]);
        let cases = [
            Case {
                name: "spec shrunk, the node still holds the old size: max(spec, actual, allocated)",
                pod: running(
                    "1",
                    json!({"resources": {"requests": {"cpu": "3"}}, "allocatedResources": {"cpu": "3"}}),
                    json!([]),
                ),
                assigned: 3000,
                pending: 1000,
            },
            Case {
                name: "resize down admitted but not actuated: actual is the largest",
                pod: running(
                    "1",
                    json!({"resources": {"requests": {"cpu": "2"}}, "allocatedResources": {"cpu": "1"}}),
                    json!([]),
                ),
                assigned: 2000,
                pending: 1000,
            },
            Case {
                name: "resize up deferred: the spec is the largest and counts",
                pod: running(
                    "5",
                    json!({"resources": {"requests": {"cpu": "1"}}, "allocatedResources": {"cpu": "1"}}),
                    deferred,
                ),
                assigned: 5000,
                pending: 5000,
            },
            Case {
                name: "resize up infeasible: the spec is ignored",
                pod: running(
                    "5",
                    json!({"resources": {"requests": {"cpu": "1"}}, "allocatedResources": {"cpu": "1"}}),
                    infeasible.clone(),
                ),
                assigned: 1000,
                pending: 5000,
            },
            Case {
                name: "no status resources reported yet: the spec, even if infeasible",
                pod: running("5", json!({"allocatedResources": {"cpu": "1"}}), infeasible),
                assigned: 5000,
                pending: 5000,
            },
        ];
        for case in cases {
            let p: Pod = serde_json::from_value(case.pod).unwrap();
            assert_eq!(
                assigned_pod_requests(&p).cpu,
                case.assigned,
                "{}",
                case.name
            );
            assert_eq!(
                pod_requests(&p).cpu,
                case.pending,
                "{} (the pod being scheduled)",
                case.name
            );
        }
    }

    /// Upstream reads the status of restartable init containers only; a
    /// plain init container has finished and counts its spec.
    #[test]
    fn in_place_resize_of_a_sidecar_counts_and_plain_init_containers_keep_their_spec() {
        let p: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "spec": {
                "nodeName": "n1",
                "containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}],
                "initContainers": [
                    {"name": "setup", "resources": {"requests": {"cpu": "500m"}}},
                    {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}}
                ]
            },
            "status": {"initContainerStatuses": [
                {"name": "setup", "resources": {"requests": {"cpu": "4"}}},
                {"name": "proxy", "resources": {"requests": {"cpu": "2"}}, "allocatedResources": {"cpu": "2"}}
            ]}
        }))
        .unwrap();
        // app 1 + proxy 2 (its status); setup keeps its spec 0.5.
        assert_eq!(assigned_pod_requests(&p).cpu, 3000);
        assert_eq!(pod_requests(&p).cpu, 1500);
    }

    #[test]
    fn pod_level_hugepages_replace_the_container_total() {
        // Upstream IsSupportedPodLevelResource: cpu, memory, hugepages-*.
        let p = pod(json!({
            "containers": containers(&[json!({"hugepages-2Mi": "256Mi", "example.com/gpu": "1"})]),
            "resources": {"requests": {"hugepages-2Mi": "1Gi", "example.com/gpu": "4"}},
        }));
        let r = pod_requests(&p);
        assert_eq!(r.scalar("hugepages-2Mi"), 1 << 30);
        assert_eq!(r.scalar("example.com/gpu"), 1, "not a pod-level resource");
    }

    #[test]
    fn pod_level_resources_replace_container_totals_for_cpu_and_memory() {
        let p = pod(json!({
            "containers": containers(&[json!({"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi"})]),
            "resources": {"requests": {"cpu": "3"}},
        }));
        let r = pod_requests(&p);
        assert_eq!(
            (r.cpu, r.memory, r.ephemeral_storage),
            (3000, 1 << 30, 1 << 30)
        );
    }

    #[test]
    fn extended_resources_are_summed() {
        let p = pod(json!({
            "containers": containers(&[json!({"example.com/gpu": "1"}), json!({"example.com/gpu": "2"})]),
        }));
        assert_eq!(pod_requests(&p).scalar("example.com/gpu"), 3);
    }
}
