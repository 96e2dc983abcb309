//! An in-process HTTP server that speaks the Kubernetes API protocol for
//! the kinds kube-arbiter watches, so the real kube-rs client can be tested
//! against it: paginated lists with a resourceVersion, `?watch=true`
//! streams of ADDED/MODIFIED/DELETED/BOOKMARK events resumed from a
//! resourceVersion, `410 Gone` (an ERROR event carrying a Status) for a
//! version older than the retained history, and the `pods/binding`
//! subresource. Tests drive it: change objects, pause event delivery,
//! compact history, cut watch connections, make a kind unavailable, refuse
//! bindings or hold each one for a random time before committing it (a
//! real API server's Binding takes tens of ms), record a scheduling failure
//! in a pod's status, and stop and start the server on its address (an API server
//! that is not up yet, or restarts: objects and history survive). It also
//! answers TokenReviews and SubjectAccessReviews from the tokens and grants
//! a test gives it ([`FakeApiServer::add_token`], [`FakeApiServer::allow`]),
//! JSON merge patches of pods (a `metadata.uid` in the patch that is not the
//! pod's is refused, 422, as the API server refuses to change a UID), and
//! coordination.k8s.io/v1 Leases: get, create (409 AlreadyExists) and
//! update (409 Conflict on a stale resourceVersion). A GET of one object
//! answers from the stored objects even while watch events are held back
//! ([`FakeApiServer::pause_events`]): what a real API server answers while
//! a client's watch lags. Such GETs can be slowed down, and how many ran at
//! once is recorded. Requests of a given method and path prefix can be
//! left unanswered ([`FakeApiServer::hang`]): an API server that accepts
//! the connection and never replies.
//! Plain HTTP, or HTTPS with its own CA as a real API server serves
//! ([`FakeApiServer::start_tls`]).
#![allow(dead_code)] // each test binary uses a different part of it

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum_server::accept::Accept;
use axum_server::tls_rustls::{RustlsAcceptor, RustlsConfig};
use futures::StreamExt;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use kube_arbiter::testing::{MakeNode, MakePod, make_node, make_pod};
use serde_json::{Value, json};
use tokio::sync::broadcast;

/// A collection the server serves: URL path, apiVersion, kind.
pub const RESOURCES: [(&str, &str, &str); 11] = [
    ("/api/v1/nodes", "v1", "Node"),
    ("/api/v1/pods", "v1", "Pod"),
    ("/api/v1/namespaces", "v1", "Namespace"),
    (
        "/apis/policy/v1/poddisruptionbudgets",
        "policy/v1",
        "PodDisruptionBudget",
    ),
    (
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        "scheduling.k8s.io/v1",
        "PriorityClass",
    ),
    (
        "/apis/resource.k8s.io/v1/deviceclasses",
        "resource.k8s.io/v1",
        "DeviceClass",
    ),
    ("/api/v1/services", "v1", "Service"),
    ("/apis/apps/v1/replicasets", "apps/v1", "ReplicaSet"),
    ("/apis/apps/v1/statefulsets", "apps/v1", "StatefulSet"),
    ("/apis/apps/v1/deployments", "apps/v1", "Deployment"),
    (
        "/api/v1/replicationcontrollers",
        "v1",
        "ReplicationController",
    ),
];

/// A bearer token every fake API server knows from the start, for a user
/// allowed `get` on `/metrics` (as Prometheus' ServiceAccount would be):
/// tests read a live server's metrics with it.
pub const METRICS_TOKEN: &str = "metrics-reader-token";
const METRICS_READER: &str = "system:serviceaccount:monitoring:prometheus";

type Items = Arc<BTreeMap<String, Arc<str>>>;

#[derive(Default)]
struct Collection {
    items: Items,
    /// (resourceVersion, event line) still replayable to a resuming watch.
    history: VecDeque<(u64, Arc<str>)>,
    /// A watch from a version below this gets 410 Gone.
    oldest_resumable: u64,
    unavailable: bool,
    /// Answer 404, as an API server without the group or version does.
    not_served: bool,
}

#[derive(Default)]
struct Inner {
    rv: u64,
    collections: HashMap<&'static str, Collection>,
    /// Consistent list snapshots being paged through: token → (rv, items).
    pages: HashMap<u64, (u64, Items)>,
    next_token: u64,
    paused: bool,
    held: Vec<(&'static str, u64, Arc<str>)>,
    binding_failure: Option<(u16, String)>,
    /// Commit each Binding, then answer with a body no client can read.
    lose_binding_answers: bool,
    /// Each Binding is held this long (ms, uniformly random, inclusive)
    /// before it is committed and its watch event sent.
    binding_latency_ms: (u64, u64),
    /// Refuse every n-th Binding (0: none), after its latency.
    refuse_every: u64,
    /// splitmix64 state for the latencies.
    rng: u64,
    binding_count: u64,
    bindings: Vec<Value>,
    requests: Vec<String>,
    identities: Identities,
    /// Leases by "namespace/name".
    leases: BTreeMap<String, Value>,
    /// Each GET of one object is held this long before it answers.
    get_latency: std::time::Duration,
    gets_at_once: usize,
    most_gets_at_once: usize,
    /// (method, path prefix) of requests received and never answered.
    hung: Vec<(Method, String)>,
}

#[derive(Clone)]
struct Shared {
    inner: Arc<Mutex<Inner>>,
    /// (collection, resourceVersion, event line) to live watches.
    events: broadcast::Sender<(&'static str, u64, Arc<str>)>,
    /// Ends every open watch stream when sent to.
    cut: broadcast::Sender<()>,
}

pub struct FakeApiServer {
    shared: Shared,
    pub addr: SocketAddr,
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
    /// Accepts and serves connections; None while stopped.
    task: Option<tokio::task::JoinHandle<()>>,
    /// Serve HTTPS with this.
    tls: Option<RustlsAcceptor>,
}

impl Drop for FakeApiServer {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

fn collection_of(kind: &str) -> &'static str {
    RESOURCES
        .iter()
        .find(|(_, _, k)| *k == kind)
        .map(|(p, _, _)| *p)
        .unwrap_or_else(|| panic!("fake API server does not serve {kind}"))
}

fn key_of(obj: &Value) -> String {
    let m = &obj["metadata"];
    format!(
        "{}/{}",
        m["namespace"].as_str().unwrap_or(""),
        m["name"].as_str().unwrap_or("")
    )
}

fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
           "status": "Failure", "message": message, "reason": reason, "code": code})
}

