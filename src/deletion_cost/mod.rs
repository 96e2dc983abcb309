//! Scale-in that keeps spread, applied: kube-arbiter keeps
//! `controller.kubernetes.io/pod-deletion-cost` on the pods of opted-in
//! ReplicaSets so that the ReplicaSet controller's own order removes the
//! pods that keep topology spread (docs/scale-in-controller.md).
//!
//! Which workloads and which costs is the scale-in policy's decision
//! ([`crate::policy::scale_in::plan`], pure). Here [`lease`] makes one
//! replica the writer and [`leadership`] keeps the Lease in a loop of its
//! own; [`planning`] asks for the plan again when what it was made from
//! changed, [`diff`] compares it with the pods, and [`writer`] patches the
//! difference, a bounded number a second. Every API call is bounded in
//! time: one unanswered request cannot keep a replica "leading" while it
//! writes nothing.

pub mod deployments;
mod diff;
mod leadership;
pub mod lease;
pub mod metrics;
mod patch;
mod pending;
mod planning;
mod refusals;
mod writer;

use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::cluster::ClusterView;
use crate::cluster::live::Failure;
use crate::config::Config;

pub use self::deployments::Deployments;
use self::lease::Elector;
pub use self::metrics::DeletionCostMetrics;
use self::writer::Writer;

/// Start the writer: it waits for the Deployments' first list, then
/// contends for the Lease and, while it holds it, keeps the costs.
pub fn start(
    client: kube::Client,
    view: Arc<ClusterView>,
    config: Arc<Config>,
    metrics: Arc<DeletionCostMetrics>,
    deployments: Deployments,
) -> JoinHandle<()> {
    tokio::spawn(run(client, view, config, metrics, deployments))
}

/// The Lease loop and the writer, side by side in one task (aborting it
/// stops both): the writer's paced patches never hold up a renewal.
async fn run(
    client: kube::Client,
    view: Arc<ClusterView>,
    config: Arc<Config>,
    metrics: Arc<DeletionCostMetrics>,
    deployments: Deployments,
) {
    deployments.ready().await;
    let settings = &config.scale_in;
    let leases: Api<Lease> = Api::namespaced(client.clone(), &settings.lease_namespace);
    let elector = Elector::new(
        leases,
        Instant::now,
        &settings.lease_name,
        &lease::identity(),
        settings.lease_duration(),
    );
    let (publish, term) = watch::channel(None);
    let writer = Writer::new(client, Arc::clone(&metrics), term);
    tokio::join!(
        leadership::keep(
            elector,
            settings.interval(),
            &settings.lease_name,
            &metrics,
            publish,
        ),
        writer.run(&view, &config, &deployments),
    );
}

/// Whether the API server answered with an error (a missing RBAC right, a
/// refusal, an undecodable answer), as opposed to not answering: an outage
/// is the live source's to report, once (docs/live-source.md).
pub(crate) fn refused(error: &kube::Error) -> bool {
    Failure::of(error) == Failure::Refused
}
