//! Follow `--tls-cert`/`--tls-key` (and `--client-ca`) on disk and swap the
//! served configuration when any of them changes, without dropping
//! connections.
//!
//! cert-manager and kubelet write the two files one after the other (or swap
//! a Secret volume's `..data` symlink), so a change to EITHER file triggers a
//! check, and a half-written rotation gets a short settle time before it is
//! called bad. A bad pair never replaces a good one and never stops the
//! server: it is logged and counted.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum_server::tls_rustls::RustlsConfig;
use notify::{EventKind, RecursiveMode, Watcher};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::metrics::Metrics;
use super::tls::{self, CertKeyFiles, ServingCert, TlsError, TlsMaterial};

/// Events closer together than this are one change.
const DEBOUNCE: Duration = Duration::from_millis(300);
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
    let (tx, rx) = mpsc::channel::<()>(1);
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        match event {
            // Our own reads show up as Access events; they are not changes.
            Ok(event) if matches!(event.kind, EventKind::Access(_)) => {}
            // A full channel already holds a wake-up: nothing is lost.
            Ok(_) => {
                let _ = tx.try_send(());
            }
            Err(e) => tracing::warn!("watching the TLS files: {e}"),
        }
    })?;
    // Directories, not files: an atomic rename or a `..data` symlink swap
    // replaces the file's inode, which a watch on the file would lose.
    let dirs: BTreeSet<PathBuf> = [&files.cert, &files.key]
        .into_iter()
        .chain(client_ca.as_ref())
        .map(|f| parent_dir(f))
        .collect();
    for dir in &dirs {
        watcher.watch(dir, RecursiveMode::NonRecursive)?;
    }
    let follower = Follower {
        files,
        client_ca,
        rustls,
        metrics,
        served,
        refused: None,
    };
    let task = tokio::spawn(async move {
        // Moved in so the watch lives exactly as long as the task.
        let _watcher = watcher;
        follower.run(rx).await;
    });
    Ok(CertReloader { task })
}

fn parent_dir(file: &std::path::Path) -> PathBuf {
    match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

impl Follower {
    async fn run(mut self, mut changes: mpsc::Receiver<()>) {
        let mut poll = tokio::time::interval(POLL);
        poll.tick().await;
        loop {
            tokio::select! {
                change = changes.recv() => {
                    if change.is_none() {
                        return;
                    }
                    tokio::time::sleep(DEBOUNCE).await;
                    while changes.try_recv().is_ok() {}
                }
                _ = poll.tick() => {}
            }
            self.reload_if_changed(&mut changes).await;
        }
    }

    async fn reload_if_changed(&mut self, changes: &mut mpsc::Receiver<()>) {
        let mut outcome = self.check();
        if matches!(outcome, Check::Failed(..)) {
            tokio::time::sleep(SETTLE).await;
            while changes.try_recv().is_ok() {}
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
