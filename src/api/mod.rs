//! The wire edges: each group decodes its requests, calls policy with the
//! current snapshot and encodes the answer. The server mounts each group
//! under its own body limit (see `server::router`).

pub mod admission;
pub mod admission_types;
mod any_case;
pub mod bind;
pub mod extender;
pub mod extender_types;
pub mod preempt;
pub mod scale_in;

use axum::Router;
use axum::routing::post;

use crate::server::AppState;

/// `/scheduler/*`: kube-scheduler's extender calls (large bodies allowed).
pub fn scheduler_routes() -> Router<AppState> {
    Router::new()
        .merge(extender::routes())
        .merge(preempt::routes())
        .route("/scheduler/bind", post(bind::bind))
}

/// `/admission/*`: kube-apiserver's webhook calls: the priority admission
/// webhooks (mutating for pods, validating for PriorityClasses).
pub fn admission_routes() -> Router<AppState> {
    Router::new()
        .route("/admission/priority", post(admission::priority))
        .route("/admission/priorityclass", post(admission::priority_class))
}

/// Everything else people and controllers call (e.g. `/scale-in`).
pub fn other_routes() -> Router<AppState> {
    Router::new().merge(scale_in::routes())
}
