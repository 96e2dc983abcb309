//! Which upstream release kube-arbiter follows where kube-scheduler's
//! behaviour changed between minors, and the alpha feature gates it
//! mirrors (`scheduling.kubernetesVersion`, `scheduling.featureGates`).
//!
//! ```yaml
//! scheduling:
//!   kubernetesVersion: "1.37"     # 1.33..=1.37; the default is the newest
//!   featureGates:
//!     TaintTolerationComparisonOperators: false   # alpha since 1.35
//!     DRAExtendedResource: true   # alpha 1.34, on from 1.36, locked on in 1.37
//! ```
//!
//! A gate left out takes its default in the followed minor, as
//! kube-scheduler's does (`pkg/features/kube_features.go`).
//!
//! The rules take the choice as an argument, so each one's tests pin every
//! version: the filters get the [`Upstream`] of the settings, and a view
//! is built with the [`RequestsRule`] of [`Upstream::requests_rule`]. The
//! one exception is the per-toleration check, which no setting reaches:
//! like kube-scheduler's own feature gates (`utilfeature.DefaultFeatureGate`),
//! its gate is process-wide, recorded once at start by [`Upstream::follow`]
//! and read with [`Upstream::comparison_operators_followed`].

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Deserialize;

use crate::model::requests::RequestsRule;

/// The oldest and newest Kubernetes minors (1.x) whose behaviour
/// kube-arbiter can follow.
pub const OLDEST_MINOR: u8 = 33;
pub const NEWEST_MINOR: u8 = 37;

/// A feature gate kube-arbiter mirrors, and its life upstream.
struct Gate {
    name: &'static str,
    /// The minor it appeared in (alpha).
    since: u8,
    /// The minor from which it is on by default.
    on_from: Option<u8>,
    /// The minor from which it is locked on (GA).
    locked_from: Option<u8>,
}

const GATES: &[Gate] = &[
    Gate {
        name: TAINT_TOLERATION_COMPARISON_OPERATORS,
        since: 35,
        on_from: None,
        locked_from: None,
    },
    Gate {
        name: DRA_EXTENDED_RESOURCE,
        since: 34,
        on_from: Some(36),
        locked_from: Some(37),
    },
];
const TAINT_TOLERATION_COMPARISON_OPERATORS: &str = "TaintTolerationComparisonOperators";
/// An extended resource a DeviceClass maps is left to the DRA plugin on
/// nodes that do not list it (`shouldDelegateResourceToDRA`).
pub const DRA_EXTENDED_RESOURCE: &str = "DRAExtendedResource";

/// Whether gate `name` is on in `minor` with `gates` set: as set, else its
/// default there.
pub fn gate_on(minor: Minor, gates: &FeatureGates, name: &str) -> bool {
    gates.get(name).copied().unwrap_or_else(|| {
        GATES
            .iter()
            .find(|g| g.name == name)
            .and_then(|g| g.on_from)
            .is_some_and(|from| minor.0 >= from)
    })
}

/// A Kubernetes minor version, 1.`0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Minor(pub u8);

impl Default for Minor {
    fn default() -> Self {
        Self(NEWEST_MINOR)
    }
}

impl std::fmt::Display for Minor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "1.{}", self.0)
    }
}

impl Minor {
    /// `"1.37"` or `"v1.37"`, within [`OLDEST_MINOR`]..=[`NEWEST_MINOR`].
    fn parse(text: &str) -> Result<Self, String> {
        let supported = format!("1.{OLDEST_MINOR} to 1.{NEWEST_MINOR}");
        let bad = || {
            format!(
                "{text:?} is not a Kubernetes minor version such as \"1.{NEWEST_MINOR}\" (supported: {supported})"
            )
        };
        let digits = text
            .strip_prefix('v')
            .unwrap_or(text)
            .strip_prefix("1.")
            .ok_or_else(bad)?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let minor: u8 = digits.parse().map_err(|_| bad())?;
        if !(OLDEST_MINOR..=NEWEST_MINOR).contains(&minor) {
            return Err(format!(
                "{text:?} is not supported: kube-arbiter follows {supported}"
            ));
        }
        Ok(Self(minor))
    }
}

