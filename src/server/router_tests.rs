//! The plumbing every route gets, driven in-process with test routes in
//! the API groups (the real groups are filled by the API modules).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{Request, StatusCode, header};
use axum::routing::{get, post};
use tower::ServiceExt;

use super::{Routes, assemble, router};
use crate::cluster::{ClusterView, Snapshot};
use crate::config::ServerSettings;
use crate::server::access::{AccessRules, Callers};
use crate::server::metrics::Metrics;
use crate::server::people::PeopleAuth;
use crate::server::{ApiError, ApiJson, ServerState};

const SCHEDULER_LIMIT: usize = 4 << 20;
const ADMISSION_LIMIT: usize = 1 << 20;

/// What the router reads of a state: ready once its view is published.
#[derive(Clone)]
struct TestState {
    view: Arc<ClusterView>,
    settings: ServerSettings,
    access: Arc<AccessRules>,
    people: PeopleAuth,
    metrics: Arc<Metrics>,
}

impl TestState {
    fn with_access(mut self, access: AccessRules) -> Self {
        self.access = Arc::new(access);
        self
    }
}

impl ServerState for TestState {
    fn settings(&self) -> &ServerSettings {
        &self.settings
    }

    fn access(&self) -> &Arc<AccessRules> {
        &self.access
    }

    fn people(&self) -> &PeopleAuth {
        &self.people
    }

    fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    fn readiness(&self) -> Result<(), ApiError> {
        self.view
            .current()
            .map(|_| ())
            .ok_or_else(ApiError::not_ready)
    }

    fn metrics_text(&self) -> String {
        self.metrics.render(&self.view)
    }
}

fn state(ready: bool) -> TestState {
    let view = Arc::new(ClusterView::new());
    if ready {
        view.publish(Snapshot::default());
    }
    TestState {
        view,
        settings: ServerSettings {
            scheduler_body_limit_bytes: SCHEDULER_LIMIT,
            admission_body_limit_bytes: ADMISSION_LIMIT,
            request_timeout_seconds: 1,
            ..ServerSettings::default()
        },
        // The plumbing tests call the scheduler routes in-process, with no
        // TLS peer; the guards have tests of their own below.
        access: Arc::new(AccessRules {
            scheduler: Callers::Anyone,
            admission: Callers::Anyone,
        }),
        people: PeopleAuth::default(),
        metrics: Arc::new(Metrics::new()),
    }
}

async fn json_len(ApiJson(v): ApiJson<serde_json::Value>) -> String {
    v.as_str().map_or(0, str::len).to_string()
}

async fn bytes_len(body: Bytes) -> String {
    body.len().to_string()
}

async fn panics() -> &'static str {
    panic!("boom")
}

fn app(state: TestState) -> Router {
    let scheduler = Router::new()
        .route("/scheduler/{verb}", post(json_len))
        .route("/scheduler/raw", post(bytes_len));
    let admission = Router::new()
        .route("/admission/x", post(json_len))
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                "late"
            }),
        )
        .route("/panic", get(panics));
    let people = Router::new().route("/debug/x", get(|| async { "seen" }));
    assemble(state, scheduler, admission, people)
}

/// A JSON string body of about `n` bytes.
fn json_body(n: usize) -> String {
    format!("\"{}\"", "a".repeat(n))
}

async fn send(app: Router, req: Request<Body>) -> (StatusCode, axum::http::HeaderMap, String) {
    let response = app.oneshot(req).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, headers, String::from_utf8(body.to_vec()).unwrap())
}

fn post_json(path: &str, body: String) -> Request<Body> {
    Request::post(path)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body))
        .unwrap()
}

/// A body without Content-Length, as a chunked upload sends it.
fn post_chunked(path: &str, body: String) -> Request<Body> {
    let chunks: Vec<Result<Bytes, std::io::Error>> = body
        .into_bytes()
        .chunks(64 << 10)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    Request::post(path)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(futures::stream::iter(chunks)))
        .unwrap()
}

