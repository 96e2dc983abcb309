//! The tests' in-process API server (tests/support/fake_apiserver.rs),
//! serving the objects of a cluster-state file, so `kube-arbiter serve`
//! can run in live mode (watches, the in-flight ledger) against a
//! synthetic cluster: the live-mode rows of scripts/load-extender.sh.
//!
//! cargo run --example fake_apiserver -- STATE.json KUBECONFIG
//!
//! Loads every object of a kind it serves (others are counted and
//! skipped), writes a kubeconfig naming itself to KUBECONFIG, prints
//! `ready` and serves plain HTTP on a loopback port until SIGTERM or
//! Ctrl-C.

#[path = "../tests/support/fake_apiserver.rs"]
mod fake_apiserver;

use std::collections::BTreeMap;
use std::process::ExitCode;

use fake_apiserver::{FakeApiServer, RESOURCES};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// A `kind: List`; each item is decoded on its own, so the whole file is
/// never one tree of values.
#[derive(Deserialize)]
struct List<'a> {
    #[serde(borrow)]
    items: Vec<&'a RawValue>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [state, kubeconfig] = args.as_slice() else {
        eprintln!("usage: fake_apiserver STATE.json KUBECONFIG");
        return ExitCode::from(2);
    };
    let api = FakeApiServer::start().await;
    let counts = match load(&api, state) {
        Ok(counts) => counts,
        Err(e) => {
            eprintln!("fake_apiserver: {state}: {e}");
            return ExitCode::from(2);
        }
    };
    for (kind, (served, n)) in &counts {
        let what = if *served { "loaded" } else { "skipped" };
        eprintln!("fake_apiserver: {what} {n} {kind}");
    }
    if let Err(e) = std::fs::copy(api.kubeconfig(), kubeconfig) {
        eprintln!("fake_apiserver: cannot write {kubeconfig}: {e}");
        return ExitCode::FAILURE;
    }
    println!("ready");
    let stop = match kube_arbiter::server::termination_signal() {
        Ok(stop) => stop,
        Err(e) => {
            eprintln!("fake_apiserver: cannot watch for signals: {e}");
            return ExitCode::FAILURE;
        }
    };
    stop.await;
    ExitCode::SUCCESS
}

/// Each kind seen in the file: whether it is served, and how many.
fn load(api: &FakeApiServer, path: &str) -> Result<BTreeMap<String, (bool, usize)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let list: List<'_> = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let mut counts = BTreeMap::new();
    for raw in list.items {
        let obj: Value = serde_json::from_str(raw.get()).map_err(|e| e.to_string())?;
        let kind = obj["kind"].as_str().unwrap_or_default().to_string();
        let served = RESOURCES.iter().any(|(_, _, k)| *k == kind);
        if served {
            api.load(&kind, [obj]);
        }
        counts.entry(kind).or_insert((served, 0)).1 += 1;
    }
    Ok(counts)
}
