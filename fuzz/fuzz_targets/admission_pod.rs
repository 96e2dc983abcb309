//! AdmissionReview bodies through the mutating pod webhook's own
//! decode-decide-encode function on the demo cluster.
#![no_main]

use kube_arbiter::api::admission::review_pod;
use kube_arbiter_fuzz::{DEMO_STATE, check_review, decided};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|body: &[u8]| {
    if let Ok(answer) = decided(review_pod(&DEMO_STATE, body)) {
        check_review(body, &answer);
    }
});
