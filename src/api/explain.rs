//! `/debug/explain`: "why is my pod pending?" from the server's current
//! view (live or file). `GET ?namespace=NS&name=POD` explains a pod the view
//! holds, or one the API server has and the view has not shown yet (live
//! mode: created a moment ago); `POST` with a Pod (JSON or YAML) explains
//! one that need not exist yet. JSON by default, the table for `Accept: text/plain`. One pod, one
//! pass over the nodes, on the blocking pool like the extender's verbs.

use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;

use super::json_response;
use super::run::{RunOn, on_current_snapshot};
use crate::api::AppState;
use crate::explain::{
    Explanation, explain, explain_in_view, explain_unseen, namespaces_named, parse_pod,
    render_table,
};
use crate::server::people::Caller;
use crate::server::{ApiError, WholeBody};

pub fn routes() -> Router<AppState> {
    Router::new().route("/debug/explain", get(named).post(posted))
}

#[derive(Debug, Deserialize)]
struct PodName {
    namespace: Option<String>,
    name: Option<String>,
}

/// How the caller wants the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Json,
    Table,
}

impl Format {
    /// The table only when the caller accepts text/plain and not JSON.
    fn of(headers: &HeaderMap) -> Self {
        let accept = headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if accept.contains("text/plain") && !accept.contains("application/json") {
            Self::Table
        } else {
            Self::Json
        }
    }

    fn answer(self, e: &Explanation) -> Response {
        match self {
            Self::Json => json_response(e),
            Self::Table => (
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                render_table(e),
            )
                .into_response(),
        }
    }
}

async fn named(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    query: Result<Query<PodName>, QueryRejection>,
) -> Response {
    let format = Format::of(&headers);
    let query = match query {
        Ok(Query(q)) => q,
        Err(e) => return ApiError::bad_request(e.body_text()).into_response(),
    };
    let given = |v: Option<String>| v.filter(|v| !v.is_empty());
    let (Some(namespace), Some(name)) = (given(query.namespace), given(query.name)) else {
        return ApiError::bad_request(
            "GET /debug/explain needs the query parameters namespace and name \
             (POST a Pod to explain one that does not exist yet)",
        )
        .into_response();
    };
    let answer = async {
        // Asked before looking: a refused caller learns nothing, not even
        // whether the pod exists.
        caller
            .may_read_pods(&state.people, "get", &namespace)
            .await?;
        let (ns, nm) = (namespace.clone(), name.clone());
        let in_view = on_current_snapshot(&state, RunOn::BlockingPool, move |snapshot, config| {
            Ok(explain_in_view(snapshot, &ns, &nm, config))
        })
        .await?;
        let e = match in_view {
            Some(e) => e,
            None => explain_read(&state, &namespace, &name).await?,
        };
        may_read_what_it_names(&state, &caller, &namespace, &e).await?;
        Ok::<_, ApiError>(format.answer(&e))
    };
    answer.await.unwrap_or_else(IntoResponse::into_response)
}

async fn posted(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    WholeBody(body): WholeBody,
) -> Response {
    let format = Format::of(&headers);
    let answer = async {
        let pod = parse_pod(&body)
            .map_err(|e| ApiError::bad_request(format!("request body is not a Pod: {e}")))?;
        let namespace = pod.metadata.namespace.clone();
        caller
            .may_read_pods(&state.people, "get", &namespace)
            .await?;
        let e = on_current_snapshot(&state, RunOn::BlockingPool, move |snapshot, config| {
            Ok(explain(snapshot, &pod, config))
        })
        .await?;
        may_read_what_it_names(&state, &caller, &namespace, &e).await?;
        Ok::<_, ApiError>(format.answer(&e))
    };
    answer.await.unwrap_or_else(IntoResponse::into_response)
}

/// A pod the view has not shown: read from the API server (live) and
/// judged on the view; 404 when the API server has none either, or when
/// there is no API server to ask (a state file is the whole cluster).
async fn explain_read(
    state: &AppState,
    namespace: &str,
    name: &str,
) -> Result<Explanation, ApiError> {
    let not_found = |what: &str| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!(
                "pod {namespace}/{name} {what} \
                 (POST it to /debug/explain to explain a pod that does not exist yet)"
            ),
        )
    };
    let Some(reads) = &state.reads else {
        return Err(not_found("is not in kube-arbiter's cluster view"));
    };
    let pod = reads.pod(namespace, name).await.map_err(|e| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("pod {namespace}/{name} is not in kube-arbiter's cluster view yet, and {e}"),
        )
    })?;
    let Some(pod) = pod else {
        return Err(not_found("does not exist (the API server has no such pod)"));
    };
    on_current_snapshot(state, RunOn::BlockingPool, move |snapshot, config| {
        Ok(explain_unseen(snapshot, &pod, config))
    })
    .await
}

/// The answer names pods of other namespaces (victims, the pods a node's
/// (anti-)affinity failed on): the caller must be allowed to list pods
/// there too, or gets none of it.
async fn may_read_what_it_names(
    state: &AppState,
    caller: &Caller,
    own: &str,
    e: &Explanation,
) -> Result<(), ApiError> {
    for namespace in namespaces_named(e).iter().filter(|n| *n != own) {
        caller
            .may_read_pods(&state.people, "list", namespace)
            .await
            .map_err(|refused| {
                ApiError::new(
                    refused.status,
                    format!(
                        "the explanation names pods in namespace {namespace:?}: {}",
                        refused.message
                    ),
                )
            })?;
    }
    Ok(())
}
