//! Binding a pod to a node: through the API server's `pods/binding`
//! subresource when the view is live, into the view alone when it comes
//! from a file. Either way the binding is assumed in the view as soon as
//! it is asked for (see [`super::assume`]), so the next decision counts the
//! pod; a binding the API server refuses is taken back. A POST whose answer
//! was lost (the connection cut, as when kube-apiserver restarts) may have
//! made the Binding all the same: the pod is read back, and found on the
//! node the bind is a success; otherwise it is taken back as a refusal.

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
                match create_binding(client, req).await {
                    Ok(()) => {}
                    Err(BindingFailure::Refused(e)) => {
                        if assumed.is_ok() {
                            view.forget_assumption(&req.namespace, &req.name);
                        }
                        return Err(e);
                    }
                    Err(BindingFailure::Unanswered(e)) => {
                        if bound_to(client, req).await == Some(true) {
                            tracing::info!(pod = %req.key(), node = %req.node, "the Binding was made though its answer was lost");
                        } else {
                            // Not made, or not known: kube-scheduler will
                            // schedule the pod again, as after a refusal.
                            if assumed.is_ok() {
                                view.forget_assumption(&req.namespace, &req.name);
                            }
                            return Err(e);
                        }
                    }
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

/// Why a Binding POST did not succeed: the API server answered no, or no
/// answer came (the Binding may have been made).
enum BindingFailure {
    Refused(String),
    Unanswered(String),
}

/// How long reading a pod back after a lost answer may take: well inside
/// kube-scheduler's extender timeout.
const READ_BACK: Duration = Duration::from_secs(1);

/// Whether the API server has the pod of `req` (same UID, when given)
/// bound to `req.node`; `None` when it cannot say now.
async fn bound_to(client: &kube::Client, req: &BindRequest) -> Option<bool> {
    let pods: Api<ApiPod> = Api::namespaced(client.clone(), &req.namespace);
    let pod = tokio::time::timeout(READ_BACK, pods.get_opt(&req.name))
        .await
        .ok()?
        .ok()?;
    Some(pod.is_some_and(|p| {
        let same = req.uid.is_empty() || p.metadata.uid.as_deref() == Some(req.uid.as_str());
        same && p.spec.and_then(|s| s.node_name).as_deref() == Some(req.node.as_str())
    }))
}

/// POST .../namespaces/NS/pods/NAME/binding, as kube-scheduler's default
/// binder does; the UID makes the API server refuse a same-named new pod.
async fn create_binding(client: &kube::Client, req: &BindRequest) -> Result<(), BindingFailure> {
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
        // Deleted before its binding (a scale-down, a ReplicaSet's extra
        // pod): routine, kube-scheduler drops the pod.
        Err(kube::Error::Api(status)) if status.code == 404 => {
            tracing::info!(pod = %req.key(), node = %req.node, reason = %status.message, "binding not made: the pod is gone");
            Err(BindingFailure::Refused(status.message.clone()))
        }
        Err(kube::Error::Api(status)) => {
            tracing::warn!(pod = %req.key(), node = %req.node, code = status.code, reason = %status.message, "binding refused by the API server");
            Err(BindingFailure::Refused(status.message.clone()))
        }
        Err(e) => {
            tracing::warn!(pod = %req.key(), node = %req.node, error = %e, "binding failed");
            Err(BindingFailure::Unanswered(format!(
                "binding {} to {} failed: {e}",
                req.key(),
                req.node
            )))
        }
    }
}
