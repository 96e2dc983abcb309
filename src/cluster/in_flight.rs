//! The in-flight ledger: pods kube-arbiter answered `filter`/`prioritize`
//! for (with a feasible node) whose placement it does not know yet.
//!
//! kube-scheduler assumes the pod it placed in its own cache and binds it
//! asynchronously while the next pod's cycle already runs, so the next
//! `filter` usually arrives before the bind verb or the watch tells us
//! where the previous pod went. A decision that could count such a pod
//! waits, bounded, until the pod resolves, then decides on the updated
//! view (docs/burst-safety.md). A pod is resolved when the view shows it
//! bound (the bind verb assumes it at arrival; or the watch), when it is
//! gone from the view after having been seen there or from a view that
//! has caught up with the version kube-scheduler had of it (created and
//! deleted between two looks: the view never showed it), when it is being
//! deleted, when the view shows kube-scheduler gave up on this attempt (a
//! `PodScheduled=False` condition it did not have when it went in flight),
//! when kube-scheduler asks `filter` for it again (a new attempt: the
//! previous one did not bind), when kube-arbiter's `bind` for it answered
//! an error, when a waiter gave up on it, or when it is
//! older than the ledger's `max_age`.
//!
//! Next to kube-scheduler's in-tree plugins nobody waits: each entry also
//! keeps the nodes the pod may have been put on (those kube-arbiter last
//! answered feasible for it), and a decision keeps every node some
//! placement of them admits ([`InFlightPod`], `policy::filter`).
//!
//! The ledger only holds pods; which of them a decision waits for is the
//! caller's rule (`policy::pod_relation`). Nothing here holds a lock across
//! an await: waiting is on the view's publish notification.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use tokio::sync::Notify;

use super::{ClusterView, Snapshot};
use crate::model::Pod;

mod candidate_nodes;

pub use candidate_nodes::CandidateNodes;

type Map<K, V> = foldhash::HashMap<K, V>;

/// A pod in flight as a decision next to kube-scheduler's own plugins sees
/// it: kube-scheduler put it on one of `candidates` (the nodes kube-arbiter
/// last answered for it: `filter`'s feasible nodes, or the ones
/// `prioritize` scored, which kube-scheduler's own filters already
/// narrowed), or it gave up on the pod.
#[derive(Debug, Clone)]
pub struct InFlightPod {
    pub pod: Arc<Pod>,
    pub candidates: CandidateNodes,
}

#[derive(Debug)]
struct Entry {
    pod: Arc<Pod>,
    /// Where it may be; `None` when recorded for waiting only.
    candidates: Option<CandidateNodes>,
    since: Instant,
    /// The view has shown the pod (unbound): its absence now means deleted.
    seen: bool,
    /// The pod's resourceVersion in kube-scheduler's copy: a view that
    /// has caught up with it and lacks the pod means deleted too.
    version: Option<u64>,
    /// The scheduling failures the pod already carried when this attempt
    /// began, as the view and as kube-scheduler's copy showed them: any
    /// other one is kube-scheduler giving up on this attempt.
    earlier_failures: [Option<SchedulingFailure>; 2],
}

/// A `PodScheduled=False` condition, as far as telling one failure from
/// the next goes (upstream's failure handler writes it only when one of
/// these changed).
#[derive(Debug, Clone, PartialEq, Eq)]
struct SchedulingFailure {
    reason: String,
    message: u64,
    since: Option<Timestamp>,
}

impl SchedulingFailure {
    fn of(pod: &Pod) -> Option<Self> {
        let c = pod
            .condition("PodScheduled")
            .filter(|c| c.status == "False")?;
        Some(SchedulingFailure {
            reason: c.reason.clone(),
            message: c.message_fingerprint,
            since: c.last_transition_time,
        })
    }
}

