//! What a pod asks the scheduler to reserve, computed as kube-scheduler
//! does (component-helpers `resource.PodRequests`): the sum of the regular
//! containers plus running sidecars (restartable init containers), or the
//! largest init container if that is more (each init container also needs
//! the sidecars started before it); pod-level `spec.resources` replace the
//! container totals for cpu, memory and `hugepages-*`; the pod overhead is
//! added last.
//!
//! A pod already on a node counts what in-place resize says it holds
//! (`UseStatusResources`, on by default since 1.33), by a
//! [`RequestsRule`]: 1.37's largest of the spec, allocated and actuated
//! sums over the pod (pod-level `status.resources` and
//! `allocatedResources` when reported), or 1.33-1.36's per container
//! larger of the spec, `status.containerStatuses[].resources.requests`
//! and `allocatedResources`; an Infeasible resize leaves the spec out.
//! Which rule is the caller's argument: the release followed is a setting
//! (`scheduling.kubernetesVersion`), chosen at the top and handed to the
//! view when it is built. The pod being scheduled counts its spec only.
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

/// How a container's requests are read under the 1.33-1.36 rule: from the
/// spec alone (the pod being scheduled), or with what an in-place resize
/// reports (a pod on a node).
#[derive(Clone, Copy)]
enum Source<'p> {
    Spec,
    Status { pod: &'p Pod, infeasible: bool },
}

impl Source<'_> {
    /// Upstream `determineContainerReqs` (1.33-1.36): once the kubelet
    /// reports the container's resources, the larger of spec, actual and
    /// allocated per resource; an Infeasible resize leaves the spec out.
    fn requests(&self, c: &Container) -> Requests {
        let spec = || Requests::from_list(&c.resources.requests);
        let Source::Status { pod, infeasible } = *self else {
            return spec();
        };
        let Some(status) = status_of(pod, &c.name) else {
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

/// Upstream `findContainerStatus`: regular containers' statuses first.
fn status_of<'p>(pod: &'p Pod, name: &str) -> Option<&'p ContainerStatus> {
    pod.status
        .container_statuses
        .iter()
        .chain(&pod.status.init_container_statuses)
        .find(|s| s.name == name)
}

fn is_sidecar(c: &Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

/// What the scheduler reserves for `pod`, the pod being scheduled: its
/// spec (upstream `computePodResourceRequest`).
pub fn pod_requests(pod: &Pod) -> Requests {
    requests_from(pod, Source::Spec)
}

/// How a pod on a node counts what in-place resize reports, as the
/// kube-scheduler of a release does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RequestsRule {
    /// 1.33-1.36 (upstream `determineContainerReqs`): per container, the
    /// largest of spec, actual and allocated; the sum of those.
    PerContainerMax,
    /// From 1.37: the largest of the spec, allocated and actuated sums
    /// over the pod.
    #[default]
    MaxOfSums,
}

/// What a pod already on a node (or nominated to it) holds there, as the
/// scheduler's NodeInfo counts it (upstream `calculateResource` with
/// `UseStatusResources`), under `rule`.
pub fn assigned_pod_requests(pod: &Pod, rule: RequestsRule) -> Requests {
    match rule {
        RequestsRule::MaxOfSums => max_of_sums(pod),
        RequestsRule::PerContainerMax => requests_from(
            pod,
            Source::Status {
                pod,
                infeasible: pod.is_resize_infeasible(),
            },
        ),
    }
}

/// The sidecar formula over the containers (upstream
/// `aggregateContainerResourcesByFn`): the regular containers plus the
/// sidecars (restartable init containers), or the largest init container
/// with the sidecars started before it if that is more. `of` reads one
/// container; its flag says it is a plain (run-to-completion) init
/// container.
fn aggregate(pod: &Pod, of: impl Fn(&Container, bool) -> Requests) -> Requests {
    let mut total = Requests::default();
    for c in &pod.spec.containers {
        total.add(&of(c, false));
    }
    let mut sidecars = Requests::default();
    let mut largest_init = Requests::default();
    for c in &pod.spec.init_containers {
        let during = if is_sidecar(c) {
            let own = of(c, false);
            total.add(&own);
            sidecars.add(&own);
            sidecars.clone()
        } else {
            let mut with_sidecars = of(c, true);
            with_sidecars.add(&sidecars);
            with_sidecars
        };
        largest_init.max_with(&during);
    }
    total.max_with(&largest_init);
    total
}

