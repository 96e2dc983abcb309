//! One writer among kube-arbiter's replicas: a coordination.k8s.io/v1
//! Lease, taken and renewed as client-go's leader election does
//! (`tryAcquireOrRenew`, client-go tools/leaderelection/leaderelection.go). A
//! candidate reads the Lease; it takes it when nobody holds it or when the
//! record has not changed for `leaseDurationSeconds` by the candidate's own
//! clock (the time it *observed* the record change, not the holder's
//! renewTime, so clocks need not agree); the holder renews it every step.
//! Every write carries the resourceVersion it read, so two candidates
//! racing for an expired Lease get one 200 and one 409 Conflict. A holder
//! that could not renew for `renew_deadline` stops writing before anyone
//! else may take the Lease.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// This replica holds the Lease (taken or renewed just now).
    Leading,
    /// Another replica holds it, or the write lost a race (a 409).
    Following { conflict: bool },
}

pub struct Elector {
    api: Api<Lease>,
    name: String,
    identity: String,
    duration: Duration,
    renew_deadline: Duration,
    /// The record last read and when it was first seen.
    observed: Option<(String, Instant)>,
    /// When this replica last took or renewed the Lease.
    renewed: Option<Instant>,
}

impl Elector {
    pub fn new(api: Api<Lease>, name: &str, identity: &str, duration: Duration) -> Self {
        Self {
            api,
            name: name.to_string(),
            identity: identity.to_string(),
            duration,
            // client-go's defaults are 15 s and 10 s.
            renew_deadline: duration.mul_f64(2.0 / 3.0),
            observed: None,
            renewed: None,
        }
    }

    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Whether this replica may write now: it renewed recently enough that
    /// no other replica can have taken the Lease meanwhile.
    pub fn may_write(&self) -> bool {
        self.renewed
            .is_some_and(|at| at.elapsed() < self.renew_deadline)
    }

    /// Read the Lease and take or renew it when this replica may.
    pub async fn step(&mut self) -> Result<Step, kube::Error> {
        let now = jiff::Timestamp::now();
        let Some(lease) = self.api.get_opt(&self.name).await? else {
            let fresh = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(self.spec(now, None, 0)),
            };
            return match self.api.create(&PostParams::default(), &fresh).await {
                Ok(_) => Ok(self.took()),
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(Step::Following { conflict: true }),
                Err(e) => Err(e),
            };
        };
        let version = lease.metadata.resource_version.clone().unwrap_or_default();
        let spec = lease.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().unwrap_or_default();
        let changed = self.observed.as_ref().is_none_or(|(v, _)| *v != version);
        if changed {
            self.observed = Some((version, Instant::now()));
        }
        let mine = holder == self.identity;
        let expired = self
            .observed
            .as_ref()
            .is_some_and(|(_, seen)| seen.elapsed() >= self.lease_duration(&spec));
        if !mine && !holder.is_empty() && !expired {
            self.renewed = None;
            return Ok(Step::Following { conflict: false });
        }
        let transitions = spec.lease_transitions.unwrap_or(0) + i32::from(!mine);
        let acquired = if mine {
            spec.acquire_time.clone()
        } else {
            None
        };
        let mut updated = lease;
        updated.spec = Some(self.spec(now, acquired, transitions));
        match self
            .api
            .replace(&self.name, &PostParams::default(), &updated)
            .await
        {
            Ok(_) => Ok(self.took()),
            Err(kube::Error::Api(s)) if s.code == 409 => {
                self.renewed = None;
                Ok(Step::Following { conflict: true })
            }
            Err(e) => Err(e),
        }
    }

    fn took(&mut self) -> Step {
        self.renewed = Some(Instant::now());
        Step::Leading
    }

    /// The holder's own duration when it wrote one, else ours.
    fn lease_duration(&self, spec: &LeaseSpec) -> Duration {
        spec.lease_duration_seconds
            .and_then(|s| u64::try_from(s).ok())
            .map_or(self.duration, Duration::from_secs)
    }

    fn spec(
        &self,
        now: jiff::Timestamp,
        acquired: Option<MicroTime>,
        transitions: i32,
    ) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(
                i32::try_from(self.duration.as_secs()).unwrap_or(i32::MAX),
            ),
            acquire_time: Some(acquired.unwrap_or(MicroTime(now))),
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }
    }
}

/// This replica's name in the Lease: the pod name (`HOSTNAME` in a pod)
/// and a random suffix, so a restarted pod is a new holder.
pub fn identity() -> String {
    use std::hash::BuildHasher;
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "kube-arbiter".into());
    let suffix = std::collections::hash_map::RandomState::new().hash_one(std::process::id());
    format!("{host}_{:08x}", suffix as u32)
}
