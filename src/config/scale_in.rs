//! `scaleIn`: the deletion costs kube-arbiter keeps on opted-in workloads
//! (docs/scale-in-controller.md).

use std::time::Duration;

use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct ScaleInSettings {
    /// Live mode: set pod-deletion-cost on opted-in workloads. `false`
    /// removes the costs kube-arbiter set and sets none.
    pub manage_deletion_cost: bool,
    /// How often the Lease is renewed and the plan compared with the pods.
    pub interval_millis: u64,
    /// The most pod patches a second, over all workloads.
    pub patches_per_second: u32,
    /// How long an unrenewed Lease keeps other replicas from writing.
    pub lease_duration_seconds: u64,
    pub lease_namespace: String,
    pub lease_name: String,
}

impl Default for ScaleInSettings {
    fn default() -> Self {
        Self {
            manage_deletion_cost: true,
            interval_millis: 2000,
            patches_per_second: 10,
            lease_duration_seconds: 15,
            lease_namespace: "kube-system".into(),
            lease_name: "kube-arbiter-scale-in".into(),
        }
    }
}

impl ScaleInSettings {
    pub fn interval(&self) -> Duration {
        Duration::from_millis(self.interval_millis)
    }

    pub fn lease_duration(&self) -> Duration {
        Duration::from_secs(self.lease_duration_seconds)
    }

    /// Patches sent in one interval: the rate over the interval, at least 1.
    pub fn patches_per_interval(&self) -> usize {
        ((f64::from(self.patches_per_second) * self.interval().as_secs_f64()) as usize).max(1)
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.interval_millis == 0 || self.patches_per_second == 0 {
            return Err(
                "scaleIn.intervalMillis and scaleIn.patchesPerSecond must be above 0".into(),
            );
        }
        // The interval renews the Lease: it must fit several times in it.
        if self.interval_millis.saturating_mul(3) > self.lease_duration_seconds.saturating_mul(1000)
        {
            return Err(format!(
                "scaleIn.leaseDurationSeconds ({}) must be at least three scaleIn.intervalMillis ({})",
                self.lease_duration_seconds, self.interval_millis
            ));
        }
        if self.lease_namespace.is_empty() || self.lease_name.is_empty() {
            return Err("scaleIn.leaseNamespace and scaleIn.leaseName must not be empty".into());
        }
        Ok(())
    }
}