fn error_of(body: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    v["error"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn unknown_path_is_404_json_naming_it() {
    let (status, _, body) = send(
        app(state(true)),
        Request::get("/nope").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(error_of(&body).contains("/nope"));
}

#[tokio::test]
async fn wrong_method_is_405_json() {
    let (status, headers, body) = send(app(state(true)), post_json("/healthz", "{}".into())).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(headers[header::CONTENT_TYPE], "application/json");
    assert!(error_of(&body).contains("POST"));
}

#[tokio::test]
async fn request_id_is_generated_when_absent() {
    let (_, headers, _) = send(
        app(state(true)),
        Request::get("/healthz").body(Body::empty()).unwrap(),
    )
    .await;
    assert!(!headers["x-request-id"].is_empty());
}

#[tokio::test]
async fn request_id_is_echoed_when_given() {
    let req = Request::get("/healthz")
        .header("x-request-id", "abc-123")
        .body(Body::empty())
        .unwrap();
    let (_, headers, _) = send(app(state(true)), req).await;
    assert_eq!(headers["x-request-id"], "abc-123");
}

#[tokio::test]
async fn readyz_is_503_json_until_a_view_is_published() {
    let req = || Request::get("/readyz").body(Body::empty()).unwrap();
    let (status, _, body) = send(app(state(false)), req()).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(error_of(&body).contains("not ready"));
    let (status, _, _) = send(app(state(true)), req()).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn healthz_is_200_even_before_the_view_is_ready() {
    let (status, _, _) = send(
        app(state(false)),
        Request::get("/healthz").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn scheduler_body_above_axums_2mb_default_but_within_our_limit_is_read() {
    let n = 3 << 20;
    let (status, _, body) = send(
        app(state(true)),
        post_chunked("/scheduler/filter", json_body(n)),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, n.to_string());
}

#[tokio::test]
async fn declared_body_over_the_scheduler_limit_is_413_json() {
    let declared = SCHEDULER_LIMIT + 2;
    let mut request = post_json("/scheduler/filter", json_body(SCHEDULER_LIMIT));
    request
        .headers_mut()
        .insert(header::CONTENT_LENGTH, declared.into());
    let (status, _, body) = send(app(state(true)), request).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(error_of(&body), over_the_limit(SCHEDULER_LIMIT));
}

fn over_the_limit(limit: usize) -> String {
    format!("request body is larger than the limit of {limit} bytes for this endpoint")
}

#[tokio::test]
async fn chunked_body_over_the_limit_is_413_json_for_json_handlers() {
    let (status, _, body) = send(
        app(state(true)),
        post_chunked("/scheduler/filter", json_body(SCHEDULER_LIMIT)),
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(error_of(&body), over_the_limit(SCHEDULER_LIMIT));
}

#[tokio::test]
async fn chunked_body_over_the_limit_is_413_json_for_raw_handlers() {
    let (status, _, body) = send(
        app(state(true)),
        post_chunked("/scheduler/raw", json_body(SCHEDULER_LIMIT)),
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(error_of(&body), over_the_limit(SCHEDULER_LIMIT));
}

#[tokio::test]
async fn admission_routes_have_the_smaller_limit() {
    let n = ADMISSION_LIMIT + 10;
    let (status, _, body) = send(app(state(true)), post_json("/admission/x", json_body(n))).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(error_of(&body), over_the_limit(ADMISSION_LIMIT));
    let (status, _, _) = send(
        app(state(true)),
        post_json("/scheduler/filter", json_body(n)),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn malformed_json_is_400_json() {
    let (status, _, body) = send(
        app(state(true)),
        post_json("/scheduler/filter", "{oops".into()),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(error_of(&body).contains("not valid JSON"));
}

#[tokio::test]
async fn slow_handler_is_answered_503_json_at_the_timeout() {
    let (status, _, body) = send(
        app(state(true)),
        Request::get("/slow").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(error_of(&body), "request timed out after 1s");
}

#[tokio::test]
async fn panicking_handler_is_answered_500_json() {
    let (status, _, body) = send(
        app(state(true)),
        Request::get("/panic").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(error_of(&body), "internal error");
}

#[tokio::test]
async fn metrics_count_requests_by_route_template_and_status() {
    let state = state(true);
    let app = app(state.clone());
    send(app.clone(), post_json("/scheduler/filter", json_body(1))).await;
    send(
        app.clone(),
        Request::get("/no/such/path").body(Body::empty()).unwrap(),
    )
    .await;
    // `/metrics` itself is guarded (people routes); its text is read here.
    let text = state.metrics_text();
    assert!(
        text.contains(
            r#"kube_arbiter_http_requests_total{route="/scheduler/{verb}",status="200"} 1"#
        ),
        "{text}"
    );
    assert!(
        text.contains(r#"kube_arbiter_http_requests_total{route="unmatched",status="404"} 1"#),
        "{text}"
    );
    assert!(
        text.contains("kube_arbiter_http_request_duration_seconds_bucket"),
        "{text}"
    );
}

#[tokio::test]
async fn the_real_router_mounts_the_probes() {
    let (status, _, _) = send(
        router(state(true), Routes::default()),
        Request::get("/healthz").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn by_default_the_extender_verbs_refuse_a_caller_without_certificate_before_reading_the_body()
{
    let secure = state(true).with_access(AccessRules::default());
    // Even a body over the limit is not looked at: the guard answers first.
    let mut request = post_json("/scheduler/filter", json_body(SCHEDULER_LIMIT));
    request.headers_mut().insert(
        header::CONTENT_LENGTH,
        (SCHEDULER_LIMIT + 2).to_string().parse().unwrap(),
    );
    let (status, _, body) = send(app(secure.clone()), request).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(body.contains("client certificate"), "{body}");
    let (status, _, _) = send(app(secure), post_json("/admission/x", json_body(1))).await;
    assert_eq!(status, StatusCode::OK, "the webhooks stay open by default");
}

#[tokio::test]
async fn people_routes_refuse_a_caller_that_is_not_on_loopback_in_file_mode() {
    let (status, _, body) = send(
        app(state(true)),
        Request::get("/debug/x").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
}
