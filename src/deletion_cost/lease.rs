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
//!
//! Each step is bounded, as client-go bounds each renewal by its
//! RenewDeadline (`renew` polls `tryAcquireOrRenew` under a context that
//! times out after it): the holder's step must end by the time its right
//! to write ends, a candidate's within one renew deadline. The API client
//! sets no read timeout, so without this bound one unanswered request would
//! keep a holder "leading" forever while no other replica could take over.
//!
//! Time comes from the clock the elector is given, so tests can move it.

use std::future::Future;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};

/// The three Lease calls the elector makes.
pub trait LeaseApi {
    fn get(&self, name: &str) -> impl Future<Output = Result<Option<Lease>, kube::Error>> + Send;
    fn create(&self, lease: &Lease) -> impl Future<Output = Result<Lease, kube::Error>> + Send;
    fn replace(
        &self,
        name: &str,
        lease: &Lease,
    ) -> impl Future<Output = Result<Lease, kube::Error>> + Send;
}

impl LeaseApi for Api<Lease> {
    async fn get(&self, name: &str) -> Result<Option<Lease>, kube::Error> {
        self.get_opt(name).await
    }

    async fn create(&self, lease: &Lease) -> Result<Lease, kube::Error> {
        Api::create(self, &PostParams::default(), lease).await
    }

    async fn replace(&self, name: &str, lease: &Lease) -> Result<Lease, kube::Error> {
        Api::replace(self, name, &PostParams::default(), lease).await
    }
}

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// This replica holds the Lease (taken or renewed just now).
    Leading,
    /// Another replica holds it, or the write lost a race (a 409).
    Following { conflict: bool },
}

/// Why a step did not end in an answer.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error("the API server did not answer within {0:?}")]
    TimedOut(Duration),
}

/// The time this replica holds the right to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Term {
    /// When this replica took the Lease (renewals keep it).
    pub since: Instant,
    /// Renewed time plus the renew deadline: past it, another replica may
    /// be about to take the Lease.
    pub until: Instant,
}

impl Term {
    pub fn covers(&self, now: Instant) -> bool {
        now < self.until
    }
}

pub struct Elector<A, C> {
    api: A,
    clock: C,
    name: String,
    identity: String,
    duration: Duration,
    renew_deadline: Duration,
    /// The record last read and when it was first seen.
    observed: Option<(String, Instant)>,
    /// This replica's term, from its last successful take or renewal.
    term: Option<Term>,
}

impl<A: LeaseApi, C: Fn() -> Instant> Elector<A, C> {
    pub fn new(api: A, clock: C, name: &str, identity: &str, duration: Duration) -> Self {
        Self {
            api,
            clock,
            name: name.to_string(),
            identity: identity.to_string(),
            duration,
            // client-go's defaults are 15 s and 10 s.
            renew_deadline: duration.mul_f64(2.0 / 3.0),
            observed: None,
            term: None,
        }
    }

    pub fn identity(&self) -> &str {
        &self.identity
    }

    pub fn now(&self) -> Instant {
        (self.clock)()
    }

    /// This replica's term, if it still runs at `now`.
    pub fn term(&self, now: Instant) -> Option<Term> {
        self.term.filter(|t| t.covers(now))
    }

    /// How long a step may take from `now`: a holder's until its term
    /// ends (an answer after that is too late to have kept it writing), a
    /// candidate's one renew deadline.
    pub fn budget(&self, now: Instant) -> Duration {
        self.term(now)
            .map_or(self.renew_deadline, |t| t.until.duration_since(now))
    }

    /// Read the Lease and take or renew it when this replica may, within
    /// [`Self::budget`]. A step that times out or fails leaves the term as
    /// it was: it ends on its own at its deadline.
    pub async fn step(&mut self) -> Result<Step, StepError> {
        let budget = self.budget(self.now());
        match tokio::time::timeout(budget, self.try_acquire_or_renew()).await {
            Ok(step) => Ok(step?),
            Err(_) => Err(StepError::TimedOut(budget)),
        }
    }

    async fn try_acquire_or_renew(&mut self) -> Result<Step, kube::Error> {
        // Renewed as of the request: the write lands after it, so others
        // see it no earlier, and this replica's term cannot outlast theirs.
        let started = self.now();
        let wall = jiff::Timestamp::now();
        let Some(lease) = self.api.get(&self.name).await? else {
            let fresh = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(self.spec(wall, None, 0)),
            };
            return match self.api.create(&fresh).await {
                Ok(_) => Ok(self.took(started)),
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(Step::Following { conflict: true }),
                Err(e) => Err(e),
            };
        };
        // Observed when the answer came: the record may have changed just
        // before, so expiry counts from then, never from earlier.
        let seen = self.now();
        let version = lease.metadata.resource_version.clone().unwrap_or_default();
        let spec = lease.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().unwrap_or_default();
        if self.observed.as_ref().is_none_or(|(v, _)| *v != version) {
            self.observed = Some((version, seen));
        }
        let mine = holder == self.identity;
        let expired = self
            .observed
            .as_ref()
            .is_some_and(|(_, at)| seen.duration_since(*at) >= self.lease_duration(&spec));
        if !mine && !holder.is_empty() && !expired {
            self.term = None;
            return Ok(Step::Following { conflict: false });
        }
        let transitions = spec.lease_transitions.unwrap_or(0) + i32::from(!mine);
        let acquired = if mine {
            spec.acquire_time.clone()
        } else {
            None
        };
        let mut updated = lease;
        updated.spec = Some(self.spec(wall, acquired, transitions));
        match self.api.replace(&self.name, &updated).await {
            Ok(_) => Ok(self.took(started)),
            Err(kube::Error::Api(s)) if s.code == 409 => {
                self.term = None;
                Ok(Step::Following { conflict: true })
            }
            Err(e) => Err(e),
        }
    }

    fn took(&mut self, at: Instant) -> Step {
        let since = self.term(at).map_or(at, |t| t.since);
        self.term = Some(Term {
            since,
            until: at + self.renew_deadline,
        });
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
/// and a random UUID, so a restarted pod is a new holder (kube-scheduler's
/// and kube-controller-manager's `hostname_uuid` form).
pub fn identity() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "kube-arbiter".into());
    format!("{host}_{}", uuid::Uuid::new_v4())
}

#[cfg(test)]
#[path = "lease_tests.rs"]
mod tests;
