//! The live source's initial list, once, for one-shot commands (`explain`):
//! the same configuration lookup, the same watches and the same store as
//! `serve`, stopped as soon as every kind is listed. Where `serve` keeps
//! retrying, a one-shot command has no later: the first failure is the
//! answer.

use std::path::Path;
use std::time::Duration;

use std::sync::Arc;

use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;
use tokio::time::{Instant, timeout_at};

use super::store::{Phase, Store};
use super::watch::Report;
use super::{LiveError, resolve_api_config, spawn_watches};
use crate::cluster::{Kind, Snapshot};
use crate::model::requests::RequestsRule;

/// How long the API server may take to answer at all.
const REACH_TIMEOUT: Duration = Duration::from_secs(10);

/// How long listing every kind may take once the server answered; a
/// cluster of 150,000 pods lists well within it.
const LIST_TIMEOUT: Duration = Duration::from_secs(120);

/// Aborts the watches when the listing ends, however it ends.
struct Watches(Vec<JoinHandle<()>>);

impl Drop for Watches {
    fn drop(&mut self) {
        for t in &self.0 {
            t.abort();
        }
    }
}

/// The cluster as the API server lists it now (`kubeconfig`, else
/// in-cluster, else `KUBECONFIG` or `~/.kube/config`, as `serve`), its
/// bound pods' requests counted by `requests_rule`.
pub async fn list_once(
    kubeconfig: Option<&Path>,
    requests_rule: RequestsRule,
) -> Result<Snapshot, LiveError> {
    let api = resolve_api_config(kubeconfig).await?;
    let url = api.url();
    let unreachable = |message: String| LiveError::Unreachable {
        url: url.clone(),
        message,
    };
    let client = api.client()?;
    match tokio::time::timeout(REACH_TIMEOUT, client.apiserver_version()).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Err(unreachable(e.to_string())),
        Err(_) => return Err(unreachable(format!("no answer within {REACH_TIMEOUT:?}"))),
    }
    let (tx, mut rx) = mpsc::channel(4096);
    let _watches = Watches(spawn_watches(&client, &tx, &Arc::new(Notify::new())));
    drop(tx);
    let mut store = Store::new(requests_rule);
    let mut listed = [false; Kind::ALL.len()];
    let deadline = Instant::now() + LIST_TIMEOUT;
    while let Some(waiting) = Kind::ALL.into_iter().find(|k| !listed[*k as usize]) {
        let failed = |message: String| LiveError::List {
            url: url.clone(),
            kind: waiting.name(),
            message,
        };
        match timeout_at(deadline, rx.recv()).await {
            Ok(Some(Report::Event(update))) => {
                let kind = update.kind();
                if store.apply(update) == Phase::Listed {
                    listed[kind as usize] = true;
                }
            }
            Ok(Some(Report::Failed { kind, error, .. })) => {
                return Err(LiveError::List {
                    url: url.clone(),
                    kind: kind.name(),
                    message: error,
                });
            }
            Ok(None) => return Err(failed("every watch stopped".into())),
            Err(_) => return Err(failed(format!("not listed within {LIST_TIMEOUT:?}"))),
        }
    }
    Ok(store.snapshot(None))
}
