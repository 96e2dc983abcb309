//! The `fit` subcommand: the cluster from a state file or from the API
//! server (listed once, as `explain` lists it), the workload from a
//! manifest (a file, or `-` for stdin) or, live, by kind and name, then
//! the placement and the rendering asked for.

use std::io::Read;
use std::path::{Path, PathBuf};

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use serde_json::Value;

use super::workload::{self, Owner, POD_TEMPLATE_HASH, Workload};
use super::{FitAnswer, FitOptions, fit, render_json, render_table};
use crate::cluster::Snapshot;
use crate::cluster::live::{self, LiveError};
use crate::config::Config;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    Table,
    Json,
}

/// Where the cluster and the workload come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A manifest (`-`: stdin) against a state file (`cluster_state`) or
    /// the API server.
    Manifest {
        cluster_state: Option<PathBuf>,
        kubeconfig: Option<PathBuf>,
        manifest: PathBuf,
    },
    /// `-n NAMESPACE KIND/NAME`: a workload the API server has; replicas
    /// beyond its current count are placed.
    Live {
        kubeconfig: Option<PathBuf>,
        namespace: String,
        kind: String,
        name: String,
    },
}

/// Why `fit` could not answer; the kind decides the exit code.
#[derive(Debug, thiserror::Error)]
pub enum FitError {
    /// Bad manifest, settings, files or kubeconfig: exit 2.
    #[error("{0}")]
    Input(String),
    /// The API server could not be read, or has no such workload: exit 1.
    #[error("{0}")]
    Runtime(String),
}

/// The rendered answer, and whether every replica was placed.
pub fn run_fit(
    source: Source,
    options: FitOptions,
    output: Output,
    config: Option<&Path>,
) -> Result<(String, bool), FitError> {
    let config = match config {
        Some(path) => Config::load(path).map_err(|e| FitError::Input(format!("{e:#}")))?,
        None => Config::default(),
    };
    config.scheduling.upstream().follow();
    let requests_rule = config.scheduling.upstream().requests_rule();
    let (snapshot, mut workload, options) = match source {
        Source::Manifest {
            cluster_state,
            kubeconfig,
            manifest,
        } => {
            let workload = read_manifest(&manifest)?;
            let snapshot = match cluster_state {
                Some(path) => crate::cluster::file::load(&path, requests_rule)
                    .map_err(|e| FitError::Input(format!("{e:#}")))?,
                None => on_runtime(live::list_once(kubeconfig.as_deref(), requests_rule))?
                    .map_err(live_error)?,
            };
            (snapshot, workload, options)
        }
        Source::Live {
            kubeconfig,
            namespace,
            kind,
            name,
        } => {
            let (snapshot, object) = on_runtime(async {
                let snapshot = live::list_once(kubeconfig.as_deref(), requests_rule).await?;
                let object = get_workload(kubeconfig.as_deref(), &namespace, &kind, &name).await;
                Ok::<_, LiveError>((snapshot, object))
            })?
            .map_err(live_error)?;
            let mut workload = workload::workload(object?).map_err(FitError::Input)?;
            let wanted = options.replicas.unwrap_or(workload.replicas);
            workload.first = workload.replicas;
            let options = FitOptions {
                replicas: Some(wanted.saturating_sub(workload.replicas)),
                ..options
            };
            if workload.kind == "Deployment"
                && let Some(current) = current_replica_set(&snapshot, &workload)
            {
                workload.owner = Some(current);
            }
            (snapshot, workload, options)
        }
    };
    workload::admit(&mut workload, &snapshot).map_err(FitError::Input)?;
    let answer = fit(&snapshot, &workload, options, &config).map_err(FitError::Input)?;
    Ok((render(&answer, output), answer.unplaced == 0))
}

fn render(answer: &FitAnswer, output: Output) -> String {
    match output {
        Output::Table => render_table(answer),
        Output::Json => render_json(answer),
    }
}

