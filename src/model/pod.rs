//! The Pod fields the policies read: placement constraints, resources,
//! priority, and the status bits used by preemption and scale-in.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::Deserialize;

use super::meta::ObjectMeta;
use super::node::Toleration;
use super::null_fields::{compact_list, null_as_default};
use super::quantity::{ResourceList, resource_list};
use super::selector::LabelSelector;
use super::shared::{Shared, shared_list};

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pod {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: PodSpec,
    #[serde(default)]
    pub status: PodStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSpec {
    #[serde(default)]
    pub node_name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub node_selector: BTreeMap<String, String>,
    #[serde(default)]
    pub affinity: Option<Shared<Affinity>>,
    #[serde(default, deserialize_with = "shared_list")]
    pub tolerations: Shared<Vec<Toleration>>,
    #[serde(default, deserialize_with = "shared_list")]
    pub topology_spread_constraints: Shared<Vec<TopologySpreadConstraint>>,
    #[serde(default, deserialize_with = "shared_list")]
    pub containers: Shared<Vec<Container>>,
    #[serde(default, deserialize_with = "shared_list")]
    pub init_containers: Shared<Vec<Container>>,
    #[serde(default, deserialize_with = "resource_list")]
    pub overhead: ResourceList,
    /// Pod-level resources (beta since 1.34); when set they replace the
    /// sum of the containers' requests.
    #[serde(default)]
    pub resources: Option<ResourceRequirements>,
    #[serde(default)]
    pub priority: Option<i32>,
    #[serde(default)]
    pub priority_class_name: String,
    #[serde(default)]
    pub preemption_policy: Option<String>,
    #[serde(default)]
    pub scheduler_name: String,
    /// The PodGroup the pod belongs to (1.36+): kube-scheduler places its
    /// members in one cycle and binds none until the whole group fits.
    #[serde(default)]
    pub scheduling_group: Option<SchedulingGroup>,
}

/// `spec.schedulingGroup`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SchedulingGroup {
    #[serde(default)]
    pub pod_group_name: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub resources: ResourceRequirements,
    /// `Always` on an init container makes it a sidecar that keeps running.
    #[serde(default)]
    pub restart_policy: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRequirements {
    #[serde(default, deserialize_with = "resource_list")]
    pub requests: ResourceList,
    #[serde(default, deserialize_with = "resource_list")]
    pub limits: ResourceList,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Affinity {
    #[serde(default)]
    pub node_affinity: Option<NodeAffinity>,
    #[serde(default)]
    pub pod_affinity: Option<PodAffinity>,
    #[serde(default)]
    pub pod_anti_affinity: Option<PodAffinity>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeAffinity {
    #[serde(default)]
    pub required_during_scheduling_ignored_during_execution: Option<NodeSelector>,
    #[serde(default, deserialize_with = "compact_list")]
    pub preferred_during_scheduling_ignored_during_execution: Vec<PreferredSchedulingTerm>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSelector {
    #[serde(default, deserialize_with = "compact_list")]
    pub node_selector_terms: Vec<NodeSelectorTerm>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSelectorTerm {
    #[serde(default, deserialize_with = "compact_list")]
    pub match_expressions: Vec<NodeSelectorRequirement>,
    #[serde(default, deserialize_with = "compact_list")]
    pub match_fields: Vec<NodeSelectorRequirement>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSelectorRequirement {
    pub key: String,
    pub operator: NodeSelectorOperator,
    #[serde(default, deserialize_with = "compact_list")]
    pub values: Vec<String>,
}

/// Unknown operators decode as `Invalid`: upstream treats such a term as a
/// parse error that never matches while other ORed terms still count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
pub enum NodeSelectorOperator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
    #[serde(other)]
    Invalid,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreferredSchedulingTerm {
    #[serde(default)]
    pub weight: i32,
    #[serde(default)]
    pub preference: NodeSelectorTerm,
}

/// Both `podAffinity` and `podAntiAffinity` have this shape.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodAffinity {
    #[serde(default, deserialize_with = "compact_list")]
    pub required_during_scheduling_ignored_during_execution: Vec<PodAffinityTerm>,
    #[serde(default, deserialize_with = "compact_list")]
    pub preferred_during_scheduling_ignored_during_execution: Vec<WeightedPodAffinityTerm>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodAffinityTerm {
    #[serde(default)]
    pub label_selector: Option<LabelSelector>,
    #[serde(default, deserialize_with = "compact_list")]
    pub namespaces: Vec<String>,
    #[serde(default)]
    pub topology_key: String,
    #[serde(default)]
    pub namespace_selector: Option<LabelSelector>,
    #[serde(default, deserialize_with = "compact_list")]
    pub match_label_keys: Vec<String>,
    #[serde(default, deserialize_with = "compact_list")]
    pub mismatch_label_keys: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WeightedPodAffinityTerm {
    #[serde(default)]
    pub weight: i32,
    #[serde(default)]
    pub pod_affinity_term: PodAffinityTerm,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologySpreadConstraint {
    #[serde(default)]
    pub max_skew: i32,
    #[serde(default)]
    pub topology_key: String,
    #[serde(default)]
    pub when_unsatisfiable: String,
    #[serde(default)]
    pub label_selector: Option<LabelSelector>,
    #[serde(default)]
    pub min_domains: Option<i32>,
    #[serde(default)]
    pub node_affinity_policy: Option<String>,
    #[serde(default)]
    pub node_taints_policy: Option<String>,
    #[serde(default, deserialize_with = "compact_list")]
    pub match_label_keys: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodStatus {
    #[serde(default)]
    pub phase: String,
    #[serde(default, deserialize_with = "compact_list")]
    pub conditions: Vec<PodCondition>,
    #[serde(default)]
    pub start_time: Option<Timestamp>,
    #[serde(default)]
    pub nominated_node_name: String,
    #[serde(default, deserialize_with = "compact_list")]
    pub container_statuses: Vec<ContainerStatus>,
    #[serde(default, deserialize_with = "compact_list")]
    pub init_container_statuses: Vec<ContainerStatus>,
    /// What the pod as a whole runs with now (pod-level in-place resize,
    /// on by default since 1.36): the kubelet's totals over its containers.
    #[serde(default)]
    pub resources: Option<ResourceRequirements>,
    /// What the kubelet has admitted for the pod as a whole (pod-level
    /// in-place resize).
    #[serde(default, deserialize_with = "resource_list")]
    pub allocated_resources: ResourceList,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodCondition {
    #[serde(rename = "type", default)]
    pub type_: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub reason: String,
    /// A hash of the condition's message: enough to tell one scheduling
    /// failure from the next (the in-flight ledger) without keeping the
    /// text of every pod's conditions.
    #[serde(default, rename = "message", deserialize_with = "fingerprint")]
    pub message_fingerprint: u64,
    #[serde(default)]
    pub last_transition_time: Option<Timestamp>,
}

/// A string's hash, stable within the process; 0 for absent or empty.
fn fingerprint<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    use std::hash::{Hash, Hasher};
    let text = Option::<std::borrow::Cow<'de, str>>::deserialize(d)?.unwrap_or_default();
    if text.is_empty() {
        return Ok(0);
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    Ok(h.finish())
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerStatus {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub restart_count: i32,
    /// What the container runs with now (in-place resize, on by default
    /// since 1.33); `None` when the kubelet has not reported it.
    #[serde(default)]
    pub resources: Option<ResourceRequirements>,
    /// What the kubelet has admitted for the container (in-place resize).
    #[serde(default, deserialize_with = "resource_list")]
    pub allocated_resources: ResourceList,
}

impl Pod {
    /// Succeeded and Failed pods hold no resources and are left out of the
    /// view entirely, as kube-scheduler's informer does.
    pub fn is_terminal(&self) -> bool {
        matches!(self.status.phase.as_str(), "Succeeded" | "Failed")
    }

    pub fn is_terminating(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }

    /// The name of the PodGroup the pod belongs to, if any.
    pub fn pod_group(&self) -> Option<&str> {
        self.spec
            .scheduling_group
            .as_ref()?
            .pod_group_name
            .as_deref()
            .filter(|n| !n.is_empty())
    }

    /// Both pods belong to the same PodGroup (same namespace and name).
    pub fn same_pod_group(&self, other: &Pod) -> bool {
        self.pod_group()
            .is_some_and(|g| other.pod_group() == Some(g))
            && self.metadata.namespace == other.metadata.namespace
    }

    /// `spec.priority`, missing counting as 0 (the scheduler never consults
    /// PriorityClasses).
    pub fn priority(&self) -> i32 {
        self.spec.priority.unwrap_or(0)
    }

    pub fn condition(&self, type_: &str) -> Option<&PodCondition> {
        self.status.conditions.iter().find(|c| c.type_ == type_)
    }

    /// A `PodResizePending` condition with reason `Infeasible`: the node
    /// cannot give the resized requests, so the spec no longer says what
    /// the pod holds (upstream `IsPodResizeInfeasible`, which reads the
    /// first such condition).
    pub fn is_resize_infeasible(&self) -> bool {
        self.condition("PodResizePending")
            .is_some_and(|c| c.reason == "Infeasible")
    }

    pub fn is_ready(&self) -> bool {
        self.condition("Ready").is_some_and(|c| c.status == "True")
    }

    pub fn pod_affinity(&self) -> Option<&PodAffinity> {
        self.spec.affinity.as_ref()?.pod_affinity.as_ref()
    }

    pub fn pod_anti_affinity(&self) -> Option<&PodAffinity> {
        self.spec.affinity.as_ref()?.pod_anti_affinity.as_ref()
    }

    pub fn node_affinity(&self) -> Option<&NodeAffinity> {
        self.spec.affinity.as_ref()?.node_affinity.as_ref()
    }

    /// True when any pod (anti-)affinity term, required or preferred, exists.
    pub fn has_pod_affinity_terms(&self) -> bool {
        [self.pod_affinity(), self.pod_anti_affinity()]
            .into_iter()
            .flatten()
            .any(|a| {
                !a.required_during_scheduling_ignored_during_execution
                    .is_empty()
                    || !a
                        .preferred_during_scheduling_ignored_during_execution
                        .is_empty()
            })
    }

    /// True when every pod (anti-)affinity term looks only in the pod's own
    /// namespace (no `namespaces`, no `namespaceSelector`), so the terms can
    /// only ever select pods of that namespace.
    pub fn pod_affinity_terms_stay_in_namespace(&self) -> bool {
        [self.pod_affinity(), self.pod_anti_affinity()]
            .into_iter()
            .flatten()
            .flat_map(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .iter()
                    .chain(
                        a.preferred_during_scheduling_ignored_during_execution
                            .iter()
                            .map(|w| &w.pod_affinity_term),
                    )
            })
            .all(|t| t.namespaces.is_empty() && t.namespace_selector.is_none())
    }

    pub fn has_required_anti_affinity(&self) -> bool {
        self.pod_anti_affinity().is_some_and(|a| {
            !a.required_during_scheduling_ignored_during_execution
                .is_empty()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_a_kubectl_pod_and_keeps_what_policies_need() {
        let pod: Pod = serde_json::from_str(
            r#"{"apiVersion":"v1","kind":"Pod",
              "metadata":{"name":"web-1","namespace":"shop","uid":"u1","labels":{"app":"web"},
                          "managedFields":[{"manager":"kubectl"}]},
              "spec":{"nodeName":"n1","priority":100,
                      "containers":[{"name":"c","image":"nginx","resources":{"requests":{"cpu":"250m","memory":"64Mi"}}}],
                      "affinity":{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
                          {"labelSelector":{"matchLabels":{"app":"web"}},"topologyKey":"kubernetes.io/hostname"}]}},
                      "topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule"}]},
              "status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}],
                        "startTime":"2024-01-02T03:04:05Z","containerStatuses":[{"name":"c","restartCount":3}]}}"#,
        )
        .unwrap();
        assert_eq!(pod.metadata.key(), "shop/web-1");
        assert_eq!(pod.spec.containers[0].resources.requests["cpu"], 250);
        assert_eq!(pod.priority(), 100);
        assert!(pod.is_ready());
        assert!(pod.has_required_anti_affinity());
        assert_eq!(pod.spec.topology_spread_constraints[0].max_skew, 1);
        assert_eq!(pod.status.container_statuses[0].restart_count, 3);
    }

    #[test]
    fn wrong_field_type_is_a_clear_error() {
        let err = serde_json::from_str::<Pod>(r#"{"spec":{"priority":"high"}}"#).unwrap_err();
        assert!(err.to_string().contains("invalid type"), "{err}");
    }

    #[test]
    fn unknown_node_selector_operator_decodes_as_invalid() {
        let term: NodeSelectorTerm = serde_json::from_str(
            r#"{"matchExpressions":[{"key":"k","operator":"Foo","values":["1"]}]}"#,
        )
        .unwrap();
        assert_eq!(
            term.match_expressions[0].operator,
            NodeSelectorOperator::Invalid
        );
    }
}
