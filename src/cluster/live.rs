//! The live source: watches of the Kubernetes API server feed the cluster
//! view. One task per kind lists and watches (see [`watch`]); one writer
//! task owns the objects and publishes snapshots incrementally (see
//! [`writer`]). The view is ready once every kind's initial list is in it.
//! Starting needs only a configuration ([`resolve_api_config`]): an API
//! server that is not up yet is waited for, with /healthz answering and
//! /readyz not.

mod api_config;
mod failure;
mod health;
mod ingest;
mod list_once;
mod read_through;
mod store;
mod watch;
mod writer;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::{apps, core, policy, resource, scheduling};
use kube::core::ApiResource;
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;

pub use self::api_config::{ApiConfig, LiveError, resolve_api_config};
pub use self::failure::Failure;
pub use self::list_once::list_once;
pub use self::read_through::{ListRead, Read, ReadError, ReadThrough, ReadThroughMetrics};
use self::store::Update;
use self::watch::Report;
pub(crate) use self::watch::describe;
use super::{Binder, ClusterView, Kind};
use crate::config::LiveSettings;
use crate::model::requests::RequestsRule;
use crate::model::{
    DeviceClass, MapSelectorOwner, Namespace, Node, Pod, PodDisruptionBudget, PriorityClass,
    SelectorOwner,
};

/// The running live source; dropping it stops the watches.
pub struct LiveSource {
    client: kube::Client,
    tasks: Vec<JoinHandle<()>>,
}

impl LiveSource {
    /// Bindings go to the API server this source watches.
    pub fn binder(&self) -> Binder {
        Binder::Api(self.client.clone())
    }

    /// Reads of what the view has not shown yet, from the API server this
    /// source watches, each bounded by `timeout`.
    pub fn read_through(&self, timeout: Duration, metrics: ReadThroughMetrics) -> ReadThrough {
        ReadThrough::new(self.client.clone(), timeout, metrics)
    }

    /// The client of the API server this source watches (for token and
    /// access reviews).
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }
}

impl Drop for LiveSource {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Resolve the API server's configuration and start filling `view`, its
/// bound pods' requests counted by `requests_rule`.
/// Fails only when there is no usable configuration; the server itself
/// may come up later (the view becomes ready when every kind is listed).
pub async fn start(
    kubeconfig: Option<PathBuf>,
    view: Arc<ClusterView>,
    settings: &LiveSettings,
    requests_rule: RequestsRule,
) -> Result<LiveSource, LiveError> {
    let api = resolve_api_config(kubeconfig.as_deref()).await?;
    let client = api.client()?;
    tracing::info!(
        url = %api.url(), from = %api.from,
        "watching the API server; /readyz fails until every kind is listed"
    );
    Ok(spawn(client, api.url(), view, settings, requests_rule))
}

/// Start the watches and the writer on an existing client.
fn spawn(
    client: kube::Client,
    url: String,
    view: Arc<ClusterView>,
    settings: &LiveSettings,
    requests_rule: RequestsRule,
) -> LiveSource {
    let (tx, rx) = mpsc::channel(4096);
    let retry_now = Arc::new(Notify::new());
    let writer_settings = writer::WriterSettings {
        publish_interval: settings.publish_interval(),
        stale_after: settings.stale_after(),
        url,
        requests_rule,
    };
    let mut tasks = vec![tokio::spawn(writer::run(
        view,
        writer_settings,
        rx,
        retry_now.clone(),
    ))];
    tasks.extend(spawn_watches(&client, &tx, &retry_now));
    LiveSource { client, tasks }
}

/// One list-and-watch task per kind the view needs, all reporting to `tx`;
/// `retry_now` wakes the ones backing off once the server answers again.
fn spawn_watches(
    client: &kube::Client,
    tx: &mpsc::Sender<Report>,
    retry_now: &Arc<Notify>,
) -> Vec<JoinHandle<()>> {
    let c = || client.clone();
    let t = || tx.clone();
    let r = || retry_now.clone();
    vec![
        tokio::spawn(watch::run::<Node>(
            c(),
            ApiResource::erase::<core::v1::Node>(&()),
            Kind::Node,
            Update::Node,
            t(),
            r(),
        )),
        tokio::spawn(watch::run::<Pod>(
            c(),
            ApiResource::erase::<core::v1::Pod>(&()),
            Kind::Pod,
            Update::Pod,
            t(),
            r(),
        )),
        tokio::spawn(watch::run::<Namespace>(
            c(),
            ApiResource::erase::<core::v1::Namespace>(&()),
            Kind::Namespace,
            Update::Namespace,
            t(),
            r(),
        )),
        tokio::spawn(watch::run::<PodDisruptionBudget>(
            c(),
            ApiResource::erase::<policy::v1::PodDisruptionBudget>(&()),
            Kind::PodDisruptionBudget,
            Update::Pdb,
            t(),
            r(),
        )),
        tokio::spawn(watch::run::<PriorityClass>(
            c(),
            ApiResource::erase::<scheduling::v1::PriorityClass>(&()),
            Kind::PriorityClass,
            Update::PriorityClass,
            t(),
            r(),
        )),
        tokio::spawn(watch::run::<DeviceClass>(
            c(),
            ApiResource::erase::<resource::v1::DeviceClass>(&()),
            Kind::DeviceClass,
            Update::DeviceClass,
            t(),
            r(),
        )),
        tokio::spawn(watch::run::<MapSelectorOwner>(
            c(),
            ApiResource::erase::<core::v1::Service>(&()),
            Kind::Service,
            Update::Service,
            t(),
            r(),
        )),
        tokio::spawn(watch::run::<SelectorOwner>(
            c(),
            ApiResource::erase::<apps::v1::ReplicaSet>(&()),
            Kind::ReplicaSet,
            Update::ReplicaSet,
            t(),
            r(),
        )),
        tokio::spawn(watch::run::<SelectorOwner>(
            c(),
            ApiResource::erase::<apps::v1::StatefulSet>(&()),
            Kind::StatefulSet,
            Update::StatefulSet,
            t(),
            r(),
        )),
        tokio::spawn(watch::run::<MapSelectorOwner>(
            c(),
            ApiResource::erase::<core::v1::ReplicationController>(&()),
            Kind::ReplicationController,
            Update::ReplicationController,
            t(),
            r(),
        )),
    ]
}
