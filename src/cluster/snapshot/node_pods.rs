//! The pods bound to one node, with what preemption reads of each of them
//! kept side by side in one contiguous array.
//!
//! Victim selection looks at every pod of every candidate node: priority,
//! start time, requests, and the UID it answers with. Read through each
//! `Arc<Pod>` those are three or four cache misses per pod (the pods lie
//! scattered over the heap), and they were most of a preempt request. Here
//! they are computed once when the node's pod list is built, which is the
//! only way to build one, so they cannot go stale.
//!
//! The pods are also kept in preemption's order ([`NodePods::by_importance`]):
//! every preempt request sorted the pods of each candidate node by
//! importance, a fifth of its work, for an order that changes only when
//! the node's pods do.

use std::hash::BuildHasher;
use std::ops::{Deref, Range};
use std::sync::Arc;

use jiff::Timestamp;

use crate::model::Pod;
use crate::model::requests::{Requests, RequestsRule, assigned_pod_requests};

/// A node's pods (dereferences to the list) and their [`PodSummary`]s in
/// the same order. Cloning shares everything.
#[derive(Debug, Clone, Default)]
pub struct NodePods(Arc<Parts>);

#[derive(Debug, Default)]
struct Parts {
    pods: Vec<Arc<Pod>>,
    summaries: Vec<PodSummary>,
    /// Sum of every pod's requests.
    requested: Requests,
    /// Each pod's UID, one after another: beside the summaries, so looking
    /// for a victim's UID reads no pod.
    uids: String,
    /// Each pod's [`uid_hash`], in the order of the pods.
    uid_hashes: Vec<u32>,
    /// Positions, most important first ([`pod_importance`], a pod not started
    /// yet after every started one of its priority), equal pods in list
    /// order.
    by_importance: Vec<u32>,
    /// Whether some pod has no start time.
    unstarted: bool,
    /// The latest start time of the pods that have one.
    latest_start: Option<Timestamp>,
}

/// What preemption reads of one pod.
#[derive(Debug, Clone, PartialEq)]
pub struct PodSummary {
    /// `spec.priority`, 0 when missing.
    pub priority: i32,
    pub start_time: Option<Timestamp>,
    /// What the scheduler reserves for the pod.
    pub requests: Requests,
    uid: Range<u32>,
}

impl NodePods {
    /// `pods`, their requests counted by `rule`.
    pub fn new(pods: Vec<Arc<Pod>>, rule: RequestsRule) -> Self {
        let mut parts = Parts::with_capacity(pods.len());
        for pod in pods {
            parts.push_new(pod, rule);
        }
        parts.order();
        Self(Arc::new(parts))
    }

    /// This list without the pods `gone` says, and with `added` after the
    /// rest, their requests counted by `rule`. Kept pods keep their
    /// summaries: a watch event recomputes only the pods it brings.
    pub fn changed(
        &self,
        gone: impl Fn(&Arc<Pod>) -> bool,
        added: Vec<Arc<Pod>>,
        rule: RequestsRule,
    ) -> Self {
        let old = &*self.0;
        let mut parts = Parts::with_capacity(old.pods.len() + added.len());
        for (i, pod) in old.pods.iter().enumerate() {
            if !gone(pod) {
                parts.push_known(pod, &old.summaries[i], self.uid(i), old.uid_hashes[i]);
            }
        }
        for pod in added {
            parts.push_new(pod, rule);
        }
        parts.order();
        Self(Arc::new(parts))
    }

    /// One entry per pod, in the order of the pods.
    pub fn summaries(&self) -> &[PodSummary] {
        &self.0.summaries
    }

    /// What all the pods request together.
    pub fn requested(&self) -> &Requests {
        &self.0.requested
    }

    /// The UID of the pod at `position` (`""` when it has none), read
    /// without touching the pod.
    pub fn uid(&self, position: usize) -> &str {
        let range = &self.0.summaries[position].uid;
        &self.0.uids[range.start as usize..range.end as usize]
    }

    /// Whether one of the pods has the UID `uid`, as the cluster's UID
    /// index would say (which holds no empty UID): the pods' UID hashes
    /// first, then the UID of a match.
    pub fn has_pod_with_uid(&self, uid: &str) -> bool {
        let hash = uid_hash(uid);
        !uid.is_empty()
            && (self.0.uid_hashes.iter().enumerate()).any(|(i, h)| *h == hash && self.uid(i) == uid)
    }