/// How one decision went through the ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    /// No in-flight pod could count for it.
    Free,
    /// It waited this long for related pods, which all resolved.
    Waited(Duration),
    /// It waited this long and these pods (`namespace/name`) were still in
    /// flight; they were dropped from the ledger and not counted.
    TimedOut(Duration, Vec<String>),
}

/// The ledger and its wait bound; a zero bound disables it.
#[derive(Debug, Default)]
pub struct InFlight {
    pods: Mutex<Map<(String, String), Entry>>,
    /// Woken when entries leave the ledger without a publish of the view
    /// (a new attempt for the pod, a timeout).
    dropped: Notify,
    wait: Duration,
    max_age: Duration,
}

impl InFlight {
    /// `wait`: the most a decision waits (0: never, nothing is recorded);
    /// `max_age`: an entry nobody resolved is dropped after this.
    pub fn new(wait: Duration, max_age: Duration) -> Self {
        Self {
            pods: Mutex::default(),
            dropped: Notify::new(),
            wait,
            max_age,
        }
    }

    pub fn is_enabled(&self) -> bool {
        !self.wait.is_zero()
    }

    /// `pod` was just answered with a feasible node: in flight from now
    /// (again, if it was already), on one of `candidates` when known.
    pub fn record(&self, pod: Arc<Pod>, snapshot: &Snapshot, candidates: Option<CandidateNodes>) {
        if !self.is_enabled() || !pod.spec.node_name.is_empty() {
            return;
        }
        let now = Instant::now();
        let mut pods = self.lock();
        self.prune(&mut pods, snapshot, now);
        let key = key(&pod);
        let in_view = find(snapshot, &pod);
        let earlier_failures = [
            in_view.and_then(SchedulingFailure::of),
            SchedulingFailure::of(&pod),
        ];
        let version = pod.metadata.version();
        pods.insert(
            key,
            Entry {
                pod,
                candidates,
                since: now,
                seen: in_view.is_some(),
                version,
                earlier_failures,
            },
        );
    }

    /// kube-scheduler asks `filter` for `pod` again: a new attempt, so the
    /// previous one ended without a binding (kube-scheduler schedules one
    /// pod at a time and binds only what it assumed). Its entry goes, and
    /// decisions waiting for it go ahead.
    pub fn new_attempt(&self, pod: &Pod) {
        self.attempt_ended(&pod.metadata.namespace, &pod.metadata.name);
    }

    /// The binding kube-arbiter made for pod `namespace/name` failed (the
    /// API server refused it or could not be reached): kube-scheduler
    /// forgets the pod and schedules it again, so nobody waits for it.
    pub fn attempt_ended(&self, namespace: &str, name: &str) {
        let key = (namespace.to_string(), name.to_string());
        if self.lock().remove(&key).is_some() {
            self.dropped.notify_waiters();
        }
    }

