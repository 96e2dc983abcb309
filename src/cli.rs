//! The command line (docs/design.md §2.1): `serve`, `certs`, `explain` and `fit`.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "kube-arbiter",
    version,
    about = "Kubernetes scheduler extender and priority admission webhook over HTTPS"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the extender and webhook endpoints over HTTPS.
    Serve(ServeArgs),
    /// Write a CA, a server certificate for the in-cluster Service, and
    /// kube-scheduler's client certificate.
    Certs(CertsArgs),
    /// Show, for every node, whether a pod fits and why not, with scores.
    Explain(ExplainArgs),
    /// Place a workload's replicas one after another, as kube-scheduler
    /// would: where each goes, per zone, the first that fits nowhere and
    /// why, and what preemption would evict. Exit 0 when every replica
    /// fits, 1 when not, 2 on bad input.
    Fit(FitArgs),
}

/// `fit [--cluster-state F | --kubeconfig F] MANIFEST` places a manifest's
/// replicas (`-`: read it from stdin); `fit [--kubeconfig F] -n NAMESPACE
/// deployment/NAME --replicas N` places the replicas a live workload would
/// add when scaled to N.
#[derive(Debug, Args)]
pub struct FitArgs {
    /// Take the cluster from this file (kubectl get nodes,pods,... -A -o
    /// yaml/json) instead of the API server.
    #[arg(long, value_name = "F", conflicts_with_all = ["kubeconfig", "namespace"])]
    pub cluster_state: Option<PathBuf>,
    /// Take the cluster from the API server this kubeconfig points at
    /// (default: in-cluster, KUBECONFIG, ~/.kube/config).
    #[arg(long, value_name = "F")]
    pub kubeconfig: Option<PathBuf>,
    /// Namespace of a live workload (default: default).
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    /// Replicas to place (default: the manifest's); for a live workload,
    /// the count to scale to: only the replicas beyond its current ones
    /// are placed.
    #[arg(long, value_name = "N")]
    pub replicas: Option<u32>,
    /// Let a replica that fits nowhere preempt lower-priority pods
    /// (default: when its preemptionPolicy allows it); --preempt=false
    /// counts it as not fitting.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub preempt: Option<bool>,
    /// Policy settings (YAML), as for `serve`.
    #[arg(long, value_name = "F")]
    pub config: Option<PathBuf>,
    #[arg(short = 'o', long, value_enum, default_value_t = crate::fit::Output::Table)]
    pub output: crate::fit::Output,
    /// A Deployment, StatefulSet, ReplicaSet, Job or Pod manifest (YAML or
    /// JSON; `-` for stdin), or a live KIND/NAME (deployment, statefulset,
    /// replicaset).
    #[arg(value_name = "MANIFEST|KIND/NAME")]
    pub workload: String,
}

