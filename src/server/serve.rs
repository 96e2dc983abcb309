//! Run the router on the HTTPS port (and the optional plain-HTTP probes
//! port) until told to stop, then drain in-flight requests.

use std::future::Future;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum_server::Handle;
use axum_server::accept::NoDelayAcceptor;
use axum_server::tls_rustls::RustlsConfig;
use hyper_util::rt::TokioTimer;
use tokio::signal::unix::{SignalKind, signal};

use super::peer::PeerAcceptor;
use super::read_buffer::BufferedAcceptor;
use super::router::probes_only;
use super::tls::{self, TlsError, TlsSettings};
use super::tls_reload::{self, CertReloader};
use super::{Routes, ServerState, router};

/// How often an idle HTTP/2 connection is pinged.
const H2_KEEPALIVE: Duration = Duration::from_secs(30);

#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub listen: SocketAddr,
    /// Plain HTTP serving only `/metrics`, `/healthz`, `/readyz`.
    pub metrics_listen: Option<SocketAddr>,
    pub tls: TlsSettings,
    /// The runtime whose workers serve the HTTPS listener's connections
    /// ([`requests_runtime`]); `None`: the caller's. The metrics listener
    /// stays on the caller's.
    pub requests_on: Option<tokio::runtime::Handle>,
}

/// The runtime for the HTTPS listener: one worker. hyper hands a request
/// body to its handler through a channel inside the connection's task, so
/// a body of more than one read wakes that task while it runs; tokio then
/// queues it again as a yield and wakes an idle worker to steal it, one
/// futex wake and an extra sleep per verb request on a second worker that
/// has nothing to do. With one worker there is none to wake. A decision
/// over 256 KiB still leaves the worker (`block_in_place`, the blocking
/// pool), and the metrics listener (with its probes), the live view and
/// the TLS follower run on the main runtime; probes on the HTTPS port wait
/// behind at most one inline decision.
pub fn requests_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("https-worker")
        .enable_all()
        .build()
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Bad TLS files or CA: a configuration error.
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("cannot watch the TLS files for rotation: {0}")]
    Watch(#[from] notify::Error),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("server failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Resolves on SIGTERM or SIGINT. The handlers are installed by this call,
/// before anything is served, so an early signal is not lost.
pub fn termination_signal() -> std::io::Result<impl Future<Output = ()> + Send> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM received"),
            _ = int.recv() => tracing::info!("SIGINT received"),
        }
    })
}

/// Serve `router(state, routes)` over TLS until `shutdown` resolves; then
/// stop accepting and give in-flight requests `shutdownGraceSeconds` to
/// finish.
pub async fn serve<S: ServerState>(
    state: S,
    routes: Routes<S>,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let server = Server::bind(&options, &state)?;
    server
        .run(router(state.clone(), routes), state, shutdown)
        .await
}

/// Sockets bound and TLS loaded, not yet serving: binding is where
/// configuration errors show, and tests learn the port of `:0` here.
pub struct Server {
    https: TcpListener,
    metrics: Option<TcpListener>,
    rustls: RustlsConfig,
    reloader: Option<CertReloader>,
    requests_on: Option<tokio::runtime::Handle>,
}

impl Server {
    /// Load TLS (and start following the files) and bind the listeners.
    /// Must be called inside a tokio runtime.
    pub fn bind(options: &ServeOptions, state: &impl ServerState) -> Result<Self, ServeError> {
        let (rustls, reloader) = tls_config(&options.tls, state)?;
        let https = bind(options.listen)?;
        let metrics = options.metrics_listen.map(bind).transpose()?;
        Ok(Self {
            https,
            metrics,
            rustls,
            reloader,
            requests_on: options.requests_on.clone(),
        })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.https.local_addr()
    }

