//! The one router: probes, the API groups each under its own body limit,
//! and the middleware every request passes through.

use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{Method, StatusCode, Uri};
use axum::middleware::{from_fn, from_fn_with_state};
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

use super::declared_length::RefuseDeclaredOversizeLayer;
use super::middleware::{
    errors_as_json, log_failure, panic_response, record_request, request_span, time_limit,
};
use super::{ApiError, AppState, probes};
use crate::api;

pub fn router(state: AppState) -> Router {
    assemble(
        state,
        api::scheduler_routes(),
        api::admission_routes().merge(api::other_routes()),
    )
}

/// The router around the given API groups (tests pass their own).
fn assemble(
    state: AppState,
    scheduler: Router<AppState>,
    admission_and_other: Router<AppState>,
) -> Router {
    let settings = &state.config.server;
    let scheduler = with_body_limit(scheduler, settings.scheduler_body_limit_bytes);
    let admission_and_other =
        with_body_limit(admission_and_other, settings.admission_body_limit_bytes);
    let timeout = Duration::from_secs(settings.request_timeout_seconds);
    // Outermost first: the id exists before the span, the span before
    // anything logs, metrics see the final status.
    let plumbing = ServiceBuilder::new()
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(request_span)
                .on_failure(log_failure),
        )
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(from_fn_with_state(state.metrics.clone(), record_request))
        .layer(from_fn(errors_as_json))
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(from_fn_with_state(timeout, time_limit));
    Router::new()
        .merge(probes::routes())
        .merge(scheduler)
        .merge(admission_and_other)
        .fallback(no_route)
        .method_not_allowed_fallback(wrong_method)
        // Router::layer (not wrapping the Router) so middleware sees MatchedPath.
        .layer(plumbing)
        .with_state(state)
}

/// Just the probes, for the plain-HTTP `--metrics-listen` port.
pub fn probes_only(state: AppState) -> Router {
    probes::routes()
        .fallback(no_route)
        .method_not_allowed_fallback(wrong_method)
        .with_state(state)
}

/// axum's own extractor limit (2 MB by default) must be raised to ours, or it
/// would cut bodies first; the declared-length check answers early.
fn with_body_limit(routes: Router<AppState>, limit: usize) -> Router<AppState> {
    routes
        .layer(DefaultBodyLimit::max(limit))
        .layer(RefuseDeclaredOversizeLayer::new(limit))
}

async fn no_route(method: Method, uri: Uri) -> ApiError {
    ApiError::not_found(format!("no route for {method} {}", uri.path()))
}

async fn wrong_method(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{method} is not allowed on {}", uri.path()),
    )
}

#[cfg(test)]
#[path = "router_tests.rs"]
mod tests;
