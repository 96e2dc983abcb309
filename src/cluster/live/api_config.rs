//! Where the Kubernetes API server is and how to talk to it: the one place
//! that resolves `--kubeconfig`, in-cluster, `KUBECONFIG` and
//! `~/.kube/config` (docs/design.md §2.1). Only a missing or broken configuration
//! is an error here; an API server that does not answer yet is not (the
//! live source waits for it).

use std::path::Path;

use kube::config::{KubeConfigOptions, Kubeconfig};

const FILE_HINT: &str = "to run without an API server, serve a cluster-state file instead: \
     `kubectl get nodes,pods,pdb,priorityclasses,namespaces -A -o yaml > cluster.yaml` \
     then `kube-arbiter serve --cluster-state cluster.yaml`";

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
    /// The configuration names TLS material or a proxy the client cannot use.
    #[error("cannot set up a client for the Kubernetes API server at {url}: {message}")]
    Client { url: String, message: String },
    /// A one-shot command (`explain`) got no answer from the API server.
    #[error("cannot reach the Kubernetes API server at {url}: {message}; {FILE_HINT}")]
    Unreachable { url: String, message: String },
    /// A one-shot command could not list one kind.
    #[error("cannot list {kind} from the Kubernetes API server at {url}: {message}")]
    List {
        url: String,
        kind: &'static str,
        message: String,
    },
}

/// A resolved API server configuration and where it came from (for logs).
pub struct ApiConfig {
    pub config: kube::Config,
    /// `--kubeconfig F`, `in-cluster service account`, `KUBECONFIG` or
    /// `~/.kube/config`.
    pub from: String,
}

impl ApiConfig {
    pub fn url(&self) -> String {
        self.config.cluster_url.to_string()
    }

    /// A client for this configuration. Connects lazily: it fails only on
    /// configuration, never because the server is down.
    pub fn client(&self) -> Result<kube::Client, LiveError> {
        kube::Client::try_from(self.config.clone()).map_err(|e| LiveError::Client {
            url: self.url(),
            message: e.to_string(),
        })
    }
}

/// `--kubeconfig F`; else the in-cluster service account; else
/// `KUBECONFIG` or `~/.kube/config`.
pub async fn resolve_api_config(kubeconfig: Option<&Path>) -> Result<ApiConfig, LiveError> {
    let options = KubeConfigOptions::default();
    if let Some(path) = kubeconfig {
        let bad = |message: String| LiveError::Kubeconfig {
            path: path.display().to_string(),
            message,
        };
        let kc = Kubeconfig::read_from(path).map_err(|e| bad(e.to_string()))?;
        let config = kube::Config::from_custom_kubeconfig(kc, &options)
            .await
            .map_err(|e| bad(e.to_string()))?;
        return Ok(ApiConfig {
            config,
            from: format!("--kubeconfig {}", path.display()),
        });
    }
    let in_cluster = match kube::Config::incluster() {
        Ok(config) => {
            return Ok(ApiConfig {
                config,
                from: "in-cluster service account".into(),
            });
        }
        Err(e) => e.to_string(),
    };
    let config =
        kube::Config::from_kubeconfig(&options)
            .await
            .map_err(|e| LiveError::NoConfig {
                in_cluster,
                kubeconfig: e.to_string(),
            })?;
    let from = if std::env::var_os("KUBECONFIG").is_some() {
        "KUBECONFIG"
    } else {
        "~/.kube/config"
    };
    Ok(ApiConfig {
        config,
        from: from.into(),
    })
}