fn json_response(code: u16, body: &Value) -> Response {
    (
        StatusCode::from_u16(code).unwrap(),
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

impl FakeApiServer {
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut server = Self::at(addr, None);
        server.task = Some(tokio::spawn(serve(listener, server.shared.clone(), None)));
        server
    }

    /// [`FakeApiServer::start`] over HTTPS, with a certificate for
    /// 127.0.0.1 from a CA the kubeconfig names. A connection it drops
    /// ends without TLS close_notify, as a crashed API server's do.
    pub async fn start_tls() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (acceptor, ca_pem) = tls_for_localhost();
        let mut server = Self::at(addr, Some(&ca_pem));
        server.tls = Some(acceptor.clone());
        let task = serve(listener, server.shared.clone(), Some(acceptor));
        server.task = Some(tokio::spawn(task));
        server
    }

    /// A server whose kubeconfig names a free local port it does not
    /// listen on yet: clients get "connection refused" until
    /// [`FakeApiServer::restart`].
    pub fn not_started() -> Self {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = probe.local_addr().unwrap();
        drop(probe);
        Self::at(addr, None)
    }

    /// Go down as a crashed API server does: stop listening and drop every
    /// open connection mid-stream (watches see their connection end).
    pub async fn stop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
    }

    /// Listen on the same address again, with the same objects and history.
    pub async fn restart(&mut self) {
        self.stop().await;
        let listener = tokio::net::TcpListener::bind(self.addr).await.unwrap();
        let task = serve(listener, self.shared.clone(), self.tls.clone());
        self.task = Some(tokio::spawn(task));
    }

    /// A server at `addr` and its kubeconfig: HTTPS trusting `ca_pem`, or
    /// plain HTTP.
    fn at(addr: SocketAddr, ca_pem: Option<&str>) -> Self {
        let server = Self::without_metrics_reader(addr, ca_pem);
        server.add_token(METRICS_TOKEN, METRICS_READER, &[]);
        server.allow_non_resource(METRICS_READER, "get", "/metrics");
        server
    }

    fn without_metrics_reader(addr: SocketAddr, ca_pem: Option<&str>) -> Self {
        let (events, _) = broadcast::channel(1 << 16);
        let (cut, _) = broadcast::channel(16);
        let mut inner = Inner::default();
        for (path, _, _) in RESOURCES {
            inner.collections.insert(path, Collection::default());
        }
        let shared = Shared {
            inner: Arc::new(Mutex::new(inner)),
            events,
            cut,
        };
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        let cluster = match ca_pem {
            None => format!("server: http://{addr}"),
            Some(pem) => {
                use base64::Engine;
                let ca = base64::engine::general_purpose::STANDARD.encode(pem);
                format!("server: https://{addr}\n    certificate-authority-data: {ca}")
            }
        };
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    {cluster}\n\
                 users:\n- name: tester\n  user: {{}}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: tester\n\
                 current-context: fake\n"
            ),
        )
        .unwrap();
        FakeApiServer {
            shared,
            addr,
            kubeconfig,
            _dir: dir,
            task: None,
            tls: None,
        }
    }

    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.shared.inner.lock().unwrap()
    }

    /// Create or replace an object of `kind`, and tell the watches (unless
    /// event delivery is paused).
    pub fn apply(&self, kind: &str, obj: Value) {
        let path = collection_of(kind);
        let mut inner = self.lock();
        let exists = inner.collections[path].items.contains_key(&key_of(&obj));
        let kind_event = if exists { "MODIFIED" } else { "ADDED" };
        store(&mut inner, &self.shared, path, kind_event, obj, true);
    }

    pub fn delete(&self, kind: &str, namespace: &str, name: &str) {
        let path = collection_of(kind);
        let mut inner = self.lock();
        let key = format!("{namespace}/{name}");
        let Some(old) = inner.collections[path].items.get(&key).cloned() else {
            return;
        };
        let obj: Value = serde_json::from_str(&old).unwrap();
        store(&mut inner, &self.shared, path, "DELETED", obj, true);
    }

    /// Change an object without any watch ever hearing of it, as if the
    /// event was lost to history compaction.
    pub fn apply_unannounced(&self, kind: &str, obj: Value) {
        let path = collection_of(kind);
        let mut inner = self.lock();
        store(&mut inner, &self.shared, path, "MODIFIED", obj, false);
    }

    pub fn delete_unannounced(&self, kind: &str, namespace: &str, name: &str) {
        let path = collection_of(kind);
        let mut inner = self.lock();
        let key = format!("{namespace}/{name}");
        let Some(old) = inner.collections[path].items.get(&key).cloned() else {
            return;
        };
        let obj: Value = serde_json::from_str(&old).unwrap();
        store(&mut inner, &self.shared, path, "DELETED", obj, false);
    }

    /// Load many objects at once (no events; for initial state).
    pub fn load(&self, kind: &str, objs: impl IntoIterator<Item = Value>) {
        let path = collection_of(kind);
        let mut inner = self.lock();
        for obj in objs {
            store(&mut inner, &self.shared, path, "ADDED", obj, false);
        }
    }

    /// Forget all history: a watch resuming from any version seen so far
    /// gets 410 Gone.
    pub fn compact(&self) {
        let mut inner = self.lock();
        inner.rv += 1;
        let rv = inner.rv;
        for c in inner.collections.values_mut() {
            c.history.clear();
            c.oldest_resumable = rv;
        }
    }

    /// End every open watch stream (the client reconnects).
    pub fn cut_watches(&self) {
        let _ = self.shared.cut.send(());
    }

    /// Hold back watch events until [`FakeApiServer::resume_events`].
    pub fn pause_events(&self) {
        self.lock().paused = true;
    }

    pub fn resume_events(&self) {
        let mut inner = self.lock();
        inner.paused = false;
        for (path, rv, line) in std::mem::take(&mut inner.held) {
            publish(&mut inner, &self.shared, path, rv, line);
        }
    }

    /// While unavailable, lists and watches of `kind` answer 500 and open
    /// watches of it end.
    pub fn set_unavailable(&self, kind: &str, unavailable: bool) {
        let path = collection_of(kind);
        self.lock().collections.get_mut(path).unwrap().unavailable = unavailable;
        if unavailable {
            self.cut_watches();
        }
    }

    /// While not served, lists, watches and GETs of `kind` answer 404 the
    /// way an API server without its group or version does.
    pub fn set_served(&self, kind: &str, served: bool) {
        let path = collection_of(kind);
        self.lock().collections.get_mut(path).unwrap().not_served = !served;
        if !served {
            self.cut_watches();
        }
    }

    /// Answer bindings with this status code and message (None: succeed).
    pub fn fail_bindings(&self, failure: Option<(u16, &str)>) {
        self.lock().binding_failure = failure.map(|(c, m)| (c, m.to_string()));
    }

    /// Commit each Binding and then lose its answer (the client reads an
    /// unreadable body), as when kube-apiserver's connection is cut after
    /// the write.
    pub fn lose_binding_answers(&self, lose: bool) {
        self.lock().lose_binding_answers = lose;
    }

    /// Hold each Binding `ms` (uniformly random in the range, from `seed`)
    /// before committing it, and refuse every `refuse_every`-th one (0:
    /// none) with a 500, as an API server under load or an etcd hiccup
    /// does. The POST answers only once the Binding is committed (or
    /// refused), like a real one.
    pub fn set_binding_latency(&self, ms: (u64, u64), refuse_every: u64, seed: u64) {
        let mut inner = self.lock();
        inner.binding_latency_ms = ms;
        inner.refuse_every = refuse_every;
        inner.rng = seed;
    }

    /// Hold each GET of one object this long before answering.
    pub fn set_get_latency(&self, latency: std::time::Duration) {
        self.lock().get_latency = latency;
    }

    /// Receive requests of `method` whose path starts with `prefix` and
    /// never answer them (nor act on them), until [`Self::answer_all`].
    pub fn hang(&self, method: &str, prefix: &str) {
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        self.lock().hung.push((method, prefix.to_string()));
    }

    /// Answer every request again (those already hung stay unanswered).
    pub fn answer_all(&self) {
        self.lock().hung.clear();
    }

    /// The most GETs of one object that were being answered at once.
    pub fn most_gets_at_once(&self) -> usize {
        self.lock().most_gets_at_once
    }

    /// GETs of one object received so far, as their paths.
    pub fn gets(&self) -> Vec<String> {
        self.requests()
            .into_iter()
            .filter_map(|r| {
                r.strip_prefix("GET ")
                    .map(|p| p.trim_end_matches('?').to_string())
            })
            .filter(|p| object_at(p).is_some())
            .collect()
    }

    /// A handle that tasks outliving a borrow of the server can keep.
    pub fn handle(&self) -> ApiHandle {
        ApiHandle {
            shared: self.shared.clone(),
        }
    }

    /// Bearer `token` authenticates as `username` in `groups` (and
    /// `system:authenticated`, as every authenticated user is).
    pub fn add_token(&self, token: &str, username: &str, groups: &[&str]) {
        let groups = groups.iter().map(|g| g.to_string()).collect();
        let identity = (username.to_string(), groups);
        self.lock().identities.tokens.insert(token.into(), identity);
    }

    /// RBAC grants `username` `verb` on `resource` (`"pods"`, or
    /// `"priorityclasses.scheduling.k8s.io"` outside the core group; `"*"`
    /// any) in `namespace` (None: every namespace and cluster scope, as a
    /// ClusterRoleBinding does).
    pub fn allow(&self, username: &str, verb: &str, resource: &str, namespace: Option<&str>) {
        self.lock().identities.grants.push(Grant::Resource {
            user: username.into(),
            verb: verb.into(),
            resource: resource.into(),
            namespace: namespace.map(String::from),
        });
    }

    /// RBAC grants `username` `verb` on the nonResourceURL `path` (a
    /// trailing `*` matches any rest).
    pub fn allow_non_resource(&self, username: &str, verb: &str, path: &str) {
        self.lock().identities.grants.push(Grant::NonResource {
            user: username.into(),
            verb: verb.into(),
            path: path.into(),
        });
    }

    /// TokenReviews and SubjectAccessReviews answered so far.
    pub fn review_count(&self) -> u64 {
        self.lock().identities.reviews
    }

    /// Binding bodies received so far.
    pub fn bindings(&self) -> Vec<Value> {
        self.lock().bindings.clone()
    }

    /// Requests received so far, as "METHOD path?query".
    pub fn requests(&self) -> Vec<String> {
        self.lock().requests.clone()
    }

    /// A Lease as stored.
    pub fn lease(&self, namespace: &str, name: &str) -> Option<Value> {
        self.lock()
            .leases
            .get(&format!("{namespace}/{name}"))
            .cloned()
    }

    pub fn get(&self, kind: &str, namespace: &str, name: &str) -> Option<Value> {
        let path = collection_of(kind);
        let inner = self.lock();
        inner.collections[path]
            .items
            .get(&format!("{namespace}/{name}"))
            .map(|s| serde_json::from_str(s).unwrap())
    }
}

