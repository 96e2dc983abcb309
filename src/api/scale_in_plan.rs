//! `GET /debug/scale-in?namespace=NS[&name=W]`: the deletion costs
//! kube-arbiter keeps (live) or would keep (file mode) on the opted-in
//! ReplicaSets of a namespace, `W` naming a ReplicaSet or its Deployment:
//! each pod's current and planned cost, the order the ReplicaSet
//! controller deletes in with those costs, and the skew each count of
//! deletions leaves (docs/scale-in-controller.md).

use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::{Deserialize, Serialize};

use super::json_response;
use super::run::{RunOn, on_current_snapshot};
use crate::api::AppState;
use crate::deletion_cost::workloads::{DeploymentAnnotations, WorkloadPlan, plans};
use crate::model::meta::SCALE_IN;
use crate::server::ApiError;
use crate::server::people::Caller;

pub fn routes() -> Router<AppState> {
    Router::new().route("/debug/scale-in", get(handle))
}

#[derive(Debug, Deserialize)]
struct Workload {
    namespace: Option<String>,
    name: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Answer {
    namespace: String,
    /// Whether this server writes the costs (live mode, not turned off);
    /// only the replica holding the Lease does so at a time.
    writes: bool,
    workloads: Vec<WorkloadPlan>,
}

async fn handle(
    State(state): State<AppState>,
    caller: Caller,
    query: Result<Query<Workload>, QueryRejection>,
) -> Response {
    let answer = async {
        let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
        let Some(namespace) = query.namespace.filter(|n| !n.is_empty()) else {
            return Err(ApiError::bad_request(
                "GET /debug/scale-in needs the query parameter namespace (and optionally name: a ReplicaSet or Deployment)",
            ));
        };
        // Asked before looking: a refused caller learns nothing.
        caller
            .may_read_pods(&state.people, "list", &namespace)
            .await?;
        let deployments = state.deployments.clone();
        let writes = deployments.is_some() && state.config.scale_in.manage_deletion_cost;
        let name = query.name.filter(|n| !n.is_empty());
        let ns = namespace.clone();
        let workloads =
            on_current_snapshot(&state, RunOn::BlockingPool, move |snapshot, config| {
                let known = deployments
                    .as_ref()
                    .map(|d| d as &dyn DeploymentAnnotations);
                let all = plans(
                    snapshot,
                    known,
                    &config.scheduling.default_spread_constraints,
                    jiff::Timestamp::now(),
                    Some(&ns),
                );
                Ok(all
                    .into_iter()
                    .filter(|p| {
                        name.as_deref().is_none_or(|n| {
                            p.replica_set == n || p.deployment.as_deref() == Some(n)
                        })
                    })
                    .collect::<Vec<_>>())
            })
            .await?;
        if workloads.is_empty() {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                format!(
                    "no workload in namespace {namespace} matching the request is opted in \
                     in kube-arbiter's cluster view (annotate its Deployment or ReplicaSet with \
                     {SCALE_IN}: preserve-spread; one created or annotated a moment ago shows \
                     once the watch brings it, as it does to the deletion-cost writer)"
                ),
            ));
        }
        Ok(json_response(&Answer {
            namespace,
            writes,
            workloads,
        }))
    };
    answer.await.unwrap_or_else(IntoResponse::into_response)
}
