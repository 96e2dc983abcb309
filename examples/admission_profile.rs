//! Decide one pod admission review many times against a cluster-state
//! file, off the network: the repeatable workload for
//! `valgrind --tool=callgrind` behind the admission numbers in
//! docs/extender-performance.md.
//!
//!   cargo build --release --example admission_profile
//!   valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*review_pod*' \
//!       target/release/examples/admission_profile CLUSTER.yaml REVIEW.json [REPEAT]
//!
//! e.g. `examples/demo-cluster.yaml examples/requests/admit-create-default-class.json`.
//! Without an API server a review never waits: `block_on` polls it once.

/// The binary's allocator, so allocation costs are the ones it pays.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[path = "support/profile_input.rs"]
mod profile_input;

use std::process::ExitCode;
use std::sync::Arc;

use futures::executor::block_on;
use kube_arbiter::api::AppState;
use kube_arbiter::api::admission::review_pod;
use kube_arbiter::cluster::ClusterView;
use kube_arbiter::config::Config;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [state, body, rest @ ..] = &args[..] else {
        eprintln!("usage: admission_profile CLUSTER.yaml REVIEW.json [REPEAT]");
        return ExitCode::from(2);
    };
    let repeat: usize = rest.first().and_then(|r| r.parse().ok()).unwrap_or(100);
    let (snapshot, review) = match profile_input::load(state, body) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    let view = Arc::new(ClusterView::new());
    view.publish(snapshot);
    let state = AppState::new(view, Config::default());
    let mut bytes = 0;
    for _ in 0..repeat {
        match block_on(review_pod(&state, review.as_bytes())) {
            Ok(answer) => bytes += answer.len(),
            Err(e) => {
                eprintln!("review: {}", e.message);
                return ExitCode::FAILURE;
            }
        }
    }
    println!("{repeat} × review: {bytes} answer bytes");
    ExitCode::SUCCESS
}
