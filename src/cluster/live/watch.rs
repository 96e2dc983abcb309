//! One watch per kind, on kube-runtime's watcher: list, then watch from the
//! list's resourceVersion with bookmarks; a watch that ends quietly (server
//! timeout) resumes from the last version. Any error (410 Gone included)
//! ends this watcher: after a backoff a fresh one relists the kind, and the
//! completed relist is what tells the writer the kind is in step again.
//! The backoff is cut short when the writer sees the API server answer
//! again after an outage, so no kind sleeps through the recovery.
//! A kind the server does not serve (404, [`Kind::may_be_unserved`]) is
//! reported listed and empty, said once at info, and asked for again on
//! the same backoff, quietly, until it is served.

use std::sync::Arc;
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBackoff, ExponentialBuilder};
use futures::StreamExt;
use kube::api::Api;
use kube::core::ApiResource;
use kube::runtime::watcher;
use tokio::sync::{Notify, mpsc};

use super::failure::Failure;
use super::ingest::{Ingested, LeanObject};
use super::store::{KindEvent, Update};
use crate::cluster::Kind;

/// What a watch task tells the writer.
#[derive(Debug)]
pub enum Report {
    Event(Update),
    /// The kind's watch failed; it relists after `retry_in`.
    Failed {
        kind: Kind,
        failure: Failure,
        error: String,
        retry_in: Duration,
    },
}

/// The error and its sources, each said once ("client error (Connect)"
/// alone does not say the connection was refused).
pub(crate) fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}

const BACKOFF_FIRST: Duration = Duration::from_millis(200);
const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// The waits before each relist, reset by a completed list: 200 ms
/// doubling up to 30 s, each drawn between half of it and all of it, so the
/// kinds' retries spread out instead of reaching a recovering API server
/// together, and the first of them, which wakes the others, comes sooner.
/// backon adds up to one more delay at random, so it starts from halves.
fn relist_delays() -> ExponentialBackoff {
    ExponentialBuilder::default()
        .with_min_delay(BACKOFF_FIRST / 2)
        .with_max_delay(BACKOFF_MAX / 2)
        .with_jitter()
        .without_max_times()
        .build()
}

/// Whether `error` says the server does not serve the kind at all: 404
/// to its list or watch (the group or version is off, or too new for the
/// cluster).
fn not_served(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::InitialListFailed(kube::Error::Api(status))
        | watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | watcher::Error::WatchFailed(kube::Error::Api(status)) => status.code == 404,
        watcher::Error::WatchError(status) => status.code == 404,
        _ => false,
    }
}

