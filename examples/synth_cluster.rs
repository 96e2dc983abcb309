//! Write a synthetic cluster-state file for benchmarks and load tests.
//!
//! cargo run --release --example synth_cluster -- NODES PODS [--verbose] > cluster.json

use std::io::Write;

use kube_arbiter::synth::{SynthParams, generate_json};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize, default: usize| -> usize {
        match args.get(i).filter(|a| !a.starts_with("--")) {
            Some(a) => a.parse().unwrap_or_else(|_| {
                eprintln!("usage: synth_cluster NODES PODS [--verbose] (got {a:?})");
                std::process::exit(2)
            }),
            None => default,
        }
    };
    let mut params = SynthParams::new(number(0, 500), number(1, 15_000));
    params.verbose = args.iter().any(|a| a == "--verbose");
    let json = generate_json(&params);
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(json.as_bytes()).and_then(|_| out.flush()) {
        eprintln!("synth_cluster: {e}");
        std::process::exit(1);
    }
}
