//! The handlers: each group decodes its requests (`wire`), calls policy with the
//! current snapshot and encodes the answer. [`routes`] hands the groups to
//! the server, which mounts each behind its guard and body limit.

pub mod admission;
pub mod bind;
mod chunks_body;
pub mod explain;
pub mod extender;
mod extender_verdicts;
pub mod fit;
mod in_flight;
pub mod preempt;
pub mod preempt_unknown;
mod run;
pub mod scale_in;
mod scale_in_plan;
mod split_body;
mod state;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;

use crate::server::{ApiError, Routes};

pub use state::{AppState, Warnings};

/// Every route group, for `server::router`: `/scheduler/bind` only when
/// `bind_verb` (it is left out with `--disable-bind-verb`).
pub fn routes(bind_verb: bool) -> Routes<AppState> {
    let scheduler = if bind_verb {
        decision_routes().merge(bind_routes())
    } else {
        decision_routes()
    };
    Routes {
        scheduler,
        admission: admission_routes(),
        people: other_routes(),
    }
}

/// filter, prioritize, preempt: answers only, no write.
fn decision_routes() -> Router<AppState> {
    Router::new()
        .merge(extender::routes())
        .merge(preempt::routes())
}

/// `/scheduler/bind`: the one verb that writes (a Binding through the API
/// server).
fn bind_routes() -> Router<AppState> {
    Router::new().route("/scheduler/bind", post(bind::bind))
}

/// `/admission/*`: kube-apiserver's webhook calls: the priority admission
/// webhooks (mutating for pods and PodGroups, validating for
/// PriorityClasses).
fn admission_routes() -> Router<AppState> {
    Router::new()
        .route("/admission/priority", post(admission::priority))
        .route(
            "/admission/podgroup-priority",
            post(admission::pod_group_priority),
        )
        .route(
            "/admission/podgroup-priority-and-policy",
            post(admission::pod_group_priority_and_policy),
        )
        .route("/admission/priorityclass", post(admission::priority_class))
}

/// Everything else people and controllers call (e.g. `/scale-in`,
/// `/debug/explain`, `/debug/fit`).
fn other_routes() -> Router<AppState> {
    Router::new()
        .merge(scale_in::routes())
        .merge(scale_in_plan::routes())
        .merge(explain::routes())
        .merge(fit::routes())
}

/// `body`, already JSON, as a 200 answer.
fn json_bytes(body: Vec<u8>) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// A JSON answer written in chunks, sent as they are ([`chunks_body`]);
/// one chunk is sent as any one-piece answer is.
fn json_chunks(mut chunks: Vec<bytes::Bytes>) -> Response {
    let body = if chunks.len() == 1 {
        axum::body::Body::from(chunks.remove(0))
    } else {
        axum::body::Body::new(chunks_body::ChunksBody::new(chunks))
    };
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn json_response(value: &impl serde::Serialize) -> Response {
    match serde_json::to_vec(value) {
        Ok(bytes) => json_bytes(bytes),
        Err(e) => ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot encode the answer: {e}"),
        )
        .into_response(),
    }
}
