//! Per-request plumbing around every handler: metrics, the answers of the
//! time and body limits, JSON for every error, panics turned into 500s.

use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tower_http::classify::ServerErrorsFailureClass;
use tower_http::limit::ResponseBody;
use tracing::Span;

use super::ApiError;
use super::metrics::{Metrics, RouteLabel, RouteStatus};

/// Label for requests no route matched, so scans of random paths cannot
/// grow the metric families without bound.
const UNMATCHED_ROUTE: &str = "unmatched";

/// Error bodies longer than this are cut when rewrapped as JSON.
const MAX_ERROR_TEXT: usize = 64 << 10;

/// Count the request and time it under its route template (`/scheduler/filter`,
/// never the raw path).
pub async fn record_request(
    State(metrics): State<Arc<Metrics>>,
    req: Request,
    next: Next,
) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or(UNMATCHED_ROUTE, MatchedPath::as_str)
        .to_owned();
    let start = Instant::now();
    let response = next.run(req).await;
    let seconds = start.elapsed().as_secs_f64();
    metrics
        .requests
        .get_or_create(&RouteStatus {
            route: route.clone(),
            status: response.status().as_u16(),
        })
        .inc();
    metrics
        .request_seconds
        .get_or_create(&RouteLabel { route })
        .observe(seconds);
    response
}

/// The status tower-http's `TimeoutLayer` is told to answer a request
/// still running at the time limit (body reading included) with; nothing
/// else here answers it, so [`timed_out`] knows the cut ones.
pub const CUT_AT_TIME_LIMIT: StatusCode = StatusCode::REQUEST_TIMEOUT;

/// A request cut at the time `limit` (tower-http's bare
/// [`CUT_AT_TIME_LIMIT`]) is answered 503 naming the limit, and logged
/// here, where it is cut.
pub fn timed_out(response: Response, limit: Duration) -> Response {
    if response.status() != CUT_AT_TIME_LIMIT {
        return response;
    }
    let message = format!("request timed out after {}s", limit.as_secs());
    tracing::error!("{message}");
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, message).into_response()
}

/// Every 413 out of a route group is its body limit's: tower-http's bare
/// one for a declared length over `limit` (nothing of the body read), or
/// the extractor's for a body without one cut as it was read. Both are
/// answered naming the limit.
pub fn over_body_limit(
    response: axum::http::Response<ResponseBody<Body>>,
    limit: usize,
) -> Response {
    if response.status() != StatusCode::PAYLOAD_TOO_LARGE {
        return response.map(Body::new);
    }
    let message =
        format!("request body is larger than the limit of {limit} bytes for this endpoint");
    ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, message).into_response()
}

/// tower-http's default logs every 5xx answer at ERROR. A 503 is the
/// answer while the view is not ready or is stale, which its source says
/// once; an ERROR per kubelet probe would bury that. So 503s are debug
/// (a timed-out request is logged where it is cut, above); other failures
/// stay errors.
pub fn log_failure(failure: ServerErrorsFailureClass, latency: Duration, _span: &Span) {
    let latency_ms = latency.as_millis() as u64;
    match failure {
        ServerErrorsFailureClass::StatusCode(StatusCode::SERVICE_UNAVAILABLE) => {
            tracing::debug!(latency_ms, "answered 503")
        }
        other => tracing::error!(classification = %other, latency_ms, "response failed"),
    }
}

/// Give every error answer our `{"error": ".."}` shape, including the ones
/// axum and tower-http make themselves (extractor rejections, 405...).
pub async fn errors_as_json(req: Request, next: Next) -> Response {
    let response = next.run(req).await;
    let is_error = response.status().is_client_error() || response.status().is_server_error();
    if !is_error || is_json(response.headers().get(CONTENT_TYPE)) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, MAX_ERROR_TEXT)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
        .unwrap_or_default();
    let message = if text.is_empty() {
        parts
            .status
            .canonical_reason()
            .unwrap_or("request failed")
            .to_lowercase()
    } else {
        text
    };
    let (json_parts, json_body) = ApiError::new(parts.status, message)
        .into_response()
        .into_parts();
    parts.headers.remove(CONTENT_LENGTH);
    parts.headers.extend(json_parts.headers);
    Response::from_parts(parts, json_body)
}

fn is_json(content_type: Option<&HeaderValue>) -> bool {
    content_type
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
}

/// A handler panicked: the client gets a 500, the log gets the panic.
pub fn panic_response(panic: Box<dyn Any + Send + 'static>) -> Response {
    let detail = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("(no message)");
    tracing::error!(panic = detail, "request handler panicked");
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal error").into_response()
}

/// The span every log line of a request is written in.
pub fn request_span(req: &Request) -> Span {
    let id = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-");
    tracing::info_span!("request", request_id = id, method = %req.method(), path = %req.uri().path())
}
