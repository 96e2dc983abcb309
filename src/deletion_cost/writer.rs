//! The writer's rounds: while this replica's term runs, plan (again only
//! when the cluster changed) and send the patches not already waiting for
//! the view, at the configured rate.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::DeletionCostMetrics;
use super::Deployments;
use super::lease::Term;
use super::metrics::{ResultLabel, WhatLabel};
use super::patch::{self, PatchOutcome};
use super::pending::Pending;
use super::planning::{self, LastPlan};
use crate::cluster::ClusterView;
use crate::config::Config;

pub struct Writer {
    client: kube::Client,
    metrics: Arc<DeletionCostMetrics>,
    /// As the Lease loop publishes it.
    term: watch::Receiver<Option<Term>>,
    /// The term `pending` was filled in: another replica may have written
    /// between two terms of this one.
    pending_since: Option<Instant>,
    pending: Pending,
    last_plan: Option<LastPlan>,
}

impl Writer {
    pub fn new(
        client: kube::Client,
        metrics: Arc<DeletionCostMetrics>,
        term: watch::Receiver<Option<Term>>,
    ) -> Self {
        Self {
            client,
            metrics,
            term,
            pending_since: None,
            pending: Pending::default(),
            last_plan: None,
        }
    }

    /// One round every interval, for ever.
    pub async fn run(
        mut self,
        view: &ClusterView,
        config: &Arc<Config>,
        deployments: &Deployments,
    ) {
        let mut tick = tokio::time::interval(config.scale_in.interval());
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            self.round(view, config, deployments).await;
        }
    }

    fn term_at(&self, now: Instant) -> Option<Term> {
        (*self.term.borrow()).filter(|t| t.covers(now))
    }

    async fn round(&mut self, view: &ClusterView, config: &Arc<Config>, deployments: &Deployments) {
        let now = Instant::now();
        let Some(term) = self.term_at(now) else {
            // Not writing: nothing to keep a snapshot alive for.
            self.last_plan = None;
            return;
        };
        if self.pending_since != Some(term.since) {
            self.pending.clear();
            self.pending_since = Some(term.since);
        }
        if !view.is_ready() {
            return;
        }
        let Some(snapshot) = view.current() else {
            return;
        };
        let changes = deployments.changes();
        if !self
            .last_plan
            .as_ref()
            .is_some_and(|p| p.stands(&snapshot, changes, now))
        {
            let m = &self.metrics;
            self.last_plan = planning::plan(&snapshot, config, deployments, m, now).await;
        }
        let Some(last) = &self.last_plan else {
            return;
        };
        self.pending.forget_seen(&snapshot);
        let settings = &config.scale_in;
        let pace = Duration::from_secs_f64(1.0 / f64::from(settings.patches_per_second));
        let m = &self.metrics;
        let todo: Vec<_> = last
            .todo
            .iter()
            .filter(|p| !self.pending.waits_for(p, now))
            .take(settings.patches_per_interval())
            .collect();
        for patch in todo {
            let now = Instant::now();
            let Some(term) = self.term_at(now) else {
                break;
            };
            let outcome = patch::send(&self.client, patch, term.until - now).await;
            m.patches
                .get_or_create(&ResultLabel {
                    result: outcome.label(),
                })
                .inc();
            if outcome == PatchOutcome::Conflict {
                m.conflicts.get_or_create(&WhatLabel { what: "pod" }).inc();
            }
            self.pending.sent(patch, outcome, Instant::now());
            tokio::time::sleep(pace).await;
        }
    }
}
