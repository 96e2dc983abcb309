//! Reads from the API server of what the watch-fed view has not shown yet.
//! The view lags the API server by milliseconds to seconds; a bind of a
//! pod created a moment ago, or a pod naming a PriorityClass created a
//! moment ago, would otherwise be refused for that lag alone. Before such
//! a miss becomes a refusal, the handler reads the object here and decides
//! on the fresh copy (docs/live-source.md, "When the view has not seen it
//! yet").
//!
//! Each read is bounded (`live.readThroughTimeoutMillis`), at most one per
//! object is in flight ([`OneInFlight`]), and each is counted in
//! `kube_arbiter_view_read_through_total{kind,outcome}`. A GET or LIST
//! without a resourceVersion is served from etcd, so it is never older
//! than the question.

mod one_in_flight;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::{core, scheduling};
use kube::api::{Api, ListParams};
use kube::core::ApiResource;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use self::one_in_flight::OneInFlight;
use super::describe;
use super::ingest::{Ingested, LeanObject};
use crate::model::{Node, Pod, PriorityClass};

/// One object as the API server has it now: `None` when it does not exist.
pub type Read<T> = Result<Option<Arc<T>>, ReadError>;

/// Every object of a kind as the API server has them now.
pub type ListRead<T> = Result<Arc<[T]>, ReadError>;

/// Why the API server could not say.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error("the API server did not answer within {0:?}")]
    Timeout(Duration),
    #[error("the API server failed the read: {0}")]
    Failed(String),
}

/// Reads of pods, nodes and PriorityClasses, shared by the server's
/// requests.
pub struct ReadThrough {
    client: kube::Client,
    timeout: Duration,
    pods: OneInFlight<(String, String), Read<Pod>>,
    nodes: OneInFlight<String, Read<Node>>,
    classes: OneInFlight<String, Read<PriorityClass>>,
    class_lists: OneInFlight<(), ListRead<PriorityClass>>,
    metrics: ReadThroughMetrics,
}

impl ReadThrough {
    pub fn new(client: kube::Client, timeout: Duration, metrics: ReadThroughMetrics) -> Self {
        Self {
            client,
            timeout,
            pods: OneInFlight::default(),
            nodes: OneInFlight::default(),
            classes: OneInFlight::default(),
            class_lists: OneInFlight::default(),
            metrics,
        }
    }

    /// Pod `namespace/name` as the API server has it now.
    pub async fn pod(&self, namespace: &str, name: &str) -> Read<Pod> {
        let key = (namespace.to_string(), name.to_string());
        let resource = ApiResource::erase::<core::v1::Pod>(&());
        self.pods
            .read(key, Instant::now(), || {
                self.get(resource.clone(), Some(namespace), name, "Pod")
            })
            .await
    }

    /// Node `name` as the API server has it now.
    pub async fn node(&self, name: &str) -> Read<Node> {
        let resource = ApiResource::erase::<core::v1::Node>(&());
        self.nodes
            .read(name.to_string(), Instant::now(), || {
                self.get(resource.clone(), None, name, "Node")
            })
            .await
    }

    /// PriorityClass `name` as the API server has it now.
    pub async fn priority_class(&self, name: &str) -> Read<PriorityClass> {
        let resource = ApiResource::erase::<scheduling::v1::PriorityClass>(&());
        self.classes
            .read(name.to_string(), Instant::now(), || {
                self.get(resource.clone(), None, name, "PriorityClass")
            })
            .await
    }

    /// Every PriorityClass as the API server has them now.
    pub async fn priority_classes(&self) -> ListRead<PriorityClass> {
        self.class_lists
            .read((), Instant::now(), || self.list_classes())
            .await
    }

    /// One GET, bounded and counted; a 404 is `Ok(None)`.
    fn get<T: LeanObject>(
        &self,
        resource: ApiResource,
        namespace: Option<&str>,
        name: &str,
        kind: &'static str,
    ) -> impl Future<Output = Read<T>> + Send + 'static + use<T> {
        let api: Api<Ingested<T>> = match namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &resource),
            None => Api::all_with(self.client.clone(), &resource),
        };
        let (name, timeout, metrics) = (name.to_string(), self.timeout, self.metrics.clone());
        async move {
            let read = match tokio::time::timeout(timeout, api.get_opt(&name)).await {
                Err(_) => Err(ReadError::Timeout(timeout)),
                Ok(Err(e)) => Err(ReadError::Failed(describe(&e))),
                Ok(Ok(found)) => Ok(found.map(|i| Arc::new(i.object))),
            };
            let outcome = match &read {
                Ok(Some(_)) => "found",
                Ok(None) => "absent",
                Err(e) => e.outcome(),
            };
            metrics.count(kind, outcome);
            read
        }
    }

    /// One LIST of every PriorityClass, bounded and counted.
    fn list_classes(
        &self,
    ) -> impl Future<Output = ListRead<PriorityClass>> + Send + 'static + use<> {
        let resource = ApiResource::erase::<scheduling::v1::PriorityClass>(&());
        let api: Api<Ingested<PriorityClass>> = Api::all_with(self.client.clone(), &resource);
        let (timeout, metrics) = (self.timeout, self.metrics.clone());
        async move {
            let read = match tokio::time::timeout(timeout, api.list(&ListParams::default())).await {
                Err(_) => Err(ReadError::Timeout(timeout)),
                Ok(Err(e)) => Err(ReadError::Failed(describe(&e))),
                Ok(Ok(list)) => Ok(list.items.into_iter().map(|i| i.object).collect()),
            };
            let outcome = match &read {
                Ok(_) => "listed",
                Err(e) => e.outcome(),
            };
            metrics.count("PriorityClass", outcome);
            read
        }
    }
}

impl ReadError {
    fn outcome(&self) -> &'static str {
        match self {
            Self::Timeout(_) => "timeout",
            Self::Failed(_) => "error",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReadLabel {
    kind: &'static str,
    outcome: &'static str,
}

/// Reads sent to the API server, by kind and outcome (found, absent,
/// listed, error, timeout).
#[derive(Clone, Default)]
pub struct ReadThroughMetrics {
    reads: Family<ReadLabel, Counter>,
}

impl ReadThroughMetrics {
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "view_read_through",
            "Objects the cluster view had not shown yet, read from the API server before a \
             refusal, by kind and outcome (found, absent, listed, error, timeout)",
            self.reads.clone(),
        );
        // Present at 0 from the start, so a rate() over them is defined.
        for kind in ["Pod", "Node", "PriorityClass"] {
            for outcome in ["found", "absent", "error", "timeout"] {
                let _ = self.reads.get_or_create(&ReadLabel { kind, outcome });
            }
        }
        let listed = ReadLabel {
            kind: "PriorityClass",
            outcome: "listed",
        };
        let _ = self.reads.get_or_create(&listed);
    }

    fn count(&self, kind: &'static str, outcome: &'static str) {
        self.reads.get_or_create(&ReadLabel { kind, outcome }).inc();
    }
}