/// Watch one kind until the writer goes away; `retry_now` ends a backoff
/// early.
pub async fn run<T: LeanObject>(
    client: kube::Client,
    resource: ApiResource,
    kind: Kind,
    wrap: fn(KindEvent<T>) -> Update,
    tx: mpsc::Sender<Report>,
    retry_now: Arc<Notify>,
) {
    let api: Api<Ingested<T>> = Api::all_with(client, &resource);
    let mut delays = relist_delays();
    // The server said it does not serve the kind, and the view was told
    // it has none.
    let mut unserved = false;
    loop {
        let stream = watcher(api.clone(), watcher::Config::default().any_semantic());
        let mut stream = std::pin::pin!(stream);
        // No failure: the kind is not served.
        let (failure, error) = loop {
            let event = match stream.next().await {
                Some(Ok(e)) => e,
                Some(Err(e)) if kind.may_be_unserved() && not_served(&e) => {
                    break (None, describe(&e));
                }
                Some(Err(e)) => break (Some(Failure::of_watch(&e)), describe(&e)),
                // kube's watcher never ends; if it did, relisting is safe.
                None => break (Some(Failure::Expired), "watch stream ended".to_string()),
            };
            let event = match event {
                watcher::Event::Init => KindEvent::Init,
                watcher::Event::InitApply(o) => KindEvent::InitApply(Arc::new(o.object)),
                watcher::Event::InitDone => {
                    delays = relist_delays();
                    if std::mem::take(&mut unserved) {
                        tracing::info!(
                            kind = kind.name(),
                            "the API server serves {}s now; watching them",
                            kind.name()
                        );
                    }
                    KindEvent::InitDone
                }
                watcher::Event::Apply(o) => KindEvent::Apply(Arc::new(o.object)),
                watcher::Event::Delete(o) => KindEvent::Delete(Arc::new(o.object)),
            };
            if tx.send(Report::Event(wrap(event))).await.is_err() {
                return;
            }
        };
        let retry_in = delays.next().unwrap_or(BACKOFF_MAX);
        let Some(failure) = failure else {
            if !unserved {
                unserved = true;
                tracing::info!(
                    kind = kind.name(), api = %resource.api_version, %error,
                    "the API server does not serve {}s; going on without them, asking again \
                     with back-off (up to 30s)",
                    kind.name()
                );
                for event in [KindEvent::Init, KindEvent::InitDone] {
                    if tx.send(Report::Event(wrap(event))).await.is_err() {
                        return;
                    }
                }
            }
            tokio::select! {
                () = tokio::time::sleep(retry_in) => {}
                () = retry_now.notified() => {}
            }
            continue;
        };
        let report = Report::Failed {
            kind,
            failure,
            error,
            retry_in,
        };
        // Registered before the report is sent, so a wake-up the writer
        // sends right after reading it is not missed.
        let woken = retry_now.notified();
        if tx.send(report).await.is_err() {
            return;
        }
        tokio::select! {
            () = tokio::time::sleep(retry_in) => {}
            () = woken => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relist_waits_double_up_to_a_cap_each_within_its_upper_half() {
        let mut delays = relist_delays();
        let mut full = BACKOFF_FIRST;
        for _ in 0..20 {
            let wait = delays.next().unwrap();
            assert!(
                wait >= full / 2 && wait <= full,
                "{wait:?} outside [{:?}, {full:?}]",
                full / 2
            );
            full = (full * 2).min(BACKOFF_MAX);
        }
        assert_eq!(full, BACKOFF_MAX);
        let first = relist_delays().next().unwrap();
        assert!(first >= BACKOFF_FIRST / 2 && first <= BACKOFF_FIRST);
    }

    #[test]
    fn only_a_404_says_a_kind_is_not_served() {
        use kube::core::Status;
        let status = |code| Status::failure("m", "r").with_code(code).boxed();
        let cases = [
            (
                watcher::Error::InitialListFailed(kube::Error::Api(status(404))),
                true,
            ),
            (
                watcher::Error::WatchStartFailed(kube::Error::Api(status(404))),
                true,
            ),
            (watcher::Error::WatchError(status(404)), true),
            (
                watcher::Error::InitialListFailed(kube::Error::Api(status(403))),
                false,
            ),
            (watcher::Error::WatchError(status(410)), false),
            (watcher::Error::NoResourceVersion, false),
        ];
        for (error, want) in cases {
            assert_eq!(not_served(&error), want, "{error}");
        }
    }

    #[test]
    fn an_error_is_described_with_its_sources_once() {
        let inner = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let e = watcher::Error::WatchStartFailed(kube::Error::Service(Box::new(inner)));
        let text = describe(&e);
        assert!(
            text.starts_with("failed to start watching object: ServiceError"),
            "{text}"
        );
        assert_eq!(text.matches("connection refused").count(), 1, "{text}");
    }

    #[test]
    fn each_watch_draws_its_own_waits() {
        let firsts: Vec<Duration> = (0..64).filter_map(|_| relist_delays().next()).collect();
        assert_eq!(firsts.len(), 64);
        assert!(
            firsts.iter().any(|d| *d != firsts[0]),
            "all equal: {firsts:?}"
        );
    }
}
