//! The writer's plan: the patches the view's snapshot needs, made again
//! only when something it was made from changed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Deployments;
use super::diff::{PodPatch, patches};
use super::metrics::{ConstraintLabel, DeletionCostMetrics};
use crate::cluster::Snapshot;
use crate::config::Config;
use crate::policy::scale_in::plan::{WorkloadPlan, plans};

/// How long a plan of an unchanged cluster stands. The controller compares
/// ready and creation times in log2 buckets of their age, so its order,
/// and with it the plan, can move with time alone; how far it may lag.
pub const REPLAN_AFTER: Duration = Duration::from_secs(30);

/// The last plan and what it was made from.
pub struct LastPlan {
    /// Held, so that no other snapshot can be published at its address:
    /// the same pointer is the same snapshot.
    snapshot: Arc<Snapshot>,
    deployments: u64,
    at: Instant,
    pub todo: Vec<PodPatch>,
}

impl LastPlan {
    /// Whether it still stands for `snapshot`: the view published no
    /// other snapshot since (the view swaps a new `Arc` in for any change),
    /// the Deployments' store took no event, and it is recent.
    pub fn stands(&self, snapshot: &Arc<Snapshot>, deployments: u64, now: Instant) -> bool {
        Arc::ptr_eq(&self.snapshot, snapshot)
            && self.deployments == deployments
            && now.saturating_duration_since(self.at) < REPLAN_AFTER
    }
}

/// The plans of the snapshot (none when turned off: then only removals),
/// recorded in the metrics, and the patches they need; on the blocking
/// pool, as other work over many pods is.
pub async fn plan(
    snapshot: &Arc<Snapshot>,
    config: &Arc<Config>,
    deployments: &Deployments,
    metrics: &DeletionCostMetrics,
    now: Instant,
) -> Option<LastPlan> {
    let changes = deployments.changes();
    let (config, store, planned_on) = (
        Arc::clone(config),
        deployments.clone(),
        Arc::clone(snapshot),
    );
    let planned = tokio::task::spawn_blocking(move || {
        let plans = if config.scale_in.manage_deletion_cost {
            plans(
                &planned_on,
                Some(&store),
                &config.scheduling.default_spread_constraints,
                jiff::Timestamp::now(),
                None,
            )
        } else {
            Vec::new()
        };
        let todo = patches(&planned_on, &plans);
        (plans, todo)
    })
    .await;
    match planned {
        Ok((plans, todo)) => {
            record(metrics, &plans);
            Some(LastPlan {
                snapshot: Arc::clone(snapshot),
                deployments: changes,
                at: now,
                todo,
            })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ClusterObjects;

    fn last_plan(snapshot: &Arc<Snapshot>, at: Instant) -> LastPlan {
        LastPlan {
            snapshot: Arc::clone(snapshot),
            deployments: 3,
            at,
            todo: Vec::new(),
        }
    }

    #[test]
    fn a_plan_stands_until_the_snapshot_the_deployments_or_enough_time_change() {
        let snapshot = Arc::new(Snapshot::build(ClusterObjects::default()));
        let t0 = Instant::now();
        let plan = last_plan(&snapshot, t0);
        assert!(plan.stands(&snapshot, 3, t0 + Duration::from_secs(2)));
        let republished = Arc::new(Snapshot::build(ClusterObjects::default()));
        assert!(
            !plan.stands(&republished, 3, t0),
            "another snapshot, even with the same objects"
        );
        assert!(!plan.stands(&snapshot, 4, t0), "a Deployment changed");
        assert!(!plan.stands(&snapshot, 3, t0 + REPLAN_AFTER), "ages moved");
    }
}
