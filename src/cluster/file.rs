//! The file source (`--cluster-state F`): load at start, reload on change.
//!
//! A broken file at start is an error for the caller (exit 2); a broken file
//! on reload keeps the last good view, logs file/line/reason and counts the
//! failure. The file is followed by `file_watch` (its directory watched,
//! bursts debounced), as the TLS files are.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::decode::{DecodeError, decode};
use super::{ClusterView, Snapshot};
use crate::file_watch::{Concerns, FileWatch, Wake};
use crate::model::requests::RequestsRule;

/// Safety net for file systems where change events get lost.
const POLL: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cluster state {file}: cannot read: {source}")]
    Read {
        file: String,
        source: std::io::Error,
    },
    #[error("cluster state {file}:{}", format_decode(.error))]
    Invalid { file: String, error: DecodeError },
    #[error("cluster state {file}: cannot watch for changes: {source}")]
    Watch { file: String, source: notify::Error },
}

fn format_decode(e: &DecodeError) -> String {
    match e.line {
        Some(line) => format!("{line}: {}", e.reason),
        None => format!(" {}", e.reason),
    }
}

/// Read and index a cluster-state file, its bound pods' requests counted
/// by `requests_rule`.
pub fn load(path: &Path, requests_rule: RequestsRule) -> Result<Snapshot, LoadError> {
    let file = path.display().to_string();
    // The text is dropped before indexing so peak memory holds only one of
    // the two (a 5,000-node cluster file is ~100 MB).
    let (mut objects, ignored) = {
        let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read {
            file: file.clone(),
            source,
        })?;
        decode(&text).map_err(|error| LoadError::Invalid {
            file: file.clone(),
            error,
        })?
    };
    for (kind, n) in &ignored.kinds {
        tracing::info!(file = %file, kind = %kind, count = n, "ignoring objects of a kind kube-arbiter does not use");
    }
    objects.requests_rule = requests_rule;
    Ok(Snapshot::build(objects))
}

/// Keeps the watch alive; dropping it stops reloading.
pub struct FileSource {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FileSource {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Load `path` into `view` now, then reload it whenever it changes (each
/// time by [`load`] with `requests_rule`).
/// The load runs on a blocking thread, so the caller can stop waiting for
/// a large file (on SIGTERM) while it is read.
pub async fn start(
    path: &Path,
    view: Arc<ClusterView>,
    requests_rule: RequestsRule,
) -> Result<FileSource, LoadError> {
    tracing::info!(file = %path.display(), "loading the cluster state");
    let owned = path.to_path_buf();
    let snapshot = match tokio::task::spawn_blocking(move || load(&owned, requests_rule)).await {
        Ok(loaded) => loaded?,
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            // Cancelled: the runtime is shutting down before the load ran.
            Err(e) => {
                return Err(LoadError::Read {
                    file: path.display().to_string(),
                    source: std::io::Error::other(e),
                });
            }
        },
    };
    log_published(path, &snapshot);
    view.publish(snapshot);

    let watch = FileWatch::new(&[path], Concerns::TheFiles).map_err(|source| LoadError::Watch {
        file: path.display().to_string(),
        source,
    })?;
    let task = tokio::spawn(reload_loop(path.to_path_buf(), view, watch, requests_rule));
    Ok(FileSource { task })
}

/// Reload on every settled change, and when a poll finds the file's
/// modification time changed (a safety net for missed events).
async fn reload_loop(
    path: PathBuf,
    view: Arc<ClusterView>,
    mut watch: FileWatch,
    requests_rule: RequestsRule,
) {
    let mut last_modified = modified(&path);
    while let Some(wake) = watch.next(POLL).await {
        if wake == Wake::Poll && modified(&path) == last_modified {
            continue;
        }
        last_modified = modified(&path);
        let p = path.clone();
        match tokio::task::spawn_blocking(move || load(&p, requests_rule)).await {
            Ok(Ok(snapshot)) => {
                log_published(&path, &snapshot);
                view.publish(snapshot);
            }
            Ok(Err(e)) => {
                view.record_failure();
                tracing::error!(error = %e, "cluster state reload failed; keeping the last good view");
            }
            Err(e) => {
                view.record_failure();
                tracing::error!(error = %e, "cluster state reload task failed; keeping the last good view");
            }
        }
    }
}

fn modified(path: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn log_published(path: &Path, snapshot: &Snapshot) {
    let c = snapshot.counts();
    tracing::info!(
        file = %path.display(),
        nodes = c.nodes,
        pods = c.pods,
        namespaces = c.namespaces,
        pdbs = c.pdbs,
        priority_classes = c.priority_classes,
        "cluster view published from file"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes_json(names: &[&str]) -> String {
        let items: Vec<String> = names
            .iter()
            .map(|n| format!(r#"{{"kind":"Node","metadata":{{"name":"{n}"}}}}"#))
            .collect();
        format!(
            "{{\"kind\":\"List\",\n\"items\":[\n{}\n]}}",
            items.join(",\n")
        )
    }

    async fn wait_for(view: &ClusterView, what: impl Fn(&ClusterView) -> bool) {
        for _ in 0..200 {
            if what(view) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("condition not reached within 10 s");
    }

    #[tokio::test]
    async fn broken_file_at_start_is_refused_with_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        std::fs::write(
            &path,
            "{\"kind\":\"List\",\n\"items\":[\n{\"kind\":\"Node\",\"metadata\":{\"name\":5}}]}",
        )
        .unwrap();
        let view = Arc::new(ClusterView::new());
        let err = start(&path, view.clone(), RequestsRule::default())
            .await
            .err()
            .expect("must fail");
        let msg = err.to_string();
        assert!(msg.contains("state.json:3:"), "{msg}");
        assert!(msg.contains("Node"), "{msg}");
        assert!(!view.is_ready());
    }

    #[tokio::test]
    async fn missing_file_is_a_read_error() {
        let view = Arc::new(ClusterView::new());
        let err = start(
            Path::new("/nonexistent/state.yaml"),
            view,
            RequestsRule::default(),
        )
        .await
        .err()
        .expect("must fail");
        assert!(err.to_string().contains("cannot read"), "{err}");
    }

    #[tokio::test]
    async fn change_is_published_and_broken_reload_keeps_last_view() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        std::fs::write(&path, nodes_json(&["a"])).unwrap();
        let view = Arc::new(ClusterView::new());
        let _source = start(&path, view.clone(), RequestsRule::default())
            .await
            .unwrap();
        assert_eq!(view.current().unwrap().nodes().len(), 1);

        std::fs::write(&path, nodes_json(&["a", "b"])).unwrap();
        wait_for(&view, |v| v.current().unwrap().nodes().len() == 2).await;

        std::fs::write(&path, "{ not json").unwrap();
        wait_for(&view, |v| v.stats().reload_failures == 1).await;
        assert_eq!(view.current().unwrap().nodes().len(), 2);

        // Replace by rename, as editors and `kubectl ... > tmp && mv` do.
        let tmp = dir.path().join("state.json.tmp");
        std::fs::write(&tmp, nodes_json(&["a", "b", "c"])).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        wait_for(&view, |v| v.current().unwrap().nodes().len() == 3).await;
    }
}
