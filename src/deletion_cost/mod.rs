//! Scale-in that keeps spread, applied: kube-arbiter keeps
//! `controller.kubernetes.io/pod-deletion-cost` on the pods of opted-in
//! ReplicaSets so that the ReplicaSet controller's own order removes the
//! pods that keep topology spread (docs/scale-in-controller.md).
//!
//! [`workloads`] decides (which workloads, which costs; pure), [`lease`]
//! makes one replica the writer, [`run`] compares the plan with the pods
//! and patches the difference, a bounded number a second.

pub mod deployments;
pub mod lease;
pub mod metrics;
mod refusals;

use refusals::Refusals;
pub mod workloads;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod as ApiPod;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use tokio::task::JoinHandle;

use crate::cluster::{ClusterView, Snapshot};
use crate::config::Config;
use crate::model::meta::{DELETION_COST_MANAGED, POD_DELETION_COST};
use crate::server::metrics::Metrics;

pub use self::deployments::Deployments;
use self::lease::{Elector, Step};
pub use self::metrics::DeletionCostMetrics;
use self::metrics::{ConstraintLabel, ResultLabel, WhatLabel};
use self::workloads::{PodPatch, WorkloadPlan};

/// Start the writer: it waits for the Deployments' first list, then
/// contends for the Lease and, while it holds it, keeps the costs.
pub fn start(
    client: kube::Client,
    view: Arc<ClusterView>,
    config: Arc<Config>,
    metrics: Arc<Metrics>,
    deployments: Deployments,
) -> JoinHandle<()> {
    tokio::spawn(run(client, view, config, metrics, deployments))
}

async fn run(
    client: kube::Client,
    view: Arc<ClusterView>,
    config: Arc<Config>,
    metrics: Arc<Metrics>,
    deployments: Deployments,
) {
    deployments.ready().await;
    let settings = &config.scale_in;
    let leases: Api<Lease> = Api::namespaced(client.clone(), &settings.lease_namespace);
    let mut writer = Writer {
        elector: Elector::new(
            leases,
            &settings.lease_name,
            &lease::identity(),
            settings.lease_duration(),
        ),
        leading: false,
        pending: Pending::default(),
        lease_refusals: Refusals::default(),
        client,
        metrics: Arc::clone(&metrics),
    };
    let mut tick = tokio::time::interval(settings.interval());
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if !writer.lead(&settings.lease_name).await || !view.is_ready() {
            continue;
        }
        let Some(snapshot) = view.current() else {
            continue;
        };
        let Some(todo) = plan(&snapshot, &config, &deployments, &metrics).await else {
            continue;
        };
        writer.write(&snapshot, todo, &config).await;
    }
}

/// The Lease holder's state between rounds.
struct Writer {
    elector: Elector,
    leading: bool,
    pending: Pending,
    lease_refusals: Refusals,
    client: kube::Client,
    metrics: Arc<Metrics>,
}

impl Writer {
    /// Take or renew the Lease; whether this replica writes this round.
    async fn lead(&mut self, lease_name: &str) -> bool {
        let m = &self.metrics.deletion_cost;
        let step = match self.elector.step().await {
            Ok(step) => {
                self.lease_refusals.answered();
                step
            }
            Err(e) => {
                let error = crate::cluster::live::describe(&e);
                if !refused(&e) {
                    // The live source already warns once about an outage.
                    tracing::debug!(%error, "scale-in Lease: API server unreachable");
                } else if let Some(held_back) = self.lease_refusals.refused(Instant::now()) {
                    tracing::warn!(%error, held_back, lease = %lease_name,
                        "cannot read or renew the scale-in Lease");
                }
                // Still within the renew deadline: nobody else can hold it.
                if self.elector.may_write() {
                    Step::Leading
                } else {
                    Step::Following { conflict: false }
                }
            }
        };
        if let Step::Following { conflict: true } = step {
            m.conflicts
                .get_or_create(&WhatLabel { what: "lease" })
                .inc();
        }
        let leading = step == Step::Leading;
        if leading != self.leading {
            tracing::info!(
                identity = self.elector.identity(),
                leading,
                "scale-in Lease {}",
                if leading {
                    "taken: this replica writes deletion costs"
                } else {
                    "lost or held by another replica"
                }
            );
            self.leading = leading;
            self.pending.clear();
        }
        m.leader.set(i64::from(leading));
        leading
    }

    /// Send the patches not already waiting for the view, at the
    /// configured rate, while the Lease is still this replica's.
    async fn write(&mut self, snapshot: &Snapshot, todo: Vec<PodPatch>, config: &Config) {
        let settings = &config.scale_in;
        let pace = Duration::from_secs_f64(1.0 / f64::from(settings.patches_per_second));
        let m = &self.metrics.deletion_cost;
        self.pending.forget_seen(snapshot);
        let todo: Vec<PodPatch> = todo
            .into_iter()
            .filter(|p| !self.pending.waits_for(p))
            .collect();
        for patch in todo.into_iter().take(settings.patches_per_interval()) {
            if !self.elector.may_write() {
                break;
            }
            let result = send(&self.client, &patch).await;
            m.patches.get_or_create(&ResultLabel { result }).inc();
            if result == "conflict" {
                m.conflicts.get_or_create(&WhatLabel { what: "pod" }).inc();
            }
            self.pending.sent(&patch, result == "failed");
            tokio::time::sleep(pace).await;
        }
    }
}

