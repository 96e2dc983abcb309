//! The Deployments' annotations, for the opt-in of their ReplicaSets
//! ([`crate::policy::scale_in::plan`]): a metadata-only watch (no pod templates) into
//! kube-runtime's reflector store (`Api<PartialObjectMeta<_>>` asks for
//! metadata only).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::task::JoinHandle;

use super::refusals::Refusals;
use crate::cluster::live::Failure;
use crate::model::meta::{SCALE_IN, SCALE_IN_MAX};
use crate::policy::scale_in::plan::DeploymentAnnotations;

#[derive(Clone)]
pub struct Deployments {
    store: Store<PartialObjectMeta<Deployment>>,
    /// Counts the watch events the store took: equal counts, same store.
    changes: Arc<AtomicU64>,
}

impl Deployments {
    /// Watch every Deployment's metadata until the task is aborted.
    pub fn watch(client: kube::Client) -> (Self, JoinHandle<()>) {
        let (store, writer) = reflector::store();
        let api: Api<PartialObjectMeta<Deployment>> = Api::all(client);
        let stream = reflector::reflector(
            writer,
            watcher(api, watcher::Config::default().any_semantic()).modify(keep_opt_in_only),
        )
        .default_backoff();
        let changes = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&changes);
        let task = tokio::spawn(async move {
            // A lasting refusal (a missing `list deployments` right keeps
            // the writer from ever starting) once a minute; an outage is
            // the live source's to report.
            let refusals = Refusals::default();
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                let e = match event {
                    Ok(_) => {
                        // The reflector applied the event before passing it on.
                        counted.fetch_add(1, Ordering::Release);
                        refusals.answered();
                        continue;
                    }
                    Err(e) => e,
                };
                let error = crate::cluster::live::describe(&e);
                if !refused(&e) {
                    tracing::debug!(%error, "Deployment watch: API server unreachable or expired");
                } else if let Some(held_back) = refusals.refused(Instant::now()) {
                    tracing::warn!(%error, held_back,
                        "cannot list or watch Deployments; deletion costs are not written until it can");
                }
            }
        });
        (Self { store, changes }, task)
    }

    /// Moves on whenever the store changes. Read it before reading the
    /// store: a change in between then shows as a new count next time.
    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::Acquire)
    }

    /// Whether the first list has arrived (before it, every Deployment
    /// would look absent).
    pub async fn ready(&self) {
        let _ = self.store.wait_until_ready().await;
    }
}

/// Drop what the opt-in does not read before the store keeps it: managed
/// fields, and annotations such as kubectl's last-applied configuration
/// (a copy of the whole Deployment).
fn keep_opt_in_only(d: &mut PartialObjectMeta<Deployment>) {
    d.metadata.managed_fields = None;
    if let Some(annotations) = &mut d.metadata.annotations {
        annotations.retain(|k, _| k == SCALE_IN || k == SCALE_IN_MAX);
    }
}

/// Whether the API server answered the watch with an error (410 Gone is
/// routine: the watch relists).
fn refused(error: &watcher::Error) -> bool {
    Failure::of_watch(error) == Failure::Refused
}

impl DeploymentAnnotations for Deployments {
    fn annotations(&self, namespace: &str, name: &str) -> Option<BTreeMap<String, String>> {
        let d = self.store.get(&ObjectRef::new(name).within(namespace))?;
        Some(d.metadata.annotations.clone().unwrap_or_default())
    }
}
