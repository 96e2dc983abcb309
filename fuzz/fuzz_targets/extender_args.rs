//! ExtenderArgs bodies, NodeNames and Nodes modes, through the filter and
//! prioritize handlers' own functions on the demo cluster.
#![no_main]

use kube_arbiter::api::extender::{filter, prioritize_body};
use kube_arbiter::model::RecentNodes;
use kube_arbiter::parallel::Splitter;
use kube_arbiter_fuzz::{DEFAULTS, DEMO, assert_json};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|body: &[u8]| {
    let settings = &DEFAULTS.scheduling;
    let result = filter(
        Some(&DEMO),
        settings,
        body,
        &RecentNodes::default(),
        &Splitter::default(),
    );
    // The handler answers an encoding failure as a 500; an answer that
    // encodes must be JSON, and the hand-written encoding the server sends
    // must be exactly the derived one.
    if let Ok(bytes) = result.to_json(0) {
        assert_json(&bytes);
        let derived = serde_json::to_vec(&result).expect("derived encoding");
        assert_eq!(bytes, derived, "hand-written filter answer differs");
    }
    if let Ok(scores) = prioritize_body(
        &DEMO,
        settings,
        body,
        &RecentNodes::default(),
        &Splitter::default(),
    ) {
        for host in &scores {
            assert!(
                (0..=10).contains(&host.score),
                "score out of 0..10: {host:?}"
            );
        }
    }
});
