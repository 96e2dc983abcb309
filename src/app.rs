//! What each subcommand does, and how its failures become exit codes:
//! 0 clean shutdown, 2 usage or configuration error, 1 runtime failure.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use tracing_subscriber::EnvFilter;

use crate::certs::{self, CertsRequest};
use crate::cli::{CertsArgs, Cli, Command, LogFormat, ServeArgs};
use crate::cluster::ClusterView;
use crate::cluster::file::{self, FileSource};
use crate::config::Config;
use crate::server::tls::{self, CertKeyFiles, TlsSettings};
use crate::server::{self, AppState, ServeError, ServeOptions};

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Bad flags, settings, state file or TLS files: exit 2.
    #[error("{0}")]
    Config(String),
    /// Something failed while running: exit 1.
    #[error("{0}")]
    Runtime(String),
}

impl RunError {
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Self::Config(_) => ExitCode::from(2),
            Self::Runtime(_) => ExitCode::from(1),
        }
    }
}

pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Serve(args) => {
            init_logging(args.log_format);
            exit(run_serve(args), |e| tracing::error!("{e}"))
        }
        Command::Certs(args) => exit(run_certs(args), |e| eprintln!("kube-arbiter: {e}")),
    }
}

fn exit(result: Result<(), RunError>, report: impl FnOnce(&RunError)) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            report(&e);
            e.exit_code()
        }
    }
}

/// Logs go to stderr; RUST_LOG overrides the default `info`.
fn init_logging(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

fn run_serve(args: ServeArgs) -> Result<(), RunError> {
    let config = match &args.config {
        Some(path) => Config::load(path).map_err(|e| RunError::Config(e.to_string()))?,
        None => Config::default(),
    };
    tls::install_crypto_provider();
    let runtime = tokio::runtime::Runtime::new()
        .map_err(|e| RunError::Runtime(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async {
        let shutdown = server::termination_signal()
            .map_err(|e| RunError::Runtime(format!("cannot install signal handlers: {e}")))?;
        let view = Arc::new(ClusterView::new());
        let _source = start_cluster_source(&args, Arc::clone(&view))?;
        let state = AppState::new(view, config);
        let options = ServeOptions {
            listen: args.listen,
            metrics_listen: args.metrics_listen,
            tls: TlsSettings {
                cert_key: args
                    .tls_cert
                    .zip(args.tls_key)
                    .map(|(cert, key)| CertKeyFiles { cert, key }),
                client_ca: args.client_ca,
            },
        };
        server::serve(state, options, shutdown)
            .await
            .map_err(|e| match e {
                ServeError::Tls(_) => RunError::Config(e.to_string()),
                _ => RunError::Runtime(e.to_string()),
            })
    })
}

/// Whatever keeps the cluster view fed; dropping it stops the source.
enum ClusterSource {
    File { _watch: FileSource },
}

/// `--cluster-state F`, or else the live API server.
fn start_cluster_source(
    args: &ServeArgs,
    view: Arc<ClusterView>,
) -> Result<ClusterSource, RunError> {
    match &args.cluster_state {
        Some(path) => file::start(path, view)
            .map(|watch| ClusterSource::File { _watch: watch })
            .map_err(|e| RunError::Config(e.to_string())),
        None => start_live_source(args.kubeconfig.as_deref(), view),
    }
}

/// The live API source; replaced when the watch-based source lands.
fn start_live_source(
    kubeconfig: Option<&Path>,
    _view: Arc<ClusterView>,
) -> Result<ClusterSource, RunError> {
    let asked = kubeconfig.map_or_else(
        || "no --cluster-state given, so the live API server was asked for".to_string(),
        |p| format!("--kubeconfig {} asks for the live API server", p.display()),
    );
    Err(RunError::Config(format!(
        "{asked}, but this build has no live cluster source yet; \
         run with --cluster-state FILE (e.g. the output of \
         `kubectl get nodes,pods,pdb,priorityclasses,namespaces -A -o yaml`)"
    )))
}

fn run_certs(args: CertsArgs) -> Result<(), RunError> {
    let request = CertsRequest {
        out: args.out,
        dns: args.dns,
        ip: args.ip,
        force: args.force,
    };
    let written = certs::write(&request).map_err(|e| match e {
        certs::CertsError::Exists(_) | certs::CertsError::Name { .. } => {
            RunError::Config(e.to_string())
        }
        _ => RunError::Runtime(e.to_string()),
    })?;
    print!("{}", certs::next_steps(&written));
    Ok(())
}
