//! The handlers: each group decodes its requests (`wire`), calls policy with the
//! current snapshot and encodes the answer. [`routes`] hands the groups to
//! the server, which mounts each behind its guard and body limit.

pub mod admission;
pub mod bind;
mod chunks_body;
pub mod explain;
pub mod extender;
mod extender_verdicts;
pub mod fit;
mod in_flight;
pub mod preempt;
pub mod preempt_unknown;
pub mod scale_in;
mod scale_in_plan;
mod split_body;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;

use crate::cluster::Snapshot;
use crate::config::Config;
use crate::server::{ApiError, AppState, Routes};

/// Every route group, for `server::router`: `/scheduler/bind` only when
/// `bind_verb` (it is left out with `--disable-bind-verb`).
pub fn routes(bind_verb: bool) -> Routes {
    let scheduler = if bind_verb {
        decision_routes().merge(bind_routes())
    } else {
        decision_routes()
    };
    Routes {
        scheduler,
        admission: admission_routes(),
        people: other_routes(),
    }
}

/// filter, prioritize, preempt: answers only, no write.
fn decision_routes() -> Router<AppState> {
    Router::new()
        .merge(extender::routes())
        .merge(preempt::routes())
}

/// `/scheduler/bind`: the one verb that writes (a Binding through the API
/// server).
fn bind_routes() -> Router<AppState> {
    Router::new().route("/scheduler/bind", post(bind::bind))
}

/// `/admission/*`: kube-apiserver's webhook calls: the priority admission
/// webhooks (mutating for pods and PodGroups, validating for
/// PriorityClasses).
fn admission_routes() -> Router<AppState> {
    Router::new()
        .route("/admission/priority", post(admission::priority))
        .route(
            "/admission/podgroup-priority",
            post(admission::pod_group_priority),
        )
        .route(
            "/admission/podgroup-priority-and-policy",
            post(admission::pod_group_priority_and_policy),
        )
        .route("/admission/priorityclass", post(admission::priority_class))
}

/// Everything else people and controllers call (e.g. `/scale-in`,
/// `/debug/explain`, `/debug/fit`).
fn other_routes() -> Router<AppState> {
    Router::new()
        .merge(scale_in::routes())
        .merge(scale_in_plan::routes())
        .merge(explain::routes())
        .merge(fit::routes())
}

/// Request bodies up to this size are decided on the async worker that read
/// them: a filter over 5,000 NodeNames (~220 KB, ~0.5 ms of work) or a
/// preempt over 200 nodes (~64 KB). Handing such work to the blocking pool
/// costs two thread wake-ups (about 0.1 ms, more on a busy machine), and
/// even `block_in_place` wakes a thread to take over the worker's queue,
/// which then competes with the split's helper for the other core: the
/// 5,000-name filter measured 5 % faster inline (p50, same run). The HTTPS
/// listener's runtime has one worker (`server::requests_runtime`), so its
/// other connections, probes and reviews included, wait behind such a
/// decision. Larger bodies are decided in place ([`run_in_place`]).
const INLINE_BODY_MAX: usize = 256 << 10;

/// Request bodies up to this size are decided in place; larger ones (a
/// Nodes-mode NodeList, tens of MB and of ms) on the blocking pool, whose
/// two wake-ups are nothing next to that work, while in place such a
/// filter measured ~5 ms slower (of ~52).
const IN_PLACE_BODY_MAX: usize = 1 << 20;

/// `work` for a request whose body is `body_len` bytes: inline when small
/// ([`INLINE_BODY_MAX`]), in place up to [`IN_PLACE_BODY_MAX`], else on the
/// blocking pool.
async fn run_sized(body_len: usize, work: impl FnOnce() -> Response + Send + 'static) -> Response {
    if body_len <= INLINE_BODY_MAX {
        return work();
    }
    if body_len <= IN_PLACE_BODY_MAX {
        return run_in_place(work).await;
    }
    run_blocking(work).await
}

