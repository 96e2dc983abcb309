//! What each subcommand does, and how its failures become exit codes:
//! 0 clean shutdown, 2 usage or configuration error, 1 runtime failure.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::task::AbortOnDropHandle;
use tracing_subscriber::EnvFilter;

use crate::api;
use crate::api::AppState;
use crate::certs::{self, CertsRequest};
use crate::cli::{CertsArgs, Cli, Command, ExplainArgs, FitArgs, LogFormat, ServeArgs};
use crate::cluster::file::{self, FileSource};
use crate::cluster::live::{self, LiveSource};
use crate::cluster::{Binder, ClusterView, InFlight, assume};
use crate::config::{Config, LiveSettings};
use crate::deletion_cost::{self, Deployments};
use crate::explain::{self, ExplainError, Target};
use crate::fit::{self, FitError, FitOptions};
use crate::server::access::{AccessRules, Callers};
use crate::server::delegated_auth::DelegatedAuth;
use crate::server::people::PeopleAuth;
use crate::server::tls::{self, CertKeyFiles, TlsSettings};
use crate::server::{self, ServeError, ServeOptions};

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
        Command::Explain(args) => exit(run_explain(args), |e| eprintln!("kube-arbiter: {e}")),
        Command::Fit(args) => match run_fit(args) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::from(1),
            Err(e) => {
                eprintln!("kube-arbiter: {e}");
                e.exit_code()
            }
        },
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

fn run_explain(args: ExplainArgs) -> Result<(), RunError> {
    let target = match args.cluster_state {
        Some(cluster_state) => Target::File {
            cluster_state,
            pod_file: args.pod.into(),
        },
        None => {
            tls::install_crypto_provider();
            Target::Live {
                kubeconfig: args.kubeconfig,
                namespace: args.namespace.unwrap_or_else(|| "default".into()),
                name: args.pod,
            }
        }
    };
    let text =
        explain::run_explain(target, args.output, args.config.as_deref()).map_err(|e| match e {
            ExplainError::Config(m) => RunError::Config(m),
            ExplainError::Runtime(m) => RunError::Runtime(m),
        })?;
    print!("{text}");
    Ok(())
}

/// Prints the answer; whether every replica fits.
fn run_fit(args: FitArgs) -> Result<bool, RunError> {
    let live_object = args
        .workload
        .split_once('/')
        .filter(|(kind, _)| fit::live_kind(kind).is_some() && !Path::new(&args.workload).exists());
    let source = match live_object {
        Some(_) if args.cluster_state.is_some() => {
            return Err(RunError::Config(format!(
                "{}: a live workload is read from the API server; with --cluster-state give a manifest file",
                args.workload
            )));
        }
        Some((kind, name)) => fit::Source::Live {
            kubeconfig: args.kubeconfig,
            namespace: args.namespace.unwrap_or_else(|| "default".into()),
            kind: kind.to_string(),
            name: name.to_string(),
        },
        None if args.namespace.is_some() => {
            return Err(RunError::Config(
                "-n names the namespace of a live KIND/NAME; a manifest says its own namespace"
                    .into(),
            ));
        }
        None => fit::Source::Manifest {
            cluster_state: args.cluster_state,
            kubeconfig: args.kubeconfig,
            manifest: args.workload.into(),
        },
    };
    if !matches!(
        source,
        fit::Source::Manifest {
            cluster_state: Some(_),
            ..
        }
    ) {
        tls::install_crypto_provider();
    }
    let options = FitOptions {
        replicas: args.replicas,
        preempt: args.preempt,
    };
    let (text, all_fit) = fit::run_fit(source, options, args.output, args.config.as_deref())
        .map_err(|e| match e {
            FitError::Input(m) => RunError::Config(m),
            FitError::Runtime(m) => RunError::Runtime(m),
        })?;
    print!("{text}");
    Ok(all_fit)
}

