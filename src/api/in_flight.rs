//! The in-flight ledger at the extender's edge (docs/burst-safety.md).
//! As the enforcer (`scheduling.role: enforcer`): before
//! `filter`/`prioritize` takes its snapshot, wait (bounded) for the pods
//! kube-scheduler placed but has not bound yet that the incoming pod's
//! rules could count. Next to kube-scheduler's in-tree plugins (the
//! default): never wait; `filter` gets those pods with the nodes each may
//! be on and keeps every node some placement admits. Either way, after
//! answering with a feasible node, record the incoming pod as in flight
//! (next to the in-tree plugins, with the nodes it may go to).
//!
//! Members of one PodGroup are the exception to waiting: kube-scheduler
//! binds none of them until the whole group is placed, so a member never
//! waits for an earlier one (that binding comes only after its own
//! placement); the enforcer treats them as next to the in-tree plugins
//! does, with the nodes each may be on.

use std::sync::Arc;
use std::time::Instant;

use crate::api::AppState;
use crate::cluster::{CandidateNodes, InFlight, InFlightPod, NodeIdx, Settled, Snapshot};
use crate::config::Role;
use crate::model::Pod;
use crate::policy::pod_relation::PodRelation;

/// The pod of a request, to record once it was answered.
pub struct Incoming {
    ledger: Arc<InFlight>,
    pod: Arc<Pod>,
    role: Role,
}

impl Incoming {
    /// The other pods in flight, with the nodes each may be on, for a
    /// decision on `snapshot` that must not count them as absent: next to
    /// the in-tree plugins. None as the enforcer, which waited for them.
    pub fn placements(&self, snapshot: &Snapshot) -> Vec<InFlightPod> {
        let mut all = self.ledger.placements(snapshot, &self.pod);
        if self.role == Role::Enforcer {
            all.retain(|p| self.pod.same_pod_group(&p.pod));
        }
        all
    }

    /// Whether [`Self::record`] keeps the nodes the pod may go to: next to
    /// the in-tree plugins always; as the enforcer for PodGroup members,
    /// whom the rest of their group counts that way.
    pub fn wants_candidates(&self) -> bool {
        self.role == Role::NextToInTreePlugins || self.pod.pod_group().is_some()
    }

    /// The answer had a feasible node: the pod is in flight until bound,
    /// on one of `candidates` (the places in `snapshot`'s node list of the
    /// nodes just answered for it).
    pub fn record(self, snapshot: &Snapshot, candidates: Vec<NodeIdx>) {
        let candidates = self
            .wants_candidates()
            .then(|| CandidateNodes::new(snapshot, candidates));
        self.ledger.record(self.pod, snapshot, candidates);
    }
}

/// Which verb a request is: kube-scheduler calls `filter` once per
/// scheduling attempt of a pod, then `prioritize` for the same attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Filter,
    Prioritize,
}

/// As the enforcer, wait until no in-flight pod the request's pod could
/// count is left (at most `live.inFlightWaitMillis`); next to the in-tree
/// plugins, never. `pod` is the one the handler decoded from the request
/// (the body is read once). `None` when the ledger is off, or the request
/// has no decodable pod (the decision reports why). A `filter` starts a
/// new attempt for its pod: its earlier one, if still in flight, did not
/// bind and stops holding others up.
pub async fn wait_for_related(
    state: &AppState,
    pod: Option<&Arc<Pod>>,
    verb: Verb,
) -> Option<Incoming> {
    let pod = pod?;
    let ledger = &state.in_flight;
    if !ledger.is_enabled() {
        return None;
    }
    if verb == Verb::Filter {
        ledger.new_attempt(pod);
    }
    let role = state.config.scheduling.role;
    if role == Role::Enforcer
        && !ledger.is_empty()
        && let Some(snapshot) = state.view.current()
        && let Ok(relation) = PodRelation::prepare(&snapshot, pod, &state.config.scheduling)
    {
        drop(snapshot);
        let counts = |other: &Pod| relation.counts(other) && !pod.same_pod_group(other);
        let settled = ledger.wait_until_clear(&state.view, pod, &counts).await;
        report(state, pod, settled);
    }
    Some(Incoming {
        ledger: Arc::clone(ledger),
        pod: Arc::clone(pod),
        role,
    })
}

fn report(state: &AppState, pod: &Pod, settled: Settled) {
    let m = &state.metrics;
    match settled {
        Settled::Free => {}
        Settled::Waited(took) => {
            m.in_flight_waits.inc();
            m.in_flight_wait_seconds.observe(took.as_secs_f64());
        }
        Settled::TimedOut(took, pending) => {
            m.in_flight_waits.inc();
            m.in_flight_wait_seconds.observe(took.as_secs_f64());
            m.in_flight_wait_timeouts.inc();
            if let Some(suppressed) = state.warnings.in_flight_timeouts.admit(Instant::now()) {
                tracing::warn!(
                    pod = %pod.metadata.key(),
                    waited_ms = took.as_millis() as u64,
                    still_in_flight = ?pending,
                    suppressed_since_last = suppressed,
                    "gave up waiting for related pods kube-scheduler placed but did not bind \
                     (or the watch did not report); deciding without counting them"
                );
            }
        }
    }
}