impl<'de> Deserialize<'de> for Minor {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Minor;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "a Kubernetes minor version such as \"1.{NEWEST_MINOR}\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Minor, E> {
                Minor::parse(v).map_err(E::custom)
            }
            /// Unquoted `1.37` in YAML is a number; `1.30` would read as
            /// 1.3, which no supported version is, so it is refused.
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Minor, E> {
                Minor::parse(&v.to_string()).map_err(E::custom)
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// The upstream behaviour to follow: a minor and the mirrored gates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Upstream {
    pub minor: Minor,
    /// TaintTolerationComparisonOperators: tolerations with operator `Gt`
    /// or `Lt` compare integer values. Off, as upstream's alpha default,
    /// such a toleration tolerates nothing.
    pub comparison_operators: bool,
}

static COMPARISON_OPERATORS: AtomicBool = AtomicBool::new(false);

impl Upstream {
    /// Follow `self`'s gates in the per-toleration check from now on,
    /// process-wide (at start).
    pub fn follow(self) {
        COMPARISON_OPERATORS.store(self.comparison_operators, Ordering::Relaxed);
    }

    /// The comparison-operators gate the process follows: off unless
    /// [`Self::follow`] said otherwise.
    pub fn comparison_operators_followed() -> bool {
        COMPARISON_OPERATORS.load(Ordering::Relaxed)
    }

    /// How the followed release counts the requests of a pod on a node:
    /// 1.37 introduced the maximum of the sums (upstream
    /// component-helpers `resource.PodRequests` with
    /// `UseStatusResources`; before it `determineContainerReqs` per
    /// container).
    pub fn requests_rule(&self) -> RequestsRule {
        if self.at_least(37) {
            RequestsRule::MaxOfSums
        } else {
            RequestsRule::PerContainerMax
        }
    }

    /// Whether the followed release is `1.minor` or newer.
    pub fn at_least(&self, minor: u8) -> bool {
        self.minor.0 >= minor
    }
}

/// `scheduling.featureGates`: gate name to on/off, upstream's spelling.
pub type FeatureGates = BTreeMap<String, bool>;

/// The [`Upstream`] that `kubernetesVersion` and `featureGates` select
/// (checked by [`validate_gates`] first).
pub fn selected(minor: Minor, gates: &FeatureGates) -> Upstream {
    Upstream {
        minor,
        comparison_operators: gate_on(minor, gates, TAINT_TOLERATION_COMPARISON_OPERATORS),
    }
}