/// `info`, without third-party lines that repeat, once per request or per
/// connection, what our own log says once (docs/live-source.md):
/// kube_client's request tracing logs every failed request at ERROR
/// (`failed with error client error (Connect)`, target
/// `kube_client::client::builder`), and its watch reader logs every watch
/// connection the server dropped at WARN (`eof in poll: ... close_notify`,
/// target `kube_client::client`). Its TLS warnings stay.
pub const DEFAULT_LOG_FILTER: &str = "info,kube_client::client=error,\
     kube_client::client::builder=off,kube_client::client::tls=info,\
     kube_runtime::watcher=error";

/// Logs go to stderr; RUST_LOG replaces [`DEFAULT_LOG_FILTER`].
fn init_logging(format: LogFormat) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_LOG_FILTER));
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
    config.scheduling.upstream().follow();
    let access = access_rules(&args)?;
    tls::install_crypto_provider();
    let runtime = tokio::runtime::Runtime::new()
        .map_err(|e| RunError::Runtime(format!("cannot start the async runtime: {e}")))?;
    let requests = server::requests_runtime()
        .map_err(|e| RunError::Runtime(format!("cannot start the requests' runtime: {e}")))?;
    let result = runtime.block_on(async {
        let shutdown = server::termination_signal()
            .map_err(|e| RunError::Runtime(format!("cannot install signal handlers: {e}")))?;
        tokio::pin!(shutdown);
        let view = Arc::new(ClusterView::new());
        // A large cluster file takes seconds to load; a signal meanwhile
        // stops the process instead of waiting for the load to finish.
        let source = tokio::select! {
            source = start_cluster_source(&args, Arc::clone(&view), &config) => source?,
            () = &mut shutdown => {
                tracing::info!("stopped before the cluster view was loaded");
                return Ok(());
            }
        };
        let in_flight = source.in_flight(&config.live);
        let state = AppState::new(view, config);
        let people = source.people_auth(&state);
        let state = state
            .with_people(people)
            .with_binder(source.binder())
            .with_in_flight(in_flight)
            .with_access(access)
            .with_scheduler_names(args.scheduler_names.clone());
        let state = source.confirm_misses(state);
        let (state, _deletion_costs) = source.keep_deletion_costs(state);
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
            requests_on: Some(requests.handle().clone()),
        };
        let routes = api::routes(!args.disable_bind_verb);
        server::serve(state, routes, options, shutdown)
            .await
            .map_err(|e| match e {
                ServeError::Tls(_) => RunError::Config(e.to_string()),
                _ => RunError::Runtime(e.to_string()),
            })
    });
    // A load cut short by a signal is still running on a blocking thread;
    // dropping the runtime would wait for it.
    runtime.shutdown_background();
    requests.shutdown_background();
    result
}

/// Who may call the extender verbs and the webhooks. Serving the verbs
/// (bind included) to anyone takes a flag whose name says so, logged at
/// WARN every start; otherwise kube-scheduler's certificate is required,
/// so `--client-ca` must be given.
fn access_rules(args: &ServeArgs) -> Result<AccessRules, RunError> {
    let named = |names: &[String]| Callers::Named(names.to_vec());
    if args.insecure_unauthenticated_extender {
        tracing::warn!(
            listen = %args.listen,
            "--insecure-unauthenticated-extender: ANY caller that reaches this port may filter, preempt and bind pods; never use it outside a loopback demo"
        );
    } else if args.client_ca.is_none() {
        return Err(RunError::Config(
            "the extender verbs (/scheduler/*) are served to kube-scheduler's client certificate: \
             give --client-ca FILE, the CA that signed it (`kube-arbiter certs` writes both), or, \
             only to try kube-arbiter out on loopback, --insecure-unauthenticated-extender"
                .to_string(),
        ));
    }
    if !args.admission_client_names.is_empty() && args.client_ca.is_none() {
        return Err(RunError::Config(
            "--admission-client-name needs --client-ca, the CA that signed the API server's client certificate".to_string(),
        ));
    }
    Ok(AccessRules {
        scheduler: if args.insecure_unauthenticated_extender {
            Callers::Anyone
        } else {
            named(&args.scheduler_client_names)
        },
        admission: if args.admission_client_names.is_empty() {
            Callers::Anyone
        } else {
            named(&args.admission_client_names)
        },
    })
}

