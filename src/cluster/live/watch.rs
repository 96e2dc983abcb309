//! One watch per kind, on kube-runtime's watcher: list, then watch from the
//! list's resourceVersion with bookmarks; a watch that ends quietly (server
//! timeout) resumes from the last version. Any error (410 Gone included)
//! ends this watcher: after a backoff a fresh one relists the kind, and the
//! completed relist is what tells the writer the kind is in step again.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::api::Api;
use kube::core::ApiResource;
use kube::runtime::watcher;
use tokio::sync::mpsc;

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
        error: String,
        retry_in: Duration,
    },
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

/// Watch one kind until the writer goes away.
pub async fn run<T: LeanObject>(
    client: kube::Client,
    resource: ApiResource,
    kind: Kind,
    wrap: fn(KindEvent<T>) -> Update,
    tx: mpsc::Sender<Report>,
) {
    let api: Api<Ingested<T>> = Api::all_with(client, &resource);
    let mut backoff = Backoff::new();
    loop {
        let stream = watcher(api.clone(), watcher::Config::default().any_semantic());
        let mut stream = std::pin::pin!(stream);
        let error = loop {
            let event = match stream.next().await {
                Some(Ok(e)) => e,
                Some(Err(e)) => break e.to_string(),
                None => break "watch stream ended".to_string(),
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
        let retry_in = backoff.step();
        let report = Report::Failed {
            kind,
            error,
            retry_in,
        };
        if tx.send(report).await.is_err() {
            return;
        }
        tokio::time::sleep(retry_in).await;
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
}
