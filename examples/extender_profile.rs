//! Run the extender's filter or prioritize on one request body many times
//! against a cluster-state file, off the network: the repeatable workload
//! for `valgrind --tool=callgrind` (instruction counts) behind the load
//! test's numbers.
//!
//!   cargo build --release --example extender_profile
//!   valgrind --tool=callgrind target/release/examples/extender_profile \
//!       CLUSTER.json filter|prioritize BODY.json [REPEAT]
//!
//! A body with the `@UID@` marker (scripts/filter_body.py's `.tmpl` files)
//! gets a new pod uid on every repetition.

use std::path::Path;
use std::process::ExitCode;

use kube_arbiter::api::extender::{filter, prioritize_body};
use kube_arbiter::cluster::file;
use kube_arbiter::config::SchedulingSettings;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [state, verb, body, rest @ ..] = &args[..] else {
        eprintln!("usage: extender_profile CLUSTER.json filter|prioritize BODY.json [REPEAT]");
        return ExitCode::from(2);
    };
    let repeat: usize = rest.first().and_then(|r| r.parse().ok()).unwrap_or(20);
    let snapshot = match file::load(Path::new(state)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{state}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let template = match std::fs::read_to_string(body) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{body}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let settings = SchedulingSettings::default();
    let mut bytes = 0;
    for i in 0..repeat {
        let request = template.replace("@UID@", &format!("profile-{i}"));
        bytes += match verb.as_str() {
            "filter" => {
                let answer = filter(Some(&snapshot), &settings, request.as_bytes());
                serde_json::to_vec(&answer).map_or(0, |a| a.len())
            }
            "prioritize" => match prioritize_body(&snapshot, &settings, request.as_bytes()) {
                Ok(list) => serde_json::to_vec(&list).map_or(0, |a| a.len()),
                Err(e) => {
                    eprintln!("prioritize: {}", e.message);
                    return ExitCode::FAILURE;
                }
            },
            other => {
                eprintln!("unknown verb {other}: filter or prioritize");
                return ExitCode::from(2);
            }
        };
    }
    println!("{repeat} × {verb}: {bytes} answer bytes");
    ExitCode::SUCCESS
}
