//! `/scale-in` bodies through the handler's decoder and answer on the demo
//! cluster: victims are pods of the request or of the view, never more than
//! asked for.
#![no_main]

use kube_arbiter::api::scale_in::{ScaleInBody, answer};
use kube_arbiter_fuzz::{DEFAULTS, DEMO, assert_json};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|body: &[u8]| {
    let Ok(request) = serde_json::from_slice::<ScaleInBody>(body) else {
        return;
    };
    let Ok(out) = answer(&DEMO, &DEFAULTS, &request) else {
        return;
    };
    assert!(
        out.victims.len() <= request.count,
        "more victims than asked for"
    );
    if let Ok(bytes) = serde_json::to_vec(&out) {
        assert_json(&bytes);
    }
});
