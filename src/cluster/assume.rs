//! Assumed bindings: pods kube-arbiter has just bound, placed on their node
//! in the published view before the source confirms them, so that the next
//! decisions count them (the race every extender has while its watch lags).
//!
//! The overlay sits on top of whatever a source publishes (live API or
//! file), so both sources get the same behaviour. An assumption ends when
//! the source's view shows the pod bound (the source's version wins), when
//! the pod is gone from the source, or when it expires unconfirmed. A pod
//! bound before the watch brought it (read from the API server) is assumed
//! too; its absence from the source ends it only once the source has
//! caught up with the pod's version ([`Snapshot::pods_as_of`]).

use std::sync::Arc;
use std::time::Instant;

use super::{PodChange, Snapshot};
use crate::model::Pod;

type Map<K, V> = foldhash::HashMap<K, V>;

#[derive(Debug, Clone)]
struct Assumption {
    pod: Arc<Pod>,
    expires: Instant,
    /// Read from the API server: the source has not shown it yet.
    unseen: bool,
}

/// Assumed pods by `(namespace, name)`.
#[derive(Debug, Default)]
pub(super) struct Assumptions {
    pods: Map<(String, String), Assumption>,
}

/// Why a binding could not be assumed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AssumeError {
    #[error("the cluster view is not ready yet")]
    NotReady,
    #[error("pod {0} is not in the cluster view")]
    UnknownPod(String),
    #[error("pod {key} in the cluster view has UID {actual}, the binding names {wanted}")]
    UidMismatch {
        key: String,
        actual: String,
        wanted: String,
    },
    #[error("node {0} is not in the cluster view")]
    UnknownNode(String),
}

/// A bound pod as the view should show it until the source confirms it.
pub(super) fn placed(
    base: &Snapshot,
    namespace: &str,
    name: &str,
    uid: &str,
    node: &str,
) -> Result<Pod, AssumeError> {
    let key = format!("{namespace}/{name}");
    let r = base
        .pod(namespace, name)
        .ok_or_else(|| AssumeError::UnknownPod(key.clone()))?;
    if !uid.is_empty() && r.pod.metadata.uid != uid {
        return Err(AssumeError::UidMismatch {
            key,
            actual: r.pod.metadata.uid.clone(),
            wanted: uid.to_string(),
        });
    }
    if base.node_idx(node).is_none() {
        return Err(AssumeError::UnknownNode(node.to_string()));
    }
    let mut pod = (*r.pod).clone();
    pod.spec.node_name = node.to_string();
    Ok(pod)
}

/// A pod read from the API server (the view has not shown it) as the view
/// should show it once bound to `node`.
pub(super) fn placed_read(read: &Pod, node: &str) -> Pod {
    let mut pod = read.clone();
    pod.spec.node_name = node.to_string();
    pod
}

impl Assumptions {
    /// Assume `pod`, which the source shows (`unseen`: which was read from
    /// the API server instead).
    pub(super) fn insert(&mut self, pod: Pod, expires: Instant, unseen: bool) {
        let key = (pod.metadata.namespace.clone(), pod.metadata.name.clone());
        self.pods.insert(
            key,
            Assumption {
                pod: Arc::new(pod),
                expires,
                unseen,
            },
        );
    }

    /// Forget the assumption for this pod; whether there was one.
    pub(super) fn remove(&mut self, namespace: &str, name: &str) -> bool {
        self.pods
            .remove(&(namespace.to_string(), name.to_string()))
            .is_some()
    }

    /// Drop assumptions `base` confirms (bound), no longer has, or that
    /// expired; the changes that put the rest into `base`.
    pub(super) fn reconcile(&mut self, base: &Snapshot, now: Instant) -> Vec<PodChange> {
        self.pods.retain(|(ns, name), a| {
            if a.expires <= now {
                tracing::warn!(
                    pod = %a.pod.metadata.key(),
                    node = %a.pod.spec.node_name,
                    "assumed binding was not confirmed by the cluster source in time; dropped"
                );
                return false;
            }
            let same = |r: &&super::PodRef| r.pod.metadata.uid == a.pod.metadata.uid;
            match base.pod(ns, name).filter(same) {
                Some(r) => r.pod.spec.node_name.is_empty(),
                // Gone, or replaced by a pod of another UID; for one read
                // from the API server, also: not shown yet.
                None => a.unseen && !caught_up(base, &a.pod),
            }
        });
        self.pods
            .values()
            .map(|a| PodChange::upsert(a.pod.clone()))
            .collect()
    }

