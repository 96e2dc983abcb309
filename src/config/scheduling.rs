//! `scheduling:` settings for the extender's filter and prioritize: the
//! role next to kube-scheduler's own plugins, score weights,
//! hardPodAffinityWeight and the cluster-level default spread constraints
//! (upstream's PodTopologySpreadArgs `defaultingType` +
//! `defaultConstraints`).
//!
//! ```yaml
//! scheduling:
//!   role: nextToInTreePlugins   # or enforcer (docs/burst-safety.md)
//!   weights: {nodeAffinity: 2, interPodAffinity: 2, podTopologySpread: 2}
//!   hardPodAffinityWeight: 1
//!   defaultSpreadConstraints:
//!     defaultingType: List        # or System (the default)
//!     defaultConstraints:
//!       - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}
//!   # NodeResourcesFitArgs: extended resources another component manages
//!   # (also every extender's managedResources with ignoredByScheduler)
//!   ignoredResources: [example.com/vgpu-mem]
//!   ignoredResourceGroups: [hami.io]
//!   # the upstream minor followed where behaviour changed, and the
//!   # alpha gates mirrored (src/config/upstream.rs)
//!   kubernetesVersion: "1.37"
//!   featureGates: {TaintTolerationComparisonOperators: false}
//! ```

use serde::Deserialize;

use crate::model::pod::TopologySpreadConstraint;

use super::upstream::{self, FeatureGates, Minor, Upstream};

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct SchedulingSettings {
    pub role: Role,
    pub weights: ScoreWeights,
    /// Weight of an existing pod's required affinity term matched by the
    /// incoming pod in InterPodAffinity scoring (upstream default 1, 0..=100).
    pub hard_pod_affinity_weight: HardPodAffinityWeight,
    pub default_spread_constraints: DefaultSpreadConstraints,
    /// Extended resources NodeResourcesFit does not check (upstream
    /// NodeResourcesFitArgs `ignoredResources`, to which kube-scheduler
    /// adds every extender's `managedResources[].ignoredByScheduler`).
    pub ignored_resources: Vec<String>,
    /// Extended resource prefixes (`example.com` for `example.com/*`) the
    /// fit check does not look at (`ignoredResourceGroups`).
    pub ignored_resource_groups: Vec<String>,
    /// The Kubernetes minor whose kube-scheduler kube-arbiter follows where
    /// behaviour changed (docs/versions.md); the newest by default.
    pub kubernetes_version: Minor,
    /// Alpha feature gates mirrored from kube-scheduler, by upstream name.
    pub feature_gates: FeatureGates,
}

/// Who else enforces node affinity, inter-pod (anti-)affinity and topology
/// spread, which decides what a pod kube-scheduler placed but has not
/// bound yet (in flight) does to a decision (docs/burst-safety.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Role {
    /// kube-scheduler's in-tree NodeAffinity, InterPodAffinity and
    /// PodTopologySpread filter too, counting their assumed pods
    /// (`manifests/scheduler-config.yaml`). `filter` and `prioritize` never
    /// wait for pods in flight; `filter` keeps every node that some
    /// placement of them admits, so a pod in flight can only make it more
    /// permissive and the in-tree plugins reject what is truly infeasible.
    #[default]
    NextToInTreePlugins,
    /// Those plugins are off (`manifests/scheduler-config-enforcer.yaml`):
    /// kube-arbiter alone keeps the rules, so a decision that could count
    /// a pod in flight waits for it (`live.inFlightWaitMillis`) and then
    /// answers exactly.
    Enforcer,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct HardPodAffinityWeight(pub i32);

impl Default for HardPodAffinityWeight {
    fn default() -> Self {
        Self(1)
    }
}

/// Score plugin weights of the default kube-scheduler profile. 0 leaves a
/// plugin out of the combined score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct ScoreWeights {
    pub node_affinity: i64,
    pub inter_pod_affinity: i64,
    pub pod_topology_spread: i64,
}

