//! Answer one preempt request body many times against a cluster-state
//! file, off the network: the repeatable workload for
//! `valgrind --tool=callgrind` behind the load test's preempt row.
//!
//!   cargo build --release --example preempt_profile
//!   valgrind --tool=callgrind --collect-atstart=no \
//!       --toggle-collect='*preempt*answer*' \
//!       target/release/examples/preempt_profile CLUSTER.json BODY.json [REPEAT]
//!
//! A body with the `@UID@` marker (scripts/filter_body.py's `.tmpl` files)
//! gets a new pod uid on every repetition.

/// The binary's allocator, so allocation costs are the ones it pays.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[path = "support/profile_input.rs"]
mod profile_input;

use std::process::ExitCode;
use std::time::Instant;

use kube_arbiter::api::preempt::answer;
use kube_arbiter::config::Config;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [state, body, rest @ ..] = &args[..] else {
        eprintln!("usage: preempt_profile CLUSTER.json BODY.json [REPEAT]");
        return ExitCode::from(2);
    };
    let repeat: usize = rest.first().and_then(|r| r.parse().ok()).unwrap_or(20);
    let (snapshot, template) = match profile_input::load(state, body) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    let config = Config::default();
    let mut bytes = 0;
    let start = Instant::now();
    for i in 0..repeat {
        let request = template.replace("@UID@", &format!("profile-{i}"));
        match answer(
            &snapshot,
            &config,
            request.as_bytes(),
            jiff::Timestamp::now(),
        ) {
            Ok(result) => bytes += result.to_json().len(),
            Err(e) => {
                eprintln!("preempt: {}", e.message);
                return ExitCode::FAILURE;
            }
        }
    }
    println!(
        "{repeat} × preempt: {bytes} answer bytes, {:.1} µs each",
        start.elapsed().as_secs_f64() * 1e6 / repeat as f64
    );
    ExitCode::SUCCESS
}