/// Whatever keeps the cluster view fed; dropping it stops the source.
enum ClusterSource {
    File {
        _watch: FileSource,
        _expiry: AbortOnDropHandle<()>,
    },
    Live(LiveSource),
}

impl ClusterSource {
    /// Where `/scheduler/bind` sends bindings.
    fn binder(&self) -> Binder {
        match self {
            Self::File { .. } => Binder::ViewOnly,
            Self::Live(live) => live.binder(),
        }
    }

    /// How people and tools are checked: by the API server's TokenReview
    /// and SubjectAccessReview when there is one; loopback callers only
    /// with a state file.
    fn people_auth(&self, state: &AppState) -> PeopleAuth {
        match self {
            Self::File { .. } => {
                tracing::info!(
                    "no API server to review tokens: /debug/*, /scale-in and /metrics answer loopback callers only"
                );
                PeopleAuth::LoopbackOnly
            }
            Self::Live(live) => {
                PeopleAuth::Delegated(Arc::new(DelegatedAuth::new(live.client(), &state.metrics)))
            }
        }
    }

    /// Live mode: a miss in the view is read from the API server before
    /// it becomes a refusal; a state file is the whole cluster.
    fn confirm_misses(&self, state: AppState) -> AppState {
        match self {
            Self::File { .. } => state,
            Self::Live(live) => {
                let reads = live.read_through(
                    state.config.live.read_through_timeout(),
                    state.metrics.read_through.clone(),
                );
                state.with_reads(reads)
            }
        }
    }

    /// Live mode: watch the Deployments (their annotations opt their
    /// ReplicaSets in) and start the deletion-cost writer; file mode
    /// writes nothing (`/debug/scale-in` still shows the plan).
    fn keep_deletion_costs(&self, state: AppState) -> (AppState, Vec<AbortOnDropHandle<()>>) {
        let Self::Live(live) = self else {
            return (state, Vec::new());
        };
        let (deployments, watch) = Deployments::watch(live.client());
        let state = state.with_deployments(deployments.clone());
        let writer = deletion_cost::start(
            live.client(),
            Arc::clone(&state.view),
            Arc::clone(&state.config),
            Arc::clone(&state.metrics.deletion_cost),
            deployments,
        );
        (
            state,
            vec![
                AbortOnDropHandle::new(watch),
                AbortOnDropHandle::new(writer),
            ],
        )
    }

    /// The in-flight ledger: only the live source's watch tells when a pod
    /// kube-scheduler placed is bound, so a file source waits for nothing.
    fn in_flight(&self, settings: &LiveSettings) -> InFlight {
        match self {
            Self::File { .. } => InFlight::default(),
            Self::Live(_) => InFlight::new(settings.in_flight_wait(), settings.assume_ttl()),
        }
    }
}

/// `--cluster-state F`, or else the live API server; either counts the
/// requests of bound pods as the followed release does.
async fn start_cluster_source(
    args: &ServeArgs,
    view: Arc<ClusterView>,
    config: &Config,
) -> Result<ClusterSource, RunError> {
    let requests_rule = config.scheduling.upstream().requests_rule();
    match &args.cluster_state {
        Some(path) => {
            let watch = file::start(path, Arc::clone(&view), requests_rule)
                .await
                .map_err(|e| RunError::Config(e.to_string()))?;
            // Nothing confirms placements recorded by bind in file mode;
            // they end when their time is up.
            let expiry = assume::expire_periodically(view, Duration::from_secs(1));
            Ok(ClusterSource::File {
                _watch: watch,
                _expiry: AbortOnDropHandle::new(expiry),
            })
        }
        None => live::start(args.kubeconfig.clone(), view, &config.live, requests_rule)
            .await
            .map(ClusterSource::Live)
            .map_err(|e| RunError::Config(e.to_string())),
    }
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