/// A clone of the server's state for tasks that outlive a borrow of it.
#[derive(Clone)]
pub struct ApiHandle {
    shared: Shared,
}

impl ApiHandle {
    /// What kube-scheduler's failure handler writes after a failed cycle
    /// (upstream `updatePod` with `podutil.UpdatePodCondition`): the pod's
    /// `PodScheduled` condition set to False with `reason` and `message`,
    /// the transition time kept when the status did not change, and
    /// nothing written (no watch event) when the condition is already so.
    /// Whether it changed the pod.
    pub fn record_scheduling_failure(
        &self,
        namespace: &str,
        name: &str,
        reason: &str,
        message: &str,
    ) -> bool {
        let mut inner = self.shared.inner.lock().unwrap();
        let key = format!("{namespace}/{name}");
        let Some(text) = inner.collections["/api/v1/pods"].items.get(&key).cloned() else {
            return false;
        };
        let mut pod: Value = serde_json::from_str(&text).unwrap();
        let conditions = pod["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let old = conditions.iter().find(|c| c["type"] == "PodScheduled");
        if old.is_some_and(|c| {
            c["status"] == "False" && c["reason"] == reason && c["message"] == message
        }) {
            return false;
        }
        let since = match old {
            Some(c) if c["status"] == "False" => c["lastTransitionTime"].clone(),
            _ => json!(now_rfc3339()),
        };
        let condition = json!({"type": "PodScheduled", "status": "False", "reason": reason,
                               "message": message, "lastTransitionTime": since, "lastProbeTime": null});
        let mut conditions: Vec<Value> = conditions
            .into_iter()
            .filter(|c| c["type"] != "PodScheduled")
            .collect();
        conditions.push(condition);
        pod["status"]["conditions"] = Value::Array(conditions);
        store(
            &mut inner,
            &self.shared,
            "/api/v1/pods",
            "MODIFIED",
            pod,
            true,
        );
        true
    }
}

/// A TLS acceptor with a certificate for 127.0.0.1, and the PEM of the CA
/// that signed it.
fn tls_for_localhost() -> (RustlsAcceptor, String) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, KeyUsagePurpose};
    kube_arbiter::server::tls::install_crypto_provider();
    let mut ca_params = CertificateParams::default();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate().unwrap();
    let ca_pem = ca_params.self_signed(&ca_key).unwrap().pem();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let key_der = rustls_pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    let mut config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], key_der)
        .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = RustlsAcceptor::new(RustlsConfig::from_config(Arc::new(config)));
    (acceptor, ca_pem)
}