    /// The positions of the pods in upstream's `MoreImportantPod` order
    /// (higher priority first, then the earlier start), equal pods in list
    /// order, when a pod without a start time counts as starting at `now`
    /// as upstream has it; `None` when that order depends on `now` (a pod
    /// not started yet beside one starting at `now` or later), which only a
    /// clock behind the pods' start times gives.
    pub fn by_importance(&self, now: Timestamp) -> Option<&[u32]> {
        let parts = &*self.0;
        let now_is_last = !parts.unstarted || parts.latest_start.is_none_or(|t| t < now);
        now_is_last.then_some(&parts.by_importance[..])
    }
}

/// A pod UID's hash, to find a UID among a node's pods without comparing
/// each one.
fn uid_hash(uid: &str) -> u32 {
    foldhash::fast::FixedState::with_seed(0x7569_6473).hash_one(uid) as u32
}

/// `MoreImportantPod` as one number, smallest first: the reversed priority,
/// then the start's seconds, then its nanoseconds. Comparing a priority and
/// a `Timestamp` pair cost several times as much.
pub fn pod_importance(priority: i32, start: Timestamp) -> u128 {
    // i32 → u32 keeping the order, then reversed.
    let priority = !((priority as u32) ^ (1 << 31));
    // Before the epoch jiff gives both parts negative; borrow a second so
    // the nanoseconds are 0..1e9 and the pair orders as the time.
    let (mut second, mut nano) = (start.as_second(), start.subsec_nanosecond());
    if nano < 0 {
        second -= 1;
        nano += 1_000_000_000;
    }
    // jiff's timestamps lie within ±10,000 years (under 2^39 seconds
    // either side of the epoch): the shifted second is positive and fits
    // 41 bits above the nanoseconds' 30.
    let second = (second + (1 << 40)) as u128;
    (u128::from(priority) << 96) | (second << 30) | nano as u128
}

impl Parts {
    fn with_capacity(pods: usize) -> Self {
        Self {
            pods: Vec::with_capacity(pods),
            summaries: Vec::with_capacity(pods),
            requested: Requests::default(),
            uids: String::with_capacity(pods * 36),
            uid_hashes: Vec::with_capacity(pods),
            by_importance: Vec::new(),
            unstarted: false,
            latest_start: None,
        }
    }

    /// [`NodePods::by_importance`] once every pod is in. A pod not started
    /// yet sorts as starting at the end of time: after every started pod
    /// of its priority, as it does at any `now` later than their starts.
    fn order(&mut self) {
        let summaries = &self.summaries;
        self.by_importance = (0..summaries.len() as u32).collect();
        // Stable: equal pods keep the list order.
        self.by_importance.sort_by_cached_key(|&i| {
            let s = &summaries[i as usize];
            pod_importance(s.priority, s.start_time.unwrap_or(Timestamp::MAX))
        });
        self.unstarted = summaries.iter().any(|s| s.start_time.is_none());
        self.latest_start = summaries.iter().filter_map(|s| s.start_time).max();
    }

    fn push_new(&mut self, pod: Arc<Pod>, rule: RequestsRule) {
        let uid = self.push_uid(&pod.metadata.uid);
        let summary = PodSummary {
            priority: pod.priority(),
            start_time: pod.status.start_time,
            requests: assigned_pod_requests(&pod, rule),
            uid,
        };
        self.requested.add(&summary.requests);
        self.summaries.push(summary);
        self.uid_hashes.push(uid_hash(&pod.metadata.uid));
        self.pods.push(pod);
    }

    fn push_known(&mut self, pod: &Arc<Pod>, summary: &PodSummary, uid: &str, hash: u32) {
        self.uid_hashes.push(hash);
        let uid = self.push_uid(uid);
        self.requested.add(&summary.requests);
        self.summaries.push(PodSummary {
            uid,
            ..summary.clone()
        });
        self.pods.push(Arc::clone(pod));
    }

    fn push_uid(&mut self, uid: &str) -> Range<u32> {
        let start = self.uids.len() as u32;
        self.uids.push_str(uid);
        start..self.uids.len() as u32
    }
}

impl Deref for NodePods {
    type Target = [Arc<Pod>];