/// The 1.33-1.36 rule: per container, what `source` reads; a plain init
/// container has finished and keeps its spec (only sidecars read the
/// status); pod-level `spec.resources` replace the totals they name.
fn requests_from(pod: &Pod, source: Source<'_>) -> Requests {
    let mut total = aggregate(pod, |c, plain_init| {
        if plain_init {
            Requests::from_list(&c.resources.requests)
        } else {
            source.requests(c)
        }
    });
    if let Some(pod_level) = &pod.spec.resources {
        apply_pod_level(&mut total, &pod_level.requests);
    }
    total.add(&Requests::from_list(&pod.spec.overhead));
    total
}

/// Upstream `applyPodLevelResources`: the pod-level amounts of cpu, memory
/// and hugepages replace the container totals.
fn apply_pod_level(total: &mut Requests, pod_level: &ResourceList) {
    for (name, &amount) in pod_level {
        if is_supported_pod_level_resource(name) {
            total.set(name, amount);
        }
    }
}

/// The 1.37 rule (component-helpers v0.37.2 `AggregateContainerRequests`
/// and `PodRequests` with `UseStatusResources` and
/// `InPlacePodLevelResourcesVerticalScalingEnabled`): the spec, the
/// allocated and the actuated requests are each summed over the pod
/// (sidecar formula), then the largest of the three sums counts, since a
/// resize is allocated and actuated for the whole pod at once. An
/// Infeasible resize leaves the spec out. Every container reads its
/// status, plain init containers too. When the pod reports pod-level
/// `status.resources.requests` and `status.allocatedResources`, those are
/// the actuated and allocated sums. Pod-level `spec.resources` replace
/// what they name, raised to the pod-level status when there is one.
fn max_of_sums(pod: &Pod) -> Requests {
    let infeasible = pod.is_resize_infeasible();
    let spec = aggregate(pod, |c, _| Requests::from_list(&c.resources.requests));
    let status = &pod.status;
    let pod_level_actuated = status.resources.as_ref().map(|r| &r.requests);
    let (allocated, actuated) = match pod_level_actuated {
        Some(actuated) if !status.allocated_resources.is_empty() && !actuated.is_empty() => (
            Requests::from_list(&status.allocated_resources),
            Requests::from_list(actuated),
        ),
        _ => (
            aggregate(pod, |c, _| allocated_requests(pod, c, infeasible)),
            aggregate(pod, |c, _| actuated_requests(pod, c, infeasible)),
        ),
    };
    let mut total = if infeasible {
        Requests::default()
    } else {
        spec
    };
    total.max_with(&actuated);
    total.max_with(&allocated);
    if let Some(pod_level) = pod.spec.resources.as_ref().filter(|r| {
        r.requests
            .keys()
            .any(|name| is_supported_pod_level_resource(name))
    }) {
        match &status.resources {
            // Upstream `effectivePodLevelResources`: per resource named
            // anywhere, the largest of spec (unless Infeasible), actual
            // and allocated.
            Some(actual) => {
                let spec = if infeasible {
                    None
                } else {
                    Some(&pod_level.requests)
                };
                let mut effective = ResourceList::new();
                for list in spec
                    .into_iter()
                    .chain([&actual.requests, &status.allocated_resources])
                {
                    for (name, &amount) in list {
                        let e = effective.entry(name.clone()).or_insert(amount);
                        *e = (*e).max(amount);
                    }
                }
                apply_pod_level(&mut total, &effective);
            }
            None => apply_pod_level(&mut total, &pod_level.requests),
        }
    }
    total.add(&Requests::from_list(&pod.spec.overhead));
    total
}

/// Upstream `containerAllocatedRequests`: what the kubelet admitted, else
/// (nothing reported) the spec unless the resize is Infeasible.
fn allocated_requests(pod: &Pod, c: &Container, infeasible: bool) -> Requests {
    match status_of(pod, &c.name) {
        Some(s) if !s.allocated_resources.is_empty() => Requests::from_list(&s.allocated_resources),
        _ if infeasible => Requests::default(),
        _ => Requests::from_list(&c.resources.requests),
    }
}

