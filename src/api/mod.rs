//! The wire edges: each group decodes its requests, calls policy with the
//! current snapshot and encodes the answer. The server mounts each group
//! under its own body limit (see `server::router`).

use axum::Router;

use crate::server::AppState;

mod any_case;
pub mod preempt;
pub mod scale_in;

/// `/scheduler/*`: kube-scheduler's extender calls (large bodies allowed).
pub fn scheduler_routes() -> Router<AppState> {
    Router::new().merge(preempt::routes())
}

/// `/admission/*`: kube-apiserver's webhook calls.
pub fn admission_routes() -> Router<AppState> {
    Router::new()
}

/// Everything else people and controllers call (e.g. `/scale-in`).
pub fn other_routes() -> Router<AppState> {
    Router::new().merge(scale_in::routes())
}
