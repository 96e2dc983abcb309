//! The live source: watches of the Kubernetes API server feed the cluster
//! view. One task per kind lists and watches (see [`watch`]); one writer
//! task owns the objects and publishes snapshots incrementally (see
//! [`writer`]). The view is ready once every kind's initial list is in it.

mod ingest;
mod list_once;
mod store;
mod watch;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::{apps, core, policy, scheduling};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::ApiResource;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

pub use self::list_once::list_once;
use self::store::Update;
use self::watch::Report;
use super::{Binder, ClusterView, Kind};
use crate::config::LiveSettings;
use crate::model::{
    MapSelectorOwner, Namespace, Node, Pod, PodDisruptionBudget, PriorityClass, SelectorOwner,
};

const FILE_HINT: &str = "to run without an API server, serve a cluster-state file instead: \
     `kubectl get nodes,pods,pdb,priorityclasses,namespaces -A -o yaml > cluster.yaml` \
     then `kube-arbiter serve --cluster-state cluster.yaml`";

/// How long `start` waits for the API server to answer before giving up.
const REACH_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("cannot read kubeconfig {path}: {message}; {FILE_HINT}")]
    Kubeconfig { path: String, message: String },
    #[error(
        "no Kubernetes API configuration: not in a cluster ({in_cluster}) and no usable \
         KUBECONFIG or ~/.kube/config ({kubeconfig}); pass --kubeconfig F, or {FILE_HINT}"
    )]
    NoConfig {
        in_cluster: String,
        kubeconfig: String,
    },
    #[error("cannot reach the Kubernetes API server at {url}: {message}; {FILE_HINT}")]
    Unreachable { url: String, message: String },
    #[error("cannot list {kind} from the Kubernetes API server at {url}: {message}")]
    List {
        url: String,
        kind: &'static str,
        message: String,
    },
}

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
}

impl Drop for LiveSource {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Connect to the API server and start filling `view`. Returns once the
/// server answered; the view becomes ready when every kind is listed.
pub async fn start(
    kubeconfig: Option<PathBuf>,
    view: Arc<ClusterView>,
    settings: &LiveSettings,
) -> Result<LiveSource, LiveError> {
    let config = client_config(kubeconfig.as_deref()).await?;
    let url = config.cluster_url.to_string();
    let unreachable = |message: String| LiveError::Unreachable {
        url: url.clone(),
        message,
    };
    let client = kube::Client::try_from(config).map_err(|e| unreachable(e.to_string()))?;
    match tokio::time::timeout(REACH_TIMEOUT, client.apiserver_version()).await {
        Ok(Ok(v)) => tracing::info!(%url, version = %v.git_version, "connected to the API server"),
        Ok(Err(e)) => return Err(unreachable(e.to_string())),
        Err(_) => return Err(unreachable(format!("no answer within {REACH_TIMEOUT:?}"))),
    }
    Ok(spawn(client, view, settings))
}

/// Start the watches and the writer on an existing client.
pub fn spawn(client: kube::Client, view: Arc<ClusterView>, settings: &LiveSettings) -> LiveSource {
    let (tx, rx) = mpsc::channel(4096);
    let writer_settings = writer::WriterSettings {
        publish_interval: settings.publish_interval(),
        stale_after: settings.stale_after(),
    };
    let mut tasks = vec![tokio::spawn(writer::run(view, writer_settings, rx))];
    tasks.extend(spawn_watches(&client, &tx));
    LiveSource { client, tasks }
}

/// One list-and-watch task per kind the view needs, all reporting to `tx`.
fn spawn_watches(client: &kube::Client, tx: &mpsc::Sender<Report>) -> Vec<JoinHandle<()>> {
    let c = || client.clone();
    let t = || tx.clone();
    vec![
        tokio::spawn(watch::run::<Node>(
            c(),
            ApiResource::erase::<core::v1::Node>(&()),
            Kind::Node,
            Update::Node,
            t(),
        )),
        tokio::spawn(watch::run::<Pod>(
            c(),
            ApiResource::erase::<core::v1::Pod>(&()),
            Kind::Pod,
            Update::Pod,
            t(),
        )),
        tokio::spawn(watch::run::<Namespace>(
            c(),
            ApiResource::erase::<core::v1::Namespace>(&()),
            Kind::Namespace,
            Update::Namespace,
            t(),
        )),
        tokio::spawn(watch::run::<PodDisruptionBudget>(
            c(),
            ApiResource::erase::<policy::v1::PodDisruptionBudget>(&()),
            Kind::PodDisruptionBudget,
            Update::Pdb,
            t(),
        )),
        tokio::spawn(watch::run::<PriorityClass>(
            c(),
            ApiResource::erase::<scheduling::v1::PriorityClass>(&()),
            Kind::PriorityClass,
            Update::PriorityClass,
            t(),
        )),
        tokio::spawn(watch::run::<MapSelectorOwner>(
            c(),
            ApiResource::erase::<core::v1::Service>(&()),
            Kind::Service,
            Update::Service,
            t(),
        )),
        tokio::spawn(watch::run::<SelectorOwner>(
            c(),
            ApiResource::erase::<apps::v1::ReplicaSet>(&()),
            Kind::ReplicaSet,
            Update::ReplicaSet,
            t(),
        )),
        tokio::spawn(watch::run::<SelectorOwner>(
            c(),
            ApiResource::erase::<apps::v1::StatefulSet>(&()),
            Kind::StatefulSet,
            Update::StatefulSet,
            t(),
        )),
        tokio::spawn(watch::run::<MapSelectorOwner>(
            c(),
            ApiResource::erase::<core::v1::ReplicationController>(&()),
            Kind::ReplicationController,
            Update::ReplicationController,
            t(),
        )),
    ]
}

/// `--kubeconfig F`; else the in-cluster service account; else `KUBECONFIG`
/// or `~/.kube/config` (DESIGN §2.1).
async fn client_config(kubeconfig: Option<&Path>) -> Result<kube::Config, LiveError> {
    let options = KubeConfigOptions::default();
    if let Some(path) = kubeconfig {
        let bad = |message: String| LiveError::Kubeconfig {
            path: path.display().to_string(),
            message,
        };
        let kc = Kubeconfig::read_from(path).map_err(|e| bad(e.to_string()))?;
        return kube::Config::from_custom_kubeconfig(kc, &options)
            .await
            .map_err(|e| bad(e.to_string()));
    }
    let in_cluster = match kube::Config::incluster() {
        Ok(c) => return Ok(c),
        Err(e) => e.to_string(),
    };
    kube::Config::from_kubeconfig(&options)
        .await
        .map_err(|e| LiveError::NoConfig {
            in_cluster,
            kubeconfig: e.to_string(),
        })
}