/// `explain [--kubeconfig F] [-n NAMESPACE] POD` asks the API server for
/// the cluster and the pod named POD; `explain --cluster-state F POD` reads
/// both from files (POD is then a pod manifest, which need not exist yet).
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Take the cluster from this file (kubectl get nodes,pods,... -A -o
    /// yaml/json); POD is then a pod file.
    #[arg(long, value_name = "F", conflicts_with_all = ["kubeconfig", "namespace"])]
    pub cluster_state: Option<PathBuf>,
    /// Take the cluster and the pod from the API server this kubeconfig
    /// points at (default: in-cluster, KUBECONFIG, ~/.kube/config).
    #[arg(long, value_name = "F")]
    pub kubeconfig: Option<PathBuf>,
    /// Namespace of the pod in the cluster (default: default).
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    /// Policy settings (YAML), as for `serve`.
    #[arg(long, value_name = "F")]
    pub config: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = crate::explain::Output::Table)]
    pub output: crate::explain::Output,
    /// The pod's name in the cluster, or with --cluster-state its manifest
    /// (YAML or JSON).
    #[arg(value_name = "POD")]
    pub pod: String,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address of the HTTPS port.
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:8443")]
    pub listen: SocketAddr,
    /// PEM certificate chain; reloaded when it changes. Without it a
    /// self-signed localhost certificate is generated.
    #[arg(long, value_name = "F", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert; reloaded when it changes.
    #[arg(long, value_name = "F", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// PEM CA bundle for client certificates (mTLS); reloaded when it
    /// changes. A presented certificate must chain to it; which names may
    /// call what is set below.
    #[arg(long, value_name = "F")]
    pub client_ca: Option<PathBuf>,
    /// Client certificate name (Subject CN) allowed on the extender verbs
    /// /scheduler/* (repeatable).
    #[arg(long = "scheduler-client-name", value_name = "NAME", default_value = crate::server::access::KUBE_SCHEDULER_NAME)]
    pub scheduler_client_names: Vec<String>,
    /// Client certificate name the admission webhooks require (repeatable);
    /// without it they answer any caller, as the API server calls webhooks
    /// without a certificate unless configured to present one.
    #[arg(long = "admission-client-name", value_name = "NAME")]
    pub admission_client_names: Vec<String>,
    /// Serve the extender verbs (bind included) to ANY caller, without a
    /// client certificate. Only for trying kube-arbiter out on loopback.
    #[arg(long)]
    pub insecure_unauthenticated_extender: bool,
    /// Do not serve /scheduler/bind (for a kube-scheduler configured
    /// without bindVerb, which never calls it).
    #[arg(long)]
    pub disable_bind_verb: bool,
    /// spec.schedulerName of the pods this kube-arbiter binds (repeatable).
    #[arg(
        long = "scheduler-name",
        value_name = "NAME",
        default_value = "default-scheduler"
    )]
    pub scheduler_names: Vec<String>,
    /// Take the cluster from this file (kubectl -o yaml/json), reloaded on change.
    #[arg(long, value_name = "F", conflicts_with = "kubeconfig")]
    pub cluster_state: Option<PathBuf>,
    /// Take the cluster from the API server this kubeconfig points at
    /// (waited for while it does not answer; /readyz fails meanwhile).
    #[arg(long, value_name = "F")]
    pub kubeconfig: Option<PathBuf>,
    /// Policy and server settings (YAML); unknown keys are an error.
    #[arg(long, value_name = "F")]
    pub config: Option<PathBuf>,
    /// Also serve /metrics, /healthz and /readyz over plain HTTP here.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<SocketAddr>,
    /// Log lines as human-readable text or as JSON objects (RUST_LOG sets
    /// the level, default info).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct CertsArgs {
    /// Directory to write ca.crt, ca.key, tls.crt, tls.key,
    /// scheduler-client.crt and scheduler-client.key into.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// DNS name for the server certificate (repeatable). Default: the
    /// kube-arbiter Service names in kube-system.
    #[arg(long = "dns", value_name = "NAME")]
    pub dns: Vec<String>,
    /// IP address for the server certificate (repeatable).
    #[arg(long = "ip", value_name = "ADDR")]
    pub ip: Vec<IpAddr>,
    /// Overwrite files that already exist.
    #[arg(long)]
    pub force: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("kube-arbiter").chain(args.iter().copied()))
    }

    #[test]
    fn serve_defaults_to_port_8443_and_text_logs() {
        let Command::Serve(args) = parse(&["serve"]).unwrap().command else {
            panic!("not serve")
        };
        assert_eq!(args.listen, "0.0.0.0:8443".parse().unwrap());
        assert_eq!(args.log_format, LogFormat::Text);
    }

    #[test]
    fn cert_without_key_is_a_usage_error() {
        let err = parse(&["serve", "--tls-cert", "c.pem"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn state_file_and_kubeconfig_exclude_each_other() {
        let err = parse(&["serve", "--cluster-state", "a", "--kubeconfig", "b"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn explain_takes_a_namespace_and_a_name_or_a_state_file_and_a_pod_file() {
        let Command::Explain(args) = parse(&["explain", "-n", "shop", "web-2"]).unwrap().command
        else {
            panic!("not explain")
        };
        assert_eq!(
            (args.namespace.as_deref(), args.pod.as_str()),
            (Some("shop"), "web-2")
        );
        assert!(args.cluster_state.is_none());
        let Command::Explain(args) = parse(&["explain", "--cluster-state", "c.yaml", "pod.yaml"])
            .unwrap()
            .command
        else {
            panic!("not explain")
        };
        assert_eq!(args.cluster_state, Some(PathBuf::from("c.yaml")));
    }

    #[test]
    fn explain_from_a_file_takes_no_namespace_or_kubeconfig() {
        for extra in [["-n", "shop"], ["--kubeconfig", "k"]] {
            let mut args = vec!["explain", "--cluster-state", "c.yaml"];
            args.extend(extra);
            args.push("pod.yaml");
            assert_eq!(parse(&args).unwrap_err().exit_code(), 2, "{args:?}");
        }
        assert_eq!(parse(&["explain"]).unwrap_err().exit_code(), 2);
    }

    #[test]
    fn fit_takes_a_manifest_or_a_live_workload_and_an_optional_preempt_flag() {
        let Command::Fit(args) =
            parse(&["fit", "--cluster-state", "c.yaml", "-o", "json", "d.yaml"])
                .unwrap()
                .command
        else {
            panic!("not fit")
        };
        assert_eq!((args.workload.as_str(), args.preempt), ("d.yaml", None));
        assert_eq!(args.output, crate::fit::Output::Json);
        let cases = [
            (&["--preempt"][..], Some(true)),
            (&["--preempt=false"][..], Some(false)),
            (&[][..], None),
        ];
        for (extra, want) in cases {
            let mut all = vec!["fit", "-n", "shop", "--replicas", "7"];
            all.extend(extra);
            all.push("deployment/web");
            let Command::Fit(args) = parse(&all).unwrap().command else {
                panic!("not fit")
            };
            assert_eq!((args.preempt, args.replicas), (want, Some(7)), "{extra:?}");
        }
        let err = parse(&["fit", "--cluster-state", "c", "-n", "shop", "d.yaml"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert_eq!(
            parse(&["fit", "--replicas", "-1", "d.yaml"])
                .unwrap_err()
                .exit_code(),
            2
        );
    }

    #[test]
    fn certs_takes_repeated_names_and_addresses() {
        let Command::Certs(args) = parse(&[
            "certs", "--out", "d", "--dns", "a", "--dns", "b", "--ip", "10.0.0.1",
        ])
        .unwrap()
        .command
        else {
            panic!("not certs")
        };
        assert_eq!(args.dns, ["a", "b"]);
        assert_eq!(args.ip, ["10.0.0.1".parse::<IpAddr>().unwrap()]);
    }
}
