//! The kubelet's part, played by the test: there is no kubelet, so a bound
//! pod would stay Pending and a deleted bound pod would stay terminating
//! for ever. While a [`Kubelet`] runs it marks every bound pod Running and
//! Ready (as the kubelet reports a started pod), and finishes the deletion
//! of a bound pod once its finalizers are gone (as the kubelet confirms a
//! stopped pod with a zero grace period).

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use serde_json::json;

/// Stops when dropped.
pub struct Kubelet {
    task: tokio::task::JoinHandle<()>,
}

impl Kubelet {
    pub fn start(client: kube::Client) -> Self {
        Self {
            task: tokio::spawn(run(client)),
        }
    }
}

impl Drop for Kubelet {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn run(client: kube::Client) {
    let pods: Api<Pod> = Api::all(client.clone());
    loop {
        if let Ok(list) = pods.list(&ListParams::default()).await {
            for pod in list.items {
                play(&client, &pod).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn play(client: &kube::Client, pod: &Pod) {
    if pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_ref())
        .is_none()
    {
        return;
    }
    let meta = &pod.metadata;
    let (ns, name) = (
        meta.namespace.as_deref().unwrap(),
        meta.name.as_deref().unwrap(),
    );
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    if meta.deletion_timestamp.is_some() {
        if meta.finalizers.as_ref().is_none_or(Vec::is_empty) {
            let _ = api
                .delete(name, &DeleteParams::default().grace_period(0))
                .await;
        }
        return;
    }
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if phase == Some("Running") {
        return;
    }
    let now = jiff::Timestamp::now().to_string();
    let condition = |kind: &str| json!({"type": kind, "status": "True", "lastTransitionTime": now});
    let status = json!({"status": {
        "phase": "Running",
        "startTime": now,
        "conditions": [condition("PodReadyToStartContainers"), condition("Initialized"),
                       condition("ContainersReady"), condition("Ready"), condition("PodScheduled")],
    }});
    let _ = api
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await;
}
