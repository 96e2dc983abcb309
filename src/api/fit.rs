//! `POST /debug/fit`: "will it fit?" from the server's current view (live
//! or file). The body is a Deployment, StatefulSet, ReplicaSet, Job or Pod
//! manifest (JSON or YAML); `?replicas=N` overrides its replicas and
//! `?preempt=false` keeps replicas that fit nowhere from preempting. JSON
//! by default, the table for `Accept: text/plain`. Placing replicas is a
//! pass over the nodes per replica, on the blocking pool.

use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::Deserialize;

use super::json_response;
use super::run::{RunOn, on_current_snapshot};
use crate::api::AppState;
use crate::fit::{
    FitAnswer, FitOptions, admit, fit, namespaces_named, parse_manifest, render_table,
};
use crate::server::delegated_auth::Access;
use crate::server::people::Caller;
use crate::server::{ApiError, WholeBody};

/// The most replicas one request may ask to place: each is a pass over
/// every node on the blocking pool, about 2 ms at 5,000 nodes (docs/fit.md),
/// so a question stays within seconds whoever asks it.
pub const MAX_REPLICAS: u32 = 2_000;

pub fn routes() -> Router<AppState> {
    Router::new().route("/debug/fit", post(posted))
}

#[derive(Debug, Deserialize)]
struct Asked {
    replicas: Option<u32>,
    preempt: Option<bool>,
}

fn wants_table(headers: &HeaderMap) -> bool {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    accept.contains("text/plain") && !accept.contains("application/json")
}

async fn posted(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    query: Result<Query<Asked>, QueryRejection>,
    WholeBody(body): WholeBody,
) -> Response {
    let table = wants_table(&headers);
    let answer = async {
        let Query(asked) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
        let mut workload = parse_manifest(&body)
            .map_err(|e| ApiError::bad_request(format!("request body: {e}")))?;
        let replicas = asked.replicas.unwrap_or(workload.replicas);
        if replicas > MAX_REPLICAS {
            return Err(ApiError::bad_request(format!(
                "{replicas} replicas asked; /debug/fit places at most {MAX_REPLICAS} \
                 (the CLI has no limit)"
            )));
        }
        let namespace = workload.namespace.clone();
        // Asked before deciding: a refused caller learns nothing of the view.
        caller
            .may(&state.people, pods("create", Some(namespace.clone())))
            .await?;
        let options = FitOptions {
            replicas: asked.replicas,
            preempt: asked.preempt,
        };
        let answer = on_current_snapshot(&state, RunOn::BlockingPool, move |snapshot, config| {
            admit(&mut workload, snapshot).map_err(ApiError::bad_request)?;
            fit(snapshot, &workload, options, config).map_err(ApiError::bad_request)
        })
        .await?;
        may_read_what_it_names(&state, &caller, &namespace, &answer).await?;
        Ok::<_, ApiError>(if table {
            (
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                render_table(&answer),
            )
                .into_response()
        } else {
            json_response(&answer)
        })
    };
    answer.await.unwrap_or_else(IntoResponse::into_response)
}

fn pods(verb: &'static str, namespace: Option<String>) -> Access {
    Access::Resource {
        verb,
        group: "",
        resource: "pods",
        namespace,
        name: None,
    }
}

/// The answer names pods of other namespaces (victims, the pods a node's
/// (anti-)affinity failed on): victims may come from any namespace, so the
/// caller must be allowed to list pods cluster-wide, or gets none of it.
async fn may_read_what_it_names(
    state: &AppState,
    caller: &Caller,
    own: &str,
    answer: &FitAnswer,
) -> Result<(), ApiError> {
    let named = namespaces_named(answer);
    let Some(other) = named.iter().find(|n| *n != own) else {
        return Ok(());
    };
    caller
        .may(&state.people, pods("list", None))
        .await
        .map_err(|refused| {
            ApiError::new(
                refused.status,
                format!(
                    "the answer names pods in namespace {other:?}: {}",
                    refused.message
                ),
            )
        })
}