/// [`run_sized`] for work that may await (the in-flight ledger's wait):
/// awaited here when the body is small; otherwise driven to its end on the
/// thread [`run_sized`] picks (`block_on` may be used there), so a large
/// body is decoded and decided off the async workers. Awaited here too
/// outside a tokio runtime, which has no such thread.
async fn run_sized_async(
    body_len: usize,
    work: impl Future<Output = Response> + Send + 'static,
) -> Response {
    if body_len <= INLINE_BODY_MAX {
        return work.await;
    }
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => run_sized(body_len, move || runtime.block_on(work)).await,
        Err(_) => work.await,
    }
}

/// `work` of a millisecond or more (a preempt over thousands of nodes) on
/// this thread, after tokio has handed this worker's other tasks to another
/// thread (`block_in_place`): admission reviews and probes are not held
/// up, and the request does not wait for the two thread wake-ups of a trip
/// through the blocking pool, which on a busy machine cost more than the
/// work. A current-thread runtime cannot do that and uses the blocking
/// pool; the HTTPS listener's one-worker runtime is multi-thread and can.
async fn run_in_place(work: impl FnOnce() -> Response + Send + 'static) -> Response {
    let multi_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if multi_thread {
        return tokio::task::block_in_place(work);
    }
    run_blocking(work).await
}

/// Deciding over thousands of nodes or pods is CPU work of a millisecond or
/// more: keep it off the async workers, which also serve admission reviews
/// and probes.
async fn run_blocking(work: impl FnOnce() -> Response + Send + 'static) -> Response {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("request handling failed: {e}"),
        )
        .into_response()
    })
}

/// `work` on the current snapshot and settings, on the blocking pool; a
/// view that is not loaded yet, or `work`'s error, becomes the JSON error
/// answer.
async fn on_snapshot(
    state: &AppState,
    work: impl FnOnce(&Snapshot, &Config) -> Result<Response, ApiError> + Send + 'static,
) -> Response {
    match with_snapshot(state, work) {
        Ok(work) => run_blocking(work).await,
        Err(not_ready) => not_ready.into_response(),
    }
}

/// `work`'s value on the current snapshot and settings, computed on the
/// blocking pool (for handlers that check the answer before sending it).
async fn decide_on_snapshot<T: Send + 'static>(
    state: &AppState,
    work: impl FnOnce(&Snapshot, &Config) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let snapshot = state.snapshot()?;
    let config = state.config.clone();
    tokio::task::spawn_blocking(move || work(&snapshot, &config))
        .await
        .map_err(|e| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("request handling failed: {e}"),
            )
        })?
}

/// [`on_snapshot`] for a request body of `body_len` bytes, run as
/// [`run_sized`] runs it.
async fn on_snapshot_sized(
    state: &AppState,
    body_len: usize,
    work: impl FnOnce(&Snapshot, &Config) -> Result<Response, ApiError> + Send + 'static,
) -> Response {
    match with_snapshot(state, work) {
        Ok(work) => run_sized(body_len, work).await,
        Err(not_ready) => not_ready.into_response(),
    }
}

/// `work` bound to the current snapshot and settings, its error answered;
/// `Err` when the view is not loaded yet.
fn with_snapshot(
    state: &AppState,
    work: impl FnOnce(&Snapshot, &Config) -> Result<Response, ApiError> + Send + 'static,
) -> Result<impl FnOnce() -> Response + Send + 'static, ApiError> {
    let snapshot = state.snapshot()?;
    let config = state.config.clone();
    Ok(move || work(&snapshot, &config).unwrap_or_else(IntoResponse::into_response))
}

/// `body`, already JSON, as a 200 answer.
fn json_bytes(body: Vec<u8>) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// A JSON answer written in chunks, sent as they are ([`chunks_body`]);
/// one chunk is sent as any one-piece answer is.
fn json_chunks(mut chunks: Vec<bytes::Bytes>) -> Response {
    let body = if chunks.len() == 1 {
        axum::body::Body::from(chunks.remove(0))
    } else {
        axum::body::Body::new(chunks_body::ChunksBody::new(chunks))
    };
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn json_response(value: &impl serde::Serialize) -> Response {
    match serde_json::to_vec(value) {
        Ok(bytes) => json_bytes(bytes),
        Err(e) => ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot encode the answer: {e}"),
        )
        .into_response(),
    }
}
