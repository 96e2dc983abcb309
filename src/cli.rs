//! The command line (docs/design.md §2.1): `serve` and `certs`.

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
    /// Write a CA and a server certificate for the in-cluster Service.
    Certs(CertsArgs),
    /// Show, for every node, whether a pod fits and why not, with scores.
    Explain(ExplainArgs),
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The cluster (kubectl get nodes,pods,... -A -o yaml/json).
    #[arg(long, value_name = "F")]
    pub cluster_state: PathBuf,
    /// Policy settings (YAML), as for `serve`.
    #[arg(long, value_name = "F")]
    pub config: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = crate::explain::Output::Table)]
    pub output: crate::explain::Output,
    /// The pod to place (YAML or JSON).
    #[arg(value_name = "POD")]
    pub pod: PathBuf,
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
    /// Require client certificates signed by this PEM CA bundle (mTLS).
    #[arg(long, value_name = "F")]
    pub client_ca: Option<PathBuf>,
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
    /// Directory to write ca.crt, ca.key, tls.crt and tls.key into.
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