    fn deref(&self) -> &[Arc<Pod>] {
        &self.0.pods
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::make_pod;
    use serde_json::json;

    fn pod(uid: &str, priority: Option<i32>, cpu: &str) -> Arc<Pod> {
        // Only a cpu request (no memory), and `priority: null` for None.
        let containers = json!([{"name": "c", "resources": {"requests": {"cpu": cpu}}}]);
        let pod = make_pod("", "p")
            .uid(uid)
            .spec("priority", json!(priority))
            .spec("containers", containers)
            .start(Some("2024-01-01T00:00:00Z"));
        Arc::new(pod.obj())
    }

    #[test]
    fn summaries_follow_the_pods() {
        let pods = NodePods::new(
            vec![pod("a", Some(7), "100m"), pod("b", None, "1")],
            RequestsRule::default(),
        );
        assert_eq!(pods.len(), 2);
        assert_eq!(pods[1].metadata.uid, "b");
        let s = pods.summaries();
        assert_eq!((s[0].priority, s[1].priority), (7, 0), "missing is 0");
        assert_eq!(s[0].requests.cpu, 100);
        assert_eq!(s[1].requests.cpu, 1000);
        assert_eq!(
            s[0].start_time,
            Some("2024-01-01T00:00:00Z".parse().unwrap())
        );
        assert_eq!(pods.requested().cpu, 1100);
    }

    #[test]
    fn uids_are_kept_as_they_are_and_found_by_value() {
        let odd = "quote\"and\\slash\n";
        let pods = NodePods::new(
            vec![
                pod("plain-1", None, "0"),
                pod("", None, "0"),
                pod(odd, None, "0"),
            ],
            RequestsRule::default(),
        );
        assert_eq!(
            (pods.uid(0), pods.uid(1), pods.uid(2)),
            ("plain-1", "", odd)
        );
        assert!(pods.has_pod_with_uid("plain-1") && pods.has_pod_with_uid(odd));
        assert!(!pods.has_pod_with_uid("") && !pods.has_pod_with_uid("plain-"));
    }

    #[test]
    fn a_change_keeps_the_summaries_of_kept_pods_and_adds_new_ones() {
        let old = NodePods::new(
            vec![
                pod("a", Some(1), "100m"),
                pod("b", Some(2), "200m"),
                pod("c", Some(3), "300m"),
            ],
            RequestsRule::default(),
        );
        let changed = old.changed(
            |p| p.metadata.uid == "b",
            vec![pod("d\"", Some(4), "1")],
            RequestsRule::default(),
        );
        let fresh = NodePods::new(
            vec![
                pod("a", Some(1), "100m"),
                pod("c", Some(3), "300m"),
                pod("d\"", Some(4), "1"),
            ],
            RequestsRule::default(),
        );
        assert_eq!(changed.summaries(), fresh.summaries());
        assert_eq!(changed.requested(), fresh.requested());
        let uids = |p: &NodePods| {
            (0..p.len())
                .map(|i| p.uid(i).to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(uids(&changed), uids(&fresh));
        assert_eq!(changed.requested().cpu, 1400);
        let now = "2025-01-01T00:00:00Z".parse().unwrap();
        assert_eq!(changed.by_importance(now), Some(&[2, 1, 0][..]));
        assert_eq!(changed.by_importance(now), fresh.by_importance(now));
    }

    #[test]
    fn the_kept_order_puts_pods_not_started_last_of_their_priority() {
        let mut unstarted = (*pod("u", Some(5), "0")).clone();
        unstarted.status.start_time = None;
        let pods = NodePods::new(
            vec![
                Arc::new(unstarted),
                pod("a", Some(5), "0"),
                pod("b", Some(9), "0"),
                pod("c", Some(5), "0"),
            ],
            RequestsRule::default(),
        );
        let after = "2025-01-01T00:00:00Z".parse().unwrap();
        assert_eq!(pods.by_importance(after), Some(&[2, 1, 3, 0][..]));
        // At the started pods' own start time "now" ties with them, and the
        // list order would put the unstarted pod first: sort per request.
        let at_start = "2024-01-01T00:00:00Z".parse().unwrap();
        assert_eq!(pods.by_importance(at_start), None);
    }

    #[test]
    fn an_empty_node_requests_nothing() {
        let pods = NodePods::new(Vec::new(), RequestsRule::default());
        assert!(pods.is_empty() && pods.summaries().is_empty());
        assert_eq!(*pods.requested(), Requests::default());
    }
}
