//! The one router: probes, the API groups it is given (`app` gets them
//! from the handlers), each behind its guard and under its own body
//! limit, and the middleware every request passes through.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{Method, StatusCode, Uri};
use axum::middleware::{from_fn, from_fn_with_state};
use tower::ServiceBuilder;
use tower::util::MapResponseLayer;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

use super::middleware::{
    CUT_AT_TIME_LIMIT, errors_as_json, log_failure, over_body_limit, panic_response,
    record_request, request_span, timed_out,
};
use super::{ApiError, ServerState, access, people, probes};

/// The API groups a server mounts, by who may call them
/// (docs/security.md).
pub struct Routes<S> {
    /// `/scheduler/*`: kube-scheduler's extender verbs.
    pub scheduler: Router<S>,
    /// `/admission/*`: kube-apiserver's webhooks.
    pub admission: Router<S>,
    /// What people and tools call (`/scale-in`, `/debug/*`); the server
    /// adds `/metrics`.
    pub people: Router<S>,
}

impl<S: ServerState> Default for Routes<S> {
    fn default() -> Self {
        Self {
            scheduler: Router::new(),
            admission: Router::new(),
            people: Router::new(),
        }
    }
}

pub fn router<S: ServerState>(state: S, routes: Routes<S>) -> Router {
    let metrics = probes::metrics_route().route_layer(from_fn_with_state(
        state.clone(),
        people::metrics_reader::<S>,
    ));
    assemble(
        state,
        routes.scheduler,
        routes.admission,
        routes.people.merge(metrics),
    )
}

/// The router around the given API groups: the extender verbs, the webhooks, and what people and tools call, each
/// behind its own guard (docs/security.md).
fn assemble<S: ServerState>(
    state: S,
    scheduler: Router<S>,
    admission: Router<S>,
    people: Router<S>,
) -> Router {
    let settings = state.settings();
    // The guards sit outside the body limits: a refused caller's body is
    // never read.
    let scheduler = with_body_limit(scheduler, settings.scheduler_body_limit_bytes).layer(
        from_fn_with_state(Arc::clone(state.access()), access::scheduler_only),
    );
    let admission = with_body_limit(admission, settings.admission_body_limit_bytes).layer(
        from_fn_with_state(Arc::clone(state.access()), access::admission_only),
    );
    let people = with_body_limit(people, settings.admission_body_limit_bytes)
        .layer(from_fn_with_state(state.clone(), people::people_only::<S>));
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
        .layer(from_fn_with_state(
            Arc::clone(state.metrics()),
            record_request,
        ))
        .layer(from_fn(errors_as_json))
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(MapResponseLayer::new(move |r| timed_out(r, timeout)))
        .layer(TimeoutLayer::with_status_code(CUT_AT_TIME_LIMIT, timeout));
    Router::new()
        .merge(probes::routes())
        .merge(scheduler)
        .merge(admission)
        .merge(people)
        .fallback(no_route)
        .method_not_allowed_fallback(wrong_method)
        // Router::layer (not wrapping the Router) so middleware sees MatchedPath.
        .layer(plumbing)
        .with_state(state)
}

/// The probes and `/metrics`, unguarded, for the plain-HTTP
/// `--metrics-listen` port (an explicit opt-in; docs/security.md).
pub fn probes_only<S: ServerState>(state: S) -> Router {
    probes::routes()
        .merge(probes::metrics_route())
        .fallback(no_route)
        .method_not_allowed_fallback(wrong_method)
        .with_state(state)
}

/// `limit` on the group's request bodies (tower-http): a declared length
/// over it is refused before any of the body is read, a body without one
/// is cut as it is read. axum's own extractor limit (2 MB by default) is
/// off, or it would cut bodies first.
fn with_body_limit<S: ServerState>(routes: Router<S>, limit: usize) -> Router<S> {
    routes.layer(
        ServiceBuilder::new()
            .layer(MapResponseLayer::new(move |r| over_body_limit(r, limit)))
            .layer(RequestBodyLimitLayer::new(limit))
            .layer(DefaultBodyLimit::disable()),
    )
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