    pub(super) fn len(&self) -> usize {
        self.pods.len()
    }
}

/// `base` holds every pod that existed at `pod`'s version: lacking it,
/// the pod was deleted.
fn caught_up(base: &Snapshot, pod: &Pod) -> bool {
    pod.metadata
        .version()
        .is_none_or(|v| base.pods_as_of() >= v)
}

/// Drop expired assumptions every `every`, for sources that publish rarely
/// (the file source); the live source's writer does this on its own tick.
pub fn expire_periodically(
    view: std::sync::Arc<super::ClusterView>,
    every: std::time::Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            view.expire_assumptions();
        }
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::cluster::ClusterObjects;

    fn objects(bound_to: &str) -> ClusterObjects {
        ClusterObjects {
            nodes: vec![serde_json::from_str(r#"{"metadata":{"name":"n1"}}"#).unwrap()],
            pods: vec![
                serde_json::from_value(serde_json::json!({
                    "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
                    "spec": {"nodeName": bound_to}
                }))
                .unwrap(),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn a_placed_pod_carries_its_node() {
        let base = Snapshot::build(objects(""));
        let pod = placed(&base, "ns", "p", "u1", "n1").unwrap();
        assert_eq!(pod.spec.node_name, "n1");
    }

    #[test]
    fn placing_needs_the_pod_the_uid_and_the_node() {
        let base = Snapshot::build(objects(""));
        assert!(matches!(
            placed(&base, "ns", "nope", "", "n1"),
            Err(AssumeError::UnknownPod(_))
        ));
        assert!(matches!(
            placed(&base, "ns", "p", "other", "n1"),
            Err(AssumeError::UidMismatch { .. })
        ));
        assert!(matches!(
            placed(&base, "ns", "p", "", "n9"),
            Err(AssumeError::UnknownNode(_))
        ));
    }

    #[test]
    fn assumptions_end_when_confirmed_gone_or_expired() {
        let now = Instant::now();
        let later = now + Duration::from_secs(30);
        let pending = Snapshot::build(objects(""));
        let pod = placed(&pending, "ns", "p", "u1", "n1").unwrap();

        let mut a = Assumptions::default();
        a.insert(pod.clone(), later, false);
        assert_eq!(a.reconcile(&pending, now).len(), 1, "still pending: kept");
        assert_eq!(a.reconcile(&Snapshot::build(objects("n1")), now).len(), 0);
        assert_eq!(a.len(), 0, "confirmed by the source");

        a.insert(pod.clone(), later, false);
        assert!(a.reconcile(&Snapshot::default(), now).is_empty());
        assert_eq!(a.len(), 0, "pod gone from the source");

        a.insert(pod, later, false);
        assert!(a.reconcile(&pending, later).is_empty());
        assert_eq!(a.len(), 0, "expired");
    }

    #[test]
    fn a_pod_read_before_the_source_showed_it_stays_until_the_source_catches_up() {
        let now = Instant::now();
        let later = now + Duration::from_secs(30);
        let mut read: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": "40"}
        }))
        .unwrap();
        read = placed_read(&read, "n1");
        let mut a = Assumptions::default();
        a.insert(read, later, true);
        let behind = Snapshot::build(objects("")).with_pods_as_of(39);
        let lacking = |version| Snapshot::default().with_pods_as_of(version);
        assert_eq!(
            a.reconcile(&lacking(39), now).len(),
            1,
            "the watch lags: kept"
        );
        assert_eq!(
            a.reconcile(&behind, now).len(),
            1,
            "shown pending: still ours"
        );
        let mut older = objects("");
        older.pods[0].metadata.uid = "u0".into();
        let older = Snapshot::build(older).with_pods_as_of(39);
        assert_eq!(
            a.reconcile(&older, now).len(),
            1,
            "the view still holds an older pod of that name: kept"
        );
        assert!(a.reconcile(&lacking(40), now).is_empty());
        assert_eq!(a.len(), 0, "caught up and gone: deleted");
    }
}
