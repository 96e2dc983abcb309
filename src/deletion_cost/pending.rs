//! Pods patched whose new version the view has not shown yet: the view
//! still holds the version the patch was decided on, and deciding again on
//! it would send the same patch again. A patch that failed (the API server
//! refused or did not answer) is tried again after [`RETRY_FAILED`].

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::diff::PodPatch;
use super::patch::PatchOutcome;
use crate::cluster::Snapshot;

pub const RETRY_FAILED: Duration = Duration::from_secs(60);

/// By pod UID: the resourceVersion the patch was decided on, and when a
/// failed one may be sent again.
#[derive(Default)]
pub struct Pending(HashMap<String, (String, Option<Instant>)>);

impl Pending {
    pub fn clear(&mut self) {
        self.0.clear();
    }

    pub fn sent(&mut self, patch: &PodPatch, outcome: PatchOutcome, now: Instant) {
        let retry = (outcome == PatchOutcome::Failed).then(|| now + RETRY_FAILED);
        self.0
            .insert(patch.uid.clone(), (patch.resource_version.clone(), retry));
    }

    /// Whether `patch` was already sent for the version it was decided on
    /// (and, if it failed, its retry is not due yet).
    pub fn waits_for(&self, patch: &PodPatch, now: Instant) -> bool {
        self.0.get(&patch.uid).is_some_and(|(version, retry)| {
            *version == patch.resource_version && retry.is_none_or(|at| now < at)
        })
    }

    /// Drop the pods whose view version moved on (or that are gone).
    pub fn forget_seen(&mut self, snapshot: &Snapshot) {
        self.forget_unless(|uid, version| {
            snapshot
                .pod_by_uid(uid)
                .is_some_and(|r| r.pod.metadata.resource_version == version)
        });
    }

    fn forget_unless(&mut self, still_at: impl Fn(&str, &str) -> bool) {
        self.0.retain(|uid, (version, _)| still_at(uid, version));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patch(uid: &str, version: &str) -> PodPatch {
        PodPatch {
            namespace: "shop".into(),
            name: format!("web-{uid}"),
            uid: uid.into(),
            resource_version: version.into(),
            cost: Some(-1),
        }
    }

    #[test]
    fn an_applied_patch_is_not_sent_again_until_the_view_moves_past_its_version() {
        let mut pending = Pending::default();
        let t0 = Instant::now();
        pending.sent(&patch("a", "7"), PatchOutcome::Applied, t0);
        let much_later = t0 + RETRY_FAILED * 10;
        assert!(pending.waits_for(&patch("a", "7"), much_later));
        assert!(
            !pending.waits_for(&patch("a", "8"), t0),
            "a decision on a newer version is a new patch"
        );
        assert!(!pending.waits_for(&patch("b", "7"), t0));
        pending.forget_unless(|_, version| version == "8");
        assert!(
            !pending.waits_for(&patch("a", "7"), t0),
            "the view moved on"
        );
    }

    #[test]
    fn a_failed_patch_is_tried_again_once_its_retry_is_due() {
        let mut pending = Pending::default();
        let t0 = Instant::now();
        pending.sent(&patch("a", "7"), PatchOutcome::Failed, t0);
        assert!(pending.waits_for(&patch("a", "7"), t0 + RETRY_FAILED / 2));
        assert!(!pending.waits_for(&patch("a", "7"), t0 + RETRY_FAILED));
    }

    #[test]
    fn conflicts_and_gone_pods_wait_for_the_view_as_applied_patches_do() {
        let mut pending = Pending::default();
        let t0 = Instant::now();
        pending.sent(&patch("a", "7"), PatchOutcome::Conflict, t0);
        pending.sent(&patch("b", "3"), PatchOutcome::Gone, t0);
        let much_later = t0 + RETRY_FAILED * 10;
        assert!(pending.waits_for(&patch("a", "7"), much_later));
        assert!(pending.waits_for(&patch("b", "3"), much_later));
        pending.clear();
        assert!(!pending.waits_for(&patch("a", "7"), t0));
    }
}
