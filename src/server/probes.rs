//! What kubelet and Prometheus call: liveness, readiness, metrics. Served on
//! the HTTPS port and, with `--metrics-listen`, on a plain-HTTP port too.

use axum::Router;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::{ApiError, AppState};

/// prometheus-client writes the OpenMetrics text format.
const METRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Liveness and readiness: kubelet calls them without credentials.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
}

/// `/metrics`: on the HTTPS port it is guarded like the other routes people
/// and tools call; on `--metrics-listen` it is served as is.
pub fn metrics_route() -> Router<AppState> {
    Router::new().route("/metrics", get(metrics))
}

/// The process answers: that is all liveness means here.
async fn healthz() -> &'static str {
    "ok"
}

/// Ready once a cluster view is published and its source is in step;
/// before that every policy answer would be a guess, and while a watch is
/// out of step too long kube-scheduler should know (its `ignorable` lets
/// scheduling go on without us).
async fn readyz(State(state): State<AppState>) -> Result<&'static str, ApiError> {
    if state.view.is_stale() {
        return Err(ApiError::new(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            "cluster view is stale: a watch of the API server has been out of step too long",
        ));
    }
    state.snapshot().map(|_| "ok")
}

async fn metrics(State(state): State<AppState>) -> Response {
    let in_flight = state.in_flight.len(state.view.current().as_deref());
    state.metrics.in_flight_pods.set(in_flight as i64);
    (
        [(CONTENT_TYPE, METRICS_CONTENT_TYPE)],
        state.metrics.render(&state.view),
    )
        .into_response()
}
