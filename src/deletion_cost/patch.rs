//! One pod's deletion-cost patch, sent within a deadline, and what came
//! of it.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod as ApiPod;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use super::diff::PodPatch;
use crate::model::meta::{DELETION_COST_MANAGED, POD_DELETION_COST};

/// The longest a patch may take. A merge patch of two annotations answers
/// in milliseconds; the API client sets no read timeout, and the writer
/// sends one patch at a time, so an unanswered one would hold every patch
/// after it.
pub const PATCH_TIMEOUT: Duration = Duration::from_secs(5);

/// What the API server made of a patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchOutcome {
    Applied,
    /// 409, or 422 for a UID that no longer matches: the pod changed.
    Conflict,
    /// 404: the pod is gone.
    Gone,
    /// Refused, or not answered (in time): worth another try later.
    Failed,
}

impl PatchOutcome {
    /// The `result` label of `kube_arbiter_scale_in_patches_total`.
    pub fn label(self) -> &'static str {
        match self {
            Self::Applied => "applied",
            Self::Conflict => "conflict",
            Self::Gone => "gone",
            Self::Failed => "failed",
        }
    }
}

/// The pod's two annotations as kube-arbiter writes them: `cost` and the
/// companion naming the same value, or (`None`) both removed.
pub(super) fn annotations(cost: Option<i32>) -> serde_json::Value {
    let value = cost.map_or(serde_json::Value::Null, |c| c.to_string().into());
    json!({POD_DELETION_COST: value, DELETION_COST_MANAGED: value})
}

/// One JSON merge patch of the pod's two annotations ([`annotations`]);
/// the pod's UID in the patch keeps it from landing on a pod recreated
/// under the same name.
/// Bounded by `within` (at most [`PATCH_TIMEOUT`]).
pub async fn send(client: &kube::Client, patch: &PodPatch, within: Duration) -> PatchOutcome {
    let body = json!({"metadata": {"uid": patch.uid, "annotations": annotations(patch.cost)}});
    let api: Api<ApiPod> = Api::namespaced(client.clone(), &patch.namespace);
    let (params, body) = (PatchParams::default(), Patch::Merge(&body));
    let sent = api.patch_metadata(&patch.name, &params, &body);
    let pod = format!("{}/{}", patch.namespace, patch.name);
    match tokio::time::timeout(within.min(PATCH_TIMEOUT), sent).await {
        Ok(Ok(_)) => PatchOutcome::Applied,
        Ok(Err(kube::Error::Api(s))) if s.code == 409 || s.code == 422 => PatchOutcome::Conflict,
        Ok(Err(kube::Error::Api(s))) if s.code == 404 => PatchOutcome::Gone,
        Ok(Err(e)) => {
            let error = crate::cluster::live::describe(&e);
            if super::refused(&e) {
                tracing::warn!(%pod, %error, "cannot patch the pod's deletion cost");
            } else {
                tracing::debug!(%pod, %error, "cannot patch the pod's deletion cost");
            }
            PatchOutcome::Failed
        }
        Err(_) => {
            tracing::debug!(%pod, "the API server did not answer the deletion-cost patch in time");
            PatchOutcome::Failed
        }
    }
}