/// Accept and serve connections until aborted; aborting drops every open
/// connection with it (they are tasks of this one's JoinSet).
async fn serve(listener: tokio::net::TcpListener, shared: Shared, tls: Option<RustlsAcceptor>) {
    let app = axum::Router::new().fallback(handle).with_state(shared);
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((tcp, _)) = accepted else { continue };
                // Like the real API server (Go sets TCP_NODELAY on every
                // connection): without it, Nagle holds a watch event behind
                // the client's delayed ACK of the previous one, for up to 40 ms.
                let _ = tcp.set_nodelay(true);
                let service = TowerToHyperService::new(app.clone());
                let tls = tls.clone();
                connections.spawn(async move {
                    let http = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                    let _ = match tls {
                        None => http.serve_connection(TokioIo::new(tcp), service).await,
                        Some(acceptor) => {
                            let Ok((tls, service)) = acceptor.accept(tcp, service).await else {
                                return;
                            };
                            http.serve_connection(TokioIo::new(tls), service).await
                        }
                    };
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Give `obj` the next resourceVersion, store it, and (if `announce`)
/// record and send its watch event.
fn store(
    inner: &mut Inner,
    shared: &Shared,
    path: &'static str,
    event_type: &str,
    mut obj: Value,
    announce: bool,
) {
    inner.rv += 1;
    let rv = inner.rv;
    obj["metadata"]["resourceVersion"] = json!(rv.to_string());
    let key = key_of(&obj);
    let text: Arc<str> = obj.to_string().into();
    let c = inner.collections.get_mut(path).unwrap();
    let items = Arc::make_mut(&mut c.items);
    if event_type == "DELETED" {
        items.remove(&key);
    } else {
        items.insert(key, text);
    }
    if !announce {
        return;
    }
    let line: Arc<str> = format!("{}\n", json!({"type": event_type, "object": obj})).into();
    if inner.paused {
        inner.held.push((path, rv, line));
    } else {
        publish(inner, shared, path, rv, line);
    }
}

fn publish(inner: &mut Inner, shared: &Shared, path: &'static str, rv: u64, line: Arc<str>) {
    let c = inner.collections.get_mut(path).unwrap();
    c.history.push_back((rv, line.clone()));
    let _ = shared.events.send((path, rv, line));
}

async fn handle(State(shared): State<Shared>, req: Request) -> Response {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let query: HashMap<String, String> = req
        .uri()
        .query()
        .map(|q| {
            url_pairs(q)
                .into_iter()
                .collect::<HashMap<String, String>>()
        })
        .unwrap_or_default();
    shared.inner.lock().unwrap().requests.push(format!(
        "{method} {path}?{}",
        req.uri().query().unwrap_or("")
    ));
    let hung = {
        let inner = shared.inner.lock().unwrap();
        inner
            .hung
            .iter()
            .any(|(m, prefix)| *m == method && path.starts_with(prefix.as_str()))
    };
    if hung {
        return std::future::pending().await;
    }
    if path == "/version" {
        return json_response(
            200,
            &json!({"major": "1", "minor": "34", "gitVersion": "v1.34.0-fake",
                    "gitCommit": "", "gitTreeState": "", "buildDate": "",
                    "goVersion": "", "compiler": "", "platform": "linux/amd64"}),
        );
    }
    if path.starts_with(LEASES) {
        let body = axum::body::to_bytes(req.into_body(), 1 << 20)
            .await
            .unwrap();
        return lease(&shared, &method, &path, &body);
    }
    if method == Method::PATCH {
        let body = axum::body::to_bytes(req.into_body(), 1 << 20)
            .await
            .unwrap();
        return patch_pod(&shared, &path, &body);
    }
    if method == Method::POST {
        let body = axum::body::to_bytes(req.into_body(), 1 << 20)
            .await
            .unwrap();
        if let Some(answer) = answer_review(&shared, &path, &body) {
            return answer;
        }
        let (latency, refuse) = binding_latency(&shared);
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        if refuse {
            shared.inner.lock().unwrap().bindings.push(Value::Null);
            let message = "etcdserver: request timed out";
            return json_response(500, &status(500, "InternalError", message));
        }
        return bind(&shared, &path, &body);
    }
    if method == Method::GET
        && let Some((coll, key)) = object_at(&path)
    {
        return get_one(&shared, coll, &key).await;
    }
    let not_served = |path: &str| {
        let inner = shared.inner.lock().unwrap();
        RESOURCES.iter().any(|(coll, _, _)| {
            path.starts_with(coll) && inner.collections.get(coll).is_some_and(|c| c.not_served)
        })
    };
    if not_served(&path) {
        // kube-apiserver's answer to a path no installed group serves.
        return json_response(
            404,
            &status(
                404,
                "NotFound",
                "the server could not find the requested resource",
            ),
        );
    }
    let Some((coll, api_version, kind)) = RESOURCES.iter().find(|(p, _, _)| *p == path) else {
        return json_response(404, &status(404, "NotFound", &format!("no route {path}")));
    };
    if shared.inner.lock().unwrap().collections[coll].unavailable {
        // 500, not 503: kube-client retries 503s itself for a long while.
        return json_response(
            500,
            &status(500, "InternalError", "etcdserver: request timed out"),
        );
    }
    if query.get("watch").is_some_and(|w| w == "true" || w == "1") {
        watch(&shared, coll, api_version, kind, &query)
    } else {
        list(&shared, coll, api_version, kind, &query)
    }
}

/// The collection and key ("namespace/name", "/name" when cluster-scoped)
/// of a one-object path: `/api/v1/nodes/NAME`,
/// `/api/v1/namespaces/NS/pods/NAME`, `/apis/G/V/priorityclasses/NAME`.
fn object_at(path: &str) -> Option<(&'static str, String)> {
    RESOURCES.iter().find_map(|(coll, _, _)| {
        let (base, plural) = coll.rsplit_once('/')?;
        let rest = path.strip_prefix(base)?.strip_prefix('/')?;
        match rest.split('/').collect::<Vec<_>>()[..] {
            ["namespaces", ns, p, name] if p == plural => Some((*coll, format!("{ns}/{name}"))),
            [p, name] if p == plural => Some((*coll, format!("/{name}"))),
            _ => None,
        }
    })
}

/// A GET being answered, until dropped (answered, or given up by its
/// client).
struct GetAnswering(Shared);

impl GetAnswering {
    fn new(shared: &Shared) -> Self {
        let mut inner = shared.inner.lock().unwrap();
        inner.gets_at_once += 1;
        inner.most_gets_at_once = inner.most_gets_at_once.max(inner.gets_at_once);
        Self(shared.clone())
    }
}

impl Drop for GetAnswering {
    fn drop(&mut self) {
        self.0.inner.lock().unwrap().gets_at_once -= 1;
    }
}

/// GET of one object: it as stored, or 404 NotFound; after the GET latency.
async fn get_one(shared: &Shared, coll: &'static str, key: &str) -> Response {
    let _answering = GetAnswering::new(shared);
    let latency = shared.inner.lock().unwrap().get_latency;
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    let inner = shared.inner.lock().unwrap();
    let c = &inner.collections[coll];
    if c.unavailable {
        return json_response(
            500,
            &status(500, "InternalError", "etcdserver: request timed out"),
        );
    }
    match c.items.get(key) {
        Some(text) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            text.to_string(),
        )
            .into_response(),
        None => {
            let (_, name) = key.split_once('/').unwrap_or(("", key));
            let resource = coll.rsplit('/').next().unwrap_or(coll);
            let message = format!("{resource} \"{name}\" not found");
            json_response(404, &status(404, "NotFound", &message))
        }
    }
}

fn url_pairs(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (k.to_string(), v.replace("%2F", "/").replace("%3A", ":"))
        })
        .collect()
}

