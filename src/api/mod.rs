//! The wire edges: each group decodes its requests, calls policy with the
//! current snapshot and encodes the answer. The server mounts each group
//! under its own body limit (see `server::router`).

pub mod admission;
pub mod admission_types;

use axum::Router;
use axum::routing::post;

use crate::server::AppState;

mod any_case;
pub mod preempt;
pub mod scale_in;

/// `/scheduler/*`: kube-scheduler's extender calls (large bodies allowed).
pub fn scheduler_routes() -> Router<AppState> {
    Router::new().merge(preempt::routes())
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
