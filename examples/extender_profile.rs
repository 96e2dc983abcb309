//! Run the extender's filter or prioritize on one request body many times
//! against a cluster-state file, off the network: the repeatable workload
//! for `valgrind --tool=callgrind` (instruction counts) behind the load
//! test's numbers.
//!
//!   cargo build --release --example extender_profile
//!   valgrind --tool=callgrind target/release/examples/extender_profile \
//!       CLUSTER.json filter|prioritize|filter-phases BODY.json [REPEAT]
//!
//! `filter` and `prioritize` print their mean wall time per request (the
//! request text's making and `EVICT_KB`'s writes left out); `filter-phases`
//! the mean time of each phase of a filter instead: decode, prepare, check
//! (on one thread), encode.
//!
//! A body with the `@UID@` marker (scripts/filter_body.py's `.tmpl` files)
//! gets a new pod uid on every repetition.
//!
//! `EVICT_KB=N` writes N KiB of other memory before each repetition, so
//! each request finds the caches as a served one does after TLS, the
//! kernel and other tenants of the host have run (32768 empties this
//! machine's L3); without it, every repetition finds the last one's data
//! in cache.
//!
//! `HOT_HELPER=1` wakes the split's helper before each filter whose body
//! the served handler would wake it for, and waits until it runs, as a
//! served filter finds it (the wall time then is the served decision's,
//! without TLS). Off by default: the wait's spinning is not repeatable
//! under callgrind.

/// The binary's allocator, so allocation costs are the ones it pays.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[path = "support/profile_input.rs"]
mod profile_input;
use std::process::ExitCode;

use kube_arbiter::api::extender::{SPLIT_LIKELY_BODY, filter, prioritize_body};
use kube_arbiter::config::SchedulingSettings;
use kube_arbiter::model::RecentNodes;
use kube_arbiter::parallel::Splitter;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [state, verb, body, rest @ ..] = &args[..] else {
        eprintln!(
            "usage: extender_profile CLUSTER.json filter|prioritize|filter-phases BODY.json [REPEAT]"
        );
        return ExitCode::from(2);
    };
    let repeat: usize = rest.first().and_then(|r| r.parse().ok()).unwrap_or(20);
    let (snapshot, template) = match profile_input::load(state, body) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    let settings = SchedulingSettings::default();
    let recent = RecentNodes::default();
    let splitter = Splitter::default();
    let mut bytes = 0;
    let mut phases = [std::time::Duration::ZERO; 4];
    let mut evict = vec![0u8; evict_bytes()];
    let mut handled = std::time::Duration::ZERO;
    let hot_helper = std::env::var_os("HOT_HELPER").is_some_and(|v| v == "1");
    for i in 0..repeat {
        overwrite(&mut evict);
        let request = template.replace("@UID@", &format!("profile-{i}"));
        if hot_helper && verb == "filter" && request.len() >= SPLIT_LIKELY_BODY {
            await_helper(&splitter);
        }
        let started = std::time::Instant::now();
        bytes += match verb.as_str() {
            "filter" => {
                let answer = filter(
                    Some(&snapshot),
                    &settings,
                    request.as_bytes(),
                    &recent,
                    &splitter,
                );
                answer.to_json(request.len()).map_or(0, |a| a.len())
            }
            "filter-phases" => {
                filter_phases(
                    &snapshot,
                    &settings,
                    request.as_bytes(),
                    &recent,
                    &splitter,
                    &mut phases,
                );
                0
            }
            "prioritize" => {
                match prioritize_body(&snapshot, &settings, request.as_bytes(), &recent, &splitter)
                {
                    Ok(list) => serde_json::to_vec(&list).map_or(0, |a| a.len()),
                    Err(e) => {
                        eprintln!("prioritize: {}", e.message);
                        return ExitCode::FAILURE;
                    }
                }
            }
            other => {
                eprintln!("unknown verb {other}: filter, prioritize or filter-phases");
                return ExitCode::from(2);
            }
        };
        handled += started.elapsed();
    }
    println!("{repeat} × {verb}: {bytes} answer bytes");
    if verb == "filter-phases" {
        for (name, total) in ["decode", "prepare", "check", "encode"].iter().zip(phases) {
            println!(
                "{name}: {:.1} µs",
                total.as_secs_f64() * 1e6 / repeat as f64
            );
        }
    } else {
        println!(
            "per request: {:.1} µs (the verb and its answer, as the loop's thread waited for them)",
            handled.as_secs_f64() * 1e6 / repeat as f64
        );
    }
    ExitCode::SUCCESS
}

/// Wake the helper as the served filter does from a body's declared length
/// before reading it (`api::split_body`), and wait until it polls, so the
/// request is timed as a served one finds its helper: running, not 100–150
/// µs from its wake-up.
fn await_helper(splitter: &Splitter) {
    splitter.prewarm(2);
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(5);
    while !splitter.helper_polling() && std::time::Instant::now() < deadline {
        std::hint::spin_loop();
    }
}

/// `EVICT_KB` in bytes; 0 when unset.
fn evict_bytes() -> usize {
    let kb = std::env::var("EVICT_KB")
        .ok()
        .and_then(|v| v.parse::<usize>().ok());
    kb.unwrap_or(0) << 10
}

/// One write per cache line of `buffer`, which takes the lines from
/// whatever the caches held.
fn overwrite(buffer: &mut [u8]) {
    for (k, line) in buffer.chunks_mut(64).enumerate() {
        line[0] = line[0].wrapping_add(k as u8);
    }
    std::hint::black_box(buffer);
}

/// One filter with each phase timed (the check on one thread): decode, prepare, check, encode.
fn filter_phases(
    snapshot: &kube_arbiter::cluster::Snapshot,
    settings: &SchedulingSettings,
    body: &[u8],
    recent: &RecentNodes,
    splitter: &Splitter,
    phases: &mut [std::time::Duration; 4],
) {
    use kube_arbiter::policy::domains::NodeAt;
    use kube_arbiter::policy::filter::PodFilters;
    use kube_arbiter::wire::extender_read::read_args;
    use std::time::Instant;
    let t = Instant::now();
    let args = read_args(body, recent, splitter).expect("body decodes");
    let pod = args.pod.as_ref().expect("body has a pod");
    phases[0] += t.elapsed();
    let t = Instant::now();
    let filters = PodFilters::prepare(snapshot, pod, settings).expect("pod is valid");
    phases[1] += t.elapsed();
    let t = Instant::now();
    let verdicts: Vec<_> = match (&args.node_names, &args.nodes) {
        (Some(names), _) => snapshot
            .node_idxs(names)
            .into_iter()
            .map(|idx| {
                let idx = idx.expect("known node");
                filters.check_with_nominated(snapshot, pod, NodeAt::in_view(snapshot, idx))
            })
            .collect(),
        (None, Some(list)) => list
            .items
            .iter()
            .map(|(node, _)| {
                filters.check_with_nominated(snapshot, pod, NodeAt::resolve(snapshot, node))
            })
            .collect(),
        (None, None) => panic!("body has neither NodeNames nor Nodes"),
    };
    phases[2] += t.elapsed();
    let t = Instant::now();
    let answer = filter(Some(snapshot), settings, body, recent, splitter);
    let encode_start = Instant::now();
    let bytes = answer.to_json(body.len()).map_or(0, |a| a.len());
    phases[3] += encode_start.elapsed();
    std::hint::black_box((verdicts, bytes, t));
}