/// Upstream `containerActuatedRequests`: what the container runs with,
/// else what was admitted, else the spec unless the resize is Infeasible.
fn actuated_requests(pod: &Pod, c: &Container, infeasible: bool) -> Requests {
    let status = status_of(pod, &c.name);
    match status.and_then(|s| s.resources.as_ref()) {
        Some(r) if !r.requests.is_empty() => Requests::from_list(&r.requests),
        _ => allocated_requests(pod, c, infeasible),
    }
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

    /// The rules of 1.33-1.36 and of 1.37 (which minor follows which:
    /// `config::upstream`'s tests).
    const V1_36: RequestsRule = RequestsRule::PerContainerMax;
    const V1_37: RequestsRule = RequestsRule::MaxOfSums;

    /// The cpu (millicores) a pod on a node holds under `rule`.
    fn held(pod: &Pod, rule: RequestsRule) -> i64 {
        assigned_pod_requests(pod, rule).cpu
    }

    /// A running pod on n1: `spec` is merged into its spec, `status` is
    /// its status.
    fn running(spec: serde_json::Value, status: serde_json::Value) -> Pod {
        let mut pod = json!({
            "metadata": {"name": "p"},
            "spec": {"nodeName": "n1"},
            "status": status,
        });
        for (k, v) in spec.as_object().unwrap() {
            pod["spec"][k] = v.clone();
        }
        pod["status"]["phase"] = json!("Running");
        serde_json::from_value(pod).unwrap()
    }

    fn infeasible() -> serde_json::Value {
        json!([{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}])
    }

    /// In-place resize of a pod on a node, under both rules: 1.33-1.36
    /// (component-helpers v0.34.4 `determineContainerReqs`: per container
    /// the max of spec, actual and allocated, once actual is reported)
    /// and 1.37 (v0.37.2 `AggregateContainerRequests`: the max of the
    /// spec, allocated and actuated sums). Rows marked "upstream" are
    /// v0.37.2 `TestPodResourceRequests` and
    /// `TestPodRequestsAndLimitsVerticalScalingWrappers` cases; cpu in
    /// millicores. The pod being scheduled always counts its spec.
    #[test]
    fn in_place_resize_table() {
        let app = |cpu: &str| json!({"containers": [{"name": "app", "resources": {"requests": {"cpu": cpu}}}]});
        let status = |s: serde_json::Value, conditions: serde_json::Value| {
            let mut s = s;
            s["name"] = json!("app");
            json!({"conditions": conditions, "containerStatuses": [s]})
        };
        let two = json!({"containers": [
            {"name": "c1", "resources": {"requests": {"cpu": "1"}}},
            {"name": "c2", "resources": {"requests": {"cpu": "2"}}}]});
        // (name, pod, held under 1.36, held under 1.37)
        let cases = [
            (
                "spec shrunk, the node still holds the old size",
                running(
                    app("1"),
                    status(
                        json!({"resources": {"requests": {"cpu": "3"}}, "allocatedResources": {"cpu": "3"}}),
                        json!([]),
                    ),
                ),
                3000,
                3000,
            ),
            (
                "resize down admitted but not actuated: actual is the largest",
                running(
                    app("1"),
                    status(
                        json!({"resources": {"requests": {"cpu": "2"}}, "allocatedResources": {"cpu": "1"}}),
                        json!([]),
                    ),
                ),
                2000,
                2000,
            ),
            (
                "resize up deferred: the spec is the largest and counts",
                running(
                    app("5"),
                    status(
                        json!({"resources": {"requests": {"cpu": "1"}}, "allocatedResources": {"cpu": "1"}}),
                        json!([{"type": "PodResizePending", "status": "True", "reason": "Deferred"}]),
                    ),
                ),
                5000,
                5000,
            ),
            (
                "upstream: resized, infeasible (the spec is left out)",
                running(
                    app("4"),
                    status(
                        json!({"resources": {"requests": {"cpu": "2"}}}),
                        infeasible(),
                    ),
                ),
                2000,
                2000,
            ),
            (
                "upstream: resized, infeasible & in-progress",
                running(
                    app("6"),
                    status(
                        json!({"resources": {"requests": {"cpu": "2"}}, "allocatedResources": {"cpu": "4"}}),
                        infeasible(),
                    ),
                ),
                4000,
                4000,
            ),
            (
                "upstream: resized, no resize status",
                running(
                    app("4"),
                    status(json!({"resources": {"requests": {"cpu": "2"}}}), json!([])),
                ),
                4000,
                4000,
            ),
            (
                "infeasible, only allocated reported: 1.37 reads it, 1.36 needs actual first",
                running(
                    app("5"),
                    status(json!({"allocatedResources": {"cpu": "1"}}), infeasible()),
                ),
                5000,
                1000,
            ),
            (
                "upstream: max of sums instead of sum of maxes (allocated only)",
                running(
                    two.clone(),
                    json!({"containerStatuses": [
                    {"name": "c1", "allocatedResources": {"cpu": "2"}},
                    {"name": "c2", "allocatedResources": {"cpu": "1"}}]}),
                ),
                3000,
                3000,
            ),
            (
                "containers resized in opposite directions, actuated: sum of maxes 4, max of sums 3",
                running(
                    two.clone(),
                    json!({"containerStatuses": [
                    {"name": "c1", "resources": {"requests": {"cpu": "2"}}, "allocatedResources": {"cpu": "2"}},
                    {"name": "c2", "resources": {"requests": {"cpu": "1"}}, "allocatedResources": {"cpu": "1"}}]}),
                ),
                4000,
                3000,
            ),
            (
                "pod-level status totals replace the container statuses",
                running(
                    two.clone(),
                    json!({
                    "resources": {"requests": {"cpu": "4"}}, "allocatedResources": {"cpu": "4"},
                    "containerStatuses": [{"name": "c1", "resources": {"requests": {"cpu": "1"}}}]}),
                ),
                3000,
                4000,
            ),
            (
                "pod-level status needs both totals: allocated alone falls back to the containers",
                running(two.clone(), json!({"allocatedResources": {"cpu": "9"}})),
                3000,
                3000,
            ),
            (
                "upstream: pod-level requests with pod-level status populated",
                running(
                    json!({"resources": {"requests": {"cpu": "2"}}, "containers": [{"name": "c1", "resources": {"requests": {"cpu": "1"}}}]}),
                    json!({"allocatedResources": {"cpu": "3"}, "resources": {"requests": {"cpu": "3500m"}}}),
                ),
                2000,
                3500,
            ),
            (
                "upstream: pod-level requests with an infeasible resize",
                running(
                    json!({"resources": {"requests": {"cpu": "10"}}, "containers": [{"name": "c1", "resources": {"requests": {"cpu": "1"}}}]}),
                    json!({"conditions": infeasible(), "allocatedResources": {"cpu": "3"}, "resources": {"requests": {"cpu": "4"}}}),
                ),
                10000,
                4000,
            ),
        ];
        for (name, pod, v1_36, v1_37) in cases {
            assert_eq!(held(&pod, V1_36), v1_36, "1.36: {name}");
            assert_eq!(held(&pod, V1_37), v1_37, "1.37: {name}");
            assert_eq!(
                held(&pod, RequestsRule::default()),
                v1_37,
                "the default follows 1.37: {name}"
            );
        }
    }

    /// Upstream "resized, restartable init container, infeasible" (cpu 2)
    /// and "…, no resize status" (cpu 4), the same under both rules.
    #[test]
    fn in_place_resize_of_a_sidecar_table() {
        let sidecar = json!({"initContainers": [{"name": "restartable-init-1", "restartPolicy": "Always",
            "resources": {"requests": {"cpu": "4"}}}]});
        let statuses = |conditions: serde_json::Value| {
            json!({"conditions": conditions, "initContainerStatuses": [
                {"name": "restartable-init-1", "resources": {"requests": {"cpu": "2"}}}]})
        };
        for (name, pod, want) in [
            (
                "infeasible",
                running(sidecar.clone(), statuses(infeasible())),
                2000,
            ),
            (
                "no resize status",
                running(sidecar.clone(), statuses(json!([]))),
                4000,
            ),
        ] {
            assert_eq!(held(&pod, V1_36), want, "1.36: {name}");
            assert_eq!(held(&pod, V1_37), want, "1.37: {name}");
        }
    }

    /// 1.33-1.36 read the status of restartable init containers only; from
    /// 1.37 every container's status counts, a plain init container's too.
    #[test]
    fn a_plain_init_container_status_counts_from_1_37() {
        let p = running(
            json!({
                "containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}],
                "initContainers": [
                    {"name": "setup", "resources": {"requests": {"cpu": "500m"}}},
                    {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}}
                ]
            }),
            json!({"initContainerStatuses": [
                {"name": "setup", "resources": {"requests": {"cpu": "4"}}},
                {"name": "proxy", "resources": {"requests": {"cpu": "2"}}, "allocatedResources": {"cpu": "2"}}
            ]}),
        );
        // 1.36: app 1 + proxy 2 (its status); setup keeps its spec 0.5.
        assert_eq!(held(&p, V1_36), 3000);
        // 1.37: actuated setup 4 alone outweighs app 1 + proxy 2.
        assert_eq!(held(&p, V1_37), 4000);
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
