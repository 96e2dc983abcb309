//! Follow `--tls-cert`/`--tls-key` (and `--client-ca`) on disk and swap the
//! served configuration when any of them changes, without dropping
//! connections.
//!
//! cert-manager and kubelet write the two files one after the other (or swap
//! a Secret volume's `..data` symlink), so a change to EITHER file triggers a
//! check, and a half-written rotation gets a short settle time before it is
//! called bad. A bad pair never replaces a good one and never stops the
//! server: it is logged and counted.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum_server::tls_rustls::RustlsConfig;
use tokio::task::JoinHandle;

use super::metrics::Metrics;
use super::tls::{self, CertKeyFiles, ServingCert, TlsError, TlsMaterial};
use crate::file_watch::{Concerns, FileWatch};

/// A pair that fails is read again after this, in case its other half was
/// still being written.
const SETTLE: Duration = Duration::from_secs(2);
/// Safety net for missed file events (e.g. a watched directory replaced).
const POLL: Duration = Duration::from_secs(60);

/// The running reloader; it stops when this is dropped.
pub struct CertReloader {
    task: JoinHandle<()>,
}

impl Drop for CertReloader {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Follower {
    files: CertKeyFiles,
    client_ca: Option<PathBuf>,
    rustls: RustlsConfig,
    metrics: Arc<Metrics>,
    /// The bytes now served, and the last bytes refused: neither is
    /// re-examined until the files change again.
    served: TlsMaterial,
    refused: Option<TlsMaterial>,
}

enum Check {
    Unchanged,
    Applied(i64),
    /// The error, and the refused bytes when every file could be read.
    Failed(TlsError, Option<TlsMaterial>),
}

/// Start following `files` and `client_ca`; `served` is what `rustls`
/// serves now.
pub fn follow(
    files: CertKeyFiles,
    client_ca: Option<PathBuf>,
    served: TlsMaterial,
    rustls: RustlsConfig,
    metrics: Arc<Metrics>,
) -> Result<CertReloader, notify::Error> {
    let files_to_watch: Vec<&std::path::Path> = [&files.cert, &files.key]
        .into_iter()
        .chain(client_ca.as_ref())
        .map(PathBuf::as_path)
        .collect();
    let watch = FileWatch::new(&files_to_watch, Concerns::AnyEntry)?;
    let follower = Follower {
        files,
        client_ca,
        rustls,
        metrics,
        served,
        refused: None,
    };
    // The watch moves into the task: it lives exactly as long as the task.
    let task = tokio::spawn(follower.run(watch));
    Ok(CertReloader { task })
}

impl Follower {
    /// Check on every settled change, and on every poll (a safety net for
    /// missed events, e.g. a watched directory replaced).
    async fn run(mut self, mut watch: FileWatch) {
        while watch.next(POLL).await.is_some() {
            self.reload_if_changed(&mut watch).await;
        }
    }

    async fn reload_if_changed(&mut self, watch: &mut FileWatch) {
        let mut outcome = self.check();
        if matches!(outcome, Check::Failed(..)) {
            tokio::time::sleep(SETTLE).await;
            watch.discard_pending();
            outcome = self.check();
        }
        match outcome {
            Check::Unchanged => {}
            Check::Applied(not_after) => {
                self.metrics.tls_reloads.inc();
                self.metrics.tls_cert_not_after.set(not_after);
                tracing::info!(
                    cert = %self.files.cert.display(),
                    client_ca = %self.client_ca.as_deref().map(|p| p.display().to_string()).unwrap_or_default(),
                    not_after,
                    "serving the rotated TLS certificate and client CA"
                );
            }
            Check::Failed(error, pair) => {
                self.refused = pair;
                self.metrics.tls_reload_failures.inc();
                tracing::warn!(
                    "TLS files changed but cannot be used, still serving the previous certificate: {error}"
                );
            }
        }
    }

    fn check(&mut self) -> Check {
        let client_ca = self.client_ca.as_deref();
        let material = match tls::read_material(&self.files, client_ca) {
            Ok(material) => material,
            Err(e) => return Check::Failed(e, None),
        };
        if material == self.served || self.refused.as_ref() == Some(&material) {
            return Check::Unchanged;
        }
        match tls::serving_from_material(&self.files, client_ca, &material) {
            Ok(ServingCert { config, not_after }) => {
                self.rustls.reload_from_config(config);
                self.served = material;
                self.refused = None;
                Check::Applied(not_after)
            }
            Err(e) => Check::Failed(e, Some(material)),
        }
    }
}
