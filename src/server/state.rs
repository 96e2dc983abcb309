//! What every handler gets: the cluster view and the settings.

use std::sync::Arc;

use crate::cluster::{Binder, ClusterView, InFlight, Snapshot};
use crate::config::Config;
use crate::server::error::ApiError;
use crate::server::metrics::Metrics;

#[derive(Clone)]
pub struct AppState {
    pub view: Arc<ClusterView>,
    pub config: Arc<Config>,
    pub metrics: Arc<Metrics>,
    /// Where `/scheduler/bind` sends bindings: the API server (live) or
    /// the view alone (`--cluster-state`).
    pub binder: Binder,
    /// Pods answered and not yet seen bound (disabled unless live).
    pub in_flight: Arc<InFlight>,
}

impl AppState {
    pub fn new(view: Arc<ClusterView>, config: Config) -> Self {
        Self {
            view,
            config: Arc::new(config),
            metrics: Arc::new(Metrics::new()),
            binder: Binder::ViewOnly,
            in_flight: Arc::default(),
        }
    }

    /// Let decisions wait for related pods in flight (live source only:
    /// nothing else tells when a pod is bound).
    pub fn with_in_flight(mut self, in_flight: InFlight) -> Self {
        self.in_flight = Arc::new(in_flight);
        self
    }

    /// Send bindings to the API server through `binder`.
    pub fn with_binder(mut self, binder: Binder) -> Self {
        self.binder = binder;
        self
    }

    /// The current snapshot, or 503 before the first one is published.
    pub fn snapshot(&self) -> Result<Arc<Snapshot>, ApiError> {
        self.view.current().ok_or_else(ApiError::not_ready)
    }
}