    /// Pods still in flight against `snapshot` (resolved ones are dropped).
    pub fn len(&self, snapshot: Option<&Snapshot>) -> usize {
        let mut pods = self.lock();
        if let Some(s) = snapshot {
            self.prune(&mut pods, s, Instant::now());
        }
        pods.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// The in-flight pods other than `incoming` that `counts` selects, as
    /// of `snapshot`.
    pub fn blocking(
        &self,
        snapshot: &Snapshot,
        incoming: &Pod,
        counts: &(dyn Fn(&Pod) -> bool + Sync),
    ) -> Vec<Arc<Pod>> {
        let own = key(incoming);
        let mut pods = self.lock();
        self.prune(&mut pods, snapshot, Instant::now());
        pods.iter()
            .filter(|(k, e)| **k != own && counts(&e.pod))
            .map(|(_, e)| e.pod.clone())
            .collect()
    }

    /// The in-flight pods other than `incoming` recorded with their
    /// candidate nodes, as of `snapshot` (resolved ones are dropped).
    pub fn placements(&self, snapshot: &Snapshot, incoming: &Pod) -> Vec<InFlightPod> {
        let own = key(incoming);
        let mut pods = self.lock();
        self.prune(&mut pods, snapshot, Instant::now());
        pods.iter()
            .filter(|(k, _)| **k != own)
            .filter_map(|(_, e)| {
                Some(InFlightPod {
                    pod: e.pod.clone(),
                    candidates: e.candidates.clone()?,
                })
            })
            .collect()
    }

    /// Wait until no pod `counts` selects is in flight (each publish of
    /// `view` is a chance), at most the wait bound. On timeout the pods
    /// still blocking are dropped, so later decisions do not wait for them
    /// again.
    pub async fn wait_until_clear(
        &self,
        view: &ClusterView,
        incoming: &Pod,
        counts: &(dyn Fn(&Pod) -> bool + Sync),
    ) -> Settled {
        if !self.is_enabled() {
            return Settled::Free;
        }
        let started = tokio::time::Instant::now();
        let deadline = started + self.wait;
        let mut waited = false;
        loop {
            // Registered before the check, so a publish (or a drop) between
            // the check and the await still wakes us.
            let published = view.published();
            tokio::pin!(published);
            published.as_mut().enable();
            let dropped = self.dropped.notified();
            tokio::pin!(dropped);
            dropped.as_mut().enable();
            let Some(snapshot) = view.current() else {
                return Settled::Free;
            };
            let blocking = self.blocking(&snapshot, incoming, counts);
            drop(snapshot);
            if blocking.is_empty() {
                return if waited {
                    Settled::Waited(started.elapsed())
                } else {
                    Settled::Free
                };
            }
            waited = true;
            tokio::select! {
                () = published => {}
                () = dropped => {}
                () = tokio::time::sleep_until(deadline) => {
                    self.give_up(&blocking);
                    let names = blocking.iter().map(|p| p.metadata.key()).collect();
                    return Settled::TimedOut(started.elapsed(), names);
                }
            }
        }
    }

    /// Drop `pods` after a timeout; other decisions waiting for them go
    /// ahead too instead of timing out one by one.
    fn give_up(&self, pods: &[Arc<Pod>]) {
        let mut ledger = self.lock();
        for p in pods {
            let k = key(p);
            if ledger.get(&k).is_some_and(|e| Arc::ptr_eq(&e.pod, p)) {
                ledger.remove(&k);
            }
        }
        drop(ledger);
        self.dropped.notify_waiters();
    }

    /// Drop the entries `snapshot` resolves and those past `max_age`.
    fn prune(&self, pods: &mut Map<(String, String), Entry>, snapshot: &Snapshot, now: Instant) {
        pods.retain(|_, e| {
            if now.duration_since(e.since) >= self.max_age {
                return false;
            }
            match find(snapshot, &e.pod) {
                Some(in_view) => {
                    e.seen = true;
                    in_view.spec.node_name.is_empty()
                        && !in_view.is_terminating()
                        && !gave_up(e, in_view)
                }
                None => !e.seen && !caught_up(snapshot, e),
            }
        });
    }

    fn lock(&self) -> MutexGuard<'_, Map<(String, String), Entry>> {
        // Every mutation is a single insert/remove/retain: a panic elsewhere
        // cannot leave the map half-updated.
        self.pods.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The view shows a scheduling failure the pod did not carry when this
/// attempt began: kube-scheduler's failure handler wrote it (a later
/// plugin or extender rejected the pod, or its binding failed).
fn gave_up(e: &Entry, in_view: &Pod) -> bool {
    SchedulingFailure::of(in_view).is_some_and(|now| !e.earlier_failures.contains(&Some(now)))
}

/// `snapshot` holds every pod that existed at the version kube-scheduler
/// had of this one: lacking it, the pod was deleted since, even if the
/// view never showed it (a ReplicaSet scale-down deletes pending pods
/// first; a lagging watch brings the creation and the deletion together).
fn caught_up(snapshot: &Snapshot, e: &Entry) -> bool {
    e.version.is_some_and(|v| snapshot.pods_as_of() >= v)
}

fn key(pod: &Pod) -> (String, String) {
    (pod.metadata.namespace.clone(), pod.metadata.name.clone())
}

/// The same pod (UID, when known) in the view.
fn find<'s>(snapshot: &'s Snapshot, pod: &Pod) -> Option<&'s Pod> {
    let m = &pod.metadata;
    let found = if m.uid.is_empty() {
        snapshot.pod(&m.namespace, &m.name)
    } else {
        snapshot.pod_by_uid(&m.uid)
    };
    found.map(|r| &*r.pod)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::cluster::ClusterObjects;
    use crate::testing::make_pod;

