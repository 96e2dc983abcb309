//! Binding a pod to a node: through the API server's `pods/binding`
//! subresource when the view is live, into the view alone when it comes
//! from a file. Either way the binding is assumed in the view as soon as
//! it is asked for (see [`super::assume`]), so the next decision counts the
//! pod; a binding the API server refuses is taken back.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod as ApiPod;
use kube::api::{Api, PostParams};

use super::ClusterView;
use crate::model::Pod;

/// Where bindings go.
#[derive(Clone, Default)]
pub enum Binder {
    /// No API server (`--cluster-state`): record the placement in the view.
    #[default]
    ViewOnly,
    /// Create the Binding through the API server.
    Api(kube::Client),
}

/// One binding, as kube-scheduler asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindRequest {
    pub namespace: String,
    pub name: String,
    /// Empty when the caller did not send one; then not checked.
    pub uid: String,
    pub node: String,
}

impl BindRequest {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

impl Binder {
    /// Assume `req` in `view` for `ttl`, then bind it (undoing the
    /// assumption if that fails). `read` is the API server's copy of a pod
    /// the view has not shown yet. The error is the reason to hand back to
    /// kube-scheduler.
    pub async fn bind(
        &self,
        view: &ClusterView,
        req: &BindRequest,
        ttl: Duration,
        read: Option<&Pod>,
    ) -> Result<(), String> {
        match self {
            Binder::Api(client) => {
                // Assumed at arrival, not after the POST returns: the next
                // pod's filter often arrives while the POST is in flight.
                let assumed = match read {
                    Some(pod) => {
                        view.assume_read_binding(pod, &req.node, ttl);
                        Ok(())
                    }
                    None => {
                        view.assume_binding(&req.namespace, &req.name, &req.uid, &req.node, ttl)
                    }
                };
                if let Err(e) = &assumed {
                    tracing::info!(pod = %req.key(), node = %req.node, reason = %e, "binding; not assumed, the watch will bring it");
                }
                if let Err(e) = create_binding(client, req).await {
                    if assumed.is_ok() {
                        view.forget_assumption(&req.namespace, &req.name);
                    }
                    return Err(e);
                }
                if assumed.is_ok() {
                    tracing::info!(pod = %req.key(), node = %req.node, "bound; assumed in the view until the watch confirms it");
                }
                Ok(())
            }
            Binder::ViewOnly => {
                view.assume_binding(&req.namespace, &req.name, &req.uid, &req.node, ttl)
                    .map_err(|e| e.to_string())?;
                tracing::info!(
                    pod = %req.key(),
                    node = %req.node,
                    ttl_s = ttl.as_secs(),
                    "no API server (--cluster-state): placement recorded in the view only"
                );
                Ok(())
            }
        }
    }
}

/// POST .../namespaces/NS/pods/NAME/binding, as kube-scheduler's default
/// binder does; the UID makes the API server refuse a same-named new pod.
async fn create_binding(client: &kube::Client, req: &BindRequest) -> Result<(), String> {
    let mut metadata = serde_json::json!({"name": req.name, "namespace": req.namespace});
    if !req.uid.is_empty() {
        metadata["uid"] = req.uid.clone().into();
    }
    let binding = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": metadata,
        "target": {"apiVersion": "v1", "kind": "Node", "name": req.node},
    });
    let pods: Api<ApiPod> = Api::namespaced(client.clone(), &req.namespace);
    match pods
        .create_subresource::<_, serde_json::Value>(
            "binding",
            &req.name,
            &PostParams::default(),
            &binding,
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) => {
            tracing::warn!(pod = %req.key(), node = %req.node, code = status.code, reason = %status.message, "binding refused by the API server");
            Err(status.message.clone())
        }
        Err(e) => {
            tracing::warn!(pod = %req.key(), node = %req.node, error = %e, "binding failed");
            Err(format!("binding {} to {} failed: {e}", req.key(), req.node))
        }
    }
}
