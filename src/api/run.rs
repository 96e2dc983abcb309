//! Where a handler's CPU work runs ([`RunOn`]), and that work on the
//! current snapshot ([`on_current_snapshot`]).

use std::sync::Arc;

use axum::http::StatusCode;

use crate::cluster::Snapshot;
use crate::config::Config;
use crate::server::ApiError;

use super::AppState;

/// Request bodies up to this size are decided on the async worker that read
/// them: a filter over 5,000 NodeNames (~220 KB, ~0.5 ms of work) or a
/// preempt over 200 nodes (~64 KB). Handing such work to the blocking pool
/// costs two thread wake-ups (about 0.1 ms, more on a busy machine), and
/// even `block_in_place` wakes a thread to take over the worker's queue,
/// which then competes with the split's helper for the other core: the
/// 5,000-name filter measured 5 % faster inline (p50, same run). The HTTPS
/// listener's runtime has one worker (`server::requests_runtime`), so its
/// other connections, probes and reviews included, wait behind such a
/// decision. Larger bodies are decided in place ([`RunOn::InPlace`]).
pub(super) const INLINE_BODY_MAX: usize = 256 << 10;

/// Request bodies up to this size are decided in place; larger ones (a
/// Nodes-mode NodeList, tens of MB and of ms) on the blocking pool, whose
/// two wake-ups are nothing next to that work, while in place such a
/// filter measured ~5 ms slower (of ~52).
pub(super) const IN_PLACE_BODY_MAX: usize = 1 << 20;

/// Which thread runs a request's CPU work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RunOn {
    /// The async worker that read the request, as it is.
    Worker,
    /// This thread, after tokio has handed this worker's other tasks to
    /// another thread (`block_in_place`): for work of a millisecond or
    /// more (a preempt over thousands of nodes), admission reviews and
    /// probes are not held up, and the request does not wait for the two
    /// thread wake-ups of a trip through the blocking pool, which on a
    /// busy machine cost more than the work. A current-thread runtime
    /// cannot do that and uses the blocking pool; the HTTPS listener's
    /// one-worker runtime is multi-thread and can.
    InPlace,
    /// tokio's blocking pool: work of many milliseconds, kept off the
    /// async workers, which also serve admission reviews and probes.
    BlockingPool,
}

impl RunOn {
    /// For a request whose body is `body_len` bytes: on the worker when
    /// small ([`INLINE_BODY_MAX`]), in place up to [`IN_PLACE_BODY_MAX`],
    /// else on the blocking pool.
    pub(super) fn for_body(body_len: usize) -> Self {
        if body_len <= INLINE_BODY_MAX {
            Self::Worker
        } else if body_len <= IN_PLACE_BODY_MAX {
            Self::InPlace
        } else {
            Self::BlockingPool
        }
    }

    /// `work`'s value, computed on this thread kind; `Err` only when the
    /// work panicked on the blocking pool.
    pub(super) async fn run<T: Send + 'static>(
        self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        match self {
            Self::Worker => Ok(work()),
            Self::InPlace if multi_thread_runtime() => Ok(tokio::task::block_in_place(work)),
            Self::InPlace | Self::BlockingPool => {
                tokio::task::spawn_blocking(work).await.map_err(|e| {
                    ApiError::new(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        format!("request handling failed: {e}"),
                    )
                })
            }
        }
    }

    /// [`Self::run`] for work that may await (the in-flight ledger's
    /// wait): awaited here on the worker; otherwise driven to its end on
    /// the thread this names (`block_on` may be used there), so a large
    /// body is decoded and decided off the async workers. Awaited here too
    /// outside a tokio runtime, which has no such thread.
    pub(super) async fn run_async<T: Send + 'static>(
        self,
        work: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, ApiError> {
        if self == Self::Worker {
            return Ok(work.await);
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => self.run(move || runtime.block_on(work)).await,
            Err(_) => Ok(work.await),
        }
    }
}

fn multi_thread_runtime() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

/// `work`'s value on the current snapshot and settings, run `on`; 503
/// when the view is not loaded yet.
pub(super) async fn on_current_snapshot<T: Send + 'static>(
    state: &AppState,
    on: RunOn,
    work: impl FnOnce(&Snapshot, &Config) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let snapshot: Arc<Snapshot> = state.snapshot()?;
    let config = state.config.clone();
    on.run(move || work(&snapshot, &config)).await?
}
