//! What the profiling examples read before their loop: the cluster-state
//! file and the request body template, each failure reported with its path.

use std::path::Path;
use std::process::ExitCode;

use kube_arbiter::cluster::{Snapshot, file};
use kube_arbiter::model::requests::RequestsRule;

/// The snapshot of `state` and the text of `body`, or the exit code after
/// saying which file could not be read.
pub fn load(state: &str, body: &str) -> Result<(Snapshot, String), ExitCode> {
    let snapshot = file::load(Path::new(state), RequestsRule::default()).map_err(|e| {
        eprintln!("{state}: {e}");
        ExitCode::FAILURE
    })?;
    let template = std::fs::read_to_string(body).map_err(|e| {
        eprintln!("{body}: {e}");
        ExitCode::FAILURE
    })?;
    Ok((snapshot, template))
}
