//! The pods bound to one node, with what preemption reads of each of them
//! kept side by side in one contiguous array.
//!
//! Victim selection looks at every pod of every candidate node: priority,
//! start time, requests, and the UID it answers with. Read through each
//! `Arc<Pod>` those are three or four cache misses per pod (the pods lie
//! scattered over the heap), and they were most of a preempt request. Here
//! they are computed once when the node's pod list is built, which is the
//! only way to build one, so they cannot go stale.

use std::ops::{Deref, Range};
use std::sync::Arc;

use jiff::Timestamp;

use crate::model::Pod;
use crate::policy::resources::{Requests, pod_requests};

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
    /// Each pod's UID as a JSON string (quoted, escaped), one after another.
    uids_json: Vec<u8>,
}

/// What preemption reads of one pod.
#[derive(Debug, Clone, PartialEq)]
pub struct PodSummary {
    /// `spec.priority`, 0 when missing.
    pub priority: i32,
    pub start_time: Option<Timestamp>,
    /// What the scheduler reserves for the pod.
    pub requests: Requests,
    uid_json: Range<u32>,
}

impl NodePods {
    pub fn new(pods: Vec<Arc<Pod>>) -> Self {
        let mut requested = Requests::default();
        let mut uids_json = Vec::with_capacity(pods.len() * 40);
        let summaries = pods
            .iter()
            .map(|pod| {
                let requests = pod_requests(pod);
                requested.add(&requests);
                let start = uids_json.len() as u32;
                // Writing a string into a Vec cannot fail.
                serde_json::to_writer(&mut uids_json, &pod.metadata.uid).ok();
                PodSummary {
                    priority: pod.priority(),
                    start_time: pod.status.start_time,
                    requests,
                    uid_json: start..uids_json.len() as u32,
                }
            })
            .collect();
        Self(Arc::new(Parts {
            pods,
            summaries,
            requested,
            uids_json,
        }))
    }

    /// One entry per pod, in the order of the pods.
    pub fn summaries(&self) -> &[PodSummary] {
        &self.0.summaries
    }

    /// What all the pods request together.
    pub fn requested(&self) -> &Requests {
        &self.0.requested
    }

    /// The UID of the pod at `position` as a JSON string, ready to write
    /// into an answer; `""` when the pod has none.
    pub fn uid_json(&self, position: usize) -> &[u8] {
        let range = &self.0.summaries[position].uid_json;
        &self.0.uids_json[range.start as usize..range.end as usize]
    }

    /// Whether the pod at `position` has a UID.
    pub fn has_uid(&self, position: usize) -> bool {
        self.0.summaries[position].uid_json.len() > 2
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
    use serde_json::json;

    fn pod(uid: &str, priority: Option<i32>, cpu: &str) -> Arc<Pod> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": "p", "uid": uid},
                "spec": {"priority": priority, "containers": [
                    {"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
                "status": {"startTime": "2024-01-01T00:00:00Z"}
            }))
            .unwrap(),
        )
    }

    #[test]
    fn summaries_follow_the_pods() {
        let pods = NodePods::new(vec![pod("a", Some(7), "100m"), pod("b", None, "1")]);
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
    fn uids_are_written_as_json_strings() {
        let pods = NodePods::new(vec![
            pod("plain-1", None, "0"),
            pod("", None, "0"),
            pod("quote\"and\\slash\n", None, "0"),
        ]);
        assert_eq!(pods.uid_json(0), br#""plain-1""#);
        assert_eq!(pods.uid_json(1), br#""""#);
        assert!(pods.has_uid(0) && !pods.has_uid(1) && pods.has_uid(2));
        let back: String = serde_json::from_slice(pods.uid_json(2)).unwrap();
        assert_eq!(back, "quote\"and\\slash\n");
    }

    #[test]
    fn an_empty_node_requests_nothing() {
        let pods = NodePods::new(Vec::new());
        assert!(pods.is_empty() && pods.summaries().is_empty());
        assert_eq!(*pods.requested(), Requests::default());
    }
}