fn list(
    shared: &Shared,
    coll: &'static str,
    api_version: &str,
    kind: &str,
    query: &HashMap<String, String>,
) -> Response {
    let limit: usize = query
        .get("limit")
        .and_then(|l| l.parse().ok())
        .filter(|l| *l > 0)
        .unwrap_or(usize::MAX);
    let mut inner = shared.inner.lock().unwrap();
    // continue = "<token>:<last key>"
    let (token, rv, items, after) = match query.get("continue").filter(|c| !c.is_empty()) {
        Some(c) => {
            let (t, after) = c.split_once(':').unwrap();
            let t: u64 = t.parse().unwrap();
            let (rv, items) = inner.pages[&t].clone();
            (t, rv, items, Some(after.to_string()))
        }
        None => {
            inner.next_token += 1;
            let t = inner.next_token;
            let rv = inner.rv;
            let items = inner.collections[coll].items.clone();
            inner.pages.insert(t, (rv, items.clone()));
            (t, rv, items, None)
        }
    };
    drop(inner);
    let range: Box<dyn Iterator<Item = (&String, &Arc<str>)>> = match &after {
        Some(a) => Box::new(
            items.range::<String, _>((std::ops::Bound::Excluded(a), std::ops::Bound::Unbounded)),
        ),
        None => Box::new(items.iter()),
    };
    let mut body = String::with_capacity(1 << 16);
    body.push_str(&format!(
        r#"{{"kind":"{kind}List","apiVersion":"{api_version}","metadata":{{"resourceVersion":"{rv}""#
    ));
    let mut page = String::new();
    let mut last = None;
    let mut more = false;
    for (n, (k, v)) in range.enumerate() {
        if n == limit {
            more = true;
            break;
        }
        if n > 0 {
            page.push(',');
        }
        page.push_str(v);
        last = Some(k.clone());
    }
    if more {
        body.push_str(&format!(r#","continue":"{token}:{}""#, last.unwrap()));
    } else {
        shared.inner.lock().unwrap().pages.remove(&token);
    }
    body.push_str(r#"},"items":["#);
    body.push_str(&page);
    body.push_str("]}");
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

fn watch(
    shared: &Shared,
    coll: &'static str,
    api_version: &str,
    kind: &str,
    query: &HashMap<String, String>,
) -> Response {
    let from: u64 = query
        .get("resourceVersion")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let bookmarks = query
        .get("allowWatchBookmarks")
        .is_some_and(|b| b == "true");
    // Subscribe before reading history so nothing falls between the two.
    let mut live = shared.events.subscribe();
    let mut cut = shared.cut.subscribe();
    let inner = shared.inner.lock().unwrap();
    let c = &inner.collections[coll];
    if from < c.oldest_resumable {
        let gone = status(
            410,
            "Expired",
            &format!("too old resource version: {from} ({})", c.oldest_resumable),
        );
        let line = format!("{}\n", json!({"type": "ERROR", "object": gone}));
        drop(inner);
        return Response::builder()
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(line))
            .unwrap();
    }
    let chunks: Vec<Result<Bytes, Infallible>> = c
        .history
        .iter()
        .filter(|(rv, _)| *rv > from)
        .map(|(_, l)| Ok(Bytes::from(l.as_bytes().to_vec())))
        .collect();
    let mut last_sent = c.history.back().map_or(from, |(rv, _)| (*rv).max(from));
    let current = inner.rv;
    drop(inner);
    let bookmark = bookmarks.then(|| {
        let b = json!({"type": "BOOKMARK", "object": {"kind": kind, "apiVersion": api_version,
                        "metadata": {"resourceVersion": current.to_string()}}});
        Ok(Bytes::from(format!("{b}\n")))
    });
    let replay = futures::stream::iter(chunks.into_iter().chain(bookmark));
    let follow = async_stream(
        move |tx: tokio::sync::mpsc::Sender<Result<Bytes, Infallible>>| async move {
            loop {
                tokio::select! {
                    _ = cut.recv() => return,
                    ev = live.recv() => match ev {
                        Ok((p, rv, line)) if p == coll && rv > last_sent => {
                            last_sent = rv;
                            if tx.send(Ok(Bytes::from(line.as_bytes().to_vec()))).await.is_err() {
                                return;
                            }
                        }
                        Ok(_) => {}
                        // Fell behind: end the stream, the client resumes.
                        Err(_) => return,
                    }
                }
            }
        },
    );
    Response::builder()
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(replay.chain(follow)))
        .unwrap()
}

/// A stream fed by a spawned task through a channel.
fn async_stream<F, Fut>(f: F) -> impl futures::Stream<Item = Result<Bytes, Infallible>> + Send
where
    F: FnOnce(tokio::sync::mpsc::Sender<Result<Bytes, Infallible>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(f(tx));
    tokio_stream_from(rx)
}

fn tokio_stream_from(
    mut rx: tokio::sync::mpsc::Receiver<Result<Bytes, Infallible>>,
) -> impl futures::Stream<Item = Result<Bytes, Infallible>> + Send {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// How long to hold the next Binding, and whether to refuse it.
fn binding_latency(shared: &Shared) -> (std::time::Duration, bool) {
    let mut inner = shared.inner.lock().unwrap();
    let (lo, hi) = inner.binding_latency_ms;
    inner.rng = inner.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = inner.rng;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    let ms = lo + z % (hi.saturating_sub(lo) + 1);
    inner.binding_count += 1;
    let refuse = inner.refuse_every > 0 && inner.binding_count.is_multiple_of(inner.refuse_every);
    (std::time::Duration::from_millis(ms), refuse)
}

fn now_rfc3339() -> String {
    format!("{:.0}", jiff::Timestamp::now())
}

/// POST /api/v1/namespaces/NS/pods/NAME/binding
fn bind(shared: &Shared, path: &str, body: &[u8]) -> Response {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let ["api", "v1", "namespaces", ns, "pods", name, "binding"] = parts[..] else {
        return json_response(404, &status(404, "NotFound", &format!("no route {path}")));
    };
    let binding: Value = match serde_json::from_slice(body) {
        Ok(b) => b,
        Err(e) => return json_response(400, &status(400, "BadRequest", &e.to_string())),
    };
    let mut inner = shared.inner.lock().unwrap();
    inner.bindings.push(binding.clone());
    if let Some((code, message)) = inner.binding_failure.clone() {
        return json_response(code, &status(code, "Conflict", &message));
    }
    let key = format!("{ns}/{name}");
    let Some(text) = inner.collections["/api/v1/pods"].items.get(&key).cloned() else {
        return json_response(
            404,
            &status(404, "NotFound", &format!("pods \"{name}\" not found")),
        );
    };
    let mut pod: Value = serde_json::from_str(&text).unwrap();
    if let Some(uid) = binding["metadata"]["uid"].as_str()
        && pod["metadata"]["uid"].as_str() != Some(uid)
    {
        return json_response(
            409,
            &status(
                409,
                "Conflict",
                &format!("Precondition failed: UID in precondition: {uid}"),
            ),
        );
    }
    if let Some(node) = pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
        let msg = format!("pod {name} is already assigned to node \"{node}\"");
        return json_response(409, &status(409, "Conflict", &msg));
    }
    pod["spec"]["nodeName"] = binding["target"]["name"].clone();
    store(&mut inner, shared, "/api/v1/pods", "MODIFIED", pod, true);
    if inner.lose_binding_answers {
        return Response::builder()
            .status(201)
            .header("content-type", "application/json")
            .body(Body::from("{\"kind\": \"Sta"))
            .unwrap();
    }
    json_response(
        201,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
    )
}

const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/";

/// RFC 7386 JSON merge patch: objects merge key by key, `null` removes.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Some(fields) = patch.as_object() else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    let object = target.as_object_mut().unwrap();
    for (k, v) in fields {
        if v.is_null() {
            object.remove(k);
        } else {
            merge_patch(object.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

/// PATCH /api/v1/namespaces/NS/pods/NAME (application/merge-patch+json).
fn patch_pod(shared: &Shared, path: &str, body: &[u8]) -> Response {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let ["api", "v1", "namespaces", ns, "pods", name] = parts[..] else {
        return json_response(404, &status(404, "NotFound", &format!("no route {path}")));
    };
    let patch: Value = match serde_json::from_slice(body) {
        Ok(p) => p,
        Err(e) => return json_response(400, &status(400, "BadRequest", &e.to_string())),
    };
    let mut inner = shared.inner.lock().unwrap();
    let Some(text) = inner.collections["/api/v1/pods"]
        .items
        .get(&format!("{ns}/{name}"))
        .cloned()
    else {
        let msg = format!("pods \"{name}\" not found");
        return json_response(404, &status(404, "NotFound", &msg));
    };
    let mut pod: Value = serde_json::from_str(&text).unwrap();
    if let Some(uid) = patch["metadata"]["uid"].as_str()
        && pod["metadata"]["uid"].as_str() != Some(uid)
    {
        let msg = format!(
            "Pod \"{name}\" is invalid: metadata.uid: Invalid value: \"{uid}\": field is immutable"
        );
        return json_response(422, &status(422, "Invalid", &msg));
    }
    merge_patch(&mut pod, &patch);
    store(&mut inner, shared, "/api/v1/pods", "MODIFIED", pod, true);
    let key = format!("{ns}/{name}");
    let stored = inner.collections["/api/v1/pods"].items[&key].clone();
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        stored.to_string(),
    )
        .into_response()
}

/// Leases under /apis/coordination.k8s.io/v1/namespaces/NS/leases[/NAME]:
/// GET, POST (create), PUT (update with the resourceVersion read).
fn lease(shared: &Shared, method: &Method, path: &str, body: &[u8]) -> Response {
    let rest: Vec<&str> = path[LEASES.len()..].trim_matches('/').split('/').collect();
    let mut inner = shared.inner.lock().unwrap();
    let conflict = |msg: &str| json_response(409, &status(409, "Conflict", msg));
    match (method, &rest[..]) {
        (&Method::GET, [ns, "leases", name]) => match inner.leases.get(&format!("{ns}/{name}")) {
            Some(l) => json_response(200, l),
            None => {
                let msg = format!("leases.coordination.k8s.io \"{name}\" not found");
                json_response(404, &status(404, "NotFound", &msg))
            }
        },
        (&Method::POST, [ns, "leases"]) => {
            let mut lease: Value = serde_json::from_slice(body).unwrap();
            let name = lease["metadata"]["name"].as_str().unwrap_or("").to_string();
            let key = format!("{ns}/{name}");
            if inner.leases.contains_key(&key) {
                let msg = format!("leases.coordination.k8s.io \"{name}\" already exists");
                return json_response(409, &status(409, "AlreadyExists", &msg));
            }
            inner.rv += 1;
            lease["metadata"]["namespace"] = json!(ns);
            lease["metadata"]["uid"] = json!(format!("lease-uid-{}", inner.rv));
            lease["metadata"]["resourceVersion"] = json!(inner.rv.to_string());
            inner.leases.insert(key, lease.clone());
            json_response(201, &lease)
        }
        (&Method::PUT, [ns, "leases", name]) => {
            let mut lease: Value = serde_json::from_slice(body).unwrap();
            let key = format!("{ns}/{name}");
            let Some(current) = inner.leases.get(&key) else {
                let msg = format!("leases.coordination.k8s.io \"{name}\" not found");
                return json_response(404, &status(404, "NotFound", &msg));
            };
            let given = lease["metadata"]["resourceVersion"].as_str();
            if given.is_some_and(|v| Some(v) != current["metadata"]["resourceVersion"].as_str()) {
                return conflict(&format!(
                    "Operation cannot be fulfilled on leases.coordination.k8s.io \"{name}\": \
                     the object has been modified; please apply your changes to the latest version and try again"
                ));
            }
            inner.rv += 1;
            lease["metadata"]["resourceVersion"] = json!(inner.rv.to_string());
            inner.leases.insert(key, lease.clone());
            json_response(200, &lease)
        }
        _ => json_response(
            405,
            &status(405, "MethodNotAllowed", &format!("{method} {path}")),
        ),
    }
}

/// A Node as the API server serves it: uid `uid-<name>`,
/// `kubernetes.io/hostname`, room for 4 cpu, 8Gi and 110 pods.
pub fn api_node(name: &str) -> MakeNode {
    make_node(name)
        .uid(&format!("uid-{name}"))
        .hostname()
        .allocatable(&[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")])
}

/// A running pod `uid-<name>` of app `app` in namespace `shop`, bound to
/// `node`, its one container asking for nothing.
pub fn running_pod(name: &str, app: &str, node: &str) -> MakePod {
    make_pod("shop", name)
        .uid(&format!("uid-{name}"))
        .label("app", app)
        .node(node)
        .requests(&[])
        .phase("Running")
}

/// Who tokens belong to and what users may do: what the API server's
/// authenticators and RBAC would answer.
#[derive(Default)]
struct Identities {
    /// token → (username, groups)
    tokens: HashMap<String, (String, Vec<String>)>,
    grants: Vec<Grant>,
    reviews: u64,
}

enum Grant {
    Resource {
        user: String,
        verb: String,
        resource: String,
        namespace: Option<String>,
    },
    NonResource {
        user: String,
        verb: String,
        path: String,
    },
}

/// POST tokenreviews / subjectaccessreviews: the review echoed back with its
/// status filled, 201 as the real create answers; None for other paths.
fn answer_review(shared: &Shared, path: &str, body: &[u8]) -> Option<Response> {
    let kind = match path {
        "/apis/authentication.k8s.io/v1/tokenreviews" => "TokenReview",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews" => "SubjectAccessReview",
        _ => return None,
    };
    let bad = |message: &str| Some(json_response(400, &status(400, "BadRequest", message)));
    let mut review: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return bad(&e.to_string()),
    };
    if review["kind"] != kind {
        return bad(&format!("expected kind {kind}, got {}", review["kind"]));
    }
    let mut inner = shared.inner.lock().unwrap();
    inner.identities.reviews += 1;
    let answer = if kind == "TokenReview" {
        token_review_status(&inner.identities, &review["spec"])
    } else {
        access_review_status(&inner.identities, &review["spec"])
    };
    match answer {
        Ok(status) => {
            review["status"] = status;
            Some(json_response(201, &review))
        }
        Err(message) => bad(&message),
    }
}

/// Upstream `tokenreview.REST.Create`: the user a known token names, or
/// `authenticated` absent with an error.
fn token_review_status(ids: &Identities, spec: &Value) -> Result<Value, String> {
    let token = spec["token"].as_str().unwrap_or("");
    if token.is_empty() {
        return Err("token is required for TokenReview in authentication".into());
    }
    let Some((username, groups)) = ids.tokens.get(token) else {
        return Ok(json!({"user": {}, "error": "[invalid bearer token, token lookup failed]"}));
    };
    let mut groups = groups.clone();
    groups.push("system:authenticated".into());
    Ok(json!({"authenticated": true,
              "user": {"username": username, "uid": format!("uid-{username}"), "groups": groups},
              "audiences": ["https://kubernetes.default.svc.cluster.local"]}))
}

/// Upstream `subjectaccessreview.REST.Create` over RBAC: allowed with the
/// binding as reason, or not allowed with no reason (RBAC gives none).
fn access_review_status(ids: &Identities, spec: &Value) -> Result<Value, String> {
    let user = spec["user"].as_str().unwrap_or("");
    let has_groups = spec["groups"].as_array().is_some_and(|g| !g.is_empty());
    if user.is_empty() && !has_groups {
        return Err("at least one of user or group must be specified".into());
    }
    let resource = spec["resourceAttributes"].as_object();
    let non_resource = spec["nonResourceAttributes"].as_object();
    if resource.is_some() == non_resource.is_some() {
        return Err(
            "exactly one of nonResourceAttributes or resourceAttributes must be specified".into(),
        );
    }
    let text = |attrs: &serde_json::Map<String, Value>, key: &str| {
        attrs
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let allowed = ids
        .grants
        .iter()
        .any(|grant| match (grant, resource, non_resource) {
            (
                Grant::Resource {
                    user: u,
                    verb,
                    resource: r,
                    namespace,
                },
                Some(attrs),
                _,
            ) => {
                let group = text(attrs, "group");
                let wanted = match group.as_str() {
                    "" => text(attrs, "resource"),
                    g => format!("{}.{g}", text(attrs, "resource")),
                };
                let ns = text(attrs, "namespace");
                u == user
                    && (verb == "*" || *verb == text(attrs, "verb"))
                    && (r == "*" || *r == wanted)
                    && namespace
                        .as_ref()
                        .is_none_or(|n| !ns.is_empty() && *n == ns)
            }
            (
                Grant::NonResource {
                    user: u,
                    verb,
                    path,
                },
                _,
                Some(attrs),
            ) => {
                let wanted = text(attrs, "path");
                let path_matches = match path.strip_suffix('*') {
                    Some(prefix) => wanted.starts_with(prefix),
                    None => *path == wanted,
                };
                u == user && (verb == "*" || *verb == text(attrs, "verb")) && path_matches
            }
            _ => false,
        });
    Ok(if allowed {
        json!({"allowed": true,
               "reason": format!("RBAC: allowed by ClusterRoleBinding \"fake\" of ClusterRole \"fake\" to User \"{user}\"")})
    } else {
        json!({"allowed": false})
    })
}
