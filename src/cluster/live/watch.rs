//! One watch per kind, on kube-runtime's watcher: list, then watch from the
//! list's resourceVersion with bookmarks; a watch that ends quietly (server
//! timeout) resumes from the last version. Any error (410 Gone included)
//! ends this watcher: after a backoff a fresh one relists the kind, and the
//! completed relist is what tells the writer the kind is in step again.
//! The backoff is cut short when the writer sees the API server answer
//! again after an outage, so no kind sleeps through the recovery.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::api::Api;
use kube::core::ApiResource;
use kube::runtime::watcher;
use tokio::sync::{Notify, mpsc};

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

/// Why a watch ended, which decides how loudly it is logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// 410 Gone: the watch fell behind the server's history; routine.
    Expired,
    /// No answer: connection refused, reset or timed out, TLS failed.
    Unreachable,
    /// The server answered with an error (500, 403, an undecodable object).
    Refused,
}

impl Failure {
    fn of(error: &watcher::Error) -> Self {
        match error {
            watcher::Error::WatchError(status) if status.code == 410 => Self::Expired,
            watcher::Error::InitialListFailed(e)
            | watcher::Error::WatchStartFailed(e)
            | watcher::Error::WatchFailed(e) => match e {
                kube::Error::HyperError(_)
                | kube::Error::Service(_)
                | kube::Error::ReadEvents(_) => Self::Unreachable,
                kube::Error::Api(status) if status.code == 410 => Self::Expired,
                _ => Self::Refused,
            },
            _ => Self::Refused,
        }
    }
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

/// Exponential backoff between relists, reset by a completed list.
struct Backoff {
    next: Duration,
}

const BACKOFF_FIRST: Duration = Duration::from_millis(200);
const BACKOFF_MAX: Duration = Duration::from_secs(30);

impl Backoff {
    fn new() -> Self {
        Self {
            next: BACKOFF_FIRST,
        }
    }

    fn reset(&mut self) {
        self.next = BACKOFF_FIRST;
    }

    fn step(&mut self) -> Duration {
        let now = self.next;
        self.next = (self.next * 2).min(BACKOFF_MAX);
        now
    }
}

/// Between half and all of `d`, by `unit` in [0, 1): the kinds' retries
/// spread out instead of reaching a recovering API server together, and
/// the first of them, which wakes the others, comes sooner.
fn jittered(d: Duration, unit: f64) -> Duration {
    d.mul_f64(0.5 + 0.5 * unit.clamp(0.0, 1.0))
}

/// A random number in [0, 1) from std's randomly keyed hasher.
fn random_unit() -> f64 {
    use std::hash::BuildHasher;
    let bits = std::collections::hash_map::RandomState::new().hash_one(0u8);
    (bits >> 11) as f64 / (1u64 << 53) as f64
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
    let mut backoff = Backoff::new();
    loop {
        let stream = watcher(api.clone(), watcher::Config::default().any_semantic());
        let mut stream = std::pin::pin!(stream);
        let (failure, error) = loop {
            let event = match stream.next().await {
                Some(Ok(e)) => e,
                Some(Err(e)) => break (Failure::of(&e), describe(&e)),
                // kube's watcher never ends; if it did, relisting is safe.
                None => break (Failure::Expired, "watch stream ended".to_string()),
            };
            let event = match event {
                watcher::Event::Init => KindEvent::Init,
                watcher::Event::InitApply(o) => KindEvent::InitApply(Arc::new(o.object)),
                watcher::Event::InitDone => {
                    backoff.reset();
                    KindEvent::InitDone
                }
                watcher::Event::Apply(o) => KindEvent::Apply(Arc::new(o.object)),
                watcher::Event::Delete(o) => KindEvent::Delete(Arc::new(o.object)),
            };
            if tx.send(Report::Event(wrap(event))).await.is_err() {
                return;
            }
        };
        let retry_in = jittered(backoff.step(), random_unit());
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
    fn backoff_doubles_up_to_a_cap_and_resets() {
        let mut b = Backoff::new();
        assert_eq!(b.step(), Duration::from_millis(200));
        assert_eq!(b.step(), Duration::from_millis(400));
        for _ in 0..20 {
            b.step();
        }
        assert_eq!(b.step(), BACKOFF_MAX);
        b.reset();
        assert_eq!(b.step(), BACKOFF_FIRST);
    }

    #[test]
    fn failures_are_told_apart_by_whether_the_server_answered() {
        use kube::core::Status;
        let status = |code| Status::failure("m", "r").with_code(code).boxed();
        let refused = || -> Box<dyn std::error::Error + Send + Sync> {
            Box::new(std::io::Error::from(std::io::ErrorKind::ConnectionRefused))
        };
        let cases = [
            (watcher::Error::WatchError(status(410)), Failure::Expired),
            (
                watcher::Error::InitialListFailed(kube::Error::Api(status(410))),
                Failure::Expired,
            ),
            (
                watcher::Error::WatchStartFailed(kube::Error::Service(refused())),
                Failure::Unreachable,
            ),
            (
                watcher::Error::WatchFailed(kube::Error::ReadEvents(std::io::Error::other(
                    "peer closed connection without sending TLS close_notify",
                ))),
                Failure::Unreachable,
            ),
            (
                watcher::Error::InitialListFailed(kube::Error::Api(status(500))),
                Failure::Refused,
            ),
            (watcher::Error::WatchError(status(403)), Failure::Refused),
            (watcher::Error::NoResourceVersion, Failure::Refused),
        ];
        for (error, want) in cases {
            assert_eq!(Failure::of(&error), want, "{error}");
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
    fn jitter_keeps_half_to_all_of_the_backoff() {
        let d = Duration::from_secs(30);
        assert_eq!(jittered(d, 0.0), Duration::from_secs(15));
        assert_eq!(jittered(d, 0.5), Duration::from_millis(22_500));
        assert!(jittered(d, 0.999_999) <= d);
        let draws: Vec<f64> = (0..64).map(|_| random_unit()).collect();
        assert!(draws.iter().all(|u| (0.0..1.0).contains(u)), "{draws:?}");
        assert!(
            draws.iter().any(|u| *u != draws[0]),
            "draws differ: {draws:?}"
        );
    }
}
