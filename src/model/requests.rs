//! What a pod asks the scheduler to reserve, computed as kube-scheduler
//! does (`PodRequests`): the sum of the regular containers plus running
//! sidecars (restartable init containers), or the largest init container if
//! that is more (each init container also needs the sidecars started before
//! it); pod-level `spec.resources` replace the container totals for cpu and
//! memory; the pod overhead is added last.
//!
//! A model concern, not a policy: the snapshot keeps each bound pod's
//! requests next to it, and the fit and preemption policies compare them.

use super::Pod;
use super::pod::Container;
use super::quantity::{CPU, EPHEMERAL_STORAGE, MEMORY, PODS, ResourceList};

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

fn container_requests(c: &Container) -> Requests {
    Requests::from_list(&c.resources.requests)
}

fn is_sidecar(c: &Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

/// What the scheduler reserves for `pod` on a node.
pub fn pod_requests(pod: &Pod) -> Requests {
    let mut total = Requests::default();
    for c in &pod.spec.containers {
        total.add(&container_requests(c));
    }
    // Sidecars keep running next to the regular containers; a plain init
    // container runs alone next to the sidecars started before it.
    let mut sidecars = Requests::default();
    let mut largest_init = Requests::default();
    for c in &pod.spec.init_containers {
        let own = container_requests(c);
        let during = if is_sidecar(c) {
            total.add(&own);
            sidecars.add(&own);
            sidecars.clone()
        } else {
            let mut with_sidecars = own;
            with_sidecars.add(&sidecars);
            with_sidecars
        };
        largest_init.max_with(&during);
    }
    total.max_with(&largest_init);
    if let Some(pod_level) = &pod.spec.resources {
        for name in [CPU, MEMORY] {
            if let Some(&amount) = pod_level.requests.get(name) {
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
