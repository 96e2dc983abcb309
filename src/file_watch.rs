//! Following files on disk: the state file (`cluster::file`) and the TLS
//! files (`server::tls_reload`) are reloaded when they change.
//!
//! The directories are watched, not the files: an atomic rename, `kubectl
//! ... > F`, or a Secret volume's `..data` symlink swap replaces the file's
//! inode, which a watch on the file would lose. Our own reads show up as
//! Access events and are not changes. A burst of events (a file written
//! in pieces, a pair written one after the other) is one change: it is
//! reported once the events stop for [`DEBOUNCE`]. The owner also polls,
//! as a safety net for events that never come (a watched directory
//! replaced), on whatever it can compare.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::{EventKind, RecursiveMode, Watcher};
use tokio::sync::mpsc;

/// Events closer together than this are one change.
pub const DEBOUNCE: Duration = Duration::from_millis(300);

/// Which events in a watched directory count.
#[derive(Debug, Clone, Copy)]
pub enum Concerns {
    /// Any change in the directories (the TLS files: a rotation may touch
    /// any of the pair, the CA, or the volume's bookkeeping).
    AnyEntry,
    /// Changes naming one of the files, or a `..`-prefixed entry (the
    /// symlink swap of a Kubernetes volume).
    TheFiles,
}

/// What [`FileWatch::next`] woke up for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// The watched files changed, and the events have settled.
    Changed,
    /// No event for the poll interval: time to compare by other means.
    Poll,
}

/// A watch on the directories of some files; dropping it stops the watch.
pub struct FileWatch {
    changes: mpsc::UnboundedReceiver<()>,
    _watcher: notify::RecommendedWatcher,
}

impl FileWatch {
    /// Watch the directories of `files` for the events `concerns` names.
    pub fn new(files: &[&Path], concerns: Concerns) -> Result<Self, notify::Error> {
        let (tx, changes) = mpsc::unbounded_channel();
        let names: Vec<_> = files
            .iter()
            .map(|f| f.file_name().map(|n| n.to_owned()))
            .collect();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| match event {
                Ok(event) if matches!(event.kind, EventKind::Access(_)) => {}
                Ok(event) => {
                    let counts = match concerns {
                        Concerns::AnyEntry => true,
                        Concerns::TheFiles => event.paths.iter().any(|p| names_one_of(p, &names)),
                    };
                    if counts {
                        let _ = tx.send(());
                    }
                }
                Err(e) => tracing::warn!("watching files for changes: {e}"),
            })?;
        let dirs: BTreeSet<PathBuf> = files.iter().map(|f| parent_dir(f)).collect();
        for dir in &dirs {
            watcher.watch(dir, RecursiveMode::NonRecursive)?;
        }
        Ok(Self {
            changes,
            _watcher: watcher,
        })
    }

    /// The next settled change, or [`Wake::Poll`] after `poll` without
    /// any event. `None` once the watch has stopped.
    pub async fn next(&mut self, poll: Duration) -> Option<Wake> {
        match tokio::time::timeout(poll, self.changes.recv()).await {
            Err(_) => return Some(Wake::Poll),
            Ok(None) => return None,
            Ok(Some(())) => {}
        }
        self.wait_for_quiet().await;
        Some(Wake::Changed)
    }

    /// Wait until no event has come for [`DEBOUNCE`].
    async fn wait_for_quiet(&mut self) {
        while let Ok(Some(())) = tokio::time::timeout(DEBOUNCE, self.changes.recv()).await {}
    }

    /// Forget the events that came so far (the owner has just read the
    /// files after them).
    pub fn discard_pending(&mut self) {
        while self.changes.try_recv().is_ok() {}
    }
}

/// The directory of `file` (`.` for a bare name).
fn parent_dir(file: &Path) -> PathBuf {
    match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Whether an event path names one of the watched files, or is a symlink
/// swap (Kubernetes volumes replace `..data`).
fn names_one_of(event_path: &Path, names: &[Option<std::ffi::OsString>]) -> bool {
    let Some(name) = event_path.file_name() else {
        return false;
    };
    names.iter().flatten().any(|n| n == name) || name.to_string_lossy().starts_with("..")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_concern_the_file_or_a_volume_swap() {
        let names = [Some("state.json".into())];
        assert!(names_one_of(Path::new("/d/state.json"), &names));
        assert!(names_one_of(Path::new("/d/..data"), &names));
        assert!(names_one_of(Path::new("/d/..2026_11_27"), &names));
        assert!(!names_one_of(Path::new("/d/other.json"), &names));
        assert!(!names_one_of(Path::new("/d/state.json.tmp"), &names));
    }

    #[test]
    fn a_bare_name_is_watched_in_the_working_directory() {
        assert_eq!(parent_dir(Path::new("state.json")), PathBuf::from("."));
        assert_eq!(
            parent_dir(Path::new("/etc/x/tls.crt")),
            PathBuf::from("/etc/x")
        );
    }

    #[tokio::test]
    async fn a_burst_of_writes_is_one_change_and_quiet_is_a_poll() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state.json");
        std::fs::write(&file, "a").unwrap();
        let mut watch = FileWatch::new(&[&file], Concerns::TheFiles).unwrap();
        assert_eq!(
            watch.next(Duration::from_millis(50)).await,
            Some(Wake::Poll)
        );
        for text in ["b", "c", "d"] {
            std::fs::write(&file, text).unwrap();
        }
        assert_eq!(
            watch.next(Duration::from_secs(10)).await,
            Some(Wake::Changed)
        );
        // The burst was reported once: nothing is left but quiet.
        assert_eq!(
            watch.next(Duration::from_millis(50)).await,
            Some(Wake::Poll)
        );
        // Another file of the directory is not ours.
        std::fs::write(dir.path().join("other.json"), "x").unwrap();
        assert_eq!(
            watch.next(Duration::from_millis(400)).await,
            Some(Wake::Poll)
        );
    }
}
