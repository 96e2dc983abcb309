//! Write a synthetic cluster-state file for benchmarks and load tests.
//!
//! cargo run --release --example synth_cluster -- NODES PODS [--shape second] [FLAGS] > cluster.json
//!
//! `--help` lists the flags (kube_arbiter::synth::flags).

use std::io::Write;

use kube_arbiter::synth::flags::{USAGE, parse};
use kube_arbiter::synth::generate_json;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return;
    }
    let params = parse(&args).unwrap_or_else(|e| {
        eprintln!("synth_cluster: {e}\n{USAGE}");
        std::process::exit(2)
    });
    let json = generate_json(&params);
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(json.as_bytes()).and_then(|_| out.flush()) {
        eprintln!("synth_cluster: {e}");
        std::process::exit(1);
    }
}