    /// Serve `app` (and the probes on the metrics listener) until `shutdown`.
    pub async fn run(
        self,
        app: Router,
        state: impl ServerState,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), ServeError> {
        let Self {
            https,
            metrics,
            rustls,
            reloader: _reloader,
            requests_on,
        } = self;
        let https_addr = https.local_addr()?;
        let grace = Duration::from_secs(state.settings().shutdown_grace_seconds);

        let https_handle = Handle::new();
        let mut https_server = axum_server::from_tcp_rustls(https, rustls)?
            .map(|tls| PeerAcceptor::new(tls.acceptor(BufferedAcceptor)));
        // The timer enables hyper's 30 s header-read timeout (slow clients
        // cannot hold a connection open for free) and HTTP/2 keep-alive pings
        // that notice vanished peers.
        let builder = https_server.http_builder();
        builder.http1().keep_alive(true).timer(TokioTimer::new());
        builder
            .http2()
            .timer(TokioTimer::new())
            .keep_alive_interval(Some(H2_KEEPALIVE));
        let https_server = https_server
            .handle(https_handle.clone())
            .serve(app.into_make_service());
        let https_server = async move {
            match requests_on {
                Some(runtime) => runtime
                    .spawn(https_server)
                    .await
                    .unwrap_or_else(|e| Err(std::io::Error::other(e))),
                None => https_server.await,
            }
        };
        tracing::info!("listening on https://{https_addr}");

        let metrics_handle = Handle::new();
        let metrics_server = match metrics {
            Some(listener) => {
                let addr = listener.local_addr()?;
                let probes = probes_only(state);
                let server = axum_server::from_tcp(listener)?
                    .acceptor(NoDelayAcceptor::new())
                    .handle(metrics_handle.clone())
                    .serve(probes.into_make_service());
                tracing::info!("serving metrics and probes on http://{addr}");
                Some(tokio::spawn(server))
            }
            None => None,
        };

        tokio::pin!(https_server);
        let result = tokio::select! {
            result = &mut https_server => {
                metrics_handle.shutdown();
                result
            }
            _ = shutdown => {
                tracing::info!(grace_seconds = grace.as_secs(), "shutting down: no new connections, finishing in-flight requests");
                https_handle.graceful_shutdown(Some(grace));
                metrics_handle.graceful_shutdown(Some(grace));
                https_server.await
            }
        };
        if let Some(task) = metrics_server {
            match task.await {
                Ok(metrics_result) => metrics_result?,
                Err(e) => tracing::warn!("metrics listener ended abnormally: {e}"),
            }
        }
        result?;
        tracing::info!("shut down cleanly");
        Ok(())
    }
}

/// The served TLS configuration and, with files, the reloader following
/// them (the pair and the client CA bundle).
fn tls_config(
    settings: &TlsSettings,
    state: &impl ServerState,
) -> Result<(RustlsConfig, Option<CertReloader>), ServeError> {
    let client_ca = settings.client_ca.as_deref();
    let Some(files) = &settings.cert_key else {
        tracing::warn!(
            "no --tls-cert/--tls-key given: serving a self-signed certificate for localhost made at startup; no client trusts it, use it only to try kube-arbiter out"
        );
        let verifier = client_ca.map(tls::client_verifier).transpose()?;
        let serving = tls::self_signed(verifier)?;
        state.metrics().tls_cert_not_after.set(serving.not_after);
        return Ok((RustlsConfig::from_config(serving.config), None));
    };
    let material = tls::read_material(files, client_ca)?;
    let serving = tls::serving_from_material(files, client_ca, &material)?;
    state.metrics().tls_cert_not_after.set(serving.not_after);
    let rustls = RustlsConfig::from_config(serving.config);
    let reloader = tls_reload::follow(
        files.clone(),
        settings.client_ca.clone(),
        material,
        rustls.clone(),
        Arc::clone(state.metrics()),
    )?;
    Ok((rustls, Some(reloader)))
}

fn bind(addr: SocketAddr) -> Result<TcpListener, ServeError> {
    let listener = TcpListener::bind(addr).map_err(|source| ServeError::Bind { addr, source })?;
    listener
        .set_nonblocking(true)
        .map_err(|source| ServeError::Bind { addr, source })?;
    Ok(listener)
}