impl Default for ScoreWeights {
    fn default() -> Self {
        Self {
            node_affinity: 2,
            inter_pod_affinity: 2,
            pod_topology_spread: 2,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct DefaultSpreadConstraints {
    pub defaulting_type: DefaultingType,
    pub default_constraints: Vec<DefaultConstraint>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum DefaultingType {
    /// hostname maxSkew 3 and zone maxSkew 5, both ScheduleAnyway.
    #[default]
    System,
    /// `defaultConstraints` (an empty list means no defaults).
    List,
}

/// A default constraint: a TopologySpreadConstraint without a selector (the
/// selector comes from the Services and controllers selecting the pod).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DefaultConstraint {
    pub max_skew: i32,
    pub topology_key: String,
    pub when_unsatisfiable: WhenUnsatisfiable,
    #[serde(default)]
    pub min_domains: Option<i32>,
    #[serde(default)]
    pub node_affinity_policy: Option<InclusionPolicy>,
    #[serde(default)]
    pub node_taints_policy: Option<InclusionPolicy>,
    #[serde(default)]
    pub match_label_keys: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum WhenUnsatisfiable {
    DoNotSchedule,
    ScheduleAnyway,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum InclusionPolicy {
    Honor,
    Ignore,
}

impl SchedulingSettings {
    /// The checks upstream's config validation makes, naming the key.
    pub fn validate(&self) -> Result<(), String> {
        let w = &self.weights;
        for (key, value) in [
            ("nodeAffinity", w.node_affinity),
            ("interPodAffinity", w.inter_pod_affinity),
            ("podTopologySpread", w.pod_topology_spread),
        ] {
            if !(0..=100).contains(&value) {
                return Err(format!(
                    "scheduling.weights.{key}: {value} is not in 0..=100"
                ));
            }
        }
        let hard = self.hard_pod_affinity_weight.0;
        if !(0..=100).contains(&hard) {
            return Err(format!(
                "scheduling.hardPodAffinityWeight: {hard} is not in 0..=100"
            ));
        }
        self.validate_ignored_resources()?;
        upstream::validate_gates(self.kubernetes_version, &self.feature_gates)?;
        self.default_spread_constraints.validate()
    }

    /// Whether kube-scheduler's DRAExtendedResource gate is on: an
    /// extended resource a DeviceClass maps is then left to the DRA plugin
    /// on nodes that do not list it in allocatable.
    pub fn dra_extended_resource(&self) -> bool {
        upstream::gate_on(
            self.kubernetes_version,
            &self.feature_gates,
            upstream::DRA_EXTENDED_RESOURCE,
        )
    }

    /// The upstream behaviour these settings select.
    pub fn upstream(&self) -> Upstream {
        upstream::selected(self.kubernetes_version, &self.feature_gates)
    }

    /// Upstream `ValidateNodeResourcesFitArgs`: names must be label-name
    /// shaped, and a group is a prefix without `/`.
    fn validate_ignored_resources(&self) -> Result<(), String> {
        for (i, name) in self.ignored_resources.iter().enumerate() {
            if name.is_empty() || name.split('/').count() > 2 || name.split('/').any(str::is_empty)
            {
                return Err(format!(
                    "scheduling.ignoredResources[{i}]: {name:?} is not a resource name"
                ));
            }
        }
        for (i, group) in self.ignored_resource_groups.iter().enumerate() {
            if group.is_empty() || group.contains('/') {
                return Err(format!(
                    "scheduling.ignoredResourceGroups[{i}]: {group:?} must be a prefix without '/'"
                ));
            }
        }
        Ok(())
    }
}

impl DefaultSpreadConstraints {
    fn validate(&self) -> Result<(), String> {
        const KEY: &str = "scheduling.defaultSpreadConstraints";
        if self.defaulting_type == DefaultingType::System && !self.default_constraints.is_empty() {
            return Err(format!(
                "{KEY}.defaultConstraints: must be empty when defaultingType is System"
            ));
        }
        for (i, c) in self.default_constraints.iter().enumerate() {
            let at = format!("{KEY}.defaultConstraints[{i}]");
            if c.max_skew <= 0 {
                return Err(format!("{at}.maxSkew: must be greater than zero"));
            }
            if c.topology_key.is_empty() {
                return Err(format!("{at}.topologyKey: must not be empty"));
            }
            if c.min_domains.is_some_and(|m| m <= 0) {
                return Err(format!("{at}.minDomains: must be greater than zero"));
            }
            if c.min_domains.is_some() && c.when_unsatisfiable != WhenUnsatisfiable::DoNotSchedule {
                return Err(format!(
                    "{at}.minDomains: only allowed with whenUnsatisfiable DoNotSchedule"
                ));
            }
            let duplicate = self.default_constraints[..i].iter().any(|o| {
                o.topology_key == c.topology_key && o.when_unsatisfiable == c.when_unsatisfiable
            });
            if duplicate {
                return Err(format!(
                    "{at}: duplicate topologyKey {:?} with whenUnsatisfiable {:?}",
                    c.topology_key, c.when_unsatisfiable
                ));
            }
        }
        Ok(())
    }

    /// The default constraints as pod-level constraints without a selector,
    /// and whether they are the System ones (which do not require nodes to
    /// carry every topology key when scoring).
    pub fn constraints(&self) -> (Vec<TopologySpreadConstraint>, bool) {
        match self.defaulting_type {
            DefaultingType::System => (
                vec![
                    soft("kubernetes.io/hostname", 3),
                    soft("topology.kubernetes.io/zone", 5),
                ],
                true,
            ),
            DefaultingType::List => (
                self.default_constraints
                    .iter()
                    .map(DefaultConstraint::to_pod_constraint)
                    .collect(),
                false,
            ),
        }
    }
}

fn soft(key: &str, max_skew: i32) -> TopologySpreadConstraint {
    TopologySpreadConstraint {
        max_skew,
        topology_key: key.to_string(),
        when_unsatisfiable: "ScheduleAnyway".to_string(),
        ..Default::default()
    }
}

fn policy_name(p: Option<InclusionPolicy>) -> Option<String> {
    p.map(|p| format!("{p:?}"))
}

impl DefaultConstraint {
    fn to_pod_constraint(&self) -> TopologySpreadConstraint {
        TopologySpreadConstraint {
            max_skew: self.max_skew,
            topology_key: self.topology_key.clone(),
            when_unsatisfiable: format!("{:?}", self.when_unsatisfiable),
            label_selector: None,
            min_domains: self.min_domains,
            node_affinity_policy: policy_name(self.node_affinity_policy),
            node_taints_policy: policy_name(self.node_taints_policy),
            match_label_keys: self.match_label_keys.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    use super::*;

    #[test]
    fn the_role_defaults_to_next_to_the_in_tree_plugins_as_shipped() {
        let role = |yaml: &str| Config::parse(yaml).map(|c| c.scheduling.role);
        assert_eq!(role(""), Ok(Role::NextToInTreePlugins));
        assert_eq!(
            role("scheduling:\n  role: nextToInTreePlugins\n"),
            Ok(Role::NextToInTreePlugins)
        );
        assert_eq!(role("scheduling:\n  role: enforcer\n"), Ok(Role::Enforcer));
        let err = role("scheduling:\n  role: referee\n").unwrap_err();
        assert!(err.contains("referee"), "{err}");
    }

    #[test]
    fn defaults_are_the_upstream_profile() {
        let s = Config::parse("").unwrap().scheduling;
        assert_eq!(s.weights, ScoreWeights::default());
        assert_eq!(s.weights.pod_topology_spread, 2);
        assert_eq!(s.hard_pod_affinity_weight.0, 1);
        let (constraints, system) = s.default_spread_constraints.constraints();
        assert!(system);
        assert_eq!(constraints[0].topology_key, "kubernetes.io/hostname");
        assert_eq!(constraints[0].max_skew, 3);
        assert_eq!(constraints[1].max_skew, 5);
    }

    #[test]
    fn list_defaults_parse_into_pod_constraints() {
        let c = Config::parse(
            "scheduling:\n  weights:\n    nodeAffinity: 5\n  hardPodAffinityWeight: 10\n  defaultSpreadConstraints:\n    defaultingType: List\n    defaultConstraints:\n      - maxSkew: 1\n        topologyKey: zone\n        whenUnsatisfiable: DoNotSchedule\n        nodeTaintsPolicy: Honor\n",
        )
        .unwrap();
        assert_eq!(c.scheduling.weights.node_affinity, 5);
        assert_eq!(c.scheduling.weights.inter_pod_affinity, 2);
        assert_eq!(c.scheduling.hard_pod_affinity_weight.0, 10);
        let (list, system) = c.scheduling.default_spread_constraints.constraints();
        assert!(!system);
        assert_eq!(list[0].when_unsatisfiable, "DoNotSchedule");
        assert_eq!(list[0].node_taints_policy.as_deref(), Some("Honor"));
    }

    #[test]
    fn ignored_resources_mirror_node_resources_fit_args() {
        let c = Config::parse(
            "scheduling:\n  ignoredResources: [example.com/vgpu-mem]\n  ignoredResourceGroups: [hami.io]\n",
        )
        .unwrap();
        assert_eq!(c.scheduling.ignored_resources, ["example.com/vgpu-mem"]);
        assert_eq!(c.scheduling.ignored_resource_groups, ["hami.io"]);
        assert!(Config::default().scheduling.ignored_resources.is_empty());
    }

    #[test]
    fn bad_values_are_errors_naming_the_key() {
        let cases = [
            (
                "scheduling:\n  hardPodAffinityWeight: 101\n",
                "hardPodAffinityWeight",
            ),
            (
                "scheduling:\n  weights:\n    interPodAffinity: -1\n",
                "interPodAffinity",
            ),
            ("scheduling:\n  weights:\n    spread: 1\n", "spread"),
            (
                "scheduling:\n  defaultSpreadConstraints:\n    defaultConstraints:\n      - {maxSkew: 1, topologyKey: z, whenUnsatisfiable: ScheduleAnyway}\n",
                "defaultConstraints",
            ),
            (
                "scheduling:\n  defaultSpreadConstraints:\n    defaultingType: List\n    defaultConstraints:\n      - {maxSkew: 0, topologyKey: z, whenUnsatisfiable: ScheduleAnyway}\n",
                "maxSkew",
            ),
            (
                "scheduling:\n  defaultSpreadConstraints:\n    defaultingType: List\n    defaultConstraints:\n      - {maxSkew: 1, topologyKey: z, whenUnsatisfiable: Sometimes}\n",
                "Sometimes",
            ),
            (
                "scheduling:\n  defaultSpreadConstraints:\n    defaultingType: List\n    defaultConstraints:\n      - {maxSkew: 1, topologyKey: z, whenUnsatisfiable: ScheduleAnyway, labelSelector: {}}\n",
                "labelSelector",
            ),
            (
                "scheduling:\n  defaultSpreadConstraints:\n    defaultingType: List\n    defaultConstraints:\n      - {maxSkew: 1, topologyKey: z, whenUnsatisfiable: ScheduleAnyway}\n      - {maxSkew: 2, topologyKey: z, whenUnsatisfiable: ScheduleAnyway}\n",
                "duplicate",
            ),
            (
                "scheduling:\n  defaultSpreadConstraints:\n    defaultingType: Sometimes\n",
                "Sometimes",
            ),
            (
                "scheduling:\n  ignoredResourceGroups: [example.com/gpu]\n",
                "ignoredResourceGroups[0]",
            ),
            (
                "scheduling:\n  ignoredResources: [\"\"]\n",
                "ignoredResources[0]",
            ),
        ];
        for (yaml, needle) in cases {
            let err = Config::parse(yaml).unwrap_err();
            assert!(err.contains(needle), "{yaml}: {err}");
        }
    }
}