/// The plans of the snapshot (none when turned off: then only removals),
/// recorded in the metrics, and the patches they need; on the blocking
/// pool, as other work over many pods is.
async fn plan(
    snapshot: &Arc<Snapshot>,
    config: &Arc<Config>,
    deployments: &Deployments,
    metrics: &Metrics,
) -> Option<Vec<PodPatch>> {
    let (config, deployments, snapshot) = (
        Arc::clone(config),
        deployments.clone(),
        Arc::clone(snapshot),
    );
    let planned = tokio::task::spawn_blocking(move || {
        let plans = if config.scale_in.manage_deletion_cost {
            workloads::plans(
                &snapshot,
                Some(&deployments),
                &config.scheduling.default_spread_constraints,
                jiff::Timestamp::now(),
                None,
            )
        } else {
            Vec::new()
        };
        let todo = workloads::patches(&snapshot, &plans);
        (plans, todo)
    })
    .await;
    match planned {
        Ok((plans, todo)) => {
            record(&metrics.deletion_cost, &plans);
            Some(todo)
        }
        Err(e) => {
            tracing::error!(error = %e, "planning deletion costs failed");
            None
        }
    }
}

/// Plans' gauges: workloads, pods with a planned cost, guaranteed skews.
fn record(m: &DeletionCostMetrics, plans: &[WorkloadPlan]) {
    m.workloads.set(plans.len() as i64);
    let annotated = plans
        .iter()
        .flat_map(|p| &p.pods)
        .filter(|p| p.desired.is_some())
        .count();
    m.pods_annotated.set(annotated as i64);
    m.guaranteed_skew.clear();
    for plan in plans {
        for c in &plan.constraints {
            m.guaranteed_skew
                .get_or_create(&ConstraintLabel {
                    namespace: plan.namespace.clone(),
                    replicaset: plan.replica_set.clone(),
                    topology_key: c.topology_key.clone(),
                })
                .set(c.guaranteed_skew);
        }
    }
}

/// Pods patched whose new version the view has not shown yet: the view
/// still holds the version the patch was decided on, and deciding again on
/// it would send the same patch again. A patch that failed (the API server
/// refused or did not answer) is tried again after [`RETRY_FAILED`].
#[derive(Default)]
struct Pending(HashMap<String, (String, Option<Instant>)>);

const RETRY_FAILED: Duration = Duration::from_secs(60);

impl Pending {
    fn clear(&mut self) {
        self.0.clear();
    }

    fn sent(&mut self, patch: &PodPatch, failed: bool) {
        let retry = failed.then(|| Instant::now() + RETRY_FAILED);
        self.0
            .insert(patch.uid.clone(), (patch.resource_version.clone(), retry));
    }

    fn waits_for(&self, patch: &PodPatch) -> bool {
        self.0.get(&patch.uid).is_some_and(|(version, retry)| {
            *version == patch.resource_version && retry.is_none_or(|at| Instant::now() < at)
        })
    }

    /// Drop the pods whose view version moved on (or that are gone).
    fn forget_seen(&mut self, snapshot: &Snapshot) {
        self.0.retain(|uid, (version, _)| {
            snapshot
                .pod_by_uid(uid)
                .is_some_and(|r| r.pod.metadata.resource_version == *version)
        });
    }
}

/// One JSON merge patch of the pod's two annotations; the pod's UID in the
/// patch keeps it from landing on a pod recreated under the same name.
async fn send(client: &kube::Client, patch: &PodPatch) -> &'static str {
    let value = |v: Option<String>| v.map_or(serde_json::Value::Null, serde_json::Value::from);
    let body = json!({"metadata": {
        "uid": patch.uid,
        "annotations": {
            POD_DELETION_COST: value(patch.cost.map(|c| c.to_string())),
            DELETION_COST_MANAGED: value(patch.cost.map(|_| "true".to_string())),
        }
    }});
    let api: Api<ApiPod> = Api::namespaced(client.clone(), &patch.namespace);
    match api
        .patch_metadata(&patch.name, &PatchParams::default(), &Patch::Merge(&body))
        .await
    {
        Ok(_) => "applied",
        // 409, or 422 for a UID that no longer matches: the pod changed.
        Err(kube::Error::Api(s)) if s.code == 409 || s.code == 422 => "conflict",
        Err(kube::Error::Api(s)) if s.code == 404 => "gone",
        Err(e) => {
            let pod = format!("{}/{}", patch.namespace, patch.name);
            let error = crate::cluster::live::describe(&e);
            if refused(&e) {
                tracing::warn!(%pod, %error, "cannot patch the pod's deletion cost");
            } else {
                tracing::debug!(%pod, %error, "cannot patch the pod's deletion cost");
            }
            "failed"
        }
    }
}

/// Whether the API server answered with an error (a missing RBAC right, a
/// refusal), as opposed to not answering: an outage is the live source's
/// to report, once (docs/live-source.md).
pub(crate) fn refused(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(_))
}
