//! `POST /scheduler/bind`: kube-scheduler's ExtenderBindingArgs in, its
//! ExtenderBindingResult out (`wire::binding`); the binding is made
//! through the API server unless the guard refuses it.

use axum::Json;
use axum::extract::State;

use crate::cluster::{BindRequest, bind_guard};
use crate::server::{ApiJson, AppState};
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
        Ok(req) => match refused(&state, &req) {
            Some(reason) => {
                tracing::warn!(pod = %format!("{}/{}", req.namespace, req.name), node = %req.node, "binding refused: {reason}");
                state.metrics.bindings_refused.inc();
                Err(reason)
            }
            None => {
                state
                    .binder
                    .bind(&state.view, &req, state.config.live.assume_ttl())
                    .await
            }
        },
        Err(e) => Err(e),
    };
    Json(ExtenderBindingResult {
        error: outcome.err().unwrap_or_default(),
    })
}

/// Why this binding must not be made (nothing is sent to the API server).
fn refused(state: &AppState, req: &BindRequest) -> Option<String> {
    match state.view.current() {
        Some(snapshot) => bind_guard::refusal(&snapshot, req, &state.scheduler_names),
        None => Some("the cluster view is not ready yet".to_string()),
    }
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
