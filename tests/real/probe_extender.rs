//! A measuring extender for kube-scheduler (plain HTTP on loopback, in
//! the test's process): kube-scheduler calls an extender's `filter` with
//! exactly the nodes its in-tree filter plugins passed
//! (`findNodesThatPassExtenders` in upstream
//! `pkg/scheduler/schedule_one.go`), and never when none passed. The probe
//! records those nodes per pod and answers that none fits
//! (`FailedAndUnresolvableNodes`, reason [`PROBE_REASON`]), so no pod
//! kube-scheduler tries is ever assumed or bound: the cluster it judges
//! stays the same however many pods are tried at once, and each pod's
//! PodScheduled condition names the in-tree reasons of the other nodes.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};

/// The probe's reason for every node it is asked about, as it appears in
/// kube-scheduler's FailedScheduling message.
pub const PROBE_REASON: &str = "passed every in-tree filter";

type Seen = Arc<Mutex<HashMap<String, BTreeSet<String>>>>;

/// Stops serving when dropped.
pub struct ProbeExtender {
    pub url: String,
    seen: Seen,
    task: tokio::task::JoinHandle<()>,
}

impl ProbeExtender {
    pub async fn start() -> Self {
        let seen = Seen::default();
        let router = Router::new()
            .route("/filter", post(filter))
            .with_state(seen.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, router).await.unwrap();
        });
        Self { url, seen, task }
    }

    /// The nodes kube-scheduler's in-tree filters passed for pod `ns/name`
    /// in its last attempt; empty when it never called (none passed).
    pub fn passed(&self, ns: &str, name: &str) -> BTreeSet<String> {
        let seen = self.seen.lock().unwrap();
        seen.get(&format!("{ns}/{name}"))
            .cloned()
            .unwrap_or_default()
    }

    /// A KubeSchedulerConfiguration with the default profile and this
    /// probe as its only extender (NodeNames mode).
    pub fn scheduler_config(&self) -> String {
        format!(
            "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: /etc/kubernetes/scheduler.conf
leaderElection:
  leaderElect: true
profiles:
  - schedulerName: default-scheduler
extenders:
  - urlPrefix: {}
    filterVerb: filter
    nodeCacheCapable: true
    enableHTTPS: false
    httpTimeout: 5s
",
            self.url
        )
    }
}

impl Drop for ProbeExtender {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn filter(State(seen): State<Seen>, Json(args): Json<Value>) -> Json<Value> {
    let meta = &args["Pod"]["metadata"];
    let key = format!(
        "{}/{}",
        meta["namespace"].as_str().unwrap_or_default(),
        meta["name"].as_str().unwrap_or_default()
    );
    let names: BTreeSet<String> = args["NodeNames"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n.as_str().map(str::to_string))
        .collect();
    let failed: serde_json::Map<String, Value> = names
        .iter()
        .map(|n| (n.clone(), json!(PROBE_REASON)))
        .collect();
    seen.lock().unwrap().insert(key, names);
    Json(json!({"NodeNames": [], "FailedNodes": {}, "FailedAndUnresolvableNodes": failed}))
}
