//! What every handler gets: the cluster view and the settings, the
//! ledgers and caches a server keeps between requests, and what the HTTPS
//! layer reads of them ([`ServerState`]).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::FromRef;

use crate::cluster::live::ReadThrough;
use crate::cluster::{Binder, ClusterView, InFlight, Snapshot};
use crate::config::Config;
use crate::config::ServerSettings;
use crate::deletion_cost::Deployments;
use crate::log_every::LogEvery;
use crate::model::RecentNodes;
use crate::parallel::Splitter;
use crate::server::ServerState;
use crate::server::access::AccessRules;
use crate::server::error::ApiError;
use crate::server::metrics::Metrics;
use crate::server::people::PeopleAuth;

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
    /// Who may call the extender verbs and the webhooks.
    pub access: Arc<AccessRules>,
    /// How people and tools are authenticated and authorized.
    pub people: PeopleAuth,
    /// The schedulerNames whose pods `/scheduler/bind` may bind.
    pub scheduler_names: Arc<[String]>,
    /// The Deployments' annotations (live mode), which decide their
    /// ReplicaSets' scale-in opt-in.
    pub deployments: Option<Deployments>,
    /// Warnings that could repeat on every request, each rate-limited.
    pub warnings: Arc<Warnings>,
    /// Nodes decoded from recent Nodes-mode requests, by their exact text.
    pub recent_nodes: Arc<RecentNodes>,
    /// The wake-ahead of the threads a request's work splits over.
    pub splitter: Splitter,
    /// Where a miss in the view is confirmed before it becomes a refusal:
    /// the API server (live), or nowhere (`--cluster-state`: the file is
    /// the whole cluster).
    pub reads: Option<Arc<ReadThrough>>,
}

/// The rate limits of warnings that a request can repeat: one gate each,
/// shared by the server's requests.
pub struct Warnings {
    /// Preempt requests naming nodes or victims the view does not know.
    pub preempt_unknown_names: LogEvery,
    /// In-flight waits that gave up (a stuck binding path would otherwise
    /// log once per pod).
    pub in_flight_timeouts: LogEvery,
}

impl Default for Warnings {
    fn default() -> Self {
        Self {
            preempt_unknown_names: LogEvery::new(Duration::from_secs(30)),
            in_flight_timeouts: LogEvery::new(Duration::from_secs(1)),
        }
    }
}

impl AppState {
    pub fn new(view: Arc<ClusterView>, config: Config) -> Self {
        Self {
            view,
            config: Arc::new(config),
            metrics: Arc::new(Metrics::new()),
            binder: Binder::ViewOnly,
            in_flight: Arc::default(),
            access: Arc::default(),
            people: PeopleAuth::default(),
            scheduler_names: Arc::from(["default-scheduler".to_string()]),
            deployments: None,
            warnings: Arc::default(),
            recent_nodes: Arc::default(),
            splitter: Splitter::default(),
            reads: None,
        }
    }

    /// Let decisions wait for related pods in flight (live source only:
    /// nothing else tells when a pod is bound).
    pub fn with_in_flight(mut self, in_flight: InFlight) -> Self {
        self.in_flight = Arc::new(in_flight);
        self
    }

    /// Who may call which routes (default: kube-scheduler's certificate on
    /// the extender verbs, anyone on the webhooks).
    pub fn with_access(mut self, access: AccessRules) -> Self {
        self.access = Arc::new(access);
        self
    }

    /// How people and tools are checked (default: loopback callers only).
    pub fn with_people(mut self, people: PeopleAuth) -> Self {
        self.people = people;
        self
    }

    /// Bind only pods whose schedulerName is one of `names`.
    pub fn with_scheduler_names(mut self, names: Vec<String>) -> Self {
        self.scheduler_names = names.into();
        self
    }

    /// Read the scale-in opt-in of Deployments from `deployments`.
    pub fn with_deployments(mut self, deployments: Deployments) -> Self {
        self.deployments = Some(deployments);
        self
    }

    /// Send bindings to the API server through `binder`.
    pub fn with_binder(mut self, binder: Binder) -> Self {
        self.binder = binder;
        self
    }

    /// Confirm what the view has not shown yet with `reads`.
    pub fn with_reads(mut self, reads: ReadThrough) -> Self {
        self.reads = Some(Arc::new(reads));
        self
    }

    /// The current snapshot, or 503 before the first one is published.
    pub fn snapshot(&self) -> Result<Arc<Snapshot>, ApiError> {
        self.view.current().ok_or_else(ApiError::not_ready)
    }
}

/// The splitter the `SplitBody` extractor wakes ahead with.
impl FromRef<AppState> for Splitter {
    fn from_ref(state: &AppState) -> Self {
        state.splitter.clone()
    }
}

impl ServerState for AppState {
    fn settings(&self) -> &ServerSettings {
        &self.config.server
    }

    fn access(&self) -> &Arc<AccessRules> {
        &self.access
    }

    fn people(&self) -> &PeopleAuth {
        &self.people
    }

    fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// Ready once a cluster view is published and its source is in step;
    /// before that every policy answer would be a guess, and while a watch
    /// is out of step too long kube-scheduler should know (its `ignorable`
    /// lets scheduling go on without us).
    fn readiness(&self) -> Result<(), ApiError> {
        if self.view.is_stale() {
            return Err(ApiError::new(
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                "cluster view is stale: a watch of the API server has been out of step too long",
            ));
        }
        self.snapshot().map(|_| ())
    }

    /// The in-flight gauge and the view's metrics are read at scrape time.
    fn metrics_text(&self) -> String {
        let in_flight = self.in_flight.len(self.view.current().as_deref());
        self.metrics.in_flight_pods.set(in_flight as i64);
        self.metrics.render(&self.view)
    }
}
