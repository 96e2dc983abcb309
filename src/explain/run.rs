//! The `explain` subcommand: the cluster from a state file or from the API
//! server (listed once, as `serve` lists it at start), the pod from a file
//! or by name, the settings, and the rendering asked for.

use std::path::{Path, PathBuf};

use super::{Explanation, explain, explain_in_view, render_json, render_table};
use crate::cluster::Snapshot;
use crate::cluster::live::{self, LiveError};
use crate::config::Config;
use crate::model::Pod;
use crate::model::requests::RequestsRule;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    Table,
    Json,
}

/// Which cluster, and which pod in it.
#[derive(Debug, Clone)]
pub enum Target {
    /// `--cluster-state F POD-FILE`: a pod that need not exist yet.
    File {
        cluster_state: PathBuf,
        pod_file: PathBuf,
    },
    /// `[--kubeconfig F] -n NAMESPACE POD`: a pod the API server has.
    Live {
        kubeconfig: Option<PathBuf>,
        namespace: String,
        name: String,
    },
}

/// Why `explain` could not answer; the kind decides the exit code as for
/// `serve`.
#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    /// Bad settings, files or kubeconfig: exit 2.
    #[error("{0}")]
    Config(String),
    /// The API server could not be read, or has no such pod: exit 1.
    #[error("{0}")]
    Runtime(String),
}

pub fn run_explain(
    target: Target,
    output: Output,
    config: Option<&Path>,
) -> Result<String, ExplainError> {
    let config = match config {
        Some(path) => Config::load(path).map_err(|e| ExplainError::Config(format!("{e:#}")))?,
        None => Config::default(),
    };
    config.scheduling.upstream().follow();
    let requests_rule = config.scheduling.upstream().requests_rule();
    let e = match target {
        Target::File {
            cluster_state,
            pod_file,
        } => {
            let snapshot = crate::cluster::file::load(&cluster_state, requests_rule)
                .map_err(|e| ExplainError::Config(format!("{e:#}")))?;
            let pod = read_pod(&pod_file).map_err(ExplainError::Config)?;
            explain(&snapshot, &pod, &config)
        }
        Target::Live {
            kubeconfig,
            namespace,
            name,
        } => {
            let snapshot = live_snapshot(kubeconfig, requests_rule)?;
            named(&snapshot, &namespace, &name, &config)?
        }
    };
    Ok(match output {
        Output::Table => render_table(&e),
        Output::Json => render_json(&e),
    })
}

/// The cluster as the API server lists it now.
fn live_snapshot(
    kubeconfig: Option<PathBuf>,
    requests_rule: RequestsRule,
) -> Result<Snapshot, ExplainError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ExplainError::Runtime(format!("cannot start the async runtime: {e}")))?;
    runtime
        .block_on(live::list_once(kubeconfig.as_deref(), requests_rule))
        .map_err(|e| match e {
            LiveError::Kubeconfig { .. } | LiveError::NoConfig { .. } => {
                ExplainError::Config(e.to_string())
            }
            _ => ExplainError::Runtime(e.to_string()),
        })
}

fn named(
    snapshot: &Snapshot,
    namespace: &str,
    name: &str,
    config: &Config,
) -> Result<Explanation, ExplainError> {
    explain_in_view(snapshot, namespace, name, config).ok_or_else(|| {
        ExplainError::Runtime(format!(
            "pod {namespace}/{name} not found: the API server lists no pod {name:?} in \
             namespace {namespace:?} that has not finished (pass the namespace with -n)"
        ))
    })
}

fn read_pod(path: &Path) -> Result<Pod, String> {
    let text =
        std::fs::read(path).map_err(|e| format!("cannot read pod file {}: {e}", path.display()))?;
    parse_pod(&text).map_err(|e| format!("pod file {}: {e}", path.display()))
}

/// A Pod from JSON or YAML. It must have a name; an empty namespace is
/// `default`, where kubectl would create it.
pub fn parse_pod(text: &[u8]) -> Result<Pod, String> {
    let first = text.iter().find(|b| !b.is_ascii_whitespace());
    let mut pod: Pod = if first == Some(&b'{') {
        serde_json::from_slice(text).map_err(|e| e.to_string())?
    } else {
        let text = std::str::from_utf8(text).map_err(|e| format!("not UTF-8 text: {e}"))?;
        serde_saphyr::from_str(text).map_err(|e| e.to_string())?
    };
    if pod.metadata.name.is_empty() {
        return Err("the pod has no metadata.name".into());
    }
    if pod.metadata.namespace.is_empty() {
        pod.metadata.namespace = "default".into();
    }
    Ok(pod)
}
