//! `POST /scale-in`: which pods a ReplicaSet controller would delete first,
//! and why; with `preserveSpread`, which pods to delete instead so topology
//! spread holds, and the pod-deletion-cost annotations that make the
//! controller delete exactly those.

use std::collections::BTreeSet;

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::json_response;
use super::run::{RunOn, on_current_snapshot};
use crate::api::AppState;
use crate::cluster::Snapshot;
use crate::config::Config;
use crate::model::meta::POD_DELETION_COST;
use crate::model::{LabelSelector, Pod};
use crate::policy::scale_in::{ScaleIn, ScaleInRequest, SpreadPlan, scale_in};
use crate::server::people::Caller;
use crate::server::{ApiError, ApiJson};

pub fn routes() -> Router<AppState> {
    Router::new().route("/scale-in", post(handle))
}

/// Either the pods themselves, or a namespace and selector to take them
/// from the cluster view.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScaleInBody {
    #[serde(default)]
    pub pods: Option<Vec<Pod>>,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub selector: Option<LabelSelector>,
    pub count: usize,
    #[serde(default)]
    pub preserve_spread: bool,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct ScaleInResponse {
    pub victims: Vec<VictimOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spread: Option<SpreadOut>,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct VictimOut {
    pub name: String,
    pub namespace: String,
    pub uid: String,
    pub reason: String,
}

#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SpreadOut {
    pub constraints: Vec<ConstraintOut>,
    pub deletion_costs: Vec<DeletionCostOut>,
    pub deletion_costs_sufficient: bool,
}

#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConstraintOut {
    pub topology_key: String,
    pub max_skew: i64,
    pub skew_before: i64,
    pub skew_after_upstream: i64,
    pub skew_after: i64,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct DeletionCostOut {
    pub name: String,
    pub namespace: String,
    pub uid: String,
    pub cost: i32,
    pub command: String,
}

async fn handle(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(req): ApiJson<ScaleInBody>,
) -> Response {
    // The answer names the pods of these namespaces, and nothing else.
    for namespace in req.namespaces() {
        if let Err(refused) = caller
            .may_read_pods(&state.people, "list", &namespace)
            .await
        {
            return refused.into_response();
        }
    }
    on_current_snapshot(&state, RunOn::BlockingPool, move |snapshot, config| {
        answer(snapshot, config, &req).map(|out| json_response(&out))
    })
    .await
    .unwrap_or_else(IntoResponse::into_response)
}

impl ScaleInBody {
    /// The namespaces whose pods the request is about.
    fn namespaces(&self) -> BTreeSet<String> {
        let given = self
            .pods
            .iter()
            .flatten()
            .map(|p| match p.metadata.namespace.as_str() {
                "" => "default".to_string(),
                ns => ns.to_string(),
            });
        given.chain(self.namespace.clone()).collect()
    }
}

/// The pods to delete for `req`, from the request or from `snapshot`.
pub fn answer(
    snapshot: &Snapshot,
    config: &Config,
    req: &ScaleInBody,
) -> Result<ScaleInResponse, ApiError> {
    let from_view;
    let pods: Vec<&Pod> = match (&req.pods, &req.namespace, &req.selector) {
        (Some(pods), None, None) => pods.iter().collect(),
        (None, Some(ns), Some(selector)) => {
            selector
                .validate()
                .map_err(|e| ApiError::bad_request(format!("selector: {e}")))?;
            from_view = snapshot
                .pods_in_namespace(ns)
                .iter()
                .filter(|r| selector.matches(&r.pod.metadata.labels))
                .map(|r| r.pod.clone())
                .collect::<Vec<_>>();
            from_view.iter().map(|p| &**p).collect()
        }
        _ => {
            return Err(ApiError::bad_request(
                "give either \"pods\", or \"namespace\" and \"selector\"",
            ));
        }
    };
    let choice = ScaleInRequest {
        count: req.count,
        preserve_spread: req
            .preserve_spread
            .then_some(&config.scheduling.default_spread_constraints),
        now: Timestamp::now(),
    };
    let out = scale_in(snapshot, &pods, choice);
    Ok(encode(out))
}

fn encode(out: ScaleIn) -> ScaleInResponse {
    ScaleInResponse {
        victims: out
            .victims
            .into_iter()
            .map(|v| VictimOut {
                name: v.pod.metadata.name.clone(),
                namespace: v.pod.metadata.namespace.clone(),
                uid: v.pod.metadata.uid.clone(),
                reason: v.reason,
            })
            .collect(),
        spread: out.spread.map(encode_spread),
    }
}

fn encode_spread(plan: SpreadPlan) -> SpreadOut {
    SpreadOut {
        constraints: plan
            .constraints
            .into_iter()
            .map(|c| ConstraintOut {
                topology_key: c.topology_key,
                max_skew: c.max_skew,
                skew_before: c.before,
                skew_after_upstream: c.after_upstream,
                skew_after: c.after,
            })
            .collect(),
        deletion_costs: plan
            .deletion_costs
            .into_iter()
            .map(|c| {
                let meta = &c.pod.metadata;
                DeletionCostOut {
                    name: meta.name.clone(),
                    namespace: meta.namespace.clone(),
                    uid: meta.uid.clone(),
                    cost: c.cost,
                    command: format!(
                        "kubectl annotate pod -n {} {} {POD_DELETION_COST}={} --overwrite",
                        meta.namespace, meta.name, c.cost
                    ),
                }
            })
            .collect(),
        deletion_costs_sufficient: plan.costs_sufficient,
    }
}