/// An unknown gate, one turned on that `minor` does not have yet, or one
/// turned off that `minor` has locked on, is an error naming it.
pub fn validate_gates(minor: Minor, gates: &FeatureGates) -> Result<(), String> {
    for (name, &on) in gates {
        let Some(gate) = GATES.iter().find(|g| g.name == name) else {
            let known: Vec<&str> = GATES.iter().map(|g| g.name).collect();
            return Err(format!(
                "scheduling.featureGates.{name}: unknown feature gate (kube-arbiter mirrors {})",
                known.join(", ")
            ));
        };
        let since = gate.since;
        if let Some(locked) = gate.locked_from.filter(|l| !on && minor.0 >= *l) {
            return Err(format!(
                "scheduling.featureGates.{name}: locked on since 1.{locked} (GA); Kubernetes {minor} cannot turn it off"
            ));
        }
        if on && minor.0 < since {
            return Err(format!(
                "scheduling.featureGates.{name}: Kubernetes {minor} has no such gate (it appeared in 1.{since}); set scheduling.kubernetesVersion to 1.{since} or later"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    use super::*;

    fn upstream(yaml: &str) -> Result<Upstream, String> {
        Config::parse(yaml).map(|c| c.scheduling.upstream())
    }

    #[test]
    fn the_default_is_the_newest_minor_with_alpha_gates_off() {
        assert_eq!(
            upstream(""),
            Ok(Upstream {
                minor: Minor(37),
                comparison_operators: false
            })
        );
    }

    #[test]
    fn versions_quoted_unquoted_and_with_v_are_read() {
        for (yaml, minor) in [
            ("scheduling:\n  kubernetesVersion: \"1.34\"\n", 34),
            ("scheduling:\n  kubernetesVersion: 1.36\n", 36),
            ("scheduling:\n  kubernetesVersion: v1.33\n", 33),
            ("scheduling:\n  kubernetesVersion: '1.37'\n", 37),
        ] {
            assert_eq!(upstream(yaml).map(|u| u.minor), Ok(Minor(minor)), "{yaml}");
        }
    }

    #[test]
    fn bad_versions_are_errors_naming_the_key_and_the_range() {
        for (yaml, needle) in [
            (
                "scheduling:\n  kubernetesVersion: \"1.32\"\n",
                "1.33 to 1.37",
            ),
            (
                "scheduling:\n  kubernetesVersion: \"1.38\"\n",
                "1.33 to 1.37",
            ),
            ("scheduling:\n  kubernetesVersion: 1.30\n", "\"1.3\""),
            ("scheduling:\n  kubernetesVersion: \"1.37.2\"\n", "1.37.2"),
            ("scheduling:\n  kubernetesVersion: latest\n", "latest"),
            (
                "scheduling:\n  kubernetesVersion: 37\n",
                "kubernetesVersion",
            ),
        ] {
            let err = upstream(yaml).unwrap_err();
            assert!(err.contains(needle), "{yaml}: {err}");
        }
    }

    #[test]
    fn each_minor_counts_requests_by_its_releases_rule() {
        for (minor, rule) in [
            (33, RequestsRule::PerContainerMax),
            (34, RequestsRule::PerContainerMax),
            (35, RequestsRule::PerContainerMax),
            (36, RequestsRule::PerContainerMax),
            (37, RequestsRule::MaxOfSums),
        ] {
            let yaml = format!("scheduling:\n  kubernetesVersion: \"1.{minor}\"\n");
            assert_eq!(upstream(&yaml).unwrap().requests_rule(), rule, "1.{minor}");
        }
        assert_eq!(
            upstream("").unwrap().requests_rule(),
            RequestsRule::default()
        );
    }

    #[test]
    fn the_comparison_operators_gate_is_named_as_upstream_names_it() {
        let on = "scheduling:\n  featureGates:\n    TaintTolerationComparisonOperators: true\n";
        assert!(upstream(on).unwrap().comparison_operators);
        let off = "scheduling:\n  featureGates: {TaintTolerationComparisonOperators: false}\n";
        assert!(!upstream(off).unwrap().comparison_operators);
    }

    /// `DRAExtendedResource` in kube_features.go: alpha in 1.34 and 1.35,
    /// beta (on) in 1.36, GA and locked on in 1.37.
    #[test]
    fn the_dra_extended_resource_gate_follows_the_minor() {
        let on = |yaml: &str| {
            Config::parse(yaml).map(|c| {
                let s = &c.scheduling;
                gate_on(
                    s.kubernetes_version,
                    &s.feature_gates,
                    DRA_EXTENDED_RESOURCE,
                )
            })
        };
        assert_eq!(on(""), Ok(true));
        assert_eq!(on("scheduling:\n  kubernetesVersion: \"1.36\"\n"), Ok(true));
        assert_eq!(
            on("scheduling:\n  kubernetesVersion: \"1.35\"\n"),
            Ok(false)
        );
        assert_eq!(
            on("scheduling:\n  kubernetesVersion: \"1.34\"\n"),
            Ok(false)
        );
        let alpha_on = "scheduling:\n  kubernetesVersion: \"1.34\"\n  featureGates: {DRAExtendedResource: true}\n";
        assert_eq!(on(alpha_on), Ok(true));
        let beta_off = "scheduling:\n  kubernetesVersion: \"1.36\"\n  featureGates: {DRAExtendedResource: false}\n";
        assert_eq!(on(beta_off), Ok(false));
        let err = on("scheduling:\n  featureGates: {DRAExtendedResource: false}\n").unwrap_err();
        assert!(err.contains("locked on since 1.37"), "{err}");
        assert!(on("scheduling:\n  kubernetesVersion: \"1.33\"\n  featureGates: {DRAExtendedResource: true}\n").is_err());
    }

    #[test]
    fn unknown_gates_and_gates_the_version_lacks_are_errors() {
        let err =
            upstream("scheduling:\n  featureGates: {SchedulerQueueingHints: true}\n").unwrap_err();
        assert!(
            err.contains("featureGates.SchedulerQueueingHints: unknown feature gate")
                && err.contains("TaintTolerationComparisonOperators"),
            "{err}"
        );
        let err = upstream(
            "scheduling:\n  kubernetesVersion: \"1.34\"\n  featureGates: {TaintTolerationComparisonOperators: true}\n",
        )
        .unwrap_err();
        assert!(err.contains("appeared in 1.35"), "{err}");
        // Off is what 1.34 does anyway.
        assert!(upstream(
            "scheduling:\n  kubernetesVersion: \"1.34\"\n  featureGates: {TaintTolerationComparisonOperators: false}\n",
        )
        .is_ok());
    }
}
