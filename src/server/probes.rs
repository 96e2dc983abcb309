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

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
}

/// The process answers: that is all liveness means here.
async fn healthz() -> &'static str {
    "ok"
}

/// Ready once a cluster view is published; before that every policy answer
/// would be a guess.
async fn readyz(State(state): State<AppState>) -> Result<&'static str, ApiError> {
    state.snapshot().map(|_| "ok")
}

async fn metrics(State(state): State<AppState>) -> Response {
    (
        [(CONTENT_TYPE, METRICS_CONTENT_TYPE)],
        state.metrics.render(&state.view),
    )
        .into_response()
}
