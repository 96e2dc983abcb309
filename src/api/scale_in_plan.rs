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
use crate::model::meta::SCALE_IN;
use crate::policy::scale_in::plan::{
    ConstraintSkew, DeploymentAnnotations, PodCost, WorkloadPlan, plans,
};
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
    workloads: Vec<WorkloadOut>,
}

/// One opted-in ReplicaSet's plan ([`WorkloadPlan`]) as the answer shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct WorkloadOut {
    namespace: String,
    replica_set: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    deployment: Option<String>,
    opted_in_by: String,
    max_scale_in: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    problem: Option<String>,
    pods: Vec<PodCostOut>,
    deletion_order: Vec<String>,
    constraints: Vec<ConstraintSkewOut>,
    keeps_spread: bool,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct PodCostOut {
    name: String,
    current: Option<String>,
    managed: bool,
    desired: Option<i32>,
    users_cost: bool,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ConstraintSkewOut {
    topology_key: String,
    max_skew: i64,
    skew_now: i64,
    skew_after: Vec<i64>,
    guaranteed_skew: i64,
}

impl From<WorkloadPlan> for WorkloadOut {
    fn from(p: WorkloadPlan) -> Self {
        Self {
            namespace: p.namespace,
            replica_set: p.replica_set,
            deployment: p.deployment,
            opted_in_by: p.opted_in_by,
            max_scale_in: p.max_scale_in,
            problem: p.problem,
            pods: p.pods.into_iter().map(PodCostOut::from).collect(),
            deletion_order: p.deletion_order,
            constraints: p
                .constraints
                .into_iter()
                .map(ConstraintSkewOut::from)
                .collect(),
            keeps_spread: p.keeps_spread,
        }
    }
}

impl From<PodCost> for PodCostOut {
    fn from(p: PodCost) -> Self {
        Self {
            name: p.name,
            current: p.current,
            managed: p.managed,
            desired: p.desired,
            users_cost: p.users_cost,
        }
    }
}

impl From<ConstraintSkew> for ConstraintSkewOut {
    fn from(c: ConstraintSkew) -> Self {
        Self {
            topology_key: c.topology_key,
            max_skew: c.max_skew,
            skew_now: c.skew_now,
            skew_after: c.skew_after,
            guaranteed_skew: c.guaranteed_skew,
        }
    }
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
                    .map(WorkloadOut::from)
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The answer's keys: camelCase, a pod's UID and resourceVersion (the
    /// writer's) left out, and no `deployment` or `problem` when there is
    /// none.
    #[test]
    fn a_plan_is_answered_with_camel_case_keys_and_without_the_writers_fields() {
        let plan = WorkloadPlan {
            namespace: "shop".into(),
            replica_set: "web-rs".into(),
            deployment: None,
            opted_in_by: "ReplicaSet shop/web-rs".into(),
            max_scale_in: 1,
            problem: None,
            pods: vec![PodCost {
                name: "web-a1".into(),
                uid: "uid-web-a1".into(),
                resource_version: "7".into(),
                current: None,
                managed: false,
                mark: None,
                desired: Some(-1),
                users_cost: false,
            }],
            deletion_order: vec!["web-a1".into()],
            constraints: vec![ConstraintSkew {
                topology_key: "topology.kubernetes.io/zone".into(),
                max_skew: 1,
                skew_now: 2,
                skew_after: vec![1],
                guaranteed_skew: 1,
            }],
            keeps_spread: true,
        };
        assert_eq!(
            serde_json::to_value(WorkloadOut::from(plan)).unwrap(),
            json!({
                "namespace": "shop",
                "replicaSet": "web-rs",
                "optedInBy": "ReplicaSet shop/web-rs",
                "maxScaleIn": 1,
                "pods": [{"name": "web-a1", "current": null, "managed": false,
                          "desired": -1, "usersCost": false}],
                "deletionOrder": ["web-a1"],
                "constraints": [{"topologyKey": "topology.kubernetes.io/zone", "maxSkew": 1,
                                 "skewNow": 2, "skewAfter": [1], "guaranteedSkew": 1}],
                "keepsSpread": true
            })
        );
    }
}