fn read_manifest(path: &Path) -> Result<Workload, FitError> {
    let text = if path == Path::new("-") {
        let mut text = Vec::new();
        std::io::stdin()
            .read_to_end(&mut text)
            .map_err(|e| FitError::Input(format!("cannot read the manifest from stdin: {e}")))?;
        text
    } else {
        std::fs::read(path)
            .map_err(|e| FitError::Input(format!("cannot read manifest {}: {e}", path.display())))?
    };
    workload::parse_manifest(&text)
        .map_err(|e| FitError::Input(format!("manifest {}: {e}", path.display())))
}

fn on_runtime<T>(work: impl Future<Output = T>) -> Result<T, FitError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| FitError::Runtime(format!("cannot start the async runtime: {e}")))?;
    Ok(runtime.block_on(work))
}

fn live_error(e: LiveError) -> FitError {
    match e {
        LiveError::Kubeconfig { .. } | LiveError::NoConfig { .. } => FitError::Input(e.to_string()),
        _ => FitError::Runtime(e.to_string()),
    }
}

/// The kind a live `KIND/NAME` names, as kubectl spells it.
pub fn live_kind(kind: &str) -> Option<&'static str> {
    match kind {
        "deployment" | "deployments" | "deploy" => Some("Deployment"),
        "statefulset" | "statefulsets" | "sts" => Some("StatefulSet"),
        "replicaset" | "replicasets" | "rs" => Some("ReplicaSet"),
        _ => None,
    }
}

/// The workload `kind/name` as the API server has it, as JSON.
async fn get_workload(
    kubeconfig: Option<&Path>,
    namespace: &str,
    kind: &str,
    name: &str,
) -> Result<Value, FitError> {
    let api = live::resolve_api_config(kubeconfig)
        .await
        .map_err(live_error)?;
    let client = api.client().map_err(live_error)?;
    let found = match live_kind(kind) {
        Some("Deployment") => get::<Deployment>(client, namespace, name).await,
        Some("StatefulSet") => get::<StatefulSet>(client, namespace, name).await,
        Some(_) => get::<ReplicaSet>(client, namespace, name).await,
        None => {
            return Err(FitError::Input(format!(
                "{kind}/{name}: fit reads a live deployment, statefulset or replicaset \
                 (or a manifest of any workload)"
            )));
        }
    };
    found.map_err(|e| {
        FitError::Runtime(format!(
            "cannot get {kind} {namespace}/{name} from {}: {e}",
            api.url()
        ))
    })
}

async fn get<K>(client: kube::Client, namespace: &str, name: &str) -> Result<Value, String>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
    <K as kube::Resource>::DynamicType: Default,
{
    let object = kube::Api::<K>::namespaced(client, namespace)
        .get(name)
        .await
        .map_err(|e| e.to_string())?;
    serde_json::to_value(object).map_err(|e| e.to_string())
}

/// A live Deployment's current ReplicaSet, which its new pods join: of
/// those it controls in the view, the one with the most replicas (the
/// latest by creation on ties), so the new pods count with the running
/// ones for `pod-template-hash` selectors.
fn current_replica_set(snapshot: &Snapshot, workload: &Workload) -> Option<Owner> {
    let owners = snapshot.owners_in_namespace(&workload.namespace)?;
    owners
        .replica_sets
        .iter()
        .filter(|rs| {
            rs.metadata
                .controller()
                .is_some_and(|c| c.kind == "Deployment" && c.name == workload.name)
        })
        .filter(|rs| {
            rs.spec
                .selector
                .as_ref()
                .is_some_and(|s| s.match_labels.contains_key(POD_TEMPLATE_HASH))
        })
        .max_by_key(|rs| {
            (
                rs.spec.replicas.unwrap_or(1),
                rs.metadata.creation_timestamp,
            )
        })
        .map(|rs| Owner {
            kind: "ReplicaSet",
            object: (**rs).clone(),
        })
}
