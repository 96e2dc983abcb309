//! Keeping the Lease, apart from the writing: its own loop steps the
//! elector every interval and publishes the term, so a long run of paced
//! patches cannot delay a renewal, and the writer only reads whether the
//! term still covers "now". It also owns what the Lease shows outside:
//! the leader gauge, the lease conflicts, the log lines.

use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::lease::{Elector, LeaseApi, Step, StepError, Term};
use super::metrics::{DeletionCostMetrics, WhatLabel};
use super::refusals::Refusals;
use crate::log_every::LogEvery;

/// Step `elector` every `interval` for ever, publishing its term.
pub async fn keep<A: LeaseApi, C: Fn() -> Instant>(
    mut elector: Elector<A, C>,
    interval: Duration,
    lease_name: &str,
    metrics: &DeletionCostMetrics,
    publish: watch::Sender<Option<Term>>,
) {
    let mut shown = Shown {
        leading: false,
        refusals: Refusals::default(),
        unanswered: LogEvery::new(Duration::from_secs(60)),
    };
    loop {
        let started = elector.now();
        // Before a step that may take long: a term that ended while the
        // loop slept shows as ended now.
        shown.term(&elector, started, metrics, &publish);
        match elector.step().await {
            Ok(step) => {
                shown.refusals.answered();
                if let Step::Following { conflict: true } = step {
                    metrics
                        .conflicts
                        .get_or_create(&WhatLabel { what: "lease" })
                        .inc();
                }
            }
            Err(e) => shown.failure(&e, lease_name),
        }
        let now = elector.now();
        let term = shown.term(&elector, now, metrics, &publish);
        // Step again after the interval, or when the term ends if that is
        // sooner: the gauge drops at the deadline, not a step later.
        let next = term.map_or(started + interval, |t| (started + interval).min(t.until));
        tokio::time::sleep(next.saturating_duration_since(now)).await;
    }
}

/// What the loop has said about the Lease so far.
struct Shown {
    leading: bool,
    refusals: Refusals,
    unanswered: LogEvery,
}

impl Shown {
    /// Publish the term at `now`, set the gauge, and log when this
    /// replica starts or stops writing.
    fn term<A: LeaseApi, C: Fn() -> Instant>(
        &mut self,
        elector: &Elector<A, C>,
        now: Instant,
        metrics: &DeletionCostMetrics,
        publish: &watch::Sender<Option<Term>>,
    ) -> Option<Term> {
        let term = elector.term(now);
        let leading = term.is_some();
        if leading != self.leading {
            tracing::info!(
                identity = elector.identity(),
                leading,
                "scale-in Lease {}",
                if leading {
                    "taken: this replica writes deletion costs"
                } else {
                    "lost, not renewed in time, or held by another replica"
                }
            );
            self.leading = leading;
        }
        metrics.leader.set(i64::from(leading));
        publish.send_replace(term);
        term
    }

    /// An outage stays the live source's to report (at debug here); a
    /// refusal that lasts, and an API server that does not answer (it can
    /// end this replica's term while looking up), are a WARN once a minute.
    fn failure(&self, error: &StepError, lease_name: &str) {
        match error {
            StepError::Api(e) if super::refused(e) => {
                if let Some(held_back) = self.refusals.refused(Instant::now()) {
                    let error = crate::cluster::live::describe(e);
                    tracing::warn!(%error, held_back, lease = %lease_name,
                        "cannot read or renew the scale-in Lease");
                }
            }
            StepError::Api(e) => {
                let error = crate::cluster::live::describe(e);
                tracing::debug!(%error, "scale-in Lease: API server unreachable");
            }
            StepError::TimedOut(after) => {
                if let Some(held_back) = self.unanswered.admit(Instant::now()) {
                    tracing::warn!(lease = %lease_name, ?after, held_back,
                        "the API server did not answer the scale-in Lease request in time");
                }
            }
        }
    }
}