    const WAIT: Duration = Duration::from_secs(5);
    const AGE: Duration = Duration::from_secs(30);

    fn pod(name: &str, node: &str) -> Pod {
        make_pod("ns", name)
            .uid(&format!("uid-{name}"))
            .label("app", "web")
            .node(node)
            .obj()
    }

    /// The resourceVersion kube-scheduler's copy of a pending pod carries.
    const VERSION: u64 = 40;

    /// `pod(name, "")` as kube-scheduler sends it, with its version.
    fn scheduler_copy(name: &str) -> Pod {
        let mut p = pod(name, "");
        p.metadata.resource_version = VERSION.to_string();
        p
    }

    /// `pod(name, "")` after kube-scheduler's failure handler wrote
    /// `PodScheduled=False` with this message.
    fn failed(name: &str, message: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                         "labels": {"app": "web"}},
            "status": {"conditions": [{"type": "PodScheduled", "status": "False",
                "reason": "Unschedulable", "message": message,
                "lastTransitionTime": "2024-01-01T00:00:00Z"}]}}))
        .unwrap()
    }

    fn view_of(pods: Vec<Pod>) -> Snapshot {
        Snapshot::build(ClusterObjects {
            nodes: vec![serde_json::from_value(json!({"metadata": {"name": "n1"}})).unwrap()],
            pods,
            ..Default::default()
        })
    }

    fn any(_: &Pod) -> bool {
        true
    }

    fn names(pods: &[Arc<Pod>]) -> Vec<&str> {
        pods.iter().map(|p| p.metadata.name.as_str()).collect()
    }

    #[test]
    fn ledger_rules() {
        let pending = view_of(vec![pod("a", "")]);
        let bound = view_of(vec![pod("a", "n1")]);
        let gone = view_of(vec![]);
        let caught_up = view_of(vec![]).with_pods_as_of(VERSION);
        let caught_up_pending = view_of(vec![pod("a", "")]).with_pods_as_of(VERSION);
        let mut deleting = pod("a", "");
        deleting.metadata.deletion_timestamp = Some("2024-01-01T00:00:00Z".parse().unwrap());
        let deleting = view_of(vec![deleting]);
        let replaced = {
            let mut p = pod("a", "");
            p.metadata.uid = "uid-new".into();
            view_of(vec![p])
        };
        let failed_before = view_of(vec![failed("a", "0/6 nodes are available")]);
        let failed_again = view_of(vec![failed("a", "0/6 nodes are available: 1 bound")]);
        let failed_now = view_of(vec![failed("a", "binding rejected")]);
        // (rule, view at record time, view when asked, still in flight)
        let cases = [
            (
                "a failure written after it went in flight: kube-scheduler gave up",
                &pending,
                &failed_now,
                false,
            ),
            (
                "the failure of an earlier attempt does not end this one",
                &failed_before,
                &failed_before,
                true,
            ),
            (
                "a new failure replacing an earlier one ends this attempt",
                &failed_before,
                &failed_again,
                false,
            ),
            ("a pending pod stays in flight", &pending, &pending, true),
            (
                "a pod the view shows bound is resolved",
                &pending,
                &bound,
                false,
            ),
            (
                "a pod gone after being seen was deleted",
                &pending,
                &gone,
                false,
            ),
            (
                "a pod the view never showed stays in flight (the watch lags)",
                &gone,
                &gone,
                true,
            ),
            (
                "a pod the view never showed, gone from a view caught up with it, was deleted",
                &gone,
                &caught_up,
                false,
            ),
            (
                "a pod the view never showed, in a view caught up with it, is pending",
                &gone,
                &caught_up_pending,
                true,
            ),
            (
                "a pod being deleted will not bind",
                &pending,
                &deleting,
                false,
            ),
            (
                "a same-named pod with another UID replaced it",
                &pending,
                &replaced,
                false,
            ),
        ];
        for (rule, at_record, asked, want) in cases {
            let ledger = InFlight::new(WAIT, AGE);
            ledger.record(Arc::new(scheduler_copy("a")), at_record, None);
            let got = ledger.blocking(asked, &pod("b", ""), &any);
            assert_eq!(!got.is_empty(), want, "{rule}");
        }
    }

    #[test]
    fn a_view_short_of_the_pods_version_keeps_waiting_for_it() {
        let ledger = InFlight::new(WAIT, AGE);
        ledger.record(Arc::new(scheduler_copy("a")), &view_of(vec![]), None);
        let behind = view_of(vec![]).with_pods_as_of(VERSION - 1);
        assert_eq!(names(&ledger.blocking(&behind, &pod("b", ""), &any)), ["a"]);
        let there = view_of(vec![]).with_pods_as_of(VERSION);
        assert!(ledger.blocking(&there, &pod("b", ""), &any).is_empty());
    }

    #[test]
    fn the_failure_kube_scheduler_already_sent_is_not_a_new_one() {
        // The view lags: it does not show the earlier failure yet, the
        // request's copy of the pod does.
        let ledger = InFlight::new(WAIT, AGE);
        let lagging = view_of(vec![pod("a", "")]);
        ledger.record(Arc::new(failed("a", "earlier")), &lagging, None);
        let caught_up = view_of(vec![failed("a", "earlier")]);
        assert_eq!(
            names(&ledger.blocking(&caught_up, &pod("b", ""), &any)),
            ["a"]
        );
    }

    #[tokio::test]
    async fn a_new_attempt_for_a_pod_releases_its_waiters_without_a_publish() {
        let view = Arc::new(ClusterView::new());
        view.publish(view_of(vec![pod("a", "")]));
        let ledger = Arc::new(InFlight::new(WAIT, AGE));
        ledger.record(Arc::new(pod("a", "")), &view.current().unwrap(), None);
        let again = Arc::clone(&ledger);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            again.new_attempt(&pod("a", ""));
        });
        let got = ledger.wait_until_clear(&view, &pod("b", ""), &any).await;
        assert!(matches!(got, Settled::Waited(_)), "{got:?}");
        assert!(ledger.is_empty());
    }

    #[tokio::test]
    async fn a_failed_binding_releases_the_pods_waiters_without_a_publish() {
        let view = Arc::new(ClusterView::new());
        view.publish(view_of(vec![pod("a", "")]));
        let ledger = Arc::new(InFlight::new(WAIT, AGE));
        ledger.record(Arc::new(pod("a", "")), &view.current().unwrap(), None);
        let binder = Arc::clone(&ledger);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            binder.attempt_ended("ns", "a");
        });
        let got = ledger.wait_until_clear(&view, &pod("b", ""), &any).await;
        assert!(matches!(got, Settled::Waited(_)), "{got:?}");
        assert!(ledger.is_empty());
    }

    #[test]
    fn a_pod_never_waits_for_itself_nor_for_pods_it_cannot_count() {
        let s = view_of(vec![pod("a", ""), pod("b", "")]);
        let ledger = InFlight::new(WAIT, AGE);
        ledger.record(Arc::new(pod("a", "")), &s, None);
        ledger.record(Arc::new(pod("b", "")), &s, None);
        assert_eq!(names(&ledger.blocking(&s, &pod("a", ""), &any)), ["b"]);
        let only_b = |p: &Pod| p.metadata.name == "b";
        assert!(ledger.blocking(&s, &pod("b", ""), &only_b).is_empty());
        assert!(ledger.blocking(&s, &pod("c", ""), &|_| false).is_empty());
    }

    #[test]
    fn placements_are_the_other_pods_recorded_with_their_nodes() {
        let s = view_of(vec![pod("a", ""), pod("b", ""), pod("c", "")]);
        let ledger = InFlight::new(WAIT, AGE);
        let n1 = CandidateNodes::new(&s, vec![0]);
        ledger.record(Arc::new(pod("a", "")), &s, Some(n1.clone()));
        ledger.record(Arc::new(pod("b", "")), &s, Some(n1));
        ledger.record(Arc::new(pod("c", "")), &s, None);
        let got = ledger.placements(&s, &pod("b", ""));
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].pod.metadata.name, "a");
        let names: Vec<&str> = got[0].candidates.iter().map(|n| n.name()).collect();
        assert_eq!(names, ["n1"]);
        let bound = view_of(vec![pod("a", "n1"), pod("b", ""), pod("c", "")]);
        assert!(ledger.placements(&bound, &pod("b", "")).is_empty());
    }

    #[test]
    fn a_disabled_ledger_records_nothing() {
        let s = view_of(vec![pod("a", "")]);
        let ledger = InFlight::new(Duration::ZERO, AGE);
        ledger.record(Arc::new(pod("a", "")), &s, None);
        assert!(ledger.is_empty());
    }

    #[test]
    fn an_entry_older_than_max_age_is_dropped() {
        let s = view_of(vec![pod("a", "")]);
        let ledger = InFlight::new(WAIT, Duration::ZERO);
        ledger.record(Arc::new(pod("a", "")), &s, None);
        assert_eq!(ledger.len(Some(&s)), 0);
    }

    #[tokio::test]
    async fn a_wait_ends_when_the_view_shows_the_pod_bound() {
        let view = Arc::new(ClusterView::new());
        view.publish(view_of(vec![pod("a", "")]));
        let ledger = Arc::new(InFlight::new(WAIT, AGE));
        ledger.record(Arc::new(pod("a", "")), &view.current().unwrap(), None);
        let publisher = Arc::clone(&view);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            publisher.publish(view_of(vec![pod("a", "n1")]));
        });
        let got = ledger.wait_until_clear(&view, &pod("b", ""), &any).await;
        assert!(matches!(got, Settled::Waited(_)), "{got:?}");
        assert!(ledger.is_empty());
    }

    #[tokio::test]
    async fn a_timed_out_pod_is_named_and_no_longer_waited_for() {
        let view = ClusterView::new();
        view.publish(view_of(vec![pod("a", "")]));
        let ledger = InFlight::new(Duration::from_millis(50), AGE);
        ledger.record(Arc::new(pod("a", "")), &view.current().unwrap(), None);
        let got = ledger.wait_until_clear(&view, &pod("b", ""), &any).await;
        assert!(
            matches!(&got, Settled::TimedOut(_, names) if names == &["ns/a"]),
            "{got:?}"
        );
        assert_eq!(
            ledger.wait_until_clear(&view, &pod("c", ""), &any).await,
            Settled::Free
        );
    }

    #[tokio::test]
    async fn a_free_decision_does_not_wait() {
        let view = ClusterView::new();
        view.publish(view_of(vec![pod("a", "")]));
        let ledger = InFlight::new(WAIT, AGE);
        ledger.record(Arc::new(pod("a", "")), &view.current().unwrap(), None);
        let got = ledger
            .wait_until_clear(&view, &pod("b", ""), &|_| false)
            .await;
        assert_eq!(got, Settled::Free);
    }
}
