//! What kubelet and Prometheus call: liveness, readiness, metrics. Served on
//! the HTTPS port and, with `--metrics-listen`, on a plain-HTTP port too.

use axum::Router;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::{ApiError, ServerState};

/// prometheus-client writes the OpenMetrics text format.
const METRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Liveness and readiness: kubelet calls them without credentials.
pub fn routes<S: ServerState>() -> Router<S> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz::<S>))
}

/// `/metrics`: on the HTTPS port it is guarded like the other routes people
/// and tools call; on `--metrics-listen` it is served as is.
pub fn metrics_route<S: ServerState>() -> Router<S> {
    Router::new().route("/metrics", get(metrics::<S>))
}

/// The process answers: that is all liveness means here.
async fn healthz() -> &'static str {
    "ok"
}

/// Ready when the state says its answers are worth asking for
/// ([`ServerState::readiness`]).
async fn readyz<S: ServerState>(State(state): State<S>) -> Result<&'static str, ApiError> {
    state.readiness().map(|()| "ok")
}

async fn metrics<S: ServerState>(State(state): State<S>) -> Response {
    ([(CONTENT_TYPE, METRICS_CONTENT_TYPE)], state.metrics_text()).into_response()
}
