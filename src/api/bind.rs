//! `POST /scheduler/bind`: kube-scheduler's ExtenderBindingArgs in, its
//! ExtenderBindingResult out (`wire::binding`); the binding is made
//! through the API server unless the guard refuses it. kube-scheduler
//! binds a few milliseconds after a pod was created, often before the watch
//! has brought it: what the view has not shown yet (the pod, the pod with
//! this UID, the node) is read from the API server and judged there by the
//! same rules, never refused for the lag alone; a pod so read is assumed
//! in the view once bound, like any other.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;

use crate::api::AppState;
use crate::cluster::BindRequest;
use crate::cluster::bind_guard::{self, InView};
use crate::cluster::live::ReadThrough;
use crate::model::Pod;
use crate::server::ApiJson;
use crate::wire::binding::{ExtenderBindingArgs, ExtenderBindingResult};

/// The binding `args` ask for, or which of the fields it needs are
/// missing.
pub fn bind_request(args: ExtenderBindingArgs) -> Result<BindRequest, String> {
    let missing: Vec<&str> = [
        ("PodName", &args.pod_name),
        ("PodNamespace", &args.pod_namespace),
        ("Node", &args.node),
    ]
    .into_iter()
    .filter(|(_, v)| v.is_empty())
    .map(|(k, _)| k)
    .collect();
    if !missing.is_empty() {
        return Err(format!("binding needs {}", missing.join(", ")));
    }
    Ok(BindRequest {
        namespace: args.pod_namespace,
        name: args.pod_name,
        uid: args.pod_uid,
        node: args.node,
    })
}

pub async fn bind(
    State(state): State<AppState>,
    ApiJson(args): ApiJson<ExtenderBindingArgs>,
) -> Json<ExtenderBindingResult> {
    let outcome = match bind_request(args) {
        Ok(req) => match allowed(&state, &req).await {
            Err(reason) => {
                tracing::warn!(pod = %req.key(), node = %req.node, "binding refused: {reason}");
                state.metrics.bindings_refused.inc();
                // kube-scheduler forgets the pod and schedules it again:
                // decisions waiting for this attempt go ahead.
                state.in_flight.attempt_ended(&req.namespace, &req.name);
                Err(reason)
            }
            Ok(read) => {
                let ttl = state.config.live.assume_ttl();
                let bound = (state.binder)
                    .bind(&state.view, &req, ttl, read.as_deref())
                    .await;
                if bound.is_err() {
                    state.in_flight.attempt_ended(&req.namespace, &req.name);
                }
                bound
            }
        },
        Err(e) => Err(e),
    };
    Json(ExtenderBindingResult {
        error: outcome.err().unwrap_or_default(),
    })
}

/// Whether this binding may be made, with the API server's copy of the
/// pod when the view had not shown it; else why not (nothing is sent to
/// the API server).
async fn allowed(state: &AppState, req: &BindRequest) -> Result<Option<Arc<Pod>>, String> {
    let Some(snapshot) = state.view.current() else {
        return Err("the cluster view is not ready yet".to_string());
    };
    let served = &state.scheduler_names;
    let (pod, node, reason) = match bind_guard::judge_in_view(&snapshot, req, served) {
        InView::Allowed => return Ok(None),
        InView::Refused(reason) => return Err(reason),
        InView::Unseen { pod, node, reason } => (pod, node, reason),
    };
    match &state.reads {
        Some(reads) => confirm(reads, req, served, pod, node).await,
        None => Err(reason),
    }
}

/// The guard's rules on the API server's copy of what the view has not
/// shown: the pod (when `pod`; that copy is the answer), the node (when
/// `node`).
async fn confirm(
    reads: &ReadThrough,
    req: &BindRequest,
    served: &[String],
    pod: bool,
    node: bool,
) -> Result<Option<Arc<Pod>>, String> {
    let (pod_read, node_read) = tokio::join!(
        async {
            match pod {
                true => Some(reads.pod(&req.namespace, &req.name).await),
                false => None,
            }
        },
        async {
            match node {
                true => Some(reads.node(&req.node).await),
                false => None,
            }
        },
    );
    let mut fresh = None;
    if let Some(read) = pod_read {
        fresh = read.map_err(|e| format!("cannot confirm pod {}: {e}", req.key()))?;
        if let Some(reason) = bind_guard::fresh_pod_refusal(fresh.as_deref(), req, served) {
            return Err(reason);
        }
    }
    if let Some(read) = node_read {
        let exists = read
            .map_err(|e| format!("cannot confirm node {}: {e}", req.node))?
            .is_some();
        if let Some(reason) = bind_guard::fresh_node_refusal(exists, req) {
            return Err(reason);
        }
    }
    tracing::debug!(pod = %req.key(), node = %req.node, "bind: not in the view yet, confirmed by the API server");
    Ok(fresh)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binding_without_pod_or_node_names_what_is_missing() {
        let args: ExtenderBindingArgs = serde_json::from_str(r#"{"PodName":"p"}"#).unwrap();
        assert_eq!(
            bind_request(args).unwrap_err(),
            "binding needs PodNamespace, Node"
        );
    }
}
