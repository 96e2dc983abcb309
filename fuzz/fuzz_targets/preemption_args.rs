//! ExtenderPreemptionArgs bodies (NodeNameToVictims with full pods,
//! NodeNameToMetaVictims with UIDs) read in one pass must read as the
//! general reading reads them; then through the preempt handler's own
//! function on the demo cluster; the answer must be JSON whose victims live
//! on the node they are listed under, or are ones the request named there
//! that the view does not know (already gone: answered back as named).
#![no_main]

use jiff::Timestamp;
use kube_arbiter::api::preempt::answer;
use kube_arbiter::wire::preempt_args::{read_in_fields, read_preempt_args};
use kube_arbiter_fuzz::{DEFAULTS, DEMO, assert_json};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|body: &[u8]| {
    // A body read in one pass reads as the general way reads it, and one
    // refused is refused with the general way's error.
    let read = read_preempt_args(body);
    assert_eq!(read, read_in_fields(body));
    let now = Timestamp::from_second(1_800_000_000).expect("a fixed valid instant");
    let Ok(result) = answer(&DEMO, &DEFAULTS, body, now) else {
        return;
    };
    let json = assert_json(&result.to_json());
    let nodes = json["NodeNameToMetaVictims"]
        .as_object()
        .expect("the answer is a map of nodes");
    let named = read.expect("an answered body was read").named;
    for (node, victims) in nodes {
        for victim in victims["Pods"].as_array().expect("Pods is a list") {
            let uid = victim["UID"].as_str().expect("a victim has a UID");
            match DEMO.pod_by_uid(uid) {
                Some(pod) => assert_eq!(
                    &pod.pod.spec.node_name, node,
                    "victim {uid} is on another node"
                ),
                None => assert!(
                    named
                        .get(node.as_str())
                        .is_some_and(|uids| uids.iter().any(|u| u == uid)),
                    "victim {uid} is neither in the view nor named on {node}"
                ),
            }
        }
    }
});
