//! The wire edges: decode requests, call pure policy with the current
//! snapshot, encode answers.

pub mod admission;
pub mod admission_types;

use axum::Router;
use axum::routing::post;

use crate::server::AppState;

/// The priority admission webhooks (mutating for pods, validating for
/// PriorityClasses).
pub fn admission_routes() -> Router<AppState> {
    Router::new()
        .route("/admission/priority", post(admission::priority))
        .route("/admission/priorityclass", post(admission::priority_class))
}
